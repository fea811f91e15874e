// Tests of the CPU enumeration (kernels/enumerate_cpu.cc): accuracy against
// a long double reference computed here by the textbook double loop, log
// space against linear space, log space where linear underflows, exact
// zeros, offsets, determinism, overflow handling and input validation.
#include "sampler/kernels/enumerate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace sampler::kernels {
namespace {

using LD = long double;

constexpr LD kLdInf = std::numeric_limits<LD>::infinity();

// A term the test owns; Terms() lends them to the API as PmfTerm spans.
template <typename T>
struct TermData {
  int64_t offset = 0;
  std::vector<T> values;
};

template <typename T>
std::vector<PmfTerm<T>> Terms(const std::vector<TermData<T>>& data) {
  std::vector<PmfTerm<T>> terms;
  for (const TermData<T>& d : data) terms.push_back({d.offset, d.values});
  return terms;
}

template <typename T>
absl::StatusOr<Pmf<T>> Enumerate(const std::vector<TermData<T>>& data,
                                 ProbSpace in, ProbSpace out) {
  const std::vector<PmfTerm<T>> terms = Terms(data);
  return EnumerateCpu<T>(terms, in, out);
}

// Uniform in [0, 1) from the top 53 bits: the same numbers on every standard
// library (std::uniform_real_distribution's algorithm is unspecified).
double Uniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1p-53;
}
int64_t UniformInt(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

// Linear probabilities in [0.05, 1) times `scale`, or divided by their total
// when `normalise`. Bounded away from zero so that no result of up to 8
// terms of length 1024 comes near float's subnormal range (the smallest is
// about (0.05 / 1024)^8 ~ 3e-35), where a relative error bound cannot hold.
template <typename T>
TermData<T> RandomTerm(std::mt19937_64& rng, int len, bool normalise,
                       double scale) {
  TermData<T> t;
  t.offset = UniformInt(rng, -1000, 1000);
  std::vector<double> v(len);
  double total = 0;
  for (double& x : v) {
    x = 0.05 + 0.95 * Uniform(rng);
    total += x;
  }
  for (double x : v) {
    t.values.push_back(static_cast<T>(normalise ? x / total : x * scale));
  }
  return t;
}

// The terms' values as long double probabilities (exactly the values given,
// exponentiated for log input).
template <typename T>
std::vector<LD> LdProbs(const TermData<T>& t, ProbSpace in) {
  std::vector<LD> v;
  for (T x : t.values) {
    v.push_back(in == ProbSpace::kLog ? std::exp(static_cast<LD>(x))
                                      : static_cast<LD>(x));
  }
  return v;
}

struct RefPmf {
  int64_t offset = 0;
  std::vector<LD> values;
};

// The reference: r[i + j] += a[i] * b[j], folded left to right, in long
// double (64-bit significand: its rounding is 2^11 times finer than
// double's, far below the tolerances checked).
template <typename T>
RefPmf ReferenceLinear(const std::vector<TermData<T>>& data, ProbSpace in) {
  RefPmf r{data[0].offset, LdProbs(data[0], in)};
  for (size_t t = 1; t < data.size(); ++t) {
    const std::vector<LD> b = LdProbs(data[t], in);
    std::vector<LD> next(r.values.size() + b.size() - 1, 0.0L);
    for (size_t i = 0; i < r.values.size(); ++i) {
      for (size_t j = 0; j < b.size(); ++j) next[i + j] += r.values[i] * b[j];
    }
    r.values = std::move(next);
    r.offset += data[t].offset;
  }
  return r;
}

// A log-space reference in long double: out_k = m_k + log(sum exp(x - m_k))
// over the pairs x = a_i + b_j with i + j = k, for log inputs whose
// probabilities underflow even long double's products less often than
// double's. -inf stays -inf.
template <typename T>
RefPmf ReferenceLog(const std::vector<TermData<T>>& data) {
  auto to_ld = [](const std::vector<T>& v) {
    return std::vector<LD>(v.begin(), v.end());
  };
  RefPmf r{data[0].offset, to_ld(data[0].values)};
  for (size_t t = 1; t < data.size(); ++t) {
    const std::vector<LD> b = to_ld(data[t].values);
    const size_t m = r.values.size(), n = b.size();
    std::vector<LD> next(m + n - 1);
    for (size_t k = 0; k < m + n - 1; ++k) {
      LD max = -kLdInf;
      for (size_t i = 0; i < m; ++i) {
        if (k >= i && k - i < n) max = std::max(max, r.values[i] + b[k - i]);
      }
      if (max == -kLdInf) {
        next[k] = -kLdInf;
        continue;
      }
      LD sum = 0;
      for (size_t i = 0; i < m; ++i) {
        if (k >= i && k - i < n) sum += std::exp(r.values[i] + b[k - i] - max);
      }
      next[k] = max + std::log(sum);
    }
    r.values = std::move(next);
    r.offset += data[t].offset;
  }
  return r;
}

template <typename T>
constexpr double Eps() {
  return std::numeric_limits<T>::epsilon();
}

// The required per-element relative error of the linear path.
template <typename T>
constexpr double LinearTolerance() {
  return sizeof(T) == sizeof(float) ? 1e-6 : 1e-12;
}

// Compares a result, converted to linear long double, with the reference
// element by element: an exact zero where the reference is exactly zero,
// otherwise relative error <= tol(k). Reports the worst element.
template <typename T, typename Tol>
void ExpectClose(const Pmf<T>& got, ProbSpace out, const RefPmf& ref, Tol tol,
                 const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.offset, ref.offset);
  ASSERT_EQ(got.values.size(), ref.values.size());
  double worst_ratio = 0;
  size_t worst = 0;
  int zero_mismatches = 0;
  for (size_t k = 0; k < ref.values.size(); ++k) {
    const LD g = out == ProbSpace::kLog
                     ? std::exp(static_cast<LD>(got.values[k]))
                     : static_cast<LD>(got.values[k]);
    const LD r = ref.values[k];
    if (r == 0) {
      if (g != 0 || (out == ProbSpace::kLog &&
                     got.values[k] != -std::numeric_limits<T>::infinity())) {
        ++zero_mismatches;
      }
      continue;
    }
    const double rel = static_cast<double>(std::abs(g - r) / r);
    const double ratio = rel / tol(k);
    if (!(ratio <= worst_ratio)) {  // NaN counts as worst
      worst_ratio = ratio;
      worst = k;
    }
  }
  EXPECT_EQ(zero_mismatches, 0) << "outputs not exactly zero where the "
                                   "reference is";
  EXPECT_LE(worst_ratio, 1.0)
      << "element " << worst << ": got " << got.values[worst] << ", reference "
      << static_cast<double>(ref.values[worst]) << ", tolerance " << tol(worst);
}

