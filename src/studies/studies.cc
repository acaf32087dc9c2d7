#include "src/studies/studies.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "burstscope/evidence.h"
#include "burstscope/status.h"
#include "src/analysis/report.h"

namespace burstscope {
namespace {

constexpr int kGridPoints = 40;
constexpr int64_t kMaxDenseTauNs = 10'000'000'000;
// The progress callback is considered every 256 non-empty bins and called at most every 200 ms.
constexpr uint64_t kProgressEveryBins = 256;
constexpr auto kProgressPeriod = std::chrono::milliseconds(200);

// Floor division: bins of times before the epoch stay aligned too.
int64_t binOf(int64_t ts_ns, int64_t bin_ns) {
  int64_t q = ts_ns / bin_ns;
  if (ts_ns % bin_ns != 0 && ts_ns < 0) --q;
  return q;
}

// Counts the port stream's bins for the progress line (pass 1, whose duration is not known yet).
class ProgressObserver final : public EngineObserver {
 public:
  ProgressObserver(const std::function<void(const ReportProgress&)>& f, int pass, int64_t total_ns)
      : f_(f), pass_(pass), total_ns_(total_ns) {}
  void onBaseBin(int64_t start_ns, uint64_t /*bytes*/, uint64_t packets) override {
    if (first_ns_ == INT64_MIN) first_ns_ = start_ns;
    packets_ += packets;
    if (++bins_ % kProgressEveryBins != 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ >= kProgressPeriod) {
      last_ = now;
      f_(ReportProgress{
          .pass = pass_, .passes = 2, .done_ns = start_ns - first_ns_, .total_ns = total_ns_, .packets = packets_});
    }
  }

 private:
  const std::function<void(const ReportProgress&)>& f_;
  int pass_;
  int64_t total_ns_;
  int64_t first_ns_ = INT64_MIN;
  uint64_t bins_ = 0;
  uint64_t packets_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

struct PairTotals {
  uint64_t bytes = 0;
  uint64_t packets = 0;
};

// Pass 2's collector: the port stream's non-empty base bins (observer), every directed host pair and the
// top flows' base bins (records). It outlives the engine, which holds only a forwarding aggregator.
class StudiesCollector final : public EngineObserver {
 public:
  StudiesCollector(int64_t bin_ns, const std::vector<FlowKey>& top_flows) : bin_ns_(bin_ns) {
    for (size_t i = 0; i < top_flows.size(); ++i) flow_index_.emplace(top_flows[i], i);
    flow_bins_.resize(top_flows.size());
  }

  void onBaseBin(int64_t start_ns, uint64_t bytes, uint64_t packets) override {
    bins_.push_back({binOf(start_ns, bin_ns_), bytes, packets});
  }

  void add(std::span<const PacketRecord> records) {
    for (const PacketRecord& r : records) {
      if (r.key.family == 0) continue;  // pairs and flows are IP only, as in the engine's tables
      const FlowKey pair = r.key.pairKey();
      auto it = pairs_.find(pair);
      if (it == pairs_.end()) {
        if (pairs_.size() >= Heatmap::kMaxPairs) {
          overflow_.bytes += r.wire_len;
          ++overflow_.packets;
          it = pairs_.end();
        } else {
          it = pairs_.emplace(pair, PairTotals{}).first;
        }
      }
      if (it != pairs_.end()) {
        it->second.bytes += r.wire_len;
        ++it->second.packets;
      }
      if (auto f = flow_index_.find(r.key); f != flow_index_.end()) {
        auto& series = flow_bins_[f->second];
        const int64_t bin = binOf(r.ts_ns, bin_ns_);
        if (series.empty() || series.back().first != bin) series.emplace_back(bin, 0);
        series.back().second += r.wire_len;
      }
    }
  }

  struct Bin {
    int64_t index;
    uint64_t bytes, packets;
  };
  std::vector<Bin> bins_;
  absl::flat_hash_map<FlowKey, PairTotals> pairs_;
  PairTotals overflow_;
  std::vector<std::vector<std::pair<int64_t, uint64_t>>> flow_bins_;  // per top flow: (bin index, bytes)

