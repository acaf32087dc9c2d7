// `burstscope run` configuration: a YAML file (see etc/burstscope.yaml, documented in docs/operations.md)
// whose keys map onto the modules' plain config structs. Every error names the key, and the line, at fault;
// an unknown key is an error, never silently ignored.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "src/capture/afxdp/afxdp_backend.h"
#include "src/capture/dpdk/dpdk_backend.h"
#include "src/export/metrics.h"
#include "src/pipeline/pipeline.h"
#include "src/recorder/flight_recorder.h"

namespace burstscope {

struct LiveConfig {
  PipelineConfig pipeline;  // pipeline.engine.rates_bps empty: each port's link speed
  bool quiet = false;       // no per-interval summary
};

enum class CaptureKind { kDpdk, kAfXdp };

struct RunConfig {
  CaptureKind capture = CaptureKind::kDpdk;
  DpdkConfig dpdk;  // also holds the decoder and ring size both backends use
  AfXdpConfig afxdp;
  LiveConfig live;
  ExportConfig exporter;
  FlightRecorderConfig recorder;  // off unless flight-recorder.enabled (docs/flight-recorder.md)
};

// Every default in one place: what an empty file gives (report intervals of 1 s, the backlog at each port's
// link speed, everything else the modules' own defaults). Flags start from here too.
RunConfig defaultRunConfig();

// After the file and the flags: a port without its own link speed takes metrics' (EngineConfig's), and the
// training receiver buffer, unless given, the switch buffer.
void resolvePortLinks(RunConfig* c);

// Parses YAML text; `origin` (a file name) prefixes error messages.
absl::StatusOr<RunConfig> parseRunConfig(const std::string& yaml, const std::string& origin);
absl::StatusOr<RunConfig> loadRunConfig(const std::string& path);

// The words of every setting that takes one, shared by the YAML reader and the flags, so that both accept
// the same words and name them alike in an error.
template <typename Enum>
using Words = std::vector<std::pair<const char*, Enum>>;
const Words<CaptureKind>& captureWords();          // dpdk, af_xdp
const Words<TimestampMode>& dpdkTimestampWords();  // auto, nic, tsc
const Words<XdpMode>& xdpModeWords();              // auto, native, skb
const Words<ZeroCopy>& zeroCopyWords();            // auto, on, off (true, false)
const Words<XdpTimestamps>& xdpTimestampWords();   // auto, kernel, nic
const char* captureName(CaptureKind k);

// `word` (any case) among `choices` into *out, else an error "'word' is not a, b or c" (callers prefix the
// key or flag).
template <typename Enum>
absl::Status pickChoice(const std::string& word, const Words<Enum>& choices, Enum* out) {
  std::string names;
  size_t i = 0;
  for (const auto& [name, e] : choices) {
    if (absl::AsciiStrToLower(word) == name) {
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
