// burstscope command line. Flags live only here; modules take plain config structs.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "burstscope/source.h"
#include "burstscope/status.h"
#include "src/analysis/report.h"
#include "src/pipeline/pipeline.h"

#ifndef BURSTSCOPE_VERSION
#define BURSTSCOPE_VERSION "dev"
#endif

namespace burstscope {
namespace {

std::atomic<bool> g_stop{false};
void onSignal(int) { g_stop.store(true); }

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

struct AnalyzeOptions {
  std::vector<std::string> files;
  bool json = false;
  std::string scales_us = "100,1000,5000,10000,100000,1000000,10000000";
  std::string rates_gbps = "1,10,25,100";
  double link_gbps = 10;
  double microburst_us = 100;
  double microburst_threshold = 0.5;
  size_t top_k = 10;
  std::vector<std::string> local_nets;
  int mirror_vlan_tags = 0;
  double reorder_us = 1000;
  double exact_max_us = -1;  // default: every scale exact (offline)
  size_t flow_table = size_t{1} << 16;
};

absl::StatusOr<PipelineConfig> buildConfig(const AnalyzeOptions& o) {
  PipelineConfig pc;
  EngineConfig& ec = pc.engine;
  BS_ASSIGN_OR_RETURN(std::vector<double> scales, parseList("--scales-us", o.scales_us));
  ec.scales_ns.clear();
  for (double s : scales) ec.scales_ns.push_back(static_cast<int64_t>(s * 1000 + 0.5));
  std::sort(ec.scales_ns.begin(), ec.scales_ns.end());
  ec.scales_ns.erase(std::unique(ec.scales_ns.begin(), ec.scales_ns.end()), ec.scales_ns.end());
  BS_ASSIGN_OR_RETURN(std::vector<double> rates, parseList("--rates-gbps", o.rates_gbps));
  ec.rates_bps.clear();
  for (double r : rates) ec.rates_bps.push_back(r * 1e9);
  ec.link_capacity_bps = o.link_gbps * 1e9;
  ec.microburst_tau_ns = static_cast<int64_t>(o.microburst_us * 1000 + 0.5);
  ec.microburst_threshold = o.microburst_threshold;
  ec.top_k = o.top_k;
  ec.tracked_streams = std::max(ec.tracked_streams, 2 * o.top_k);
  ec.flow_table_capacity = o.flow_table;
  ec.exact_max_tau_ns = o.exact_max_us < 0 ? ec.scales_ns.back() : static_cast<int64_t>(o.exact_max_us * 1000);
  pc.reorder_horizon_ns = static_cast<int64_t>(o.reorder_us * 1000);
  if (pc.reorder_horizon_ns < 0) return absl::InvalidArgumentError("--reorder-us: must not be negative");
  if (o.mirror_vlan_tags < 0 || o.mirror_vlan_tags > Decoder::kMaxVlanTags) {
    return absl::InvalidArgumentError("--mirror-vlan-tags: must be between 0 and 8");
  }
  pc.decoder.mirror_vlan_tags = o.mirror_vlan_tags;
  for (const std::string& n : o.local_nets) {
    IpPrefix p;
    if (!parsePrefix(n, &p)) {
      return absl::InvalidArgumentError(absl::StrCat("--local-net: '", n, "' is not an address prefix"));
    }
    pc.decoder.local_nets.push_back(p);
  }
  if (absl::Status s = validateConfig(ec); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid configuration: ", s.message()));
  }
  return pc;
}

int runAnalyze(const AnalyzeOptions& o) {
  auto config = buildConfig(o);
  if (!config.ok()) {
    std::cerr << "burstscope: " << config.status().message() << "\n";
    return 2;
  }
  auto source = openPcapFiles(o.files);
  if (!source.ok()) {
    std::cerr << "burstscope: " << source.status().message() << "\n";
    return 1;
  }
  auto result = runPipeline(**source, *config, g_stop);
  if (!result.ok()) {
    std::cerr << "burstscope: " << result.status().message() << "\n";
    return 1;
  }
  ReportContext ctx{o.files, &*config};
  if (o.json) {
    std::cout << reportJson(*result, ctx).dump(1) << "\n";
  } else {
    std::cout << reportText(*result, ctx);
  }
  if (!result->source.warning.empty()) std::cerr << "burstscope: warning: " << result->source.warning << "\n";
  return result->ledger.balanced() ? 0 : 3;
}

}  // namespace
}  // namespace burstscope

int main(int argc, char** argv) {
  using namespace burstscope;
  CLI::App app{"burstscope: burst metrics for ML-training traffic on a mirror port"};
  app.require_subcommand(1);
  app.set_version_flag("--version", BURSTSCOPE_VERSION);

  AnalyzeOptions ao;
  CLI::App* analyze = app.add_subcommand("analyze", "Analyse pcap/pcapng files (read in order as one capture)");
  analyze->add_option("files", ao.files, "capture files")->required()->check(CLI::ExistingFile);
  analyze->add_flag("--json", ao.json, "print the machine-readable summary");
  analyze->add_option("--scales-us", ao.scales_us, "window lengths tau in microseconds")->capture_default_str();
  analyze->add_option("--rates-gbps", ao.rates_gbps, "virtual backlog drain rates in Gbit/s")->capture_default_str();
  analyze->add_option("--link-gbps", ao.link_gbps, "capacity of the mirrored link (utilisation, microbursts)")->capture_default_str();
  analyze->add_option("--microburst-us", ao.microburst_us, "microburst window tau")->capture_default_str();
  analyze->add_option("--microburst-threshold", ao.microburst_threshold, "fraction of link capacity")->capture_default_str();
  analyze->add_option("--top-k", ao.top_k, "host pairs and flows to report")->capture_default_str();
  analyze->add_option("--local-net", ao.local_nets, "prefix of monitored hosts, for direction (repeatable)");
  analyze->add_option("--mirror-vlan-tags", ao.mirror_vlan_tags,
                      "outermost VLAN tags added by the mirror (RSPAN/QinQ), not counted")->capture_default_str();
  analyze->add_option("--reorder-us", ao.reorder_us, "timestamp reorder horizon")->capture_default_str();
  analyze->add_option("--exact-max-us", ao.exact_max_us,
                      "largest tau computed packet-exactly on port/direction streams (default: all)");
  analyze->add_option("--flow-table", ao.flow_table, "flow table capacity (entries)")->capture_default_str();

  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, whatever CLI11's own code for it.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (analyze->parsed()) return runAnalyze(ao);
  return 2;
}
