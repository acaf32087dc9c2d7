// The XDP capture program's own cost per frame, as the kernel measures it (bpf_prog_test_run_opts: the real
// verifier and JIT, no NIC), with and without the 100 µs bins (SPEC "Overload"; docs/af-xdp.md): what counting
// every frame into the kernel's bins adds on the packet path. Frames pass (no socket is bound), so the figure
// is the program's work without the redirect, which is the same in both. Needs root (CAP_BPF).
#include <benchmark/benchmark.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <vector>

#include "src/capture/afxdp/xdp_program.h"

namespace burstscope {
namespace {

void BM_XdpProgram(benchmark::State& state) {
  if (geteuid() != 0) {
    state.SkipWithError("loading BPF programs needs root (CAP_BPF)");
    return;
  }
  XdpProgramConfig cfg;
  cfg.bins = state.range(0) != 0;
  cfg.snaplen = 256;
  auto p = XdpProgram::load(cfg);
  if (!p.ok()) {
    state.SkipWithError(std::string(p.status().message()).c_str());
    return;
  }
  std::vector<uint8_t> frame(static_cast<size_t>(state.range(1)), 0);
  frame[12] = 0x08;  // IPv4
  frame[14] = 0x45;
  constexpr uint32_t kRepeat = 100'000;
  xdp_md ctx{};
  ctx.data_end = static_cast<__u32>(frame.size());
  for (auto _ : state) {
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    opts.data_in = frame.data();
    opts.data_size_in = static_cast<__u32>(frame.size());
    opts.ctx_in = &ctx;
    opts.ctx_size_in = sizeof(ctx);
    opts.repeat = kRepeat;
    if (bpf_prog_test_run_opts((*p)->progFd(), &opts) != 0) {
      state.SkipWithError("bpf_prog_test_run_opts failed");
      return;
    }
    // The kernel's own mean time per run (ns), without the syscall around it.
    state.SetIterationTime(static_cast<double>(opts.duration) * kRepeat / 1e9);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRepeat);
}
BENCHMARK(BM_XdpProgram)
    ->ArgNames({"bins", "bytes"})
    ->Args({0, 1500})
    ->Args({1, 1500})
    ->Args({0, 64})
    ->Args({1, 64})
    ->UseManualTime();

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
