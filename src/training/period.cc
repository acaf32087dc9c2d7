#include "src/training/period.h"

#include <fftw3.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>

namespace burstscope::training {
namespace {

// One pair of plans per transform size, made once (planning computes the twiddle factors, which cost as much
// as the transforms at these sizes) and executed on fresh arrays of the same alignment (fftw_alloc_*) with the
// new-array interface, which is thread-safe; the planner itself is not, hence the lock around the cache.
struct Plans {
  fftw_plan forward = nullptr;
  fftw_plan inverse = nullptr;
};
std::mutex& planMutex() {
  static std::mutex mu;
  return mu;
}
std::map<size_t, Plans>& planCache() {
  static std::map<size_t, Plans> cache;  // sizes are powers of two: a few dozen at most, kept for the process
  return cache;
}
// At exit: the plans and fftw's own planner state go back (a leak checker sees them otherwise).
void destroyPlans() {
  std::lock_guard<std::mutex> lock(planMutex());
  for (auto& [size, p] : planCache()) {
    fftw_destroy_plan(p.forward);
    fftw_destroy_plan(p.inverse);
  }
  planCache().clear();
  fftw_cleanup();
}
const Plans& plansFor(size_t size) {
  std::lock_guard<std::mutex> lock(planMutex());
  // The cache is made before the handler is registered, so that it is destroyed after the handler ran.
  static const bool registered = (planCache(), std::atexit(destroyPlans) == 0);
  (void)registered;
  Plans& p = planCache()[size];
  if (p.forward == nullptr) {
    double* in = fftw_alloc_real(size);
    fftw_complex* out = fftw_alloc_complex(size / 2 + 1);
    p.forward = fftw_plan_dft_r2c_1d(static_cast<int>(size), in, out, FFTW_ESTIMATE);
    p.inverse = fftw_plan_dft_c2r_1d(static_cast<int>(size), out, in, FFTW_ESTIMATE);
    fftw_free(in);
    fftw_free(out);
  }
  return p;
}

// The autocorrelation as a function of lag, sampled at a resolution that grows with the lag: lags of 8 to 32
// bins of each level, every level 4 times coarser than the last and smoothed over ±2 of its bins. So a
// repeat at lag L is matched within about ±10% of L wherever L lies — the jitter of real training steps
// (tens of ms on a step of a few hundred) decorrelates bursts at any fixed fine resolution.
struct Curve {
  std::vector<double> lag;  // in bins of the input series, ascending
  std::vector<double> rho;

