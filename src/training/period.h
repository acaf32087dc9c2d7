// The step period of a byte series (docs/training.md "Step period"): the fundamental period of a
// burst-and-stop series, from its autocorrelation, with sub-bin precision from the peaks at its multiples.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace burstscope::training {

struct PeriodOptions {
  double min_period_bins = 2;
  double max_period_bins = 1e18;
  double min_quality = 0.4;
};

struct PeriodEstimate {
  bool found = false;
  double period_bins = 0;  // in bins of the series, sub-bin precision
  double quality = 0;      // normalised autocorrelation at the period (1 = identical steps)
  std::string why;         // when not found
};

// Normalised autocorrelation rho[L] = Σ (x[i]-m)(x[i+L]-m) / ((n-L) var), L = 0..n-1, by FFT (fftw3).
std::vector<double> autocorrelation(std::span<const double> x);
// The same for the first `lags` lags only (0 for L at or past them): summed directly when that is cheaper
// than the transform (a few dozen lags of a long series), else by FFT.
std::vector<double> autocorrelation(std::span<const double> x, size_t lags);

// The period of `x` (bins of equal width), or why there is none. Leading and trailing empty bins are
// ignored. The series must hold at least two periods after its first non-empty bin (three steps' starts).
// A series' nonzero bins where the caller has them listed: the series x is bins [offset, offset + x.size()) of a
// longer one whose nonzero bins are at[j] (ascending) holding value[j]. findPeriod then sums the coarse levels and
// lists the steps' bins from these instead of from every bin of x, with the same figures.
struct NonzeroView {
  std::span<const size_t> at;
  std::span<const double> value;
  size_t offset = 0;
};
PeriodEstimate findPeriod(std::span<const double> x, const PeriodOptions& o, const NonzeroView* nz = nullptr);

// The period of a series known to lie near `p0` bins, sharpened by findPeriod's last stage alone (its steps
// followed one by one) without the autocorrelation; p0 where fewer than three steps are anchored or they do not
// line up with it. The series by its non-empty bins: bin at[j] holds value[j] (above 0), at ascending and distinct.
double followPeriod(std::span<const size_t> at, std::span<const double> value, double p0);

// Where the steps of a periodic series fall: step k covers fine bins [origin + k·period, origin + (k+1)·period).
struct StepCut {
  double origin = 0;
  double period = 0;          // in fine bins
  size_t count = 0;           // whole steps inside the analysed region
  std::vector<bool> counted;  // steps with traffic
  std::vector<double> bytes;  // each step's bytes
  long stepOf(size_t i) const {
    if (period <= 0) return -1;
    const double k = std::floor((static_cast<double>(i) - origin) / period);
    return k >= 0 && k < static_cast<double>(count) ? static_cast<long>(k) : -1;
  }
  // f(k, begin, end) for each step k with its fine bins [begin, end) below n: the bins whose stepOf is k, found
  // at the step's edges alone (stepOf's formula is monotone in i, so each step is one run of bins) instead of
  // a division per bin.
  template <typename F>
  void forEachStep(size_t n, F f) const {
    if (period <= 0) return;
    const auto index = [&](double i) { return std::floor((i - origin) / period); };
    const auto first = [&](size_t k) {  // the smallest bin whose formula gives k or more
      const double kd = static_cast<double>(k);
      double c = std::max(0.0, std::ceil(origin + kd * period));
      while (c > 0 && index(c - 1) >= kd) c -= 1;
      while (index(c) < kd) c += 1;
      return static_cast<size_t>(c);
    };
    size_t begin = std::min(n, first(0));
    for (size_t k = 0; k < count && begin < n; ++k) {
      const size_t end = std::min(n, first(k + 1));
      f(k, begin, end);
      begin = end;
    }
  }
  // stepOf for bins met in increasing order (a flow's bins), without a division per bin: each step's first bin
  // once (forEachStep's edges), then a comparison per bin. reset(i) before a flow's first bin; between resets the
  // bins must not decrease. For bins below n only: at n and past it, -1 (stepOf may still name the last step).
  class Walk {
   public:
    Walk(const StepCut& cut, size_t n) : edge_(cut.count + 1, n) {
      cut.forEachStep(n, [&](size_t k, size_t begin, size_t end) {
        edge_[k] = begin;
        edge_[k + 1] = end;
      });
      // Steps forEachStep did not reach (past n) begin at n; so does the end of the last one it did.
      for (size_t k = 1; k < edge_.size(); ++k) edge_[k] = std::max(edge_[k], edge_[k - 1]);
    }
    void reset(size_t i) {
      k_ = static_cast<long>(std::upper_bound(edge_.begin(), edge_.end(), i) - edge_.begin()) - 1;
    }
    long stepOf(size_t i) {
      const long last = static_cast<long>(edge_.size()) - 1;  // = count
      while (k_ < last && i >= edge_[static_cast<size_t>(k_ + 1)]) ++k_;
      return k_ >= 0 && k_ < last ? k_ : -1;
    }

   private:
    std::vector<size_t> edge_;  // edge_[k]: step k's first bin; edge_[count]: one past the last step's
    long k_ = -1;
  };
};

// Whether a sparse job's analysis may read its nonzero bins alone (the default; analyzer.cc): the tests compare it
// with the walks over every bin, whose figures it must give.
void setSparseBins(bool allowed);
// How many series (jobs' and heavy pairs') this process has read from their nonzero bins (the tests see that the
// reading they compare ran).
uint64_t sparseReadings();

}  // namespace burstscope::training
