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
  size_t flow_table_capacity = size_t{1} << 16;
  size_t pair_table_capacity = size_t{1} << 14;
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

  // Records must come in non-decreasing ts_ns order (the Reorderer guarantees it).
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

// Puts records back into timestamp order before the engine. A record is held until the newest timestamp
// seen is `horizon_ns` past it; ties keep arrival order. A record older than what was already released is
// released with the last released timestamp (clamped) and counted: the engine never sees time go backwards.
// In push() and pushHeld() (one ordered source, e.g. a capture file), a record more than kClockStepNs behind is not
// late but a clock stepped back (a merged or restarted capture, an NTP step): time is shifted forward from it on, so
// that it continues where it was instead of piling the rest of the traffic up at one clamped instant.
class Reorderer {
 public:
  static constexpr int64_t kClockStepNs = 1'000'000'000;

  explicit Reorderer(int64_t horizon_ns) : horizon_ns_(horizon_ns) {}

  template <typename Emit>
  void push(const PacketRecord& r, Emit&& emit);
  // push() without the copy out: the records it releases stay in the buffer, in order, until takeReleased() hands
  // them over as one span or two (where the buffer wraps). A worker's file path takes them once a poll, so the
  // engine reads them where they were held (the release with its copy into a batch of its own was about 7% of the
  // worker's samples in `analyze`; bench/README.md, issue 41). `take` keeps no reference past its call and does
  // not call back into this Reorderer (a push could grow the buffer under the span).
  void pushHeld(const PacketRecord& r);
  template <typename Take>
  void takeReleased(Take&& take);  // take(std::span<const PacketRecord>)
  template <typename Emit>
  void flush(Emit&& emit);  // what pushHeld() released and not yet taken first, then everything held

  // For merging several queues: hold a record of queue `queue` without releasing anything, then release every
  // record at or before `bound` (the oldest of the queues' watermarks less the horizon). A record that arrives
  // later with a timestamp before the release point (the largest bound so far) is clamped to it and counted, so
  // that the engine may advance to it. A Reorderer takes either push() and pushHeld() records or hold() records,
  // never both (flush() ends either): the two are held apart.
  // Each queue's records are held apart, in time order (a queue's records arrive in order, or nearly), and the
  // release merges the queues: a record is never moved past another queue's records. (One buffer for all of them
  // put each record that was behind another queue's newest in place by moving those one at a time: with the worker
  // behind, hundreds a record; bench/README.md, issue 41.) Ties across queues are released in the order held.
  void hold(size_t queue, const PacketRecord& r);
  template <typename Emit>
  void releaseUpTo(int64_t bound, Emit&& emit);

  uint64_t reordered() const { return reordered_; }  // put back in order within the horizon
  uint64_t clamped() const { return clamped_; }      // arrived later than the horizon allowed
  int64_t maxLatenessNs() const { return max_lateness_ns_; }
  uint64_t clockStepsBack() const { return steps_back_; }  // push(), pushHeld(): steps back of more than kClockStepNs
  int64_t clockShiftNs() const { return shift_ns_; }       // push(), pushHeld(): what they add up to (time shifted on)

 private:
  // Holds `r` with time `ts` (its own, shifted or clamped): one copy into the buffer.
  void holdAt(const PacketRecord& r, int64_t ts);
  // Into the buffer in time order, stable: at the back for a record in order (the usual case, inline), else
  // by insertion from the back (insertLate).
  void insert(const PacketRecord& r, int64_t ts) {
    if (taken_from_ + size_ == buf_.size()) grow();
    const size_t mask = buf_.size() - 1;
    if (size_ == 0 || buf_[(head_ + size_ - 1) & mask].ts_ns <= ts) {
      PacketRecord& slot = buf_[(head_ + size_) & mask];
      slot = r;
      slot.ts_ns = ts;
      ++size_;
      return;
    }
    insertLate(r, ts);
  }
  void insertLate(const PacketRecord& r, int64_t ts);
  void grow();

