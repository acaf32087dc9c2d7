// The live view's model (src/live): what a viewer gets (a snapshot first, then the events after it, a fresh
// snapshot when too far behind), the window's bound, and bins the publisher read too late counted, not lost
// silently. The page and its viewers against a real run: tests/live/check_live.py.
#include "src/live/live_view.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace burstscope {
namespace {

constexpr int64_t kBin = 100'000;

LiveViewConfig fastConfig() {
  LiveViewConfig c;
  c.window_ns = 1'000'000'000;  // 1 s: 10,000 bins
  c.update_ns = 20'000'000;
  c.kept_events = 4;
  return c;
}

// Waits (bounded) until the publisher has made event `seq`.
bool waitForEvent(const LiveView& v, uint64_t seq) {
  for (int i = 0; i < 1000 && v.latest() < seq; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return v.latest() >= seq;
}

// The data lines of an SSE text, parsed, with their event names.
std::vector<std::pair<std::string, nlohmann::json>> parse(const std::string& sse) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  std::string event;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find('\n', pos);
    const std::string line = sse.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("event: ", 0) == 0) event = line.substr(7);
    if (line.rfind("data: ", 0) == 0) out.emplace_back(event, nlohmann::json::parse(line.substr(6)));
  }
  return out;
}

TEST(LiveView, SnapshotThenEventsInOrder) {
  LiveView v(fastConfig(), {LivePortInfo{"p0", 10e9, kBin, kBin, 0.5, {kBin}}}, "<html></html>");
  EngineObserver* tap = v.tap(0);
  for (int64_t i = 0; i < 100; ++i) tap->onBaseBin((1'000'000 + i) * kBin, 1000 + i, 1);
  v.start();
  ASSERT_TRUE(waitForEvent(v, 1));
  uint64_t next = 0;
  auto first = parse(v.eventsAfter(&next));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].first, "snapshot");
  const auto& bins = first[0].second["ports"][0]["bins"];
  ASSERT_EQ(bins.size(), 100u);
  EXPECT_EQ(bins[0][0].get<int64_t>(), 1'000'000);
  EXPECT_EQ(bins[99][1].get<int64_t>(), 1099);
  EXPECT_EQ(first[0].second["ports"][0]["link_bps"].get<double>(), 10e9);

  // Bins after the snapshot arrive in the next events, each once.
  for (int64_t i = 100; i < 150; ++i) tap->onBaseBin((1'000'000 + i) * kBin, 1000 + i, 1);
  const uint64_t after = next;
  ASSERT_TRUE(waitForEvent(v, after + 1));
  std::vector<int64_t> seen;
  for (int round = 0; round < 3 && seen.size() < 50; ++round) {
    for (const auto& [name, data] : parse(v.eventsAfter(&next))) {
      EXPECT_EQ(name, "bins");
      for (const auto& b : data["ports"][0]["bins"]) seen.push_back(b[0].get<int64_t>());
    }
    waitForEvent(v, next);
  }
  ASSERT_EQ(seen.size(), 50u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1'000'100 + static_cast<int64_t>(i));
  uint64_t ahead = v.latest() + 1000;
  EXPECT_EQ(v.eventsAfter(&ahead), "") << "nothing for a viewer that has every event";
}

