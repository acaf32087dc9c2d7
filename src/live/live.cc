#include "src/live/live.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <ostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "burstscope/status.h"

namespace burstscope {
namespace {

constexpr size_t kBatch = 256;

std::string scaleName(int64_t ns) {
  if (ns % 1'000'000'000 == 0) return absl::StrCat(ns / 1'000'000'000, "s");
  if (ns % 1'000'000 == 0) return absl::StrCat(ns / 1'000'000, "ms");
  return absl::StrCat(ns / 1000, "us");
}

std::string humanBps(double bps) {
  if (bps >= 1e9) return absl::StrFormat("%.2f Gb/s", bps / 1e9);
  if (bps >= 1e6) return absl::StrFormat("%.2f Mb/s", bps / 1e6);
  return absl::StrFormat("%.0f kb/s", bps / 1e3);
}

std::string humanBytes(double b) {
  if (b >= 1e6) return absl::StrFormat("%.2f MB", b / 1e6);
  if (b >= 1e3) return absl::StrFormat("%.1f kB", b / 1e3);
  return absl::StrFormat("%.0f B", b);
}

uint64_t ringDrops(const LivePort& p) {
  uint64_t n = 0;
  for (const QueueCounters* c : p.counters) n += c->ring_drops.load(std::memory_order_relaxed);
  return n;
}

uint64_t received(const LivePort& p) {
  uint64_t n = 0;
  for (const QueueCounters* c : p.counters) n += c->received.load(std::memory_order_relaxed);
  return n;
}

// One port's worker state: its queues' watermarks, the merge and the engine.
struct PortWorker {
  PortWorker(const LivePort& p, const EngineConfig& ec, int64_t horizon)
      : port(p), engine(ec), reorder(horizon), horizon_ns(horizon), watermark(p.rings.size(), INT64_MIN) {}

  const LivePort& port;
  Engine engine;
  Reorderer reorder;
  int64_t horizon_ns;
  std::vector<int64_t> watermark;
  uint64_t analysed = 0;
  uint64_t intervals = 0;

  // Takes what the rings hold; returns the number of packet records (not ticks) taken.
  size_t poll(std::array<PacketRecord, kBatch>& batch) {
    size_t packets = 0;
    for (size_t q = 0; q < port.rings.size(); ++q) {
      const size_t n = port.rings[q]->dequeue(batch);
      for (size_t i = 0; i < n; ++i) {
        const PacketRecord& r = batch[i];
        watermark[q] = std::max(watermark[q], r.ts_ns);
        if (r.flags & kRecordTick) continue;
        reorder.hold(r);
        ++packets;
      }
    }
    const int64_t low = *std::min_element(watermark.begin(), watermark.end());
    if (low != INT64_MIN) {
      const int64_t bound = low - horizon_ns;
      reorder.releaseUpTo(bound, [this](const PacketRecord& r) { feed(r); });
      engine.advance(bound);
    }
    return packets;
  }

