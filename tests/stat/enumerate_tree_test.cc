// Tests of the CPU enumeration's tree (kernels/enumerate_cpu.cc,
// enumerate_cpu_convolve.cc) against a reference of known accuracy, for
// problems of 1 to 10^4 terms whose results reach far below 1e-300, both
// spaces, both precisions; and the Poisson-binomial against its mean and
// variance.
//
// The reference: a left fold (another order than the tree's) in long double
// with an int64 exponent beside each value (m * 2^e, m in [0.5, 1)), every
// output summed in ascending j after scaling its pairs by the largest, so
// that no value under- or overflows whatever its size. Each fold step costs
// at most (J + 2) long double roundings (2^-64) relative per element, J its
// pairs (at most 3 in the problems of 1000 terms or more, 64 in the others),
// so the reference is within 5e4 * 5.4e-20 = 2.7e-15 relative of the exact
// sum of the values given (the Poisson-binomial: 4e4 roundings), far inside
// the
// 1e-12 checked. Log inputs enter it through expl of a reduction by a long
// double ln 2 (relative error below 1e-15 for the |log| < 1e4 used here).
// boost::multiprecision (cpp_bin_float_100) checks the reference itself on a
// smaller problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels {
namespace {

using LD = long double;
constexpr int64_t kRefZero = std::numeric_limits<int64_t>::min() / 4;
constexpr LD kLn2 = 0.693147180559945309417232121458176568L;

// One reference value, m * 2^e; m = 0 (e = kRefZero) is a zero.
struct RefValue {
  LD m = 0;
  int64_t e = kRefZero;
};

RefValue Normalise(LD s, int64_t e) {
  if (s == 0) return {};
  // Sums of at most 64 pairs below 1, the largest at least 1/4: a few
  // exact halvings or doublings (frexpl is slower than the whole loop).
  if (s >= 0.25L && s < 128) {
    while (s >= 1) {
      s *= 0.5L;
      ++e;
    }
    while (s < 0.5L) {
      s *= 2;
      --e;
    }
    return {s, e};
  }
  int ee = 0;
  const LD m = std::frexp(s, &ee);
  return {m, e + ee};
}

RefValue FromGiven(double v, ProbSpace in) {
  if (in == ProbSpace::kLinear) return Normalise(v, 0);
  if (v == -std::numeric_limits<double>::infinity()) return {};
  const LD n = std::floor(static_cast<LD>(v) / kLn2);
  return Normalise(std::exp(static_cast<LD>(v) - n * kLn2),
                   static_cast<int64_t>(n));
}

// 2^d for -64 <= d <= 0, exactly; ldexp beyond.
LD Pow2(int64_t d) {
  static const std::vector<LD> table = [] {
    std::vector<LD> t(65);
    for (int i = 0; i <= 64; ++i) t[i] = std::ldexp(1.0L, -i);
    return t;
  }();
  if (d >= -64) return table[-d];
  return d > -20000 ? std::ldexp(1.0L, static_cast<int>(d)) : 0;
}

// a (*) b (b a term: at most 64 values), each output's pairs scaled by its
// largest pair and summed in ascending j.
std::vector<RefValue> RefConvolve(const std::vector<RefValue>& a,
                                  const std::vector<RefValue>& b) {
  const int64_t m = static_cast<int64_t>(a.size());
  const int64_t n = static_cast<int64_t>(b.size());
  std::vector<RefValue> r(m + n - 1);
  LD product[64];
  int64_t exponent[64];
  for (int64_t k = 0; k < m + n - 1; ++k) {
    const int64_t lo = std::max<int64_t>(0, k - n + 1);
    const int64_t hi = std::min(m - 1, k);
    int64_t largest = std::numeric_limits<int64_t>::min();
    int pairs = 0;
    for (int64_t j = lo; j <= hi; ++j) {
      if (a[j].m == 0 || b[k - j].m == 0) continue;
      product[pairs] = a[j].m * b[k - j].m;
      exponent[pairs] = a[j].e + b[k - j].e;
      largest = std::max(largest, exponent[pairs]);
      ++pairs;
    }
    if (pairs == 0) continue;  // zero
    LD s = 0;
    for (int i = 0; i < pairs; ++i)
      s += product[i] * Pow2(exponent[i] - largest);
    r[k] = Normalise(s, largest);
  }
  return r;
}

std::vector<RefValue> Reference(const std::vector<std::vector<double>>& terms,
                                ProbSpace in) {
  std::vector<RefValue> acc;
  for (size_t t = 0; t < terms.size(); ++t) {
    std::vector<RefValue> term;
    for (const double v : terms[t]) {
      term.push_back(FromGiven(v, in));
    }
    acc = t == 0 ? term : RefConvolve(acc, term);
  }
  return acc;
}

double Uniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1p-53;
}

