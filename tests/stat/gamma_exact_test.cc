// Gamma exact at every shape (issue 10 item 2).
//
// 1. The acceptance arithmetic itself (GammaTryZ), against the exact
//    Marsaglia-Tsang condition evaluated in quadruple precision (__float128,
//    113-bit mantissa) on a grid of (z, u) placed around the boundary, at
//    shapes 1e-6 to 1e10 in both precisions. This is what the 10^7-sample
//    runs would see, without the samples: the accepted region must equal the
//    exact one except within a few roundings of the boundary.
// 2. Sample variance and KS at large shapes, sized for CI (the statement of
//    what each detects is in the test and in tests/stat/gamma_exactness.h).
#include <gtest/gtest.h>
#include <quadmath.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/gamma_core.h"
#include "tests/stat/gamma_exactness.h"

namespace sampler::kernels {
namespace {

using Quad = __float128;

template <typename T>
class GammaExactTest : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GammaExactTest, Precisions);

// The exact test for the sampler's own d, c and z (real numbers, no
// rounding): h = z^2/2 + d - d v + d log v with v = (1 + c z)^3, written as
// z^2/2 + d (log1p(t) - t), t = v - 1 = w (3 + 3w + w^2), w = c z. In quad
// precision w is exact (two 53-bit factors), and log1p(t) - t loses at most
// log2(1/t) < 60 of its 113 bits, so h is known to far better than the
// sampler's precision. Returns false (reject) when 1 + c z <= 0.
template <typename T>
bool ExactH(const GammaShape<T>& g, T z, Quad* h) {
  const Quad w = static_cast<Quad>(g.c) * static_cast<Quad>(z);
  if (w <= -1) return false;
  const Quad t = w * (3 + w * (3 + w));
  const Quad zq = static_cast<Quad>(z);
  *h = zq * zq / 2 + static_cast<Quad>(g.d) * (log1pq(t) - t);
  return true;
}

struct GridStats {
  long checked = 0;       // (z, u) pairs decided by the log test
  long mismatches = 0;    // decisions differing from the exact one
  double worst = 0;       // largest |log u - h| / scale among mismatches
  long bad_outputs = 0;   // accepted outputs off by more than allowed
  double worst_ulps = 0;  // largest output error in ulps of the exact value
};

// The exact condition is log u < h. The sampler evaluates it in precision T,
// so a decision may differ from the exact one only where |log u - h| is
// within a few roundings of the terms it adds: eps (1 + z^2 + |h| + |log u|)
// (z^2/2 and d (log1p(t) - t) are each about z^2/2 and cancel to h; log u
// and h are rounded once each). Anything farther is a wrong acceptance
// region. The old form ((z^2/2 + d) - d v) + d log v rounded z^2/2 + d to a
// multiple of ulp(d), i.e. to 0.06 at d = 1e6 in float: thousands of times
// this tolerance.
constexpr double kTolUlps = 16;

template <typename T>
void CheckPoint(const GammaShape<T>& g, T z, T u, bool max_ulp_check,
                GridStats* st) {
  const double eps = std::numeric_limits<T>::epsilon();
  T dv = T(-1);
  const bool got = GammaTryZ(g, z, u, &dv);
  Quad h = 0;
  const bool positive = ExactH(g, z, &h);
  const T z2 = z * z;
  const bool squeeze = u < T(1) - T(0.0331) * (z2 * z2);
  const Quad lq = logq(static_cast<Quad>(u));
  if (!positive) {
    EXPECT_FALSE(got) << "accepted 1 + c z <= 0 at z = " << z;
    return;
  }
  const bool want = squeeze || lq < h;
  const double scale = eps * (1 + static_cast<double>(z) * z +
                              std::fabs(static_cast<double>(h)) +
                              std::fabs(static_cast<double>(lq)));
  if (!squeeze) {
    ++st->checked;
    if (got != want) {
      ++st->mismatches;
      const double gap = std::fabs(static_cast<double>(lq - h)) / scale;
      if (gap > st->worst) st->worst = gap;
    }
  } else {
    // The squeeze must lie inside the exact region (Marsaglia-Tsang's
    // bound), up to the same roundings.
    EXPECT_LT(static_cast<double>(lq - h), kTolUlps * scale)
        << "squeeze outside the exact region at d = " << g.d << ", z = " << z;
    EXPECT_TRUE(got);
  }
  if (got) {
    // The output d v against its exact value: within one ulp when the
    // shape is large (v = 1 + t with t carried separately, so the grid of
    // outputs is the output format's own); a few ulps elsewhere.
    const Quad w = static_cast<Quad>(g.c) * static_cast<Quad>(z);
    const Quad exact = static_cast<Quad>(g.d) * (1 + w) * (1 + w) * (1 + w);
    const T exact_t = static_cast<T>(exact);
    const T ulp =
        std::nextafter(exact_t, std::numeric_limits<T>::infinity()) - exact_t;
    const double ulps = std::fabs(static_cast<double>(
        (static_cast<Quad>(dv) - exact) / static_cast<Quad>(ulp)));
    if (ulps > st->worst_ulps) st->worst_ulps = ulps;
    if (ulps > (max_ulp_check ? 1.0 : 8.0)) ++st->bad_outputs;
  }
}

// A grid of z over the whole reachable range (|z| <= sqrt(-2 log u_min):
// 5.77 in float, 8.58 in double) and, for each z, uniforms just inside and
// outside the exact boundary at relative distances 10^-1 .. 10^-12 of the
// tolerance scale and beyond, plus a deterministic scatter of uniforms.
template <typename T>
GridStats CheckShape(double shape) {
  const GammaShape<T> g = GammaPrepare(static_cast<T>(shape));
  const double zmax = std::is_same_v<T, float> ? 5.76 : 8.57;
  const int kZ = 1201;
  GridStats st;
  uint64_t lcg = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < kZ; ++i) {
    // An irrational step so that z is not a round number.
    const T z = static_cast<T>(-zmax + (2 * zmax) * (i + 0.31830988) / kZ);
    Quad h = 0;
    if (!ExactH(g, z, &h)) {
      CheckPoint<T>(g, z, T(0.5), false, &st);
      continue;
    }
    // Absolute distances, and distances in units of the tolerance scale
    // (those within kTolUlps may be decided either way).
    const double unit =
        std::numeric_limits<T>::epsilon() * (1 + static_cast<double>(z) * z);
    for (double off :
         {3e-1,     1e-1,      1e-2,       1e-3,        1e-4,
          1e-5,     1e-6,      1e-7,       1e-8,        1e-9,
          1e-10,    1e-11,     1e-12,      0.5 * unit,  2 * unit,
          8 * unit, 32 * unit, 128 * unit, 1024 * unit, 65536 * unit}) {
      for (int sign : {-1, 1}) {
        const Quad target = h + sign * off;
        if (target >= 0) continue;
        const T u = static_cast<T>(expq(target));
        if (!(u > T(0))) continue;
        CheckPoint<T>(g, z, u, shape >= 1e5, &st);
      }
    }
    for (int k = 0; k < 16; ++k) {
      lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
      const T u = std::is_same_v<T, float>
                      ? static_cast<T>((lcg >> 40) + 1) * T(0x1.0p-24)
                      : static_cast<T>((lcg >> 11) + 1) * T(0x1.0p-53);
      CheckPoint<T>(g, z, u, shape >= 1e5, &st);
    }
  }
  return st;
}

