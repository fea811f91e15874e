// The arithmetic of the gamma sampler (Marsaglia-Tsang rejection) and of the
// Dirichlet normalisation, shared by the CPU driver and the CUDA kernel.
//
// Everything here follows docs/randomness.md ("Gamma", "Dirichlet") to the
// operation: the same Philox words go through the same IEEE operations in the
// same order on host and device, so both backends produce the same bits. The
// elementary functions come from detmath.h; sqrt and division are the
// correctly rounded IEEE operations. No allocation, no exceptions, no absl:
// this header is compiled for the device too.
//
// The work is split at the granularity the GPU kernel needs for warp-aware
// pre-caching (gamma-rejection-on-gpus.txt): a lane that has finished its item
// runs attempts of its next item while the warp waits. Attempts are addressed
// by (item, attempt), never by lane or iteration, so the schedule cannot
// change the bits.
#ifndef SAMPLER_KERNELS_GAMMA_CORE_H_
#define SAMPLER_KERNELS_GAMMA_CORE_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "sampler/kernels/common.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/philox.h"

namespace sampler::kernels {

// Safety cap on the attempts of one item. Acceptance is at least 0.95 for
// every shape, so 2^16 attempts are never needed in practice (probability
// below 10^-80000); the cap only guarantees that a bug or a corrupted
// parameter cannot loop forever. An item that hits it yields NaN, which the
// drivers report as an internal error.
inline constexpr uint32_t kGammaMaxAttempts = 1u << 16;

namespace gamma_internal {

// Correctly rounded square root and division, spelled out for the device so
// that a build flag (-prec-sqrt, -prec-div, fast math) cannot change them.
SAMPLER_HD float Sqrt(float x) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}
SAMPLER_HD double Sqrt(double x) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}
SAMPLER_HD float Div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
SAMPLER_HD double Div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// A quiet NaN from its bits: std::numeric_limits is not callable from
// device code without --expt-relaxed-constexpr.
template <typename T>
SAMPLER_HD T QuietNaN() {
  if constexpr (std::is_same_v<T, float>) {
    return detmath::FloatFromBits(0x7fc00000u);
  } else {
    return detmath::DoubleFromBits(0x7ff8000000000000ull);
  }
}

// The halves of a 32 x 32 -> 64-bit product: on the device one IMAD.WIDE
// whose halves are used directly (Random123's portable mulhilo widens the
// words to 64 bits, and the compiler then spends an extra addition per
// multiplication: 20 of a block's ~80 instructions).
SAMPLER_HD void MulWide(uint32_t a, uint32_t b, uint32_t* lo, uint32_t* hi) {
#if defined(__CUDA_ARCH__)
  asm("{\n\t.reg .u64 t;\n\tmul.wide.u32 t, %2, %3;\n\tmov.b64 {%0, %1}, "
      "t;\n\t}"
      : "=r"(*lo), "=r"(*hi)
      : "r"(a), "r"(b));
#else
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *lo = static_cast<uint32_t>(p);
  *hi = static_cast<uint32_t>(p >> 32);
#endif
}

// The ten rounds of Philox4x32-10 on counter (c0, c1, c2, c3), round r's key
// from key_at(r, &k0, &k1): the algorithm of philox.h's Philox() (Random123)
// spelled out, so that where the round keys come from is the caller's
// choice. The GPU tests compare every output bit with the CPU, which uses
// Random123 itself; philox_test compares the two on the host.
template <typename KeyAt>
SAMPLER_HD PhiloxBlock PhiloxRounds(uint32_t c0, uint32_t c1, uint32_t c2,
                                    uint32_t c3, const KeyAt& key_at) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    uint32_t k0, k1, lo0, hi0, lo1, hi1;
    key_at(round, &k0, &k1);
    MulWide(c0, 0xD2511F53u, &lo0, &hi0);
    MulWide(c2, 0xCD9E8D57u, &lo1, &hi1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
}

