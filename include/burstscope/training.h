// Training awareness (docs/SPEC.md "ML-training awareness", docs/training.md): reading jobs, step periods,
// bytes per step, communication topology, co-bursts and fan-in out of the mirrored traffic.
//
// Two halves, so that the packet path gets one flow lookup per packet and nothing else:
// - the *aggregator* (an engine Aggregator, on the port's worker thread) counts each directed 5-tuple flow's
//   bytes per 100 µs aligned bin and hands the bins of each report interval over as a TrainingDelta;
// - the *analyzer* (on the control thread, or once at the end of a capture file) keeps a trailing window of
//   those bins and, per interval, infers the jobs and computes everything else from bins.
// Offline there are no report intervals: the whole file is one delta, analysed once.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "burstscope/evidence.h"
#include "burstscope/packet.h"
#include "burstscope/window.h"

namespace burstscope {

// An IPv4 or IPv6 prefix, "10.0.0.0/24" or "fd00::/64".
struct Cidr {
  std::array<uint8_t, 16> addr{};
  uint8_t family = 4;
  int bits = 32;
  bool contains(const std::array<uint8_t, 16>& a, uint8_t fam) const;
};
absl::StatusOr<Cidr> parseCidr(const std::string& text);

struct JobSpec {
  std::string name;
  std::vector<Cidr> hosts;  // a host belongs to the first job one of whose prefixes holds it
};

struct HostLink {
  Cidr hosts;
  double bps = 0;
};

struct TrainingConfig {
  bool enabled = true;
  // The trailing window jobs, periods, bytes per step and topology are read from (live); long enough for
  // five steps of a job stepping every 10 s. Offline, the whole file (up to max_window_bins of bins).
  int64_t window_ns = 60'000'000'000;
  int64_t bin_ns = 100'000;  // co-burst and series bins (the engine's base bin)
  size_t max_flows = 4096;   // flows whose bins are kept per port; the rest are counted as untracked
  // Memory bound of the analyzer's window: bins held at once over all flows (16 bytes each); the oldest go first.
  size_t max_window_bins = size_t{1} << 23;
  // Jobs: configured ones first; then, among the remaining hosts, connected components of host pairs that
  // carry at least this share of the busier of their two hosts' bytes (and at least job_min_bytes).
  std::vector<JobSpec> jobs;
  double job_edge_share = 0.02;
  uint64_t job_min_bytes = 1'000'000;
  size_t max_jobs = 8;  // the heaviest jobs by bytes; the rest of the traffic is "other"
  // Step period search range and acceptance.
  double min_period_s = 0.002;
  double max_period_s = 30;
  double min_period_quality = 0.5;  // normalised autocorrelation at the period
  // A directed host pair is a data edge of its job's topology when it carries at least this share of the
  // job's heaviest pair (reverse-direction ACKs carry a few percent and stay out).
  double data_edge_share = 0.25;
  // Co-bursts: a source is bursting toward a destination in a 100 µs bin when its rate toward it is at
  // least this share of the destination's link rate (or coburst_bps, if set).
  double coburst_share = 0.1;
  double coburst_bps = 0;
  double default_host_link_bps = 0;     // a destination's link rate; 0: the port's
  std::vector<HostLink> host_links;     // per host or prefix, first match
  double receiver_buffer_bytes = 0;     // fan-in backlog above this is counted (0: not counted)
  size_t top_destinations = 10;         // destinations reported by name (by backlog)
  size_t max_destinations = 4096;       // destinations whose backlog state is kept
  int64_t forget_ns = 600'000'000'000;  // a silent job is still reported (idle) for this long
  bool pair_periods = false;            // also a period per heavy host pair (analyze --json)
  bool interval_bins = true;            // each job's 100 µs bins of the analysed intervals (the live view's)
  // Live: the share of the control thread's (wall) time a port's analyses may take. After an analysis that took
  // t, the port's intervals are taken in but not analysed for t·(1/budget − 1), or until ten wait; the next
  // analysis covers them all, as a control thread catching up does. 1: every hand-over (docs/training.md "Cost
  // on the control thread", src/pipeline/analysis_pace.h).
  double analysis_budget = 0.1;
};

// Names the first bad field.
absl::Status validateTrainingConfig(const TrainingConfig& c);

// One flow's traffic over one report interval (or a whole file): totals and its non-empty bins.
struct TrainingFlowBins {
  FlowKey key;
  uint64_t packets = 0;
  uint64_t bytes = 0;
  std::vector<std::pair<int64_t, uint32_t>> bins;  // (bin index = ts / bin_ns, bytes), ascending
  // Transport payload per bin, beside `bins` (same length; empty: not known): TCP sequence space newly
  // covered (no headers, no retransmitted bytes), RoCEv2 IB payload. What the model-size estimate rests on.
  std::vector<uint32_t> payload;
};

