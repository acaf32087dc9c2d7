// The `run` YAML configuration: values land in the modules' structs, and every error names key and line.
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

#include "src/config/run_config.h"

namespace burstscope {
namespace {

TEST(DurationTest, UnitsAndBareSeconds) {
  EXPECT_EQ(*parseDurationNs("100us"), 100'000);
  EXPECT_EQ(*parseDurationNs("1.5ms"), 1'500'000);
  EXPECT_EQ(*parseDurationNs("2s"), 2'000'000'000);
  EXPECT_EQ(*parseDurationNs("250ns"), 250);
  EXPECT_EQ(*parseDurationNs("0.25"), 250'000'000);
  EXPECT_FALSE(parseDurationNs("fast").ok());
  EXPECT_FALSE(parseDurationNs("-1s").ok());
  EXPECT_FALSE(parseDurationNs("ms").ok());
}

TEST(RunConfigTest, FullExampleMapsOntoTheStructs) {
  auto c = parseRunConfig(R"(
capture: dpdk
dpdk:
  eal-params:
    l: 0-1
    no-huge: true
    no-pci: true
    m: 512
    telemetry: false
    vdev: [net_null0, "net_pcap0,rx_pcap=x.pcap"]
  ports:
    - device: net_null0
      rx-queues: 2
      link-gbps: 25
    - device: "0000:3b:00.0"
  mbufs: 4095
  burst: 64
  timestamps: tsc
  tsc-resync: 500ms
metrics:
  scales: [1ms, 100us]
  rates-gbps: [10, 100]
  microburst: {window: 200us, threshold: 0.8}
  exact-max: 1ms
  top-k: 5
  reorder: 2ms
  pairs-and-flows: false
  workers: 2
decoder:
  local-nets: [10.0.0.0/8, "fd00::/64"]
  mirror-vlan-tags: 1
report:
  interval: 500ms
  baseline: 30s
  quiet: yes
  idle-exit: 2s
ring-size: 4096
)",
                          "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<std::string> eal{"-l",  "0-1",    "--no-huge", "--no-pci", "-m",
                                     "512", "--vdev", "net_null0", "--vdev",   "net_pcap0,rx_pcap=x.pcap"};
  EXPECT_EQ(c->dpdk.eal_args, eal);
  ASSERT_EQ(c->dpdk.ports.size(), 2u);
  EXPECT_EQ(c->dpdk.ports[0].device, "net_null0");
  EXPECT_EQ(c->dpdk.ports[0].rx_queues, 2);
  EXPECT_EQ(c->dpdk.ports[0].link_bps, 25e9);
  EXPECT_EQ(c->dpdk.ports[1].device, "0000:3b:00.0");
  EXPECT_EQ(c->dpdk.ports[1].rx_queues, 1);
  EXPECT_EQ(c->dpdk.mbufs_per_port, 4095u);
  EXPECT_EQ(c->dpdk.burst, 64);
  EXPECT_EQ(c->dpdk.timestamps, TimestampMode::kTsc);
  EXPECT_DOUBLE_EQ(c->dpdk.tsc_resync_s, 0.5);
  EXPECT_EQ(c->dpdk.ring_capacity, 4096u);
  const EngineConfig& e = c->live.pipeline.engine;
  EXPECT_EQ(e.scales_ns, (std::vector<int64_t>{100'000, 1'000'000}));
  EXPECT_EQ(e.rates_bps, (std::vector<double>{10e9, 100e9}));
  EXPECT_EQ(e.microburst_tau_ns, 200'000);
  EXPECT_DOUBLE_EQ(e.microburst_threshold, 0.8);
  EXPECT_FALSE(e.pairs_and_flows);
  EXPECT_EQ(c->live.pipeline.workers_per_port, 2u);
  EXPECT_EQ(e.exact_max_tau_ns, 1'000'000);
  EXPECT_EQ(e.top_k, 5u);
  EXPECT_EQ(e.report_interval_ns, 500'000'000);
  EXPECT_EQ(e.baseline_ns, 30'000'000'000);
  EXPECT_EQ(c->live.pipeline.reorder_horizon_ns, 2'000'000);
  EXPECT_TRUE(c->live.quiet);
  EXPECT_DOUBLE_EQ(c->live.pipeline.idle_exit_s, 2.0);
  EXPECT_EQ(c->dpdk.decoder.local_nets.size(), 2u);
  EXPECT_EQ(c->dpdk.decoder.mirror_vlan_tags, 1);
}

TEST(RunConfigTest, EmptyFileGivesDefaults) {
  auto c = parseRunConfig("", "empty.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->live.pipeline.engine.report_interval_ns, 1'000'000'000);
  EXPECT_TRUE(c->live.pipeline.engine.rates_bps.empty());  // each port's link speed
  EXPECT_EQ(c->dpdk.timestamps, TimestampMode::kAuto);
}

TEST(RunConfigTest, EvidenceSection) {
  auto c = parseRunConfig("evidence:\n  enabled: false\n  after: 250us\n", "e.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->live.pipeline.evidence.enabled);
  EXPECT_EQ(c->live.pipeline.evidence.after_ns, 250'000);
  auto d = parseRunConfig("", "e.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->live.pipeline.evidence.enabled);
  EXPECT_EQ(d->live.pipeline.evidence.after_ns, -1);  // the microburst scale τ
}

std::string errorOf(const std::string& yaml) {
  auto c = parseRunConfig(yaml, "f.yaml");
  return c.ok() ? "(ok)" : std::string(c.status().message());
}

TEST(RunConfigTest, ErrorsNameTheKeyAndLine) {
  EXPECT_EQ(errorOf("dpdk:\n  prts: []\n").substr(0, 31), "f.yaml:2: dpdk.prts: unknown ke");
  EXPECT_NE(errorOf("bogus: 1\n").find("f.yaml:1: bogus: unknown key"), std::string::npos);
  EXPECT_NE(errorOf("dpdk:\n  ports:\n    - device: x\n      rx-queues: two\n")
                .find("f.yaml:4: dpdk.ports[0].rx-queues: must be an integer"),
            std::string::npos);
  EXPECT_NE(errorOf("dpdk:\n  ports:\n    - rx-queues: 1\n").find("dpdk.ports[0]: device is required"),
            std::string::npos);
  EXPECT_NE(errorOf("metrics:\n  scales: [1ms, soon]\n").find("metrics.scales: 'soon' is not a duration"),
            std::string::npos);
  EXPECT_NE(errorOf("metrics:\n  workers: 4\n").find("metrics.workers: 4 is not in"), std::string::npos)
      << errorOf("metrics:\n  workers: 4\n");
  EXPECT_NE(errorOf("metrics:\n  microburst: {threshold: 2}\n").find("metrics.microburst.threshold: 2 is not in"),
            std::string::npos);
  EXPECT_NE(errorOf("dpdk:\n  timestamps: ptp\n").find("dpdk.timestamps: 'ptp' is not auto, nic or tsc"),
            std::string::npos);
  EXPECT_NE(errorOf("decoder:\n  local-nets: [10.0.0.0/33]\n").find("decoder.local-nets: '10.0.0.0/33'"),
            std::string::npos);
  EXPECT_NE(errorOf("report:\n  quiet: maybe\n").find("report.quiet: must be true or false"), std::string::npos);
  EXPECT_NE(errorOf("capture: pcap\n").find("f.yaml:1: capture: 'pcap' is not dpdk or af_xdp"), std::string::npos);
  EXPECT_NE(errorOf("dpdk: [1, 2\n").find("f.yaml:"), std::string::npos);  // not YAML at all
  EXPECT_NE(errorOf("dpdk:\n  burst: 0\n").find("dpdk.burst: 0 is not in 1..512"), std::string::npos);
  EXPECT_NE(errorOf("evidence:\n  aftr: 1ms\n").find("f.yaml:2: evidence.aftr: unknown key"), std::string::npos);
  EXPECT_NE(errorOf("evidence:\n  after: soon\n").find("evidence.after: 'soon' is not a duration"), std::string::npos);
}

TEST(RunConfigTest, FlightRecorderSectionMapsOntoTheStructAndNamesBadKeys) {
  auto c = parseRunConfig(R"(
flight-recorder:
  enabled: true
  directory: /srv/flight
  memory-bytes: 16777216
  snap-length: 256
  before: 2s
  after: 50ms
  min-interval: 30s
  max-files: 7
  max-disk-bytes: 10485760
  triggers: {microburst-bytes: 500000, backlog-bytes: 12000000, fanin-sources: 4}
)",
                          "f.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const FlightRecorderConfig& f = c->recorder;
  EXPECT_TRUE(f.enabled);
  EXPECT_EQ(f.directory, "/srv/flight");
  EXPECT_EQ(f.memory_bytes, 16777216u);
  EXPECT_EQ(f.snap_length, 256u);
  EXPECT_EQ(f.before_ns, 2'000'000'000);
  EXPECT_EQ(f.after_ns, 50'000'000);
  EXPECT_EQ(f.min_interval_ns, 30'000'000'000);
  EXPECT_EQ(f.max_files, 7u);
  EXPECT_EQ(f.max_disk_bytes, 10485760u);
  EXPECT_EQ(f.microburst_bytes, 500000u);
  EXPECT_EQ(f.backlog_bytes, 12000000u);
  EXPECT_EQ(f.fanin_sources, 4u);
  EXPECT_FALSE(defaultRunConfig().recorder.enabled);
  EXPECT_NE(errorOf("flight-recorder:\n  befor: 1s\n").find("f.yaml:2: flight-recorder.befor: unknown key"),
            std::string::npos);
  EXPECT_NE(errorOf("flight-recorder:\n  triggers: {fanin: 3}\n").find("flight-recorder.triggers.fanin: unknown key"),
            std::string::npos);
  EXPECT_NE(errorOf("flight-recorder:\n  snap-length: 10\n").find("flight-recorder.snap-length: 10 is not in"),
            std::string::npos);
  EXPECT_NE(errorOf("flight-recorder:\n  after: 2min\n").find("flight-recorder.after"), std::string::npos);
}

// Every word a setting takes is accepted in the file (any case), from the one list the flags use too.
TEST(RunConfigTest, EveryWordOfEveryListIsAcceptedInTheFile) {
  auto all = [](const auto& words, const std::string& key, const std::string& section, auto get) {
    for (const auto& [word, value] : words) {
      for (const std::string& w : {std::string(word), absl::AsciiStrToUpper(word)}) {
        const std::string yaml =
            section.empty() ? absl::StrCat(key, ": ", w, "\n") : absl::StrCat(section, ":\n  ", key, ": ", w, "\n");
        auto c = parseRunConfig(yaml, "f.yaml");
        ASSERT_TRUE(c.ok()) << yaml << c.status();
        EXPECT_EQ(get(*c), value) << yaml;
      }
    }
  };
  all(captureWords(), "capture", "", [](const RunConfig& c) { return c.capture; });
  all(dpdkTimestampWords(), "timestamps", "dpdk", [](const RunConfig& c) { return c.dpdk.timestamps; });
  all(xdpModeWords(), "mode", "af-xdp", [](const RunConfig& c) { return c.afxdp.mode; });
  all(zeroCopyWords(), "zero-copy", "af-xdp", [](const RunConfig& c) { return c.afxdp.zero_copy; });
  all(xdpTimestampWords(), "timestamps", "af-xdp", [](const RunConfig& c) { return c.afxdp.timestamps; });
}

// An empty file is the defaults; ports without a link speed take the metrics' one, in one place.
TEST(RunConfigTest, DefaultsLiveInOnePlaceAndPortsTakeTheMetricsLinkSpeed) {
  auto c = parseRunConfig("", "f.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->live.pipeline.engine.report_interval_ns, defaultRunConfig().live.pipeline.engine.report_interval_ns);
  EXPECT_EQ(c->live.pipeline.engine.report_interval_ns, 1'000'000'000);
  EXPECT_TRUE(c->live.pipeline.engine.rates_bps.empty());
  EXPECT_EQ(c->live.pipeline.engine.baseline_ns, EngineConfig{}.baseline_ns);
  auto d = parseRunConfig(
      "dpdk:\n  ports:\n    - device: a\n    - device: b\n      link-gbps: 100\n"
      "metrics:\n  link-gbps: 25\n",
      "f.yaml");
  ASSERT_TRUE(d.ok()) << d.status();
  resolvePortLinks(&*d);
  EXPECT_EQ(d->dpdk.ports[0].link_bps, 25e9);
  EXPECT_EQ(d->dpdk.ports[1].link_bps, 100e9);
}

TEST(RunConfigTest, ExportSectionMapsOntoItsStructAndNamesBadKeys) {
  auto c = parseRunConfig(R"(
export:
  listen: 0.0.0.0:19500
  sensor: m1
  labels: {rack: r3, cluster: a}
  top-k: 5
  switch-buffer-bytes: 12e6
  basic-auth: {username: prom, password-hash: "$2b$10$abcdefghijklmnopqrstuu5ZJxC5fKG6.Qzv4f3D9S7aJ0xL6y1Tq"}
  ports:
    "0000:3b:00.0": {switch-buffer-bytes: 4e6, labels: {training_job: resnet}}
)",
                          "f.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const ExportConfig& x = c->exporter;
  EXPECT_EQ(x.listen, "0.0.0.0:19500");
  EXPECT_EQ(x.sensor, "m1");
  EXPECT_EQ(x.labels, (Labels{{"rack", "r3"}, {"cluster", "a"}}));
  EXPECT_EQ(x.top_k, 5u);
  EXPECT_EQ(*x.switch_buffer_bytes, 12e6);
  EXPECT_EQ(x.basic_auth_user, "prom");
  EXPECT_EQ(*x.ports.at("0000:3b:00.0").switch_buffer_bytes, 4e6);
  EXPECT_EQ(x.ports.at("0000:3b:00.0").labels, (Labels{{"training_job", "resnet"}}));
  EXPECT_EQ(parseRunConfig("export:\n  listen: none\n", "f.yaml")->exporter.listen, "");
  EXPECT_EQ(parseRunConfig("", "f.yaml")->exporter.listen, "127.0.0.1:19464");  // loopback by default
  EXPECT_NE(errorOf("export:\n  labels: {instance: x}\n").find("f.yaml:2: export.labels.instance: reserved"),
            std::string::npos);
  EXPECT_NE(errorOf("export:\n  lisen: x\n").find("f.yaml:2: export.lisen: unknown key"), std::string::npos);
  EXPECT_NE(errorOf("export:\n  basic-auth: {username: a, password-hash: hunter2}\n").find("password-hash"),
            std::string::npos);
  EXPECT_NE(errorOf("export:\n  ports:\n    p0: {buffer: 1}\n").find("f.yaml:3: export.ports.p0.buffer"),
            std::string::npos);
}

TEST(RunConfigTest, TheMetricsEndpointsServerSettingsAndWebConfig) {
  auto c = parseRunConfig(
      "export:\n  http: {threads: 8, read-timeout: 5s, idle-timeout: 120s, max-connections: 64}\n"
      "  web-config: " BURSTSCOPE_SOURCE_ROOT "/etc/web-config.yml\n",
      "f.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const HttpServerConfig& h = c->exporter.http;
  EXPECT_EQ(h.threads, 8);
  EXPECT_EQ(h.read_timeout_ns, 5'000'000'000);
  EXPECT_EQ(h.idle_timeout_ns, 120'000'000'000);
  EXPECT_EQ(h.max_connections, 64u);
  EXPECT_EQ(c->exporter.web_config_file, BURSTSCOPE_SOURCE_ROOT "/etc/web-config.yml");
  EXPECT_NE(errorOf("export:\n  http: {thread: 2}\n").find("f.yaml:2: export.http.thread: unknown key"),
            std::string::npos);
  EXPECT_NE(errorOf("export:\n  http: {threads: 0}\n").find("export.http.threads: 0 is not in 1..64"),
            std::string::npos);
  EXPECT_NE(errorOf("export:\n  http: {read-timeout: 1ms}\n").find("export.http.read-timeout: must be in"),
            std::string::npos);
  // The web configuration file is read while the run file is: its errors come at once, naming its key.
  EXPECT_NE(errorOf("export:\n  web-config: /nonexistent/web.yml\n").find("web config /nonexistent/web.yml"),
            std::string::npos);
}

TEST(RunConfigTest, TheShippedExampleParses) {
  auto c = loadRunConfig(BURSTSCOPE_SOURCE_ROOT "/etc/burstscope.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->dpdk.ports.size(), 1u);
  EXPECT_EQ(c->dpdk.ports[0].rx_queues, 2);
  EXPECT_TRUE(validateConfig(c->live.pipeline.engine).ok());
}

}  // namespace
}  // namespace burstscope

namespace burstscope {
namespace {

TEST(RunConfigTest, TrainingSectionMapsOntoTheStructAndNamesBadKeys) {
  auto c = parseRunConfig(R"(
export:
  switch-buffer-bytes: 4000000
training:
  window: 90s
  max-jobs: 4
  coburst-share: 0.2
  coburst-gbps: 2.5
  min-period-quality: 0.6
  data-edge-share: 0.3
  analysis-budget: 0.25
  host-link-gbps: {10.0.1.0/24: 100}
  jobs:
    llama: [10.0.0.0/28, "fd00::/64"]
)",
                          "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const TrainingConfig& t = c->live.pipeline.training;
  EXPECT_EQ(t.window_ns, 90'000'000'000);
  EXPECT_EQ(t.max_jobs, 4u);
  EXPECT_EQ(t.coburst_share, 0.2);
  EXPECT_EQ(t.coburst_bps, 2.5e9);
  EXPECT_EQ(t.min_period_quality, 0.6);
  EXPECT_EQ(t.data_edge_share, 0.3);
  EXPECT_EQ(t.analysis_budget, 0.25);
  EXPECT_EQ(TrainingConfig{}.analysis_budget, 0.1);
  EXPECT_EQ(t.receiver_buffer_bytes, 4e6);  // the switch buffer is the default
  // ... also when the switch buffer comes from a flag, after the file (resolved after the flags).
  c->live.pipeline.training.receiver_buffer_bytes = 0;
  c->exporter.switch_buffer_bytes = 2e6;
  resolvePortLinks(&*c);
  EXPECT_EQ(c->live.pipeline.training.receiver_buffer_bytes, 2e6);
  ASSERT_EQ(t.host_links.size(), 1u);
  EXPECT_EQ(t.host_links[0].bps, 100e9);
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].name, "llama");
  ASSERT_EQ(t.jobs[0].hosts.size(), 2u);
  EXPECT_EQ(t.jobs[0].hosts[1].family, 6);
  for (const char* bad :
       {"training:\n  windw: 1s\n", "training:\n  jobs:\n    a: [10.0.0.0/40]\n", "training:\n  max-jobs: 0\n",
        "training:\n  jobs: [1, 2]\n", "training:\n  analysis-budget: 1.5\n"}) {
    auto r = parseRunConfig(bad, "t.yaml");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(std::string(r.status().message()).find("training"), std::string::npos) << r.status();
  }
  auto budget = parseRunConfig("training:\n  analysis-budget: 0.001\n", "t.yaml");
  ASSERT_FALSE(budget.ok());
  EXPECT_NE(std::string(budget.status().message()).find("training.analysis-budget"), std::string::npos)
      << budget.status();
}

}  // namespace
}  // namespace burstscope