template <typename T>
class EnumerateTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(EnumerateTest, Types);

constexpr int kLengths[] = {1, 2, 31, 32, 33, 100, 256, 1024};

// Linear in, linear out against the long double reference: 1 to 8 terms,
// lengths drawn from kLengths (plus 8 terms all of length 1024, the largest
// case required), random offsets of both signs, normalised and not.
TYPED_TEST(EnumerateTest, LinearMatchesLongDoubleReference) {
  using T = TypeParam;
  std::mt19937_64 rng(20240601);
  auto check = [&](const std::vector<TermData<T>>& data,
                   const std::string& what) {
    absl::StatusOr<Pmf<T>> got =
        Enumerate(data, ProbSpace::kLinear, ProbSpace::kLinear);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectClose(
        *got, ProbSpace::kLinear, ReferenceLinear(data, ProbSpace::kLinear),
        [](size_t) { return LinearTolerance<T>(); }, what);
  };
  for (int nterms = 1; nterms <= 8; ++nterms) {
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<TermData<T>> data;
      std::string what = "lengths";
      const bool normalise = rep == 0;
      // Unnormalised terms scaled up and down, away from 1.
      const double scale = rep == 1 ? 37.5 : 0.003;
      for (int t = 0; t < nterms; ++t) {
        const int len = kLengths[UniformInt(rng, 0, 7)];
        data.push_back(RandomTerm<T>(rng, len, normalise, scale));
        what += " " + std::to_string(len);
      }
      check(data, what);
    }
  }
  std::vector<TermData<T>> big;
  for (int t = 0; t < 8; ++t) big.push_back(RandomTerm<T>(rng, 1024, true, 1));
  check(big, "8 x 1024");
  // Every length in kLengths, each as the first term of a pair, so that the
  // short-first and long-first index ranges are both covered.
  for (int len : kLengths) {
    std::vector<TermData<T>> pair = {RandomTerm<T>(rng, len, true, 1),
                                     RandomTerm<T>(rng, 33, false, 2)};
    check(pair, "pair " + std::to_string(len) + " 33");
    std::swap(pair[0], pair[1]);
    check(pair, "pair 33 " + std::to_string(len));
  }
}

