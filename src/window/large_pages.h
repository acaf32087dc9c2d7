// An allocator for the tables of flows that grow to megabytes (the pair and flow tables, the TCP connections,
// the evidence per pair and flow): a block of 4 MiB or more is mapped on its own, on 2 MiB boundaries, and the
// kernel is asked to back it with transparent huge pages (madvise MADV_HUGEPAGE: Debian's kernel gives them in
// its default "madvise" mode only to who asks). Where flows churn, each look-up of a new key misses the caches
// at a random place in the table, and with 4 KiB pages it misses the TLB as well (bench/README.md: the churn
// parts of workers_bench). A hash table this large has every small page touched once it is a quarter full, so
// the huge pages cost little resident memory beyond it: at most the unused part of a table's last huge page (under
// 2 MiB a table; the 1 M-flow churn run's peak 117 -> 120 MB). Smaller blocks go to operator new.
// FlowMap is the map those tables are: keyed by flow (or host pair), on this allocator. Header-only, public to the
// modules that key tables by flow (src/meson.build).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "burstscope/packet.h"

namespace burstscope::internal {

template <typename T>
struct LargePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kFrom = size_t{4} << 20;

  LargePageAllocator() = default;
  template <typename U>
  LargePageAllocator(const LargePageAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): rebinding

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kFrom) return static_cast<T*>(::operator new (bytes, std::align_val_t{alignof(T)}));
    // Map a huge page more than asked, keep the aligned part, give the rest back.
    const size_t len = roundUp(bytes);
    void* m = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    const auto at = reinterpret_cast<uintptr_t>(m);
    const uintptr_t aligned = (at + kHugePage - 1) & ~(kHugePage - 1);
    if (aligned > at) ::munmap(m, aligned - at);
    if (const uintptr_t end = at + len + kHugePage; end > aligned + len)
      ::munmap(reinterpret_cast<void*>(aligned + len), end - aligned - len);
    ::madvise(reinterpret_cast<void*>(aligned), len, MADV_HUGEPAGE);  // advice: without it the table works the same
    return reinterpret_cast<T*>(aligned);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kFrom) {
      ::operator delete (p, std::align_val_t{alignof(T)});
    } else {
      ::munmap(p, roundUp(bytes));
    }
  }
  template <typename U>
  bool operator==(const LargePageAllocator<U>&) const noexcept {
    return true;
  }

 private:
  static size_t roundUp(size_t bytes) { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }
};

template <typename V, typename Hash>
using FlowMap =
    absl::flat_hash_map<FlowKey, V, Hash, std::equal_to<FlowKey>, LargePageAllocator<std::pair<const FlowKey, V>>>;

}  // namespace burstscope::internal
