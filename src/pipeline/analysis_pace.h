// When a live port's training window is analysed again (training.analysis_budget, docs/training.md "Cost on the
// control thread"). Each analysis reads the whole window, so its cost follows the jobs, not the packets; after
// one that took t of the control thread's CPU, the next waits t·(1/budget − 1), so that the analyses take at most
// `budget` of its time. CPU time, not wall time: a live capture's control thread yields to the port workers
// (pipeline.cc, kControlNice), and an analysis preempted by them took longer by the clock without costing more;
// paced by the clock it would come less often the busier the port. Since wall time is never less than the CPU
// time, the analyses' share of the thread's time stays within the budget either way. The intervals that come
// meanwhile are taken in and the next analysis covers them all. Whatever the budget, an analysis is due once
// kMaxDeferredIntervals are waiting: those intervals' bins are held outside the window's memory bound until
// then, and the job figures are never older than that.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>

namespace burstscope::internal {

class AnalysisPace {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxDeferredIntervals = 10;

  explicit AnalysisPace(double budget) : budget_(budget) {}

  // An interval handed over, to be taken in by the next analysis.
  void arrived() { ++waiting_; }
  size_t waiting() const { return waiting_; }
  // Whether an analysis is due now: intervals wait, and the last one's share of the time has passed, or too many
  // wait, or it is the run's last hand-over (`last`: the run's result is that analysis).
  bool due(Clock::time_point now, bool last = false) const {
    return waiting_ > 0 && (last || now >= from_ || waiting_ >= kMaxDeferredIntervals);
  }
  // An analysis ended at `ended`, having taken `took` of the control thread's CPU and every waiting interval in.
  void done(Clock::time_point ended, std::chrono::nanoseconds took) {
    waiting_ = 0;
    const double took_s = std::chrono::duration<double>(took).count();
    // fmin: a budget so small that 1/budget is infinite, times an analysis that took no time, is NaN. The hour
    // only keeps the time point's arithmetic in range; kMaxDeferredIntervals ends a long wait first.
    const double wait_s = std::fmin(took_s * (1 / budget_ - 1), 3600.0);
    from_ = ended + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, wait_s)));
  }

 private:
  double budget_;
  size_t waiting_ = 0;
  Clock::time_point from_ = Clock::time_point::min();
};

}  // namespace burstscope::internal
