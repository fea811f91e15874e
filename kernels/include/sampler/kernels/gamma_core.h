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

// One Philox4x32-10 block of an attempt: philox.h's Philox() on the host.
// On the device the same function is spelled out with 32 x 32 -> 64-bit
// multiplications whose halves are used directly (one IMAD.WIDE each):
// Random123's portable mulhilo widens the words to 64 bits, and the
// compiler then spends an extra addition per multiplication (20 of the
// block's ~80 instructions). Same algorithm, same words: the GPU tests
// compare every output bit with the CPU, which uses Random123 itself.
SAMPLER_HD PhiloxBlock AttemptBlock(uint64_t seed, KindTag tag, uint64_t item,
                                    uint32_t draw) {
#if defined(__CUDA_ARCH__)
  uint32_t c0 = draw;
  uint32_t c1 = static_cast<uint32_t>(item);
  uint32_t c2 = static_cast<uint32_t>(item >> 32);
  uint32_t c3 = static_cast<uint32_t>(tag);
  uint32_t k0 = static_cast<uint32_t>(seed);
  uint32_t k1 = static_cast<uint32_t>(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key schedule (Weyl sequence)
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t lo0, hi0, lo1, hi1;
    asm("{\n\t.reg .u64 t;\n\tmul.wide.u32 t, %2, %3;\n\tmov.b64 {%0, %1}, "
        "t;\n\t}"
        : "=r"(lo0), "=r"(hi0)
        : "r"(c0), "r"(0xD2511F53u));
    asm("{\n\t.reg .u64 t;\n\tmul.wide.u32 t, %2, %3;\n\tmov.b64 {%0, %1}, "
        "t;\n\t}"
        : "=r"(lo1), "=r"(hi1)
        : "r"(c2), "r"(0xCD9E8D57u));
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
#else
  return Philox(seed, tag, item, draw);
#endif
}

#if defined(__CUDA_ARCH__)
// The logarithmic test `log(ua) < s3 + d * log(v)` (s3 = (z2/2 + d) - d v)
// decided from the hardware's fast logarithm where that is safe, so that the
// deterministic logarithms (about 90 instructions, run by a whole warp as
// soon as one lane needs them) are only computed near the boundary. Returns
// +1 (accept), -1 (reject) or 0 (too close to call: compute exactly). The
// outcome is the exact test's, so no bit of the output depends on it.
//
// Why it is exact. Let L = detmath::Log(ua) and R = s3 + d * detmath::Log(v)
// be what the exact test compares, and L', R' their fast versions (same s3,
// __logf for the logarithms). detmath::Log is within a few ulps of the true
// logarithm; __logf within 2^-21.41 absolute on [0.5, 2] and 3 ulps
// elsewhere (CUDA programming guide, for normal arguments: ua >= 2^-53 and
// v > 2^-100 here). So |L - L'| <= 2^-20 (1 + |L'|) and |R - R'| <= 2^-20
// d + 2^-20 |d log v| + a few ulps of |s3| and |d log v|. With S = 1 + |L'|
// + s2 + |p1| + |d log'(v)| (s2 = z2/2 + d >= d, |s3| <= s2 + |p1|), the
// total error, the rounding of the fast arithmetic itself and, in double,
// of ua, v and s3 to float included, stays below 2^-18 S. The margin is
// 2^-12 S, 64 times that: if L' - R' < -margin then L - R < 0, and if
// L' - R' > margin then L - R > 0.
// Infinite or NaN terms (shapes near the float limit) make the margin
// infinite or the comparisons false: undecided, so exact.
__device__ __forceinline__ int FastLogTest(float ua, float v, float d, float s2,
                                           float p1, float s3) {
  const float lhs = __logf(ua);
  const float dlv = d * __logf(v);
  const float gap = lhs - (s3 + dlv);
  const float margin =
      0x1p-12f * (1.0f + fabsf(lhs) + fabsf(s2) + fabsf(p1) + fabsf(dlv));
  if (gap < -margin) return 1;
  if (gap > margin) return -1;
  return 0;
}
__device__ __forceinline__ int FastLogTest(double ua, double v, double d,
                                           double s2, double p1, double s3) {
  // Float logarithms of the values rounded to float: the rounding (relative
  // 2^-24) moves a logarithm by at most 2^-24, inside the margin. Tiny v
  // would underflow in float: exact path.
  if (!(v > 1e-30)) return 0;
  const float lhs = __logf(static_cast<float>(ua));
  const float dlv = static_cast<float>(d) * __logf(static_cast<float>(v));
  const float gap = lhs - (static_cast<float>(s3) + dlv);
  const float margin =
      0x1p-12f * (1.0f + fabsf(lhs) + fabsf(static_cast<float>(s2)) +
                  fabsf(static_cast<float>(p1)) + fabsf(dlv));
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

// Attempt `attempt` of `item`: float32 takes one block (draw = attempt),
// float64 two (draws 2 attempt and 2 attempt + 1), words (lo, hi) in order.
template <typename T>
SAMPLER_HD GammaUniforms<T> GammaAttemptUniforms(KindTag tag, uint64_t seed,
                                                 uint64_t item,
                                                 uint32_t attempt) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "gamma variates are float or double");
  GammaUniforms<T> u;
  if constexpr (std::is_same_v<T, float>) {
    const PhiloxBlock b =
        gamma_internal::AttemptBlock(seed, tag, item, attempt);
    u.u1 = UniformOpenFloat(b.v[0]);
    u.u2 = UniformFloat(b.v[1]);
    u.ua = UniformOpenFloat(b.v[2]);
    u.ub = UniformOpenFloat(b.v[3]);
  } else {
    const PhiloxBlock b0 =
        gamma_internal::AttemptBlock(seed, tag, item, 2u * attempt);
    const PhiloxBlock b1 =
        gamma_internal::AttemptBlock(seed, tag, item, 2u * attempt + 1u);
    u.u1 = UniformOpenDouble(b0.v[0], b0.v[1]);
    u.u2 = UniformDouble(b0.v[2], b0.v[3]);
    u.ua = UniformOpenDouble(b1.v[0], b1.v[1]);
    u.ub = UniformOpenDouble(b1.v[2], b1.v[3]);
  }
  return u;
}

