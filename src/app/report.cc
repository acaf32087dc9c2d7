// `burstscope report` (docs/report.md): capture files analysed as analyze does, then the HTML report and its
// data as JSON and CSV files, written into a directory.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "src/app/cli.h"
#include "src/studies/render.h"
#include "src/studies/studies.h"

namespace burstscope::cli {
namespace {

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

class ReportSubcommand final : public Command {
 public:
  ReportOptions rpo;

  int run() override { return runReport(rpo); }
};

}  // namespace

std::unique_ptr<Command> addReportCommand(CLI::App& top) {
  auto c = std::make_unique<ReportSubcommand>();
  ReportOptions& rpo = c->rpo;
  CLI::App* report = top.add_subcommand(
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
  c->app = report;
  return c;
}

}  // namespace burstscope::cli
