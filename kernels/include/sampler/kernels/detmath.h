// Deterministic elementary functions: exp, log and cos(2*pi*u), for float
// and double, built only from IEEE-754 operations that are correctly rounded
// on both the host and an NVIDIA GPU (+, -, *, /, sqrt, fma, exact bit
// manipulation). The C library's and CUDA's own versions differ in the last
// bit, which would make the CPU and GPU backends draw different variates
// from the same Philox words; these give the same bits on both.
//
// Requirements on the build, enforced in CMakeLists.txt: host code with
// -ffp-contract=off and SSE arithmetic (x86-64 default), device code with
// -fmad=false and without --use_fast_math (no flush to zero). Every fused
// multiply-add below is written out as an fma call.
//
// Accuracy (measured in tests/unit/detmath_test.cc against long double and
// Boost references): exp within 1 ulp; log within 2 ulp (float) and 2.1 ulp
// (double); cos2pi within 2 ulp of the exact cos(2 pi u); special values
// exact.
#ifndef SAMPLER_KERNELS_DETMATH_H_
#define SAMPLER_KERNELS_DETMATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "sampler/kernels/common.h"

namespace sampler::kernels::detmath {

SAMPLER_HD float Fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
SAMPLER_HD double Fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

SAMPLER_HD uint32_t Bits(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}
SAMPLER_HD uint64_t Bits(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}
SAMPLER_HD float FloatFromBits(uint32_t b) {
  float x;
  memcpy(&x, &b, sizeof x);
  return x;
}
SAMPLER_HD double DoubleFromBits(uint64_t b) {
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}

// 2^k for k in the normal exponent range.
SAMPLER_HD float Pow2(int k) {
  return FloatFromBits(static_cast<uint32_t>(k + 127) << 23);
}
SAMPLER_HD double Pow2D(int k) {
  return DoubleFromBits(static_cast<uint64_t>(k + 1023) << 52);
}

// Round to the nearest integer (ties to even) by the magic-number trick:
// exact and identical everywhere for |t| < 2^22 (float) or 2^51 (double).
SAMPLER_HD float RoundNearest(float t) {
  const float magic = 12582912.0f;  // 1.5 * 2^23
  return (t + magic) - magic;
}
SAMPLER_HD double RoundNearest(double t) {
  const double magic = 6755399441055744.0;  // 1.5 * 2^52
  return (t + magic) - magic;
}

// ---------------------------------------------------------------- exp ----

SAMPLER_HD float Exp(float x) {
  if (x != x) return x;
  if (x > 88.72284f) return FloatFromBits(0x7f800000u);
  if (x < -103.97208f) return 0.0f;
  const float k = RoundNearest(x * 1.44269504f);
  // Cody-Waite reduction: r = x - k*ln2 in two fma steps.
  float r = Fma(-k, 0.693145752f, x);  // ln2 high part (trailing zeros)
  r = Fma(-k, 1.42860677e-06f, r);     // ln2 - high part
  // exp(r) for |r| <= 0.3466 by its Taylor polynomial of degree 7
  // (truncation below 5e-9, under half an ulp).
  float p = 1.98412698e-04f;  // 1/7!
  p = Fma(p, r, 1.38888889e-03f);
  p = Fma(p, r, 8.33333333e-03f);
  p = Fma(p, r, 4.16666667e-02f);
  p = Fma(p, r, 1.66666667e-01f);
  p = Fma(p, r, 0.5f);
  p = Fma(p, r, 1.0f);
  p = Fma(p, r, 1.0f);
  const int ki = static_cast<int>(k);
  if (ki < -125) {  // result is subnormal or close: scale in two steps
    return p * Pow2(ki + 64) * Pow2(-64);
  }
  if (ki > 127) return p * Pow2(ki - 1) * 2.0f;
  return p * Pow2(ki);
}

SAMPLER_HD double Exp(double x) {
  if (x != x) return x;
  if (x > 709.782712893384) return DoubleFromBits(0x7ff0000000000000ull);
  if (x < -745.1332191019412) return 0.0;
  const double k = RoundNearest(x * 1.4426950408889634);
  double r = Fma(-k, 6.93147180369123816490e-01, x);  // ln2 high part
  r = Fma(-k, 1.90821492927058770002e-10, r);         // ln2 - high part
  // Taylor polynomial of degree 13 for |r| <= 0.3466 (truncation < 4e-18).
  double p = 1.0 / 6227020800.0;  // 1/13!
  p = Fma(p, r, 1.0 / 479001600.0);
  p = Fma(p, r, 1.0 / 39916800.0);
  p = Fma(p, r, 1.0 / 3628800.0);
  p = Fma(p, r, 1.0 / 362880.0);
  p = Fma(p, r, 1.0 / 40320.0);
  p = Fma(p, r, 1.0 / 5040.0);
  p = Fma(p, r, 1.0 / 720.0);
  p = Fma(p, r, 1.0 / 120.0);
  p = Fma(p, r, 1.0 / 24.0);
  p = Fma(p, r, 1.0 / 6.0);
  p = Fma(p, r, 0.5);
  p = Fma(p, r, 1.0);
  p = Fma(p, r, 1.0);
  const int ki = static_cast<int>(k);
  if (ki < -1021) return p * Pow2D(ki + 512) * Pow2D(-512);
  if (ki > 1023) return p * Pow2D(ki - 1) * 2.0;
  return p * Pow2D(ki);
}

// ---------------------------------------------------------------- log ----

// Natural logarithm. log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
SAMPLER_HD float Log(float x) {
  if (!(x > 0.0f)) {
    return x == 0.0f ? -FloatFromBits(0x7f800000u) : FloatFromBits(0x7fc00000u);
  }
  if (x == FloatFromBits(0x7f800000u)) return x;
  int e = 0;
  if (x < 1.17549435e-38f) {  // subnormal: make it normal first
    x *= 8388608.0f;          // 2^23
    e = -23;
  }
  uint32_t b = Bits(x);
  e += static_cast<int>(b >> 23) - 127;
  // Mantissa m in [sqrt(1/2), sqrt(2)).
  b = (b & 0x007fffffu) | 0x3f800000u;
  float m = FloatFromBits(b);
  if (m > 1.41421356f) {
    m *= 0.5f;
    e += 1;
  }
  // log(m) = 2 atanh(f), f = (m - 1) / (m + 1), |f| <= 0.1716.
  const float f = (m - 1.0f) / (m + 1.0f);
  const float s = f * f;
  float p = 1.0f / 9.0f;
  p = Fma(p, s, 1.0f / 7.0f);
  p = Fma(p, s, 1.0f / 5.0f);
  p = Fma(p, s, 1.0f / 3.0f);
  const float two_f = 2.0f * f;
  const float log_m = Fma(two_f * s, p, two_f);
  const float ef = static_cast<float>(e);
  return Fma(ef, 0.693145752f, Fma(ef, 1.42860677e-06f, log_m));
}

SAMPLER_HD double Log(double x) {
  if (!(x > 0.0)) {
    return x == 0.0 ? -DoubleFromBits(0x7ff0000000000000ull)
                    : DoubleFromBits(0x7ff8000000000000ull);
  }
  if (x == DoubleFromBits(0x7ff0000000000000ull)) return x;
  int e = 0;
  if (x < 2.2250738585072014e-308) {
    x *= 4503599627370496.0;  // 2^52
    e = -52;
  }
  uint64_t b = Bits(x);
  e += static_cast<int>(b >> 52) - 1023;
  b = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  double m = DoubleFromBits(b);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e += 1;
  }
  const double f = (m - 1.0) / (m + 1.0);
  const double s = f * f;
  // Series of atanh up to f^23 (s^11 / 23 < 1e-18 for s <= 0.0295).
  double p = 1.0 / 23.0;
  p = Fma(p, s, 1.0 / 21.0);
  p = Fma(p, s, 1.0 / 19.0);
  p = Fma(p, s, 1.0 / 17.0);
  p = Fma(p, s, 1.0 / 15.0);
  p = Fma(p, s, 1.0 / 13.0);
  p = Fma(p, s, 1.0 / 11.0);
  p = Fma(p, s, 1.0 / 9.0);
  p = Fma(p, s, 1.0 / 7.0);
  p = Fma(p, s, 1.0 / 5.0);
  p = Fma(p, s, 1.0 / 3.0);
  const double two_f = 2.0 * f;
  const double log_m = Fma(two_f * s, p, two_f);
  const double ed = static_cast<double>(e);
  return Fma(ed, 6.93147180369123816490e-01,
             Fma(ed, 1.90821492927058770002e-10, log_m));
}

