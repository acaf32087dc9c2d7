// The control-thread half of training awareness: a trailing window of flow bins, and per analysis the jobs,
// their periods, bytes per step, topology and interval figures, and the co-bursts toward each destination.
#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "burstscope/training.h"
#include "src/training/merge_runs.h"
#include "src/training/period.h"
#include "src/training/topology.h"

namespace burstscope {
namespace {

using training::findPeriod;
using training::PeriodOptions;

struct Host {
  std::array<uint8_t, 16> a{};
  uint8_t fam = 0;
  bool operator==(const Host& o) const { return fam == o.fam && a == o.a; }
  bool operator<(const Host& o) const { return fam != o.fam ? fam < o.fam : a < o.a; }
  template <typename H>
  friend H AbslHashValue(H h, const Host& x) {
    return H::combine(std::move(h), x.a, x.fam);
  }
};
Host srcOf(const FlowKey& k) { return Host{k.src, k.family}; }
Host dstOf(const FlowKey& k) { return Host{k.dst, k.family}; }
std::string hostName(const Host& h) {
  FlowKey k;
  k.src = h.a;
  k.family = h.fam;
  return addressToString(k, true);
}

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr size_t kMaxFineBins = size_t{1} << 22;  // job series at the base bin, longer ones coarsened
constexpr size_t kHistBuckets = 16;
constexpr size_t kMaxCoburstJobs = 16;
constexpr size_t kMaxTopologyHosts = 512;
// The heaviest pairs of a job whose own periods cross-check the job's (readPeriod of the job).
constexpr size_t kStepPairs = 8;
// The longest quiet stretches of a folded step tried as the place between steps (readPeriod).
constexpr size_t kCutCandidates = 4;
// Evenly spaced places in a step tried as well, where no quiet stretch lies between steps (readPeriod).
constexpr size_t kCutGrid = 16;
// Gaps between a step's nonzero bins counted one by one up to this many bins (placeSteps).
constexpr size_t kLongGap = 64;

// The largest value of a series: four running maxima side by side (one waits on the last comparison; a
// million bins per job and pair at the end of a long file).
double largest(std::span<const double> x) {
  double m[4] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
  size_t i = 0;
  for (; i + 4 <= x.size(); i += 4) {
    for (size_t l = 0; l < 4; ++l) m[l] = x[i + l] > m[l] ? x[i + l] : m[l];
  }
  for (; i < x.size(); ++i) m[0] = x[i] > m[0] ? x[i] : m[0];
  return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

// As envelopes() below, over every fine bin: where most bins hold bytes (a job that sends all the time, a live
// interval's bins), a walk that reads each bin once beats one that first lists the nonzero ones. The scales go four
// side by side: each running sum waits only on itself (one pass at a time, each addition waited on the last; a million
// bins per job at the end of a long file).
std::vector<double> denseEnvelopes(std::span<const double> fine, size_t interval_from, std::span<const size_t> widths) {
  std::vector<double> best(widths.size(), 0.0);
  const size_t nf = fine.size();
  for (size_t g = 0; g < widths.size(); g += 4) {
    std::array<size_t, 4> k{}, from{};
    std::array<double, 4> sum{}, top{};
    size_t start = nf;
    for (size_t l = 0; l < 4; ++l) {
      const bool used = g + l < widths.size() && widths[g + l] > 0;
      k[l] = used ? widths[g + l] : 0;
      // Windows ending inside the interval, which reach back up to k bins before it.
      from[l] = !used ? nf : interval_from > k[l] ? interval_from - k[l] : 0;
      start = std::min(start, from[l]);
    }
    for (size_t i = start; i < nf; ++i) {
      for (size_t l = 0; l < 4; ++l) {
        if (i < from[l]) continue;
        sum[l] += fine[i];
        if (i >= from[l] + k[l]) sum[l] -= fine[i - k[l]];
        if (i >= interval_from) top[l] = std::max(top[l], sum[l]);
      }
    }
    for (size_t l = 0; l < 4 && g + l < widths.size(); ++l) best[g + l] = top[l];
  }
  return best;
}

// As backlogs() below, over every fine bin, four queues side by side (each queue's steps are a chain).
std::vector<double> denseBacklogs(std::span<const double> fine, size_t interval_from, std::span<const double> drains) {
  std::vector<double> out;
  for (size_t g = 0; g < drains.size(); g += 4) {
    std::array<double, 4> drain{}, q{}, qmax{};
    for (size_t l = 0; l < 4; ++l) drain[l] = g + l < drains.size() ? drains[g + l] : 0;
    for (size_t i = 0; i < fine.size(); ++i) {
      for (size_t l = 0; l < 4; ++l) {
        q[l] = std::max(0.0, q[l] + fine[i] - drain[l]);
        if (i >= interval_from) qmax[l] = std::max(qmax[l], q[l]);
      }
    }
    for (size_t l = 0; l < 4 && g + l < drains.size(); ++l) out.push_back(qmax[l]);
  }
  return out;
}

std::atomic<bool> sparse_allowed{true};    // training::setSparseBins (the tests compare both ways)
std::atomic<uint64_t> sparse_readings{0};  // training::sparseReadings

// A job's fine bins by their nonzero ones alone: bin at[j] holds value[j] (at ascending), the rest nothing. On a
// training job most 100 µs bins are empty (compute between the bursts: 95% of the 30x trace's 594,000), and the
// analysis below walks these, not every bin, where they are few.
struct NonzeroBins {
  std::vector<size_t> at;
  std::vector<double> value;
  std::vector<double> sum_to;  // [j]: the bytes of the first j nonzero bins, added in order
  double top = 0;              // the largest bin (0 with none)

  // Lists fine's nonzero bins; false (the list cut short) once there are more than `most`.
  bool of(std::span<const double> fine, size_t most = SIZE_MAX) {
    at.clear();
    value.clear();
    sum_to.assign(1, 0.0);
    top = 0;
    for (size_t i = 0; i < fine.size(); ++i) {
      if (fine[i] != 0) {
        if (at.size() == most) return false;
        at.push_back(i);
        value.push_back(fine[i]);
        sum_to.push_back(sum_to.back() + fine[i]);
        top = std::max(top, fine[i]);
      }
    }
    return true;
  }
  // f(j) for each nonzero bin j in [begin, end), in order.
  template <typename F>
  void forEachIn(size_t begin, size_t end, F f) const {
    for (size_t j = below(begin); j < at.size() && at[j] < end; ++j) f(j);
  }
  // The largest of the `n` bins listed (largest() over every bin: 0 with none nonzero).
  double largestOf(size_t n) const { return n == 0 ? -HUGE_VAL : top; }
  // How many nonzero bins lie below bin x.
  size_t below(size_t x) const { return static_cast<size_t>(std::lower_bound(at.begin(), at.end(), x) - at.begin()); }
  // The bytes of bins [0, x): bit for bit the running sum over every bin (adding an empty bin's zero changes nothing).
  double sumBelow(size_t x) const { return sum_to[below(x)]; }
};

// The most bytes in `widths[s]` consecutive fine bins, over the windows that end at interval_from or later (of the
// `nf` bins), for each scale s (width 0: none). A window's sum falls between the bins that enter it, so its largest
// is at the first window or at one that ends with a nonzero bin: those alone are visited. The bins hold whole bytes,
// so every sum is exact (below 2^53) and equals the running sum over every bin, whatever the order of the additions.
std::vector<double> envelopes(const NonzeroBins& bins, size_t nf, size_t interval_from,
                              std::span<const size_t> widths) {
  std::vector<double> best(widths.size(), 0.0);
  if (interval_from >= nf) return best;
  const std::span<const size_t> at = bins.at;
  const std::span<const double> value = bins.value;
  for (size_t s = 0; s < widths.size(); ++s) {
    const size_t k = widths[s];
    if (k == 0) continue;
    // The nonzero bins in the window (end - k, end]: [lo, hi). Live, the interval is the window's last second: the
    // walk starts at the first bin its first window holds, not at the window's start.
    size_t lo = static_cast<size_t>(
        std::lower_bound(at.begin(), at.end(), interval_from + 1 > k ? interval_from + 1 - k : 0) - at.begin());
    size_t hi = lo;
    double sum = 0;
    // The first window, ending at interval_from; then each that ends with a nonzero bin.
    while (hi < at.size() && at[hi] <= interval_from) sum += value[hi++];
    double top = sum;
    for (; hi < at.size(); ++hi) {
      sum += value[hi];
      while (at[lo] + k <= at[hi]) sum -= value[lo++];  // stops at hi, which is inside
      top = std::max(top, sum);
    }
    best[s] = top;
  }
  return best;
}

// The largest backlog, at or after interval_from, of a queue fed the fine bins and drained `drains[r]` bytes per bin,
// for each r; four queues side by side (each one's steps are a chain). Over a run of empty bins the queues drain bin
// by bin (the same roundings as over every bin) until none of them changes (each empty, or drained by too little to
// show), and the rest of the run leaves them as they are.
std::vector<double> backlogs(const NonzeroBins& bins, size_t nf, size_t interval_from, std::span<const double> drains) {
  std::vector<double> out;
  const size_t n = bins.at.size();
  for (size_t g = 0; g < drains.size(); g += 4) {
    std::array<double, 4> drain{}, q{}, qmax{};  // unused lanes: no drain, always empty
    for (size_t l = 0; l < 4; ++l) drain[l] = g + l < drains.size() ? drains[g + l] : 0;
    size_t i = 0;  // the next bin
    for (size_t j = 0; j <= n; ++j) {
      const size_t next = j < n ? bins.at[j] : nf;
      while (i < next) {  // the empty bins before the next nonzero one
        bool moved = false;
        for (size_t l = 0; l < 4; ++l) {
          const double x = std::max(0.0, q[l] + 0.0 - drain[l]);
          moved |= x != q[l];
          q[l] = x;
          if (i >= interval_from) qmax[l] = std::max(qmax[l], q[l]);
        }
        ++i;
        if (!moved) {  // so they stay up to `next`
          if (next > interval_from) {
            for (size_t l = 0; l < 4; ++l) qmax[l] = std::max(qmax[l], q[l]);
          }
          i = next;
        }
      }
      if (j == n) break;
      for (size_t l = 0; l < 4; ++l) {
        q[l] = std::max(0.0, q[l] + bins.value[j] - drain[l]);
        if (i >= interval_from) qmax[l] = std::max(qmax[l], q[l]);
      }
      ++i;
    }
    for (size_t l = 0; l < 4 && g + l < drains.size(); ++l) out.push_back(qmax[l]);
  }
  return out;
}

training::PeriodEstimate estimatePeriod(std::span<const double> fine, double fine_ns, const TrainingConfig& cfg,
                                        const training::NonzeroView* nz = nullptr) {
  PeriodOptions o;
  o.min_period_bins = cfg.min_period_s * 1e9 / fine_ns;
  o.max_period_bins = cfg.max_period_s * 1e9 / fine_ns;
  o.min_quality = cfg.min_period_quality;
  return findPeriod(fine, o, nz);
}

// Options that look for a period within 8% of `bins` only.
PeriodOptions nearPeriod(double bins, const TrainingConfig& cfg) {
  PeriodOptions o;
  o.min_period_bins = 0.92 * bins;
  o.max_period_bins = 1.08 * bins;
  o.min_quality = cfg.min_period_quality;
  return o;
}

// A series' pace: its period (report.period_s, or why none) and the fine bin from which the steps are read at it
// (past 0 when the pace changed).
struct Pace {
  PeriodReport report;
  double period_bins = 0;
  size_t region = 0;
};

// The pace of a series of fine bins (each `fine_ns` wide); with `given` (a job's step as its pairs read it), that
// period over the whole series.
// `nz`: the series' nonzero bins, where listed (placeSteps').
Pace readPace(const std::vector<double>& fine, double fine_ns, const TrainingConfig& cfg,
              const training::PeriodEstimate* given = nullptr, const NonzeroBins* nz = nullptr) {
  Pace pace;
  PeriodReport& pr = pace.report;
  // The nonzero bins of fine.subspan(from, ...), for findPeriod.
  auto view = [&](size_t from) -> std::optional<training::NonzeroView> {
    if (nz == nullptr) return std::nullopt;
    return training::NonzeroView{nz->at, nz->value, from};
  };
  auto viewOf = [](const std::optional<training::NonzeroView>& v) { return v ? &*v : nullptr; };
  training::PeriodEstimate e = given != nullptr ? *given : estimatePeriod(fine, fine_ns, cfg, viewOf(view(0)));
  size_t region = 0;  // first fine bin of the analysed region
  if (e.found && given == nullptr) {
    // A period that changed: read it again from the last eight periods alone.
    size_t end = fine.size();
    while (end > 0 && fine[end - 1] == 0) --end;
    size_t begin = 0;
    while (begin < end && fine[begin] == 0) ++begin;
    const double tail = 8 * e.period_bins;
    if (tail < 0.75 * static_cast<double>(end - begin)) {
      const size_t from = end - static_cast<size_t>(std::ceil(tail));
      training::PeriodEstimate recent =
          estimatePeriod(std::span<const double>(fine).subspan(from, end - from), fine_ns, cfg, viewOf(view(from)));
      // A real change of pace: the recent steps no longer repeat at the window's period as well as at the new
      // one, the steps before them did repeat at the window's period (a job whose earlier traffic, its start-up
      // and a step or two, shows no pace of its own has not changed pace), and they did not repeat at the new one
      // (below). A recent reading that is part of a step (a pipeline's microbatch train, one of its burst groups)
      // or several steps, while the recent steps still repeat at the window's period, is no change either.
      bool still = false;
      if (recent.found && std::abs(recent.period_bins - e.period_bins) > 0.08 * e.period_bins) {
        auto near = [&](double bins) { return nearPeriod(bins, cfg); };
        const training::PeriodEstimate old = findPeriod(std::span<const double>(fine).subspan(from, end - from),
                                                        near(e.period_bins), viewOf(view(from)));
        const training::PeriodEstimate head = findPeriod(std::span<const double>(fine).subspan(begin, from - begin),
                                                         near(e.period_bins), viewOf(view(begin)));
        // A recent reading that the earlier steps repeat at as well is no new pace. Shorter than the window's, it
        // is the steps' inner rhythm (a sharded job's layer after layer), there all along; longer, it is the
        // fundamental of every step, and the window's reading was a part of each (a pipeline's forward and
        // backward waves look alike): the whole window is read again at it.
        const training::PeriodEstimate head_recent = findPeriod(
            std::span<const double>(fine).subspan(begin, from - begin), near(recent.period_bins), viewOf(view(begin)));
        still = (old.found && old.quality >= recent.quality) || !head.found || head_recent.found;
        if (head_recent.found && recent.period_bins > e.period_bins) {
          const training::PeriodEstimate whole = findPeriod(std::span<const double>(fine).subspan(begin, end - begin),
                                                            near(recent.period_bins), viewOf(view(begin)));
          e = whole.found ? whole : recent;
        }
      }
      if (recent.found && std::abs(recent.period_bins - e.period_bins) > 0.08 * e.period_bins && !still) {
        e = recent;
        region = from;
        pr.changed = true;
      }
    }
  }
  if (!e.found) {
    pr.why = e.why;
    pr.quality = e.quality;
    return pace;
  }
  pr.period_s = e.period_bins * fine_ns / 1e9;
  pr.quality = e.quality;
  pace.period_bins = e.period_bins;
  pace.region = region;
  return pace;
}

// The lowest set bit of a nonzero finite double, as the exponent of its power of two.
int lowestBit(double v) {
  int e = 0;
  const double m = std::frexp(std::abs(v), &e);  // |v| = m·2^e, m in [0.5, 1): m·2^53 is a whole number
  return e - 53 + std::countr_zero(static_cast<uint64_t>(std::ldexp(m, 53)));
}

// placeSteps' fold of bins [from, to) at the period, from their nonzero bins alone: false (nothing done) where that
// cannot be shown to give the walk's figures. The walk keeps the phase ph (from ph0) by adding 1 per bin and taking
// the period off when it reaches it. With q the coarsest power of two that divides 1, the period and ph0, every
// phase the walk makes is a whole multiple of q below period + 1; while period + 1 < 2^53·q each is a double, so
// every addition and subtraction is exact, and the phase at bin from + k is (ph0 + k) mod period (one subtraction
// per wrap suffices as the period is at least 1), computed here in whole multiples of q. Each nonzero bin goes to
// the same slot as in the walk, in the same order; the walk's additions of empty bins change nothing.
bool foldNonzero(const NonzeroBins& nz, size_t from, size_t to, double ph0, double period, size_t slots,
                 std::vector<double>* fd) {
  if (!(period >= 1 && period < 0x1p52) || !(ph0 >= 0 && ph0 < period)) return false;
  int q = std::min(0, lowestBit(period));
  if (ph0 != 0) q = std::min(q, lowestBit(ph0));
  if (-q > 52) return false;
  const int64_t unit = int64_t{1} << -q;  // 1, in multiples of q
  const double p = std::ldexp(period, -q);
  if (!(p + static_cast<double>(unit) < 0x1p53)) return false;
  const auto whole = static_cast<__int128>(p);
  const auto start = static_cast<__int128>(std::ldexp(ph0, -q));
  nz.forEachIn(from, to, [&](size_t j) {
    const auto ph = static_cast<int64_t>((start + static_cast<__int128>(nz.at[j] - from) * unit) % whole);
    (*fd)[std::min(slots - 1, static_cast<size_t>(ph / unit))] += nz.value[j];
  });
  return true;
}

// Where the steps of a series at its pace fall (`cut`), and the steps and duty cycle of its report: none (and no
// period) without a counted step, or where the steps hold no quiet stretch (a steady stream; `cut` is left placed).
// `nz`: the series' nonzero bins, where the caller has them (a sparse job's); the steps' bytes, the fold at the
// period (where foldNonzero can) and the duty cycle are then read from them instead of from every bin, with the same
// figures.
void placeSteps(const std::vector<double>& fine, Pace* pace, training::StepCut* cut, const NonzeroBins* nz = nullptr) {
  PeriodReport& pr = pace->report;
  if (!pr.period_s) return;
  const size_t region = pace->region;
  // Steps are cut where the traffic of a step has ended: first in the quietest stretch of the series folded at
  // the period (a window of a twentieth of it), then again with only the steps of typical volume folded (a
  // start-up broadcast or rendezvous traffic at some other phase left out), at the *start* of that quiet
  // stretch: right after the latest end of any step's traffic, where the job's log ends one step and starts the
  // next (docs/training.md "Steps").
  const double period = pace->period_bins;
  const double start = static_cast<double>(region);
  const size_t slots = std::max<size_t>(1, static_cast<size_t>(std::llround(period)));
  const size_t w = std::max<size_t>(1, slots / 20);
  auto fold = [&](const training::StepCut* only) {
    std::vector<double> fd(slots, 0.0);
    auto add = [&](size_t from, size_t to) {
      const double x = static_cast<double>(from) - start;
      double ph = x - std::floor(x / period) * period;  // (i - start) mod period, kept incrementally
      if (nz != nullptr && foldNonzero(*nz, from, to, ph, period, slots, &fd)) return;
      for (size_t i = from; i < to; ++i, ph += 1) {
        if (ph >= period) ph -= period;
        fd[std::min(slots - 1, static_cast<size_t>(ph))] += fine[i];
      }
    };
    if (only == nullptr) {
      add(region, fine.size());
    } else {
      only->forEachStep(fine.size(), [&](size_t k, size_t b, size_t en) {
        if (only->counted[k]) add(b, en);
      });
    }
    return fd;
  };
  // The sum of each window of `width` slots (circular), and the quietest one.
  auto windows = [&](const std::vector<double>& fd, size_t* best_at, size_t width) {
    std::vector<double> sums(slots, 0.0);
    double run = 0;
    for (size_t i = 0; i < width; ++i) run += fd[i % slots];
    sums[0] = run;
    *best_at = 0;
    for (size_t k = 1; k < slots; ++k) {
      run += fd[(k + width - 1) % slots] - fd[k - 1];
      sums[k] = run;
      if (run < sums[*best_at]) *best_at = k;
    }
    return sums;
  };
  // Running sums of the bins: a step's bytes in one subtraction (exact: the bins hold whole bytes, and their sum
  // stays below 2^53). Kept per thread, a window's worth, so that each reading does not allocate it again.
  thread_local std::vector<double> to;
  if (nz == nullptr) {
    to.assign(fine.size() + 1, 0.0);
    for (size_t i = 0; i < fine.size(); ++i) to[i + 1] = to[i] + fine[i];
  }
  const auto sumBelow = [&](size_t x) { return nz != nullptr ? nz->sumBelow(x) : to[x]; };
  auto cutAt = [&](double origin) {
    cut->period = period;
    cut->origin = origin;
    // Up to the step the series ends in: a job's last step ends where its traffic ends, which is where the
    // series (offline: the capture) may end too; a step cut short there is of typical volume only if its
    // traffic is all there.
    const double steps = (static_cast<double>(fine.size()) - cut->origin) / period;
    cut->count = steps > 0 ? static_cast<size_t>(std::ceil(steps)) : 0;
    cut->counted.assign(cut->count, false);
    cut->bytes.assign(cut->count, 0.0);
    std::vector<double>& step_bytes = cut->bytes;
    cut->forEachStep(fine.size(),
                     [&](size_t k, size_t begin, size_t end) { step_bytes[k] = sumBelow(end) - sumBelow(begin); });
    // Steps of typical volume: at least three quarters of the median step's bytes (a step cut off by the start
    // of the job or of the capture, or a pause, would skew bytes per step).
    std::vector<double> nonzero;
    for (double b : step_bytes) {
      if (b > 0) nonzero.push_back(b);
    }
    double median = 0;
    if (!nonzero.empty()) {
      std::nth_element(nonzero.begin(), nonzero.begin() + nonzero.size() / 2, nonzero.end());
      median = nonzero[nonzero.size() / 2];
    }
    for (size_t k = 0; k < cut->count; ++k) {
      cut->counted[k] = step_bytes[k] > 0 && step_bytes[k] >= 0.75 * median;
    }
  };
  size_t best_at = 0;
  windows(fold(nullptr), &best_at, w);
  cutAt(start + std::fmod(static_cast<double>(best_at) + static_cast<double>(w) / 2, period));
  // The steps of typical volume folded at the period (with the steps cut at the quietest stretch of the whole
  // series'): where the place between steps is looked for, and the quiet stretch every step holds (below).
  const std::vector<double> fd = fold(cut);
  const double total = std::accumulate(fd.begin(), fd.end(), 0.0);
  {
    const std::vector<double> sums = windows(fd, &best_at, w);
    if (total > 0) {
      // The longest run of windows as quiet as the quietest (within 0.1% of the folded bytes) — the silence
      // between steps (the optimizer, the next forward) is the step's longest where several are as quiet (the
      // compute between a step's phases) — and its first slot, right after the steps' traffic. The cut goes two
      // bins into it, so that the bin a boundary falls in (k·T is fractional) is a quiet one and no packet is
      // split from its bin's step.
      //
      // A step may hold more than one such stretch (a pipeline's pause between its forward and backward waves, a
      // sharded job's between layers): of the longest few, the one that leaves the most bytes in steps of typical
      // volume is between steps — a cut inside a step splits the job's first and last steps, and the part of
      // the first before the cut is in no counted step (SPEC "Steps"); among equals, the longest.
      const double quiet = sums[best_at] + 1e-3 * total;
      std::vector<std::pair<size_t, size_t>> runs;  // (length after the first window, first slot)
      for (size_t k = 0; k < slots; ++k) {
        if (sums[k] > quiet || sums[(k + slots - 1) % slots] <= quiet) continue;  // a run starts at k
        size_t len = 0;
        while (len + 1 < slots && sums[(k + len + 1) % slots] <= quiet) ++len;
        runs.emplace_back(len, k);
      }
      if (runs.empty()) runs.emplace_back(0, best_at);  // the whole fold as quiet as its quietest window
      // Longest first; among equally long ones the first slot, as before.
      std::stable_sort(runs.begin(), runs.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
      if (runs.size() > kCutCandidates) runs.resize(kCutCandidates);
      auto origin = [&](const std::pair<size_t, size_t>& r) {
        const double guard = std::min(2.0, static_cast<double>(r.first + w) / 2);
        return start + std::fmod(static_cast<double>(r.second) + guard, period);
      };
      // The steps begin one period before the cut's place in the first period of the series (where the series
      // is the whole window), so that a step whose traffic begins the series (a capture started with it) is a
      // step whichever place is taken, not only one that happens to lie at the series' start.
      const double lead = region == 0 ? period : 0;
      // The bytes in steps of typical volume with the steps cut at `at`, and the largest step's.
      auto held = [&](double at) {
        cutAt(at - lead);
        double sum = 0, typical = 0;
        for (size_t k = 0; k < cut->count; ++k) {
          sum += cut->counted[k] ? cut->bytes[k] : 0;
          if (cut->counted[k]) typical = std::max(typical, cut->bytes[k]);
        }
        return std::pair<double, double>(sum, typical);
      };
      // The longest stretch unless another holds at least 5% of a step more (single steps jitter across the
      // three-quarter line of typical volume; a step cut in two loses a part of one at least).
      double chosen = origin(runs[0]);
      auto [most, step] = held(chosen);
      for (size_t i = 1; i < runs.size(); ++i) {
        const double sum = held(origin(runs[i])).first;
        if (sum > most + 0.05 * step) {
          most = sum;
          chosen = origin(runs[i]);
        }
      }
      // Where no quiet stretch is between steps (a sharded job's last reduce-scatter, the optimizer and the next
      // step's first gather follow each other), a cut anywhere in the step that holds more of it: places evenly
      // spaced from the chosen stretch on (so that they fall at the same phases of the steps whatever bin the
      // series starts at: live, the window's; offline, the file's).
      double best_grid = -1, grid_at = 0;
      for (size_t g = 0; g < kCutGrid; ++g) {
        const double at = start + std::fmod(chosen - start + period * static_cast<double>(g) / kCutGrid, period);
        const double sum = held(at).first;
        if (sum > best_grid) {
          best_grid = sum;
          grid_at = at;
        }
      }
      if (best_grid > most + 0.05 * step) chosen = grid_at;
      cutAt(chosen - lead);
    }
  }
  // Duty cycle: the share of the counted steps' time above a tenth of the series' busiest bin. And the gaps from
  // each nonzero bin of a step to the next one in it (1: the next bin), counted up to kLongGap: the packets'
  // spacing inside the steps' traffic.
  const double peak = nz != nullptr ? nz->largestOf(fine.size()) : largest(fine);
  uint64_t busy = 0, all = 0;
  const double tenth = 0.1 * peak;
  std::array<uint64_t, kLongGap + 1> gaps{};
  cut->forEachStep(fine.size(), [&](size_t k, size_t begin, size_t end) {
    if (!cut->counted[k]) return;
    all += end - begin;
    size_t last = SIZE_MAX;
    auto seen = [&](size_t i) {
      if (last != SIZE_MAX) ++gaps[std::min(i - last, kLongGap)];
      last = i;
    };
    if (nz != nullptr) {
      nz->forEachIn(begin, end, [&](size_t j) {
        busy += nz->value[j] >= tenth;
        seen(nz->at[j]);
      });
    } else {
      for (size_t i = begin; i < end; ++i) {
        busy += fine[i] >= tenth && fine[i] > 0;
        if (fine[i] > 0) seen(i);
      }
    }
  });
  pr.steps = static_cast<uint64_t>(std::count(cut->counted.begin(), cut->counted.end(), true));
  pr.duty_cycle = all ? static_cast<double>(busy) / static_cast<double>(all) : 0;
  if (pr.steps == 0) {
    pr.period_s.reset();
    pr.why = "too few steps";
    return;
  }
  // A step is traffic and then a pause. A steady stream of packets also repeats in 100 µs bins — the bins' share
  // of its packets beats against their spacing (packets 192 µs apart: a pattern of full and empty bins that
  // nearly repeats every 2.5 ms) — but it never pauses for longer than its spacing. So the steps must show a quiet
  // stretch: the typical ones folded at the period (fd), their quietest window — as wide as the larger of a twentieth
  // of the period and three times the median gap between the steps' nonzero bins, at most half the period — carries
  // less than half their mean rate (docs/training.md "Step period", 7).
  size_t median_gap = 1;
  {
    const uint64_t n = std::accumulate(gaps.begin(), gaps.end(), uint64_t{0});
    uint64_t below = 0;
    for (size_t g = 1; g < gaps.size(); ++g) {
      below += gaps[g];
      if (2 * below >= n) {
        median_gap = g;
        break;
      }
    }
  }
  const size_t wide = std::min(std::max(w, 3 * median_gap), std::max<size_t>(1, slots / 2));
  size_t quietest = 0;
  const double least = windows(fd, &quietest, wide)[quietest];
  const double rate_share = total > 0 ? least / static_cast<double>(wide) / (total / static_cast<double>(slots)) : 0;
  if (rate_share >= 0.5) {
    pr.period_s.reset();
    pr.steps = 0;
    pr.duty_cycle = 0;
    pr.why = "steady";
  }
}

// The period of a series of fine bins and where its steps fall (readPace, then placeSteps).
PeriodReport readPeriod(const std::vector<double>& fine, double fine_ns, const TrainingConfig& cfg,
                        training::StepCut* cut, const NonzeroBins* nz = nullptr) {
  Pace pace = readPace(fine, fine_ns, cfg, nullptr, nz);
  placeSteps(fine, &pace, cut, nz);
  return pace.report;
}

// The phases of a job's steps and the fine bins each covers, per step (typical steps only).
struct PhaseCut {
  StepPhases report;
  std::vector<std::vector<std::pair<size_t, size_t>>> runs;
};

// SPEC "Phases of a step": in each counted step, the runs of bins at or above 2% of the job's busiest bin (the
// job's burst threshold: ACKs and stray packets stay below it), joined across gaps shorter than 0.5 ms or a
// hundredth of the period, whichever is longer (the round trips inside one collective); then the most frequent
// count among the counted steps, and each phase's offset, length and bytes averaged over the steps that have it.
// `nz` as placeSteps' (the runs then from the nonzero bins alone).
PhaseCut cutPhases(std::span<const double> fine, double fine_ns, const training::StepCut& cut,
                   const NonzeroBins* nz = nullptr) {
  PhaseCut pc;
  pc.runs.resize(cut.count);
  const double threshold = 0.02 * (nz != nullptr ? nz->largestOf(fine.size()) : largest(fine));
  const double period_ns = cut.period * fine_ns;
  const size_t join = std::max<size_t>(1, static_cast<size_t>(std::llround(std::max(5e5, period_ns / 100) / fine_ns)));
  std::vector<std::vector<std::pair<size_t, size_t>>> all(cut.count);
  std::map<size_t, size_t> counts;
  cut.forEachStep(fine.size(), [&](size_t k, size_t begin, size_t end) {
    if (!cut.counted[k]) return;
    std::vector<std::pair<size_t, size_t>>& r = all[k];
    auto take = [&](size_t i) {
      if (!r.empty() && i - r.back().second < join) {
        r.back().second = i + 1;
      } else {
        r.emplace_back(i, i + 1);
      }
    };
    if (nz != nullptr) {
      nz->forEachIn(begin, end, [&](size_t j) {
        if (nz->value[j] >= threshold) take(nz->at[j]);
      });
    } else {
      for (size_t i = begin; i < end; ++i) {
        if (fine[i] > 0 && fine[i] >= threshold) take(i);
      }
    }
    ++counts[r.size()];
  });
  size_t mode = 0, most = 0;  // ties: the fewer phases
  for (const auto& [c, m] : counts) {
    if (m > most) {
      most = m;
      mode = c;
    }
  }
  if (most == 0 || mode == 0) return pc;
  StepPhases& sp = pc.report;
  sp.count = mode;
  sp.steps = most;
  sp.phases.assign(mode, {});
  for (size_t k = 0; k < cut.count; ++k) {
    if (!cut.counted[k] || all[k].size() != mode) continue;
    pc.runs[k] = all[k];
    const double x0 = cut.origin + static_cast<double>(k) * cut.period;
    for (size_t p = 0; p < mode; ++p) {
      const auto [b, e] = all[k][p];
      sp.phases[p].offset_s += (static_cast<double>(b) - x0) * fine_ns / 1e9;
      sp.phases[p].length_s += static_cast<double>(e - b) * fine_ns / 1e9;
      for (size_t i = b; i < e; ++i) sp.phases[p].bytes += fine[i];
    }
  }
  double busy = 0;
  for (PhaseReport& p : sp.phases) {
    p.offset_s /= static_cast<double>(most);
    p.length_s /= static_cast<double>(most);
    p.bytes /= static_cast<double>(most);
    busy += p.length_s;
  }
  const double period_s = period_ns / 1e9;
  sp.idle_s = std::max(0.0, period_s - busy);
  sp.idle_share = period_s > 0 ? sp.idle_s / period_s : 0;
  return pc;
}

// Whether any of the flows carries a payload figure (a capture without them: wire bytes stand in).
template <typename Flow>
bool carriesPayload(const std::vector<const Flow*>& flows) {
  return std::any_of(flows.begin(), flows.end(), [](const Flow* h) { return h->payload > 0; });
}

// The flows' wire bytes added into `series`, bin i of it holding fine bins [i·coarse − shift, (i+1)·coarse − shift).
template <typename Flow, typename FineOf>
void addBins(const std::vector<const Flow*>& flows, const FineOf& fineOf, size_t coarse, std::vector<double>* series,
             size_t shift = 0) {
  for (const Flow* h : flows) {
    if (coarse == 1) {
      for (const auto& x : h->bins) (*series)[fineOf(x.first)] += x.second;
      continue;
    }
    // A flow's bins are in time order: a division only where a bin leaves the last one's coarse bin.
    size_t at = 0, end = 0;  // the coarse bin, and the first fine bin past it
    for (const auto& x : h->bins) {
      const size_t i = fineOf(x.first) + shift;
      if (i >= end || i < end - coarse) {
        at = i / coarse;
        end = (at + 1) * coarse;
      }
      (*series)[at] += x.second;
    }
  }
}

// The flows' wire bytes by fine bin, the non-empty bins alone, ascending: bin at[j] holds value[j] (a pair's series
// without its empty bins: training::followPeriod's input).
template <typename Flow, typename FineOf>
void sparseBins(const std::vector<const Flow*>& flows, const FineOf& fineOf, std::vector<size_t>* at,
                std::vector<double>* value) {
  // Bins (i, v) in ascending order, those of one fine bin summed.
  size_t k = 0;
  auto add = [&](size_t i, double v) {
    if (k > 0 && (*at)[k - 1] == i) {
      (*value)[k - 1] += v;
    } else {
      (*at)[k] = i;
      (*value)[k++] = v;
    }
  };
  size_t most = 0;
  for (const Flow* h : flows) most += h->bins.size();
  at->resize(most);
  value->resize(most);
  if (flows.size() == 1) {  // a flow's bins are in time order already
    for (const auto& x : flows[0]->bins) {
      if (x.second > 0) add(fineOf(x.first), x.second);
    }
  } else {
    // Several flows: each merged into the flows before it (stable: equal bins are summed flow by flow, as addBins
    // adds them).
    thread_local std::vector<std::pair<size_t, double>> all;
    all.clear();
    for (const Flow* h : flows) {
      const auto mid = static_cast<long>(all.size());
      for (const auto& x : h->bins) {
        if (x.second > 0) all.emplace_back(fineOf(x.first), x.second);
      }
      std::inplace_merge(all.begin(), all.begin() + mid, all.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
    }
    for (const auto& [i, v] : all) add(i, v);
  }
  at->resize(k);
  value->resize(k);
}

// Host pairs heaviest first, then by address (a stable order for equal bytes).
template <typename Pair>
bool heavier(const Pair* x, const Pair* y) {
  return x->bytes != y->bytes ? x->bytes > y->bytes : (x->s < y->s || (x->s == y->s && x->d < y->d));
}

// Per directed pair of the job's hosts, over its counted steps: in how many it carried transport payload (at least
// a thousandth of the job's mean payload per step), where in the step its payload lies (the payload-weighted
// circular mean of its bins' places in their steps, a share of the period: robust to steps that drift against the
// period's grid, which a per-step "first packet" is not), and its payload in each phase of the typical steps: the
// senders and pairs of each phase. Wire bytes stand in for payload when the capture carries no payload figures.
template <typename Flow, typename FineOf>
void timePairs(const std::vector<const Flow*>& jf, const std::map<Host, size_t>& at, const FineOf& fineOf,
               const training::StepCut& cut, training::StepCut::Walk& walk, PhaseCut* pc,
               training::TopologyInput* topo) {
  const size_t n = at.size();
  const size_t phases = pc->report.count;
  const bool known = carriesPayload(jf);
  struct PairSteps {
    std::vector<double> pay;
    std::vector<double> phase;
    double cos = 0, sin = 0;
  };
  std::map<std::pair<size_t, size_t>, PairSteps> ps;
  double total = 0;
  // A bin's place in its step, as the cosine and sine of its angle around the step: one table entry per bin of
  // the period (a trigonometric call per bin would cost more than the rest of the analysis).
  const size_t slots = std::max<size_t>(1, static_cast<size_t>(std::ceil(cut.period)));
  std::vector<std::pair<double, double>> angle(slots);
  for (size_t q = 0; q < slots; ++q) {
    const double a = 2 * M_PI * (static_cast<double>(q) + 0.5) / cut.period;
    angle[q] = {std::cos(a), std::sin(a)};
  }
  for (const Flow* h : jf) {
    const size_t s = at.at(srcOf(h->key)), d = at.at(dstOf(h->key));
    if (s == d) continue;
    PairSteps& p = ps[{s, d}];
    if (p.pay.empty()) {
      p.pay.assign(cut.count, 0.0);
      p.phase.assign(phases, 0.0);
    }
    if (!h->bins.empty()) walk.reset(fineOf(h->bins.front().first));
    long step = -1;  // the step of the phase run below; runs of a step are in order, bins too
    size_t run = 0;
    for (const auto& x : h->bins) {
      const size_t i = fineOf(x.first);
      const long k = walk.stepOf(i);
      if (k < 0 || !cut.counted[k]) continue;
      const double v = known ? static_cast<double>(x.payload) : static_cast<double>(x.second);
      if (!(v > 0)) continue;
      p.pay[k] += v;
      total += v;
      const double into = static_cast<double>(i) - cut.origin - static_cast<double>(k) * cut.period;
      const auto& [co, si] = angle[std::min(slots - 1, static_cast<size_t>(std::max(0.0, into)))];
      p.cos += v * co;
      p.sin += v * si;
      const std::vector<std::pair<size_t, size_t>>& runs = pc->runs[k];
      if (k != step) {
        step = k;
        run = 0;
      }
      while (run < runs.size() && runs[run].second <= i) ++run;
      if (run < runs.size() && runs[run].first <= i) p.phase[run] += v;
    }
  }
  const size_t counted = static_cast<size_t>(std::count(cut.counted.begin(), cut.counted.end(), true));
  topo->steps_share.assign(n, std::vector<double>(n, 0.0));
  topo->offset.assign(n, std::vector<double>(n, -1.0));
  topo->payload.assign(n, std::vector<double>(n, 0.0));
  if (counted == 0) return;
  const double least = 1e-3 * total / static_cast<double>(counted);
  for (const auto& [sd, p] : ps) {
    const auto [s, d] = sd;
    size_t present = 0;
    for (size_t k = 0; k < cut.count; ++k) {
      topo->payload[s][d] += p.pay[k];
      present += cut.counted[k] && p.pay[k] > 0 && p.pay[k] >= least;
    }
    topo->steps_share[s][d] = static_cast<double>(present) / static_cast<double>(counted);
    if (p.cos != 0 || p.sin != 0) topo->offset[s][d] = training::turnOf(p.cos, p.sin);
  }
  for (size_t q = 0; q < phases; ++q) {
    double sum = 0;
    for (const auto& [sd, p] : ps) sum += p.phase[q];
    const double least_pair = n >= 2 ? 0.05 * sum / static_cast<double>(n * (n - 1)) : 0;
    std::set<size_t> senders;
    uint32_t pairs = 0;
    for (const auto& [sd, p] : ps) {
      if (p.phase[q] > 0 && p.phase[q] >= least_pair) {
        ++pairs;
        senders.insert(sd.first);
      }
    }
    pc->report.phases[q].pairs = pairs;
    pc->report.phases[q].senders = static_cast<uint32_t>(senders.size());
  }
  topo->phases = pc->report.phases;
}

}  // namespace

void training::setSparseBins(bool allowed) { sparse_allowed.store(allowed, std::memory_order_relaxed); }
uint64_t training::sparseReadings() { return sparse_readings.load(std::memory_order_relaxed); }

bool Cidr::contains(const std::array<uint8_t, 16>& a, uint8_t fam) const {
  if (fam != family) return false;
  int left = bits;
  for (size_t i = 0; i < 16 && left > 0; ++i, left -= 8) {
    const uint8_t mask = left >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - left));
    if ((a[i] & mask) != (addr[i] & mask)) return false;
  }
  return true;
}

// The step as a job's pairs read it, where it is to replace the job's own reading `job` (whose steps jobCut()
// places, asked only where a pair's busy share is needed); none where no two pairs agree, or where the job read a
// change of pace and no rule below takes a group. Every pair of a job
// repeats once per step, and a pair carries fewer of the step's bursts than the job's sum, so its reading is
// seldom a part of the step (a sharded job's gathers repeat layer after layer in the sum and on the ring's pairs,
// while the pairs that only its reduce-scatter uses repeat once per step) or a multiple of it (a pipeline's
// forward and backward waves look alike in the sum), and its steps' places do not move with which bursts a step
// of the sum holds. The heaviest kStepPairs pairs are read, and a group of them that agrees is taken by the rules
// below; each of its pairs is read again in the job's bins, and their median is the step (docs/training.md "Step
// period", 6). `job` must not be the report jobCut() places the job's steps on (that may drop its period).
// `buf` is scratch space.
template <typename Pair, typename JobCut, typename FineOf>
std::optional<training::PeriodEstimate> pairsStep(std::vector<const Pair*> pairs, const PeriodReport& job,
                                                  const JobCut& jobCut, const FineOf& fineOf, size_t nf,
                                                  int64_t first_fine, double fine_ns, const TrainingConfig& cfg,
                                                  std::vector<double>* buf) {
  std::sort(pairs.begin(), pairs.end(), heavier<Pair>);
  if (pairs.size() > kStepPairs) pairs.resize(kStepPairs);
  // Each pair in coarser bins: a 32nd of the job's own reading, or a 65,536th of the window if that is more, but
  // never more than an eighth of the job's reading (a job without one: a 65,536th of the window). The pairs only
  // have to agree within 4%, and a series that many times shorter costs as much less to read.
  const double job_step = job.period_s ? *job.period_s * 1e9 / fine_ns : 0;
  const double window_share = static_cast<double>(nf) / 65536;
  const size_t coarse = static_cast<size_t>(
      std::max(1.0, job_step > 0 ? std::min(job_step / 8, std::max(job_step / 32, window_share)) : window_share));
  const double coarse_ns = fine_ns * static_cast<double>(coarse);
  // The coarse bins on a grid of the time since the epoch, not of the window's start (`first_fine`: the window's
  // first fine bin since then): a pair's reading in coarse bins moves with where their edges fall, and live the
  // window starts elsewhere than a file does (moe-w4's pairs read 2551–2604 from the file's start, 2551–2560 live).
  const size_t shift = static_cast<size_t>(first_fine % static_cast<int64_t>(coarse));
  struct Reading {
    double period;  // in fine bins
    double quality;
    const Pair* pair;
  };
  std::vector<Reading> readings;
  size_t pairs_changed = 0;
  for (const Pair* p : pairs) {
    buf->assign((nf + shift + coarse - 1) / coarse, 0.0);
    addBins(p->flows, fineOf, coarse, buf, shift);
    if (!job.changed) {  // the period alone
      const training::PeriodEstimate pe = estimatePeriod(*buf, coarse_ns, cfg);
      if (pe.found) readings.push_back({pe.period_bins * static_cast<double>(coarse), pe.quality, p});
      continue;
    }
    const PeriodReport pp = readPace(*buf, coarse_ns, cfg).report;  // whether the pair changed pace too
    if (pp.period_s) readings.push_back({*pp.period_s * 1e9 / fine_ns, pp.quality, p});
    pairs_changed += pp.changed ? 1 : 0;
  }
  std::sort(readings.begin(), readings.end(), [](const Reading& x, const Reading& y) { return x.period < y.period; });
  // The share of the job's counted steps in which a pair is busy: carries a tenth of its median step's transport
  // payload or more (a pair that only carries the ACKs of the other direction is not; wire bytes where the capture
  // has no payload figures).
  auto busyShare = [&](const Pair* p) {
    const training::StepCut& cut = jobCut();
    const bool known = carriesPayload(p->flows);
    std::vector<double> per(cut.count, 0.0);
    training::StepCut::Walk w(cut, nf);
    for (const auto* h : p->flows) {
      if (!h->bins.empty()) w.reset(fineOf(h->bins.front().first));
      for (const auto& x : h->bins) {
        const long k = w.stepOf(fineOf(x.first));
        if (k >= 0 && cut.counted[k]) per[k] += known ? static_cast<double>(x.payload) : static_cast<double>(x.second);
      }
    }
    std::vector<double> busy;
    size_t counted = 0;
    for (size_t k = 0; k < cut.count; ++k) {
      counted += cut.counted[k] ? 1 : 0;
      if (cut.counted[k] && per[k] > 0) busy.push_back(per[k]);
    }
    if (busy.empty() || counted == 0) return 0.0;
    std::nth_element(busy.begin(), busy.begin() + static_cast<long>(busy.size() / 2), busy.end());
    const double tenth = 0.1 * busy[busy.size() / 2];
    return static_cast<double>(std::count_if(busy.begin(), busy.end(), [&](double v) { return v >= tenth; })) /
           static_cast<double>(counted);
  };
  // The readings in groups that agree within 4% (of the group's shortest), each of two pairs or more; which group
  // is the job's step, if not the job's own reading:
  // - without a reading of its own, the group of the most pairs (the longest among equals);
  // - a longer one with two pairs or more that sit idle in a fifth of the job's steps or more: the job read a part
  //   of the step (a sharded job's layers), since a pair that carries the job's data is busy in each of its steps;
  //   a pair that repeats every second step while busy in each (gloo's ring of three alternates what each pair
  //   carries) does not make the job's step longer;
  // - a shorter one that most pairs read: the job read several steps as one (a pipeline's waves);
  // - a group within 8% of the job's reading, when the job read a change of pace that most pairs do not;
  // - with none of these, the group within 8% of the job's reading (below).
  const bool pace_kept = job.changed && 2 * pairs_changed < readings.size();
  std::vector<Reading> agree, near;
  for (size_t i = 0; i < readings.size();) {
    size_t end = i;
    while (end < readings.size() && readings[end].period <= 1.04 * readings[i].period) ++end;
    const std::vector<Reading> g(readings.begin() + static_cast<long>(i), readings.begin() + static_cast<long>(end));
    i = end;
    if (g.size() < 2) continue;
    const double step = g[g.size() / 2].period;
    bool take = false;
    if (job_step <= 0) {
      take = g.size() >= agree.size();
    } else if (step > 1.08 * job_step) {
      const auto idle = std::count_if(g.begin(), g.end(), [&](const Reading& x) { return busyShare(x.pair) <= 0.8; });
      take = idle >= 2 && g.size() > agree.size();
    } else if (step < job_step / 1.08) {
      take = 2 * g.size() > readings.size();
    } else {
      take = pace_kept;
      if (g.size() > near.size()) near = g;
    }
    if (take) agree = g;
  }
  // Otherwise the group that agrees with the job's reading (the most pairs; among equals the shortest): where the
  // job's steps are many bursts spread over the step (a pipeline's microbatches, the phases of a MoE job), the
  // sum's steps shift with which bursts each holds, while a pair's bursts stay put in its steps.
  if (agree.empty() && !job.changed) agree = near;
  if (agree.empty()) return std::nullopt;
  // Each pair of the group read again in the job's bins, its steps followed one by one from its coarse reading
  // (findPeriod's last stage; their autocorrelation in the job's bins would cost as much as the rest of the job's
  // analysis); the median of those. All of the group's pairs, not a few of them: which pairs lie in its middle
  // turns on ties among the coarse readings, and a job's pairs' steps may fall in clusters (bench/README.md "The
  // pairs' step for every job").
  training::PeriodEstimate given;
  given.found = true;
  given.quality = agree[agree.size() / 2].quality;
  std::vector<double> fine_readings;
  thread_local std::vector<size_t> at;
  thread_local std::vector<double> value;
  for (const Reading& x : agree) {
    sparseBins(x.pair->flows, fineOf, &at, &value);
    fine_readings.push_back(training::followPeriod(at, value, x.period));
  }
  std::sort(fine_readings.begin(), fine_readings.end());
  given.period_bins = fine_readings[fine_readings.size() / 2];
  return given;
}

struct TrainingAnalyzer::Impl {
  struct FlowHist {
    FlowKey key;
    // (bin index, wire bytes, transport payload): 16 bytes, as a pair of the first two would take.
    struct Bin {
      int64_t first;
      uint32_t second;
      uint32_t payload;
    };
    // A flow's bins in the window, oldest first. Not a std::deque: every analysis walks every bin of the window
    // several times (the job's fine series, its pairs' steps and phases), and a walk over one array is a pointer
    // walk, where the deque's iterator checks for the end of its 512-byte block at every bin. Nor the engine's
    // RingDeque (src/window/ring_deque.h): its elements wrap around, and a walk would mask every position.
    struct Bins {
      std::vector<Bin> v;
      size_t head = 0;  // v[head, end) are in the window; what lies before went out of it
      const Bin* begin() const { return v.data() + head; }
      const Bin* end() const { return v.data() + v.size(); }
      bool empty() const { return head == v.size(); }
      size_t size() const { return v.size() - head; }
      const Bin& front() const { return v[head]; }
      const Bin& back() const { return v.back(); }
      void push_back(const Bin& b) { v.push_back(b); }
      // The gone bins' room is taken back once they are half of the array (each bin is moved at most once on
      // average), and the array's capacity once it is four times what the window holds: the memory stays
      // within a small multiple of the window's bins, which max_window_bins bounds, however a flow's rate falls.
      void pop_front() {
        if (++head * 2 >= v.size()) {
          v.erase(v.begin(), v.begin() + static_cast<ptrdiff_t>(head));
          head = 0;
          if (v.capacity() > 4 * v.size() + 16) v.shrink_to_fit();
        }
      }
    };
    Bins bins;
    uint64_t bytes = 0;    // in the window
    uint64_t payload = 0;  // in the window
    int64_t last_bin = kMin;
  };
  struct DestState {
    double backlog = 0;
    int64_t last_bin = kMin;
    uint64_t cobursts = 0, cross = 0, over = 0;
    std::vector<uint64_t> hist = std::vector<uint64_t>(kHistBuckets, 0);
    std::set<std::string> jobs;
  };
  struct Remembered {
    JobReport report;
    int64_t last_ns = 0;
  };