// Log-probabilities of a random term of `len` values: most in [log 0.05, 0),
// some far smaller (down to -700 below, so that long sums reach 1e-3000 and
// beyond), some exact zeros (-inf), normalised to a total of about 1.
std::vector<double> RandomLogTerm(std::mt19937_64& rng, int len) {
  std::vector<double> v(len);
  double max = -std::numeric_limits<double>::infinity();
  for (double& x : v) {
    const double u = Uniform(rng);
    if (u < 0.05 && len > 1) {
      x = -std::numeric_limits<double>::infinity();
    } else if (u < 0.3) {
      x = std::log(0.05 + 0.95 * Uniform(rng)) - 700 * Uniform(rng);
    } else {
      x = std::log(0.05 + 0.95 * Uniform(rng));
    }
    max = std::max(max, x);
  }
  if (max == -std::numeric_limits<double>::infinity()) v[0] = max = 0;
  double total = 0;
  for (const double x : v) total += std::exp(x - max);
  for (double& x : v) x -= max + std::log(total);
  return v;
}

// got[k] against the reference, in space `out`: log values within tol plus
// one ulp of their magnitude (the rounding of the log value itself), linear
// values within tol relative (plus T's smallest subnormal: results below T's
// normal range keep only an absolute accuracy); zeros exactly.
template <typename T>
void ExpectMatches(const Pmf<T>& got, const std::vector<RefValue>& ref,
                   ProbSpace out, double tol, const std::string& what) {
  ASSERT_EQ(got.values.size(), ref.size()) << what;
  int failures = 0;
  for (size_t k = 0; k < ref.size() && failures < 5; ++k) {
    const RefValue& r = ref[k];
    const double g = static_cast<double>(got.values[k]);
    if (r.m == 0) {
      const double zero =
          out == ProbSpace::kLog ? -std::numeric_limits<double>::infinity() : 0;
      if (g != zero) {
        ADD_FAILURE() << what << " element " << k << ": got " << g
                      << ", reference exactly zero";
        ++failures;
      }
      continue;
    }
    if (out == ProbSpace::kLog) {
      const LD want = std::log(r.m) + static_cast<LD>(r.e) * kLn2;
      const double ulp = std::abs(static_cast<double>(want)) *
                         static_cast<double>(std::numeric_limits<T>::epsilon());
      const double err = static_cast<double>(std::abs(g - want));
      if (!(err <= tol + ulp)) {
        ADD_FAILURE() << what << " element " << k << ": got " << g
                      << ", reference " << static_cast<double>(want)
                      << ", error " << err << " > " << tol + ulp;
        ++failures;
      }
    } else {
      const LD want = r.e < -17000 ? 0 : std::ldexp(r.m, static_cast<int>(r.e));
      const LD err = std::abs(static_cast<LD>(g) - want);
      if (!(err <= tol * want + std::numeric_limits<T>::denorm_min())) {
        ADD_FAILURE() << what << " element " << k << ": got " << g
                      << ", reference " << static_cast<double>(want)
                      << ", relative error " << static_cast<double>(err / want);
        ++failures;
      }
    }
  }
}

