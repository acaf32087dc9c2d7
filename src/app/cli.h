// What burstscope's commands share (src/app: a file per command, main.cc dispatches): the command interface,
// the stop flag, the one error line, list and duration texts, the metric and decoder flags of analyze and run,
// and the analysis of capture files that analyze, report and compare run. Flags live only in src/app; modules
// take plain config structs.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "burstscope/capture.h"
#include "src/pipeline/pipeline.h"
#include "src/studies/studies.h"

namespace burstscope::cli {

// One command: its add function below makes it a subcommand of the top-level app with its flags bound to the
// command's own options; main runs the one the command line gave, after parsing.
class Command {
 public:
  virtual ~Command() = default;
  bool given() const { return app->parsed(); }
  virtual int run() = 0;

  CLI::App* app = nullptr;  // the subcommand
};

// In the order `burstscope --help` lists them.
std::unique_ptr<Command> addAnalyzeCommand(CLI::App& top);
std::unique_ptr<Command> addReportCommand(CLI::App& top);
std::unique_ptr<Command> addCompareCommand(CLI::App& top);
// `eal_args`: what followed the first "--" on the command line (main takes it before CLI11 parses).
std::unique_ptr<Command> addRunCommand(CLI::App& top, const std::vector<std::string>& eal_args);
std::unique_ptr<Command> addWhatifCommand(CLI::App& top);
std::unique_ptr<Command> addHashPasswordCommand(CLI::App& top);
// Hidden: `burstscope completion bash|zsh` prints a completion script made from top's option table.
std::unique_ptr<Command> addCompletionCommand(CLI::App& top);

// Set by SIGINT and SIGTERM: the capture or analysis stops and reports what it has.
extern std::atomic<bool> g_stop;

// The one error line ("burstscope: ..."), then the exit code.
int fail(const absl::Status& s, int exit_code);

// "100,1000,5000" with a unit factor; names the flag in the error.
absl::StatusOr<std::vector<double>> parseList(const std::string& flag, const std::string& text);

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
std::string durationText(int64_t ns);

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

  void add(CLI::App* a, bool live);
  bool given(const char* flag) const { return app->get_option(flag)->count() > 0; }

  // Applies the flags (all of them, or with only_given just those on the command line).
  absl::Status apply(EngineConfig& ec, DecoderConfig& dc, int64_t* reorder_ns, size_t* workers_per_port,
                     bool only_given) const;
};

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
absl::Status analysisConfig(const AnalyzeOptions& o, PipelineConfig* pc, DecoderConfig* dc, FileReadOptions* read);

// What analyze makes of some files: the result and how to render it (one code path for analyze and compare).
struct Analysis {
  RunResult result;
  PipelineConfig config;
};

// Runs the analysis of `files` with o's flags; on an error, *exit_code is 2 for a usage error, else 1.
// `pair_periods`: the JSON's period per heavy host pair (neither the text nor a comparison shows it; on a long
// file it is most of the training analysis).
absl::StatusOr<Analysis> analyzeFiles(const AnalyzeOptions& o, const std::vector<std::string>& files, bool pair_periods,
                                      int* exit_code);

// A progress line on stderr while `report` or `compare --out` reads its inputs (`what` names the command and,
// for compare, the file); only on a terminal.
void showProgress(const std::string& what, const ReportProgress& p);

}  // namespace burstscope::cli