TEST(LiveView, BehindViewerGetsSnapshotAndWindowIsBounded) {
  LiveView v(fastConfig(), {LivePortInfo{"p0", 10e9, kBin, kBin, 0.5, {kBin}}}, "");
  EngineObserver* tap = v.tap(0);
  // 3 s of full bins: the window keeps 1 s of them.
  for (int64_t i = 0; i < 30'000; ++i) tap->onBaseBin(i * kBin, 1, 1);
  v.start();
  ASSERT_TRUE(waitForEvent(v, 1));
  uint64_t next = 1;
  ASSERT_TRUE(waitForEvent(v, 8));  // more than the 4 kept events later
  auto got = parse(v.eventsAfter(&next));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "snapshot");
  const auto& bins = got[0].second["ports"][0]["bins"];
  EXPECT_EQ(bins.size(), 10'001u) << "the window [newest - 1 s, newest]";
  EXPECT_EQ(bins.back()[0].get<int64_t>(), 29'999);
  EXPECT_EQ(v.stats().bins_overwritten, 0u);
}

TEST(LiveView, OverrunIsCountedNotHidden) {
  LiveView v(fastConfig(), {LivePortInfo{"p0", 10e9, kBin, kBin, 0.5, {kBin}}}, "");
  EngineObserver* tap = v.tap(0);
  // More bins than the ring holds (2^16) before the publisher's first look.
  const int64_t n = (int64_t{1} << 16) + 1000;
  for (int64_t i = 0; i < n; ++i) tap->onBaseBin(i * kBin, 1, 1);
  v.start();
  ASSERT_TRUE(waitForEvent(v, 1));
  const LiveViewStats s = v.stats();
  EXPECT_EQ(s.bins_overwritten, 1000u);
  EXPECT_EQ(s.bins, static_cast<uint64_t>(int64_t{1} << 16));
}

// The training jobs of an interval's analysis reach the page with their steps inside the window (the step
// markers); an interval without an analysis keeps the jobs last shown.
TEST(LiveView, JobsAndTheirStepsInTheWindowReachTheViewers) {
  LiveView v(fastConfig(), {LivePortInfo{"p0", 10e9, kBin, kBin, 0.5, {kBin}}}, "");
  auto report = std::make_shared<TrainingReport>();
  JobReport job;
  job.name = "10.0.0.0/29";
  job.hosts = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};
  job.period.period_s = 0.25;
  job.step_bytes_mean = 48e6;
  job.topology.kind = "ring";
  // Steps every 250 ms up to the interval's end at 10 s; the window (1 s) holds those ending at 9 s or later.
  for (int i = 0; i < 40; ++i) {
    StepSpan st;
    st.index = static_cast<uint64_t>(i);
    st.start_ns = int64_t{i} * 250'000'000;
    st.end_ns = st.start_ns + 250'000'000;
    st.bytes = 48e6 + i;
    job.steps.push_back(st);
  }
  // Its own bins of the interval: one before the window's start (9 s = bin 90,000), two inside.
  job.interval_bins = {{89'999, 5}, {95'000, 7}, {99'999, 9}};
  report->jobs.push_back(job);
  PortSnapshot s;
  s.interval.end_ns = 10'000'000'000;
  s.interval.port.envelope_bytes = {1000};
  s.interval.port.ptm = {2.0};
  s.training = report;
  v.onInterval(0, s);
  PortSnapshot without = s;
  without.training = nullptr;
  v.onInterval(0, without);
  v.tap(0)->onBaseBin(99'999 * kBin, 100, 1);
  v.start();
  ASSERT_TRUE(waitForEvent(v, 1));
  uint64_t next = 0;
  const auto events = parse(v.eventsAfter(&next));
  ASSERT_EQ(events.size(), 1u);
  const auto& jobs = events[0].second["ports"][0]["figures"]["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["name"], "10.0.0.0/29");
  EXPECT_EQ(jobs[0]["hosts"].get<int>(), 3);
  EXPECT_EQ(jobs[0]["topology"], "ring");
  EXPECT_DOUBLE_EQ(jobs[0]["period_s"].get<double>(), 0.25);
  const auto& steps = jobs[0]["steps"];
  ASSERT_EQ(steps.size(), 4u) << steps.dump();  // ending at 9.25, 9.5, 9.75, 10 s (9 s is the window's start)
  EXPECT_DOUBLE_EQ(steps[0][0].get<double>(), 9.0);
  EXPECT_DOUBLE_EQ(steps[3][1].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(steps[3][2].get<double>(), 48e6 + 39);
  // The snapshot holds the job's bins inside the window; the next event only the next interval's.
  EXPECT_EQ(events[0].second["ports"][0]["job_bins"]["10.0.0.0/29"], nlohmann::json::parse("[[95000,7],[99999,9]]"));
  auto next_report = std::make_shared<TrainingReport>(*report);
  next_report->jobs[0].interval_bins = {{100'000, 11}};
  PortSnapshot s2 = s;
  s2.interval.end_ns = 10'100'000'000;
  s2.training = next_report;
  v.onInterval(0, s2);
  const uint64_t seq = next;
  ASSERT_TRUE(waitForEvent(v, seq));
  bool seen = false;
  for (int round = 0; round < 3 && !seen; ++round) {
    for (const auto& [name, data] : parse(v.eventsAfter(&next))) {
      const auto& jb = data["ports"][0]["job_bins"];
      if (jb.contains("10.0.0.0/29")) {
        EXPECT_EQ(jb["10.0.0.0/29"], nlohmann::json::parse("[[100000,11]]"));
        seen = true;
      }
    }
    if (!seen) waitForEvent(v, next);
  }
  EXPECT_TRUE(seen) << "the next interval's job bins reach the viewers once";
}

}  // namespace
}  // namespace burstscope