 private:
  int64_t bin_ns_;
  absl::flat_hash_map<FlowKey, size_t> flow_index_;
};

class ForwardingAggregator final : public Aggregator {
 public:
  explicit ForwardingAggregator(StudiesCollector* c) : c_(c) {}
  void add(std::span<const PacketRecord> records) override { c_->add(records); }
  void closeInterval(const IntervalContext& /*c*/, IntervalReport* /*out*/) override {}
  void finish() override {}
  void result(EngineResult* /*out*/) const override {}

 private:
  StudiesCollector* c_;
};

absl::StatusOr<RunResult> runPass(const ReportInputs& in, const PipelineConfig& pc, const std::atomic<bool>& stop) {
  BS_ASSIGN_OR_RETURN(std::unique_ptr<CaptureSource> source,
                      openPcapCapture(in.files, in.decoder, size_t{1} << 16, in.read));
  BS_ASSIGN_OR_RETURN(RunResult result, runCapture(*source, pc, stop));
  if (result.ports.size() != 1) return absl::InternalError("a capture file source must have exactly one port");
  return result;
}

double meanBps(const StreamResult& s) {
  const int64_t dur = s.last_ns - s.first_ns;
  return dur > 0 ? static_cast<double>(s.bytes) * 8e9 / static_cast<double>(dur) : 0.0;
}

// A host of the heat map: its address (family and bytes) as FlowKey::src.
FlowKey hostKey(const FlowKey& pair, bool source) {
  FlowKey k;
  k.src = source ? pair.src : pair.dst;
  k.family = pair.family;
  return k;
}

Heatmap buildHeatmap(const StudiesCollector& c) {
  Heatmap h;
  h.pairs = c.pairs_.size();
  h.overflow_packets = c.overflow_.packets;
  absl::flat_hash_map<FlowKey, uint64_t> host_bytes;
  for (const auto& [pair, t] : c.pairs_) {
    host_bytes[hostKey(pair, true)] += t.bytes;
    host_bytes[hostKey(pair, false)] += t.bytes;
  }
  struct Host {
    FlowKey key;
    std::string name;
    uint64_t bytes;
  };
  std::vector<Host> hosts;
  hosts.reserve(host_bytes.size());
  for (const auto& [k, b] : host_bytes) hosts.push_back({k, addressToString(k, true), b});
  std::sort(hosts.begin(), hosts.end(),
            [](const Host& a, const Host& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name; });
  const bool fold = hosts.size() > Heatmap::kMaxHosts || c.overflow_.packets > 0;
  const size_t named = std::min(hosts.size(), Heatmap::kMaxHosts);
  absl::flat_hash_map<FlowKey, uint32_t> index;
  for (size_t i = 0; i < named; ++i) {
    index.emplace(hosts[i].key, static_cast<uint32_t>(i));
    h.hosts.push_back(hosts[i].name);
  }
  const auto other = static_cast<uint32_t>(named);
  if (fold) h.hosts.push_back("other");
  auto at = [&](const FlowKey& k) {
    auto it = index.find(k);
    return it == index.end() ? other : it->second;
  };
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, PairTotals> cells;
  for (const auto& [pair, t] : c.pairs_) {
    PairTotals& cell = cells[{at(hostKey(pair, true)), at(hostKey(pair, false))}];
    cell.bytes += t.bytes;
    cell.packets += t.packets;
  }
  if (c.overflow_.packets > 0) {
    PairTotals& cell = cells[{other, other}];
    cell.bytes += c.overflow_.bytes;
    cell.packets += c.overflow_.packets;
  }
  for (const auto& [ij, t] : cells) h.cells.push_back({ij.first, ij.second, t.bytes, t.packets});
  std::sort(h.cells.begin(), h.cells.end(), [](const Heatmap::Cell& a, const Heatmap::Cell& b) {
    return std::make_pair(a.src, a.dst) < std::make_pair(b.src, b.dst);
  });
  return h;
}

ReportMicrobursts buildMicrobursts(const PortResult& p) {
  const EngineConfig& cfg = p.engine_config;
  ReportMicrobursts m{.tau_ns = cfg.microburst_tau_ns,
                      .threshold = cfg.microburst_threshold,
                      .link_capacity_bps = cfg.link_capacity_bps,
                      .count = 0,
                      .events = {}};
  if (!p.engine.port.microbursts) return m;
  const MicroburstResult& mr = *p.engine.port.microbursts;
  m.count = mr.count;
  absl::flat_hash_set<std::pair<int64_t, int64_t>> congesting;
  if (p.engine.evidence) {
    for (const AnnotatedBurst& b : p.engine.evidence->bursts) congesting.insert({b.burst.start_ns, b.burst.end_ns});
  }
  const size_t n = std::min(mr.events.size(), ReportMicrobursts::kMaxListed);
  m.events.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Microburst& e = mr.events[i];
    m.events.push_back({e, congesting.contains({e.start_ns, e.end_ns})});
  }
  return m;
}

}  // namespace

std::vector<int64_t> denseTauGrid(int64_t base_bin_ns, int64_t duration_ns, const std::vector<int64_t>& configured) {
  const int64_t bins_up = std::max<int64_t>(1, (duration_ns + base_bin_ns - 1) / base_bin_ns);
  const int64_t max_bins = std::max<int64_t>(1, std::min(kMaxDenseTauNs / base_bin_ns, bins_up));
  std::vector<int64_t> out;
  for (int i = 0; i < kGridPoints; ++i) {
    const double f = std::pow(static_cast<double>(max_bins), static_cast<double>(i) / (kGridPoints - 1));
    out.push_back(std::clamp<int64_t>(std::llround(f), 1, max_bins) * base_bin_ns);
  }
  out.insert(out.end(), configured.begin(), configured.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<double> denseRateGrid(double mean_bps, double peak_bps, const std::vector<double>& configured) {
  constexpr double kLo = 1e3, kHi = 1e13;
  const double lo = std::clamp(mean_bps > 0 ? mean_bps : kLo, kLo, kHi / 2);
  const double hi = std::clamp(std::max(2 * peak_bps, 2 * lo), 2 * lo, kHi);
  std::vector<double> out;
  out.reserve(kGridPoints + configured.size());
  for (int i = 0; i < kGridPoints; ++i) {
    out.push_back(lo * std::pow(hi / lo, static_cast<double>(i) / (kGridPoints - 1)));
  }
  out.insert(out.end(), configured.begin(), configured.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

absl::StatusOr<StudiesResult> computeStudies(const ReportInputs& in, const std::atomic<bool>& stop) {
  StudiesResult out;
  out.files = in.files;

  // Pass 1: analyze itself.
  PipelineConfig pc1 = in.pipeline;
  std::unique_ptr<ProgressObserver> progress1;
  if (in.progress) {
    progress1 = std::make_unique<ProgressObserver>(in.progress, 1, 0);
    pc1.extend_engine = [&](size_t /*port*/, Engine& e) { e.subscribe(progress1.get()); };
  }
  BS_ASSIGN_OR_RETURN(RunResult first, runPass(in, pc1, stop));
  const PortResult& p1 = first.ports.front();
  out.analyze = reportJson(p1, first.source, ReportContext{in.files, in.pipeline.reorder_horizon_ns});
  out.balanced = p1.ledger.balanced();
  out.warnings = first.source.warnings;
  out.microbursts = buildMicrobursts(p1);

  // Pass 2: the dense grids, from what pass 1 measured.
  const StreamResult& port1 = p1.engine.port;
  const EngineConfig& ec1 = p1.engine_config;
  double peak_bps = 0;
  for (const ScaleResult& sc : port1.scales) {
    peak_bps = std::max(peak_bps, static_cast<double>(sc.envelope_bytes) * 8e9 / static_cast<double>(sc.tau_ns));
  }
  PipelineConfig pc2 = in.pipeline;
  pc2.training.enabled = false;
  pc2.evidence.enabled = false;
  EngineConfig& ec2 = pc2.engine;
  ec2.scales_ns = denseTauGrid(ec1.base_bin_ns, port1.last_ns - port1.first_ns, ec1.scales_ns);
  ec2.rates_bps = denseRateGrid(meanBps(port1), peak_bps, ec1.rates_bps);
  ec2.exact_max_tau_ns = std::max(ec1.exact_max_tau_ns, ec2.scales_ns.back());
  // The pair and flow tables' own windows are not used here: keep them to one tracked stream.
  ec2.top_k = 1;
  ec2.tracked_streams = 1;
  std::vector<FlowKey> top;
  for (const HeavyHitter& h : p1.engine.flows.top) top.push_back(h.key);
  StudiesCollector collector(ec1.base_bin_ns, top);
  std::unique_ptr<ProgressObserver> progress2;
  if (in.progress) progress2 = std::make_unique<ProgressObserver>(in.progress, 2, port1.last_ns - port1.first_ns);
  pc2.extend_engine = [&](size_t /*port*/, Engine& e) {
    e.subscribe(&collector);
    if (progress2) e.subscribe(progress2.get());
    e.addAggregator(std::make_unique<ForwardingAggregator>(&collector));
  };
  BS_ASSIGN_OR_RETURN(RunResult second, runPass(in, pc2, stop));
  const StreamResult& port2 = second.ports.front().engine.port;
  if (port2.packets != port1.packets || port2.bytes != port1.bytes) {
    return absl::InternalError(absl::StrCat("the second pass read ", port2.packets, " packets, ", port2.bytes,
                                            " bytes; the first ", port1.packets, ", ", port1.bytes,
                                            " (did a file change while it was read?)"));
  }

  Timeline& tl = out.timeline;
  tl.bin_ns = ec1.base_bin_ns;
  const int64_t first_bin = collector.bins_.empty() ? 0 : collector.bins_.front().index;
  if (!collector.bins_.empty()) {
    tl.start_ns = first_bin * tl.bin_ns;
    tl.end_ns = (collector.bins_.back().index + 1) * tl.bin_ns;
    for (const auto& b : collector.bins_) {
      tl.t.push_back(b.index - first_bin);
      tl.bytes.push_back(b.bytes);
      tl.packets.push_back(b.packets);
    }
  }

  const double mean = meanBps(port2);
  const double duration = static_cast<double>(port2.last_ns - port2.first_ns);
  for (const ScaleResult& sc : port2.scales) {
    std::optional<double> ptm;
    if (static_cast<double>(sc.tau_ns) <= duration) ptm = peakToMean(sc.envelope_bytes, sc.tau_ns, mean);
    out.curves.push_back({sc.tau_ns, sc.envelope_bytes, ptm, sc.exact});
  }
  for (const BacklogResult& b : port2.backlog) out.backlog.push_back({b.rate_bps, b.max_backlog_bytes});

  for (size_t i = 0; i < p1.engine.flows.top.size(); ++i) {
    const HeavyHitter& h = p1.engine.flows.top[i];
    FlowSeries s{.key = h.key,
                 .name = flowToString(h.key),
                 .kind = flowKindName(h.key),
                 .bytes = h.bytes,
                 .share = port1.bytes ? static_cast<double>(h.bytes) / static_cast<double>(port1.bytes) : 0.0,
                 .t = {},
                 .bytes_per_bin = {}};
    for (const auto& [bin, bytes] : collector.flow_bins_[i]) {
      s.t.push_back(bin - first_bin);
      s.bytes_per_bin.push_back(bytes);
    }
    out.flows.push_back(std::move(s));
  }
  out.heatmap = buildHeatmap(collector);
  return out;
}

}  // namespace burstscope
