// QuantizeByMultiply (floor(w 2^s) by two floating-point multiplications
// and a round-toward-zero conversion, used by the lanes kernel) against
// QuantizeWeight (the contract's bit path) for every exponent of float and
// double, subnormals and both zeros, several significands each (the
// smallest, the largest, random ones), and every scale a row can have:
// float rows have s in [60 - 159, 60 + 149] (K < 2^31 weights below 2^128,
// S_d at least the smallest subnormal), double rows s in [60 - 1024,
// 60 + 1074] (S_d up to +inf, at least 2^-1074); only the pairs with
// w 2^s < 2^62 occur (RowScale), so only those are compared. The host's
// conversion is compiled from the same source as the device's (its
// __float2ull_rz), so this checks the argument of categorical_core.h; the
// GPU tests check the device bit for bit through the kernels.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/detmath.h"

namespace sampler::kernels::categorical {
namespace {

// floor(log2 |w|) for w != 0, from its exponent and significand.
template <typename T>
int FloorLog2Of(T w) {
  return FloorLog2(static_cast<double>(w < 0 ? -w : w));
}

template <typename T, typename Bits>
void CheckAll(int fraction_bits, int max_biased, int min_scale, int max_scale,
              Bits make) {
  std::mt19937_64 engine(20261126);
  const uint64_t fraction_mask = (uint64_t{1} << fraction_bits) - 1;
  int64_t compared = 0;
  for (int biased = 0; biased <= max_biased; ++biased) {
    std::vector<uint64_t> fractions = {0,
                                       1,
                                       2,
                                       3,
                                       fraction_mask,
                                       fraction_mask - 1,
                                       uint64_t{1} << (fraction_bits - 1)};
    for (int i = 0; i < 4; ++i) fractions.push_back(engine() & fraction_mask);
    for (uint64_t fraction : fractions) {
      for (uint64_t sign : {uint64_t{0}, uint64_t{1}}) {
        const T w = make(sign, static_cast<uint64_t>(biased), fraction);
        for (int scale = min_scale; scale <= max_scale; ++scale) {
          // Only -0.0 may carry the sign (weights are >= 0).
          if (sign != 0 && w != T(0)) continue;
          if (w != T(0) && FloorLog2Of(w) + scale >= 62) continue;
          const uint64_t want = QuantizeWeight(w, scale);
          const uint64_t got = QuantizeByMultiply(w, ScaleFactorsFor<T>(scale));
          ASSERT_EQ(got, want)
              << "w = " << w << " (biased exponent " << biased << ", fraction "
              << fraction << ", sign " << sign << "), scale " << scale;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 0);
}

TEST(QuantizeByMultiplyTest, EqualsTheBitPathForEveryFloatExponent) {
  CheckAll<float>(23, 254, 60 - 159, 60 + 149,
                  [](uint64_t sign, uint64_t biased, uint64_t fraction) {
                    return detmath::FloatFromBits(static_cast<uint32_t>(
                        (sign << 31) | (biased << 23) | fraction));
                  });
}

TEST(QuantizeByMultiplyTest, EqualsTheBitPathForEveryDoubleExponent) {
  CheckAll<double>(52, 2046, 60 - 1024, 60 + 1074,
                   [](uint64_t sign, uint64_t biased, uint64_t fraction) {
                     return detmath::DoubleFromBits((sign << 63) |
                                                    (biased << 52) | fraction);
                   });
}

// The rows at the ends of the range: K = 2^31 - 1 weights of the largest
// float (the smallest scale), one smallest subnormal (the largest), and a
// total at the limit 2^61 (S_d just below a power of two).
TEST(QuantizeByMultiplyTest, EqualsTheBitPathAtTheLimits) {
  const float largest = detmath::FloatFromBits(0x7f7fffffu);
  const double k = 2147483647.0;
  const int low = RowScale(k * static_cast<double>(largest));
  EXPECT_EQ(QuantizeByMultiply(largest, ScaleFactorsFor<float>(low)),
            QuantizeWeight(largest, low));
  const float smallest = detmath::FloatFromBits(1u);
  const int high = RowScale(static_cast<double>(smallest));
  EXPECT_EQ(high, 60 + 149);
  EXPECT_EQ(QuantizeByMultiply(smallest, ScaleFactorsFor<float>(high)),
            uint64_t{1} << 60);
  const double subnormal = detmath::DoubleFromBits(1u);
  const int highest = RowScale(subnormal);
  EXPECT_EQ(highest, 60 + 1074);
  EXPECT_EQ(QuantizeByMultiply(subnormal, ScaleFactorsFor<double>(highest)),
            uint64_t{1} << 60);
  const double below_two = detmath::DoubleFromBits(0x3fffffffffffffffu);
  const int at_limit = RowScale(below_two);
  EXPECT_EQ(QuantizeByMultiply(below_two, ScaleFactorsFor<double>(at_limit)),
            QuantizeWeight(below_two, at_limit));
  EXPECT_EQ(QuantizeByMultiply(-0.0f, ScaleFactorsFor<float>(100)), 0u);
  EXPECT_EQ(QuantizeByMultiply(-0.0, ScaleFactorsFor<double>(1000)), 0u);
}

}  // namespace
}  // namespace sampler::kernels::categorical
