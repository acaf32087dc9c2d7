// `burstscope compare` (docs/compare.md): capture files analysed each alone, then compared side by side (key
// figures, burst features, clusters), as text, JSON or a page with its data files.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/analysis/report.h"
#include "src/app/cli.h"
#include "src/compare/compare.h"
#include "src/studies/render.h"
#include "src/studies/studies.h"

namespace burstscope::cli {
namespace {

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

class CompareSubcommand final : public Command {
 public:
  CompareCommand co;

  int run() override { return runCompare(co); }
};

}  // namespace

std::unique_ptr<Command> addCompareCommand(CLI::App& top) {
  auto c = std::make_unique<CompareSubcommand>();
  CompareCommand& co = c->co;
  CLI::App* compare = top.add_subcommand(
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
  c->app = compare;
  return c;
}

}  // namespace burstscope::cli
