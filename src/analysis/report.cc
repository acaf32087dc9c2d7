#include "src/analysis/report.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "burstscope/evidence.h"
#include "burstscope/mirror.h"

namespace burstscope {
namespace {

using Json = nlohmann::ordered_json;

double durationNs(const StreamResult& s) { return static_cast<double>(s.last_ns - s.first_ns); }

// Mean rate over the whole stream, first to last packet (SPEC: offline baseline M is the whole trace).
double meanBps(const StreamResult& s) {
  const double dur = durationNs(s);
  return dur > 0 ? static_cast<double>(s.bytes) * 8e9 / dur : 0.0;
}

// PtM(τ) against the whole trace's mean (SPEC: the offline baseline); undefined when τ is longer than it.
std::optional<double> ptm(const StreamResult& s, const ScaleResult& sc) {
  if (static_cast<double>(sc.tau_ns) > durationNs(s)) return std::nullopt;
  return peakToMean(sc.envelope_bytes, sc.tau_ns, meanBps(s));
}

// The element of rank k (0-based: the k-th smallest) of v, selected by the bits of its value: a double's bits, the
// sign's flipped and a negative one's inverted, order as the doubles do. A pass counts the candidates by their next
// digit (12 bits: sign and exponent, then 13 at a time) and keeps those in the digit that holds rank k. No
// comparisons to mispredict: std::nth_element, a pass over half of its range per partition with a coin-toss branch
// in each, was a millisecond of the report of 20,000 microbursts (perf, bench/README.md). -0.0 counts as 0; v holds
// no NaN (the report's samples are times, bytes and rates) and more than k elements.
double ofRank(std::span<const double> v, size_t k) {
  constexpr int kDigits[] = {52, 39, 26, 13, 0};  // each digit's lowest bit
  thread_local std::vector<uint64_t> cand, next;
  thread_local std::vector<uint32_t> count;
  cand.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t b = 0;
    const double x = v[i] == 0 ? 0.0 : v[i];
    std::memcpy(&b, &x, sizeof(b));
    cand[i] = (b >> 63) != 0 ? ~b : b | (uint64_t{1} << 63);
  }
  for (size_t d = 0; d < std::size(kDigits) && cand.size() > 1; ++d) {
    const int shift = kDigits[d];
    const int bits = d == 0 ? 12 : 13;
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    count.assign(size_t{1} << bits, 0);
    for (uint64_t c : cand) ++count[(c >> shift) & mask];
    uint64_t digit = 0;
    while (k >= count[digit]) k -= count[digit++];
    next.clear();
    for (uint64_t c : cand) {
      if (((c >> shift) & mask) == digit) next.push_back(c);
    }
    cand.swap(next);
  }
  const uint64_t c = cand[std::min(k, cand.size() - 1)];  // every candidate left has the same bits
  const uint64_t b = (c >> 63) != 0 ? c & ~(uint64_t{1} << 63) : ~c;
  double x = 0;
  std::memcpy(&x, &b, sizeof(x));
  return x;
}

struct Distribution {
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
  size_t n = 0;
};
// The q-quantile of a sample is its element of rank min(n - 1, q·n).
Distribution distribution(const std::vector<double>& v) {
  Distribution d;
  d.n = v.size();
  if (v.empty()) return d;
  auto quantile = [&](double q) {
    return ofRank(v, std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size()))));
  };
  d.p50 = quantile(0.5);
  d.p90 = quantile(0.9);
  d.p99 = quantile(0.99);
  d.max = *std::max_element(v.begin(), v.end());
  return d;
}

struct MicroburstStats {
  Distribution durations_s, gaps_s, volumes_bytes, peaks_bps;
};
MicroburstStats microburstStats(const MicroburstResult& m) {
  std::vector<double> dur, gap, vol, peak;
  for (size_t i = 0; i < m.events.size(); ++i) {
    const Microburst& e = m.events[i];
    dur.push_back(static_cast<double>(e.end_ns - e.start_ns) * 1e-9);
    vol.push_back(static_cast<double>(e.bytes));
    peak.push_back(e.peak_bps);
    if (i > 0) gap.push_back(static_cast<double>(e.start_ns - m.events[i - 1].end_ns) * 1e-9);
  }
  return {distribution(dur), distribution(gap), distribution(vol), distribution(peak)};
}

Json distJson(const Distribution& d) {
  return Json{{"n", d.n}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}};
}

Json histogramJson(const Histogram& h) {
  Json buckets = Json::array();
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    cumulative += h.counts[i];
    buckets.push_back(Json{{"le", i < h.bounds.size() ? Json(h.bounds[i]) : Json("+Inf")}, {"count", cumulative}});
  }
  return Json{{"count", h.count}, {"sum", h.sum}, {"buckets", buckets}};
}

Json scalesJson(const StreamResult& s, bool with_histograms) {
  Json out = Json::array();
  for (const ScaleResult& sc : s.scales) {
    auto p = ptm(s, sc);
    Json j{
        {"tau_us", sc.tau_ns / 1000},
        {"envelope_bytes", sc.envelope_bytes},
        {"ptm", p ? Json(*p) : Json(nullptr)},
        {"peak_bin_bytes", sc.peak_bin_bytes},
        {"mean_bin_bytes", sc.bins_spanned ? static_cast<double>(s.bytes) / static_cast<double>(sc.bins_spanned) : 0.0},
        {"peak_gbps", static_cast<double>(sc.envelope_bytes) * 8.0 / static_cast<double>(sc.tau_ns)},
        {"peak_bin_packets", sc.peak_bin_packets},
        {"exact", sc.exact}};
    if (with_histograms && sc.utilisation) j["utilisation"] = histogramJson(*sc.utilisation);
    out.push_back(std::move(j));
  }
  return out;
}

Json microburstJson(const MicroburstResult& m, const EngineConfig& cfg) {
  MicroburstStats st = microburstStats(m);
  return Json{{"tau_us", cfg.microburst_tau_ns / 1000},
              {"threshold", cfg.microburst_threshold},
              {"link_capacity_bps", cfg.link_capacity_bps},
              {"count", m.count},
              {"durations_s", distJson(st.durations_s)},
              {"gaps_s", distJson(st.gaps_s)},
              {"volumes_bytes", distJson(st.volumes_bytes)},
              {"peak_bps", distJson(st.peaks_bps)},
              // Over every microburst (the quantiles above cover the first max_microburst_events).
              {"histograms", Json{{"durations_s", histogramJson(m.durations_s)},
                                  {"gaps_s", histogramJson(m.gaps_s)},
                                  {"volumes_bytes", histogramJson(m.volumes_bytes)}}}};
}

Json streamJson(const StreamResult& s, const EngineConfig& cfg) {
  Json j{{"packets", s.packets}, {"bytes", s.bytes},       {"first_ns", s.first_ns},
         {"last_ns", s.last_ns}, {"mean_bps", meanBps(s)}, {"scales", scalesJson(s, true)}};
  Json backlog = Json::array();
  for (const BacklogResult& b : s.backlog) {
    backlog.push_back(Json{{"rate_gbps", b.rate_bps / 1e9}, {"max_backlog_bytes", b.max_backlog_bytes}});
  }
  j["backlog"] = backlog;
  if (s.microbursts) j["microbursts"] = microburstJson(*s.microbursts, cfg);
  return j;
}

