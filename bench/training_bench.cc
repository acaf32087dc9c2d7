#include <benchmark/benchmark.h>
#include <malloc.h>

#include <random>

#include "bench/bench_common.h"
#include "burstscope/training.h"
#include "burstscope/window.h"

namespace burstscope {
namespace {

// The packet path's share of training awareness: the engine with live defaults over the real trace in
// batches of 256, with (1) and without (0) the training aggregator. The difference is its per-packet cost.
void BM_Training_EngineBatch(benchmark::State& state) {
  static const std::vector<PacketRecord> records = bench::bundledRecords();
  EngineConfig cfg;
  cfg.report_interval_ns = 1'000'000'000;
  Engine engine(cfg);
  if (state.range(0)) engine.addAggregator(makeTrainingAggregator(TrainingConfig{}, true));
  const int64_t span = records.back().ts_ns - records.front().ts_ns + 1'000'000;
  std::vector<PacketRecord> batch(256);
  int64_t shift = 0;
  size_t i = 0;
  for (auto _ : state) {
    for (PacketRecord& r : batch) {
      r = records[i];
      r.ts_ns += shift;
      if (++i == records.size()) {
        i = 0;
        shift += span;
      }
    }
    engine.add(batch);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 256);
  state.SetLabel(state.range(0) ? "with training aggregator" : "without");
}
BENCHMARK(BM_Training_EngineBatch)->ArgName("training")->Arg(0)->Arg(1);

FlowKey key(int src, int dst) {
  FlowKey k;
  k.family = 4;
  k.proto = 6;
  k.src = {10, static_cast<uint8_t>(src >> 8), static_cast<uint8_t>(src), 1};
  k.dst = {10, static_cast<uint8_t>(dst >> 8), static_cast<uint8_t>(dst), 1};
  k.src_port = 40000;
  k.dst_port = 5000;
  return k;
}

// The control thread's cost per report interval: `jobs` ring jobs of 8 ranks each stepping every 0.2 s with
// a 20 ms burst per step at 10 Gbit/s (200 bins per rank per step), plus one-to-all traffic toward 64
// destinations (fan-in), a 60 s window filled first; then one interval ingested and analysed per iteration.
void BM_Training_Interval(benchmark::State& state) {
  const int jobs = static_cast<int>(state.range(0));
  constexpr int kRanks = 8;
  TrainingConfig cfg;
  cfg.max_jobs = static_cast<size_t>(jobs);
  EngineConfig ec;
  TrainingAnalyzer an(cfg, 10e9, ec.scales_ns, ec.rates_bps);
  std::mt19937 rng(1);
  const int64_t t0 = 1'795'294'232'000'000'000 / 100'000;  // in bins
  auto interval = [&](int64_t second) {
    auto d = std::make_shared<TrainingDelta>();
    d->start_ns = (t0 + second * 10'000) * 100'000;
    d->end_ns = d->start_ns + 1'000'000'000;
    for (int j = 0; j < jobs; ++j) {
      for (int r = 0; r < kRanks; ++r) {
        TrainingFlowBins f;
        f.key = key(j * 16 + r, j * 16 + (r + 1) % kRanks);
        for (int step = 0; step < 5; ++step) {
          const int64_t start = t0 + second * 10'000 + step * 2'000 + j * 37;
          for (int b = 0; b < 200; ++b) f.bins.emplace_back(start + b, 125'000);
        }
        f.packets = f.bins.size() * 83;
        f.bytes = f.bins.size() * 125'000;
        d->flows.push_back(std::move(f));
      }
    }
    for (int dst = 0; dst < 64; ++dst) {  // a little traffic from 4 sources toward each of 64 hosts
      for (int s = 0; s < 4; ++s) {
        TrainingFlowBins f;
        f.key = key(1000 + s, 2000 + dst);
        for (int b = 0; b < 50; ++b)
          f.bins.emplace_back(t0 + second * 10'000 + static_cast<int64_t>(rng() % 10'000), 1514);
        std::sort(f.bins.begin(), f.bins.end());
        f.packets = 50;
        f.bytes = 50 * 1514;
        d->flows.push_back(std::move(f));
      }
    }
    return d;
  };
  int64_t second = 0;
  for (; second < 60; ++second) an.ingest(interval(second));
  // A first analysis outside the timing: it takes the 60 filling intervals' pending deltas at once (their
  // co-bursts and interval bins) and the process's first allocations, which a running monitor is long past. Timed,
  // it fell in the first iteration, and the figure moved with how many iterations the library chose.
  benchmark::DoNotOptimize(an.analyze());
  double analysis_ms = 0;
  for (auto _ : state) {
    an.ingest(interval(second++));
    TrainingReport r = an.analyze();
    analysis_ms += r.analysis_ms;
    benchmark::DoNotOptimize(r);
  }
  // The analysis alone (the budget; the wall time also holds making and ingesting the interval), the mean
  // over the iterations.
  state.counters["analyze_ms"] = benchmark::Counter(analysis_ms, benchmark::Counter::kAvgIterations);
  state.SetLabel(std::to_string(jobs) + " jobs x 8 ranks, 64 destinations, 60 s window");
}
BENCHMARK(BM_Training_Interval)->ArgName("jobs")->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond);

// The allocator as burstscope's main sets it (src/app/main.cc keepFreedMemory): freed blocks kept for reuse.
const bool kKeepFreedMemory = [] {
  // NOLINTBEGIN(concurrency-mt-unsafe): before main
  if (mallopt(M_MMAP_THRESHOLD, 256 << 20) == 0 && mallopt(M_MMAP_THRESHOLD, 32 << 20) == 0) return false;
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return true;
  // NOLINTEND(concurrency-mt-unsafe)
}();

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
