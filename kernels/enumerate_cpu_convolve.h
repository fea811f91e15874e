// Private to the CPU enumeration (enumerate_cpu.cc): PMFs in extended-range
// linear form and their pairwise convolution, the inner work of the tree.
//
// A value is m * 2^e with m in [0.5, 1) (or m = 0 with e = kZeroExponent for
// a zero probability) and e an int64: linear arithmetic, so products and
// sums round like plain doubles (a relative error of a few ulps), with an
// exponent range no probability of a validated problem leaves (1e-300 and
// far below included), so nothing overflows or underflows on the way.
//
// The convolution r_k = sum_j a_j b_{k-j} runs in tiles of consecutive
// outputs. For a tile, both operands' windows are tilted by 2^(-sigma i)
// (the convolution commutes with exponential tilting: r_k 2^(-sigma k) is
// the convolution of the tilted operands) and scaled by powers of two so
// that their largest value is below 1, then converted to plain doubles; the
// tile is a plain multiply-add loop in double (vectorised, blocked sums,
// fixed order). sigma is the secant slope of the tile's largest-pair
// exponents rounded to 1/32 bit per index, which puts the tilted operands'
// peaks near the pairs that dominate the tile's outputs; its whole part is
// exact (an exponent), its fraction a table multiply (enumerate_tilt.h: four
// roundings per product, two for the un-tilt of the output). An output whose
// scaled sum is at least 2^-900 is within a few ulps of the exact sum (the
// pairs that underflowed on the way weigh less than 2^-140 of it); any other
// output (an exact zero, or a sum far below the tile's scale) is recomputed
// on its own, scaled by its own largest pair. Either way every output carries
// a relative error of at most (136 + J / 4096) double roundings, J its
// number of pairs, whatever its magnitude.
#ifndef SAMPLER_KERNELS_ENUMERATE_CPU_CONVOLVE_H_
#define SAMPLER_KERNELS_ENUMERATE_CPU_CONVOLVE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sampler::kernels::enumerate_internal {

// The exponent of a zero: far below any real one (|e| < 2^58 for validated
// problems, see ExtendedPmf), with room to add two without overflow.
inline constexpr int64_t kZeroExponent = -(int64_t{1} << 61);

// A PMF in extended-range form: value i is mantissa[i] * 2^exponent[i].
struct ExtendedPmf {
  std::vector<double> mantissa;
  std::vector<int64_t> exponent;
  size_t size() const { return mantissa.size(); }
};

// Conversions of one value. FromLinear is exact. FromLog(v) is exp(v) to
// within a few ulps for |v| < 1.4e6 (Cody-Waite reduction by ln 2 in two
// parts, exact below that); beyond, the reduction adds an error of the order
// of v's own ulp. Both need |v| <= kMaxExtendedLog (ExtendedPmf's exponent
// bound); a linear 0 and a log -inf give the zero.
inline constexpr double kMaxExtendedLog = 4294967296.0;  // 2^32
void FromLinear(double v, double* m, int64_t* e);
void FromLog(double v, double* m, int64_t* e);
// m * 2^e as a double (overflowing to inf, underflowing to a subnormal or 0
// with one rounding), and as its natural logarithm (-inf for zero).
double ToLinear(double m, int64_t e);
double ToLog(double m, int64_t e);

// r = a (*) b. Deterministic: the result depends only on a and b. Returns
// the number of outputs recomputed on their own because the tile's scale
// could not hold them (a diagnostic: zero for a Poisson binomial of 10^5
// terms and far beyond since the tilt is fractional, enumerate_tilt.h).
int64_t ConvolveExtended(const ExtendedPmf& a, const ExtendedPmf& b,
                         ExtendedPmf* r);

// r = a (*) b for log-probabilities in double, for problems with log values
// beyond kMaxExtendedLog: out_k = m_k + log1p(sum_{j != j*} exp(a_j +
// b_{k-j} - m_k)), m_k = a_{j*} + b_{k-j*} the largest pair (first in j on
// ties), the exp-sum compensated; exactly -inf where every pair is -inf.
// Each call costs an absolute error of a few ulps of the log values' magnitude.
// False (r undefined) if an element overflows to +inf.
bool ConvolveLog(const std::vector<double>& a, const std::vector<double>& b,
                 std::vector<double>* r);

}  // namespace sampler::kernels::enumerate_internal

#endif  // SAMPLER_KERNELS_ENUMERATE_CPU_CONVOLVE_H_
