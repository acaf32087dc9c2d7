// The one driver behind `analyze` and `run` (docs/architecture.md): a capture source's queues -> one worker
// thread per port (merge the port's queues by timestamp, reorder, engine, close intervals) -> results.
// The packet path never waits for anything else: interval reports leave each worker through a short
// hand-over, and the control thread (the caller's) reads device statistics, prints, and publishes them.
//
// Merge contract: each live queue's records are in timestamp order up to the reorder horizon, and the queue
// sends tick records (kRecordTick) carrying its watermark while idle. A port's worker releases a record once
// every queue of the port has a watermark at least `horizon` past it, so a quiet queue never holds the
// others back and a busy one never runs ahead of a slow one. A capture file (one ordered, lossless queue) is put
// in order by its reading thread instead (QueueProducer::orderInTime: released by the newest timestamp, a clock
// stepping back by over a second shifting time on), sends no ticks, and its worker reads the records in the ring.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "burstscope/capture.h"
#include "burstscope/decode.h"
#include "burstscope/evidence.h"
#include "burstscope/mirror.h"
#include "burstscope/training.h"
#include "burstscope/window.h"

namespace burstscope {

struct PipelineConfig {
  EngineConfig engine;  // per port: the port's link speed as capacity, and among the backlog rates
  int64_t reorder_horizon_ns = 1'000'000;
  // Worker threads per port, 1 to 3 (docs/workers.md): the port's worker merges its queues and runs the port
  // and direction streams; a second one runs the pair and flow tables, the congestion evidence and (with two)
  // the training aggregator; a third the training aggregator. Results are the same with any number.
  size_t workers_per_port = 1;
  double idle_exit_s = 0;  // stop after this long without a packet on any port, once one came (0: never)
  double duration_s = 0;   // stop after this long (0: until a signal, or until a file source is done)
  // Jobs, periods, topology, co-bursts (docs/training.md): an aggregator on each worker, an analyzer per
  // port on the control thread. Without report intervals (a file) the window is the whole input.
  TrainingConfig training;
  // ECN, TCP retransmissions, RoCEv2 CNPs/NAKs/resends, PFC pauses; congesting microbursts (docs/evidence.md).
  EvidenceConfig evidence;
  // Duplicated frames and the mirror port's own load (docs/mirror.md); its TCP loss checks run in the evidence.
  MirrorConfig mirror;
  // More aggregators and observers on each port's engine (the report's studies, src/studies): called once per
  // port on the caller's thread, after the built-in ones are added and before the first record. What it adds
  // runs on the port's worker; read its results after runCapture returns.
  std::function<void(size_t port, Engine& engine)> extend_engine;
  // Offline studies (src/studies: whatif) keep the packets as the engine measured them: called on each port's
  // worker with every batch of records just before the engine takes it (time order, after the reorder
  // stage). Empty: none. It runs on the packet path; it must not block.
  std::function<void(size_t port, std::span<const PacketRecord> records)> record_sink;
  // Called on the control thread when a live port's watched link changes (CaptureSource::linkState), looked at
  // every time the control thread wakes (at least every 64 ms), closes or not. Empty: none.
  std::function<void(size_t port, const LinkState& link)> link_sink;
  // A live capture's control thread (the caller's) lowers its own priority, nice +10, from the workers' start to
  // their end, so that it yields to them where they share a CPU (pipeline.cc kControlNice); restored afterwards
  // where the thread may raise it again (CAP_SYS_NICE). `run` sets it; a file's run ignores it.
  bool yield_control_thread = false;
};

// Every frame that reached the pipeline, counted once: received == analysed + ring_drops.
struct Ledger {
  uint64_t received = 0;
  uint64_t analysed = 0;
  uint64_t ring_drops = 0;
  bool balanced() const { return received == analysed + ring_drops; }
};

// SPEC "Overload": what the port's complete 100 µs series (counted by each live queue's producer before its ring)
// says about one report interval. The totals are exact whenever the series is. A figure whose windows reach
// frames lost after the bins (a full ring) is *bounded*: E(τ) when a loss lies within τ before or in the
// interval, PtM(τ) also when a loss lies in its baseline, the virtual backlog at rate r when a loss came since
// the queue last drained; with k = τ/100 µs,
// max B_k <= E(τ) <= max B_(k+1), and the backlog within 2·r·100 µs (docs/reliability.md). An interval with a
// bounded figure is degraded.
struct IntervalBounds {
  uint64_t packets = 0, bytes = 0;    // every frame the port's queues took in the interval
  uint64_t lost = 0, lost_bytes = 0;  // of those, dropped after the bins (record ring full) or before them
  uint64_t kernel_lost = 0;           // of `lost`: counted by the kernel's bins, lost before the producers
  // The lost frames' bytes the series cannot know exactly (wrapped frames lost before the producers: the kernel
  // counts their outer bytes): the interval's bytes are [bytes, bytes + bytes_unsure]. 0: exact.
  uint64_t bytes_unsure = 0;
  bool complete = true;  // no bin of the interval or its windows was lost on the side channel
  // Only for a degraded interval (else empty), per scale and per rate: whether the figure is bounded, and its
  // [lower, upper] (an exact figure: lower == upper == the analysed one). PtM against the baseline of every
  // frame, from the series. A lower bound takes the analysed figure where larger (a subset never exceeds the
  // whole). Without a complete series a bounded figure has no upper bound (upper 0: unknown).
  std::vector<bool> envelope_bounded, ptm_bounded, backlog_bounded;
  std::vector<std::pair<uint64_t, uint64_t>> envelope_bytes;
  std::vector<std::pair<std::optional<double>, std::optional<double>>> ptm;
  std::vector<std::pair<double, double>> backlog_bytes;
  double baseline_bps = 0;  // of every frame, from the series (degraded intervals only)
  // The port stream's microbursts (at the detector's τ and threshold) with an instant in the interval, when a
  // lost frame lies within τ before or in it: [at least, at most] from the series (docs/reliability.md). At
  // least: groups of instants surely in a microburst, parted by bins surely outside any; at most: per run of
  // bins not surely outside, one more than the frames leaving the window in it, and no more than its frames
  // (plus one going on at the start). Without a complete series the upper bound is unknown (0).
  bool microbursts_bounded = false;
  std::pair<uint64_t, uint64_t> microbursts{0, 0};
  bool degraded() const { return !envelope_bounded.empty(); }
};

// What a port publishes at the close of each report interval, so that an exporter serves figures that change
// only once per interval. The interval and the ledger are taken by the worker at the close; the device and
// decoder counts by the control thread just after it.
struct PortSnapshot {
  IntervalReport interval;
  uint64_t intervals = 0;  // reported so far, this one included
  Ledger ledger;           // received, analysed and ring drops when the interval closed
  uint64_t reordered = 0;
  uint64_t clamped = 0;
  // From the queues' 100 µs bins; none for a source without them (a file: lossless).
  std::optional<IntervalBounds> bounds;
  DeviceStats device;  // read by the control thread just after the close, never by the worker
  DecodeStats decode;
  TimestampInfo timestamps;
  // The training analysis, on the control thread after the close; when several intervals of a port were
  // handed over at once, only the last carries it (covering them all), the others none.
  std::shared_ptr<const TrainingReport> training;
};

struct PortResult {
  std::string name;
  EngineConfig engine_config;  // as this port ran it
  EngineResult engine;
  DecodeStats decode;
  Ledger ledger;
  uint64_t reordered = 0;
  uint64_t clamped = 0;
  int64_t max_lateness_ns = 0;
  uint64_t clock_steps_back = 0;  // a file's timestamps stepping back by over a second: time shifted on
  int64_t clock_shift_ns = 0;
  DeviceStats device;
  std::vector<uint64_t> queue_received;  // per queue, as its producer counted
  std::vector<uint64_t> queue_ring_drops;
  uint64_t intervals = 0;
  // SPEC "Overload", live queues only: intervals that lost frames after the bins, and their bounds (the first
  // kMaxDegradedKept of them; degraded_intervals counts all).
  uint64_t degraded_intervals = 0;
  uint64_t series_packets = 0, series_bytes = 0;  // every frame in the intervals' complete series
  uint64_t series_bytes_unsure = 0;  // bytes the series can only bound (IntervalBounds::bytes_unsure, summed)
  uint64_t series_kernel_lost = 0;   // frames the kernel's bins counted and the producers never saw
  std::vector<std::tuple<int64_t, int64_t, IntervalBounds>> degraded;  // start, end, bounds
  static constexpr size_t kMaxDegradedKept = 10000;
  uint64_t bins_late = 0;          // bin parts that came after their interval closed (not in its series)
  uint64_t bin_channel_drops = 0;  // bins the full side channels dropped
  std::shared_ptr<const TrainingReport> training;  // the last analysis (offline: of the whole file)
};

struct RunResult {
  std::vector<PortResult> ports;
  TimestampInfo timestamps;
  SourceStats source;
  std::string backend;
  std::string stop_reason;  // "signal", "idle", "duration", "end of input"
};

// The engine configuration a port runs with: the port's link speed as capacity and among the backlog rates
// (the congestion alert compares that backlog with the switch buffer); a port without a link speed of its
// own (0: a capture file) runs the configuration as given.
EngineConfig portEngineConfig(const EngineConfig& base, double link_bps);

// Called on the control thread with each port's snapshot at every interval close.
using IntervalCallback = std::function<void(size_t port, const PortSnapshot&)>;

// Starts the source and runs until `stop`, the idle timeout, the duration, or the end of a finite source;
// then stops the source, drains every queue and finishes the engines.
absl::StatusOr<RunResult> runCapture(CaptureSource& source, const PipelineConfig& config, const std::atomic<bool>& stop,
                                     const IntervalCallback& on_interval = {});

// received by RX = analysed + ring drops, the device's own RX count (if any) agrees, and frames seen before
// RX (if counted) = received + drop stages + filtered.
bool ledgerBalanced(const PortResult& p);

}  // namespace burstscope