  // The highest point in [lo, hi] and where, a parabola through its neighbours for sub-sample precision.
  struct Peak {
    double at = 0;
    double value = -1;
  };
  Peak peakNear(double lo, double hi) const {
    Peak p;
    size_t best = 0;  // none: a peak needs a neighbour on each side, so index 0 never is one
    for (size_t i = 1; i + 1 < lag.size(); ++i) {
      if (lag[i] < lo || lag[i] > hi) continue;
      if (best == 0 || rho[i] > rho[best]) best = i;
    }
    if (best == 0) return p;
    p.at = lag[best];
    p.value = rho[best];
    // Parabola through three points (not evenly spaced where two levels meet).
    const double x0 = lag[best - 1], x1 = lag[best], x2 = lag[best + 1];
    const double y0 = rho[best - 1], y1 = rho[best], y2 = rho[best + 1];
    const double d = (x0 - x1) * (x0 - x2) * (x1 - x2);
    if (d != 0) {
      const double a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / d;
      const double b = (x2 * x2 * (y0 - y1) + x1 * x1 * (y2 - y0) + x0 * x0 * (y1 - y2)) / d;
      if (a < 0) {
        const double xv = -b / (2 * a);
        if (xv >= x0 && xv <= x2) {
          p.at = xv;
          p.value = y1 + a * (xv - x1) * (xv - x1) + b * (xv - x1) + 2 * a * x1 * (xv - x1);
          p.value = std::min(p.value, 1.0);
        }
      }
    }
    return p;
  }
};

// `nonzero_at`/`nonzero_value`: y's nonzero bins (positions in y), or empty spans to read y itself.
Curve buildCurve(std::span<const double> y, double max_lag, std::span<const size_t> nonzero_at = {},
                 std::span<const double> nonzero_value = {}) {
  Curve c;
  size_t g = 1;
  while (y.size() / g > (size_t{1} << 17)) g *= 2;
  // The first level's sums, then each level from the last one's (groups of four): O(n) in all. From the nonzero
  // bins where they are listed: each sum takes the same bins in the same order (an empty bin's zero adds nothing).
  std::vector<double> coarse((y.size() + g - 1) / g, 0.0);
  if (!nonzero_at.empty()) {
    for (size_t j = 0; j < nonzero_at.size(); ++j) coarse[nonzero_at[j] / g] += nonzero_value[j];
  } else {
    for (size_t i = 0, k = 0, left = g; i < y.size(); ++i) {
      coarse[k] += y[i];
      if (--left == 0) {
        ++k;
        left = g;
      }
    }
  }
  bool first = true;
  for (;; g *= 4) {
    if (!first) {
      std::vector<double> next((coarse.size() + 3) / 4, 0.0);
      for (size_t i = 0; i < coarse.size(); ++i) next[i >> 2] += coarse[i];
      coarse.swap(next);
    }
    const size_t m = coarse.size();
    if (m < 16) break;
    std::vector<double> s(m, 0.0);
    if (first) {
      s = coarse;
    } else {
      static constexpr double kKernel[5] = {1, 2, 3, 2, 1};
      for (size_t i = 0; i < m; ++i) {
        for (int k = -2; k <= 2; ++k) {
          const long j = static_cast<long>(i) + k;
          if (j >= 0 && j < static_cast<long>(m)) s[i] += kKernel[k + 2] / 9 * coarse[j];
        }
      }
    }
    const size_t lo = first ? 1 : 8;
    const bool last = static_cast<double>(32 * g) > max_lag || m / 2 < 32;
    const size_t hi = last ? m / 2 : 32;
    const std::vector<double> r = autocorrelation(s, hi);
    for (size_t l = lo; l < hi && l < m; ++l) {
      const double at = static_cast<double>(l * g);
      if (at > max_lag) break;
      c.lag.push_back(at);
      c.rho.push_back(r[l]);
    }
    first = false;
    if (last) break;
  }
  return c;
}

// A series by its non-empty bins alone: bin at[j] - first holds value[j] (at ascending), of `size` bins in all.
struct Sparse {
  std::span<const size_t> at;
  std::span<const double> value;
  size_t first = 0;
  size_t size = 0;
};

// Sharpens a period estimate p0 by following the steps one by one: each step's anchor is the centroid of the
// bytes within half a period of where the anchors so far predict it, and the period is the slope of the
// anchors' times against their step numbers — the mean time from step to step, as the job's own log
// measures it, however much single steps (or the groups inside a step) jitter. p0 itself when fewer than
// three steps are anchored, or when the steps do not line up with it.
double followSteps(const Sparse& y, double p0) {
  const double n = static_cast<double>(y.size);
  const std::span<const size_t> at = y.at;
  // Running sums of the bytes and of the bytes times their bin, so that a window's mass and centroid take
  // two subtractions instead of a walk over a period's bins (each step is looked at about six times). Bins
  // hold whole bytes, so the sums are exact while they stay below 2^53: always for the mass (9 PB); for the
  // moment up to about 2 GB in a series of 4 M bins, beyond which the centroids round in their last bits as
  // the walk's own sums did. Kept at the non-empty bins only (a pair's series is mostly empty); a sum up to any
  // bin is the one up to the non-empty bins below it, bit for bit the dense running sum (adding an empty bin's
  // zero changes nothing).
  thread_local std::vector<double> mass_to, moment_to;  // [j]: the sums over the first j non-empty bins
  mass_to.resize(at.size() + 1);
  moment_to.resize(at.size() + 1);
  mass_to[0] = moment_to[0] = 0;
  size_t peak = 0;                      // the heaviest bin (the first of equals), where the walk starts
  double mass_sum = 0, moment_sum = 0;  // the sums in registers: through the arrays, each addition would wait for
                                        // the last one's store
  for (size_t j = 0; j < at.size(); ++j) {
    mass_sum += y.value[j];
    moment_sum += y.value[j] * static_cast<double>(at[j] - y.first);
    mass_to[j + 1] = mass_sum;
    moment_to[j + 1] = moment_sum;
    if (y.value[j] > y.value[peak]) peak = j;
  }
  // A window's edges are whole bins of a positive, finite p0 (an infinite one cast to an integer is undefined).
  if (at.empty() || !(p0 > 0) || !std::isfinite(p0)) return p0;
  // How many non-empty bins lie below bin i: the index of the running sums up to i. The walk asks about windows
  // next to the last ones, so each of the window's two edges is searched for from where it last was, by steps
  // that double (as std::lower_bound over the whole series would find it, in a few steps instead of log2 of the
  // series' length, among bins the walk has just read).
  auto below = [&](size_t i, size_t* last) {
    const size_t key = i + y.first, n_at = at.size();
    size_t from, to;  // the answer lies in [from, to]: at[from - 1] < key (or from = 0), at[to] >= key (or to = n_at)
    if (*last < n_at && at[*last] < key) {
      size_t lo = *last, step = 1;
      while (lo + step < n_at && at[lo + step] < key) {
        lo += step;
        step *= 2;
      }
      from = lo + 1;
      to = std::min(lo + step, n_at);
    } else {
      size_t hi = *last, step = 1;
      while (hi >= step && at[hi - step] >= key) {
        hi -= step;
        step *= 2;
      }
      from = hi >= step ? hi - step + 1 : 0;
      to = hi;
    }
    *last = static_cast<size_t>(
        std::lower_bound(at.begin() + static_cast<long>(from), at.begin() + static_cast<long>(to), key) - at.begin());
    return *last;
  };
  size_t last_lo = 0, last_hi = 0;
  auto window = [&](double around) {
    const long lo = std::max(0L, static_cast<long>(std::ceil(around - p0 / 2)));
    const long hi = std::max(lo, std::min(static_cast<long>(y.size), static_cast<long>(std::ceil(around + p0 / 2))));
    return std::pair<size_t, size_t>(below(static_cast<size_t>(lo), &last_lo),
                                     below(static_cast<size_t>(hi), &last_hi));
  };
  auto centroid = [&](double around, double* mass) {
    const auto [lo, hi] = window(around);
    const double m = mass_to[hi] - mass_to[lo];
    *mass = m;
    return m > 0 ? (moment_to[hi] - moment_to[lo]) / m : around;
  };
  // The window re-centred on its centroid `times` times, or until it stays where it is: a centroid is a function
  // of where it starts alone, so once it returns its start every later round would return it again (and the same
  // mass).
  auto settle = [&](double around, int times, double* mass) {
    for (int it = 0; it < times; ++it) {
      const double next = centroid(around, mass);
      if (next == around) break;
      around = next;
    }
    return around;
  };
  // Where a step's traffic ends (90% of the bytes within half a period of its centroid have arrived): the
  // end of its last all-reduce or pull, which is where the job's own log ends the step.
  auto ending = [&](double around) {
    const auto [lo, hi] = window(around);
    const double target = 0.9 * (mass_to[hi] - mass_to[lo]);
    // The first non-empty bin whose sum from the window's start through it reaches 90%: the running sums never
    // fall.
    const auto from = mass_to.begin() + static_cast<long>(lo);
    const auto it = std::lower_bound(from + 1, from + static_cast<long>(hi - lo) + 1, target,
                                     [&](double sum, double t) { return sum - *from < t; });
    return it == from + static_cast<long>(hi - lo) + 1
               ? around
               : static_cast<double>(at[static_cast<size_t>(it - mass_to.begin() - 1)] - y.first);
  };
  // Start at the heaviest bin, settled on its step's centroid.
  double mass = 0;
  double start = static_cast<double>(at[peak] - y.first);
  start = settle(start, 3, &mass);
  std::vector<std::pair<double, double>> anchors;  // (step number, time)
  std::vector<double> masses;
  // The least-squares sums over the anchors, kept as they come: summed again over every anchor at each step, the
  // walk was quadratic in the steps (a 2 ms period over a minute's window is 30,000 of them). Added in the same
  // order as that loop added them, so bit for bit its sums.
  double sk = 0, st = 0, skk = 0, skt = 0;
  auto anchor = [&](double k, double t, double m) {
    anchors.emplace_back(k, t);
    masses.push_back(m);
    sk += k;
    st += t;
    skk += k * k;
    skt += k * t;
  };
  anchor(0.0, ending(start), mass);
  auto slope = [&]() {
    if (anchors.size() < 2) return p0;
    const double cnt = static_cast<double>(anchors.size());
    const double den = cnt * skk - sk * sk;
    return den > 0 ? (cnt * skt - sk * st) / den : p0;
  };
  const double total = mass_to.back();
  const double most_steps = n / p0 + 2;
  for (int dir : {+1, -1}) {
    double period = slope();
    double k = 0, centre = start;  // the last step's centroid: where the next one is predicted from
    while (std::abs(k) < most_steps) {
      k += dir;
      const double expect = centre + dir * period;
      // Only steps whose whole half-period window lies inside the series: a cut-off step's centroid is off.
      if (expect - p0 / 2 < 0 || expect + p0 / 2 > n) break;
      // The step's own centroid: the window re-centred on it until it settles, so that an error in the
      // prediction does not cut a burst group off at the window's edge.
      const double c = settle(expect, 4, &mass);
      // A step without traffic, or a window that slid back onto the last step: keep counting from the
      // prediction.
      if (mass <= 0.05 * total / (n / p0) || dir * (c - centre) < period / 2) {
        centre = expect;
        continue;
      }
      anchor(k, ending(c), mass);
      centre = c;
      period = slope();
    }
  }
  // The slope over the steps of typical volume: a first step that also carries the start-up (the initial
  // broadcast of the model) has its centroid elsewhere.
  std::vector<double> sorted = masses;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::vector<std::pair<double, double>> typical;
  for (size_t i = 0; i < anchors.size(); ++i) {
    if (masses[i] >= 0.75 * median && masses[i] <= 1.25 * median) typical.push_back(anchors[i]);
  }
  if (typical.size() >= 3) anchors = typical;  // the slope's sums (sk ...) are no longer these anchors': not used below
  if (anchors.size() < 3) return p0;
  // The mean step: from the first anchored step to the last, as the mean of the job's logged step times is
  // (a least-squares slope would weigh the steps in the middle more than the log does).
  const auto [first, last] = std::minmax_element(anchors.begin(), anchors.end());
  const double p = (last->second - first->second) / (last->first - first->first);
  return p > 0.9 * p0 && p < 1.1 * p0 ? p : p0;
}

}  // namespace

namespace {
// sum[l] += d[i] * d[i + l0 + l] for the 32 lags l0 .. l0 + 31 and i in [0, end) (each lag's term there exists), in
// four AVX-512 registers, where the CPU has them: false (nothing done) elsewhere.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) void lagSums32Avx512(const double* d, size_t end, size_t l0, double* sum) {
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd(), s2 = _mm512_setzero_pd(), s3 = _mm512_setzero_pd();
  for (size_t i = 0; i < end; ++i) {
    const __m512d di = _mm512_set1_pd(d[i]);
    const double* next = d + i + l0;
    // Each product rounded before its addition, as the scalar sums round them: AVX-512F has fused multiply-adds,
    // which GCC makes of the two unless told not to (meson.build: -ffp-contract=off).
    s0 = _mm512_add_pd(s0, _mm512_mul_pd(di, _mm512_loadu_pd(next)));
    s1 = _mm512_add_pd(s1, _mm512_mul_pd(di, _mm512_loadu_pd(next + 8)));
    s2 = _mm512_add_pd(s2, _mm512_mul_pd(di, _mm512_loadu_pd(next + 16)));
    s3 = _mm512_add_pd(s3, _mm512_mul_pd(di, _mm512_loadu_pd(next + 24)));
  }
  _mm512_storeu_pd(sum, s0);
  _mm512_storeu_pd(sum + 8, s1);
  _mm512_storeu_pd(sum + 16, s2);
  _mm512_storeu_pd(sum + 24, s3);
}
#endif

bool lagSums32(const double* d, size_t end, size_t l0, double* sum) {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512f");
  if (!has) return false;
  lagSums32Avx512(d, end, l0, sum);
  return true;
#else
  (void)d;
  (void)end;
  (void)l0;
  (void)sum;
  return false;
#endif
}
}  // namespace

