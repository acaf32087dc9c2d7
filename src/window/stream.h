// One measured stream (the port, a direction, a host pair or a flow): totals, exact counts per 100 µs base
// bin, and from those the aligned bins and bin-window envelopes of every scale; a "full" stream also keeps
// packet-level exact envelopes, virtual backlogs and microbursts.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "burstscope/window.h"
#include "src/window/exact_window.h"
#include "src/window/ring_deque.h"

namespace burstscope::internal {

// Lindley recursion q <- max(0, q - r*dt) + len in integer units: a byte is 8e9/g units and r bit/s drains
// r/g units per ns, where g = gcd(r, 8e9), so a drain over dt ns is exact and Bmax is exact to the byte, with
// no floating-point drift over long traces. For rates whose byte is at most 1024 units (every multiple of
// 7.8125 Mbit/s: 1, 10, 25, 40, 100, 400 G...) the queue is 64-bit and branch-free (it holds 9 PB of
// backlog and saturates there); other rates take 128 bits.
class VirtualQueue {
 public:
  explicit VirtualQueue(double rate_bps);
  // Each arrival of `batch` on every queue of `queues`: the 64-bit ones N at a time with their state in registers,
  // so that their recursions run side by side (one queue's is a chain of dependent steps per arrival).
  static void addBatch(std::span<VirtualQueue> queues, std::span<const Arrival> batch) {
    size_t i = 0;
    while (i < queues.size()) {
      if (queues[i].wide_) {
        for (const Arrival& a : batch) queues[i].addWide(a.ts, a.len);
        ++i;
        continue;
      }
      size_t n = 1;  // the narrow queues from i on, up to 4
      while (n < 4 && i + n < queues.size() && !queues[i + n].wide_) ++n;
      if (n >= 2 && addNarrowSimd(&queues[i], n, batch)) {
        i += n;
        continue;
      }
      switch (n) {
        case 4:
          addNarrow<4>(&queues[i], batch);
          break;
        case 3:
          addNarrow<3>(&queues[i], batch);
          break;
        case 2:
          addNarrow<2>(&queues[i], batch);
          break;
        default:
          addNarrow<1>(&queues[i], batch);
          break;
      }
      i += n;
    }
  }
  // Ends a report interval: returns its maximum backlog and starts the next one's with the queue drained
  // to `next_start` (the drain is linear, so draining in two steps equals draining in one).
  double closeInterval(int64_t next_start);
  double rateBps() const { return rate_; }
  double maxBytes() const;
  bool wide() const { return wide_; }

  // The narrow queues qs[0, n) (n <= 4) side by side in one AVX-512 register, where the CPU has it and the batch
  // cannot take a figure near 2^63 (every queue below 2^61 units, the batch's drain below 2^62, fewer than 2^18
  // arrivals): the same figures as addNarrow<n>, which saturates only beyond that. False (nothing done)
  // otherwise. Public for the tests, which compare it with the scalar path.
  static bool addNarrowSimd(VirtualQueue* qs, size_t n, std::span<const Arrival> batch);

 private:
  void addWide(int64_t ts, uint64_t len);
  void drainWide(int64_t ts);

  template <int N>
  static void addNarrow(VirtualQueue* qs, std::span<const Arrival> batch) {
    int64_t q[N], max[N], per_ns[N], unit[N], max_dt[N];
    for (int j = 0; j < N; ++j) {
      q[j] = qs[j].q_;
      max[j] = qs[j].max_;
      per_ns[j] = qs[j].per_ns_;
      unit[j] = qs[j].unit_;
      max_dt[j] = qs[j].max_dt_;
    }
    int64_t last = qs[0].last_ns_;  // every queue of a stream sees every arrival: one time for all
    int64_t short_gap = INT64_MAX;  // gaps up to this drain no queue by more than INT64_MAX units
    for (int j = 0; j < N; ++j) short_gap = std::min(short_gap, max_dt[j]);
    for (const Arrival& a : batch) {
      const int64_t dt = a.ts - last;
      last = a.ts;
      if (dt <= short_gap) [[likely]] {
        for (int j = 0; j < N; ++j) {
          int64_t x = q[j] - per_ns[j] * dt;  // q >= 0 and the drain is at most INT64_MAX: no overflow
          x = x > 0 ? x : 0;
          if (__builtin_add_overflow(x, static_cast<int64_t>(a.len) * unit[j], &x)) x = INT64_MAX;
          q[j] = x;
          max[j] = x > max[j] ? x : max[j];
        }
        continue;
      }
      for (int j = 0; j < N; ++j) {
        const int64_t drain = dt > max_dt[j] ? INT64_MAX : per_ns[j] * dt;
        int64_t x = q[j] > drain ? q[j] - drain : 0;
        if (__builtin_add_overflow(x, static_cast<int64_t>(a.len) * unit[j], &x)) x = INT64_MAX;
        q[j] = x;
        max[j] = x > max[j] ? x : max[j];
      }
    }
    for (int j = 0; j < N; ++j) {
      qs[j].q_ = q[j];
      qs[j].max_ = max[j];
      qs[j].last_ns_ = last;
    }
  }

