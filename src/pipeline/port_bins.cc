#include "src/pipeline/port_bins.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <new>
#include <thread>

namespace burstscope::internal {

namespace {
constexpr int64_t kB = kQueueBinNs;
// Slack ahead of the interval being closed: a queue's bins run ahead of the worker's close by the reorder
// horizon, the ring's backlog and a poll; 3 s is far beyond any of them.
constexpr int64_t kAheadBins = 3'000'000'000 / kB;
}  // namespace

PortBins::PortBins(const EngineConfig& c, size_t queues, const KernelBinSource* kernel)
    : cfg_(c),
      kernel_(kernel),
      channel_drops_(queues, 0),
      last_part_(queues, INT64_MIN),
      backlog_(c.rates_bps.size(), 0.0),
      backlog_hi_(c.rates_bps.size(), 0.0),
      tainted_(c.rates_bps.size(), false) {
  // The longest window: of the scales and of the microburst detector (its τ need not be a reported scale).
  const int64_t tau_max = std::max(c.scales_ns.empty() ? kB : c.scales_ns.back(), c.microburst_tau_ns);
  history_bins_ = (tau_max + kB - 1) / kB + 1;
  const int64_t interval_bins = std::max<int64_t>(1, c.report_interval_ns / kB);
  const auto n = static_cast<size_t>(history_bins_ + 2 * interval_bins + kAheadBins);
  slot_count_ = std::bit_ceil(n);
  slots_.reset(static_cast<Bin*>(std::calloc(slot_count_, sizeof(Bin))));
  if (!slots_) throw std::bad_alloc();
  mask_ = slot_count_ - 1;
}

void PortBins::forgetBelow(int64_t index) {
  if (index <= floor_) return;
  // Only slots that hold something are written: a slot no bin reached stays an untouched zero page (an idle or
  // sparse port's series takes memory for its bins only; one with a frame in every bin writes every slot anyway).
  const auto clear = [](Bin& b) {
    if ((b.bytes | b.lost_bytes | b.packets | b.lost | b.raw_bytes | b.kernel_lost | b.unsure) != 0) b = Bin{};
  };
  if (index - floor_ >= static_cast<int64_t>(slot_count_)) {
    std::for_each(slots_.get(), slots_.get() + slot_count_, clear);
  } else {
    for (int64_t i = floor_; i < index; ++i) clear(at(i));
  }
  floor_ = index;
}

void PortBins::add(size_t q, const QueueBin& b) {
  const int64_t i = b.start_ns / kB;
  if (b.channel_drops != channel_drops_[q]) {
    // The side channel dropped parts of this queue between its last part that came and this one.
    holes_.emplace_back(last_part_[q] == INT64_MIN ? std::max(floor_, closed_) : last_part_[q], i);
    channel_drops_[q] = b.channel_drops;
  }
  last_part_[q] = i;
  if (floor_ == INT64_MIN) {
    floor_ = i - history_bins_;
    backlog_next_ = floor_;
  }
  const auto size = static_cast<int64_t>(slot_count_);
  if (i >= floor_ + size) {
    // Beyond the slots: after a silence longer than the longest window nothing held is needed any more, and the
    // slots move on; otherwise (a queue's clock far ahead of the others) the part is counted and left out.
    if (newest_ < closed_ && i - history_bins_ > newest_) {
      forgetBelow(i - history_bins_);
    } else {
      ++late_;
      holes_.emplace_back(i, i);
      return;
    }
  }
  if (i < closed_ || i < floor_) {
    ++late_;
    return;
  }
  Bin& s = at(i);
  s.bytes += b.bytes;
  s.raw_bytes += b.raw_bytes;
  wrapped_ = wrapped_ || b.raw_bytes != b.bytes;
  s.packets += b.packets;
  s.lost_bytes += b.lost_bytes;
  s.lost += b.lost;
  newest_ = std::max(newest_, i);
  oldest_ = std::min(oldest_, i);
}

// Every frame the kernel counts in a bin it has counted a moment after the bin's end (the program counts a frame
// in the same run that stamps it). The interval closes once its queues' timestamps are past its end by the
// reorder horizon (1 ms by default), so the kernel's bins are final by then; a shorter horizon waits out the rest
// here, at most kSettleNs.
constexpr int64_t kSettleNs = 200'000;

void PortBins::mergeKernel(int64_t first, int64_t end, int64_t now) {
  const int64_t ready = end * kB + kSettleNs;
  if (now < ready) std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(ready - now, kSettleNs)));
  // From where the last read ended: bins of intervals the engine skipped as empty (a silence of the producers
  // longer than the baseline) are read too, and any frames in them are a hole in what the intervals report.
  const int64_t from = kernel_next_ == INT64_MIN ? first : kernel_next_;
  if (from >= end) return;
  kbuf_.clear();
  uint64_t gone = 0;
  if (!kernel_->read(from, end, &kbuf_, &gone)) return;
  kernel_next_ = end;
  if (gone > 0) holes_.emplace_back(from, end - 1);  // the kernel's ring moved past bins not read in time
  const auto size = static_cast<int64_t>(slot_count_);
  for (const KernelBinCount& k : kbuf_) {
    const int64_t i = k.start_ns / kB;
    if (i < first) {  // in no interval reported
      holes_.emplace_back(i, i);
      continue;
    }
    if (floor_ == INT64_MIN) {  // every frame so far was lost before the producers
      floor_ = i - history_bins_;
      backlog_next_ = floor_;
    }
    if (i < floor_ || i < closed_ || i >= floor_ + size) continue;
    Bin& s = at(i);
    if (k.packets <= s.packets) continue;  // nothing lost before the producers (or a bin they saw more of)
    const auto extra = static_cast<uint32_t>(k.packets - s.packets);
    const uint64_t extra_bytes = k.bytes > s.raw_bytes ? k.bytes - s.raw_bytes : 0;
    s.packets += extra;
    s.lost += extra;
    s.kernel_lost += extra;
    // Unwrapped frames: the kernel's bytes are the measured ones, exactly. Wrapped ones: the lost frames'
    // measured (inner) bytes are somewhere between nothing and their captured bytes.
    if (wrapped_) {
      s.unsure += extra_bytes;
    } else {
      s.bytes += extra_bytes;
      s.lost_bytes += extra_bytes;
    }
    newest_ = std::max(newest_, i);
  }
}