// Round keys added up from the seed, one addition per key and round (the
// compiler folds r * Weyl).
struct SeedRoundKeys {
  uint32_t s0, s1;
  SAMPLER_HD void operator()(int r, uint32_t* k0, uint32_t* k1) const {
    *k0 = s0 + static_cast<uint32_t>(r) * kPhiloxWeyl0;
    *k1 = s1 + static_cast<uint32_t>(r) * kPhiloxWeyl1;
  }
};
// Round keys read from a table (PhiloxKeySchedule): in a kernel's
// parameters, an operand of the XOR that costs no instruction.
struct TableRoundKeys {
  const PhiloxRoundKeys& table;
  SAMPLER_HD void operator()(int r, uint32_t* k0, uint32_t* k1) const {
    *k0 = table.k0[r];
    *k1 = table.k1[r];
  }
};

// One Philox4x32-10 block of an attempt: philox.h's Philox() on the host,
// PhiloxRounds with keys from the seed on the device.
SAMPLER_HD PhiloxBlock AttemptBlock(uint64_t seed, KindTag tag, uint64_t item,
                                    uint32_t draw) {
#if defined(__CUDA_ARCH__)
  return PhiloxRounds(draw, static_cast<uint32_t>(item),
                      static_cast<uint32_t>(item >> 32),
                      static_cast<uint32_t>(tag),
                      SeedRoundKeys{static_cast<uint32_t>(seed),
                                    static_cast<uint32_t>(seed >> 32)});
#else
  return Philox(seed, tag, item, draw);
#endif
}

// The same block with the seed's round keys from a table
// (PhiloxKeySchedule(seed)).
SAMPLER_HD PhiloxBlock AttemptBlockFromKeys(const PhiloxRoundKeys& keys,
                                            KindTag tag, uint64_t item,
                                            uint32_t draw) {
  return PhiloxRounds(draw, static_cast<uint32_t>(item),
                      static_cast<uint32_t>(item >> 32),
                      static_cast<uint32_t>(tag), TableRoundKeys{keys});
}

// log1p(t) - t for t > -1, to a few ulps relative, from IEEE operations and
// fma only (no vendor log1p: host and device must agree bit for bit).
// For t in [-1/2, 1]: with f = t / (2 + t), log1p(t) = 2 atanh(f) and
// 2 f - t = -t f, so log1p(t) - t = f (2 f^2 P(f^2) - t) with
// P(s) = 1/3 + s/5 + s^2/7 + ... (|f| <= 1/3: the terms kept leave a
// relative error below 2^-27 (float) and 2^-56 (double)); the two terms
// never cancel by more than 8%. Elsewhere log1p(t) = log(1 + t) plus the
// rounding error of 1 + t divided by 1 + t (exact: 1 + t is exact for
// t <= -1/2, and for t > 1 the error t - ((1 + t) - 1) is exact), and
// log1p(t) - t loses at most 2 bits to cancellation.
SAMPLER_HD float Log1pMinusId(float t) {
  if (t >= -0.5f && t <= 1.0f) {
    const float f = Div(t, 2.0f + t);
    const float s = f * f;
    float p = 1.0f / 15.0f;
    p = detmath::Fma(p, s, 1.0f / 13.0f);
    p = detmath::Fma(p, s, 1.0f / 11.0f);
    p = detmath::Fma(p, s, 1.0f / 9.0f);
    p = detmath::Fma(p, s, 1.0f / 7.0f);
    p = detmath::Fma(p, s, 1.0f / 5.0f);
    p = detmath::Fma(p, s, 1.0f / 3.0f);
    return f * detmath::Fma(2.0f * s, p, -t);
  }
  const float u = 1.0f + t;
  const float corr = Div(t - (u - 1.0f), u);
  return (detmath::Log(u) + corr) - t;
}
SAMPLER_HD double Log1pMinusId(double t) {
  if (t >= -0.5 && t <= 1.0) {
    const double f = Div(t, 2.0 + t);
    const double s = f * f;
    double p = 1.0 / 33.0;
    p = detmath::Fma(p, s, 1.0 / 31.0);
    p = detmath::Fma(p, s, 1.0 / 29.0);
    p = detmath::Fma(p, s, 1.0 / 27.0);
    p = detmath::Fma(p, s, 1.0 / 25.0);
    p = detmath::Fma(p, s, 1.0 / 23.0);
    p = detmath::Fma(p, s, 1.0 / 21.0);
    p = detmath::Fma(p, s, 1.0 / 19.0);
    p = detmath::Fma(p, s, 1.0 / 17.0);
    p = detmath::Fma(p, s, 1.0 / 15.0);
    p = detmath::Fma(p, s, 1.0 / 13.0);
    p = detmath::Fma(p, s, 1.0 / 11.0);
    p = detmath::Fma(p, s, 1.0 / 9.0);
    p = detmath::Fma(p, s, 1.0 / 7.0);
    p = detmath::Fma(p, s, 1.0 / 5.0);
    p = detmath::Fma(p, s, 1.0 / 3.0);
    return f * detmath::Fma(2.0 * s, p, -t);
  }
  const double u = 1.0 + t;
  const double corr = Div(t - (u - 1.0), u);
  return (detmath::Log(u) + corr) - t;
}

