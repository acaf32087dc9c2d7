#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "burstscope/reorder.h"

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

// Several queues held apart and merged at release (hold, releaseUpTo, flush) against the definition: one buffer of
// every record held, put in time order stably (ties in the order held), a record behind what was released clamped
// to it; each release lets out exactly the records at or before its bound. Queues mostly in order, some records
// behind their queue's newest, times from a narrow range so that ties across queues are common; releases at the
// oldest queue's newest less a horizon, and now and then at a bound past records still arriving (those come late
// and are clamped).
TEST(ReordererTest, QueuesHeldApartAreReleasedAsOneBufferInTimeOrder) {
  std::mt19937 rng(41);
  for (int round = 0; round < 40; ++round) {
    const size_t queues = 1 + rng() % 12;  // trees of 1 to 16 leaves, some past the lanes
    const int64_t horizon = rng() % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 50);
    Reorderer ro(horizon);
    struct Ref {
      int64_t ts;
      uint32_t id;
    };
    std::vector<Ref> held;  // in time order, stable
    int64_t released = INT64_MIN;
    uint64_t reordered = 0, clamped = 0;
    int64_t lateness = 0;
    std::vector<uint32_t> out, want;
    std::vector<int64_t> out_ts, want_ts;
    auto emit_ts = [&](const PacketRecord& r) {
      out.push_back(r.wire_len);
      out_ts.push_back(r.ts_ns);
    };
    // Times start at 1000 or, in a third of the rounds, below zero, where the releases' bounds are negative too (the
    // merge orders by a key whose time has its sign bit flipped).
    const int64_t start = rng() % 3 == 0 ? -100'000 : 1000;
    std::vector<int64_t> clock(queues, start), watermark(queues, INT64_MIN);
    auto release = [&](int64_t bound) {
      size_t n = 0;
      while (n < held.size() && held[n].ts <= bound) {
        want.push_back(held[n].id);
        want_ts.push_back(held[n].ts);
        ++n;
      }
      held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n));
      released = std::max(released, bound);
      ro.releaseUpTo(bound, emit_ts);
      ASSERT_EQ(out, want) << "round " << round << ": a release let out other records than the definition's";
      ASSERT_EQ(out_ts, want_ts) << "round " << round;
    };
    // In half the rounds the upper queues bring only ticks (their time moves on, nothing is held) for the first
    // thousand steps, so their lanes appear after releases, as a quiet RX queue's first packet does.
    const size_t quiet_from = rng() % 2 == 0 ? 1 + rng() % queues : queues;
    uint32_t id = 0;
    auto hold_one = [&](size_t q) {
      const uint32_t roll = rng() % 100;
      int64_t ts = clock[q];
      if (roll < 10) {
        ts -= static_cast<int64_t>(rng() % 40);  // behind its queue's newest
      } else {
        ts = clock[q] += static_cast<int64_t>(rng() % 4);  // often a tie
      }
      PacketRecord r;
      r.ts_ns = ts;
      r.wire_len = id;
      watermark[q] = std::max(watermark[q], ts);
      ro.hold(q, r);
      // The definition.
      if (ts < released) {
        lateness = std::max(lateness, released - ts);
        ts = released;
        ++clamped;
      }
      if (!held.empty() && ts < held.back().ts) ++reordered;
      auto at = std::upper_bound(held.begin(), held.end(), ts, [](int64_t t, const Ref& x) { return t < x.ts; });
      held.insert(at, Ref{ts, id});
      ++id;
    };
    for (int step = 0; step < 3000; ++step) {
      // Once, past releases that moved every ring's start: more records in one queue than its first ring holds
      // (1,024), so that it grows with its records wrapped round.
      if (step == 1500) {
        for (int k = 0; k < 1500; ++k) hold_one(0);
      }
      const size_t q = rng() % queues;
      if (step < 1000 && q >= quiet_from) {
        watermark[q] = std::max(watermark[q], clock[q] += static_cast<int64_t>(rng() % 4));  // a tick, no record
      } else {
        hold_one(q);
      }
      if (rng() % 16 == 0) {
        const int64_t low = *std::min_element(watermark.begin(), watermark.end());
        if (rng() % 8 == 0) {
          release(clock[rng() % queues] + static_cast<int64_t>(rng() % 20));  // ahead of some queues: clamps
        } else if (low != INT64_MIN) {
          release(low - horizon);
        }
      }
    }
    ro.flush(emit_ts);
    for (const Ref& x : held) {
      want.push_back(x.id);
      want_ts.push_back(x.ts);
    }
    ASSERT_EQ(out, want) << "round " << round << ", " << queues << " queues";
    ASSERT_EQ(out_ts, want_ts) << "round " << round;
    EXPECT_EQ(ro.reordered(), reordered) << "round " << round;
    EXPECT_EQ(ro.clamped(), clamped) << "round " << round;
    EXPECT_EQ(ro.maxLatenessNs(), lateness) << "round " << round;
    EXPECT_GT(clamped, 0u);  // the late path was taken (every round makes some)
  }
}

