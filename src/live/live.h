// Live measurement: capture backends (DPDK now, AF_XDP later) fill one lock-free record ring per RX queue
// from their poll-mode threads; runLive() is the worker that merges a port's queues back into timestamp
// order, runs the engine, prints a summary per report interval and, after stop, the ledger.
//
// Merge contract: each queue's records are in timestamp order up to the reorder horizon, and every queue
// sends tick records (kRecordTick) carrying its watermark while idle. The worker releases a record once
// every queue of its port has a watermark at least `horizon` past it, so a quiet queue never holds the
// others back and a busy one never runs ahead of a slow one.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "burstscope/decode.h"
#include "burstscope/ring.h"
#include "burstscope/window.h"
#include "src/pipeline/pipeline.h"

namespace burstscope {

// Written only by the queue's RX thread (relaxed stores once per burst), read by anyone.
struct alignas(kCacheLine) QueueCounters {
  std::atomic<uint64_t> received{0};    // frames taken from the queue (ticks are not frames)
  std::atomic<uint64_t> ring_drops{0};  // of those, dropped because the record ring was full
  // The queue's decoder counts, copied by the RX thread now and then (every few bursts, when idle, at
  // stop), so that the exporter can read them while capture runs without touching the decoder.
  alignas(kCacheLine) std::array<std::atomic<uint64_t>, kDecodeErrorCount> decode_errors{};
  std::atomic<uint64_t> non_ip{0}, encapsulated{0}, mirror_seq_gaps{0}, mirror_seq_reorders{0};

  void publishDecode(const DecodeStats& s);
  DecodeStats decode() const;
};

// What the device says about a port. A counter the device does not report is nullopt, never 0.
struct DeviceStats {
  std::optional<uint64_t> ipackets, ibytes, imissed, ierrors, rx_nombuf;
  std::vector<std::optional<uint64_t>> queue_ipackets;  // per RX queue
  std::vector<std::pair<std::string, uint64_t>> xstats;  // the driver's own extended counters
  // Backends that see frames before RX (AF_XDP: the XDP program) also say how many they saw, where frames
  // were lost on the way to RX, by stage ("xsk_rx_ring_full", ...), and how many a filter left out. Then
  // seen = received + the stages' sum + filtered.
  std::optional<uint64_t> seen;
  std::vector<std::pair<std::string, uint64_t>> drop_stages;
  uint64_t filtered = 0;
  uint64_t dropStagesTotal() const;
};

struct LivePort {
  std::string name;
  double link_bps = 0;
  std::vector<SpscRing<PacketRecord>*> rings;  // one per RX queue
  std::vector<QueueCounters*> counters;        // one per RX queue
};

// How a backend timestamps packets, in words for the docs, the summary and the info metric.
struct TimestampInfo {
  std::string source;       // "nic", "tsc" or "pcap_file"
  std::string description;  // e.g. "TSC 2.45 GHz per RX burst, re-synchronised to CLOCK_REALTIME every 1 s"
  double error_bound_ns = 0;  // stated bound on |recorded - true arrival| beyond the source's own sync
  int64_t max_resync_step_ns = 0;  // largest correction seen at a re-synchronisation (tsc, nic)
};

class CaptureBackend {
 public:
  virtual ~CaptureBackend() = default;
  virtual std::string name() const = 0;  // "dpdk", "af_xdp"
  virtual const std::vector<LivePort>& ports() const = 0;
  virtual absl::Status start() = 0;
  // Stops RX and returns once every RX thread has pushed its last records and a final tick.
  virtual void stop() = 0;
  virtual DeviceStats deviceStats(size_t port) const = 0;
  // As last published by the RX threads: a little behind while running, exact after stop(). The port's
  // queue counters, summed, unless a backend knows better.
  virtual DecodeStats decodeStats(size_t port) const;
  virtual TimestampInfo timestampInfo() const = 0;
  // Lines worth telling the operator at start (e.g. the XDP mode taken, a stale program replaced).
  virtual std::vector<std::string> notes() const { return {}; }
};

// What a port's worker publishes at the close of each report interval, all read at that moment, so that an
// exporter serves self-consistent figures that change only once per interval.
struct PortSnapshot {
  IntervalReport interval;
  uint64_t intervals = 0;  // reported so far, this one included
  Ledger ledger;           // received, analysed and ring drops when the interval closed
  uint64_t reordered = 0;
  uint64_t clamped = 0;
  DeviceStats device;
  DecodeStats decode;
  TimestampInfo timestamps;
};

struct LiveConfig {
  EngineConfig engine;  // link_capacity_bps is taken from each port; empty rates_bps means its link speed
  int64_t reorder_horizon_ns = 1'000'000;
  double idle_exit_s = 0;  // stop after this long without a packet on any port (0: never)
  double duration_s = 0;   // stop after this long (0: until a signal)
  bool quiet = false;      // no per-interval summary
  // Called on the worker thread with each port's snapshot at every interval close (the exporter).
  std::function<void(size_t port, const PortSnapshot&)> on_interval;
};

struct LivePortResult {
  std::string name;
  PipelineResult pipeline;  // engine result, decode stats, ledger, reorder counts
  DeviceStats device;
  std::vector<uint64_t> queue_received;  // per RX queue, as the RX threads counted
  std::vector<uint64_t> queue_ring_drops;
  uint64_t intervals = 0;
};

struct LiveResult {
  std::vector<LivePortResult> ports;
  TimestampInfo timestamps;
  std::string backend;
  std::string stop_reason;  // "signal", "idle", "duration"
};

// The engine configuration one port runs with: the port's link capacity, and its link speed among the
// backlog rates (the only one unless rates are configured).
EngineConfig portEngineConfig(const EngineConfig& base, double link_bps);

// Runs until `stop` becomes true, the idle timeout or the duration; the summary goes to `out`.
absl::StatusOr<LiveResult> runLive(CaptureBackend& backend, const LiveConfig& config,
                                   const std::atomic<bool>& stop, std::ostream& out);

// One line per port per interval: rates, PtM per scale, microbursts, drops.
std::string intervalSummary(const std::string& port, const IntervalReport& r, const EngineConfig& c,
                            uint64_t ring_drops, const DeviceStats& dev);
// The closing ledger: received by the device = analysed + dropped, by stage.
std::string ledgerText(const LiveResult& r);
bool ledgerBalanced(const LivePortResult& p);

}  // namespace burstscope