// A hand-checked case: offsets add and values are exact in binary.
TYPED_TEST(EnumerateTest, SmallExactCaseWithOffsets) {
  using T = TypeParam;
  const std::vector<TermData<T>> data = {
      {-3, {0.5, 0.5}}, {10, {0.25, 0.75}}, {-100, {1}}};
  absl::StatusOr<Pmf<T>> got =
      Enumerate(data, ProbSpace::kLinear, ProbSpace::kLinear);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->offset, -93);
  EXPECT_EQ(got->values, (std::vector<T>{0.125, 0.5, 0.375}));
}

// The sum of the terms' log magnitudes, plus log of their lengths: bounds
// |log| of every pair and partial sum the log path forms.
template <typename T>
double LogMagnitudeBound(const std::vector<TermData<T>>& data, ProbSpace in) {
  double s = 0;
  for (const TermData<T>& t : data) {
    double m = 0;
    for (T x : t.values) {
      const double l = in == ProbSpace::kLog ? static_cast<double>(x)
                                             : std::log(static_cast<double>(x));
      if (std::isfinite(l)) m = std::max(m, std::abs(l));
    }
    s += m + std::log(static_cast<double>(t.values.size()));
  }
  return s;
}

// All four combinations of input and output space agree with the long double
// reference of the same input values. The tolerance for the log path: it
// works in double, where adding, subtracting the max from and taking log1p
// of log values of magnitude at most L (LogMagnitudeBound) costs an absolute
// error of a few L * 2^-53 per fold step; an absolute error d in a log value
// is a relative error d in its exp. A log result rounded to T adds
// |log r| * eps(T) / 2; a linear result rounded to T adds eps(T) / 2.
TYPED_TEST(EnumerateTest, LogSpaceAgreesWithLinear) {
  using T = TypeParam;
  std::mt19937_64 rng(777);
  const ProbSpace kSpaces[] = {ProbSpace::kLinear, ProbSpace::kLog};
  // Random lengths for 1 to 8 terms, normalised (rep 0) or scaled by 1e-3,
  // then the largest required case: 8 terms of length 1024.
  std::vector<std::vector<int>> cases;
  for (int nterms : {1, 2, 3, 5, 8}) {
    for (int rep = 0; rep < 2; ++rep) {
      std::vector<int> lengths;
      for (int t = 0; t < nterms; ++t) {
        lengths.push_back(kLengths[UniformInt(rng, 0, nterms <= 3 ? 7 : 5)]);
      }
      cases.push_back(lengths);
    }
  }
  cases.push_back(std::vector<int>(8, 1024));
  for (size_t c = 0; c < cases.size(); ++c) {
    const int nterms = static_cast<int>(cases[c].size());
    std::vector<TermData<T>> linear, log;
    for (int len : cases[c]) {
      linear.push_back(RandomTerm<T>(rng, len, c % 2 == 0, 1e-3));
      TermData<T> l{linear.back().offset, {}};
      for (T x : linear.back().values) l.values.push_back(std::log(x));
      log.push_back(std::move(l));
    }
    for (ProbSpace in : kSpaces) {
      const std::vector<TermData<T>>& data =
          in == ProbSpace::kLog ? log : linear;
      const RefPmf ref = ReferenceLinear(data, in);
      const double bound = LogMagnitudeBound(data, in);
      for (ProbSpace out : kSpaces) {
        absl::StatusOr<Pmf<T>> got = Enumerate(data, in, out);
        ASSERT_TRUE(got.ok()) << got.status();
        const bool log_path = in == ProbSpace::kLog || out == ProbSpace::kLog;
        auto tol = [&](size_t k) {
          if (!log_path) return LinearTolerance<T>();
          const double internal = 8.0 * nterms * (bound + 4) * 0x1p-53;
          const double rounding =
              out == ProbSpace::kLog
                  ? Eps<T>() * (1 + std::abs(std::log(
                                        static_cast<double>(ref.values[k]))))
                  : Eps<T>();
          return internal + rounding;
        };
        ExpectClose(*got, out, ref, tol,
                    "case " + std::to_string(c) + " (" +
                        std::to_string(nterms) + " terms) in " +
                        std::to_string(static_cast<int>(in)) + " out " +
                        std::to_string(static_cast<int>(out)));
      }
    }
  }
}

