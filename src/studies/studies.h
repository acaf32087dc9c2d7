// The studies behind `burstscope report` (docs/report.md; the page's contract is report-contract.md): the
// analyze result itself, the port stream's 100 µs timeline, E(τ) and PtM(τ) on a dense τ grid, Bmax(r) on a
// dense rate grid, 100 µs timelines of analyze's top flows, the directed host-pair matrix and the
// microbursts with their congestion flag. Two passes over the files: the first is analyze's own run (the
// same pipeline, configuration and renderer), the second runs an engine configured with the dense grids
// (which need the first pass's duration, mean and peak) with the studies aggregator on it. Both passes see
// the same record stream: one lossless file reader and the same reorder horizon.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "burstscope/capture.h"
#include "burstscope/decode.h"
#include "burstscope/packet.h"
#include "burstscope/window.h"
#include "nlohmann/json.hpp"
#include "src/pipeline/pipeline.h"

namespace burstscope {

// How far a pass has got, for a progress line. Called on a port worker at most every 200 ms.
struct ReportProgress {
  int pass = 1;  // 1: analyze's pass, 2: the dense grids, flows and pairs
  int passes = 2;
  int64_t done_ns = 0;   // trace time covered so far (from the first packet)
  int64_t total_ns = 0;  // the trace's duration, once known (pass 2); 0 before
  uint64_t packets = 0;  // packets in the bins reported so far
};

struct ReportInputs {
  std::vector<std::string> files;
  PipelineConfig pipeline;  // exactly as analyze runs it
  DecoderConfig decoder;
  FileReadOptions read;
  std::function<void(const ReportProgress&)> progress;  // empty: quiet
};

// Aligned base bins of the port stream with traffic in them: t[i] is the bin's index from start_ns.
struct Timeline {
  int64_t bin_ns = 0;
  int64_t start_ns = 0;  // start of the first non-empty bin
  int64_t end_ns = 0;    // end of the last one
  std::vector<int64_t> t;
  std::vector<uint64_t> bytes;
  std::vector<uint64_t> packets;
};

struct CurvePoint {
  int64_t tau_ns = 0;
  uint64_t envelope_bytes = 0;  // E(τ) of the port stream
  std::optional<double> ptm;    // E(τ) / (mean · τ), none when τ is longer than the trace
  bool exact = false;           // packet-level exact, else within SPEC's base-bin bound
};

struct BacklogPoint {
  double rate_bps = 0;
  double max_backlog_bytes = 0;  // Bmax(r), exact
};

// One of analyze's top flows with its own base-bin timeline (t from the port timeline's start_ns).
struct FlowSeries {
  FlowKey key;
  std::string name;  // flowToString, as analyze's flows.top[].key
  std::string kind;  // flowKindName
  uint64_t bytes = 0;
  double share = 0;  // of all bytes of the port stream, as analyze's share
  std::vector<int64_t> t;
  std::vector<uint64_t> bytes_per_bin;
};

// Directed host pairs of the IP packets. Hosts by bytes sent + received, descending; when there are more
// than kMaxHosts, the rest are folded into one last host "other".
struct Heatmap {
  static constexpr size_t kMaxHosts = 256;
  static constexpr size_t kMaxPairs = size_t{1} << 20;  // distinct pairs kept; later new pairs count as other
  struct Cell {
    uint32_t src = 0, dst = 0;  // indices into hosts
    uint64_t bytes = 0, packets = 0;
  };
  std::vector<std::string> hosts;
  std::vector<Cell> cells;        // by (src, dst)
  uint64_t pairs = 0;             // distinct directed pairs seen (up to kMaxPairs)
  uint64_t overflow_packets = 0;  // packets of pairs beyond kMaxPairs (inside other -> other)
};

struct ReportMicroburst {
  Microburst burst;
  bool congesting = false;  // the evidence aggregator found evidence inside it or within `after` of its end
};

struct ReportMicrobursts {
  static constexpr size_t kMaxListed = 100'000;
  int64_t tau_ns = 0;
  double threshold = 0;
  double link_capacity_bps = 0;
  uint64_t count = 0;                    // every microburst
  std::vector<ReportMicroburst> events;  // the first kMaxListed
};

// clang-tidy flags the implicit special members, whose one member with a non-trivial body is
// nlohmann::ordered_json (its move is declared noexcept).
struct StudiesResult {  // NOLINT(bugprone-exception-escape)
  std::vector<std::string> files;
  nlohmann::ordered_json analyze;  // reportJson of the first pass: what `analyze --json` prints
  bool balanced = true;            // the first pass's ledger
  std::vector<std::string> warnings;
  Timeline timeline;
  std::vector<CurvePoint> curves;
  std::vector<BacklogPoint> backlog;
  std::vector<FlowSeries> flows;
  Heatmap heatmap;
  ReportMicrobursts microbursts;
};

absl::StatusOr<StudiesResult> computeStudies(const ReportInputs& in, const std::atomic<bool>& stop);

// About 40 τ log-spaced from one base bin to min(10 s, the duration rounded up to a bin), multiples of the
// base bin, with the configured scales added; ascending, distinct.
std::vector<int64_t> denseTauGrid(int64_t base_bin_ns, int64_t duration_ns, const std::vector<int64_t>& configured);
// About 40 rates log-spaced from the mean rate to twice the peak rate, within [1 kbit/s, 10 Tbit/s], with the
// configured rates added; ascending, distinct.
std::vector<double> denseRateGrid(double mean_bps, double peak_bps, const std::vector<double>& configured);

}  // namespace burstscope