  // A queue's held records (hold()), in time order, each with its place in the order held (ties across queues).
  struct Held {
    PacketRecord r;
    uint64_t seq;
  };
  struct Lane {
    std::vector<Held> buf;  // ring, power-of-two size (or empty)
    size_t cap = 0;         // buf.size(), kept: a size() is a division by sizeof(Held)
    size_t head = 0;
    size_t size = 0;
    const Held& front() const { return buf[head]; }
  };
  void holdLate(Lane& lane, const PacketRecord& r, int64_t ts);  // behind the lane's newest: inserted from the back
  static void growLane(Lane& lane);

  // The merge's tournament (a winner tree). The leaves are the lanes' front keys (an empty lane's: none); an inner
  // node holds the lane of its children's earlier key, so the root is the lane whose front comes next, and the
  // first of the other lanes' fronts is the earliest key beside its path. After a lane's run only its path is
  // played again: about 2·log2(lanes) compares a run, and a compare a lane to build the tree at each release, where a
  // scan read every lane's front record at every run (with the queues' flows interleaved a run is a record or two).
  // bench/README.md, issue 41.
  // A key is one unsigned 128-bit word, the time (sign bit flipped) above the order held: one compare, no branch.
  using Key = unsigned __int128;
  static constexpr Key kNoKey = ~Key{0};  // no record: after every key (no record has the last seq)
  static Key key(int64_t ts, uint64_t seq) { return Key{static_cast<uint64_t>(ts) ^ (uint64_t{1} << 63)} << 64 | seq; }
  static Key frontKey(const Lane& lane) {
    return lane.size == 0 ? kNoKey : key(lane.front().r.ts_ns, lane.front().seq);
  }
  size_t leaves() const { return tree_.size() / 2; }  // the lanes' count rounded up to a power of two
  void play(size_t node) {                            // the node's lane: its children's earlier key
    const uint32_t l = tree_[2 * node], r = tree_[2 * node + 1];
    tree_[node] = keys_[r] < keys_[l] ? r : l;
  }
  void buildTree();  // every lane's key and every node, from the lanes' fronts
  void replay(size_t lane) {
    for (size_t node = (leaves() + lane) >> 1; node >= 1; node >>= 1) play(node);
  }
  template <typename Emit>
  void mergeLanes(int64_t bound, Emit&& emit);
  template <typename Emit>
  void emitReleased(Emit&& emit) {  // takeReleased() a record at a time (push(), flush())
    takeReleased([&](std::span<const PacketRecord> s) {
      for (const PacketRecord& x : s) emit(x);
    });
  }

  int64_t horizon_ns_;
  std::vector<PacketRecord> buf_ = std::vector<PacketRecord>(1024);  // ring, power-of-two size
  size_t head_ = 0;                                                  // oldest held
  size_t size_ = 0;
  size_t taken_from_ = 0;  // released by pushHeld(), not yet taken: the records just before head_
  int64_t newest_ns_ = INT64_MIN;
  int64_t released_ns_ = INT64_MIN;
  uint64_t reordered_ = 0;
  uint64_t clamped_ = 0;
  int64_t max_lateness_ns_ = 0;
  uint64_t steps_back_ = 0;
  int64_t shift_ns_ = 0;
  std::vector<Lane> lanes_;
  uint64_t seq_ = 0;
  std::vector<Key> keys_;       // a lane's front key at its index; one more, kNoKey, for the leaves past the lanes
  std::vector<uint32_t> tree_;  // node n's children 2n and 2n + 1; the root 1; leaf q at leaves() + q
};

inline void Reorderer::hold(size_t queue, const PacketRecord& r) {
  int64_t ts = r.ts_ns;
  if (ts < released_ns_) {
    max_lateness_ns_ = std::max(max_lateness_ns_, released_ns_ - ts);
    ts = released_ns_;
    ++clamped_;
  }
  if (queue >= lanes_.size()) lanes_.resize(queue + 1);
  Lane& lane = lanes_[queue];
  // Reordered as one buffer for every queue would count it: behind the newest record held. That is newest_ns_:
  // the newest record is released only with everything else, and a record behind what was released is clamped.
  if (ts < newest_ns_) ++reordered_;
  if (lane.size == lane.cap) growLane(lane);
  const size_t mask = lane.cap - 1;
  if (lane.size == 0 || lane.buf[(lane.head + lane.size - 1) & mask].r.ts_ns <= ts) {
    Held& slot = lane.buf[(lane.head + lane.size) & mask];
    slot.r = r;
    slot.r.ts_ns = ts;
    slot.seq = seq_++;
    ++lane.size;
  } else {
    holdLate(lane, r, ts);
  }
  newest_ns_ = std::max(newest_ns_, ts);
}

