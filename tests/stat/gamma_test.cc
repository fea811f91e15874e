// Statistical and contract tests of the CPU gamma sampler (gamma.h).
//
// Every test uses fixed seeds, so each outcome is deterministic; the
// statistical thresholds are chosen so that a correct sampler fails with
// probability far below 1e-3 over the whole file, while the distortions a
// bug produces (a wrong branch, a wrong constant, a swapped uniform) move
// the statistics by many standard errors.
#include "sampler/kernels/gamma.h"

#include <Random123/philox.h>
#include <gtest/gtest.h>

#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/gamma_core.h"
#include "sampler/kernels/philox.h"
#include "tests/stat/stat_util.h"

namespace sampler::kernels {
namespace {

template <typename T>
class GammaTest : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GammaTest, Precisions);

// n samples with one shape and scale through the per-element entry point.
template <typename T>
std::vector<T> Sample(T shape, T scale, bool log_output, uint64_t seed,
                      size_t n, uint64_t first_item = 0) {
  const std::vector<T> shapes(n, shape), scales(n, scale);
  std::vector<T> out(n);
  const absl::Status s = SampleGammaCpu<T>(shapes, scales, log_output, seed,
                                           first_item, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

template <typename T>
bool SameBits(T a, T b) {
  return detmath::Bits(a) == detmath::Bits(b);
}

// ------------------------------------------------ Kolmogorov-Smirnov ----

// CDF of log X for X ~ Gamma(a, 1): P(a, e^t). Where e^t underflows, the
// leading term of the series, x^a / Gamma(a + 1) = exp(a t - lgamma(a + 1)),
// has relative error below e^t, i.e. none at double precision.
double LogGammaCdf(double a, double t) {
  if (t < -700) return std::exp(a * t - std::lgamma(a + 1));
  return boost::math::gamma_p(a, std::exp(t));
}

// 100000 samples of Gamma(shape, 1) against the exact CDF. Shapes below 0.1
// are tested through their logarithm: in linear float output a visible
// fraction underflows to zero (0.6% for shape 0.05), which the continuous
// CDF cannot describe; log output is the form meant for them.
template <typename T>
void KsCheck(double shape, bool log_output, uint64_t seed) {
  constexpr size_t kSamples = 100000;
  const std::vector<T> out =
      Sample<T>(static_cast<T>(shape), T(1), log_output, seed, kSamples);
  const std::vector<double> samples(out.begin(), out.end());
  // The float shape is what was sampled; the CDF must use it too.
  const double a = static_cast<double>(static_cast<T>(shape));
  const sampler::testing::KsResult ks =
      sampler::testing::KsTest(samples, [&](double x) {
        if (log_output) return LogGammaCdf(a, x);
        return x <= 0 ? 0.0 : boost::math::gamma_p(a, x);
      });
  std::printf("KS %-6s shape %-6g %s: D = %.5f, p = %.4f\n",
              std::is_same_v<T, float> ? "float" : "double", shape,
              log_output ? "log" : "lin", ks.statistic, ks.p_value);
  // 24 KS tests run in this file: at 1e-4 each, a correct sampler fails
  // one with probability below 0.25%.
  EXPECT_GT(ks.p_value, 1e-4)
      << "shape " << shape << " log " << log_output << " D = " << ks.statistic;
}

TYPED_TEST(GammaTest, KolmogorovSmirnovAgainstExactCdf) {
  using T = TypeParam;
  uint64_t seed = std::is_same_v<T, float> ? 1001 : 2002;
  for (double shape : {0.001, 0.05, 0.3, 1.0, 2.5, 30.0, 1000.0}) {
    if (shape >= 0.1) KsCheck<T>(shape, /*log_output=*/false, seed++);
    // Log output for every shape: it is a separate code path (y + log scale
    // rather than (d v) scale or exp(y) scale).
    KsCheck<T>(shape, /*log_output=*/true, seed++);
  }
}

// ---------------------------------------------------------- moments ----

// Sample mean and variance against shape*scale and shape*scale^2. With
// n = 200000, the standard error of the mean is sqrt(k/n) scale and that of
// the sample variance sqrt((mu4 - sigma^4)/n) with mu4 = 3k(k+2) scale^4
// for Gamma(k); |z| < 5 has a false-alarm rate of 6e-7 per check.
template <typename T>
void MomentsCheck(double shape, double scale, uint64_t seed) {
  constexpr size_t kSamples = 200000;
  const std::vector<T> out = Sample<T>(
      static_cast<T>(shape), static_cast<T>(scale), false, seed, kSamples);
  const double k = static_cast<double>(static_cast<T>(shape));
  const double th = static_cast<double>(static_cast<T>(scale));
  long double sum = 0;
  for (T x : out) sum += x;
  const double n = static_cast<double>(kSamples);
  const double mean = static_cast<double>(sum / n);
  long double ss = 0;
  for (T x : out) ss += (x - mean) * (x - mean);
  const double var = static_cast<double>(ss / (n - 1));
  const double exp_mean = k * th, exp_var = k * th * th;
  const double se_mean = std::sqrt(exp_var / n);
  const double mu4 = 3 * k * (k + 2) * th * th * th * th;
  const double se_var = std::sqrt((mu4 - exp_var * exp_var) / n);
  const double z_mean = (mean - exp_mean) / se_mean;
  const double z_var = (var - exp_var) / se_var;
  std::printf(
      "moments %-6s shape %-5g scale %-5g: z(mean) = %+.2f, "
      "z(var) = %+.2f\n",
      std::is_same_v<T, float> ? "float" : "double", shape, scale, z_mean,
      z_var);
  EXPECT_LT(std::fabs(z_mean), 5) << "shape " << shape << " scale " << scale
                                  << " mean " << mean << " vs " << exp_mean;
  EXPECT_LT(std::fabs(z_var), 5) << "shape " << shape << " scale " << scale
                                 << " var " << var << " vs " << exp_var;
}

TYPED_TEST(GammaTest, MeanAndVarianceWithScale) {
  using T = TypeParam;
  const uint64_t seed = std::is_same_v<T, float> ? 31 : 32;
  MomentsCheck<T>(0.5, 100.0, seed);
  MomentsCheck<T>(1.0, 1.0, seed + 10);
  MomentsCheck<T>(3.7, 0.01, seed + 20);
  MomentsCheck<T>(50.0, 2.5, seed + 30);
}

// The scale is one final multiplication (linear) or one addition of
// log(scale) (log output), so scaled draws are the unit draws transformed,
// bit for bit.
TYPED_TEST(GammaTest, ScaleIsAppliedLast) {
  using T = TypeParam;
  for (T shape : {T(0.3), T(4)}) {
    const std::vector<T> unit = Sample<T>(shape, T(1), false, 5, 2000);
    const std::vector<T> unit_log = Sample<T>(shape, T(1), true, 5, 2000);
    for (T scale : {T(0.01), T(100)}) {
      const std::vector<T> lin = Sample<T>(shape, scale, false, 5, 2000);
      const std::vector<T> lg = Sample<T>(shape, scale, true, 5, 2000);
      for (size_t i = 0; i < lin.size(); ++i) {
        ASSERT_TRUE(SameBits(lin[i], unit[i] * scale)) << i;
        ASSERT_TRUE(SameBits(lg[i], unit_log[i] + detmath::Log(scale))) << i;
      }
    }
  }
}

// ------------------------------------------------ log vs linear output ----

// For the same seed and items, log output must be the logarithm of linear
// output. Both come from one accepted attempt; they differ only by the
// roundings of log(d v) or exp(y), log(scale) and the final product or sum:
// |log(lin) - lg| <= 4 eps (|lg| + 2 |log scale| + 1), since one ulp of x is
// at most eps |x|. Linear outputs that underflow to subnormals are skipped.
TYPED_TEST(GammaTest, LogOutputIsLogOfLinearOutput) {
  using T = TypeParam;
  const long double eps = std::numeric_limits<T>::epsilon();
  for (T shape : {T(0.05), T(0.3), T(1), T(2.5), T(30), T(1000)}) {
    for (T scale : {T(0.01), T(1), T(100)}) {
      const std::vector<T> lin = Sample<T>(shape, scale, false, 77, 5000, 9);
      const std::vector<T> lg = Sample<T>(shape, scale, true, 77, 5000, 9);
      const long double log_scale = std::fabs(logl(scale));
      int compared = 0;
      for (size_t i = 0; i < lin.size(); ++i) {
        if (!std::isnormal(lin[i])) continue;
        ++compared;
        const long double diff = fabsl(logl(lin[i]) - lg[i]);
        const long double tol = 4 * eps * (fabsl(lg[i]) + 2 * log_scale + 1);
        ASSERT_LE(diff, tol)
            << "shape " << shape << " scale " << scale << " item " << i
            << ": lin " << lin[i] << " log " << lg[i];
      }
      EXPECT_GT(compared, 4000) << shape;
    }
  }
}

// --------------------------------------------- layout and determinism ----

TYPED_TEST(GammaTest, GroupedEqualsPerElement) {
  using T = TypeParam;
  const std::vector<GammaGroup<T>> groups = {
      {T(0.3), T(2), 5},   {T(1), T(1), 0},     {T(7.5), T(0.1), 100},
      {T(0.001), T(3), 7}, {T(1000), T(1), 20}, {T(1), T(1), 1},
  };
  std::vector<T> shapes, scales;
  for (const GammaGroup<T>& g : groups) {
    shapes.insert(shapes.end(), g.count, g.shape);
    scales.insert(scales.end(), g.count, g.scale);
  }
  for (bool log_output : {false, true}) {
    std::vector<T> grouped(shapes.size()), flat(shapes.size());
    const uint64_t first = 123456789012ull;  // item high word non-zero
    ASSERT_TRUE(SampleGammaGroupedCpu<T>(groups, log_output, 42, first,
                                         absl::MakeSpan(grouped))
                    .ok());
    ASSERT_TRUE(SampleGammaCpu<T>(shapes, scales, log_output, 42, first,
                                  absl::MakeSpan(flat))
                    .ok());
    for (size_t i = 0; i < flat.size(); ++i) {
      ASSERT_TRUE(SameBits(grouped[i], flat[i]))
          << i << ": " << grouped[i] << " vs " << flat[i];
    }
  }
}

TYPED_TEST(GammaTest, ChunksWithFirstItemEqualOneCall) {
  using T = TypeParam;
  std::vector<T> shapes, scales;
  for (int i = 0; i < 1000; ++i) {
    shapes.push_back(static_cast<T>(0.01 + 0.37 * (i % 29)));
    scales.push_back(static_cast<T>(0.5 + (i % 3)));
  }
  std::vector<T> whole(shapes.size());
  ASSERT_TRUE(
      SampleGammaCpu<T>(shapes, scales, false, 9, 500, absl::MakeSpan(whole))
          .ok());
  std::vector<T> pieces(shapes.size());
  const size_t cuts[] = {0, 1, 300, 301, 1000};
  for (int c = 0; c + 1 < 5; ++c) {
    const size_t b = cuts[c], e = cuts[c + 1];
    ASSERT_TRUE(SampleGammaCpu<T>(absl::MakeConstSpan(shapes).subspan(b, e - b),
                                  absl::MakeConstSpan(scales).subspan(b, e - b),
                                  false, 9, 500 + b,
                                  absl::MakeSpan(pieces).subspan(b, e - b))
                    .ok());
  }
  for (size_t i = 0; i < whole.size(); ++i) {
    ASSERT_TRUE(SameBits(whole[i], pieces[i])) << i;
  }
  // Grouped chunks too: a group split across two calls.
  std::vector<T> g_whole(40), g_pieces(40);
  const GammaGroup<T> g40[] = {{T(0.7), T(2), 40}};
  const GammaGroup<T> g13[] = {{T(0.7), T(2), 13}};
  const GammaGroup<T> g27[] = {{T(0.7), T(2), 27}};
  ASSERT_TRUE(
      SampleGammaGroupedCpu<T>(g40, true, 3, 7, absl::MakeSpan(g_whole)).ok());
  ASSERT_TRUE(SampleGammaGroupedCpu<T>(g13, true, 3, 7,
                                       absl::MakeSpan(g_pieces).subspan(0, 13))
                  .ok());
  ASSERT_TRUE(SampleGammaGroupedCpu<T>(g27, true, 3, 20,
                                       absl::MakeSpan(g_pieces).subspan(13))
                  .ok());
  for (size_t i = 0; i < 40; ++i) {
    ASSERT_TRUE(SameBits(g_whole[i], g_pieces[i])) << i;
  }
}

TYPED_TEST(GammaTest, SameSeedSameBitsOtherSeedDiffers) {
  using T = TypeParam;
  for (T shape : {T(0.2), T(3)}) {
    const std::vector<T> a = Sample<T>(shape, T(1), false, 1234, 1000);
    const std::vector<T> b = Sample<T>(shape, T(1), false, 1234, 1000);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(SameBits(a[i], b[i]));
    // Seeds differing in the low and in the high key word.
    for (uint64_t other : {1235ull, 1234ull | (1ull << 40)}) {
      const std::vector<T> c = Sample<T>(shape, T(1), false, other, 1000);
      int equal = 0;
      for (size_t i = 0; i < a.size(); ++i) equal += SameBits(a[i], c[i]);
      EXPECT_LT(equal, 10) << "seed " << other;
    }
    // Items are distinct streams: shifting first_item shifts the output.
    const std::vector<T> s = Sample<T>(shape, T(1), false, 1234, 999, 1);
    for (size_t i = 0; i < s.size(); ++i) {
      ASSERT_TRUE(SameBits(s[i], a[i + 1]));
    }
  }
}

// ------------------------------------------------ the contract itself ----

// Which branches of the attempt the reference saw, to prove the items
// checked below exercise all of them.
struct PathCounts {
  int nonpositive_v = 0;  // v <= 0: rejected before the squeeze
  int squeeze = 0;        // accepted by the squeeze
  int log_accept = 0;     // accepted by the log test
  int log_reject = 0;     // rejected by the log test
  int multi_attempt = 0;  // items needing more than one attempt
  int near = 0;           // 1 + c z >= 3/4: t carried apart from 1
  int far = 0;            // 1 + c z < 3/4: v = (1 + c z)^3 directly
  int series = 0;         // log1p(t) - t by its series
  int log1p = 0;          // log1p(t) - t from a logarithm
};

// docs/randomness.md "Gamma", written out independently of gamma_core.h:
// raw Random123 Philox, the uniform conversions as the text states them,
// and the attempt as a plain loop.
template <typename T>
T ReferenceGamma(uint64_t seed, uint64_t item, T shape, T scale,
                 bool log_output, PathCounts* paths) {
  r123::Philox4x32 philox;
  const r123::Philox4x32::key_type key = {
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  auto block = [&](uint32_t draw) {
    const r123::Philox4x32::ctr_type ctr = {{draw, static_cast<uint32_t>(item),
                                             static_cast<uint32_t>(item >> 32),
                                             0x47414d32u}};  // "GAM2"
    return philox(ctr, key);
  };
  auto open01 = [](uint64_t bits) -> T {  // (0, 1]
    if constexpr (std::is_same_v<T, float>) {
      return static_cast<T>((bits >> 8) + 1) * T(0x1.0p-24);
    } else {
      return static_cast<T>((bits >> 11) + 1) * T(0x1.0p-53);
    }
  };
  auto closed01 = [](uint64_t bits) -> T {  // [0, 1)
    if constexpr (std::is_same_v<T, float>) {
      return static_cast<T>(bits >> 8) * T(0x1.0p-24);
    } else {
      return static_cast<T>(bits >> 11) * T(0x1.0p-53);
    }
  };
  auto join = [](uint32_t lo, uint32_t hi) {
    return (static_cast<uint64_t>(hi) << 32) | lo;
  };

  const T alpha = shape >= T(1) ? shape : shape + T(1);
  const T d = alpha - T(1) / T(3);
  const T c = T(1) / std::sqrt(T(9) * d);
  for (uint32_t a = 0;; ++a) {
    T u1, u2, ua, ub;
    if constexpr (std::is_same_v<T, float>) {
      const auto v = block(a);
      u1 = open01(v[0]);
      u2 = closed01(v[1]);
      ua = open01(v[2]);
      ub = open01(v[3]);
    } else {
      const auto v = block(2 * a);
      const auto w = block(2 * a + 1);
      u1 = open01(join(v[0], v[1]));
      u2 = closed01(join(v[2], v[3]));
      ua = open01(join(w[0], w[1]));
      ub = open01(join(w[2], w[3]));
    }
    const T z = std::sqrt(T(-2) * detmath::Log(u1)) * detmath::Cos2Pi(u2);
    const T s = std::fma(c, z, T(1));
    if (s <= T(0)) {
      ++paths->nonpositive_v;
      continue;
    }
    const T w = c * z;
    const T z2 = z * z;
    T t, out, v = T(1);
    if (w >= T(-0.25)) {
      ++paths->near;
      t = w * (T(3) + w * (T(3) + w));
      out = std::fma(d, t, d);
    } else {
      ++paths->far;
      v = (s * s) * s;
      t = v - T(1);
      out = d * v;
    }
    bool accepted = false;
    if (ua < T(1) - T(0.0331) * (z2 * z2)) {
      ++paths->squeeze;
      accepted = true;
    } else {
      T e;
      if (w < T(-0.25)) {
        e = detmath::Log(v) - t;
      } else if (t >= T(-0.5) && t <= T(1)) {
        ++paths->series;
        // log1p(t) - t = f (2 f^2 P(f^2) - t), f = t / (2 + t), P(s) =
        // sum_k s^k / (2k + 3) to k = 6 (float) or 15 (double).
        const T f = t / (T(2) + t);
        const T f2 = f * f;
        const int top = std::is_same_v<T, float> ? 6 : 15;
        T p = T(1) / T(2 * top + 3);
        for (int k = top - 1; k >= 0; --k)
          p = std::fma(p, f2, T(1) / T(2 * k + 3));
        e = f * std::fma(T(2) * f2, p, -t);
      } else {
        ++paths->log1p;
        const T u = T(1) + t;
        e = (detmath::Log(u) + (t - (u - T(1))) / u) - t;
      }
      if (detmath::Log(ua) < std::fma(d, e, z2 / T(2))) {
        ++paths->log_accept;
        accepted = true;
      } else {
        ++paths->log_reject;
      }
    }
    if (!accepted) continue;
    if (a > 0) ++paths->multi_attempt;
    const T dv = out;
    T y = detmath::Log(dv);
    if (shape < T(1)) y = y + detmath::Log(ub) / shape;
    if (log_output) return y + detmath::Log(scale);
    if (shape >= T(1)) return dv * scale;
    return detmath::Exp(y) * scale;
  }
}

TYPED_TEST(GammaTest, MatchesTheWrittenContractBitForBit) {
  using T = TypeParam;
  constexpr size_t kItems = 4000;
  const uint64_t first = (7ull << 32) + 11;  // both item words in play
  const uint64_t seed = 0x9e3779b97f4a7c15ull;
  PathCounts paths;
  for (T shape : {T(0.05), T(0.3), T(1), T(30), T(1e6), T(1e10)}) {
    const T scale = T(2.5);
    for (bool log_output : {false, true}) {
      const std::vector<T> out =
          Sample<T>(shape, scale, log_output, seed, kItems, first);
      for (size_t i = 0; i < kItems; ++i) {
        const T ref = ReferenceGamma<T>(seed, first + i, shape, scale,
                                        log_output, &paths);
        ASSERT_TRUE(SameBits(out[i], ref))
            << "shape " << shape << " log " << log_output << " item "
            << first + i << ": " << out[i] << " vs " << ref;
      }
    }
  }
  std::printf(
      "paths: v<=0 %d, squeeze %d, log accept %d, log reject %d, "
      "multi-attempt items %d, near %d, far %d, series %d, log1p %d\n",
      paths.nonpositive_v, paths.squeeze, paths.log_accept, paths.log_reject,
      paths.multi_attempt, paths.near, paths.far, paths.series, paths.log1p);
  EXPECT_GT(paths.nonpositive_v, 0);
  EXPECT_GT(paths.far, 0);
  EXPECT_GT(paths.series, 0);
  EXPECT_GT(paths.log1p, 0);
  EXPECT_GT(paths.log_accept, 0);
  EXPECT_GT(paths.log_reject, 0);
  EXPECT_GT(paths.multi_attempt, 0);
}

// The attempt cap turns an endless rejection loop into NaN. An item whose
// first attempt is rejected gives NaN under a cap of 1 and its normal value
// under the default cap.
TYPED_TEST(GammaTest, AttemptCapYieldsNaN) {
  using T = TypeParam;
  const GammaShape<T> g = GammaPrepare(T(1));
  EXPECT_TRUE(std::isnan(GammaDrawItem<T>(KindTag::kGamma, 1, 0, g, 0).dv));
  int found = 0;
  for (uint64_t item = 0; item < 1000 && found < 3; ++item) {
    T dv;
    if (GammaTryAttempt(g, GammaAttemptUniforms<T>(KindTag::kGamma, 1, item, 0),
                        &dv)) {
      continue;
    }
    ++found;
    EXPECT_TRUE(
        std::isnan(GammaDrawItem<T>(KindTag::kGamma, 1, item, g, 1).dv));
    EXPECT_FALSE(std::isnan(GammaDrawItem<T>(KindTag::kGamma, 1, item, g).dv));
  }
  EXPECT_EQ(found, 3);
}

// Parameters at the edges of the valid range never produce NaN: the log
// output saturates to -inf when the variate is below every representable
// logarithm, and linear output overflows to inf or underflows to 0.
TYPED_TEST(GammaTest, ExtremeParametersGiveNoNaN) {
  using T = TypeParam;
  const T tiny = std::numeric_limits<T>::min();
  const T huge = std::numeric_limits<T>::max();
  for (T shape :
       {tiny, T(1e-30), T(1e-6), T(0.999999), T(1), T(1e6), T(1e30), huge}) {
    for (T scale : {tiny, T(1), huge}) {
      for (bool log_output : {false, true}) {
        const std::vector<T> out = Sample<T>(shape, scale, log_output, 3, 200);
        for (T x : out) {
          ASSERT_FALSE(std::isnan(x)) << "shape " << shape << " scale " << scale
                                      << " log " << log_output;
          if (!log_output) {
            ASSERT_GE(x, T(0));
          }
        }
      }
    }
  }
}

// --------------------------------------------------------- validation ----

template <typename T>
void ExpectInvalid(const absl::Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(std::string(s.message()).find(needle), std::string::npos)
      << "message \"" << s.message() << "\" lacks \"" << needle << "\"";
}

TYPED_TEST(GammaTest, InvalidParametersAreRefusedByName) {
  using T = TypeParam;
  const T bad_values[] = {T(0),
                          -T(0),
                          T(-1),
                          std::numeric_limits<T>::quiet_NaN(),
                          std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(),
                          std::numeric_limits<T>::denorm_min(),
                          std::nextafter(std::numeric_limits<T>::min(), T(0))};
  std::vector<T> out(5);
  for (T bad : bad_values) {
    std::vector<T> shape(5, T(2)), scale(5, T(1));
    shape[3] = bad;
    ExpectInvalid<T>(ValidateGammaParams<T>(shape, scale), "shape[3] = ");
    ExpectInvalid<T>(
        SampleGammaCpu<T>(shape, scale, false, 1, 0, absl::MakeSpan(out)),
        "shape[3] = ");
    shape[3] = T(2);
    scale[1] = bad;
    ExpectInvalid<T>(
        SampleGammaCpu<T>(shape, scale, true, 1, 0, absl::MakeSpan(out)),
        "scale[1] = ");
    const GammaGroup<T> groups[] = {{T(1), T(1), 2}, {bad, T(1), 3}};
    ExpectInvalid<T>(
        SampleGammaGroupedCpu<T>(groups, false, 1, 0, absl::MakeSpan(out)),
        "groups[1].shape = ");
    const GammaGroup<T> groups2[] = {{T(1), bad, 5}};
    ExpectInvalid<T>(
        SampleGammaGroupedCpu<T>(groups2, false, 1, 0, absl::MakeSpan(out)),
        "groups[0].scale = ");
  }
  // The message shows the refused value exactly.
  std::vector<T> shape = {T(1), T(-1)}, scale = {T(1), T(1)};
  ExpectInvalid<T>(ValidateGammaParams<T>(shape, scale), "shape[1] = -1:");
}

TYPED_TEST(GammaTest, InvalidSizesAndCountsAreRefused) {
  using T = TypeParam;
  std::vector<T> out(3);
  const std::vector<T> three(3, T(1)), two(2, T(1));
  ExpectInvalid<T>(
      SampleGammaCpu<T>(three, two, false, 1, 0, absl::MakeSpan(out)),
      "same size");
  ExpectInvalid<T>(
      SampleGammaCpu<T>(two, two, false, 1, 0, absl::MakeSpan(out)), "out");
  const GammaGroup<T> negative[] = {{T(1), T(1), 2}, {T(1), T(1), -1}};
  ExpectInvalid<T>(
      SampleGammaGroupedCpu<T>(negative, false, 1, 0, absl::MakeSpan(out)),
      "groups[1].count = -1");
  const GammaGroup<T> short_groups[] = {{T(1), T(1), 2}};
  ExpectInvalid<T>(
      SampleGammaGroupedCpu<T>(short_groups, false, 1, 0, absl::MakeSpan(out)),
      "add up to 2");
  const GammaGroup<T> long_groups[] = {{T(1), T(1), 2}, {T(1), T(1), 2}};
  ExpectInvalid<T>(
      SampleGammaGroupedCpu<T>(long_groups, false, 1, 0, absl::MakeSpan(out)),
      "groups[1].count = 2");
  // Counts whose sum would wrap around 2^64 must not slip through.
  const int64_t big = std::numeric_limits<int64_t>::max();
  const GammaGroup<T> wrap[] = {
      {T(1), T(1), big}, {T(1), T(1), big}, {T(1), T(1), 5}};
  ExpectInvalid<T>(
      SampleGammaGroupedCpu<T>(wrap, false, 1, 0, absl::MakeSpan(out)),
      "groups[0].count");
  // Empty requests are fine.
  EXPECT_TRUE(SampleGammaCpu<T>({}, {}, false, 1, 0, {}).ok());
  EXPECT_TRUE(SampleGammaGroupedCpu<T>({}, false, 1, 0, {}).ok());
  const GammaGroup<T> empty_group[] = {{T(1), T(1), 0}};
  EXPECT_TRUE(SampleGammaGroupedCpu<T>(empty_group, false, 1, 0, {}).ok());
}

}  // namespace
}  // namespace sampler::kernels
