// Training awareness against known truth: synthetic jobs whose period, topology and co-bursts are set here,
// through the real engine, aggregator and analyzer; co-bursts against a brute force written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "burstscope/evidence.h"
#include "burstscope/training.h"
#include "burstscope/window.h"
#include "src/analysis/report.h"
#include "src/training/merge_runs.h"
#include "src/training/period.h"
#include "src/training/topology.h"

namespace burstscope {
namespace {

constexpr int64_t kT0 = 1'795'294'232'000'000'000;

FlowKey flow(int src, int dst, uint16_t port = 5000) {
  FlowKey k;
  k.family = 4;
  k.proto = 6;
  k.src = {10, 0, 0, static_cast<uint8_t>(src)};
  k.dst = {10, 0, 0, static_cast<uint8_t>(dst)};
  k.src_port = static_cast<uint16_t>(40000 + src);
  k.dst_port = port;
  return k;
}

std::string ip(int h) { return "10.0.0." + std::to_string(h); }

// A burst of `bytes` from src to dst starting at t, 1514-byte TCP frames (1448 bytes of payload, the flow's
// sequence numbers running on from its last burst) at `gbps`, and an ACK (66 B, no payload) back per two.
constexpr uint32_t kPayload = 1448;
void burst(std::vector<PacketRecord>* v, int64_t t, int src, int dst, uint64_t bytes, double gbps = 4,
           uint16_t port = 5000) {
  static std::map<std::pair<int, int>, uint32_t> next_seq;
  const int64_t gap = static_cast<int64_t>(1514 * 8 / gbps);
  for (uint64_t sent = 0, i = 0; sent < bytes; sent += 1514, ++i) {
    PacketRecord r;
    r.ts_ns = t + static_cast<int64_t>(i) * gap;
    r.wire_len = 1514;
    r.key = flow(src, dst, port);
    r.l4 = static_cast<uint8_t>(L4Kind::kTcp);
    r.op = kTcpAck;
    r.len = kPayload;
    r.seq = next_seq[{src, dst}];
    next_seq[{src, dst}] += kPayload;
    v->push_back(r);
    if (i % 2 == 1) {
      PacketRecord a = r;
      a.len = 0;
      a.seq = 0;
      a.ts_ns += 20'000;
      a.wire_len = 66;
      a.key = flow(dst, src, static_cast<uint16_t>(40000 + src));
      std::swap(a.key.src_port, a.key.dst_port);
      a.key.src_port = port;
      a.key.dst_port = static_cast<uint16_t>(40000 + src);
      v->push_back(a);
    }
  }
}

TrainingReport analyse(std::vector<PacketRecord> v, TrainingConfig cfg = {}) {
  std::stable_sort(v.begin(), v.end(), [](const PacketRecord& a, const PacketRecord& b) { return a.ts_ns < b.ts_ns; });
  EngineConfig ec;
  Engine e(ec);
  e.addAggregator(makeTrainingAggregator(cfg, false));
  e.add(v);
  e.finish();
  EngineResult r = e.result();
  cfg.window_ns = 0;
  TrainingAnalyzer a(cfg, ec.link_capacity_bps, ec.scales_ns, ec.rates_bps);
  a.ingest(r.training);
  return a.analyze();
}

// The live path in small: an engine closing intervals of `interval_ns`, the training aggregator, and the
// analyzer on the control side, fed each interval's delta. run() sorts the records by time, sends them
// through and calls `each` after every interval with the analyzer (which the callback may analyse or not).
struct LiveRig {
  explicit LiveRig(int64_t interval_ns, TrainingConfig c = {})
      : cfg(c),
        ec(withInterval(interval_ns)),
        engine(ec),
        analyzer(cfg, ec.link_capacity_bps, ec.scales_ns, ec.rates_bps) {
    engine.addAggregator(makeTrainingAggregator(cfg, true));
  }
  void run(std::vector<PacketRecord> v, const std::function<void(const IntervalReport&, TrainingAnalyzer&)>& each,
           bool finish = true) {
    std::stable_sort(v.begin(), v.end(),
                     [](const PacketRecord& a, const PacketRecord& b) { return a.ts_ns < b.ts_ns; });
    engine.setIntervalSink([&](const IntervalReport& ir) {
      analyzer.ingest(ir.training);
      each(ir, analyzer);
    });
    engine.add(v);
    if (finish) engine.finish();
  }
  static EngineConfig withInterval(int64_t ns) {
    EngineConfig e;
    e.report_interval_ns = ns;
    return e;
  }
  TrainingConfig cfg;
  EngineConfig ec;
  Engine engine;
  TrainingAnalyzer analyzer;
};

// Ring all-reduce over n ranks: each step, every rank sends to rank+1 in groups at the given offsets.
struct Group {
  double offset;  // share of the period
  uint64_t bytes;
};
std::vector<PacketRecord> ringJob(int n, const std::vector<int64_t>& step_starts, const std::vector<Group>& groups) {
  std::vector<PacketRecord> v;
  for (int64_t s : step_starts) {
    for (const Group& g : groups) {
      for (int r = 1; r <= n; ++r) burst(&v, s + static_cast<int64_t>(g.offset * 2e8), r, r % n + 1, g.bytes);
    }
  }
  return v;
}

std::vector<int64_t> steps(int count, int64_t period, double jitter = 0, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-jitter, jitter);
  std::vector<int64_t> s;
  int64_t t = kT0 + 123'456'789;
  for (int i = 0; i < count; ++i) {
    s.push_back(t);
    t += static_cast<int64_t>(static_cast<double>(period) * (1 + u(rng)));
  }
  return s;
}

double meanStep(const std::vector<int64_t>& s) {
  return static_cast<double>(s.back() - s.front()) / static_cast<double>(s.size() - 1) / 1e9;
}

TEST(TrainingTest, OneBurstPerStepGivesPeriodRingAndBytesPerStep) {
  const auto s = steps(30, 250'000'000);
  TrainingReport r = analyse(ringJob(4, s, {{0, 300'000}}));
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobReport& j = r.jobs[0];
  ASSERT_TRUE(j.period.period_s) << j.period.why;
  EXPECT_NEAR(*j.period.period_s, meanStep(s), 0.01 * meanStep(s));
  EXPECT_EQ(j.topology.kind, "ring");
  for (const RankReport& k : j.ranks) {
    const int h = std::stoi(k.host.substr(7));
    EXPECT_EQ(k.successor, ip(h % 4 + 1)) << k.host;  // each rank's successor
    // 300 kB of 1514-byte frames and the ACKs it sends for its predecessor's burst.
    EXPECT_NEAR(k.sent_bytes_per_step, 199 * 1514 + 99 * 66, 2000);
  }
  EXPECT_NEAR(j.step_bytes_mean, 4 * (199 * 1514 + 99 * 66), 8000);
  EXPECT_LT(j.step_bytes_cv, 0.01);
  // G from transport payload (SPEC "Model size"): each rank sends 2(N-1)/N of it, 199 frames of 1448 payload
  // bytes; no headers, no ACKs.
  ASSERT_TRUE(j.gradient_bytes);
  EXPECT_NEAR(*j.gradient_bytes, 199.0 * kPayload * 4 / 6.0, 1.0);
  EXPECT_GT(j.period.duty_cycle, 0);
  EXPECT_LT(j.period.duty_cycle, 0.05);
}

TEST(TrainingTest, ModelSizeCountsPayloadNotHeadersNorRetransmissions) {
  // A ring job whose every tenth segment is sent twice (a retransmission: the same sequence range again) and
  // whose TCP segments carry 1448 bytes in 1514-byte frames: G is the payload, 199 segments' worth × N/2(N-1),
  // however many wire bytes the headers and the resent segments add.
  const auto s = steps(30, 250'000'000);
  std::vector<PacketRecord> v = ringJob(4, s, {{0, 300'000}});
  const size_t original = v.size();
  uint64_t resent = 0;
  for (size_t i = 0; i < original; ++i) {
    if (v[i].len > 0 && i % 10 == 0) {
      PacketRecord again = v[i];
      again.ts_ns += 1'000;
      v.push_back(again);
      resent += again.wire_len;
    }
  }
  ASSERT_GT(resent, 0u);
  TrainingReport r = analyse(v);
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobReport& j = r.jobs[0];
  ASSERT_EQ(j.topology.kind, "ring");
  ASSERT_TRUE(j.gradient_bytes);
  EXPECT_NEAR(*j.gradient_bytes, 199.0 * kPayload * 4 / 6.0, 1.0);
  // The wire bytes per step did grow by the resent segments (so the payload is what kept G put).
  EXPECT_GT(j.step_bytes_mean, 4 * (199 * 1514 + 99 * 66) + 0.5 * static_cast<double>(resent) / 30);
}

TEST(TrainingTest, StepsAreCutBetweenTheStepsTraffic) {
  // Steps jittered by 5%: every listed step [start, end) must hold the whole traffic of exactly one step
  // (each rank's burst and its ACKs), the listed steps follow one another without gaps, and together they
  // cover every step but those cut off by the capture's start and end.
  const auto s = steps(30, 250'000'000, 0.05, 7);
  const std::vector<PacketRecord> v = ringJob(4, s, {{0, 300'000}});
  TrainingReport r = analyse(v);
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobReport& j = r.jobs[0];
  ASSERT_TRUE(j.period.period_s) << j.period.why;
  ASSERT_GE(j.steps.size(), 28u);
  for (size_t k = 0; k < j.steps.size(); ++k) {
    const StepSpan& st = j.steps[k];
    EXPECT_EQ(st.index, k);
    if (k > 0) {
      EXPECT_EQ(st.start_ns, j.steps[k - 1].end_ns);
    }
    size_t starts = 0;
    for (int64_t t : s) starts += t >= st.start_ns && t < st.end_ns;
    EXPECT_EQ(starts, 1u) << "step " << k;
    // Its bytes are the records inside it, every one of one step.
    double bytes = 0;
    for (const PacketRecord& p : v) bytes += p.ts_ns >= st.start_ns && p.ts_ns < st.end_ns ? p.wire_len : 0;
    EXPECT_NEAR(st.bytes, bytes, 0.01 * bytes) << "step " << k;
    EXPECT_NEAR(bytes, 4 * (199 * 1514 + 99 * 66), 8000) << "step " << k;
  }
}

TEST(TrainingTest, OnlyTheStepsThatHappenedAreListed) {
  // SPEC "Steps": a job's rendezvous (a few kB) 2.5 s before its first step, its model broadcast (half a step's
  // bytes) 120 ms before it, 20 steps, then the capture runs on 1.5 s with a last few bytes between two of its
  // hosts. Listed: the 20 steps, numbered from 0, the first holding the first step's traffic and the last the
  // last's, each exactly one step's — none over the idle seconds, none for the start-up.
  const auto s = steps(20, 250'000'000, 0.05, 3);
  std::vector<PacketRecord> v = ringJob(4, s, {{0, 300'000}});
  burst(&v, s.front() - 2'500'000'000, 1, 2, 3'000);
  burst(&v, s.front() - 120'000'000, 1, 2, 200'000);
  burst(&v, s.front() - 120'000'000, 1, 3, 200'000);
  burst(&v, s.back() + 1'500'000'000, 2, 1, 1'000);
  TrainingReport r = analyse(v);
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobReport& j = r.jobs[0];
  ASSERT_TRUE(j.period.period_s) << j.period.why;
  ASSERT_EQ(j.steps.size(), s.size());
  for (size_t k = 0; k < j.steps.size(); ++k) {
    const StepSpan& st = j.steps[k];
    EXPECT_EQ(st.index, k);
    EXPECT_GT(st.bytes, 0);
    // Step k holds the traffic of the job's step k: its records from s[k] on (a burst under a millisecond).
    int64_t last = s[k];
    for (const PacketRecord& p : v) {
      if (p.ts_ns >= s[k] && p.ts_ns < s[k] + 50'000'000) last = std::max(last, p.ts_ns);
    }
    EXPECT_LE(st.start_ns, s[k]) << "step " << k;
    EXPECT_GT(st.end_ns, last) << "step " << k;
  }
}

TEST(TrainingTest, SeveralUnequalBurstGroupsPerStepGiveTheFundamental) {
  const auto s = steps(30, 200'000'000);
  TrainingReport r = analyse(ringJob(4, s, {{0, 300'000}, {0.08, 100'000}, {0.45, 200'000}}));
  ASSERT_EQ(r.jobs.size(), 1u);
  ASSERT_TRUE(r.jobs[0].period.period_s) << r.jobs[0].period.why;
  EXPECT_NEAR(*r.jobs[0].period.period_s, meanStep(s), 0.01 * meanStep(s));
}

TEST(TrainingTest, TwoGroupsFarApartWithJitteredStepsAndPhases) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto s = steps(40, 300'000'000, 0.08, seed);
    std::vector<PacketRecord> v;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> phase(0.28, 0.40);
    for (int64_t t : s) {
      for (int r = 1; r <= 3; ++r) burst(&v, t, r, r % 3 + 1, 400'000);
      const int64_t second = t + static_cast<int64_t>(phase(rng) * 3e8);
      for (int r = 1; r <= 3; ++r) burst(&v, second, r, r % 3 + 1, 130'000);
    }
    TrainingReport r = analyse(v);
    ASSERT_EQ(r.jobs.size(), 1u);
    ASSERT_TRUE(r.jobs[0].period.period_s) << seed << " " << r.jobs[0].period.why;
    EXPECT_NEAR(*r.jobs[0].period.period_s, meanStep(s), 0.01 * meanStep(s)) << seed;
  }
}

TEST(TrainingTest, RandomOnOffTrafficHasNoPeriod) {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    std::mt19937 rng(seed);
    std::exponential_distribution<double> gap(1 / 0.2);
    std::uniform_int_distribution<uint64_t> size(20'000, 600'000);
    std::vector<PacketRecord> v;
    int64_t t = kT0;
    for (int i = 0; i < 60; ++i) {
      t += static_cast<int64_t>(gap(rng) * 1e9);
      burst(&v, t, 1, 2, size(rng));
      burst(&v, t + 1'000'000, 2, 1, size(rng));
    }
    TrainingReport r = analyse(v);
    ASSERT_EQ(r.jobs.size(), 1u);
    EXPECT_FALSE(r.jobs[0].period.period_s)
        << seed << ": " << r.jobs[0].period.period_s.value_or(0) << " q " << r.jobs[0].period.quality;
    EXPECT_FALSE(r.jobs[0].period.why.empty());
  }
}

// A steady stream of packets repeats in 100 µs bins: the bins' share of its packets beats against their spacing
// (192 µs apart: full and empty bins in a pattern that nearly repeats every 2.5 ms; ten a bin and a bit: tens and
// elevens in one). That is no training step — it never pauses for longer than its spacing — and has no period,
// with or without jitter, at spacings of 9.6–610 µs (packets further apart than `min-period` repeat at their
// spacing for real). The same stream that pauses between its bursts does (a job's step).
TEST(TrainingTest, ASteadyStreamHasNoPeriodButTheSameStreamWithPausesHasOne) {
  auto stream = [](int64_t spacing_ns, double jitter, bool full_size, int64_t on_ns, int64_t period_ns) {
    std::mt19937 rng(static_cast<uint32_t>(spacing_ns));
    std::uniform_real_distribution<double> u(-jitter, jitter);
    std::uniform_int_distribution<uint32_t> size(200, 1514);  // at random: sizes that cycled would repeat
    std::vector<PacketRecord> v;
    for (int64_t t = 0; t < 3'000'000'000; t += spacing_ns) {
      if (t % period_ns >= on_ns) continue;
      PacketRecord r;
      r.ts_ns = kT0 + t + static_cast<int64_t>(u(rng) * static_cast<double>(spacing_ns));
      r.wire_len = full_size ? 1514 : size(rng);
      r.key = flow(1, 2);
      r.key.proto = 17;
      r.len = r.wire_len - 42;
      v.push_back(r);
    }
    return v;
  };
  size_t steady = 0;  // streams read steady: their bins repeat at a period the autocorrelation takes
  for (int64_t spacing : {9'600, 31'000, 47'000, 96'000, 192'000, 333'000, 610'000}) {
    for (auto [jitter, full_size] : {std::pair(0.0, true), std::pair(0.2, true), std::pair(0.0, false)}) {
      TrainingReport r = analyse(stream(spacing, jitter, full_size, 1'000'000'000'000, 1'000'000'000'000));
      ASSERT_EQ(r.jobs.size(), 1u) << spacing;
      const PeriodReport& p = r.jobs[0].period;
      EXPECT_FALSE(p.period_s) << spacing << " ns, jitter " << jitter << ": " << p.period_s.value_or(0) << " s, q "
                               << p.quality;
      EXPECT_EQ(p.steps, 0u) << spacing;
      steady += p.why == "steady";
      // Pauses of 8 ms in every 20 ms: steps of 20 ms.
      TrainingReport q = analyse(stream(spacing, jitter, full_size, 12'000'000, 20'000'000));
      ASSERT_EQ(q.jobs.size(), 1u) << spacing;
      ASSERT_TRUE(q.jobs[0].period.period_s) << spacing << " ns, jitter " << jitter << ": " << q.jobs[0].period.why;
      EXPECT_NEAR(*q.jobs[0].period.period_s, 0.020, 0.0004) << spacing << " ns, jitter " << jitter;
    }
  }
  // The streams that the bins' beat alone made periodic (before this rule, a period was read for 11 of them).
  EXPECT_GE(steady, 8u);
  // A short pause is a step's too: 2 ms in every 20 ms of a dense stream (where the quiet window were half the
  // period wide, the pause would not show).
  for (int64_t spacing : {9'600, 31'000}) {
    TrainingReport q = analyse(stream(spacing, 0.2, true, 18'000'000, 20'000'000));
    ASSERT_EQ(q.jobs.size(), 1u) << spacing;
    ASSERT_TRUE(q.jobs[0].period.period_s) << spacing << " ns: " << q.jobs[0].period.why;
    EXPECT_NEAR(*q.jobs[0].period.period_s, 0.020, 0.0004) << spacing << " ns";
  }
}

// The period finder asks for the first few dozen lags of long series, which are summed directly; they must
// equal the definition (brute force on a short series) and the transform's values (long series).
TEST(TrainingTest, AutocorrelationOfTheFirstLagsEqualsTheDefinitionAndTheTransform) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  auto series = [&](size_t n) {
    std::vector<double> x(n);
    for (double& v : x) v = u(rng) < 0.1 ? std::floor(u(rng) * 150'000) : 0;  // bursty whole bytes
    return x;
  };
  const std::vector<double> small = series(300);
  double mean = 0, var = 0;
  for (double v : small) mean += v / 300;
  for (double v : small) var += (v - mean) * (v - mean) / 300;
  for (size_t lags : {1u, 8u, 32u}) {
    const std::vector<double> r = training::autocorrelation(small, lags);
    ASSERT_EQ(r.size(), small.size());
    for (size_t l = 0; l < small.size(); ++l) {
      double want = 0;
      if (l < lags) {
        for (size_t i = 0; i + l < small.size(); ++i) want += (small[i] - mean) * (small[i + l] - mean);
        want /= static_cast<double>(small.size() - l) * var;
      }
      EXPECT_NEAR(r[l], want, 1e-9) << "lags " << lags << " lag " << l;
    }
  }
  for (size_t n : {1000u, 70'000u}) {
    const std::vector<double> x = series(n);
    const std::vector<double> all = training::autocorrelation(x);
    for (size_t lags : {8u, 32u, 200u}) {
      const std::vector<double> r = training::autocorrelation(x, lags);
      for (size_t l = 0; l < n; ++l) ASSERT_NEAR(r[l], l < lags ? all[l] : 0.0, 1e-9) << n << " " << lags << " " << l;
    }
  }
}

// The direct sums are the definition to the bit, whichever way they run (eight lags at a time, or thirty-two in
// AVX-512 registers where this CPU has them): the reference sums each lag in the order of i, with the same mean and
// variance, each product and addition rounded on its own (this file is built without fused multiply-adds).
TEST(TrainingTest, AutocorrelationsDirectSumsAreTheDefinitionToTheBit) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t n : {40u, 1000u, 1001u, 74'000u}) {
    std::vector<double> x(n);
    for (double& v : x) v = u(rng) < 0.1 ? std::floor(u(rng) * 150'000) : 0;
    double mean = 0;
    for (double v : x) mean += v;
    mean /= static_cast<double>(n);
    std::vector<double> d(n);
    double var = 0;
    for (size_t i = 0; i < n; ++i) {
      d[i] = x[i] - mean;
      var += d[i] * d[i];
    }
    var /= static_cast<double>(n);
    size_t big = 1, log2 = 0;  // the transform's size: lags beyond 4·log2 of it take the transform instead
    for (; big < 2 * n; big <<= 1) ++log2;
    for (size_t lags : {7u, 8u, 13u, 32u, 37u, 40u, 64u, 72u}) {  // blocks of 32 and 8 lags, and what is left
      if (lags > 4 * log2) continue;
      const std::vector<double> r = training::autocorrelation(x, lags);
      for (size_t l = 0; l < lags; ++l) {
        double sum = 0;
        for (size_t i = 0; i + l < n; ++i) {
          const double p = d[i] * d[i + l];
          sum += p;
        }
        ASSERT_EQ(r[l], sum / (static_cast<double>(n - l) * var)) << "n " << n << " lags " << lags << " lag " << l;
      }
    }
  }
}

// Steps are found at their edges (forEachStep) instead of by a division per bin (stepOf): the same bins, for
// fractional, sub-bin and large origins and periods, series ending inside a step and before the first.
TEST(TrainingTest, StepRunsAndTheWalkHoldExactlyTheBinsOfEachStep) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    training::StepCut cut;
    cut.period = trial % 5 == 0 ? 0.3 + u(rng) : trial % 5 == 1 ? std::floor(1 + u(rng) * 50) : 1 + u(rng) * 5000;
    cut.origin = trial % 3 == 0 ? u(rng) * cut.period : trial % 3 == 1 ? std::floor(u(rng) * 100) : u(rng) * 1e6;
    cut.count = rng() % 40;
    const double end = cut.origin + cut.period * (static_cast<double>(cut.count) + 2 * u(rng) - 1);
    const size_t n = static_cast<size_t>(std::max(0.0, end));
    if (trial % 50 == 0) cut.period = 0;  // no period: no step anywhere
    std::vector<long> seen(n, -1);
    size_t last_end = 0;
    cut.forEachStep(n, [&](size_t k, size_t begin, size_t end) {
      ASSERT_LE(last_end, begin);
      ASSERT_LE(begin, end);
      ASSERT_LE(end, n);
      for (size_t i = begin; i < end; ++i) seen[i] = static_cast<long>(k);
      last_end = end;
    });
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(seen[i], cut.stepOf(i)) << "bin " << i << " origin " << cut.origin << " period " << cut.period;
    }
    // The walk over bins in increasing order (a flow's), from a random first bin, in random strides; one walk
    // reset for each of three flows, each starting anywhere (before the last one's end, as the analysis does).
    training::StepCut::Walk walk(cut, n);
    for (int flow = 0; flow < 3; ++flow) {
      size_t i = n == 0 ? 0 : rng() % n;
      walk.reset(i);
      for (; i < n; i += 1 + rng() % (trial % 2 == 0 ? 3 : 200)) {
        ASSERT_EQ(walk.stepOf(i), cut.stepOf(i))
            << "walk: bin " << i << " origin " << cut.origin << " period " << cut.period;
      }
    }
  }
}

// followPeriod as its definition reads, plainly: every window's bytes and moment summed bin by bin, every edge found
// by a binary search of the whole series, each step's window re-centred four times (the first three), and the slope
// summed over all anchors at every step. On whole-byte bins whose sums are exact, it and followPeriod (running sums,
// edges searched from the last ones, re-centring stopped once it stays put, the slope's sums kept as the anchors come)
// must agree to the bit.
double followPeriodByDefinition(const std::vector<size_t>& at, const std::vector<double>& value, double p0) {
  if (at.empty() || p0 <= 0) return p0;
  const size_t first = at.front();
  const double n = static_cast<double>(at.back() - first + 1);
  auto window = [&](double around) {
    const long lo = std::max(0L, static_cast<long>(std::ceil(around - p0 / 2)));
    const long hi = std::max(lo, std::min(static_cast<long>(n), static_cast<long>(std::ceil(around + p0 / 2))));
    const auto edge = [&](long b) {
      return static_cast<size_t>(std::lower_bound(at.begin(), at.end(), first + static_cast<size_t>(b)) - at.begin());
    };
    std::vector<size_t> in(edge(hi) - edge(lo));
    std::iota(in.begin(), in.end(), edge(lo));
    return in;
  };
  auto centroid = [&](double around, double* mass) {
    double m = 0, moment = 0;
    for (size_t j : window(around)) {
      m += value[j];
      moment += value[j] * static_cast<double>(at[j] - first);
    }
    *mass = m;
    return m > 0 ? moment / m : around;
  };
  auto ending = [&](double around) {
    const std::vector<size_t> in = window(around);
    double m = 0;
    for (size_t j : in) m += value[j];
    double sum = 0;
    for (size_t j : in) {
      sum += value[j];
      if (sum >= 0.9 * m) return static_cast<double>(at[j] - first);
    }
    return around;
  };
  const size_t peak = static_cast<size_t>(std::max_element(value.begin(), value.end()) - value.begin());
  double total = 0;
  for (double v : value) total += v;
  double mass = 0;
  double start = static_cast<double>(at[peak] - first);
  for (int it = 0; it < 3; ++it) start = centroid(start, &mass);
  std::vector<std::pair<double, double>> anchors{{0.0, ending(start)}};
  std::vector<double> masses{mass};
  auto slope = [&]() {
    if (anchors.size() < 2) return p0;
    double sk = 0, st = 0, skk = 0, skt = 0;
    for (const auto& [k, t] : anchors) {
      sk += k;
      st += t;
      skk += k * k;
      skt += k * t;
    }
    const double cnt = static_cast<double>(anchors.size());
    const double den = cnt * skk - sk * sk;
    return den > 0 ? (cnt * skt - sk * st) / den : p0;
  };
  for (int dir : {+1, -1}) {
    double period = slope();
    double k = 0, centre = start;
    while (std::abs(k) < n / p0 + 2) {
      k += dir;
      const double expect = centre + dir * period;
      if (expect - p0 / 2 < 0 || expect + p0 / 2 > n) break;
      double c = expect;
      for (int it = 0; it < 4; ++it) c = centroid(c, &mass);
      if (mass <= 0.05 * total / (n / p0) || dir * (c - centre) < period / 2) {
        centre = expect;
        continue;
      }
      anchors.emplace_back(k, ending(c));
      masses.push_back(mass);
      centre = c;
      period = slope();
    }
  }
  std::vector<double> sorted = masses;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::vector<std::pair<double, double>> typical;
  for (size_t i = 0; i < anchors.size(); ++i) {
    if (masses[i] >= 0.75 * median && masses[i] <= 1.25 * median) typical.push_back(anchors[i]);
  }
  if (typical.size() >= 3) anchors = typical;
  if (anchors.size() < 3) return p0;
  const auto [lo, hi] = std::minmax_element(anchors.begin(), anchors.end());
  const double p = (hi->second - lo->second) / (hi->first - lo->first);
  return p > 0.9 * p0 && p < 1.1 * p0 ? p : p0;
}

// Steps of 20 to 3,000 bins (from a short period's thousand steps, whose walk moves its window's edges a few bins at
// a time, to a few long ones), jittered, some missing, some heavier, with stray bins between them; read from
// estimates a few percent off and from one the steps do not line up with.
TEST(TrainingTest, FollowingStepsGivesWhatItsDefinitionGivesToTheBit) {
  int followed = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const double step = std::array<double, 6>{20, 37.5, 90, 400, 1300, 3000}[seed % 6];
    const int steps = static_cast<int>(std::min(1000.0, 60'000 / step));
    std::uniform_real_distribution<double> jitter(-0.06, 0.06);
    std::map<size_t, double> bins;
    double end = 3 * step;
    for (int k = 0; k < steps; ++k) {
      end += step * (1 + jitter(rng));
      if (rng() % 17 == 0) continue;  // a step without traffic
      const auto width = static_cast<size_t>(std::max(1.0, step * 0.3));
      const double scale = rng() % 11 == 0 ? 3 : 1;
      for (size_t i = static_cast<size_t>(end) - width; i < static_cast<size_t>(end); ++i) {
        if (rng() % 3 == 0) continue;
        bins[i] += scale * static_cast<double>(64 + rng() % 1500);
      }
      if (rng() % 4 == 0) bins[static_cast<size_t>(end + step / 2)] += static_cast<double>(64 + rng() % 200);
    }
    std::vector<size_t> at;
    std::vector<double> value;
    for (const auto& [i, v] : bins) {
      at.push_back(i);
      value.push_back(v);
    }
    for (double off : {1.0, 1.03, 0.96, 1.35}) {
      const double got = training::followPeriod(at, value, off * step);
      const double want = followPeriodByDefinition(at, value, off * step);
      ASSERT_EQ(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(want))
          << got << " against " << want << ": seed " << seed << " step " << step << " estimate " << off * step;
      followed += got != off * step;
    }
  }
  // The comparison is of steps followed, not of estimates handed back unchanged.
  EXPECT_GT(followed, 150);
}

// Sorted runs merged (a job's flows' bins, a destination's senders' arrivals) come out as a stable sort of them all:
// in order, and among equal elements the earlier run's first (as std::inplace_merge keeps them). Runs of every
// length, empty ones too, keys with many ties; the runs' order in `v` is the order their elements were made in.
TEST(TrainingTest, MergingSortedRunsGivesWhatAStableSortGives) {
  struct Item {
    int key = 0;
    int made = 0;  // the order in which the element was made: its place among equal keys
  };
  std::mt19937 rng(7);
  int merged = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<Item> v;
    std::vector<size_t> runs;
    const int n_runs = 1 + static_cast<int>(rng() % 40);
    for (int r = 0; r < n_runs; ++r) {
      runs.push_back(v.size());
      const size_t len = trial % 4 == 0 ? rng() % 3 : rng() % (trial % 2 == 0 ? 80 : 12);
      std::vector<int> keys(len);
      for (int& k : keys) k = static_cast<int>(rng() % (trial % 3 == 0 ? 4 : 40));
      std::sort(keys.begin(), keys.end());
      for (int k : keys) v.push_back({k, static_cast<int>(v.size())});
    }
    runs.push_back(v.size());
    std::vector<Item> want = v;
    std::stable_sort(want.begin(), want.end(), [](const Item& a, const Item& b) { return a.key < b.key; });
    const bool by_merges = 2 * runs.size() <= v.size() + 2;  // else the runs are sorted whole (not stably)
    merged += by_merges;
    training::mergeRuns(&v, &runs, [](const Item& a, const Item& b) { return a.key < b.key; });
    ASSERT_EQ(v.size(), want.size());
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(v[i].key, want[i].key) << "trial " << trial << " at " << i;
      if (by_merges) {
        ASSERT_EQ(v[i].made, want[i].made) << "trial " << trial << " at " << i;
      }
    }
  }
  EXPECT_GT(merged, 200);  // most trials merge rather than sort
}

// A pair's step read again in the job's bins (the pairs' step, docs/training.md "Step period" 6): its steps
// followed one by one from a reading a few percent off give the mean step as the job's log has it (first to last
// step end), from the non-empty bins alone; a reading the steps do not line up with, or too few steps, stay as
// they were given.
TEST(TrainingTest, FollowingAPairsStepsGivesTheMeanStep) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> jitter(-0.08, 0.08);
    std::vector<size_t> at;
    std::vector<double> value;
    std::vector<double> ends;
    double end = 5000;
    for (int k = 0; k < 40; ++k) {
      end += 2000 * (1 + jitter(rng));
      ends.push_back(end);
      // A burst of 60 bins ending at the step's end, the heaviest in its middle.
      for (size_t i = static_cast<size_t>(end) - 60; i < static_cast<size_t>(end); ++i) {
        at.push_back(i);
        value.push_back(1000.0 + static_cast<double>(i % 7) * 100);
      }
    }
    const double mean = (ends.back() - ends.front()) / static_cast<double>(ends.size() - 1);
    // Within half a percent (the first and last steps' own jitter, divided by 39 steps, is up to 0.2%), where the
    // readings given were 4% and 3% off.
    EXPECT_NEAR(training::followPeriod(at, value, 1.04 * mean), mean, 0.005 * mean) << seed;
    EXPECT_NEAR(training::followPeriod(at, value, 0.97 * mean), mean, 0.005 * mean) << seed;
    EXPECT_EQ(training::followPeriod(at, value, 1.3 * mean), 1.3 * mean) << seed;
    at.resize(120);  // two steps
    value.resize(120);
    EXPECT_EQ(training::followPeriod(at, value, 1.04 * mean), 1.04 * mean) << seed;
  }
  EXPECT_EQ(training::followPeriod({}, {}, 100.0), 100.0);
}

TEST(TrainingTest, TooFewStepsHaveNoPeriod) {
  TrainingReport r = analyse(ringJob(3, steps(2, 250'000'000), {{0, 900'000}}));
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_FALSE(r.jobs[0].period.period_s);
  EXPECT_EQ(r.jobs[0].period.why, "too few steps");
}

// Live: report intervals of 1 s into the analyzer's trailing window; the batch size changes mid-run.
TEST(TrainingTest, APeriodChangeIsFollowedWithinAFewSteps) {
  auto a = steps(60, 200'000'000);
  std::vector<int64_t> s = a;
  int64_t t = a.back() + 200'000'000;
  const int64_t change = t;
  for (int i = 0; i < 40; ++i, t += 320'000'000) s.push_back(t);
  int64_t followed_at = 0;
  LiveRig(1'000'000'000).run(ringJob(4, s, {{0, 300'000}}), [&](const IntervalReport& ir, TrainingAnalyzer& an) {
    TrainingReport r = an.analyze();
    if (followed_at == 0 && ir.end_ns > change && !r.jobs.empty() && r.jobs[0].period.period_s &&
        std::abs(*r.jobs[0].period.period_s - 0.32) < 0.01 * 0.32) {
      followed_at = ir.end_ns;
    }
  });
  ASSERT_GT(followed_at, 0) << "never followed";
  // Within a few periods of the new pace (the bound: eight of them, as the recent-steps window).
  EXPECT_LE(followed_at - change, 8 * 320'000'000LL) << (followed_at - change) / 1e9 << " s";
}

training::TopologyResult classify(int n, const std::vector<std::pair<int, int>>& edges, uint64_t bytes = 1'000'000) {
  training::TopologyInput in;
  for (int i = 1; i <= n; ++i) in.hosts.push_back(ip(i));
  in.bytes.assign(n, std::vector<uint64_t>(n, 0));
  for (auto [a, b] : edges) {
    in.bytes[a - 1][b - 1] += bytes;
    in.bytes[b - 1][a - 1] += bytes / 40;  // the ACKs
    in.flow_bytes.push_back(bytes);
  }
  return training::classifyTopology(in);
}

TEST(TrainingTest, TopologyClasses) {
  // Ring 1 > 3 > 2 > 4 > 1: the successors, and the order from the lowest address.
  auto ring = classify(4, {{1, 3}, {3, 2}, {2, 4}, {4, 1}});
  EXPECT_EQ(ring.report.kind, "ring");
  EXPECT_EQ(ring.report.order, (std::vector<std::string>{ip(1), ip(3), ip(2), ip(4)}));
  EXPECT_EQ(ring.successor, (std::vector<int>{2, 3, 1, 0}));
  EXPECT_LT(ring.report.reverse_share, 0.05);
  // Star: a broadcast from 2.
  auto star = classify(5, {{2, 1}, {2, 3}, {2, 4}, {2, 5}});
  EXPECT_EQ(star.report.kind, "star");
  EXPECT_EQ(star.report.servers, std::vector<std::string>{ip(2)});
  // Tree: root 1, relays 2 and 3, leaves 4..7, reduce up and broadcast down.
  std::vector<std::pair<int, int>> t;
  for (auto [a, b] : std::vector<std::pair<int, int>>{{1, 2}, {1, 3}, {2, 4}, {2, 5}, {3, 6}, {3, 7}}) {
    t.emplace_back(a, b);
    t.emplace_back(b, a);
  }
  auto tree = classify(7, t);
  EXPECT_EQ(tree.report.kind, "tree");
  EXPECT_EQ(tree.report.servers, (std::vector<std::string>{ip(1), ip(2), ip(3)}));
  EXPECT_EQ(tree.roles[0], "root");
  EXPECT_EQ(tree.roles[1], "relay");
  EXPECT_EQ(tree.roles[6], "leaf");
  // Full mesh of 5.
  std::vector<std::pair<int, int>> m;
  for (int a = 1; a <= 5; ++a) {
    for (int b = 1; b <= 5; ++b) {
      if (a != b) m.emplace_back(a, b);
    }
  }
  EXPECT_EQ(classify(5, m).report.kind, "mesh");
  // Parameter servers 5 and 6, workers 1..4, push and pull.
  std::vector<std::pair<int, int>> ps;
  for (int w = 1; w <= 4; ++w) {
    for (int s = 5; s <= 6; ++s) {
      ps.emplace_back(w, s);
      ps.emplace_back(s, w);
    }
  }
  auto p = classify(6, ps);
  EXPECT_EQ(p.report.kind, "parameter-server");
  EXPECT_EQ(p.report.servers, (std::vector<std::string>{ip(5), ip(6)}));
  EXPECT_EQ(p.report.workers.size(), 4u);
  // Two unrelated pairs in one job: nothing to name.
  EXPECT_EQ(classify(4, {{1, 2}, {3, 4}}).report.kind, "unknown");
}

// ---- Current parallelism (SPEC "Current parallelism", "Phases of a step"): jobs laid out here packet by packet,
// with their compute, through the real engine, aggregator and analyzer.

// Frames of whole payload: `frames` 1514-byte frames (1448 bytes of payload each) from src to dst at t.
void frames(std::vector<PacketRecord>* v, int64_t t, int src, int dst, uint64_t count) {
  burst(v, t, src, dst, count * 1514);
}

constexpr int64_t kMs = 1'000'000;

// GPipe over `pipelines` (each a list of hosts in stage order): per step, `mb` microbatches forward (a stage passes
// each on after cf of compute), then backward in reverse order (cb each, about twice the forward), then each
// stage's data-parallel group (the same stage of every pipeline) reduces its gradients once the stage's backward
// is done in every pipeline: both ways at once between two replicas, a ring between more. The truth is the
// layout itself.
std::vector<PacketRecord> gpipe(const std::vector<std::vector<int>>& pipelines, int mb, int64_t cf, int64_t cb,
                                uint64_t act_frames, uint64_t dp_frames, const std::vector<int64_t>& starts) {
  std::vector<PacketRecord> v;
  const size_t stages = pipelines[0].size();
  const int64_t hop = kMs / 5;  // a microbatch's transfer
  for (int64_t t0 : starts) {
    std::vector<int64_t> done(stages, 0);  // per stage: when its backward is done in every pipeline
    for (const std::vector<int>& p : pipelines) {
      std::vector<std::vector<int64_t>> f(stages, std::vector<int64_t>(mb, 0)), b = f;
      for (size_t s = 0; s < stages; ++s) {
        for (int k = 0; k < mb; ++k) {
          int64_t ready = k > 0 ? f[s][k - 1] : t0;
          if (s > 0) ready = std::max(ready, f[s - 1][k] + hop);
          f[s][k] = ready + cf;
          if (s + 1 < stages) frames(&v, f[s][k], p[s], p[s + 1], act_frames);
        }
      }
      for (size_t s = stages; s-- > 0;) {
        for (int k = mb - 1; k >= 0; --k) {
          int64_t ready = k + 1 < mb ? b[s][k + 1] : f[s][mb - 1];
          if (s + 1 < stages) ready = std::max(ready, b[s + 1][k] + hop);
          b[s][k] = ready + cb;
          if (s > 0) frames(&v, b[s][k], p[s], p[s - 1], act_frames);
        }
        done[s] = std::max(done[s], b[s][0]);
      }
    }
    for (size_t s = 0; s < stages && pipelines.size() >= 2 && dp_frames > 0; ++s) {
      const size_t d = pipelines.size();
      for (size_t q = 0; q < d; ++q) {
        const int from = pipelines[q][s];
        if (d == 2) {
          frames(&v, done[s] + hop, from, pipelines[1 - q][s], dp_frames);
        } else {
          frames(&v, done[s] + hop, from, pipelines[(q + 1) % d][s], dp_frames);
        }
      }
    }
  }
  return v;
}

TEST(TrainingTest, APipelineIsNamedWithItsStagesInOrder) {
  // Four stages on hosts 3 > 1 > 4 > 2 (stage order is not address order), 4 microbatches, steps of 400 ms with
  // 3% jitter: forward 10 ms and backward 20 ms per microbatch and stage.
  const std::vector<int> stages{3, 1, 4, 2};
  const auto s = steps(14, 400 * kMs, 0.03);
  TrainingReport r = analyse(gpipe({stages}, 4, 10 * kMs, 20 * kMs, 44, 0, s));
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobReport& j = r.jobs[0];
  ASSERT_TRUE(j.period.period_s) << j.period.why;
  EXPECT_NEAR(*j.period.period_s, meanStep(s), 0.03 * meanStep(s));
  EXPECT_EQ(j.topology.kind, "pipeline") << j.topology.evidence;
  EXPECT_EQ(j.topology.order, (std::vector<std::string>{ip(3), ip(1), ip(4), ip(2)})) << j.topology.evidence;
  ASSERT_EQ(j.topology.pipelines.size(), 1u);
  EXPECT_TRUE(j.topology.groups.empty());
  for (const RankReport& k : j.ranks) EXPECT_EQ(k.role, "stage");
  // Microbatch trains: more phases than stages, and most of the step idle (the pipeline's compute and bubble).
  EXPECT_GE(j.phases.count, 4u);
  EXPECT_GT(j.phases.idle_share, 0.5);
  EXPECT_FALSE(j.gradient_bytes);  // activations say nothing of the parameters
  // The same pipeline run the other way (stage 0 on host 2) is named the other way.
  TrainingReport back = analyse(gpipe({{2, 4, 1, 3}}, 4, 10 * kMs, 20 * kMs, 44, 0, s));
  ASSERT_EQ(back.jobs.size(), 1u);
  EXPECT_EQ(back.jobs[0].topology.order, (std::vector<std::string>{ip(2), ip(4), ip(1), ip(3)}))
      << back.jobs[0].topology.evidence;
}

TEST(TrainingTest, AHybridJobNamesEachPipelineAndEachDataParallelGroup) {
  // Two pipelines of three stages, 1 > 5 > 3 and 2 > 6 > 4; stage s of both is a data-parallel group (1/2, 5/6,
  // 3/4) that reduces 40 times the bytes of a microbatch's activations. The light pipeline edges are structure.
  const std::vector<std::vector<int>> pipes{{1, 5, 3}, {2, 6, 4}};
  const auto s = steps(14, 400 * kMs, 0.03);
  TrainingReport r = analyse(gpipe(pipes, 4, 10 * kMs, 20 * kMs, 11, 440, s));
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobReport& j = r.jobs[0];
  ASSERT_TRUE(j.period.period_s) << j.period.why;
  EXPECT_EQ(j.topology.kind, "hybrid") << j.topology.evidence;
  EXPECT_EQ(j.topology.pipelines, (std::vector<std::vector<std::string>>{{ip(1), ip(5), ip(3)}, {ip(2), ip(6), ip(4)}}))
      << j.topology.evidence;
  EXPECT_EQ(j.topology.groups, (std::vector<std::vector<std::string>>{{ip(1), ip(2)}, {ip(5), ip(6)}, {ip(3), ip(4)}}));
  EXPECT_TRUE(std::any_of(j.topology.edges.begin(), j.topology.edges.end(), [](const TopologyEdge& e) {
    return e.light && e.steps_share >= 0.8;
  })) << "the pipeline edges are listed as light structure";
  // Model size: each two-replica group sends its stage's gradient once each way: 440 frames of payload per stage.
  ASSERT_TRUE(j.gradient_bytes);
  EXPECT_NEAR(*j.gradient_bytes, 3 * 440.0 * kPayload, 1.0);
}

// ZeRO-3 / FSDP over hosts 1..n: per step and layer, the layer gathered (a ring: each rank passes n-1 shards of
// `shard` frames to its successor) before its forward (cf) and again before its backward (cb), then its gradient
// reduce-scattered (each rank sends one shard to every other).
std::vector<PacketRecord> sharded(int n, int layers, uint64_t shard, const std::vector<int64_t>& starts) {
  std::vector<PacketRecord> v;
  for (int64_t t : starts) {
    auto gather = [&] {
      for (int r = 1; r <= n; ++r) frames(&v, t, r, r % n + 1, shard * (n - 1));
      t += 2 * kMs;
    };
    for (int l = 0; l < layers; ++l) {
      gather();
      t += 12 * kMs;
    }
    for (int l = 0; l < layers; ++l) {
      gather();
      t += 24 * kMs;
      for (int a = 1; a <= n; ++a) {
        for (int b = 1; b <= n; ++b) {
          if (a != b) frames(&v, t, a, b, shard);
        }
      }
      t += 2 * kMs;
    }
  }
  return v;
}

// A ring job of a few bursts a step (sparse: most of its 100 µs bins empty), with a burst of two hosts of no job
// (7 and 8) between its steps.
std::vector<PacketRecord> ringWithABurstBetween() {
  auto v = ringJob(4, steps(12, 250'000'000, 0.2), {{0, 300'000}, {0.3, 40'000}, {0.5, 100'000}});
  burst(&v, kT0 + 500'000'000, 7, 8, 5'000'000);
  return v;
}

// `v` beside a flow of a 200-byte frame every 50 µs from host 1 to host 2 over [from, to): every bin of the job
// filled (by default over the 3.1 s of ringWithABurstBetween).
std::vector<PacketRecord> everyBinFilled(std::vector<PacketRecord> v, int64_t from = kT0,
                                         int64_t to = kT0 + 3'100'000'000) {
  for (int64_t t = from; t < to; t += 50'000) {
    PacketRecord r;
    r.ts_ns = t;
    r.wire_len = 200;
    r.key = flow(1, 2, 6000);
    v.push_back(r);
  }
  return v;
}

// A job whose bins are mostly empty has its envelopes, backlogs, steps' bytes, duty cycle and phases read from its
// nonzero bins alone; they must be the walks over every bin to the bit. The whole training report (every job's
// figures, as JSON) both ways, for a ring job with a burst of no job's hosts between its steps, a hybrid of two
// pipelines, a sharded job, and the ring job beside a flow that fills every bin (always every bin); offline and at
// every interval of a live run.
TEST(TrainingTest, ANonzeroBinsReadingEqualsTheWalkOverEveryBin) {
  const auto ring = ringWithABurstBetween();
  const auto filled = everyBinFilled(ring);
  const std::vector<std::pair<std::string, std::vector<PacketRecord>>> jobs{
      {"ring", ring},
      {"hybrid", gpipe({{1, 5, 3}, {2, 6, 4}}, 4, 10 * kMs, 20 * kMs, 11, 440, steps(14, 400 * kMs, 0.03))},
      {"sharded", sharded(4, 4, 20, steps(14, 300 * kMs, 0.02))},
      {"filled", filled}};
  const EngineConfig ec;
  auto json = [&](const TrainingReport& r) {
    auto j = trainingJson(r, ec);
    j.erase("analysis_ms");  // the analysis' own run time
    return j.dump();
  };
  struct Got {
    std::string whole;
    std::vector<std::string> intervals;
  };
  // Each job's own period is read (so that its steps, duty cycle and phases are compared too).
  auto jobsPeriod = [&](const std::string& whole) {
    const auto j = nlohmann::ordered_json::parse(whole);
    return !j.at("jobs").empty() && j.at("jobs")[0].at("period").at("period_s").is_number();
  };
  auto both = [&](const std::vector<PacketRecord>& v) {
    std::array<Got, 2> got;
    for (bool sparse : {true, false}) {
      training::setSparseBins(sparse);
      Got& g = got[sparse ? 0 : 1];
      TrainingConfig cfg;
      cfg.pair_periods = true;  // each heavy pair's period too (analyze --json)
      g.whole = json(analyse(v, cfg));
      LiveRig rig(100'000'000, cfg);
      rig.run(v, [&](const IntervalReport&, TrainingAnalyzer& an) { g.intervals.push_back(json(an.analyze())); });
    }
    training::setSparseBins(true);
    return got;
  };
  for (const auto& [name, v] : jobs) {
    SCOPED_TRACE(name);
    const uint64_t readings = training::sparseReadings();
    const auto got = both(v);
    // The nonzero-bin reading ran for the sparse jobs (and for the filled one's pairs, whose bins it does not fill).
    EXPECT_GT(training::sparseReadings(), readings);
    EXPECT_EQ(got[0].whole, got[1].whole);
    ASSERT_EQ(got[0].intervals.size(), got[1].intervals.size());
    EXPECT_GT(got[0].intervals.size(), 20u);
    for (size_t i = 0; i < got[0].intervals.size(); ++i) EXPECT_EQ(got[0].intervals[i], got[1].intervals[i]) << i;
    EXPECT_TRUE(jobsPeriod(got[0].whole)) << got[0].whole.substr(0, 400);
  }
  // The fold at the period from the nonzero bins holds only where the period's and the phase's bits allow it (see
  // foldNonzero): ring jobs of twenty step periods from 150 to 450 ms, with jitter, each read as a period of its own
  // bits, offline.
  std::mt19937 rng(21);
  for (int k = 0; k < 20; ++k) {
    const int64_t period = 150 * kMs + static_cast<int64_t>(rng() % (300 * kMs));
    const auto v = ringJob(3 + k % 3, steps(10, period, 0.02 * (k % 4), 100 + k), {{0, 200'000}, {0.4, 60'000}});
    SCOPED_TRACE(::testing::Message() << "step " << period << " ns");
    std::array<std::string, 2> whole;
    const uint64_t readings = training::sparseReadings();
    for (bool sparse : {true, false}) {
      training::setSparseBins(sparse);
      whole[sparse ? 0 : 1] = json(analyse(v));
    }
    training::setSparseBins(true);
    EXPECT_GT(training::sparseReadings(), readings);
    EXPECT_EQ(whole[0], whole[1]);
    EXPECT_TRUE(jobsPeriod(whole[0]));
  }
}

TEST(TrainingTest, AShardedJobIsNotPlainDataParallel) {
  const auto s = steps(14, 300 * kMs, 0.02);
  TrainingReport r = analyse(sharded(4, 4, 20, s));
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobReport& j = r.jobs[0];
  ASSERT_TRUE(j.period.period_s) << j.period.why;
  EXPECT_NEAR(*j.period.period_s, meanStep(s), 0.03 * meanStep(s));
  EXPECT_EQ(j.topology.kind, "sharded") << j.topology.evidence;
  // The phases: four forward gathers with compute between them; backward, a layer's reduction and the next
  // layer's gather are one burst group (no compute between them): g4, r4+g3, r3+g2, r2+g1, r1.
  EXPECT_EQ(j.phases.count, 9u);
  // G from the gathers and reductions: 4 layers of 4 shards of 20 frames of payload.
  ASSERT_TRUE(j.gradient_bytes);
  EXPECT_NEAR(*j.gradient_bytes, 4 * 4 * 20.0 * kPayload, 1.0);
  // Plain data parallel with three gradient buckets after a silent forward stays a ring.
  const auto d = steps(14, 200 * kMs, 0.02);
  TrainingReport ring = analyse(ringJob(4, d, {{0.7, 100'000}, {0.8, 100'000}, {0.9, 100'000}}));
  ASSERT_EQ(ring.jobs.size(), 1u);
  EXPECT_EQ(ring.jobs[0].phases.count, 3u);
  EXPECT_EQ(ring.jobs[0].topology.kind, "ring") << ring.jobs[0].topology.evidence;
  // So does one whose buckets are spread over its backward (no silence of half a step), its last bucket holding
  // most of the gradient: a sharded job's phases are each a small part of the step.
  TrainingReport spread = analyse(ringJob(4, d, {{0.2, 50'000}, {0.45, 50'000}, {0.7, 400'000}}));
  ASSERT_EQ(spread.jobs.size(), 1u);
  EXPECT_EQ(spread.jobs[0].phases.count, 3u);
  EXPECT_EQ(spread.jobs[0].topology.kind, "ring") << spread.jobs[0].topology.evidence;
}

TEST(TrainingTest, AllToAllPhasesAreExpertParallelAndPhasesAreWhereTheyWereSent) {
  // Four ranks, four all-to-all phases per step (dispatch and combine of two MoE layers), at known offsets.
  const auto s = steps(12, 250 * kMs, 0.0);
  const std::vector<int64_t> at{20 * kMs, 60 * kMs, 120 * kMs, 170 * kMs};
  std::vector<PacketRecord> v;
  for (int64_t t : s) {
    for (int64_t o : at) {
      for (int a = 1; a <= 4; ++a) {
        for (int b = 1; b <= 4; ++b) {
          if (a != b) frames(&v, t + o, a, b, 30);
        }
      }
    }
  }
  TrainingReport r = analyse(v);
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobReport& j = r.jobs[0];
  ASSERT_TRUE(j.period.period_s) << j.period.why;
  EXPECT_EQ(j.topology.kind, "expert-parallel") << j.topology.evidence;
  ASSERT_EQ(j.phases.count, 4u);
  EXPECT_EQ(j.phases.steps, j.period.steps);
  // The phases lie where they were sent: the step is cut at the start of its longest silence (the 100 ms from the
  // last phase to the next step's first, less the last phase's 0.1 ms and the cut's two-bin guard), so the first
  // phase is the one sent first, and the gaps are as sent. Each is as long as 30 frames at 4 Gbit/s plus the last
  // ACK (≈ 0.1 ms: one or two 100 µs bins), every pair in each.
  EXPECT_NEAR(j.phases.phases[0].offset_s, 0.1, 1e-3);
  for (size_t k = 1; k < 4; ++k) {
    EXPECT_NEAR(j.phases.phases[k].offset_s - j.phases.phases[k - 1].offset_s, (at[k] - at[k - 1]) / 1e9, 2e-4);
  }
  for (const PhaseReport& p : j.phases.phases) {
    EXPECT_EQ(p.pairs, 12u);
    EXPECT_EQ(p.senders, 4u);
    EXPECT_LE(p.length_s, 3e-4);
    EXPECT_NEAR(p.bytes, 12 * (30 * 1514 + 15 * 66), 12 * 66);
  }
  EXPECT_NEAR(j.phases.idle_s,
              *j.period.period_s - std::accumulate(j.phases.phases.begin(), j.phases.phases.end(), 0.0,
                                                   [](double x, const PhaseReport& p) { return x + p.length_s; }),
              1e-9);
}

TEST(TrainingTest, AReduceAndBroadcastAlongAPathIsNotAPipeline) {
  // Hosts 1 - 2 - 3: both ends reduce into 2 at once, then 2 broadcasts back to both: payload both ways on each
  // edge, one way after the other, but no single wave.
  const auto s = steps(14, 200 * kMs, 0.02);
  std::vector<PacketRecord> v;
  for (int64_t t : s) {
    frames(&v, t + 20 * kMs, 1, 2, 60);
    frames(&v, t + 20 * kMs, 3, 2, 60);
    frames(&v, t + 90 * kMs, 2, 1, 60);
    frames(&v, t + 90 * kMs, 2, 3, 60);
  }
  TrainingReport r = analyse(v);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_NE(r.jobs[0].topology.kind, "pipeline") << r.jobs[0].topology.evidence;
  EXPECT_EQ(r.jobs[0].topology.kind, "parameter-server");  // push to 2, pull from it
}

TEST(TrainingTest, AParameterServerWhosePushesAndPullsMeetIsNotSharded) {
  // Live on a loaded machine a PS job's ranks drift apart: one worker's push meets the server's reply to another,
  // so that every host sends payload in each of several phases spread over the step — what the sharded rule reads
  // (a CI run named the testbed's live PS job `sharded`). Its data edges are still a star on the server: no
  // worker sends a worker anything, where a sharded job's gathers go from rank to rank.
  const auto s = steps(14, 200 * kMs, 0.02);
  std::vector<PacketRecord> v;
  for (int64_t t : s) {
    for (int k = 0; k < 3; ++k) {
      const int64_t at = t + (20 + 60 * k) * kMs;
      for (int w : {1, 3, 4}) {
        frames(&v, at, w, 2, 20);
        frames(&v, at, 2, w, 20);
      }
    }
  }
  TrainingReport r = analyse(v);
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobReport& j = r.jobs[0];
  ASSERT_GE(std::count_if(j.phases.phases.begin(), j.phases.phases.end(),
                          [](const PhaseReport& p) { return p.senders == 4; }),
            3)
      << "the layout no longer has every host sending in three phases";
  EXPECT_EQ(j.topology.kind, "parameter-server") << j.topology.evidence;
  EXPECT_EQ(j.topology.servers, std::vector<std::string>{ip(2)});
  EXPECT_EQ(j.topology.workers, (std::vector<std::string>{ip(1), ip(3), ip(4)}));
}

// Co-bursts toward a destination against a brute force that walks every 100 us bin (empty ones included),
// offline (one delta) and live (10 ms intervals, an analysis after every interval: the backlog carries).
TEST(TrainingTest, CoburstsAndFanInBacklogEqualABruteForce) {
  std::mt19937 rng(7);
  std::vector<PacketRecord> v;
  std::uniform_int_distribution<int64_t> when(0, 50'000'000);
  std::uniform_int_distribution<uint64_t> size(3'000, 60'000);
  for (int i = 0; i < 400; ++i) burst(&v, kT0 + when(rng), 1 + static_cast<int>(rng() % 6), 9, size(rng), 8);
  burst(&v, kT0 + 25'000'000, 1, 9, 4'000'000, 40);  // an incast that stays above the buffer for many bins
  std::stable_sort(v.begin(), v.end(), [](const PacketRecord& a, const PacketRecord& b) { return a.ts_ns < b.ts_ns; });
  TrainingConfig cfg;
  cfg.receiver_buffer_bytes = 100'000;
  const double link = 10e9, drain = link * 1e-4 / 8, threshold = cfg.coburst_share * link * 1e-4 / 8;
  std::map<int64_t, std::map<int, uint64_t>> bins;  // bin -> source -> bytes toward 10.0.0.9
  for (const PacketRecord& p : v) {
    if (p.key.dst[3] == 9) bins[p.ts_ns / 100'000][p.key.src[3]] += p.wire_len;
  }
  std::vector<uint64_t> hist(16, 0);
  uint64_t cobursts = 0, most = 0, over = 0;
  double q = 0, qmax = 0;
  for (int64_t b = bins.begin()->first; b <= bins.rbegin()->first; ++b) {
    uint64_t k = 0, total = 0;
    if (auto it = bins.find(b); it != bins.end()) {
      for (const auto& [src, bytes] : it->second) {
        total += bytes;
        k += static_cast<double>(bytes) >= threshold;
      }
    }
    q = std::max(0.0, q + static_cast<double>(total) - drain);
    qmax = std::max(qmax, q);
    over += q > cfg.receiver_buffer_bytes;
    if (k) ++hist[std::min<uint64_t>(k, 16) - 1];
    cobursts += k >= 2;
    most = std::max(most, k);
  }
  ASSERT_GT(cobursts, 10u);  // the cases are exercised
  ASSERT_GT(over, 20u);
  auto check = [&](const TrainingReport& r, double backlog, const char* how) {
    auto d = std::find_if(r.destinations.begin(), r.destinations.end(),
                          [](const DestinationReport& x) { return x.host == "10.0.0.9"; });
    ASSERT_NE(d, r.destinations.end()) << how;
    EXPECT_EQ(d->sources_hist, hist) << how;
    EXPECT_EQ(d->cobursts, cobursts) << how;
    EXPECT_EQ(d->over_buffer_bins, over) << how;
    EXPECT_NEAR(backlog, qmax, 1e-6 * qmax + 1) << how;
  };
  TrainingReport offline = analyse(v, cfg);
  auto d = std::find_if(offline.destinations.begin(), offline.destinations.end(),
                        [](const DestinationReport& x) { return x.host == "10.0.0.9"; });
  ASSERT_NE(d, offline.destinations.end());
  EXPECT_EQ(d->max_sources, most);
  check(offline, d->max_backlog_bytes, "offline");

  LiveRig rig(10'000'000, cfg);
  TrainingReport live;
  double live_max = 0;
  int analyses = 0;
  rig.run(v, [&](const IntervalReport&, TrainingAnalyzer& an) {
    if (++analyses % 3 == 0) {  // sometimes several intervals per analysis, as a control thread behind
      live = an.analyze();
      for (const DestinationReport& x : live.destinations) {
        if (x.host == "10.0.0.9") live_max = std::max(live_max, x.max_backlog_bytes);
      }
    }
  });
  live = rig.analyzer.analyze();
  for (const DestinationReport& x : live.destinations) {
    if (x.host == "10.0.0.9") live_max = std::max(live_max, x.max_backlog_bytes);
  }
  check(live, live_max, "live");
}

// Which jobs co-burst toward a destination, against a brute force: two configured jobs (10.0.0.1-2 "alpha",
// 10.0.0.3-4 "beta") and a host of none (10.0.0.5) send toward 10.0.0.9, of no job, and 10.0.0.1, .4 and .5
// toward 10.0.0.3 of "beta"; no job is inferred beyond the two (max_jobs), so .5 and .9 stay of none. A bin's
// co-bursting senders are named by their job, "other" for none; a bin with two or more names counts as cross-job.
// 10.0.0.1 sends on two connections toward each destination: a sender bursts when its flows together pass the
// threshold.
TEST(TrainingTest, CoburstsNameTheJobsOfTheirSenders) {
  std::mt19937 rng(11);
  std::vector<PacketRecord> v;
  std::uniform_int_distribution<int64_t> when(0, 40'000'000);
  std::uniform_int_distribution<uint64_t> size(3'000, 40'000);
  auto send = [&](int src, int dst) {
    const auto port = static_cast<uint16_t>(src == 1 ? 5000 + rng() % 2 : 5000);
    burst(&v, kT0 + when(rng), src, dst, size(rng), 8, port);
  };
  for (int i = 0; i < 300; ++i) send(1 + static_cast<int>(rng() % 5), 9);
  for (int i = 0; i < 240; ++i) send(std::array{1, 4, 5}[rng() % 3], 3);
  TrainingConfig cfg;
  cfg.jobs = {{"beta", {*parseCidr("10.0.0.3/32"), *parseCidr("10.0.0.4/32")}},
              {"alpha", {*parseCidr("10.0.0.1/32"), *parseCidr("10.0.0.2/32")}}};
  cfg.max_jobs = 2;
  const double threshold = cfg.coburst_share * 10e9 * 1e-4 / 8;
  auto jobOf = [](int src) -> std::string { return src <= 2 ? "alpha" : src <= 4 ? "beta" : "other"; };
  // destination -> bin -> source -> bytes
  std::map<int, std::map<int64_t, std::map<int, uint64_t>>> bins;
  for (const PacketRecord& p : v) bins[p.key.dst[3]][p.ts_ns / 100'000][p.key.src[3]] += p.wire_len;
  struct Truth {
    uint64_t cobursts = 0, cross = 0;
    std::set<std::string> jobs;
  };
  std::map<int, Truth> truth;
  for (const auto& [dst, by_bin] : bins) {
    for (const auto& [b, by_src] : by_bin) {
      std::set<std::string> names;
      uint64_t k = 0;
      for (const auto& [src, bytes] : by_src) {
        if (static_cast<double>(bytes) < threshold) continue;
        ++k;
        names.insert(jobOf(src));
      }
      if (k < 2) continue;
      Truth& t = truth[dst];
      ++t.cobursts;
      t.cross += names.size() >= 2;
      t.jobs.insert(names.begin(), names.end());
    }
  }
  for (int dst : {3, 9}) {  // the cases are exercised: cross-job co-bursts, and all three names
    ASSERT_GT(truth[dst].cross, 5u) << dst;
    ASSERT_EQ(truth[dst].jobs, (std::set<std::string>{"alpha", "beta", "other"})) << dst;
  }
  ASSERT_LT(truth[9].cross, truth[9].cobursts);
  const TrainingReport r = analyse(v, cfg);
  for (const auto& [dst, t] : truth) {
    auto d = std::find_if(r.destinations.begin(), r.destinations.end(),
                          [&](const DestinationReport& x) { return x.host == ip(dst); });
    ASSERT_NE(d, r.destinations.end()) << dst;
    EXPECT_EQ(d->cobursts, t.cobursts) << dst;
    EXPECT_EQ(d->cross_job_cobursts, t.cross) << dst;
    EXPECT_EQ(d->jobs, std::vector<std::string>(t.jobs.begin(), t.jobs.end())) << dst;
  }
}

// The co-burst pass merges each flow's bins as ascending runs; a delta whose bins do not ascend (which the
// aggregator does not make; TrainingDelta is public) gets the same figures, sorted whole.
TEST(TrainingTest, CoburstsOfBinsOutOfOrderEqualThoseInOrder) {
  std::mt19937 rng(5);
  auto delta = [&](bool shuffled) {
    auto d = std::make_shared<TrainingDelta>();
    d->start_ns = kT0;
    d->end_ns = kT0 + 1'000'000'000;
    for (int src = 1; src <= 4; ++src) {
      for (uint16_t port : {5000, 5001}) {
        TrainingFlowBins f;
        f.key = flow(src, 9, port);
        for (int64_t b = 0; b < 10'000; b += 1 + (src + port) % 3) f.bins.emplace_back(kT0 / 100'000 + b, 20'000);
        if (shuffled) std::shuffle(f.bins.begin(), f.bins.end(), rng);
        f.packets = f.bins.size();
        f.bytes = f.bins.size() * 20'000;
        d->flows.push_back(std::move(f));
      }
    }
    return d;
  };
  EngineConfig ec;
  TrainingConfig cfg;
  cfg.receiver_buffer_bytes = 50'000;
  cfg.max_jobs = 0;  // the co-burst pass alone: a job's own analysis (its steps, its pairs) needs ascending bins
  std::vector<DestinationReport> got[2];
  for (bool shuffled : {false, true}) {
    TrainingAnalyzer a(cfg, ec.link_capacity_bps, ec.scales_ns, ec.rates_bps);
    a.ingest(delta(shuffled));
    got[shuffled] = a.analyze().destinations;
  }
  ASSERT_EQ(got[0].size(), 1u);
  ASSERT_GT(got[0][0].cobursts, 1000u);
  // Four senders of two connections each: a bin holds four bursting senders at most, not eight flows.
  EXPECT_EQ(got[0][0].max_sources, 4u);
  EXPECT_EQ(std::accumulate(got[0][0].sources_hist.begin() + 4, got[0][0].sources_hist.end(), uint64_t{0}), 0u);
  ASSERT_EQ(got[1].size(), 1u);
  EXPECT_EQ(got[1][0].cobursts, got[0][0].cobursts);
  EXPECT_EQ(got[1][0].sources_hist, got[0][0].sources_hist);
  EXPECT_EQ(got[1][0].max_backlog_bytes, got[0][0].max_backlog_bytes);
  EXPECT_EQ(got[1][0].over_buffer_bins, got[0][0].over_buffer_bins);
}

// The aggregator's per-flow bins (the engine's packet path): a bin per run of a flow's packets in one 100 µs bin, in
// the packets' order, even where a time goes back into an earlier bin. Times at every bin edge, on either side of
// 0, in batches of the engine's runs of several flows; against a brute force of floor divisions.
TEST(TrainingTest, FlowBinsEqualABruteForceAtEveryBinEdge) {
  std::mt19937_64 rng(7);
  const int64_t bin = TrainingConfig{}.bin_ns;
  std::vector<PacketRecord> v;
  for (int i = 0; i < 4000; ++i) {
    PacketRecord r;
    const int64_t edge = (static_cast<int64_t>(rng() % 41) - 20) * bin;  // bins -20 .. 20
    r.ts_ns = edge + static_cast<int64_t>(rng() % 3) - 1;                // its edge, or 1 ns either side
    if (rng() % 8 == 0) r.ts_ns = kT0 + static_cast<int64_t>(rng() % (50 * bin));
    r.wire_len = static_cast<uint32_t>(60 + rng() % 1400);
    r.key = flow(1 + static_cast<int>(rng() % 3), 9);
    v.push_back(r);
  }
  EngineConfig ec;
  ec.streams = false;
  ec.pairs_and_flows = false;
  Engine e(ec);
  e.addAggregator(makeTrainingAggregator(TrainingConfig{}, false));
  for (size_t i = 0; i < v.size(); i += 64)
    e.add(std::span<const PacketRecord>(v).subspan(i, std::min<size_t>(64, v.size() - i)));
  e.finish();
  const EngineResult r = e.result();
  ASSERT_TRUE(r.training);
  std::map<int, std::vector<std::pair<int64_t, uint32_t>>> want;  // by the flow's source host
  std::map<int, int64_t> cur;
  for (const PacketRecord& p : v) {
    const int64_t b = p.ts_ns >= 0 ? p.ts_ns / bin : -((-p.ts_ns + bin - 1) / bin);
    auto& bins = want[p.key.src[3]];
    if (bins.empty() || cur[p.key.src[3]] != b) bins.emplace_back(b, 0);
    cur[p.key.src[3]] = b;
    bins.back().second += p.wire_len;
  }
  ASSERT_EQ(r.training->flows.size(), want.size());
  for (const TrainingFlowBins& f : r.training->flows) EXPECT_EQ(f.bins, want[f.key.src[3]]);
}

// With the engine's pair and flow tables on, the training aggregator finds a run's flow through the flow table's
// hint (the first hint where it is added first, as `run`'s pipeline does, the second after the congestion
// evidence); its deltas are those of the same records without the tables, interval by interval, and most runs take
// their flow from the hint (none without the tables). Flows come and go so that idle ones are freed and their slots
// taken by new ones (a hint still naming a freed slot would put a returning flow's bytes in another's bins), some are
// beyond max_flows (untracked), and a small flow table evicts entries (their hints start afresh).
TEST(TrainingTest, FlowBinsThroughTheFlowTablesHintsEqualThoseWithout) {
  std::mt19937_64 rng(11);
  std::vector<PacketRecord> v;
  std::map<int, uint32_t> seq;
  // Phases of 4 ms: the flows of group 0 (hosts 1..12), then group 1 (13..24), then 0 again, then both together
  // (more than max_flows), then 1 again; in each, random flows of the group interleaved packet by packet and in
  // runs.
  const std::vector<std::vector<int>> phases = {{0}, {1}, {0}, {0, 1}, {1}};
  int64_t t = kT0;
  for (const std::vector<int>& groups : phases) {
    const int64_t end = t + 4'000'000;
    while (t < end) {
      const int g = groups[rng() % groups.size()];
      const int host = 1 + g * 12 + static_cast<int>(rng() % 12);
      const int run = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < run; ++i) {
        PacketRecord r;
        r.ts_ns = t;
        r.key = flow(host, 30);
        r.l4 = static_cast<uint8_t>(L4Kind::kTcp);
        r.len = rng() % 5 == 0 ? 0 : 1448;
        r.seq = seq[host];
        if (rng() % 9 != 0) seq[host] += r.len;  // now and then a segment is sent again
        r.wire_len = 66 + r.len;
        v.push_back(r);
        t += 1'000 + static_cast<int64_t>(rng() % 3'000);
      }
    }
  }
  TrainingConfig tc;
  tc.max_flows = 16;         // idle flows are freed at a close with 12 or more kept
  tc.window_ns = 2'000'000;  // idle for 2 ms
  uint64_t by_hint = 0;      // of the last deltas() run
  uint64_t refused = 0;      // of the last deltas() run: runs known to be untracked from their hint
  const auto deltas = [&](bool tables, size_t flow_table, bool training_first) {
    EngineConfig ec;
    ec.report_interval_ns = 1'000'000;
    ec.pairs_and_flows = tables;
    ec.flow_table_capacity = flow_table;
    Engine e(ec);
    auto evidence = std::make_unique<EvidenceAggregator>(EvidenceConfig{}, ec, true);
    auto training = makeTrainingAggregator(tc, true);
    const Aggregator* t = training.get();
    e.subscribe(evidence.get());
    if (training_first) e.addAggregator(std::move(training));
    e.addAggregator(std::move(evidence));
    if (!training_first) e.addAggregator(std::move(training));
    std::vector<std::shared_ptr<const TrainingDelta>> out;
    e.setIntervalSink([&](const IntervalReport& r) { out.push_back(r.training); });
    for (size_t i = 0; i < v.size(); i += 64) e.add(std::span(v).subspan(i, std::min<size_t>(64, v.size() - i)));
    e.finish();
    by_hint = trainingRunsByHint(*t);
    refused = trainingRefusedByHint(*t);
    return out;
  };
  const auto want = deltas(false, 65536, true);
  EXPECT_EQ(by_hint, 0u);
  EXPECT_EQ(refused, 0u);
  ASSERT_GE(want.size(), 20u);
  uint64_t untracked = 0;
  for (const auto& d : want) untracked += d->untracked_packets;
  EXPECT_GT(untracked, 100u);  // the mix holds what it is meant to: flows beyond max_flows
  for (const auto& [flow_table, training_first] :
       {std::pair{size_t{65536}, true}, std::pair{size_t{65536}, false}, std::pair{size_t{8}, true}}) {
    SCOPED_TRACE(::testing::Message() << "flow table " << flow_table << (training_first ? ", training first" : ""));
    const auto got = deltas(true, flow_table, training_first);
    // A run's hint is there unless its flow is new in its batch of 64 or was evicted: most with the table of 65536
    // (about 2,500 runs), fewer with 8, but some.
    EXPECT_GT(by_hint, flow_table == 8 ? 100u : 1000u);
    // A flow refused while max_flows were kept is known so from its hint until idle flows are freed (the epoch
    // changes): then it is looked up again and may be kept (the phase after both groups', where group 0's flows
    // go idle and group 1's, refused before, take their slots).
    EXPECT_GT(refused, flow_table == 8 ? 10u : 100u);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "interval " << i);
      EXPECT_EQ(got[i]->untracked_packets, want[i]->untracked_packets);
      EXPECT_EQ(got[i]->untracked_bytes, want[i]->untracked_bytes);
      ASSERT_EQ(got[i]->flows.size(), want[i]->flows.size());
      for (size_t f = 0; f < got[i]->flows.size(); ++f) {
        const TrainingFlowBins& x = got[i]->flows[f];
        const TrainingFlowBins& y = want[i]->flows[f];
        EXPECT_TRUE(x.key == y.key) << "flow " << f;
        EXPECT_EQ(x.packets, y.packets) << "flow " << f;
        EXPECT_EQ(x.bytes, y.bytes) << "flow " << f;
        EXPECT_EQ(x.bins, y.bins) << "flow " << f;
        EXPECT_EQ(x.payload, y.payload) << "flow " << f;
      }
    }
  }
}

// The most bytes of a job in any window of each scale that ends in the analysed stretch (the file, or the
// interval), its window reaching back into the bins before the stretch but not before the first: a brute force
// over the job's 100 µs bins, offline and at every interval of a live run.
std::vector<uint64_t> bruteJobEnvelopes(const std::vector<PacketRecord>& v, int64_t from_ns, int64_t to_ns,
                                        const std::vector<int64_t>& scales) {
  std::map<int64_t, uint64_t> bins;  // every bin of the job up to to_ns
  for (const PacketRecord& p : v) {
    if (p.ts_ns < to_ns && p.key.src[3] <= 4 && p.key.dst[3] <= 4) bins[p.ts_ns / 100'000] += p.wire_len;
  }
  std::vector<uint64_t> out;
  for (int64_t tau : scales) {
    const int64_t k = tau / 100'000;
    uint64_t top = 0;
    for (int64_t end = from_ns / 100'000; end <= (to_ns - 1) / 100'000; ++end) {
      uint64_t sum = 0;
      for (auto it = bins.lower_bound(end - k + 1); it != bins.end() && it->first <= end; ++it) sum += it->second;
      top = std::max(top, sum);
    }
    out.push_back(top);
  }
  return out;
}

// The largest backlog of a job's bytes, for each drain rate, at a bin that ends in the analysed stretch (the file, or
// the interval): a brute force over every 100 µs bin from the first, the queue fed each bin's bytes and drained the
// rate's bytes of a bin, in the same arithmetic (doubles) as the analysis, so that the figures are equal to the bit.
std::vector<double> bruteJobBacklogs(const std::vector<PacketRecord>& v, int64_t from_ns, int64_t to_ns,
                                     const std::vector<double>& rates) {
  std::map<int64_t, uint64_t> bins;  // every bin of the job up to to_ns
  int64_t first = INT64_MAX;
  for (const PacketRecord& p : v) {
    first = std::min(first, p.ts_ns / 100'000);
    if (p.ts_ns < to_ns && p.key.src[3] <= 4 && p.key.dst[3] <= 4) bins[p.ts_ns / 100'000] += p.wire_len;
  }
  std::vector<double> out;
  for (double rate : rates) {
    const double drain = rate * 100'000.0 / 8e9;
    double q = 0, top = 0;
    for (int64_t b = first; b <= (to_ns - 1) / 100'000; ++b) {
      auto it = bins.find(b);
      q = std::max(0.0, q + static_cast<double>(it == bins.end() ? 0 : it->second) - drain);
      if (b >= from_ns / 100'000) top = std::max(top, q);
    }
    out.push_back(top);
  }
  return out;
}

// Where at most a sixteenth of a job's bins hold bytes, the envelopes and backlogs walk those alone, and the
// backlogs drain over the empty ones only while a queue changes; otherwise they walk every bin. Both give the same
// figures as the brute force: the ring job of a few bursts a step (sparse; the queue at 1 Gbit/s drains over many
// empty bins after each burst, at 100 Gbit/s within one), and the same job with a flow of a frame every 50 µs
// between two of its hosts (every bin). A burst of two hosts of no job lies between.
TEST(TrainingTest, AJobsEnvelopesAndBacklogsEqualABruteForce) {
  const auto sparse = ringWithABurstBetween();
  const auto dense = everyBinFilled(sparse);
  const std::vector<int64_t> scales = EngineConfig{}.scales_ns;
  const std::vector<double> rates = EngineConfig{}.rates_bps;
  const std::vector<std::string> hosts{ip(1), ip(2), ip(3), ip(4)};
  auto ofJob = [&](const TrainingReport& r) -> const JobReport* {
    for (const JobReport& j : r.jobs) {
      if (j.hosts == hosts) return &j;
    }
    return nullptr;
  };
  for (const auto* v : {&sparse, &dense}) {
    SCOPED_TRACE(v == &sparse ? "sparse" : "dense");
    const TrainingReport whole = analyse(*v);
    const JobReport* j = ofJob(whole);
    ASSERT_NE(j, nullptr);
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const PacketRecord& p : *v) {
      first = std::min(first, p.ts_ns);
      last = std::max(last, p.ts_ns);
    }
    const std::vector<double> want = bruteJobBacklogs(*v, first, last + 1, rates);
    EXPECT_EQ(j->backlog_bytes, want);
    EXPECT_EQ(j->envelope_bytes, bruteJobEnvelopes(*v, first, last + 1, scales));
    // A queue that builds up over a burst and drains over the bins after it: the slowest rate's is above a burst's
    // bins' drain, and the fastest's below the slowest's.
    ASSERT_EQ(want.size(), rates.size());
    EXPECT_GT(want.front(), 2 * rates.front() * 100'000.0 / 8e9);
    EXPECT_LT(want.back(), want.front());

    LiveRig rig(100'000'000);
    int checked = 0;
    int64_t from = INT64_MIN;
    rig.run(*v, [&](const IntervalReport& ir, TrainingAnalyzer& an) {
      if (from == INT64_MIN) from = ir.start_ns;
      const TrainingReport r = an.analyze();
      const int64_t start = from;
      from = ir.end_ns;
      const JobReport* lj = ofJob(r);
      if (lj == nullptr) return;
      EXPECT_EQ(lj->backlog_bytes, bruteJobBacklogs(*v, start, ir.end_ns, rates)) << "interval ending " << ir.end_ns;
      EXPECT_EQ(lj->envelope_bytes, bruteJobEnvelopes(*v, start, ir.end_ns, scales)) << "interval ending " << ir.end_ns;
      ++checked;
    });
    EXPECT_GT(checked, 10);
  }
}

// A live analyzer's window slides: the bins that leave it are dropped from the front of each flow's array, which
// is compacted from time to time. Its job figures at every interval equal those of a fresh analyzer given only
// the intervals inside the window. One flow sends a frame every 50 µs, so that it holds 20,000 bins in the window
// and its array is compacted several times (a bug there shifts or loses the window's bins); the job's three other
// flows hold a few bins per step, and are compacted at every few steps.
TEST(TrainingTest, ASlidingWindowsJobFiguresEqualThoseOfTheWindowsIntervalsAlone) {
  const auto v = everyBinFilled(ringJob(4, steps(40, 250'000'000, 0.05), {{0, 300'000}, {0.5, 100'000}}),
                                kT0 + 123'456'789, kT0 + 10'400'000'000);
  TrainingConfig cfg;
  cfg.window_ns = 2'000'000'000;
  constexpr int64_t kInterval = 100'000'000;
  constexpr size_t kInWindow = 20;  // intervals
  LiveRig rig(kInterval, cfg);
  std::vector<std::shared_ptr<const TrainingDelta>> deltas;
  int compared = 0;
  rig.run(v, [&](const IntervalReport& ir, TrainingAnalyzer& an) {
    deltas.push_back(ir.training);
    if (deltas.size() < kInWindow + 2) return;
    const TrainingReport live = an.analyze();
    TrainingAnalyzer fresh(cfg, rig.ec.link_capacity_bps, rig.ec.scales_ns, rig.ec.rates_bps);
    for (size_t i = deltas.size() - kInWindow; i < deltas.size(); ++i) fresh.ingest(deltas[i]);
    const TrainingReport alone = fresh.analyze();
    ASSERT_EQ(live.window_ns, alone.window_ns) << ir.end_ns;
    ASSERT_EQ(live.jobs.size(), 1u) << ir.end_ns;  // the ring's four hosts
    ASSERT_TRUE(live.jobs[0].period.period_s.has_value()) << ir.end_ns;
    ASSERT_EQ(live.jobs.size(), alone.jobs.size()) << ir.end_ns;
    for (size_t j = 0; j < live.jobs.size(); ++j) {
      const JobReport &a = live.jobs[j], &b = alone.jobs[j];
      SCOPED_TRACE(testing::Message() << "interval ending " << ir.end_ns << ", job " << a.name);
      EXPECT_EQ(a.hosts, b.hosts);
      EXPECT_EQ(a.window_bytes, b.window_bytes);
      EXPECT_EQ(a.baseline_bps, b.baseline_bps);
      EXPECT_EQ(a.period.period_s, b.period.period_s);
      EXPECT_EQ(a.period.quality, b.period.quality);
      EXPECT_EQ(a.period.steps, b.period.steps);
      EXPECT_EQ(a.step_bytes_mean, b.step_bytes_mean);
      EXPECT_EQ(a.step_bytes_cv, b.step_bytes_cv);
      EXPECT_EQ(a.topology.kind, b.topology.kind);
      ASSERT_EQ(a.steps.size(), b.steps.size());
      for (size_t k = 0; k < a.steps.size(); ++k) {
        EXPECT_EQ(a.steps[k].start_ns, b.steps[k].start_ns);
        EXPECT_EQ(a.steps[k].bytes, b.steps[k].bytes);
      }
    }
    ++compared;
  });
  EXPECT_GT(compared, 60);
}

// Each analysis carries the job's own 100 µs bins of the intervals it covers (the live view's per-job picture):
// equal to a brute-force binning of the job's packets in those intervals.
TEST(TrainingTest, IntervalBinsOfAJobEqualABruteForce) {
  auto v = ringJob(4, steps(12, 250'000'000), {{0, 300'000}, {0.5, 100'000}});
  burst(&v, kT0 + 500'000'000, 7, 8, 50'000);  // two hosts of no job
  LiveRig rig(100'000'000);
  std::vector<PacketRecord> sorted = v;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const PacketRecord& a, const PacketRecord& b) { return a.ts_ns < b.ts_ns; });
  int checked = 0;
  int64_t from = INT64_MIN;
  rig.run(v, [&](const IntervalReport& ir, TrainingAnalyzer& an) {
    if (from == INT64_MIN) from = ir.start_ns;
    const int64_t to = ir.end_ns;
    const TrainingReport r = an.analyze();
    const int64_t start = from;
    from = to;
    for (const JobReport& j : r.jobs) {
      if (j.hosts != std::vector<std::string>{ip(1), ip(2), ip(3), ip(4)}) continue;
      std::map<int64_t, uint64_t> want;
      for (const PacketRecord& p : sorted) {
        if (p.ts_ns < start || p.ts_ns >= to || p.key.src[3] > 4 || p.key.dst[3] > 4) continue;
        want[p.ts_ns / 100'000] += p.wire_len;
      }
      const std::vector<std::pair<int64_t, uint64_t>> expect(want.begin(), want.end());
      EXPECT_EQ(j.interval_bins, expect) << "interval ending " << to;
      uint64_t sum = 0;
      for (const auto& [index, bytes] : j.interval_bins) sum += bytes;
      EXPECT_EQ(sum, j.bytes);
      checked += !expect.empty();
    }
  });
  EXPECT_GT(checked, 10);
}

TEST(TrainingTest, ConfiguredJobsTakeTheirHostsAndSeparateJobsAreFound) {
  std::vector<PacketRecord> v = ringJob(3, steps(20, 200'000'000), {{0, 200'000}});
  // A second job on hosts 11..12, its own pace.
  for (int64_t t : steps(20, 310'000'000)) {
    burst(&v, t, 11, 12, 150'000);
    burst(&v, t + 2'000'000, 12, 11, 150'000);
  }
  TrainingReport r = analyse(v);
  ASSERT_EQ(r.jobs.size(), 2u);
  std::map<std::string, double> periods;
  for (const JobReport& j : r.jobs) periods[j.name] = j.period.period_s.value_or(0);
  EXPECT_NEAR(periods["job-10.0.0.1"], 0.2, 0.002);
  EXPECT_NEAR(periods["job-10.0.0.11"], 0.31, 0.0031);
  TrainingConfig cfg;
  cfg.jobs.push_back({"ring", {*parseCidr("10.0.0.0/29")}});
  r = analyse(v, cfg);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].name, "ring");
  EXPECT_TRUE(r.jobs[0].configured);
  EXPECT_EQ(r.jobs[0].hosts.size(), 3u);
  EXPECT_FALSE(parseCidr("10.0.0.0/33").ok());
  EXPECT_FALSE(parseCidr("nonsense").ok());
}

// Job inference judges a pair by its own hosts' traffic, not the port's: a 16-host all-to-all (each pair
// 0.4% of the port) and a small ring beside a storage transfer 20 times its size are both found whole.
TEST(TrainingTest, LargeMeshAndSmallJobBesideAHeavyTransferAreFound) {
  std::vector<PacketRecord> v;
  for (int64_t t : steps(10, 300'000'000)) {
    for (int a = 1; a <= 16; ++a) {
      for (int b = 1; b <= 16; ++b) {
        if (a != b) burst(&v, t + a * 1'000'000, 100 + a, 100 + b, 60'000, 8);
      }
    }
    for (int r = 1; r <= 3; ++r) burst(&v, t + 150'000'000, r, r % 3 + 1, 150'000);
  }
  burst(&v, kT0 + 200'000'000, 50, 51, 200'000'000, 2);  // a storage transfer, ~2 Gbit/s for 0.8 s
  TrainingReport r = analyse(v);
  std::map<size_t, std::string> by_size;
  for (const JobReport& j : r.jobs) by_size[j.hosts.size()] = j.topology.kind;
  // Its sources take turns a millisecond apart, a rhythm that the period reads before the 300 ms step (a step's
  // inner rhythm, docs/training.md "Limits"): then each phase holds some of the pairs (a mesh); read at the step,
  // one all-to-all phase (expert-parallel).
  EXPECT_TRUE(by_size[16] == "mesh" || by_size[16] == "expert-parallel") << by_size[16];
  EXPECT_EQ(by_size[3], "ring");
}

// A job that is renamed (a host with a lower address joins) is not also reported as a silent one.
TEST(TrainingTest, ARenamedJobIsNotReportedSilent) {
  std::vector<PacketRecord> v = ringJob(3, steps(30, 200'000'000), {{0, 300'000}});  // hosts 1..3
  const int64_t joined = kT0 + 3'000'000'000;
  for (int64_t t : steps(30, 200'000'000)) {
    if (t >= joined) burst(&v, t + 50'000'000, 1, 0, 400'000);  // host .0 joins: the name changes ...
  }
  std::vector<std::string> names;
  LiveRig(1'000'000'000)
      .run(
          v,
          [&](const IntervalReport&, TrainingAnalyzer& an) {
            TrainingReport r = an.analyze();
            names.clear();
            for (const JobReport& j : r.jobs) names.push_back(j.name + (j.idle_s > 1 ? " (idle)" : ""));
          },
          /*finish=*/false);
  // ... and keeps sending, so neither name is silent.
  ASSERT_EQ(names.size(), 1u) << testing::PrintToString(names);
}

}  // namespace
}  // namespace burstscope
