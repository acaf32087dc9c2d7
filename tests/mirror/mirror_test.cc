// Mirror self-checks (docs/mirror.md) against truth written here: TCP holes the mirror lost (acknowledged
// unseen) or the network lost (the sender refilled them), across the 32-bit sequence wrap; copies of a frame
// at and just beyond the duplicate horizon; the bounded table under many flows; the mirror port's line load
// per aligned window; and the duplicate key the decoder puts on the record.
#include "burstscope/mirror.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <span>
#include <vector>

#include "burstscope/decode.h"
#include "burstscope/evidence.h"
#include "burstscope/window.h"
#include "tests/common/frames.h"

namespace burstscope {
namespace {

constexpr int64_t kT0 = 1'795'294'232'000'000'000;
constexpr int64_t kUs = 1000;

FlowKey tcpKey(bool forward, uint8_t host = 1) {
  FlowKey k;
  k.family = 4;
  k.proto = 6;
  k.src = {10, 0, 0, static_cast<uint8_t>(forward ? host : 200)};
  k.dst = {10, 0, 0, static_cast<uint8_t>(forward ? 200 : host)};
  k.src_port = forward ? 40000 : 5201;
  k.dst_port = forward ? 5201 : 40000;
  return k;
}

PacketRecord segment(int64_t t, bool forward, uint32_t seq, uint16_t len, uint32_t ack, uint8_t flags = kTcpAck) {
  PacketRecord r;
  r.ts_ns = t;
  r.wire_len = 54u + len;
  r.key = tcpKey(forward);
  r.l4 = static_cast<uint8_t>(L4Kind::kTcp);
  r.op = flags;
  r.len = len;
  r.seq = seq;
  r.ack = ack;
  r.dup_key = (seq * 2654435761u) | 1u;
  return r;
}

EngineResult run(const std::vector<PacketRecord>& records, MirrorConfig mc = {}, EngineConfig cfg = {}) {
  Engine engine(cfg);
  auto ev = std::make_unique<EvidenceAggregator>(EvidenceConfig{}, cfg, false);
  engine.subscribe(ev.get());
  engine.addAggregator(std::move(ev));
  engine.addAggregator(std::make_unique<MirrorAggregator>(mc, cfg));
  engine.add(records);
  engine.finish();
  return engine.result();
}

// A transfer of `n` segments of 1000 bytes from `isn`, each acknowledged 15 us later; the mirror does not show
// the `skip` segments (the receiver got them).
std::vector<PacketRecord> transfer(uint32_t isn, int n, const std::vector<int>& skip) {
  std::vector<PacketRecord> v;
  for (int i = 0; i < n; ++i) {
    const uint32_t seq = isn + static_cast<uint32_t>(i) * 1000;
    const int64_t t = kT0 + i * 20 * kUs;
    if (std::find(skip.begin(), skip.end(), i) == skip.end()) v.push_back(segment(t, true, seq, 1000, 1));
    v.push_back(segment(t + 15 * kUs, false, 1, 0, seq + 1000));
  }
  return v;
}

TEST(MirrorTcp, AHoleTheReceiverAcknowledgesIsTheMirrorsLossWithItsBytes) {
  EngineResult r = run(transfer(1000, 20, {5, 12}));
  const EvidenceCounts& t = r.evidence->totals;
  EXPECT_EQ(t.tcp_lost_segments, 2u);
  // Wireshark flags twice per hole here: the ACK of the unseen segment, then the ACK of the one after it
  // (that segment did not start at 'max seq to be acked', which stayed at the hole).
  EXPECT_EQ(t.tcp_ack_lost_segments, 4u);
  EXPECT_EQ(t.tcp_holes_acked_unseen, 2u);
  EXPECT_EQ(t.tcp_bytes_acked_unseen, 2000u);
  EXPECT_EQ(t.tcp_holes_filled, 0u);
}

TEST(MirrorTcp, AHoleTheSenderRefillsIsTheNetworksLossNotTheMirrors) {
  // Segment 5 is lost before the mirror: the receiver acknowledges 5000 until the sender sends it again after 9.
  std::vector<PacketRecord> v;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = kT0 + i * 20 * kUs;
    if (i != 5) v.push_back(segment(t, true, 1000 + 1000 * static_cast<uint32_t>(i), 1000, 1));
    v.push_back(segment(t + 15 * kUs, false, 1, 0, i < 5 ? 2000 + 1000 * static_cast<uint32_t>(i) : 6000));
  }
  v.push_back(segment(kT0 + 300 * kUs, true, 6000, 1000, 1));
  v.push_back(segment(kT0 + 315 * kUs, false, 1, 0, 11000));
  EngineResult r = run(v);
  const EvidenceCounts& t = r.evidence->totals;
  EXPECT_EQ(t.tcp_lost_segments, 1u);
  EXPECT_EQ(t.tcp_holes_filled, 1u);
  EXPECT_EQ(t.tcp_retransmissions, 1u);
  EXPECT_EQ(t.tcp_holes_acked_unseen, 0u);
  EXPECT_EQ(t.tcp_bytes_acked_unseen, 0u);
}

TEST(MirrorTcp, HolesAcrossTheSequenceWrapAreMeasuredInSerialArithmetic) {
  // The transfer starts 5.5 segments before 2^32: segment 6 straddles the wrap, 5 and 7 are not shown.
  EngineResult r = run(transfer(0xFFFFFFFFu - 5499, 12, {5, 7}));
  const EvidenceCounts& t = r.evidence->totals;
  EXPECT_EQ(t.tcp_lost_segments, 2u);
  EXPECT_EQ(t.tcp_holes_acked_unseen, 2u);
  EXPECT_EQ(t.tcp_bytes_acked_unseen, 2000u);
  EXPECT_EQ(t.tcp_retransmissions, 0u);
}

TEST(MirrorTcp, HolesBeyondTheBoundAreCountedAsUntracked) {
  // Three holes before any acknowledgement: two are tracked, the third is counted as untracked.
  std::vector<PacketRecord> v;
  for (int i = 0; i < 7; ++i) {
    if (i % 2 == 1) continue;
    v.push_back(segment(kT0 + i * kUs, true, 1000 + 1000 * static_cast<uint32_t>(i), 1000, 1));
  }
  v.push_back(segment(kT0 + 20 * kUs, false, 1, 0, 8000));
  EngineResult r = run(v);
  const EvidenceCounts& t = r.evidence->totals;
  EXPECT_EQ(t.tcp_lost_segments, 3u);
  EXPECT_EQ(t.tcp_holes_acked_unseen, 2u);
  EXPECT_EQ(t.tcp_bytes_acked_unseen, 2000u);
  EXPECT_EQ(t.tcp_holes_untracked, 1u);
}

TEST(MirrorDuplicates, ACopyAtTheHorizonCountsAndOneJustBeyondDoesNot) {
  MirrorConfig mc;
  mc.duplicate_horizon_ns = 50 * kUs;
  std::vector<PacketRecord> v;
  v.push_back(segment(kT0, true, 1000, 1000, 1));
  v.push_back(segment(kT0 + 50 * kUs, true, 1000, 1000, 1));  // exactly at the horizon: a copy
  v.push_back(segment(kT0 + 200 * kUs, true, 2000, 1000, 1));
  v.push_back(segment(kT0 + 250 * kUs + 1, true, 2000, 1000, 1));  // 1 ns beyond: not a copy
  v.back().direction = Direction::kEgress;
  PacketRecord ack = segment(kT0 + 300 * kUs, false, 1, 0, 3000);
  v.push_back(ack);
  ack.ts_ns += kUs;
  v.push_back(ack);  // a pure ACK repeated (a duplicate ACK): not judged
  EngineResult r = run(v, mc);
  EXPECT_EQ(r.mirror->duplicatesTotal(), 1u);
  EXPECT_EQ(r.mirror->duplicates[static_cast<int>(Direction::kUnknown)], 1u);
  EXPECT_EQ(r.mirror->duplicate_bytes[0], 1054u);
  EXPECT_EQ(r.mirror->checked, 4u);
}

TEST(MirrorDuplicates, ThreeCopiesAreTwoDuplicatesAndOtherFlowsWithTheSameKeyAreNot) {
  std::vector<PacketRecord> v;
  v.push_back(segment(kT0, true, 1000, 1000, 1));
  v.push_back(segment(kT0 + 3 * kUs, true, 1000, 1000, 1));
  v.push_back(segment(kT0 + 6 * kUs, true, 1000, 1000, 1));
  PacketRecord other = segment(kT0 + 7 * kUs, true, 1000, 1000, 1);
  other.key = tcpKey(true, 2);  // another host, the same key hash: not a copy
  v.push_back(other);
  EngineResult r = run(v);
  EXPECT_EQ(r.mirror->duplicatesTotal(), 2u);
}

TEST(MirrorDuplicates, ManyFlowsStayWithinTheTableAndCopiesAreStillFound) {
  // 200,000 distinct frames within one horizon, each copied 1 us later: the table (at most 16,384 entries) holds
  // the recent ones, so every copy is found, and older entries are displaced, not grown into.
  std::vector<PacketRecord> v;
  constexpr int kFrames = 200'000;
  for (int i = 0; i < kFrames; ++i) {
    PacketRecord p = segment(kT0 + i * 10, true, static_cast<uint32_t>(i) * 1000, 100, 1);
    p.key.src_port = static_cast<uint16_t>(i);
    v.push_back(p);
    p.ts_ns += kUs;
    v.push_back(p);
  }
  std::sort(v.begin(), v.end(), [](const PacketRecord& a, const PacketRecord& b) { return a.ts_ns < b.ts_ns; });
  MirrorConfig mc;
  mc.duplicate_horizon_ns = 2 * kUs;
  EngineResult r = run(v, mc);
  EXPECT_EQ(r.mirror->duplicatesTotal(), static_cast<uint64_t>(kFrames));
  EXPECT_EQ(r.mirror->checked, 2u * kFrames);
}

// A brute force of the duplicate table at a fixed size of `buckets` (a power of two): a frame's bucket by bits 2 and up
// of its key, a copy found where its key was seen within the horizon, else the bucket's oldest way goes
// (std::min_element: the first of equals), counted as displaced when it was still inside its horizon.
struct TableModel {
  struct Way {
    int64_t ts = INT64_MIN;
    uint32_t key = 0;
  };
  TableModel(size_t buckets, int64_t horizon_ns) : horizon(horizon_ns), table(buckets) {}
  void see(int64_t t, uint32_t key) {
    std::array<Way, 4>& ways = table[(key >> 2) % table.size()];
    auto hit = std::find_if(ways.begin(), ways.end(),
                            [&](const Way& w) { return w.key == key && w.ts != INT64_MIN && t - w.ts <= horizon; });
    if (hit != ways.end()) {
      ++duplicates;
      hit->ts = t;
      return;
    }
    auto oldest = std::min_element(ways.begin(), ways.end(), [](const Way& a, const Way& b) { return a.ts < b.ts; });
    if (oldest->ts != INT64_MIN && t - oldest->ts <= horizon) ++displaced;
    *oldest = Way{t, key};
  }
  int64_t horizon;
  std::vector<std::array<Way, 4>> table;
  uint64_t duplicates = 0, displaced = 0;
};

// Which remembered frame a new one replaces, against a brute force. The frames meet in a few of the table's
// buckets (its layout, mirror.cc bucketOf: bits 2 to 13 of the key pick one of 4,096 buckets of four at the largest
// size, which the table grows to at the first frame that would push out one inside its horizon: these keys share a
// bucket at every size), so that every bucket is full and most new frames push one out: always its oldest. The brute
// force finds it with std::min_element; copies of recent frames come back in a random order, some within the horizon of
// the frame they copy and some beyond, and the figures must agree frame by frame. The times are distinct, so no two
// full ways are of an age: which of equals goes (the first) is not judged here.
TEST(MirrorDuplicates, ANewFrameReplacesItsBucketsOldestAsABruteForceDoes) {
  constexpr int kBuckets = 3;
  constexpr int64_t kHorizon = 40 * kUs;
  std::mt19937 rng(11);
  TableModel model(4096, kHorizon);
  std::vector<PacketRecord> v, sent;
  int64_t t = kT0;
  for (int i = 0; i < 20'000; ++i) {
    t += 1 + static_cast<int64_t>(rng() % (8 * kUs));
    PacketRecord p;
    if (sent.size() > 8 && rng() % 3 == 0) {
      p = sent[sent.size() - 1 - rng() % 8];  // a copy of one of the last eight frames
    } else {
      const auto b = static_cast<uint32_t>(rng() % kBuckets);
      const auto n = static_cast<uint32_t>(sent.size());
      p = segment(t, true, n * 1000, 1000, 1);
      p.dup_key = (b << 2 | 1) + (n << 14);  // bucket b
      sent.push_back(p);
    }
    p.ts_ns = t;
    v.push_back(p);
    model.see(t, p.dup_key);
  }
  ASSERT_GT(model.duplicates, 1000u);
  ASSERT_GT(model.displaced, 1000u);
  MirrorConfig mc;
  mc.duplicate_horizon_ns = kHorizon;
  EngineResult r = run(v, mc);
  EXPECT_EQ(r.mirror->checked, v.size());
  EXPECT_EQ(r.mirror->duplicatesTotal(), model.duplicates);
  EXPECT_EQ(r.mirror->displaced, model.displaced);
}

// The table starts small and grows rather than push out a frame still inside its horizon (mirror.cc grow), so it
// finds every copy the largest table (4,096 buckets of four) finds, and forgets a frame inside its horizon only
// where that table does. A brute force of tables of both sizes (each bucket's oldest way goes, by bits 2 to 13 of
// the key, or 2 to 9), over a quiet stretch (about five frames a horizon) and then a dense one (about two thousand,
// more than the small table holds), with copies of recent frames, some inside their horizon and some beyond. The
// dense stretch must make the small table miss copies that the large one finds, so that a table that pushed frames
// out rather than grow fails here. The times are distinct (which of equals goes is not judged).
TEST(MirrorDuplicates, TheTableGrowsRatherThanForgetAFrameInsideItsHorizon) {
  constexpr int64_t kHorizon = 50 * kUs;
  TableModel large(4096, kHorizon);
  TableModel small(256, kHorizon);
  std::mt19937 rng(5);
  std::vector<PacketRecord> quiet, dense, sent;
  int64_t t = kT0;
  for (int i = 0; i < 80'000; ++i) {
    const bool is_dense = i >= 5'000;
    t += 1 + static_cast<int64_t>(rng() % (is_dense ? 49 : 20'000));  // means of 25 ns and 10 us
    PacketRecord p;
    if (sent.size() > 4000 && rng() % 4 == 0) {
      p = sent[sent.size() - 1 - rng() % 4000];  // a copy of a recent frame: within the horizon or beyond it
    } else {
      const auto n = static_cast<uint32_t>(sent.size());
      p = segment(t, true, n * 1000, 1000, 1);
      // Distinct for distinct n (murmur3's finaliser is a bijection; the last bit set, a collision of two keys is
      // possible but harmless to the comparison: both sides see it), at random over the buckets: an odd multiplier
      // alone spreads consecutive n evenly, which never fills a bucket of the largest table.
      uint32_t k = n;
      k ^= k >> 16;
      k *= 0x85EBCA6Bu;
      k ^= k >> 13;
      k *= 0xC2B2AE35u;
      k ^= k >> 16;
      p.dup_key = k | 1u;
      sent.push_back(p);
    }
    p.ts_ns = t;
    (is_dense ? dense : quiet).push_back(p);
    large.see(t, p.dup_key);
    small.see(t, p.dup_key);
    if (i + 1 == 5'000) {
      ASSERT_EQ(small.displaced, 0u);  // the quiet stretch fits the small table
    }
  }
  ASSERT_GT(small.displaced, 0u);
  ASSERT_GT(large.displaced, 0u);                 // the largest table too is full somewhere: the growth's end is judged
  ASSERT_LT(small.duplicates, large.duplicates);  // the dense stretch tells the two sizes apart
  ASSERT_GT(large.duplicates, 5'000u);
  MirrorConfig mc;
  mc.duplicate_horizon_ns = kHorizon;
  MirrorAggregator m(mc, EngineConfig{});
  m.add(quiet);
  EXPECT_EQ(m.tableBuckets(), 256u);  // a quiet port keeps the small table
  m.add(dense);
  EXPECT_EQ(m.tableBuckets(), 4096u);
  m.finish();
  EngineResult r;
  m.result(&r);
  EXPECT_EQ(r.mirror->checked, quiet.size() + dense.size());
  EXPECT_EQ(r.mirror->duplicatesTotal(), large.duplicates);
  EXPECT_EQ(r.mirror->displaced, large.displaced);
}

TEST(MirrorLoad, WindowsAtOrAboveTheThresholdOfLineRateAreOverloaded) {
  EngineConfig cfg;
  cfg.link_capacity_bps = 10e9;  // 100 us carries 125,000 bytes
  std::vector<PacketRecord> v;
  // Window 0: 80 frames of 1514 + 24 line bytes = 123,040 (98.4%): overloaded. Window 1: empty. Window 2: 70
  // frames = 107,660 (86%): not.
  for (int i = 0; i < 80; ++i) v.push_back(segment(kT0 + i * kUs, true, static_cast<uint32_t>(i) * 1460, 1460, 1));
  for (int i = 0; i < 70; ++i) {
    v.push_back(segment(kT0 + 200 * kUs + i * kUs, true, static_cast<uint32_t>(80 + i) * 1460, 1460, 1));
  }
  MirrorConfig mc;
  mc.load_scales_ns = {100 * kUs};
  EngineResult r = run(v, mc, cfg);
  ASSERT_EQ(r.mirror->load.size(), 1u);
  EXPECT_EQ(r.mirror->load[0].windows, 3u);
  EXPECT_EQ(r.mirror->load[0].overloaded, 1u);
  EXPECT_NEAR(r.mirror->load[0].peak, 80.0 * 1538 * 8 / 1e6, 1e-9);
}

// Load windows against a brute force: random gaps (some exactly a window long, some of many windows) over three
// scales, records falling on window edges too.
TEST(MirrorLoad, WindowsOverloadsAndPeakEqualABruteForce) {
  EngineConfig cfg;
  cfg.link_capacity_bps = 1e9;
  std::mt19937 rng(3);
  const std::vector<int64_t> scales{3 * kUs, 100 * kUs, 1000 * kUs};
  std::vector<PacketRecord> v;
  int64_t t = kT0;
  for (int i = 0; i < 20'000; ++i) {
    const uint32_t pick = rng() % 10;
    t += pick == 0 ? 100 * kUs : pick == 1 ? static_cast<int64_t>(rng() % 5'000) * kUs : rng() % 4'000;
    v.push_back(segment(t, true, static_cast<uint32_t>(i) * 100, 100 + rng() % 1400, 1));
  }
  MirrorConfig mc;
  mc.load_scales_ns = scales;
  mc.overload_threshold = 0.5;
  EngineResult r = run(v, mc, cfg);
  ASSERT_EQ(r.mirror->load.size(), scales.size());
  for (size_t s = 0; s < scales.size(); ++s) {
    const int64_t w = scales[s];
    std::map<int64_t, uint64_t> bytes;  // window index -> line bytes
    for (const PacketRecord& p : v) bytes[p.ts_ns / w] += p.wire_len + kLineOverheadBytes;
    const uint64_t windows = static_cast<uint64_t>(bytes.rbegin()->first - bytes.begin()->first + 1);
    uint64_t over = 0;
    double peak = 0;
    for (const auto& [n, b] : bytes) {
      const double load = static_cast<double>(b) * 8e9 / (cfg.link_capacity_bps * static_cast<double>(w));
      over += load >= mc.overload_threshold;
      peak = std::max(peak, load);
    }
    EXPECT_EQ(r.mirror->load[s].windows, windows) << w;
    EXPECT_EQ(r.mirror->load[s].overloaded, over) << w;
    EXPECT_DOUBLE_EQ(r.mirror->load[s].peak, peak) << w;
  }
}

TEST(MirrorDecode, BothCopiesOfAFrameGetOneDuplicateKeyWhateverTheirTtlAndVlan) {
  using testing::FrameBuilder;
  using testing::ip4;
  FrameBuilder fa;
  fa.eth(0x0800).ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 6, 20 + 100).tcp(1, 2, 0xDEADBEEF, 77, 0x18).payload(100);
  const std::vector<uint8_t> a = fa.bytes;
  std::vector<uint8_t> b = a;
  b[14 + 8] -= 1;  // one hop later: TTL and checksum differ
  b[14 + 10] ^= 0x5A;
  FrameBuilder fc;  // the egress copy, on a tagged port
  fc.eth(0x8100).u16(42).u16(0x0800);
  fc.bytes.insert(fc.bytes.end(), a.begin() + 14, a.end());
  FrameBuilder fd;  // the next segment: another sequence number
  fd.eth(0x0800)
      .ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 6, 20 + 100)
      .tcp(1, 2, 0xDEADBEEF + 100, 77, 0x18)
      .payload(100);
  Decoder d;
  PacketRecord rc, rd;
  d.decode(fc.bytes, static_cast<uint32_t>(fc.bytes.size()), &rc);
  d.decode(fd.bytes, static_cast<uint32_t>(fd.bytes.size()), &rd);
  PacketRecord ra, rb;
  d.decode(a, static_cast<uint32_t>(a.size()), &ra);
  d.decode(b, static_cast<uint32_t>(b.size()), &rb);
  EXPECT_NE(ra.dup_key, 0u);
  EXPECT_EQ(ra.dup_key, rb.dup_key);
  EXPECT_EQ(ra.dup_key, rc.dup_key);
  EXPECT_NE(ra.dup_key, rd.dup_key);
  uint64_t key;
  ASSERT_TRUE(duplicateKeyFromIp(std::span(a).subspan(14), 0x0800, &key));
  EXPECT_EQ(ra.dup_key, static_cast<uint32_t>(key) | 1u);
}

}  // namespace
}  // namespace burstscope