// 8 terms of log-probabilities around -200 (some -inf): every probability of
// the sum is near exp(-1600), far below double's and float's range, yet the
// log result matches a long double log-space reference to the accuracy of a
// log value of that magnitude (see LogSpaceAgreesWithLinear).
TYPED_TEST(EnumerateTest, LogSpaceWhereLinearUnderflows) {
  using T = TypeParam;
  std::mt19937_64 rng(4242);
  std::vector<TermData<T>> data;
  for (int len : {33, 1, 2, 31, 32, 100, 7, 64}) {
    TermData<T> t;
    t.offset = UniformInt(rng, -50, 50);
    for (int i = 0; i < len; ++i) {
      // Interior -inf (a zero probability) in the longer terms.
      const bool zero = len > 2 && i % 5 == 3 && i != len - 1;
      t.values.push_back(zero ? -std::numeric_limits<T>::infinity()
                              : static_cast<T>(-200 + 10 * Uniform(rng) - 5));
    }
    data.push_back(std::move(t));
  }
  const RefPmf ref = ReferenceLog(data);
  absl::StatusOr<Pmf<T>> got =
      Enumerate(data, ProbSpace::kLog, ProbSpace::kLog);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->offset, ref.offset);
  ASSERT_EQ(got->values.size(), ref.values.size());
  const double bound = LogMagnitudeBound(data, ProbSpace::kLog);
  int finite = 0;
  for (size_t k = 0; k < ref.values.size(); ++k) {
    const LD r = ref.values[k];
    ASSERT_TRUE(std::isfinite(r)) << k;  // the -inf are interior only
    ASSERT_LT(r, -1400) << k;            // so linear underflows
    ++finite;
    const double tol = 8.0 * data.size() * (bound + 4) * 0x1p-53 +
                       Eps<T>() * (1 + std::abs(static_cast<double>(r)));
    EXPECT_NEAR(static_cast<double>(got->values[k]), static_cast<double>(r),
                tol)
        << "element " << k;
  }
  EXPECT_GT(finite, 0);
  // The same sum asked for in linear space underflows to exact zeros.
  absl::StatusOr<Pmf<T>> linear =
      Enumerate(data, ProbSpace::kLog, ProbSpace::kLinear);
  ASSERT_TRUE(linear.ok()) << linear.status();
  for (T v : linear->values) EXPECT_EQ(v, 0);
}

// The same, with -inf in the output: zero probabilities placed so that some
// sums have no pair of non-zero probability.
TYPED_TEST(EnumerateTest, LogSpaceKeepsMinusInfinity) {
  using T = TypeParam;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const std::vector<TermData<T>> data = {{5, {-300, kNegInf, -301}},
                                         {-2, {-250, kNegInf, -260}},
                                         {0, {-400, kNegInf, kNegInf, -400}}};
  const RefPmf ref = ReferenceLog(data);
  absl::StatusOr<Pmf<T>> got =
      Enumerate(data, ProbSpace::kLog, ProbSpace::kLog);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->values.size(), ref.values.size());
  int minus_inf = 0;
  for (size_t k = 0; k < ref.values.size(); ++k) {
    if (ref.values[k] == -kLdInf) {
      ++minus_inf;
      EXPECT_EQ(got->values[k], kNegInf) << k;
    } else {
      EXPECT_NEAR(
          got->values[k], static_cast<double>(ref.values[k]),
          4 * Eps<T>() * (1 + std::abs(static_cast<double>(ref.values[k]))))
          << k;
    }
  }
  EXPECT_GT(minus_inf, 0);
}