Json heavyJson(const HeavyResult& h, uint64_t total_bytes, bool flows) {
  Json top = Json::array();
  for (const HeavyHitter& x : h.top) {
    Json j{{"key", flows ? flowToString(x.key) : pairToString(x.key)},
           {"src", addressToString(x.key, true)},
           {"dst", addressToString(x.key, false)}};
    if (flows) {
      j["kind"] = flowKindName(x.key);
      if (static_cast<FlowKind>(x.key.kind) == FlowKind::kRoceQp) {
        j["qp"] = x.key.qp();
      } else {
        j["src_port"] = x.key.src_port;
        j["dst_port"] = x.key.dst_port;
      }
      j["proto"] = x.key.proto;
    }
    j["packets"] = x.packets;
    j["bytes"] = x.bytes;
    j["share"] = total_bytes ? static_cast<double>(x.bytes) / static_cast<double>(total_bytes) : 0.0;
    j["first_ns"] = x.first_ns;
    j["last_ns"] = x.last_ns;
    if (x.windows) {
      j["windows_complete"] = x.windows_since_ns == x.first_ns;
      j["windows_since_ns"] = x.windows_since_ns;
      j["scales"] = scalesJson(*x.windows, false);
    }
    top.push_back(std::move(j));
  }
  return Json{{"top", top},
              {"other_packets", h.other_packets},
              {"other_bytes", h.other_bytes},
              {"entries", h.entries},
              {"evictions", h.evictions}};
}

std::string utcTime(int64_t ns);  // below, with the inputs

Json countsJson(const EvidenceCounts& c) {
  return Json{
      {"ip_packets", c.ip_packets},
      {"ect", c.ect},
      {"ce", c.ce},
      {"tcp_ece", c.tcp_ece},
      {"tcp_cwr", c.tcp_cwr},
      {"tcp_data_segments", c.tcp_data_segments},
      {"tcp_retransmissions", c.tcp_retransmissions},
      {"tcp_out_of_order", c.tcp_out_of_order},
      {"tcp_untracked_segments", c.tcp_untracked_segments},
      {"roce_packets", c.roce_packets},
      {"cnp", c.cnp},
      {"naks", Json{{"psn_sequence_error", c.nak_psn_sequence_error}, {"rnr", c.nak_rnr}, {"other", c.nak_other}}},
      {"roce_resent", c.roce_resent},
      {"roce_messages", c.roce_messages},
      {"roce_message_bytes", c.roce_message_bytes},
      {"pause_frames", c.pause_frames}};
}

Json signalsJson(const SignalCounts& s) {
  Json j = Json::object();
  for (int i = 0; i < kSignalCount; ++i) j[signalName(i)] = s.n[i];
  return j;
}

std::string pausePriorityName(int p) { return p == 8 ? "all" : absl::StrCat(p); }

Json evidenceJson(const EvidenceReport& e) {
  Json j{{"after_ns", e.after_ns}, {"totals", countsJson(e.totals)}};
  Json dirs = Json::object();
  for (const auto& [d, c] : e.directions) dirs[directionName(d)] = countsJson(c);
  j["directions"] = dirs;
  Json pairs = Json::array();
  for (const KeyedEvidence& k : e.pairs) {
    Json p = countsJson(k.counts);
    p["key"] = pairToString(k.key);
    p["src"] = addressToString(k.key, true);
    p["dst"] = addressToString(k.key, false);
    pairs.push_back(std::move(p));
  }
  j["pairs"] = pairs;
  Json flows = Json::array();
  for (const KeyedEvidence& k : e.flows) {
    Json f = countsJson(k.counts);
    f["key"] = flowToString(k.key);
    f["kind"] = flowKindName(k.key);
    if (static_cast<FlowKind>(k.key.kind) == FlowKind::kRoceQp) f["qp"] = k.key.qp();
    flows.push_back(std::move(f));
  }
  j["flows"] = flows;
  Json cnp = Json::array();
  for (const CnpTarget& t : e.cnp_targets) {
    cnp.push_back({{"host", addressToString(t.key, false)}, {"qp", t.key.qp()}, {"cnp", t.cnp}});
  }
  j["cnp_targets"] = cnp;
  Json pfc = Json::array();
  for (int p = 0; p < kPausePriorities; ++p) {
    const PauseCounts& c = e.pause[p];
    if (c.frames == 0) continue;
    pfc.push_back(
        {{"priority", pausePriorityName(p)},
         {"frames", c.frames},
         {"quanta", c.quanta},
         {"paused_ns", c.paused_ns},
         {"paused_fraction", e.span_ns > 0 ? static_cast<double>(c.paused_ns) / static_cast<double>(e.span_ns) : 0.0}});
  }
  j["pfc"] = pfc;
  Json events = Json::array();
  for (const AnnotatedBurst& b : e.bursts) {
    events.push_back({{"start_ns", b.burst.start_ns},
                      {"end_ns", b.burst.end_ns},
                      {"bytes", b.burst.bytes},
                      {"evidence", signalsJson(b.evidence)}});
  }
  j["microbursts"] = Json{{"count", e.microbursts},
                          {"congesting", e.congesting},
                          {"congesting_sizes_bytes", histogramJson(e.congesting_sizes_bytes)},
                          {"events", events}};
  Json bins = Json::array();
  for (const EvidenceBin& b : e.bins) {
    Json x = signalsJson(b.evidence);
    x["start_ns"] = b.start_ns;
    bins.push_back(std::move(x));
  }
  j["bins"] = bins;
  j["not_listed"] = e.listed_dropped;
  return j;
}

// The evidence between a job's hosts: its pairs' events summed.
EvidenceCounts jobEvidence(const JobReport& job, const EvidenceReport& e) {
  EvidenceCounts sum;
  auto in = [&](const std::string& h) { return std::binary_search(job.hosts.begin(), job.hosts.end(), h); };
  for (const KeyedEvidence& k : e.event_pairs) {
    if (in(addressToString(k.key, true)) && in(addressToString(k.key, false))) sum.merge(k.counts);
  }
  return sum;
}

// "812 CE, 31 CNP, 1 NAK, ...": the events that are there, or "none".
std::string eventsText(const SignalCounts& s) {
  static const char* const kShort[kSignalCount] = {"CE", "CNP", "NAK", "resent", "TCP retx", "pause"};
  std::string out;
  for (int i = 0; i < kSignalCount; ++i) {
    if (s.n[i]) absl::StrAppend(&out, out.empty() ? "" : ", ", s.n[i], " ", kShort[i]);
  }
  return out.empty() ? "none" : out;
}

std::string evidenceText(const EvidenceReport& e, const EngineConfig& cfg) {
  const EvidenceCounts& t = e.totals;
  std::string out = "\nCongestion evidence (docs/evidence.md)\n";
  absl::StrAppend(&out, absl::StrFormat("  ECN        %d of %d IP packets ECN-capable, %d CE; TCP ECE %d, CWR %d\n",
                                        t.ect + t.ce, t.ip_packets, t.ce, t.tcp_ece, t.tcp_cwr));
  absl::StrAppend(&out, absl::StrFormat("  TCP        %d data segments, %d retransmitted (%.3f%%), %d out of order%s\n",
                                        t.tcp_data_segments, t.tcp_retransmissions,
                                        t.tcp_data_segments ? 100.0 * static_cast<double>(t.tcp_retransmissions) /
                                                                  static_cast<double>(t.tcp_data_segments)
                                                            : 0.0,
                                        t.tcp_out_of_order,
                                        t.tcp_untracked_segments
                                            ? absl::StrCat(", ", t.tcp_untracked_segments, " not tracked (table full)")
                                            : std::string()));
  if (t.roce_packets) {
    absl::StrAppend(
        &out, absl::StrFormat("  RoCEv2     %d packets, %d CNP, NAK %d PSN sequence / %d RNR / %d other, %d resent "
                              "(go-back-N), %d messages of %s mean\n",
                              t.roce_packets, t.cnp, t.nak_psn_sequence_error, t.nak_rnr, t.nak_other, t.roce_resent,
                              t.roce_messages,
                              humanBytes(t.roce_messages ? static_cast<double>(t.roce_message_bytes) /
                                                               static_cast<double>(t.roce_messages)
                                                         : 0.0)));
    for (const CnpTarget& c : e.cnp_targets) {
      absl::StrAppend(&out, absl::StrFormat("    CNPs toward %s qp 0x%06x: %d\n", addressToString(c.key, false),
                                            c.key.qp(), c.cnp));
    }
  }
  for (int p = 0; p < kPausePriorities; ++p) {
    const PauseCounts& c = e.pause[p];
    if (c.frames == 0) continue;
    absl::StrAppend(
        &out, absl::StrFormat(
                  "  %-10s %d frames, %d quanta, paused %s (%.2f%% of the time)\n",
                  p == 8 ? std::string("PAUSE") : absl::StrCat("PFC prio ", p), c.frames, c.quanta,
                  humanSeconds(static_cast<double>(c.paused_ns) * 1e-9),
                  e.span_ns > 0 ? 100.0 * static_cast<double>(c.paused_ns) / static_cast<double>(e.span_ns) : 0.0));
  }
  absl::StrAppend(&out,
                  absl::StrFormat("  Microbursts with evidence inside or within %s after: %d of %d\n",
                                  humanSeconds(static_cast<double>(e.after_ns) * 1e-9), e.congesting, e.microbursts));
  const size_t shown = std::min<size_t>(e.bursts.size(), 10);
  for (size_t i = 0; i < shown; ++i) {
    const AnnotatedBurst& b = e.bursts[i];
    absl::StrAppend(&out, absl::StrFormat("    %s  %s, %s: %s\n", utcTime(b.burst.start_ns),
                                          humanSeconds(static_cast<double>(b.burst.end_ns - b.burst.start_ns) * 1e-9),
                                          humanBytes(static_cast<double>(b.burst.bytes)), eventsText(b.evidence)));
  }
  if (e.bursts.size() > shown) absl::StrAppend(&out, "    ... ", e.bursts.size() - shown, " more in the JSON\n");
  for (const KeyedEvidence& k : e.pairs) {
    if (k.counts.events() == 0) continue;
    absl::StrAppend(&out, absl::StrFormat("    pair %-34s %d CE, %d TCP retx, %d CNP, %d NAK, %d resent\n",
                                          pairToString(k.key), k.counts.ce, k.counts.tcp_retransmissions, k.counts.cnp,
                                          k.counts.naks(), k.counts.roce_resent));
  }
  (void)cfg;
  return out;
}

