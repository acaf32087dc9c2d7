#include "src/pipeline/step_evidence.h"

#include <algorithm>
#include <map>
#include <vector>

namespace burstscope {

StepEvidenceWindow::StepEvidenceWindow(int64_t bin_ns, int64_t keep_ns, size_t max_entries)
    : bin_ns_(bin_ns), keep_ns_(keep_ns), max_entries_(max_entries) {}

void StepEvidenceWindow::add(const EvidenceReport& r) {
  after_ns_ = r.after_ns;
  for (const PairBinEvidence& p : r.pair_bins) {
    bins_.push_back({p, addressToString(p.pair, true), addressToString(p.pair, false)});
    latest_ns_ = std::max(latest_ns_, p.start_ns);
  }
  for (const AnnotatedBurst& b : r.bursts) {
    bursts_.push_back(b);
    latest_ns_ = std::max(latest_ns_, b.burst.start_ns);
  }
  trim();
}

void StepEvidenceWindow::trim() {
  while (bins_.size() > max_entries_) bins_.pop_front();
  while (bursts_.size() > max_entries_) bursts_.pop_front();
  if (keep_ns_ <= 0 || latest_ns_ == INT64_MIN) return;
  const int64_t from = latest_ns_ - keep_ns_;
  while (!bins_.empty() && bins_.front().e.start_ns < from) bins_.pop_front();
  while (!bursts_.empty() && bursts_.front().burst.start_ns < from) bursts_.pop_front();
}

// A step is [start, end) as the period cuts the job's traffic. An event belongs to the step its base bin starts
// in; a congesting burst to the step it starts in, when the base bins of its window [start, end + after] hold
// events on the job's pairs (both hosts in the job); `toward` is the destination of most of the step's events
// (the first in address order among equals).
void StepEvidenceWindow::annotate(TrainingReport* t) const {
  for (JobReport& job : t->jobs) {
    std::vector<StepSpan>& steps = job.steps;
    if (steps.empty()) continue;
    auto in = [&](const std::string& h) { return std::binary_search(job.hosts.begin(), job.hosts.end(), h); };
    auto stepAt = [&](int64_t at) -> long {
      auto it =
          std::upper_bound(steps.begin(), steps.end(), at, [](int64_t v, const StepSpan& s) { return v < s.start_ns; });
      if (it == steps.begin()) return -1;
      --it;
      return at < it->end_ns ? it - steps.begin() : -1;
    };
    for (StepSpan& s : steps) s.evidence = StepEvidence{};
    std::vector<std::map<std::string, uint64_t>> toward(steps.size());
    std::vector<int64_t> times;  // bins with events on the job's pairs
    for (const Entry& x : bins_) {
      if (!in(x.src) || !in(x.dst)) continue;
      times.push_back(x.e.start_ns);
      const long k = stepAt(x.e.start_ns);
      if (k < 0) continue;
      steps[k].evidence->counts.add(x.e.evidence);
      toward[k][x.dst] += x.e.evidence.total();
    }
    std::sort(times.begin(), times.end());
    for (const AnnotatedBurst& b : bursts_) {
      const long k = stepAt(b.burst.start_ns);
      if (k < 0) continue;
      auto it = std::upper_bound(times.begin(), times.end(), b.burst.start_ns - bin_ns_);
      if (it != times.end() && *it <= b.burst.end_ns + after_ns_) ++steps[k].evidence->congesting_bursts;
    }
    for (size_t k = 0; k < steps.size(); ++k) {
      uint64_t most = 0;
      for (const auto& [host, n] : toward[k]) {
        if (n > most) {
          most = n;
          steps[k].evidence->toward = host;
        }
      }
    }
  }
}

}  // namespace burstscope