template <typename T>
constexpr double Tolerance() {
  return std::is_same_v<T, float> ? 1e-6 : 1e-12;
}

// One problem of the values `given` (exactly representable in float, so
// float and double problems are the same and share the reference), in T,
// every output space, against the reference.
template <typename T>
void CheckBothOutputs(const std::vector<std::vector<double>>& given,
                      ProbSpace in, const std::vector<RefValue>& ref,
                      const std::string& name) {
  std::vector<std::vector<T>> values;
  for (const std::vector<double>& g : given) {
    values.emplace_back(g.begin(), g.end());
  }
  std::vector<PmfTerm<T>> terms;
  for (size_t t = 0; t < values.size(); ++t) {
    terms.push_back({static_cast<int64_t>(t % 7) - 3, values[t]});
  }
  for (const ProbSpace out : {ProbSpace::kLog, ProbSpace::kLinear}) {
    const std::string what =
        name + (std::is_same_v<T, float> ? ", float" : ", double") +
        (out == ProbSpace::kLog ? " log out" : " linear out");
    absl::StatusOr<Pmf<T>> got =
        EnumerateCpu<T>(absl::MakeConstSpan(terms), in, out);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    ExpectMatches(*got, ref, out, Tolerance<T>(), what);
  }
}

// Random problems of 1 to 10^4 terms (lengths 1 to 64, or 1 to 3 for the
// longest problems), log and linear inputs, log and linear outputs, float
// and double.
TEST(EnumerateTreeTest, RandomProblemsMatchReference) {
  std::mt19937_64 rng(20261125);
  for (const int num_terms : {1, 2, 3, 5, 8, 33, 100, 1000, 10000}) {
    const int max_len = num_terms >= 1000 ? 3 : num_terms >= 100 ? 8 : 64;
    std::vector<std::vector<double>> logs;
    for (int t = 0; t < num_terms; ++t) {
      logs.push_back(RandomLogTerm(
          rng, 1 + static_cast<int>(rng() % static_cast<uint64_t>(max_len))));
    }
    for (const ProbSpace in : {ProbSpace::kLog, ProbSpace::kLinear}) {
      // The values given, rounded to float (linear ones below float's range
      // become 0: exact zeros of the problem).
      std::vector<std::vector<double>> given;
      for (const std::vector<double>& l : logs) {
        std::vector<double> v;
        for (const double x : l) {
          v.push_back(
              static_cast<float>(in == ProbSpace::kLog ? x : std::exp(x)));
        }
        given.push_back(std::move(v));
      }
      const std::vector<RefValue> ref = Reference(given, in);
      const std::string name = std::to_string(num_terms) + " terms, " +
                               (in == ProbSpace::kLog ? "log" : "linear") +
                               " in";
      CheckBothOutputs<float>(given, in, ref, name);
      CheckBothOutputs<double>(given, in, ref, name);
    }
  }
}