// Zero probabilities give exactly zero (or -inf) where the reference is
// exactly zero, in all four space combinations.
TYPED_TEST(EnumerateTest, ExactZeros) {
  using T = TypeParam;
  const ProbSpace kSpaces[] = {ProbSpace::kLinear, ProbSpace::kLog};
  auto to_log = [](std::vector<TermData<T>> data) {
    for (TermData<T>& t : data) {
      for (T& x : t.values) x = std::log(x);  // log(0) = -inf
    }
    return data;
  };
  auto check_all = [&](const std::vector<TermData<T>>& linear,
                       const std::string& what) {
    const RefPmf ref = ReferenceLinear(linear, ProbSpace::kLinear);
    int zeros = 0;
    for (LD r : ref.values) zeros += r == 0;
    ASSERT_GT(zeros, 0) << what << ": the case must have zeros to check";
    for (ProbSpace in : kSpaces) {
      const std::vector<TermData<T>> data =
          in == ProbSpace::kLog ? to_log(linear) : linear;
      for (ProbSpace out : kSpaces) {
        absl::StatusOr<Pmf<T>> got = Enumerate(data, in, out);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(got->values.size(), ref.values.size());
        for (size_t k = 0; k < ref.values.size(); ++k) {
          const T want = out == ProbSpace::kLog
                             ? -std::numeric_limits<T>::infinity()
                             : T{0};
          if (ref.values[k] == 0) {
            EXPECT_EQ(got->values[k], want)
                << what << " in " << static_cast<int>(in) << " out "
                << static_cast<int>(out) << " element " << k;
          } else {
            EXPECT_NE(got->values[k], want) << what << " element " << k;
          }
        }
      }
    }
  };
  // Supports {0, 2} + {0, 2}: the odd sums are impossible.
  check_all({{0, {0.25, 0, 0.75}}, {0, {0.5, 0, 0.5}}}, "{0,2}+{0,2}");
  // Supports on multiples of 3: only multiples of 3 are possible.
  std::mt19937_64 rng(99);
  std::vector<TermData<T>> thirds;
  for (int len : {31, 64, 100, 7}) {
    TermData<T> t = RandomTerm<T>(rng, len, true, 1);
    for (int i = 0; i < len; ++i) {
      if (i % 3 != 0) t.values[i] = 0;
    }
    thirds.push_back(std::move(t));
  }
  check_all(thirds, "multiples of 3");
  // Zeros at the ends as well as inside.
  check_all({{1, {0, 0, 0.5, 0, 0.5, 0}}, {-4, {0, 1, 0, 0}}}, "edges");
  // A term with no mass makes the whole sum zero.
  check_all({RandomTerm<T>(rng, 33, true, 1),
             {7, {0, 0, 0}},
             RandomTerm<T>(rng, 5, true, 1)},
            "all-zero term");
}

// Identical input, identical bits, in all four combinations.
TYPED_TEST(EnumerateTest, Deterministic) {
  using T = TypeParam;
  std::mt19937_64 rng(31337);
  std::vector<TermData<T>> linear;
  for (int len : {100, 33, 256, 31}) {
    linear.push_back(RandomTerm<T>(rng, len, true, 1));
  }
  std::vector<TermData<T>> log = linear;
  for (TermData<T>& t : log) {
    for (T& x : t.values) x = std::log(x);
  }
  for (ProbSpace in : {ProbSpace::kLinear, ProbSpace::kLog}) {
    const std::vector<TermData<T>>& data = in == ProbSpace::kLog ? log : linear;
    for (ProbSpace out : {ProbSpace::kLinear, ProbSpace::kLog}) {
      absl::StatusOr<Pmf<T>> a = Enumerate(data, in, out);
      absl::StatusOr<Pmf<T>> b = Enumerate(data, in, out);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(a->offset, b->offset);
      ASSERT_EQ(a->values.size(), b->values.size());
      EXPECT_EQ(std::memcmp(a->values.data(), b->values.data(),
                            a->values.size() * sizeof(T)),
                0)
          << "in " << static_cast<int>(in) << " out " << static_cast<int>(out);
    }
  }
}