  TrainingConfig cfg;
  double link_bps;
  std::vector<int64_t> scales;
  std::vector<double> rates;
  absl::flat_hash_map<FlowKey, FlowHist> flows;
  size_t bins_held = 0;
  int64_t first_bin = std::numeric_limits<int64_t>::max();
  int64_t cutoff_bin = kMin;
  int64_t now_ns = kMin;
  std::vector<std::shared_ptr<const TrainingDelta>> pending;  // since the last analysis
  uint64_t untracked = 0;
  absl::flat_hash_map<Host, DestState> dests;
  std::map<std::string, Remembered> memory;

  void trim(int64_t cut) {
    if (cut <= cutoff_bin) return;
    cutoff_bin = cut;
    for (auto it = flows.begin(); it != flows.end();) {
      FlowHist& h = it->second;
      while (!h.bins.empty() && h.bins.front().first < cut) {
        h.bytes -= h.bins.front().second;
        h.payload -= h.bins.front().payload;
        h.bins.pop_front();
        --bins_held;
      }
      if (h.bins.empty()) {
        flows.erase(it++);
      } else {
        ++it;
      }
    }
  }

  double destinationLink(const Host& h) const {
    for (const HostLink& l : cfg.host_links) {
      if (l.hosts.contains(h.a, h.fam)) return l.bps;
    }
    return cfg.default_host_link_bps > 0 ? cfg.default_host_link_bps : link_bps;
  }

