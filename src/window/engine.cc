#include <algorithm>
#include <array>

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
};

Engine::Engine(const EngineConfig& config) : impl_(std::make_unique<Impl>(config)) {}
Engine::~Engine() = default;

void Engine::add(const PacketRecord& r) {
  Impl& m = *impl_;
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
