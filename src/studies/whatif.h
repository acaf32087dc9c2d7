// `burstscope whatif` (docs/studies.md): several measured jobs superposed on one link of rate r with time
// offsets — all aligned, N random offsets, and the offsets a deterministic search finds to minimise the peak
// backlog — the burstiness paper's extrapolation to several applications. Each job is a capture file read as
// `analyze` reads it (same decoder, reorder stage and clock-step handling), held as two compact arrays (time
// since its first packet in ns, wire length); a schedule's merged packet stream goes through the window
// engine, so that Bmax(r) and E(τ) are the engine's exact figures, never a second implementation.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "burstscope/decode.h"
#include "burstscope/window.h"
#include "nlohmann/json.hpp"

namespace burstscope {

// One job argument: PATH, then optionally *COUNT (that many independent copies, each with its own offset)
// and one of @period=DURATION (stretch time so that the measured step period becomes DURATION) or
// @scale=FACTOR (multiply every time since the first packet by FACTOR), in either order:
// "a.pcap", "a.pcap*4", "a.pcap@period=300ms", "a.pcap*2@scale=1.5". An argument that names an existing
// file is taken whole, whatever characters it holds.
struct WhatifJobSpec {
  std::string text;  // the argument as given, for messages
  std::string path;
  size_t count = 1;
  std::optional<int64_t> period_ns;  // @period=
  std::optional<double> scale;       // @scale=
};
inline constexpr size_t kWhatifMaxCopies = 1024;
// Errors name the argument and the bad part: "job 'a.pcap*x': '*x' is not a count (want *N, 1 <= N <= 1024)".
absl::StatusOr<WhatifJobSpec> parseWhatifJob(const std::string& text);

// "100G", "25Gbit/s", "400M", "1e9": bit/s (k, M, G, T decimal). Errors name `flag`.
absl::StatusOr<double> parseRateBps(std::string_view flag, const std::string& text);
// "16MiB", "12MB", "512KiB", "1000000": bytes (kB/MB/GB decimal, KiB/MiB/GiB binary). Errors name `flag`.
absl::StatusOr<double> parseBufferBytes(std::string_view flag, const std::string& text);

struct WhatifConfig {
  std::vector<WhatifJobSpec> jobs;
  double rate_bps = 100e9;
  double buffer_bytes = 16.0 * 1024 * 1024;
  size_t trials = 100;
  uint64_t seed = 1;
  // The search: coordinate descent over `search_grid` offsets per job (k·P/grid, k = 0..grid-1), at most
  // `search_sweeps` sweeps (docs/studies.md).
  size_t search_grid = 16;
  size_t search_sweeps = 3;
  std::vector<int64_t> scales_ns = EngineConfig{}.scales_ns;  // of the envelope of the sum
  int64_t reorder_horizon_ns = 1'000'000;                     // as analyze's default
  DecoderConfig decoder;
  // Called now and then from the calling thread: what is being done, and how far along (done of total).
  std::function<void(std::string_view what, size_t done, size_t total)> progress;
};

// One job as superposed (a copy of a repeated file is a job of its own).
struct WhatifJobResult {
  std::string spec;  // the argument it came from
  std::string path;
  size_t copy = 1;  // 1..count
  uint64_t packets = 0;
  uint64_t bytes = 0;
  int64_t duration_ns = 0;  // first to last packet, after time scaling
  double time_scale = 1;    // factor applied to every time since the first packet
  // The step period the training analyzer found in the file (before scaling), of the heaviest job that has
  // one; none with the reason.
  std::optional<double> measured_period_s;
  std::string period_job;         // the training job it is the period of
  std::string no_period_why;      // "aperiodic", "steady", "too few steps", "no job", ...
  int64_t offset_range_ns = 0;    // random offsets are uniform in [0, this)
  std::string offset_range_from;  // "step period" or "duration"
  double alone_bmax_bytes = 0;    // the job alone on the link, Bmax(r)
};

struct WhatifSchedule {
  std::vector<int64_t> offsets_ns;  // per job, added to its time since its first packet
  double bmax_bytes = 0;            // Bmax(r) of the merged stream, exact (the engine's)
  bool exceeds_buffer = false;      // bmax_bytes > buffer
};

struct WhatifScale {
  int64_t tau_ns = 0;
  uint64_t envelope_bytes = 0;  // E(τ) of the merged stream
  bool exact = false;
  std::optional<double> ptm;  // none when τ is longer than the merged stream
};

struct WhatifEnvelope {
  double mean_bps = 0;  // merged stream, first to last packet
  std::vector<WhatifScale> scales;
};

struct WhatifDistribution {
  double min = 0, median = 0, p90 = 0, p99 = 0, max = 0;  // nearest rank
  double exceed_fraction = 0;                             // of the trials, Bmax > buffer
};

struct WhatifResult {
  double rate_bps = 0;
  double buffer_bytes = 0;
  uint64_t seed = 0;
  size_t search_grid = 0;
  size_t search_sweeps = 0;
  std::vector<WhatifJobResult> jobs;
  WhatifSchedule aligned;
  WhatifEnvelope aligned_envelope;
  std::vector<WhatifSchedule> trials;
  std::optional<WhatifDistribution> distribution;  // with at least one trial
  // The search's end: never above aligned nor any random trial (it starts from the lowest of them).
  WhatifSchedule best;
  std::string best_from;  // "aligned", "random trial N" (the search improved nothing), "search from ..."
  WhatifEnvelope best_envelope;
  size_t search_evaluations = 0;  // schedules the search evaluated beyond its start
  size_t search_sweeps_run = 0;
};

absl::StatusOr<WhatifResult> runWhatif(const WhatifConfig& config);

nlohmann::ordered_json whatifJson(const WhatifResult& r);
std::string whatifText(const WhatifResult& r);

}  // namespace burstscope