  double rate_;
  int64_t per_ns_;  // drain per ns, in units
  int64_t unit_;    // units per byte
  int64_t max_dt_;  // INT64_MAX / per_ns_: a longer gap drains more than any 64-bit queue holds
  bool wide_;
  int64_t last_ns_ = 0;
  int64_t q_ = 0, max_ = 0, closed_max_ = 0;      // 64-bit queue: now, over the interval, over the closed ones
  __int128 wq_ = 0, wmax_ = 0, wclosed_max_ = 0;  // the same, 128-bit
};

// Whether the backlogs may use AVX-512 where the CPU has it (the default); the tests compare both ways.
void setBacklogSimd(bool allowed);
bool backlogSimdAvailable();  // this CPU has what the AVX-512 backlogs need

class Stream {
 public:
  Stream(const EngineConfig& cfg, bool full);

  // Arrivals in time order (a port's or direction's), a scale at a time (ExactWindows::addBatch).
  void addBatch(std::span<const Arrival> batch);
  // A run of packets inside one base bin, from first_ts to last_ts: their totals and base bin. All a pair's or
  // flow's stream (no packet-level windows) needs; the same as adding them one by one.
  void addRun(int64_t first_ts, int64_t last_ts, uint64_t bytes, uint64_t packets) {
    if (packets_ == 0) first_ns_ = first_ts;
    last_ns_ = last_ts;
    packets_ += packets;
    bytes_ += bytes;
    if (first_ts >= cur_bin_end_) {
      if (cur_bin_packets_ != 0) closeBaseBin();
      cur_bin_ = first_ts / base_bin_ns_;
      cur_bin_end_ = (cur_bin_ + 1) * base_bin_ns_;
    }
    cur_bin_bytes_ += bytes;
    cur_bin_packets_ += packets;
  }
  void finish();
  // Ends the report interval that closes at `next_start`; every packet added so far is before it. Aligned
  // windows that end by then are observed, unless this is the final (partial) interval after finish().
  void closeInterval(int64_t next_start, IntervalStream* out, bool flush_aligned);
  StreamResult result() const;
  uint64_t bytes() const { return bytes_; }
  // Told of every base bin with traffic as it closes, and of every microburst as it ends (nullptr: nobody).
  void setObserver(EngineObserver* o) {
    observer_ = o;
    if (exact_) exact_->setObserver(o);
  }
  uint64_t microburstCount() const { return exact_ && exact_->microbursts() ? exact_->microbursts()->count : 0; }

 private:
  // What every base-bin close touches comes first, in one cache line (a tracked pair or flow closes a base
  // bin on each of its scales about once per run of packets).
  struct alignas(64) Scale {
    int64_t bins = 0;  // base bins per τ
    // Bin-window envelope: bytes in the last `bins` base bins.
    uint64_t first = 0;  // absolute position in nonempty_ of the oldest bin inside
    uint64_t window_sum = 0;
    uint64_t window_max = 0;  // over the current report interval (the whole run without intervals)
    // Aligned bins of width τ.
    int64_t aligned_end_bin = INT64_MIN;  // the first base bin past aligned window `aligned`
    uint64_t aligned_bytes = 0;
    uint64_t aligned_packets = 0;
    int64_t aligned = INT64_MIN;
    // The rest.
    int64_t tau_ns = 0;
    int exact_index = -1;            // into exact_, or -1
    uint64_t window_closed_max = 0;  // over the closed report intervals
    int64_t first_aligned = 0;
    uint64_t peak_bytes = 0;
    uint64_t peak_packets = 0;
    std::optional<Histogram> utilisation;
    double utilisation_per_byte = 0;
  };
  struct Bin {
    int64_t index;
    uint64_t bytes;
  };
  // A closed base bin not yet taken into the scales.
  struct ClosedBin {
    int64_t index;
    uint64_t bytes;
    uint64_t packets;
  };
  // Closed base bins wait here, up to this many, and then go into the scales a scale at a time: a tracked pair or
  // flow at a rate of a packet or two per base bin closes a bin at nearly every run, and one scale over many bins
  // runs in registers where each bin over every scale touched each scale's line (bench/README.md).
  static constexpr size_t kClosedBins = 64;

  void closeBaseBin();
  // Takes `bins` (ascending, each already in `ring`) into `scales`; their windows walk `ring`.
  static void applyBins(std::span<Scale> scales, const RingDeque<Bin>& ring, std::span<const ClosedBin> bins);
  void applyClosed() {
    if (closed_n_ == 0) return;
    applyBins(scales_, nonempty_, {closed_.data(), closed_n_});
    closed_n_ = 0;
  }
  static void closeAligned(Scale& s);
  void flushAligned(Scale& s, int64_t t);

  int64_t base_bin_ns_;
  uint64_t packets_ = 0;
  uint64_t bytes_ = 0;
  uint64_t interval_packets_from_ = 0;  // packets_ and bytes_ when the current report interval began
  uint64_t interval_bytes_from_ = 0;
  std::vector<uint64_t> exact_interval_max_;  // scratch for closeInterval
  int64_t first_ns_ = 0;
  int64_t last_ns_ = 0;
  int64_t cur_bin_ = INT64_MIN;
  int64_t cur_bin_end_ = INT64_MIN;  // first timestamp past the current base bin
  int64_t last_bin_ = 0;             // the last base bin closed (with traffic): the last packet's
  uint64_t cur_bin_bytes_ = 0;
  uint64_t cur_bin_packets_ = 0;
  std::vector<Scale> scales_;
  RingDeque<Bin> nonempty_;                    // nonempty base bins within the longest τ, and those in closed_
  std::array<ClosedBin, kClosedBins> closed_;  // base bins closed but not yet in scales_, ascending
  size_t closed_n_ = 0;
  std::unique_ptr<ExactWindows> exact_;
  std::vector<VirtualQueue> backlog_;
  EngineObserver* observer_ = nullptr;
};

}  // namespace burstscope::internal
