// Congestion evidence per training step (docs/evidence.md "Per training step"): the control thread keeps the
// evidence aggregator's per-bin host-pair events and congesting bursts for the training window, and after
// each training analysis writes into every job's steps the events on the job's host pairs, its congesting
// bursts and the host they went toward.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "burstscope/evidence.h"
#include "burstscope/training.h"

namespace burstscope {

class StepEvidenceWindow {
 public:
  // `keep_ns`: how far back events are kept (the training window; 0: everything, for a file); at most
  // `max_entries` pair bins and as many bursts (the oldest go first).
  StepEvidenceWindow(int64_t bin_ns, int64_t keep_ns, size_t max_entries);

  // The pair bins and congesting bursts a report lists: an interval's report lists that interval's, the
  // offline result all of them. Reports come in time order.
  void add(const EvidenceReport& r);

  // Fills steps[].evidence of every job in `t`.
  void annotate(TrainingReport* t) const;

  size_t pairBins() const { return bins_.size(); }

 private:
  struct Entry {
    PairBinEvidence e;
    std::string src, dst;  // the pair's hosts as the training report names them
  };
  void trim();

  int64_t bin_ns_;
  int64_t keep_ns_;
  size_t max_entries_;
  int64_t after_ns_ = 0;
  int64_t latest_ns_ = INT64_MIN;
  std::deque<Entry> bins_;
  std::deque<AnnotatedBurst> bursts_;
};

}  // namespace burstscope
