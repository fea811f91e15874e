// Statistical tests whose power is stated and proved (issue 10, item 4).
//
// Every test here is a function that takes a sampler (a callable that fills
// a span for a given first item) and returns a Verdict: a list of z-scores,
// each with the critical value it must stay under. power_test.cc runs each
// test twice: against the real sampler (which must pass) and against a
// deliberately biased twin (which must fail), so a test that cannot see the
// bias it claims to see fails CI.
//
// Sizing. Each check is a two-sided z-test at false-alarm rate alpha (after
// Bonferroni over the m checks of one family: alpha / m each). Such a test
// detects a shift of the statistic's mean of delta standard errors with
// probability 0.99 when
//
//   delta >= z_{alpha / (2 m)} + z_{0.99},            z_{0.99} = 2.326,
//
// so a statistic with per-sample standard deviation sigma, averaged over n
// independent samples, detects with 99% probability a bias of its mean of
//
//   delta_min = (z_{alpha / (2 m)} + z_{0.99}) * sigma / sqrt(n).
//
// MinDetectable() computes that figure; each test prints it and asserts that
// it meets the suite's design goal (a 1% bias), so that shrinking a sample
// size below what the claim needs fails too.
//
// False alarms: alpha = 1e-6 per family (kFamilyAlpha). The suite has fewer
// than 100 families, so a correct sampler fails a run with probability below
// 1e-4; and since every seed is fixed, each run is deterministic: a pass
// stays a pass until the bits change (a new contract version), and then
// fails only with that probability.
#ifndef SAMPLER_TESTS_STAT_POWER_UTIL_H_
#define SAMPLER_TESTS_STAT_POWER_UTIL_H_

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace sampler::testing {

// False-alarm rate of one family of checks (one test on one configuration).
inline constexpr double kFamilyAlpha = 1e-6;
// Power at which detectable biases are stated.
inline constexpr double kPower = 0.99;

// Upper quantile z_p of the standard normal: P(Z > z_p) = p.
inline double NormalUpper(double p) {
  return boost::math::quantile(
      boost::math::complement(boost::math::normal(), p));
}

// Two-sided critical value for one of m checks of a family at kFamilyAlpha.
inline double CriticalZ(int64_t m, double alpha = kFamilyAlpha) {
  return NormalUpper(alpha / (2.0 * static_cast<double>(m)));
}

// The shift (in standard errors) detected with probability kPower by a
// check whose critical value is `crit`.
// The twins are sized at kTwinPower instead, so that when the contract's bits
// change a twin still fails with probability 1 - 1e-4.
inline constexpr double kTwinPower = 0.9999;
inline double DetectableShift(double crit, double power = kPower) {
  return crit + NormalUpper(1.0 - power);
}

// Smallest bias of a mean detected with probability kPower: sigma is the
// per-sample standard deviation of the statistic, n the number of samples,
// m the checks in the family.
inline double MinDetectable(double sigma, double n, int64_t m,
                            double alpha = kFamilyAlpha) {
  return DetectableShift(CriticalZ(m, alpha)) * sigma / std::sqrt(n);
}

struct Check {
  std::string name;
  double z = 0;     // observed standardised statistic
  double crit = 0;  // |z| must stay at or under this
  bool ok() const { return std::isfinite(z) && std::fabs(z) <= crit; }
};

struct Verdict {
  std::vector<Check> checks;
  bool pass() const {
    for (const Check& c : checks)
      if (!c.ok()) return false;
    return !checks.empty();
  }
  // The check furthest past (or nearest to) its critical value.
  const Check* Worst() const {
    const Check* worst = nullptr;
    double worst_ratio = -1;
    for (const Check& c : checks) {
      // crit 0 (exact checks): any non-zero z is infinitely far past it.
      const double r = !std::isfinite(c.z) ? 1e300
                       : c.crit > 0        ? std::fabs(c.z) / c.crit
                       : c.z == 0          ? 0
                                           : 1e300;
      if (r > worst_ratio) worst_ratio = r, worst = &c;
    }
    return worst;
  }
  std::string Summary() const {
    const Check* w = Worst();
    if (w == nullptr) return "no checks";
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%zu checks, %s; worst %s: z = %+.2f (crit %.2f)",
                  checks.size(), pass() ? "pass" : "FAIL", w->name.c_str(),
                  w->z, w->crit);
    return buf;
  }
};

// Running sums of a standardised statistic s = (y - mu) / sigma: the mean
// test uses sum s, the variance test (about the known mean) sum (s^2 - 1).
// long double keeps the sums of 10^7 terms exact enough (the tests need
// relative accuracy ~1e-4 of sqrt(n)).
struct StdSums {
  long double s1 = 0, s2 = 0;
  int64_t n = 0;
  void Add(double s) {
    s1 += s;
    s2 += static_cast<long double>(s) * s - 1.0L;
    ++n;
  }
  double ZMean() const {
    return static_cast<double>(s1 / std::sqrt(static_cast<long double>(n)));
  }
  // var_s2 = Var(s^2) = E s^4 - 1 = 2 + excess kurtosis.
  double ZVar(double var_s2) const {
    return static_cast<double>(s2 /
                               std::sqrt(static_cast<long double>(n) * var_s2));
  }
};

// Per-cell binomial z-scores of counts against exact probabilities, with a
// Bonferroni critical value over the cells; appended to `v`. Cells whose
// expected count is below `min_expected` are pooled into one cell, so the
// normal approximation holds everywhere.
inline void AddCellChecks(const std::string& prefix,
                          const std::vector<int64_t>& counts,
                          const std::vector<long double>& probs, int64_t n,
                          Verdict& v, double min_expected = 1000) {
  std::vector<std::pair<std::string, std::pair<long double, long double>>>
      cells;  // name, (observed, p)
  long double pooled_obs = 0, pooled_p = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] * n < min_expected) {
      pooled_obs += counts[i];
      pooled_p += probs[i];
      continue;
    }
    cells.push_back({prefix + "[" + std::to_string(i) + "]",
                     {static_cast<long double>(counts[i]), probs[i]}});
  }
  if (pooled_p * n >= min_expected)
    cells.push_back({prefix + "[pooled]", {pooled_obs, pooled_p}});
  else if (pooled_obs > 0 && pooled_p == 0)
    // A cell of probability zero that was drawn: impossible, infinitely
    // significant.
    v.checks.push_back({prefix + "[impossible]", INFINITY, 1});
  const double crit = CriticalZ(static_cast<int64_t>(cells.size()));
  for (const auto& [name, op] : cells) {
    const long double e = op.second * n;
    const long double sd = std::sqrt(e * (1 - op.second));
    v.checks.push_back({name, static_cast<double>((op.first - e) / sd), crit});
  }
}

}  // namespace sampler::testing

#endif  // SAMPLER_TESTS_STAT_POWER_UTIL_H_