IntervalBounds PortBins::close(const IntervalReport& r) {
  IntervalBounds out;
  const int64_t first = r.start_ns / kB;
  if (kernel_ != nullptr) {
    // The last interval also takes what the kernel counted after the producers' last frame, up to now.
    const int64_t now = clockNs(CLOCK_REALTIME);
    mergeKernel(first, r.partial ? std::max({r.end_ns / kB, newest_ + 1, now / kB + 1}) : r.end_ns / kB, now);
  }
  // The last interval (closed by finish) takes every bin left: frames the rings dropped after the last one
  // analysed are in no later interval.
  const int64_t end = r.partial ? std::max(r.end_ns / kB, newest_ + 1) : r.end_ns / kB;
  if (floor_ == INT64_MIN) {  // no bin yet
    closed_ = std::max(closed_, end);
    return out;
  }
  forgetBelow(first - history_bins_);  // bins below belong to closed (or skipped) intervals' windows
  for (int64_t i = std::max(first, floor_); i < end; ++i) {
    const Bin& s = at(i);
    out.packets += s.packets;
    out.bytes += s.bytes;
    out.lost += s.lost;
    out.lost_bytes += s.lost_bytes;
    out.kernel_lost += s.kernel_lost;
    out.bytes_unsure += s.unsure;
  }
  for (const auto& [a, z] : holes_) {
    if (z >= first - history_bins_ && a < end) out.complete = false;
  }
  std::erase_if(holes_, [&](const auto& h) { return h.second < end - history_bins_; });

  // Which scales' windows reach a lost frame: a window ending in the interval holds frames after start - τ.
  const size_t scales = cfg_.scales_ns.size(), rates = cfg_.rates_bps.size();
  std::vector<bool> scale_bounded(scales, false);
  int64_t last_loss = INT64_MIN;  // the latest bin with a loss before `end`, within the longest window
  for (int64_t i = std::max(first - history_bins_, floor_); i < end; ++i) {
    if (at(i).lost > 0) last_loss = i;
  }
  for (size_t s = 0; s < scales; ++s) {
    scale_bounded[s] = last_loss >= first - (cfg_.scales_ns[s] + kB - 1) / kB;
  }
  const bool microbursts_bounded = last_loss >= first - (cfg_.microburst_tau_ns + kB - 1) / kB;

  // The virtual backlog per rate, bin after bin: max(0, q + B_i - r·100 µs). A loss taints the analysed backlog
  // until the queue of every frame has drained: q = 0 after a bin and the next bin empty (then nothing can be
  // queued at that bin's end). Bins below the slots were empty.
  std::vector<double> max_q(rates, 0.0);
  std::vector<bool> rate_bounded(rates, false);
  std::vector<double> max_q_hi(rates, 0.0);
  if (backlog_next_ < floor_) {
    const int64_t skipped = floor_ - backlog_next_;
    for (size_t j = 0; j < rates; ++j) {
      const double per_bin = cfg_.rates_bps[j] * kB / 8e9;
      const auto to_drain = static_cast<int64_t>(std::ceil(backlog_hi_[j] / per_bin));
      backlog_[j] = std::max(0.0, backlog_[j] - static_cast<double>(skipped) * per_bin);
      backlog_hi_[j] = std::max(0.0, backlog_hi_[j] - static_cast<double>(skipped) * per_bin);
      if (skipped > to_drain) tainted_[j] = false;
    }
    backlog_next_ = floor_;
  }
  // Two backlogs: over the series' bytes and over its upper bytes (they differ only where the kernel counted
  // wrapped frames the producers lost); the virtual queue grows with its input, so the truth lies between.
  for (; backlog_next_ < end; ++backlog_next_) {
    const Bin& bin = at(backlog_next_);
    const auto bytes = static_cast<double>(bin.bytes);
    const auto upper = static_cast<double>(bin.bytes + bin.unsure);
    for (size_t j = 0; j < rates; ++j) {
      if (backlog_next_ == first && tainted_[j]) rate_bounded[j] = true;  // carried into the interval
      if (tainted_[j] && backlog_hi_[j] == 0 && bin.bytes + bin.unsure == 0) tainted_[j] = false;
      if (bin.lost > 0) tainted_[j] = true;
      backlog_[j] = std::max(0.0, backlog_[j] + bytes - cfg_.rates_bps[j] * kB / 8e9);
      backlog_hi_[j] = std::max(0.0, backlog_hi_[j] + upper - cfg_.rates_bps[j] * kB / 8e9);
      if (backlog_next_ >= first) {
        max_q[j] = std::max(max_q[j], backlog_[j]);
        max_q_hi[j] = std::max(max_q_hi[j], backlog_hi_[j]);
        if (tainted_[j]) rate_bounded[j] = true;
      }
    }
  }

  // The baseline of every frame, as the engine keeps it over the analysed ones.
  if (r.skipped_intervals > 0) interval_bytes_.clear();
  interval_bytes_.emplace_back(out.bytes, out.lost > 0);
  const int64_t interval = std::max<int64_t>(1, cfg_.report_interval_ns);
  while (static_cast<int64_t>(interval_bytes_.size()) * interval > cfg_.baseline_ns) interval_bytes_.pop_front();
  bool baseline_lost = false;
  uint64_t baseline_bytes = 0;
  for (const auto& [bytes, lost] : interval_bytes_) {
    baseline_bytes += bytes;
    baseline_lost = baseline_lost || lost;
  }

  const bool any = baseline_lost || microbursts_bounded ||
                   std::find(scale_bounded.begin(), scale_bounded.end(), true) != scale_bounded.end() ||
                   std::find(rate_bounded.begin(), rate_bounded.end(), true) != rate_bounded.end();
  if (any) {
    out.baseline_bps =
        r.baseline_ns > 0 ? static_cast<double>(baseline_bytes) * 8e9 / static_cast<double>(r.baseline_ns) : 0.0;
    out.envelope_bounded = scale_bounded;
    for (size_t s = 0; s < scales; ++s) out.ptm_bounded.push_back(scale_bounded[s] || baseline_lost);
    out.microbursts_bounded = microbursts_bounded;
    bound(r, first, end, &out);
    out.backlog_bounded = rate_bounded;
    for (size_t j = 0; j < rates; ++j) {
      const double analysed = j < r.port.backlog_bytes.size() ? r.port.backlog_bytes[j] : 0.0;
      if (!rate_bounded[j]) {
        out.backlog_bytes.emplace_back(analysed, analysed);
      } else {
        out.backlog_bytes.emplace_back(std::max(max_q[j], analysed),
                                       out.complete ? max_q_hi[j] + 2 * cfg_.rates_bps[j] * kB / 8e9 : 0.0);
      }
    }
  }
  closed_ = std::max(closed_, end);
  return out;
}

