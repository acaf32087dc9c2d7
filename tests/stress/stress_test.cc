// Hostile traffic and clocks against the engine, at full scale: a flow explosion of 10 M distinct 5-tuples,
// timestamps that step back, jump a day forward or stand still. Memory is checked through the process's
// resident size; time is bounded by the work each case implies (a per-bin or per-interval walk over a day
// would not finish inside the suite's timeout), never by a clock. Suite `stress`: release build only.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "burstscope/reorder.h"
#include "burstscope/window.h"

namespace burstscope {
namespace {

// Resident set size of this process, in MiB.
double rssMiB() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  std::fclose(f);
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

PacketRecord flowRecord(uint32_t id, int64_t ts, uint32_t len) {
  PacketRecord r;
  r.ts_ns = ts;
  r.wire_len = len;
  r.key.family = 4;
  // An odd multiplier is a bijection on 32 bits: distinct ids give distinct, scattered addresses and ports.
  const uint32_t x = id * 2654435761u;
  r.key.src = {10, static_cast<uint8_t>(x >> 24), static_cast<uint8_t>(x >> 16), static_cast<uint8_t>(x >> 8)};
  r.key.dst = {10, 200, 0, static_cast<uint8_t>(x)};
  r.key.src_port = static_cast<uint16_t>(x ^ (x >> 16));
  r.key.dst_port = 5201;
  r.key.proto = 6;
  return r;
}

TEST(Stress, FlowExplosionIsBoundedAndKeepsTheHeavyFlows) {
  constexpr uint32_t kRandomFlows = 10'000'000;
  constexpr uint32_t kHeavy = 10;
  constexpr uint32_t kHeavyEvery = 50;  // one heavy packet per 50 random ones
  EngineConfig cfg;
  cfg.flow_table_capacity = 1 << 16;
  cfg.pair_table_capacity = 1 << 14;
  ASSERT_TRUE(validateConfig(cfg).ok());
  Engine engine(cfg);
  std::vector<uint64_t> heavy_bytes(kHeavy);
  uint64_t total = 0;
  double rss_at_1m = 0;
  int64_t ts = 1'795'000'000'000'000'000;
  for (uint32_t i = 0; i < kRandomFlows; ++i) {
    ts += 100;
    const uint32_t len = 64 + i % 64;
    engine.add(flowRecord(kHeavy + i, ts, len));  // ids 0..kHeavy-1 are the heavy flows
    total += len;
    if (i % kHeavyEvery == 0) {
      const uint32_t h = (i / kHeavyEvery) % kHeavy;
      const uint32_t hlen = 1000 + 50 * h;  // distinct sizes: a strict order among the heavy flows
      engine.add(flowRecord(h, ts, hlen));
      heavy_bytes[h] += hlen;
      total += hlen;
    }
    if (i == 1'000'000) rss_at_1m = rssMiB();
  }
  engine.finish();
  const double rss_at_end = rssMiB();
  const EngineResult r = engine.result();

  // Memory: the tables were full after the first million flows; nine million more add no more than noise.
  EXPECT_LT(rss_at_end - rss_at_1m, 48.0) << "resident MiB at 1 M flows " << rss_at_1m << ", at 10 M " << rss_at_end;
  EXPECT_LE(r.flows.entries, cfg.flow_table_capacity);
  EXPECT_LE(r.pairs.entries, cfg.pair_table_capacity);
  // Every distinct key is in the table or was evicted (counted): nothing vanished.
  EXPECT_EQ(r.flows.entries + r.flows.evictions, uint64_t{kRandomFlows} + kHeavy);
  EXPECT_GT(r.flows.evictions, uint64_t{kRandomFlows} - cfg.flow_table_capacity);
  EXPECT_GT(r.pairs.evictions, 0u);
  // Top-K: the heavy flows, heaviest first, to the byte; the rest is "other", to the byte.
  ASSERT_EQ(r.flows.top.size(), cfg.top_k);
  uint64_t top_sum = 0;
  for (size_t k = 0; k < kHeavy; ++k) {
    const uint32_t h = kHeavy - 1 - static_cast<uint32_t>(k);
    EXPECT_EQ(r.flows.top[k].key, flowRecord(h, 0, 0).key) << "rank " << k;
    EXPECT_EQ(r.flows.top[k].bytes, heavy_bytes[h]) << "rank " << k;
    top_sum += r.flows.top[k].bytes;
  }
  EXPECT_EQ(r.flows.other_bytes, total - top_sum);
  EXPECT_EQ(r.port.bytes, total);
}

// Records through the Reorderer into the engine, as `analyze` does.
struct Fed {
  Engine engine;
  Reorderer reorder;
  std::vector<IntervalReport> reports;
  int64_t last_fed = INT64_MIN;
  bool monotonic = true;
  uint64_t fed = 0;

