#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <deque>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "burstscope/window.h"
#include "src/window/heavy_table.h"
#include "src/window/stream.h"

namespace burstscope {

using internal::FlowTable;
using internal::PairTable;
using internal::Stream;

void Histogram::observe(double v, uint64_t n) {
  // The le-bucket: how many bounds lie below v (lower_bound's answer on the ascending bounds), counted
  // without branches, since consecutive values (a stream's utilisation bin after bin) jump unpredictably, and in
  // four sums side by side rather than one chain of additions.
  const double* b = bounds.data();
  const size_t m = bounds.size();
  size_t i0 = 0, i1 = 0, i2 = 0, i3 = 0, k = 0;
  for (; k + 4 <= m; k += 4) {
    i0 += b[k] < v;
    i1 += b[k + 1] < v;
    i2 += b[k + 2] < v;
    i3 += b[k + 3] < v;
  }
  for (; k < m; ++k) i0 += b[k] < v;
  counts[i0 + i1 + i2 + i3] += n;
  sum += v * static_cast<double>(n);
  count += n;
}

uint64_t microburstThresholdBytes(const EngineConfig& c) {
  const double t =
      std::ceil(c.microburst_threshold * c.link_capacity_bps * static_cast<double>(c.microburst_tau_ns) / 8e9);
  return t >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(t);
}

absl::Status validateConfig(const EngineConfig& c) {
  auto bad = [](const char* key, auto... why) { return absl::InvalidArgumentError(absl::StrCat(key, ": ", why...)); };
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
      return bad("baseline_ns", c.baseline_ns, " ns is not a multiple of the report interval ", c.report_interval_ns,
                 " ns");
    }
  }
  return absl::OkStatus();
}

void findFlowRuns(std::span<const PacketRecord> records, std::vector<uint32_t>* starts) {
  const size_t n = records.size();
  starts->resize(n + 1);
  uint32_t* out = starts->data();
  size_t runs = 0;
  // Without a branch on where runs end (one in five packets, at random): each position is written, and kept
  // only where the key changes.
  if (n > 0) out[runs++] = 0;
  for (size_t i = 1; i < n; ++i) {
    out[runs] = static_cast<uint32_t>(i);
    runs += !(records[i].key == records[i - 1].key);
  }
  out[runs++] = static_cast<uint32_t>(n);
  starts->resize(runs);
}

namespace {

// The port stream and one per direction seen: totals, windows, backlog, microbursts; per interval, the PtM
// baseline of each (the trailing mean rate), and the non-IP count.
class StreamsAggregator final : public Aggregator {
 public:
  explicit StreamsAggregator(const EngineConfig& c) : cfg_(c), port_(cfg_, /*full=*/true) {}

  void setObserver(EngineObserver* o) { port_.setObserver(o); }

  // A batch a stream at a time: the port's arrivals, then each direction's.
  void add(std::span<const PacketRecord> records) override {
    // Each arrival is written to the port's array and to its direction's slot, which moves on only for a known
    // direction: no branch on the direction, no capacity check per arrival.
    const size_t n = records.size();
    if (port_batch_.size() < n) {
      port_batch_.resize(n);
      for (auto& d : direction_batch_) d.resize(n);
    }
    internal::Arrival* port = port_batch_.data();
    internal::Arrival* dir[kDirectionCount];
    size_t count[kDirectionCount] = {};
    for (int i = 0; i < kDirectionCount; ++i) dir[i] = direction_batch_[i].data();
    uint64_t non_ip = 0;
    for (size_t k = 0; k < n; ++k) {
      const PacketRecord& r = records[k];
      const internal::Arrival a{r.ts_ns, r.wire_len};
      port[k] = a;
      const int d = static_cast<int>(r.direction);
      dir[d][count[d]] = a;
      count[d] += d != 0;
      non_ip += r.key.family == 0;
    }
    non_ip_ += non_ip;
    port_.addBatch({port, n});
    for (int i = 1; i < kDirectionCount; ++i) {
      if (count[i] == 0) continue;
      auto& d = directions_[i];
      if (!d) d = std::make_unique<Stream>(cfg_, true);
      d->addBatch({dir[i], count[i]});
    }
  }
  void closeInterval(const IntervalContext& c, IntervalReport* out) override {
    if (c.skipped > 0) {
      for (auto& h : baseline_) h.clear();  // nothing of the old traffic is left in any baseline
    }
    port_.closeInterval(c.end_ns, &out->port, !c.partial);
    fill(out->port, baseline_[0], c.baseline_ns);
    for (int i = 0; i < kDirectionCount; ++i) {
      if (!directions_[i]) continue;
      IntervalStream d;
      directions_[i]->closeInterval(c.end_ns, &d, !c.partial);
      fill(d, baseline_[1 + i], c.baseline_ns);
      out->directions.emplace_back(static_cast<Direction>(i), std::move(d));
    }
    out->microbursts_total = port_.microburstCount();
  }

