#include <benchmark/benchmark.h>

#include "bench/bench_common.h"
#include "burstscope/decode.h"

namespace burstscope {
namespace {

// Decoding `frames` in turn, ns per frame; arg 0 is 1 for the usual way (the default), 0 for the general way only
// (Decoder::setUsualWay): the two side by side in one run.
void decodeFrames(benchmark::State& state, const std::vector<std::vector<uint8_t>>& frames,
                  const std::vector<uint32_t>& wire_len) {
  Decoder d;
  d.setUsualWay(state.range(0) != 0);
  PacketRecord r;
  size_t i = 0;
  for (auto _ : state) {
    d.decode(frames[i], wire_len[i], &r);
    benchmark::DoNotOptimize(r);
    if (++i == frames.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The real trace's frames (TCP over IPv4, 96-byte snaplen).
void BM_Decode_RealTrace(benchmark::State& state) {
  static const bench::RawFrames frames = bench::loadBundledTrace();
  decodeFrames(state, frames.data, frames.wire_len);
}
BENCHMARK(BM_Decode_RealTrace)->ArgName("usual")->Arg(1)->Arg(0);

// The same traffic as RoCEv2 over IPv4 (data/roce: RDMA WRITEs and ACKNOWLEDGEs, 96-byte snaplen).
void BM_Decode_Roce(benchmark::State& state) {
  static const bench::RawFrames frames = bench::loadTrace("data/roce/roce-ddp-w3.pcap");
  decodeFrames(state, frames.data, frames.wire_len);
}
BENCHMARK(BM_Decode_Roce)->ArgName("usual")->Arg(1)->Arg(0);

// The real trace's frames inside a VXLAN mirror's wrapping (UDP to 4789: never usual), built in place.
void BM_Decode_Vxlan(benchmark::State& state) {
  static const bench::RawFrames frames = bench::loadBundledTrace();
  static const std::vector<uint8_t> outer = {
      2,    0,    0,    0,    0,    2,    2, 0, 0,  0,  0, 1, 0x08, 0x00,                        // Ethernet
      0x45, 0,    0x05, 0xDC, 0,    0,    0, 0, 64, 17, 0, 0, 192,  168,  1, 1, 192, 168, 1, 2,  // IPv4, UDP
      0xC0, 0x00, 0x12, 0xB5, 0x05, 0xC8, 0, 0,                                                  // to 4789
      0x08, 0,    0,    0,    0,    0,    9, 0};                                                 // VXLAN, VNI 9
  std::vector<std::vector<uint8_t>> wrapped;
  std::vector<uint32_t> wire;
  for (size_t i = 0; i < 4096 && i < frames.data.size(); ++i) {
    wrapped.push_back(outer);
    wrapped.back().insert(wrapped.back().end(), frames.data[i].begin(), frames.data[i].end());
    wire.push_back(static_cast<uint32_t>(wrapped.back().size() + 1400));
  }
  decodeFrames(state, wrapped, wire);
}
BENCHMARK(BM_Decode_Vxlan)->ArgName("usual")->Arg(1)->Arg(0);

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
  std::vector<uint32_t> wire;
  for (const auto& w : wrapped) wire.push_back(static_cast<uint32_t>(w.size() + 1400));
  decodeFrames(state, wrapped, wire);
}
BENCHMARK(BM_Decode_ErspanIII)->ArgName("usual")->Arg(1)->Arg(0);

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
