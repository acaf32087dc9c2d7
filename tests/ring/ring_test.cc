#include "burstscope/ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <span>
#include <thread>
#include <vector>

namespace burstscope {
namespace {

TEST(SpscRingTest, FullRingTakesWhatFitsAndNeverBlocks) {
  SpscRing<uint64_t> ring(8);
  std::vector<uint64_t> in(12);
  for (size_t i = 0; i < in.size(); ++i) in[i] = i;
  EXPECT_EQ(ring.enqueue(in), 8u);
  EXPECT_EQ(ring.enqueue(in), 0u);
  std::vector<uint64_t> out(5);
  EXPECT_EQ(ring.dequeue(out), 5u);
  EXPECT_EQ(out[4], 4u);
  EXPECT_EQ(ring.enqueue({in.data() + 8, 4}), 4u);
  std::vector<uint64_t> rest(16);
  ASSERT_EQ(ring.dequeue(rest), 7u);
  EXPECT_EQ(rest[0], 5u);
  EXPECT_EQ(rest[6], 11u);
  EXPECT_EQ(ring.dequeue(rest), 0u);
}

// consumeSpans hands the items over in place, in order, as one span or, where the ring wraps, two; the slots go
// back to the producer only after the call. Every fill and take size against a ring of 8, over several laps.
TEST(SpscRingTest, ConsumeSpansTakesInOrderAsOneSpanOrTwoWhereTheRingWraps) {
  SpscRing<uint64_t> ring(8);
  uint64_t next_in = 0, next_out = 0;
  int two_spans = 0;
  for (size_t fill = 1; fill <= 8; ++fill) {
    for (size_t take = 1; take <= 9; ++take) {
      std::vector<uint64_t> in(fill);
      for (uint64_t& x : in) x = next_in++;
      ASSERT_EQ(ring.enqueue(in), fill);
      while (ring.size() > 0) {
        std::vector<std::span<const uint64_t>> spans;
        const size_t held = ring.size(), want = std::min(take, held);
        const size_t n = ring.consumeSpans(take, [&](std::span<const uint64_t> s) {
          spans.push_back(s);
          EXPECT_EQ(ring.size(), held);  // the slots being read are not yet the producer's
        });
        EXPECT_EQ(ring.size(), held - n);
        ASSERT_EQ(n, want);
        ASSERT_GE(spans.size(), 1u);
        ASSERT_LE(spans.size(), 2u);
        two_spans += spans.size() == 2;
        size_t got = 0;
        for (std::span<const uint64_t> sp : spans) {
          ASSERT_FALSE(sp.empty());
          for (uint64_t x : sp) ASSERT_EQ(x, next_out++);
          got += sp.size();
        }
        ASSERT_EQ(got, n);
      }
    }
  }
  EXPECT_EQ(next_out, next_in);
  EXPECT_GT(two_spans, 0);
  EXPECT_EQ(ring.consumeSpans(4, [](std::span<const uint64_t>) { ADD_FAILURE() << "an empty ring's take"; }), 0u);
}

// Two threads, sequence-tagged items: the consumer must see every item exactly once, in order, whatever
// the interleaving; the producer counts what did not fit. Also run under ThreadSanitizer in CI.
TEST(SpscRingTest, TwoThreadStressLosesAndDuplicatesNothing) {
  constexpr uint64_t kItems = 2'000'000;
  SpscRing<uint64_t> ring(1024);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    std::vector<uint64_t> batch(37);
    uint64_t next = 0;
    while (next < kItems) {
      const size_t n = std::min<uint64_t>(batch.size(), kItems - next);
      for (size_t i = 0; i < n; ++i) batch[i] = next + i;
      next += ring.enqueue({batch.data(), n});  // retry the rest: this test wants no drops
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t expect = 0;
  std::vector<uint64_t> out(53);
  for (;;) {
    const bool finished = done.load(std::memory_order_acquire);
    const size_t n = ring.dequeue(out);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], expect++);
    if (n == 0 && finished) break;
  }
  producer.join();
  EXPECT_EQ(expect, kItems);
}

// The consumer of the dropping producers' tests: takes items until the producer is done and the ring is empty,
// each item's sequence number (`seq`, which may check the item too) above the last one's; counts them. It stops
// at the first failure.
template <typename T, typename Seq>
void consumeInOrder(SpscRing<T>& ring, const std::atomic<bool>& done, Seq seq, uint64_t* received,
                    bool in_place = false) {
  uint64_t last = 0;
  bool first = true;
  std::vector<T> out(64);
  auto check = [&](const T& item) {
    const uint64_t s = seq(item);
    EXPECT_TRUE(first || s > last) << "order kept, no duplicates, at item " << s;
    last = s;
    first = false;
  };
  for (;;) {
    const bool finished = done.load(std::memory_order_acquire);
    size_t n;
    if (in_place) {
      n = ring.consume(out.size(), check);  // read in the slot itself, before it is handed back
    } else {
      n = ring.dequeue(out);
      for (size_t i = 0; i < n; ++i) check(out[i]);
    }
    ASSERT_FALSE(::testing::Test::HasFailure());
    *received += n;
    if (n == 0 && finished) break;
  }
}

TEST(SpscRingTest, DroppingProducerAccountsForEveryItem) {
  constexpr uint64_t kItems = 1'000'000;
  SpscRing<uint64_t> ring(64);
  std::atomic<bool> done{false};
  uint64_t dropped = 0;
  std::thread producer([&] {
    uint64_t v[16];
    for (uint64_t next = 0; next < kItems; next += 16) {
      for (int i = 0; i < 16; ++i) v[i] = next + i;
      dropped += 16 - ring.enqueue(v);
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t received = 0;
  consumeInOrder(
      ring, done, [](uint64_t v) { return v; }, &received);
  producer.join();
  EXPECT_EQ(received + dropped, kItems);
}

// The producer writing in place (reserve, reserved, publish: how a live capture queue decodes straight into the
// ring): against a consumer on the other core, every item arrives once, in order, or is counted as dropped, and
// a slot is never written while the consumer may still read it (the values read are the values written).
// A producer that writes in place (reserve/reserved/publish), and a consumer that copies out (dequeue) or reads in
// place (consume, as a port's worker does): a slot handed back too early shows as a torn or overwritten item.
class InPlaceTest : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(SpscRingTest, InPlaceTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "ConsumedInPlace" : "Dequeued"; });
TEST_P(InPlaceTest, InPlaceProducerLosesAndDuplicatesNothing) {
  constexpr uint64_t kItems = 1'000'000;
  struct Item {
    uint64_t seq;
    uint64_t check;  // written after seq: a torn or overwritten slot shows as a mismatch
  };
  SpscRing<Item> ring(64);
  std::atomic<bool> done{false};
  uint64_t dropped = 0;
  std::thread producer([&] {
    size_t room = 0;
    for (uint64_t next = 0; next < kItems;) {
      size_t n = 0;
      for (int i = 0; i < 16 && next < kItems; ++i, ++next) {
        if (n == room) room = ring.reserve(n + 1);
        if (n == room) {
          ++dropped;
          continue;
        }
        Item& it = ring.reserved(n++);
        it.seq = next;
        it.check = next * 0x9E3779B97F4A7C15ull;
      }
      ring.publish(n);
      room -= n;
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t received = 0;
  consumeInOrder(
      ring, done,
      [](const Item& it) {
        EXPECT_EQ(it.check, it.seq * 0x9E3779B97F4A7C15ull) << "a slot overwritten before it was read";
        return it.seq;
      },
      &received, GetParam());
  producer.join();
  EXPECT_EQ(received + dropped, kItems);
  EXPECT_GT(received, 0u);
}

}  // namespace
}  // namespace burstscope

namespace burstscope {
namespace {

// A consumer that sleeps on the doorbell whenever its ring is empty, with a time limit far beyond any delay of
// a loaded machine (the whole run takes milliseconds): every publish, through either producer API, must wake
// it before the limit, and nothing is lost.
TEST(SpscRingTest, DoorbellWakesASleepingConsumerAtEachPublish) {
  SpscRing<uint64_t> ring(1024);
  Doorbell bell;
  ring.setDoorbell(&bell);
  constexpr uint64_t kItems = 20'000;
  std::thread producer([&] {
    std::mt19937 rng(5);
    uint64_t next = 0;
    while (next < kItems) {
      const size_t burst = std::min<uint64_t>(1 + rng() % 64, kItems - next);
      if (rng() % 2 == 0) {
        std::vector<uint64_t> items(burst);
        for (uint64_t& v : items) v = next++;
        size_t done = 0;
        while (done < items.size()) done += ring.enqueue(std::span<const uint64_t>(items).subspan(done));
      } else {
        while (ring.reserve(burst) < burst) std::this_thread::yield();
        for (size_t i = 0; i < burst; ++i) ring.reserved(i) = next++;
        ring.publish(burst);
      }
      if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
    }
  });
  uint64_t expect = 0, sleeps = 0;
  std::array<uint64_t, 64> out;
  while (expect < kItems) {
    const size_t n = ring.dequeue(out);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], expect++);
    if (n == 0) {
      const auto asleep = std::chrono::steady_clock::now();
      bell.sleep([&] { return ring.publishedSeqCst(); }, std::chrono::seconds(10));
      ++sleeps;
      // Items were still to come (the loop ends with the last), and the producer never pauses for more than
      // 200 us: only a publish that did not ring lets a sleep run to its limit.
      ASSERT_LT(std::chrono::steady_clock::now() - asleep, std::chrono::seconds(9)) << "a publish did not wake it";
    }
  }
  producer.join();
  EXPECT_GT(sleeps, 0u);  // the consumer did sleep, so the doorbell was what woke it
}

TEST(SpscRingTest, SizeSaysWhatTheRingHolds) {
  SpscRing<int> ring(8);
  EXPECT_EQ(ring.size(), 0u);
  const std::vector<int> in = {1, 2, 3, 4, 5};
  EXPECT_EQ(ring.enqueue(in), 5u);
  EXPECT_EQ(ring.size(), 5u);
  std::vector<int> out(3);
  EXPECT_EQ(ring.dequeue(out), 3u);
  EXPECT_EQ(ring.size(), 2u);
  EXPECT_EQ(ring.enqueue(in), 5u);  // wraps around the end of the slots
  EXPECT_EQ(ring.size(), 7u);
  std::vector<int> rest(16);
  EXPECT_EQ(ring.dequeue(rest), 7u);
  EXPECT_EQ(ring.size(), 0u);
}

}  // namespace
}  // namespace burstscope