Json stepsJson(const JobReport& job) {
  Json steps = Json::array();
  for (const StepSpan& s : job.steps) {
    Json x{
        {"index", s.index}, {"start_ns", s.start_ns}, {"end_ns", s.end_ns}, {"bytes", s.bytes}, {"counted", s.counted}};
    if (s.evidence) {
      x["evidence"] = signalsJson(s.evidence->counts);
      x["congesting_bursts"] = s.evidence->congesting_bursts;
      x["toward"] = s.evidence->toward.empty() ? Json(nullptr) : Json(s.evidence->toward);
    }
    steps.push_back(std::move(x));
  }
  return steps;
}

bool eventful(const StepSpan& s) {
  return s.evidence && (s.evidence->counts.total() > 0 || s.evidence->congesting_bursts > 0);
}

// "step 41 of job-10.0.0.1: 3 congesting bursts toward 10.0.0.4, 812 CE, 31 CNP" (docs/evidence.md). Live, steps
// are numbered within the sliding training window, so the live line names a step by its start time instead.
std::string stepText(const JobReport& j, const StepSpan& s, bool by_time = false) {
  const StepEvidence& e = *s.evidence;
  const std::string toward = e.toward.empty() ? "" : " toward " + e.toward;
  const std::string step =
      by_time ? absl::StrCat("step at ",
                             absl::FormatTime("%H:%M:%E3S", absl::FromUnixNanos(s.start_ns), absl::UTCTimeZone()))
              : absl::StrCat("step ", s.index);
  if (e.congesting_bursts > 0) {
    return absl::StrFormat("%s of %s: %d congesting burst%s%s, %s", step, j.name, e.congesting_bursts,
                           e.congesting_bursts == 1 ? "" : "s", toward, eventsText(e.counts));
  }
  return absl::StrFormat("%s of %s: %s%s, no congesting burst", step, j.name, eventsText(e.counts), toward);
}

constexpr size_t kStepLines = 10;  // steps with evidence printed per job

std::string jobEvidenceText(const TrainingReport& t, const EvidenceReport& e) {
  std::string out;
  for (const JobReport& j : t.jobs) {
    const EvidenceCounts c = jobEvidence(j, e);
    absl::StrAppend(&out, absl::StrFormat("    job %-28s %d CE, %d TCP retx, %d CNP, %d NAK, %d resent\n", j.name, c.ce,
                                          c.tcp_retransmissions, c.cnp, c.naks(), c.roce_resent));
    // The steps with the most events, in time order.
    std::vector<size_t> with;
    for (size_t k = 0; k < j.steps.size(); ++k) {
      if (eventful(j.steps[k])) with.push_back(k);
    }
    if (with.empty()) continue;
    std::vector<size_t> shown = with;
    auto events = [&](size_t k) { return j.steps[k].evidence->counts.total(); };
    if (shown.size() > kStepLines) {
      std::stable_sort(shown.begin(), shown.end(), [&](size_t a, size_t b) { return events(a) > events(b); });
      shown.resize(kStepLines);
      std::sort(shown.begin(), shown.end());
    }
    absl::StrAppend(&out, absl::StrFormat("      %d of %d steps with evidence%s:\n", with.size(), j.steps.size(),
                                          with.size() > shown.size() ? " (the most eventful)" : ""));
    for (size_t k : shown) absl::StrAppend(&out, "      ", stepText(j, j.steps[k]), "\n");
  }
  return out;
}

Json decodeJson(const DecodeStats& d) {
  Json errors = Json::object();
  for (int i = 1; i < kDecodeErrorCount; ++i) {
    if (d.errors[i]) errors[decodeErrorName(static_cast<DecodeError>(i))] = d.errors[i];
  }
  return Json{{"ok", d.errors[0]},
              {"errors", errors},
              {"error_total", d.errorTotal()},
              {"non_ip", d.non_ip},
              {"encapsulated", d.encapsulated},
              {"mirror_seq_gaps", d.mirror_seq_gaps},
              {"mirror_seq_reorders", d.mirror_seq_reorders}};
}

void appendHeavy(std::string& out, const char* title, const HeavyResult& h, uint64_t total, bool flows) {
  absl::StrAppend(&out, "\n", title, " (", h.entries, " seen",
                  h.evictions ? absl::StrCat(", ", h.evictions, " evicted") : std::string(), ")\n");
  for (const HeavyHitter& x : h.top) {
    const double share = total ? 100.0 * static_cast<double>(x.bytes) / static_cast<double>(total) : 0;
    std::string burst;
    if (x.windows) {
      for (const ScaleResult& sc : x.windows->scales) {
        if (sc.tau_ns == 1'000'000)
          burst = absl::StrCat("  peak(1 ms) ", humanRate(static_cast<double>(sc.envelope_bytes) * 8e9 / 1e6));
      }
    }
    absl::StrAppend(&out, absl::StrFormat("  %-52s %10s %5.1f%%%s\n", flows ? flowToString(x.key) : pairToString(x.key),
                                          humanBytes(static_cast<double>(x.bytes)), share, burst));
  }
  if (h.other_bytes) {
    absl::StrAppend(
        &out, absl::StrFormat("  %-52s %10s %5.1f%%\n", "other", humanBytes(static_cast<double>(h.other_bytes)),
                              total ? 100.0 * static_cast<double>(h.other_bytes) / static_cast<double>(total) : 0));
  }
}

}  // namespace

