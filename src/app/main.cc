// burstscope command line. Flags live only here; modules take plain config structs.
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "burstscope/capture.h"
#include "burstscope/status.h"
#include "src/analysis/report.h"
#include "src/compare/compare.h"
#include "src/config/run_config.h"
#include "src/export/http_server.h"
#include "src/export/metrics.h"
#include "src/export/revision.h"
#include "src/live/live_view.h"
#include "src/pipeline/pipeline.h"
#include "src/privileges/privileges.h"
#include "src/recorder/flight_recorder.h"
#include "src/studies/render.h"
#include "src/studies/studies.h"
#include "src/studies/whatif.h"

#ifndef BURSTSCOPE_VERSION
#define BURSTSCOPE_VERSION "dev"
#endif

namespace burstscope {
namespace {

std::atomic<bool> g_stop{false};

// The one error line ("burstscope: ..."), then the exit code.
int fail(const absl::Status& s, int exit_code) {
  std::cerr << "burstscope: " << s.message() << "\n";
  return exit_code;
}
void onSignal(int) { g_stop.store(true); }
// SIGHUP: the metrics endpoint re-reads its web configuration file (TLS certificates, users); the rest of the
// configuration takes effect on restart.
void onHangup(int) { MetricsServer::requestReload(); }
// SIGUSR2: a flight recorder file now (docs/flight-recorder.md).
// Installed for every run, so that SIGUSR2 to a sensor without the recorder is ignored rather than fatal.
std::atomic<FlightRecorder*> g_recorder{nullptr};
void onFlightSignal(int) {
  if (FlightRecorder* r = g_recorder.load()) r->requestFromSignal();
}
// Clears g_recorder on every way out of the run, before the recorder it points to goes.
struct RecorderSignalGuard {
  ~RecorderSignalGuard() { g_recorder.store(nullptr); }
};

// "100,1000,5000" with a unit factor; names the flag in the error.
absl::StatusOr<std::vector<double>> parseList(const std::string& flag, const std::string& text) {
  std::vector<double> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    double v;
    if (!absl::SimpleAtod(part, &v)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": '", part, "' is not a number"));
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": empty list"));
  return out;
}

// "100,1000,5000" from nanoseconds (or bit/s) with a unit divisor; whole numbers without an exponent.
template <typename T>
std::string joinList(const std::vector<T>& v, double unit) {
  return absl::StrJoin(v, ",", [unit](std::string* out, T x) {
    const double d = static_cast<double>(x) / unit;
    if (d == std::floor(d) && std::fabs(d) < 1e15)
      absl::StrAppend(out, static_cast<int64_t>(d));
    else
      absl::StrAppend(out, d);
  });
}
// "1s", "60s", "250ms": the shortest exact way to write a duration.
std::string durationText(int64_t ns) {
  if (ns % 1'000'000'000 == 0) return absl::StrCat(ns / 1'000'000'000, "s");
  if (ns % 1'000'000 == 0) return absl::StrCat(ns / 1'000'000, "ms");
  if (ns % 1'000 == 0) return absl::StrCat(ns / 1'000, "us");
  return absl::StrCat(ns, "ns");
}

// The metric and decoder flags shared by `analyze` and `run`. For `run` they override the config file, so
// only the flags actually given are applied. Their defaults are the modules' own (EngineConfig,
// PipelineConfig, DecoderConfig): one home for every default.
struct MetricFlags {
  explicit MetricFlags(const EngineConfig& d) : defaults(d) {}
  EngineConfig defaults;
  std::string scales_us = joinList(defaults.scales_ns, 1e3);
  std::string rates_gbps = joinList(defaults.rates_bps, 1e9);
  double link_gbps = defaults.link_capacity_bps / 1e9;
  double microburst_us = static_cast<double>(defaults.microburst_tau_ns) / 1e3;
  double microburst_threshold = defaults.microburst_threshold;
  size_t top_k = defaults.top_k;
  std::vector<std::string> local_nets;
  int mirror_vlan_tags = DecoderConfig{}.mirror_vlan_tags;
  double reorder_us = static_cast<double>(PipelineConfig{}.reorder_horizon_ns) / 1e3;
  double exact_max_us = -1;
  size_t flow_table = defaults.flow_table_capacity;
  bool no_pairs_flows = false;
  size_t workers = PipelineConfig{}.workers_per_port;
  CLI::App* app = nullptr;

  void add(CLI::App* a, bool live) {
    app = a;
    a->add_option("--scales-us", scales_us, "window lengths tau in microseconds")->capture_default_str();
    a->add_option("--rates-gbps", rates_gbps,
                  live ? "virtual backlog drain rates in Gbit/s (default: each port's link speed)"
                       : "virtual backlog drain rates in Gbit/s")
        ->capture_default_str();
    a->add_option("--link-gbps", link_gbps, "capacity of the mirrored link (utilisation, microbursts)")
        ->capture_default_str();
    a->add_option("--microburst-us", microburst_us, "microburst window tau")->capture_default_str();
    a->add_option("--microburst-threshold", microburst_threshold, "fraction of link capacity")->capture_default_str();
    a->add_option("--top-k", top_k, "host pairs and flows to report")->capture_default_str();
    a->add_option("--local-net", local_nets, "prefix of monitored hosts, for direction (repeatable)");
    a->add_option("--mirror-vlan-tags", mirror_vlan_tags,
                  "outermost VLAN tags added by the mirror (RSPAN/QinQ), not counted")
        ->capture_default_str();
    a->add_option("--reorder-us", reorder_us, "timestamp reorder horizon")->capture_default_str();
    a->add_option("--exact-max-us", exact_max_us,
                  live ? "largest tau computed packet-exactly on port/direction streams (default 10000)"
                       : "largest tau computed packet-exactly on port/direction streams (default: all)");
    a->add_option("--flow-table", flow_table, "flow table capacity (entries)")->capture_default_str();
    a->add_flag("--no-pairs-flows", no_pairs_flows,
                "port and direction streams only: no host-pair or flow tables (the cheapest per packet)");
    a->add_option("--workers", workers,
                  "worker threads per port, 1-3: the analysis split over them, the same results (docs/workers.md)")
        ->capture_default_str();
  }
  bool given(const char* flag) const { return app->get_option(flag)->count() > 0; }