inline void Reorderer::holdAt(const PacketRecord& r, int64_t ts) {
  if (ts < released_ns_) {
    max_lateness_ns_ = std::max(max_lateness_ns_, released_ns_ - ts);
    ts = released_ns_;
    ++clamped_;
  }
  insert(r, ts);
  newest_ns_ = std::max(newest_ns_, ts);
}

inline void Reorderer::pushHeld(const PacketRecord& r) {
  int64_t ts = r.ts_ns + shift_ns_;
  // Nothing released is newer than newest_ns_ here, so it is the time line's front.
  if (newest_ns_ != INT64_MIN && ts < newest_ns_ - kClockStepNs) {
    ++steps_back_;
    shift_ns_ += newest_ns_ - ts;
    ts = newest_ns_;
  }
  holdAt(r, ts);
  const size_t mask = buf_.size() - 1;
  while (size_ > 0 && buf_[head_].ts_ns <= newest_ns_ - horizon_ns_) {
    released_ns_ = buf_[head_].ts_ns;
    head_ = (head_ + 1) & mask;
    --size_;
    ++taken_from_;
  }
}

template <typename Take>
void Reorderer::takeReleased(Take&& take) {
  if (taken_from_ == 0) return;
  const size_t cap = buf_.size();
  const size_t from = (head_ - taken_from_) & (cap - 1);
  const size_t first = std::min(taken_from_, cap - from);  // up to the buffer's end, then from its start
  take(std::span<const PacketRecord>(buf_.data() + from, first));
  if (first < taken_from_) take(std::span<const PacketRecord>(buf_.data(), taken_from_ - first));
  taken_from_ = 0;
}

template <typename Emit>
void Reorderer::push(const PacketRecord& r, Emit&& emit) {
  pushHeld(r);
  emitReleased(emit);
}

template <typename Emit>
void Reorderer::releaseUpTo(int64_t bound, Emit&& emit) {
  // One queue too: its only run ends at the bound (the other lanes' first is "none").
  mergeLanes(bound, emit);
  released_ns_ = std::max(released_ns_, bound);
}

template <typename Emit>
void Reorderer::flush(Emit&& emit) {
  emitReleased(emit);
  const size_t mask = buf_.size() - 1;
  while (size_ > 0) {
    released_ns_ = buf_[head_].ts_ns;
    emit(buf_[head_]);
    head_ = (head_ + 1) & mask;
    --size_;
  }
  mergeLanes(INT64_MAX, [&](const PacketRecord& r) {
    released_ns_ = r.ts_ns;
    emit(r);
  });
}

template <typename Emit>
void Reorderer::mergeLanes(int64_t bound, Emit&& emit) {
  // The next lane's records up to the other lanes' first (time, then order held): a queue's run of records, a
  // flow's burst in RSS's one queue, is released without looking at the other lanes again for each.
  if (lanes_.empty()) return;
  buildTree();
  // The last key at the bound, which no record has (no seq is UINT64_MAX): every record's key at or before the
  // bound is below it, every later one above (kNoKey for a flush's).
  const Key end = key(bound, UINT64_MAX);
  for (;;) {
    const uint32_t next = tree_[1];
    if (keys_[next] >= end) break;
    // The run ends at the bound or at the other lanes' first: the earliest of the keys beside the root's path.
    Key until = end;
    for (size_t node = leaves() + next; node > 1; node >>= 1) until = std::min(until, keys_[tree_[node ^ 1]]);
    Lane& lane = lanes_[next];
    const Held* buf = lane.buf.data();
    const size_t mask = lane.cap - 1;
    size_t head = lane.head, left = lane.size;
    do {
      emit(buf[head].r);
      head = (head + 1) & mask;
      --left;
    } while (left > 0 && key(buf[head].r.ts_ns, buf[head].seq) < until);
    lane.head = head;
    lane.size = left;
    keys_[next] = frontKey(lane);
    replay(next);
  }
}

}  // namespace burstscope