  void finish() override {
    port_.finish();
    for (auto& d : directions_) {
      if (d) d->finish();
    }
  }

  void result(EngineResult* out) const override {
    out->port = port_.result();
    for (int i = 0; i < kDirectionCount; ++i) {
      if (directions_[i]) out->directions.emplace_back(static_cast<Direction>(i), directions_[i]->result());
    }
    out->non_ip_packets = non_ip_;
  }

 private:
  // The interval's mean rate, its trailing baseline, and PtM(τ) = E(τ) / (baseline rate · τ).
  void fill(IntervalStream& s, std::deque<uint64_t>& history, int64_t covered) const {
    history.push_back(s.bytes);
    while (static_cast<int64_t>(history.size()) * cfg_.report_interval_ns > cfg_.baseline_ns) history.pop_front();
    uint64_t baseline_bytes = 0;
    for (uint64_t b : history) baseline_bytes += b;
    s.mean_bps = static_cast<double>(s.bytes) * 8e9 / static_cast<double>(cfg_.report_interval_ns);
    s.baseline_bps = static_cast<double>(baseline_bytes) * 8e9 / static_cast<double>(covered);
    s.ptm.clear();
    for (size_t i = 0; i < cfg_.scales_ns.size(); ++i) {
      const int64_t tau = cfg_.scales_ns[i];
      s.ptm.push_back(tau <= covered && baseline_bytes > 0 ? peakToMean(s.envelope_bytes[i], tau, s.baseline_bps)
                                                           : std::nullopt);
    }
  }

  const EngineConfig& cfg_;
  Stream port_;
  // Ingress and egress get full streams once seen; kUnknown frames are only in the port stream.
  std::array<std::unique_ptr<Stream>, kDirectionCount> directions_;
  std::vector<internal::Arrival> port_batch_;  // scratch: a batch's arrivals, per stream
  std::array<std::vector<internal::Arrival>, kDirectionCount> direction_batch_;
  // Bytes of the last baseline_ns / report_interval_ns intervals, per stream (port, then directions).
  std::array<std::deque<uint64_t>, 1 + kDirectionCount> baseline_;
  uint64_t non_ip_ = 0;
};

// Host pairs and 5-tuple flows: bounded tables with window statistics for the heaviest keys.
class HeavyAggregator final : public Aggregator {
 public:
  explicit HeavyAggregator(const EngineConfig& c)
      : cfg_(c), pairs_(cfg_, cfg_.pair_table_capacity), flows_(cfg_, cfg_.flow_table_capacity) {}

  void add(std::span<const PacketRecord> records) override {
    findFlowRuns(records, &run_starts_);
    addRuns(records, run_starts_);
  }
  void addRuns(std::span<const PacketRecord> records, std::span<const uint32_t> starts) override {
    // A flow's run inside one base bin is counted at once: the tables' windows are made of base bins, so the
    // run is the same to them as its packets. Where flows churn (the last batch's runs missed the recent keys
    // often), the tables' entries of the run kAhead runs on are fetched first (its pair's too, for a flow not
    // seen lately: a new flow looks its pair up); steady traffic does not pay for the check.
    constexpr size_t kAhead = 4;
    const bool churn = flows_.recentMisses() - misses_before_ > runs_before_ / 8;
    misses_before_ = flows_.recentMisses();
    runs_before_ = starts.size() - 1;
    // Each run's flow entry's hints, one list for each of the engine's hinted aggregators: valid for the runs
    // looked up after the batch's last change to the flow table (an insertion or an eviction may move or remove
    // entries).
    for (size_t o = 0; o < hint_owners_; ++o) hints_[o]->assign(starts.size() - 1, nullptr);
    uint64_t generation = flows_.generation();
    size_t valid_from = 0;
    for (size_t k = 0; k + 1 < starts.size(); ++k) {
      if (churn && k + kAhead + 1 < starts.size()) {
        const FlowKey& next = records[starts[k + kAhead]].key;
        if (next.family != 0 && flows_.prefetch(next)) pairs_.prefetch(next.pairKey());
      }
      size_t i = starts[k];
      const size_t end = starts[k + 1];
      if (records[i].key.family == 0) continue;
      FlowTable::Entry* flow = nullptr;
      do {  // a run has one record or more
        const PacketRecord& r = records[i];
        if (r.ts_ns >= bin_end_) bin_end_ = (r.ts_ns / cfg_.base_bin_ns + 1) * cfg_.base_bin_ns;
        uint64_t bytes = r.wire_len;
        size_t j = i + 1;
        while (j < end && records[j].ts_ns < bin_end_) bytes += records[j++].wire_len;
        flow = &addRun(r.key, r.ts_ns, records[j - 1].ts_ns, bytes, j - i);
        i = j;
      } while (i < end);
      if (hint_owners_ > 0) {
        for (size_t o = 0; o < hint_owners_; ++o) (*hints_[o])[k] = &flow->hints[o];
        if (flows_.generation() != generation) {
          generation = flows_.generation();
          valid_from = k;
        }
      }
    }
    for (size_t o = 0; o < hint_owners_; ++o) std::fill_n(hints_[o]->begin(), valid_from, nullptr);
  }
  // The flow's entry: valid until the flow table's generation changes.
  FlowTable::Entry& addRun(const FlowKey& key, int64_t first_ts, int64_t last_ts, uint64_t bytes, uint64_t packets) {
    FlowTable::Entry& flow = flows_.lookup(key, first_ts);
    const FlowKey pair_key = key.pairKey();
    if (flow.link == nullptr || flow.link_generation != pairs_.generation()) {
      flow.link = &pairs_.lookup(pair_key, first_ts);
      flow.link_generation = pairs_.generation();
    }
    pairs_.account(pair_key, *flow.link, first_ts, last_ts, bytes, packets);
    flows_.account(key, flow, first_ts, last_ts, bytes, packets);
    return flow;
  }
  // Where addRuns() leaves each run's hint for the next owner (FlowHint; at most kFlowHintOwners of them, in the
  // order added): the owner's number is its index into every entry's hints.
  void addHintsOut(std::vector<FlowHint*>* hints) { hints_.at(hint_owners_++) = hints; }

