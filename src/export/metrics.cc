#include "src/export/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "burstscope/evidence.h"
#include "burstscope/mirror.h"
#include "burstscope/status.h"
#include "src/export/revision.h"
#include "src/export/web_config.h"

namespace burstscope {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using LabelVec = std::vector<ClientMetric::Label>;

// Labels that burstscope itself sets, or that Prometheus sets on every target.
const std::set<std::string>& reservedLabels() {
  static const std::set<std::string> r = {"job",      "instance", "sensor", "port",    "direction", "scale", "le",
                                          "rate_bps", "stage",    "reason", "source",  "src",       "dst",   "src_port",
                                          "dst_port", "proto",    "table",  "version", "backend"};
  return r;
}

absl::Status checkLabels(const Labels& labels, const std::string& key) {
  // [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved by Prometheus).
  auto valid = [](const std::string& k) {
    if (k.empty() || absl::ascii_isdigit(static_cast<unsigned char>(k[0])) || k.rfind("__", 0) == 0) return false;
    return std::all_of(k.begin(), k.end(),
                       [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  };
  for (const auto& [k, v] : labels) {
    if (!valid(k)) {
      return absl::InvalidArgumentError(absl::StrCat(key, ".", k, ": not a valid Prometheus label name"));
    }
    if (reservedLabels().count(k)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ".", k, ": reserved (burstscope or Prometheus sets this label)"));
    }
  }
  return absl::OkStatus();
}

// Seconds as a short decimal, the value of the `scale` label: 100 µs is "0.0001", 10 s is "10".
std::string secondsLabel(int64_t ns) { return absl::StrCat(static_cast<double>(ns) * 1e-9); }

LabelVec with(LabelVec l, std::initializer_list<std::pair<const char*, std::string>> extra) {
  for (const auto& [k, v] : extra) l.push_back({k, v});
  return l;
}

// Families in the order they are first used; a scrape builds them afresh from the snapshots.
class Families {
 public:
  void gauge(const std::string& name, const char* help, LabelVec l, double v) {
    ClientMetric m;
    m.label = std::move(l);
    m.gauge.value = v;
    family(name, help, MetricType::Gauge).metric.push_back(std::move(m));
  }
  void counter(const std::string& name, const char* help, LabelVec l, double v) {
    ClientMetric m;
    m.label = std::move(l);
    m.counter.value = v;
    family(name, help, MetricType::Counter).metric.push_back(std::move(m));
  }
  // The engine's histogram keeps per-bucket counts with the +Inf bucket last; Prometheus wants them
  // cumulative.
  void histogram(const std::string& name, const char* help, LabelVec l, const Histogram& h) {
    ClientMetric m;
    m.label = std::move(l);
    m.histogram.sample_count = h.count;
    m.histogram.sample_sum = h.sum;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.counts.size(); ++i) {
      cumulative += h.counts[i];
      const double le = i < h.bounds.size() ? h.bounds[i] : std::numeric_limits<double>::infinity();
      m.histogram.bucket.push_back({cumulative, le});
    }
    family(name, help, MetricType::Histogram).metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> take() { return std::move(families_); }

 private:
  MetricFamily& family(const std::string& name, const char* help, MetricType type) {
    auto [it, inserted] = index_.try_emplace(name, families_.size());
    if (inserted) families_.push_back(MetricFamily{name, help, type, {}});
    return families_[it->second];
  }
  std::vector<MetricFamily> families_;
  std::map<std::string, size_t> index_;
};

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

absl::Status validateExportConfig(const ExportConfig& c) {
  if (!c.listen.empty()) {
    const size_t colon = c.listen.rfind(':');
    int port = -1;
    if (colon == std::string::npos || colon == 0 || !absl::SimpleAtoi(c.listen.substr(colon + 1), &port) || port < 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("export.listen: '", c.listen, "' is not host:port (e.g. 127.0.0.1:19464)"));
    }
  }
  if (c.top_k == 0) return absl::InvalidArgumentError("export.top-k: must be at least 1");
  BS_RETURN_IF_ERROR(checkLabels(c.labels, "export.labels"));
  if (c.switch_buffer_bytes && !(*c.switch_buffer_bytes > 0)) {
    return absl::InvalidArgumentError("export.switch-buffer-bytes: must be > 0");
  }
  for (const auto& [name, p] : c.ports) {
    BS_RETURN_IF_ERROR(checkLabels(p.labels, absl::StrCat("export.ports.", name, ".labels")));
    if (p.switch_buffer_bytes && !(*p.switch_buffer_bytes > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("export.ports.", name, ".switch-buffer-bytes: must be > 0"));
    }
  }
  if (c.basic_auth_user.empty() != c.basic_auth_hash.empty()) {
    return absl::InvalidArgumentError("export.basic-auth: needs both username and password-hash");
  }
  if (!c.basic_auth_hash.empty() && !acceptedPasswordHash(c.basic_auth_hash)) {
    return absl::InvalidArgumentError(absl::StrCat("export.basic-auth.password-hash: ", kPasswordHashHelp));
  }
  if (!c.web_config_file.empty()) {
    absl::StatusOr<WebConfig> web = loadWebConfig(c.web_config_file);
    if (!web.ok()) return web.status();
  }
  const HttpServerConfig& h = c.http;
  if (h.threads < 1 || h.threads > 64) return absl::InvalidArgumentError("export.http.threads: must be in 1..64");
  if (h.max_connections < 1 || h.max_connections > 100000) {
    return absl::InvalidArgumentError("export.http.max-connections: must be in 1..100000");
  }
  if (h.read_timeout_ns < 100'000'000 || h.read_timeout_ns > 3'600'000'000'000) {
    return absl::InvalidArgumentError("export.http.read-timeout: must be in 100ms..1h");
  }
  if (h.idle_timeout_ns < 1'000'000'000 || h.idle_timeout_ns > 3'600'000'000'000) {
    return absl::InvalidArgumentError("export.http.idle-timeout: must be in 1s..1h");
  }
  return absl::OkStatus();
}

