// `burstscope analyze`: capture files analysed as one capture merged by time, the report as text or JSON.
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "src/analysis/report.h"
#include "src/app/cli.h"

namespace burstscope::cli {
namespace {

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

class AnalyzeSubcommand final : public Command {
 public:
  AnalyzeOptions ao;

  int run() override { return runAnalyze(ao); }
};

}  // namespace

std::unique_ptr<Command> addAnalyzeCommand(CLI::App& top) {
  auto c = std::make_unique<AnalyzeSubcommand>();
  AnalyzeOptions& ao = c->ao;
  CLI::App* analyze = top.add_subcommand(
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
  c->app = analyze;
  return c;
}

}  // namespace burstscope::cli
