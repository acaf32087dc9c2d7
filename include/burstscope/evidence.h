// Congestion evidence beside the bursts (docs/evidence.md): ECN marks, TCP retransmissions and out-of-order
// segments (Wireshark's rules), RoCEv2 CNPs, NAKs, go-back-N resends and messages, PFC and PAUSE frames and
// the time each priority stood paused; per port and direction, per host pair and top flow, per 100 µs base
// bin, and on every microburst of the port stream (a *congesting* burst has evidence inside or just after it).
// One more aggregator of the engine: the live and the offline path run the same code.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "burstscope/packet.h"
#include "burstscope/window.h"

namespace burstscope {

struct EvidenceConfig {
  bool enabled = true;
  // Evidence this long after a microburst still belongs to it. Negative (the default): the microburst scale τ,
  // as SPEC defines a congesting burst ("during which, or within one τ after which").
  int64_t after_ns = -1;
  // Bins kept for annotating microbursts: a microburst longer than this gets the evidence of its last part.
  int64_t retain_ns = 10'000'000'000;
  size_t max_listed = size_t{1} << 20;  // bins and congesting bursts listed (offline); all are counted
  // A run of one connection's common segments (in order, ACK only, no hole) taken a run at a time, on the steps
  // that can apply to them (evidence.cc tcpRun). false: every segment through the general steps, which count the
  // same: the reference the tests and evidence_bench set the run-level path against. Not a user setting.
  bool common_segments_by_run = true;
};

// "evidence.after: ..." naming the key.
absl::Status validateEvidenceConfig(const EvidenceConfig& c, int64_t base_bin_ns);

// The events that make a burst congesting, per base bin and per burst.
enum EvidenceSignal : uint8_t {
  kSignalCe,
  kSignalCnp,
  kSignalNak,
  kSignalRoceResent,
  kSignalTcpRetransmission,
  kSignalPause,
  kSignalCount
};
const char* signalName(int s);  // "ce", "cnp", "naks", "roce_resent", "tcp_retransmissions", "pause_frames"

struct SignalCounts {
  std::array<uint32_t, kSignalCount> n{};
  uint64_t total() const {
    uint64_t t = 0;
    for (uint32_t v : n) t += v;
    return t;
  }
  void add(const SignalCounts& o) {
    for (int i = 0; i < kSignalCount; ++i) n[i] += o.n[i];
  }
};

struct EvidenceCounts {
  uint64_t ip_packets = 0;
  uint64_t ect = 0;
  uint64_t ce = 0;
  uint64_t tcp_ece = 0;
  uint64_t tcp_cwr = 0;
  uint64_t tcp_data_segments = 0;
  uint64_t tcp_retransmissions = 0;
  uint64_t tcp_out_of_order = 0;
  uint64_t tcp_untracked_segments = 0;
  // Mirror self-checks (docs/mirror.md): what the endpoints' sequence numbers say the mirror did not show.
  uint64_t tcp_lost_segments = 0;       // tcp.analysis.lost_segment: a segment starting beyond nextseq
  uint64_t tcp_ack_lost_segments = 0;   // tcp.analysis.ack_lost_segment: an ACK beyond maxseqtobeacked
  uint64_t tcp_holes_filled = 0;        // sequence holes the sender later sent into: the network's loss
  uint64_t tcp_holes_acked_unseen = 0;  // holes the receiver acknowledged while the mirror never showed them
  uint64_t tcp_bytes_acked_unseen = 0;  // their bytes: data the mirror lost
  uint64_t tcp_holes_untracked = 0;     // holes beyond the per-direction bound, neither filled nor acked here
  uint64_t roce_packets = 0;
  uint64_t cnp = 0;
  uint64_t nak_psn_sequence_error = 0;
  uint64_t nak_rnr = 0;
  uint64_t nak_other = 0;
  uint64_t roce_resent = 0;
  uint64_t roce_messages = 0;
  uint64_t roce_message_bytes = 0;
  uint64_t pause_frames = 0;  // PAUSE and PFC frames
  uint64_t naks() const { return nak_psn_sequence_error + nak_rnr + nak_other; }
  uint64_t events() const { return ce + cnp + naks() + roce_resent + tcp_retransmissions + pause_frames; }
  void merge(const EvidenceCounts& o);
};

// Priorities 0-7 of PFC, and index 8 for 802.3x PAUSE ("all").
inline constexpr int kPausePriorities = 9;
struct PauseCounts {
  uint64_t frames = 0;
  uint64_t quanta = 0;
  int64_t paused_ns = 0;
};

struct KeyedEvidence {
  FlowKey key;
  EvidenceCounts counts;
};

struct CnpTarget {
  FlowKey key;  // destination address (in dst) and QP: the sender told to slow down
  uint64_t cnp = 0;
};

struct AnnotatedBurst {
  Microburst burst;
  SignalCounts evidence;  // in the base bins overlapping [start, end + after]
};

struct EvidenceBin {
  int64_t start_ns = 0;
  SignalCounts evidence;
  uint64_t hosts = 0;  // host signature of the packets that carried it (all ones: a pause, which has no hosts)
};

// One base bin's events on one host pair (offline): what a training job's steps sum (docs/evidence.md).
struct PairBinEvidence {
  int64_t start_ns = 0;
  FlowKey pair;  // source and destination host (FlowKey::pairKey)
  SignalCounts evidence;
};

// The evidence on a training job's host pairs in one of its steps (training.h StepSpan; docs/evidence.md).
struct StepEvidence {
  SignalCounts counts;  // events in the base bins that start inside the step
  uint64_t congesting_bursts =
      0;               // congesting bursts starting inside it with events on the job's pairs in their window
  std::string toward;  // the destination of most of those events
};

// Cumulative since the start (an interval's report: up to the interval's end; offline: the whole input).
struct EvidenceReport {
  int64_t after_ns = 0;
  int64_t span_ns = 0;  // time the paused fractions are taken over
  EvidenceCounts totals;
  std::vector<std::pair<Direction, EvidenceCounts>> directions;  // only directions seen
  std::vector<KeyedEvidence> pairs;    // the engine's top pairs, in its order (interval: report_top_k of them)
  std::vector<KeyedEvidence> flows;    // the engine's top flows, likewise
  std::vector<CnpTarget> cnp_targets;  // heaviest 10
  // Every host pair with an event (at most 4096, most events first): what the training section sums per job.
  std::vector<KeyedEvidence> event_pairs;
  std::array<PauseCounts, kPausePriorities> pause{};
  uint64_t microbursts = 0;  // port-stream microbursts annotated so far
  uint64_t congesting = 0;   // of them with evidence
  Histogram congesting_sizes_bytes;
  std::vector<AnnotatedBurst> bursts;  // the congesting ones (offline: all, bounded; interval: this interval's)
  std::vector<EvidenceBin> bins;       // offline only: bins with evidence, bounded
  // Each bin's events per host pair, in time order, bounded (offline: all; interval: this interval's).
  std::vector<PairBinEvidence> pair_bins;
  // This interval's own figures (an interval's report only), for the live line.
  EvidenceCounts interval;
  uint64_t interval_microbursts = 0;
  uint64_t interval_congesting = 0;
  uint64_t listed_dropped = 0;  // bins, pair bins or bursts not listed because of max_listed
};

// The aggregator; it also observes the port stream's microbursts. Add it to the engine and subscribe it.
class EvidenceAggregator final : public Aggregator, public EngineObserver {
 public:
  EvidenceAggregator(const EvidenceConfig& c, const EngineConfig& engine, bool intervals);
  ~EvidenceAggregator() override;
  void add(std::span<const PacketRecord> records) override;
  void addRuns(std::span<const PacketRecord> records, std::span<const uint32_t> run_starts) override;
  // A flow's hint holds its TCP connection: with thousands of connections interleaved (many jobs), most runs
  // would miss the recent-connection cache and probe the connection table again.
  bool wantsFlowHints() const override { return true; }
  void addRunsHinted(std::span<const PacketRecord> records, std::span<const uint32_t> run_starts,
                     std::span<FlowHint* const> hints) override;
  void closeInterval(const IntervalContext& c, IntervalReport* out) override;
  void finish() override;
  void result(EngineResult* out) const override;
  void onMicroburst(const Microburst& m) override;
  // How many TCP segments took the run-level common step (EvidenceConfig::common_segments_by_run) so far. No output
  // reads it: the tests and evidence_bench do, so that a change which quietly stopped using the path is seen.
  uint64_t segmentsTakenByRun() const;
  // How many runs were known to be of a connection the full table refused from their flow's hint alone, so far. For
  // the tests, as segmentsTakenByRun.
  uint64_t refusedByHint() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace burstscope
