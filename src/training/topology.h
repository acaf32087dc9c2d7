// The communication pattern of one job from its directed host-pair byte matrix (docs/training.md "Topology").
#pragma once

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
};

struct TopologyResult {
  TopologyReport report;
  std::vector<std::string> roles;  // per host
  std::vector<int> successor;      // ring: per host, its successor's index; else -1
};

TopologyResult classifyTopology(const TopologyInput& in);

}  // namespace burstscope::training