std::string humanBytes(double b) {
  if (b >= 1e9) return absl::StrFormat("%.2f GB", b / 1e9);
  if (b >= 1e6) return absl::StrFormat("%.2f MB", b / 1e6);
  if (b >= 1e3) return absl::StrFormat("%.1f kB", b / 1e3);
  return absl::StrFormat("%.0f B", b);
}
std::string humanRate(double bps) {
  if (bps >= 1e9) return absl::StrFormat("%.2f Gbit/s", bps / 1e9);
  if (bps >= 1e6) return absl::StrFormat("%.1f Mbit/s", bps / 1e6);
  return absl::StrFormat("%.1f kbit/s", bps / 1e3);
}
std::string humanTau(int64_t ns) {
  if (ns >= 1'000'000'000 && ns % 1'000'000'000 == 0) return absl::StrCat(ns / 1'000'000'000, " s");
  if (ns >= 1'000'000 && ns % 1'000'000 == 0) return absl::StrCat(ns / 1'000'000, " ms");
  return absl::StrCat(ns / 1000, " us");
}
std::string humanSeconds(double s) {
  if (s >= 1) return absl::StrFormat("%.2f s", s);
  if (s >= 1e-3) return absl::StrFormat("%.2f ms", s * 1e3);
  return absl::StrFormat("%.0f us", s * 1e6);
}

namespace {

// The input files as read: one capture merged by time (the files read, in the order given).
Json inputsJson(const SourceStats& source) {
  Json files = Json::array();
  for (const InputFileStats& f : source.files) {
    files.push_back(Json{{"path", f.path},
                         {"format", f.format},
                         {"compression", f.compression},
                         {"link_types", f.link_types},
                         {"packets", f.packets},
                         {"first_ns", f.first_ns},
                         {"last_ns", f.last_ns}});
  }
  return Json{{"files", files},
              {"merged_by_time", true},
              {"overlap", source.overlap},
              {"dedup_window_ns", source.dedup_window_ns},
              {"duplicates_removed", source.duplicates_removed},
              {"warnings", source.warnings}};
}

std::string utcTime(int64_t ns) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%E9S", absl::FromUnixNanos(ns), absl::UTCTimeZone());
}

std::string inputsText(const SourceStats& source) {
  std::string out;
  if (source.files.size() > 1) {
    absl::StrAppend(&out, "Input: ", source.files.size(), " files, merged by time as one capture\n");
  }
  for (const InputFileStats& f : source.files) {
    absl::StrAppend(&out, absl::StrFormat("  %s: %s%s, %s, %d packets", f.path, f.format,
                                          f.compression == "none" ? "" : absl::StrCat(" (", f.compression, ")"),
                                          absl::StrJoin(f.link_types, "+"), f.packets));
    if (f.packets) absl::StrAppend(&out, ", ", utcTime(f.first_ns), " to ", utcTime(f.last_ns), " UTC");
    absl::StrAppend(&out, "\n");
  }
  if (source.dedup_window_ns > 0) {
    absl::StrAppend(&out, "  duplicates within ", humanSeconds(static_cast<double>(source.dedup_window_ns) * 1e-9),
                    " left out: ", source.duplicates_removed, "\n");
  }
  return out;
}

// Mirror self-checks (docs/mirror.md): copies, TCP and ERSPAN loss, the mirror port's load, capture drops.
Json mirrorTcpJson(const EvidenceCounts& c) {
  return Json{{"tcp_lost_segments", c.tcp_lost_segments},
              {"tcp_ack_lost_segments", c.tcp_ack_lost_segments},
              {"tcp_holes_filled", c.tcp_holes_filled},
              {"tcp_holes_acked_unseen", c.tcp_holes_acked_unseen},
              {"tcp_bytes_acked_unseen", c.tcp_bytes_acked_unseen},
              {"tcp_holes_untracked", c.tcp_holes_untracked}};
}

uint64_t captureDrops(const PortResult& r) { return r.ledger.ring_drops + r.device.dropStagesTotal(); }

Json mirrorJson(const PortResult& r) {
  Json j = Json::object();
  if (const MirrorReport* m = r.engine.mirror.get()) {
    Json dirs = Json::object();
    for (int d = 0; d < kDirectionCount; ++d) {
      if (m->duplicates[d] > 0) {
        dirs[directionName(static_cast<Direction>(d))] = {{"frames", m->duplicates[d]},
                                                          {"bytes", m->duplicate_bytes[d]}};
      }
    }
    uint64_t bytes = 0;
    for (uint64_t b : m->duplicate_bytes) bytes += b;
    j["duplicates"] = {{"horizon_ns", m->duplicate_horizon_ns},
                       {"checked", m->checked},
                       {"frames", m->duplicatesTotal()},
                       {"bytes", bytes},
                       {"displaced", m->displaced},
                       {"directions", dirs}};
    Json scales = Json::array();
    for (const MirrorLoad& l : m->load) {
      scales.push_back({{"scale_ns", l.scale_ns},
                        {"windows", l.windows},
                        {"overloaded", l.overloaded},
                        {"overloaded_fraction", l.windows ? static_cast<double>(l.overloaded) / l.windows : 0.0},
                        {"peak_load", l.peak}});
    }
    j["load"] = {{"capacity_bps", m->capacity_bps}, {"threshold", m->overload_threshold}, {"scales", scales}};
  }
  Json lost = Json::object();
  if (const EvidenceReport* e = r.engine.evidence.get()) {
    lost = mirrorTcpJson(e->totals);
    Json dirs = Json::object();
    for (const auto& [d, c] : e->directions) dirs[directionName(d)] = mirrorTcpJson(c);
    lost["directions"] = dirs;
  }
  lost["erspan_sequence_gaps"] = r.decode.mirror_seq_gaps;
  lost["erspan_out_of_sequence"] = r.decode.mirror_seq_reorders;
  j["lost"] = lost;
  j["capture_drops"] = captureDrops(r);
  return j;
}

std::string mirrorText(const PortResult& r) {
  std::string out = "\nMirror self-checks (docs/mirror.md)\n";
  if (const MirrorReport* m = r.engine.mirror.get()) {
    uint64_t bytes = 0;
    for (uint64_t b : m->duplicate_bytes) bytes += b;
    absl::StrAppend(&out, absl::StrFormat("  Duplicated frames (same frame within %s): %d of %d checked, %s",
                                          humanSeconds(static_cast<double>(m->duplicate_horizon_ns) * 1e-9),
                                          m->duplicatesTotal(), m->checked, humanBytes(static_cast<double>(bytes))));
    for (int d = 0; d < kDirectionCount; ++d) {
      if (m->duplicates[d] > 0 && m->duplicates[d] != m->duplicatesTotal()) {
        absl::StrAppend(&out, "; ", directionName(static_cast<Direction>(d)), " ", m->duplicates[d]);
      }
    }
    if (m->displaced) absl::StrAppend(&out, "; ", m->displaced, " remembered frames displaced early");
    absl::StrAppend(&out, "\n");
  }
  if (const EvidenceReport* e = r.engine.evidence.get()) {
    const EvidenceCounts& t = e->totals;
    absl::StrAppend(&out, absl::StrFormat("  TCP: %d segments after a hole (lost_segment), %d ACKs of unseen data "
                                          "(ack_lost_segment)\n",
                                          t.tcp_lost_segments, t.tcp_ack_lost_segments));
    absl::StrAppend(&out, absl::StrFormat("  Mirror lost: %d holes acknowledged unseen, %s", t.tcp_holes_acked_unseen,
                                          humanBytes(static_cast<double>(t.tcp_bytes_acked_unseen))));
    absl::StrAppend(&out, "; network lost (sender refilled): ", t.tcp_holes_filled, " holes");
    if (t.tcp_holes_untracked) absl::StrAppend(&out, "; ", t.tcp_holes_untracked, " holes not tracked");
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "  ERSPAN sequence gaps: ", r.decode.mirror_seq_gaps, " frames, ", r.decode.mirror_seq_reorders,
                  " out of sequence\n");
  if (const MirrorReport* m = r.engine.mirror.get()) {
    absl::StrAppend(&out, absl::StrFormat("  Mirror load (line bytes vs %s, threshold %.0f%%):",
                                          humanRate(m->capacity_bps), m->overload_threshold * 100));
    for (const MirrorLoad& l : m->load) {
      absl::StrAppend(&out, absl::StrFormat(" %s windows %d of %d over (peak %.0f%%);", humanTau(l.scale_ns),
                                            l.overloaded, l.windows, l.peak * 100));
    }
    absl::StrAppend(&out, " capture drops ", captureDrops(r), "\n");
  }
  return out;
}

}  // namespace