void TopKCounters::update(const HeavyResult& r) {
  uint64_t total_bytes = r.other_bytes, total_packets = r.other_packets;
  std::vector<Series> next;
  for (const HeavyHitter& h : r.top) {
    total_bytes += h.bytes;
    total_packets += h.packets;
    auto it = std::find_if(series_.begin(), series_.end(), [&](const Series& s) { return s.key == h.key; });
    Series s;
    if (it != series_.end() && h.bytes >= it->last_total_bytes) {
      s = *it;
    } else {  // new in the top K, or evicted from the table and back: its series starts from zero
      s.key = h.key;
      s.base_bytes = h.bytes;
      s.base_packets = h.packets;
    }
    s.bytes = h.bytes - s.base_bytes;
    s.packets = h.packets - s.base_packets;
    s.last_total_bytes = h.bytes;
    next.push_back(s);
  }
  series_ = std::move(next);
  uint64_t named_bytes = 0, named_packets = 0;
  for (const Series& s : series_) {
    named_bytes += s.bytes;
    named_packets += s.packets;
  }
  other_bytes_ = total_bytes - named_bytes;
  other_packets_ = total_packets - named_packets;
}

LiveMetrics::LiveMetrics(const ExportConfig& config, std::vector<ExportPortInfo> ports, std::string backend)
    : backend_(std::move(backend)) {
  start_time_s_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  identity_.push_back({"sensor", config.sensor.empty() ? hostName() : config.sensor});
  for (const auto& [k, v] : config.labels) identity_.push_back({k, v});
  for (ExportPortInfo& info : ports) {
    PortState p;
    LabelVec labels = identity_;
    p.switch_buffer_bytes = config.switch_buffer_bytes;
    if (auto it = config.ports.find(info.name); it != config.ports.end()) {
      if (it->second.switch_buffer_bytes) p.switch_buffer_bytes = it->second.switch_buffer_bytes;
      for (const auto& [name, value] : it->second.labels) {
        auto same =
            std::find_if(labels.begin(), labels.end(), [&name = name](const auto& l) { return l.name == name; });
        if (same != labels.end())
          same->value = value;
        else
          labels.push_back({name, value});
      }
    }
    labels.push_back({"port", info.name});
    p.labels = std::move(labels);
    p.info = std::move(info);
    ports_.push_back(std::move(p));
  }
}

void LiveMetrics::publish(size_t port, const PortSnapshot& s) {
  if (s.interval.partial) return;  // the final, incomplete interval at shutdown: not a completed one
  PortState& p = ports_.at(port);
  PortView& v = p.working;
  auto add = [&v](const std::string& dir, const IntervalStream& st) {
    StreamTotals& t = v.totals[dir];
    t.packets += st.packets;
    t.bytes += st.bytes;
  };
  add("all", s.interval.port);
  for (const auto& [d, st] : s.interval.directions) add(directionName(d), st);
  if (p.switch_buffer_bytes) {
    const auto link = std::find(p.info.rates_bps.begin(), p.info.rates_bps.end(), p.info.link_bps);
    const size_t i = static_cast<size_t>(link - p.info.rates_bps.begin());
    auto count = [&](const std::string& dir, const IntervalStream& st) {
      uint64_t& n = v.over_buffer_intervals[dir];  // the series exists from the first interval on
      double backlog = i < st.backlog_bytes.size() ? st.backlog_bytes[i] : 0.0;
      // A degraded interval: the lower bound, which frames lost before the analysis cannot hide.
      if (dir == "all" && s.bounds && i < s.bounds->backlog_bytes.size()) {
        backlog = std::max(backlog, s.bounds->backlog_bytes[i].first);
      }
      if (backlog > *p.switch_buffer_bytes) ++n;
    };
    count("all", s.interval.port);
    for (const auto& [d, st] : s.interval.directions) count(directionName(d), st);
  }
  if (s.bounds) {
    v.series = true;
    v.series_packets += s.bounds->packets;
    v.series_bytes += s.bounds->bytes;
    v.series_lost += s.bounds->lost;
    v.degraded_intervals += s.bounds->degraded();
  }
  v.pairs.update(s.interval.pairs);
  v.flows.update(s.interval.flows);
  if (s.training) {
    std::map<std::string, uint64_t> jobs;  // only the jobs reported now (bounded by max-jobs)
    for (const JobReport& j : s.training->jobs) jobs[j.name] = v.job_bytes[j.name] + j.bytes;
    v.job_bytes = std::move(jobs);
    v.training = s.training;
  }
  v.last = s;
  if (s.device.link) v.link = s.device.link;
  v.last_close_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // A scrape takes the views under this lock and renders them after it, so neither waits for the other.
  auto view = std::make_shared<const PortView>(v);
  std::lock_guard<std::mutex> lock(mu_);
  p.view = std::move(view);
}

void LiveMetrics::publishLink(size_t port, const LinkState& link) {
  PortState& p = ports_.at(port);
  p.working.link = link;
  auto view = std::make_shared<const PortView>(p.working);
  std::lock_guard<std::mutex> lock(mu_);
  p.view = std::move(view);
}

