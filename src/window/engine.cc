#include <algorithm>
#include <array>
#include <deque>

#include "absl/strings/str_cat.h"
#include "burstscope/window.h"
#include "src/flows/heavy_table.h"
#include "src/window/stream.h"

namespace burstscope {

using internal::HeavyTable;
using internal::Stream;

void Histogram::observe(double v, uint64_t n) {
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();  // le-bucket
  counts[i] += n;
  sum += v * static_cast<double>(n);
  count += n;
}

absl::Status validateConfig(const EngineConfig& c) {
  auto bad = [](const char* key, auto... why) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": ", why...));
  };
  if (c.base_bin_ns <= 0) return bad("base_bin_ns", "must be positive, got ", c.base_bin_ns);
  if (c.scales_ns.empty()) return bad("scales_ns", "at least one scale is needed");
  for (size_t i = 0; i < c.scales_ns.size(); ++i) {
    const int64_t t = c.scales_ns[i];
    if (t <= 0) return bad("scales_ns", "scale ", t, " ns is not positive");
    if (t % c.base_bin_ns != 0) {
      return bad("scales_ns", "scale ", t, " ns is not a multiple of the base bin ", c.base_bin_ns, " ns");
    }
    if (i > 0 && t <= c.scales_ns[i - 1]) return bad("scales_ns", "scales must be ascending and distinct");
  }
  for (double r : c.rates_bps) {
    if (!(r > 0) || r > 1e13) return bad("rates_bps", "rate ", r, " bit/s is not in (0, 10 Tbit/s]");
  }
  if (!(c.link_capacity_bps > 0)) return bad("link_capacity_bps", "must be positive");
  if (c.microburst_tau_ns <= 0) return bad("microburst_tau_ns", "must be positive");
  if (!(c.microburst_threshold > 0)) return bad("microburst_threshold", "must be positive");
  if (c.exact_max_entries < 2) return bad("exact_max_entries", "must be at least 2");
  if (c.top_k == 0) return bad("top_k", "must be at least 1");
  if (c.tracked_streams < c.top_k) return bad("tracked_streams", "must be at least top_k (", c.top_k, ")");
  if (c.flow_table_capacity < c.tracked_streams + 2) return bad("flow_table_capacity", "too small");
  if (c.pair_table_capacity < c.tracked_streams + 2) return bad("pair_table_capacity", "too small");
  if (c.report_interval_ns < 0 || c.report_interval_ns % c.base_bin_ns != 0) {
    return bad("report_interval_ns", c.report_interval_ns, " ns is not a non-negative multiple of the base bin ",
               c.base_bin_ns, " ns");
  }
  if (c.report_interval_ns > 0) {
    if (c.baseline_ns < c.scales_ns.back()) {
      return bad("baseline_ns", "the baseline (", c.baseline_ns, " ns) is shorter than the largest scale (",
                 c.scales_ns.back(), " ns)");
    }
    if (c.baseline_ns % c.report_interval_ns != 0) {
      return bad("baseline_ns", c.baseline_ns, " ns is not a multiple of the report interval ",
                 c.report_interval_ns, " ns");
    }
  }
  return absl::OkStatus();
}

struct Engine::Impl {
  explicit Impl(const EngineConfig& c)
      : cfg(c), port(cfg, /*full=*/true), pairs(cfg, cfg.pair_table_capacity),
        flows(cfg, cfg.flow_table_capacity) {}

  EngineConfig cfg;
  Stream port;
  // Ingress and egress get full streams once seen; kUnknown frames are only in the port stream.
  std::array<std::unique_ptr<Stream>, kDirectionCount> directions;
  HeavyTable pairs;
  HeavyTable flows;
  uint64_t non_ip = 0;

  // Report intervals [interval_start, interval_end); interval_end is INT64_MAX without intervals and
  // INT64_MIN before the first record or advance() (the first one then opens the first interval).
  int64_t interval_start = INT64_MIN;
  int64_t interval_end = INT64_MAX;
  int64_t monitoring_start = 0;
  // Bytes of the last baseline_ns / report_interval_ns intervals, per stream (port, then directions).
  std::array<std::deque<uint64_t>, 1 + kDirectionCount> baseline;
  std::function<void(const IntervalReport&)> sink;

  void roll(int64_t now);
  void closeInterval(uint64_t skipped, bool partial = false);
  void fill(IntervalStream& s, std::deque<uint64_t>& history, int64_t covered) const;
};

// Closes every interval that ends at or before `now`; an hours-long silence costs O(baseline) intervals.
void Engine::Impl::roll(int64_t now) {
  const int64_t len = cfg.report_interval_ns;
  if (interval_start == INT64_MIN) {
    interval_start = now - now % len;
    interval_end = interval_start + len;
    monitoring_start = interval_start;
    return;
  }
  const int64_t keep = cfg.baseline_ns / len;  // intervals that a baseline spans
  while (interval_end <= now) {
    closeInterval(0);
    const int64_t behind = (now - interval_start) / len;  // complete intervals still to close
    if (behind > keep + 1) {
      // Every one of them is empty, and after `keep` of them nothing of the old traffic is left in any
      // window or baseline: close one to let the windows empty, jump, and report the last one.
      closeInterval(0);
      const int64_t skip_to = now - now % len - len;  // start of the last complete interval
      const uint64_t skipped = static_cast<uint64_t>((skip_to - interval_start) / len);
      for (auto& h : baseline) h.clear();
      interval_start = skip_to;
      interval_end = skip_to + len;
      closeInterval(skipped);
    }
  }
}

