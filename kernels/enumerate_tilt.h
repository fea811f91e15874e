// Private to the extended-range pair convolutions (the CPU's
// enumerate_cpu_convolve.cc and the GPU's ExtendedKernel in enumerate.cu):
// the fractional exponential tilt of a tile.
//
// A tile's operands are tilted by 2^(-sigma i), sigma = a / 2^kTiltBits bits
// per index (a an int64), so that the tilted products of its outputs sit
// near the tile's scale. An integer sigma is exact but misses the true slope
// by up to half a bit per index, and where the slope is near a half-integer
// the windows' largest products sit about V ln 2 / 8 bits above the tile's
// outputs (V the result's variance: some 1,440 bits at the top of a 10^5-term
// Poisson binomial), past what a plain double sum resolves; a fraction of
// 2^-kTiltBits cuts that by 4^kTiltBits (1.4 bits there). The tilt of index
// i, a i / 2^kTiltBits, splits into a whole part (floor, into the exponent,
// exactly) and a fraction c / 2^kTiltBits, c in [0, 2^kTiltBits), applied as
// a multiply by kTiltFactor[c] = 2^(-c / 2^kTiltBits) rounded to double. For
// output k the fractions of each pair's two indices add to a k / 2^kTiltBits
// exactly (a j + a (k - j) = a k), so every product of output k carries the
// same factor up to the two table entries' roundings and the two multiplies':
// four roundings, and the un-tilt of the output one table rounding and one
// multiply more (2^(c / 2^kTiltBits) is 2 kTiltFactor[2^kTiltBits - c]
// exactly, c > 0). Tiles whose whole tilt leaves no wide gap keep it
// (NeedsFractionalTilt), so their bits are those of an exact tilt.
#ifndef SAMPLER_KERNELS_ENUMERATE_TILT_H_
#define SAMPLER_KERNELS_ENUMERATE_TILT_H_

#include <cstdint>
#include <limits>

