#include <benchmark/benchmark.h>

#include "bench/bench_common.h"
#include "burstscope/decode.h"

namespace burstscope {
namespace {

// Decoding the real trace's frames (TCP over IPv4, 96-byte snaplen), ns per frame.
void BM_Decode_RealTrace(benchmark::State& state) {
  static const bench::RawFrames frames = bench::loadBundledTrace();
  Decoder d;
  PacketRecord r;
  size_t i = 0;
  for (auto _ : state) {
    d.decode(frames.data[i], frames.wire_len[i], &r);
    benchmark::DoNotOptimize(r);
    if (++i == frames.data.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_Decode_RealTrace);

// The same frames behind ERSPAN type III (GRE with sequence number, 12-byte header), built in place.
void BM_Decode_ErspanIII(benchmark::State& state) {
  static const bench::RawFrames frames = bench::loadBundledTrace();
  static const std::vector<uint8_t> outer = {2,    0,    0,    0,    0, 2, 2, 0, 0,  0,  0, 1, 0x08, 0x00,  // Ethernet
                                             0x45, 0,    0x05, 0xDC, 0, 0, 0, 0, 64, 47, 0, 0, 192,  168,
                                             1,    1,    192,  168,  1, 2,                       // IPv4, GRE
                                             0x10, 0x00, 0x22, 0xEB, 0, 0, 0, 1,                 // GRE + seq
                                             0x20, 0,    0,    9,    0, 0, 0, 0, 0,  0,  0, 0};  // ERSPAN III
  std::vector<std::vector<uint8_t>> wrapped;
  for (size_t i = 0; i < 4096 && i < frames.data.size(); ++i) {
    wrapped.push_back(outer);
    wrapped.back().insert(wrapped.back().end(), frames.data[i].begin(), frames.data[i].end());
  }
  Decoder d;
  PacketRecord r;
  size_t i = 0;
  for (auto _ : state) {
    d.decode(wrapped[i], static_cast<uint32_t>(wrapped[i].size() + 1400), &r);
    benchmark::DoNotOptimize(r);
    if (++i == wrapped.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_Decode_ErspanIII);

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
