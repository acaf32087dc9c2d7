#include <benchmark/benchmark.h>

#include "bench/bench_common.h"
#include "burstscope/window.h"
#include "src/window/heavy_table.h"

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
// tables:0 is the port- and direction-level monitor (metrics.pairs-and-flows: false); directions:1 gives the
// records directions as local networks would (10.77.0.1 local: ingress from it, egress to it), so that a
// direction stream runs beside the port stream.
void BM_Window_UpdateBatch(benchmark::State& state) {
  static const std::vector<PacketRecord> records = bench::bundledRecords();
  static const std::vector<PacketRecord> with_directions = [] {
    std::vector<PacketRecord> v = records;
    for (PacketRecord& r : v) {
      if (r.key.family != 4) continue;
      r.direction = r.key.src[3] == 1 ? Direction::kIngress : r.key.dst[3] == 1 ? Direction::kEgress : r.direction;
    }
    return v;
  }();
  const std::vector<PacketRecord>& input = state.range(2) ? with_directions : records;
  EngineConfig cfg;
  cfg.report_interval_ns = 1'000'000'000;
  cfg.report_top_k = 10;
  cfg.pairs_and_flows = state.range(1) != 0;
  Engine engine(cfg);
  uint64_t intervals = 0;
  engine.setIntervalSink([&intervals](const IntervalReport&) { ++intervals; });
  const size_t batch = static_cast<size_t>(state.range(0));
  const int64_t span = input.back().ts_ns - input.front().ts_ns + 1'000'000;
  std::vector<PacketRecord> buf(batch);
  int64_t shift = 0;
  size_t i = 0;
  for (auto _ : state) {
    for (PacketRecord& r : buf) {
      r = input[i];
      r.ts_ns += shift;
      if (++i == input.size()) {
        i = 0;
        shift += span;
      }
    }
    engine.add(buf);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
  state.counters["intervals"] = static_cast<double>(intervals);
}
BENCHMARK(BM_Window_UpdateBatch)
    ->ArgNames({"batch", "tables", "directions"})
    ->Args({256, 1, 0})
    ->Args({1, 1, 0})
    ->Args({256, 0, 0})
    ->Args({256, 0, 1})
    ->Args({256, 1, 1});

// The top K of a full flow table, as every report interval's close asks for it on the worker: ns per call.
void BM_HeavyTable_TopK(benchmark::State& state) {
  EngineConfig cfg;
  const size_t n = static_cast<size_t>(state.range(0));
  cfg.flow_table_capacity = n + 1024;
  internal::FlowTable table(cfg, cfg.flow_table_capacity);
  for (size_t i = 0; i < n; ++i) {
    FlowKey k;
    k.family = 4;
    k.src = {10, 0, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
    k.dst = {10, 1, 0, 1};
    k.proto = 6;
    k.src_port = static_cast<uint16_t>(i * 7919);
    k.dst_port = 5000;
    table.add(k, static_cast<int64_t>(i) * 1000, static_cast<uint32_t>(64 + (i * 2654435761u) % 1400));
  }
  for (auto _ : state) benchmark::DoNotOptimize(table.result(10, /*with_windows=*/false));
  state.SetLabel("flows in the table: " + std::to_string(n));
}
BENCHMARK(BM_HeavyTable_TopK)->Arg(1 << 16)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