// ------------------------------------------------------------- cos 2 pi u ----

// cos(2 pi u) for u in [0, 1), the angle of a Box-Muller pair. The reduction
// is exact: q = round(4u) picks the quadrant and f = 4u - q lies in
// [-1/2, 1/2], so the angle within the quadrant is theta = f * pi/2.
SAMPLER_HD float Cos2Pi(float u) {
  const float t = 4.0f * u;
  const float q = RoundNearest(t);
  const float f = t - q;
  const float th = f * 1.57079637f;
  const float s2 = th * th;
  // Taylor polynomials on |theta| <= pi/4.
  float c = 2.08767570e-09f;  // 1/12!
  c = Fma(c, s2, -2.75573192e-07f);
  c = Fma(c, s2, 2.48015873e-05f);
  c = Fma(c, s2, -1.38888889e-03f);
  c = Fma(c, s2, 4.16666667e-02f);
  c = Fma(c, s2, -0.5f);
  c = Fma(c, s2, 1.0f);
  float s = -2.50521084e-08f;  // -1/11!
  s = Fma(s, s2, 2.75573192e-06f);
  s = Fma(s, s2, -1.98412698e-04f);
  s = Fma(s, s2, 8.33333333e-03f);
  s = Fma(s, s2, -1.66666667e-01f);
  s = Fma(s * s2, th, th);
  switch (static_cast<int>(q) & 3) {
    case 0:
      return c;
    case 1:
      return -s;
    case 2:
      return -c;
    default:
      return s;
  }
}