  TrainingReport analyze();
};

TrainingAnalyzer::TrainingAnalyzer(const TrainingConfig& c, double link_bps, std::vector<int64_t> scales_ns,
                                   std::vector<double> rates_bps)
    : impl_(std::make_unique<Impl>()) {
  impl_->cfg = c;
  impl_->link_bps = link_bps;
  impl_->scales = std::move(scales_ns);
  impl_->rates = std::move(rates_bps);
}
TrainingAnalyzer::~TrainingAnalyzer() = default;

void TrainingAnalyzer::ingest(std::shared_ptr<const TrainingDelta> d) {
  Impl& m = *impl_;
  if (!d) return;
  const int64_t bin = m.cfg.bin_ns;
  for (const TrainingFlowBins& fb : d->flows) {
    if (fb.bins.empty()) continue;
    Impl::FlowHist& h = m.flows[fb.key];
    h.key = fb.key;
    for (size_t i = 0; i < fb.bins.size(); ++i) {
      const auto [b, bytes] = fb.bins[i];
      if (b < m.cutoff_bin) continue;
      h.bins.push_back({b, bytes, i < fb.payload.size() ? fb.payload[i] : 0});
      h.bytes += bytes;
      h.payload += h.bins.back().payload;
      ++m.bins_held;
      m.first_bin = std::min(m.first_bin, b);
    }
    h.last_bin = std::max(h.last_bin, fb.bins.back().first);
  }
  m.untracked += d->untracked_packets;
  m.now_ns = std::max(m.now_ns, d->end_ns);
  m.first_bin = std::min(m.first_bin, d->start_ns / bin);
  m.pending.push_back(std::move(d));
  if (m.cfg.window_ns > 0) m.trim(m.now_ns / bin - m.cfg.window_ns / bin);
  // The memory bound: the oldest sixteenths of the window go until the bins fit.
  while (m.bins_held > m.cfg.max_window_bins) {
    const int64_t from = std::max(m.cutoff_bin, m.first_bin);
    m.trim(from + std::max<int64_t>(1, (m.now_ns / bin - from) / 16));
  }
}

TrainingReport TrainingAnalyzer::analyze() { return impl_->analyze(); }

TrainingReport TrainingAnalyzer::Impl::analyze() {
  const auto t0 = std::chrono::steady_clock::now();
  TrainingReport rep;
  rep.untracked_packets = untracked;
  if (now_ns == kMin) return rep;
  const int64_t bin = cfg.bin_ns;
  const int64_t ws = std::max(first_bin, cutoff_bin);  // window start, in bins
  const int64_t we = (now_ns + bin - 1) / bin;         // window end (exclusive)
  rep.at_ns = now_ns;
  rep.window_ns = (we - ws) * bin;
  const double window_s = static_cast<double>(rep.window_ns) / 1e9;

  // Directed host pairs over the window.
  struct PairAgg {
    Host s, d;
    uint64_t bytes = 0;
    std::vector<const FlowHist*> flows;
  };
  absl::flat_hash_map<FlowKey, PairAgg> pairs;
  uint64_t total = 0;
  std::set<Host> hosts;
  for (const auto& [key, h] : flows) {
    PairAgg& p = pairs[key.pairKey()];
    p.s = srcOf(key);
    p.d = dstOf(key);
    p.bytes += h.bytes;
    p.flows.push_back(&h);
    total += h.bytes;
    hosts.insert(p.s);
    hosts.insert(p.d);
  }
  // Each pair's flows in the order of their keys, not of the hash tables' (absl seeds them per process): a job's
  // sums that are not whole numbers (where in the step a pair's payload lies) come out the same in every run.
  for (auto& [key, p] : pairs) {
    std::sort(p.flows.begin(), p.flows.end(), [](const FlowHist* x, const FlowHist* y) {
      return std::memcmp(&x->key, &y->key, sizeof(FlowKey)) < 0;  // FlowKey has no padding (packet.h)
    });
  }

  // Jobs: configured ones, then connected components of the heavy pairs among the other hosts.
  struct JobBuild {
    std::string name;
    bool configured = false;
    std::vector<Host> hosts;
    uint64_t bytes = 0;
  };
  std::vector<JobBuild> jobs;
  absl::flat_hash_map<Host, int> job_of;
  for (const JobSpec& spec : cfg.jobs) {
    JobBuild j;
    j.name = spec.name;
    j.configured = true;
    for (const Host& h : hosts) {
      if (job_of.contains(h)) continue;
      if (std::any_of(spec.hosts.begin(), spec.hosts.end(), [&](const Cidr& c) { return c.contains(h.a, h.fam); })) {
        j.hosts.push_back(h);
        job_of[h] = static_cast<int>(jobs.size());
      }
    }
    if (!j.hosts.empty()) jobs.push_back(std::move(j));
  }
  {
    std::vector<Host> free_hosts;
    absl::flat_hash_map<Host, int> idx;
    for (const Host& h : hosts) {
      if (!job_of.contains(h)) {
        idx[h] = static_cast<int>(free_hosts.size());
        free_hosts.push_back(h);
      }
    }
    std::vector<int> parent(free_hosts.size());
    std::iota(parent.begin(), parent.end(), 0);
    std::function<int(int)> root = [&](int v) { return parent[v] == v ? v : parent[v] = root(parent[v]); };
    absl::flat_hash_map<FlowKey, uint64_t> undirected;
    absl::flat_hash_map<Host, uint64_t> host_bytes;  // sent and received, over the window
    for (const auto& [key, p] : pairs) {
      host_bytes[p.s] += p.bytes;
      host_bytes[p.d] += p.bytes;
      if (!idx.contains(p.s) || !idx.contains(p.d) || p.s == p.d) continue;
      FlowKey u = key;
      if (p.d < p.s) std::swap(u.src, u.dst);
      undirected[u] += p.bytes;
    }
    // A pair is heavy for its two hosts, not for the port: it carries a share of the busier host's bytes.
    // So a 32-host all-to-all (each pair ~3% of its hosts' bytes) or a job beside a far heavier one is found.
    for (const auto& [u, b] : undirected) {
      const double busier = static_cast<double>(std::max(host_bytes[srcOf(u)], host_bytes[dstOf(u)]));
      if (b >= cfg.job_min_bytes && static_cast<double>(b) >= cfg.job_edge_share * busier) {
        parent[root(idx[srcOf(u)])] = root(idx[dstOf(u)]);
      }
    }
    std::map<int, std::vector<Host>> comps;
    for (size_t i = 0; i < free_hosts.size(); ++i) comps[root(static_cast<int>(i))].push_back(free_hosts[i]);
    std::vector<JobBuild> found;
    for (auto& [r, members] : comps) {
      if (members.size() < 2) continue;
      JobBuild j;
      std::sort(members.begin(), members.end());
      j.name = "job-" + hostName(members.front());
      j.hosts = members;
      found.push_back(std::move(j));
    }
    const size_t first_found = jobs.size();
    for (JobBuild& j : found) {
      for (const Host& h : j.hosts) job_of[h] = static_cast<int>(jobs.size());
      jobs.push_back(std::move(j));
    }
    for (const auto& [key, p] : pairs) {
      auto a = job_of.find(p.s), b = job_of.find(p.d);
      if (a != job_of.end() && b != job_of.end() && a->second == b->second) jobs[a->second].bytes += p.bytes;
    }
    // The heaviest inferred jobs within the bound; the others' hosts are "other".
    std::vector<JobBuild> kept(std::make_move_iterator(jobs.begin()),
                               std::make_move_iterator(jobs.begin() + first_found));
    std::vector<JobBuild> inferred(std::make_move_iterator(jobs.begin() + first_found),
                                   std::make_move_iterator(jobs.end()));
    std::stable_sort(inferred.begin(), inferred.end(),
                     [](const JobBuild& x, const JobBuild& y) { return x.bytes > y.bytes; });
    for (JobBuild& j : inferred) {
      if (kept.size() >= std::max(cfg.max_jobs, first_found)) break;
      kept.push_back(std::move(j));
    }
    jobs = std::move(kept);
    job_of.clear();
    for (size_t i = 0; i < jobs.size(); ++i) {
      for (const Host& h : jobs[i].hosts) job_of[h] = static_cast<int>(i);
    }
  }
  uint64_t in_jobs = 0;
  for (const JobBuild& j : jobs) in_jobs += j.bytes;
  rep.other_bytes = total - in_jobs;

  // Each job's figures.
  const int64_t nb = we - ws;
  const int64_t f =
      std::max<int64_t>(1, (nb + static_cast<int64_t>(kMaxFineBins) - 1) / static_cast<int64_t>(kMaxFineBins));
  const size_t nf = static_cast<size_t>((nb + f - 1) / f);
  const double fine_ns = static_cast<double>(bin * f);
  // A bin's fine bin: a subtraction, and a division only when a long window is held in coarser fine bins.
  const auto fineOf = [ws, f](int64_t b) { return static_cast<size_t>(f == 1 ? b - ws : (b - ws) / f); };
  const int64_t ds = pending.empty() ? ws : pending.front()->start_ns / bin;
  const size_t interval_from = static_cast<size_t>(std::clamp<int64_t>((ds - ws) / f, 0, static_cast<int64_t>(nf)));
  const double interval_s =
      pending.empty() ? window_s : static_cast<double>(pending.back()->end_ns - pending.front()->start_ns) / 1e9;
  std::set<std::string> current;
  // Each job's fine bins, in one buffer for all: a window's worth (up to kMaxFineBins) allocated afresh for every
  // job costs its pages' first touch each time.
  std::vector<double> fine, pair_fine;
  NonzeroBins nonzero;
  std::vector<size_t> bin_runs;  // where each flow's bins begin in a job's interval bins
  for (const JobBuild& j : jobs) {
    JobReport r;
    r.name = j.name;
    r.configured = j.configured;
    for (const Host& h : j.hosts) r.hosts.push_back(hostName(h));
    r.window_bytes = j.bytes;
    std::map<Host, size_t> at;
    for (size_t i = 0; i < j.hosts.size(); ++i) at[j.hosts[i]] = i;
    const size_t n = j.hosts.size();
    std::vector<const FlowHist*> jf;
    training::TopologyInput topo;
    topo.hosts = r.hosts;
    if (n <= kMaxTopologyHosts) topo.bytes.assign(n, std::vector<uint64_t>(n, 0));
    topo.data_edge_share = cfg.data_edge_share;
    std::vector<const PairAgg*> job_pairs;
    for (const auto& [key, p] : pairs) {
      if (at.contains(p.s) && at.contains(p.d)) job_pairs.push_back(&p);
    }
    // In the order of the hosts, not of the hash table (as each pair's flows).
    std::sort(job_pairs.begin(), job_pairs.end(),
              [](const PairAgg* x, const PairAgg* y) { return std::tie(x->s, x->d) < std::tie(y->s, y->d); });
    for (const PairAgg* p : job_pairs) {
      if (n <= kMaxTopologyHosts) topo.bytes[at[p->s]][at[p->d]] += p->bytes;
      for (const FlowHist* h : p->flows) {
        jf.push_back(h);
        topo.flow_bytes.push_back(h->bytes);
      }
    }
    fine.assign(nf, 0.0);
    int64_t last_bin = kMin;
    size_t filled = 0;  // nonzero fine bins
    for (const FlowHist* h : jf) {
      for (const FlowHist::Bin& x : h->bins) {
        double& b = fine[fineOf(x.first)];
        filled += b == 0 && x.second != 0 ? 1 : 0;
        b += static_cast<double>(x.second);
      }
      last_bin = std::max(last_bin, h->last_bin);
    }
    r.idle_s = last_bin == kMin ? window_s : std::max(0.0, static_cast<double>(now_ns - (last_bin + 1) * bin) / 1e9);
    // The interval (offline: the file), and its 100 µs bins when asked for (live) and it is interval-sized.
    const bool keep_bins = cfg.interval_bins && !pending.empty() &&
                           pending.back()->end_ns - pending.front()->start_ns <= kMaxIntervalBinsSpan;
    std::vector<std::pair<int64_t, uint64_t>>& job_bins = r.interval_bins;
    bin_runs.clear();
    for (const auto& delta : pending) {
      for (const TrainingFlowBins& fb : delta->flows) {
        auto a = at.find(srcOf(fb.key)), b = at.find(dstOf(fb.key));
        if (a == at.end() || b == at.end()) continue;
        r.bytes += fb.bytes;
        r.packets += fb.packets;
        if (keep_bins) {
          bin_runs.push_back(job_bins.size());
          job_bins.insert(job_bins.end(), fb.bins.begin(), fb.bins.end());
        }
      }
    }
    if (!job_bins.empty()) {  // in order of bin, each bin's bytes summed over the job's flows
      bin_runs.push_back(job_bins.size());
      training::mergeRuns(&job_bins, &bin_runs, [](const auto& x, const auto& y) { return x.first < y.first; });
      size_t w = 0;
      for (size_t i = 1; i < job_bins.size(); ++i) {
        if (job_bins[i].first == job_bins[w].first) {
          job_bins[w].second += job_bins[i].second;
        } else {
          job_bins[++w] = job_bins[i];
        }
      }
      job_bins.resize(w + 1);
    }
    r.rate_bps = interval_s > 0 ? static_cast<double>(r.bytes) * 8 / interval_s : 0;
    r.baseline_bps = window_s > 0 ? static_cast<double>(j.bytes) * 8 / window_s : 0;
    std::vector<size_t> widths;  // each scale in fine bins; 0: a window longer than 419 s is held in coarser
                                 // bins, no figure below their width
    for (int64_t tau : scales) widths.push_back(tau < bin * f ? 0 : static_cast<size_t>(tau / (bin * f)));
    // The nonzero bins listed where they are at most a sixteenth of all: listing them costs a pass of its own.
    // Measured (bench/README.md): the 30x trace's job (5% of its bins nonzero) gained 2.8 ms of its envelopes' and
    // backlogs' 3.8; with every job listed, BM_Training_Interval's (10% nonzero) lost 1.5 ms each.
    const bool sparse = 16 * filled <= nf && sparse_allowed.load(std::memory_order_relaxed);
    if (sparse) {
      nonzero.of(fine);
      sparse_readings.fetch_add(1, std::memory_order_relaxed);
    }
    const std::vector<double> best =
        sparse ? envelopes(nonzero, nf, interval_from, widths) : denseEnvelopes(fine, interval_from, widths);
    for (size_t s = 0; s < scales.size(); ++s) {
      r.envelope_bytes.push_back(widths[s] == 0 ? 0 : static_cast<uint64_t>(std::llround(best[s])));
      r.ptm.push_back(widths[s] != 0 && scales[s] <= rep.window_ns
                          ? peakToMean(r.envelope_bytes.back(), scales[s], r.baseline_bps)
                          : std::nullopt);
    }
    std::vector<double> drains;
    for (double rate : rates) drains.push_back(rate * fine_ns / 8e9);
    r.backlog_bytes =
        sparse ? backlogs(nonzero, nf, interval_from, drains) : denseBacklogs(fine, interval_from, drains);
    // Period, steps, bytes per step.
    // The job's steps are placed once its period is known: at its own reading, or at its pairs' (which only needs
    // the steps at the job's own reading for the pairs' busy share, and then places them again).
    Pace pace = readPace(fine, fine_ns, cfg, nullptr, sparse ? &nonzero : nullptr);
    training::StepCut cut;
    bool placed = false;
    auto jobCut = [&]() -> const training::StepCut& {
      if (!placed) placeSteps(fine, &pace, &cut, sparse ? &nonzero : nullptr);
      placed = true;
      return cut;
    };
    const PeriodReport own = pace.report;  // the job's reading as read, before its steps are placed
    if (const auto given = pairsStep(job_pairs, own, jobCut, fineOf, nf, ws / f, fine_ns, cfg, &pair_fine)) {
      Pace again = readPace(fine, fine_ns, cfg, &*given);
      training::StepCut again_cut;
      placeSteps(fine, &again, &again_cut, sparse ? &nonzero : nullptr);
      if (again.report.period_s) {
        pace = std::move(again);
        cut = std::move(again_cut);
        placed = true;
      }
    }
    jobCut();
    r.period = pace.report;
    std::vector<std::vector<double>> rank_steps(n, std::vector<double>(cut.count, 0.0));
    std::vector<double> step_payload(cut.count, 0.0);  // transport payload of all ranks, per step
    std::vector<double> steps(cut.count, 0.0);
    training::StepCut::Walk walk(cut, nf);  // each bin's step, for this pass and the pairs' (timePairs)
    if (r.period.period_s) {
      for (const FlowHist* h : jf) {
        const size_t src = at[srcOf(h->key)];
        if (!h->bins.empty()) walk.reset(fineOf(h->bins.front().first));
        for (const FlowHist::Bin& x : h->bins) {
          const long k = walk.stepOf(fineOf(x.first));
          if (k < 0 || !cut.counted[k]) continue;
          rank_steps[src][k] += x.second;
          step_payload[k] += x.payload;
          steps[k] += x.second;
        }
      }
      std::vector<double> counted;
      for (size_t k = 0; k < cut.count; ++k) {
        if (cut.counted[k]) counted.push_back(steps[k]);
      }
      const double mean = std::accumulate(counted.begin(), counted.end(), 0.0) / static_cast<double>(counted.size());
      double var = 0;
      for (double s : counted) var += (s - mean) * (s - mean);
      r.step_bytes_mean = mean;
      r.step_bytes_cv = mean > 0 ? std::sqrt(var / static_cast<double>(counted.size())) / mean : 0;
      r.step_bytes_min = *std::min_element(counted.begin(), counted.end());
      r.step_bytes_max = *std::max_element(counted.begin(), counted.end());
      // Where each step lies: fine coordinate x is at ws·bin + x·fine_ns.
      // The steps that happened (SPEC "Steps"): from the job's first step of typical volume to its last, those
      // in which it sent; none over the silence before its first step or after its last, nor the start-up's
      // rendezvous and model broadcast before the first step. Numbered from its first step.
      const std::vector<double>& all = cut.bytes;
      size_t lo = 0, hi = 0;  // the first and one past the last counted step
      for (size_t k = 0; k < cut.count; ++k) {
        if (!cut.counted[k]) continue;
        if (hi == 0) lo = k;
        hi = k + 1;
      }
      const size_t first = std::max(lo, hi > kMaxListedSteps ? hi - kMaxListedSteps : 0);
      auto at_ns = [&](double x) { return ws * bin + std::llround(x * fine_ns); };
      for (size_t k = first; k < hi; ++k) {
        if (!(all[k] > 0)) continue;
        const double x = cut.origin + static_cast<double>(k) * cut.period;
        r.steps.push_back(
            {k - lo, at_ns(x), at_ns(x + cut.period), all[k], static_cast<bool>(cut.counted[k]), std::nullopt});
      }
    }
    if (r.period.period_s && n <= kMaxTopologyHosts) {
      PhaseCut pc = cutPhases(fine, fine_ns, cut, sparse ? &nonzero : nullptr);
      timePairs(jf, at, fineOf, cut, walk, &pc, &topo);
      topo.period_s = *r.period.period_s;
      r.phases = std::move(pc.report);
    }
    // A job of thousands of hosts (a configured /8) is not classified: the matrix would be n² each interval.
    if (n > kMaxTopologyHosts) topo.hosts.clear();
    training::TopologyResult tr = training::classifyTopology(topo);
    tr.roles.resize(n, "host");
    tr.successor.resize(n, -1);
    r.topology = tr.report;
    // Transport payload a rank sends per step: the median counted step's over the ranks. The median, not the
    // mean: where nothing is quiet between steps (a sharded job's last reduce-scatter runs into the next step's
    // first gather) the cut falls inside a step, each step in the middle still holds one step's payload, but the
    // first counted one lacks what came before the cut (11% of a step on a 4-rank sharded job).
    double rank_payload_mean = 0;
    {
      std::vector<double> counted;
      for (size_t k = 0; k < cut.count; ++k) {
        if (cut.counted[k]) counted.push_back(step_payload[k]);
      }
      if (!counted.empty()) {
        std::nth_element(counted.begin(), counted.begin() + static_cast<long>(counted.size() / 2), counted.end());
        rank_payload_mean = counted[counted.size() / 2] / static_cast<double>(n);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      RankReport rk;
      rk.host = r.hosts[i];
      rk.role = tr.roles[i];
      if (tr.successor[i] >= 0) rk.successor = r.hosts[tr.successor[i]];
      if (r.period.steps > 0) {
        double s = 0;
        for (size_t k = 0; k < cut.count; ++k) s += cut.counted[k] ? rank_steps[i][k] : 0;
        rk.sent_bytes_per_step = s / static_cast<double>(r.period.steps);
      }
      r.ranks.push_back(std::move(rk));
    }
    // Model size (SPEC "Model size", from transport payload: no headers, no retransmissions; none when the capture
    // carries no payload figures). A collective over m ranks that moves the model `passes` times per step has each
    // rank send passes·(m-1)/m of it: ring all-reduce 2 (reduce-scatter, all-gather), sharded 3 (two gathers and
    // a reduction per layer); a hybrid job's stage groups each all-reduce their stage's share of it, and its
    // pipeline edges carry activations, not parameters.
    auto model = [](double rank_payload, double m, double passes) { return rank_payload * m / (passes * (m - 1)); };
    const double nd = static_cast<double>(n);
    if (r.period.steps > 0 && n >= 2 && rank_payload_mean > 0) {
      if (r.topology.kind == "ring") r.gradient_bytes = model(rank_payload_mean, nd, 2);
      if (r.topology.kind == "sharded") r.gradient_bytes = model(rank_payload_mean, nd, 3);
    }
    if (r.topology.kind == "hybrid" && r.period.steps > 0) {
      std::map<std::string, size_t> index;
      for (size_t i = 0; i < n; ++i) index[r.hosts[i]] = i;
      double g = 0;
      for (const std::vector<std::string>& group : r.topology.groups) {
        const double m = static_cast<double>(group.size());
        double sent = 0;  // by the group's ranks to each other, over the counted steps
        for (const std::string& a : group) {
          for (const std::string& b : group) sent += topo.payload[index[a]][index[b]];
        }
        if (m >= 2) g += model(sent / static_cast<double>(r.period.steps) / m, m, 2);
      }
      if (g > 0) r.gradient_bytes = g;
    }
    current.insert(r.name);
    memory[r.name] = Remembered{r, last_bin == kMin ? now_ns : (last_bin + 1) * bin};
    rep.jobs.push_back(std::move(r));
  }
  // Jobs that went quiet: still reported (idle) for a while, with what was last read of them.
  std::set<std::string> current_hosts;
  for (const JobReport& j : rep.jobs) current_hosts.insert(j.hosts.begin(), j.hosts.end());
  for (auto it = memory.begin(); it != memory.end();) {
    if (current.contains(it->first)) {
      ++it;
      continue;
    }
    // A job whose hosts now (partly) belong to a current one was renamed, merged or split, not silenced.
    const bool renamed = std::any_of(it->second.report.hosts.begin(), it->second.report.hosts.end(),
                                     [&](const std::string& h) { return current_hosts.contains(h); });
    if (renamed || now_ns - it->second.last_ns > cfg.forget_ns || rep.jobs.size() >= 2 * cfg.max_jobs) {
      it = memory.erase(it);
      continue;
    }
    JobReport r = it->second.report;
    r.bytes = r.packets = 0;
    r.rate_bps = r.baseline_bps = 0;
    r.window_bytes = 0;
    r.interval_bins.clear();  // silent now: none of its own traffic in this interval
    std::fill(r.envelope_bytes.begin(), r.envelope_bytes.end(), 0);
    std::fill(r.ptm.begin(), r.ptm.end(), std::nullopt);
    std::fill(r.backlog_bytes.begin(), r.backlog_bytes.end(), 0.0);
    r.idle_s = static_cast<double>(now_ns - it->second.last_ns) / 1e9;
    rep.jobs.push_back(std::move(r));
    ++it;
  }

  // Co-bursts and fan-in toward each destination, over every delta's bins since the last analysis (in order:
  // the backlog carries from one to the next).
  if (!pending.empty()) {
    // A flow's job as the co-bursts name it: its sender's, or none ("other"). Read once per flow, not per bin.
    auto jobOfFlow = [&](const Host& s) -> int {
      auto a = job_of.find(s);
      return a != job_of.end() ? a->second : -1;
    };
    const std::string other = "other";
    auto jobName = [&](int j) -> const std::string& { return j < 0 ? other : jobs[j].name; };
    // One arrival: a flow's bytes in one bin. `src` is the sender's rank among the destination's senders in
    // address order, so that sorting by (bin, src) compares two integers, not two addresses.
    struct Arrival {
      int64_t bin;
      uint32_t src;
      int32_t job;
      uint64_t bytes;
    };
    struct Toward {
      Host dst, src;
      const TrainingFlowBins* flow;
    };
    std::map<Host, DestinationReport> reports;
    std::vector<Toward> toward;
    std::vector<Arrival> v;
    std::vector<size_t> runs;               // where each flow's arrivals begin in v, and v's end
    std::vector<int32_t> named;             // the jobs of one bin's co-bursting senders
    std::vector<const std::string*> names;  // their names, each once, in order
    for (const auto& delta : pending) {
      // The delta's flows grouped by destination, each destination's by sender.
      toward.clear();
      for (const TrainingFlowBins& fb : delta->flows) toward.push_back({dstOf(fb.key), srcOf(fb.key), &fb});
      std::sort(toward.begin(), toward.end(),
                [](const Toward& x, const Toward& y) { return x.dst == y.dst ? x.src < y.src : x.dst < y.dst; });
      for (size_t g = 0; g < toward.size();) {
        const Host dst = toward[g].dst;
        v.clear();
        runs.clear();
        uint32_t rank = 0;
        for (; g < toward.size() && toward[g].dst == dst; ++g) {
          if (g > 0 && toward[g - 1].dst == dst && !(toward[g - 1].src == toward[g].src)) ++rank;
          const int32_t job = jobOfFlow(toward[g].src);
          runs.push_back(v.size());
          for (const auto& [b, bytes] : toward[g].flow->bins) v.push_back({b, rank, job, bytes});
        }
        runs.push_back(v.size());
        // In order of bin, then sender: the flows come in order of sender, each a run of ascending bins.
        training::mergeRuns(&v, &runs, [](const Arrival& x, const Arrival& y) {
          return x.bin != y.bin ? x.bin < y.bin : x.src < y.src;
        });
        DestState& st = dests[dst];
        DestinationReport& d = reports[dst];
        d.host = hostName(dst);
        d.link_bps = destinationLink(dst);
        const double threshold =
            (cfg.coburst_bps > 0 ? cfg.coburst_bps : cfg.coburst_share * d.link_bps) * static_cast<double>(bin) / 8e9;
        const double drain = d.link_bps * static_cast<double>(bin) / 8e9;
        for (size_t i = 0; i < v.size();) {
          const int64_t b = v[i].bin;
          uint64_t bytes = 0, sources = 0;
          named.clear();
          while (i < v.size() && v[i].bin == b) {
            // One source's flows toward the destination in this bin, summed.
            const uint32_t src = v[i].src;
            const int32_t job = v[i].job;
            uint64_t from = 0;
            while (i < v.size() && v[i].bin == b && v[i].src == src) from += v[i++].bytes;
            bytes += from;
            if (static_cast<double>(from) >= threshold) {
              ++sources;
              named.push_back(job);
            }
          }
          if (st.last_bin != kMin && b > st.last_bin + 1) {
            // Empty bins drain the backlog; those that still end above the buffer count too: bin j of the gap
            // ends at backlog - j·drain.
            const double gap = static_cast<double>(b - st.last_bin - 1);
            if (cfg.receiver_buffer_bytes > 0 && st.backlog > cfg.receiver_buffer_bytes) {
              const double above = std::ceil((st.backlog - cfg.receiver_buffer_bytes) / drain) - 1;
              st.over += static_cast<uint64_t>(std::clamp(above, 0.0, gap));
            }
            st.backlog = std::max(0.0, st.backlog - drain * gap);
          }
          st.backlog = std::max(0.0, st.backlog + static_cast<double>(bytes) - drain);
          st.last_bin = b;
          d.max_backlog_bytes = std::max(d.max_backlog_bytes, st.backlog);
          if (cfg.receiver_buffer_bytes > 0 && st.backlog > cfg.receiver_buffer_bytes) ++st.over;
          d.bytes += bytes;
          d.max_sources = std::max(d.max_sources, sources);
          if (sources >= 1) ++st.hist[std::min(sources, kHistBuckets) - 1];
          if (sources >= 2) {
            // The jobs' names as a set of them would hold them: each once, in order.
            names.clear();
            for (int32_t j : named) names.push_back(&jobName(j));
            std::sort(names.begin(), names.end(), [](const std::string* x, const std::string* y) { return *x < *y; });
            names.erase(std::unique(names.begin(), names.end(),
                                    [](const std::string* x, const std::string* y) { return *x == *y; }),
                        names.end());
            ++st.cobursts;
            if (names.size() >= 2) ++st.cross;
            for (const std::string* nm : names) {
              if (st.jobs.size() < kMaxCoburstJobs) st.jobs.insert(*nm);
            }
          }
        }
      }
    }
    for (auto& [dst, d] : reports) {
      const DestState& st = dests[dst];
      d.cobursts = st.cobursts;
      d.cross_job_cobursts = st.cross;
      d.sources_hist = st.hist;
      d.over_buffer_bins = st.over;
      d.jobs.assign(st.jobs.begin(), st.jobs.end());
      rep.destinations.push_back(std::move(d));
    }
    std::sort(rep.destinations.begin(), rep.destinations.end(),
              [](const DestinationReport& x, const DestinationReport& y) {
                if (x.max_backlog_bytes != y.max_backlog_bytes) return x.max_backlog_bytes > y.max_backlog_bytes;
                if (x.bytes != y.bytes) return x.bytes > y.bytes;
                return x.host < y.host;
              });
    if (rep.destinations.size() > cfg.top_destinations) rep.destinations.resize(cfg.top_destinations);
    // The destinations' states within their bound: the longest quiet go first.
    if (dests.size() > cfg.max_destinations) {
      std::vector<std::pair<int64_t, Host>> by_age;
      for (const auto& [h, st] : dests) by_age.emplace_back(st.last_bin, h);
      std::sort(by_age.begin(), by_age.end());
      for (size_t i = 0; i + cfg.max_destinations < by_age.size(); ++i) dests.erase(by_age[i].second);
    }
  }
  rep.destinations_seen = dests.size();
  rep.intervals = pending.size();
  pending.clear();

  // Per heavy pair (analyze --json): its own period.
  if (cfg.pair_periods) {
    std::vector<const PairAgg*> order;
    for (const auto& [key, p] : pairs) order.push_back(&p);
    std::sort(order.begin(), order.end(), heavier<PairAgg>);
    if (order.size() > 32) order.resize(32);
    for (const PairAgg* p : order) {
      fine.assign(nf, 0.0);
      addBins(p->flows, fineOf, 1, &fine);
      // A pair's bins are sparser still than its job's (a pair carries a part of each step).
      const bool sparse = sparse_allowed.load(std::memory_order_relaxed) && nonzero.of(fine, nf / 16);
      if (sparse) sparse_readings.fetch_add(1, std::memory_order_relaxed);
      training::StepCut cut;
      rep.pairs.push_back(PairPeriod{hostName(p->s), hostName(p->d), p->bytes,
                                     readPeriod(fine, fine_ns, cfg, &cut, sparse ? &nonzero : nullptr)});
    }
  }
  rep.analysis_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

absl::StatusOr<Cidr> parseCidr(const std::string& text) {
  Cidr c;
  const size_t slash = text.find('/');
  const std::string addr = text.substr(0, slash);
  FlowKey k;
  if (inet_pton(AF_INET, addr.c_str(), k.src.data()) == 1) {
    c.family = 4;
    c.bits = 32;
  } else if (inet_pton(AF_INET6, addr.c_str(), k.src.data()) == 1) {
    c.family = 6;
    c.bits = 128;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not an IPv4 or IPv6 address or prefix"));
  }
  c.addr = k.src;
  if (slash != std::string::npos) {
    const std::string len = text.substr(slash + 1);
    int bits = -1;
    if (!len.empty() && len.size() <= 3 && std::all_of(len.begin(), len.end(), ::isdigit)) bits = std::stoi(len);
    if (bits < 0 || bits > c.bits) {
      return absl::InvalidArgumentError(absl::StrCat("'", text, "': prefix length must be 0..", c.bits));
    }
    c.bits = bits;
  }
  return c;
}

absl::Status validateTrainingConfig(const TrainingConfig& c) {
  auto bad = [](const char* key, auto... why) { return absl::InvalidArgumentError(absl::StrCat(key, ": ", why...)); };
  if (c.bin_ns <= 0) return bad("bin_ns", "must be positive");
  if (c.window_ns < 0) return bad("window", "must not be negative");
  if (c.window_ns > 0 && c.window_ns < 10 * c.bin_ns) return bad("window", "must hold at least 10 bins");
  if (c.max_flows == 0) return bad("max-flows", "must be at least 1");
  if (c.max_window_bins < 1024) return bad("max-window-bins", "must be at least 1024");
  if (c.max_jobs == 0) return bad("max-jobs", "must be at least 1");
  if (!(c.job_edge_share >= 0 && c.job_edge_share <= 1)) return bad("job-edge-share", "must be in [0, 1]");
  if (!(c.min_period_s > 0) || !(c.max_period_s > c.min_period_s)) {
    return bad("period", "need 0 < min-period < max-period");
  }
  if (!(c.min_period_quality > 0 && c.min_period_quality < 1)) return bad("min-period-quality", "must be in (0, 1)");
  if (!(c.data_edge_share > 0 && c.data_edge_share <= 1)) return bad("data-edge-share", "must be in (0, 1]");
  if (!(c.coburst_share > 0) || c.coburst_bps < 0) return bad("coburst", "thresholds must be positive");
  if (c.top_destinations == 0) return bad("top-destinations", "must be at least 1");
  if (!(c.analysis_budget > 0 && c.analysis_budget <= 1)) return bad("analysis-budget", "must be in (0, 1]");
  for (const JobSpec& j : c.jobs) {
    if (j.name.empty()) return bad("jobs", "a job needs a name");
    if (j.hosts.empty()) return bad("jobs", "job '", j.name, "' has no hosts");
  }
  for (const HostLink& l : c.host_links) {
    if (!(l.bps > 0)) return bad("host-links", "rates must be positive");
  }
  return absl::OkStatus();
}

}  // namespace burstscope
