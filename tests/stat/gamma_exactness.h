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
// - Kolmogorov-Smirnov against the exact CDF of the *rounded* output: a
//   float32 variate near 1e10 lives on a grid of 1024 (0.01 standard
//   deviations), so comparing with the continuous CDF would fail any exact
//   sampler at 10^7 samples. Each distinct output value x stands for the
//   reals that round to it, [x - ulp_below/2, x + ulp_above/2]; the empirical
//   CDF is compared with the continuous CDF at those edges, which is the
//   exact CDF of the correctly rounded distribution. With D_crit = 1.63 /
//   sqrt(n) (p = 0.01), a CDF error e is detected when e > D_crit +
//   2.33 / (2 sqrt(n)) roughly: 6.8e-4 at 10^7, 6.8e-5 at 10^9.
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
GammaExactnessResult GammaExactness(const std::vector<T>& samples,
                                    double shape, bool ks = true) {
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
  auto cdf = [&](long double x) -> double {
    if (x <= 0) return 0.0;
    return boost::math::gamma_p(k, static_cast<double>(x));
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