struct TrainingDelta {
  int64_t start_ns = 0;  // the interval [start, end), or the file's first bin to its last
  int64_t end_ns = 0;
  int64_t bin_ns = 100'000;
  std::vector<TrainingFlowBins> flows;
  uint64_t untracked_packets = 0;  // IP packets of flows beyond max_flows
  uint64_t untracked_bytes = 0;
};

// The aggregator the engine runs (Engine::addAggregator). With report intervals its deltas go into
// IntervalReport::training at each interval's close; without, the whole input is one delta in
// EngineResult::training.
std::unique_ptr<Aggregator> makeTrainingAggregator(const TrainingConfig& c, bool report_intervals);
// How many flow runs the training aggregator `a` (makeTrainingAggregator's) found through the engine's flow table's
// hint (FlowHint) so far; 0 for any other aggregator. No output reads it: the tests do, so that a change which
// quietly stopped the hints reaching it is seen.
uint64_t trainingRunsByHint(const Aggregator& a);
// How many runs of flows beyond max_flows it knew to be untracked from their hint alone (a refusal of the epoch), so
// far; 0 for any other aggregator. For the tests, as trainingRunsByHint.
uint64_t trainingRefusedByHint(const Aggregator& a);

// ---- What the analyzer reports ------------------------------------------------------------------------

struct PeriodReport {
  std::optional<double> period_s;  // none: no period (see why)
  std::string why;                 // when none: "too few steps", "aperiodic", "steady", "no traffic"
  double quality = 0;              // normalised autocorrelation at the period, 0..1
  uint64_t steps = 0;              // steps with traffic that the figures rest on
  double duty_cycle = 0;           // fraction of the period with traffic above the burst threshold
  bool changed = false;            // the period was read from the recent steps only (it changed)
};

struct TopologyEdge {
  std::string src, dst;  // host addresses
  uint64_t bytes = 0;
  double share = 0;  // of the job's bytes
  // Share of the job's counted steps in which it carried transport payload (-1: no period to count steps by).
  double steps_share = -1;
  double step_offset = -1;  // where in the step its payload lies (weighted circular mean, share of the period)
  // Below the data-edge share, but carrying payload in (nearly) every step: structure, such as a pipeline's
  // activations beside far heavier data-parallel traffic (docs/training.md "Parallelism").
  bool light = false;
};

struct TopologyReport {
  // ring, tree, star, parameter-server, mesh, pipeline, hybrid, sharded, expert-parallel, unknown
  std::string kind = "unknown";
  std::string evidence;              // what the kind rests on; for unknown, why no class fits
  std::vector<std::string> order;    // ring: the ranks in ring order (from the lowest address); pipeline: stages
  std::vector<std::string> servers;  // parameter-server: the servers; tree/star: the root first, then relays
  std::vector<std::string> workers;  // parameter-server: the workers; tree/star: the leaves
  // pipeline, hybrid: each pipeline's hosts in stage order (stage 0 first: the one whose activations leave first)
  std::vector<std::vector<std::string>> pipelines;
  // hybrid: the data-parallel groups, one per stage (the same stage of every pipeline, in pipeline order)
  std::vector<std::vector<std::string>> groups;
  std::vector<TopologyEdge> edges;  // the data edges, heaviest first, then the light structural ones (at most 64)
  double data_share = 0;            // share of the job's bytes on the data edges
  double reverse_share = 0;         // share on the reverse of data edges below the data threshold (ACKs)
  double top_flows_share = 0;       // share of the job's bytes in its 5 heaviest flows
  uint64_t flows = 0;               // distinct flows of the job in the window
  uint64_t flows_for_99pct = 0;     // the fewest flows that carry 99% of the job's bytes
};

struct RankReport {
  std::string host;
  std::string role;       // from the topology: rank, server, worker, root, relay, leaf
  std::string successor;  // ring only
  double sent_bytes_per_step = 0;
};

// One collective phase inside a step (SPEC "Phases of a step"): a burst group of the job, means over the steps
// that have the typical number of phases.
struct PhaseReport {
  double offset_s = 0;  // from the step's start
  double length_s = 0;
  double bytes = 0;      // the job's wire bytes in it
  uint32_t senders = 0;  // hosts that sent transport payload in it
  uint32_t pairs = 0;    // directed host pairs that carried payload in it (all-to-all: N(N-1))
};

struct StepPhases {
  uint64_t count = 0;  // phases in the typical step: the most frequent count among the counted steps
  uint64_t steps = 0;  // counted steps with that count: the figures rest on them
  std::vector<PhaseReport> phases;
  double idle_s = 0;      // the step's time outside every phase: compute the network does not hide
  double idle_share = 0;  // of the period
};

