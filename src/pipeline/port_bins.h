// A port's complete 100 µs series on its worker (SPEC "Overload"): the bins every live queue's producer counted
// before its ring could drop a frame, added up across queues, and at each interval close the interval's exact
// totals and, when frames were lost after the bins, its figures as bounds (IntervalBounds in pipeline.h).
//
// Why by hand: the series is a ring of fixed slots indexed by bin number (no allocation after start, the worker's
// packet path), and the bounds are prefix sums and a Lindley recursion over it; no library does this shape.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "burstscope/capture.h"
#include "burstscope/window.h"
#include "src/pipeline/pipeline.h"

namespace burstscope::internal {

class PortBins {
 public:
  // `c`: the port's engine configuration (scales, rates, report interval, baseline); `queues`: the port's;
  // `kernel`: the kernel's own bins of the port, read at each close (nullptr: none).
  PortBins(const EngineConfig& c, size_t queues, const KernelBinSource* kernel = nullptr);

  // A bin part from queue `q`, in that queue's order (the worker drains the queue's side channel right after
  // its record ring, so every part of an interval is here before the interval closes).
  void add(size_t q, const QueueBin& b);
  // The interval [r.start_ns, r.end_ns) closes: its totals, and bounds when it lost frames after the bins.
  IntervalBounds close(const IntervalReport& r);

  uint64_t late() const { return late_; }  // parts for an interval already closed (or beyond the slots)
  // The start of the first and of the last bin holding a frame (INT64_MIN: none yet), in ns.
  int64_t oldestNs() const { return oldest_ == INT64_MAX ? INT64_MIN : oldest_ * kQueueBinNs; }
  int64_t newestNs() const { return newest_ == INT64_MIN ? INT64_MIN : newest_ * kQueueBinNs; }

 private:
  struct Bin {
    uint64_t bytes = 0, lost_bytes = 0;
    uint32_t packets = 0, lost = 0;
    uint64_t raw_bytes = 0;  // the producers' frames as captured (outer bytes), to set against the kernel's
    // Frames the kernel counted and no producer saw (lost before the rings): in packets and lost; their bytes
    // in bytes and lost_bytes when the port's frames are not wrapped, else at most `unsure` more.
    uint32_t kernel_lost = 0;
    uint64_t unsure = 0;
  };
  Bin& at(int64_t i) { return slots_[static_cast<size_t>(i) & mask_]; }
  uint64_t bytesAt(int64_t i) const { return i < floor_ ? 0 : slots_[static_cast<size_t>(i) & mask_].bytes; }
  uint64_t upperAt(int64_t i) const {
    return i < floor_ ? 0
                      : slots_[static_cast<size_t>(i) & mask_].bytes + slots_[static_cast<size_t>(i) & mask_].unsure;
  }
  // The kernel's bins of [first, end) into the slots: the frames it counted beyond the producers' are lost ones.
  void mergeKernel(int64_t first, int64_t end, int64_t now);  // now: CLOCK_REALTIME
  void forgetBelow(int64_t index);                            // slots of bins below `index` are zeroed and reused
  uint64_t packetsAt(int64_t i) const { return i < floor_ ? 0 : slots_[static_cast<size_t>(i) & mask_].packets; }
  // E(τ) and PtM(τ) of the bounded scales from the series (complete) or the analysed frames (lower only), and
  // the microburst count's bounds when they are bounded.
  void bound(const IntervalReport& r, int64_t first, int64_t end, IntervalBounds* out);
  // The bytes of the n bins ending with bin i, over bound()'s prefix sums p (prefix_ or prefix_hi_).
  uint64_t last(const std::vector<uint64_t>& p, int64_t i, int64_t n) const;
  std::pair<uint64_t, uint64_t> microburstBounds(int64_t first, int64_t end, bool complete) const;

  const EngineConfig& cfg_;
  const KernelBinSource* kernel_;
  int64_t kernel_next_ = INT64_MIN;   // the first bin not read from the kernel yet
  std::vector<KernelBinCount> kbuf_;  // kept: no allocation per close once grown
  bool wrapped_ = false;              // a producer saw a frame whose measured bytes are not its captured ones
  // The slots (a power of two of them, 12.6 MB with the default 10 s scale) come from calloc: a block that size is
  // the kernel's zero pages, which take memory only where bins are written (forgetBelow clears only those), where a
  // vector's value-initialisation wrote every slot at start-up (a third of an idle AF_XDP run's page faults and 12 MB
  // of its peak; bench/README.md, a thirty-second session). A port with a frame in every 100 µs writes them all
  // within the ring's 26 s. Bin is an aggregate of integers, which zero bytes make.
  struct Free {
    void operator()(Bin* p) const { std::free(p); }
  };
  static_assert(std::is_aggregate_v<Bin> && std::is_trivially_copyable_v<Bin>);
  std::unique_ptr<Bin[], Free> slots_;
  size_t slot_count_ = 0;
  size_t mask_ = 0;
  int64_t history_bins_ = 0;    // the longest window's bins (ceil(τ_max / 100 µs) + 1): kept before an interval
  int64_t floor_ = INT64_MIN;   // the lowest bin index the slots hold (INT64_MIN: no bin yet)
  int64_t closed_ = INT64_MIN;  // bins below this index belong to closed intervals
  int64_t newest_ = INT64_MIN;  // the highest bin index holding a frame
  int64_t oldest_ = INT64_MAX;  // the lowest bin index a part was added in
  std::vector<uint64_t> channel_drops_;             // per queue, as its last part said
  std::vector<int64_t> last_part_;                  // per queue, the bin index of its last part
  std::vector<std::pair<int64_t, int64_t>> holes_;  // [first, last] bin indices a side channel lost parts in
  // The virtual backlog per rate over the series (bytes), carried from bin to bin; next_ is its next bin.
  std::vector<double> backlog_, backlog_hi_;  // the latter over the series' upper bytes (with `unsure`)
  std::vector<bool> tainted_;  // per rate: a frame was lost since the queue (of every frame) last drained
  int64_t backlog_next_ = INT64_MIN;
  // Every frame's bytes of the last intervals, for the PtM baseline, and whether each lost frames.
  std::deque<std::pair<uint64_t, bool>> interval_bytes_;
  std::vector<uint64_t> prefix_, prefix_hi_;  // bound()'s prefix sums over the interval and its longest window
  int64_t prefix_lo_ = 0;                     // the bin index their entry 0 starts at
  uint64_t late_ = 0;
};

}  // namespace burstscope::internal