// Training awareness (docs/training.md): per job (at most max-jobs, plus recently silent ones) and per top-K
// destination; ranks are labelled by host within their (bounded) job.
namespace {
constexpr size_t kTopRanks = 32;

void trainingFamilies(Families& f, const LabelVec& L, const ExportPortInfo& info,
                      const std::map<std::string, uint64_t>& job_bytes, const TrainingReport& t) {
  f.gauge("burstscope_training_jobs", "jobs reported (configured or inferred, active or recently silent)", L,
          static_cast<double>(t.jobs.size()));
  f.gauge("burstscope_training_window_seconds", "trailing time jobs, periods and topology are read from", L,
          static_cast<double>(t.window_ns) * 1e-9);
  f.gauge("burstscope_training_analysis_seconds", "time the last training analysis took (control thread)", L,
          t.analysis_ms * 1e-3);
  f.gauge("burstscope_training_analysis_intervals",
          "report intervals the last training analysis took in (more than one: deferred by training.analysis-budget, "
          "or a control thread catching up)",
          L, static_cast<double>(t.intervals));
  f.counter("burstscope_training_untracked_packets_total",
            "IP packets of flows beyond the training flow table (not in any job's figures)", L,
            static_cast<double>(t.untracked_packets));
  for (const JobReport& j : t.jobs) {
    const LabelVec J = with(L, {{"ml_job", j.name}});
    f.gauge("burstscope_job_info", "a training job: its topology and whether it was configured (always 1)",
            with(J, {{"topology", j.topology.kind}, {"configured", j.configured ? "true" : "false"}}), 1);
    f.gauge("burstscope_job_hosts", "hosts in the job", J, static_cast<double>(j.hosts.size()));
    auto it = job_bytes.find(j.name);
    f.counter("burstscope_job_bytes_total", "bytes between the job's hosts (since the job was first reported)", J,
              it != job_bytes.end() ? static_cast<double>(it->second) : 0.0);
    f.gauge("burstscope_job_throughput_bytes_per_second",
            "the job's mean rate over the intervals the last analysis took in", J, j.rate_bps / 8);
    f.gauge("burstscope_job_idle_seconds", "time since the job's last packet", J, j.idle_s);
    for (size_t i = 0; i < info.scales_ns.size() && i < j.envelope_bytes.size(); ++i) {
      const LabelVec S = with(J, {{"scale", secondsLabel(info.scales_ns[i])}});
      f.gauge("burstscope_job_envelope_bytes",
              "E(scale) of the job's traffic in the intervals the last analysis took in (100 us bins)", S,
              static_cast<double>(j.envelope_bytes[i]));
      if (j.ptm[i]) {
        f.gauge("burstscope_job_peak_to_mean_ratio",
                "the job's E(scale) / (its mean rate over the training window x scale)", S, *j.ptm[i]);
      }
    }
    for (size_t i = 0; i < info.rates_bps.size() && i < j.backlog_bytes.size(); ++i) {
      f.gauge(
          "burstscope_job_virtual_backlog_max_bytes",
          "largest backlog of a server draining at rate_bps fed by the job alone, in the intervals the last analysis "
          "took in (100 us bins)",
          with(J, {{"rate_bps", absl::StrFormat("%.0f", info.rates_bps[i])}}), j.backlog_bytes[i]);
    }
    if (j.period.period_s) {
      f.gauge("burstscope_job_step_period_seconds", "the job's training step period read from its traffic", J,
              *j.period.period_s);
      f.gauge("burstscope_job_step_period_quality",
              "how well the traffic repeats at that period (normalised autocorrelation, 0-1)", J, j.period.quality);
      f.gauge("burstscope_job_steps", "steps the period and the bytes per step rest on", J,
              static_cast<double>(j.period.steps));
      f.gauge("burstscope_job_duty_cycle_ratio", "share of the period the job bursts (above its burst threshold)", J,
              j.period.duty_cycle);
      f.gauge("burstscope_job_step_bytes", "the job's bytes per step (mean over the window's steps)", J,
              j.step_bytes_mean);
      f.gauge("burstscope_job_step_bytes_spread_ratio", "standard deviation / mean of the job's bytes per step", J,
              j.step_bytes_cv);
      // The job's heaviest senders by name (SPEC: no address label beyond a top-K), the rest summed as other.
      std::vector<const RankReport*> ranks;
      for (const RankReport& k : j.ranks) ranks.push_back(&k);
      std::stable_sort(ranks.begin(), ranks.end(), [](const RankReport* a, const RankReport* b) {
        return a->sent_bytes_per_step > b->sent_bytes_per_step;
      });
      double other = 0;
      for (size_t i = 0; i < ranks.size(); ++i) {
        if (i >= kTopRanks) {
          other += ranks[i]->sent_bytes_per_step;
          continue;
        }
        f.gauge("burstscope_job_rank_step_bytes", "bytes a host of the job sends per step (top 32 hosts, then other)",
                with(J, {{"host", ranks[i]->host}, {"role", ranks[i]->role}}), ranks[i]->sent_bytes_per_step);
      }
      if (ranks.size() > kTopRanks) {
        f.gauge("burstscope_job_rank_step_bytes", "bytes a host of the job sends per step (top 32 hosts, then other)",
                with(J, {{"host", "other"}, {"role", "other"}}), other);
      }
    }
    if (j.gradient_bytes) {
      f.gauge("burstscope_job_gradient_bytes",
              "model size from transport payload (no headers, no retransmissions): ring: rank payload per step x N / "
              "(2(N-1)); sharded: x N / (3(N-1)); hybrid: the data-parallel groups' ring figures summed",
              J, *j.gradient_bytes);
    }
    if (j.phases.count > 0) {
      f.gauge("burstscope_job_step_phases", "collective phases (burst groups) in the job's typical step", J,
              static_cast<double>(j.phases.count));
      f.gauge("burstscope_job_step_idle_ratio",
              "share of the step outside every phase: compute the network does not hide (a pipeline's bubble too)", J,
              j.phases.idle_share);
    }
    if (!j.topology.pipelines.empty()) {
      f.gauge("burstscope_job_pipelines", "pipelines of a pipeline or hybrid job", J,
              static_cast<double>(j.topology.pipelines.size()));
      f.gauge("burstscope_job_pipeline_stages", "stages per pipeline", J,
              static_cast<double>(j.topology.pipelines[0].size()));
      // Each host's stage (stage 0: where the activations leave first); the job's hosts are bounded as the ranks.
      size_t listed = 0;
      for (const std::vector<std::string>& p : j.topology.pipelines) {
        for (size_t s = 0; s < p.size() && listed < kTopRanks; ++s, ++listed) {
          f.gauge("burstscope_job_rank_stage", "a host's pipeline stage (0: the first), top 32 hosts",
                  with(J, {{"host", p[s]}}), static_cast<double>(s));
        }
      }
    }
    f.gauge("burstscope_job_top_flows_share_ratio", "share of the job's bytes in its 5 heaviest flows", J,
            j.topology.top_flows_share);
    f.gauge("burstscope_job_data_edges", "directed host pairs carrying the job's data (its topology's edges)", J,
            static_cast<double>(j.topology.edges.size()));
  }
  for (const DestinationReport& d : t.destinations) {
    const LabelVec D = with(L, {{"destination", d.host}});
    f.gauge("burstscope_fanin_max_sources",
            "most sources bursting toward the destination within one 100 us bin, in the intervals the last analysis "
            "took in",
            D, static_cast<double>(d.max_sources));
    f.counter("burstscope_fanin_cobursts_total", "100 us bins with two or more sources bursting toward it", D,
              static_cast<double>(d.cobursts));
    f.counter("burstscope_fanin_cross_job_cobursts_total", "co-burst bins whose sources belong to two or more jobs", D,
              static_cast<double>(d.cross_job_cobursts));
    f.gauge("burstscope_fanin_backlog_max_bytes",
            "largest virtual backlog toward the destination at its link rate, in the intervals the last analysis took "
            "in (100 us bins)",
            D, d.max_backlog_bytes);
    f.gauge("burstscope_fanin_link_bytes_per_second", "the destination's link rate assumed for its backlog", D,
            d.link_bps / 8);
    f.counter("burstscope_fanin_backlog_over_buffer_bins_total",
              "100 us bins that ended with the backlog toward the destination above the receiver buffer", D,
              static_cast<double>(d.over_buffer_bins));
    Histogram h({1, 2, 3, 4, 6, 8, 12, 16});
    for (size_t k = 0; k < d.sources_hist.size(); ++k) h.observe(static_cast<double>(k + 1), d.sources_hist[k]);
    f.histogram("burstscope_fanin_bursting_sources", "bursting sources per 100 us bin with any, toward the destination",
                D, h);
  }
}
}  // namespace