// E(τ) over the interval's windows, as bounds from the series: a window of length τ holds floor(τ/b) whole
// aligned bins somewhere (so the largest such sum is reached) and touches at most ceil(τ/b) + 1 bins.
uint64_t PortBins::last(const std::vector<uint64_t>& p, int64_t i, int64_t n) const {
  return p[static_cast<size_t>(i - prefix_lo_) + 1] -
         p[static_cast<size_t>(std::max(prefix_lo_, i - n + 1) - prefix_lo_)];
}

void PortBins::bound(const IntervalReport& r, int64_t first, int64_t end, IntervalBounds* out) {
  const int64_t lo = first - history_bins_;
  prefix_lo_ = lo;
  std::vector<uint64_t>& prefix = prefix_;  // kept: no allocation per interval once it has grown
  std::vector<uint64_t>& prefix_hi = prefix_hi_;
  prefix.assign(static_cast<size_t>(end - lo) + 1, 0);
  prefix_hi.assign(static_cast<size_t>(end - lo) + 1, 0);
  for (int64_t i = lo; i < end; ++i) {
    prefix[static_cast<size_t>(i - lo) + 1] = prefix[static_cast<size_t>(i - lo)] + bytesAt(i);
    prefix_hi[static_cast<size_t>(i - lo) + 1] = prefix_hi[static_cast<size_t>(i - lo)] + upperAt(i);
  }
  for (size_t s = 0; s < cfg_.scales_ns.size(); ++s) {
    const int64_t tau = cfg_.scales_ns[s];
    const uint64_t analysed = s < r.port.envelope_bytes.size() ? r.port.envelope_bytes[s] : 0;
    uint64_t lower = analysed, upper = analysed;
    if (out->envelope_bounded[s]) {
      const int64_t k = tau / kB, u = (tau + kB - 1) / kB + 1;
      upper = 0;
      for (int64_t i = first; i < end; ++i) {
        if (k > 0) lower = std::max(lower, last(prefix, i, k));
        upper = std::max(upper, last(prefix_hi, i, u));  // over the series' upper bytes
      }
      // The analysed frames' own E(τ) (the start of `lower`) never exceeds the truth: a subset's windows hold
      // less, and an inexact scale's figure is a sum of aligned base bins, below its own truth.
      if (!out->complete) upper = 0;  // unknown
    }
    out->envelope_bytes.emplace_back(lower, upper);
    const bool defined = tau <= r.baseline_ns && out->baseline_bps > 0;
    if (!out->ptm_bounded[s]) {
      const std::optional<double> p = s < r.port.ptm.size() ? r.port.ptm[s] : std::nullopt;
      out->ptm.emplace_back(p, p);
    } else {
      out->ptm.emplace_back(defined ? peakToMean(lower, tau, out->baseline_bps) : std::nullopt,
                            defined && upper > 0 ? peakToMean(upper, tau, out->baseline_bps) : std::nullopt);
    }
  }
  if (out->microbursts_bounded) out->microbursts = microburstBounds(first, end, out->complete);
}

