#include <benchmark/benchmark.h>

#include "bench/bench_common.h"
#include "burstscope/decode.h"
#include "burstscope/evidence.h"
#include "burstscope/mirror.h"
#include "burstscope/training.h"
#include "burstscope/window.h"

namespace burstscope {
namespace {

// The cost model's stages (bench/README.md "Cores per port"): what each worker of a port does per packet with
// live defaults (1 s intervals, exact up to 10 ms, the port's link rate among the backlog rates), over the
// bundled trace decoded as `run` decodes it (duplicate keys for the mirror checks; 10.77.0.1 local, so that
// both direction streams run). Each pass of the trace continues its TCP connections (sequence numbers moved
// on by 2^28), so that no pass repeats the previous one's segments.
//   part:0  port and direction streams (the port's worker with 2 or 3 workers)
//   part:1  pair and flow tables, congestion evidence (the second worker)
//   part:2  training aggregator (the second worker with 2, the third with 3)
//   part:3  mirror checks (the port's worker with 2, the third with 3)
//   part:4  all of them in one engine (workers: 1)
//   part:5  none of them: what the benchmark's own copying of each batch and the engine's dispatch cost, which
//           every other part includes
std::vector<PacketRecord> liveRecords() {
  DecoderConfig dc;
  IpPrefix local;
  parsePrefix("10.77.0.1/32", &local);
  dc.local_nets.push_back(local);
  return bench::bundledRecords(dc);
}

void BM_Part(benchmark::State& state) {
  static const std::vector<PacketRecord> records = liveRecords();
  const int part = static_cast<int>(state.range(0));
  EngineConfig cfg;
  cfg.report_interval_ns = 1'000'000'000;
  cfg.report_top_k = 10;
  const bool all = part == 4;
  cfg.streams = part == 0 || all;
  cfg.pairs_and_flows = part == 1 || all;
  Engine engine(cfg);
  if (part == 2 || all) engine.addAggregator(makeTrainingAggregator(TrainingConfig{}, true));
  if (part == 1 || all) {
    auto e = std::make_unique<EvidenceAggregator>(EvidenceConfig{}, cfg, true);
    engine.subscribe(e.get());
    engine.addAggregator(std::move(e));
  }
  if (part == 3 || all) engine.addAggregator(std::make_unique<MirrorAggregator>(MirrorConfig{}, cfg));
  std::vector<PacketRecord> batch(256);
  const int64_t span = records.back().ts_ns - records.front().ts_ns + 1'000'000;
  int64_t shift = 0;
  uint32_t seq_shift = 0;
  size_t i = 0;
  for (auto _ : state) {
    for (PacketRecord& r : batch) {
      r = records[i];
      r.ts_ns += shift;
      if (r.l4Kind() == L4Kind::kTcp) {
        r.seq += seq_shift;
        r.ack += r.ack ? seq_shift : 0;
      }
      if (++i == records.size()) {
        i = 0;
        shift += span;
        seq_shift += 1u << 28;
      }
    }
    engine.add(batch);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 256);
  static const char* const kNames[] = {
      "port and direction streams", "tables + evidence",          "training", "mirror checks",
      "one engine: everything",     "none: the copy and dispatch"};
  state.SetLabel(kNames[part]);
}
BENCHMARK(BM_Part)->ArgName("part")->DenseRange(0, 5);

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
