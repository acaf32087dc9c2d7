// `burstscope run`: live capture with DPDK or AF_XDP (docs/live-capture.md, docs/af-xdp.md), a summary per
// interval, Prometheus metrics and the live view, the flight recorder, the ledger on SIGINT/SIGTERM. The flags
// override the configuration file; EAL arguments follow "--".
#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "burstscope/capture.h"
#include "burstscope/status.h"
#include "src/analysis/report.h"
#include "src/app/cli.h"
#include "src/config/run_config.h"
#include "src/export/http_server.h"
#include "src/export/metrics.h"
#include "src/live/live_view.h"
#include "src/pipeline/pipeline.h"
#include "src/privileges/privileges.h"
#include "src/recorder/flight_recorder.h"
#include "src/studies/render.h"

namespace burstscope::cli {
namespace {

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
  pc.yield_control_thread = true;  // this thread's training analyses yield to the port workers (docs/live-capture.md)
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
  // An interval the training analysis did not look at on its own (spaced out by training.analysis-budget, or
  // taken in by a control thread catching up) shows the jobs of the port's last analysis on its line.
  std::vector<std::shared_ptr<const TrainingReport>> last_training(port_engines.size());
  auto on_interval = [&](size_t port, const PortSnapshot& s) {
    if (!quiet) {
      if (s.training) last_training[port] = s.training;
      PortSnapshot shown;  // a copy only for an interval that shows an earlier analysis's jobs
      if (!s.training && last_training[port]) {
        shown = s;
        shown.training = last_training[port];
      }
      summary << intervalSummary((*backend)->ports()[port].name, shown.training ? shown : s, port_engines[port])
              << std::endl;
    }
    if (metrics) metrics->publish(port, s);
    if (live) live->onInterval(port, s);
    if (recorder) recorder->onInterval(port, s.interval.start_ns, s.interval.end_ns, s.training.get());
  };
  if (metrics) pc.link_sink = [&metrics](size_t port, const LinkState& l) { metrics->publishLink(port, l); };
  auto result = runCapture(**backend, pc, g_stop, (quiet && !metrics && !recorder) ? IntervalCallback() : on_interval);
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

class RunSubcommand final : public Command {
 public:
  explicit RunSubcommand(const std::vector<std::string>& eal_args) : eal_args_(eal_args) {}

  RunOptions ro;

  int run() override {
    ro.eal_args = eal_args_;
    return runLiveCommand(ro);
  }

 private:
  const std::vector<std::string>& eal_args_;
};

}  // namespace

std::unique_ptr<Command> addRunCommand(CLI::App& top, const std::vector<std::string>& eal_args) {
  auto c = std::make_unique<RunSubcommand>(eal_args);
  RunOptions& ro = c->ro;
  CLI::App* run = top.add_subcommand("run",
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

  c->app = run;
  return c;
}

}  // namespace burstscope::cli
