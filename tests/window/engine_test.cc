// The engine against brute-force implementations of SPEC's definitions, written here the slow, obvious way.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>

#include "burstscope/evidence.h"
#include "burstscope/mirror.h"
#include "burstscope/training.h"
#include "burstscope/window.h"
#include "src/window/exact_window.h"
#include "src/window/heavy_table.h"
#include "src/window/large_pages.h"
#include "src/window/stream.h"

namespace burstscope {
namespace {

struct Pkt {
  int64_t ts;
  uint32_t len;
};

// Bursty random traffic: trains of back-to-back packets separated by idle gaps, timestamps sorted, with
// duplicates. Starts at a realistic epoch time. Odd seeds put every timestamp on a 1 us grid (as
// microsecond captures do), so that packets exactly tau apart are common and window edges get exercised.
std::vector<Pkt> randomTrace(uint32_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  const int64_t grid = seed % 2 ? 1000 : 1;
  std::vector<Pkt> v;
  int64_t t = 1'795'294'232'000'000'000 + static_cast<int64_t>(rng() % 1'000'000);
  std::uniform_int_distribution<uint32_t> len(60, 1514);
  while (v.size() < n) {
    size_t burst = 1 + rng() % 60;
    for (size_t i = 0; i < burst && v.size() < n; ++i) {
      v.push_back({t, len(rng)});
      t += static_cast<int64_t>(rng() % 3 == 0 ? 0 : rng() % 1500);  // 0..1.5 us apart, some identical
    }
    t += static_cast<int64_t>(rng() % 4'000'000);  // idle up to 4 ms
  }
  for (Pkt& p : v) p.ts -= p.ts % grid;
  return v;
}

uint64_t bruteEnvelope(const std::vector<Pkt>& v, int64_t tau) {
  uint64_t best = 0;
  for (size_t j = 0; j < v.size(); ++j) {
    uint64_t sum = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].ts > v[j].ts - tau && v[i].ts <= v[j].ts) sum += v[i].len;
    }
    best = std::max(best, sum);
  }
  return best;
}

// E(τ) over a report interval [s, e): the maximum over every t in it of A(t-τ, t), which is attained at an arrival
// inside or at t = s (the packets still in the window, those at s excluded: they arrive at s).
uint64_t bruteIntervalEnvelope(const std::vector<Pkt>& v, int64_t s, int64_t e, int64_t tau) {
  uint64_t best = 0;
  for (const Pkt& p : v) {
    if (p.ts > s - tau && p.ts < s) best += p.len;
  }
  for (const Pkt& q : v) {
    if (q.ts < s || q.ts >= e) continue;
    uint64_t sum = 0;
    for (const Pkt& p : v) {
      if (p.ts > q.ts - tau && p.ts <= q.ts) sum += p.len;
    }
    best = std::max(best, sum);
  }
  return best;
}

uint64_t brutePeakBin(const std::vector<Pkt>& v, int64_t w) {
  std::map<int64_t, uint64_t> bins;
  for (const Pkt& p : v) bins[p.ts / w] += p.len;
  uint64_t best = 0;
  for (auto [b, s] : bins) best = std::max(best, s);
  return best;
}

// Bmax(r) = max over i <= j of (bytes of packets i..j) - r * (t_j - t_i): the closed form of Lindley's
// recursion, computed independently of it.
long double bruteBacklog(const std::vector<Pkt>& v, double rate_bps) {
  long double best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    long double sum = 0;
    for (size_t j = i; j < v.size(); ++j) {
      sum += v[j].len;
      best = std::max(best, sum - static_cast<long double>(rate_bps) * (v[j].ts - v[i].ts) / 8e9L);
    }
  }
  return best;
}

// Microbursts from S(t) = A(t - tau, t] evaluated at every instant where it can change.
std::vector<Microburst> bruteMicrobursts(const std::vector<Pkt>& v, int64_t tau, double threshold_bytes) {
  std::vector<int64_t> events;
  for (const Pkt& p : v) {
    events.push_back(p.ts);
    events.push_back(p.ts + tau);
  }
  std::sort(events.begin(), events.end());
  events.erase(std::unique(events.begin(), events.end()), events.end());
  std::vector<Microburst> out;
  bool in = false;
  for (int64_t t : events) {
    uint64_t s = 0;
    for (const Pkt& p : v) {
      if (p.ts > t - tau && p.ts <= t) s += p.len;
    }
    const bool above = static_cast<double>(s) >= threshold_bytes;
    if (above && !in) out.push_back({t, 0, 0, 0});
    if (above) out.back().peak_bps = std::max(out.back().peak_bps, static_cast<double>(s) * 8e9 / tau);
    if (!above && in) out.back().end_ns = t;
    in = above;
  }
  for (Microburst& m : out) {
    for (const Pkt& p : v) {
      if (p.ts > m.start_ns - tau && p.ts < m.end_ns) m.bytes += p.len;
    }
  }
  return out;
}

EngineConfig smallConfig() {
  EngineConfig c;
  c.scales_ns = {100'000, 300'000, 1'000'000, 5'000'000};
  c.exact_max_tau_ns = 5'000'000;
  c.rates_bps = {1e9, 10e9, 3.3e9};
  c.link_capacity_bps = 10e9;
  return c;
}

PacketRecord record(const Pkt& p, uint8_t flow = 1) {
  PacketRecord r;
  r.ts_ns = p.ts;
  r.wire_len = p.len;
  r.key.family = 4;
  r.key.src = {10, 0, 0, flow};
  r.key.dst = {10, 0, 0, 200};
  r.key.proto = 6;
  r.key.src_port = 1000;
  r.key.dst_port = 2000;
  return r;
}

EngineResult run(const EngineConfig& c, const std::vector<Pkt>& v) {
  EXPECT_TRUE(validateConfig(c).ok()) << validateConfig(c);
  Engine e(c);
  for (const Pkt& p : v) e.add(record(p));
  e.finish();
  return e.result();
}

TEST(EngineTest, EnvelopeAndAlignedBinsMatchBruteForceOnRandomTraces) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::vector<Pkt> v = randomTrace(seed, 1500);
    EngineConfig c = smallConfig();
    EngineResult r = run(c, v);
    ASSERT_EQ(r.port.scales.size(), c.scales_ns.size());
    uint64_t total = 0;
    for (const Pkt& p : v) total += p.len;
    EXPECT_EQ(r.port.bytes, total);
    EXPECT_EQ(r.port.packets, v.size());
    for (const ScaleResult& s : r.port.scales) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " tau " << s.tau_ns);
      EXPECT_TRUE(s.exact);
      EXPECT_EQ(s.envelope_bytes, bruteEnvelope(v, s.tau_ns));
      EXPECT_EQ(s.peak_bin_bytes, brutePeakBin(v, s.tau_ns));
      EXPECT_EQ(s.bins_spanned, static_cast<uint64_t>(v.back().ts / s.tau_ns - v.front().ts / s.tau_ns + 1));
      ASSERT_TRUE(s.utilisation);
      EXPECT_EQ(s.utilisation->count, s.bins_spanned) << "every aligned bin observed once, idle ones too";
    }
  }
}

// SPEC: E from base bins lies between the bin-window value and the truth: never above the truth, never
// below it by more than one base bin's bytes.
void expectWithinBinBound(const StreamResult& s, const std::vector<Pkt>& v, int64_t base_bin) {
  const uint64_t max_bin = brutePeakBin(v, base_bin);
  for (const ScaleResult& sc : s.scales) {
    SCOPED_TRACE(testing::Message() << "tau " << sc.tau_ns);
    const uint64_t truth = bruteEnvelope(v, sc.tau_ns);
    EXPECT_LE(sc.envelope_bytes, truth);
    EXPECT_GE(sc.envelope_bytes + max_bin, truth);
    EXPECT_EQ(sc.peak_bin_bytes, brutePeakBin(v, sc.tau_ns)) << "aligned bins are always exact";
  }
}

TEST(EngineTest, WindowIsHalfOpenAtItsOldEnd) {
  // Two packets exactly tau apart never share a window (t - tau, t]; three within tau do.
  EngineConfig c = smallConfig();
  const int64_t t0 = 1'700'000'000'000'000'000;
  EngineResult r =
      run(c, {{t0, 1000}, {t0 + 100'000, 1000}, {t0 + 400'000, 500}, {t0 + 499'999, 500}, {t0 + 499'999, 700}});
  EXPECT_EQ(r.port.scales[0].envelope_bytes, 1700u);  // 100 us: the last three (1 ns inside)
  EXPECT_EQ(r.port.scales[1].envelope_bytes, 2000u);  // 300 us: the first two
}

TEST(EngineTest, BinnedEnvelopesStayWithinSpecBound) {
  for (uint32_t seed = 11; seed <= 14; ++seed) {
    std::vector<Pkt> v = randomTrace(seed, 1200);
    EngineConfig c = smallConfig();
    c.exact_max_tau_ns = 0;  // no packet-level scales: all from base bins
    EngineResult r = run(c, v);
    for (const ScaleResult& s : r.port.scales) EXPECT_FALSE(s.exact);
    expectWithinBinBound(r.port, v, c.base_bin_ns);
    // Flow and pair windows always come from base bins; this trace is one flow.
    ASSERT_EQ(r.flows.top.size(), 1u);
    ASSERT_TRUE(r.flows.top[0].windows);
    EXPECT_EQ(r.flows.top[0].windows_since_ns, r.flows.top[0].first_ns);
    expectWithinBinBound(*r.flows.top[0].windows, v, c.base_bin_ns);
    expectWithinBinBound(*r.pairs.top[0].windows, v, c.base_bin_ns);
  }
}

// A pair's or flow's stream takes its closed base bins into its scales in batches (stream.h, kClosedBins); a result
// read before they are taken in (a live view's, before finish) still counts them. Only the open bin is left out.
TEST(EngineTest, ATrackedStreamsResultBeforeFinishCountsEveryClosedBin) {
  EngineConfig c = smallConfig();
  const int64_t t0 = 1'700'000'000'000'000'000;
  const uint64_t bytes[] = {100, 500, 300, 200, 900};  // one packet in each of five base bins
  Engine e(c);
  for (int i = 0; i < 5; ++i) e.add(record({t0 + i * c.base_bin_ns, static_cast<uint32_t>(bytes[i])}));
  const EngineResult mid = e.result();
  ASSERT_EQ(mid.flows.top.size(), 1u);
  ASSERT_TRUE(mid.flows.top[0].windows);
  const ScaleResult& bin = mid.flows.top[0].windows->scales[0];  // 100 µs: one base bin
  EXPECT_EQ(bin.peak_bin_bytes, 500u);                           // the four closed bins; the fifth is still open
  EXPECT_EQ(bin.envelope_bytes, 500u);
  EXPECT_EQ(mid.flows.top[0].windows->scales[1].envelope_bytes, 1000u);  // 300 µs: 500 + 300 + 200
  e.finish();
  const EngineResult end = e.result();
  EXPECT_EQ(end.flows.top[0].windows->scales[0].peak_bin_bytes, 900u);
  EXPECT_EQ(end.flows.top[0].windows->scales[1].envelope_bytes, 1400u);  // 300 + 200 + 900
}