void Engine::Impl::fill(IntervalStream& s, std::deque<uint64_t>& history, int64_t covered) const {
  history.push_back(s.bytes);
  while (static_cast<int64_t>(history.size()) * cfg.report_interval_ns > cfg.baseline_ns) history.pop_front();
  uint64_t baseline_bytes = 0;
  for (uint64_t b : history) baseline_bytes += b;
  s.mean_bps = static_cast<double>(s.bytes) * 8e9 / static_cast<double>(cfg.report_interval_ns);
  s.baseline_bps = static_cast<double>(baseline_bytes) * 8e9 / static_cast<double>(covered);
  s.ptm.clear();
  for (size_t i = 0; i < cfg.scales_ns.size(); ++i) {
    const int64_t tau = cfg.scales_ns[i];
    std::optional<double> v;
    if (tau <= covered && baseline_bytes > 0) {
      v = static_cast<double>(s.envelope_bytes[i]) * 8e9 / (s.baseline_bps * static_cast<double>(tau));
    }
    s.ptm.push_back(v);
  }
}

void Engine::Impl::closeInterval(uint64_t skipped, bool partial) {
  IntervalReport r;
  r.partial = partial;
  r.start_ns = interval_start;
  r.end_ns = interval_end;
  r.skipped_intervals = skipped;
  r.baseline_ns = std::min(cfg.baseline_ns, interval_end - monitoring_start);
  port.closeInterval(interval_end, &r.port, !partial);
  fill(r.port, baseline[0], r.baseline_ns);
  for (int i = 0; i < kDirectionCount; ++i) {
    if (!directions[i]) continue;
    IntervalStream d;
    directions[i]->closeInterval(interval_end, &d, !partial);
    fill(d, baseline[1 + i], r.baseline_ns);
    r.directions.emplace_back(static_cast<Direction>(i), std::move(d));
  }
  r.microbursts_total = port.microburstCount();
  if (cfg.report_top_k > 0) {
    r.pairs = pairs.result(cfg.report_top_k, /*with_windows=*/false);
    r.flows = flows.result(cfg.report_top_k, /*with_windows=*/false);
  }
  interval_start = interval_end;
  interval_end += cfg.report_interval_ns;
  if (sink) sink(r);
}

Engine::Engine(const EngineConfig& config) : impl_(std::make_unique<Impl>(config)) {
  if (config.report_interval_ns > 0) impl_->interval_end = INT64_MIN;
}
Engine::~Engine() = default;

void Engine::setIntervalSink(std::function<void(const IntervalReport&)> sink) { impl_->sink = std::move(sink); }

void Engine::advance(int64_t now_ns) {
  if (impl_->cfg.report_interval_ns > 0 && now_ns >= impl_->interval_end) impl_->roll(now_ns);
}

void Engine::add(const PacketRecord& r) {
  Impl& m = *impl_;
  if (r.ts_ns >= m.interval_end) m.roll(r.ts_ns);
  m.port.add(r.ts_ns, r.wire_len);
  if (r.direction != Direction::kUnknown) {
    auto& d = m.directions[static_cast<int>(r.direction)];
    if (!d) d = std::make_unique<Stream>(m.cfg, true);
    d->add(r.ts_ns, r.wire_len);
  }
  if (r.key.family == 0) {
    ++m.non_ip;
    return;
  }
  HeavyTable::Entry& flow = m.flows.lookup(r.key, r.ts_ns);
  const FlowKey pair_key = r.key.pairKey();
  if (flow.link == nullptr || flow.link_generation != m.pairs.generation()) {
    flow.link = &m.pairs.lookup(pair_key, r.ts_ns);
    flow.link_generation = m.pairs.generation();
  }
  m.pairs.account(pair_key, *flow.link, r.ts_ns, r.wire_len);
  m.flows.account(r.key, flow, r.ts_ns, r.wire_len);
}

void Engine::finish() {
  Impl& m = *impl_;
  m.port.finish();
  for (auto& d : m.directions) {
    if (d) d->finish();
  }
  m.pairs.finish();
  m.flows.finish();
  if (m.cfg.report_interval_ns > 0 && m.interval_start != INT64_MIN) m.closeInterval(0, /*partial=*/true);
}

EngineResult Engine::result() const {
  const Impl& m = *impl_;
  EngineResult r;
  r.port = m.port.result();
  for (int i = 0; i < kDirectionCount; ++i) {
    if (m.directions[i]) r.directions.emplace_back(static_cast<Direction>(i), m.directions[i]->result());
  }
  r.pairs = m.pairs.result(m.cfg.top_k);
  r.flows = m.flows.result(m.cfg.top_k);
  r.non_ip_packets = m.non_ip;
  return r;
}

void Reorderer::insert(const PacketRecord& r) {
  if (size_ == buf_.size()) grow();
  const size_t mask = buf_.size() - 1;
  // Stable insertion from the back: captures are nearly in order, so this is usually one comparison.
  size_t pos = size_;
  while (pos > 0 && buf_[(head_ + pos - 1) & mask].ts_ns > r.ts_ns) {
    buf_[(head_ + pos) & mask] = buf_[(head_ + pos - 1) & mask];
    --pos;
  }
  if (pos != size_) ++reordered_;
  buf_[(head_ + pos) & mask] = r;
  ++size_;
}

void Reorderer::grow() {
  std::vector<PacketRecord> bigger(buf_.size() * 2);
  for (size_t i = 0; i < size_; ++i) bigger[i] = buf_[(head_ + i) & (buf_.size() - 1)];
  buf_.swap(bigger);
  head_ = 0;
}

}  // namespace burstscope
