// Shared by the benchmarks: the bundled real trace, decoded once into records, as benchmark input.
#pragma once

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "burstscope/decode.h"
#include "src/capture/pcap/pcap_reader.h"

namespace burstscope::bench {

struct RawFrames {
  std::vector<std::vector<uint8_t>> data;
  std::vector<uint32_t> wire_len;
  std::vector<int64_t> ts;
};

// A committed trace's frames (`path` from the repository's root).
inline RawFrames loadTrace(const std::string& path) {
  RawFrames f;
  auto src = openPcapFiles({std::string(BURSTSCOPE_SOURCE_ROOT) + "/" + path});
  if (!src.ok()) return f;
  struct Collect : FrameSink {
    RawFrames* f;
    void onFrame(const Frame& fr) override {
      f->data.emplace_back(fr.data.begin(), fr.data.end());
      f->wire_len.push_back(fr.wire_len);
      f->ts.push_back(fr.ts_ns);
    }
  } sink;
  sink.f = &f;
  std::atomic<bool> stop{false};
  (void)(*src)->run(sink, stop);
  return f;
}

// The bundled trace of real training traffic (the README's first command replays it).
inline constexpr const char* kBundledTrace = "data/ddp-gloo-w3-3steps.pcap";
inline RawFrames loadBundledTrace() { return loadTrace(kBundledTrace); }

// A committed trace's records (`path` from the repository's root) in timestamp order, as the engine receives them.
inline std::vector<PacketRecord> traceRecords(const std::string& path, const DecoderConfig& config = {}) {
  const RawFrames f = loadTrace(path);
  Decoder d(config);
  std::vector<PacketRecord> out(f.ts.size());
  for (size_t i = 0; i < out.size(); ++i) {
    d.decode(f.data[i], f.wire_len[i], &out[i]);
    out[i].ts_ns = f.ts[i];
  }
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.ts_ns < b.ts_ns; });
  return out;
}
// The bundled trace's records.
inline std::vector<PacketRecord> bundledRecords(const DecoderConfig& config = {}) {
  return traceRecords(kBundledTrace, config);
}

}  // namespace burstscope::bench