// One ordered source through push() (a file, `analyze`) against the definition the header gives: a record more than
// kClockStepNs behind the newest shifts time on from it (the clock stepped back); one behind what was released is
// clamped to it; the rest are held in time order stably, and a record is released once the newest is the horizon
// past it. "Reordered" counts the records held behind the newest. Each push's releases are compared, and a burst of
// records at one time holds more than the first ring (1,024) at once, so that it grows.
// In odd rounds and every eighth (those with no horizon) the records go in by pushHeld() (a file's reading thread,
// QueueProducer::orderInTime) and what it released is taken every 1 to 700 records, as one span or two where the
// buffer wraps; every other such round ends by releaseHeld() and a take, as that thread ends, the rest by flush(). The
// test counts that the ring grew while released records waited in it and that a final flush() found some not yet
// taken (the model knows the ring's size: it doubles from 1,024 when what is held and not yet taken fills it).
TEST(ReordererTest, PushedRecordsComeOutAsTheDefinitionSays) {
  using Out = std::pair<int64_t, uint32_t>;  // a released record: its time and its place in the input
  auto out = [](const PacketRecord& r) { return Out{r.ts_ns, r.wire_len}; };
  std::mt19937 rng(7);
  int wrapped_takes = 0;        // takes of two spans
  int grown_while_waiting = 0;  // grows with records released and not yet taken
  int flushed_untaken = 0;      // flushes that found some
  int released_at_end = 0;      // rounds ended by releaseHeld() and a take rather than flush()
  for (int round = 0; round < 40; ++round) {
    const int64_t horizon = round % 4 == 0 ? 0 : static_cast<int64_t>(rng() % 50'000);
    const bool held_in_place = round % 2 == 1 || round % 8 == 0;
    size_t ring = 1024;  // the reorderer's buffer, as the model follows it
    const uint32_t take_every = held_in_place ? 1 + rng() % 700 : 1;
    std::vector<Out> untaken;  // released by pushHeld(), not yet taken
    Reorderer ro(horizon);
    std::vector<PacketRecord> held;  // the definition's one buffer, in time order
    int64_t newest = INT64_MIN, released = INT64_MIN, shift = 0, lateness = 0;
    uint64_t reordered = 0, clamped = 0, steps = 0;
    int64_t t = 5'000'000'000;
    for (uint32_t i = 0; i < 6000; ++i) {
      PacketRecord r;
      const uint32_t kind = rng() % 1000;
      if (kind < 2) {
        t -= Reorderer::kClockStepNs + 1 + static_cast<int64_t>(rng() % 3'000'000'000u);  // the clock steps back
      } else if (i >= 3000 && i < 4500) {
        // a burst at one instant: held all at once while the horizon is not yet past
      } else if (kind < 900) {
        t += rng() % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 20'000);
      }
      // Now and then a record from behind: within the horizon or beyond it.
      r.ts_ns = kind >= 900 && kind < 990 ? t - static_cast<int64_t>(rng() % (2 * horizon + 2)) : t;
      r.wire_len = i;  // its place in the input
      // The definition.
      int64_t ts = r.ts_ns + shift;
      if (newest != INT64_MIN && ts < newest - Reorderer::kClockStepNs) {
        ++steps;
        shift += newest - ts;
        ts = newest;
      }
      if (ts < released) {
        lateness = std::max(lateness, released - ts);
        ts = released;
        ++clamped;
      }
      if (ts < newest) ++reordered;
      PacketRecord h = r;
      h.ts_ns = ts;
      held.insert(std::upper_bound(held.begin(), held.end(), h,
                                   [](const PacketRecord& a, const PacketRecord& b) { return a.ts_ns < b.ts_ns; }),
                  h);
      newest = std::max(newest, ts);
      std::vector<Out> want;
      size_t n = 0;
      while (n < held.size() && held[n].ts_ns <= newest - horizon) {
        released = held[n].ts_ns;
        want.push_back(out(held[n++]));
      }
      held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n));
      std::vector<Out> got;
      if (!held_in_place) {
        ro.push(r, [&](const PacketRecord& x) { got.push_back(out(x)); });
        ASSERT_EQ(got, want) << "round " << round << " record " << i;
        continue;
      }
      // Before the record went in, `held` (without its own) and `untaken` filled the ring: it grew.
      if (held.size() + n - 1 + untaken.size() == ring) {
        ring *= 2;
        grown_while_waiting += !untaken.empty();
      }
      ro.pushHeld(r);
      untaken.insert(untaken.end(), want.begin(), want.end());
      if (i % take_every != 0) continue;
      int spans = 0;
      ro.takeReleased([&](std::span<const PacketRecord> s) {
        ++spans;
        for (const PacketRecord& x : s) got.push_back(out(x));
      });
      ASSERT_EQ(got, untaken) << "round " << round << " record " << i;
      ASSERT_LE(spans, 2);
      wrapped_takes += spans == 2;
      untaken.clear();
    }
    std::vector<Out> got, want = untaken;
    if (held_in_place && round % 4 == 1) {
      // The input's end as a file's reading thread takes it: everything held released, then taken as spans.
      ro.releaseHeld();
      ro.takeReleased([&](std::span<const PacketRecord> s) {
        for (const PacketRecord& x : s) got.push_back(out(x));
      });
      ++released_at_end;
      ro.flush([&](const PacketRecord&) { ADD_FAILURE() << "round " << round << ": left after releaseHeld()"; });
    } else {
      flushed_untaken += !untaken.empty();
      ro.flush([&](const PacketRecord& x) { got.push_back(out(x)); });
    }
    for (const PacketRecord& h : held) want.push_back(out(h));
    ASSERT_EQ(got, want) << "round " << round;
    EXPECT_EQ(ro.reordered(), reordered) << "round " << round;
    EXPECT_EQ(ro.clamped(), clamped) << "round " << round;
    EXPECT_EQ(ro.maxLatenessNs(), lateness) << "round " << round;
    EXPECT_EQ(ro.clockStepsBack(), steps) << "round " << round;
    EXPECT_EQ(ro.clockShiftNs(), shift) << "round " << round;
    // Each path of the definition is taken (with no horizon, whatever comes from behind is clamped).
    EXPECT_GT(steps, 0u) << "round " << round;
    EXPECT_GT(clamped, 0u) << "round " << round;
    if (horizon > 0) {
      EXPECT_GT(reordered, 0u) << "round " << round;
    }
  }
  EXPECT_GT(wrapped_takes, 0);  // the take's second span was needed
  EXPECT_GT(grown_while_waiting, 0);
  EXPECT_GT(flushed_untaken, 0);
  EXPECT_GT(released_at_end, 0);
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