  Fed(const EngineConfig& cfg, int64_t horizon) : engine(cfg), reorder(horizon) {
    engine.setIntervalSink([this](const IntervalReport& r) { reports.push_back(r); });
  }
  void push(int64_t ts, uint32_t len = 1000) {
    PacketRecord r = flowRecord(1, ts, len);
    reorder.push(r, [this](const PacketRecord& x) { feed(x); });
  }
  void feed(const PacketRecord& x) {
    monotonic &= x.ts_ns >= last_fed;
    last_fed = x.ts_ns;
    ++fed;
    engine.add(x);
  }
  void finish() {
    reorder.flush([this](const PacketRecord& x) { feed(x); });
    engine.finish();
  }
};

EngineConfig liveConfig() {
  EngineConfig cfg;
  cfg.report_interval_ns = 1'000'000'000;
  cfg.baseline_ns = 60'000'000'000;
  return cfg;
}

TEST(Stress, ADayForwardCostsTheBaselineNotTheDay) {
  constexpr int64_t kDay = 86'400'000'000'000;
  const int64_t t0 = 1'795'000'000'000'000'000;
  Fed f(liveConfig(), 1'000'000);
  for (int i = 0; i < 10'000; ++i) f.push(t0 + i * 100'000);  // 1 s of traffic
  for (int i = 0; i < 10'000; ++i) f.push(t0 + kDay + i * 100'000);
  f.finish();
  EXPECT_EQ(f.fed, 20'000u);
  EXPECT_TRUE(f.monotonic);
  // Reported one by one: at most the baseline's intervals around each side of the jump; the rest skipped.
  uint64_t skipped = 0;
  for (const IntervalReport& r : f.reports) skipped += r.skipped_intervals;
  EXPECT_LT(f.reports.size(), 70u);
  // [t0, t0 + 1 day + 1 s) holds 86 401 one-second intervals: each reported, or counted as skipped.
  EXPECT_EQ(f.reports.size() + skipped, uint64_t{kDay / 1'000'000'000 + 1});
  EXPECT_EQ(f.engine.result().port.packets, 20'000u);
  EXPECT_EQ(f.reorder.clamped(), 0u);
}

TEST(Stress, TimestampsSteppingBackAreShiftedOnCountedAndNothingIsLost) {
  const int64_t t0 = 1'795'000'000'000'000'000;
  Fed f(EngineConfig{}, 1'000'000);
  for (int i = 0; i < 10'000; ++i) f.push(t0 + i * 100'000);
  // The clock steps back ten seconds, twice; and then a little (within a second: late, clamped).
  for (int i = 0; i < 10'000; ++i) f.push(t0 - 10'000'000'000 + i * 100'000);
  for (int i = 0; i < 10'000; ++i) f.push(t0 - 20'000'000'000 + i * 100'000);
  f.push(t0 - 20'000'000'000 + 10'000 * 100'000 - 500'000'000);  // half a second behind its predecessor
  f.finish();
  EXPECT_EQ(f.fed, 30'001u);
  EXPECT_TRUE(f.monotonic);
  EXPECT_EQ(f.reorder.clockStepsBack(), 2u);
  EXPECT_EQ(f.reorder.clamped(), 1u);
  const EngineResult r = f.engine.result();
  EXPECT_EQ(r.port.packets, 30'001u);
  // Time ran on: the three seconds of traffic span three seconds, not one second with two piled instants.
  EXPECT_GT(r.port.last_ns - r.port.first_ns, 2'900'000'000);
  EXPECT_LT(r.port.last_ns - r.port.first_ns, 3'100'000'000);
  // No pile-up: the busiest 100 µs holds what one 100 µs of this traffic holds.
  EXPECT_LE(r.port.scales[0].envelope_bytes, 2'000u);
}

TEST(Stress, IdenticalTimestampsAreOneBurstWithinTheExactBound) {
  constexpr int kPackets = 2'000'000;
  const int64_t t0 = 1'795'000'000'000'000'000;
  EngineConfig cfg = liveConfig();
  const double before = rssMiB();
  Fed f(cfg, 1'000'000);
  for (int i = 0; i < kPackets; ++i) f.push(t0, 100);
  f.push(t0 + 3'000'000'000, 100);
  f.finish();
  EXPECT_EQ(f.fed, static_cast<uint64_t>(kPackets) + 1);
  const EngineResult r = f.engine.result();
  // Every scale's envelope holds the whole pile (the one packet three seconds later only at 10 s).
  for (const ScaleResult& s : r.port.scales) {
    EXPECT_GE(s.envelope_bytes, uint64_t{kPackets} * 100) << s.tau_ns;
  }
  // The exact windows hold at most exact_max_entries packets each; 2 M records are far inside memory.
  EXPECT_LT(rssMiB() - before, 512.0);
}

}  // namespace
}  // namespace burstscope