  void closeInterval(const IntervalContext&, IntervalReport* out) override {
    if (cfg_.report_top_k == 0) return;
    out->pairs = pairs_.result(cfg_.report_top_k, /*with_windows=*/false);
    out->flows = flows_.result(cfg_.report_top_k, /*with_windows=*/false);
  }

  void finish() override {
    pairs_.finish();
    flows_.finish();
  }

  void result(EngineResult* out) const override {
    out->pairs = pairs_.result(cfg_.top_k);
    out->flows = flows_.result(cfg_.top_k);
  }

 private:
  const EngineConfig& cfg_;
  PairTable pairs_;
  FlowTable flows_;
  int64_t bin_end_ = INT64_MIN;       // the end of the base bin of the last run's first packet
  std::vector<uint32_t> run_starts_;  // scratch for add() without the engine's runs
  uint64_t misses_before_ = 0;        // the flow table's recent misses before the last batch
  size_t runs_before_ = 0;            // the last batch's runs
  std::array<std::vector<FlowHint*>*, kFlowHintOwners> hints_{};
  size_t hint_owners_ = 0;
};

// Forwards the port stream's detail to every subscriber.
class Fanout final : public EngineObserver {
 public:
  void onBaseBin(int64_t start_ns, uint64_t bytes, uint64_t packets) override {
    for (EngineObserver* o : list) o->onBaseBin(start_ns, bytes, packets);
  }
  void onMicroburst(const Microburst& m) override {
    for (EngineObserver* o : list) o->onMicroburst(m);
  }
  void onInterval(const IntervalReport& r) override {
    for (EngineObserver* o : list) o->onInterval(r);
  }
  std::vector<EngineObserver*> list;
};

}  // namespace

struct Engine::Impl {
  explicit Impl(const EngineConfig& c) : cfg(c), streams(cfg), heavy(cfg) {}

  // The built-in aggregators are members of their own (final) types, so that the per-packet calls to them
  // are direct; added ones come after them, through the interface.
  template <typename F>
  void forEach(F&& f) {
    forEachOf(*this, f);
  }
  template <typename F>
  void forEach(F&& f) const {
    forEachOf(*this, f);
  }
  template <typename Self, typename F>  // Impl or const Impl
  static void forEachOf(Self& self, F& f) {
    if (self.cfg.streams) f(self.streams);
    if (self.cfg.pairs_and_flows) f(self.heavy);
    for (auto& a : self.added) f(*a);
  }
  // One step: microbursts another engine found in it go to the subscribers first, as the port stream (first
  // in forEach) would have told them.
  template <typename F>
  void step(F&& f) {
    while (!forwarded.empty() && forwarded.front().first <= steps) {
      fanout.onMicroburst(forwarded.front().second);
      forwarded.pop_front();
    }
    forEach(f);
    ++steps;
  }