// One step of a job as the period cuts them: [start, end) runs from the quietest stretch before the step's
// traffic to the one after it.
struct StepSpan {
  uint64_t index = 0;  // 0: the job's first step in the window (the first of typical volume)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  double bytes = 0;                      // the job's bytes in it
  bool counted = false;                  // of typical volume: bytes per step rests on these
  std::optional<StepEvidence> evidence;  // when the evidence aggregator runs (filled by the pipeline)
};
inline constexpr size_t kMaxListedSteps = 4096;

struct JobReport {
  std::string name;
  bool configured = false;
  std::vector<std::string> hosts;  // ascending
  // The last interval (offline: the whole file).
  uint64_t bytes = 0;
  uint64_t packets = 0;
  double rate_bps = 0;                     // the interval's mean
  double baseline_bps = 0;                 // mean over the window (PtM's baseline)
  std::vector<uint64_t> envelope_bytes;    // per engine scale, from 100 µs bins (SPEC: never above the truth)
  std::vector<std::optional<double>> ptm;  // per scale
  std::vector<double> backlog_bytes;       // per engine rate, from 100 µs bins
  double idle_s = 0;                       // since the job's last packet
  // Over the window.
  uint64_t window_bytes = 0;
  PeriodReport period;
  double step_bytes_mean = 0;  // the job's bytes per step
  double step_bytes_cv = 0;    // their spread: standard deviation / mean
  double step_bytes_min = 0, step_bytes_max = 0;
  std::vector<RankReport> ranks;
  // Ring: mean rank transport payload per step × N / (2(N−1)) (SPEC "Model size": no headers, no
  // retransmissions).
  // Sharded: mean rank payload per step × N / (3(N−1)) (two gathers and one reduction of the model per step);
  // hybrid: the sum over its stages of each data-parallel group's ring figure.
  std::optional<double> gradient_bytes;
  TopologyReport topology;
  StepPhases phases;  // with a period
  // With a period: the steps that happened, from the job's first step of typical volume in the window to its
  // last, those in which it sent (the latest kMaxListedSteps).
  std::vector<StepSpan> steps;
  // The job's own non-empty 100 µs bins of the analysed interval(s), (bin index = ts / bin, bytes) ascending:
  // the live view's per-job picture. Only with TrainingConfig::interval_bins (live runs; a file's analysis leaves
  // them out) and when they cover at most kMaxIntervalBinsSpan (else empty).
  std::vector<std::pair<int64_t, uint64_t>> interval_bins;
};
inline constexpr int64_t kMaxIntervalBinsSpan = 60'000'000'000;

struct DestinationReport {
  std::string host;
  double link_bps = 0;
  uint64_t bytes = 0;                  // toward it, in the interval
  uint64_t max_sources = 0;            // most sources bursting toward it in one 100 µs bin, in the interval
  uint64_t cobursts = 0;               // bins with ≥ 2 bursting sources, cumulative
  uint64_t cross_job_cobursts = 0;     // of those, bins whose sources belong to ≥ 2 jobs, cumulative
  std::vector<uint64_t> sources_hist;  // cumulative: bins with k bursting sources, k = 1..16 (16: 16 or more)
  double max_backlog_bytes = 0;        // toward it at its link rate, in the interval
  uint64_t over_buffer_bins = 0;       // cumulative: bins ending with the backlog above the receiver buffer
  std::vector<std::string> jobs;       // jobs of the sources that co-bursted toward it (cumulative)
};

struct PairPeriod {
  std::string src, dst;
  uint64_t bytes = 0;
  PeriodReport period;
};

struct TrainingReport {
  int64_t at_ns = 0;      // the end of what it covers
  int64_t window_ns = 0;  // how much trailing time it covers
  std::vector<JobReport> jobs;
  uint64_t other_bytes = 0;                     // in the window, between hosts of no job
  std::vector<DestinationReport> destinations;  // top by max backlog in the interval
  uint64_t destinations_seen = 0;
  std::vector<PairPeriod> pairs;   // with pair_periods
  uint64_t untracked_packets = 0;  // cumulative
  double analysis_ms = 0;          // what the last analysis took
  size_t intervals = 0;            // the report intervals it took in (live: more than one when deferred or behind)
};

// The control-thread half. ingest() each delta in time order; analyze() whenever a report is wanted (after one
// delta or several: the interval figures and the fan-in cover every delta since the last analysis).
class TrainingAnalyzer {
 public:
  // link_bps: the port's (a destination's default link rate); scales and rates: the engine's.
  TrainingAnalyzer(const TrainingConfig& c, double link_bps, std::vector<int64_t> scales_ns,
                   std::vector<double> rates_bps);
  ~TrainingAnalyzer();
  TrainingAnalyzer(const TrainingAnalyzer&) = delete;
  TrainingAnalyzer& operator=(const TrainingAnalyzer&) = delete;

  void ingest(std::shared_ptr<const TrainingDelta> d);
  // Figures of the deltas since the last analysis (the interval), over the trailing window for the rest.
  TrainingReport analyze();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace burstscope