std::vector<double> autocorrelation(std::span<const double> x) { return autocorrelation(x, x.size()); }

std::vector<double> autocorrelation(std::span<const double> x, size_t lags) {
  const size_t n = x.size();
  lags = std::min(lags, n);
  std::vector<double> rho(n, 0.0);
  if (n == 0) return rho;
  double mean = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(n);
  std::vector<double> d(n);  // the series about its mean
  double var = 0;
  for (size_t i = 0; i < n; ++i) {
    d[i] = x[i] - mean;
    var += d[i] * d[i];
  }
  var /= static_cast<double>(n);
  if (!(var > 0)) return rho;
  // The transform costs about 2·(2n)·log2(2n) multiply-adds and its plan's twiddle factors (sines and cosines,
  // made once per size in a process); the direct sums n per lag.
  size_t big = 1, log2 = 0;
  for (; big < 2 * n; big <<= 1) ++log2;
  if (lags > 4 * log2) {
    double* in = fftw_alloc_real(big);
    fftw_complex* out = fftw_alloc_complex(big / 2 + 1);
    const Plans& plans = plansFor(big);
    for (size_t i = 0; i < big; ++i) in[i] = i < n ? d[i] : 0.0;
    fftw_execute_dft_r2c(plans.forward, in, out);
    for (size_t k = 0; k < big / 2 + 1; ++k) {
      out[k][0] = out[k][0] * out[k][0] + out[k][1] * out[k][1];
      out[k][1] = 0;
    }
    fftw_execute_dft_c2r(plans.inverse, out, in);
    for (size_t l = 0; l < lags; ++l) {
      rho[l] = in[l] / static_cast<double>(big) / (static_cast<double>(n - l) * var);
    }
    fftw_free(in);
    fftw_free(out);
    return rho;
  }
  // Each lag's sum runs in the order of i, so every figure is the definition's to the bit; the lags side by side in
  // registers (sums kept in memory, all lags at once, waited at every i on the last i's store: a sixth of a long
  // file's training analysis, perf annotate). Thirty-two at once in four AVX-512 registers where the CPU has them
  // (a multiplication and an addition, each rounded: no fused multiply-add, meson.build), else eight at once.
  for (size_t l0 = 0; l0 < lags;) {
    double sum[32] = {};
    size_t i = 0;
    size_t w = std::min<size_t>(8, lags - l0);
    if (lags - l0 >= 32 && lagSums32(d.data(), n - l0 - 31, l0, sum)) {
      w = 32;
      i = n - l0 - 31;
    } else if (w == 8) {
      for (; i + l0 + 8 <= n; ++i) {  // every one of the eight lags has its term at i
        const double di = d[i];
        const double* next = d.data() + i + l0;
        for (size_t l = 0; l < 8; ++l) sum[l] += di * next[l];
      }
    }
    for (; i < n; ++i) {
      for (size_t l = 0; l < w && i + l0 + l < n; ++l) sum[l] += d[i] * d[i + l0 + l];
    }
    for (size_t l = 0; l < w; ++l) rho[l0 + l] = sum[l] / (static_cast<double>(n - l0 - l) * var);
    l0 += w;
  }
  return rho;
}

