// burstscope command line: the top level and the dispatch to the commands, one file each in src/app (cli.h).
// Flags live only in src/app; modules take plain config structs.
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
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

// The offline commands (analyze, report, compare, whatif) take their memory on transparent huge pages, where the
// kernel gives them only to who asks (Debian's default "madvise" mode). A file's analysis touches tens of MB once
// (reading queues, exact windows, the training analysis's series of a million bins); at a 4 KiB page each that is
// thousands of page faults, a third of `analyze`'s time on a minute-long file here (bench/README.md, issue 41).
// Every thread allocates from the one heap (M_ARENA_MAX 1: the reader's and the worker's blocks too; they allocate
// rarely once running). The heap is grown by kHugeHeap at once (M_TOP_PAD for one allocation), and what it grew by
// past the block and the free top's header is advised MADV_HUGEPAGE before anything is in it; it stays the heap's
// free top (keepFreedMemory), untouched until used. Not `run`: a live port's worker must not wait on the kernel
// compacting memory for a huge page, and its packet memory is DPDK's or AF_XDP's own. BURSTSCOPE_SMALL_PAGES in
// the environment (set to anything) leaves it out; so does the caller's own top pad (MALLOC_TOP_PAD_ or its
// tunable, which this would override), and an allocator that refuses glibc's settings (a sanitizer's).
void onHugePages(std::string_view command) {
  if (command != "analyze" && command != "report" && command != "compare" && command != "whatif") return;
  // NOLINTBEGIN(concurrency-mt-unsafe): one thread yet
  if (std::getenv("BURSTSCOPE_SMALL_PAGES") != nullptr || std::getenv("MALLOC_TOP_PAD_") != nullptr) return;
  if (const char* t = std::getenv("GLIBC_TUNABLES");
      t != nullptr && std::string_view(t).find("top_pad") != std::string_view::npos)
    return;
  std::string mode;
  std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"), mode);
  if (mode.find("[madvise]") == std::string::npos) return;  // "always" gives them anyway, "never" to no one
  constexpr size_t kHugePage = size_t{2} << 20, kHugeHeap = size_t{256} << 20, kFirst = size_t{1} << 20;
  constexpr int kDefaultTopPad = 128 << 10;  // glibc's
  if (mallopt(M_ARENA_MAX, 1) == 0 || mallopt(M_TOP_PAD, static_cast<int>(kHugeHeap)) == 0) return;
  // The first block past the heap's free top makes it grow by kHugeHeap more than the block (only the block and the
  // new top's header are written, should MALLOC_PERTURB_ fill what it hands out).
  const auto start = reinterpret_cast<uintptr_t>(::sbrk(0));
  void* block = std::malloc(kFirst);
  mallopt(M_TOP_PAD, kDefaultTopPad);
  if (block == nullptr) return;
  const auto at = reinterpret_cast<uintptr_t>(block);
  const auto end = reinterpret_cast<uintptr_t>(::sbrk(0));
  // What the break moved by, past the block and the new top's header: the heap's new free top and nothing else,
  // if the break moved by kHugeHeap (the block came from the heap, which grew; not from a mapping of its own).
  const uintptr_t from = (std::max(start, at + kFirst + 64) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t to = end & ~(kHugePage - 1);
  if (end >= start + kHugeHeap && at < end && to > from)
    ::madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
  std::free(block);
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
  onHugePages(app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name());
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