Json reportJson(const PortResult& r, const SourceStats& source, const ReportContext& ctx) {
  const EngineConfig& cfg = r.engine_config;
  const StreamResult& port = r.engine.port;
  Json j = streamJson(port, cfg);
  j["files"] = ctx.files;
  j["exactness"] =
      absl::StrCat("port and direction streams: E(tau) packet-level exact for tau <= ", cfg.exact_max_tau_ns / 1000,
                   " us (see scales[].exact); above that, and for pairs and flows, from ", cfg.base_bin_ns / 1000,
                   " us bins: never above the truth, never below it by more than one bin's bytes");
  Json dirs = Json::object();
  for (const auto& [d, s] : r.engine.directions) dirs[directionName(d)] = streamJson(s, cfg);
  j["directions"] = dirs;
  j["pairs"] = heavyJson(r.engine.pairs, port.bytes, false);
  j["flows"] = heavyJson(r.engine.flows, port.bytes, true);
  if (r.training) j["training"] = trainingJson(*r.training, r.engine_config);
  if (r.engine.evidence) {
    j["evidence"] = evidenceJson(*r.engine.evidence);
    if (r.training && j["training"].contains("jobs")) {
      for (size_t i = 0; i < r.training->jobs.size() && i < j["training"]["jobs"].size(); ++i) {
        j["training"]["jobs"][i]["evidence"] = countsJson(jobEvidence(r.training->jobs[i], *r.engine.evidence));
      }
    }
  }
  if (r.engine.mirror || r.engine.evidence) j["mirror"] = mirrorJson(r);
  j["non_ip_packets"] = r.engine.non_ip_packets;
  j["decode"] = decodeJson(r.decode);
  j["timestamps"] = Json{{"reordered", r.reordered},
                         {"clamped", r.clamped},
                         {"bad_timestamps", source.bad_timestamps},
                         {"max_lateness_ns", r.max_lateness_ns},
                         {"clock_steps_back", r.clock_steps_back},
                         {"clock_shift_ns", r.clock_shift_ns},
                         {"reorder_horizon_ns", ctx.reorder_horizon_ns}};
  j["ledger"] = Json{{"received", r.ledger.received},
                     {"analysed", r.ledger.analysed},
                     {"dropped", Json{{"ring_full", r.ledger.ring_drops}}},
                     {"truncated_records", source.truncated_records},
                     {"duplicates_removed", source.duplicates_removed},
                     {"balanced", r.ledger.balanced()}};
  j["inputs"] = inputsJson(source);
  return j;
}

namespace {

Json periodJson(const PeriodReport& p) {
  Json j;
  j["period_s"] = p.period_s ? Json(*p.period_s) : Json(nullptr);
  j["why"] = p.period_s ? "" : p.why;
  j["quality"] = p.quality;
  j["steps"] = p.steps;
  j["duty_cycle"] = p.period_s ? Json(p.duty_cycle) : Json(nullptr);
  j["changed"] = p.changed;
  return j;
}

std::string periodText(const PeriodReport& p) {
  if (!p.period_s) return absl::StrCat("no period (", p.why, ")");
  return absl::StrFormat("%s, duty cycle %.0f%%, %d steps, quality %.2f%s", humanSeconds(*p.period_s),
                         p.duty_cycle * 100, p.steps, p.quality, p.changed ? ", changed recently" : "");
}

}  // namespace

Json boundsJson(const IntervalBounds& b, const std::vector<int64_t>& scales_ns, const std::vector<double>& rates_bps) {
  Json j;
  j["packets"] = b.packets;
  j["bytes"] = b.bytes;
  j["lost_packets"] = b.lost;
  j["lost_bytes"] = b.lost_bytes;
  j["kernel_lost_packets"] = b.kernel_lost;
  // Wrapped frames lost before the producers: their measured bytes are only bounded by their captured ones.
  if (b.bytes_unsure > 0) j["bytes_upper"] = b.bytes + b.bytes_unsure;
  j["complete"] = b.complete;
  j["degraded"] = b.degraded();
  if (!b.degraded()) return j;
  auto pair = [](auto lo, auto hi, bool known) { return Json::array({lo, known ? Json(hi) : Json(nullptr)}); };
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  j["baseline_bps"] = b.baseline_bps;
  j["scales"] = Json::array();
  for (size_t i = 0; i < scales_ns.size() && i < b.envelope_bytes.size(); ++i) {
    j["scales"].push_back({{"tau_ns", scales_ns[i]},
                           {"bounded", static_cast<bool>(b.envelope_bounded[i])},
                           {"envelope_bytes", pair(b.envelope_bytes[i].first, b.envelope_bytes[i].second,
                                                   b.complete || !b.envelope_bounded[i])},
                           {"ptm_bounded", static_cast<bool>(b.ptm_bounded[i])},
                           {"ptm", Json::array({opt(b.ptm[i].first), opt(b.ptm[i].second)})}});
  }
  j["backlog"] = Json::array();
  for (size_t k = 0; k < rates_bps.size() && k < b.backlog_bytes.size(); ++k) {
    j["backlog"].push_back({{"rate_bps", rates_bps[k]},
                            {"bounded", static_cast<bool>(b.backlog_bounded[k])},
                            {"max_backlog_bytes", pair(b.backlog_bytes[k].first, b.backlog_bytes[k].second,
                                                       b.complete || !b.backlog_bounded[k])}});
  }
  // The port's microbursts with an instant in the interval: [at least, at most] (null: unknown).
  if (b.microbursts_bounded) j["microbursts"] = pair(b.microbursts.first, b.microbursts.second, b.complete);
  return j;
}

Json trainingJson(const TrainingReport& t, const EngineConfig& c) {
  Json j;
  j["window_s"] = static_cast<double>(t.window_ns) / 1e9;
  j["other_bytes"] = t.other_bytes;
  j["untracked_packets"] = t.untracked_packets;
  j["analysis_ms"] = t.analysis_ms;
  j["jobs"] = Json::array();
  for (const JobReport& r : t.jobs) {
    Json x;
    x["name"] = r.name;
    x["configured"] = r.configured;
    x["hosts"] = r.hosts;
    x["bytes"] = r.bytes;
    x["packets"] = r.packets;
    x["rate_bps"] = r.rate_bps;
    x["baseline_bps"] = r.baseline_bps;
    x["idle_s"] = r.idle_s;
    x["window_bytes"] = r.window_bytes;
    Json scales = Json::array();
    for (size_t i = 0; i < r.envelope_bytes.size() && i < c.scales_ns.size(); ++i) {
      scales.push_back({{"tau_ns", c.scales_ns[i]},
                        {"envelope_bytes", r.envelope_bytes[i]},
                        {"ptm", r.ptm[i] ? Json(*r.ptm[i]) : Json(nullptr)}});
    }
    x["scales"] = scales;
    x["precision"] = "100us bins";
    Json backlog = Json::array();
    for (size_t i = 0; i < r.backlog_bytes.size() && i < c.rates_bps.size(); ++i) {
      backlog.push_back({{"rate_bps", c.rates_bps[i]}, {"max_backlog_bytes", r.backlog_bytes[i]}});
    }
    x["backlog"] = backlog;
    x["period"] = periodJson(r.period);
    x["step_bytes"] = r.period.period_s ? Json{{"mean", r.step_bytes_mean},
                                               {"cv", r.step_bytes_cv},
                                               {"min", r.step_bytes_min},
                                               {"max", r.step_bytes_max}}
                                        : Json(nullptr);
    x["gradient_bytes_estimate"] = r.gradient_bytes ? Json(*r.gradient_bytes) : Json(nullptr);
    x["steps"] = stepsJson(r);
    Json ranks = Json::array();
    for (const RankReport& k : r.ranks) {
      ranks.push_back({{"host", k.host},
                       {"role", k.role},
                       {"successor", k.successor.empty() ? Json(nullptr) : Json(k.successor)},
                       {"sent_bytes_per_step", k.sent_bytes_per_step}});
    }
    x["ranks"] = ranks;
    const TopologyReport& tp = r.topology;
    Json edges = Json::array();
    for (const TopologyEdge& e : tp.edges) {
      edges.push_back({{"src", e.src},
                       {"dst", e.dst},
                       {"bytes", e.bytes},
                       {"share", e.share},
                       {"steps_share", e.steps_share < 0 ? Json(nullptr) : Json(e.steps_share)},
                       {"step_offset", e.step_offset < 0 ? Json(nullptr) : Json(e.step_offset)},
                       {"light", e.light}});
    }
    Json phases = Json::array();
    for (const PhaseReport& p : r.phases.phases) {
      phases.push_back({{"offset_s", p.offset_s},
                        {"length_s", p.length_s},
                        {"bytes", p.bytes},
                        {"senders", p.senders},
                        {"pairs", p.pairs}});
    }
    x["phases"] = {{"count", r.phases.count},
                   {"steps", r.phases.steps},
                   {"idle_s", r.phases.idle_s},
                   {"idle_share", r.phases.idle_share},
                   {"phases", phases}};
    x["topology"] = {{"kind", tp.kind},
                     {"evidence", tp.evidence},
                     {"pipelines", tp.pipelines},
                     {"groups", tp.groups},
                     {"order", tp.order},
                     {"servers", tp.servers},
                     {"workers", tp.workers},
                     {"edges", edges},
                     {"data_share", tp.data_share},
                     {"reverse_share", tp.reverse_share},
                     {"top_flows_share", tp.top_flows_share},
                     {"flows", tp.flows},
                     {"flows_for_99pct", tp.flows_for_99pct}};
    j["jobs"].push_back(x);
  }
  j["destinations"] = Json::array();
  for (const DestinationReport& d : t.destinations) {
    j["destinations"].push_back({{"host", d.host},
                                 {"link_bps", d.link_bps},
                                 {"bytes", d.bytes},
                                 {"max_sources", d.max_sources},
                                 {"cobursts", d.cobursts},
                                 {"cross_job_cobursts", d.cross_job_cobursts},
                                 {"sources_histogram", d.sources_hist},
                                 {"max_backlog_bytes", d.max_backlog_bytes},
                                 {"over_buffer_bins", d.over_buffer_bins},
                                 {"jobs", d.jobs}});
  }
  j["destinations_seen"] = t.destinations_seen;
  if (!t.pairs.empty()) {
    j["pairs"] = Json::array();
    for (const PairPeriod& p : t.pairs) {
      j["pairs"].push_back({{"src", p.src}, {"dst", p.dst}, {"bytes", p.bytes}, {"period", periodJson(p.period)}});
    }
  }
  return j;
}