#if defined(__CUDA_ARCH__)
// The logarithmic test `log(ua) < h` decided from the hardware's fast
// logarithm where that is safe, so that the deterministic logarithm (about
// 40 instructions, run by a whole warp as soon as one lane needs it) is
// only computed near the boundary. h is the exact path's own value. Returns
// +1 (accept), -1 (reject) or 0 (too close to call: compute exactly). The
// outcome is the exact test's, so no bit of the output depends on it.
//
// Why it is exact. Let L = detmath::Log(ua) and L' = __logf(ua). detmath's
// logarithm is within 2 ulps of the true one; __logf within 2^-21.41
// absolute on [0.5, 2] and 3 ulps elsewhere (CUDA programming guide, for
// normal arguments: ua >= 2^-53 here); in double, rounding ua to float moves
// its logarithm by at most 2^-24. So |L - L'| < 2^-19 (1 + |L'|), and the
// margin 2^-14 (1 + |L'|) is 32 times that: if L' - h < -margin then
// L < h, and if L' - h > margin then L > h. The gap is formed in T, whose
// rounding is far inside the margin. A NaN h makes both comparisons false:
// undecided, so exact.
__device__ __forceinline__ int FastLogTest(float ua, float h) {
  const float lhs = __logf(ua);
  const float gap = lhs - h;
  const float margin = 0x1p-14f * (1.0f + fabsf(lhs));
  if (gap < -margin) return 1;
  if (gap > margin) return -1;
  return 0;
}
__device__ __forceinline__ int FastLogTest(double ua, double h) {
  const double lhs = static_cast<double>(__logf(static_cast<float>(ua)));
  const double gap = lhs - h;
  const double margin = 0x1p-14 * (1.0 + fabs(lhs));
  if (gap < -margin) return 1;
  if (gap > margin) return -1;
  return 0;
}
#endif

}  // namespace gamma_internal

// Per-shape constants, computed once per item (or once per group: the
// function is pure, so hoisting it cannot change the bits).
template <typename T>
struct GammaShape {
  T shape;     // the requested shape
  T d;         // alpha - 1/3, alpha = shape (>= 1) or shape + 1 (< 1)
  T c;         // 1 / sqrt(9 d)
  bool boost;  // shape < 1: the U^(1/shape) boost applies
};

