// Source -> decode -> SPSC ring -> reorder -> engine, on two threads: the capture thread runs the source and
// the decoder, the calling thread runs the engine. Offline (lossless) the capture thread waits when the
// ring is full, since a file loses nothing by waiting; live, it drops and counts, never blocks.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"
#include "burstscope/decode.h"
#include "burstscope/source.h"
#include "burstscope/window.h"

namespace burstscope {

struct PipelineConfig {
  EngineConfig engine;
  DecoderConfig decoder;
  int64_t reorder_horizon_ns = 1'000'000;
  size_t ring_capacity = size_t{1} << 16;  // records
  bool lossless = true;
};

// Every frame that reached the pipeline, counted once: received == analysed + ring_drops.
struct Ledger {
  uint64_t received = 0;
  uint64_t analysed = 0;
  uint64_t ring_drops = 0;
  bool balanced() const { return received == analysed + ring_drops; }
};

struct PipelineResult {
  EngineResult engine;
  DecodeStats decode;
  SourceStats source;
  Ledger ledger;
  uint64_t reordered = 0;
  uint64_t clamped = 0;
  int64_t max_lateness_ns = 0;
  uint64_t clock_steps_back = 0;  // timestamps stepping back by over a second: time shifted on (Reorderer)
  int64_t clock_shift_ns = 0;
};

absl::StatusOr<PipelineResult> runPipeline(PacketSource& source, const PipelineConfig& config,
                                           const std::atomic<bool>& stop);

}  // namespace burstscope