  EngineConfig cfg;
  StreamsAggregator streams;
  HeavyAggregator heavy;
  std::vector<std::unique_ptr<Aggregator>> added;
  Fanout fanout;
  std::function<void(const IntervalReport&)> sink;
  uint64_t steps = 0;
  std::deque<std::pair<uint64_t, Microburst>> forwarded;
  std::vector<uint32_t> run_starts;  // scratch: the flow runs of the records being added (findFlowRuns)
  // The added aggregators that have the flow table's hints (FlowHint), and for each, each run's hint (scratch,
  // from the heavy aggregator to them).
  std::array<Aggregator*, kFlowHintOwners> hinted{};
  std::array<std::vector<FlowHint*>, kFlowHintOwners> run_hints;
  bool needs_runs = cfg.pairs_and_flows;  // an aggregator takes them (the streams alone do not)

  // Report intervals [interval_start, interval_end); interval_end is INT64_MAX without intervals and
  // INT64_MIN before the first record or advance() (the first one then opens the first interval).
  int64_t interval_start = INT64_MIN;
  int64_t interval_end = INT64_MAX;
  int64_t monitoring_start = 0;

  void roll(int64_t now);
  void closeInterval(uint64_t skipped, bool partial = false);
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
      interval_start = skip_to;
      interval_end = skip_to + len;
      closeInterval(skipped);
    }
  }
}

void Engine::Impl::closeInterval(uint64_t skipped, bool partial) {
  IntervalReport r;
  r.partial = partial;
  r.start_ns = interval_start;
  r.end_ns = interval_end;
  r.skipped_intervals = skipped;
  r.baseline_ns = std::min(cfg.baseline_ns, interval_end - monitoring_start);
  const IntervalContext c{interval_start, interval_end, r.baseline_ns, partial, skipped};
  step([&](auto& a) { a.closeInterval(c, &r); });
  interval_start = interval_end;
  interval_end += cfg.report_interval_ns;
  fanout.onInterval(r);
  if (sink) sink(r);
}

Engine::Engine(const EngineConfig& config) : impl_(std::make_unique<Impl>(config)) {
  if (config.report_interval_ns > 0) impl_->interval_end = INT64_MIN;
}
Engine::~Engine() = default;

void Engine::addAggregator(std::unique_ptr<Aggregator> a) {
  Impl& m = *impl_;
  if (m.cfg.pairs_and_flows && a->wantsFlowHints()) {
    for (size_t o = 0; o < kFlowHintOwners; ++o) {
      if (m.hinted[o] == nullptr) {
        m.hinted[o] = a.get();
        m.heavy.addHintsOut(&m.run_hints[o]);
        break;
      }
    }
  }
  m.added.push_back(std::move(a));
  m.needs_runs = true;
}

void Engine::subscribe(EngineObserver* o) {
  impl_->fanout.list.push_back(o);
  impl_->streams.setObserver(&impl_->fanout);
}

void Engine::setIntervalSink(std::function<void(const IntervalReport&)> sink) { impl_->sink = std::move(sink); }

void Engine::advance(int64_t now_ns) {
  if (impl_->cfg.report_interval_ns > 0 && now_ns >= impl_->interval_end) impl_->roll(now_ns);
}

void Engine::add(std::span<const PacketRecord> records) {
  Impl& m = *impl_;
  size_t i = 0;
  while (i < records.size()) {
    if (records[i].ts_ns >= m.interval_end) m.roll(records[i].ts_ns);
    // The run of records inside the current interval: usually the whole batch.
    size_t j = records.size();
    if (records.back().ts_ns >= m.interval_end) {
      j = i + 1;
      while (j < records.size() && records[j].ts_ns < m.interval_end) ++j;
    }
    const std::span<const PacketRecord> run = records.subspan(i, j - i);
    if (m.needs_runs) findFlowRuns(run, &m.run_starts);
    const std::span<const uint32_t> starts(m.run_starts);
    m.step([&m, run, starts](auto& a) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, Aggregator>) {
        for (size_t o = 0; o < kFlowHintOwners; ++o) {
          if (&a == m.hinted[o]) {
            a.addRunsHinted(run, starts, m.run_hints[o]);  // filled by the heavy aggregator, which comes before
            return;
          }
        }
      }
      a.addRuns(run, starts);
    });
    i = j;
  }
}

void Engine::add(const PacketRecord& r) { add(std::span<const PacketRecord>(&r, 1)); }

void Engine::finish() {
  Impl& m = *impl_;
  m.step([](auto& a) { a.finish(); });
  if (m.cfg.report_interval_ns > 0 && m.interval_start != INT64_MIN) m.closeInterval(0, /*partial=*/true);
}

EngineResult Engine::result() const {
  EngineResult r;
  std::as_const(*impl_).forEach([&r](const auto& a) { a.result(&r); });
  return r;
}

uint64_t Engine::steps() const { return impl_->steps; }

void Engine::forwardMicroburst(uint64_t step, const Microburst& m) { impl_->forwarded.emplace_back(step, m); }

}  // namespace burstscope