template <typename T>
SAMPLER_HD GammaShape<T> GammaPrepare(T shape) {
  using gamma_internal::Div;
  using gamma_internal::Sqrt;
  GammaShape<T> g;
  g.shape = shape;
  g.boost = shape < T(1);
  const T alpha = g.boost ? shape + T(1) : shape;
  // 1/3 correctly rounded, folded at compile time (the device does not fold
  // its division intrinsic).
  constexpr T kThird = T(1) / T(3);
  g.d = alpha - kThird;
  g.c = Div(T(1), Sqrt(T(9) * g.d));
  return g;
}

// The four uniforms of one attempt.
template <typename T>
struct GammaUniforms {
  T u1;  // (0, 1]: Box-Muller radius
  T u2;  // [0, 1): Box-Muller angle
  T ua;  // (0, 1]: accept/reject
  T ub;  // (0, 1]: the boost for shape < 1
};

// Attempt `attempt`'s uniforms from its blocks (block_of(draw), the Philox
// block of that draw): float32 takes one block (draw = attempt), float64 two
// (draws 2 attempt and 2 attempt + 1), words (lo, hi) in order.
template <typename T, typename BlockOf>
SAMPLER_HD GammaUniforms<T> GammaUniformsOfBlocks(uint32_t attempt,
                                                  const BlockOf& block_of) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "gamma variates are float or double");
  GammaUniforms<T> u;
  if constexpr (std::is_same_v<T, float>) {
    const PhiloxBlock b = block_of(attempt);
    u.u1 = UniformOpenFloat(b.v[0]);
    u.u2 = UniformFloat(b.v[1]);
    u.ua = UniformOpenFloat(b.v[2]);
    u.ub = UniformOpenFloat(b.v[3]);
  } else {
    const PhiloxBlock b0 = block_of(2u * attempt);
    const PhiloxBlock b1 = block_of(2u * attempt + 1u);
    u.u1 = UniformOpenDouble(b0.v[0], b0.v[1]);
    u.u2 = UniformDouble(b0.v[2], b0.v[3]);
    u.ua = UniformOpenDouble(b1.v[0], b1.v[1]);
    u.ub = UniformOpenDouble(b1.v[2], b1.v[3]);
  }
  return u;
}

// Attempt `attempt` of `item`.
template <typename T>
SAMPLER_HD GammaUniforms<T> GammaAttemptUniforms(KindTag tag, uint64_t seed,
                                                 uint64_t item,
                                                 uint32_t attempt) {
  return GammaUniformsOfBlocks<T>(attempt, [&](uint32_t draw) {
    return gamma_internal::AttemptBlock(seed, tag, item, draw);
  });
}

// The same uniforms with the seed's round keys from a table
// (PhiloxKeySchedule(seed)): what a kernel whose items share one seed uses.
template <typename T>
SAMPLER_HD GammaUniforms<T> GammaAttemptUniformsFromKeys(
    KindTag tag, const PhiloxRoundKeys& keys, uint64_t item, uint32_t attempt) {
  return GammaUniformsOfBlocks<T>(attempt, [&](uint32_t draw) {
    return gamma_internal::AttemptBlockFromKeys(keys, tag, item, draw);
  });
}

// How an attempt was decided: by the squeeze, by the fast logarithm (GPU
// only) or by the exact logarithm.
enum class GammaTestPath { kSqueeze, kFastLog, kExactLog };

