// `burstscope run` configuration: a YAML file (see etc/burstscope.yaml, documented in docs/operations.md)
// whose keys map onto the modules' plain config structs. Every error names the key, and the line, at fault;
// an unknown key is an error, never silently ignored.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "src/capture/afxdp/afxdp_backend.h"
#include "src/capture/dpdk/dpdk_backend.h"
#include "src/export/metrics.h"
#include "src/pipeline/pipeline.h"

namespace burstscope {

struct LiveConfig {
  PipelineConfig pipeline;  // pipeline.engine.rates_bps empty: each port's link speed
  bool quiet = false;       // no per-interval summary
};

struct RunConfig {
  std::string capture = "dpdk";  // or "af_xdp"
  DpdkConfig dpdk;               // also holds the decoder and ring size both backends use
  AfXdpConfig afxdp;
  LiveConfig live;
  ExportConfig exporter;
};

// Parses YAML text; `origin` (a file name) prefixes error messages.
absl::StatusOr<RunConfig> parseRunConfig(const std::string& yaml, const std::string& origin);
absl::StatusOr<RunConfig> loadRunConfig(const std::string& path);

// `word` among `choices` into *out, else an error "'word' is not a, b or c" (callers prefix the key or flag).
template <typename Enum>
absl::Status pickChoice(const std::string& word, std::initializer_list<std::pair<const char*, Enum>> choices,
                        Enum* out) {
  std::string names;
  size_t i = 0;
  for (const auto& [name, e] : choices) {
    if (word == name) {
      *out = e;
      return absl::OkStatus();
    }
    if (i > 0) names += i + 1 == choices.size() ? " or " : ", ";
    names += name;
    ++i;
  }
  return absl::InvalidArgumentError("'" + word + "' is not " + names);
}

// The capture ports of the selected backend, as (name, link speed in bit/s).
std::vector<std::pair<std::string, double>> capturePorts(const RunConfig& c);

// "100us", "1.5ms", "2s", "250ns", or a bare number of seconds.
absl::StatusOr<int64_t> parseDurationNs(const std::string& text);

}  // namespace burstscope