// The Poisson-binomial of 10^4 terms (p uniform): tails near 1e-7000, every
// point of the log-input problem against the reference, and the mean and
// variance against sum(p) and sum(p (1 - p)).
TEST(EnumerateTreeTest, PoissonBinomialMoments) {
  constexpr int kTerms = 10000;
  std::mt19937_64 rng(7);
  std::vector<double> p(kTerms);
  LD mean = 0, variance = 0;
  for (double& x : p) {
    x = (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53;
    mean += x;
    variance += static_cast<LD>(x) * (1 - static_cast<LD>(x));
  }
  for (const ProbSpace in : {ProbSpace::kLog, ProbSpace::kLinear}) {
    std::vector<std::vector<double>> given;
    for (const double x : p) {
      given.push_back(in == ProbSpace::kLog
                          ? std::vector<double>{std::log1p(-x), std::log(x)}
                          : std::vector<double>{1 - x, x});
    }
    // The reference's terms are the values given: 1 - x is rounded.
    LD given_mean = 0, given_variance = 0;
    if (in == ProbSpace::kLinear) {
      for (const std::vector<double>& g : given) {
        const LD q = static_cast<LD>(g[1]) / (static_cast<LD>(g[0]) + g[1]);
        given_mean += q;
        given_variance += q * (1 - q);
      }
    }
    std::vector<PmfTerm<double>> terms;
    for (const std::vector<double>& g : given) terms.push_back({0, g});
    absl::StatusOr<Pmf<double>> got =
        EnumerateCpu<double>(absl::MakeConstSpan(terms), in, ProbSpace::kLog);
    ASSERT_TRUE(got.ok()) << got.status();
    // Every point for log inputs (the reference costs seconds: once).
    if (in == ProbSpace::kLog) {
      ExpectMatches(*got, Reference(given, in), ProbSpace::kLog, 1e-12,
                    "log in");
    }
    LD m0 = 0, m1 = 0, m2 = 0;
    for (size_t k = 0; k < got->values.size(); ++k) {
      const LD q = std::exp(static_cast<LD>(got->values[k]));
      m0 += q;
      m1 += q * k;
    }
    const LD mu = m1 / m0;
    for (size_t k = 0; k < got->values.size(); ++k) {
      const LD d = static_cast<LD>(k) - mu;
      m2 += std::exp(static_cast<LD>(got->values[k])) * d * d;
    }
    const LD want_mean = in == ProbSpace::kLog ? mean : given_mean;
    const LD want_var = in == ProbSpace::kLog ? variance : given_variance;
    // Log inputs: log1p(-p) and log(p) are each rounded, which moves the
    // terms' own totals and means by about 1e-16 relative.
    EXPECT_NEAR(static_cast<double>(mu / want_mean), 1.0, 1e-12);
    EXPECT_NEAR(static_cast<double>(m2 / m0 / want_var), 1.0, 1e-12);
  }
}

// The long double reference against cpp_bin_float_100 on a problem with tails
// far below 1e-300 (exp of the 100-digit reference of the log values given).
TEST(EnumerateTreeTest, ReferenceAgreesWithMultiprecision) {
  using Big = boost::multiprecision::cpp_bin_float_100;
  std::mt19937_64 rng(11);
  std::vector<std::vector<double>> given;
  for (int t = 0; t < 60; ++t) {
    given.push_back(RandomLogTerm(rng, 1 + static_cast<int>(rng() % 6)));
  }
  const std::vector<RefValue> ref = Reference(given, ProbSpace::kLog);
  std::vector<Big> acc;
  for (size_t t = 0; t < given.size(); ++t) {
    std::vector<Big> term;
    for (const double x : given[t]) {
      term.push_back(std::isinf(x) ? Big(0)
                                   : boost::multiprecision::exp(Big(x)));
    }
    if (t == 0) {
      acc = term;
      continue;
    }
    std::vector<Big> next(acc.size() + term.size() - 1, Big(0));
    for (size_t i = 0; i < acc.size(); ++i) {
      for (size_t j = 0; j < term.size(); ++j) next[i + j] += acc[i] * term[j];
    }
    acc = std::move(next);
  }
  ASSERT_EQ(acc.size(), ref.size());
  int below = 0;
  for (size_t k = 0; k < acc.size(); ++k) {
    if (acc[k] == 0) {
      EXPECT_EQ(ref[k].m, 0) << k;
      continue;
    }
    const Big want = boost::multiprecision::log(acc[k]);
    const LD got = std::log(ref[k].m) + static_cast<LD>(ref[k].e) * kLn2;
    below += want < -700;
    EXPECT_LT(std::abs(static_cast<double>(Big(got) - want)), 1e-14) << k;
  }
  EXPECT_GT(below, 10) << "the problem should reach below 1e-300";
}

}  // namespace
}  // namespace sampler::kernels