// The test of one attempt from its normal variate z and its accept/reject
// uniform ua (GammaTryAttempt below draws them). Separate so that tests can
// check the acceptance arithmetic directly on a grid of (z, ua)
// (tests/stat/gamma_exact_test.cc compares it with the exact condition in
// quadruple precision).
//
// Marsaglia-Tsang accepts v = (1 + c z)^3 when
//   log ua < z^2/2 + d - d v + d log v.
// Written so, the sum z^2/2 + d rounds at the scale of d: once d is large
// the z^2/2 term is lost (a variance bias of -0.44% at shape 1e6 and -17% at
// 1e8 in float32). With t = v - 1 the same condition is
//   log ua < h = z^2/2 + d (log1p(t) - t),
// where d (log1p(t) - t) is about -z^2/2 and h is small: every term stays at
// the scale of z^2/2, so h is known within a few eps (1 + z^2) at every
// shape, in float32 as in float64. t and the output d v = d + d t are kept
// separate from 1 for the same reason: 1 + c z rounded to T would put the
// outputs of a large shape on a grid 3 to 6 times coarser than T's own.
//
// Evaluation order (contract version 2; IEEE operations and fma only):
//   s = fma(c, z, 1)  (1 + c z rounded once);  reject if s <= 0
//   w = c * z;  z2 = z * z
//   near (w >= -1/4):  t = w * (3 + w * (3 + w));  out = fma(d, t, d)
//                      e = Log1pMinusId(t)
//   far  (w < -1/4):   v = (s * s) * s;  t = v - 1;  out = d * v
//                      e = log(v) - t
//   accept if ua < 1 - 0.0331 * (z2 * z2)     (the squeeze: no logarithm)
//   or     if log(ua) < fma(d, e, z2 * 0.5)
// The far branch keeps v = s^3 because there 1 + c z is small and s (one
// rounding) carries it to full relative precision, where t would not.
// z2 / 2 is computed as z2 * 0.5: both are the correctly rounded value of
// the same real number, so the bits are those of the division for every z2
// (subnormal, infinite and NaN too), and on the device a multiplication is
// one instruction where a division is about ten.
//
// On the device log(ua) is first compared through the hardware's fast
// logarithm where that provably gives the exact test's outcome
// (FastLogTest above); h itself is always computed exactly.
//
// `path`, when given, is set to how the attempt was decided (the GPU
// kernel's instrumented variant counts it).
template <typename T>
SAMPLER_HD bool GammaTryZ(const GammaShape<T>& g, T z, T ua, T* dv,
                          GammaTestPath* path = nullptr) {
  if (path != nullptr) *path = GammaTestPath::kSqueeze;
  const T s = detmath::Fma(g.c, z, T(1));
  if (s <= T(0)) return false;
  const T w = g.c * z;
  const T z2 = z * z;
  const bool near = w >= T(-0.25);
  T t, out, v = T(1);
  if (near) {
    t = w * (T(3) + w * (T(3) + w));
    out = detmath::Fma(g.d, t, g.d);
  } else {
    v = (s * s) * s;
    t = v - T(1);
    out = g.d * v;
  }
  // The squeeze settles most attempts without a logarithm (92% over the
  // shapes of gamma_test, more for large shapes).
  bool accept = ua < T(1) - T(0.0331) * (z2 * z2);
  if (!accept) {
    const T e = near ? gamma_internal::Log1pMinusId(t) : detmath::Log(v) - t;
    const T h = detmath::Fma(g.d, e, z2 * T(0.5));
    int decided = 0;
#if defined(__CUDA_ARCH__)
    decided = gamma_internal::FastLogTest(ua, h);
#endif
    if (decided != 0) {
      if (path != nullptr) *path = GammaTestPath::kFastLog;
      accept = decided > 0;
    } else {
      if (path != nullptr) *path = GammaTestPath::kExactLog;
      accept = detmath::Log(ua) < h;
    }
  }
  if (accept) *dv = out;
  return accept;
}

// One Marsaglia-Tsang attempt: z = sqrt(-2 * log(u1)) * cos2pi(u2), then
// GammaTryZ. On acceptance returns true and sets *dv to the unscaled
// variate d v (v = (1 + c z)^3).
template <typename T>
SAMPLER_HD bool GammaTryAttempt(const GammaShape<T>& g,
                                const GammaUniforms<T>& u, T* dv,
                                GammaTestPath* path = nullptr) {
  using gamma_internal::Sqrt;
  const T z = Sqrt(T(-2) * detmath::Log(u.u1)) * detmath::Cos2Pi(u.u2);
  return GammaTryZ(g, z, u.ua, dv, path);
}

