// Reading capture files: one file against the same packets in several files merged by time (issue: a merged
// read of N files stays within 10% of one file's speed). The bundled real trace, repeated 10 times back to
// back (388 k packets), is written once with libpcap into /tmp as
//   - one file;
//   - one file per source host (4 files, interleaved in time as host captures are);
//   - 8 files dealt round-robin by packet (every next packet from another file: the merge's worst case);
//   - 8 consecutive pieces (a rotated capture: files that follow one another);
//   - the one file compressed with gzip and with zstd (the decompression's cost beside the merge's).
// Each iteration opens the files and reads every record into a sink that sums the wire lengths.
#include <benchmark/benchmark.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_common.h"

namespace burstscope::bench {
namespace {

struct Files {
  std::string dir;
  std::string one, gz, zst;
  std::vector<std::string> per_host, round_robin, pieces;
};

// Writes packets `which` of the trace repeated (index i: packet i % size of repeat i / size, 2 s later each).
void writePcap(const std::string& path, const RawFrames& f, const std::vector<size_t>& which) {
  pcap_t* dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  if (d == nullptr) std::abort();
  for (size_t i : which) {
    const size_t k = i % f.ts.size();
    const int64_t ts = f.ts[k] + static_cast<int64_t>(i / f.ts.size()) * 2'000'000'000;
    pcap_pkthdr h{};
    h.ts.tv_sec = ts / 1'000'000'000;
    h.ts.tv_usec = ts % 1'000'000'000;
    h.caplen = static_cast<uint32_t>(f.data[k].size());
    h.len = f.wire_len[k];
    pcap_dump(reinterpret_cast<u_char*>(d), &h, f.data[k].data());
  }
  pcap_dump_close(d);
  pcap_close(dead);
}

const Files& files() {
  static const Files made = [] {
    Files out;
    char tmpl[] = "/tmp/bs_read_bench_XXXXXX";
    out.dir = mkdtemp(tmpl);
    const RawFrames f = loadBundledTrace();
    constexpr size_t kRepeat = 10;
    const size_t n = f.ts.size() * kRepeat;
    std::vector<size_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = i;
    out.one = out.dir + "/one.pcap";
    writePcap(out.one, f, all);
    // Per source host: the IPv4 source address's last byte (frames without one go with host 0).
    std::map<int, std::vector<size_t>> hosts;
    for (size_t i = 0; i < n; ++i) {
      const auto& d = f.data[i % f.ts.size()];
      const bool v4 = d.size() >= 30 && d[12] == 0x08 && d[13] == 0x00;
      hosts[v4 ? d[29] : 0].push_back(i);
    }
    for (const auto& [h, which] : hosts) {
      out.per_host.push_back(out.dir + "/host" + std::to_string(h) + ".pcap");
      writePcap(out.per_host.back(), f, which);
    }
    for (size_t k = 0; k < 8; ++k) {
      std::vector<size_t> rr, piece;
      for (size_t i = k; i < n; i += 8) rr.push_back(i);
      for (size_t i = k * n / 8; i < (k + 1) * n / 8; ++i) piece.push_back(i);
      out.round_robin.push_back(out.dir + "/rr" + std::to_string(k) + ".pcap");
      writePcap(out.round_robin.back(), f, rr);
      out.pieces.push_back(out.dir + "/piece" + std::to_string(k) + ".pcap");
      writePcap(out.pieces.back(), f, piece);
    }
    out.gz = out.dir + "/one.pcap.gz";
    out.zst = out.dir + "/one.pcap.zst";
    if (std::system(("gzip -c " + out.one + " > " + out.gz + " && zstd -q -c " + out.one + " > " + out.zst).c_str()) !=
        0) {
      std::abort();
    }
    static std::string dir = out.dir;  // a plain static, still alive when the exit handler runs
    std::atexit([] { (void)std::system(("rm -rf " + dir).c_str()); });
    return out;
  }();
  return made;
}

struct Sum final : FrameSink {
  uint64_t bytes = 0, packets = 0;
  void onFrame(const Frame& f) override {
    bytes += f.wire_len;
    ++packets;
  }
};

void readFiles(benchmark::State& state, const std::vector<std::string>& paths) {
  uint64_t packets = 0;
  for (auto _ : state) {
    auto src = openPcapFiles(paths);
    if (!src.ok()) {
      state.SkipWithError(std::string(src.status().message()).c_str());
      return;
    }
    Sum sink;
    std::atomic<bool> stop{false};
    (void)(*src)->run(sink, stop);
    benchmark::DoNotOptimize(sink.bytes);
    packets += sink.packets;
  }
  state.SetItemsProcessed(static_cast<int64_t>(packets));
}

void BM_Read_OneFile(benchmark::State& state) { readFiles(state, {files().one}); }
void BM_Read_PerHostFiles(benchmark::State& state) { readFiles(state, files().per_host); }
void BM_Read_RoundRobin8Files(benchmark::State& state) { readFiles(state, files().round_robin); }
void BM_Read_Consecutive8Files(benchmark::State& state) { readFiles(state, files().pieces); }
void BM_Read_OneFileGzip(benchmark::State& state) { readFiles(state, {files().gz}); }
void BM_Read_OneFileZstd(benchmark::State& state) { readFiles(state, {files().zst}); }
BENCHMARK(BM_Read_OneFile)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Read_PerHostFiles)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Read_RoundRobin8Files)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Read_Consecutive8Files)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Read_OneFileGzip)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Read_OneFileZstd)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace burstscope::bench

BENCHMARK_MAIN();