SAMPLER_HD double Cos2Pi(double u) {
  const double t = 4.0 * u;
  const double q = RoundNearest(t);
  const double f = t - q;
  const double th = f * 1.5707963267948966;
  const double s2 = th * th;
  double c = -1.0 / 6402373705728000.0;  // -1/18!
  c = Fma(c, s2, 1.0 / 20922789888000.0);
  c = Fma(c, s2, -1.0 / 87178291200.0);
  c = Fma(c, s2, 1.0 / 479001600.0);
  c = Fma(c, s2, -1.0 / 3628800.0);
  c = Fma(c, s2, 1.0 / 40320.0);
  c = Fma(c, s2, -1.0 / 720.0);
  c = Fma(c, s2, 1.0 / 24.0);
  c = Fma(c, s2, 0.5 * -1.0);
  c = Fma(c, s2, 1.0);
  double s = -1.0 / 121645100408832000.0;  // -1/19!
  s = Fma(s, s2, 1.0 / 355687428096000.0);
  s = Fma(s, s2, -1.0 / 1307674368000.0);
  s = Fma(s, s2, 1.0 / 6227020800.0);
  s = Fma(s, s2, -1.0 / 39916800.0);
  s = Fma(s, s2, 1.0 / 362880.0);
  s = Fma(s, s2, -1.0 / 5040.0);
  s = Fma(s, s2, 1.0 / 120.0);
  s = Fma(s, s2, -1.0 / 6.0);
  s = Fma(s * s2, th, th);
  switch (static_cast<int>(q) & 3) {
    case 0:
      return c;
    case 1:
      return -s;
    case 2:
      return -c;
    default:
      return s;
  }
}

}  // namespace sampler::kernels::detmath

#endif  // SAMPLER_KERNELS_DETMATH_H_
