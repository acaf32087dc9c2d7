#include <benchmark/benchmark.h>

#include "bench/bench_common.h"
#include "burstscope/decode.h"
#include "burstscope/evidence.h"
#include "burstscope/window.h"

namespace burstscope {
namespace {

// Decode + engine, as a port's worker and RX core share them: the real trace's frames decoded into batches of
// 256 records and fed to the engine with live defaults, with (1) and without (0) the congestion-evidence
// aggregator. The difference is the evidence's per-packet cost (issue 21 asks for at most 10%). evidence:2 takes
// every TCP segment through the general steps (EvidenceConfig::common_segments_by_run off): against evidence:1,
// what the run-level path for common segments saves; by_run is the share of the packets that took it.
void BM_Evidence_DecodeEngine(benchmark::State& state) {
  static const bench::RawFrames frames = bench::loadBundledTrace();
  EngineConfig cfg;
  cfg.report_interval_ns = 1'000'000'000;
  Engine engine(cfg);
  const EvidenceAggregator* evidence = nullptr;
  if (state.range(0)) {
    EvidenceConfig ec;
    ec.common_segments_by_run = state.range(0) == 1;
    auto e = std::make_unique<EvidenceAggregator>(ec, cfg, true);
    evidence = e.get();
    engine.subscribe(e.get());
    engine.addAggregator(std::move(e));
  }
  Decoder d;
  std::vector<PacketRecord> batch(256);
  int64_t shift = 0;
  int64_t last = 0;
  uint32_t seq_shift = 0;  // each pass of the trace continues its connections: no pass repeats a sequence range
  size_t i = 0;
  for (auto _ : state) {
    for (PacketRecord& r : batch) {
      d.decode(frames.data[i], frames.wire_len[i], &r);
      r.ts_ns = frames.ts[i] + shift;
      if (r.l4Kind() == L4Kind::kTcp) {
        r.seq += seq_shift;
        r.ack += r.ack ? seq_shift : 0;
      }
      last = r.ts_ns;
      if (++i == frames.data.size()) {
        i = 0;
        shift = last - frames.ts[0] + 1'000'000;
        seq_shift += 1u << 28;
      }
    }
    engine.add(batch);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 256);
  // The share of the packets that took the run-level step (0 with it off): a change that stopped using it shows
  // here before it shows in the time.
  if (evidence != nullptr) {
    state.counters["by_run"] =
        static_cast<double>(evidence->segmentsTakenByRun()) / (static_cast<double>(state.iterations()) * 256);
  }
  static const char* const kLabels[] = {"decode + engine", "decode + engine + evidence",
                                        "decode + engine + evidence, segment by segment"};
  state.SetLabel(kLabels[state.range(0)]);
}
BENCHMARK(BM_Evidence_DecodeEngine)->ArgName("evidence")->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