std::string trainingText(const TrainingReport& t, const EngineConfig& c) {
  std::string out;
  absl::StrAppend(&out, "\nTraining (over ", humanSeconds(static_cast<double>(t.window_ns) / 1e9), "): ", t.jobs.size(),
                  t.jobs.size() == 1 ? " job" : " jobs", ", ", humanBytes(static_cast<double>(t.other_bytes)),
                  " between hosts of no job\n");
  for (const JobReport& r : t.jobs) {
    const TopologyReport& tp = r.topology;
    absl::StrAppend(&out, "  ", r.name, r.configured ? " (configured)" : "", ": ", r.hosts.size(), " hosts, ", tp.kind,
                    ", ", humanBytes(static_cast<double>(r.window_bytes)), ", mean ", humanRate(r.baseline_bps),
                    r.idle_s >= 1 ? absl::StrCat(", idle ", humanSeconds(r.idle_s)) : "", "\n");
    absl::StrAppend(&out, "    step period  ", periodText(r.period), "\n");
    if (r.period.period_s) {
      absl::StrAppend(
          &out, absl::StrFormat("    bytes/step   %s (spread %.1f%%, min %s, max %s)\n", humanBytes(r.step_bytes_mean),
                                r.step_bytes_cv * 100, humanBytes(r.step_bytes_min), humanBytes(r.step_bytes_max)));
    }
    if (r.gradient_bytes) {
      const std::string how =
          tp.kind == "sharded" ? absl::StrFormat(
                                     "sharded: each of the %d ranks sends 3(N-1)/N of the model per step, "
                                     "in two gathers and one reduction",
                                     r.hosts.size())
          : tp.kind == "hybrid"
              ? std::string(
                    "hybrid: each stage's data-parallel group reduces that stage's share, "
                    "a ring all-reduce per group, summed over the stages")
              : absl::StrFormat("ring all-reduce: each of the %d ranks sends 2(N-1)/N of them", r.hosts.size());
      absl::StrAppend(&out, absl::StrFormat("    model size   about %s (%s; transport payload, no headers or "
                                            "retransmissions)\n",
                                            humanBytes(*r.gradient_bytes), how));
    }
    if (tp.kind == "ring") {
      absl::StrAppend(&out, "    ring order   ", absl::StrJoin(tp.order, " > "), " > ", tp.order.front(), "\n");
    } else if (tp.kind == "parameter-server") {
      absl::StrAppend(&out, "    servers      ", absl::StrJoin(tp.servers, ", "), "; workers ",
                      absl::StrJoin(tp.workers, ", "), "\n");
    } else if (tp.kind == "tree" || tp.kind == "star") {
      absl::StrAppend(&out, "    root/relays  ", absl::StrJoin(tp.servers, ", "), "; leaves ",
                      absl::StrJoin(tp.workers, ", "), "\n");
    }
    for (const std::vector<std::string>& p : tp.pipelines) {
      absl::StrAppend(&out, "    pipeline     ", absl::StrJoin(p, " > "), "  (stage 0 first)\n");
    }
    for (size_t g = 0; g < tp.groups.size(); ++g) {
      absl::StrAppend(&out, "    stage ", g, " DP   ", absl::StrJoin(tp.groups[g], ", "), "\n");
    }
    absl::StrAppend(&out, "    kind because ", tp.evidence.empty() ? "-" : tp.evidence, "\n");
    if (r.phases.count > 0) {
      std::string list;
      for (size_t k = 0; k < r.phases.phases.size() && k < 8; ++k) {
        const PhaseReport& p = r.phases.phases[k];
        absl::StrAppend(
            &list, list.empty() ? "" : ", ",
            absl::StrFormat("+%s %s %s", humanSeconds(p.offset_s), humanSeconds(p.length_s), humanBytes(p.bytes)));
      }
      if (r.phases.phases.size() > 8) absl::StrAppend(&list, ", ...");
      absl::StrAppend(
          &out, absl::StrFormat("    phases       %d per step (in %d steps): %s; idle %s (%.0f%%)\n", r.phases.count,
                                r.phases.steps, list, humanSeconds(r.phases.idle_s), 100 * r.phases.idle_share));
    }
    absl::StrAppend(&out, absl::StrFormat("    evidence     %d data edges carry %.1f%% of its bytes, their reverse "
                                          "(ACKs) %.1f%%; 5 heaviest of %d flows carry %.1f%%, %d carry 99%%\n",
                                          tp.edges.size(), tp.data_share * 100, tp.reverse_share * 100, tp.flows,
                                          tp.top_flows_share * 100, tp.flows_for_99pct));
    for (const RankReport& k : r.ranks) {
      absl::StrAppend(&out,
                      absl::StrFormat("      %-16s %-7s %s/step%s\n", k.host, k.role, humanBytes(k.sent_bytes_per_step),
                                      k.successor.empty() ? "" : absl::StrCat("  > ", k.successor)));
    }
    std::string ptms;
    for (size_t i = 0; i < r.ptm.size() && i < c.scales_ns.size(); ++i) {
      absl::StrAppend(&ptms, " ", absl::StrReplaceAll(humanTau(c.scales_ns[i]), {{" ", ""}}), ":",
                      r.ptm[i] ? absl::StrFormat("%.1f", *r.ptm[i]) : std::string("-"));
    }
    absl::StrAppend(&out, "    PtM         ", ptms, "  (100us bins)\n");
  }
  if (!t.destinations.empty()) {
    absl::StrAppend(&out, "  Fan-in (sources bursting toward one host in a 100 us bin; backlog at its link rate):\n");
    for (const DestinationReport& d : t.destinations) {
      absl::StrAppend(&out,
                      absl::StrFormat("    %-16s max %d sources, %d co-burst bins (%d across jobs), backlog %s at "
                                      "%s%s\n",
                                      d.host, d.max_sources, d.cobursts, d.cross_job_cobursts,
                                      humanBytes(d.max_backlog_bytes), humanRate(d.link_bps),
                                      d.jobs.empty() ? "" : absl::StrCat(", jobs ", absl::StrJoin(d.jobs, ", "))));
    }
  }
  return out;
}

