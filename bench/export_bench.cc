// What the exporter costs, off the packet path: publishing one interval's snapshot (the driver's control
// thread, once per interval per port) and serving one scrape (Collect + text serialisation, on the HTTP thread), with
// every default scale, four backlog rates, two directions and the top 10 pairs and flows.
#include <benchmark/benchmark.h>

#include <random>

#include "prometheus/text_serializer.h"
#include "src/export/metrics.h"

namespace burstscope {
namespace {

struct Snapshots {
  EngineConfig ec;
  std::vector<PortSnapshot> snaps;
  Snapshots() {
    ec.report_interval_ns = 1'000'000'000;
    ec.baseline_ns = 10'000'000'000;
    ec.report_top_k = 10;
    Engine e(ec);
    e.setIntervalSink([this](const IntervalReport& r) {
      PortSnapshot s;
      s.interval = r;
      s.intervals = snaps.size() + 1;
      snaps.push_back(s);
    });
    std::mt19937 rng(1);
    int64_t t = 1'795'294'232'000'000'000;
    for (int i = 0; i < 400'000; ++i) {
      PacketRecord r;
      r.ts_ns = t;
      r.wire_len = 64 + rng() % 1450;
      r.direction = rng() % 2 ? Direction::kIngress : Direction::kEgress;
      r.key.family = 4;
      r.key.src = {10, 0, 0, static_cast<uint8_t>(rng() % 32)};
      r.key.dst = {10, 0, 1, static_cast<uint8_t>(rng() % 32)};
      r.key.src_port = static_cast<uint16_t>(rng() % 64);
      r.key.proto = 6;
      e.add(r);
      t += 50'000;  // 20 k packets/s: 20 s, 20 intervals
    }
    e.advance(t + 2'000'000'000);
  }
};

std::shared_ptr<LiveMetrics> makeMetrics(const Snapshots& s) {
  return std::make_shared<LiveMetrics>(
      ExportConfig{}, std::vector<ExportPortInfo>{{"p0", s.ec.link_capacity_bps, s.ec.scales_ns, s.ec.rates_bps}},
      "bench");
}

void BM_Export_Publish(benchmark::State& state) {
  static const Snapshots s;
  auto m = makeMetrics(s);
  size_t i = 0;
  for (auto _ : state) m->publish(0, s.snaps[i++ % s.snaps.size()]);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Export_Publish);

void BM_Export_Scrape(benchmark::State& state) {
  static const Snapshots s;
  auto m = makeMetrics(s);
  for (const PortSnapshot& p : s.snaps) m->publish(0, p);
  prometheus::TextSerializer text;
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string out = text.Serialize(m->Collect());
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes_per_scrape"] = static_cast<double>(bytes);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Export_Scrape);

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