PeriodEstimate findPeriod(std::span<const double> x, const PeriodOptions& o, const NonzeroView* nz) {
  PeriodEstimate e;
  size_t a = 0, b = x.size();
  // x's nonzero bins, where listed: [j0, j1) of nz.
  size_t j0 = 0, j1 = 0;
  if (nz != nullptr) {
    j0 = static_cast<size_t>(std::lower_bound(nz->at.begin(), nz->at.end(), nz->offset) - nz->at.begin());
    j1 = static_cast<size_t>(std::lower_bound(nz->at.begin(), nz->at.end(), nz->offset + x.size()) - nz->at.begin());
    a = j0 < j1 ? nz->at[j0] - nz->offset : 0;
    b = j0 < j1 ? nz->at[j1 - 1] - nz->offset + 1 : 0;
  } else {
    while (a < b && x[a] == 0) ++a;
    while (b > a && x[b - 1] == 0) --b;
  }
  if (a == b) {
    e.why = "no traffic";
    return e;
  }
  const std::span<const double> y = x.subspan(a, b - a);
  const double n = static_cast<double>(y.size());
  // At least two whole periods after the first burst's start: three steps seen.
  const double lmax = std::min(o.max_period_bins, std::floor(n / 2));
  const double lmin = std::max(2.0, o.min_period_bins);
  if (lmax < lmin + 1) {
    e.why = "too few steps";
    return e;
  }
  // y's nonzero bins, positions in y (listed or found).
  thread_local std::vector<size_t> bins_at;
  thread_local std::vector<double> bins_value;
  bins_at.clear();
  bins_value.clear();
  if (nz != nullptr) {
    for (size_t j = j0; j < j1; ++j) {
      bins_at.push_back(nz->at[j] - nz->offset - a);
      bins_value.push_back(nz->value[j]);
    }
  }
  const Curve c = nz != nullptr ? buildCurve(y, n / 2, bins_at, bins_value) : buildCurve(y, n / 2);
  const size_t m = c.lag.size();
  // Peaks after the first zero crossing: before it, rho only measures the width of one burst.
  size_t z = 0;
  while (z < m && c.rho[z] > 0) ++z;
  if (z >= m || c.lag[z] > lmax) {
    e.why = "aperiodic";
    return e;
  }
  // Repeats seen fewer than three times (lags past a third of the series) need a clearer match.
  auto threshold = [&](double lag) { return o.min_quality + (lag > n / 3 ? 0.15 : 0.0); };
  std::vector<size_t> peaks;
  for (size_t i = std::max<size_t>(z, 1); i + 1 < m; ++i) {
    if (c.lag[i] < lmin || c.lag[i] > lmax) continue;
    if (c.rho[i] > c.rho[i - 1] && c.rho[i] >= c.rho[i + 1]) peaks.push_back(i);
  }
  long best = -1;
  for (size_t i : peaks) {
    if (best < 0 || c.rho[i] > c.rho[best]) best = static_cast<long>(i);
  }
  if (best < 0 || c.rho[best] < threshold(c.lag[best])) {
    // Fewer than three bursts (separated by quiet of at least 2% of the span) cannot show a repeat.
    size_t bursts = 0;
    double last = -1e18;
    for (size_t i = 0; i < y.size(); ++i) {
      if (y[i] <= 0) continue;
      if (static_cast<double>(i) - last > std::max(1.0, n / 50)) ++bursts;
      last = static_cast<double>(i);
    }
    e.why = bursts < 3 ? "too few steps" : "aperiodic";
    e.quality = best < 0 ? 0 : std::max(0.0, c.rho[best]);
    return e;
  }
  // The fundamental: the shortest lag at which the series repeats about as well as at any of its multiples
  // (so not the gap between two burst groups of one step, which repeats worse than the whole step does).
  size_t chosen = static_cast<size_t>(best);
  for (size_t i : peaks) {
    if (i > static_cast<size_t>(best)) break;
    if (c.rho[i] < threshold(c.lag[i])) continue;
    double multiples = c.rho[best];
    for (int k = 2; k * c.lag[i] <= lmax; ++k) {
      const double at = k * c.lag[i];
      multiples = std::max(multiples, c.peakNear(at * 0.95, at * 1.05).value);
    }
    if (c.rho[i] >= 0.85 * multiples) {
      chosen = i;
      break;
    }
  }
  // Precision: the peaks at k·T for every k up to half the series, fitted through the origin.
  const double t = c.lag[chosen];
  double num = 0, den = 0;
  Curve::Peak first;
  for (int k = 1; k * t <= n / 2 || k == 1; ++k) {
    const Curve::Peak p = c.peakNear(k * t - 0.15 * t, k * t + 0.15 * t);
    if (p.value < 0) break;
    if (k == 1) first = p;
    num += k * p.at;
    den += k * k;
    if (k >= 64) break;
  }
  e.found = true;
  if (nz == nullptr) {
    for (size_t i = 0; i < y.size(); ++i) {
      if (y[i] == 0) continue;
      bins_at.push_back(i);
      bins_value.push_back(y[i]);
    }
  }
  e.period_bins = followSteps(Sparse{bins_at, bins_value, 0, y.size()}, den > 0 ? num / den : t);
  e.quality = std::clamp(first.value, 0.0, 1.0);
  return e;
}

double followPeriod(std::span<const size_t> at, std::span<const double> value, double p0) {
  if (at.empty()) return p0;
  return followSteps(Sparse{at, value, at.front(), at.back() - at.front() + 1}, p0);
}

}  // namespace burstscope::training
