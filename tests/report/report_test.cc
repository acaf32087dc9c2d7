// The text and JSON report's figures that the report computes itself (not the engine's): the microbursts'
// quantiles.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "src/analysis/report.h"

namespace burstscope {
namespace {

// The q-quantile of a sample: its element of rank min(n - 1, q·n), from the sample sorted.
double rankOf(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// The p50, p90, p99 and maximum of the microbursts' durations, gaps, volumes and peaks are the elements of their
// ranks in the sorted sample, for samples of 1 to 20,001 (the three ranks equal for the smallest, apart for the
// larger), with ties (volumes from a few values, a quarter of the gaps 0) and without, over twenty binary orders of
// magnitude (durations of nanoseconds to 0.5 ms, peaks to 100 Gbit/s).
TEST(ReportTest, MicroburstQuantilesAreTheSamplesElementsOfTheirRanks) {
  std::mt19937_64 rng(5);
  for (size_t n : {1u, 2u, 3u, 10u, 11u, 99u, 100u, 101u, 1000u, 20001u}) {
    SCOPED_TRACE(::testing::Message() << n << " microbursts");
    PortResult r;
    MicroburstResult m;
    m.count = n;
    std::vector<double> dur, gap, vol, peak;
    int64_t t = 1'000'000'000;
    for (size_t i = 0; i < n; ++i) {
      Microburst e;
      e.start_ns = t + (rng() % 4 == 0 ? 0 : static_cast<int64_t>(rng() % 1'000'000));  // ties of gaps at 0
      e.end_ns = e.start_ns + 1 + static_cast<int64_t>(rng() % 500'000);
      e.bytes = 1000 * (1 + rng() % 7);  // ties
      e.peak_bps = static_cast<double>(rng() % 100'000'000'000);
      if (i > 0) gap.push_back(static_cast<double>(e.start_ns - m.events.back().end_ns) * 1e-9);
      dur.push_back(static_cast<double>(e.end_ns - e.start_ns) * 1e-9);
      vol.push_back(static_cast<double>(e.bytes));
      peak.push_back(e.peak_bps);
      m.events.push_back(e);
      t = e.end_ns;
    }
    r.engine.port.packets = 1;
    r.engine.port.microbursts = m;
    const auto j = reportJson(r, SourceStats{}, ReportContext{});
    const auto& mb = j.at("microbursts");
    for (const auto& [name, v] : {std::pair{"durations_s", &dur}, std::pair{"gaps_s", &gap},
                                  std::pair{"volumes_bytes", &vol}, std::pair{"peak_bps", &peak}}) {
      SCOPED_TRACE(name);
      const auto& d = mb.at(name);
      ASSERT_EQ(d.at("n").get<size_t>(), v->size());
      if (v->empty()) continue;
      EXPECT_EQ(d.at("p50").get<double>(), rankOf(*v, 0.5));
      EXPECT_EQ(d.at("p90").get<double>(), rankOf(*v, 0.9));
      EXPECT_EQ(d.at("p99").get<double>(), rankOf(*v, 0.99));
      EXPECT_EQ(d.at("max").get<double>(), *std::max_element(v->begin(), v->end()));
    }
  }
}

}  // namespace
}  // namespace burstscope
