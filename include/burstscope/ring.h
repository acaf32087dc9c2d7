// A bounded lock-free single-producer/single-consumer ring with batch enqueue and dequeue, in the manner of
// rte_ring: producer and consumer indices on separate cache lines, each side caching the other's index so
// that the shared line is read only when the cached view says the ring is full (or empty).
// A full ring never blocks: enqueue takes what fits and the caller counts the rest as dropped.
// A consumer that sleeps while its rings are empty can hang a Doorbell on them, so that a publish wakes it.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

namespace burstscope {

inline constexpr size_t kCacheLine = 64;

// Wakes one consumer that sleeps while its rings are empty (a port's worker), shared by the rings it reads.
// The consumer announces its sleep and looks at its rings once more (SpscRing::publishedSeqCst), then waits on a
// futex with a time limit; a producer publishes with a sequentially consistent store and then looks whether
// the consumer sleeps (a plain load on x86), making the wake-up call only then. Store-then-load on both sides
// in one total order (the Dekker pattern): either the producer sees the sleeper or the sleeper sees the records.
// A wake-up that comes before the wait makes it return at once; the time limit bounds anything missed anyway.
class Doorbell {
 public:
  // Producer, after a sequentially consistent publish.
  void ring() {
    if (sleeping_.load(std::memory_order_seq_cst)) {
      calls_.fetch_add(1, std::memory_order_relaxed);
      syscall(SYS_futex, &calls_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
  }
  // Sleeps until a producer rings or `limit` passes, unless `ready()` holds once the sleep is announced.
  // `ready` must look at the rings with SpscRing::publishedSeqCst.
  template <typename Ready>
  void sleep(Ready ready, std::chrono::nanoseconds limit) {
    const uint32_t calls = calls_.load(std::memory_order_relaxed);
    sleeping_.store(true, std::memory_order_seq_cst);
    if (!ready()) {
      const timespec ts{static_cast<time_t>(limit.count() / 1'000'000'000),
                        static_cast<long>(limit.count() % 1'000'000'000)};
      syscall(SYS_futex, &calls_, FUTEX_WAIT_PRIVATE, calls, &ts, nullptr, 0);
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }

 private:
  alignas(kCacheLine) std::atomic<uint32_t> calls_{0};
  std::atomic<bool> sleeping_{false};
};

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "ring slots are copied with plain stores and left unconstructed");

 public:
  // `capacity` is rounded up to a power of two. The slots are allocated, not constructed: each is written
  // before it is published (enqueue copies into it; a reserved slot is written whole by its producer), and a
  // queue's ring (64 Ki records by default) is 4.7 MB that constructing would write, and fault in, before the
  // first packet (bench/README.md "Start-up, and what else was measured"). A file's ring is then faulted in as
  // its first lap fills it; a live queue's is touched once at start (prefault), where a fault costs its RX thread.
  explicit SpscRing(size_t capacity)
      : mask_(std::bit_ceil(std::max<size_t>(capacity, 2)) - 1),
        slots_(std::allocator<T>().allocate(mask_ + 1), Release{mask_ + 1}) {}
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const { return mask_ + 1; }
  // Before the producer starts: writes every slot's bytes once (zeros), so that the ring's pages are faulted
  // in now and not during the producer's first lap.
  void prefault() { std::memset(static_cast<void*>(slots_.get()), 0, capacity() * sizeof(T)); }
  // Any thread: how many items the ring holds, as a snapshot (exact when neither side is moving).
  size_t size() const {
    const uint64_t tail = cons_.tail.load(std::memory_order_acquire);  // first: the head only grows past it
    return static_cast<size_t>(prod_.head.load(std::memory_order_acquire) - tail);
  }

  // Producer side. Copies as many of `items` as fit and returns how many; never waits.
  size_t enqueue(std::span<const T> items) {
    const uint64_t head = prod_.head.load(std::memory_order_relaxed);
    const size_t n = std::min(reserve(items.size()), items.size());
    for (size_t i = 0; i < n; ++i) slots_[(head + i) & mask_] = items[i];
    publishHead(head + n, n);
    return n;
  }

  // Producer side, in place (no staging copy): reserve() says how many slots are free from the producer's next
  // one on (reading the consumer's index again only when fewer than `want` look free), reserved(i) is the i-th
  // of them to write, and publish(n) hands the first n over, each of them written whole (a slot holds no value
  // of its own: unconstructed, or a record of an earlier lap). The consumer sees none of them before publish.
  size_t reserve(size_t want) {
    const uint64_t head = prod_.head.load(std::memory_order_relaxed);
    size_t free_slots = capacity() - (head - prod_.cached_tail);
    if (free_slots < want) {
      prod_.cached_tail = cons_.tail.load(std::memory_order_acquire);
      free_slots = capacity() - (head - prod_.cached_tail);
    }
    return free_slots;
  }
  T& reserved(size_t i) { return slots_[(prod_.head.load(std::memory_order_relaxed) + i) & mask_]; }
  void publish(size_t n) { publishHead(prod_.head.load(std::memory_order_relaxed) + n, n); }

  // Before the producer starts: the consumer's doorbell, rung after each publish (none: nothing rung).
  void setDoorbell(Doorbell* d) { doorbell_ = d; }
  // Consumer side, deciding to sleep on the doorbell: whether anything was published that it has not taken.
  bool publishedSeqCst() const {
    return prod_.head.load(std::memory_order_seq_cst) != cons_.tail.load(std::memory_order_relaxed);
  }

  // Consumer side. Moves up to out.size() items into `out` and returns how many.
  size_t dequeue(std::span<T> out) {
    return consume(out.size(), [out, i = size_t{0}](const T& item) mutable { out[i++] = item; });
  }
  // Consumer side, in place as spans: calls `take(std::span<const T>)` on up to `max` items in order, as one span or
  // two where the ring wraps, then hands their slots back to the producer; returns how many. `take` keeps no
  // reference to an item past its call.
  template <typename Take>
  size_t consumeSpans(size_t max, Take&& take) {
    const uint64_t tail = cons_.tail.load(std::memory_order_relaxed);
    const size_t n = available(tail, max);
    if (n == 0) return 0;
    const size_t from = tail & mask_;
    const size_t first = std::min(n, capacity() - from);  // up to the slots' end, then from their start
    take(std::span<const T>(slots_.get() + from, first));
    if (first < n) take(std::span<const T>(slots_.get(), n - first));
    cons_.tail.store(tail + n, std::memory_order_release);
    return n;
  }
  // Consumer side, in place (no copy out): calls `take(item)` on up to `max` items in order, then hands their slots
  // back to the producer; returns how many. `take` keeps no reference to an item past its call.
  template <typename Take>
  size_t consume(size_t max, Take&& take) {
    const uint64_t tail = cons_.tail.load(std::memory_order_relaxed);
    const size_t n = available(tail, max);
    for (size_t i = 0; i < n; ++i) take(static_cast<const T&>(slots_[(tail + i) & mask_]));
    cons_.tail.store(tail + n, std::memory_order_release);
    return n;
  }

 private:
  // Consumer side: how many of up to `max` items are there to take from `tail` on, reading the producer's index
  // again only when fewer than `max` look published.
  size_t available(uint64_t tail, size_t max) {
    size_t avail = cons_.cached_head - tail;
    if (avail < max) {
      cons_.cached_head = prod_.head.load(std::memory_order_acquire);
      avail = cons_.cached_head - tail;
    }
    return std::min(avail, max);
  }
  void publishHead(uint64_t head, size_t n) {
    if (doorbell_ == nullptr) {
      prod_.head.store(head, std::memory_order_release);
      return;
    }
    prod_.head.store(head, std::memory_order_seq_cst);  // before the look at the sleeper (see Doorbell)
    if (n > 0) doorbell_->ring();
  }

  struct alignas(kCacheLine) Producer {
    std::atomic<uint64_t> head{0};
    uint64_t cached_tail = 0;
  };
  struct alignas(kCacheLine) Consumer {
    std::atomic<uint64_t> tail{0};
    uint64_t cached_head = 0;
  };

  struct Release {
    size_t n;
    void operator()(T* p) const { std::allocator<T>().deallocate(p, n); }
  };

  const size_t mask_;
  std::unique_ptr<T[], Release> slots_;
  Doorbell* doorbell_ = nullptr;
  Producer prod_;
  Consumer cons_;
};

}  // namespace burstscope