  // Applies the flags (all of them, or with only_given just those on the command line).
  absl::Status apply(EngineConfig& ec, DecoderConfig& dc, int64_t* reorder_ns, size_t* workers_per_port,
                     bool only_given) const {
    auto use = [&](const char* flag) { return !only_given || given(flag); };
    if (use("--no-pairs-flows")) ec.pairs_and_flows = !no_pairs_flows;
    if (use("--workers")) *workers_per_port = workers;
    if (use("--scales-us")) {
      BS_ASSIGN_OR_RETURN(std::vector<double> scales, parseList("--scales-us", scales_us));
      ec.scales_ns.clear();
      for (double v : scales) ec.scales_ns.push_back(std::llround(v * 1000));
      std::sort(ec.scales_ns.begin(), ec.scales_ns.end());
      ec.scales_ns.erase(std::unique(ec.scales_ns.begin(), ec.scales_ns.end()), ec.scales_ns.end());
    }
    if (use("--rates-gbps")) {
      BS_ASSIGN_OR_RETURN(std::vector<double> rates, parseList("--rates-gbps", rates_gbps));
      ec.rates_bps.clear();
      for (double r : rates) ec.rates_bps.push_back(r * 1e9);
    }
    if (use("--link-gbps")) ec.link_capacity_bps = link_gbps * 1e9;
    if (use("--microburst-us")) ec.microburst_tau_ns = std::llround(microburst_us * 1000);
    if (use("--microburst-threshold")) ec.microburst_threshold = microburst_threshold;
    if (use("--top-k")) {
      ec.top_k = top_k;
      ec.tracked_streams = std::max(ec.tracked_streams, 2 * top_k);
    }
    if (use("--flow-table")) ec.flow_table_capacity = flow_table;
    if (use("--exact-max-us")) {
      ec.exact_max_tau_ns = exact_max_us < 0 ? ec.scales_ns.back() : static_cast<int64_t>(exact_max_us * 1000);
    }
    if (use("--reorder-us")) {
      *reorder_ns = static_cast<int64_t>(reorder_us * 1000);
      if (*reorder_ns < 0) return absl::InvalidArgumentError("--reorder-us: must not be negative");
    }
    if (use("--mirror-vlan-tags")) {
      if (mirror_vlan_tags < 0 || mirror_vlan_tags > Decoder::kMaxVlanTags) {
        return absl::InvalidArgumentError("--mirror-vlan-tags: must be between 0 and 8");
      }
      dc.mirror_vlan_tags = mirror_vlan_tags;
    }
    for (const std::string& n : local_nets) {
      IpPrefix p;
      if (!parsePrefix(n, &p)) {
        return absl::InvalidArgumentError(absl::StrCat("--local-net: '", n, "' is not an address prefix"));
      }
      dc.local_nets.push_back(p);
    }
    return absl::OkStatus();
  }
};

// Called before any thread is started. bench/training_bench.cc sets the same.
void keepFreedMemory() {
  // Blocks below 256 MB from the heap, not from fresh mappings; the heap's free top kept below 1 GB.
  // NOLINTBEGIN(concurrency-mt-unsafe): one thread yet
  // Older glibc takes at most 32 MB here; a refused setting would leave the threshold fixed at 128 KB once the
  // trim threshold is set, the opposite of the intent.
  if (mallopt(M_MMAP_THRESHOLD, 256 << 20) == 0 && mallopt(M_MMAP_THRESHOLD, 32 << 20) == 0) return;
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // NOLINTEND(concurrency-mt-unsafe)
}

struct AnalyzeOptions {
  std::vector<std::string> files;
  bool json = false;
  std::string dedup_window;    // empty: off
  std::string evidence_after;  // empty: the default
  bool no_training = false;
  std::string mirror_duplicate_horizon;  // empty: the default
  MetricFlags metrics{EngineConfig{}};
};

// The pipeline, decoder and file-reading configuration of `analyze`, which `report` runs as its first pass.
// Every error is a usage error (exit 2).
absl::Status analysisConfig(const AnalyzeOptions& o, PipelineConfig* pc, DecoderConfig* dc, FileReadOptions* read) {
  pc->training.pair_periods = true;  // offline: a period per heavy host pair too
  pc->training.enabled = !o.no_training;
  BS_RETURN_IF_ERROR(
      o.metrics.apply(pc->engine, *dc, &pc->reorder_horizon_ns, &pc->workers_per_port, /*only_given=*/false));
  if (absl::Status s = validateConfig(pc->engine); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid configuration: ", s.message()));
  }
  if (!o.dedup_window.empty()) {
    auto ns = parseDurationNs(o.dedup_window);
    if (!ns.ok() || *ns <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--dedup-window: ", ns.ok() ? "must be above 0 (leave it out for no suppression)"
                                                   : std::string(ns.status().message())));
    }
    read->dedup_window_ns = *ns;
  }
  if (!o.evidence_after.empty()) {
    auto ns = parseDurationNs(o.evidence_after);
    if (!ns.ok()) return absl::InvalidArgumentError(absl::StrCat("--evidence-after: ", ns.status().message()));
    pc->evidence.after_ns = *ns;
  }
  if (!o.mirror_duplicate_horizon.empty()) {
    auto ns = parseDurationNs(o.mirror_duplicate_horizon);
    if (!ns.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--mirror-duplicate-horizon: ", ns.status().message()));
    }
    pc->mirror.duplicate_horizon_ns = *ns;
  }
  // Every file stays open while they are merged: hundreds of rotated files need more descriptors than the
  // usual soft limit of 1024 allows; take the hard limit.
  if (rlimit lim{}; getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &lim);
  }
  return absl::OkStatus();
}

// What analyze makes of some files: the result and how to render it (one code path for analyze and compare).
struct Analysis {
  RunResult result;
  PipelineConfig config;
};