std::string reportText(const PortResult& r, const SourceStats& source, const ReportContext& ctx) {
  const EngineConfig& cfg = r.engine_config;
  const StreamResult& port = r.engine.port;
  std::string out;
  absl::StrAppend(&out, "burstscope analyze: ", absl::StrJoin(ctx.files, ", "), "\n");
  absl::StrAppend(&out, absl::StrFormat("  %d packets, %s over %s, mean %s\n", port.packets,
                                        humanBytes(static_cast<double>(port.bytes)),
                                        humanSeconds(durationNs(port) * 1e-9), humanRate(meanBps(port))));
  absl::StrAppend(&out, inputsText(source));
  absl::StrAppend(&out, "\nBurstiness (sliding-window envelope E(tau), peak-to-mean PtM = E / (mean * tau))\n");
  absl::StrAppend(&out, absl::StrFormat("  %-7s %14s %14s %9s %16s  %s\n", "tau", "E(tau) bytes", "peak rate", "PtM",
                                        "peak aligned bin", "precision"));
  for (const ScaleResult& sc : port.scales) {
    auto p = ptm(port, sc);
    absl::StrAppend(
        &out, absl::StrFormat("  %-7s %14d %14s %9s %16d  %s\n", humanTau(sc.tau_ns), sc.envelope_bytes,
                              humanRate(static_cast<double>(sc.envelope_bytes) * 8e9 / static_cast<double>(sc.tau_ns)),
                              p ? absl::StrFormat("%.1f", *p) : std::string("n/a"), sc.peak_bin_bytes,
                              sc.exact ? "exact" : "100us bins"));
  }
  absl::StrAppend(&out, "\nVirtual backlog Bmax(r): buffer a port of rate r would need for this traffic\n");
  for (const BacklogResult& b : port.backlog) {
    absl::StrAppend(&out, absl::StrFormat("  %-14s %s\n", humanRate(b.rate_bps), humanBytes(b.max_backlog_bytes)));
  }
  if (port.microbursts) {
    const MicroburstResult& m = *port.microbursts;
    MicroburstStats st = microburstStats(m);
    absl::StrAppend(
        &out, absl::StrFormat("\nMicrobursts (tau %s, at or above %.0f%% of %s): %d\n", humanTau(cfg.microburst_tau_ns),
                              cfg.microburst_threshold * 100, humanRate(cfg.link_capacity_bps), m.count));
    if (m.count) {
      absl::StrAppend(&out, absl::StrFormat("  duration  p50 %s  p99 %s  max %s\n", humanSeconds(st.durations_s.p50),
                                            humanSeconds(st.durations_s.p99), humanSeconds(st.durations_s.max)));
      absl::StrAppend(&out, absl::StrFormat("  gap       p50 %s  p99 %s  max %s\n", humanSeconds(st.gaps_s.p50),
                                            humanSeconds(st.gaps_s.p99), humanSeconds(st.gaps_s.max)));
      absl::StrAppend(&out, absl::StrFormat("  volume    p50 %s  p99 %s  max %s\n", humanBytes(st.volumes_bytes.p50),
                                            humanBytes(st.volumes_bytes.p99), humanBytes(st.volumes_bytes.max)));
    }
  }
  for (const auto& [d, s] : r.engine.directions) {
    absl::StrAppend(&out, absl::StrFormat("\nDirection %s: %d packets, %s, mean %s\n", directionName(d), s.packets,
                                          humanBytes(static_cast<double>(s.bytes)), humanRate(meanBps(s))));
  }
  appendHeavy(out, "Top host pairs", r.engine.pairs, port.bytes, false);
  appendHeavy(out, "Top flows", r.engine.flows, port.bytes, true);
  if (r.training) absl::StrAppend(&out, trainingText(*r.training, cfg));
  if (r.engine.evidence) {
    absl::StrAppend(&out, evidenceText(*r.engine.evidence, cfg));
    if (r.training) absl::StrAppend(&out, jobEvidenceText(*r.training, *r.engine.evidence));
  }
  if (r.engine.mirror || r.engine.evidence) absl::StrAppend(&out, mirrorText(r));
  absl::StrAppend(&out, "\nDecoding: ", r.decode.errors[0], " complete, ", r.decode.errorTotal(), " malformed, ",
                  r.decode.non_ip, " non-IP, ", r.decode.encapsulated, " mirror-encapsulated\n");
  for (int i = 1; i < kDecodeErrorCount; ++i) {
    if (r.decode.errors[i]) {
      absl::StrAppend(&out, "  ", decodeErrorName(static_cast<DecodeError>(i)), ": ", r.decode.errors[i], "\n");
    }
  }
  if (r.decode.mirror_seq_gaps || r.decode.mirror_seq_reorders) {
    absl::StrAppend(&out, "  mirror lost ", r.decode.mirror_seq_gaps, " packets (sequence gaps), ",
                    r.decode.mirror_seq_reorders, " out of sequence\n");
  }
  absl::StrAppend(&out, "Timestamps: ", r.reordered, " put back in order, ", r.clamped,
                  " later than the reorder horizon (clamped)\n");
  absl::StrAppend(&out, "Ledger: received ", r.ledger.received, " = analysed ", r.ledger.analysed, " + dropped ",
                  r.ledger.ring_drops, r.ledger.balanced() ? " (balanced)" : " (NOT BALANCED)");
  if (source.dedup_window_ns > 0) absl::StrAppend(&out, "; duplicates left out before: ", source.duplicates_removed);
  absl::StrAppend(&out, "\n");
  for (const std::string& w : source.warnings) absl::StrAppend(&out, "Warning: ", w, "\n");
  if (r.clock_steps_back > 0) {
    absl::StrAppend(&out, "Warning: timestamps stepped back by more than 1 s ", r.clock_steps_back,
                    " time(s); later packets were shifted forward by ", humanSeconds(r.clock_shift_ns * 1e-9),
                    " in all so that time runs on\n");
  }
  return out;
}

}  // namespace burstscope

