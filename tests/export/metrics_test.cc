// The exporter: families built from real engine interval reports, counters that never go backwards, scrapes
// that change nothing, configuration errors, and the HTTP side (only /metrics, basic auth) over a socket.
#include "src/export/metrics.h"
#include "src/export/http_server.h"  // hashPassword, checkPassword

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "src/pipeline/port_bins.h"

namespace burstscope {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;

PacketRecord rec(int64_t ts, uint32_t len, uint8_t src, uint8_t dst, Direction d = Direction::kUnknown) {
  PacketRecord r;
  r.ts_ns = ts;
  r.wire_len = len;
  r.direction = d;
  r.key.family = 4;
  r.key.src = {10, 0, 0, src};
  r.key.dst = {10, 0, 0, dst};
  r.key.proto = 17;
  r.key.src_port = static_cast<uint16_t>(1000 + src);
  r.key.dst_port = 4791;
  return r;
}

EngineConfig liveEngine() {
  EngineConfig c;
  c.scales_ns = {100'000, 1'000'000, 5'000'000};
  c.report_interval_ns = 10'000'000;
  c.baseline_ns = 20'000'000;
  c.rates_bps = {1e9, 10e9};
  c.link_capacity_bps = 10e9;
  c.report_top_k = 3;
  return c;
}

// Bursty random traffic between `hosts` hosts, ingress and egress, every interval of it published.
struct Fixture {
  EngineConfig ec = liveEngine();
  std::shared_ptr<LiveMetrics> metrics;
  std::vector<IntervalReport> reports;
  uint64_t packets = 0, bytes = 0;

  explicit Fixture(ExportConfig xc = {}, uint32_t seed = 1, int hosts = 6, size_t n = 20000) {
    metrics = std::make_shared<LiveMetrics>(
        xc, std::vector<ExportPortInfo>{{"p0", ec.link_capacity_bps, ec.scales_ns, ec.rates_bps}}, "test");
    Engine e(ec);
    uint64_t intervals = 0;
    e.setIntervalSink([&](const IntervalReport& r) {
      reports.push_back(r);
      PortSnapshot s;
      s.interval = r;
      s.intervals = ++intervals;
      s.ledger = Ledger{packets, packets, 0};
      s.timestamps.source = "tsc";
      metrics->publish(0, s);
    });
    std::mt19937 rng(seed);
    int64_t t = 1'795'294'232'000'000'000;
    while (packets < n) {
      const int burst = 1 + static_cast<int>(rng() % 80);
      const uint8_t src = static_cast<uint8_t>(1 + rng() % hosts), dst = static_cast<uint8_t>(1 + rng() % hosts);
      for (int i = 0; i < burst; ++i) {
        const uint32_t len = 64 + rng() % 1450;
        e.add(rec(t, len, src, dst, rng() % 2 ? Direction::kIngress : Direction::kEgress));
        ++packets;
        bytes += len;
        t += 1200;
      }
      t += static_cast<int64_t>(rng() % 3'000'000);
    }
    e.advance(t + 30'000'000);  // close the last intervals in silence
  }
};

const MetricFamily* family(const std::vector<MetricFamily>& fs, const std::string& name) {
  for (const MetricFamily& f : fs) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string label(const ClientMetric& m, const std::string& name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "";
}

std::vector<const ClientMetric*> select(const std::vector<MetricFamily>& fs, const std::string& name,
                                        const std::map<std::string, std::string>& match) {
  std::vector<const ClientMetric*> out;
  const MetricFamily* f = family(fs, name);
  if (!f) return out;
  for (const ClientMetric& m : f->metric) {
    bool ok = true;
    for (const auto& [k, v] : match) ok &= label(m, k) == v;
    if (ok) out.push_back(&m);
  }
  return out;
}

TEST(LiveMetricsTest, FamiliesCarryTheLastCompletedIntervalAndCumulativeTotals) {
  Fixture fx;
  const std::vector<MetricFamily> fs = fx.metrics->Collect();
  const IntervalReport& last = fx.reports.back();
  auto packets = select(fs, "burstscope_packets_total", {{"direction", "all"}});
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0]->counter.value, static_cast<double>(fx.packets));
  auto bytes = select(fs, "burstscope_bytes_total", {{"direction", "all"}});
  EXPECT_EQ(bytes[0]->counter.value, static_cast<double>(fx.bytes));
  // Directions sum to the port here (every packet had one).
  double dir_bytes = 0;
  for (const char* d : {"ingress", "egress"})
    dir_bytes += select(fs, "burstscope_bytes_total", {{"direction", d}})[0]->counter.value;
  EXPECT_EQ(dir_bytes, static_cast<double>(fx.bytes));
  for (size_t i = 0; i < fx.ec.scales_ns.size(); ++i) {
    const std::string scale = i == 0 ? "0.0001" : i == 1 ? "0.001" : "0.005";
    auto env = select(fs, "burstscope_envelope_bytes", {{"direction", "all"}, {"scale", scale}});
    ASSERT_EQ(env.size(), 1u) << scale;
    EXPECT_EQ(env[0]->gauge.value, static_cast<double>(last.port.envelope_bytes[i]));
    auto ptm = select(fs, "burstscope_peak_to_mean_ratio", {{"direction", "all"}, {"scale", scale}});
    ASSERT_EQ(ptm.size(), last.port.ptm[i].has_value() ? 1u : 0u);
    if (!ptm.empty()) {
      EXPECT_DOUBLE_EQ(ptm[0]->gauge.value, *last.port.ptm[i]);
    }
    // Histogram: cumulative buckets ending in +Inf = count.
    auto util = select(fs, "burstscope_window_utilization_ratio", {{"direction", "all"}, {"scale", scale}});
    ASSERT_EQ(util.size(), 1u);
    const auto& h = util[0]->histogram;
    ASSERT_FALSE(h.bucket.empty());
    EXPECT_TRUE(std::isinf(h.bucket.back().upper_bound));
    EXPECT_EQ(h.bucket.back().cumulative_count, h.sample_count);
    EXPECT_EQ(h.sample_count, last.port.utilisation[i].count);
    for (size_t b = 1; b < h.bucket.size(); ++b)
      EXPECT_GE(h.bucket[b].cumulative_count, h.bucket[b - 1].cumulative_count);
  }
  // Backlog per rate, and the link-rate one under its own name.
  auto b10 = select(fs, "burstscope_virtual_backlog_max_bytes", {{"direction", "all"}, {"rate_bps", "10000000000"}});
  ASSERT_EQ(b10.size(), 1u);
  EXPECT_EQ(b10[0]->gauge.value, last.port.backlog_bytes[1]);
  EXPECT_EQ(select(fs, "burstscope_link_backlog_max_bytes", {{"direction", "all"}})[0]->gauge.value,
            last.port.backlog_bytes[1]);
  EXPECT_EQ(select(fs, "burstscope_microbursts_total", {{"direction", "all"}})[0]->counter.value,
            static_cast<double>(last.port.microbursts));
  // Every decode error reason has a series, so that rate() works from the first scrape.
  EXPECT_EQ(select(fs, "burstscope_decode_errors_total", {}).size(), static_cast<size_t>(kDecodeErrorCount - 1));
}

// The congestion alert counts intervals over the switch buffer: every completed interval is counted when it
// is published, not only the one a scrape happens to see.
TEST(LiveMetricsTest, IntervalsOverTheSwitchBufferAreCountedAtPublish) {
  EXPECT_TRUE(select(Fixture().metrics->Collect(), "burstscope_link_backlog_over_buffer_intervals_total", {}).empty())
      << "no switch buffer configured: no series";
  // A buffer between the smallest and the largest per-interval backlog at the link speed (10 Gb/s, index 1).
  std::vector<double> backlogs;
  for (const IntervalReport& r : Fixture().reports) backlogs.push_back(r.port.backlog_bytes[1]);
  std::sort(backlogs.begin(), backlogs.end());
  ExportConfig xc;
  xc.switch_buffer_bytes = backlogs[backlogs.size() / 2];
  ASSERT_LT(backlogs.front(), *xc.switch_buffer_bytes);
  Fixture fx(xc);
  std::map<std::string, uint64_t> want;
  for (const IntervalReport& r : fx.reports) {
    if (r.partial) continue;
    want["all"] += r.port.backlog_bytes[1] > *xc.switch_buffer_bytes;
    for (const auto& [d, st] : r.directions) want[directionName(d)] += st.backlog_bytes[1] > *xc.switch_buffer_bytes;
  }
  ASSERT_GT(want["all"], 0u);
  ASSERT_LT(want["all"], fx.reports.size());
  const std::vector<MetricFamily> fs = fx.metrics->Collect();
  for (const auto& [dir, n] : want) {
    auto c = select(fs, "burstscope_link_backlog_over_buffer_intervals_total", {{"direction", dir}});
    ASSERT_EQ(c.size(), 1u) << dir;
    EXPECT_EQ(c[0]->counter.value, static_cast<double>(n)) << dir;
  }
}

// SPEC "Overload": the complete series and the degraded intervals, from a real PortBins over frames of which the
// analysis lost every burst's second half; the counters count every published interval, the gauges the last.
TEST(LiveMetricsTest, DegradedIntervalsAreCountedAndTheLastOnesBoundsExported) {
  EngineConfig ec = liveEngine();
  auto metrics = std::make_shared<LiveMetrics>(
      ExportConfig{}, std::vector<ExportPortInfo>{{"p0", ec.link_capacity_bps, ec.scales_ns, ec.rates_bps}}, "test");
  Engine e(ec);
  internal::PortBins bins(ec, 1);
  uint64_t intervals = 0, degraded = 0, series = 0, all = 0;
  std::optional<IntervalBounds> last;
  e.setIntervalSink([&](const IntervalReport& r) {
    PortSnapshot s;
    s.interval = r;
    s.intervals = ++intervals;
    s.bounds = bins.close(r);
    if (!r.partial) {
      degraded += s.bounds->degraded();
      series += s.bounds->packets;
      last = s.bounds;
    }
    metrics->publish(0, s);
  });
  std::mt19937 rng(5);
  int64_t t = 1'795'294'232'000'000'000;
  for (int b = 0; b < 300; ++b) {
    const int burst = 1 + static_cast<int>(rng() % 80);
    const bool lossy = rng() % 4 == 0;
    for (int i = 0; i < burst; ++i, t += 1200) {
      const uint32_t len = 64 + rng() % 1450;
      // The producer bins every frame; in a lossy burst the second half is lost after the bins.
      const bool lost = lossy && i > burst / 2;
      bins.add(0, QueueBin{t - t % kQueueBinNs, 1, lost ? 1u : 0u, len, lost ? len : 0u, 0});
      ++all;
      if (!lost) e.add(rec(t, len, 1, 2));
    }
    t += static_cast<int64_t>(rng() % 3'000'000);
  }
  e.advance(t + 30'000'000);
  ASSERT_GT(degraded, 0u);
  ASSERT_LT(degraded, intervals);
  const std::vector<MetricFamily> fs = metrics->Collect();
  EXPECT_EQ(select(fs, "burstscope_series_packets_total", {})[0]->counter.value, static_cast<double>(series));
  EXPECT_EQ(series, all);  // every frame, lost or not, in some completed interval's series
  EXPECT_EQ(select(fs, "burstscope_degraded_intervals_total", {})[0]->counter.value, static_cast<double>(degraded));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(select(fs, "burstscope_interval_degraded", {})[0]->gauge.value, last->degraded() ? 1.0 : 0.0);
  const auto lower = select(fs, "burstscope_envelope_bound_bytes", {{"scale", "0.001"}, {"bound", "lower"}});
  ASSERT_EQ(lower.size(), last->degraded() ? 1u : 0u);
  if (last->degraded()) {
    EXPECT_EQ(lower[0]->gauge.value, static_cast<double>(last->envelope_bytes[1].first));
    EXPECT_EQ(select(fs, "burstscope_envelope_bound_bytes", {{"scale", "0.001"}, {"bound", "upper"}})[0]->gauge.value,
              static_cast<double>(last->envelope_bytes[1].second));
  }
}

TEST(LiveMetricsTest, AScrapeChangesNothingTheNextOneSees) {
  Fixture fx;
  prometheus::TextSerializer text;
  const std::string a = text.Serialize(fx.metrics->Collect());
  const std::string b = text.Serialize(fx.metrics->Collect());
  EXPECT_EQ(a, b);
  EXPECT_THAT(a, testing::HasSubstr("burstscope_build_info{"));
}

TEST(LiveMetricsTest, TopKSeriesNeverGoBackwardsAndSumToTheTotalThroughChurn) {
  // Many hosts, so that the top 3 pairs change from interval to interval; tiny tables, so that they evict.
  EngineConfig ec = liveEngine();
  ec.pair_table_capacity = ec.tracked_streams + 8;
  ec.flow_table_capacity = ec.tracked_streams + 8;
  Engine e(ec);
  TopKCounters pairs;
  std::map<std::string, double> last;  // series -> value
  double last_other = 0;
  uint64_t total = 0;
  int churn = 0;
  std::vector<FlowKey> previous;
  e.setIntervalSink([&](const IntervalReport& r) {
    pairs.update(r.pairs);
    uint64_t sum = pairs.otherBytes();
    std::vector<FlowKey> now;
    for (const auto& s : pairs.series()) {
      sum += s.bytes;
      now.push_back(s.key);
      const std::string k = pairToString(s.key);
      // A series either continues (never lower) or restarts from zero after leaving.
      if (last.count(k) && std::find(previous.begin(), previous.end(), s.key) != previous.end()) {
        EXPECT_GE(static_cast<double>(s.bytes), last[k]) << k;
      }
      last[k] = static_cast<double>(s.bytes);
    }
    if (now != previous) ++churn;
    previous = now;
    EXPECT_GE(static_cast<double>(pairs.otherBytes()), last_other);
    last_other = static_cast<double>(pairs.otherBytes());
    EXPECT_EQ(
        sum, r.pairs.other_bytes + [&] {
          uint64_t t = 0;
          for (const auto& h : r.pairs.top) t += h.bytes;
          return t;
        }());
  });
  std::mt19937 rng(3);
  int64_t t = 1'795'294'232'000'000'000;
  for (int i = 0; i < 40000; ++i) {
    const uint8_t src = static_cast<uint8_t>(1 + rng() % 40), dst = static_cast<uint8_t>(1 + rng() % 40);
    const uint32_t len = 100 + rng() % 1400;
    e.add(rec(t, len, src, dst));
    total += len;
    t += 1000 + rng() % 20000;
  }
  e.advance(t + 20'000'000);
  EXPECT_GT(churn, 5) << "the test must exercise changes of the top K";
  uint64_t sum = pairs.otherBytes();
  for (const auto& s : pairs.series()) sum += s.bytes;
  EXPECT_EQ(sum, total);
}

TEST(LiveMetricsTest, IdentityAndPortLabelsAreOnEverySeries) {
  ExportConfig xc;
  xc.sensor = "rack3-m1";
  xc.labels = {{"rack", "r3"}, {"training_job", "default"}};
  xc.ports["p0"].labels = {{"training_job", "resnet50"}, {"mirrored_port", "leaf3/Eth12"}};
  xc.ports["p0"].switch_buffer_bytes = 12e6;
  Fixture fx(xc);
  for (const MetricFamily& f : fx.metrics->Collect()) {
    for (const ClientMetric& m : f.metric) {
      EXPECT_EQ(label(m, "sensor"), "rack3-m1") << f.name;
      EXPECT_EQ(label(m, "rack"), "r3") << f.name;
      if (label(m, "port").empty()) continue;  // process-wide series
      EXPECT_EQ(label(m, "training_job"), "resnet50") << f.name;
      EXPECT_EQ(label(m, "mirrored_port"), "leaf3/Eth12") << f.name;
    }
  }
  EXPECT_EQ(select(fx.metrics->Collect(), "burstscope_switch_buffer_bytes", {})[0]->gauge.value, 12e6);
}

// Capture faults (docs/live-capture.md): the link as the backend reported it with the snapshot is exported
// per port; a port without a watched link (a capture file) exports none of these series.
TEST(LiveMetricsTest, LinkStateIsExportedAsTheBackendReportsIt) {
  EngineConfig ec = liveEngine();
  auto metrics = std::make_shared<LiveMetrics>(
      ExportConfig{},
      std::vector<ExportPortInfo>{{"p0", ec.link_capacity_bps, ec.scales_ns, ec.rates_bps},
                                  {"p1", ec.link_capacity_bps, ec.scales_ns, ec.rates_bps}},
      "test");
  PortSnapshot down;
  down.intervals = 1;
  down.device.link = LinkState{true, false, 1'795'294'232'500'000'000, 3, 2, {false, true}, 4};
  metrics->publish(0, down);
  PortSnapshot file;  // no link watched
  file.intervals = 1;
  metrics->publish(1, file);
  const auto fs = metrics->Collect();
  ASSERT_EQ(select(fs, "burstscope_capture_link_up", {{"port", "p0"}}).size(), 1u);
  EXPECT_EQ(select(fs, "burstscope_capture_link_up", {{"port", "p0"}})[0]->gauge.value, 0);
  EXPECT_EQ(select(fs, "burstscope_capture_link_present", {{"port", "p0"}})[0]->gauge.value, 1);
  EXPECT_DOUBLE_EQ(select(fs, "burstscope_capture_link_since_seconds", {{"port", "p0"}})[0]->gauge.value,
                   1'795'294'232.5);
  EXPECT_EQ(select(fs, "burstscope_capture_link_downs_total", {{"port", "p0"}})[0]->counter.value, 3);
  EXPECT_EQ(select(fs, "burstscope_capture_reattached_total", {{"port", "p0"}})[0]->counter.value, 2);
  EXPECT_EQ(select(fs, "burstscope_capture_queue_stalled", {{"port", "p0"}, {"queue", "0"}})[0]->gauge.value, 0);
  EXPECT_EQ(select(fs, "burstscope_capture_queue_stalled", {{"port", "p0"}, {"queue", "1"}})[0]->gauge.value, 1);
  EXPECT_EQ(select(fs, "burstscope_capture_queue_stalls_total", {{"port", "p0"}})[0]->counter.value, 4);
  for (const char* name : {"burstscope_capture_link_up", "burstscope_capture_link_present",
                           "burstscope_capture_link_downs_total", "burstscope_capture_reattached_total",
                           "burstscope_capture_queue_stalled", "burstscope_capture_queue_stalls_total"}) {
    EXPECT_TRUE(select(fs, name, {{"port", "p1"}}).empty()) << name;
  }
  // Between interval closes (a stalled queue holds them back) the link is published on its own.
  metrics->publishLink(0, LinkState{true, true, 1'795'294'233'000'000'000, 3, 2, {true, true}, 6});
  const auto later = metrics->Collect();
  EXPECT_EQ(select(later, "burstscope_capture_link_up", {{"port", "p0"}})[0]->gauge.value, 1);
  EXPECT_EQ(select(later, "burstscope_capture_queue_stalled", {{"port", "p0"}, {"queue", "0"}})[0]->gauge.value, 1);
  EXPECT_EQ(select(later, "burstscope_capture_queue_stalls_total", {{"port", "p0"}})[0]->counter.value, 6);
}

// The worker publishes while scrapes run (also under ThreadSanitizer in scripts/test.sh): every scrape sees
// one whole snapshot, and the cumulative counters it sees never go backwards.
TEST(LiveMetricsTest, ScrapesDuringPublishingSeeWholeSnapshotsAndMonotoneCounters) {
  Fixture fx;
  EngineConfig ec = liveEngine();
  auto metrics = std::make_shared<LiveMetrics>(
      ExportConfig{}, std::vector<ExportPortInfo>{{"p0", ec.link_capacity_bps, ec.scales_ns, ec.rates_bps}}, "test");
  std::atomic<bool> done{false};
  std::thread publisher([&] {
    uint64_t i = 0;
    for (const IntervalReport& r : fx.reports) {
      PortSnapshot s;
      s.interval = r;
      s.intervals = ++i;
      metrics->publish(0, s);
    }
    done = true;
  });
  double last_packets = 0, last_intervals = 0;
  int scrapes = 0;
  while (!done || scrapes < 3) {
    const auto fs = metrics->Collect();
    auto p = select(fs, "burstscope_packets_total", {{"direction", "all"}});
    auto iv = select(fs, "burstscope_report_intervals_total", {});
    ASSERT_EQ(iv.size(), 1u);
    if (!p.empty()) {
      EXPECT_GE(p[0]->counter.value, last_packets);
      last_packets = p[0]->counter.value;
    }
    EXPECT_GE(iv[0]->counter.value, last_intervals);
    last_intervals = iv[0]->counter.value;
    ++scrapes;
  }
  publisher.join();
  const double final_packets =
      select(metrics->Collect(), "burstscope_packets_total", {{"direction", "all"}})[0]->counter.value;
  EXPECT_GE(final_packets, last_packets);
  EXPECT_EQ(final_packets, static_cast<double>(fx.packets));
}

TEST(ExportConfigTest, BadSettingsNameTheKey) {
  ExportConfig c;
  c.labels = {{"job", "x"}};
  EXPECT_THAT(std::string(validateExportConfig(c).message()), testing::HasSubstr("export.labels.job: reserved"));
  c.labels = {{"9rack", "x"}};
  EXPECT_THAT(std::string(validateExportConfig(c).message()), testing::HasSubstr("not a valid Prometheus label name"));
  c = ExportConfig{};
  c.listen = "19464";
  EXPECT_THAT(std::string(validateExportConfig(c).message()), testing::HasSubstr("export.listen"));
  c = ExportConfig{};
  c.basic_auth_user = "prom";
  c.basic_auth_hash = "secret";
  EXPECT_THAT(std::string(validateExportConfig(c).message()), testing::HasSubstr("password-hash"));
  c.basic_auth_hash = "";
  EXPECT_THAT(std::string(validateExportConfig(c).message()), testing::HasSubstr("needs both"));
  c = ExportConfig{};
  c.ports["p0"].labels = {{"port", "x"}};
  EXPECT_THAT(std::string(validateExportConfig(c).message()), testing::HasSubstr("export.ports.p0.labels.port"));
}

TEST(PasswordTest, HashesCheckAndRejectTheWrongPassword) {
  auto h = hashPassword("correct horse");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->rfind("$2b$", 0), 0u);
  EXPECT_TRUE(checkPassword("correct horse", *h));
  EXPECT_FALSE(checkPassword("correct hors", *h));
  EXPECT_FALSE(checkPassword("", *h));
  EXPECT_NE(*hashPassword("correct horse"), *h);  // salted
}

}  // namespace
}  // namespace burstscope
