// Accuracy of the deterministic elementary functions (detmath.h) against
// long double references (64-bit significands on x86-64, so the reference
// error is below 1/1000 ulp of a double result).
//
// Error is measured in ulps of the exact result in the tested format: for a
// result r, one ulp is 2^(max(floor(log2 |r|), emin) - p + 1), so subnormal
// results count in units of the smallest subnormal. For cos(2 pi u) the
// exact value is that of the given u (reduced exactly by boost::math::cos_pi),
// so near the zeros at u = 1/4 and 3/4 the error is relative to a tiny result
// and nothing is hidden by an absolute tolerance.
//
// The bounds asserted below are the measured maxima over the inputs listed in
// each test, rounded up a little; the comments give the error analysis that
// explains them.
#include "sampler/kernels/detmath.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/math/special_functions/cos_pi.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace sampler::kernels::detmath {
namespace {

// One ulp of the exact value r in format T.
template <typename T>
long double UlpOf(long double r) {
  constexpr int kDigits = std::numeric_limits<T>::digits;
  constexpr int kMinExp = std::numeric_limits<T>::min_exponent - 1;
  int e = kMinExp;
  if (r != 0) {
    int ex;
    frexpl(r, &ex);
    e = std::max(ex - 1, kMinExp);
  }
  return ldexpl(1.0L, e - (kDigits - 1));
}

template <typename T>
long double UlpError(T got, long double exact) {
  return fabsl(static_cast<long double>(got) - exact) / UlpOf<T>(exact);
}

// Largest error seen, with its argument for the failure message.
struct MaxError {
  long double ulps = 0;
  long double arg = 0;
  long double got = 0;
  long double exact = 0;
  int64_t count = 0;

  void Add(long double e, long double a, long double g, long double x) {
    ++count;
    if (!(e <= ulps)) {  // NaN errors are recorded too
      ulps = e;
      arg = a;
      got = g;
      exact = x;
    }
  }
  void Merge(const MaxError& o) {
    if (!(o.ulps <= ulps))
      *this = MaxError{o.ulps, o.arg, o.got, o.exact, count};
    count += o.count;
  }
};

std::string ToString(const MaxError& m) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "max %.4Lf ulp over %lld inputs, at x = %.21Lg (got %.21Lg, "
                "exact %.21Lg)",
                m.ulps, static_cast<long long>(m.count), m.arg, m.got, m.exact);
  return buf;
}

std::ostream& operator<<(std::ostream& os, const MaxError& m) {
  return os << ToString(m);
}

template <typename T>
T FromBits(uint64_t b) {
  if constexpr (std::is_same_v<T, float>) {
    return FloatFromBits(static_cast<uint32_t>(b));
  } else {
    return DoubleFromBits(b);
  }
}

template <typename T>
const char* Name() {
  return std::is_same_v<T, float> ? "float" : "double";
}

// Random bit patterns: every exponent equally likely, so tiny and huge
// arguments get as much attention as moderate ones.
template <typename T>
T RandomBits(std::mt19937_64& rng) {
  if constexpr (std::is_same_v<T, float>) {
    return FromBits<T>(rng() & 0xffffffffu);
  } else {
    return FromBits<T>(rng());
  }
}

// ------------------------------------------------------------------ exp ----

template <typename T>
void CheckExp(T x, MaxError* m) {
  const long double exact = expl(static_cast<long double>(x));
  const T got = Exp(x);
  if (std::isinf(got)) {
    // Overflow is right only when the exact value is past the largest
    // finite number (within the rounding tolerance of the threshold).
    const bool ok =
        exact > static_cast<long double>(std::numeric_limits<T>::max());
    m->Add(ok ? 0.0L : std::numeric_limits<long double>::infinity(), x, got,
           exact);
    return;
  }
  m->Add(UlpError(got, exact), x, got, exact);
}