  void feed(const PacketRecord& r) {
    engine.add(r);
    ++analysed;
  }
};

}  // namespace

std::string intervalSummary(const std::string& port, const IntervalReport& r, const EngineConfig& c,
                            uint64_t ring_drops, const DeviceStats& dev) {
  const IntervalStream& s = r.port;
  std::string line = absl::StrFormat("%s %s%s  %s %7.3f Mpps", absl::FormatTime("%H:%M:%E3S",
                                     absl::FromUnixNanos(r.start_ns), absl::UTCTimeZone()),
                                     port, r.partial ? " (partial)" : "", humanBps(s.mean_bps),
                                     static_cast<double>(s.packets) * 1e3 /
                                         static_cast<double>(r.end_ns - r.start_ns));
  absl::StrAppend(&line, "  PtM");
  for (size_t i = 0; i < c.scales_ns.size(); ++i) {
    absl::StrAppend(&line, " ", scaleName(c.scales_ns[i]), ":",
                    s.ptm[i] ? absl::StrFormat("%.1f", *s.ptm[i]) : std::string("-"));
  }
  if (!s.backlog_bytes.empty()) {
    absl::StrAppend(&line, "  Bmax@", humanBps(c.rates_bps.front()), " ", humanBytes(s.backlog_bytes.front()));
  }
  absl::StrAppend(&line, "  microbursts ", r.microbursts_total, "  drops ring ", ring_drops);
  if (dev.imissed) absl::StrAppend(&line, " nic ", *dev.imissed + dev.rx_nombuf.value_or(0));
  return line;
}

void QueueCounters::publishDecode(const DecodeStats& s) {
  for (int i = 0; i < kDecodeErrorCount; ++i) decode_errors[i].store(s.errors[i], std::memory_order_relaxed);
  non_ip.store(s.non_ip, std::memory_order_relaxed);
  encapsulated.store(s.encapsulated, std::memory_order_relaxed);
  mirror_seq_gaps.store(s.mirror_seq_gaps, std::memory_order_relaxed);
  mirror_seq_reorders.store(s.mirror_seq_reorders, std::memory_order_relaxed);
}

DecodeStats QueueCounters::decode() const {
  DecodeStats s;
  for (int i = 0; i < kDecodeErrorCount; ++i) s.errors[i] = decode_errors[i].load(std::memory_order_relaxed);
  s.non_ip = non_ip.load(std::memory_order_relaxed);
  s.encapsulated = encapsulated.load(std::memory_order_relaxed);
  s.mirror_seq_gaps = mirror_seq_gaps.load(std::memory_order_relaxed);
  s.mirror_seq_reorders = mirror_seq_reorders.load(std::memory_order_relaxed);
  return s;
}

DecodeStats CaptureBackend::decodeStats(size_t port) const {
  DecodeStats s;
  for (const QueueCounters* q : ports()[port].counters) s.merge(q->decode());
  return s;
}

EngineConfig portEngineConfig(const EngineConfig& base, double link_bps) {
  EngineConfig c = base;
  if (link_bps > 0) c.link_capacity_bps = link_bps;
  // The link's own speed is always among the backlog rates: the congestion alert compares it to the buffer.
  if (std::find(c.rates_bps.begin(), c.rates_bps.end(), c.link_capacity_bps) == c.rates_bps.end()) {
    c.rates_bps.push_back(c.link_capacity_bps);
  }
  return c;
}

uint64_t DeviceStats::dropStagesTotal() const {
  uint64_t n = 0;
  for (const auto& [stage, v] : drop_stages) n += v;
  return n;
}

bool ledgerBalanced(const LivePortResult& p) {
  const Ledger& l = p.pipeline.ledger;
  const DeviceStats& d = p.device;
  return l.balanced() && (!d.ipackets || *d.ipackets == l.received) &&
         (!d.seen || *d.seen == l.received + d.dropStagesTotal() + d.filtered);
}

std::string ledgerText(const LiveResult& r) {
  std::string out;
  auto opt = [](const std::optional<uint64_t>& v) {
    return v ? absl::StrCat(*v) : std::string("not reported by this device");
  };
  for (const LivePortResult& p : r.ports) {
    const Ledger& l = p.pipeline.ledger;
    const DeviceStats& d = p.device;
    const uint64_t nic_drops = d.imissed.value_or(0) + d.ierrors.value_or(0) + d.rx_nombuf.value_or(0);
    absl::StrAppend(&out, "ledger ", p.name, " (", r.backend, ", timestamps: ", r.timestamps.source, ")\n");
    absl::StrAppend(&out, "  reached the port    ", l.received + nic_drops + d.dropStagesTotal() + d.filtered,
                    "\n");
    absl::StrAppend(&out, "  dropped by the NIC  missed ", opt(d.imissed), ", errors ", opt(d.ierrors),
                    ", no mbuf ", opt(d.rx_nombuf), "\n");
    if (d.seen) {
      absl::StrAppend(&out, "  seen by XDP         ", *d.seen, "  (filtered out ", d.filtered, ")\n");
    }
    for (const auto& [stage, v] : d.drop_stages) {
      absl::StrAppend(&out, "  dropped, ", absl::StrFormat("%-17s", stage), " ", v, "\n");
    }
    absl::StrAppend(&out, "  received by RX      ", l.received, "  (device ipackets ", opt(d.ipackets), ")\n");
    absl::StrAppend(&out, "  dropped, ring full  ", l.ring_drops, "\n");
    absl::StrAppend(&out, "  analysed            ", l.analysed, "  (decode errors ",
                    p.pipeline.decode.errorTotal(), ", clamped late ", p.pipeline.clamped, ")\n");
    absl::StrAppend(&out, "  ", ledgerBalanced(p) ? "balanced" : "NOT BALANCED", ": received ", l.received,
                    " = analysed ", l.analysed, " + ring drops ", l.ring_drops);
    if (d.seen) {
      absl::StrAppend(&out, "; seen ", *d.seen, " = received ", l.received, " + dropped before RX ",
                      d.dropStagesTotal(), " + filtered ", d.filtered);
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

absl::StatusOr<LiveResult> runLive(CaptureBackend& backend, const LiveConfig& config,
                                   const std::atomic<bool>& stop, std::ostream& out) {
  const std::vector<LivePort>& ports = backend.ports();
  std::vector<EngineConfig> engine_configs;
  std::vector<std::unique_ptr<PortWorker>> workers;
  for (const LivePort& p : ports) {
    const EngineConfig ec = portEngineConfig(config.engine, p.link_bps);
    if (absl::Status s = validateConfig(ec); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("port ", p.name, ": ", s.message()));
    }
    engine_configs.push_back(ec);
  }
  for (size_t i = 0; i < ports.size(); ++i) {
    workers.push_back(std::make_unique<PortWorker>(ports[i], engine_configs[i], config.reorder_horizon_ns));
    PortWorker* w = workers.back().get();
    const EngineConfig* ec = &engine_configs[i];
    w->engine.setIntervalSink([&backend, &out, &config, w, ec, i](const IntervalReport& r) {
      ++w->intervals;
      if (config.quiet && !config.on_interval) return;
      const DeviceStats device = backend.deviceStats(i);
      const Ledger ledger{received(w->port), w->analysed, ringDrops(w->port)};
      if (!config.quiet) out << intervalSummary(w->port.name, r, *ec, ledger.ring_drops, device) << std::endl;
      if (!config.on_interval) return;
      PortSnapshot s;
      s.interval = r;
      s.intervals = w->intervals;
      s.ledger = ledger;
      s.reordered = w->reorder.reordered();
      s.clamped = w->reorder.clamped();
      s.device = device;
      s.decode = backend.decodeStats(i);
      s.timestamps = backend.timestampInfo();
      config.on_interval(i, s);
    });
  }

  BS_RETURN_IF_ERROR(backend.start());
  LiveResult result;
  result.backend = backend.name();
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  Clock::time_point last_packet = started;
  std::array<PacketRecord, kBatch> batch;
  uint64_t empty_polls = 0;
  uint64_t last_seen = 0;
  // Idle backoff: 100 us after the first empty round, doubling to 1 ms while the rings stay empty, so that
  // a quiet mirror port costs little CPU; data resets it. The rings hold far more than 1 ms of records.
  std::chrono::microseconds idle_sleep{100};
  for (uint64_t iteration = 0;; ++iteration) {
    size_t got = 0;
    for (auto& w : workers) got += w->poll(batch);
    // The stop conditions are checked when idle, and every 1024 polls when busy: an overloaded worker must
    // still stop on a signal.
    if (got > 0) idle_sleep = std::chrono::microseconds(100);
    if (got > 0 && (iteration & 1023) != 0) {
      empty_polls = 0;
      continue;
    }
    if (got == 0 && ++empty_polls < 64) continue;
    empty_polls = 0;
    const Clock::time_point now = Clock::now();
    uint64_t seen = 0;
    for (const LivePort& p : ports) seen += received(p);
    if (seen != last_seen) {
      last_seen = seen;
      last_packet = now;
    }
    if (stop.load(std::memory_order_relaxed)) {
      result.stop_reason = "signal";
      break;
    }
    if (config.duration_s > 0 && now - started >= std::chrono::duration<double>(config.duration_s)) {
      result.stop_reason = "duration";
      break;
    }
    if (config.idle_exit_s > 0 && seen > 0 &&
        now - last_packet >= std::chrono::duration<double>(config.idle_exit_s)) {
      result.stop_reason = "idle";
      break;
    }
    if (got == 0) {
      std::this_thread::sleep_for(idle_sleep);
      idle_sleep = std::min(idle_sleep * 2, std::chrono::microseconds(1000));
    }
  }

  // Stop RX (its threads push their last records and a final tick), then drain everything that is left.
  backend.stop();
  while (true) {
    size_t got = 0;
    for (auto& w : workers) got += w->poll(batch);
    if (got == 0) break;
  }
  result.timestamps = backend.timestampInfo();
  for (size_t i = 0; i < workers.size(); ++i) {
    PortWorker& w = *workers[i];
    w.reorder.flush([&w](const PacketRecord& r) { w.feed(r); });
    w.engine.finish();
    LivePortResult pr;
    pr.name = ports[i].name;
    pr.pipeline.engine = w.engine.result();
    pr.pipeline.decode = backend.decodeStats(i);
    pr.pipeline.ledger = Ledger{received(ports[i]), w.analysed, ringDrops(ports[i])};
    pr.pipeline.reordered = w.reorder.reordered();
    pr.pipeline.clamped = w.reorder.clamped();
    pr.pipeline.max_lateness_ns = w.reorder.maxLatenessNs();
    pr.device = backend.deviceStats(i);
    pr.intervals = w.intervals;
    for (const QueueCounters* c : ports[i].counters) {
      pr.queue_received.push_back(c->received.load());
      pr.queue_ring_drops.push_back(c->ring_drops.load());
    }
    result.ports.push_back(std::move(pr));
  }
  return result;
}

}  // namespace burstscope