// One Marsaglia-Tsang attempt. On acceptance returns true and sets *dv to the
// unscaled variate d * v^3 (rounded once, as the contract's "d * v").
//
// Evaluation order (every operation rounded in T, no fused multiply-adds):
//   z  = sqrt(-2 * log(u1)) * cos2pi(u2)
//   v  = 1 + c * z;  reject if v <= 0;  v = (v * v) * v
//   z2 = z * z
//   accept if ua < 1 - 0.0331 * (z2 * z2)
//   or     if log(ua) < ((z2 / 2 + d) - d * v) + d * log(v)
// z2 / 2 is computed as z2 * 0.5: both are the correctly rounded value of
// the same real number, so the bits are those of the division for every z2
// (subnormal, infinite and NaN too), and on the device a multiplication is
// one instruction where a division is about ten.
//
// On the device the logarithmic test is first decided from fast logarithms
// where that is provably the exact test's outcome (FastLogTest above).
//
// `path`, when given, is set to how the attempt was decided (the GPU
// kernel's instrumented variant counts it).
enum class GammaTestPath { kSqueeze, kFastLog, kExactLog };

template <typename T>
SAMPLER_HD bool GammaTryAttempt(const GammaShape<T>& g,
                                const GammaUniforms<T>& u, T* dv,
                                GammaTestPath* path = nullptr) {
  using gamma_internal::Sqrt;
  if (path != nullptr) *path = GammaTestPath::kSqueeze;
  const T z = Sqrt(T(-2) * detmath::Log(u.u1)) * detmath::Cos2Pi(u.u2);
  T v = T(1) + g.c * z;
  if (v <= T(0)) return false;
  v = v * v * v;
  const T z2 = z * z;
  // The squeeze settles most attempts without a logarithm (92% over the
  // shapes of gamma_test, more for large shapes).
  bool accept = u.ua < T(1) - T(0.0331) * (z2 * z2);
  if (!accept) {
    const T s2 = z2 * T(0.5) + g.d;
    const T p1 = g.d * v;
    const T s3 = s2 - p1;
    int decided = 0;
#if defined(__CUDA_ARCH__)
    decided = gamma_internal::FastLogTest(u.ua, v, g.d, s2, p1, s3);
#endif
    if (decided != 0) {
      if (path != nullptr) *path = GammaTestPath::kFastLog;
      accept = decided > 0;
    } else {
      if (path != nullptr) *path = GammaTestPath::kExactLog;
      accept = detmath::Log(u.ua) < s3 + g.d * detmath::Log(v);
    }
  }
  if (accept) *dv = g.d * v;
  return accept;
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