// Arguments whose result is finite, from the underflow to the overflow
// threshold, plus bands of consecutive values around both thresholds and 0.
template <typename T>
MaxError ExpError() {
  std::mt19937_64 rng(12345);
  const long double lo =
      logl(static_cast<long double>(std::numeric_limits<T>::denorm_min())) - 1;
  const long double hi =
      logl(static_cast<long double>(std::numeric_limits<T>::max())) + 0.01L;
  MaxError m;
  std::uniform_real_distribution<long double> uniform(lo, hi);
  for (int i = 0; i < 1000000; ++i) CheckExp(static_cast<T>(uniform(rng)), &m);
  std::uniform_real_distribution<long double> moderate(-2, 2);
  for (int i = 0; i < 500000; ++i) CheckExp(static_cast<T>(moderate(rng)), &m);
  for (int i = 0; i < 1000000; ++i) {
    const T x = RandomBits<T>(rng);
    if (std::isfinite(x) && x > lo && x < hi) CheckExp(x, &m);
  }
  const T inf = std::numeric_limits<T>::infinity();
  // Around the overflow threshold, where results round to zero (half the
  // smallest subnormal), where they become subnormal, and around 0.
  const long double denorm_min =
      static_cast<long double>(std::numeric_limits<T>::denorm_min());
  for (long double center :
       {hi - 0.01L, logl(denorm_min / 2), logl(denorm_min), 0.0L,
        logl(static_cast<long double>(std::numeric_limits<T>::min()))}) {
    T up = static_cast<T>(center), down = up;
    for (int i = 0; i < 20000; ++i) {
      CheckExp(up, &m);
      CheckExp(down, &m);
      up = std::nextafter(up, inf);
      down = std::nextafter(down, -inf);
    }
  }
  return m;
}

// exp: Cody-Waite reduction r = x - k ln2 with |r| <= 0.347 (two fmas with a
// split ln2, error far below an ulp of r), a Taylor polynomial whose
// truncation is under 0.15 ulp, Horner in fma, and an exact scaling by 2^k.
// The last two Horner steps contribute about 0.5 ulp each, so the total
// stays below 1 ulp; subnormal results add one rounding of the scaled value
// (counted in subnormal ulps, still below 1). Measured outside this test:
// 0.939 ulp over every float argument in (-104.5, 89), 0.893 ulp over 1e8
// random double arguments; the sets below reach 0.894 and 0.843.
TEST(DetmathExp, FloatWithinOneUlp) {
  const MaxError m = ExpError<float>();
  std::printf("Exp<float>: %s\n", ToString(m).c_str());
  EXPECT_LE(m.ulps, 1.0L) << m;
}

TEST(DetmathExp, DoubleWithinOneUlp) {
  const MaxError m = ExpError<double>();
  std::printf("Exp<double>: %s\n", ToString(m).c_str());
  EXPECT_LE(m.ulps, 1.0L) << m;
}

template <typename T>
void ExpSpecialValues() {
  SCOPED_TRACE(Name<T>());
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  EXPECT_TRUE(std::isnan(Exp(nan)));
  EXPECT_EQ(Exp(inf), inf);
  EXPECT_EQ(Exp(-inf), T(0));
  EXPECT_EQ(Exp(T(0)), T(1));
  EXPECT_EQ(Exp(-T(0)), T(1));
  EXPECT_EQ(Exp(std::numeric_limits<T>::max()), inf);
  EXPECT_EQ(Exp(std::numeric_limits<T>::lowest()), T(0));
  EXPECT_EQ(Exp(std::numeric_limits<T>::denorm_min()), T(1));
  EXPECT_EQ(Exp(-std::numeric_limits<T>::denorm_min()), T(1));
}

TEST(DetmathExp, SpecialValues) {
  ExpSpecialValues<float>();
  ExpSpecialValues<double>();
}

// The overflow threshold sits exactly where the correctly rounded function
// switches to infinity: inf is an error of infinitely many ulps, so the
// tolerance of the accuracy tests does not cover it.
template <typename T>
void CheckOverflowThreshold(T last_finite) {
  SCOPED_TRACE(Name<T>());
  constexpr int kDigits = std::numeric_limits<T>::digits;
  constexpr int kMaxExp = std::numeric_limits<T>::max_exponent - 1;
  // Halfway between the largest finite number and the next power of two:
  // exact values at or above it round to infinity.
  const long double round_to_inf =
      ldexpl(2.0L - ldexpl(1.0L, -kDigits), kMaxExp);
  const T first_inf =
      std::nextafter(last_finite, std::numeric_limits<T>::infinity());
  ASSERT_LT(expl(static_cast<long double>(last_finite)), round_to_inf);
  ASSERT_GT(expl(static_cast<long double>(first_inf)), round_to_inf);
  EXPECT_TRUE(std::isfinite(Exp(last_finite)));
  EXPECT_EQ(Exp(first_inf), std::numeric_limits<T>::infinity());
}

TEST(DetmathExp, OverflowThreshold) {
  CheckOverflowThreshold(FloatFromBits(0x42b17217u));  // 88.7228317
  CheckOverflowThreshold(709.782712893383973096);
}

// ------------------------------------------------------------------ log ----

template <typename T>
void CheckLog(T x, MaxError* m) {
  const long double exact = logl(static_cast<long double>(x));
  const T got = Log(x);
  m->Add(UlpError(got, exact), x, got, exact);
}