// Unnormalised terms are allowed: the total of the sum is the product of the
// terms' totals.
TYPED_TEST(EnumerateTest, TotalIsProductOfTotals) {
  using T = TypeParam;
  std::mt19937_64 rng(5);
  std::vector<TermData<T>> data;
  LD product = 1;
  for (int len : {3, 32, 100}) {
    data.push_back(RandomTerm<T>(rng, len, false, 2.5));
    LD total = 0;
    for (T x : data.back().values) total += x;
    product *= total;
  }
  absl::StatusOr<Pmf<T>> got =
      Enumerate(data, ProbSpace::kLinear, ProbSpace::kLinear);
  ASSERT_TRUE(got.ok()) << got.status();
  LD total = 0;
  for (T x : got->values) total += x;
  EXPECT_NEAR(static_cast<double>(total / product), 1.0,
              4 * LinearTolerance<T>());
}

// Overflow: a linear partial sum that leaves double's range but whose result
// fits is recomputed in log space; a result that does not fit T is an error,
// never inf or NaN.
TYPED_TEST(EnumerateTest, Overflow) {
  using T = TypeParam;
  const T big = std::numeric_limits<T>::max() / 4;
  // big^2 overflows T; with a double partial sum it overflows only for
  // double, which the log-space retry handles.
  const T small = 1 / big;
  const std::vector<TermData<T>> cancelling = {
      {0, {big, big}}, {0, {big}}, {0, {small}}, {0, {small, 0, small}}};
  absl::StatusOr<Pmf<T>> got =
      Enumerate(cancelling, ProbSpace::kLinear, ProbSpace::kLinear);
  ASSERT_TRUE(got.ok()) << got.status();
  const RefPmf ref = ReferenceLinear(cancelling, ProbSpace::kLinear);
  // The log path's accuracy for log magnitudes up to ~4 * 710.
  ExpectClose(
      *got, ProbSpace::kLinear, ref, [](size_t) { return 1e-11; },
      "cancelling");

  const std::vector<TermData<T>> overflowing = {{0, {big, 1}}, {0, {big}}};
  got = Enumerate(overflowing, ProbSpace::kLinear, ProbSpace::kLinear);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("probability at 0 overflows"),
            std::string::npos)
      << got.status();
  // In log space the same sum is fine.
  got = Enumerate(overflowing, ProbSpace::kLinear, ProbSpace::kLog);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_NEAR(got->values[0], 2 * std::log(static_cast<double>(big)),
              1e-6 * got->values[0]);

  // Log values whose sum overflows the output type.
  const T huge = std::numeric_limits<T>::max() * T{0.75};
  const std::vector<TermData<T>> log_overflow = {{0, {huge}}, {0, {huge}}};
  got = Enumerate(log_overflow, ProbSpace::kLog, ProbSpace::kLog);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("overflows"), std::string::npos)
      << got.status();
  got = Enumerate(log_overflow, ProbSpace::kLog, ProbSpace::kLinear);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

// The problem's cost as the server would bound it.
TEST(EnumeratePairCountTest, CountsFoldPairs) {
  const std::vector<float> a(3, 0.1f), b(4, 0.1f), c(5, 0.1f);
  const std::vector<PmfTerm<float>> terms = {{0, a}, {0, b}, {0, c}};
  // 3 * 4, then (3 + 4 - 1) * 5.
  EXPECT_EQ(EnumeratePairCount<float>(terms), 42);
  EXPECT_EQ(EnumeratePairCount<float>(
                absl::Span<const PmfTerm<float>>(terms.data(), 1)),
            0);
}

// Expects InvalidArgument from both ValidateEnumerate and EnumerateCpu, with
// `field` in the message.
template <typename T>
void ExpectInvalid(const std::vector<TermData<T>>& data, ProbSpace in,
                   const std::string& field) {
  const std::vector<PmfTerm<T>> terms = Terms(data);
  const absl::Status v = ValidateEnumerate<T>(terms, in);
  EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument) << v;
  EXPECT_NE(v.message().find(field), std::string::npos)
      << "message \"" << v.message() << "\" lacks \"" << field << "\"";
  const absl::StatusOr<Pmf<T>> e = EnumerateCpu<T>(terms, in, ProbSpace::kLog);
  EXPECT_EQ(e.status(), v);
}

