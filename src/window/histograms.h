// Bucket bounds of the engine's distributions, chosen for ML-training traffic: microbursts of tens of µs to
// hundreds of ms, gaps up to a training step of seconds, volumes from one packet to a whole all-reduce.
#pragma once

#include <vector>

namespace burstscope::internal {

inline std::vector<double> microburstDurationBounds() {  // seconds
  return {1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1, 0.2, 0.5, 1};
}
inline std::vector<double> microburstGapBounds() {  // seconds
  return {1e-4, 1e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1, 0.2, 0.5, 1, 2, 5, 10};
}
inline std::vector<double> microburstVolumeBounds() {  // bytes
  return {1e3, 4e3, 16e3, 64e3, 256e3, 1e6, 4e6, 16e6, 64e6, 256e6};
}
inline std::vector<double> utilisationBounds() {  // fraction of link capacity
  return {0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0};
}

}  // namespace burstscope::internal
