#include "src/config/run_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "burstscope/status.h"

namespace burstscope {

absl::StatusOr<int64_t> parseDurationNs(const std::string& text) {
  static constexpr std::pair<const char*, double> kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  std::string t(absl::StripAsciiWhitespace(text));
  double factor = 1e9;  // bare number: seconds
  for (const auto& [suffix, f] : kUnits) {
    const std::string_view sv(suffix);
    if (t.size() > sv.size() && t.compare(t.size() - sv.size(), sv.size(), sv) == 0) {
      // "ms" and "us" also end in "s": take the longest matching unit.
      const std::string_view before(t.data(), t.size() - sv.size());
      double v;
      if (absl::SimpleAtod(absl::string_view(before.data(), before.size()), &v)) {
        factor = f;
        t = std::string(before);
        break;
      }
    }
  }
  double v;
  if (!absl::SimpleAtod(t, &v) || !(v >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a duration (e.g. 100us, 1ms, 1s)"));
  }
  // Longer than any interval anyone means, and far inside int64 nanoseconds (found by fuzz/config_fuzz).
  constexpr double kMaxNs = 1e18;  // about 31 years
  if (v * factor > kMaxNs) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is too long a duration (at most 1e9 s)"));
  }
  return std::llround(v * factor);
}

namespace {

// Walks the document, remembering the dotted key path for error messages.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  absl::Status error(const YAML::Node& n, const std::string& key, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ":", n.Mark().line + 1, ": ", key, ": ", what));
  }