// Runs the analysis of `files` with o's flags; on an error, *exit_code is 2 for a usage error, else 1.
// `pair_periods`: the JSON's period per heavy host pair (neither the text nor a comparison shows it; on a long
// file it is most of the training analysis).
absl::StatusOr<Analysis> analyzeFiles(const AnalyzeOptions& o, const std::vector<std::string>& files, bool pair_periods,
                                      int* exit_code) {
  Analysis a;
  DecoderConfig dc;
  FileReadOptions read;
  if (absl::Status s = analysisConfig(o, &a.config, &dc, &read); !s.ok()) {
    *exit_code = 2;
    return s;
  }
  a.config.training.pair_periods = pair_periods;
  *exit_code = 1;
  auto source = openPcapCapture(files, dc, size_t{1} << 16, read);
  if (!source.ok()) return source.status();
  auto result = runCapture(**source, a.config, g_stop);
  if (!result.ok()) return result.status();
  a.result = std::move(*result);
  return a;
}

int runAnalyze(const AnalyzeOptions& o) {
  int code = 0;
  auto a = analyzeFiles(o, o.files, /*pair_periods=*/o.json, &code);
  if (!a.ok()) return fail(a.status(), code);
  const PortResult& port = a->result.ports.front();
  const ReportContext ctx{o.files, a->config.reorder_horizon_ns};
  if (o.json) {
    std::cout << reportJson(port, a->result.source, ctx).dump(1) << "\n";
  } else {
    std::cout << reportText(port, a->result.source, ctx);
  }
  for (const std::string& w : a->result.source.warnings) std::cerr << "burstscope: warning: " << w << "\n";
  return port.ledger.balanced() ? 0 : 3;
}

// A progress line on stderr while `report` or `compare --out` reads its inputs (`what` names the command and,
// for compare, the file); only on a terminal.
void showProgress(const std::string& what, const ReportProgress& p) {
  const double done_s = static_cast<double>(p.done_ns) * 1e-9;
  if (p.total_ns > 0) {
    const double f = std::clamp(static_cast<double>(p.done_ns) / static_cast<double>(p.total_ns), 0.0, 1.0);
    const int filled = static_cast<int>(f * 30);
    std::fprintf(stderr, "\r\033[Kburstscope %s: pass %d/%d [%s%s] %3.0f%%", what.c_str(), p.pass, p.passes,
                 std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(30 - filled), '.').c_str(), f * 100);
  } else {
    std::fprintf(stderr, "\r\033[Kburstscope %s: pass %d/%d: %.1f s of trace, %llu packets", what.c_str(), p.pass,
                 p.passes, done_s, static_cast<unsigned long long>(p.packets));
  }
  std::fflush(stderr);
}

struct ReportOptions {
  AnalyzeOptions analysis;  // the same files and analysis flags as analyze
  std::string out_dir;
};

int runReport(const ReportOptions& o) {
  ReportInputs in;
  in.files = o.analysis.files;
  if (absl::Status s = analysisConfig(o.analysis, &in.pipeline, &in.decoder, &in.read); !s.ok()) return fail(s, 2);
  if (absl::Status s = prepareReportDir(o.out_dir); !s.ok()) return fail(s, 1);
  const bool terminal = isatty(STDERR_FILENO) != 0;
  if (terminal) in.progress = [](const ReportProgress& p) { showProgress("report", p); };
  auto studies = computeStudies(in, g_stop);
  if (terminal) std::fputs("\r\033[K", stderr);
  if (!studies.ok()) return fail(studies.status(), 1);
  if (absl::Status s = writeReport(o.out_dir, *studies); !s.ok()) return fail(s, 1);
  for (const std::string& w : studies->warnings) std::cerr << "burstscope: warning: " << w << "\n";
  std::cerr << "burstscope report: wrote " << o.out_dir << "/report.html, report.json and the CSV files\n";
  return studies->balanced ? 0 : 3;
}

struct CompareCommand {
  AnalyzeOptions analysis;
  std::string out_dir;
  CompareOptions options;
};

// A file's error, naming the file unless the message already does.
absl::Status namingFile(const absl::Status& s, const std::string& file) {
  if (absl::StrContains(s.message(), file)) return s;
  return absl::Status(s.code(), absl::StrCat(file, ": ", s.message()));
}

// Each file analysed alone (as `analyze FILE --json` would), then compared (src/compare). With --out, each
// file goes through report's studies instead (its first pass is the same analysis), whose timeline and dense
// curves the compare page overlays.
int runCompare(const CompareCommand& c) {
  std::vector<CompareInput> inputs;
  std::vector<nlohmann::ordered_json> page_traces;
  const bool page = !c.out_dir.empty();
  if (page) {
    if (absl::Status s = prepareReportDir(c.out_dir); !s.ok()) return fail(s, 1);
  }
  const bool terminal = isatty(STDERR_FILENO) != 0;
  for (const std::string& file : c.analysis.files) {
    int code = 0;
    nlohmann::ordered_json analyze;
    bool balanced = true;
    if (page) {
      ReportInputs in;
      in.files = {file};
      if (absl::Status s = analysisConfig(c.analysis, &in.pipeline, &in.decoder, &in.read); !s.ok()) return fail(s, 2);
      in.pipeline.training.pair_periods = false;  // the comparison shows jobs' periods, not pairs'
      if (terminal) in.progress = [&file](const ReportProgress& p) { showProgress("compare " + file, p); };
      auto studies = computeStudies(in, g_stop);
      if (terminal) std::fputs("\r\033[K", stderr);
      if (!studies.ok()) return fail(namingFile(studies.status(), file), 1);
      for (const std::string& w : studies->warnings) std::cerr << "burstscope: warning: " << file << ": " << w << "\n";
      analyze = studies->analyze;
      balanced = studies->balanced;
      page_traces.push_back(comparePageTrace(*studies));
    } else {
      auto a = analyzeFiles(c.analysis, {file}, /*pair_periods=*/false, &code);
      if (!a.ok()) return fail(namingFile(a.status(), file), code);
      const PortResult& port = a->result.ports.front();
      balanced = port.ledger.balanced();
      analyze = reportJson(port, a->result.source, ReportContext{{file}, a->config.reorder_horizon_ns});
    }
    if (!balanced) std::cerr << "burstscope: warning: " << file << ": the ledger does not balance\n";
    inputs.push_back({file, std::move(analyze)});
  }
  const nlohmann::ordered_json out = compareJson(inputs, c.options);
  if (page) {
    const std::string page_json = comparePageJson(out, page_traces).dump();
    const std::pair<const char*, std::string> files[] = {{"compare.json", out.dump(1) + "\n"},
                                                         {"traces.csv", compareCsv(out, "trace_clusters")},
                                                         {"flows.csv", compareCsv(out, "flow_clusters")},
                                                         {"compare.html", compareHtml(page_json)}};
    for (const auto& [name, text] : files) {
      const std::string path = (std::filesystem::path(c.out_dir) / name).string();
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f << text;
      if (!f.flush()) return fail(absl::InternalError(absl::StrCat("cannot write ", path)), 1);
    }
  }
  if (c.analysis.json) {
    std::cout << out.dump(1) << "\n";
  } else {
    std::cout << compareText(out);
  }
  return 0;
}