// The microbursts with an instant in bins [first, end), as bounds (SPEC "Microburst": S(t) = A(t-τ, t] >= θ·C·τ/8,
// the detector's integer threshold). With k = floor(τ/b) and u = ceil(τ/b) + 1:
// - the instant ending bin i (its last nanosecond) is surely in a microburst when bins i-k+1..i hold the threshold
//   (its window covers them whole);
// - bin i is surely outside any when bins i-u+1..i, every frame its instants' windows can hold, stay below it
//   (over the upper bytes).
// Two sure instants parted by a sure-outside bin lie in different microbursts: the groups are the lower bound.
// A run of bins not surely outside holds whole microbursts (it is bounded by bins outside any, or by the
// interval's ends); in it each microburst but the last ends at a frame's departure (ts + τ) before the next one
// begins at an arrival, and each begins at a frame's arrival in it or was going on at the interval's start: per
// run at most min(1 + departures up to its last arrival, arrivals + 1 if it starts the interval). Departures
// inside bins [a, z] come from frames of bins [a - ceil(τ/b), z - floor(τ/b)]. A hole in the series leaves only
// the lower bound, and one group at most (a bin may look outside only because its parts were lost).
std::pair<uint64_t, uint64_t> PortBins::microburstBounds(int64_t first, int64_t end, bool complete) const {
  const int64_t tau = cfg_.microburst_tau_ns;
  const uint64_t threshold = microburstThresholdBytes(cfg_);
  const int64_t k = tau / kB, c = (tau + kB - 1) / kB, u = c + 1;
  uint64_t lower = 0, upper = 0;
  bool group = false;                // a sure instant since the last bin surely outside
  int64_t run = INT64_MIN;           // the first bin of the current run of bins not surely outside
  int64_t last_arrival = INT64_MIN;  // the run's last bin with a frame
  uint64_t arrivals = 0;             // the run's frames
  auto endRun = [&]() {
    uint64_t departures = 0;
    if (arrivals > 0) {
      for (int64_t j = run - c; j <= last_arrival - k; ++j) departures += packetsAt(j);
    }
    upper += std::min(1 + departures, arrivals + (run == first ? 1 : 0));
    run = INT64_MIN;
    arrivals = 0;
  };
  for (int64_t i = first; i < end; ++i) {
    if (complete && last(prefix_hi_, i, u) < threshold) {
      group = false;
      if (run != INT64_MIN) endRun();
      continue;
    }
    if (run == INT64_MIN) run = i;
    if (packetsAt(i) > 0) last_arrival = i;
    arrivals += packetsAt(i);
    if (!group && k > 0 && last(prefix_, i, k) >= threshold) {
      ++lower;
      group = true;
    }
  }
  if (run != INT64_MIN) endRun();
  return {lower, complete ? upper : 0};
}

}  // namespace burstscope::internal