namespace {

// Mirror self-checks (docs/mirror.md): copies the mirror made, TCP data it did not show, its own load. Counters
// since the start; direction "all" is the port, as for the evidence.
void addMirror(Families& f, const LabelVec& L, const MirrorReport* m, const EvidenceReport* e) {
  auto n = [](uint64_t v) { return static_cast<double>(v); };
  if (m != nullptr) {
    uint64_t all = 0, all_bytes = 0;
    for (int d = 0; d < kDirectionCount; ++d) {
      all += m->duplicates[d];
      all_bytes += m->duplicate_bytes[d];
    }
    const char* dup = "frames seen a second time within the duplicate horizon: copies made by the mirror";
    const char* dupb = "wire bytes of the frames counted in burstscope_mirror_duplicate_frames_total";
    f.counter("burstscope_mirror_duplicate_frames_total", dup, with(L, {{"direction", "all"}}), n(all));
    f.counter("burstscope_mirror_duplicate_bytes_total", dupb, with(L, {{"direction", "all"}}), n(all_bytes));
    for (int d = 0; d < kDirectionCount; ++d) {
      const LabelVec D = with(L, {{"direction", directionName(static_cast<Direction>(d))}});
      f.counter("burstscope_mirror_duplicate_frames_total", dup, D, n(m->duplicates[d]));
      f.counter("burstscope_mirror_duplicate_bytes_total", dupb, D, n(m->duplicate_bytes[d]));
    }
    f.counter("burstscope_mirror_duplicate_checked_frames_total",
              "frames looked at for copies (IP frames; TCP segments without payload excepted)", L, n(m->checked));
    for (const MirrorLoad& l : m->load) {
      const LabelVec S = with(L, {{"scale", secondsLabel(l.scale_ns)}});
      f.counter("burstscope_mirror_load_windows_total", "aligned windows of the mirror port that ended", S,
                n(l.windows));
      f.counter("burstscope_mirror_overloaded_windows_total",
                "aligned windows whose line load reached the overload threshold of the port's capacity", S,
                n(l.overloaded));
      f.gauge("burstscope_mirror_peak_load_ratio", "highest line load of one window since the start (1 = capacity)", S,
              l.peak);
    }
  }
  if (e != nullptr) {
    std::vector<std::pair<std::string, const EvidenceCounts*>> dirs = {{"all", &e->totals}};
    for (const auto& [d, c] : e->directions) dirs.emplace_back(directionName(d), &c);
    const char* tcp =
        "TCP sequence checks of the mirror, by kind: lost_segment and ack_lost_segment (Wireshark's), "
        "hole_acked_unseen (the mirror lost it), hole_refilled (the network lost it), hole_untracked";
    for (const auto& [dir, c] : dirs) {
      const LabelVec D = with(L, {{"direction", dir}});
      f.counter("burstscope_mirror_tcp_checks_total", tcp, with(D, {{"kind", "lost_segment"}}),
                n(c->tcp_lost_segments));
      f.counter("burstscope_mirror_tcp_checks_total", tcp, with(D, {{"kind", "ack_lost_segment"}}),
                n(c->tcp_ack_lost_segments));
      f.counter("burstscope_mirror_tcp_checks_total", tcp, with(D, {{"kind", "hole_acked_unseen"}}),
                n(c->tcp_holes_acked_unseen));
      f.counter("burstscope_mirror_tcp_checks_total", tcp, with(D, {{"kind", "hole_refilled"}}),
                n(c->tcp_holes_filled));
      f.counter("burstscope_mirror_tcp_checks_total", tcp, with(D, {{"kind", "hole_untracked"}}),
                n(c->tcp_holes_untracked));
      f.counter("burstscope_mirror_lost_bytes_total",
                "TCP payload bytes the receiver acknowledged that the mirror never showed", D,
                n(c->tcp_bytes_acked_unseen));
    }
  }
}

// Congestion evidence (docs/evidence.md): counters since the start, per direction ("all": the port), PFC per
// priority ("all": 802.3x PAUSE), congesting microbursts of the port stream.
// SPEC "Overload": the live queues' complete 100 µs series, and the last interval's figures as bounds.
void addBounds(Families& f, const LabelVec& L, const ExportPortInfo& info, std::array<uint64_t, 4> totals,
               const PortSnapshot& s) {
  f.counter("burstscope_series_packets_total",
            "frames counted into the port's 100 us series before any ring could drop them (every frame taken; on "
            "AF_XDP also those the XDP program counted and the kernel lost before the RX thread)",
            L, static_cast<double>(totals[0]));
  f.counter("burstscope_series_bytes_total",
            "wire bytes of those frames (a lower bound if wrapped frames were lost before the RX thread)", L,
            static_cast<double>(totals[1]));
  f.counter("burstscope_series_lost_packets_total",
            "of those, frames the analysis never saw: dropped at a ring or lost in the kernel after the XDP program "
            "counted them (figures are bounded)",
            L, static_cast<double>(totals[2]));
  f.counter("burstscope_degraded_intervals_total",
            "completed report intervals whose burst figures are bounds: a frame lost after the series lies within "
            "their windows",
            L, static_cast<double>(totals[3]));
  if (!s.bounds) return;
  const IntervalBounds& b = *s.bounds;
  f.gauge("burstscope_interval_degraded", "1 if the last interval's burst figures are bounds, else 0 (exact)", L,
          b.degraded() ? 1 : 0);
  if (!b.degraded()) return;  // the exact figures are burstscope_envelope_bytes and the others
  const LabelVec A = with(L, {{"direction", "all"}});
  for (size_t i = 0; i < info.scales_ns.size() && i < b.envelope_bytes.size(); ++i) {
    const std::string scale = secondsLabel(info.scales_ns[i]);
    const char* help = "bounds of E(scale) in the last interval when it is degraded (lower == upper: exact)";
    f.gauge("burstscope_envelope_bound_bytes", help, with(A, {{"scale", scale}, {"bound", "lower"}}),
            static_cast<double>(b.envelope_bytes[i].first));
    if (b.complete) {
      f.gauge("burstscope_envelope_bound_bytes", help, with(A, {{"scale", scale}, {"bound", "upper"}}),
              static_cast<double>(b.envelope_bytes[i].second));
    }
    const char* ptm_help = "bounds of the peak-to-mean ratio in the last interval when it is degraded";
    if (b.ptm[i].first) {
      f.gauge("burstscope_peak_to_mean_bound_ratio", ptm_help, with(A, {{"scale", scale}, {"bound", "lower"}}),
              *b.ptm[i].first);
    }
    if (b.ptm[i].second) {
      f.gauge("burstscope_peak_to_mean_bound_ratio", ptm_help, with(A, {{"scale", scale}, {"bound", "upper"}}),
              *b.ptm[i].second);
    }
  }
  if (b.microbursts_bounded) {
    const char* help =
        "bounds of the port's microbursts with an instant in the last interval when a lost frame lies within "
        "their scale (docs/reliability.md)";
    f.gauge("burstscope_microbursts_bound", help, with(L, {{"bound", "lower"}}),
            static_cast<double>(b.microbursts.first));
    if (b.complete) {
      f.gauge("burstscope_microbursts_bound", help, with(L, {{"bound", "upper"}}),
              static_cast<double>(b.microbursts.second));
    }
  }
  for (size_t j = 0; j < info.rates_bps.size() && j < b.backlog_bytes.size(); ++j) {
    const std::string rate = absl::StrFormat("%.0f", info.rates_bps[j]);
    const char* help = "bounds of the largest virtual backlog in the last interval when it is degraded";
    f.gauge("burstscope_virtual_backlog_bound_bytes", help, with(A, {{"rate_bps", rate}, {"bound", "lower"}}),
            b.backlog_bytes[j].first);
    if (b.complete) {
      f.gauge("burstscope_virtual_backlog_bound_bytes", help, with(A, {{"rate_bps", rate}, {"bound", "upper"}}),
              b.backlog_bytes[j].second);
    }
  }
}

void addEvidence(Families& f, const LabelVec& L, const EvidenceReport& e) {
  std::vector<std::pair<std::string, const EvidenceCounts*>> dirs = {{"all", &e.totals}};
  for (const auto& [d, c] : e.directions) dirs.emplace_back(directionName(d), &c);
  for (const auto& [dir, c] : dirs) {
    const LabelVec D = with(L, {{"direction", dir}});
    auto n = [](uint64_t v) { return static_cast<double>(v); };
    const char* ecn = "IP packets by ECN codepoint: ect (ECT(0) or ECT(1)) and ce (congestion experienced)";
    f.counter("burstscope_ecn_packets_total", ecn, with(D, {{"codepoint", "ect"}}), n(c->ect));
    f.counter("burstscope_ecn_packets_total", ecn, with(D, {{"codepoint", "ce"}}), n(c->ce));
    const char* flag = "TCP segments with the ECN-echo (ece) or congestion-window-reduced (cwr) flag";
    f.counter("burstscope_tcp_flag_packets_total", flag, with(D, {{"flag", "ece"}}), n(c->tcp_ece));
    f.counter("burstscope_tcp_flag_packets_total", flag, with(D, {{"flag", "cwr"}}), n(c->tcp_cwr));
    f.counter("burstscope_tcp_data_segments_total", "TCP segments with payload", D, n(c->tcp_data_segments));
    f.counter("burstscope_tcp_retransmissions_total",
              "TCP segments sent again (Wireshark's tcp.analysis.retransmission: plain, fast and spurious)", D,
              n(c->tcp_retransmissions));
    f.counter("burstscope_tcp_out_of_order_total", "TCP segments filling a hole late (tcp.analysis.out_of_order)", D,
              n(c->tcp_out_of_order));
    f.counter("burstscope_tcp_untracked_segments_total",
              "TCP data segments of connections beyond the state table, not classified", D,
              n(c->tcp_untracked_segments));
    f.counter("burstscope_roce_packets_total", "RoCEv2 packets (UDP 4791)", D, n(c->roce_packets));
    f.counter("burstscope_roce_cnp_total", "RoCEv2 congestion notification packets (BTH opcode 0x81)", D, n(c->cnp));
    const char* nak = "RoCEv2 NAKs by AETH syndrome: psn_sequence_error, rnr (receiver not ready), other";
    f.counter("burstscope_roce_naks_total", nak, with(D, {{"syndrome", "psn_sequence_error"}}),
              n(c->nak_psn_sequence_error));
    f.counter("burstscope_roce_naks_total", nak, with(D, {{"syndrome", "rnr"}}), n(c->nak_rnr));
    f.counter("burstscope_roce_naks_total", nak, with(D, {{"syndrome", "other"}}), n(c->nak_other));
    f.counter("burstscope_roce_resent_packets_total",
              "RoCEv2 packets whose PSN was not after the highest seen on their queue pair (go-back-N)", D,
              n(c->roce_resent));
    f.counter("burstscope_roce_messages_total", "RoCEv2 messages begun (SEND/WRITE first or only, READ request)", D,
              n(c->roce_messages));
    f.counter("burstscope_roce_message_bytes_total", "payload bytes of RoCEv2 SEND and WRITE packets not resent", D,
              n(c->roce_message_bytes));
  }
  for (int p = 0; p < kPausePriorities; ++p) {
    const PauseCounts& c = e.pause[p];
    if (c.frames == 0) continue;
    const LabelVec P = with(L, {{"priority", p == 8 ? std::string("all") : absl::StrCat(p)}});
    f.counter("burstscope_pfc_frames_total", "PFC frames naming the priority (all: 802.3x PAUSE frames)", P,
              static_cast<double>(c.frames));
    f.counter("burstscope_pfc_pause_quanta_total", "pause quanta asked for the priority (512 bit times each)", P,
              static_cast<double>(c.quanta));
    f.counter("burstscope_pfc_paused_seconds_total",
              "time the priority stood paused at the link's speed (its rate is the paused fraction)", P,
              static_cast<double>(c.paused_ns) * 1e-9);
  }
  // direction="all" as the port stream's own microburst series, so that the two divide and compare directly.
  const LabelVec A = with(L, {{"direction", "all"}});
  f.counter("burstscope_congesting_microbursts_total",
            "port-stream microbursts with congestion evidence toward or from their hosts inside or within tau after", A,
            static_cast<double>(e.congesting));
  f.histogram("burstscope_congesting_microburst_size_bytes", "bytes carried by each congesting microburst", A,
              e.congesting_sizes_bytes);
}

}  // namespace

