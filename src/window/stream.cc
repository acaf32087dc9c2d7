#include "src/window/stream.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <numeric>

#include "src/window/histograms.h"

namespace burstscope::internal {

VirtualQueue::VirtualQueue(double rate_bps) : rate_(static_cast<double>(std::llround(rate_bps))) {
  constexpr int64_t kBitNsPerByte = 8'000'000'000;  // a byte drains in 8e9 / r ns at r bit/s
  const int64_t r = std::llround(rate_bps);
  const int64_t g = std::gcd(r, kBitNsPerByte);
  per_ns_ = r / g;
  unit_ = kBitNsPerByte / g;
  wide_ = unit_ > 1024;
  max_dt_ = INT64_MAX / per_ns_;
}

void VirtualQueue::drainWide(int64_t ts) {
  if (wq_ > 0) {
    const __int128 drain = static_cast<__int128>(per_ns_) * (ts - last_ns_);
    wq_ = wq_ > drain ? wq_ - drain : 0;
  }
  last_ns_ = ts;
}

void VirtualQueue::addWide(int64_t ts, uint64_t len) {
  drainWide(ts);
  wq_ += static_cast<__int128>(len) * unit_;
  if (wq_ > wmax_) wmax_ = wq_;
}

double VirtualQueue::closeInterval(int64_t next_start) {
  if (wide_) {
    const __int128 m = wmax_;
    wclosed_max_ = std::max(wclosed_max_, wmax_);
    drainWide(next_start);
    wmax_ = wq_;
    return static_cast<double>(m) / static_cast<double>(unit_);
  }
  const int64_t m = max_;
  closed_max_ = std::max(closed_max_, max_);
  const Arrival drain{next_start, 0};  // an arrival of nothing: the queue drained to next_start
  addNarrow<1>(this, {&drain, 1});
  max_ = q_;
  return static_cast<double>(m) / static_cast<double>(unit_);
}

namespace {
std::atomic<bool> simd_allowed{true};

// Four queues' state, lane by lane (unused lanes: an empty queue that neither drains nor fills).
struct alignas(32) Lanes {
  int64_t q[4] = {}, max[4] = {}, per_ns[4] = {}, unit[4] = {};
  int64_t last = 0;  // the time of the queues' last arrival
};

bool cpuHasAvx512() {
#if defined(__x86_64__)
  static const bool has =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return has;
#else
  return false;
#endif
}
}  // namespace

void setBacklogSimd(bool allowed) { simd_allowed.store(allowed, std::memory_order_relaxed); }
bool backlogSimdAvailable() { return cpuHasAvx512(); }

// Why: one queue's recursion is a chain of dependent steps per arrival, and four of them side by side in scalar
// registers are bound by the instructions (about 30 per arrival in perf annotate's listing of the loop). In one
// register, and written as the time at which each queue would be empty, S = max(S, P) + L with P the drain since the
// batch's start and L the arrival's units (the queue is then S - P: max(q - drain, 0) + L, as addNarrow computes it),
// the four are one chain of two instructions per arrival; the drain, the units and the maximum are off it. Measured in
// bench/README.md. Only x86-64 with AVX-512 (F, VL, DQ); elsewhere, and for a batch that could take a figure near 64
// bits, addNarrow.
#if defined(__x86_64__)
__attribute__((target("avx512f,avx512vl,avx512dq"))) static void addNarrowAvx512(Lanes& l,
                                                                                 std::span<const Arrival> batch) {
  const __m256i per_ns = _mm256_load_si256(reinterpret_cast<const __m256i*>(l.per_ns));
  const __m256i unit = _mm256_load_si256(reinterpret_cast<const __m256i*>(l.unit));
  __m256i s = _mm256_load_si256(reinterpret_cast<const __m256i*>(l.q));  // P is 0 at the batch's start
  __m256i max = _mm256_load_si256(reinterpret_cast<const __m256i*>(l.max));
  __m256i p = _mm256_setzero_si256();
  const int64_t start = l.last;
  for (const Arrival& a : batch) {
    p = _mm256_mullo_epi64(per_ns, _mm256_set1_epi64x(a.ts - start));
    s = _mm256_add_epi64(_mm256_max_epi64(s, p),
                         _mm256_mul_epu32(unit, _mm256_set1_epi64x(static_cast<int64_t>(a.len))));
    max = _mm256_max_epi64(max, _mm256_sub_epi64(s, p));
  }
  _mm256_store_si256(reinterpret_cast<__m256i*>(l.q), _mm256_sub_epi64(s, p));
  _mm256_store_si256(reinterpret_cast<__m256i*>(l.max), max);
  l.last = batch.back().ts;
}
#endif

bool VirtualQueue::addNarrowSimd(VirtualQueue* qs, size_t n, std::span<const Arrival> batch) {
#if defined(__x86_64__)
  if (!simd_allowed.load(std::memory_order_relaxed) || !cpuHasAvx512()) return false;
  // Bounds under which no figure passes 2^63: each queue under 2^61, the batch's drain under 2^62 (half of what
  // max_dt allows), its units under 2^60 (fewer than 2^18 arrivals, each under 2^32 bytes (Arrival::len is 32-bit)
  // of at most 2^10 units).
  constexpr int64_t kQueueBound = int64_t{1} << 61;
  if (batch.empty() || batch.size() >= (size_t{1} << 18)) return false;
  const int64_t span = batch.back().ts - qs[0].last_ns_;
  Lanes l;
  l.last = qs[0].last_ns_;
  for (size_t j = 0; j < n; ++j) {
    if (qs[j].q_ >= kQueueBound || span < 0 || span > qs[j].max_dt_ / 2) return false;
    l.q[j] = qs[j].q_;
    l.max[j] = qs[j].max_;
    l.per_ns[j] = qs[j].per_ns_;
    l.unit[j] = qs[j].unit_;
  }
  addNarrowAvx512(l, batch);
  for (size_t j = 0; j < n; ++j) {
    qs[j].q_ = l.q[j];
    qs[j].max_ = l.max[j];
    qs[j].last_ns_ = l.last;
  }
  return true;
#else
  (void)qs;
  (void)n;
  (void)batch;
  return false;
#endif
}

double VirtualQueue::maxBytes() const {
  if (wide_) return static_cast<double>(std::max(wmax_, wclosed_max_)) / static_cast<double>(unit_);
  return static_cast<double>(std::max(max_, closed_max_)) / static_cast<double>(unit_);
}

Stream::Stream(const EngineConfig& cfg, bool full) : base_bin_ns_(cfg.base_bin_ns), nonempty_(64) {
  std::vector<int64_t> exact_taus;
  for (int64_t tau : cfg.scales_ns) {
    Scale s;
    s.tau_ns = tau;
    s.bins = tau / cfg.base_bin_ns;
    if (full) {
      if (tau <= cfg.exact_max_tau_ns) {
        s.exact_index = static_cast<int>(exact_taus.size());
        exact_taus.push_back(tau);
      }
      s.utilisation = Histogram(utilisationBounds());
      s.utilisation_per_byte = 8e9 / (static_cast<double>(tau) * cfg.link_capacity_bps);
    }
    scales_.push_back(s);
  }
  if (!full) return;
  // The microburst detector needs its own τ among the exact windows, reported or not.
  if (std::find(exact_taus.begin(), exact_taus.end(), cfg.microburst_tau_ns) == exact_taus.end()) {
    exact_taus.insert(std::upper_bound(exact_taus.begin(), exact_taus.end(), cfg.microburst_tau_ns),
                      cfg.microburst_tau_ns);
    for (Scale& s : scales_) {
      if (s.exact_index >= 0 && s.tau_ns > cfg.microburst_tau_ns) ++s.exact_index;
    }
  }
  const uint64_t threshold_bytes = microburstThresholdBytes(cfg);
  exact_ =
      std::make_unique<ExactWindows>(exact_taus, cfg.exact_max_entries,
                                     MicroburstSpec{cfg.microburst_tau_ns, threshold_bytes, cfg.max_microburst_events});
  for (double r : cfg.rates_bps) backlog_.emplace_back(r);
}

void Stream::addBatch(std::span<const Arrival> batch) {
  if (batch.empty()) return;
  if (packets_ == 0) first_ns_ = batch.front().ts;
  last_ns_ = batch.back().ts;
  packets_ += batch.size();
  // The current base bin's counts in registers; a base bin closes only when an arrival passes its end.
  uint64_t bin_bytes = cur_bin_bytes_, bin_packets = cur_bin_packets_, bytes = 0;
  for (const Arrival& a : batch) {
    if (a.ts >= cur_bin_end_) [[unlikely]] {
      cur_bin_bytes_ = bin_bytes;
      cur_bin_packets_ = bin_packets;
      if (bin_packets != 0) closeBaseBin();
      cur_bin_ = a.ts / base_bin_ns_;
      cur_bin_end_ = (cur_bin_ + 1) * base_bin_ns_;
      bin_bytes = bin_packets = 0;
    }
    bin_bytes += a.len;
    ++bin_packets;
    bytes += a.len;
  }
  cur_bin_bytes_ = bin_bytes;
  cur_bin_packets_ = bin_packets;
  bytes_ += bytes;
  if (exact_) exact_->addBatch(batch);
  VirtualQueue::addBatch(backlog_, batch);
}

void Stream::closeBaseBin() {
  if (observer_) observer_->onBaseBin(cur_bin_ * base_bin_ns_, cur_bin_bytes_, cur_bin_packets_);
  if (nonempty_.size() == nonempty_.capacity()) {
    // Forget the bins every scale has left before growing (the scales catch up lazily, below; the bins waiting in
    // closed_ lie after every scale's first).
    uint64_t keep_from = nonempty_.end() - 1;
    for (const Scale& s : scales_) keep_from = std::min(keep_from, s.first);
    nonempty_.dropBefore(keep_from);
  }
  nonempty_.pushBack(Bin{cur_bin_, cur_bin_bytes_});
  closed_[closed_n_++] = ClosedBin{cur_bin_, cur_bin_bytes_, cur_bin_packets_};
  if (closed_n_ == kClosedBins) applyClosed();
  last_bin_ = cur_bin_;
  cur_bin_bytes_ = 0;
  cur_bin_packets_ = 0;
}

void Stream::applyBins(std::span<Scale> scales, const RingDeque<Bin>& ring, std::span<const ClosedBin> bins) {
  for (Scale& s : scales) {
    uint64_t first = s.first, sum = s.window_sum, max = s.window_max;
    uint64_t aligned_bytes = s.aligned_bytes, aligned_packets = s.aligned_packets;
    const int64_t width = s.bins;
    for (const ClosedBin& b : bins) {
      // Bin-window envelope over the `bins` base bins ending with this one. `sum` counts the bins from `first`
      // on, which is the window or more; the bins that have left are taken out only when the bound could pass
      // the maximum (as the exact windows do, exact_window.cc). The walk stops before b: it is in the ring.
      sum += b.bytes;
      if (sum > max) {
        while (ring[first].index <= b.index - width) sum -= ring[first++].bytes;
        max = std::max(max, sum);
      }
      // Aligned bins of width τ are unions of base bins, since τ is a multiple of the base bin. A division only
      // when the bin leaves the current aligned window.
      if (b.index >= s.aligned_end_bin) [[unlikely]] {
        const int64_t a = b.index / width;
        if (s.aligned == INT64_MIN) {
          s.first_aligned = a;
        } else {
          s.aligned_bytes = aligned_bytes;
          s.aligned_packets = aligned_packets;
          closeAligned(s);
          aligned_bytes = aligned_packets = 0;
          // Aligned bins with no traffic in between: O(1) however long the gap.
          if (s.utilisation && a - s.aligned > 1) s.utilisation->observe(0, a - s.aligned - 1);
        }
        s.aligned = a;
        s.aligned_end_bin = (a + 1) * width;
      }
      aligned_bytes += b.bytes;
      aligned_packets += b.packets;
    }
    s.first = first;
    s.window_sum = sum;
    s.window_max = max;
    s.aligned_bytes = aligned_bytes;
    s.aligned_packets = aligned_packets;
  }
}

void Stream::closeAligned(Scale& s) {
  s.peak_bytes = std::max(s.peak_bytes, s.aligned_bytes);
  s.peak_packets = std::max(s.peak_packets, s.aligned_packets);
  if (s.utilisation) s.utilisation->observe(static_cast<double>(s.aligned_bytes) * s.utilisation_per_byte);
  s.aligned_bytes = 0;
  s.aligned_packets = 0;
}

void Stream::closeInterval(int64_t next_start, IntervalStream* out, bool flush_aligned) {
  if (cur_bin_packets_ != 0) closeBaseBin();  // next_start is bin-aligned, so the open bin is complete
  applyClosed();
  out->packets = packets_ - interval_packets_from_;
  out->bytes = bytes_ - interval_bytes_from_;
  interval_packets_from_ = packets_;
  interval_bytes_from_ = bytes_;
  if (exact_) exact_->closeInterval(next_start, &exact_interval_max_);
  out->envelope_bytes.clear();
  out->exact.clear();
  const int64_t next_bin = next_start / base_bin_ns_;
  for (Scale& s : scales_) {
    uint64_t e = s.window_max;
    bool exact = false;
    if (s.exact_index >= 0 && exact_->exact(s.exact_index)) {
      e = exact_interval_max_[s.exact_index];
      exact = true;
    }
    out->envelope_bytes.push_back(e);
    out->exact.push_back(exact);
    // The next interval starts with the `bins - 1` base bins before next_start: they lie inside the sliding
    // window at t = next_start, so this never exceeds the truth (the bin before them may hold packets exactly
    // at next_start - τ, which that window excludes) and is below it by at most one base bin.
    s.window_closed_max = std::max(s.window_closed_max, s.window_max);
    while (s.first != nonempty_.end() && nonempty_[s.first].index <= next_bin - s.bins) {
      s.window_sum -= nonempty_[s.first++].bytes;
    }
    s.window_max = s.window_sum;
    if (s.utilisation && flush_aligned) flushAligned(s, next_start);
  }
  out->backlog_bytes.clear();
  for (VirtualQueue& q : backlog_) out->backlog_bytes.push_back(q.closeInterval(next_start));
  out->utilisation.clear();
  for (const Scale& s : scales_) {
    if (s.utilisation) out->utilisation.push_back(*s.utilisation);
  }
  if (exact_ && exact_->microbursts()) {
    const MicroburstResult& m = *exact_->microbursts();
    out->microbursts = m.count;
    out->microburst_durations_s = m.durations_s;
    out->microburst_gaps_s = m.gaps_s;
    out->microburst_volumes_bytes = m.volumes_bytes;
  }
}

// Observes the aligned windows of `s` that end at or before `t`, so that a live histogram does not wait for
// the next packet to count an idle stretch. The window holding the last packet stays open until it ends.
void Stream::flushAligned(Scale& s, int64_t t) {
  if (s.aligned == INT64_MIN) return;
  const int64_t first_open = t / s.tau_ns;  // aligned window containing t (t itself is its start or later)
  if (s.aligned >= first_open) return;
  closeAligned(s);
  if (first_open - s.aligned > 1) s.utilisation->observe(0, static_cast<uint64_t>(first_open - s.aligned - 1));
  s.aligned = first_open;
  s.aligned_end_bin =
      (first_open + 1) * s.bins;  // open and empty: observed once it ends or the next packet moves past it
}

void Stream::finish() {
  if (cur_bin_packets_ != 0) closeBaseBin();
  applyClosed();
  for (Scale& s : scales_) {
    if (s.aligned != INT64_MIN && s.aligned_packets != 0) closeAligned(s);
  }
  if (exact_) exact_->finish();
}

StreamResult Stream::result() const {
  // Closed bins still waiting are taken into a copy of the scales (a result before finish: a live view's).
  std::vector<Scale> waiting;
  if (closed_n_ != 0) {
    waiting = scales_;
    applyBins(waiting, nonempty_, {closed_.data(), closed_n_});
  }
  const std::vector<Scale>& scales = closed_n_ != 0 ? waiting : scales_;
  StreamResult r;
  r.packets = packets_;
  r.bytes = bytes_;
  r.first_ns = first_ns_;
  r.last_ns = last_ns_;
  for (const Scale& s : scales) {
    ScaleResult sr;
    sr.tau_ns = s.tau_ns;
    const uint64_t window_max = std::max(s.window_max, s.window_closed_max);
    sr.envelope_bytes = window_max;
    if (s.exact_index >= 0) {
      sr.exact = exact_->exact(s.exact_index);
      // A demoted exact window's maximum is still a valid lower bound, as is the bin-window value.
      sr.envelope_bytes =
          sr.exact ? exact_->maxBytes(s.exact_index) : std::max(window_max, exact_->maxBytes(s.exact_index));
    }
    sr.peak_bin_bytes = s.peak_bytes;
    sr.peak_bin_packets = s.peak_packets;
    // From the aligned window of the first packet to that of the last (the same division as closeBaseBin's).
    sr.bins_spanned = packets_ ? static_cast<uint64_t>(last_bin_ / s.bins - s.first_aligned + 1) : 0;
    sr.utilisation = s.utilisation;
    r.scales.push_back(std::move(sr));
  }
  for (const VirtualQueue& q : backlog_) r.backlog.push_back(BacklogResult{q.rateBps(), q.maxBytes()});
  if (exact_) r.microbursts = exact_->microbursts();
  return r;
}

}  // namespace burstscope::internal
