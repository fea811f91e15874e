// Goodness-of-fit helpers for the statistical tests: chi-square against
// expected counts (p-value from Boost.Math) and one-sample Kolmogorov-Smirnov
// against a CDF (asymptotic Kolmogorov distribution).
#ifndef SAMPLER_TESTS_STAT_STAT_UTIL_H_
#define SAMPLER_TESTS_STAT_STAT_UTIL_H_

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace sampler::testing {

struct ChiSquareResult {
  double statistic = 0;
  int degrees_of_freedom = 0;
  double p_value = 1;
};

// Pearson's chi-square test of observed counts against expected counts.
// Cells with expected count below `min_expected` are pooled into one cell
// (and that cell too is dropped if its pooled expectation is still small),
// so that the chi-square approximation holds.
inline ChiSquareResult ChiSquareTest(const std::vector<int64_t>& observed,
                                     const std::vector<double>& expected,
                                     double min_expected = 5.0) {
  double stat = 0, pooled_obs = 0, pooled_exp = 0;
  int cells = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    if (expected[i] < min_expected) {
      pooled_obs += static_cast<double>(observed[i]);
      pooled_exp += expected[i];
      continue;
    }
    const double diff = static_cast<double>(observed[i]) - expected[i];
    stat += diff * diff / expected[i];
    ++cells;
  }
  if (pooled_exp >= min_expected) {
    const double diff = pooled_obs - pooled_exp;
    stat += diff * diff / pooled_exp;
    ++cells;
  }
  ChiSquareResult r;
  r.statistic = stat;
  r.degrees_of_freedom = cells - 1;
  if (r.degrees_of_freedom >= 1) {
    boost::math::chi_squared dist(r.degrees_of_freedom);
    r.p_value = boost::math::cdf(boost::math::complement(dist, stat));
  }
  return r;
}

struct KsResult {
  double statistic = 0;  // sup |F_n - F|
  double p_value = 1;    // asymptotic, with Stephens' small-sample correction
};

// P(K > x) for the Kolmogorov distribution.
inline double KolmogorovSurvival(double x) {
  if (x < 0.2) return 1.0;
  double sum = 0;
  for (int k = 1; k <= 100; ++k) {
    const double term = std::exp(-2.0 * k * k * x * x);
    sum += (k % 2 == 1 ? 2.0 : -2.0) * term;
    if (term < 1e-300) break;
  }
  return std::min(1.0, std::max(0.0, sum));
}

// One-sample Kolmogorov-Smirnov test of `samples` against `cdf`.
inline KsResult KsTest(std::vector<double> samples,
                       const std::function<double(double)>& cdf) {
  std::sort(samples.begin(), samples.end());
  const double n = static_cast<double>(samples.size());
  double d = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const double f = cdf(samples[i]);
    d = std::max(d, std::max(f - static_cast<double>(i) / n,
                             static_cast<double>(i + 1) / n - f));
  }
  KsResult r;
  r.statistic = d;
  const double sqrt_n = std::sqrt(n);
  r.p_value = KolmogorovSurvival((sqrt_n + 0.12 + 0.11 / sqrt_n) * d);
  return r;
}

}  // namespace sampler::testing

#endif  // SAMPLER_TESTS_STAT_STAT_UTIL_H_
