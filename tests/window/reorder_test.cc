#include <gtest/gtest.h>

#include <random>

#include "burstscope/window.h"

namespace burstscope {
namespace {

TEST(ReordererTest, DisorderWithinTheHorizonComesOutSortedAndStable) {
  std::mt19937 rng(3);
  std::vector<PacketRecord> in;
  int64_t t = 1'000'000;
  for (uint32_t i = 0; i < 20000; ++i) {
    t += rng() % 3 == 0 ? 0 : rng() % 2000;
    PacketRecord r;
    r.ts_ns = t;
    r.wire_len = i;  // arrival order, to check stability
    in.push_back(r);
  }
  std::vector<PacketRecord> want = in;
  // Swap neighbours up to 8 places apart, as capture paths with several queues do.
  for (size_t i = 0; i + 8 < in.size(); i += 9) std::swap(in[i], in[i + 1 + rng() % 7]);
  std::stable_sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.ts_ns < b.ts_ns; });
  // After the swaps, ties must keep *arrival* order: rebuild the expectation from the swapped input.
  want = in;
  std::stable_sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.ts_ns < b.ts_ns; });

  Reorderer ro(20'000);  // 20 us: more than any displacement above
  std::vector<PacketRecord> out;
  auto emit = [&](const PacketRecord& r) { out.push_back(r); };
  for (const PacketRecord& r : in) ro.push(r, emit);
  ro.flush(emit);
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i].ts_ns, want[i].ts_ns) << i;
    ASSERT_EQ(out[i].wire_len, want[i].wire_len) << i;
  }
  EXPECT_GT(ro.reordered(), 0u);
  EXPECT_EQ(ro.clamped(), 0u);
}

TEST(ReordererTest, LaterThanTheHorizonIsClampedAndCounted) {
  Reorderer ro(1000);
  std::vector<int64_t> out;
  auto emit = [&](const PacketRecord& r) { out.push_back(r.ts_ns); };
  PacketRecord r;
  // When 5'000 arrives, 10'000 and 20'000 are out (30'000 - 1'000 >= 20'000), 30'000 is still held.
  for (int64_t ts : {10'000, 20'000, 30'000, 5'000, 31'000}) {
    r.ts_ns = ts;
    ro.push(r, emit);
  }
  ro.flush(emit);
  EXPECT_EQ(out, (std::vector<int64_t>{10'000, 20'000, 20'000, 30'000, 31'000}));
  EXPECT_EQ(ro.clamped(), 1u);
  EXPECT_EQ(ro.maxLatenessNs(), 15'000);  // behind the last released timestamp
}

TEST(ReordererTest, ZeroHorizonPassesStraightThrough) {
  Reorderer ro(0);
  int emitted = 0;
  PacketRecord r;
  for (int64_t ts = 0; ts < 100; ++ts) {
    r.ts_ns = ts;
    ro.push(r, [&](const PacketRecord&) { ++emitted; });
    EXPECT_EQ(emitted, ts + 1);
  }
}

}  // namespace
}  // namespace burstscope
