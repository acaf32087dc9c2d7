// `burstscope whatif` (docs/studies.md): measured jobs superposed on one link, Bmax aligned, over random
// offsets and for the offsets that minimise it.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "src/app/cli.h"
#include "src/studies/whatif.h"

namespace burstscope::cli {
namespace {

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

class WhatifSubcommand final : public Command {
 public:
  WhatifOptions wo;

  int run() override { return runWhatifCommand(wo); }
};

}  // namespace

std::unique_ptr<Command> addWhatifCommand(CLI::App& top) {
  auto c = std::make_unique<WhatifSubcommand>();
  WhatifOptions& wo = c->wo;
  CLI::App* whatif = top.add_subcommand(
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
  c->app = whatif;
  return c;
}

}  // namespace burstscope::cli