struct RunOptions {
  std::string config_file;
  std::vector<std::string> eal_args;  // after "--"
  std::vector<std::string> vdevs;
  std::vector<std::string> ports;
  std::vector<std::string> xdp_interfaces;
  std::string xdp_mode = "auto";  // the first word of each list (run_config.h)
  std::string zero_copy = "auto";
  uint32_t snaplen = 0;
  bool ip_only = false;
  uint16_t rx_queues = 1;
  std::string interval = durationText(defaultRunConfig().live.pipeline.engine.report_interval_ns);
  std::string baseline = durationText(defaultRunConfig().live.pipeline.engine.baseline_ns);
  std::string timestamps = "auto";
  double replay_speed = 0;
  std::string idle_exit = "0";
  std::string duration = "0";
  bool quiet = false;
  bool json = false;
  bool check_config = false;
  size_t ring_size = 0;
  std::string listen;
  std::string web_config;
  std::string sensor;
  std::vector<std::string> labels;  // name=value
  double switch_buffer_bytes = 0;
  std::string flight_recorder;           // a directory: the flight recorder on, writing there
  uint64_t flight_microburst_bytes = 0;  // its microburst trigger
  MetricFlags metrics{defaultRunConfig().live.pipeline.engine};
  CLI::App* app = nullptr;
  bool given(const char* flag) const { return app->get_option(flag)->count() > 0; }
};

// A flag's word among a few (the same words as the config file's), the error naming the flag.
template <typename Enum>
absl::Status chooseFlag(const char* flag, const std::string& word, const Words<Enum>& choices, Enum* out,
                        const char* context = "") {
  absl::Status s = pickChoice(word, choices, out);
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", s.message(), context));
}

absl::StatusOr<RunConfig> buildRunConfig(const RunOptions& o) {
  RunConfig c;
  if (o.config_file.empty()) {
    c = defaultRunConfig();
  } else {
    BS_ASSIGN_OR_RETURN(c, loadRunConfig(o.config_file));
  }
  if (!o.xdp_interfaces.empty() && !o.ports.empty()) {
    return absl::InvalidArgumentError("--xdp and --port: choose one capture backend (AF_XDP or DPDK)");
  }
  if (!o.xdp_interfaces.empty()) c.capture = CaptureKind::kAfXdp;
  DpdkConfig& d = c.dpdk;
  for (const std::string& v : o.vdevs) {
    d.eal_args.push_back("--vdev");
    d.eal_args.push_back(v);
  }
  d.eal_args.insert(d.eal_args.end(), o.eal_args.begin(), o.eal_args.end());
  if (!o.ports.empty()) {
    d.ports.clear();
    for (const std::string& p : o.ports) d.ports.push_back(DpdkPortConfig{p, o.rx_queues, 0});
  } else {
    for (DpdkPortConfig& p : d.ports) {
      if (o.given("--rx-queues")) p.rx_queues = o.rx_queues;
      if (o.metrics.given("--link-gbps")) p.link_bps = o.metrics.link_gbps * 1e9;
    }
  }
  AfXdpConfig& a = c.afxdp;
  if (!o.xdp_interfaces.empty()) {
    a.ports.clear();
    for (const std::string& i : o.xdp_interfaces) {
      a.ports.push_back(AfXdpPortConfig{i, o.given("--rx-queues") ? o.rx_queues : 0u, 0});
    }
  } else {
    for (AfXdpPortConfig& p : a.ports) {
      if (o.given("--rx-queues")) p.queues = o.rx_queues;
      if (o.metrics.given("--link-gbps")) p.link_bps = o.metrics.link_gbps * 1e9;
    }
  }
  if (o.given("--xdp-mode")) {
    BS_RETURN_IF_ERROR(chooseFlag("--xdp-mode", o.xdp_mode, xdpModeWords(), &a.mode));
  }
  if (o.given("--zero-copy")) {
    BS_RETURN_IF_ERROR(chooseFlag("--zero-copy", o.zero_copy, zeroCopyWords(), &a.zero_copy));
  }
  if (o.given("--snaplen")) a.snaplen = o.snaplen;
  if (o.ip_only) a.ip_only = true;
  if (c.capture == CaptureKind::kAfXdp) {
    if (a.ports.empty()) return absl::InvalidArgumentError("no interface to capture from: give --xdp or af-xdp.ports");
    if (!o.vdevs.empty() || !o.eal_args.empty()) {
      return absl::InvalidArgumentError("--vdev and EAL arguments apply to DPDK capture, not AF_XDP");
    }
  } else if (d.ports.empty()) {
    return absl::InvalidArgumentError("no port to capture from: give --port, --xdp, dpdk.ports or af-xdp.ports");
  }
  EngineConfig& e = c.live.pipeline.engine;
  BS_RETURN_IF_ERROR(o.metrics.apply(e, d.decoder, &c.live.pipeline.reorder_horizon_ns,
                                     &c.live.pipeline.workers_per_port, /*only_given=*/true));
  auto duration = [](const char* flag, const std::string& text) -> absl::StatusOr<int64_t> {
    auto v = parseDurationNs(text);
    if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", v.status().message()));
    return v;
  };
  if (o.given("--interval")) {
    BS_ASSIGN_OR_RETURN(e.report_interval_ns, duration("--interval", o.interval));
  }
  if (o.given("--baseline")) {
    BS_ASSIGN_OR_RETURN(e.baseline_ns, duration("--baseline", o.baseline));
  }
  if (o.given("--idle-exit")) {
    BS_ASSIGN_OR_RETURN(int64_t ns, duration("--idle-exit", o.idle_exit));
    c.live.pipeline.idle_exit_s = static_cast<double>(ns) * 1e-9;
  }
  if (o.given("--duration")) {
    BS_ASSIGN_OR_RETURN(int64_t ns, duration("--duration", o.duration));
    c.live.pipeline.duration_s = static_cast<double>(ns) * 1e-9;
  }
  if (o.given("--timestamps") && c.capture == CaptureKind::kAfXdp) {
    BS_RETURN_IF_ERROR(chooseFlag("--timestamps", o.timestamps, xdpTimestampWords(), &a.timestamps, " (AF_XDP)"));
  } else if (o.given("--timestamps")) {
    BS_RETURN_IF_ERROR(chooseFlag("--timestamps", o.timestamps, dpdkTimestampWords(), &d.timestamps, " (DPDK)"));
  }
  if (o.given("--replay-speed")) d.replay_speed = o.replay_speed;
  if (o.given("--ring-size")) d.ring_capacity = o.ring_size;
  ExportConfig& x = c.exporter;
  if (o.given("--listen")) x.listen = o.listen == "none" ? "" : o.listen;
  if (o.given("--web-config")) x.web_config_file = o.web_config;
  if (o.given("--sensor")) x.sensor = o.sensor;
  for (const std::string& l : o.labels) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--label: '", l, "' is not name=value"));
    }
    x.labels.emplace_back(l.substr(0, eq), l.substr(eq + 1));
  }
  if (o.given("--switch-buffer-bytes")) x.switch_buffer_bytes = o.switch_buffer_bytes;
  if (o.given("--flight-recorder")) {
    c.recorder.enabled = true;
    c.recorder.directory = o.flight_recorder;
  }
  if (o.given("--flight-microburst-bytes")) c.recorder.microburst_bytes = o.flight_microburst_bytes;
  if (absl::Status s = validateExportConfig(x); !s.ok()) return s;
  e.report_top_k = x.top_k;
  if (o.quiet) c.live.quiet = true;
  if (e.report_interval_ns <= 0) return absl::InvalidArgumentError("report.interval: must be positive");
  // Both backends decode alike and fill rings of the same size.
  a.decoder = d.decoder;
  a.ring_capacity = d.ring_capacity;
  resolvePortLinks(&c);
  // Validate once per port as the engine will see it (link speed, and rates defaulting to it).
  for (const auto& [name, link_bps] : capturePorts(c)) {
    if (absl::Status s = validateConfig(portEngineConfig(e, link_bps)); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("invalid configuration: ", s.message()));
    }
  }
  return c;
}