// The accepted attempt of an item: what the outputs are made from.
template <typename T>
struct GammaDraw {
  T dv;  // d * v^3 of the first accepted attempt; NaN if the cap was hit
  T ub;  // that attempt's boost uniform
};

// Runs the attempts of one item until the first acceptance. `max_attempts`
// exists for tests of the cap; production code keeps the default.
template <typename T>
SAMPLER_HD GammaDraw<T> GammaDrawItem(
    KindTag tag, uint64_t seed, uint64_t item, const GammaShape<T>& g,
    uint32_t max_attempts = kGammaMaxAttempts) {
  for (uint32_t a = 0; a < max_attempts; ++a) {
    const GammaUniforms<T> u = GammaAttemptUniforms<T>(tag, seed, item, a);
    T dv;
    if (GammaTryAttempt(g, u, &dv)) return GammaDraw<T>{dv, u.ub};
  }
  return GammaDraw<T>{gamma_internal::QuietNaN<T>(), T(1)};
}

// The unscaled log-variate y = log(d v) [+ log(ub) / shape when shape < 1].
// In log space the boost cannot underflow: this is what keeps tiny shapes
// (and Dirichlet concentrations far below 1) meaningful.
template <typename T>
SAMPLER_HD T GammaLogUnscaled(const GammaShape<T>& g, const GammaDraw<T>& x) {
  T y = detmath::Log(x.dv);
  if (g.boost) y = y + gamma_internal::Div(detmath::Log(x.ub), g.shape);
  return y;
}

// The output of one gamma item: y + log(scale) (log output), (d v) * scale
// (linear, shape >= 1) or exp(y) * scale (linear, shape < 1). `log_scale`
// must be detmath::Log(scale); it is a parameter so that callers can compute
// it once per group. NaN in, NaN out.
template <typename T>
SAMPLER_HD T GammaOutput(const GammaShape<T>& g, const GammaDraw<T>& x, T scale,
                         T log_scale, bool log_output) {
  if (log_output) return GammaLogUnscaled(g, x) + log_scale;
  if (!g.boost) return x.dv * scale;
  return detmath::Exp(GammaLogUnscaled(g, x)) * scale;
}

// Everything for one gamma item; NaN only if the attempt cap was hit.
template <typename T>
SAMPLER_HD T GammaSampleItem(KindTag tag, uint64_t seed, uint64_t item,
                             const GammaShape<T>& g, T scale, T log_scale,
                             bool log_output) {
  return GammaOutput(g, GammaDrawItem(tag, seed, item, g), scale, log_scale,
                     log_output);
}

// ---------------------------------------------------- Dirichlet rows ----
//
// A row's components are log-gamma variates lg_j (GammaLogUnscaled of the
// item drawn with KindTag::kDirichlet). With m = max_j lg_j (exact, any
// order), the row is normalised by
//   S = sum_j exp(lg_j - m)   (in component order, starting from 0)
//   out_j = (lg_j - m) - log(S)  (log output)  or  exp of that (linear).
// Subtracting m first keeps every step at the scale of the result: forming
// m + log(S) instead would round at the scale of |m| (about 1000 for
// concentrations near 1e-3), costing hundreds of ulps.
// The pieces below pin each operation; the summation loop lives in the
// callers, which must add in component order.

// One term of S.
template <typename T>
SAMPLER_HD T DirichletTerm(T lg, T m) {
  return detmath::Exp(lg - m);
}

// log(S) from the finished sum.
template <typename T>
SAMPLER_HD T DirichletLogSum(T sum) {
  return detmath::Log(sum);
}

// One output component.
template <typename T>
SAMPLER_HD T DirichletOutput(T lg, T m, T log_sum, bool log_output) {
  const T t = (lg - m) - log_sum;
  return log_output ? t : detmath::Exp(t);
}

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_GAMMA_CORE_H_
