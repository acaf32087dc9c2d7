// burstscope command line: the top level and the dispatch to the commands, one file each in src/app (cli.h).
// Flags live only in src/app; modules take plain config structs.
#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "src/app/cli.h"
#include "src/export/revision.h"

#ifndef BURSTSCOPE_VERSION
#define BURSTSCOPE_VERSION "dev"
#endif

namespace {

void onSignal(int) { burstscope::cli::g_stop.store(true); }

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

int mainImpl(int argc, char** argv) {
  using namespace burstscope::cli;
  CLI::App app{"burstscope: burst metrics for ML-training traffic on a mirror port"};
  app.require_subcommand(1);
  // "burstscope 0.1.0 (revision 8f3c2a1b9d0e)": the package version and the git revision built from, as the
  // burstscope_build_info metric carries them.
  app.set_version_flag("--version",
                       std::string("burstscope ") + BURSTSCOPE_VERSION + " (revision " + BURSTSCOPE_REVISION + ")");

  std::vector<std::string> eal_args;  // after "--": `run`'s
  // In the order --help lists them; the last is hidden from it.
  std::unique_ptr<Command> commands[] = {
      addAnalyzeCommand(app), addReportCommand(app),       addCompareCommand(app),   addRunCommand(app, eal_args),
      addWhatifCommand(app),  addHashPasswordCommand(app), addCompletionCommand(app)};

  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  try {
    // Everything after the first "--" is the EAL's, taken before CLI11 parses (a vector option such as
    // --vdev right before "--" would otherwise swallow the separator).
    int ours = argc;
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]) == "--") {
        ours = i;
        eal_args.assign(argv + i + 1, argv + argc);
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
  for (const std::unique_ptr<Command>& c : commands) {
    if (c->given()) return c->run();
  }
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
