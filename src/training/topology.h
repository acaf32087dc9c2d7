// The communication pattern of one job from its directed host-pair byte matrix (docs/training.md "Topology").
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "burstscope/training.h"

namespace burstscope::training {

struct TopologyInput {
  std::vector<std::string> hosts;            // names, in the order of the matrix
  std::vector<std::vector<uint64_t>> bytes;  // bytes[i][j]: host i to host j
  std::vector<uint64_t> flow_bytes;          // the job's flows, any order
  double data_edge_share = 0.1;              // of the heaviest pair, for a pair to be a data edge
  // With a period (else empty), per directed pair i→j over the job's counted steps: the share of them in which
  // it carried transport payload, and where in the step its payload lies (the payload-weighted circular mean of
  // its place, a share of the period from the step's start; -1: none).
  std::vector<std::vector<double>> steps_share;
  std::vector<std::vector<double>> offset;
  std::vector<std::vector<double>> payload;  // over the counted steps
  double structure_steps_share = 0.8;        // a pair carrying payload in this share of the steps is structure
  std::vector<PhaseReport> phases;           // the typical step's phases (senders, pairs)
  double period_s = 0;
};

struct TopologyResult {
  TopologyReport report;
  std::vector<std::string> roles;  // per host
  std::vector<int> successor;      // ring: per host, its successor's index; else -1
};

TopologyResult classifyTopology(const TopologyInput& in);

// The angle of the vector (c, s) as a share of the turn, in [0, 1): the circular mean of places in the step from
// their summed (weighted) cosines and sines.
inline double turnOf(double c, double s) {
  const double a = std::atan2(s, c) / (2 * M_PI);
  return a - std::floor(a);
}

}  // namespace burstscope::training
