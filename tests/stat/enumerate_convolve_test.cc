// The CPU enumeration's extended-range pair convolution
// (kernels/enumerate_cpu_convolve.cc) where a whole-bit tilt fails: operands
// whose log2 slope is near a half-integer across long windows, where the
// windows' largest tilted products sit hundreds to thousands of bits above
// the tile's outputs (enumerate_tilt.h). With the fractional tilt no output
// falls back to the per-output recomputation (ConvolveExtended's count),
// and every output stays within 1e-12 relative of the exact value.
//
// Cases: geometric operands, x_j = y_j = 2^(-s j) (r_k = count_k 2^(-s k)
// exactly, count_k its pairs), and two binomials Bin(32000, 1/2), whose
// convolution is Bin(64000, 1/2) (variance 16,000: a whole-bit tilt leaves
// gaps of up to 16,000 ln 2 / 8 = 1,390 bits where the slope is near +-1/2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>

#include "kernels/enumerate_cpu_convolve.h"

namespace sampler::kernels::enumerate_internal {
namespace {

using LD = long double;

// Built a second time against the whole-bit tilt alone (the scheme before
// the fractional one; tests/CMakeLists.txt), the same cases must show the
// fallbacks this test exists to catch: proof that it can fail.
#ifdef SAMPLER_ENUMERATE_WHOLE_BIT_TILT
constexpr bool kWholeBitTilt = true;
#else
constexpr bool kWholeBitTilt = false;
#endif

// No fallback with the fractional tilt; with the whole-bit tilt alone, some
// where the slope is a half-integer (`half_integer`), and none where it is
// whole (the other slopes are not pinned in that build).
void ExpectFallbacks(int64_t fallbacks, bool half_integer, bool whole) {
  if (!kWholeBitTilt) {
    EXPECT_EQ(fallbacks, 0);
  } else if (half_integer) {
    EXPECT_GT(fallbacks, 0);
  } else if (whole) {
    EXPECT_EQ(fallbacks, 0);
  }
}

// 2^t in extended form (m in [0.5, 1)), t given in long double.
void FromLog2(LD t, double* m, int64_t* e) {
  const LD whole = std::floor(t);
  *m = static_cast<double>(std::exp2(t - whole) / 2);  // [0.5, 1)
  *e = static_cast<int64_t>(whole) + 1;
}

// |r_k / exact - 1| from the exact log2 of r_k.
double RelativeError(const ExtendedPmf& r, size_t k, LD exact_log2) {
  const LD d = (static_cast<LD>(r.exponent[k]) - exact_log2) +
               std::log2(static_cast<LD>(r.mantissa[k]));
  return static_cast<double>(std::abs(std::expm1(d * std::log(2.0L))));
}

TEST(EnumerateConvolveTest, GeometricNearHalfIntegerSlopes) {
  constexpr int64_t kLength = 3000;
  for (const LD s : {0.5L, -0.5L, 0.5L + 1.0L / 64, 7.5L, 0.25L, 3.0L}) {
    ExtendedPmf x;
    x.mantissa.resize(kLength);
    x.exponent.resize(kLength);
    for (int64_t j = 0; j < kLength; ++j) {
      FromLog2(-s * j, &x.mantissa[j], &x.exponent[j]);
    }
    ExtendedPmf r;
    const int64_t fallbacks = ConvolveExtended(x, x, &r);
    {
      SCOPED_TRACE(testing::Message() << "slope " << static_cast<double>(s)
                                      << ", fallbacks " << fallbacks);
      const LD twice = 2 * s;
      ExpectFallbacks(fallbacks,
                      twice == std::floor(twice) && s != std::floor(s),
                      s == std::floor(s));
    }
    ASSERT_EQ(r.size(), static_cast<size_t>(2 * kLength - 1));
    double worst = 0;
    for (int64_t k = 0; k < 2 * kLength - 1; ++k) {
      const int64_t count = k < kLength ? k + 1 : 2 * kLength - 1 - k;
      worst = std::max(
          worst,
          RelativeError(r, k, std::log2(static_cast<LD>(count)) - s * k));
    }
    EXPECT_LE(worst, 1e-12) << "slope " << static_cast<double>(s);
  }
}

// log2 of Bin(n, 1/2) at k.
LD BinomialLog2(int64_t n, int64_t k) {
  const LD ln = std::lgamma(static_cast<LD>(n + 1)) -
                std::lgamma(static_cast<LD>(k + 1)) -
                std::lgamma(static_cast<LD>(n - k + 1));
  return ln / std::log(2.0L) - static_cast<LD>(n);
}

TEST(EnumerateConvolveTest, WideBinomialsNeedNoFallback) {
  constexpr int64_t kHalf = 32000;
  ExtendedPmf x;
  x.mantissa.resize(kHalf + 1);
  x.exponent.resize(kHalf + 1);
  for (int64_t j = 0; j <= kHalf; ++j) {
    FromLog2(BinomialLog2(kHalf, j), &x.mantissa[j], &x.exponent[j]);
  }
  ExtendedPmf r;
  const int64_t fallbacks = ConvolveExtended(x, x, &r);
  std::cout << "fallbacks: " << fallbacks << "\n";
  // The slope crosses +-1/2 in the windows: a half-integer case.
  ExpectFallbacks(fallbacks, /*half_integer=*/true, /*whole=*/false);
  ASSERT_EQ(r.size(), static_cast<size_t>(2 * kHalf + 1));
  // The reference's error: lgamma's in long double at arguments near 3e4,
  // some ulps of logs of 3e5, about 1e-13 (1.1e-13 measured); the
  // convolution's own, (136 + J / 4096) roundings, 1.6e-14.
  double worst = 0;
  for (int64_t k = 0; k <= 2 * kHalf; ++k) {
    worst = std::max(worst, RelativeError(r, k, BinomialLog2(2 * kHalf, k)));
  }
  EXPECT_LE(worst, 1e-12);
  std::cout << "worst relative error: " << worst << "\n";
}

}  // namespace
}  // namespace sampler::kernels::enumerate_internal