absl::StatusOr<std::unique_ptr<CaptureSource>> openBackend(const RunConfig& c) {
  if (c.capture == CaptureKind::kAfXdp) {
#ifdef BURSTSCOPE_HAVE_AFXDP
    return openAfXdp(c.afxdp);
#else
    return absl::UnimplementedError(
        "this build has no AF_XDP capture backend (install libxdp-dev, libbpf-dev, "
        "clang and bpftool, then configure with -Dafxdp=enabled)");
#endif
  }
#ifdef BURSTSCOPE_HAVE_DPDK
  return openDpdk(c.dpdk);
#else
  return absl::UnimplementedError(
      "this build has no DPDK capture backend (configure with -Ddpdk=enabled), "
      "use --xdp IFACE for AF_XDP");
#endif
}

int runLiveCommand(const RunOptions& o) {
  auto config = buildRunConfig(o);
  if (!config.ok()) return fail(config.status(), 2);
  if (o.check_config) {
    const size_t n = capturePorts(*config).size();
    std::cout << "burstscope run: configuration OK (" << captureName(config->capture) << ", " << n << " port"
              << (n == 1 ? "" : "s") << ", metrics "
              << (config->exporter.listen.empty() ? "off" : "at " + config->exporter.listen) << ")\n";
    return 0;
  }
  auto backend = openBackend(*config);
  if (!backend.ok()) return fail(backend.status(), 1);
  std::ostream& summary = o.json ? std::cerr : std::cout;
  for (const std::string& note : (*backend)->notes()) summary << "burstscope run: " << note << std::endl;
  // Printed even when quiet: it says capture is up (scripts wait for it before sending traffic).
  for (const CapturePort& p : (*backend)->ports()) {
    summary << "burstscope run: " << p.name << " (" << p.rings.size() << " RX queue" << (p.rings.size() > 1 ? "s" : "")
            << ", link " << humanRate(p.link_bps) << "), timestamps: " << (*backend)->timestampInfo().description
            << std::endl;
  }
  // Set-up is done (program attached, sockets and UMEMs or ports open): keep only what shutting down needs,
  // before the capture threads and the HTTP listener start.
  auto left = dropCapabilitiesAfterSetup();
  if (!left.ok()) return fail(left.status(), 1);
  summary << "burstscope run: capabilities after set-up: "
          << (left->empty() ? std::string("none") : absl::StrJoin(*left, ",")) << std::endl;
  PipelineConfig pc = config->live.pipeline;
  std::vector<EngineConfig> port_engines;
  for (const CapturePort& p : (*backend)->ports()) port_engines.push_back(portEngineConfig(pc.engine, p.link_bps));
  // Prometheus export: a snapshot per port per interval; /metrics reads the latest ones.
  std::shared_ptr<LiveMetrics> metrics;
  std::shared_ptr<LiveView> live;  // declared before the server: the server (and its viewers) goes first
  // The flight recorder: a tap on every capture queue and an observer on each port's engine.
  std::signal(SIGUSR2, onFlightSignal);
  std::shared_ptr<FlightRecorder> recorder;
  const RecorderSignalGuard recorder_signal;  // declared after it: goes first
  if (config->recorder.enabled) {
    std::vector<FlightPortInfo> infos;
    for (size_t i = 0; i < port_engines.size(); ++i) {
      const CapturePort& p = (*backend)->ports()[i];
      infos.push_back(
          FlightPortInfo{p.name, port_engines[i].link_capacity_bps, port_engines[i].base_bin_ns, p.rings.size()});
    }
    auto made = FlightRecorder::create(config->recorder, std::move(infos));
    if (!made.ok()) return fail(made.status(), 2);
    recorder = std::move(*made);
    for (size_t i = 0; i < port_engines.size(); ++i) {
      for (size_t q = 0; q < (*backend)->ports()[i].rings.size(); ++q) {
        if (absl::Status s = (*backend)->setFrameTap(i, q, recorder->tap(i, q)); !s.ok()) return fail(s, 1);
      }
    }
    pc.extend_engine = [&recorder, inner = pc.extend_engine](size_t port, Engine& engine) {
      if (inner) inner(port, engine);
      engine.subscribe(recorder->observer(port));
    };
    recorder->start();
    g_recorder.store(recorder.get());
    const FlightRecorderConfig& f = config->recorder;
    summary << "burstscope run: flight recorder into " << f.directory << " ("
            << recorder->stats().memory_bytes / (1 << 20) << " MiB of frames, " << f.snap_length
            << " bytes each; triggers: "
            << (f.microburst_bytes ? absl::StrCat("microburst >= ", f.microburst_bytes, " B, ") : "")
            << (f.backlog_bytes ? absl::StrCat("backlog > ", f.backlog_bytes, " B, ") : "")
            << (f.fanin_sources ? absl::StrCat("fan-in >= ", f.fanin_sources, " sources, ") : "")
            << "on demand (SIGUSR2" << (config->exporter.listen.empty() ? "" : ", POST /flight-recorder/trigger")
            << "))" << std::endl;
  }
  std::unique_ptr<MetricsServer> server;
  if (!config->exporter.listen.empty()) {
    std::vector<ExportPortInfo> infos;
    for (size_t i = 0; i < port_engines.size(); ++i) {
      const EngineConfig& ec = port_engines[i];
      infos.push_back(ExportPortInfo{(*backend)->ports()[i].name, ec.link_capacity_bps, ec.scales_ns, ec.rates_bps});
    }
    metrics = std::make_shared<LiveMetrics>(config->exporter, std::move(infos), (*backend)->name());
    // The live view: a tap on each port's engine (one ring slot per non-empty 100 µs bin), its page and
    // events on the same listener.
    if (config->exporter.live.enabled) {
      std::vector<LivePortInfo> ports;
      for (size_t i = 0; i < port_engines.size(); ++i) {
        const EngineConfig& ec = port_engines[i];
        ports.push_back(LivePortInfo{(*backend)->ports()[i].name, ec.link_capacity_bps, ec.base_bin_ns,
                                     ec.microburst_tau_ns, ec.microburst_threshold, ec.scales_ns});
      }
      live = std::make_shared<LiveView>(config->exporter.live, std::move(ports), liveHtml());
      pc.extend_engine = [&live, inner = pc.extend_engine](size_t port, Engine& engine) {
        if (inner) inner(port, engine);
        engine.subscribe(live->tap(port));
      };
      live->start();
    }
    auto started = MetricsServer::start(config->exporter, metrics, live, recorder);
    if (!started.ok()) return fail(started.status(), 1);
    server = std::move(*started);
    summary << "burstscope run: metrics at " << server->url() << std::endl;
    if (live) {
      std::string base = server->url();
      base.resize(base.size() - std::string("/metrics").size());
      summary << "burstscope run: live view at " << base << "/live" << std::endl;
    }
  }
  std::signal(SIGHUP, onHangup);
  const bool quiet = config->live.quiet;
  auto on_interval = [&](size_t port, const PortSnapshot& s) {
    if (!quiet) summary << intervalSummary((*backend)->ports()[port].name, s, port_engines[port]) << std::endl;
    if (metrics) metrics->publish(port, s);
    if (live) live->onInterval(port, s);
    if (recorder) recorder->onInterval(port, s.interval.start_ns, s.interval.end_ns, s.training.get());
  };
  auto result = runCapture(**backend, pc, g_stop, (quiet && !metrics) ? IntervalCallback() : on_interval);
  if (recorder) {
    // The files owed are written before the summary (their windows end with the capture at the latest).
    recorder->stop();
    const FlightRecorderStats fs = recorder->stats();
    const uint64_t written = fs.written();
    summary << "burstscope run: flight recorder wrote " << written << " file" << (written == 1 ? "" : "s")
            << (fs.last_file.empty() ? "" : ", the last " + fs.last_file)
            << (fs.last_error.empty() ? "" : "; last error: " + fs.last_error) << std::endl;
  }
  if (!result.ok()) return fail(result.status(), 1);
  summary << "stopped (" << result->stop_reason << ")\n" << ledgerText(*result);
  if (o.json) std::cout << runJson(*result, pc.reorder_horizon_ns).dump(1) << "\n";
  bool balanced = true;
  for (const PortResult& p : result->ports) balanced &= ledgerBalanced(p);
  return balanced ? 0 : 3;
}