TYPED_TEST(EnumerateTest, Validation) {
  using T = TypeParam;
  constexpr T kNan = std::numeric_limits<T>::quiet_NaN();
  constexpr T kInf = std::numeric_limits<T>::infinity();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const ProbSpace lin = ProbSpace::kLinear, log = ProbSpace::kLog;
  const TermData<T> ok{0, {0.5, 0.5}};

  ExpectInvalid<T>({}, lin, "terms: at least one term");
  ExpectInvalid<T>({ok, {3, {}}}, lin, "terms[1]: empty PMF");
  ExpectInvalid<T>({ok, ok, {0, {1, 1, 1, 1, 1, T(-0.1)}}}, lin,
                   "terms[2].probabilities[5] = -0.1: must be finite and >= 0");
  ExpectInvalid<T>({{0, {1, kNan}}}, lin, "terms[0].probabilities[1] = nan");
  ExpectInvalid<T>({ok, {0, {kInf}}}, lin, "terms[1].probabilities[0] = inf");
  ExpectInvalid<T>({{0, {-kInf}}}, lin, "terms[0].probabilities[0] = -inf");
  ExpectInvalid<T>({ok, {0, {0, kInf}}}, log,
                   "terms[1].probabilities[1] = inf: a log-probability");
  ExpectInvalid<T>({{0, {kNan}}}, log, "terms[0].probabilities[0] = nan");
  ExpectInvalid<T>({{kMax, {1}}, {1, {1}}}, lin,
                   "terms[1].offset = 1: the sum of the offsets overflows");
  ExpectInvalid<T>({{kMin, {1}}, {-1, {1}}}, lin,
                   "terms[1].offset = -1: the sum of the offsets overflows");
  ExpectInvalid<T>({{kMax - 1, {1, 1, 1}}}, lin,
                   "terms[0].offset = 9223372036854775806: the support's "
                   "last point");
  ExpectInvalid<T>({{kMax - 2, {1, 1}}, {0, {1, 1}}, {0, {1, 1}}}, lin,
                   "terms[2].offset = 0: the sum's last support point");
  ExpectInvalid<T>({ok, {0, std::vector<T>(kMaxEnumerateSupport + 1, 0)}}, lin,
                   "terms[1]: length 16777217 exceeds the maximum");
  ExpectInvalid<T>({{0, std::vector<T>(kMaxEnumerateSupport / 2, 0)},
                    {0, std::vector<T>(kMaxEnumerateSupport / 2 + 2, 0)}},
                   lin, "terms[1]: the sum's support length reaches 16777217");
  ExpectInvalid<T>({ok}, static_cast<ProbSpace>(7), "input space = 7");
  {
    const std::vector<PmfTerm<T>> terms = Terms<T>({ok});
    EXPECT_EQ(
        EnumerateCpu<T>(terms, lin, static_cast<ProbSpace>(-1)).status().code(),
        absl::StatusCode::kInvalidArgument);
  }

  // Allowed edge cases: -inf in log space, zero and the extreme offsets.
  const std::vector<TermData<T>> fine = {{kMin, {-kInf, 0}}, {kMax, {0}}};
  const std::vector<PmfTerm<T>> fine_terms = Terms(fine);
  EXPECT_TRUE(ValidateEnumerate<T>(fine_terms, log).ok());
  const std::vector<TermData<T>> at_limit = {
      {kMax - 2, {1, 1}}, {0, {1, 1}}, {-1, {1, 1}}};
  const std::vector<PmfTerm<T>> at_limit_terms = Terms(at_limit);
  EXPECT_TRUE(ValidateEnumerate<T>(at_limit_terms, lin).ok());
  absl::StatusOr<Pmf<T>> at_limit_result =
      EnumerateCpu<T>(at_limit_terms, lin, lin);
  ASSERT_TRUE(at_limit_result.ok()) << at_limit_result.status();
  EXPECT_EQ(at_limit_result->offset, kMax - 3);
  EXPECT_EQ(at_limit_result->values, (std::vector<T>{1, 3, 3, 1}));
}

}  // namespace
}  // namespace sampler::kernels