TEST(EngineTest, ExactWindowOverItsMemoryBoundDemotesLongScalesAndSaysSo) {
  std::vector<Pkt> v = randomTrace(21, 1500);
  EngineConfig c = smallConfig();
  c.exact_max_entries = 40;  // fewer than the distinct timestamps of a 1 ms window at burst peaks
  EngineResult r = run(c, v);
  EXPECT_TRUE(r.port.scales[0].exact);
  EXPECT_FALSE(r.port.scales.back().exact);
  expectWithinBinBound(r.port, v, c.base_bin_ns);
  EXPECT_EQ(r.port.scales[0].envelope_bytes, bruteEnvelope(v, c.scales_ns[0]));
}

// Gaps longer than a 64-bit queue can drain in one step (at 400 Gbit/s a byte is one unit and 50 units drain
// per ns: 5.8 years empty any queue) take the saturating drain; shorter ones the plain one. Both kinds of gap
// here, with 64- and 128-bit queues, the records fed one by one and in batches.
TEST(EngineTest, VirtualBacklogAcrossGapsLongerThanAQueueCanDrainInOneStep) {
  std::vector<Pkt> v = randomTrace(35, 300);
  for (int64_t shift : {int64_t{1'000'000'000'000'000'000}, int64_t{3'000'000'000'000'000'000}}) {
    const std::vector<Pkt> part = randomTrace(36 + static_cast<uint32_t>(v.size() % 7), 300);
    for (Pkt p : part) {
      p.ts += shift;
      v.push_back(p);
    }
  }
  EngineConfig c = smallConfig();
  c.rates_bps = {1e9, 400e9, 3.3e9, 1'000'000'007};
  std::vector<PacketRecord> records;
  for (const Pkt& p : v) records.push_back(record(p));
  for (size_t batch : {size_t{1}, size_t{64}}) {
    Engine e(c);
    for (size_t i = 0; i < records.size(); i += batch) {
      e.add(std::span<const PacketRecord>(records.data() + i, std::min(batch, records.size() - i)));
    }
    e.finish();
    const EngineResult r = e.result();
    ASSERT_EQ(r.port.backlog.size(), c.rates_bps.size());
    for (const BacklogResult& b : r.port.backlog) {
      EXPECT_NEAR(b.max_backlog_bytes, static_cast<double>(bruteBacklog(v, b.rate_bps)), 1e-3)
          << "batch " << batch << " rate " << b.rate_bps;
    }
  }
}

TEST(EngineTest, VirtualBacklogMatchesClosedForm) {
  for (uint32_t seed = 31; seed <= 34; ++seed) {
    std::vector<Pkt> v = randomTrace(seed, 800);
    EngineConfig c = smallConfig();
    // Rates whose byte is a few 64-bit units (1, 10, 400 G; 3.3 G: 80 units) and one that needs 128 bits
    // (1,000,000,007 bit/s shares no factor with 8e9: a byte is 8e9 units).
    c.rates_bps = {1e9, 10e9, 3.3e9, 1'000'000'007, 400e9};
    EngineResult r = run(c, v);
    ASSERT_EQ(r.port.backlog.size(), c.rates_bps.size());
    for (const BacklogResult& b : r.port.backlog) {
      EXPECT_NEAR(b.max_backlog_bytes, static_cast<double>(bruteBacklog(v, b.rate_bps)), 1e-3)
          << "seed " << seed << " rate " << b.rate_bps;
    }
  }
}

// The backlogs four queues to an AVX-512 register (where the CPU has it) and in scalar registers: the same
// figures to the byte, every interval's and the run's, and the closed form's. The default rates (four narrow
// queues), three with a wide one between, and gaps longer than a batch may span in one register (those batches
// take the scalar path: both kinds meet in one run), fed one by one and in batches.
TEST(EngineTest, VirtualBacklogTheSameInOneRegisterAndInFour) {
  std::vector<Pkt> v = randomTrace(51, 2000);
  const std::vector<Pkt> later = randomTrace(52, 600);
  for (Pkt p : later) {
    p.ts += int64_t{2'000'000'000'000'000'000};  // past max_dt / 2 of the 400 G queue: scalar for that batch
    v.push_back(p);
  }
  std::vector<PacketRecord> records;
  for (const Pkt& p : v) records.push_back(record(p));
  for (const std::vector<double>& rates :
       {std::vector<double>{1e9, 10e9, 25e9, 100e9}, std::vector<double>{1e9, 1'000'000'007, 400e9, 3.3e9, 10e9}}) {
    for (size_t batch : {size_t{1}, size_t{256}}) {
      EngineConfig c = smallConfig();
      c.rates_bps = rates;
      c.report_interval_ns = 10'000'000;  // about 400 intervals before the jump
      c.baseline_ns = 100'000'000;
      std::vector<EngineResult> results;
      std::vector<std::vector<std::vector<double>>> intervals;
      for (bool simd : {true, false}) {
        internal::setBacklogSimd(simd);
        Engine e(c);
        std::vector<std::vector<double>> seen;
        e.setIntervalSink([&seen](const IntervalReport& r) { seen.push_back(r.port.backlog_bytes); });
        for (size_t i = 0; i < records.size(); i += batch) {
          e.add(std::span<const PacketRecord>(records.data() + i, std::min(batch, records.size() - i)));
        }
        e.finish();
        results.push_back(e.result());
        intervals.push_back(seen);
      }
      internal::setBacklogSimd(true);
      ASSERT_EQ(results[0].port.backlog.size(), rates.size());
      EXPECT_GT(intervals[0].size(), 10u);
      EXPECT_EQ(intervals[0], intervals[1]) << "batch " << batch;
      for (size_t i = 0; i < rates.size(); ++i) {
        EXPECT_EQ(results[0].port.backlog[i].max_backlog_bytes, results[1].port.backlog[i].max_backlog_bytes);
        EXPECT_NEAR(results[0].port.backlog[i].max_backlog_bytes, static_cast<double>(bruteBacklog(v, rates[i])), 1e-3)
            << "batch " << batch << " rate " << rates[i];
      }
    }
  }
  if (!internal::backlogSimdAvailable()) std::cout << "note: this CPU has no AVX-512: both runs took the scalar path\n";
}

// The register path against the scalar one queue by queue, two, three and four narrow queues at a time: random
// batches (equal times among them), long gaps (the register refuses those batches), a batch whose drain is exactly
// the most the register takes and one a nanosecond past it, interval closes between. And that the register
// path ran at all: a path that always declined would pass the engine's tests.
TEST(VirtualQueueTest, OneRegisterEqualsTheScalarPathQueueByQueue) {
  if (!internal::backlogSimdAvailable()) GTEST_SKIP() << "this CPU has no AVX-512: only the scalar path runs here";
  using internal::VirtualQueue;
  const std::vector<double> rates = {1e9, 10e9, 25e9, 100e9, 400e9, 3.3e9};  // a byte is at most 80 units: narrow
  std::mt19937_64 rng(7);
  for (size_t n : {size_t{2}, size_t{3}, size_t{4}}) {
    SCOPED_TRACE(n);
    std::vector<VirtualQueue> simd, scalar;
    for (size_t j = 0; j < n; ++j) {
      simd.emplace_back(rates[(j + n) % rates.size()]);
      scalar.emplace_back(rates[(j + n) % rates.size()]);
      ASSERT_FALSE(simd.back().wide());
    }
    // The most the register takes over a batch: half of INT64_MAX / (drain per ns) of the fastest queue.
    int64_t most = INT64_MAX;
    for (size_t j = 0; j < n; ++j) {
      const int64_t r = std::llround(rates[(j + n) % rates.size()]);
      most = std::min(most, INT64_MAX / (r / std::gcd(r, int64_t{8'000'000'000})) / 2);
    }
    auto both = [&](const std::vector<internal::Arrival>& batch) -> bool {
      const bool ran = VirtualQueue::addNarrowSimd(simd.data(), n, batch);
      internal::setBacklogSimd(false);
      if (!ran) VirtualQueue::addBatch(simd, batch);
      VirtualQueue::addBatch(scalar, batch);
      internal::setBacklogSimd(true);
      for (size_t j = 0; j < n; ++j) EXPECT_EQ(simd[j].maxBytes(), scalar[j].maxBytes()) << "queue " << j;
      return ran;
    };
    int64_t t = 1'795'294'232'000'000'000;
    size_t ran = 0, batches = 0;
    for (int b = 0; b < 300; ++b) {
      std::vector<internal::Arrival> batch;
      const size_t len = 1 + rng() % 300;
      for (size_t i = 0; i < len; ++i) {
        t += rng() % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 3000);
        batch.push_back({t, static_cast<uint32_t>(40 + rng() % 9000)});
      }
      // A gap of 32 years, past the register's bound for every set here (five of them: t stays in int64).
      if (b % 60 == 59) batch.push_back({t += 1'000'000'000'000'000'000, 1500});
      ran += both(batch);
      ++batches;
      if (b % 25 == 24) {
        t += 1'000;
        for (size_t j = 0; j < n; ++j) ASSERT_EQ(simd[j].closeInterval(t), scalar[j].closeInterval(t)) << j;
      }
    }
    EXPECT_GT(ran, batches * 9 / 10);
    EXPECT_LT(ran, batches);  // the batches with a long gap went the scalar way
    // At the register's bound and a nanosecond past it (the queues' last arrival is at t).
    EXPECT_TRUE(both({{t + 1, 9000}, {t + most, 1500}}));
    t += most;
    EXPECT_FALSE(both({{t + 1, 9000}, {t + most + 1, 1500}}));
  }
}

TEST(EngineTest, MicroburstsMatchBruteForce) {
  for (uint32_t seed = 41; seed <= 45; ++seed) {
    std::vector<Pkt> v = randomTrace(seed, 900);
    EngineConfig c = smallConfig();
    c.link_capacity_bps = 1e9;  // 50% of 1 Gbit/s over 100 us = 6250 bytes
    EngineResult r = run(c, v);
    ASSERT_TRUE(r.port.microbursts);
    const std::vector<Microburst> want = bruteMicrobursts(v, c.microburst_tau_ns, 6250.0);
    const MicroburstResult& got = *r.port.microbursts;
    ASSERT_GT(want.size(), 3u) << "the trace must contain microbursts for this test to mean anything";
    ASSERT_EQ(got.count, want.size()) << "seed " << seed;
    ASSERT_EQ(got.events.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " microburst " << i);
      EXPECT_EQ(got.events[i].start_ns, want[i].start_ns);
      EXPECT_EQ(got.events[i].end_ns, want[i].end_ns);
      EXPECT_EQ(got.events[i].bytes, want[i].bytes);
      EXPECT_DOUBLE_EQ(got.events[i].peak_bps, want[i].peak_bps);
    }
    EXPECT_EQ(got.durations_s.count, want.size());
    EXPECT_EQ(got.gaps_s.count, want.size() - 1);
  }
}

// Traffic that hovers about the threshold, arrivals every few microseconds: microbursts end by departures between
// arrivals while arrivals keep coming, and start again (the random traces above end theirs in idle gaps). Every
// start, end, volume and peak is the brute force's, fed one by one and in batches.
TEST(EngineTest, MicroburstsAboutTheThresholdMatchBruteForce) {
  for (uint32_t seed = 71; seed <= 76; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Pkt> v;
    int64_t t = 1'795'294'232'000'000'000;
    for (int i = 0; i < 4000; ++i) {
      // About 0.5 Gbit/s on average (the threshold), in stretches a little above and a little below it.
      const bool above = (i / 150) % 2 == 0;
      v.push_back({t, static_cast<uint32_t>(100 + rng() % 800)});
      t += static_cast<int64_t>((above ? 6'000 : 9'000) + rng() % 4'000);
      if (seed % 2) t -= t % 1000;  // some departures exactly at arrivals
    }
    EngineConfig c = smallConfig();
    c.link_capacity_bps = 1e9;  // 50% of 1 Gbit/s over 100 us = 6250 bytes
    const std::vector<Microburst> want = bruteMicrobursts(v, c.microburst_tau_ns, 6250.0);
    ASSERT_GT(want.size(), 20u) << "the trace must hover about the threshold for this test to mean anything";
    for (size_t batch : {size_t{1}, size_t{256}}) {
      Engine e(c);
      std::vector<PacketRecord> records;
      for (const Pkt& p : v) records.push_back(record(p));
      for (size_t i = 0; i < records.size(); i += batch) {
        e.add(std::span<const PacketRecord>(records.data() + i, std::min(batch, records.size() - i)));
      }
      e.finish();
      const EngineResult r = e.result();
      const MicroburstResult& got = *r.port.microbursts;
      ASSERT_EQ(got.events.size(), want.size()) << "seed " << seed << " batch " << batch;
      for (size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE(testing::Message() << "seed " << seed << " batch " << batch << " microburst " << i);
        EXPECT_EQ(got.events[i].start_ns, want[i].start_ns);
        EXPECT_EQ(got.events[i].end_ns, want[i].end_ns);
        EXPECT_EQ(got.events[i].bytes, want[i].bytes);
        EXPECT_DOUBLE_EQ(got.events[i].peak_bps, want[i].peak_bps);
      }
    }
  }
}

// Long microbursts far above the threshold, their window rising and falling inside them (stretches of small
// packets at different rates), then thinning out until departures between arrivals end them. Inside such a
// microburst most arrivals set no new peak and leave their departures waiting (ExactWindows' safe entries);
// the walk that comes later must still end each microburst at the departure the brute force ends it at. Fed one
// by one and in batches, with report intervals closed inside the microbursts and without.
TEST(ExactWindowsTest, LongMicroburstsWhoseDeparturesWaitMatchBruteForce) {
  const int64_t tau = 100'000;
  const uint64_t threshold = 6250;
  for (uint32_t seed = 81; seed <= 84; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Pkt> v;
    int64_t t = 1'795'294'232'000'000'000;
    for (int i = 0; i < 5000; ++i) {
      // Stretches of 100 packets: five busy ones, then two thin ones.
      const int stretch = (i / 100) % 7;
      if (stretch >= 5) {  // 20-60 us apart: the window falls below the threshold by departures between arrivals
        v.push_back({t, static_cast<uint32_t>(60 + rng() % 1400)});
        t += static_cast<int64_t>(20'000 + rng() % 40'000);
      } else {  // 60-300 byte packets at 7, 3.6, 1.8, 0.5 (about the threshold) and 3.6 Gbit/s
        constexpr int64_t kSpread[] = {200, 600, 1400, 5400, 600};
        v.push_back({t, static_cast<uint32_t>(60 + rng() % 240)});
        t += static_cast<int64_t>(100 + rng() % static_cast<uint64_t>(kSpread[stretch]));
      }
    }
    if (seed % 2) {
      for (Pkt& p : v) p.ts -= p.ts % 1000;  // a microsecond grid: equal times, departures exactly at arrivals
    }
    const std::vector<Microburst> want = bruteMicrobursts(v, tau, static_cast<double>(threshold));
    ASSERT_GT(want.size(), 10u);
    const uint64_t want_max = bruteEnvelope(v, tau);
    // Each interval's E(τ), [close - interval, close).
    const int64_t interval = 250'000;
    std::map<int64_t, uint64_t> want_interval;
    for (int64_t close = v.front().ts - v.front().ts % interval + interval; close - interval <= v.back().ts;
         close += interval) {
      want_interval[close] = bruteIntervalEnvelope(v, close - interval, close, tau);
    }
    // Also with scales about it and a FIFO bound that demotes the longest (never the microburst scale): the windows
    // are brought up to date (catchUp) at arrivals while safe entries wait.
    for (bool bounded : {false, true}) {
      const std::vector<int64_t> taus = bounded ? std::vector<int64_t>{tau / 2, tau, 3 * tau} : std::vector{tau};
      const size_t k = bounded ? 1 : 0;  // the microburst scale
      for (size_t batch : {size_t{1}, size_t{7}, size_t{256}}) {
        for (bool intervals : {false, true}) {
          SCOPED_TRACE(testing::Message() << "seed " << seed << " bounded " << bounded << " batch " << batch
                                          << " intervals " << intervals);
          internal::ExactWindows w(taus, bounded ? 120 : size_t{1} << 20,
                                   internal::MicroburstSpec{tau, threshold, 100'000});
          int64_t next_close = intervals ? want_interval.begin()->first : INT64_MAX;
          uint64_t got_max = 0;
          std::vector<uint64_t> maxima;
          std::vector<internal::Arrival> pending;
          auto flush = [&] {
            w.addBatch(pending);
            pending.clear();
          };
          for (const Pkt& p : v) {
            if (p.ts >= next_close) {
              flush();
              while (p.ts >= next_close) {
                w.closeInterval(next_close, &maxima);
                EXPECT_EQ(maxima[k], want_interval[next_close]) << "the interval closed at " << next_close;
                got_max = std::max(got_max, maxima[k]);
                next_close += interval;
              }
            }
            pending.push_back({p.ts, p.len});
            if (pending.size() == batch) flush();
          }
          flush();
          w.finish();
          EXPECT_TRUE(w.exact(k));
          EXPECT_EQ(std::max(got_max, w.maxBytes(k)), want_max);
          const MicroburstResult& got = *w.microbursts();
          ASSERT_EQ(got.events.size(), want.size());
          for (size_t i = 0; i < want.size(); ++i) {
            SCOPED_TRACE(testing::Message() << "microburst " << i);
            EXPECT_EQ(got.events[i].start_ns, want[i].start_ns);
            EXPECT_EQ(got.events[i].end_ns, want[i].end_ns);
            EXPECT_EQ(got.events[i].bytes, want[i].bytes);
            EXPECT_DOUBLE_EQ(got.events[i].peak_bps, want[i].peak_bps);
          }
          // The path this test is for: many arrivals inside the microbursts left their departures waiting (13-15%).
          EXPECT_GT(w.unwalkedInBurst(), v.size() / 10);
          if (bounded) {
            EXPECT_FALSE(w.exact(2)) << "the FIFO bound must have demoted the longest scale";
          }
        }
      }
    }
  }
}

// The plain scales take a batch a stretch at a time and let what has left go in whole marks (ExactWindows::addBatch):
// a stretch that cannot set a maximum is not walked. Traffic for it: steps of dense trains (packets 20 ns to 2 us
// apart, so that a stretch holds tens to hundreds of them) whose rate rises and falls, with idle gaps between steps
// and, for odd seeds, every time on a microsecond grid (equal times, within a batch and across batches; departures
// exactly at arrivals). Each interval's E(τ) and the whole run's, for every scale, against the definition: the
// window at every arrival from prefix sums over the sorted packets. In batches of 1, 7, 256 and of random sizes,
// with intervals closed at random times and without, with a FIFO bound that demotes the longest scales (the active
// ones must stay exact, the demoted ones a lower bound), and with every scale plain (no microburst scale).
TEST(ExactWindowsTest, PlainScalesTakenAStretchAtATimeMatchTheDefinition) {
  const std::vector<int64_t> taus{40'000, 100'000, 250'000, 1'000'000, 3'000'000};
  const int64_t mb_tau = 100'000;
  for (uint32_t seed = 91; seed <= 94; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Pkt> v;
    int64_t t = 1'795'294'232'000'000'000 + static_cast<int64_t>(rng() % 1'000'000);
    while (v.size() < 12'000) {
      const int trains = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < trains; ++k) {
        const int64_t spread = int64_t{20} << (rng() % 7);  // 20 ns to 1.3 us between packets
        const size_t n = 20 + rng() % 400;
        for (size_t i = 0; i < n; ++i) {
          v.push_back({t, static_cast<uint32_t>(60 + rng() % 1455)});
          t += static_cast<int64_t>(rng() % 4 == 0 ? 0 : rng() % static_cast<uint64_t>(spread));
        }
      }
      t += static_cast<int64_t>(rng() % 3'000'000);  // idle up to 3 ms
    }
    if (seed % 2) {
      for (Pkt& p : v) p.ts -= p.ts % 1000;
    }
    std::vector<uint64_t> prefix(v.size() + 1);
    for (size_t i = 0; i < v.size(); ++i) prefix[i + 1] = prefix[i] + v[i].len;
    auto upto = [&](int64_t x) {  // bytes of the packets at or before x
      return prefix[std::upper_bound(v.begin(), v.end(), x, [](int64_t a, const Pkt& p) { return a < p.ts; }) -
                    v.begin()];
    };
    // E(τ) over [s, e): the window at s (before its arrivals) and at every arrival in [s, e).
    auto envelope = [&](int64_t s, int64_t e, int64_t tau) {
      uint64_t best = upto(s - 1) - upto(s - tau);
      for (const Pkt& p : v) {
        if (p.ts >= s && p.ts < e) best = std::max(best, upto(p.ts) - upto(p.ts - tau));
      }
      return best;
    };
    // The FIFO bound: between the most entries (distinct times) any window of the microburst scale holds and the most
    // the longest scale's holds, so that the longest is demoted and the shortest kept.
    std::vector<int64_t> times;
    for (const Pkt& p : v) {
      if (times.empty() || times.back() != p.ts) times.push_back(p.ts);
    }
    auto most_entries = [&](int64_t tau) {
      size_t most = 0;
      for (size_t j = 0, i = 0; j < times.size(); ++j) {
        while (times[i] <= times[j] - tau) ++i;
        most = std::max(most, j - i + 1);
      }
      return most;
    };
    const size_t short_most = most_entries(mb_tau), long_most = most_entries(taus.back());
    ASSERT_GT(long_most, short_most + 100);
    const size_t bound = (short_most + long_most) / 2;
    // Three set-ups: with the microburst scale, the same under the FIFO bound, and every scale plain.
    for (int setup = 0; setup < 3; ++setup) {
      const bool bounded = setup == 1;
      std::optional<internal::MicroburstSpec> mb;
      if (setup != 2) mb = internal::MicroburstSpec{mb_tau, 40'000, 1000};
      for (int batching = 0; batching < 4; ++batching) {
        for (bool intervals : {false, true}) {
          SCOPED_TRACE(testing::Message() << "seed " << seed << " set-up " << setup << " batching " << batching
                                          << " intervals " << intervals);
          internal::ExactWindows w(taus, bounded ? bound : size_t{1} << 20, mb);
          std::mt19937_64 cut(seed * 7 + static_cast<uint32_t>(batching));
          auto batch_size = [&]() -> size_t {
            constexpr size_t kSizes[] = {1, 7, 256};
            return batching < 3 ? kSizes[batching] : 1 + cut() % 300;
          };
          std::vector<std::vector<uint64_t>> got_intervals;
          std::vector<std::pair<int64_t, int64_t>> spans;  // each closed interval's [start, end)
          int64_t start = v.front().ts;
          int64_t next_close = intervals ? start + 1 + static_cast<int64_t>(cut() % 2'000'000) : INT64_MAX;
          std::vector<internal::Arrival> pending;
          size_t want_size = batch_size();
          auto flush = [&] {
            if (!pending.empty()) w.addBatch(pending);
            pending.clear();
            want_size = batch_size();
          };
          for (const Pkt& p : v) {
            if (p.ts >= next_close) {
              flush();
              got_intervals.emplace_back();
              w.closeInterval(next_close, &got_intervals.back());
              spans.emplace_back(start, next_close);
              start = next_close;
              next_close = p.ts + 1 + static_cast<int64_t>(cut() % 2'000'000);
            }
            pending.push_back({p.ts, p.len});
            if (pending.size() >= want_size) flush();
          }
          flush();
          w.finish();
          for (size_t i = 0; i < taus.size(); ++i) {
            SCOPED_TRACE(testing::Message() << "tau " << taus[i]);
            if (!bounded) {
              EXPECT_TRUE(w.exact(i));
            } else if (i == taus.size() - 1) {
              // The bound must have demoted the longest; an active scale is exact, a demoted one a lower bound.
              EXPECT_FALSE(w.exact(i));
            }
            uint64_t got_max = w.maxBytes(i);
            for (size_t k = 0; k < spans.size(); ++k) {
              const uint64_t want = envelope(spans[k].first, spans[k].second, taus[i]);
              if (w.exact(i)) {
                EXPECT_EQ(got_intervals[k][i], want) << "the interval closed at " << spans[k].second;
              } else {
                EXPECT_LE(got_intervals[k][i], want) << "the interval closed at " << spans[k].second;
              }
            }
            const uint64_t want_max = envelope(v.front().ts, v.back().ts + 1, taus[i]);
            if (w.exact(i)) {
              EXPECT_EQ(got_max, want_max);
            } else {
              EXPECT_LE(got_max, want_max);
            }
          }
          // The paths this test is for: stretches passed without a walk, and whole marks left. (Under the bound, the
          // shortest scale stays active, with fewer stretches to pass.)
          EXPECT_TRUE(w.exact(0));
          EXPECT_GT(w.stretchesPassed(), v.size() / (bounded ? 200 : 50));
          EXPECT_GT(w.marksLeft(), v.size() / (bounded ? 200 : 50));
        }
      }
    }
  }
}

// Past their first kEventsInPlaceFrom, the kept microbursts are written in place up to the last kept: their room is
// taken once, so a live worker never stops to copy a list of up to a million of them into one twice the size (56-58
// ms on the project's VM for the last step, bench/README.md), and every microburst after the last kept is still
// counted.
TEST(ExactWindowsTest, KeptMicroburstsAreWrittenInPlaceAndTheRestCounted) {
  const int64_t tau = 100'000;
  const uint64_t threshold = 6250;  // 500 Mbit/s over 100 us
  const size_t kept = 3 * internal::ExactWindows::kEventsInPlaceFrom;
  internal::ExactWindows w({tau}, size_t{1} << 20, internal::MicroburstSpec{tau, threshold, kept});
  const Microburst* where = nullptr;
  int64_t t = 1'000'000'000;
  const int bursts = static_cast<int>(kept) + 1000;
  for (int b = 0; b < bursts; ++b) {
    std::vector<internal::Arrival> batch;
    // 15 kB in 10 us, then a pause in which the window empties.
    for (int i = 0; i < 10; ++i, t += 1000) batch.push_back({t, 1500});
    t += 400'000;
    w.addBatch(batch);
    const std::vector<Microburst>& events = w.microbursts()->events;
    if (where == nullptr && events.size() > internal::ExactWindows::kEventsInPlaceFrom) where = events.data();
    if (where != nullptr) {
      ASSERT_EQ(events.data(), where) << "moved after " << events.size() << " microbursts";
    }
  }
  w.finish();
  EXPECT_EQ(w.microbursts()->count, static_cast<uint64_t>(bursts));
  EXPECT_EQ(w.microbursts()->events.size(), kept);
  EXPECT_EQ(w.microbursts()->events.data(), where);
}

// Past kEventsInPlaceFrom, the kept microbursts' room is made resident a run of pages at a time, at least half a run
// ahead of the writes (MADV_POPULATE_WRITE, one call instead of a page fault for each 4 KiB page), and only there:
// the rest of the room stays address space. mincore() tells which pages are resident.
TEST(ExactWindowsTest, KeptMicroburstsRoomIsMadeResidentJustAheadOfTheirWrites) {
  // Small pages for this test's blocks: where transparent huge pages are "always" (not Debian's default), a touch
  // anywhere in a 2 MiB page makes all of it resident. And `meson test` sets MALLOC_PERTURB_, with which glibc's
  // malloc fills every block it hands out (the whole room resident at once). Both off for the test, and back as they
  // were after (the perturbation as the environment sets it; one set by GLIBC_TUNABLES comes back as none).
  struct Plain {
    int thp_disabled = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
    Plain() {
      prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
      mallopt(M_PERTURB, 0);
    }
    ~Plain() {
      const char* p = std::getenv("MALLOC_PERTURB_");
      mallopt(M_PERTURB, p != nullptr ? std::atoi(p) : 0);
      prctl(PR_SET_THP_DISABLE, thp_disabled == 1 ? 1 : 0, 0, 0, 0);
    }
  } plain;
  const int64_t tau = 100'000;
  internal::ExactWindows w({tau}, size_t{1} << 20, internal::MicroburstSpec{tau, 6250, size_t{1} << 20});
  std::vector<internal::Arrival> batch(16);
  int64_t t = 1'000'000'000;
  // Each packet a microburst of its own (7000 bytes, above the threshold while it is in the window).
  auto add = [&](size_t events) {
    while (w.microbursts()->count < events) {
      for (internal::Arrival& a : batch) {
        a = {t, 7000};
        t += 200'000;
      }
      w.addBatch(batch);
    }
  };
  const long page = sysconf(_SC_PAGESIZE);
  auto resident = [&](const Microburst* at) {
    const auto p = reinterpret_cast<uintptr_t>(at) & ~static_cast<uintptr_t>(page - 1);
    unsigned char v = 0;
    EXPECT_EQ(mincore(reinterpret_cast<void*>(p), static_cast<size_t>(page), &v), 0);
    return (v & 1) != 0;
  };
  const size_t run = internal::ExactWindows::kPopulateRun / sizeof(Microburst);  // 2048 events
  for (size_t kept : {internal::ExactWindows::kEventsInPlaceFrom + 100, size_t{50'000}, size_t{50'000} + run / 2}) {
    add(kept);
    const std::vector<Microburst>& events = w.microbursts()->events;
    ASSERT_EQ(events.size(), w.microbursts()->count);
    ASSERT_GT(events.capacity(), events.size() + 20 * run);
    // Not written yet: the next event, and the last of the half run after it.
    EXPECT_TRUE(resident(events.data() + events.size())) << "at " << kept << " events";
    EXPECT_TRUE(resident(events.data() + events.size() + run / 2 - 1)) << "at " << kept << " events";
    EXPECT_FALSE(resident(events.data() + events.size() + 10 * run)) << "at " << kept << " events";
  }
}

// Where more than kReservedEvents are kept, the list doubles again past its reserved room: it moves once there, not
// at every microburst.
TEST(ExactWindowsTest, KeptMicroburstsBeyondTheReservedRoomMoveOnce) {
  const int64_t tau = 100'000;
  const size_t kept = internal::ExactWindows::kReservedEvents + 3000;
  internal::ExactWindows w({tau}, size_t{1} << 20, internal::MicroburstSpec{tau, 6250, kept});
  // Each packet a microburst of its own: 7000 bytes, above the threshold for the 100 us it stays in the window.
  // Small batches, so that a list moving at every microburst fails after a few moves of 32 MiB.
  std::vector<internal::Arrival> batch(16);
  int64_t t = 1'000'000'000;
  const Microburst* where = nullptr;
  int moves = 0;
  while (w.microbursts()->count < kept + 1000) {
    for (internal::Arrival& a : batch) {
      a = {t, 7000};
      t += 200'000;
    }
    w.addBatch(batch);
    const std::vector<Microburst>& events = w.microbursts()->events;
    if (events.size() > internal::ExactWindows::kEventsInPlaceFrom) {
      if (where != nullptr && events.data() != where) ++moves;
      ASSERT_LE(moves, 1) << "moved again at " << events.size() << " microbursts";
      where = events.data();
    }
  }
  EXPECT_EQ(w.microbursts()->events.size(), kept);
  EXPECT_EQ(moves, 1);
}

TEST(EngineTest, MicroburstScaleNeedNotBeAReportedScale) {
  std::vector<Pkt> v = randomTrace(51, 900);
  EngineConfig c = smallConfig();
  c.scales_ns = {1'000'000, 5'000'000};
  c.link_capacity_bps = 1e9;
  c.microburst_tau_ns = 200'000;
  EngineResult r = run(c, v);
  EXPECT_EQ(r.port.scales.size(), 2u);
  EXPECT_EQ(r.port.microbursts->count, bruteMicrobursts(v, 200'000, 0.5 * 1e9 * 200e3 / 8e9).size());
  EXPECT_EQ(r.port.scales[0].envelope_bytes, bruteEnvelope(v, 1'000'000));
}

TEST(EngineTest, HoursLongGapIsCountedAsIdleBinsWithoutWalkingThem) {
  std::vector<Pkt> v = randomTrace(61, 300);
  const int64_t gap = int64_t{10} * 3600 * 1'000'000'000;  // ten hours
  std::vector<Pkt> later = randomTrace(62, 300);
  for (Pkt& p : later) v.push_back({p.ts + gap, p.len});
  EngineConfig c = smallConfig();
  EngineResult r = run(c, v);
  const ScaleResult& s = r.port.scales[0];
  EXPECT_EQ(s.bins_spanned, static_cast<uint64_t>(v.back().ts / s.tau_ns - v.front().ts / s.tau_ns + 1));
  EXPECT_EQ(s.utilisation->count, s.bins_spanned);
  EXPECT_GT(s.utilisation->counts[0], 360'000'000u - 1000);  // ten hours of empty 100 us bins
  EXPECT_EQ(s.envelope_bytes, bruteEnvelope(v, s.tau_ns));
}

// The default bounds are 7/8 of a power of two because an abseil table is at most 7/8 full and its slot count is
// a power of two less one: a bound one entry larger doubles the table's memory (docs/reliability.md). Each default
// bound's table, filled with distinct keys four times over (so that it evicts its lighter half again and again, each
// eviction leaving erased slots behind), must never take more slots than the bound needs.
template <typename Table>
void fillFourTimesOver(const EngineConfig& c, size_t bound) {
  SCOPED_TRACE(bound);
  Table table(c, bound);
  size_t most_slots = 0;
  for (uint32_t i = 0; i < 4 * bound; ++i) {
    PacketRecord r = record({1'000'000 + static_cast<int64_t>(i), 100 + i % 61}, 1);
    r.key.src = {10, static_cast<uint8_t>(i >> 16), static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
    table.add(r.key, r.ts_ns, r.wire_len);
    most_slots = std::max(most_slots, table.slotCount());
  }
  const HeavyResult result = table.result(0, /*with_windows=*/false);
  EXPECT_GE(result.evictions, 2 * bound);
  EXPECT_LE(result.entries, bound);
  EXPECT_LE(most_slots, bound * 8 / 7 + 1);
}

TEST(EngineTest, DefaultTableBoundsFillTheirTablesWithoutDoublingThem) {
  const EngineConfig c;
  fillFourTimesOver<internal::FlowTable>(c, c.flow_table_capacity);
  fillFourTimesOver<internal::PairTable>(c, c.pair_table_capacity);
}

TEST(EngineTest, HeavyFlowsStayOnTopThroughFlowTableEvictions) {
  EngineConfig c = smallConfig();
  c.flow_table_capacity = 64;
  c.pair_table_capacity = 64;
  c.top_k = 3;
  c.tracked_streams = 6;
  ASSERT_TRUE(validateConfig(c).ok());
  Engine e(c);
  std::mt19937 rng(7);
  int64_t t = 1'000'000'000'000;
  uint64_t heavy_bytes[3] = {};
  uint64_t total = 0;
  for (int i = 0; i < 20000; ++i) {
    t += 1000;
    PacketRecord r = record({t, 1500}, static_cast<uint8_t>(1 + i % 3));  // heavy flows 1..3
    if (i % 2 == 1) {
      r.wire_len = 64;
      r.key.src = {172, 16, static_cast<uint8_t>(rng()), static_cast<uint8_t>(rng())};  // a scan
      r.key.src_port = static_cast<uint16_t>(rng());
    } else {
      heavy_bytes[i % 3] += r.wire_len;
    }
    total += r.wire_len;
    e.add(r);
  }
  e.finish();
  EngineResult r = e.result();
  EXPECT_GT(r.flows.evictions, 0u);
  EXPECT_LE(r.flows.entries, c.flow_table_capacity);
  ASSERT_EQ(r.flows.top.size(), 3u);
  uint64_t top = 0;
  for (const HeavyHitter& h : r.flows.top) {
    ASSERT_EQ(h.key.src[0], 10);
    EXPECT_EQ(h.bytes, heavy_bytes[(h.key.src[3] - 1) % 3]);
    top += h.bytes;
    ASSERT_TRUE(h.windows);
    EXPECT_EQ(h.windows->bytes, h.bytes);
  }
  EXPECT_EQ(r.flows.other_bytes, total - top);
}

// Flows equal in bytes and in their first packet's time are listed by key, not in the table's order (its hash is
// seeded per process, so that order changed from run to run): 12 single-packet flows in one microsecond, the top
// 10 of them and all of them.
TEST(EngineTest, FlowsEqualInBytesAndFirstPacketAreListedByKey) {
  for (size_t top_k : {size_t{10}, size_t{20}}) {
    EngineConfig c = smallConfig();
    c.top_k = top_k;
    c.tracked_streams = 20;
    Engine e(c);
    for (uint8_t f : {7, 3, 11, 1, 12, 5, 9, 2, 10, 4, 8, 6}) e.add(record({1'000'000'000'000, 66}, f));
    e.finish();
    const EngineResult r = e.result();
    ASSERT_EQ(r.flows.top.size(), std::min<size_t>(top_k, 12)) << top_k;
    for (size_t i = 0; i < r.flows.top.size(); ++i) EXPECT_EQ(r.flows.top[i].key.src[3], i + 1) << top_k;
    ASSERT_EQ(r.pairs.top.size(), std::min<size_t>(top_k, 12)) << top_k;
    for (size_t i = 0; i < r.pairs.top.size(); ++i) EXPECT_EQ(r.pairs.top[i].key.src[3], i + 1) << top_k;
  }
}

// The mapping of this process (/proc/self/smaps) that holds `p`: its bounds and its VmFlags line.
struct Mapping {
  uintptr_t start = 0, end = 0;
  std::string flags;
};
std::optional<Mapping> mappingOf(const void* p) {
  std::ifstream f("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  Mapping m;
  bool holds = false;
  while (std::getline(f, line)) {
    unsigned long start = 0, end = 0;  // NOLINT(google-runtime-int): sscanf's %lx
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2) {
      holds = at >= start && at < end;
      m = {start, end, ""};
    } else if (holds && line.rfind("VmFlags:", 0) == 0) {
      m.flags = line + " ";
      return m;
    }
  }
  return std::nullopt;
}

// The tables of flows' allocator: a large block starts on a huge-page boundary and the kernel has the advice for
// all of it ("hg" in the mapping's flags: MADV_HUGEPAGE), it is writable end to end, and it is unmapped when given
// back; a small block comes from the heap, without the advice.
TEST(LargePageAllocator, LargeBlocksAreAdvisedHugePagesAndSmallOnesAreOrdinary) {
  if (!std::ifstream("/proc/self/smaps")) GTEST_SKIP() << "no /proc/self/smaps";
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) GTEST_SKIP() << "a kernel without huge pages";
  using A = internal::LargePageAllocator<uint64_t>;
  A a;
  for (size_t bytes : {A::kFrom, A::kFrom + 8, 3 * A::kFrom + 4096}) {
    const size_t n = bytes / sizeof(uint64_t);
    uint64_t* p = a.allocate(n);
    ASSERT_NE(p, nullptr);
    const auto at = reinterpret_cast<uintptr_t>(p);
    EXPECT_EQ(at % A::kHugePage, 0u) << bytes;
    std::optional<Mapping> m = mappingOf(p);
    ASSERT_TRUE(m) << bytes;
    EXPECT_NE(m->flags.find(" hg "), std::string::npos) << m->flags;
    EXPECT_LE(m->start, at);
    EXPECT_GE(m->end, at + n * sizeof(uint64_t));
    std::fill(p, p + n, 7);
    EXPECT_EQ(std::accumulate(p, p + n, uint64_t{0}), 7 * n);
    a.deallocate(p, n);
    m = mappingOf(p);
    EXPECT_TRUE(!m || m->flags.find(" hg ") == std::string::npos) << "still mapped with the advice: " << bytes;
  }
  uint64_t* small = a.allocate(16);
  std::fill(small, small + 16, 1);
  EXPECT_EQ(std::accumulate(small, small + 16, uint64_t{0}), 16u);
  std::optional<Mapping> m = mappingOf(small);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->flags.find(" hg "), std::string::npos) << m->flags;
  a.deallocate(small, 16);
}

TEST(EngineTest, DirectionsGetTheirOwnStreams) {
  std::vector<Pkt> v = randomTrace(71, 600);
  Engine e(smallConfig());
  uint64_t in_bytes = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    PacketRecord r = record(v[i]);
    r.direction = i % 3 == 0 ? Direction::kIngress : (i % 3 == 1 ? Direction::kEgress : Direction::kUnknown);
    if (r.direction == Direction::kIngress) in_bytes += r.wire_len;
    e.add(r);
  }
  e.finish();
  EngineResult r = e.result();
  ASSERT_EQ(r.directions.size(), 2u);
  EXPECT_EQ(r.directions[0].first, Direction::kIngress);
  EXPECT_EQ(r.directions[0].second.bytes, in_bytes);
  EXPECT_EQ(r.port.packets, v.size());
}

// Per report interval [s, e): E(τ) of each scale (bruteIntervalEnvelope), packets, bytes and backlogs.
struct BruteInterval {
  uint64_t packets = 0, bytes = 0;
  std::vector<uint64_t> envelope;
  std::vector<long double> backlog;
};

BruteInterval bruteInterval(const std::vector<Pkt>& v, int64_t s, int64_t e, const EngineConfig& c) {
  BruteInterval b;
  for (int64_t tau : c.scales_ns) b.envelope.push_back(bruteIntervalEnvelope(v, s, e, tau));
  for (const Pkt& p : v) {
    if (p.ts >= s && p.ts < e) {
      ++b.packets;
      b.bytes += p.len;
    }
  }
  for (double r : c.rates_bps) {
    // Lindley's recursion in long double; the queue's value at s (drained) or right after an arrival in it.
    long double q = 0, best = 0;
    int64_t last = 0;
    bool started = false, at_start_done = false;
    for (const Pkt& p : v) {
      if (p.ts >= e) break;
      if (p.ts >= s && !at_start_done) {
        best = started ? std::max<long double>(0, q - r * (s - last) / 8e9L) : 0;
        at_start_done = true;
      }
      q = started ? std::max<long double>(0, q - r * (p.ts - last) / 8e9L) : 0;
      q += p.len;
      last = p.ts;
      started = true;
      if (p.ts >= s) best = std::max(best, q);
    }
    if (!at_start_done && started) best = std::max<long double>(0, q - r * (s - last) / 8e9L);
    b.backlog.push_back(best);
  }
  return b;
}

EngineConfig intervalConfig() {
  EngineConfig c = smallConfig();
  c.scales_ns = {100'000, 300'000, 1'000'000, 2'000'000};
  c.exact_max_tau_ns = 300'000;  // 1 ms and 2 ms come from base bins: checked against SPEC's bound
  c.report_interval_ns = 1'000'000;
  c.baseline_ns = 4'000'000;
  return c;
}

std::vector<IntervalReport> runIntervals(const EngineConfig& c, const std::vector<Pkt>& v) {
  EXPECT_TRUE(validateConfig(c).ok()) << validateConfig(c);
  std::vector<IntervalReport> out;
  Engine e(c);
  e.setIntervalSink([&](const IntervalReport& r) { out.push_back(r); });
  for (const Pkt& p : v) e.add(record(p));
  e.finish();
  return out;
}

TEST(EngineIntervalTest, EveryIntervalMatchesBruteForce) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    std::vector<Pkt> v = randomTrace(seed, 1200);
    const EngineConfig c = intervalConfig();
    std::vector<IntervalReport> reports = runIntervals(c, v);
    const int64_t len = c.report_interval_ns;
    ASSERT_EQ(reports.size(), static_cast<size_t>(v.back().ts / len - v.front().ts / len + 1));
    uint64_t max_base_bin = 0;
    std::map<int64_t, uint64_t> base_bins;
    for (const Pkt& p : v) max_base_bin = std::max(max_base_bin, base_bins[p.ts / c.base_bin_ns] += p.len);
    std::deque<uint64_t> history;
    uint64_t packets = 0;
    for (const IntervalReport& r : reports) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " interval " << r.start_ns);
      ASSERT_EQ(r.end_ns - r.start_ns, len);
      ASSERT_EQ(r.start_ns % len, 0);
      BruteInterval b = bruteInterval(v, r.start_ns, r.end_ns, c);
      EXPECT_EQ(r.port.packets, b.packets);
      EXPECT_EQ(r.port.bytes, b.bytes);
      packets += r.port.packets;
      for (size_t i = 0; i < c.scales_ns.size(); ++i) {
        if (r.port.exact[i]) {
          EXPECT_EQ(r.port.envelope_bytes[i], b.envelope[i]) << "tau " << c.scales_ns[i];
        } else {
          EXPECT_LE(r.port.envelope_bytes[i], b.envelope[i]) << "tau " << c.scales_ns[i];
          EXPECT_LE(b.envelope[i], r.port.envelope_bytes[i] + max_base_bin) << "tau " << c.scales_ns[i];
        }
      }
      EXPECT_TRUE(r.port.exact[0] && r.port.exact[1] && !r.port.exact[3]);
      for (size_t i = 0; i < c.rates_bps.size(); ++i) {
        EXPECT_NEAR(r.port.backlog_bytes[i], static_cast<double>(b.backlog[i]), 1e-6) << c.rates_bps[i];
      }
      // Mean and baseline rates and PtM, from the brute-force bytes.
      EXPECT_DOUBLE_EQ(r.port.mean_bps, static_cast<double>(b.bytes) * 8e9 / static_cast<double>(len));
      history.push_back(b.bytes);
      if (static_cast<int64_t>(history.size()) * len > c.baseline_ns) history.pop_front();
      uint64_t base_bytes = 0;
      for (uint64_t x : history) base_bytes += x;
      const int64_t covered = std::min(c.baseline_ns, r.end_ns - reports.front().start_ns);
      EXPECT_EQ(r.baseline_ns, covered);
      const double baseline_bps = static_cast<double>(base_bytes) * 8e9 / static_cast<double>(covered);
      EXPECT_DOUBLE_EQ(r.port.baseline_bps, baseline_bps);
      for (size_t i = 0; i < c.scales_ns.size(); ++i) {
        const int64_t tau = c.scales_ns[i];
        if (tau > covered || base_bytes == 0) {
          EXPECT_FALSE(r.port.ptm[i].has_value());
        } else {
          ASSERT_TRUE(r.port.ptm[i].has_value());
          EXPECT_DOUBLE_EQ(*r.port.ptm[i], static_cast<double>(r.port.envelope_bytes[i]) * 8e9 /
                                               (baseline_bps * static_cast<double>(tau)));
        }
      }
    }
    EXPECT_EQ(packets, v.size());
    EXPECT_TRUE(reports.back().partial);
  }
}

// A microburst whose last packet leaves exactly at an interval's end, with no packet there: the interval's close
// takes that departure out of the window without judging it (an arrival at that very time would be judged with
// it), so the next packet, later, must still end the microburst at the departure's time, not at its own. Then the
// same with packets that leave before the next arrival's window (their departures are walked at that arrival).
TEST(EngineIntervalTest, AMicroburstEndingAtAnIntervalsEndEndsThere) {
  EngineConfig c = intervalConfig();
  c.link_capacity_bps = 1e9;                     // 50% of 1 Gbit/s over 100 us: 6250 bytes
  const int64_t t0 = 1'795'294'232'000'000'000;  // an interval's start
  const int64_t end = t0 + c.report_interval_ns;
  const std::vector<std::vector<Pkt>> traces = {
      // One packet takes the window above; it leaves at `end`; the next packet comes 500 us later.
      {{t0 + 10'000, 100}, {end - 100'000, 7000}, {end + 500'000, 100}},
      // The same, with two small packets after `end` that leave before the one after them arrives.
      {{t0 + 10'000, 100}, {end - 100'000, 7000}, {end + 20'000, 100}, {end + 30'000, 100}, {end + 600'000, 100}},
      // A packet exactly at `end` that keeps the window above: the microburst goes on.
      {{t0 + 10'000, 100}, {end - 100'000, 7000}, {end, 6300}, {end + 500'000, 100}},
      // No packet after: the interval closes in silence (advance, as a live port's clock does), then the run ends.
      {{t0 + 10'000, 100}, {end - 100'000, 7000}},
      // The same with a packet still in the window at the first close: the second close, in silence, takes it out
      // and must not end the microburst again, later.
      {{t0 + 10'000, 100}, {end - 100'000, 7000}, {end - 50'000, 100}},
  };
  for (size_t k = 0; k < traces.size(); ++k) {
    SCOPED_TRACE(testing::Message() << "trace " << k);
    const std::vector<Pkt>& v = traces[k];
    const std::vector<Microburst> want = bruteMicrobursts(v, c.microburst_tau_ns, 6250.0);
    ASSERT_EQ(want.size(), 1u);
    for (bool intervals : {false, true}) {
      EngineConfig ci = c;
      if (!intervals) ci.report_interval_ns = 0;
      ci.baseline_ns = intervals ? c.baseline_ns : 0;
      ASSERT_TRUE(validateConfig(ci).ok()) << validateConfig(ci);
      Engine e(ci);
      e.setIntervalSink([](const IntervalReport&) {});
      for (const Pkt& p : v) e.add(record(p));
      e.advance(v.back().ts + 2 * c.report_interval_ns);
      e.finish();
      const EngineResult r = e.result();
      ASSERT_TRUE(r.port.microbursts);
      const MicroburstResult& got = *r.port.microbursts;
      EXPECT_EQ(got.events.size(), 1u) << "intervals " << intervals;
      if (got.events.size() != 1) continue;  // the traces after this one still run
      EXPECT_EQ(got.events[0].start_ns, want[0].start_ns) << "intervals " << intervals;
      EXPECT_EQ(got.events[0].end_ns, want[0].end_ns) << "intervals " << intervals;
      EXPECT_EQ(got.events[0].bytes, want[0].bytes) << "intervals " << intervals;
    }
  }
}

TEST(EngineIntervalTest, AdvanceClosesIntervalsInSilenceAndLongGapsAreSkippedInConstantWork) {
  EngineConfig c = intervalConfig();
  c.exact_max_tau_ns = 2'000'000;  // all exact, so that the expected values are exact
  std::vector<IntervalReport> out;
  Engine e(c);
  e.setIntervalSink([&](const IntervalReport& r) { out.push_back(r); });
  const int64_t t0 = 1'795'294'232'000'000'000;
  e.add(record({t0 + 100, 1000}));
  e.advance(t0 + 999'999);
  EXPECT_TRUE(out.empty());   // the interval is not over yet
  e.advance(t0 + 3'000'000);  // three intervals complete: the busy one and two silent ones
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].port.bytes, 1000u);
  EXPECT_EQ(out[1].port.bytes, 0u);
  // Silent intervals still see the packet in the windows reaching back to it: E is the max over every t.
  // At t0+1ms the 1 ms window (t0, t0+1ms) holds the packet at t0+100; at t0+2ms only the 2 ms one does.
  EXPECT_EQ(out[1].port.envelope_bytes[0], 0u);
  EXPECT_EQ(out[1].port.envelope_bytes[2], 1000u);
  EXPECT_EQ(out[1].port.envelope_bytes[3], 1000u);
  EXPECT_EQ(out[2].port.envelope_bytes[2], 0u);
  EXPECT_EQ(out[2].port.envelope_bytes[3], 1000u);
  // Ten hours of silence: a bounded number of reports, the last one says how many it stood for.
  out.clear();
  const int64_t later = t0 + 36'000'000'000'000;
  e.advance(later);
  ASSERT_LE(out.size(), 8u);
  uint64_t covered = out.size();
  for (const IntervalReport& r : out) covered += r.skipped_intervals;
  EXPECT_EQ(out.back().end_ns, later);
  EXPECT_EQ(static_cast<int64_t>(covered), (later - t0 - 3'000'000) / c.report_interval_ns);
  for (const IntervalReport& r : out) EXPECT_EQ(r.port.bytes, 0u);
  EXPECT_EQ(out.back().port.backlog_bytes[0], 0.0);
  // Traffic after the silence is measured as usual.
  out.clear();
  e.add(record({later + 10, 700}));
  e.add(record({later + 20, 800}));
  e.finish();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].partial);
  EXPECT_EQ(out[0].port.envelope_bytes[0], 1500u);
}

TEST(EngineIntervalTest, IntervalMaximaFoldIntoTheWholeRunResult) {
  // The same trace with and without intervals gives the same whole-run result.
  std::vector<Pkt> v = randomTrace(7, 1500);
  EngineConfig with = intervalConfig();
  EngineConfig without = with;
  without.report_interval_ns = 0;
  Engine a(with), b(without);
  for (const Pkt& p : v) {
    a.add(record(p));
    b.add(record(p));
  }
  a.finish();
  b.finish();
  EngineResult ra = a.result(), rb = b.result();
  for (size_t i = 0; i < with.scales_ns.size(); ++i) {
    EXPECT_EQ(ra.port.scales[i].envelope_bytes, rb.port.scales[i].envelope_bytes);
    EXPECT_EQ(ra.port.scales[i].peak_bin_bytes, rb.port.scales[i].peak_bin_bytes);
  }
  for (size_t i = 0; i < with.rates_bps.size(); ++i) {
    EXPECT_EQ(ra.port.backlog[i].max_backlog_bytes, rb.port.backlog[i].max_backlog_bytes);
  }
  EXPECT_EQ(ra.port.microbursts->count, rb.port.microbursts->count);
  // Windows flushed at interval ends all end before the last packet's, so the histograms agree too.
  for (size_t i = 0; i < with.scales_ns.size(); ++i) {
    EXPECT_EQ(ra.port.scales[i].utilisation->counts, rb.port.scales[i].utilisation->counts) << i;
    EXPECT_EQ(ra.port.scales[i].bins_spanned, rb.port.scales[i].bins_spanned) << i;
  }
}

// The live histograms: by each interval's end, every aligned window of every scale that has ended since the
// first packet's window is counted once, empty ones included, in the bucket of its utilisation.
TEST(EngineIntervalTest, UtilisationHistogramsCountEveryEndedWindowByTheIntervalEnd) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    std::vector<Pkt> v = randomTrace(seed, 1500);
    EngineConfig c = intervalConfig();
    c.scales_ns = {100'000, 300'000, 1'000'000, 3'000'000};  // 3 ms windows straddle 1 ms intervals
    c.baseline_ns = 3'000'000;
    std::vector<IntervalReport> out;
    Engine e(c);
    e.setIntervalSink([&](const IntervalReport& r) { out.push_back(r); });
    for (const Pkt& p : v) e.add(record(p));
    const int64_t idle_until = v.back().ts + 7'500'000;  // silence after the last packet
    e.advance(idle_until);
    ASSERT_FALSE(out.empty());
    for (const IntervalReport& r : out) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " interval end " << r.end_ns);
      ASSERT_EQ(r.port.utilisation.size(), c.scales_ns.size());
      for (size_t i = 0; i < c.scales_ns.size(); ++i) {
        const int64_t w = c.scales_ns[i];
        std::map<int64_t, uint64_t> bins;
        for (const Pkt& p : v) bins[p.ts / w] += p.len;
        const int64_t first = v.front().ts / w;
        Histogram h(r.port.utilisation[i].bounds);
        for (int64_t b = first; (b + 1) * w <= r.end_ns; ++b) {
          h.observe(static_cast<double>(bins.count(b) ? bins[b] : 0) * 8e9 /
                    (static_cast<double>(w) * c.link_capacity_bps));
        }
        EXPECT_EQ(r.port.utilisation[i].counts, h.counts) << "tau " << w;
        EXPECT_EQ(r.port.utilisation[i].count, h.count) << "tau " << w;
      }
    }
    EXPECT_EQ(out.back().end_ns, idle_until - idle_until % c.report_interval_ns);
  }
}

TEST(EngineIntervalTest, ReportsCarryCumulativeMicroburstsAndTopPairsAndFlows) {
  std::vector<Pkt> v = randomTrace(5, 3000);
  EngineConfig c = intervalConfig();
  c.link_capacity_bps = 1e9;  // so that the trains are microbursts
  c.report_top_k = 3;
  std::vector<IntervalReport> out;
  Engine e(c);
  e.setIntervalSink([&](const IntervalReport& r) { out.push_back(r); });
  std::map<uint8_t, uint64_t> pair_bytes;
  auto flowOf = [](size_t i) { return static_cast<uint8_t>(1 + (i * 7) % 5); };  // five pairs, uneven
  for (size_t i = 0; i < v.size(); ++i) e.add(record(v[i], flowOf(i)));
  e.finish();
  const EngineResult whole = e.result();
  ASSERT_GT(whole.port.microbursts->count, 0u);
  uint64_t last = 0;
  for (const IntervalReport& r : out) {
    EXPECT_GE(r.port.microbursts, last);  // cumulative
    last = r.port.microbursts;
    EXPECT_EQ(r.port.microbursts, r.microbursts_total);
    ASSERT_TRUE(r.port.microburst_durations_s.has_value());
    EXPECT_EQ(r.port.microburst_durations_s->count, r.port.microbursts);
    // Top pairs by bytes up to the interval's end, with the rest in "other".
    pair_bytes.clear();
    uint64_t total = 0;
    for (size_t i = 0; i < v.size() && v[i].ts < r.end_ns; ++i) {
      pair_bytes[flowOf(i)] += v[i].len;
      total += v[i].len;
    }
    std::vector<uint64_t> sorted;
    for (auto& [k, b] : pair_bytes) sorted.push_back(b);
    std::sort(sorted.rbegin(), sorted.rend());
    ASSERT_EQ(r.pairs.top.size(), std::min<size_t>(3, sorted.size()));
    uint64_t top = 0;
    for (size_t i = 0; i < r.pairs.top.size(); ++i) {
      EXPECT_EQ(r.pairs.top[i].bytes, sorted[i]);
      EXPECT_EQ(r.pairs.top[i].bytes, pair_bytes[r.pairs.top[i].key.src[3]]);
      EXPECT_FALSE(r.pairs.top[i].windows.has_value());
      top += sorted[i];
    }
    EXPECT_EQ(r.pairs.other_bytes, total - top);
    EXPECT_EQ(r.flows.top.size(), r.pairs.top.size());  // one flow per pair here
  }
  EXPECT_EQ(out.back().port.microbursts, whole.port.microbursts->count);
  EXPECT_EQ(out.back().port.microburst_volumes_bytes->counts, whole.port.microbursts->volumes_bytes.counts);
  EXPECT_EQ(out.back().port.microburst_gaps_s->counts, whole.port.microbursts->gaps_s.counts);
}

TEST(EngineTest, ConfigErrorsNameTheKey) {
  EngineConfig c;
  c.scales_ns = {100'000, 150'000};
  EXPECT_NE(validateConfig(c).message().find("scales_ns"), std::string::npos);
  c = EngineConfig{};
  c.rates_bps = {-1};
  EXPECT_NE(validateConfig(c).message().find("rates_bps"), std::string::npos);
  c = EngineConfig{};
  c.tracked_streams = 1;
  EXPECT_NE(validateConfig(c).message().find("tracked_streams"), std::string::npos);
  c = EngineConfig{};
  c.report_interval_ns = 150'000;
  EXPECT_NE(validateConfig(c).message().find("report_interval_ns"), std::string::npos);
  c.report_interval_ns = 1'000'000'000;
  c.baseline_ns = 5'000'000'000;  // shorter than the 10 s scale
  EXPECT_NE(validateConfig(c).message().find("baseline_ns"), std::string::npos);
  EXPECT_TRUE(validateConfig(EngineConfig{}).ok());
}

}  // namespace
}  // namespace burstscope

namespace burstscope {
namespace {

// A new aggregate plugs in without touching the engine: bytes per destination host, per interval and in
// the end; and an observer sees every non-empty base bin and every microburst of the port stream.
class BytesPerDestination final : public Aggregator {
 public:
  void add(std::span<const PacketRecord> records) override {
    for (const PacketRecord& r : records) {
      interval_[r.key.dst[3]] += r.wire_len;
      total_[r.key.dst[3]] += r.wire_len;
    }
  }
  void closeInterval(const IntervalContext& c, IntervalReport*) override {
    intervals.push_back({c.start_ns, interval_});
    interval_.clear();
  }
  void finish() override { finished = true; }
  void result(EngineResult*) const override {}
  std::map<uint8_t, uint64_t> total() const { return total_; }

  std::vector<std::pair<int64_t, std::map<uint8_t, uint64_t>>> intervals;
  bool finished = false;

 private:
  std::map<uint8_t, uint64_t> interval_, total_;
};

class Recorder final : public EngineObserver {
 public:
  void onBaseBin(int64_t start_ns, uint64_t bytes, uint64_t packets) override {
    bins.push_back({start_ns, bytes, packets});
  }
  void onMicroburst(const Microburst& m) override { microbursts.push_back(m); }
  void onInterval(const IntervalReport& r) override { interval_starts.push_back(r.start_ns); }
  struct Bin {
    int64_t start_ns;
    uint64_t bytes, packets;
  };
  std::vector<Bin> bins;
  std::vector<Microburst> microbursts;
  std::vector<int64_t> interval_starts;
};

TEST(EngineAggregatorTest, AnAddedAggregatorAndAnObserverSeeEveryPacketOnce) {
  const std::vector<Pkt> v = randomTrace(7, 3000);
  EngineConfig c = intervalConfig();
  c.link_capacity_bps = 1e9;  // microbursts are common at this trace's rates
  Engine e(c);
  auto agg = std::make_unique<BytesPerDestination>();
  BytesPerDestination* dst = agg.get();
  e.addAggregator(std::move(agg));
  Recorder rec;
  e.subscribe(&rec);
  std::map<uint8_t, uint64_t> want;
  std::map<int64_t, std::pair<uint64_t, uint64_t>> want_bins;
  std::vector<PacketRecord> records;
  for (size_t i = 0; i < v.size(); ++i) {
    records.push_back(record(v[i], static_cast<uint8_t>(i % 5)));
    records.back().key.dst[3] = static_cast<uint8_t>(i % 3);
    want[records.back().key.dst[3]] += v[i].len;
    auto& b = want_bins[v[i].ts - v[i].ts % c.base_bin_ns];
    b.first += v[i].len;
    ++b.second;
  }
  // In batches of varying size, so that batches straddle interval ends.
  for (size_t i = 0; i < records.size();) {
    const size_t n = std::min<size_t>(1 + i % 97, records.size() - i);
    e.add(std::span<const PacketRecord>(records.data() + i, n));
    i += n;
  }
  e.finish();
  const EngineResult r = e.result();
  EXPECT_TRUE(dst->finished);
  EXPECT_EQ(dst->total(), want);
  // Per interval, the aggregator saw exactly the packets inside it.
  ASSERT_EQ(dst->intervals.size(), rec.interval_starts.size());
  for (const auto& [start, bytes] : dst->intervals) {
    uint64_t got = 0, expect = 0;
    for (const auto& [d, b] : bytes) got += b;
    for (const Pkt& p : v) expect += (p.ts >= start && p.ts < start + c.report_interval_ns) ? p.len : 0;
    EXPECT_EQ(got, expect) << start;
  }
  ASSERT_EQ(rec.bins.size(), want_bins.size());
  for (const Recorder::Bin& b : rec.bins) {
    EXPECT_EQ(b.bytes, want_bins[b.start_ns].first) << b.start_ns;
    EXPECT_EQ(b.packets, want_bins[b.start_ns].second) << b.start_ns;
  }
  ASSERT_TRUE(r.port.microbursts.has_value());
  ASSERT_GT(r.port.microbursts->count, 0u);
  ASSERT_EQ(rec.microbursts.size(), r.port.microbursts->count);
  for (size_t i = 0; i < rec.microbursts.size(); ++i) {
    EXPECT_EQ(rec.microbursts[i].start_ns, r.port.microbursts->events[i].start_ns);
    EXPECT_EQ(rec.microbursts[i].end_ns, r.port.microbursts->events[i].end_ns);
    EXPECT_EQ(rec.microbursts[i].bytes, r.port.microbursts->events[i].bytes);
  }
}

// An aggregator that takes the flow table's hints (FlowHint) and says, per run, whether it had one and whether what
// it had written there for the run's flow before came back. Each writes its own `tag` with the flow's number, so
// that a hint another owner wrote is told from its own.
class HintTaker final : public Aggregator {
 public:
  explicit HintTaker(uintptr_t tag) : tag_(tag) {}
  void add(std::span<const PacketRecord>) override { ++plain_batches; }
  bool wantsFlowHints() const override { return true; }
  void addRunsHinted(std::span<const PacketRecord> records, std::span<const uint32_t> starts,
                     std::span<FlowHint* const> hints) override {
    for (size_t k = 0; k + 1 < starts.size(); ++k) {
      const uint8_t id = records[starts[k]].key.src[3];  // the flow's own number
      FlowHint* h = hints[k];
      runs.push_back(h == nullptr ? '-' : h->epoch == 0 ? 'n' : h->value == tag_ + id ? 'y' : 'x');
      if (h != nullptr) *h = FlowHint{tag_ + id, 1};
    }
    runs.push_back('|');
  }
  void closeInterval(const IntervalContext&, IntervalReport*) override {}
  void finish() override {}
  void result(EngineResult*) const override {}
  std::string runs;  // per run: '-' no hint, 'n' a hint never written, 'y' its own, 'x' another's; '|' per batch
  int plain_batches = 0;

 private:
  const uintptr_t tag_;
};

// The engine hands each run its flow's hints, one for each of the first two aggregators that want them (the evidence
// and the training aggregator, in an engine that runs both), each written by its owner and kept for it alone,
// except a non-IP run and the runs looked up before the batch's last new flow (an insertion may move the table's
// entries); a third aggregator that wants them, or any without the tables, gets addRuns().
TEST(EngineAggregatorTest, AFlowsHintComesBackToEachOfTheFirstAggregatorsThatWantThemWhileItsEntryStays) {
  auto rec = [](uint8_t flow) {
    PacketRecord r;
    r.ts_ns = 1'000'000'000;
    r.wire_len = 100;
    if (flow != 0) {
      r.key.family = 4;
      r.key.proto = 17;
      r.key.src = {10, 0, 0, flow};
      r.key.dst = {10, 0, 1, 1};
    }
    return r;
  };
  auto run = [&](bool tables) {
    EngineConfig c;
    c.pairs_and_flows = tables;
    Engine e(c);
    auto first = std::make_unique<HintTaker>(0), second = std::make_unique<HintTaker>(1000),
         third = std::make_unique<HintTaker>(2000);
    HintTaker* a = first.get();
    HintTaker* b = second.get();
    HintTaker* c3 = third.get();
    e.addAggregator(std::move(first));
    e.addAggregator(std::move(second));
    e.addAggregator(std::move(third));
    for (const std::vector<uint8_t>& batch : std::vector<std::vector<uint8_t>>{{1, 2, 3, 1}, {1, 2, 0, 3}, {4, 1}}) {
      std::vector<PacketRecord> v;
      for (uint8_t f : batch) v.push_back(rec(f));
      e.add(v);
    }
    e.finish();
    return std::vector<std::pair<std::string, int>>{
        {a->runs, a->plain_batches}, {b->runs, b->plain_batches}, {c3->runs, c3->plain_batches}};
  };
  using Seen = std::vector<std::pair<std::string, int>>;
  // Flows 1, 2, 3 are new in the first batch: only the runs after 3's insertion have hints. None is new in the
  // second: all but the non-IP run do, and what was written for 1 and 3 comes back. 4 is new in the third, its
  // own run the batch's first: both have hints.
  EXPECT_EQ(run(true), (Seen{{"--nn|yn-y|ny|", 0}, {"--nn|yn-y|ny|", 0}, {"", 3}}));
  EXPECT_EQ(run(false), (Seen{{"", 3}, {"", 3}, {"", 3}}));
}

TEST(EngineAggregatorTest, BatchesGiveTheSameResultAsOneRecordAtATime) {
  const std::vector<Pkt> v = randomTrace(3, 4000);
  const EngineConfig c = intervalConfig();
  std::vector<PacketRecord> records;
  for (size_t i = 0; i < v.size(); ++i) records.push_back(record(v[i], static_cast<uint8_t>(i % 7)));
  auto runWith = [&](size_t batch, std::vector<IntervalReport>* reports) {
    Engine e(c);
    e.setIntervalSink([reports](const IntervalReport& r) { reports->push_back(r); });
    for (size_t i = 0; i < records.size(); i += batch) {
      e.add(std::span<const PacketRecord>(records.data() + i, std::min(batch, records.size() - i)));
    }
    e.finish();
    return e.result();
  };
  std::vector<IntervalReport> one, many;
  const EngineResult a = runWith(1, &one), b = runWith(256, &many);
  EXPECT_EQ(a.port.bytes, b.port.bytes);
  for (size_t i = 0; i < a.port.scales.size(); ++i) {
    EXPECT_EQ(a.port.scales[i].envelope_bytes, b.port.scales[i].envelope_bytes);
  }
  EXPECT_EQ(a.port.backlog[0].max_backlog_bytes, b.port.backlog[0].max_backlog_bytes);
  EXPECT_EQ(a.flows.top.size(), b.flows.top.size());
  for (size_t i = 0; i < a.flows.top.size(); ++i) EXPECT_EQ(a.flows.top[i].bytes, b.flows.top[i].bytes);
  ASSERT_EQ(one.size(), many.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].port.bytes, many[i].port.bytes) << i;
    EXPECT_EQ(one[i].port.envelope_bytes, many[i].port.envelope_bytes) << i;
    EXPECT_EQ(one[i].port.backlog_bytes, many[i].port.backlog_bytes) << i;
  }
}

// Runs of one flow (findFlowRuns): every record is in exactly one run, a run holds one key, and a run ends
// exactly where the key changes.
TEST(FlowRuns, CutWhereTheKeyChanges) {
  std::mt19937_64 rng(7);
  std::vector<PacketRecord> records(300);
  for (PacketRecord& r : records) {
    r.key.family = 4;
    r.key.src[0] = static_cast<uint8_t>(rng() % 3);
    r.key.dst_port = static_cast<uint16_t>(rng() % 2);  // the last word differs alone
  }
  std::vector<uint32_t> starts;
  for (size_t n : {size_t{0}, size_t{1}, records.size()}) {
    const std::span<const PacketRecord> batch(records.data(), n);
    findFlowRuns(batch, &starts);
    ASSERT_FALSE(starts.empty());
    EXPECT_EQ(starts.back(), n);
    if (n == 0) {
      EXPECT_EQ(starts.size(), 1u);
      continue;
    }
    EXPECT_EQ(starts.front(), 0u);
    for (size_t k = 0; k + 1 < starts.size(); ++k) {
      ASSERT_LT(starts[k], starts[k + 1]);
      for (uint32_t i = starts[k] + 1; i < starts[k + 1]; ++i) EXPECT_TRUE(batch[i].key == batch[i - 1].key);
      if (k + 2 < starts.size()) {
        EXPECT_FALSE(batch[starts[k + 1]].key == batch[starts[k + 1] - 1].key);
      }
    }
  }
}

// What every aggregator keyed by flow counts is the same whether the engine hands it runs of one flow (batches of
// 256) or every record alone (batches of one: runs of one record): TCP connections in runs both ways with
// retransmissions, copies of frames for the mirror checks, more flows than the training aggregator keeps.
TEST(FlowRuns, ChangeNoFigure) {
  std::mt19937_64 rng(11);
  std::vector<PacketRecord> records;
  uint32_t seq[8][2] = {};
  int64_t t = 1'795'294'232'000'000'000;
  while (records.size() < 20'000) {
    const int flow = static_cast<int>(rng() % 8);
    const int dir = static_cast<int>(rng() % 2);
    const size_t run = 1 + rng() % 8;
    for (size_t i = 0; i < run; ++i) {
      PacketRecord r;
      r.ts_ns = t;
      t += static_cast<int64_t>(rng() % 3 == 0 ? 0 : rng() % 20'000);
      r.key.family = 4;
      r.key.proto = 6;
      r.key.src = {10, 0, 0, static_cast<uint8_t>(dir ? 100 : flow)};
      r.key.dst = {10, 0, 0, static_cast<uint8_t>(dir ? flow : 100)};
      r.key.src_port = static_cast<uint16_t>(dir ? 5000 : 40000 + flow);
      r.key.dst_port = static_cast<uint16_t>(dir ? 40000 + flow : 5000);
      r.direction = dir ? Direction::kEgress : Direction::kIngress;
      r.l4 = static_cast<uint8_t>(L4Kind::kTcp) | (rng() % 50 == 0 ? 3 << 2 : 0);
      r.op = kTcpAck;
      r.len = static_cast<uint16_t>(rng() % 4 == 0 ? 0 : 1448);
      uint32_t& next = seq[flow][dir];
      if (rng() % 40 == 0 && next > 3000) next -= 2896;  // a retransmission
      r.seq = next;
      r.ack = seq[flow][1 - dir];
      next += r.len;
      r.wire_len = 66u + r.len;
      r.dup_key = static_cast<uint32_t>(rng() | 1);
      records.push_back(r);
      if (rng() % 30 == 0) {  // the mirror's copy of it, a little later
        PacketRecord copy = r;
        copy.ts_ns = t;
        records.push_back(copy);
      }
    }
  }
  struct Figures {
    EngineResult result;
    std::vector<IntervalReport> intervals;
  };
  auto run = [&](size_t batch) {
    EngineConfig cfg;
    cfg.report_interval_ns = 10'000'000;
    cfg.baseline_ns = 10'000'000'000;
    cfg.report_top_k = 10;
    Engine engine(cfg);
    TrainingConfig tc;
    tc.max_flows = 12;  // of 16 directed flows: the rest are untracked
    engine.addAggregator(makeTrainingAggregator(tc, true));
    auto e = std::make_unique<EvidenceAggregator>(EvidenceConfig{}, cfg, true);
    engine.subscribe(e.get());
    engine.addAggregator(std::move(e));
    engine.addAggregator(std::make_unique<MirrorAggregator>(MirrorConfig{}, cfg));
    Figures f;
    engine.setIntervalSink([&f](const IntervalReport& r) { f.intervals.push_back(r); });
    for (size_t i = 0; i < records.size(); i += batch) {
      engine.add(std::span<const PacketRecord>(records.data() + i, std::min(batch, records.size() - i)));
    }
    engine.finish();
    f.result = engine.result();
    return f;
  };
  const Figures one = run(1), runs = run(256);
  ASSERT_EQ(one.intervals.size(), runs.intervals.size());
  ASSERT_GT(one.intervals.size(), 10u);
  uint64_t duplicates = 0, retransmissions = 0, untracked = 0;
  auto same = [](const HeavyResult& a, const HeavyResult& b) {
    EXPECT_EQ(a.top.size(), b.top.size());
    for (size_t i = 0; i < std::min(a.top.size(), b.top.size()); ++i) {
      EXPECT_TRUE(a.top[i].key == b.top[i].key);
      EXPECT_EQ(a.top[i].bytes, b.top[i].bytes);
      EXPECT_EQ(a.top[i].packets, b.top[i].packets);
      EXPECT_EQ(a.top[i].last_ns, b.top[i].last_ns);
    }
    EXPECT_EQ(a.other_bytes, b.other_bytes);
  };
  for (size_t n = 0; n < one.intervals.size(); ++n) {
    const IntervalReport& a = one.intervals[n];
    const IntervalReport& b = runs.intervals[n];
    same(a.pairs, b.pairs);
    same(a.flows, b.flows);
    const MirrorReport &ma = *a.mirror, &mb = *b.mirror;
    EXPECT_EQ(ma.checked, mb.checked);
    EXPECT_EQ(ma.duplicates, mb.duplicates);
    EXPECT_EQ(ma.duplicate_bytes, mb.duplicate_bytes);
    EXPECT_EQ(ma.displaced, mb.displaced);
    ASSERT_EQ(ma.load.size(), mb.load.size());
    for (size_t i = 0; i < ma.load.size(); ++i) {
      EXPECT_EQ(ma.load[i].windows, mb.load[i].windows);
      EXPECT_EQ(ma.load[i].peak, mb.load[i].peak);
    }
    duplicates = ma.duplicatesTotal();
    const EvidenceCounts &ea = a.evidence->totals, &eb = b.evidence->totals;
    EXPECT_EQ(ea.ip_packets, eb.ip_packets);
    EXPECT_EQ(ea.ce, eb.ce);
    EXPECT_EQ(ea.tcp_data_segments, eb.tcp_data_segments);
    EXPECT_EQ(ea.tcp_retransmissions, eb.tcp_retransmissions);
    EXPECT_EQ(ea.tcp_out_of_order, eb.tcp_out_of_order);
    EXPECT_EQ(ea.tcp_lost_segments, eb.tcp_lost_segments);
    EXPECT_EQ(ea.tcp_ack_lost_segments, eb.tcp_ack_lost_segments);
    retransmissions = ea.tcp_retransmissions;
    const TrainingDelta &ta = *a.training, &tb = *b.training;
    EXPECT_EQ(ta.untracked_packets, tb.untracked_packets);
    EXPECT_EQ(ta.untracked_bytes, tb.untracked_bytes);
    untracked += ta.untracked_packets;
    ASSERT_EQ(ta.flows.size(), tb.flows.size());
    for (size_t i = 0; i < ta.flows.size(); ++i) {
      EXPECT_TRUE(ta.flows[i].key == tb.flows[i].key);
      EXPECT_EQ(ta.flows[i].packets, tb.flows[i].packets);
      EXPECT_EQ(ta.flows[i].bins, tb.flows[i].bins);
      EXPECT_EQ(ta.flows[i].payload, tb.flows[i].payload);
    }
  }
  // The input reaches each path it is made for.
  EXPECT_GT(duplicates, 100u);
  EXPECT_GT(retransmissions, 10u);
  EXPECT_GT(untracked, 100u);
}

}  // namespace
}  // namespace burstscope
