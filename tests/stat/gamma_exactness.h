// Exactness checks of gamma samples at any shape (issue 10 item 2), for the
// CI tests (tests/stat/gamma_exact_test.cc) and for the GPU power run, which
// calls GammaExactness() on 10^7 or more samples per shape from the device.
//
// Two statistics, each stated with the bias it detects:
// - z(mean) and z(var): the sample mean and variance against k and k (unit
//   scale), in standard errors (sqrt(k/n) and sqrt((mu4 - k^2)/n), mu4 =
//   3k(k+2)). A relative variance bias b gives z(var) about b sqrt(n/2) for
//   large k: with |z| < 5 as the pass mark, n samples detect a bias of
//   (5 + 2.33) sqrt(2/n) with 99% probability (n = 10^7: 0.33%; 10^9:
//   0.033%); a relative mean bias b gives z(mean) about b sqrt(n k).
// The GPU power run calls GammaExactness(samples, shape) on each shape's
// output (linear, unit scale); its cost is the sort plus, for shapes of
// 1e4 and more, a CDF table of 4098 Boost evaluations (seconds at 1e10).
// - Kolmogorov-Smirnov against the exact CDF of the *rounded* output: a
//   float32 variate near 1e10 lives on a grid of 1024 (0.01 standard
//   deviations), so comparing with the continuous CDF would fail any exact
//   sampler at 10^7 samples. Each distinct output value x stands for the
//   reals that round to it, [x - ulp_below/2, x + ulp_above/2]; the empirical
//   CDF is compared with the continuous CDF at those edges, which is the
//   exact CDF of the correctly rounded distribution. With p > 1e-4 as the
//   pass mark (D_crit = 2.23 / sqrt(n)) and the empirical CDF's standard
//   deviation at most 0.5 / sqrt(n), a CDF error e is detected with 99%
//   probability when e > 3.4 / sqrt(n): 1.1e-3 at 10^7, 1.1e-4 at 10^9.
#ifndef SAMPLER_TESTS_STAT_GAMMA_EXACTNESS_H_
#define SAMPLER_TESTS_STAT_GAMMA_EXACTNESS_H_

#include <algorithm>
#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "tests/stat/stat_util.h"

namespace sampler::testing {

struct GammaExactnessResult {
  double mean = 0, variance = 0;  // sample moments
  double z_mean = 0, z_var = 0;   // in standard errors
  KsResult ks;                    // against the rounded exact CDF
};

// Samples of Gamma(shape, 1) in linear output, precision T (the shape as
// the sampler saw it, i.e. already rounded to T). Sorts a copy for the KS
// test, which `ks = false` skips (it costs a regularised gamma function per
// distinct value, about 10 us at shapes near 1e8).
template <typename T>
GammaExactnessResult GammaExactness(const std::vector<T>& samples, double shape,
                                    bool ks = true) {
  GammaExactnessResult r;
  const double n = static_cast<double>(samples.size());
  long double sum = 0;
  for (T x : samples) sum += x;
  r.mean = static_cast<double>(sum / n);
  long double ss = 0;
  for (T x : samples) ss += (x - r.mean) * (x - r.mean);
  r.variance = static_cast<double>(ss / (n - 1));
  const double k = shape;
  r.z_mean = (r.mean - k) / std::sqrt(k / n);
  const double mu4 = 3 * k * (k + 2);
  r.z_var = (r.variance - k) / std::sqrt((mu4 - k * k) / n);
  if (!ks) return r;

  std::vector<T> sorted(samples);
  std::sort(sorted.begin(), sorted.end());
  // Boost's regularised gamma function costs 10 us (shape 1e6) to 1 ms
  // (1e10) per call above the mean, far too slow for one call per sample.
  // For shapes of 1e4 and more the CDF is tabulated over mean +- 8 standard
  // deviations at 2048 intervals (CDF and density at each node) and
  // interpolated by cubic Hermite polynomials: with h = 1/128 of a standard
  // deviation the error is below h^4 max|F''''| / 384, under 1e-10, a
  // millionth of the KS resolution at 10^9 samples. Outside the table, and
  // for smaller shapes, Boost directly.
  using NoPromote = boost::math::policies::policy<
      boost::math::policies::promote_double<false>>;
  constexpr int kIntervals = 2048;
  constexpr double kHalfWidth = 8;
  const bool tabulate = k >= 1e4;
  const double sd = std::sqrt(k);
  const double x0 = k - kHalfWidth * sd;
  const double step = 2 * kHalfWidth * sd / kIntervals;
  std::vector<double> tf, tp;
  if (tabulate) {
    for (int i = 0; i <= kIntervals; ++i) {
      const double x = x0 + step * i;
      tf.push_back(boost::math::gamma_p(k, x, NoPromote()));
      tp.push_back(boost::math::gamma_p_derivative(k, x, NoPromote()));
    }
  }
  auto cdf = [&](long double x) -> double {
    if (x <= 0) return 0.0;
    if (tabulate) {
      const double u = static_cast<double>((x - x0) / step);
      if (u >= 0 && u < kIntervals) {
        const int i = static_cast<int>(u);
        const double s = u - i;
        const double h00 = (1 + 2 * s) * (1 - s) * (1 - s);
        const double h10 = s * (1 - s) * (1 - s);
        const double h01 = s * s * (3 - 2 * s);
        const double h11 = s * s * (s - 1);
        return h00 * tf[i] + h10 * step * tp[i] + h01 * tf[i + 1] +
               h11 * step * tp[i + 1];
      }
    }
    return boost::math::gamma_p(k, static_cast<double>(x), NoPromote());
  };
  double d = 0;
  size_t i = 0;
  while (i < sorted.size()) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    const T x = sorted[i];
    const T below = std::nextafter(x, -std::numeric_limits<T>::infinity());
    const T above = std::nextafter(x, std::numeric_limits<T>::infinity());
    // Edges of the rounding interval, exact in long double (64-bit mantissa).
    const long double lo =
        x <= T(0) ? 0.0L : (static_cast<long double>(x) + below) / 2;
    const long double hi = (static_cast<long double>(x) + above) / 2;
    const double f_lo = cdf(lo), f_hi = cdf(hi);
    // Just below x and at x: the empirical CDF is i/n and j/n there.
    d = std::max(d, std::max(std::fabs(f_lo - static_cast<double>(i) / n),
                             std::fabs(static_cast<double>(j) / n - f_hi)));
    i = j;
  }
  r.ks.statistic = d;
  const double sqrt_n = std::sqrt(n);
  r.ks.p_value = KolmogorovSurvival((sqrt_n + 0.12 + 0.11 / sqrt_n) * d);
  return r;
}

}  // namespace sampler::testing

#endif  // SAMPLER_TESTS_STAT_GAMMA_EXACTNESS_H_