// log(m) = 2 atanh((m - 1) / (m + 1)) with m in [sqrt(1/2), sqrt(2)): m - 1
// is exact but m + 1 and the division each round, so f carries up to about
// 1 ulp of relative error, which passes unchanged into log(m) ~ 2f (the
// series terms add under 0.1 ulp). With e != 0 the exact e ln2 dominates
// and the error shrinks; with e = 0 (x near 1) it is the relative error of
// f measured in ulps of the result, hence up to about 2 ulp when log(m) sits
// just above a power of two (three roundings of 0.5 ulp follow, so the a
// priori bound is near 3 ulp; see the tests for what is measured).
template <typename T>
MaxError LogError() {
  std::mt19937_64 rng(6789);
  MaxError m;
  if constexpr (std::is_same_v<T, float>) {
    // Every float in [0.5, 2): the whole mantissa range around the
    // cancellation at 1, and all 2^24 uniforms (k + 1) 2^-24 of the gamma
    // sampler.
    for (float x = 0.5f; x < 2.0f; x = std::nextafter(x, 4.0f)) CheckLog(x, &m);
    for (uint32_t k = 0; k < (1u << 24); ++k) {
      CheckLog(static_cast<float>(k + 1) * 0x1.0p-24f, &m);
    }
  } else {
    std::uniform_real_distribution<double> mid(0.5, 2.0);
    for (int i = 0; i < 2000000; ++i) CheckLog(mid(rng), &m);
    double up = 1.0, down = 1.0;
    for (int i = 0; i < 100000; ++i) {
      up = std::nextafter(up, 2.0);
      down = std::nextafter(down, 0.0);
      CheckLog(up, &m);
      CheckLog(down, &m);
    }
    // The worst binade: e = -1 with m just below sqrt(2), where log(m) and
    // the result are both near 0.35 and every rounding counts in full.
    std::uniform_real_distribution<double> worst(0.69, 0.7072);
    for (int i = 0; i < 1000000; ++i) CheckLog(worst(rng), &m);
    for (int i = 0; i < 1000000; ++i) {  // the gamma sampler's uniforms
      CheckLog(static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53, &m);
    }
  }
  // All positive finite numbers, subnormals included.
  for (int i = 0; i < 2000000; ++i) {
    const T x = std::fabs(RandomBits<T>(rng));
    if (std::isfinite(x) && x > 0) CheckLog(x, &m);
  }
  for (T x : {std::numeric_limits<T>::denorm_min(),
              std::numeric_limits<T>::min(), std::numeric_limits<T>::max(),
              std::nextafter(std::numeric_limits<T>::min(), T(0))}) {
    CheckLog(x, &m);
  }
  return m;
}

// Double log slightly exceeds 2 ulp: 2.023 ulp is the largest error found
// over 1.3e8 arguments (2e7 of them in [0.69, 0.7072), the worst binade),
// against an a priori bound near 3 ulp (1.6 from f, 0.5 for each of the
// three final fmas). Float log was checked over every positive float
// (outside this test): 1.968 ulp, at 1.00386, which the [0.5, 2) sweep
// below includes.
TEST(DetmathLog, FloatWithinTwoUlp) {
  const MaxError m = LogError<float>();
  std::printf("Log<float>: %s\n", ToString(m).c_str());
  EXPECT_LE(m.ulps, 2.0L) << m;
}

TEST(DetmathLog, DoubleWithinTwoAndATenthUlp) {
  const MaxError m = LogError<double>();
  std::printf("Log<double>: %s\n", ToString(m).c_str());
  EXPECT_LE(m.ulps, 2.1L) << m;
}

template <typename T>
void LogSpecialValues() {
  SCOPED_TRACE(Name<T>());
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  EXPECT_EQ(Log(T(0)), -inf);
  EXPECT_EQ(Log(-T(0)), -inf);
  EXPECT_EQ(Log(inf), inf);
  EXPECT_TRUE(std::isnan(Log(nan)));
  EXPECT_TRUE(std::isnan(Log(-inf)));
  EXPECT_TRUE(std::isnan(Log(T(-1))));
  EXPECT_TRUE(std::isnan(Log(-std::numeric_limits<T>::denorm_min())));
  // log(1) is exactly +0: the sampler feeds u = 1 into it.
  EXPECT_EQ(Log(T(1)), T(0));
  EXPECT_FALSE(std::signbit(Log(T(1))));
  // Exact powers of two come out as k ln2 rounded once.
  EXPECT_EQ(Log(T(2)), static_cast<T>(logl(2.0L)));
  EXPECT_EQ(Log(T(0.5)), static_cast<T>(logl(0.5L)));
}

TEST(DetmathLog, SpecialValues) {
  LogSpecialValues<float>();
  LogSpecialValues<double>();
}

