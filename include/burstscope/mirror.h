// Mirror self-checks (docs/mirror.md): does the mirror port show the traffic as it was? Frames the mirror
// duplicated (the same frame twice within a short horizon, as when ingress and egress of two mirrored ports
// are copied), and a mirror running near or over its own capacity (the fraction of aligned windows whose line
// load reaches a threshold of the port's link rate). Frames the mirror lost are read from TCP sequence numbers
// by the evidence aggregator (evidence.h, tcp_lost_segments and after) and from ERSPAN sequence numbers by the
// decoder (decode.h, mirror_seq_gaps); the reports put the three together.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "burstscope/packet.h"
#include "burstscope/window.h"

namespace burstscope {

struct MirrorConfig {
  bool enabled = true;
  // A frame whose duplicate key (decode.h duplicateKeyFromIp) equals one seen at most this long before is a
  // copy. 50 µs covers a switch's forwarding latency plus 50 µs of queue between the two mirrored ports
  // (625 KB at 100 Gb/s) and stays below the earliest a sender repeats a segment (a round trip, and the key
  // holds the IP ID, sequence and acknowledgement numbers). docs/mirror.md.
  int64_t duplicate_horizon_ns = 50'000;
  // A window is overloaded when its line load (frames with FCS, preamble and inter-frame gap) reaches this
  // fraction of the port's link capacity.
  double overload_threshold = 0.95;
  std::vector<int64_t> load_scales_ns{100'000, 1'000'000};
};

// "mirror.duplicate-horizon: ..." naming the key.
absl::Status validateMirrorConfig(const MirrorConfig& c);

// Bytes a frame of `wire_len` (FCS excluded) occupies on the link: FCS 4, preamble and SFD 8, gap 12.
inline constexpr uint32_t kLineOverheadBytes = 24;

struct MirrorLoad {
  int64_t scale_ns = 0;
  uint64_t windows = 0;     // aligned windows that ended, from the first packet's on (empty ones included)
  uint64_t overloaded = 0;  // of them with line load >= threshold × capacity
  double peak = 0;          // the highest line load of one window, a fraction of capacity
};

// Cumulative since the start (offline: the whole input).
struct MirrorReport {
  int64_t duplicate_horizon_ns = 0;
  double capacity_bps = 0;
  double overload_threshold = 0;
  // Per direction of the later copy (packet.h Direction: unknown, ingress, egress).
  std::array<uint64_t, kDirectionCount> duplicates{};
  std::array<uint64_t, kDirectionCount> duplicate_bytes{};
  uint64_t checked = 0;          // frames looked at for copies (IP frames with a key, TCP without payload excepted)
  uint64_t displaced = 0;        // remembered frames pushed out inside their horizon: copies of them went unseen
  std::vector<MirrorLoad> load;  // per scale of MirrorConfig::load_scales_ns
  uint64_t duplicatesTotal() const { return duplicates[0] + duplicates[1] + duplicates[2]; }
};

class MirrorAggregator final : public Aggregator {
 public:
  MirrorAggregator(const MirrorConfig& c, const EngineConfig& engine);
  ~MirrorAggregator() override;
  void add(std::span<const PacketRecord> records) override;
  void addRuns(std::span<const PacketRecord> records, std::span<const uint32_t> run_starts) override;
  void closeInterval(const IntervalContext& c, IntervalReport* out) override;
  void finish() override;
  void result(EngineResult* out) const override;
  // The duplicate table's buckets now: 256 at first, doubled up to 4,096 where frames within their horizon would
  // otherwise be pushed out (no output reads it; the tests do).
  size_t tableBuckets() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace burstscope
