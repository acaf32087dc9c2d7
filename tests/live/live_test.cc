// The driver's merge (src/pipeline): records from several queues, each in order but interleaved in time,
// with ticks while a queue idles, must reach the engine exactly as one time-ordered stream would, and the
// ledger must count every frame once. The queues are fed by plain threads standing in for RX lcores.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"
#include "src/analysis/report.h"
#include "src/capture/common/link_watch.h"
#include "src/export/metrics.h"
#include "src/pipeline/analysis_pace.h"
#include "src/pipeline/pipeline.h"

namespace burstscope {
namespace {

class ThreadBackend final : public CaptureSource {
 public:
  // lossless: a producer waits for room instead of dropping (so that a test can hold the worker to account
  // for progress rather than for speed).
  ThreadBackend(std::vector<std::vector<PacketRecord>> per_queue, size_t ring_capacity, bool lossless = false)
      : input_(std::move(per_queue)), lossless_(lossless) {
    port_.name = "test0";
    port_.link_bps = 10e9;
    for (size_t q = 0; q < input_.size(); ++q) {
      rings_.push_back(std::make_unique<SpscRing<PacketRecord>>(ring_capacity));
      counters_.push_back(std::make_unique<QueueCounters>());
      port_.rings.push_back(rings_.back().get());
      port_.counters.push_back(counters_.back().get());
    }
    ports_.push_back(port_);
  }
  std::string name() const override { return "threads"; }
  const std::vector<CapturePort>& ports() const override { return ports_; }
  absl::Status start() override {
    for (size_t q = 0; q < input_.size(); ++q) {
      threads_.emplace_back([this, q] { produce(q); });
    }
    return absl::OkStatus();
  }
  void stop() override {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  // A device read can be slow (sysfs, a driver's extended counters): it must never stall the packet path.
  DeviceStats deviceStats(size_t) const override {
    if (slow_device_.exchange(false)) std::this_thread::sleep_for(std::chrono::seconds(1));
    return {};
  }
  // The next device read takes a second.
  void makeDeviceSlow() { slow_device_ = true; }
  // Every producer has sent everything (its final tick included) and the worker has taken it all.
  bool drained() const {
    if (done_.load() != input_.size()) return false;
    for (const auto& r : rings_) {
      if (r->size() != 0) return false;
    }
    return true;
  }
  DecodeStats decodeStats(size_t) const override { return {}; }
  TimestampInfo timestampInfo() const override { return {"test", "records' own timestamps", 0, 0}; }

 private:
  // Like an RX lcore: bursts of up to 32 records, dropping what does not fit, a tick after each idle spell.
  void produce(size_t q) {
    const std::vector<PacketRecord>& in = input_[q];
    uint64_t received = 0, drops = 0;
    std::mt19937 rng(static_cast<uint32_t>(q));
    for (size_t i = 0; i < in.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 32, in.size() - i);
      // As QueueProducer::flush counts: received before any of them can be taken, a drop only after the received
      // count that holds it (a ledger read then never finds analysed + drops above received; storing received
      // after the enqueue let a fast worker analyse records not yet counted as received).
      received += n;
      counters_[q]->received.store(received, std::memory_order_release);
      size_t done = rings_[q]->enqueue({in.data() + i, n});
      while (lossless_ && done < n) {
        std::this_thread::yield();
        done += rings_[q]->enqueue({in.data() + i + done, n - done});
      }
      drops += n - done;
      counters_[q]->ring_drops.store(drops, std::memory_order_release);
      i += n;
      if (rng() % 8 == 0) std::this_thread::yield();
    }
    PacketRecord tick;
    tick.ts_ns = in.empty() ? 0 : in.back().ts_ns;
    tick.flags = kRecordTick;
    while (rings_[q]->enqueue({&tick, 1}) == 0) std::this_thread::yield();
    ++done_;
  }

