// The step period of a byte series (docs/training.md "Step period"): the fundamental period of a
// burst-and-stop series, from its autocorrelation, with sub-bin precision from the peaks at its multiples.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace burstscope::training {

struct PeriodOptions {
  double min_period_bins = 2;
  double max_period_bins = 1e18;
  double min_quality = 0.4;
};

struct PeriodEstimate {
  bool found = false;
  double period_bins = 0;  // in bins of the series, sub-bin precision
  double quality = 0;      // normalised autocorrelation at the period (1 = identical steps)
  std::string why;         // when not found
};

// Normalised autocorrelation rho[L] = Σ (x[i]-m)(x[i+L]-m) / ((n-L) var), L = 0..n-1, by FFT (fftw3).
std::vector<double> autocorrelation(std::span<const double> x);
// The same for the first `lags` lags only (0 for L at or past them): summed directly when that is cheaper
// than the transform (a few dozen lags of a long series), else by FFT.
std::vector<double> autocorrelation(std::span<const double> x, size_t lags);

// The period of `x` (bins of equal width), or why there is none. Leading and trailing empty bins are
// ignored. The series must hold at least two periods after its first non-empty bin (three steps' starts).
PeriodEstimate findPeriod(std::span<const double> x, const PeriodOptions& o);

}  // namespace burstscope::training
