// What burstscope's commands share (cli.h).
#include "src/app/cli.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "burstscope/status.h"
#include "src/config/run_config.h"

namespace burstscope::cli {

std::atomic<bool> g_stop{false};

int fail(const absl::Status& s, int exit_code) {
  std::cerr << "burstscope: " << s.message() << "\n";
  return exit_code;
}

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

std::string durationText(int64_t ns) {
  if (ns % 1'000'000'000 == 0) return absl::StrCat(ns / 1'000'000'000, "s");
  if (ns % 1'000'000 == 0) return absl::StrCat(ns / 1'000'000, "ms");
  if (ns % 1'000 == 0) return absl::StrCat(ns / 1'000, "us");
  return absl::StrCat(ns, "ns");
}

void MetricFlags::add(CLI::App* a, bool live) {
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

absl::Status MetricFlags::apply(EngineConfig& ec, DecoderConfig& dc, int64_t* reorder_ns, size_t* workers_per_port,
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

absl::Status analysisConfig(const AnalyzeOptions& o, PipelineConfig* pc, DecoderConfig* dc, FileReadOptions* read) {
  pc->training.pair_periods = true;    // offline: a period per heavy host pair too
  pc->training.interval_bins = false;  // the live view's per-job picture: no file analysis shows it
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

}  // namespace burstscope::cli
