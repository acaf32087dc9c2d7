// `burstscope whatif` (src/studies/whatif.h) on committed traces: one job equals the engine's Bmax of the file
// as analyze measures it; the aligned sum equals a brute-force backlog of the summed trace built here, from
// the files' own bytes; seeds, repeats, time scaling, the search's guarantees and the errors.
#include "src/studies/whatif.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "burstscope/capture.h"
#include "src/pipeline/pipeline.h"

namespace burstscope {
namespace {

const std::string kRoot = BURSTSCOPE_SOURCE_ROOT;
const std::string kRing = kRoot + "/data/testbed/ddp-ring-w4.pcap";
const std::string kTree = kRoot + "/data/testbed/tree-w4.pcap";
const std::string kPs = kRoot + "/data/testbed/ps-w4-s1.pcap";
const std::string kGloo = kRoot + "/data/ddp-gloo-w3-3steps.pcap";  // no step period (aperiodic)
constexpr double kRate = 1e9;  // the testbed's bursts queue up at 1 Gbit/s: Bmax well above one frame

struct Packet {
  int64_t ts_ns;
  uint32_t len;
};

// A classic pcap file read here, independently of burstscope's readers: (time, orig_len) in time order (a
// stable sort, as the reorder stage releases them).
std::vector<Packet> readPcap(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  uint32_t header[6];
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  EXPECT_TRUE(header[0] == 0xa1b23c4d || header[0] == 0xa1b2c3d4) << path << ": not a little-endian classic pcap";
  const int64_t frac_ns = header[0] == 0xa1b23c4d ? 1 : 1000;
  std::vector<Packet> out;
  uint32_t rec[4];
  while (in.read(reinterpret_cast<char*>(rec), sizeof(rec))) {
    out.push_back(Packet{int64_t{rec[0]} * 1'000'000'000 + int64_t{rec[1]} * frac_ns, rec[3]});
    in.seekg(rec[2], std::ios::cur);
  }
  std::stable_sort(out.begin(), out.end(), [](const Packet& a, const Packet& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

// The jobs' packets shifted (each by its offset after its own first packet, its times scaled), summed in one
// stream, and the obvious per-packet queue q <- max(0, q - r·dt/8) + len in exact integers: units of
// 1/8e9 byte, so that r·dt (bit/s × ns) is a whole number.
struct Shifted {
  const std::vector<Packet>* packets;
  int64_t offset_ns;
  double scale = 1;
};
double bruteForceBmax(const std::vector<Shifted>& jobs, double rate_bps) {
  std::vector<Packet> all;
  for (const Shifted& j : jobs) {
    const int64_t first = j.packets->front().ts_ns;
    for (const Packet& p : *j.packets) {
      const int64_t rel = j.scale == 1 ? p.ts_ns - first : std::llround(static_cast<double>(p.ts_ns - first) * j.scale);
      all.push_back(Packet{rel + j.offset_ns, p.len});
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Packet& a, const Packet& b) { return a.ts_ns < b.ts_ns; });
  const auto rate = static_cast<__int128>(std::llround(rate_bps));
  __int128 q = 0, max = 0;
  int64_t prev = all.front().ts_ns;
  for (const Packet& p : all) {
    const __int128 drain = rate * (p.ts_ns - prev);
    q = q > drain ? q - drain : 0;
    q += static_cast<__int128>(p.len) * 8'000'000'000;
    max = std::max(max, q);
    prev = p.ts_ns;
  }
  return static_cast<double>(max) / 8e9;
}

WhatifConfig config(std::vector<std::string> jobs, size_t trials = 10, uint64_t seed = 1) {
  WhatifConfig c;
  for (const std::string& j : jobs) {
    auto spec = parseWhatifJob(j);
    EXPECT_TRUE(spec.ok()) << spec.status();
    if (spec.ok()) c.jobs.push_back(*spec);
  }
  c.rate_bps = kRate;
  c.buffer_bytes = 1e6;
  c.trials = trials;
  c.seed = seed;
  c.search_grid = 8;
  c.search_sweeps = 2;
  return c;
}

WhatifResult run(const WhatifConfig& c) {
  auto r = runWhatif(c);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : WhatifResult{};
}

TEST(WhatifTest, OneJobEqualsTheEngineBmaxOfTheFileAsAnalyzeReadsIt) {
  // analyze's path: the file as one capture, runCapture with analyze's configuration at the same rate.
  auto source = openPcapCapture({kRing}, DecoderConfig{});
  ASSERT_TRUE(source.ok()) << source.status();
  PipelineConfig pc;
  pc.engine.rates_bps = {kRate};
  const std::atomic<bool> stop{false};
  auto analyzed = runCapture(**source, pc, stop);
  ASSERT_TRUE(analyzed.ok()) << analyzed.status();
  const StreamResult& port = analyzed->ports.front().engine.port;
  const double expected = port.backlog.front().max_backlog_bytes;
  ASSERT_GT(expected, 10'000);  // a real queue, not one frame

  const WhatifResult r = run(config({kRing}, 5));
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].packets, port.packets);
  EXPECT_EQ(r.jobs[0].bytes, port.bytes);
  EXPECT_EQ(r.jobs[0].alone_bmax_bytes, expected);
  EXPECT_EQ(r.aligned.bmax_bytes, expected);
  ASSERT_EQ(r.trials.size(), 5u);
  for (const WhatifSchedule& t : r.trials) EXPECT_EQ(t.bmax_bytes, expected);  // one job: offsets change nothing
  EXPECT_EQ(r.best.bmax_bytes, expected);
  // The envelope of a lone job is the file's own.
  ASSERT_EQ(r.aligned_envelope.scales.size(), port.scales.size());
  EXPECT_EQ(r.aligned_envelope.scales[2].envelope_bytes, port.scales[2].envelope_bytes);  // 5 ms, exact both ways
}

TEST(WhatifTest, AlignedEqualsTheBruteForceBacklogOfTheSummedTrace) {
  const std::vector<Packet> ring = readPcap(kRing), tree = readPcap(kTree), ps = readPcap(kPs);
  const WhatifResult r = run(config({kRing, kTree, kPs + "@scale=1.5"}, 0));
  const double expected = bruteForceBmax({{&ring, 0}, {&tree, 0}, {&ps, 0, 1.5}}, kRate);
  EXPECT_EQ(r.aligned.bmax_bytes, expected);
  // The sum queues more than any job alone: the test would notice jobs left out of the merge.
  for (const WhatifJobResult& j : r.jobs) EXPECT_LT(j.alone_bmax_bytes, expected);
  EXPECT_EQ(r.jobs[0].packets, ring.size());
}

TEST(WhatifTest, EveryRandomTrialAndTheMinimisingScheduleEqualTheBruteForceAtTheirOffsets) {
  const std::vector<Packet> ring = readPcap(kRing), tree = readPcap(kTree);
  const WhatifResult r = run(config({kRing, kTree}, 4, 11));
  ASSERT_EQ(r.trials.size(), 4u);
  for (const WhatifSchedule& t : r.trials) {
    EXPECT_EQ(t.bmax_bytes, bruteForceBmax({{&ring, t.offsets_ns[0]}, {&tree, t.offsets_ns[1]}}, kRate));
  }
  EXPECT_EQ(r.best.bmax_bytes, bruteForceBmax({{&ring, r.best.offsets_ns[0]}, {&tree, r.best.offsets_ns[1]}}, kRate));
}

TEST(WhatifTest, TheSameSeedGivesTheSameOutputAnotherSeedOtherOffsets) {
  const WhatifConfig a = config({kRing, kTree, kPs}, 8, 42);
  const std::string first = whatifJson(run(a)).dump();
  EXPECT_EQ(whatifJson(run(a)).dump(), first);
  const WhatifResult other = run(config({kRing, kTree, kPs}, 8, 43));
  EXPECT_NE(whatifJson(other).dump(), first);
  const WhatifResult same = run(a);
  size_t differing = 0;
  for (size_t t = 0; t < same.trials.size(); ++t) differing += same.trials[t].offsets_ns != other.trials[t].offsets_ns;
  EXPECT_EQ(differing, same.trials.size());
  // Offsets are in [0, range) and not all alike.
  for (const WhatifSchedule& t : same.trials) {
    for (size_t j = 0; j < t.offsets_ns.size(); ++j) {
      EXPECT_GE(t.offsets_ns[j], 0);
      EXPECT_LT(t.offsets_ns[j], same.jobs[j].offset_range_ns);
    }
  }
  EXPECT_NE(same.trials[0].offsets_ns, same.trials[1].offsets_ns);
}

TEST(WhatifTest, ARepeatedJobIsThatManyIndependentJobs) {
  const WhatifResult twice = run(config({kRing + "*2"}, 6, 5));
  const WhatifResult listed = run(config({kRing, kRing}, 6, 5));
  ASSERT_EQ(twice.jobs.size(), 2u);
  EXPECT_EQ(twice.jobs[0].copy, 1u);
  EXPECT_EQ(twice.jobs[1].copy, 2u);
  EXPECT_EQ(twice.aligned.bmax_bytes, listed.aligned.bmax_bytes);
  // Two copies on top of each other queue more than one alone.
  EXPECT_GT(twice.aligned.bmax_bytes, twice.jobs[0].alone_bmax_bytes);
  ASSERT_EQ(twice.trials.size(), listed.trials.size());
  for (size_t t = 0; t < twice.trials.size(); ++t) {
    EXPECT_EQ(twice.trials[t].offsets_ns, listed.trials[t].offsets_ns);
    EXPECT_EQ(twice.trials[t].bmax_bytes, listed.trials[t].bmax_bytes);
    EXPECT_NE(twice.trials[t].offsets_ns[0], twice.trials[t].offsets_ns[1]);  // each copy draws its own
  }
}

TEST(WhatifTest, TimeScalingStretchesThePeriodAndTheTrace) {
  const WhatifResult plain = run(config({kRing}, 0));
  ASSERT_TRUE(plain.jobs[0].measured_period_s.has_value());
  EXPECT_EQ(plain.jobs[0].offset_range_from, "step period");
  const double period_s = *plain.jobs[0].measured_period_s;
  EXPECT_EQ(plain.jobs[0].offset_range_ns, std::llround(period_s * 1e9));

  const WhatifResult slower = run(config({kRing + "@period=300ms"}, 0));
  EXPECT_DOUBLE_EQ(slower.jobs[0].time_scale, 0.3 / period_s);
  EXPECT_NEAR(static_cast<double>(slower.jobs[0].offset_range_ns), 300e6, 1);
  EXPECT_NEAR(static_cast<double>(slower.jobs[0].duration_ns),
              static_cast<double>(plain.jobs[0].duration_ns) * 0.3 / period_s, 1);

  const WhatifResult doubled = run(config({kRing + "@scale=2"}, 0));
  EXPECT_EQ(doubled.jobs[0].offset_range_ns, std::llround(period_s * 1e9 * 2));
  EXPECT_NEAR(static_cast<double>(doubled.jobs[0].duration_ns), 2.0 * static_cast<double>(plain.jobs[0].duration_ns),
              1);
  EXPECT_EQ(doubled.jobs[0].bytes, plain.jobs[0].bytes);
  const std::vector<Packet> ring = readPcap(kRing);
  EXPECT_EQ(doubled.aligned.bmax_bytes, bruteForceBmax({{&ring, 0, 2.0}}, kRate));

  // Without a period, random offsets span the trace's duration, and the output says so.
  const WhatifResult gloo = run(config({kGloo}, 0));
  EXPECT_FALSE(gloo.jobs[0].measured_period_s.has_value());
  EXPECT_EQ(gloo.jobs[0].offset_range_from, "duration");
  EXPECT_EQ(gloo.jobs[0].offset_range_ns, gloo.jobs[0].duration_ns);
  EXPECT_NE(whatifText(gloo).find("duration"), std::string::npos);
}

TEST(WhatifTest, TheMinimisingScheduleIsNeverAboveAlignedNorAnyRandomTrial) {
  const WhatifResult r = run(config({kRing, kTree, kPs}, 12, 3));
  ASSERT_TRUE(r.distribution.has_value());
  EXPECT_LE(r.best.bmax_bytes, r.aligned.bmax_bytes);
  EXPECT_LE(r.best.bmax_bytes, r.distribution->min);
  EXPECT_GT(r.search_evaluations, 0u);
  // Staggering these bursty jobs must help at all: the search has something to find.
  EXPECT_LT(r.best.bmax_bytes, r.aligned.bmax_bytes);
  EXPECT_EQ(r.best.offsets_ns.size(), 3u);
  // Without sweeps the schedule is the lowest of the candidates it starts from: aligned and the trials.
  WhatifConfig none = config({kRing, kTree, kPs}, 12, 3);
  none.search_sweeps = 0;
  const WhatifResult start = run(none);
  EXPECT_EQ(start.best.bmax_bytes, std::min(start.aligned.bmax_bytes, start.distribution->min));
  EXPECT_EQ(start.search_evaluations, 0u);
}

TEST(WhatifTest, TheDistributionIsTheTrialsNearestRanks) {
  WhatifConfig c = config({kRing, kTree}, 20, 9);
  const WhatifResult probe = run(c);
  std::vector<double> b;
  for (const WhatifSchedule& t : probe.trials) b.push_back(t.bmax_bytes);
  std::sort(b.begin(), b.end());
  ASSERT_LT(b.front(), b.back());
  c.buffer_bytes = b[9];  // half of the trials above it, or fewer on ties
  const WhatifResult r = run(c);
  const WhatifDistribution& d = *r.distribution;
  EXPECT_EQ(d.min, b.front());
  EXPECT_EQ(d.max, b.back());
  EXPECT_EQ(d.median, b[9]);  // nearest rank: ceil(0.5 * 20) = 10th
  EXPECT_EQ(d.p90, b[17]);    // 18th
  EXPECT_EQ(d.p99, b[19]);    // 20th
  const auto above = static_cast<double>(std::count_if(b.begin(), b.end(), [&](double x) { return x > b[9]; }));
  EXPECT_DOUBLE_EQ(d.exceed_fraction, above / 20);
  for (const WhatifSchedule& t : r.trials) EXPECT_EQ(t.exceeds_buffer, t.bmax_bytes > c.buffer_bytes);
}

TEST(WhatifTest, JobSyntaxErrorsNameTheArgumentAndTheBadPart) {
  struct Case {
    std::string arg, part;
  };
  for (const Case& c : std::vector<Case>{{"a.pcap*x", "'*x'"},
                                         {"a.pcap*0", "'*0'"},
                                         {"a.pcap*2*3", "'*3'"},
                                         {"a.pcap@foo=1", "'@foo=1'"},
                                         {"a.pcap@period=abc", "'@period=abc'"},
                                         {"a.pcap@period=0s", "'@period=0s'"},
                                         {"a.pcap@scale=-1", "'@scale=-1'"},
                                         {"a.pcap@scale=2@period=1s", "'@period=1s'"},
                                         {"*2", "no file"}}) {
    auto r = parseWhatifJob(c.arg);
    ASSERT_FALSE(r.ok()) << c.arg;
    const std::string msg(r.status().message());
    EXPECT_NE(msg.find("job '" + c.arg + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.part), std::string::npos) << msg;
  }
  auto ok = parseWhatifJob("dir/a.pcap@period=300ms*4");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->path, "dir/a.pcap");
  EXPECT_EQ(ok->count, 4u);
  EXPECT_EQ(ok->period_ns, 300'000'000);
  auto scaled = parseWhatifJob("a.pcap*3@scale=1.5");
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  EXPECT_EQ(scaled->count, 3u);
  EXPECT_EQ(scaled->scale, 1.5);
  // An existing file is taken whole, whatever it holds.
  auto whole = parseWhatifJob(kRing);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->path, kRing);
}

TEST(WhatifTest, UnreadableFilesAndImpossibleScalingAreNamed) {
  const std::string missing = kRoot + "/data/no-such-trace.pcap";
  auto r = runWhatif(config({kRing, missing + "*2"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find(missing), std::string::npos) << r.status();
  auto notpcap = runWhatif(config({kRoot + "/README.md"}));
  ASSERT_FALSE(notpcap.ok());
  EXPECT_NE(std::string(notpcap.status().message()).find("README.md"), std::string::npos) << notpcap.status();
  auto aperiodic = runWhatif(config({kGloo + "@period=300ms"}));
  ASSERT_FALSE(aperiodic.ok());
  EXPECT_NE(std::string(aperiodic.status().message()).find("no step period"), std::string::npos);
  EXPECT_NE(std::string(aperiodic.status().message()).find(kGloo), std::string::npos);
}

TEST(WhatifTest, RatesAndBuffersParseWithTheirUnits) {
  EXPECT_EQ(*parseRateBps("--rate", "100G"), 100e9);
  EXPECT_EQ(*parseRateBps("--rate", "25Gbit/s"), 25e9);
  EXPECT_EQ(*parseRateBps("--rate", "400M"), 400e6);
  EXPECT_EQ(*parseRateBps("--rate", "1e9"), 1e9);
  EXPECT_EQ(*parseBufferBytes("--buffer", "16MiB"), 16.0 * 1024 * 1024);
  EXPECT_EQ(*parseBufferBytes("--buffer", "12MB"), 12e6);
  EXPECT_EQ(*parseBufferBytes("--buffer", "1500"), 1500);
  auto bad = parseRateBps("--rate", "10X");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("--rate: '10X'"), std::string::npos);
  EXPECT_FALSE(parseBufferBytes("--buffer", "-1MiB").ok());
}

}  // namespace
}  // namespace burstscope