struct WhatifOptions {
  std::vector<std::string> jobs;
  std::string rate = "100G";
  std::string buffer = "16MiB";
  size_t trials = WhatifConfig{}.trials;
  uint64_t seed = WhatifConfig{}.seed;
  size_t search_grid = WhatifConfig{}.search_grid;
  size_t search_sweeps = WhatifConfig{}.search_sweeps;
  std::string scales_us = joinList(EngineConfig{}.scales_ns, 1e3);
  bool json = false;
};

int runWhatifCommand(const WhatifOptions& o) {
  WhatifConfig c;
  for (const std::string& j : o.jobs) {
    auto spec = parseWhatifJob(j);
    if (!spec.ok()) return fail(spec.status(), 2);
    c.jobs.push_back(*spec);
  }
  auto rate = parseRateBps("--rate", o.rate);
  if (!rate.ok()) return fail(rate.status(), 2);
  auto buffer = parseBufferBytes("--buffer", o.buffer);
  if (!buffer.ok()) return fail(buffer.status(), 2);
  auto scales = parseList("--scales-us", o.scales_us);
  if (!scales.ok()) return fail(scales.status(), 2);
  c.scales_ns.clear();
  for (double v : *scales) c.scales_ns.push_back(std::llround(v * 1000));
  std::sort(c.scales_ns.begin(), c.scales_ns.end());
  c.scales_ns.erase(std::unique(c.scales_ns.begin(), c.scales_ns.end()), c.scales_ns.end());
  c.rate_bps = *rate;
  c.buffer_bytes = *buffer;
  c.trials = o.trials;
  c.seed = o.seed;
  c.search_grid = o.search_grid;
  c.search_sweeps = o.search_sweeps;
  if (c.search_grid < 1) return fail(absl::InvalidArgumentError("--search-grid: must be at least 1"), 2);
  // A progress line on a terminal only; redirected stderr stays quiet.
  const bool tty = isatty(STDERR_FILENO) != 0;
  if (tty) {
    c.progress = [](std::string_view what, size_t done, size_t total) {
      std::cerr << "\r\033[Kwhatif: " << what << " " << done << "/" << total << std::flush;
    };
  }
  auto result = runWhatif(c);
  if (tty) std::cerr << "\r\033[K" << std::flush;
  // Flags and job syntax were checked above (2); what fails now is in the inputs: a file, a missing period.
  if (!result.ok()) return fail(result.status(), 1);
  if (o.json) {
    std::cout << whatifJson(*result).dump(1) << "\n";
  } else {
    std::cout << whatifText(*result);
  }
  return 0;
}