// ------------------------------------------------------------- cos 2 pi u ----

template <typename T>
void CheckCos2Pi(T u, MaxError* m) {
  // 2u is exact, and cos_pi reduces its argument exactly before calling cosl
  // or sinl, so this is cos(2 pi u) for this very u to long double accuracy.
  const long double exact =
      boost::math::cos_pi(2.0L * static_cast<long double>(u));
  const T got = Cos2Pi(u);
  m->Add(UlpError(got, exact), u, got, exact);
}

// The reduction 4u = q + f is exact, theta = f * fl(pi/2) rounds once and
// carries the constant's relative error (0.47 ulp in float, 0.35 ulp in
// double), and the polynomials' truncation is negligible. Where the result
// is cos(theta) (near 0 and 1/2) the argument error is damped by sin(theta)
// and the last Horner steps dominate (< 1 ulp). Where it is sin(theta)
// (quadrants 1 and 3, i.e. around the zeros at 1/4 and 3/4) the relative
// error of theta passes through unchanged, about 1.5 ulp at worst, even for
// arguments next to the zeros: measured relative to the exact value, not an
// absolute tolerance. Measured outside this test: 1.940 ulp over every
// float in [0, 1], 1.838 ulp over 1e8 double angles k 2^-53; the sets below
// reach 1.894 and 1.822.
template <typename T>
MaxError Cos2PiError() {
  std::mt19937_64 rng(2468);
  MaxError m;
  if constexpr (std::is_same_v<T, float>) {
    // Every angle the float sampler can draw: u = k 2^-24.
    for (uint32_t k = 0; k <= (1u << 24); ++k) {
      CheckCos2Pi(static_cast<float>(k) * 0x1.0p-24f, &m);
    }
  } else {
    for (int i = 0; i < 2000000; ++i) {  // the double sampler's angles
      CheckCos2Pi(static_cast<double>(rng() >> 11) * 0x1.0p-53, &m);
    }
  }
  // Every representable u in [0, 1], tiny ones included.
  for (int i = 0; i < 1000000; ++i) {
    const T u = std::fabs(RandomBits<T>(rng));
    if (u <= T(1)) CheckCos2Pi(u, &m);
  }
  // Consecutive arguments on both sides of 0, 1/4, 1/2, 3/4 and 1.
  for (T center : {T(0), T(0.25), T(0.5), T(0.75), T(1)}) {
    T up = center, down = center;
    for (int i = 0; i < 20000; ++i) {
      if (up <= T(1)) CheckCos2Pi(up, &m);
      if (down >= T(0)) CheckCos2Pi(down, &m);
      up = std::nextafter(up, T(2));
      down = std::nextafter(down, T(-1));
    }
  }
  return m;
}

TEST(DetmathCos2Pi, FloatWithinTwoUlpOfExact) {
  const MaxError m = Cos2PiError<float>();
  std::printf("Cos2Pi<float>: %s\n", ToString(m).c_str());
  EXPECT_LE(m.ulps, 2.0L) << m;
}

TEST(DetmathCos2Pi, DoubleWithinTwoUlpOfExact) {
  const MaxError m = Cos2PiError<double>();
  std::printf("Cos2Pi<double>: %s\n", ToString(m).c_str());
  EXPECT_LE(m.ulps, 2.0L) << m;
}

template <typename T>
void Cos2PiSpecialValues() {
  SCOPED_TRACE(Name<T>());
  EXPECT_EQ(Cos2Pi(T(0)), T(1));
  EXPECT_EQ(Cos2Pi(T(0.5)), T(-1));
  EXPECT_EQ(Cos2Pi(T(1)), T(1));
  EXPECT_EQ(Cos2Pi(T(0.25)), T(0));  // either sign of zero
  EXPECT_EQ(Cos2Pi(T(0.75)), T(0));
  // The symmetries the exact reduction guarantees hold bit for bit.
  std::mt19937_64 rng(99);
  for (int i = 0; i < 10000; ++i) {
    // u < 1/4 on the 2^-24 grid, so that 1/2 - u and 1/2 + u are exact.
    const T u = static_cast<T>(static_cast<double>(rng() >> 42) * 0x1.0p-24);
    EXPECT_EQ(Cos2Pi(u), -Cos2Pi(T(0.5) - u)) << u;
    EXPECT_EQ(Cos2Pi(T(0.5) + u), -Cos2Pi(u)) << u;
  }
}

TEST(DetmathCos2Pi, SpecialValuesAndSymmetry) {
  Cos2PiSpecialValues<float>();
  Cos2PiSpecialValues<double>();
}

}  // namespace
}  // namespace sampler::kernels::detmath