  std::vector<std::vector<PacketRecord>> input_;
  std::vector<std::unique_ptr<SpscRing<PacketRecord>>> rings_;
  std::vector<std::unique_ptr<QueueCounters>> counters_;
  bool lossless_;
  mutable std::atomic<bool> slow_device_{false};
  std::atomic<size_t> done_{0};
  CapturePort port_;
  std::vector<CapturePort> ports_;
  std::vector<std::thread> threads_;
};

// Bursty traffic spread over `queues` queues by flow, each queue's records in time order.
std::vector<std::vector<PacketRecord>> makeQueues(size_t queues, size_t n, std::vector<PacketRecord>* all) {
  std::mt19937_64 rng(42);
  std::vector<std::vector<PacketRecord>> out(queues);
  int64_t t = 1'795'294'232'000'000'000;
  for (size_t i = 0; i < n; ++i) {
    t += static_cast<int64_t>(rng() % 4 == 0 ? rng() % 3'000'000 : rng() % 2'000);
    PacketRecord r;
    r.ts_ns = t;
    r.wire_len = 64 + static_cast<uint32_t>(rng() % 1450);
    r.key.family = 4;
    r.key.src = {10, 0, 0, static_cast<uint8_t>(rng() % 16)};
    r.key.dst = {10, 0, 1, static_cast<uint8_t>(rng() % 16)};
    r.key.proto = 17;
    all->push_back(r);
    out[(r.key.src[3] + r.key.dst[3]) % queues].push_back(r);
  }
  return out;
}

EngineConfig liveEngine() {
  EngineConfig c;
  c.scales_ns = {100'000, 1'000'000, 10'000'000};
  c.rates_bps = {10e9};
  c.report_interval_ns = 100'000'000;
  c.baseline_ns = 1'000'000'000;
  return c;
}

// Runs the driver until the queues have been quiet for 0.3 s (stop() then joins the producers, so every
// record is taken whatever a loaded machine did to the threads' timing).
absl::StatusOr<RunResult> runUntilIdle(CaptureSource& backend, const IntervalCallback& on_interval = {},
                                       const EngineConfig& engine = liveEngine(), size_t workers = 1) {
  PipelineConfig pc;
  pc.engine = engine;
  pc.workers_per_port = workers;
  pc.idle_exit_s = 0.3;
  std::atomic<bool> stop{false};
  return runCapture(backend, pc, stop, on_interval);
}

// Three queues merged by watermarks (the live path: releases and advances as the queues' ticks allow) give
// what one engine gives on the records in order — with one worker per port and with the analysis split over
// two and three (docs/workers.md: the parts are handed the same advances).
TEST(LiveMergeTest, QueuesMergeIntoTheSameResultAsOneOrderedStream) {
  for (size_t workers : {1, 2, 3}) {
    SCOPED_TRACE(absl::StrCat(workers, " workers"));
    std::vector<PacketRecord> all;
    ThreadBackend backend(makeQueues(3, 60'000, &all), size_t{1} << 20);  // rings big enough: no drops
    auto r = runUntilIdle(backend, {}, liveEngine(), workers);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->ports.size(), 1u);
    const PortResult& p = r->ports[0];
    EXPECT_EQ(r->stop_reason, "idle");
    EXPECT_EQ(p.ledger.received, all.size());
    EXPECT_EQ(p.ledger.analysed, all.size());
    EXPECT_TRUE(ledgerBalanced(p));
    EXPECT_EQ(p.clamped, 0u);

    EngineConfig direct_cfg = liveEngine();
    direct_cfg.link_capacity_bps = 10e9;
    Engine direct(direct_cfg);
    uint64_t intervals = 0;
    direct.setIntervalSink([&](const IntervalReport&) { ++intervals; });
    for (const PacketRecord& rec : all) direct.add(rec);
    direct.finish();
    const EngineResult want = direct.result();
    const EngineResult& got = p.engine;
    EXPECT_EQ(got.port.packets, want.port.packets);
    EXPECT_EQ(got.port.bytes, want.port.bytes);
    for (size_t i = 0; i < want.port.scales.size(); ++i) {
      EXPECT_EQ(got.port.scales[i].envelope_bytes, want.port.scales[i].envelope_bytes);
      EXPECT_EQ(got.port.scales[i].peak_bin_bytes, want.port.scales[i].peak_bin_bytes);
    }
    EXPECT_EQ(got.port.backlog[0].max_backlog_bytes, want.port.backlog[0].max_backlog_bytes);
    EXPECT_EQ(got.port.microbursts->count, want.port.microbursts->count);
    ASSERT_EQ(got.pairs.top.size(), want.pairs.top.size());
    for (size_t i = 0; i < want.pairs.top.size(); ++i) {
      EXPECT_EQ(got.pairs.top[i].key, want.pairs.top[i].key);
      EXPECT_EQ(got.pairs.top[i].bytes, want.pairs.top[i].bytes);
    }
    EXPECT_EQ(got.flows.other_bytes, want.flows.other_bytes);
    EXPECT_EQ(p.intervals, intervals);
  }
}

TEST(LiveMergeTest, FullRingsDropAndTheLedgerStillBalances) {
  std::vector<PacketRecord> all;
  ThreadBackend backend(makeQueues(2, 200'000, &all), 64);  // tiny rings: the producers outrun the worker
  // The exporter's snapshots: one per interval, in order, each a ledger that balances up to what the worker
  // had taken when the interval closed (records still in the rings are neither analysed nor dropped yet).
  std::vector<PortSnapshot> snaps;
  auto r = runUntilIdle(backend, [&](size_t port, const PortSnapshot& s) {
    EXPECT_EQ(port, 0u);
    snaps.push_back(s);
  });
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(snaps.size(), r->ports[0].intervals);
  uint64_t packets = 0;
  for (size_t i = 0; i < snaps.size(); ++i) {
    EXPECT_EQ(snaps[i].intervals, i + 1);
    EXPECT_LE(snaps[i].ledger.analysed + snaps[i].ledger.ring_drops, snaps[i].ledger.received);
    // The snapshot's analysed count is what its intervals hold, so that a scrape's figures agree.
    EXPECT_EQ(snaps[i].ledger.analysed, packets + snaps[i].interval.port.packets) << i;
    if (i > 0) {
      EXPECT_GE(snaps[i].ledger.ring_drops, snaps[i - 1].ledger.ring_drops);
    }
    packets += snaps[i].interval.port.packets;
  }
  EXPECT_GT(snaps.back().ledger.ring_drops, 0u);
  const Ledger& l = r->ports[0].ledger;
  EXPECT_EQ(packets, l.analysed);  // every analysed packet is in exactly one interval
  EXPECT_EQ(l.received, all.size());
  EXPECT_EQ(l.received, l.analysed + l.ring_drops);
  EXPECT_EQ(r->ports[0].engine.port.packets, l.analysed);
}

TEST(LiveMergeTest, BacklogRatesAlwaysIncludeThePortsLinkSpeed) {
  EngineConfig base;
  base.rates_bps.clear();
  const EngineConfig c = portEngineConfig(base, 25e9);
  EXPECT_EQ(c.link_capacity_bps, 25e9);
  EXPECT_EQ(c.rates_bps, std::vector<double>{25e9});
  base.rates_bps = {1e9, 100e9};
  // Configured rates come first; the link's own is added for the congestion alert.
  EXPECT_EQ(portEngineConfig(base, 25e9).rates_bps, (std::vector<double>{1e9, 100e9, 25e9}));
  EXPECT_EQ(portEngineConfig(base, 100e9).rates_bps, (std::vector<double>{1e9, 100e9}));
}

TEST(LiveMergeTest, SummaryLineShowsRatesPtmAndDrops) {
  IntervalReport r;
  r.start_ns = 1'795'294'232'000'000'000;
  r.end_ns = r.start_ns + 1'000'000'000;
  r.port.packets = 1000;
  r.port.bytes = 1'250'000;
  r.port.mean_bps = 10e6;
  r.port.envelope_bytes = {1000, 2000};
  r.port.ptm = {80.0, std::nullopt};
  r.port.backlog_bytes = {1500};
  r.microbursts_total = 7;
  EngineConfig c;
  c.scales_ns = {100'000, 20'000'000'000};
  c.rates_bps = {10e9};
  PortSnapshot s;
  s.interval = r;
  s.ledger.ring_drops = 5;
  s.device.drop_stages = {{"nic_missed", 3}, {"nic_errors", 1}};
  const std::string line = intervalSummary("p0", s, c);
  EXPECT_NE(line.find("10.0 Mbit/s"), std::string::npos) << line;
  EXPECT_NE(line.find("100us:80.0"), std::string::npos) << line;
  EXPECT_NE(line.find("20s:-"), std::string::npos) << line;
  EXPECT_NE(line.find("microbursts 7"), std::string::npos) << line;
  EXPECT_NE(line.find("drops ring 5 before RX 4"), std::string::npos) << line;
  EXPECT_EQ(line.find("jobs:"), std::string::npos) << line;
  // With training figures: the active jobs, their topology, size and period; a silent one is left out.
  auto t = std::make_shared<TrainingReport>();
  JobReport ring;
  ring.name = "job-10.0.0.1";
  ring.hosts = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};
  ring.topology.kind = "ring";
  ring.period.period_s = 0.2;
  JobReport quiet = ring;
  quiet.name = "job-10.0.0.9";
  quiet.idle_s = 30;
  JobReport ps = ring;
  ps.name = "job-10.0.0.5";
  ps.topology.kind = "parameter-server";
  ps.period.period_s.reset();
  t->jobs = {ring, quiet, ps};
  s.training = t;
  const std::string with_jobs = intervalSummary("p0", s, c);
  EXPECT_NE(with_jobs.find("jobs: job-10.0.0.1 ring/3 T 200.00ms, job-10.0.0.5 parameter-server/3 T -"),
            std::string::npos)
      << with_jobs;
}

// A file's reorder horizon goes to its reading thread before the reading starts; once it has started, a new
// horizon is refused (its held records and counts would be lost), and a second run of the same source fails
// plainly rather than reordering with the old one.
TEST(PcapCaptureTest, TheReorderHorizonIsSetBeforeTheReadingStarts) {
  const std::string trace = std::string(BURSTSCOPE_SOURCE_ROOT) + "/data/ddp-gloo-w3-3steps.pcap";
  auto source = openPcapCapture({trace}, DecoderConfig{}, size_t{1} << 16);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_TRUE((*source)->setReorderHorizon(2'000'000).ok());
  std::atomic<bool> stop{false};
  auto r = runCapture(**source, PipelineConfig{}, stop);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->ports[0].ledger.analysed, 0u);
  const absl::Status late = (*source)->setReorderHorizon(1'000'000);
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition) << late;
  EXPECT_FALSE(runCapture(**source, PipelineConfig{}, stop).ok());
}

// A stop (Ctrl-C on analyze) ends the reading of a capture file, but every record read still reaches the
// engine: a file source never drops, whenever the stop comes.
TEST(PcapCaptureTest, AStopEndsTheReadingAndLosesNothingRead) {
  const std::string trace = std::string(BURSTSCOPE_SOURCE_ROOT) + "/data/ddp-gloo-w3-3steps.pcap";
  for (int delay_ms : {0, 1, 3, 10, 30}) {
    auto source = openPcapCapture({trace}, DecoderConfig{}, 1024);  // a small ring: the reader waits for room
    ASSERT_TRUE(source.ok()) << source.status();
    PipelineConfig pc;
    std::atomic<bool> stop{false};
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      stop.store(true);
    });
    auto r = runCapture(**source, pc, stop);
    stopper.join();
    ASSERT_TRUE(r.ok()) << r.status();
    const Ledger& l = r->ports[0].ledger;
    EXPECT_EQ(l.ring_drops, 0u) << delay_ms;
    EXPECT_EQ(l.analysed, l.received) << delay_ms;
    EXPECT_EQ(r->ports[0].engine.port.packets, l.received) << delay_ms;
  }
}

// The packet path never waits for the exporter's side. The control thread is held at the first interval's
// close — a device read of a second, then a publisher that does not return (a scrape holding the exporter)
// — until the worker has taken every record the (lossless) producers send into small rings; the producers
// can only finish if the worker keeps going meanwhile. This asserts progress, not speed, so a slow worker
// (a sanitizer build, a loaded machine) passes; a worker that waited for the control thread never drains
// and fails when the bound runs out.
TEST(LiveMergeTest, AStalledControlThreadNeverHoldsTheWorker) {
  std::vector<PacketRecord> all;
  ThreadBackend backend(makeQueues(2, 60'000, &all), size_t{1} << 12, /*lossless=*/true);
  backend.makeDeviceSlow();
  EngineConfig ec = liveEngine();
  ec.link_capacity_bps = 10e9;
  auto metrics = std::make_shared<LiveMetrics>(
      ExportConfig{}, std::vector<ExportPortInfo>{{"test0", 10e9, ec.scales_ns, {10e9}}}, "threads");
  std::atomic<bool> scraping{true};
  std::thread scraper([&] {
    while (scraping.load()) (void)metrics->Collect();
  });
  size_t published = 0;
  bool drained_while_held = false;
  auto r = runUntilIdle(backend, [&](size_t port, const PortSnapshot& s) {
    if (published++ == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (!backend.drained() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      drained_while_held = backend.drained();
    }
    metrics->publish(port, s);
  });
  scraping.store(false);
  scraper.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(drained_while_held) << "the worker stopped while the control thread was held";
  const PortResult& p = r->ports[0];
  EXPECT_EQ(p.ledger.ring_drops, 0u);
  EXPECT_EQ(p.ledger.received, all.size());
  EXPECT_EQ(p.ledger.analysed, all.size());
  EXPECT_EQ(published, p.intervals) << "every interval still reaches the exporter, late";
}

// The first line in which two texts differ, both versions; empty when they are equal.
std::string firstDifference(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string la, lb;
  for (;;) {
    const bool ga = static_cast<bool>(std::getline(x, la)), gb = static_cast<bool>(std::getline(y, lb));
    if (!ga && !gb) return "";
    if (!ga || !gb || la != lb) return "'" + la + "' against '" + lb + "'";
  }
}

// The flows' bins an interval hands the training analysis, as text.
std::string trainingText(const TrainingDelta* d) {
  if (!d) return "no training delta\n";
  std::string out = absl::StrCat("training ", d->start_ns, "-", d->end_ns, " untracked ", d->untracked_packets, "/",
                                 d->untracked_bytes, "\n");
  for (const TrainingFlowBins& f : d->flows) {
    absl::StrAppend(&out, flowToString(f.key), " ", f.packets, " ", f.bytes, ":");
    for (const auto& [bin, bytes] : f.bins) absl::StrAppend(&out, " ", bin, "=", bytes);
    out += "\n";
  }
  return out;
}

// docs/workers.md: a port's analysis split over 1, 2 or 3 worker threads gives the same figures on the same
// input — every interval's exported samples, the flows' bins each interval hands the training analysis, and the
// whole run's JSON. The bundled trace with report intervals of 10 ms (over a hundred), top pairs and flows in
// each, local networks (both directions), training, evidence and the mirror checks on, so that every part and
// the microbursts handed to the evidence's worker are exercised. Left out: samples that measure the machine
// (start time, wall-clock close time, how long the training analysis took, how far the reader of the file and
// the reorder stage had got at a close: their counts at a close depend on how many records one poll took) and
// the training analysis itself, which the control thread runs once per hand-over of
// intervals — a matter of its timing, with one worker as with three (one worker twice is compared too).
TEST(WorkersTest, OneTwoOrThreeWorkersPerPortGiveTheSameResults) {
  const std::string trace = std::string(BURSTSCOPE_SOURCE_ROOT) + "/data/ddp-gloo-w3-3steps.pcap";
  auto timeless = [](const std::string& text) {
    std::istringstream in(text);
    std::string out, line;
    while (std::getline(in, line)) {
      if (line.find("start_time_seconds") != std::string::npos ||
          line.find("close_time_seconds") != std::string::npos || line.find("analysis_seconds") != std::string::npos ||
          line.find("capture_received_packets_total") != std::string::npos ||
          line.find("capture_reordered_packets_total") != std::string::npos ||
          line.find("capture_late_packets_total") != std::string::npos) {
        continue;
      }
      out += line + "\n";
    }
    return out;
  };
  struct Outcome {
    std::vector<std::string> intervals;  // the scrape after each interval, and its training bins
    nlohmann::ordered_json json;
    uint64_t microbursts = 0;
    uint64_t evidence_bursts = 0;
  };
  auto run = [&](size_t workers) {
    Outcome o;
    DecoderConfig dc;
    IpPrefix p;
    EXPECT_TRUE(parsePrefix("10.77.0.1/32", &p));  // one of the trace's three hosts: both directions occur
    dc.local_nets.push_back(p);
    auto source = openPcapCapture({trace}, dc, size_t{1} << 16);
    EXPECT_TRUE(source.ok()) << source.status();
    PipelineConfig pc;
    pc.engine.report_interval_ns = 10'000'000;
    pc.engine.baseline_ns = 10'000'000'000;
    pc.engine.report_top_k = 10;
    pc.evidence.enabled = true;
    pc.mirror.enabled = true;
    pc.workers_per_port = workers;
    LiveMetrics metrics(ExportConfig{}, {{"p0", pc.engine.link_capacity_bps, pc.engine.scales_ns, pc.engine.rates_bps}},
                        "pcap");
    prometheus::TextSerializer text;
    auto on_interval = [&](size_t port, const PortSnapshot& s) {
      PortSnapshot copy = s;
      copy.training = nullptr;
      metrics.publish(port, copy);
      o.intervals.push_back(timeless(text.Serialize(metrics.Collect())) + trainingText(s.interval.training.get()));
      if (s.interval.evidence) o.evidence_bursts += s.interval.evidence->interval_microbursts;
      o.microbursts = s.interval.microbursts_total;
    };
    std::atomic<bool> stop{false};
    auto r = runCapture(**source, pc, stop, on_interval);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return o;
    o.json = runJson(*r, pc.reorder_horizon_ns);
    for (auto& port : o.json["ports"]) port.erase("training");
    return o;
  };
  const Outcome one = run(1);
  ASSERT_GT(one.intervals.size(), 100u);
  ASSERT_GT(one.microbursts, 0u);
  EXPECT_EQ(one.evidence_bursts, one.microbursts);  // the evidence saw every microburst of the port stream
  EXPECT_NE(one.intervals.back().find("direction=\"egress\""), std::string::npos);
  for (size_t workers : {1, 2, 3}) {
    const Outcome other = run(workers);
    ASSERT_EQ(other.intervals.size(), one.intervals.size()) << workers << " workers";
    for (size_t i = 0; i < one.intervals.size(); ++i) {
      ASSERT_EQ(firstDifference(other.intervals[i], one.intervals[i]), "") << workers << " workers, interval " << i;
    }
    EXPECT_EQ(other.json.dump(1), one.json.dump(1)) << workers << " workers";
    EXPECT_EQ(other.evidence_bursts, one.evidence_bursts) << workers << " workers";
  }
}

// The pace of a port's analyses (analysis_pace.h), at fixed times: after an analysis that took t, the next is due
// t·(1/budget − 1) later, or once kMaxDeferredIntervals intervals wait, or at the run's last hand-over; never
// without an interval waiting.
TEST(AnalysisPaceTest, TheNextAnalysisWaitsItsShareOrTooManyIntervals) {
  using internal::AnalysisPace;
  using std::chrono::milliseconds;
  const AnalysisPace::Clock::time_point t0{};
  AnalysisPace tenth(0.1);
  EXPECT_FALSE(tenth.due(t0));  // nothing waits
  tenth.arrived();
  EXPECT_TRUE(tenth.due(t0));  // the first analysis waits for nothing
  tenth.done(t0 + milliseconds(20), milliseconds(20));
  EXPECT_EQ(tenth.waiting(), 0u);
  EXPECT_FALSE(tenth.due(t0 + milliseconds(500)));  // nothing waits
  tenth.arrived();
  EXPECT_FALSE(tenth.due(t0 + milliseconds(20 + 179)));  // 20 ms took a tenth of 200 ms
  EXPECT_TRUE(tenth.due(t0 + milliseconds(20 + 180)));
  for (size_t i = 1; i < AnalysisPace::kMaxDeferredIntervals; ++i) {
    EXPECT_FALSE(tenth.due(t0 + milliseconds(100))) << i << " waiting";
    tenth.arrived();
  }
  EXPECT_TRUE(tenth.due(t0 + milliseconds(100)));  // too many wait, whatever the time
  tenth.done(t0 + milliseconds(400), milliseconds(300));
  EXPECT_FALSE(tenth.due(t0 + milliseconds(400), true));  // the run's last hand-over, nothing waiting
  tenth.arrived();
  EXPECT_FALSE(tenth.due(t0 + milliseconds(400)));
  EXPECT_TRUE(tenth.due(t0 + milliseconds(400), true));  // the run's last hand-over: whatever the time

  AnalysisPace every(1);  // the budget at 1: every hand-over
  every.arrived();
  every.done(t0 + milliseconds(300), milliseconds(300));
  every.arrived();
  EXPECT_TRUE(every.due(t0 + milliseconds(300)));

  // An analysis preempted for most of its time (the control thread yields to the workers): what it waits for is its
  // CPU time's share, not its wall time's.
  AnalysisPace preempted(0.1);
  preempted.arrived();
  preempted.done(t0 + milliseconds(300), milliseconds(20));  // 300 ms by the clock, 20 ms of CPU
  preempted.arrived();
  EXPECT_FALSE(preempted.due(t0 + milliseconds(300 + 179)));
  EXPECT_TRUE(preempted.due(t0 + milliseconds(300 + 180)));

  AnalysisPace tiny(1e-320);  // 1/budget is infinite; an analysis of no time: no NaN, the hour's bound
  tiny.arrived();
  tiny.done(t0, milliseconds(0));
  tiny.arrived();
  EXPECT_FALSE(tiny.due(t0 + std::chrono::seconds(3599)));
  EXPECT_TRUE(tiny.due(t0 + std::chrono::seconds(3600)));
}

// training.analysis-budget spaces a port's analyses out; the intervals in between are taken in and the next
// analysis covers them. With a budget so small that no analysis after the first is due by time within the run,
// each later one but the run's last is due because kMaxDeferredIntervals intervals wait, and so takes in at least
// that many. Whatever the hand-overs were, every interval is taken in once: the intervals the analyses cover add
// up to the snapshots, a job's bytes to those of a run that analyses every hand-over, the run's last analysis
// reaches the interval callback and its window figures are that run's. The job is configured, so that its hosts
// are the same in every analysis (an inferred job's early analyses see part of it, and count the rest as no job's).
TEST(TrainingBudgetTest, DeferredAnalysesTakeInEveryIntervalOnceAndTheLastIsAlwaysAnalysed) {
  const std::string trace = std::string(BURSTSCOPE_SOURCE_ROOT) + "/data/ddp-gloo-w3-3steps.pcap";
  struct Outcome {
    size_t snapshots = 0;
    std::vector<std::shared_ptr<const TrainingReport>> analyses;  // as the snapshots carried them, in order
  };
  auto run = [&](double budget) {
    Outcome o;
    auto source = openPcapCapture({trace}, DecoderConfig{}, size_t{1} << 16);
    EXPECT_TRUE(source.ok()) << source.status();
    PipelineConfig pc;
    pc.engine.report_interval_ns = 10'000'000;
    pc.training.analysis_budget = budget;
    pc.training.jobs.push_back({"ddp", {*parseCidr("10.77.0.0/16")}});
    auto on_interval = [&](size_t, const PortSnapshot& s) {
      ++o.snapshots;
      if (s.training) o.analyses.push_back(s.training);
    };
    std::atomic<bool> stop{false};
    auto r = runCapture(**source, pc, stop, on_interval);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return o;
    EXPECT_FALSE(o.analyses.empty());
    EXPECT_TRUE(!o.analyses.empty() && o.analyses.back() == r->ports[0].training);  // the last reached the callback
    return o;
  };
  auto covered = [](const Outcome& o) {
    size_t n = 0;
    for (const auto& a : o.analyses) n += a->intervals;
    return n;
  };
  auto jobBytes = [](const Outcome& o) {
    std::map<std::string, uint64_t> bytes;
    for (const auto& a : o.analyses) {
      for (const JobReport& j : a->jobs) bytes[j.name] += j.bytes;
    }
    return bytes;
  };
  const Outcome every = run(1);
  const Outcome spaced = run(1e-9);
  ASSERT_GT(every.snapshots, 100u);
  ASSERT_EQ(spaced.snapshots, every.snapshots);
  ASSERT_FALSE(spaced.analyses.empty());
  EXPECT_EQ(covered(every), every.snapshots);
  EXPECT_EQ(covered(spaced), spaced.snapshots);
  for (size_t i = 1; i + 1 < spaced.analyses.size(); ++i) {
    EXPECT_GE(spaced.analyses[i]->intervals, internal::AnalysisPace::kMaxDeferredIntervals) << "analysis " << i;
  }
  ASSERT_FALSE(jobBytes(every).empty());
  EXPECT_EQ(jobBytes(spaced), jobBytes(every));
  const TrainingReport &a = *every.analyses.back(), &b = *spaced.analyses.back();
  EXPECT_EQ(b.window_ns, a.window_ns);
  ASSERT_EQ(b.jobs.size(), a.jobs.size());
  for (size_t j = 0; j < a.jobs.size(); ++j) {
    EXPECT_EQ(b.jobs[j].name, a.jobs[j].name);
    EXPECT_EQ(b.jobs[j].window_bytes, a.jobs[j].window_bytes);
    EXPECT_EQ(b.jobs[j].period.period_s, a.jobs[j].period.period_s);
    EXPECT_EQ(b.jobs[j].step_bytes_mean, a.jobs[j].step_bytes_mean);
    EXPECT_EQ(b.jobs[j].steps.size(), a.jobs[j].steps.size());
  }
}

TEST(WorkersTest, AWorkerCountOutsideOneToThreeIsAClearError) {
  const std::string trace = std::string(BURSTSCOPE_SOURCE_ROOT) + "/data/ddp-gloo-w3-3steps.pcap";
  auto source = openPcapCapture({trace}, DecoderConfig{}, 1024);
  ASSERT_TRUE(source.ok());
  PipelineConfig pc;
  pc.workers_per_port = 4;
  std::atomic<bool> stop{false};
  auto r = runCapture(**source, pc, stop);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("workers per port"), std::string::npos) << r.status();
}

// A stalled RX queue (docs/live-capture.md "Capture faults"): frames wait while none is taken, for a second of
// looks; an idle queue (nothing waiting) is never stalled, and one frame taken ends a stall.
TEST(QueueStallWatchTest, FramesWaitingWithNoneTakenForTenLooksIsAStall) {
  QueueStallWatch w;
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(w.look(7, false));  // idle: nothing waits
  EXPECT_FALSE(w.stalled());
  for (int i = 1; i < QueueStallWatch::kLooks; ++i) EXPECT_FALSE(w.look(7, true)) << "look " << i;
  EXPECT_TRUE(w.look(7, true));  // the tenth look in a row with frames waiting and none taken
  EXPECT_TRUE(w.stalled());
  EXPECT_FALSE(w.look(7, true));  // said once
  EXPECT_TRUE(w.look(8, true));   // a frame taken: going again
  EXPECT_FALSE(w.stalled());
  // Progress now and then keeps a busy queue from being called stalled.
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(w.look(8 + static_cast<uint64_t>(i / 5), true));
  QueueStallWatch quick(3);           // a monitor that looks more often asks for more looks; here three
  EXPECT_FALSE(quick.look(1, true));  // the first look sees progress (from 0)
  EXPECT_FALSE(quick.look(1, true));
  EXPECT_FALSE(quick.look(1, true));
  EXPECT_TRUE(quick.look(1, true));

  LinkState link;
  link.queue_stalled.assign(2, false);
  noteQueueStall(link, 1, true, 1'795'294'232'000'000'000, "af-xdp", "veth0", "test");
  noteQueueStall(link, 1, true, 1'795'294'232'100'000'000, "af-xdp", "veth0", "test");  // no change: not again
  EXPECT_EQ(link.queue_stalled, (std::vector<bool>{false, true}));
  EXPECT_EQ(link.stalls, 1u);
  noteQueueStall(link, 1, false, 1'795'294'233'000'000'000, "af-xdp", "veth0", "test");
  EXPECT_EQ(link.queue_stalled, (std::vector<bool>{false, false}));
  EXPECT_EQ(link.stalls, 1u);
}

}  // namespace
}  // namespace burstscope