  // A message that already names its key.
  absl::Status errorAt(const YAML::Node& n, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ":", n.Mark().line + 1, ": ", what));
  }

  // The map's keys must all be in `allowed`.
  absl::Status checkKeys(const YAML::Node& n, const std::string& path, const std::set<std::string>& allowed) const {
    if (!n.IsMap()) return error(n, path.empty() ? "(top level)" : path, "must be a mapping");
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.Scalar();
      if (!allowed.count(k)) {
        return error(it->first, path.empty() ? k : absl::StrCat(path, ".", k),
                     absl::StrCat("unknown key (expected one of: ", absl::StrJoin(allowed, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status scalar(const YAML::Node& n, const std::string& key, std::string* out) const {
    if (!n.IsScalar()) return error(n, key, "must be a single value");
    *out = n.Scalar();
    return absl::OkStatus();
  }
  template <typename Int>
  absl::Status integer(const YAML::Node& n, const std::string& key, Int* out, int64_t lo, int64_t hi) const {
    int64_t v;
    if (!n.IsScalar() || !absl::SimpleAtoi(n.Scalar(), &v)) return error(n, key, "must be an integer");
    if (v < lo || v > hi) return error(n, key, absl::StrCat(v, " is not in ", lo, "..", hi));
    *out = static_cast<Int>(v);
    return absl::OkStatus();
  }
  absl::Status number(const YAML::Node& n, const std::string& key, double* out, double lo, double hi) const {
    double v;
    if (!n.IsScalar() || !absl::SimpleAtod(n.Scalar(), &v)) return error(n, key, "must be a number");
    if (!(v >= lo && v <= hi)) return error(n, key, absl::StrCat(n.Scalar(), " is not in ", lo, "..", hi));
    *out = v;
    return absl::OkStatus();
  }
  absl::Status boolean(const YAML::Node& n, const std::string& key, bool* out) const {
    const std::string v = n.IsScalar() ? absl::AsciiStrToLower(n.Scalar()) : "";
    if (v == "true" || v == "yes" || v == "on") {
      *out = true;
    } else if (v == "false" || v == "no" || v == "off") {
      *out = false;
    } else {
      return error(n, key, "must be true or false");
    }
    return absl::OkStatus();
  }
  absl::Status duration(const YAML::Node& n, const std::string& key, int64_t* out) const {
    if (!n.IsScalar()) return error(n, key, "must be a duration (e.g. 100us, 1ms, 1s)");
    absl::StatusOr<int64_t> d = parseDurationNs(n.Scalar());
    if (!d.ok()) return error(n, key, std::string(d.status().message()));
    *out = *d;
    return absl::OkStatus();
  }
  absl::Status sequence(const YAML::Node& n, const std::string& key) const {
    return n.IsSequence() ? absl::OkStatus() : error(n, key, "must be a list");
  }

 private:
  std::string origin_;
};

// Suricata-style EAL parameters: option name -> value; `true` for a flag, a list to repeat the option.
absl::Status readEal(const Reader& rd, const YAML::Node& n, std::vector<std::string>* args) {
  if (!n.IsMap()) return rd.error(n, "dpdk.eal-params", "must be a mapping of EAL option to value");
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string name = it->first.Scalar();
    const std::string key = absl::StrCat("dpdk.eal-params.", name);
    const std::string flag = name.size() == 1 ? absl::StrCat("-", name) : absl::StrCat("--", name);
    // A copy: `it->second` lives in a proxy that dies with the expression that made it.
    const YAML::Node value = it->second;
    std::vector<YAML::Node> values;
    if (value.IsSequence()) {
      for (const YAML::Node& v : value) values.push_back(v);
    } else {
      values.push_back(value);
    }
    for (const YAML::Node& v : values) {
      if (!v.IsScalar()) return rd.error(v, key, "must be a value, true, or a list of values");
      const std::string s = v.Scalar();
      if (s == "true") {
        args->push_back(flag);
      } else if (s != "false") {
        args->push_back(flag);
        args->push_back(s);
      }
    }
  }
  return absl::OkStatus();
}

template <typename Enum>
absl::Status readChoice(const Reader& rd, const YAML::Node& n, const std::string& key, const Words<Enum>& choices,
                        Enum* out) {
  std::string v;
  BS_RETURN_IF_ERROR(rd.scalar(n, key, &v));
  if (absl::Status s = pickChoice(v, choices, out); !s.ok()) {
    return rd.error(n, key, std::string(s.message()));
  }
  return absl::OkStatus();
}

absl::Status readDpdk(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(rd.checkKeys(
      n, "dpdk",
      {"eal-params", "ports", "mbufs", "rx-descriptors", "burst", "timestamps", "tsc-resync", "replay-speed"}));
  DpdkConfig& d = c->dpdk;
  if (n["eal-params"]) BS_RETURN_IF_ERROR(readEal(rd, n["eal-params"], &d.eal_args));
  if (n["ports"]) {
    BS_RETURN_IF_ERROR(rd.sequence(n["ports"], "dpdk.ports"));
    d.ports.clear();
    for (size_t i = 0; i < n["ports"].size(); ++i) {
      const YAML::Node p = n["ports"][i];
      const std::string key = absl::StrCat("dpdk.ports[", i, "]");
      BS_RETURN_IF_ERROR(rd.checkKeys(p, key, {"device", "rx-queues", "link-gbps"}));
      DpdkPortConfig pc;
      if (!p["device"]) return rd.error(p, key, "device is required");
      BS_RETURN_IF_ERROR(rd.scalar(p["device"], key + ".device", &pc.device));
      if (p["rx-queues"]) BS_RETURN_IF_ERROR(rd.integer(p["rx-queues"], key + ".rx-queues", &pc.rx_queues, 1, 1024));
      if (p["link-gbps"]) {
        double g;
        BS_RETURN_IF_ERROR(rd.number(p["link-gbps"], key + ".link-gbps", &g, 1e-6, 10000));
        pc.link_bps = g * 1e9;
      }
      d.ports.push_back(pc);
    }
  }
  if (n["mbufs"]) BS_RETURN_IF_ERROR(rd.integer(n["mbufs"], "dpdk.mbufs", &d.mbufs_per_port, 511, 16'777'215));
  if (n["rx-descriptors"])
    BS_RETURN_IF_ERROR(rd.integer(n["rx-descriptors"], "dpdk.rx-descriptors", &d.rx_descriptors, 32, 32768));
  if (n["burst"]) BS_RETURN_IF_ERROR(rd.integer(n["burst"], "dpdk.burst", &d.burst, 1, 512));
  if (n["timestamps"]) {
    BS_RETURN_IF_ERROR(readChoice(rd, n["timestamps"], "dpdk.timestamps", dpdkTimestampWords(), &d.timestamps));
  }
  if (n["tsc-resync"]) {
    int64_t ns;
    BS_RETURN_IF_ERROR(rd.duration(n["tsc-resync"], "dpdk.tsc-resync", &ns));
    if (ns < 1'000'000) return rd.error(n["tsc-resync"], "dpdk.tsc-resync", "must be at least 1ms");
    d.tsc_resync_s = static_cast<double>(ns) * 1e-9;
  }
  if (n["replay-speed"]) BS_RETURN_IF_ERROR(rd.number(n["replay-speed"], "dpdk.replay-speed", &d.replay_speed, 0, 1e6));
  return absl::OkStatus();
}

absl::Status readAfXdp(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(rd.checkKeys(n, "af-xdp",
                                  {"ports", "mode", "zero-copy", "timestamps", "frames", "frame-size", "rx-ring",
                                   "batch", "snaplen", "ip-only", "clock-resync"}));
  AfXdpConfig& a = c->afxdp;
  if (n["ports"]) {
    BS_RETURN_IF_ERROR(rd.sequence(n["ports"], "af-xdp.ports"));
    a.ports.clear();
    for (size_t i = 0; i < n["ports"].size(); ++i) {
      const YAML::Node p = n["ports"][i];
      const std::string key = absl::StrCat("af-xdp.ports[", i, "]");
      BS_RETURN_IF_ERROR(rd.checkKeys(p, key, {"interface", "queues", "link-gbps"}));
      AfXdpPortConfig pc;
      if (!p["interface"]) return rd.error(p, key, "interface is required");
      BS_RETURN_IF_ERROR(rd.scalar(p["interface"], key + ".interface", &pc.interface));
      if (p["queues"]) BS_RETURN_IF_ERROR(rd.integer(p["queues"], key + ".queues", &pc.queues, 0, BS_MAX_QUEUES));
      if (p["link-gbps"]) {
        double g;
        BS_RETURN_IF_ERROR(rd.number(p["link-gbps"], key + ".link-gbps", &g, 1e-6, 10000));
        pc.link_bps = g * 1e9;
      }
      a.ports.push_back(pc);
    }
  }
  if (n["mode"]) {
    BS_RETURN_IF_ERROR(readChoice(rd, n["mode"], "af-xdp.mode", xdpModeWords(), &a.mode));
  }
  if (n["zero-copy"]) {
    BS_RETURN_IF_ERROR(readChoice(rd, n["zero-copy"], "af-xdp.zero-copy", zeroCopyWords(), &a.zero_copy));
  }
  if (n["timestamps"]) {
    BS_RETURN_IF_ERROR(readChoice(rd, n["timestamps"], "af-xdp.timestamps", xdpTimestampWords(), &a.timestamps));
  }
  if (n["frames"]) BS_RETURN_IF_ERROR(rd.integer(n["frames"], "af-xdp.frames", &a.frames, 64, 1 << 20));
  if (n["frame-size"]) BS_RETURN_IF_ERROR(rd.integer(n["frame-size"], "af-xdp.frame-size", &a.frame_size, 2048, 4096));
  if (n["rx-ring"]) BS_RETURN_IF_ERROR(rd.integer(n["rx-ring"], "af-xdp.rx-ring", &a.rx_ring, 64, 1 << 16));
  if (n["batch"]) BS_RETURN_IF_ERROR(rd.integer(n["batch"], "af-xdp.batch", &a.batch, 1, 1024));
  if (n["snaplen"]) BS_RETURN_IF_ERROR(rd.integer(n["snaplen"], "af-xdp.snaplen", &a.snaplen, 64, 4096));
  if (n["ip-only"]) BS_RETURN_IF_ERROR(rd.boolean(n["ip-only"], "af-xdp.ip-only", &a.ip_only));
  if (n["clock-resync"]) {
    int64_t ns;
    BS_RETURN_IF_ERROR(rd.duration(n["clock-resync"], "af-xdp.clock-resync", &ns));
    if (ns < 1'000'000) return rd.error(n["clock-resync"], "af-xdp.clock-resync", "must be at least 1ms");
    a.resync_s = static_cast<double>(ns) * 1e-9;
  }
  return absl::OkStatus();
}

absl::Status readMetrics(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(rd.checkKeys(n, "metrics",
                                  {"scales", "rates-gbps", "microburst", "exact-max", "top-k", "flow-table",
                                   "pair-table", "reorder", "link-gbps", "pairs-and-flows", "workers"}));
  EngineConfig& e = c->live.pipeline.engine;
  if (n["scales"]) {
    BS_RETURN_IF_ERROR(rd.sequence(n["scales"], "metrics.scales"));
    e.scales_ns.clear();
    for (const YAML::Node& s : n["scales"]) {
      int64_t ns;
      BS_RETURN_IF_ERROR(rd.duration(s, "metrics.scales", &ns));
      e.scales_ns.push_back(ns);
    }
    std::sort(e.scales_ns.begin(), e.scales_ns.end());
  }
  if (n["rates-gbps"]) {
    BS_RETURN_IF_ERROR(rd.sequence(n["rates-gbps"], "metrics.rates-gbps"));
    e.rates_bps.clear();
    for (const YAML::Node& r : n["rates-gbps"]) {
      double g;
      BS_RETURN_IF_ERROR(rd.number(r, "metrics.rates-gbps", &g, 1e-6, 10000));
      e.rates_bps.push_back(g * 1e9);
    }
  }
  if (const YAML::Node m = n["microburst"]) {
    BS_RETURN_IF_ERROR(rd.checkKeys(m, "metrics.microburst", {"window", "threshold"}));
    if (m["window"]) BS_RETURN_IF_ERROR(rd.duration(m["window"], "metrics.microburst.window", &e.microburst_tau_ns));
    if (m["threshold"]) {
      BS_RETURN_IF_ERROR(rd.number(m["threshold"], "metrics.microburst.threshold", &e.microburst_threshold, 1e-6, 1));
    }
  }
  if (n["link-gbps"]) {
    double g;
    BS_RETURN_IF_ERROR(rd.number(n["link-gbps"], "metrics.link-gbps", &g, 1e-6, 10000));
    e.link_capacity_bps = g * 1e9;  // every port's, unless it names its own
  }
  if (n["exact-max"]) BS_RETURN_IF_ERROR(rd.duration(n["exact-max"], "metrics.exact-max", &e.exact_max_tau_ns));
  if (n["top-k"]) {
    BS_RETURN_IF_ERROR(rd.integer(n["top-k"], "metrics.top-k", &e.top_k, 1, 1000));
    e.tracked_streams = std::max(e.tracked_streams, 2 * e.top_k);
  }
  if (n["flow-table"])
    BS_RETURN_IF_ERROR(rd.integer(n["flow-table"], "metrics.flow-table", &e.flow_table_capacity, 64, 1LL << 28));
  if (n["pair-table"])
    BS_RETURN_IF_ERROR(rd.integer(n["pair-table"], "metrics.pair-table", &e.pair_table_capacity, 64, 1LL << 26));
  if (n["reorder"])
    BS_RETURN_IF_ERROR(rd.duration(n["reorder"], "metrics.reorder", &c->live.pipeline.reorder_horizon_ns));
  if (n["pairs-and-flows"])
    BS_RETURN_IF_ERROR(rd.boolean(n["pairs-and-flows"], "metrics.pairs-and-flows", &e.pairs_and_flows));
  if (n["workers"])
    BS_RETURN_IF_ERROR(rd.integer(n["workers"], "metrics.workers", &c->live.pipeline.workers_per_port, 1, 3));
  return absl::OkStatus();
}

// evidence: ECN, TCP retransmissions, RoCEv2, PFC; congesting microbursts (docs/evidence.md).
absl::Status readEvidence(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(rd.checkKeys(n, "evidence", {"enabled", "after"}));
  EvidenceConfig& e = c->live.pipeline.evidence;
  if (n["enabled"]) BS_RETURN_IF_ERROR(rd.boolean(n["enabled"], "evidence.enabled", &e.enabled));
  if (n["after"]) BS_RETURN_IF_ERROR(rd.duration(n["after"], "evidence.after", &e.after_ns));
  return absl::OkStatus();
}

// mirror: the mirror self-checks (docs/mirror.md).
absl::Status readMirror(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(rd.checkKeys(n, "mirror", {"enabled", "duplicate-horizon", "overload-threshold"}));
  MirrorConfig& m = c->live.pipeline.mirror;
  if (n["enabled"]) BS_RETURN_IF_ERROR(rd.boolean(n["enabled"], "mirror.enabled", &m.enabled));
  if (n["duplicate-horizon"]) {
    BS_RETURN_IF_ERROR(rd.duration(n["duplicate-horizon"], "mirror.duplicate-horizon", &m.duplicate_horizon_ns));
  }
  if (n["overload-threshold"]) {
    BS_RETURN_IF_ERROR(rd.number(n["overload-threshold"], "mirror.overload-threshold", &m.overload_threshold, 0, 1));
  }
  return absl::OkStatus();
}

// flight-recorder: the last seconds of frames in memory, pcapng files around triggers (docs/flight-recorder.md).
absl::Status readRecorder(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(rd.checkKeys(n, "flight-recorder",
                                  {"enabled", "directory", "memory-bytes", "snap-length", "before", "after",
                                   "min-interval", "max-files", "max-disk-bytes", "triggers"}));
  FlightRecorderConfig& f = c->recorder;
  if (n["enabled"]) BS_RETURN_IF_ERROR(rd.boolean(n["enabled"], "flight-recorder.enabled", &f.enabled));
  if (n["directory"]) BS_RETURN_IF_ERROR(rd.scalar(n["directory"], "flight-recorder.directory", &f.directory));
  if (n["memory-bytes"]) {
    BS_RETURN_IF_ERROR(
        rd.integer(n["memory-bytes"], "flight-recorder.memory-bytes", &f.memory_bytes, 1 << 20, int64_t{1} << 40));
  }
  if (n["snap-length"])
    BS_RETURN_IF_ERROR(rd.integer(n["snap-length"], "flight-recorder.snap-length", &f.snap_length, 64, 65535));
  if (n["before"]) BS_RETURN_IF_ERROR(rd.duration(n["before"], "flight-recorder.before", &f.before_ns));
  if (n["after"]) BS_RETURN_IF_ERROR(rd.duration(n["after"], "flight-recorder.after", &f.after_ns));
  if (n["min-interval"])
    BS_RETURN_IF_ERROR(rd.duration(n["min-interval"], "flight-recorder.min-interval", &f.min_interval_ns));
  if (n["max-files"])
    BS_RETURN_IF_ERROR(rd.integer(n["max-files"], "flight-recorder.max-files", &f.max_files, 1, 1'000'000));
  if (n["max-disk-bytes"]) {
    BS_RETURN_IF_ERROR(rd.integer(n["max-disk-bytes"], "flight-recorder.max-disk-bytes", &f.max_disk_bytes, 1 << 20,
                                  int64_t{1} << 50));
  }
  if (const YAML::Node t = n["triggers"]) {
    BS_RETURN_IF_ERROR(
        rd.checkKeys(t, "flight-recorder.triggers", {"microburst-bytes", "backlog-bytes", "fanin-sources"}));
    if (t["fanin-sources"]) {
      BS_RETURN_IF_ERROR(
          rd.integer(t["fanin-sources"], "flight-recorder.triggers.fanin-sources", &f.fanin_sources, 0, 1'000'000));
    }
    if (t["microburst-bytes"]) {
      BS_RETURN_IF_ERROR(rd.integer(t["microburst-bytes"], "flight-recorder.triggers.microburst-bytes",
                                    &f.microburst_bytes, 0, int64_t{1} << 50));
    }
    if (t["backlog-bytes"]) {
      BS_RETURN_IF_ERROR(rd.integer(t["backlog-bytes"], "flight-recorder.triggers.backlog-bytes", &f.backlog_bytes, 0,
                                    int64_t{1} << 50));
    }
  }
  if (f.before_ns > 60'000'000'000) return rd.error(n["before"], "flight-recorder.before", "must be at most 60s");
  if (f.after_ns > 60'000'000'000) return rd.error(n["after"], "flight-recorder.after", "must be at most 60s");
  return absl::OkStatus();
}

// training: jobs, periods, topology, co-bursts (docs/training.md).
absl::Status readTraining(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(
      rd.checkKeys(n, "training",
                   {"enabled", "window", "max-jobs", "jobs", "job-edge-share", "min-period", "max-period",
                    "coburst-share", "host-link-gbps", "receiver-buffer-bytes", "top-destinations", "max-flows",
                    "min-period-quality", "data-edge-share", "coburst-gbps", "analysis-budget"}));
  TrainingConfig& t = c->live.pipeline.training;
  if (n["enabled"]) BS_RETURN_IF_ERROR(rd.boolean(n["enabled"], "training.enabled", &t.enabled));
  if (n["window"]) BS_RETURN_IF_ERROR(rd.duration(n["window"], "training.window", &t.window_ns));
  if (n["max-jobs"]) BS_RETURN_IF_ERROR(rd.integer(n["max-jobs"], "training.max-jobs", &t.max_jobs, 1, 1000));
  if (n["analysis-budget"]) {
    BS_RETURN_IF_ERROR(rd.number(n["analysis-budget"], "training.analysis-budget", &t.analysis_budget, 0.01, 1));
  }
  if (n["max-flows"]) BS_RETURN_IF_ERROR(rd.integer(n["max-flows"], "training.max-flows", &t.max_flows, 16, 1LL << 22));
  if (n["top-destinations"]) {
    BS_RETURN_IF_ERROR(rd.integer(n["top-destinations"], "training.top-destinations", &t.top_destinations, 1, 1000));
  }
  if (n["job-edge-share"]) {
    BS_RETURN_IF_ERROR(rd.number(n["job-edge-share"], "training.job-edge-share", &t.job_edge_share, 0, 1));
  }
  if (n["coburst-share"]) {
    BS_RETURN_IF_ERROR(rd.number(n["coburst-share"], "training.coburst-share", &t.coburst_share, 1e-6, 10));
  }
  if (n["min-period-quality"]) {
    BS_RETURN_IF_ERROR(
        rd.number(n["min-period-quality"], "training.min-period-quality", &t.min_period_quality, 0.01, 0.99));
  }
  if (n["data-edge-share"]) {
    BS_RETURN_IF_ERROR(rd.number(n["data-edge-share"], "training.data-edge-share", &t.data_edge_share, 0.001, 1));
  }
  if (n["coburst-gbps"]) {
    double g;
    BS_RETURN_IF_ERROR(rd.number(n["coburst-gbps"], "training.coburst-gbps", &g, 1e-6, 10000));
    t.coburst_bps = g * 1e9;
  }
  int64_t ns = 0;
  if (n["min-period"]) {
    BS_RETURN_IF_ERROR(rd.duration(n["min-period"], "training.min-period", &ns));
    t.min_period_s = static_cast<double>(ns) * 1e-9;
  }
  if (n["max-period"]) {
    BS_RETURN_IF_ERROR(rd.duration(n["max-period"], "training.max-period", &ns));
    t.max_period_s = static_cast<double>(ns) * 1e-9;
  }
  if (n["receiver-buffer-bytes"]) {
    BS_RETURN_IF_ERROR(
        rd.number(n["receiver-buffer-bytes"], "training.receiver-buffer-bytes", &t.receiver_buffer_bytes, 1, 1e12));
  }
  if (n["host-link-gbps"]) {  // prefix: Gbit/s, first match
    if (!n["host-link-gbps"].IsMap()) return rd.error(n["host-link-gbps"], "training.host-link-gbps", "must be a map");
    for (const auto& kv : n["host-link-gbps"]) {
      const std::string key = "training.host-link-gbps." + kv.first.as<std::string>();
      auto cidr = parseCidr(kv.first.as<std::string>());
      if (!cidr.ok()) return rd.error(kv.first, key, std::string(cidr.status().message()));
      double g;
      BS_RETURN_IF_ERROR(rd.number(kv.second, key, &g, 1e-6, 10000));
      t.host_links.push_back({*cidr, g * 1e9});
    }
  }
  if (n["jobs"]) {  // name: [prefix, ...]
    if (!n["jobs"].IsMap()) return rd.error(n["jobs"], "training.jobs", "must map job names to lists of prefixes");
    for (const auto& kv : n["jobs"]) {
      const std::string name = kv.first.as<std::string>();
      const std::string key = "training.jobs." + name;
      BS_RETURN_IF_ERROR(rd.sequence(kv.second, key));
      JobSpec j;
      j.name = name;
      for (const YAML::Node& h : kv.second) {
        std::string text;
        BS_RETURN_IF_ERROR(rd.scalar(h, key, &text));
        auto cidr = parseCidr(text);
        if (!cidr.ok()) return rd.error(h, key, std::string(cidr.status().message()));
        j.hosts.push_back(*cidr);
      }
      if (j.hosts.empty()) return rd.error(kv.second, key, "needs at least one prefix");
      t.jobs.push_back(std::move(j));
    }
  }
  if (absl::Status s = validateTrainingConfig(t); !s.ok()) return rd.error(n, "training", std::string(s.message()));
  return absl::OkStatus();
}

absl::Status readDecoder(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(rd.checkKeys(n, "decoder", {"local-nets", "mirror-vlan-tags", "vxlan-port"}));
  DecoderConfig& d = c->dpdk.decoder;
  if (n["local-nets"]) {
    BS_RETURN_IF_ERROR(rd.sequence(n["local-nets"], "decoder.local-nets"));
    for (const YAML::Node& p : n["local-nets"]) {
      IpPrefix prefix;
      if (!p.IsScalar() || !parsePrefix(p.Scalar(), &prefix)) {
        return rd.error(p, "decoder.local-nets", absl::StrCat("'", p.Scalar(), "' is not an address prefix"));
      }
      d.local_nets.push_back(prefix);
    }
  }
  if (n["mirror-vlan-tags"]) {
    BS_RETURN_IF_ERROR(
        rd.integer(n["mirror-vlan-tags"], "decoder.mirror-vlan-tags", &d.mirror_vlan_tags, 0, Decoder::kMaxVlanTags));
  }
  if (n["vxlan-port"]) BS_RETURN_IF_ERROR(rd.integer(n["vxlan-port"], "decoder.vxlan-port", &d.vxlan_port, 1, 65535));
  return absl::OkStatus();
}

absl::Status readLabels(const Reader& rd, const YAML::Node& n, const std::string& key, Labels* out) {
  if (!n.IsMap()) return rd.error(n, key, "must be a mapping of label name to value");
  for (auto it = n.begin(); it != n.end(); ++it) {
    const YAML::Node v = it->second;  // a copy, out of the iterator's proxy
    if (!v.IsScalar()) return rd.error(v, absl::StrCat(key, ".", it->first.Scalar()), "must be a single value");
    out->emplace_back(it->first.Scalar(), v.Scalar());
  }
  return absl::OkStatus();
}

absl::Status readExport(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(rd.checkKeys(n, "export",
                                  {"listen", "sensor", "labels", "top-k", "switch-buffer-bytes", "basic-auth",
                                   "web-config", "http", "ports", "live"}));
  ExportConfig& x = c->exporter;
  if (n["listen"]) BS_RETURN_IF_ERROR(rd.scalar(n["listen"], "export.listen", &x.listen));
  if (x.listen == "none") x.listen.clear();
  if (n["sensor"]) BS_RETURN_IF_ERROR(rd.scalar(n["sensor"], "export.sensor", &x.sensor));
  if (n["labels"]) BS_RETURN_IF_ERROR(readLabels(rd, n["labels"], "export.labels", &x.labels));
  if (n["top-k"]) BS_RETURN_IF_ERROR(rd.integer(n["top-k"], "export.top-k", &x.top_k, 1, 100));
  if (n["switch-buffer-bytes"]) {
    double b;
    BS_RETURN_IF_ERROR(rd.number(n["switch-buffer-bytes"], "export.switch-buffer-bytes", &b, 1, 1e12));
    x.switch_buffer_bytes = b;
  }
  if (const YAML::Node a = n["basic-auth"]) {
    BS_RETURN_IF_ERROR(rd.checkKeys(a, "export.basic-auth", {"username", "password-hash"}));
    if (a["username"]) BS_RETURN_IF_ERROR(rd.scalar(a["username"], "export.basic-auth.username", &x.basic_auth_user));
    if (a["password-hash"]) {
      BS_RETURN_IF_ERROR(rd.scalar(a["password-hash"], "export.basic-auth.password-hash", &x.basic_auth_hash));
    }
  }
  if (n["web-config"]) BS_RETURN_IF_ERROR(rd.scalar(n["web-config"], "export.web-config", &x.web_config_file));
  if (const YAML::Node h = n["http"]) {
    BS_RETURN_IF_ERROR(rd.checkKeys(h, "export.http", {"threads", "read-timeout", "idle-timeout", "max-connections"}));
    HttpServerConfig& hc = x.http;
    if (h["threads"]) BS_RETURN_IF_ERROR(rd.integer(h["threads"], "export.http.threads", &hc.threads, 1, 64));
    if (h["max-connections"]) {
      BS_RETURN_IF_ERROR(
          rd.integer(h["max-connections"], "export.http.max-connections", &hc.max_connections, 1, 100000));
    }
    if (h["read-timeout"])
      BS_RETURN_IF_ERROR(rd.duration(h["read-timeout"], "export.http.read-timeout", &hc.read_timeout_ns));
    if (h["idle-timeout"])
      BS_RETURN_IF_ERROR(rd.duration(h["idle-timeout"], "export.http.idle-timeout", &hc.idle_timeout_ns));
  }
  if (const YAML::Node l = n["live"]) {
    BS_RETURN_IF_ERROR(rd.checkKeys(l, "export.live", {"enabled", "window", "update"}));
    LiveViewConfig& lc = x.live;
    if (l["enabled"]) BS_RETURN_IF_ERROR(rd.boolean(l["enabled"], "export.live.enabled", &lc.enabled));
    if (l["window"]) BS_RETURN_IF_ERROR(rd.duration(l["window"], "export.live.window", &lc.window_ns));
    if (l["update"]) BS_RETURN_IF_ERROR(rd.duration(l["update"], "export.live.update", &lc.update_ns));
    if (lc.window_ns < 100'000'000 || lc.window_ns > 60'000'000'000) {
      return rd.error(l["window"], "export.live.window", "must be between 100ms and 60s");
    }
    if (lc.update_ns < 20'000'000 || lc.update_ns > 10'000'000'000) {
      return rd.error(l["update"], "export.live.update", "must be between 20ms and 10s");
    }
  }
  if (const YAML::Node ports = n["ports"]) {
    if (!ports.IsMap()) return rd.error(ports, "export.ports", "must be a mapping of port name to settings");
    for (auto it = ports.begin(); it != ports.end(); ++it) {
      const std::string name = it->first.Scalar();
      const std::string key = absl::StrCat("export.ports.", name);
      const YAML::Node p = it->second;
      BS_RETURN_IF_ERROR(rd.checkKeys(p, key, {"switch-buffer-bytes", "labels"}));
      ExportPortConfig& pc = x.ports[name];
      if (p["switch-buffer-bytes"]) {
        double b;
        BS_RETURN_IF_ERROR(rd.number(p["switch-buffer-bytes"], key + ".switch-buffer-bytes", &b, 1, 1e12));
        pc.switch_buffer_bytes = b;
      }
      if (p["labels"]) BS_RETURN_IF_ERROR(readLabels(rd, p["labels"], key + ".labels", &pc.labels));
    }
  }
  if (absl::Status s = validateExportConfig(x); !s.ok()) return rd.errorAt(n, s.message());
  return absl::OkStatus();
}

absl::Status readReport(const Reader& rd, const YAML::Node& n, RunConfig* c) {
  BS_RETURN_IF_ERROR(rd.checkKeys(n, "report", {"interval", "baseline", "quiet", "idle-exit", "duration"}));
  if (n["interval"])
    BS_RETURN_IF_ERROR(rd.duration(n["interval"], "report.interval", &c->live.pipeline.engine.report_interval_ns));
  if (n["baseline"])
    BS_RETURN_IF_ERROR(rd.duration(n["baseline"], "report.baseline", &c->live.pipeline.engine.baseline_ns));
  if (n["quiet"]) BS_RETURN_IF_ERROR(rd.boolean(n["quiet"], "report.quiet", &c->live.quiet));
  int64_t ns;
  if (n["idle-exit"]) {
    BS_RETURN_IF_ERROR(rd.duration(n["idle-exit"], "report.idle-exit", &ns));
    c->live.pipeline.idle_exit_s = static_cast<double>(ns) * 1e-9;
  }
  if (n["duration"]) {
    BS_RETURN_IF_ERROR(rd.duration(n["duration"], "report.duration", &ns));
    c->live.pipeline.duration_s = static_cast<double>(ns) * 1e-9;
  }
  return absl::OkStatus();
}

}  // namespace

const Words<CaptureKind>& captureWords() {
  static const Words<CaptureKind> w = {{"dpdk", CaptureKind::kDpdk}, {"af_xdp", CaptureKind::kAfXdp}};
  return w;
}
const Words<TimestampMode>& dpdkTimestampWords() {
  static const Words<TimestampMode> w = {
      {"auto", TimestampMode::kAuto}, {"nic", TimestampMode::kNic}, {"tsc", TimestampMode::kTsc}};
  return w;
}
const Words<XdpMode>& xdpModeWords() {
  static const Words<XdpMode> w = {{"auto", XdpMode::kAuto}, {"native", XdpMode::kNative}, {"skb", XdpMode::kSkb}};
  return w;
}
const Words<ZeroCopy>& zeroCopyWords() {
  static const Words<ZeroCopy> w = {{"auto", ZeroCopy::kAuto},
                                    {"on", ZeroCopy::kOn},
                                    {"off", ZeroCopy::kOff},
                                    {"true", ZeroCopy::kOn},
                                    {"false", ZeroCopy::kOff}};
  return w;
}
const Words<XdpTimestamps>& xdpTimestampWords() {
  static const Words<XdpTimestamps> w = {
      {"auto", XdpTimestamps::kAuto}, {"kernel", XdpTimestamps::kKernel}, {"nic", XdpTimestamps::kNic}};
  return w;
}
const char* captureName(CaptureKind k) { return k == CaptureKind::kAfXdp ? "af_xdp" : "dpdk"; }

RunConfig defaultRunConfig() {
  RunConfig c;
  c.live.pipeline.engine.report_interval_ns = 1'000'000'000;
  c.live.pipeline.engine.rates_bps.clear();  // the link speed of each port unless configured
  return c;
}

void resolvePortLinks(RunConfig* c) {
  // The fan-in receiver buffer (training) defaults to the switch port's buffer, from the file or the flag.
  TrainingConfig& t = c->live.pipeline.training;
  if (t.receiver_buffer_bytes == 0 && c->exporter.switch_buffer_bytes) {
    t.receiver_buffer_bytes = *c->exporter.switch_buffer_bytes;
  }
  const double link = c->live.pipeline.engine.link_capacity_bps;
  for (DpdkPortConfig& p : c->dpdk.ports) p.link_bps = p.link_bps > 0 ? p.link_bps : link;
  for (AfXdpPortConfig& p : c->afxdp.ports) p.link_bps = p.link_bps > 0 ? p.link_bps : link;
}

absl::StatusOr<RunConfig> parseRunConfig(const std::string& yaml, const std::string& origin) {
  RunConfig c = defaultRunConfig();
  Reader rd(origin);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ":", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  if (root.IsNull()) return c;  // an empty file: all defaults
  BS_RETURN_IF_ERROR(rd.checkKeys(root, "",
                                  {"capture", "dpdk", "af-xdp", "metrics", "decoder", "report", "ring-size", "export",
                                   "training", "evidence", "mirror", "flight-recorder"}));
  if (root["capture"]) BS_RETURN_IF_ERROR(readChoice(rd, root["capture"], "capture", captureWords(), &c.capture));
  if (root["dpdk"]) BS_RETURN_IF_ERROR(readDpdk(rd, root["dpdk"], &c));
  if (root["af-xdp"]) BS_RETURN_IF_ERROR(readAfXdp(rd, root["af-xdp"], &c));
  if (root["metrics"]) BS_RETURN_IF_ERROR(readMetrics(rd, root["metrics"], &c));
  if (root["decoder"]) BS_RETURN_IF_ERROR(readDecoder(rd, root["decoder"], &c));
  if (root["report"]) BS_RETURN_IF_ERROR(readReport(rd, root["report"], &c));
  if (root["export"]) BS_RETURN_IF_ERROR(readExport(rd, root["export"], &c));
  if (root["training"]) BS_RETURN_IF_ERROR(readTraining(rd, root["training"], &c));
  if (root["evidence"]) BS_RETURN_IF_ERROR(readEvidence(rd, root["evidence"], &c));
  if (root["mirror"]) BS_RETURN_IF_ERROR(readMirror(rd, root["mirror"], &c));
  if (root["flight-recorder"]) BS_RETURN_IF_ERROR(readRecorder(rd, root["flight-recorder"], &c));
  // The decoder hashes each frame's header for the duplicate check only when the check runs (~9 ns a frame).
  c.dpdk.decoder.duplicate_keys = c.live.pipeline.mirror.enabled;
  // The fan-in alert's receiver buffer defaults to the switch port's.
  TrainingConfig& t = c.live.pipeline.training;
  if (t.receiver_buffer_bytes == 0 && c.exporter.switch_buffer_bytes)
    t.receiver_buffer_bytes = *c.exporter.switch_buffer_bytes;
  if (root["ring-size"])
    BS_RETURN_IF_ERROR(rd.integer(root["ring-size"], "ring-size", &c.dpdk.ring_capacity, 1024, 1LL << 26));
  return c;
}

std::vector<std::pair<std::string, double>> capturePorts(const RunConfig& c) {
  std::vector<std::pair<std::string, double>> out;
  if (c.capture == CaptureKind::kAfXdp) {
    for (const AfXdpPortConfig& p : c.afxdp.ports) out.emplace_back(p.interface, p.link_bps);
  } else {
    for (const DpdkPortConfig& p : c.dpdk.ports) out.emplace_back(p.device, p.link_bps);
  }
  return out;
}

absl::StatusOr<RunConfig> loadRunConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("config ", path, ": cannot be read"));
  std::stringstream ss;
  ss << in.rdbuf();
  return parseRunConfig(ss.str(), path);
}

}  // namespace burstscope
