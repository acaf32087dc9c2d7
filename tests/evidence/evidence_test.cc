// Congestion evidence against truth written here: TCP segments whose classification follows from Wireshark's
// rules (docs/evidence.md), RoCEv2 queue pairs with a go-back-N, NAKs and CNPs, PFC pauses with known paused
// time, and microbursts with and without evidence after them, through the real engine and decoder.
#include "burstscope/evidence.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "burstscope/decode.h"
#include "burstscope/training.h"
#include "burstscope/window.h"
#include "src/pipeline/step_evidence.h"
#include "tests/common/frames.h"

namespace burstscope {
namespace {

constexpr int64_t kT0 = 1'795'294'232'000'000'000;
constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1'000'000;

FlowKey tcpKey(bool forward) {
  FlowKey k;
  k.family = 4;
  k.proto = 6;
  k.src = {10, 0, 0, static_cast<uint8_t>(forward ? 1 : 2)};
  k.dst = {10, 0, 0, static_cast<uint8_t>(forward ? 2 : 1)};
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
  return r;
}

bool seqGtTest(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; }

struct Outcome {
  EngineResult result;
  uint64_t segments_by_run = 0;  // EvidenceAggregator::segmentsTakenByRun
  const EvidenceReport& e() const { return *result.evidence; }
};

Outcome runEngine(const std::vector<PacketRecord>& records, EvidenceConfig ec = {}, EngineConfig cfg = {}) {
  Engine engine(cfg);
  auto agg = std::make_unique<EvidenceAggregator>(ec, cfg, false);
  const EvidenceAggregator* evidence = agg.get();
  engine.subscribe(agg.get());
  engine.addAggregator(std::move(agg));
  engine.add(records);
  engine.finish();
  Outcome r;
  r.result = engine.result();
  r.segments_by_run = evidence->segmentsTakenByRun();
  return r;
}

TEST(TcpEvidence, InOrderTransferHasNoRetransmissions) {
  std::vector<PacketRecord> v;
  uint32_t seq = 1000;
  for (int i = 0; i < 50; ++i) {
    v.push_back(segment(kT0 + i * 10 * kUs, true, seq, 1448, 1));
    seq += 1448;
    v.push_back(segment(kT0 + i * 10 * kUs + 5 * kUs, false, 1, 0, seq));
  }
  Outcome r = runEngine(v);
  EXPECT_EQ(r.e().totals.tcp_data_segments, 50u);
  EXPECT_EQ(r.e().totals.tcp_retransmissions, 0u);
  EXPECT_EQ(r.e().totals.tcp_out_of_order, 0u);
}

// Random TCP traffic in runs of one connection's segments, mostly the common segment (in order, ACK only) that the
// run-level path takes, among every kind it must leave to the general steps or handle with them: holes, resent and
// spurious segments, keep-alives, duplicate ACKs, ACKs beyond the data seen, SYN, FIN, RST, ECE, CWR, each ECN
// codepoint, a record of the run's key that is not TCP, a direction other than the run's, runs across base bins,
// connections the table has no room for. Through the run-level path and segment by segment, every figure of the
// report is the same.
std::vector<PacketRecord> mixedTcpRuns(uint32_t seed, int segments) {
  std::mt19937 rng(seed);
  const auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  struct Side {
    uint32_t next = 0;      // the next sequence number it sends
    uint32_t ack = 0;       // what it acknowledges
    uint32_t sent_ack = 0;  // the acknowledgement of its last segment
  };
  std::vector<std::array<Side, 2>> conns(12);
  std::vector<bool> opened(conns.size());
  for (auto& c : conns) {
    for (Side& s : c) s.next = static_cast<uint32_t>(rng());
    c[0].ack = c[1].next;
    c[1].ack = c[0].next;
  }
  std::vector<PacketRecord> v;
  int64_t t = kT0;
  while (static_cast<int>(v.size()) < segments) {
    const uint32_t ci = pick(static_cast<uint32_t>(conns.size()));
    const int f = static_cast<int>(pick(2));
    Side& me = conns[ci][f];
    Side& other = conns[ci][1 - f];
    const bool acks_only = pick(8) == 0;  // a run of pure ACKs: duplicates, for a fast retransmission after them
    for (uint32_t k = 1 + pick(24); k > 0; --k) {
      t += pick(60) == 0 ? static_cast<int64_t>(50 + pick(400)) * kUs : static_cast<int64_t>(1 + pick(2)) * kUs;
      PacketRecord r = segment(t, f == 0, me.next, 1448, me.ack);
      r.key.src_port = static_cast<uint16_t>(f == 0 ? 40000 + ci : 5201);
      r.key.dst_port = static_cast<uint16_t>(f == 0 ? 5201 : 40000 + ci);
      r.direction = f == 0 ? Direction::kIngress : Direction::kEgress;
      const uint32_t what = acks_only ? 0 : pick(100);
      if (!opened[ci] && ci % 2 == 0) {  // half open with a SYN: their first RTT is the out-of-order threshold
        opened[ci] = true;
        r.op = kTcpSyn;
        r.len = 0;
      } else if (what < 8) {
        r.len = 0;  // a pure ACK, often a duplicate
      } else if (what < 12) {
        r.seq = me.next + 1448 * (1 + pick(3));  // a hole before it
      } else if (what < 14) {
        r.seq = me.next - 1448 * (1 + pick(4));  // sent again
      } else if (what < 16) {
        r.seq = other.sent_ack;  // sent again from where the other side's last segment acknowledged
      } else if (what < 18) {
        r.seq = me.next - 1;  // a keep-alive
        r.len = static_cast<uint16_t>(pick(2));
      } else if (what < 22) {
        constexpr uint8_t kOdd[] = {kTcpSyn,           kTcpSyn | kTcpAck, kTcpFin | kTcpAck, kTcpRst,
                                    kTcpAck | kTcpEce, kTcpAck | kTcpCwr, kTcpAck | kTcpPsh, 0};
        r.op = kOdd[pick(8)];
      } else if (what < 24) {
        r.l4 = 0;  // the run's key, not analysed as TCP
      } else if (what < 26) {
        r.direction = Direction::kUnknown;
      } else if (what < 30) {
        r.ack = me.ack + 1448 * (1 + pick(3));  // beyond what the other side was seen sending
      } else if (what < 36) {
        r.len = static_cast<uint16_t>(1 + pick(1448));
      }
      const uint32_t ecn = pick(20);
      if (ecn < 3 && r.l4 != 0) r.l4 |= static_cast<uint8_t>((ecn + 1) << 2);
      r.wire_len = 54u + r.len;
      const uint32_t end = r.seq + r.len + ((r.op & (kTcpSyn | kTcpFin)) ? 1 : 0);
      if (r.l4 != 0 && seqGtTest(end, me.next)) me.next = end;
      if (pick(4) == 0) other.ack = me.next;  // the other side catches up, now and then
      me.sent_ack = r.ack;
      v.push_back(r);
    }
  }
  return v;
}

void expectSameEvidence(const EvidenceReport& a, const EvidenceReport& b) {
  const auto same = [](const auto& x, const auto& y) { return std::memcmp(&x, &y, sizeof(x)) == 0; };
  EXPECT_TRUE(same(a.totals, b.totals)) << "totals: ip " << a.totals.ip_packets << "/" << b.totals.ip_packets
                                        << " retx " << a.totals.tcp_retransmissions << "/"
                                        << b.totals.tcp_retransmissions;
  ASSERT_EQ(a.directions.size(), b.directions.size());
  for (size_t i = 0; i < a.directions.size(); ++i) {
    EXPECT_EQ(a.directions[i].first, b.directions[i].first);
    EXPECT_TRUE(same(a.directions[i].second, b.directions[i].second)) << "direction " << i;
  }
  for (const auto& [x, y, what] : {std::tuple{&a.pairs, &b.pairs, "pairs"}, std::tuple{&a.flows, &b.flows, "flows"},
                                   std::tuple{&a.event_pairs, &b.event_pairs, "event pairs"}}) {
    ASSERT_EQ(x->size(), y->size()) << what;
    for (size_t i = 0; i < x->size(); ++i) EXPECT_TRUE(same((*x)[i], (*y)[i])) << what << " " << i;
  }
  ASSERT_EQ(a.bins.size(), b.bins.size());
  for (size_t i = 0; i < a.bins.size(); ++i) EXPECT_TRUE(same(a.bins[i], b.bins[i])) << "bin " << i;
  ASSERT_EQ(a.pair_bins.size(), b.pair_bins.size());
  for (size_t i = 0; i < a.pair_bins.size(); ++i) EXPECT_TRUE(same(a.pair_bins[i], b.pair_bins[i])) << "pair bin " << i;
  ASSERT_EQ(a.bursts.size(), b.bursts.size());
  for (size_t i = 0; i < a.bursts.size(); ++i) {
    EXPECT_EQ(a.bursts[i].burst.start_ns, b.bursts[i].burst.start_ns);
    EXPECT_TRUE(same(a.bursts[i].evidence, b.bursts[i].evidence)) << "burst " << i;
  }
  EXPECT_EQ(a.microbursts, b.microbursts);
  EXPECT_EQ(a.congesting, b.congesting);
  EXPECT_EQ(a.congesting_sizes_bytes.counts, b.congesting_sizes_bytes.counts);
  EXPECT_EQ(a.congesting_sizes_bytes.sum, b.congesting_sizes_bytes.sum);
  EXPECT_EQ(a.after_ns, b.after_ns);
  EXPECT_EQ(a.span_ns, b.span_ns);  // from the first record's time and the last's
  EXPECT_TRUE(same(a.pause, b.pause));
  ASSERT_EQ(a.cnp_targets.size(), b.cnp_targets.size());
  EXPECT_EQ(a.listed_dropped, b.listed_dropped);
}

TEST(TcpEvidence, RunsOfCommonSegmentsCountWhatTheGeneralStepsCount) {
  for (const uint32_t seed : {1u, 2u, 3u}) {
    for (const size_t capacity : {size_t{65536}, size_t{3}}) {  // 3: some connections untracked
      SCOPED_TRACE(::testing::Message() << "seed " << seed << " flow table " << capacity);
      const std::vector<PacketRecord> v = mixedTcpRuns(seed, 20'000);
      EngineConfig cfg;
      cfg.flow_table_capacity = capacity;
      EvidenceConfig by_run, by_segment;
      by_segment.common_segments_by_run = false;
      const Outcome a = runEngine(v, by_run, cfg);
      const Outcome b = runEngine(v, by_segment, cfg);
      expectSameEvidence(a.e(), b.e());
      // The path was taken (by 37-40% of the tracked connections' segments in this mix with every connection
      // tracked, about 22% with a table of 3: the rest are the other kinds, runs of one and each run's first), and
      // not with it off: a change that quietly stopped using
      // it would compare equal above.
      EXPECT_EQ(b.segments_by_run, 0u);
      EXPECT_GT(a.segments_by_run, (a.e().totals.ip_packets - a.e().totals.tcp_untracked_segments) / 8)
          << "of " << a.e().totals.ip_packets << " (untracked " << a.e().totals.tcp_untracked_segments << ")";
      // The mix holds what it is meant to: events of each kind, and bursts with evidence.
      EXPECT_GT(b.e().totals.tcp_retransmissions, 50u);
      EXPECT_GT(b.e().totals.tcp_out_of_order, 2u);
      EXPECT_GT(b.e().totals.tcp_lost_segments, 100u);
      EXPECT_GT(b.e().totals.tcp_ack_lost_segments, 100u);
      EXPECT_GT(b.e().totals.ce, 500u);
      EXPECT_GT(b.e().congesting, 100u);
      if (capacity == 3) {
        EXPECT_GT(b.e().totals.tcp_untracked_segments, 5000u);
      }
    }
  }
}

// A steady transfer in one run and one base bin: every segment but the first (which finds the connection new, with no
// sequence space yet) takes the run-level step; with the path off none does. The figures are the same either way.
TEST(TcpEvidence, ASteadyRunTakesTheCommonStepAfterItsFirstSegment) {
  std::vector<PacketRecord> v;
  uint32_t seq = 1000;
  for (int i = 0; i < 50; ++i) {
    v.push_back(segment(kT0 + i * kUs, true, seq, 1448, 1));
    seq += 1448;
  }
  EvidenceConfig off;
  off.common_segments_by_run = false;
  const Outcome a = runEngine(v);
  const Outcome b = runEngine(v, off);
  EXPECT_EQ(a.segments_by_run, 49u);
  EXPECT_EQ(b.segments_by_run, 0u);
  expectSameEvidence(a.e(), b.e());
  EXPECT_EQ(a.e().totals.tcp_data_segments, 50u);
  EXPECT_EQ(a.e().totals.tcp_retransmissions, 0u);
}

// The evidence of the last report interval of `v` through an engine with `cfg`, the records added `batch` at a time.
// `refused`: where given, how many runs the evidence knew to be of a refused connection from their flow's hint.
std::shared_ptr<const EvidenceReport> lastInterval(const std::vector<PacketRecord>& v, const EngineConfig& cfg,
                                                   size_t batch, uint64_t* refused = nullptr) {
  Engine engine(cfg);
  auto agg = std::make_unique<EvidenceAggregator>(EvidenceConfig{}, cfg, true);
  const EvidenceAggregator* evidence = agg.get();
  engine.subscribe(agg.get());
  engine.addAggregator(std::move(agg));
  std::shared_ptr<const EvidenceReport> last;
  engine.setIntervalSink([&](const IntervalReport& r) { last = r.evidence; });
  for (size_t i = 0; i < v.size(); i += batch) engine.add(std::span(v).subspan(i, std::min(batch, v.size() - i)));
  engine.finish();
  if (refused != nullptr) *refused = evidence->refusedByHint();
  return last;
}

// Connections forgotten while idle leave holes (tombstones) in the connection table, after which absl may make
// room for new ones by moving entries within the table; the recent-connection cache must not keep pointing where
// an entry was. 100 live connections send in order while 100 new ones come, after 200 idle ones were forgotten:
// every segment must be judged against its own connection (no retransmission, out-of-order or lost segment).
TEST(TcpEvidence, ForgettingIdleConnectionsKeepsTheLiveOnesApart) {
  EngineConfig cfg;
  cfg.flow_table_capacity = 256;  // the connection table's bound: idle ones are forgotten above half of it
  cfg.report_interval_ns = 1'000'000'000;
  cfg.baseline_ns = 60'000'000'000;
  auto seg = [](int64_t t, uint16_t port, bool forward, uint32_t seq, uint16_t len, uint32_t ack) {
    PacketRecord r = segment(t, forward, seq, len, ack);
    (forward ? r.key.src_port : r.key.dst_port) = port;
    return r;
  };
  std::vector<PacketRecord> v;
  for (uint16_t i = 0; i < 200; ++i) v.push_back(seg(kT0 + i * kUs, static_cast<uint16_t>(10000 + i), true, 1, 100, 1));
  // 62 s later: the idle ones were forgotten at an interval's close; 100 live connections send in order, round
  // after round, while 100 new ones come (one per round).
  const int64_t t1 = kT0 + 62'000 * kMs;
  std::vector<uint32_t> next(100, 1000);
  int64_t t = t1;
  for (uint16_t round = 0; round < 100; ++round) {
    for (uint16_t j = 0; j < 100; ++j) {
      v.push_back(seg(t, static_cast<uint16_t>(30000 + j), true, next[j], 1000, 1));
      next[j] += 1000;
      v.push_back(seg(t + kUs, static_cast<uint16_t>(30000 + j), false, 1, 0, next[j]));
      t += 2 * kUs;
    }
    v.push_back(seg(t, static_cast<uint16_t>(20000 + round), true, 1, 100, 1));
    t += 2 * kUs;
  }
  const auto last = lastInterval(v, cfg, v.size());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->totals.tcp_data_segments, 200u + 100 * 100 + 100);
  EXPECT_EQ(last->totals.tcp_untracked_segments, 0u);
  EXPECT_EQ(last->totals.tcp_retransmissions, 0u);
  EXPECT_EQ(last->totals.tcp_out_of_order, 0u);
  EXPECT_EQ(last->totals.tcp_lost_segments, 0u);
  EXPECT_EQ(last->totals.tcp_ack_lost_segments, 0u);
}

// A connection is idle from its last segment, whichever way it was analysed: one whose last segments are common ones
// (in order, in a bin another connection opened: the run-level path) is kept at a close 60 s after it, though its
// segment before was more than 60 s before the close; its data sent again after that is a retransmission.
TEST(TcpEvidence, AConnectionIsIdleFromItsLastSegmentEvenACommonOne) {
  EngineConfig cfg;
  cfg.flow_table_capacity = 4;  // idle connections are forgotten with more than 2
  cfg.report_interval_ns = 1'000'000'000;
  cfg.baseline_ns = 60'000'000'000;
  auto seg = [](int64_t t, uint16_t port, uint32_t seq) {
    PacketRecord r = segment(t, true, seq, 1000, 1);
    r.key.src_port = port;
    return r;
  };
  const std::vector<PacketRecord> v = {
      seg(kT0 + 1000 * kMs, 30003, 1000),             // C, idle from then on
      seg(kT0 + 1500 * kMs, 30001, 1000),             // A, in a bin of its own
      seg(kT0 + 2000 * kMs + 10 * kUs, 30002, 1),     // B opens the bin
      seg(kT0 + 2000 * kMs + 20 * kUs, 30001, 2000),  // A's common segments, a run of two: 60 s before the
      seg(kT0 + 2000 * kMs + 30 * kUs, 30001, 3000),  // close at 62 s
      seg(kT0 + 62'500 * kMs, 30001, 1000),           // A sends its first data again
  };
  const auto last = lastInterval(v, cfg, v.size());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->totals.tcp_retransmissions, 1u);
}

// With the pair and flow tables on, the engine's flow table keeps each flow's TCP connection for the evidence (a
// FlowHint), so that thousands of interleaved connections are not looked up again at every run. The two tests
// below make the connection table move or drop its entries while hints point at them; each connection numbers its
// bytes in a space of its own, so that a segment judged by a stale hint would be a retransmission or a lost
// segment. The truth is none, and every figure equals that of the same records without the tables (no hints). The
// records go in batches of 64, as a file's reader hands them on: a hint taken before the batch's last new flow is
// not handed on. (The engine's own test, EngineAggregatorTest.AFlowsHintComesBack..., checks which runs get one.)
class FlowHints : public ::testing::Test {
 protected:
  // Round after round, one segment of each connection in turn (its port in `ports`), starting at `t`; with
  // `acks`, each answered by the other side. A connection new to `next` starts its sequence afresh.
  // `burst` segments of a connection back to back at each turn (a flow run of that many).
  void rounds(int64_t t, const std::vector<uint16_t>& ports, int n, bool acks, uint16_t len = 1000, int burst = 1) {
    for (int round = 0; round < n; ++round) {
      for (uint16_t p : ports) {
        if (!next.count(p)) next[p] = 1 + (p - 10000u) * 1'000'000u;
        for (int b = 1; b < burst; ++b, t += 100) {
          v.push_back(port(segment(t, true, next[p], len, 1), p));
          next[p] += len;
        }
        v.push_back(port(segment(t, true, next[p], len, 1), p));
        next[p] += len;
        if (acks) v.push_back(port(segment(t + kUs, false, 1, 0, next[p]), p));
        t += 2 * kUs;
      }
    }
  }
  static PacketRecord port(PacketRecord r, uint16_t p) {
    (r.key.src_port == 5201 ? r.key.dst_port : r.key.src_port) = p;
    return r;
  }
  void check(size_t flow_table_capacity, uint64_t data_segments) {
    const EvidenceCounts h = compare(flow_table_capacity);
    EXPECT_EQ(h.tcp_data_segments, data_segments);
    EXPECT_EQ(h.tcp_untracked_segments, 0u);
  }
  // The totals with the tables (hints), after checking that the truth holds (no retransmission, out-of-order or
  // lost segment) and that every figure equals that without them. `refused`: where given, the runs whose refusal
  // came from their hint.
  EvidenceCounts compare(size_t flow_table_capacity, uint64_t* refused = nullptr) {
    auto run = [&](bool tables) {
      EngineConfig cfg;
      cfg.flow_table_capacity = flow_table_capacity;
      cfg.report_interval_ns = 1'000'000'000;
      cfg.baseline_ns = 60'000'000'000;
      cfg.pairs_and_flows = tables;
      return lastInterval(v, cfg, 64, tables ? refused : nullptr);
    };
    const auto hinted = run(true), plain = run(false);
    if (!hinted || !plain) {
      ADD_FAILURE() << "no interval closed";
      return {};
    }
    const EvidenceCounts& h = hinted->totals;
    EXPECT_EQ(h.tcp_retransmissions, 0u);
    EXPECT_EQ(h.tcp_out_of_order, 0u);
    EXPECT_EQ(h.tcp_lost_segments, 0u);
    EXPECT_EQ(h.tcp_ack_lost_segments, 0u);
    const EvidenceCounts& p = plain->totals;
    for (auto f :
         {&EvidenceCounts::ip_packets, &EvidenceCounts::tcp_data_segments, &EvidenceCounts::tcp_retransmissions,
          &EvidenceCounts::tcp_out_of_order, &EvidenceCounts::tcp_untracked_segments,
          &EvidenceCounts::tcp_lost_segments, &EvidenceCounts::tcp_ack_lost_segments, &EvidenceCounts::tcp_holes_filled,
          &EvidenceCounts::tcp_holes_acked_unseen, &EvidenceCounts::tcp_bytes_acked_unseen,
          &EvidenceCounts::tcp_holes_untracked}) {
      EXPECT_EQ(h.*f, p.*f);
    }
    return h;
  }
  std::vector<PacketRecord> v;
  std::map<uint16_t, uint32_t> next;  // per connection's port: its next sequence number
};

// 300 connections come in one round (the connection table grows past 255, moving its entries, while the hints of
// the flows met before point into it), then three more rounds; each segment acknowledged by the other side, so that
// a direction judged by a stale copy of its connection acknowledges data the copy never saw.
TEST_F(FlowHints, AFlowsHintFollowsItsConnectionWhenTheTableGrows) {
  std::vector<uint16_t> ports;
  for (uint16_t i = 0; i < 300; ++i) ports.push_back(static_cast<uint16_t>(10000 + i));
  rounds(kT0, ports, 4, /*acks=*/true);
  check(65'536, 300 * 4);
}

// 200 connections (one direction each, so that the flow table, bounded as the connection table, keeps every flow
// and its hint) send for five rounds, fall idle and are forgotten a minute later (the table is over half its bound
// of 256); then half of them start again from their first byte (a new connection on the same ports) beside 50 new
// ones. A flow's hint to its forgotten connection would call the new start a retransmission.
TEST_F(FlowHints, AFlowsHintIsStaleOnceItsConnectionIsForgotten) {
  std::vector<uint16_t> first, again;
  for (uint16_t i = 0; i < 200; ++i) first.push_back(static_cast<uint16_t>(10000 + i));
  rounds(kT0, first, 5, /*acks=*/false);
  next.clear();
  for (uint16_t i = 0; i < 100; ++i) again.push_back(static_cast<uint16_t>(10000 + i));
  for (uint16_t i = 0; i < 50; ++i) again.push_back(static_cast<uint16_t>(12000 + i));
  rounds(kT0 + 62'000 * kMs, again, 5, /*acks=*/false);
  check(256, 200 * 5 + 150 * 5);
}

// A full connection table refuses new connections (their segments untracked), and a refusal is kept in the flow's
// hint until idle connections are forgotten. 300 connections (one direction each) against a bound of 256: the last
// 44 to come are refused, round after round. They send two larger segments at each turn (a run of two, which takes
// the evidence's run-level path), so that the flow table (bounded alike, evicting the lighter half of its entries
// when full) keeps their entries and hints. A minute later every connection has been forgotten, and the 44 go on:
// now there is room, and they are tracked from their next segment. A refusal kept past the forgetting would leave
// them untracked, which the same records without the tables (no hints) do not.
TEST_F(FlowHints, AConnectionsRefusalHoldsUntilIdleConnectionsAreForgotten) {
  std::vector<uint16_t> light, heavy;
  for (uint16_t i = 0; i < 256; ++i) light.push_back(static_cast<uint16_t>(10000 + i));
  for (uint16_t i = 256; i < 300; ++i) heavy.push_back(static_cast<uint16_t>(10000 + i));
  for (int round = 0; round < 5; ++round) {
    rounds(kT0 + round * kMs, light, 1, /*acks=*/false);
    rounds(kT0 + round * kMs + 600 * kUs, heavy, 1, /*acks=*/false, /*len=*/1400, /*burst=*/2);
  }
  rounds(kT0 + 62'000 * kMs, heavy, 5, /*acks=*/false, /*len=*/1400, /*burst=*/2);
  uint64_t refused = 0;
  const EvidenceCounts h = compare(256, &refused);
  EXPECT_EQ(h.tcp_data_segments, 256u * 5 + 44 * 2 * 5 * 2);
  EXPECT_EQ(h.tcp_untracked_segments, 44u * 2 * 5);  // the first five rounds' refused segments, and no later one
  EXPECT_GT(refused, 44u);                           // most of their runs known so from their hint
}

TEST(TcpEvidence, ASegmentSentAgainLaterIsARetransmissionAndAHoleFilledSoonIsOutOfOrder) {
  std::vector<PacketRecord> v;
  // 1000..2448 and 3896.. arrive; 2448 (the hole) arrives 100 us later: out of order (3 ms threshold).
  v.push_back(segment(kT0, true, 1000, 1448, 1));
  v.push_back(segment(kT0 + 10 * kUs, true, 3896, 1448, 1));
  v.push_back(segment(kT0 + 110 * kUs, true, 2448, 1448, 1));
  // 10 ms later 1000 again, without duplicate ACKs: a retransmission (too late for out-of-order).
  v.push_back(segment(kT0 + 10 * kMs, true, 1000, 1448, 1));
  Outcome r = runEngine(v);
  EXPECT_EQ(r.e().totals.tcp_out_of_order, 1u);
  EXPECT_EQ(r.e().totals.tcp_retransmissions, 1u);
}

// What a host pair or a flow is charged with, given the totals: the per-key maps count 9 of EvidenceCounts' fields
// (evidence.cc KeyEvents), and a pair not ECE and out-of-order segments.
EvidenceCounts perKey(EvidenceCounts c, bool pair) {
  c.ip_packets = c.ect = c.tcp_cwr = c.tcp_data_segments = c.tcp_untracked_segments = 0;
  c.tcp_lost_segments = c.tcp_ack_lost_segments = c.tcp_holes_filled = c.tcp_holes_acked_unseen = 0;
  c.tcp_bytes_acked_unseen = c.tcp_holes_untracked = c.roce_packets = c.roce_messages = 0;
  c.roce_message_bytes = c.pause_frames = 0;
  if (pair) c.tcp_ece = c.tcp_out_of_order = 0;
  return c;
}
EvidenceCounts sum(const std::vector<KeyedEvidence>& keyed) {
  EvidenceCounts c;
  for (const KeyedEvidence& k : keyed) c.merge(k.counts);
  return c;
}
// Every listed key's counts summed equal `want`, field by field (each field's total distinct, so that a field
// dropped or counted as another shows).
void expectKeysCarry(const std::vector<KeyedEvidence>& keyed, const EvidenceCounts& want, const char* what) {
  const EvidenceCounts got = sum(keyed);
  EXPECT_EQ(std::memcmp(&got, &want, sizeof(got)), 0)
      << what << ": ce " << got.ce << "/" << want.ce << " ece " << got.tcp_ece << "/" << want.tcp_ece << " ooo "
      << got.tcp_out_of_order << "/" << want.tcp_out_of_order << " retx " << got.tcp_retransmissions << "/"
      << want.tcp_retransmissions << " cnp " << got.cnp << "/" << want.cnp << " nak " << got.nak_psn_sequence_error
      << "," << got.nak_rnr << "," << got.nak_other << "/" << want.nak_psn_sequence_error << "," << want.nak_rnr << ","
      << want.nak_other << " resent " << got.roce_resent << "/" << want.roce_resent;
}

// The one connection's events are all its flow's and its pair's, but for ECE and out-of-order segments, which are
// counted per flow only; everything else per key stays zero. Each count differs from the others.
TEST(TcpEvidence, AFlowAndItsPairCarryTheirConnectionsEvents) {
  std::vector<PacketRecord> v;
  auto ce = [](PacketRecord r) {
    r.l4 |= 3 << 2;  // ECN CE
    return r;
  };
  v.push_back(ce(segment(kT0, true, 1000, 1448, 1)));
  v.push_back(ce(segment(kT0 + 10 * kUs, true, 3896, 1448, 1)));
  v.push_back(ce(segment(kT0 + 110 * kUs, true, 2448, 1448, 1)));                 // out of order
  v.push_back(segment(kT0 + 200 * kUs, true, 5344, 1448, 1, kTcpAck | kTcpEce));  // ECE
  v.push_back(segment(kT0 + 300 * kUs, true, 6792, 1448, 1, kTcpAck | kTcpEce));  // ECE
  for (uint32_t i = 0; i < 4; ++i) {                                              // four retransmissions
    v.push_back(segment(kT0 + (10 + i) * kMs, true, 1000 + 1448 * i, 1448, 1));
  }
  Outcome r = runEngine(v);
  const EvidenceCounts& t = r.e().totals;
  ASSERT_EQ(t.ce, 3u);
  ASSERT_EQ(t.tcp_ece, 2u);
  ASSERT_EQ(t.tcp_out_of_order, 1u);
  ASSERT_EQ(t.tcp_retransmissions, 4u);
  ASSERT_EQ(r.e().flows.size(), 1u);
  ASSERT_EQ(r.e().pairs.size(), 1u);
  EXPECT_EQ(r.e().flows[0].key, tcpKey(true));
  EXPECT_EQ(r.e().pairs[0].key, tcpKey(true).pairKey());
  expectKeysCarry(r.e().flows, perKey(t, false), "flow");
  expectKeysCarry(r.e().pairs, perKey(t, true), "pair");
  // The pairs with events are ranked by the same figure the report gives.
  ASSERT_EQ(r.e().event_pairs.size(), 1u);
  EXPECT_EQ(r.e().event_pairs[0].counts.events(), t.ce + t.tcp_retransmissions);
}

// Runs of two flows' events (one key a run, one batch), one of them crossing a base bin, the other flow's runs
// between: each bin lists each pair's events of that bin (the per-pair bins that a training job's steps sum), and
// each flow and host pair carries its own events, all counted here packet by packet. The aggregator finds a run's
// flow and pair entries at its first event and keeps them for the run (a place in a bin's list kept past its bin,
// or entries kept past their run, would each fail here).
TEST(TcpEvidence, ARunOfEventsAcrossBinsListsEachBinsPairs) {
  auto ce = [](int64_t t, bool other, uint32_t seq) {
    PacketRecord r = segment(t, true, seq, 100, 1);
    if (other) r.key.src = {10, 0, 0, 9};
    r.l4 |= 3 << 2;  // ECN CE: an event on every packet
    return r;
  };
  // Base bins of 100 us: A A B A | A A B B | A A; the run of A from 30 to 120 us crosses the first boundary.
  const std::vector<std::pair<int64_t, bool>> at = {{0, false},   {10, false}, {20, true},  {30, false},  {110, false},
                                                    {120, false}, {130, true}, {140, true}, {250, false}, {260, false}};
  std::vector<PacketRecord> v;
  uint32_t seq[2] = {1000, 1000};
  for (const auto& [us, other] : at) {
    v.push_back(ce(kT0 + us * kUs, other, seq[other]));
    seq[other] += 100;
  }
  std::map<std::pair<int64_t, uint8_t>, uint64_t> want;
  const int64_t bin = EngineConfig{}.base_bin_ns;
  for (const PacketRecord& r : v) ++want[{r.ts_ns - r.ts_ns % bin, r.key.pairKey().src[3]}];
  Outcome r = runEngine(v);
  std::map<std::pair<int64_t, uint8_t>, uint64_t> got;
  for (const PairBinEvidence& p : r.e().pair_bins) got[{p.start_ns, p.pair.src[3]}] += p.evidence.n[kSignalCe];
  EXPECT_EQ(got, want);
  EXPECT_EQ(r.e().totals.ce, v.size());
  std::map<uint8_t, uint64_t> per_flow, per_pair, flows_got, pairs_got;
  for (const PacketRecord& p : v) {
    ++per_flow[p.key.src[3]];
    ++per_pair[p.key.pairKey().src[3]];
  }
  for (const KeyedEvidence& k : r.e().flows) flows_got[k.key.src[3]] += k.counts.ce;
  for (const KeyedEvidence& k : r.e().pairs) pairs_got[k.key.src[3]] += k.counts.ce;
  EXPECT_EQ(flows_got, per_flow);
  EXPECT_EQ(pairs_got, per_pair);
}

// The report lists the host pairs with events, most first and among equals by key, at most 4096 of them: 5000
// pairs, each resending its one segment 1 to 5 times (each resend a retransmission), against the list sorted here.
TEST(TcpEvidence, EventPairsListTheMostFirstUpToTheirBound) {
  constexpr int kPairs = 5000, kListed = 4096;
  auto pairSegment = [](int64_t t, int p) {
    PacketRecord r = segment(t, true, 1000, 100, 1);
    r.key.src = {10, 1, static_cast<uint8_t>(p >> 8), static_cast<uint8_t>(p)};
    return r;
  };
  auto resends = [](int p) { return 1 + (p * 7919) % 5; };
  std::vector<PacketRecord> v;
  for (int p = 0; p < kPairs; ++p) v.push_back(pairSegment(kT0 + p * kUs, p));
  for (int round = 0; round < 5; ++round) {
    for (int p = 0; p < kPairs; ++p) {
      if (resends(p) > round) v.push_back(pairSegment(kT0 + (round + 1) * 10 * kMs + p * kUs, p));
    }
  }
  std::vector<std::pair<uint64_t, FlowKey>> expected;
  for (int p = 0; p < kPairs; ++p) expected.emplace_back(resends(p), pairSegment(0, p).key.pairKey());
  std::sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : std::memcmp(&a.second, &b.second, sizeof(FlowKey)) < 0;
  });
  Outcome r = runEngine(v);
  ASSERT_EQ(r.e().totals.tcp_retransmissions, static_cast<uint64_t>(v.size() - kPairs));
  ASSERT_EQ(r.e().event_pairs.size(), static_cast<size_t>(kListed));
  for (int i = 0; i < kListed; ++i) {
    const KeyedEvidence& got = r.e().event_pairs[i];
    ASSERT_EQ(got.key, expected[i].second) << "at " << i;
    ASSERT_EQ(got.counts.tcp_retransmissions, expected[i].first) << "at " << i;
  }
}

TEST(TcpEvidence, ThreeDuplicateAcksMakeTheNextSegmentAtTheirNumberAFastRetransmission) {
  std::vector<PacketRecord> v;
  v.push_back(segment(kT0, true, 1000, 1000, 1));
  v.push_back(segment(kT0 + 1 * kUs, true, 2000, 1000, 1));  // lost past the mirror
  v.push_back(segment(kT0 + 2 * kUs, true, 3000, 1000, 1));
  v.push_back(segment(kT0 + 3 * kUs, true, 4000, 1000, 1));
  v.push_back(segment(kT0 + 10 * kUs, false, 1, 0, 2000));  // ACK, then duplicates of it
  v.push_back(segment(kT0 + 11 * kUs, false, 1, 0, 2000));
  v.push_back(segment(kT0 + 12 * kUs, false, 1, 0, 2000));
  v.push_back(segment(kT0 + 13 * kUs, false, 1, 0, 2000));
  // Within the out-of-order window, but fast retransmission comes first in Wireshark's order.
  v.push_back(segment(kT0 + 20 * kUs, true, 2000, 1000, 1));
  Outcome r = runEngine(v);
  EXPECT_EQ(r.e().totals.tcp_retransmissions, 1u);
  EXPECT_EQ(r.e().totals.tcp_out_of_order, 0u);
}

TEST(TcpEvidence, DataTheOtherSideHadAcknowledgedIsASpuriousRetransmissionEvenWithinTheWindow) {
  std::vector<PacketRecord> v;
  v.push_back(segment(kT0, true, 1000, 1000, 1));
  v.push_back(segment(kT0 + 1 * kUs, true, 2000, 1000, 1));
  v.push_back(segment(kT0 + 5 * kUs, false, 1, 100, 3000));  // data the other way carries the ACK
  v.push_back(segment(kT0 + 9 * kUs, true, 1000, 1000, 1));
  Outcome r = runEngine(v);
  EXPECT_EQ(r.e().totals.tcp_retransmissions, 1u);
  EXPECT_EQ(r.e().totals.tcp_out_of_order, 0u);
}

TEST(TcpEvidence, AKeepAliveIsNotARetransmission) {
  std::vector<PacketRecord> v;
  v.push_back(segment(kT0, true, 1000, 1000, 1));
  v.push_back(segment(kT0 + 5 * 1000 * kMs, true, 1999, 1, 1));
  Outcome r = runEngine(v);
  EXPECT_EQ(r.e().totals.tcp_retransmissions, 0u);
}

TEST(TcpEvidence, TheHandshakeRttIsTheOutOfOrderThreshold) {
  std::vector<PacketRecord> v;
  v.push_back(segment(kT0, true, 999, 0, 0, kTcpSyn));
  v.push_back(segment(kT0 + 20 * kUs, false, 0, 0, 1000, kTcpSyn | kTcpAck));
  v.push_back(segment(kT0 + 50 * kUs, true, 1000, 0, 1));  // first RTT 50 us
  v.push_back(segment(kT0 + 60 * kUs, true, 1000, 1000, 1));
  v.push_back(segment(kT0 + 61 * kUs, true, 3000, 1000, 1));
  v.push_back(segment(kT0 + 300 * kUs, true, 2000, 1000, 1));  // 239 us after: beyond 50 us, a retransmission
  Outcome r = runEngine(v);
  EXPECT_EQ(r.e().totals.tcp_retransmissions, 1u);
  EXPECT_EQ(r.e().totals.tcp_out_of_order, 0u);
}

PacketRecord roce(int64_t t, uint8_t opcode, uint32_t qp, uint32_t psn, uint16_t len, uint8_t syndrome = 0, int src = 1,
                  int dst = 2) {
  PacketRecord r;
  r.ts_ns = t;
  r.wire_len = 78u + len;
  r.key.family = 4;
  r.key.proto = 17;
  r.key.src = {10, 0, 0, static_cast<uint8_t>(src)};
  r.key.dst = {10, 0, 0, static_cast<uint8_t>(dst)};
  r.key.kind = static_cast<uint8_t>(FlowKind::kRoceQp);
  r.key.src_port = static_cast<uint16_t>(qp >> 16);
  r.key.dst_port = static_cast<uint16_t>(qp & 0xFFFF);
  r.l4 = static_cast<uint8_t>(L4Kind::kRoce) | (2 << 2);  // ECT(0)
  r.op = opcode;
  r.len = len;
  r.seq = (psn & 0xFFFFFF) | uint32_t{syndrome} << 24;
  return r;
}

TEST(RoceEvidence, GoBackNNaksCnpsAndMessages) {
  std::vector<PacketRecord> v;
  int64_t t = kT0;
  // A 4-packet WRITE (first, middle, middle, last) from PSN 0xFFFFFE: wraps at 2^24.
  const uint8_t ops[] = {0x06, 0x07, 0x07, 0x08};
  for (int i = 0; i < 4; ++i) v.push_back(roce(t += kUs, ops[i], 0x0000c1, 0xFFFFFE + i, 1024));
  // The receiver NAKs PSN 0 (sequence error), the sender goes back: PSNs 0 and 1 again.
  v.push_back(roce(t += kUs, 0x11, 0x0000a7, 0, 0, 0x60, 2, 1));
  v.push_back(roce(t += kUs, 0x07, 0x0000c1, 0, 1024));
  v.push_back(roce(t += kUs, 0x08, 0x0000c1, 1, 1024));
  // A CNP toward the sender's QP, an RNR NAK, an ACK, another NAK code, a one-packet SEND.
  v.push_back(roce(t += kUs, 0x81, 0x0000a7, 0, 0, 0, 2, 1));
  v.push_back(roce(t += kUs, 0x11, 0x0000a7, 2, 0, 0x20 | 3, 2, 1));
  v.push_back(roce(t += kUs, 0x11, 0x0000a7, 3, 0, 0x1F, 2, 1));
  v.push_back(roce(t += kUs, 0x11, 0x0000a7, 4, 0, 0x60 | 2, 2, 1));
  v.push_back(roce(t += kUs, 0x04, 0x0000c1, 2, 300));
  Outcome r = runEngine(v);
  const EvidenceCounts& c = r.e().totals;
  EXPECT_EQ(c.roce_packets, v.size());
  EXPECT_EQ(c.roce_resent, 2u);
  EXPECT_EQ(c.nak_psn_sequence_error, 1u);
  EXPECT_EQ(c.nak_rnr, 1u);
  EXPECT_EQ(c.nak_other, 1u);
  EXPECT_EQ(c.cnp, 1u);
  EXPECT_EQ(c.roce_messages, 2u);                    // the WRITE and the SEND
  EXPECT_EQ(c.roce_message_bytes, 4u * 1024 + 300);  // resent packets not counted twice
  EXPECT_EQ(c.ect, v.size());
  ASSERT_EQ(r.e().cnp_targets.size(), 1u);
  EXPECT_EQ(r.e().cnp_targets[0].key.qp(), 0x0000a7u);
  EXPECT_EQ(addressToString(r.e().cnp_targets[0].key, false), "10.0.0.1");
  EXPECT_EQ(r.e().cnp_targets[0].cnp, 1u);
}

// A queue pair's and a host pair's RoCE events, each of a different count: resent 2, sequence-error NAKs 1, RNR
// NAKs 3, other NAKs 4, CNPs 5. Summed over the listed queue pairs and host pairs, they are the totals.
TEST(RoceEvidence, QueuePairsAndHostPairsCarryTheirEvents) {
  std::vector<PacketRecord> v;
  int64_t t = kT0;
  const uint8_t ops[] = {0x06, 0x07, 0x07, 0x08};
  for (int i = 0; i < 4; ++i) v.push_back(roce(t += kUs, ops[i], 0x0000c1, 10 + i, 1024));
  v.push_back(roce(t += kUs, 0x11, 0x0000a7, 10, 0, 0x60, 2, 1));  // sequence error: PSNs 10 and 11 again
  v.push_back(roce(t += kUs, 0x07, 0x0000c1, 10, 1024));
  v.push_back(roce(t += kUs, 0x08, 0x0000c1, 11, 1024));
  uint32_t psn = 20;
  for (int i = 0; i < 3; ++i) v.push_back(roce(t += kUs, 0x11, 0x0000a7, psn++, 0, 0x20 | 3, 2, 1));  // RNR
  for (int i = 0; i < 4; ++i) v.push_back(roce(t += kUs, 0x11, 0x0000a7, psn++, 0, 0x60 | 2, 2, 1));  // other
  for (int i = 0; i < 5; ++i) v.push_back(roce(t += kUs, 0x81, 0x0000a7, 0, 0, 0, 2, 1));             // CNP
  Outcome r = runEngine(v);
  const EvidenceCounts& c = r.e().totals;
  ASSERT_EQ(c.roce_resent, 2u);
  ASSERT_EQ(c.nak_psn_sequence_error, 1u);
  ASSERT_EQ(c.nak_rnr, 3u);
  ASSERT_EQ(c.nak_other, 4u);
  ASSERT_EQ(c.cnp, 5u);
  ASSERT_FALSE(r.e().flows.empty());
  ASSERT_FALSE(r.e().pairs.empty());
  expectKeysCarry(r.e().flows, perKey(c, false), "queue pairs");
  expectKeysCarry(r.e().pairs, perKey(c, true), "host pairs");
}

PacketRecord pfc(int64_t t, uint8_t enable, std::initializer_list<uint16_t> quanta) {
  PacketRecord r;
  r.ts_ns = t;
  r.wire_len = 60;
  r.l4 = static_cast<uint8_t>(L4Kind::kMacControl);
  r.op = kMacPfc;
  r.seq = enable;
  int p = 0;
  for (uint16_t q : quanta) {
    std::memcpy(r.key.src.data() + 2 * p, &q, 2);
    ++p;
  }
  return r;
}

TEST(PauseEvidence, PausedTimeFollowsQuantaAtLinkSpeedAndResumes) {
  EngineConfig cfg;
  cfg.link_capacity_bps = 100e9;  // a quantum is 512 bit times: 5.12 ns
  std::vector<PacketRecord> v;
  v.push_back(pfc(kT0, 0x08, {0, 0, 0, 10000}));             // prio 3 paused 51.2 us
  v.push_back(pfc(kT0 + 20 * kUs, 0x08, {0, 0, 0, 10000}));  // refreshed: until 71.2 us
  v.push_back(pfc(kT0 + 30 * kUs, 0x09, {65535, 0, 0, 0}));  // prio 3 resumes at 30 us; prio 0 paused
  PacketRecord pause;
  pause.ts_ns = kT0 + 40 * kUs;
  pause.wire_len = 60;
  pause.l4 = static_cast<uint8_t>(L4Kind::kMacControl);
  pause.op = kMacPause;
  pause.len = 100;  // 512 ns
  v.push_back(pause);
  v.push_back(segment(kT0 + 1 * kMs, true, 1, 100, 1));  // the trace runs on to 1 ms
  Outcome r = runEngine(v, {}, cfg);
  const auto& p = r.e().pause;
  EXPECT_EQ(p[3].frames, 3u);
  EXPECT_EQ(p[3].quanta, 20000u);
  EXPECT_EQ(p[3].paused_ns, 30 * kUs);
  EXPECT_EQ(p[0].frames, 1u);
  EXPECT_EQ(p[0].paused_ns, static_cast<int64_t>(65535 * 5.12));
  EXPECT_EQ(p[8].frames, 1u);
  EXPECT_EQ(p[8].paused_ns, 512);
  EXPECT_EQ(r.e().totals.pause_frames, 4u);
}

// A burst at 10 Gb/s of 60 x 1500 B in 72 us (a microburst at 50% of capacity), with a CE packet at `ce_at`.
std::vector<PacketRecord> burstWithCe(int64_t ce_at, bool same_hosts = true) {
  std::vector<PacketRecord> v;
  for (int i = 0; i < 60; ++i) {
    PacketRecord r = segment(kT0 + i * 1200, true, 1000 + 1446u * static_cast<uint32_t>(i), 1446, 1);
    r.wire_len = 1500;
    v.push_back(r);
  }
  PacketRecord ce = segment(kT0 + ce_at, false, 1, 0, 2000);
  ce.l4 |= 3 << 2;
  if (!same_hosts) {  // a CE mark between two hosts the burst does not involve
    ce.key.src[3] = 7;
    ce.key.dst[3] = 8;
  }
  v.push_back(ce);
  v.push_back(segment(kT0 + 50 * kMs, false, 1, 0, 3000));
  return v;
}

TEST(CongestingBursts, EvidenceWithinOneTauAfterTowardItsHostsMakesABurstCongesting) {
  EngineConfig cfg;
  cfg.link_capacity_bps = 10e9;
  // The burst ends at about 122 us (its last packet leaves the 100 us window); CE at 150 us is within τ.
  Outcome near = runEngine(burstWithCe(150 * kUs), {}, cfg);
  ASSERT_EQ(near.result.port.microbursts->count, 1u);
  EXPECT_EQ(near.e().microbursts, 1u);
  EXPECT_EQ(near.e().congesting, 1u);
  ASSERT_EQ(near.e().bursts.size(), 1u);
  EXPECT_EQ(near.e().bursts[0].evidence.n[kSignalCe], 1u);
  EXPECT_EQ(near.e().congesting_sizes_bytes.count, 1u);
  ASSERT_EQ(near.e().bins.size(), 1u);
  EXPECT_EQ(near.e().bins[0].start_ns, kT0 + 100 * kUs);
  EXPECT_EQ(near.e().after_ns, cfg.microburst_tau_ns);

  // Bin precision: the burst's hosts are those of every packet in the bins it spans (0-200 us), so the
  // foreign CE mark goes in the next bin, still within end + τ.
  Outcome other = runEngine(burstWithCe(210 * kUs, /*same_hosts=*/false), {}, cfg);
  EXPECT_EQ(runEngine(burstWithCe(210 * kUs), {}, cfg).e().congesting, 1u);
  EXPECT_EQ(other.e().microbursts, 1u);
  EXPECT_EQ(other.e().congesting, 0u);  // evidence, but not toward or from the burst's hosts
  EXPECT_EQ(other.e().totals.ce, 1u);

  Outcome far = runEngine(burstWithCe(600 * kUs), {}, cfg);  // ~0.5 ms after: beyond τ
  EXPECT_EQ(far.e().microbursts, 1u);
  EXPECT_EQ(far.e().congesting, 0u);
  EvidenceConfig wide;
  wide.after_ns = 1 * kMs;
  EXPECT_EQ(runEngine(burstWithCe(600 * kUs), wide, cfg).e().congesting, 1u);
  EXPECT_EQ(runEngine(burstWithCe(5 * kMs), wide, cfg).e().congesting, 0u);
}

TEST(CongestingBursts, LiveIntervalsCountWhatTheWholeRunCounts) {
  EngineConfig cfg;
  cfg.link_capacity_bps = 10e9;
  cfg.report_interval_ns = 1'000'000'000;
  cfg.baseline_ns = 10'000'000'000;
  std::vector<PacketRecord> v;
  for (int k = 0; k < 5; ++k) {
    for (PacketRecord r : burstWithCe(k % 2 ? 150 * kUs : 5 * kMs)) {
      r.ts_ns += k * 300 * kMs;
      r.seq += static_cast<uint32_t>(k) * 100000;
      r.ack += static_cast<uint32_t>(k) * 100000;
      v.push_back(r);
    }
  }
  Engine engine(cfg);
  auto agg = std::make_unique<EvidenceAggregator>(EvidenceConfig{}, cfg, true);
  engine.subscribe(agg.get());
  engine.addAggregator(std::move(agg));
  uint64_t congesting = 0, bursts = 0;
  std::shared_ptr<const EvidenceReport> last;
  engine.setIntervalSink([&](const IntervalReport& r) {
    ASSERT_TRUE(r.evidence);
    congesting += r.evidence->interval_congesting;
    bursts += r.evidence->interval_microbursts;
    last = r.evidence;
  });
  engine.add(v);
  engine.finish();
  EXPECT_EQ(bursts, 5u);
  EXPECT_EQ(congesting, 2u);
  EXPECT_EQ(last->congesting, 2u);
  EXPECT_EQ(last->totals.ce, 5u);
}

TEST(DecodeEvidence, TcpRoceAndPfcFieldsComeOffTheWire) {
  using testing::FrameBuilder;
  using testing::ip4;
  Decoder d;
  PacketRecord r;
  FrameBuilder t;
  t.eth(0x0800)
      .ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 6, 20 + 100)
      .tcp(1, 2, 0xDEADBEEF, 77, 0x18 | 0x40)
      .payload(100);
  t.bytes[15] = 0x03;  // TOS: ECN CE
  ASSERT_EQ(d.decode(t.bytes, static_cast<uint32_t>(t.bytes.size()), &r), DecodeError::kNone);
  EXPECT_EQ(r.l4Kind(), L4Kind::kTcp);
  EXPECT_EQ(r.ecn(), 3);
  EXPECT_EQ(r.op, 0x58);
  EXPECT_EQ(r.len, 100);
  EXPECT_EQ(r.seq, 0xDEADBEEFu);
  EXPECT_EQ(r.ack, 77u);

  FrameBuilder v6;  // RoCEv2 over IPv6: an RDMA WRITE first with RETH, payload 256, pad 0, ICRC
  v6.eth(0x86DD).ipv6(1, 2, 17, 8 + 12 + 16 + 256 + 4).ports(50000, 4791, 8 + 12 + 16 + 256 + 4);
  v6.u8(0x06).u8(0).u16(0xFFFF).u32(0x00ABCDEF).u32(0x80000123).zeros(16).payload(256 + 4);
  v6.bytes[15] = 0x10;  // traffic class 0x01: ECT(1)
  ASSERT_EQ(d.decode(v6.bytes, static_cast<uint32_t>(v6.bytes.size()), &r), DecodeError::kNone);
  EXPECT_EQ(r.l4Kind(), L4Kind::kRoce);
  EXPECT_EQ(r.ecn(), 1);
  EXPECT_EQ(r.op, 0x06);
  EXPECT_EQ(r.key.qp(), 0xABCDEFu);
  EXPECT_EQ(static_cast<FlowKind>(r.key.kind), FlowKind::kRoceQp);
  EXPECT_EQ(r.psn(), 0x123u);
  EXPECT_EQ(r.len, 256);
  EXPECT_EQ(flowToString(r.key), "fd00::1 > fd00::2 qp 0xabcdef rocev2");
  // The same with the UDP source port changed is the same flow: the QP, not the 5-tuple.
  PacketRecord again;
  v6.bytes[54] = 0x11;
  ASSERT_EQ(d.decode(v6.bytes, static_cast<uint32_t>(v6.bytes.size()), &again), DecodeError::kNone);
  EXPECT_EQ(again.key, r.key);

  FrameBuilder nak;  // an ACK opcode with a NAK syndrome
  nak.eth(0x0800).ipv4(ip4(10, 0, 0, 2), ip4(10, 0, 0, 1), 17, 8 + 12 + 4 + 4).ports(1, 4791, 8 + 12 + 4 + 4);
  nak.u8(0x11).u8(0).u16(0xFFFF).u32(0x000007).u32(0x000042).u32(0x60000005).zeros(4);
  ASSERT_EQ(d.decode(nak.bytes, static_cast<uint32_t>(nak.bytes.size()), &r), DecodeError::kNone);
  EXPECT_EQ(r.syndrome(), 0x60);
  EXPECT_EQ(r.psn(), 0x42u);
  EXPECT_EQ(r.len, 0);
  // The AETH cut off (erase, not a shrinking resize: gcc 12 at -O1 with ASan cannot prove resize's growing
  // branch dead and warns, stringop-overflow).
  nak.bytes.erase(nak.bytes.end() - 6, nak.bytes.end());
  EXPECT_EQ(d.decode(nak.bytes, 80, &r), DecodeError::kTruncatedRoceExtension);

  FrameBuilder f;  // PFC: priorities 0 and 7
  f.eth(0x8808).u16(0x0101).u16(0x0081).u16(300).zeros(12).u16(65535).zeros(26);
  ASSERT_EQ(d.decode(f.bytes, static_cast<uint32_t>(f.bytes.size()), &r), DecodeError::kNone);
  EXPECT_EQ(r.l4Kind(), L4Kind::kMacControl);
  EXPECT_EQ(r.op, kMacPfc);
  EXPECT_EQ(r.seq, 0x81u);
  EXPECT_EQ(r.pfcQuanta(0), 300);
  EXPECT_EQ(r.pfcQuanta(7), 65535);
  EXPECT_EQ(r.key.family, 0);

  // An ERSPAN-wrapped frame's ECN and transport are the inner frame's, not the outer header's.
  FrameBuilder outer;
  outer.eth(0x0800).ipv4(ip4(192, 168, 0, 1), ip4(192, 168, 0, 2), 47, 0).gre(0x1000, 0x88BE, 1).erspan2(3);
  outer.bytes[15] = 0x03;  // outer CE
  const size_t inner_at = outer.bytes.size();
  outer.bytes.insert(outer.bytes.end(), t.bytes.begin(), t.bytes.end());
  outer.bytes[inner_at + 15] = 0x02;  // inner ECT(0)
  ASSERT_EQ(d.decode(outer.bytes, static_cast<uint32_t>(outer.bytes.size()), &r), DecodeError::kNone);
  EXPECT_EQ(r.ecn(), 2);
  EXPECT_EQ(r.seq, 0xDEADBEEFu);
}

// ---- Evidence per training step (src/pipeline/step_evidence.h) -----------------------------------------------

FlowKey hostPair(int src, int dst) {
  FlowKey k;
  k.family = 4;
  k.src = {10, 0, 0, static_cast<uint8_t>(src)};
  k.dst = {10, 0, 0, static_cast<uint8_t>(dst)};
  return k;
}

PairBinEvidence pairBin(int64_t start, int src, int dst, int signal, uint64_t n) {
  PairBinEvidence p;
  p.start_ns = start;
  p.pair = hostPair(src, dst);
  p.evidence.n[signal] = n;
  return p;
}

// A job of hosts 10.0.0.1-3 stepping every 100 ms, three steps from kT0.
TrainingReport threeSteps() {
  TrainingReport t;
  JobReport j;
  j.name = "job";
  j.hosts = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};
  for (uint64_t k = 0; k < 3; ++k) {
    j.steps.push_back({k, kT0 + static_cast<int64_t>(k) * 100 * kMs, kT0 + static_cast<int64_t>(k + 1) * 100 * kMs, 1e6,
                       true, std::nullopt});
  }
  t.jobs.push_back(j);
  return t;
}

TEST(StepEvidence, EventsOnTheJobsPairsGoToTheStepTheirBinStartsIn) {
  EvidenceReport r;
  r.after_ns = 100 * kUs;
  r.pair_bins = {pairBin(kT0 + 10 * kMs, 1, 2, kSignalTcpRetransmission, 3),
                 pairBin(kT0 + 100 * kMs - 100 * kUs, 1, 3, kSignalCe, 5),  // the last bin of step 0
                 pairBin(kT0 + 100 * kMs, 2, 3, kSignalCe, 7),              // the first bin of step 1
                 pairBin(kT0 + 150 * kMs, 1, 9, kSignalCnp, 11),            // 10.0.0.9 is not in the job
                 pairBin(kT0 + 400 * kMs, 1, 2, kSignalCe, 13)};            // after the last step
  StepEvidenceWindow w(100 * kUs, 0, 1000);
  w.add(r);
  TrainingReport t = threeSteps();
  w.annotate(&t);
  const std::vector<StepSpan>& s = t.jobs[0].steps;
  ASSERT_TRUE(s[0].evidence && s[1].evidence && s[2].evidence);
  EXPECT_EQ(s[0].evidence->counts.n[kSignalTcpRetransmission], 3u);
  EXPECT_EQ(s[0].evidence->counts.n[kSignalCe], 5u);
  EXPECT_EQ(s[0].evidence->toward, "10.0.0.3");  // 5 events toward .3, 3 toward .2
  EXPECT_EQ(s[1].evidence->counts.n[kSignalCe], 7u);
  EXPECT_EQ(s[1].evidence->counts.n[kSignalCnp], 0u);
  EXPECT_EQ(s[2].evidence->counts.total(), 0u);
  EXPECT_EQ(s[2].evidence->toward, "");
}

TEST(StepEvidence, ACongestingBurstCountsForTheJobWhenItsWindowHoldsEventsOnTheJobsPairs) {
  EvidenceReport r;
  r.after_ns = 1 * kMs;
  auto burst = [](int64_t start, int64_t end) {
    AnnotatedBurst b;
    b.burst.start_ns = start;
    b.burst.end_ns = end;
    return b;
  };
  // Step 0: events on a job pair 0.5 ms after the burst's end (inside `after`); step 1: events 2 ms after (outside);
  // step 2: events inside the burst, but on a pair with a foreign host.
  r.pair_bins = {pairBin(kT0 + 20 * kMs + 500 * kUs, 1, 2, kSignalTcpRetransmission, 1),
                 pairBin(kT0 + 120 * kMs + 2 * kMs, 1, 2, kSignalTcpRetransmission, 1),
                 pairBin(kT0 + 220 * kMs, 9, 2, kSignalCe, 1)};
  r.bursts = {burst(kT0 + 19 * kMs, kT0 + 20 * kMs), burst(kT0 + 119 * kMs, kT0 + 120 * kMs),
              burst(kT0 + 219 * kMs, kT0 + 221 * kMs)};
  StepEvidenceWindow w(100 * kUs, 0, 1000);
  w.add(r);
  TrainingReport t = threeSteps();
  w.annotate(&t);
  const std::vector<StepSpan>& s = t.jobs[0].steps;
  EXPECT_EQ(s[0].evidence->congesting_bursts, 1u);
  EXPECT_EQ(s[1].evidence->congesting_bursts, 0u);
  EXPECT_EQ(s[2].evidence->congesting_bursts, 0u);
  EXPECT_EQ(s[2].evidence->counts.total(), 0u);
}

TEST(StepEvidence, TheWindowKeepsWhatTheTrainingWindowHoldsAndAtMostItsBound) {
  StepEvidenceWindow w(100 * kUs, 150 * kMs, 3);
  EvidenceReport a, b;
  a.pair_bins = {pairBin(kT0, 1, 2, kSignalCe, 1), pairBin(kT0 + 60 * kMs, 1, 2, kSignalCe, 1)};
  b.pair_bins = {pairBin(kT0 + 200 * kMs, 1, 2, kSignalCe, 1)};
  w.add(a);
  EXPECT_EQ(w.pairBins(), 2u);
  w.add(b);  // 150 ms back from kT0 + 200 ms: the one at kT0 goes, the one at kT0 + 60 ms stays
  EXPECT_EQ(w.pairBins(), 2u);
  TrainingReport t = threeSteps();
  w.annotate(&t);
  EXPECT_EQ(t.jobs[0].steps[0].evidence->counts.total(), 1u);
  EXPECT_EQ(t.jobs[0].steps[2].evidence->counts.total(), 1u);
  EvidenceReport many;
  for (int i = 0; i < 5; ++i) many.pair_bins.push_back(pairBin(kT0 + 201 * kMs + i * kMs, 1, 2, kSignalCe, 1));
  w.add(many);
  EXPECT_EQ(w.pairBins(), 3u);  // the bound
}

}  // namespace
}  // namespace burstscope