namespace burstscope {

Json runJson(const RunResult& r, int64_t reorder_horizon_ns) {
  Json out;
  out["backend"] = r.backend;
  out["stop_reason"] = r.stop_reason;
  out["timestamps"] = {{"source", r.timestamps.source},
                       {"description", r.timestamps.description},
                       {"error_bound_ns", r.timestamps.error_bound_ns},
                       {"max_resync_step_ns", r.timestamps.max_resync_step_ns}};
  out["ports"] = Json::array();
  for (const PortResult& p : r.ports) {
    Json j = reportJson(p, r.source, ReportContext{{p.name}, reorder_horizon_ns});
    auto opt = [](const std::optional<uint64_t>& v) { return v ? Json(*v) : Json(); };
    Json dev;
    dev["received"] = opt(p.device.received);
    dev["bytes"] = opt(p.device.bytes);
    dev["queue_received"] = Json::array();
    for (const auto& q : p.device.queue_received) dev["queue_received"].push_back(opt(q));
    if (p.device.seen) dev["seen"] = *p.device.seen;
    dev["filtered"] = p.device.filtered;
    dev["drop_stages"] = Json::object();
    for (const auto& [stage, value] : p.device.drop_stages) dev["drop_stages"][stage] = value;
    dev["extra"] = Json::object();
    for (const auto& [name, value] : p.device.extra) dev["extra"][name] = value;
    j["port"] = p.name;
    j["device"] = dev;
    // Capture faults (docs/live-capture.md): the link as the backend watched it, for live ports.
    if (p.device.link) {
      const LinkState& l = *p.device.link;
      j["link"] = {{"present", l.present},       {"up", l.up},        {"since_ns", l.since_ns}, {"downs", l.downs},
                   {"reattached", l.reattached}, {"stalls", l.stalls}};
      if (!l.queue_stalled.empty()) j["link"]["queue_stalled"] = l.queue_stalled;
    }
    j["queues"] = Json::array();
    for (size_t q = 0; q < p.queue_received.size(); ++q) {
      j["queues"].push_back({{"received", p.queue_received[q]}, {"ring_drops", p.queue_ring_drops[q]}});
    }
    // SPEC "Overload" (live queues only): the intervals whose figures are bounds, and why the series may miss.
    if (!p.queue_received.empty()) {
      Json o;
      o["series_packets"] = p.series_packets;
      o["series_bytes"] = p.series_bytes;
      if (p.series_bytes_unsure > 0) o["series_bytes_upper"] = p.series_bytes + p.series_bytes_unsure;
      o["series_kernel_lost"] = p.series_kernel_lost;
      o["degraded_intervals"] = p.degraded_intervals;
      o["bins_late"] = p.bins_late;
      o["bin_channel_drops"] = p.bin_channel_drops;
      o["degraded"] = Json::array();
      for (const auto& [start, end, b] : p.degraded) {
        Json d = boundsJson(b, p.engine_config.scales_ns, p.engine_config.rates_bps);
        d["start_ns"] = start;
        d["end_ns"] = end;
        o["degraded"].push_back(std::move(d));
      }
      j["overload"] = std::move(o);
    }
    j["intervals"] = p.intervals;
    j["ledger"]["balanced"] = ledgerBalanced(p);
    out["ports"].push_back(j);
  }
  return out;
}

std::string intervalSummary(const std::string& port, const PortSnapshot& snap, const EngineConfig& c) {
  const IntervalReport& r = snap.interval;
  const IntervalStream& s = r.port;
  std::string line = absl::StrFormat(
      "%s %s%s  %s %7.3f Mpps", absl::FormatTime("%H:%M:%E3S", absl::FromUnixNanos(r.start_ns), absl::UTCTimeZone()),
      port, r.partial ? " (partial)" : "", humanRate(s.mean_bps),
      static_cast<double>(s.packets) * 1e3 / static_cast<double>(r.end_ns - r.start_ns));
  absl::StrAppend(&line, "  PtM");
  for (size_t i = 0; i < c.scales_ns.size(); ++i) {
    absl::StrAppend(&line, " ", absl::StrReplaceAll(humanTau(c.scales_ns[i]), {{" ", ""}}), ":",
                    s.ptm[i] ? absl::StrFormat("%.1f", *s.ptm[i]) : std::string("-"));
  }
  if (!s.backlog_bytes.empty()) {
    absl::StrAppend(&line, "  Bmax@", humanRate(c.rates_bps.front()), " ", humanBytes(s.backlog_bytes.front()));
  }
  absl::StrAppend(&line, "  microbursts ", r.microbursts_total);
  if (r.evidence) {
    const EvidenceReport& e = *r.evidence;
    absl::StrAppend(&line, " (congesting ", e.interval_congesting, "/", e.interval_microbursts, ")");
    if (e.interval.events() > 0 || e.interval.tcp_out_of_order > 0) {
      const EvidenceCounts& c = e.interval;
      absl::StrAppend(&line, "  evidence CE ", c.ce, " retx ", c.tcp_retransmissions, " CNP ", c.cnp, " NAK ", c.naks(),
                      " resent ", c.roce_resent, " pause ", c.pause_frames);
    }
  }
  absl::StrAppend(&line, "  drops ring ", snap.ledger.ring_drops);
  if (!snap.device.drop_stages.empty()) absl::StrAppend(&line, " before RX ", snap.device.dropStagesTotal());
  // SPEC "Overload": figures whose windows reach a frame lost after the 100 us series are bounds; say which.
  if (snap.bounds && snap.bounds->degraded()) {
    const IntervalBounds& b = *snap.bounds;
    absl::StrAppend(&line, "  DEGRADED (", b.lost, " frames lost here after the 100us series)");
    for (size_t i = 0; i < c.scales_ns.size() && i < b.envelope_bytes.size(); ++i) {
      if (!b.envelope_bounded[i]) continue;
      absl::StrAppend(&line, " E(", absl::StrReplaceAll(humanTau(c.scales_ns[i]), {{" ", ""}}), ") ",
                      humanBytes(static_cast<double>(b.envelope_bytes[i].first)), "..",
                      b.complete ? humanBytes(static_cast<double>(b.envelope_bytes[i].second)) : std::string("?"));
      break;  // the shortest bounded scale; the others are in the JSON and the metrics
    }
    if (b.microbursts_bounded) {
      absl::StrAppend(&line, " microbursts ", b.microbursts.first, "..",
                      b.complete ? absl::StrCat(b.microbursts.second) : std::string("?"));
    }
  }
  // The busiest jobs: "job-10.77.1.1 ring/4 T 202ms"; the full picture is in the JSON and the metrics.
  if (snap.training) {
    size_t shown = 0;
    for (const JobReport& j : snap.training->jobs) {
      // Active: it sent within the last second, or within two of its steps (a slow job is quiet between).
      const double quiet = std::max(1.0, 2 * j.period.period_s.value_or(0));
      if (j.idle_s >= quiet || shown == 3) continue;
      absl::StrAppend(&line, shown++ == 0 ? "  jobs: " : ", ", j.name, " ", j.topology.kind, "/", j.hosts.size(),
                      j.period.period_s
                          ? absl::StrCat(" T ", absl::StrReplaceAll(humanSeconds(*j.period.period_s), {{" ", ""}}))
                          : std::string(" T -"));
      // The last step that ended in this interval, when it has evidence: "(step 41 of ...: 3 congesting ...)".
      for (auto it = j.steps.rbegin(); it != j.steps.rend(); ++it) {
        if (it->end_ns <= r.start_ns) break;
        if (it->end_ns <= r.end_ns) {
          if (eventful(*it)) absl::StrAppend(&line, " (", stepText(j, *it, true), ")");
          break;
        }
      }
    }
  }
  return line;
}

std::string ledgerText(const RunResult& r) {
  std::string out;
  auto opt = [](const std::optional<uint64_t>& v) {
    return v ? absl::StrCat(*v) : std::string("not reported by this device");
  };
  for (const PortResult& p : r.ports) {
    const Ledger& l = p.ledger;
    const DeviceStats& d = p.device;
    absl::StrAppend(&out, "ledger ", p.name, " (", r.backend, ", timestamps: ", r.timestamps.source, ")\n");
    absl::StrAppend(&out, "  reached the port    ", l.received + d.dropStagesTotal() + d.filtered, "\n");
    if (d.seen) {
      absl::StrAppend(&out, "  seen before RX      ", *d.seen, "  (filtered out ", d.filtered, ")\n");
    }
    for (const auto& [stage, v] : d.drop_stages) {
      absl::StrAppend(&out, "  dropped, ", absl::StrFormat("%-17s", stage), " ", v, "\n");
    }
    absl::StrAppend(&out, "  received by RX      ", l.received, "  (device count ", opt(d.received), ")\n");
    absl::StrAppend(&out, "  dropped, ring full  ", l.ring_drops, "\n");
    absl::StrAppend(&out, "  analysed            ", l.analysed, "  (decode errors ", p.decode.errorTotal(),
                    ", clamped late ", p.clamped, ")\n");
    absl::StrAppend(&out, "  ", ledgerBalanced(p) ? "balanced" : "NOT BALANCED", ": received ", l.received,
                    " = analysed ", l.analysed, " + ring drops ", l.ring_drops);
    if (d.seen) {
      absl::StrAppend(&out, "; seen ", *d.seen, " = received ", l.received, " + dropped before RX ",
                      d.dropStagesTotal(), " + filtered ", d.filtered);
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace burstscope