namespace sampler::kernels::enumerate_internal {

// Fraction bits of the tilt. 2^5 = 32 factors: one per lane of a warp, so
// the GPU reads them by shuffle.
inline constexpr int kTiltBits = 5;
inline constexpr int kTiltSteps = 1 << kTiltBits;

// 2^(-c / 32) for c = 0 .. 31, each rounded to the nearest double (from a
// 60-digit evaluation). A macro so that the GPU's __constant__ copy and the
// CPU's array are the same literals.
#define SAMPLER_ENUMERATE_TILT_FACTORS                                    \
  {                                                                       \
    0x1.0000000000000p+0, 0x1.f50765b6e4540p-1, 0x1.ea4afa2a490dap-1,     \
        0x1.dfc97337b9b5fp-1, 0x1.d5818dcfba487p-1, 0x1.cb720dcef9069p-1, \
        0x1.c199bdd85529cp-1, 0x1.b7f76f2fb5e47p-1, 0x1.ae89f995ad3adp-1, \
        0x1.a5503b23e255dp-1, 0x1.9c49182a3f090p-1, 0x1.93737b0cdc5e5p-1, \
        0x1.8ace5422aa0dbp-1, 0x1.82589994cce13p-1, 0x1.7a11473eb0187p-1, \
        0x1.71f75e8ec5f74p-1, 0x1.6a09e667f3bcdp-1, 0x1.6247eb03a5585p-1, \
        0x1.5ab07dd485429p-1, 0x1.5342b569d4f82p-1, 0x1.4bfdad5362a27p-1, \
        0x1.44e086061892dp-1, 0x1.3dea64c123422p-1, 0x1.371a7373aa9cbp-1, \
        0x1.306fe0a31b715p-1, 0x1.29e9df51fdee1p-1, 0x1.2387a6e756238p-1, \
        0x1.1d4873168b9aap-1, 0x1.172b83c7d517bp-1, 0x1.11301d0125b51p-1, \
        0x1.0b5586cf9890fp-1, 0x1.059b0d3158574p-1                        \
  }
inline constexpr double kTiltFactor[kTiltSteps] =
    SAMPLER_ENUMERATE_TILT_FACTORS;

// The largest tilt, in whole bits per index: a i stays within 2^59 for
// results of up to kMaxEnumerateSupport (2^24) values, and the tilted
// exponents far from the zero's (kZeroExponent, -2^61).
inline constexpr int64_t kMaxTilt = int64_t{1} << 30;

// The tilt's numerator a (sigma = a / 2^kTiltBits) for a tile of kt > 1
// outputs whose first and last outputs' largest pair exponents are `first`
// and `last`: their secant slope rounded to a whole number of bits
// (WholeTiltNumerator: an exact tilt, the products' bits those of the
// untilted values) or to the nearest 2^-kTiltBits (FractionalTiltNumerator),
// half away from zero, clamped to +-kMaxTilt whole bits. constexpr, so that
// the device code calls them too (--expt-relaxed-constexpr).
constexpr int64_t RoundedQuotient(int64_t num, int64_t den) {
  return num >= 0 ? (num + den / 2) / den : -((-num + den / 2) / den);
}
constexpr int64_t WholeTiltNumerator(int64_t first, int64_t last, int64_t kt) {
  const int64_t sigma = RoundedQuotient(last - first, kt - 1);
  return (sigma < -kMaxTilt  ? -kMaxTilt
          : sigma > kMaxTilt ? kMaxTilt
                             : sigma) *
         kTiltSteps;
}
constexpr int64_t FractionalTiltNumerator(int64_t first, int64_t last,
                                          int64_t kt) {
  constexpr int64_t kMax = kMaxTilt * kTiltSteps;
  const int64_t diff = last - first;
  const int64_t den = kt - 1;
  // Beyond the clamp before scaling: no overflow for any exponents.
  if (diff / den >= kMaxTilt) return kMax;
  if (diff / den <= -kMaxTilt) return -kMax;
  const int64_t a = RoundedQuotient(diff * kTiltSteps, den);
  return a < -kMax ? -kMax : a > kMax ? kMax : a;
}

// a i split into its whole part, floor(a i / 2^kTiltBits) (an arithmetic
// shift: floor for negatives too, on GCC, Clang and nvcc), and the index c of
// its fraction, a i mod 2^kTiltBits in [0, kTiltSteps).
constexpr int64_t TiltWhole(int64_t ai) { return ai >> kTiltBits; }
constexpr int TiltFraction(int64_t ai) {
  return static_cast<int>(ai & (kTiltSteps - 1));
}

// The whole tilt is exact, so a tile takes it unless it leaves the windows'
// largest tilted exponents (ex + ey) more than kTiltGapLimit bits above the
// largest tilted pair of the tile's first or last output (the gap is convex
// across the tile where the log-PMF is concave, so the ends bound it): then
// the tile's outputs would sit near or past the 2^-900 that a tile's plain
// double sum resolves, and it takes the fractional tilt instead.
#ifndef SAMPLER_ENUMERATE_WHOLE_BIT_TILT
inline constexpr int64_t kTiltGapLimit = 512;
#else
// Test-only (tests/CMakeLists.txt, enumerate_convolve_whole_tilt_test): the
// whole-bit tilt alone, as before the fraction, to show what it costs.
inline constexpr int64_t kTiltGapLimit = std::numeric_limits<int64_t>::max();
#endif
constexpr bool NeedsFractionalTilt(int64_t ex, int64_t ey, int64_t first,
                                   int64_t last, int64_t k0, int64_t kt,
                                   int64_t a) {
  const int64_t gap_first = ex + ey - (first - TiltWhole(a * k0));
  const int64_t gap_last = ex + ey - (last - TiltWhole(a * (k0 + kt - 1)));
  return gap_first > kTiltGapLimit || gap_last > kTiltGapLimit;
}

}  // namespace sampler::kernels::enumerate_internal

#endif  // SAMPLER_KERNELS_ENUMERATE_TILT_H_
