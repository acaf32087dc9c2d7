#include <benchmark/benchmark.h>

#include "bench/bench_common.h"
#include "burstscope/window.h"

namespace burstscope {
namespace {

// The engine over the real trace with every scale exact (as offline analyze runs it), all four backlog
// rates, microbursts, pairs and flows: ns per record. The trace is replayed shifted in time so that the
// engine's state persists across passes like a long capture.
void BM_Window_Update(benchmark::State& state) {
  static const std::vector<PacketRecord> records = bench::bundledRecords();
  EngineConfig cfg;
  cfg.exact_max_tau_ns = state.range(0) ? cfg.scales_ns.back() : 10'000'000;
  Engine engine(cfg);
  const int64_t span = records.back().ts_ns - records.front().ts_ns + 1'000'000;
  int64_t shift = 0;
  size_t i = 0;
  for (auto _ : state) {
    PacketRecord r = records[i];
    r.ts_ns += shift;
    engine.add(r);
    if (++i == records.size()) {
      i = 0;
      shift += span;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetLabel(state.range(0) ? "all scales exact" : "exact up to 10 ms");
}
BENCHMARK(BM_Window_Update)->ArgName("all_exact")->Arg(1)->Arg(0);

// As the driver feeds the engine: batches of 256 records in order, live defaults (report intervals of 1 s
// aligned to the epoch, E(τ) exact up to 10 ms, pairs and flows, the port's link speed among the rates).
void BM_Window_UpdateBatch(benchmark::State& state) {
  static const std::vector<PacketRecord> records = bench::bundledRecords();
  EngineConfig cfg;
  cfg.report_interval_ns = 1'000'000'000;
  cfg.report_top_k = 10;
  Engine engine(cfg);
  uint64_t intervals = 0;
  engine.setIntervalSink([&intervals](const IntervalReport&) { ++intervals; });
  const size_t batch = static_cast<size_t>(state.range(0));
  const int64_t span = records.back().ts_ns - records.front().ts_ns + 1'000'000;
  std::vector<PacketRecord> buf(batch);
  int64_t shift = 0;
  size_t i = 0;
  for (auto _ : state) {
    for (PacketRecord& r : buf) {
      r = records[i];
      r.ts_ns += shift;
      if (++i == records.size()) {
        i = 0;
        shift += span;
      }
    }
    engine.add(buf);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
  state.counters["intervals"] = static_cast<double>(intervals);
}
BENCHMARK(BM_Window_UpdateBatch)->ArgName("batch")->Arg(256)->Arg(1);

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