TYPED_TEST(GammaExactTest, AcceptanceRegionIsTheExactOne) {
  using T = TypeParam;
  for (double shape : {1e-6, 0.3, 1.0, 2.5, 30.0, 1e3, 3e5, 1e6, 1e8, 1e10}) {
    const GridStats st = CheckShape<T>(shape);
    std::printf(
        "%-6s shape %-6g: %ld log-test points, %ld mismatches (worst %.2f "
        "eps units), output worst %.2f ulp\n",
        std::is_same_v<T, float> ? "float" : "double", shape, st.checked,
        st.mismatches, st.worst, st.worst_ulps);
    EXPECT_GT(st.checked, 10000) << shape;
    EXPECT_LE(st.worst, kTolUlps)
        << "shape " << shape << ": " << st.mismatches
        << " decisions differ from the exact test, the worst " << st.worst
        << " eps units from the boundary";
    EXPECT_EQ(st.bad_outputs, 0)
        << "shape " << shape << ": outputs off by up to " << st.worst_ulps
        << " ulp";
  }
}

// ------------------------------------------------ samples, sized for CI ----

template <typename T>
std::vector<T> SampleUnit(T shape, uint64_t seed, size_t n) {
  std::vector<T> out(n);
  const GammaGroup<T> group[] = {{shape, T(1), static_cast<int64_t>(n)}};
  const absl::Status s =
      SampleGammaGroupedCpu<T>(group, false, seed, 0, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// |z| < 5 for mean and variance (false alarm 6e-7 each), KS p > 1e-4.
template <typename T>
void LargeShapeCheck(double shape, size_t n, uint64_t seed, bool ks) {
  const T k = static_cast<T>(shape);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<T> out = SampleUnit<T>(k, seed, n);
  const auto t1 = std::chrono::steady_clock::now();
  const sampler::testing::GammaExactnessResult r =
      sampler::testing::GammaExactness(out, static_cast<double>(k), ks);
  const auto t2 = std::chrono::steady_clock::now();
  char ks_text[64] = "no KS";
  if (ks) {
    std::snprintf(ks_text, sizeof ks_text, "KS D %.2e p %.3f", r.ks.statistic,
                  r.ks.p_value);
  }
  std::printf(
      "%-6s shape %-6g n %zu: var/k - 1 = %+.5f z(mean) %+.2f z(var) %+.2f "
      "%s (sampling %.1f s, statistics %.1f s)\n",
      std::is_same_v<T, float> ? "float" : "double", shape, n,
      r.variance / static_cast<double>(k) - 1, r.z_mean, r.z_var, ks_text,
      std::chrono::duration<double>(t1 - t0).count(),
      std::chrono::duration<double>(t2 - t1).count());
  std::fflush(stdout);
  EXPECT_LT(std::fabs(r.z_mean), 5) << shape;
  EXPECT_LT(std::fabs(r.z_var), 5) << shape << " variance " << r.variance;
  if (ks) {
    EXPECT_GT(r.ks.p_value, 1e-4) << shape;
  }
}

// The variance biases of the old acceptance test (issue 10): -0.44% at
// shape 1e6 and -17% at 1e8 in float. z(var) is about b sqrt(n/2), so
// 6e6 samples put -0.44% at z = -7.6 (detected by |z| < 5 with probability
// 99.5%; 3e6 samples gave z = -5.46 on the old code, too close to the
// mark); 2e5 samples put -17% at z = -54 (and detect a 1.6% bias with 99%
// probability). KS against the rounded exact CDF (tabulated, see
// gamma_exactness.h) at every shape: at 2e5 samples, with p > 1e-4 as the
// pass mark, it detects a CDF error of 7.6e-3 with 99% probability.
TYPED_TEST(GammaExactTest, VarianceAndKsAtLargeShapes) {
  using T = TypeParam;
  const uint64_t seed = std::is_same_v<T, float> ? 9001 : 9002;
  const size_t ks_n = 200000;
  LargeShapeCheck<T>(1e6, 6000000, seed, /*ks=*/false);
  LargeShapeCheck<T>(1e6, ks_n, seed + 3, /*ks=*/true);
  LargeShapeCheck<T>(1e8, ks_n, seed + 1, /*ks=*/true);
  LargeShapeCheck<T>(1e10, ks_n, seed + 2, /*ks=*/true);
}

}  // namespace
}  // namespace sampler::kernels
