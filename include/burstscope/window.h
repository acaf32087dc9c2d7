// The multi-scale burst engine (docs/SPEC.md "Definitions" and "Exactness"; docs/architecture.md). It takes
// packet records in timestamp order, cuts time into report intervals, and hands the records to its
// aggregators: the port and direction streams (exact packet and byte counts per aligned bin, the envelope
// E(τ) per scale, the virtual backlog Bmax(r) per rate, microbursts) and the host-pair and flow tables (the
// same statistics for the heaviest keys). A new aggregate (per job, per destination, ...) is one more
// Aggregator; a consumer of per-bin or per-microburst detail is an EngineObserver. Time comes only from the
// records, never from a clock, so the offline and live paths run the same code.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "burstscope/packet.h"

namespace burstscope {

struct TrainingDelta;   // burstscope/training.h: the training aggregator's bins of an interval
struct EvidenceReport;  // burstscope/evidence.h: congestion evidence (ECN, TCP, RoCEv2, PFC) and congesting bursts
struct MirrorReport;    // burstscope/mirror.h: the mirror self-checks (duplicated frames, the mirror port's load)

struct EngineConfig {
  // Window lengths τ in nanoseconds; each must be a multiple of base_bin_ns.
  std::vector<int64_t> scales_ns{100'000, 1'000'000, 5'000'000, 10'000'000, 100'000'000, 1'000'000'000, 10'000'000'000};
  int64_t base_bin_ns = 100'000;
  // Port and direction streams keep E(τ) exact (packet-level) for τ up to this; above it E(τ) comes from
  // base bins (SPEC's bound). Offline analysis raises it to the largest scale.
  int64_t exact_max_tau_ns = 10'000'000;
  // Memory bound of one exact window: distinct timestamps held at once. A scale that would need more is
  // demoted to base-bin precision and marked inexact.
  size_t exact_max_entries = size_t{1} << 24;
  std::vector<double> rates_bps{1e9, 10e9, 25e9, 100e9};  // virtual backlog drain rates, bit/s
  double link_capacity_bps = 10e9;                        // for utilisation and microbursts
  int64_t microburst_tau_ns = 100'000;
  double microburst_threshold = 0.5;  // fraction of link capacity
  size_t top_k = 10;                  // pairs and flows reported by name
  size_t tracked_streams = 20;        // pairs and flows (each) given window statistics; >= top_k
  // The flow and pair tables' bounds (entries; the congestion evidence's connections and per-key counts are bounded
  // by them too). Each is 7/8 of a power of two: an abseil table is at most 7/8 full and its slot count is a power of
  // two less one, so 57,344 entries fit 65,535 slots where 65,536 took 131,071 (docs/reliability.md).
  size_t flow_table_capacity = (size_t{1} << 16) / 8 * 7;
  size_t pair_table_capacity = (size_t{1} << 14) / 8 * 7;
  size_t max_microburst_events = size_t{1} << 20;  // kept for quantiles; all are counted
  // Live reporting (docs/SPEC.md "Live reporting semantics"): report intervals aligned to the epoch, 0 = none
  // (offline analysis reports the whole trace). A multiple of base_bin_ns.
  int64_t report_interval_ns = 0;
  // The trailing window whose mean rate is the PtM baseline; a multiple of the report interval and never
  // shorter than the largest scale.
  int64_t baseline_ns = 60'000'000'000;
  // Pairs and flows named in each interval report (by cumulative bytes); 0 leaves them out.
  size_t report_top_k = 0;
  // Which built-in aggregates this engine runs. Off, their parts of the results stay empty. Without pairs and
  // flows the engine is a port- and direction-level monitor (`metrics.pairs-and-flows: false`); a port's
  // further workers run engines without the streams (docs/workers.md).
  bool streams = true;
  bool pairs_and_flows = true;
};

// PtM(τ) = E(τ) / (mean rate · τ): how far the busiest τ runs above the mean. The one definition, for the
// whole-trace mean offline and the trailing baseline live; none when the mean is not positive.
inline std::optional<double> peakToMean(uint64_t envelope_bytes, int64_t tau_ns, double mean_bps) {
  if (!(mean_bps > 0)) return std::nullopt;
  return static_cast<double>(envelope_bytes) * 8e9 / (mean_bps * static_cast<double>(tau_ns));
}

// Names the first bad field: "scales_ns: 150000 is not a multiple of base_bin_ns 100000".
absl::Status validateConfig(const EngineConfig& c);
// The microburst detector's threshold as window bytes: ceil(θ·C·τ / 8) (SPEC "Microburst": the bytes in
// (t − τ, t] at or above it). The engine's and the overload bounds' one definition.
uint64_t microburstThresholdBytes(const EngineConfig& c);

// A classic cumulative-able histogram with fixed upper bounds (the last bucket is +Inf).
struct Histogram {
  std::vector<double> bounds;    // upper bounds, ascending
  std::vector<uint64_t> counts;  // bounds.size() + 1 buckets, non-cumulative
  double sum = 0;
  uint64_t count = 0;
  explicit Histogram(std::vector<double> b = {}) : bounds(std::move(b)), counts(bounds.size() + 1) {}
  void observe(double v, uint64_t n = 1);
};

struct ScaleResult {
  int64_t tau_ns = 0;
  uint64_t envelope_bytes = 0;  // E(τ)
  bool exact = false;           // packet-level exact, or from base bins within SPEC's bound
  uint64_t peak_bin_bytes = 0;  // busiest aligned bin of width τ (exact)
  uint64_t peak_bin_packets = 0;
  uint64_t bins_spanned = 0;             // aligned bins from the first packet's to the last packet's
  std::optional<Histogram> utilisation;  // per aligned bin, fraction of link capacity (port/direction)
};

struct BacklogResult {
  double rate_bps = 0;
  double max_backlog_bytes = 0;  // Bmax(r), exact to the byte (integer arithmetic inside)
};

struct Microburst {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t bytes = 0;   // bytes of the packets arriving during the microburst
  double peak_bps = 0;  // highest A(t-τ,t)*8/τ inside it
};

struct MicroburstResult {
  uint64_t count = 0;
  std::vector<Microburst> events;  // the first max_microburst_events of them
  Histogram durations_s;
  Histogram gaps_s;
  Histogram volumes_bytes;
};

struct StreamResult {
  uint64_t packets = 0;
  uint64_t bytes = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  std::vector<ScaleResult> scales;
  std::vector<BacklogResult> backlog;           // port and direction streams only
  std::optional<MicroburstResult> microbursts;  // port and direction streams only
};

// A named host pair or flow with its totals and, when it held a tracked slot, window statistics.
struct HeavyHitter {
  FlowKey key;
  uint64_t packets = 0;
  uint64_t bytes = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  std::optional<StreamResult> windows;
  int64_t windows_since_ns = 0;  // windows cover packets from here on (== first_ns when complete)
};

struct HeavyResult {
  std::vector<HeavyHitter> top;  // at most top_k, by bytes, descending
  uint64_t other_packets = 0;    // everything not in `top`, evicted entries included
  uint64_t other_bytes = 0;
  uint64_t entries = 0;    // distinct keys in the table at the end
  uint64_t evictions = 0;  // entries evicted to keep the table within capacity
};

// One stream's figures over one report interval [start, end).
struct IntervalStream {
  uint64_t packets = 0;
  uint64_t bytes = 0;
  std::vector<uint64_t> envelope_bytes;    // per scale: max over t in the interval of A(t-τ, t)
  std::vector<bool> exact;                 // per scale: packet-exact, else within SPEC's base-bin bound
  std::vector<std::optional<double>> ptm;  // per scale: E(τ) / (baseline rate · τ); none if undefined
  std::vector<double> backlog_bytes;       // per rate: max virtual backlog during the interval
  double mean_bps = 0;                     // the interval's own mean rate
  double baseline_bps = 0;                 // mean rate over the trailing baseline window
  // Cumulative since the start, for export as classic histograms (port and direction streams). A scale's
  // aligned window is observed once it has ended, at or before the interval's end (empty ones included).
  std::vector<Histogram> utilisation;  // per scale
  uint64_t microbursts = 0;
  std::optional<Histogram> microburst_durations_s, microburst_gaps_s, microburst_volumes_bytes;
};

struct IntervalReport {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t baseline_ns = 0;         // how much trailing time the baseline covers (shorter just after start-up)
  uint64_t skipped_intervals = 0;  // empty intervals before this one that were not reported one by one
  bool partial = false;            // the last interval, closed by finish() before its end
  IntervalStream port;
  std::vector<std::pair<Direction, IntervalStream>> directions;
  uint64_t microbursts_total = 0;  // port stream, cumulative
  // The heaviest pairs and flows by cumulative bytes, without window statistics (report_top_k of each).
  HeavyResult pairs;
  HeavyResult flows;
  // The training aggregator's flow bins of this interval, when one runs (burstscope/training.h).
  std::shared_ptr<const TrainingDelta> training;
  std::shared_ptr<const EvidenceReport> evidence;  // cumulative, when the evidence aggregator runs
  std::shared_ptr<const MirrorReport> mirror;      // cumulative, when the mirror self-checks run
};

struct EngineResult {
  StreamResult port;
  std::vector<std::pair<Direction, StreamResult>> directions;  // only directions that were seen
  HeavyResult pairs;
  HeavyResult flows;
  uint64_t non_ip_packets = 0;
  std::shared_ptr<const TrainingDelta> training;  // what no interval took (offline: the whole file)
  std::shared_ptr<const EvidenceReport> evidence;
  std::shared_ptr<const MirrorReport> mirror;
};

// The report interval an aggregator is closing.
struct IntervalContext {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t baseline_ns = 0;  // trailing time the PtM baseline covers (shorter just after start-up)
  bool partial = false;     // the last interval, closed by finish() before its end
  uint64_t skipped = 0;     // empty intervals skipped before this one (after a long silence): baselines restart
};

// A batch's runs of one flow: records next to each other with the same key (traffic comes in runs, about 5
// packets a run on the bundled training trace). `starts` gets each run's first record and, last, records.size():
// run r is [starts[r], starts[r + 1]). The engine finds them once per batch for every aggregator, so that what is
// kept per flow is looked up once per run, not by a key comparison per packet in each aggregator.
void findFlowRuns(std::span<const PacketRecord> records, std::vector<uint32_t>* starts);

// Room for one aggregator's own per-flow state in the engine's flow table (EngineConfig::pairs_and_flows), so
// that a flow is looked up once per run for both: the engine's table finds the run's entry, and the aggregator
// keeps there where its own state for that flow is. Only the aggregator that wrote it reads it, and only while
// `epoch` is its own: it changes its epoch whenever its state may have moved or gone (0 is never written).
struct FlowHint {
  uintptr_t value = 0;
  uint64_t epoch = 0;
};
// A flow entry holds this many hints: one for each of the first aggregators that want them (the congestion
// evidence's TCP connection and the training aggregator's flow, when one engine runs both).
inline constexpr size_t kFlowHintOwners = 2;

// One aggregate of the packet stream. The engine calls it on its own thread: add() with records in
// non-decreasing time, all inside the current report interval; closeInterval() at each interval's end
// (with report intervals); finish() once after the last add; result() after finish().
class Aggregator {
 public:
  virtual ~Aggregator() = default;
  virtual void add(std::span<const PacketRecord> records) = 0;
  // add() with the batch's flow runs (findFlowRuns), which the engine finds once for all its aggregators. An
  // aggregator that keeps state per flow overrides it; the others take add().
  virtual void addRuns(std::span<const PacketRecord> records, std::span<const uint32_t> /*run_starts*/) {
    add(records);
  }
  // An aggregator that keeps state per flow and would use the engine's flow table's FlowHint. The engine gives
  // hints to the first kFlowHintOwners added ones that want them, each a hint of its own in every entry (a hint
  // holds one aggregator's state), and only when it runs the pair and flow tables.
  virtual bool wantsFlowHints() const { return false; }
  // addRuns() with each run's hint (nullptr: none, for a non-IP run, or one whose entry may have moved since):
  // called instead of addRuns() for each aggregator that has hints.
  virtual void addRunsHinted(std::span<const PacketRecord> records, std::span<const uint32_t> run_starts,
                             std::span<FlowHint* const> /*hints*/) {
    addRuns(records, run_starts);
  }
  virtual void closeInterval(const IntervalContext& c, IntervalReport* out) = 0;
  virtual void finish() = 0;
  virtual void result(EngineResult* out) const = 0;
};

// Detail the port stream produces as it goes, for live views, recorders and reports. Called on the engine's
// thread: keep it short, or hand the data over (the packet path waits for it).
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  // A base bin of the port stream with traffic in it has closed (bins without traffic are not reported).
  virtual void onBaseBin(int64_t /*start_ns*/, uint64_t /*bytes*/, uint64_t /*packets*/) {}
  // A microburst of the port stream has ended.
  virtual void onMicroburst(const Microburst& /*m*/) {}
  // A report interval has closed (every aggregator has filled its part).
  virtual void onInterval(const IntervalReport& /*r*/) {}
};

class Engine {
 public:
  explicit Engine(const EngineConfig& config);  // config must pass validateConfig
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Appends an aggregator after the built-in ones (port and direction streams, pairs and flows). Before the
  // first record.
  void addAggregator(std::unique_ptr<Aggregator> a);
  // Before the first record; the observer must outlive the engine's use.
  void subscribe(EngineObserver* o);

  // Records must come in non-decreasing ts_ns order (a Reorderer, burstscope/reorder.h, puts them so).
  void add(std::span<const PacketRecord> records);
  void add(const PacketRecord& r);
  // With report intervals: closes every interval that ends at or before `now_ns`, promising that no later
  // record is older than now_ns. Lets intervals close while no traffic arrives.
  void advance(int64_t now_ns);
  // Called on the engine's thread with each completed interval (in order); an observer's onInterval.
  void setIntervalSink(std::function<void(const IntervalReport&)> sink);
  // Closes open bins, windows and microbursts, and reports the open interval as partial. Call once, after
  // the last add.
  void finish();
  EngineResult result() const;

  // One engine's aggregates split over several (docs/workers.md). An engine takes one step per run of records
  // inside an interval, per interval closed and at finish; engines given the same add/advance/finish calls
  // take the same steps. steps() is the step under way (during an observer's call) or the next one.
  uint64_t steps() const;
  // Hands this engine's subscribers a microburst of the port stream that another engine found during its step
  // `step`, just before this engine's aggregators take that step, as if its own port stream had found it
  // there. Steps not yet taken only.
  void forwardMicroburst(uint64_t step, const Microburst& m);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace burstscope