std::vector<MetricFamily> LiveMetrics::Collect() const {
  std::vector<std::shared_ptr<const PortView>> views;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const PortState& p : ports_) views.push_back(p.view);
  }
  Families f;
  f.gauge("burstscope_build_info", "burstscope version, git revision and capture backend (always 1)",
          with(identity_, {{"version", BURSTSCOPE_VERSION}, {"revision", BURSTSCOPE_REVISION}, {"backend", backend_}}),
          1);
  f.gauge("burstscope_start_time_seconds", "when this burstscope process started, seconds since the epoch", identity_,
          start_time_s_);
  for (size_t port = 0; port < ports_.size(); ++port) {
    const PortState& p = ports_[port];
    const PortView empty;
    const PortView& v = views[port] ? *views[port] : empty;
    const LabelVec& L = p.labels;
    f.gauge("burstscope_link_capacity_bytes_per_second",
            "capacity of the mirrored link (configured link speed), for utilisation and microbursts", L,
            p.info.link_bps / 8);
    if (p.switch_buffer_bytes) {
      f.gauge("burstscope_switch_buffer_bytes", "configured buffer of the mirrored switch port", L,
              *p.switch_buffer_bytes);
    }
    f.counter("burstscope_report_intervals_total", "report intervals completed", L,
              v.last ? static_cast<double>(v.last->intervals) : 0.0);
    if (!v.last) continue;  // nothing measured yet: no per-interval series
    const PortSnapshot& s = *v.last;
    const IntervalReport& r = s.interval;
    f.gauge("burstscope_last_interval_end_timestamp_seconds",
            "end of the last completed report interval, in capture time (seconds since the epoch)", L,
            static_cast<double>(r.end_ns) * 1e-9);
    f.gauge("burstscope_last_interval_close_time_seconds",
            "wall-clock time at which the last report interval was closed (stalls if capture stops)", L,
            v.last_close_s);
    f.gauge("burstscope_report_interval_seconds", "length of a report interval", L,
            static_cast<double>(r.end_ns - r.start_ns) * 1e-9);
    f.gauge("burstscope_baseline_seconds", "trailing time the peak-to-mean baseline covers", L,
            static_cast<double>(r.baseline_ns) * 1e-9);

    std::vector<std::pair<std::string, const IntervalStream*>> streams = {{"all", &r.port}};
    for (const auto& [d, st] : r.directions) streams.emplace_back(directionName(d), &st);
    for (const auto& [dir, st] : streams) {
      const LabelVec D = with(L, {{"direction", dir}});
      const StreamTotals& t = v.totals.at(dir);
      f.counter("burstscope_packets_total", "packets measured (direction all: the whole port)", D,
                static_cast<double>(t.packets));
      f.counter("burstscope_bytes_total", "bytes on the wire measured (Ethernet header, no FCS)", D,
                static_cast<double>(t.bytes));
      f.gauge("burstscope_interval_throughput_bytes_per_second", "mean rate over the last report interval", D,
              st->mean_bps / 8);
      f.gauge("burstscope_baseline_throughput_bytes_per_second",
              "mean rate over the trailing baseline (the peak-to-mean denominator)", D, st->baseline_bps / 8);
      for (size_t i = 0; i < p.info.scales_ns.size() && i < st->envelope_bytes.size(); ++i) {
        const LabelVec S = with(D, {{"scale", secondsLabel(p.info.scales_ns[i])}});
        f.gauge("burstscope_envelope_bytes",
                "E(scale): most bytes in any sliding window of this length during the last interval", S,
                static_cast<double>(st->envelope_bytes[i]));
        f.gauge("burstscope_envelope_exact",
                "1 if E(scale) is packet-exact, 0 if from 100 us bins (at most one bin under)", S,
                st->exact[i] ? 1 : 0);
        if (st->ptm[i]) {
          f.gauge("burstscope_peak_to_mean_ratio",
                  "E(scale) / (baseline rate x scale) for the last interval; absent while the baseline is shorter", S,
                  *st->ptm[i]);
        }
      }
      for (size_t i = 0; i < p.info.rates_bps.size() && i < st->backlog_bytes.size(); ++i) {
        const double rate = p.info.rates_bps[i];
        f.gauge("burstscope_virtual_backlog_max_bytes",
                "largest backlog of a server draining at rate_bps, fed by this traffic, in the last interval",
                with(D, {{"rate_bps", absl::StrFormat("%.0f", rate)}}), st->backlog_bytes[i]);
        if (rate == p.info.link_bps) {
          f.gauge("burstscope_link_backlog_max_bytes",
                  "largest virtual backlog at the link's own speed in the last interval", D, st->backlog_bytes[i]);
        }
      }
      if (auto it = v.over_buffer_intervals.find(dir); it != v.over_buffer_intervals.end()) {
        f.counter("burstscope_link_backlog_over_buffer_intervals_total",
                  "report intervals whose backlog at the link's own speed exceeded the switch buffer", D,
                  static_cast<double>(it->second));
      }
      for (size_t i = 0; i < p.info.scales_ns.size() && i < st->utilisation.size(); ++i) {
        f.histogram("burstscope_window_utilization_ratio",
                    "utilisation (0-1 of link capacity) of each aligned window of length scale",
                    with(D, {{"scale", secondsLabel(p.info.scales_ns[i])}}), st->utilisation[i]);
      }
      f.counter("burstscope_microbursts_total",
                "microbursts: stretches where the 100 us window carries at least the threshold share of capacity", D,
                static_cast<double>(st->microbursts));
      if (st->microburst_durations_s) {
        f.histogram("burstscope_microburst_duration_seconds", "duration of each microburst", D,
                    *st->microburst_durations_s);
        f.histogram("burstscope_microburst_gap_seconds", "time between the end of a microburst and the next", D,
                    *st->microburst_gaps_s);
        f.histogram("burstscope_microburst_size_bytes", "bytes carried by each microburst", D,
                    *st->microburst_volumes_bytes);
      }
    }

    if (v.series) {
      addBounds(f, L, p.info, {v.series_packets, v.series_bytes, v.series_lost, v.degraded_intervals}, s);
    }
    if (r.evidence) addEvidence(f, L, *r.evidence);
    if (r.mirror || r.evidence) addMirror(f, L, r.mirror.get(), r.evidence.get());

    // Accounting (docs/SPEC.md "Accounting"): received = analysed + dropped at the ring; the NIC's own drops before.
    f.counter("burstscope_capture_received_packets_total", "frames taken from the capture device", L,
              static_cast<double>(s.ledger.received));
    f.counter("burstscope_capture_analysed_packets_total", "frames measured by the engine", L,
              static_cast<double>(s.ledger.analysed));
    const char* drop_help = "frames lost before measurement, by the stage that dropped them";
    f.counter("burstscope_capture_dropped_packets_total", drop_help, with(L, {{"stage", "ring_full"}}),
              static_cast<double>(s.ledger.ring_drops));
    // Stages before RX, as the capture source names them (nic_missed, xsk_rx_ring_full, ...).
    for (const auto& [stage, v] : s.device.drop_stages) {
      f.counter("burstscope_capture_dropped_packets_total", drop_help, with(L, {{"stage", stage}}),
                static_cast<double>(v));
    }
    if (s.device.seen) {
      f.counter("burstscope_capture_seen_packets_total",
                "frames that reached the port, counted before any drop stage (AF_XDP: the XDP program's runs and the "
                "NIC's drops before it)",
                L, static_cast<double>(*s.device.seen));
      f.counter("burstscope_capture_filtered_packets_total",
                "frames the configured capture filter left to the kernel (not lost: not asked for)", L,
                static_cast<double>(s.device.filtered));
    }
    if (s.device.received) {
      f.counter("burstscope_device_received_packets_total", "packets the device reports as received", L,
                static_cast<double>(*s.device.received));
    }
    // Capture faults (docs/live-capture.md "Capture faults"): the link as the backend watches it.
    if (const std::optional<LinkState>& l = v.link) {
      f.gauge("burstscope_capture_link_up", "1 while the capture port's link is up with carrier, else 0", L,
              l->up ? 1 : 0);
      f.gauge("burstscope_capture_link_present", "1 while the capture device exists (AF_XDP: an interface by its name)",
              L, l->present ? 1 : 0);
      f.gauge("burstscope_capture_link_since_seconds",
              "Unix time of the link's last change up or down (capture start if none)", L,
              static_cast<double>(l->since_ns) / 1e9);
      f.counter("burstscope_capture_link_downs_total",
                "times the capture port's link went down or the device went away", L, static_cast<double>(l->downs));
      f.counter("burstscope_capture_reattached_total",
                "times capture re-attached to the device (AF_XDP: a re-created interface; DPDK: a device reset)", L,
                static_cast<double>(l->reattached));
      for (size_t q = 0; q < l->queue_stalled.size(); ++q) {
        f.gauge(
            "burstscope_capture_queue_stalled",
            "1 while the RX queue is stalled: frames wait and its RX thread takes none (AF_XDP), or its lcore has not "
            "polled it (DPDK), for a second",
            with(L, {{"queue", std::to_string(q)}}), l->queue_stalled[q] ? 1 : 0);
      }
      f.counter("burstscope_capture_queue_stalls_total", "times an RX queue of the port stalled", L,
                static_cast<double>(l->stalls));
    }
    f.counter("burstscope_capture_late_packets_total",
              "frames older than the reorder horizon allowed, measured at the last released time", L,
              static_cast<double>(s.clamped));
    f.counter("burstscope_capture_reordered_packets_total", "frames put back into timestamp order", L,
              static_cast<double>(s.reordered));
    for (int i = 1; i < kDecodeErrorCount; ++i) {
      f.counter("burstscope_decode_errors_total",
                "frames that did not decode completely, by reason (still measured at their wire length)",
                with(L, {{"reason", decodeErrorName(static_cast<DecodeError>(i))}}),
                static_cast<double>(s.decode.errors[i]));
    }
    f.counter("burstscope_decode_non_ip_packets_total", "frames decoded fully that are not IPv4/IPv6", L,
              static_cast<double>(s.decode.non_ip));
    f.counter("burstscope_decode_encapsulated_packets_total",
              "frames measured as the inner frame of a mirror encapsulation (ERSPAN, GRE, VXLAN)", L,
              static_cast<double>(s.decode.encapsulated));
    f.counter("burstscope_mirror_sequence_gaps_total",
              "packets the mirror session itself lost, from ERSPAN/GRE sequence numbers", L,
              static_cast<double>(s.decode.mirror_seq_gaps));
    f.gauge("burstscope_timestamp_info", "how packets are timestamped (always 1)",
            with(L, {{"source", s.timestamps.source}}), 1);
    f.gauge("burstscope_timestamp_error_bound_seconds", "stated bound on the timestamp error of the source", L,
            s.timestamps.error_bound_ns * 1e-9);
    f.gauge("burstscope_timestamp_max_resync_step_seconds", "largest clock correction at a re-synchronisation", L,
            static_cast<double>(s.timestamps.max_resync_step_ns) * 1e-9);

    // Top-K host pairs and flows; everything else in "other", so that the series sum to the IP total.
    auto heavy = [&](const TopKCounters& c, const HeavyResult& h, bool flow) {
      const char* what = flow ? "flow" : "pair";
      const std::string bytes_name = absl::StrCat("burstscope_", what, "_bytes_total");
      const std::string packets_name = absl::StrCat("burstscope_", what, "_packets_total");
      const char* help_b = flow ? "bytes of the top-K 5-tuple flows (since they entered the top K), and other"
                                : "bytes of the top-K directed host pairs (since they entered the top K), and other";
      const char* help_p = flow ? "packets of the top-K 5-tuple flows, and other"
                                : "packets of the top-K directed host pairs, and other";
      auto keyLabels = [&](const FlowKey* k) {
        if (!k) {
          return flow ? with(L, {{"src", "other"},
                                 {"dst", "other"},
                                 {"src_port", "other"},
                                 {"dst_port", "other"},
                                 {"proto", "other"}})
                      : with(L, {{"src", "other"}, {"dst", "other"}});
        }
        LabelVec l = with(L, {{"src", addressToString(*k, true)}, {"dst", addressToString(*k, false)}});
        if (flow) {
          l = with(l, {{"src_port", absl::StrCat(k->src_port)},
                       {"dst_port", absl::StrCat(k->dst_port)},
                       {"proto", absl::StrCat(k->proto)}});
        }
        return l;
      };
      for (const TopKCounters::Series& sr : c.series()) {
        f.counter(bytes_name, help_b, keyLabels(&sr.key), static_cast<double>(sr.bytes));
        f.counter(packets_name, help_p, keyLabels(&sr.key), static_cast<double>(sr.packets));
      }
      f.counter(bytes_name, help_b, keyLabels(nullptr), static_cast<double>(c.otherBytes()));
      f.counter(packets_name, help_p, keyLabels(nullptr), static_cast<double>(c.otherPackets()));
      f.counter("burstscope_flow_table_evictions_total",
                "entries evicted to keep a table within its configured size (their bytes go to other)",
                with(L, {{"table", flow ? "flows" : "pairs"}}), static_cast<double>(h.evictions));
      f.gauge("burstscope_flow_table_entries", "keys held in the table", with(L, {{"table", flow ? "flows" : "pairs"}}),
              static_cast<double>(h.entries));
    };
    heavy(v.pairs, r.pairs, /*flow=*/false);
    heavy(v.flows, r.flows, /*flow=*/true);
    if (v.training) trainingFamilies(f, L, p.info, v.job_bytes, *v.training);
  }
  return f.take();
}

}  // namespace burstscope
