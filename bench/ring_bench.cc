#include <benchmark/benchmark.h>

#include <thread>

#include "burstscope/packet.h"
#include "burstscope/ring.h"

namespace burstscope {
namespace {

// One thread, batch in and out: the cost of the ring itself per record.
void BM_Ring_EnqueueDequeue(benchmark::State& state) {
  const size_t batch = static_cast<size_t>(state.range(0));
  SpscRing<PacketRecord> ring(4096);
  std::vector<PacketRecord> in(batch), out(batch);
  for (auto _ : state) {
    benchmark::DoNotOptimize(ring.enqueue(in));
    benchmark::DoNotOptimize(ring.dequeue(out));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
}
BENCHMARK(BM_Ring_EnqueueDequeue)->Arg(1)->Arg(32)->Arg(64);

// Producer and consumer on two threads (the machine's two cores), 64-record batches, records/s moved.
void BM_Ring_TwoThreads(benchmark::State& state) {
  constexpr size_t kBatch = 64;
  for (auto _ : state) {
    constexpr uint64_t kRecords = 4'000'000;
    SpscRing<PacketRecord> ring(size_t{1} << 16);
    std::thread producer([&] {
      std::vector<PacketRecord> in(kBatch);
      uint64_t sent = 0;
      while (sent < kRecords) sent += ring.enqueue(in);
    });
    std::vector<PacketRecord> out(kBatch);
    uint64_t got = 0;
    while (got < kRecords) got += ring.dequeue(out);
    producer.join();
    state.SetItemsProcessed(state.items_processed() + static_cast<int64_t>(kRecords));
  }
}
BENCHMARK(BM_Ring_TwoThreads)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