int hashPasswordCommand() {
  std::string password;
  std::getline(std::cin, password);
  if (password.empty()) {
    std::cerr << "burstscope: hash-password: no password on stdin\n";
    return 2;
  }
  auto h = hashPassword(password);
  if (!h.ok()) return fail(h.status(), 1);
  std::cout << *h << "\n";
  return 0;
}

}  // namespace
}  // namespace burstscope

namespace {

int mainImpl(int argc, char** argv) {
  using namespace burstscope;
  CLI::App app{"burstscope: burst metrics for ML-training traffic on a mirror port"};
  app.require_subcommand(1);
  // "burstscope 0.1.0 (revision 8f3c2a1b9d0e)": the package version and the git revision built from, as the
  // burstscope_build_info metric carries them.
  app.set_version_flag("--version",
                       std::string("burstscope ") + BURSTSCOPE_VERSION + " (revision " + BURSTSCOPE_REVISION + ")");

  AnalyzeOptions ao;
  CLI::App* analyze = app.add_subcommand(
      "analyze", "Analyse capture files as one capture merged by time (pcap, pcapng; gzip, zstd; - is stdin)");
  analyze->add_option("files", ao.files, "capture files (- for standard input)")
      ->required()
      ->check(CLI::Validator([](std::string& path) { return path == "-" ? std::string() : CLI::ExistingFile(path); },
                             "FILE|-"));
  analyze->add_flag("--json", ao.json, "print the machine-readable summary");
  analyze->add_option("--dedup-window", ao.dedup_window,
                      "leave out a packet seen again within this time (e.g. 1ms): captures of both ends of a link "
                      "(off by default; the key is in docs/analyze.md)");
  analyze->add_option("--evidence-after", ao.evidence_after,
                      "congestion evidence this long after a microburst still makes it congesting (default: the "
                      "microburst scale; docs/evidence.md)");
  analyze->add_flag("--no-training", ao.no_training,
                    "leave out the training analysis (jobs, step periods, topology): on a long file it is most of "
                    "the time, and the burst figures do not need it");
  analyze->add_option("--mirror-duplicate-horizon", ao.mirror_duplicate_horizon,
                      absl::StrCat("a frame seen again within this time counts as the mirror's copy (default ",
                                   MirrorConfig{}.duplicate_horizon_ns / 1000, "us; docs/mirror.md)"));
  ao.metrics.add(analyze, /*live=*/false);

  ReportOptions rpo;
  CLI::App* report = app.add_subcommand(
      "report",
      "Analyse capture files as analyze does and write an HTML report (one self-contained file), its data as "
      "JSON and CSV files into --out (docs/report.md)");
  report->add_option("files", rpo.analysis.files, "capture files (- for standard input is not supported: two passes)")
      ->required()
      ->check(CLI::ExistingFile);
  report->add_option("-o,--out", rpo.out_dir, "directory to write report.html, report.json and *.csv into (created)")
      ->required();
  report->add_option("--dedup-window", rpo.analysis.dedup_window, "as for analyze");
  report->add_option("--evidence-after", rpo.analysis.evidence_after, "as for analyze");
  rpo.analysis.metrics.add(report, /*live=*/false);

  CompareCommand co;
  CLI::App* compare = app.add_subcommand(
      "compare", "Compare capture files side by side: key figures, burst features, clusters (docs/compare.md)");
  compare->add_option("files", co.analysis.files, "capture files, each analysed alone")
      ->required()
      ->check(CLI::ExistingFile);
  compare->add_flag("--json", co.analysis.json, "print the comparison as JSON");
  compare->add_option("--out", co.out_dir,
                      "also write compare.html (the page), compare.json, traces.csv and flows.csv into this directory");
  compare->add_option("--max-k", co.options.max_k, "most clusters tried")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  compare->add_option("--seed", co.options.seed, "seed of the k-means restarts")->capture_default_str();
  co.analysis.metrics.add(compare, /*live=*/false);

  RunOptions ro;
  CLI::App* run = app.add_subcommand("run",
                                     "Live capture (DPDK or AF_XDP): per-interval summary, ledger on "
                                     "SIGINT/SIGTERM. EAL arguments go after --");
  ro.app = run;
  run->add_option("-c,--config", ro.config_file, "YAML configuration (see etc/burstscope.yaml)")
      ->check(CLI::ExistingFile);
  run->add_option("--port", ro.ports, "DPDK port to capture (ethdev name or id; repeatable)");
  run->add_option("--xdp", ro.xdp_interfaces, "capture from this interface through AF_XDP (repeatable)");
  run->add_option("--xdp-mode", ro.xdp_mode, "AF_XDP: auto, native or skb (generic)")->capture_default_str();
  run->add_option("--zero-copy", ro.zero_copy, "AF_XDP: auto, on or off")->capture_default_str();
  run->add_option("--snaplen", ro.snaplen, "AF_XDP: bytes of each frame copied to user space (default 256)");
  run->add_flag("--ip-only", ro.ip_only, "AF_XDP: leave frames that are not IP to the kernel (counted as filtered)");
  run->add_option("--rx-queues", ro.rx_queues,
                  "RX queues per port (DPDK: RSS queues; AF_XDP: sockets on queues "
                  "0..N-1, default all)")
      ->capture_default_str();
  run->add_option("--vdev", ro.vdevs, "a DPDK virtual device for the EAL (repeatable)");
  run->add_option("--interval", ro.interval, "report interval")->capture_default_str();
  run->add_option("--baseline", ro.baseline, "trailing window of the PtM mean rate")->capture_default_str();
  run->add_option("--timestamps", ro.timestamps, "DPDK: auto, nic or tsc; AF_XDP: auto, kernel or nic")
      ->capture_default_str();
  run->add_option("--replay-speed", ro.replay_speed, "net_pcap: replay at this multiple of the recorded pace");
  run->add_option("--idle-exit", ro.idle_exit, "stop after this long without packets (0: never)");
  run->add_option("--duration", ro.duration, "stop after this long (0: on SIGINT/SIGTERM)");
  run->add_flag("-q,--quiet", ro.quiet, "no per-interval summary");
  run->add_flag("--check-config", ro.check_config, "check the configuration and flags, then exit (0 if valid)");
  run->add_option("--ring-size", ro.ring_size, "records per RX queue ring (a power of two)");
  run->add_option("--listen", ro.listen,
                  "serve Prometheus metrics at host:port/metrics (default 127.0.0.1:19464; 'none': off)");
  run->add_option("--web-config", ro.web_config,
                  "web configuration file of Prometheus exporters for /metrics: TLS, basic_auth_users (re-read on "
                  "SIGHUP)");
  run->add_option("--sensor", ro.sensor, "this monitor's name, the sensor label (default: host name)");
  run->add_option("--label", ro.labels, "name=value on every series, e.g. rack=r3 (repeatable)");
  run->add_option("--switch-buffer-bytes", ro.switch_buffer_bytes,
                  "buffer of the mirrored switch port, for the congestion alert");
  run->add_flag("--json", ro.json, "print the final report as JSON on stdout (the summary goes to stderr)");
  run->add_option("--flight-recorder", ro.flight_recorder,
                  "keep the last seconds of frames in memory and write pcapng files of the window around a trigger "
                  "into DIR (docs/flight-recorder.md; on demand: SIGUSR2 or POST /flight-recorder/trigger)");
  run->add_option("--flight-microburst-bytes", ro.flight_microburst_bytes,
                  "flight recorder trigger: a microburst carrying at least this many bytes (0: off)");
  ro.metrics.add(run, /*live=*/true);
  run->footer("EAL arguments follow --, e.g. burstscope run --port 0 -- -l 0-1 -a 0000:3b:00.0\n");

  WhatifOptions wo;
  CLI::App* whatif = app.add_subcommand(
      "whatif",
      "Superpose measured jobs (capture files) on one link: Bmax aligned, over random offsets, and for the offsets "
      "that minimise it (docs/studies.md)");
  whatif
      ->add_option("jobs", wo.jobs,
                   "capture files, each FILE[*N][@period=DURATION|@scale=FACTOR]: N independent copies, time "
                   "stretched to a step period or by a factor")
      ->required();
  whatif->add_option("--rate", wo.rate, "link rate r, bit/s (100G, 25Gbit/s, 400M)")->capture_default_str();
  whatif->add_option("--buffer", wo.buffer, "buffer to compare Bmax with (16MiB, 12MB, bytes)")->capture_default_str();
  whatif->add_option("--trials", wo.trials, "schedules with random offsets")->capture_default_str();
  whatif->add_option("--seed", wo.seed, "seed of the random offsets (same seed, same output)")->capture_default_str();
  whatif->add_option("--search-grid", wo.search_grid, "offsets per job and sweep in the minimising search")
      ->capture_default_str();
  whatif->add_option("--search-sweeps", wo.search_sweeps, "at most this many sweeps of the search")
      ->capture_default_str();
  whatif->add_option("--scales-us", wo.scales_us, "window lengths tau of the envelope, in microseconds")
      ->capture_default_str();
  whatif->add_flag("--json", wo.json, "print the result as JSON");

  CLI::App* hash =
      app.add_subcommand("hash-password", "Read a password on stdin, print its bcrypt hash for export.basic-auth");

  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  try {
    // Everything after the first "--" is the EAL's, taken before CLI11 parses (a vector option such as
    // --vdev right before "--" would otherwise swallow the separator).
    int ours = argc;
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]) == "--") {
        ours = i;
        ro.eal_args.assign(argv + i + 1, argv + argc);
        break;
      }
    }
    app.parse(ours, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, whatever CLI11's own code for it.
    return app.exit(e) == 0 ? 0 : 2;
  }
  // Freed memory is kept for reuse rather than handed back to the kernel. The training analysis (at the end of
  // a file, and on `run`'s control thread at every interval) makes and drops series of up to millions of bins
  // per job and host pair (8 MB per million); glibc maps such blocks afresh and every page faults in again:
  // half of the analysis of a minute-long file with pairs, 30% of an interval's (bench/README.md).
  keepFreedMemory();
  if (analyze->parsed()) return runAnalyze(ao);
  if (report->parsed()) return runReport(rpo);
  if (compare->parsed()) return runCompare(co);
  if (hash->parsed()) return hashPasswordCommand();
  if (whatif->parsed()) return runWhatifCommand(wo);
  if (run->parsed()) return runLiveCommand(ro);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return mainImpl(argc, argv);
  } catch (const std::exception& e) {
    // Not expected (errors are statuses); if a library throws, say what and exit as a software error.
    std::fprintf(stderr, "burstscope: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "burstscope: internal error: unknown exception\n");
  }
  return 70;
}
