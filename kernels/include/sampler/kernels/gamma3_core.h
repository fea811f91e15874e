// The arithmetic of the gamma sampler, contract version 3 (docs/randomness.md
// "Gamma"), shared by the CPU driver (gamma_cpu.cc) and the CUDA kernel
// (gamma3.cu): Marsaglia-Tsang rejection whose normal variate comes from a
// 128-layer ziggurat instead of Box-Muller, with two attempts per Philox
// block in float32 (items 2j and 2j + 1 share block (k, j): words 0-1 feed
// item 2j's attempt k, words 2-3 item 2j + 1's) and one in float64.
//
// The acceptance test itself is version 2's (gamma_core.h: GammaSqueezeTest
// and GammaLogTest, exact at every shape); only where z and ua come from
// changed. A ziggurat pass that fails (the wedge test) rejects the whole
// attempt: an attempt is then "one ziggurat pass, then the gamma test", the
// attempts are independent and identically distributed, and a ziggurat pass
// that succeeds gives an exactly normal z, so the first accepted attempt has
// exactly the Marsaglia-Tsang law. The tail (beyond r = 3.44) is the one
// place with an inner loop (Marsaglia's exponential method): its failures
// must not reject the attempt, or the tail would lose mass.
//
// Like gamma_core.h: IEEE operations and fma only, no allocation, compiled
// for host and device.
#ifndef SAMPLER_KERNELS_GAMMA3_CORE_H_
#define SAMPLER_KERNELS_GAMMA3_CORE_H_

#include <cstdint>
#include <type_traits>

#include "sampler/kernels/common.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/gamma_core.h"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/ziggurat_tables.h"

namespace sampler::kernels {

// The ziggurat of exp(-x^2/2) (tools/gen_ziggurat_tables.py says how it is
// built): layer i in 0..127 has width x[i]; x[i + 1] is the width below
// which layer i lies under the curve; f[i] = exp(-x[i]^2 / 2) and df[i] =
// f[i + 1] - f[i] (the layer's height, for the wedge test). x[1] = r.
// The float64 table decides the geometry in both precisions: the ziggurat
// is exact only when its layers have equal areas, and float32-rounded widths
// would leave them equal to 7e-6 only; the float64 ones agree to 1e-14.
// float32's fast path reads `f32`, derived from x exactly (the generator;
// gamma_exact_test checks it against Float32Entry below): an integer
// threshold that decides "under the layer's rectangle" exactly as the
// float64 widths do, and the width rounded once to float32 for the
// magnitude (ZigguratFast; Float32Entry says how both follow from x).
// A parameter of the functions below (not a global) so that tests can
// perturb one.
struct ZigguratF32Entry {
  uint32_t threshold;  // u24 < threshold iff u24 x[i] < 2^24 x[i + 1]
  float width;         // float(x[i]) 2^-24: u24 * width is u x[i] in float
};

struct ZigguratTable {
  double x[129];
  double f[129];
  double df[128];
  double inv_r;  // 1 / r
  ZigguratF32Entry f32[128];
};

inline constexpr ZigguratTable kZiggurat = {{SAMPLER_ZIGGURAT_X_DOUBLE},
                                            {SAMPLER_ZIGGURAT_F_DOUBLE},
                                            {SAMPLER_ZIGGURAT_DF_DOUBLE},
                                            SAMPLER_ZIGGURAT_INV_R_DOUBLE,
                                            {SAMPLER_ZIGGURAT_F32_ENTRIES}};

// float32's entry of layer i as the float64 widths define it: the least
// integer t with t x[i] >= 2^24 x[i + 1] (so u24 < t iff u24 x[i] < 2^24
// x[i + 1], exactly; fma's one rounding keeps the sign of t x[i] - 2^24
// x[i + 1] exact, 2^24 x[i + 1] being exact), and float(x[i]) 2^-24. For
// tests and tables changed at run time (the generator computes the same in
// rationals).
inline ZigguratF32Entry Float32Entry(const ZigguratTable& tab, int i) {
  const double x = tab.x[i];
  const double target = tab.x[i + 1] * 0x1p24;
  double t = static_cast<double>(static_cast<int64_t>(target / x));
  while (t > 0 && detmath::Fma(t - 1, x, -target) >= 0) t -= 1;
  while (detmath::Fma(t, x, -target) < 0) t += 1;
  return ZigguratF32Entry{static_cast<uint32_t>(t),
                          static_cast<float>(x) * 0x1p-24f};
}

// The host's table (both precisions).
constexpr const ZigguratTable& HostZiggurat() { return kZiggurat; }

// Tail iterations are capped so that their draws (k + (m << 16), m < 2^15)
// never meet the boost's (0xffffffff); reaching the cap (probability below
// 0.1^32767) rejects the attempt.
inline constexpr uint32_t kGamma3TailMax = (1u << 15) - 1;
inline constexpr uint32_t kGamma3BoostDraw = 0xffffffffu;

// The Philox block of attempt `attempt` of `item` (tag GAM3): float32 items
// 2j and 2j + 1 share block (attempt, j); float64 items own block
// (attempt, item).
template <typename T>
SAMPLER_HD uint64_t Gamma3BlockIndex(uint64_t item) {
  return std::is_same_v<T, float> ? item >> 1 : item;
}

// The words of one attempt: the ziggurat's and the acceptance uniform's.
// float32 uses the low words only.
struct Gamma3Words {
  uint32_t zig_lo, zig_hi, ua_lo, ua_hi;
};

template <typename T>
SAMPLER_HD Gamma3Words Gamma3AttemptWords(const PhiloxBlock& b, uint64_t item) {
  if constexpr (std::is_same_v<T, float>) {
    const int h = static_cast<int>(item & 1) * 2;
    // Constant indices on both sides of the select: no dynamic indexing of
    // the block (it would go to local memory on the device).
    return h == 0 ? Gamma3Words{b.v[0], 0, b.v[1], 0}
                  : Gamma3Words{b.v[2], 0, b.v[3], 0};
  } else {
    return Gamma3Words{b.v[0], b.v[1], b.v[2], b.v[3]};
  }
}

// The uniform of precision T from one word (float32: `lo`) or a word pair
// (float64), [0, 1) or, `open`, (0, 1] (philox.h's exact conversions).
template <typename T>
SAMPLER_HD T Gamma3Uniform(uint32_t lo, uint32_t hi, bool open) {
  if constexpr (std::is_same_v<T, float>) {
    return open ? UniformOpenFloat(lo) : UniformFloat(lo);
  } else {
    return open ? UniformOpenDouble(lo, hi) : UniformDouble(lo, hi);
  }
}

// Uniform `which` (0: A, 1: B) of an auxiliary block (tag GAX3): float32
// words 0 and 1, float64 words (0, 1) and (2, 3).
template <typename T>
SAMPLER_HD T AuxUniform(const PhiloxBlock& b, int which, bool open) {
  if constexpr (std::is_same_v<T, float>) {
    return Gamma3Uniform<T>(which == 0 ? b.v[0] : b.v[1], 0, open);
  } else {
    return which == 0 ? Gamma3Uniform<T>(b.v[0], b.v[1], open)
                      : Gamma3Uniform<T>(b.v[2], b.v[3], open);
  }
}

// How a ziggurat pass went (tests count the paths).
enum class ZigguratPath { kFast, kWedgeAccept, kWedgeReject, kTail };

// The ziggurat's uniform in [0, 1), as a double: float32 (w >> 8) 2^-24
// from the item's one word (exact in double), float64 UniformDouble(lo, hi).
template <typename T>
SAMPLER_HD double ZigguratUniform(const Gamma3Words& w) {
  return static_cast<double>(Gamma3Uniform<T>(w.zig_lo, w.zig_hi, false));
}

// The fast path of a ziggurat pass. From the ziggurat word (float32 w:
// layer w & 127, sign bit 7, u24 = w >> 8; float64 (lo, hi): layer lo &
// 127, sign bit 7 of lo, u = UniformDouble(lo, hi)):
//   float32: `fast` iff u24 < f32[layer].threshold (integer compare: the
//     float64 table's u x[layer] < x[layer + 1], exactly); magnitude
//     `mag` = float(u24) * f32[layer].width (one float32 multiply: u times
//     the width rounded once to float, so within 2^-23 relative of u x[i],
//     about one float32 ulp, where rounding the float64 product gives half);
//   float64: mag = u x[layer] (one double multiply), `fast` iff mag <
//     x[layer + 1].
// `x` is u x[layer] in float64 for the wedge test (off the fast path).
template <typename T>
struct ZigguratCandidate {
  int layer;
  bool negative;
  bool fast;
  T mag;
};

template <typename T>
SAMPLER_HD ZigguratCandidate<T> ZigguratFastFrom(ZigguratF32Entry e, double x,
                                                 double next,
                                                 const Gamma3Words& w) {
  ZigguratCandidate<T> c;
  c.layer = static_cast<int>(w.zig_lo & 127u);
  c.negative = (w.zig_lo & 128u) != 0;
  if constexpr (std::is_same_v<T, float>) {
    const uint32_t u24 = w.zig_lo >> 8;
    c.fast = u24 < e.threshold;
    c.mag = static_cast<float>(u24) * e.width;
  } else {
    c.mag = ZigguratUniform<T>(w) * x;
    c.fast = c.mag < next;
  }
  return c;
}

template <typename T>
SAMPLER_HD ZigguratCandidate<T> ZigguratFast(const ZigguratTable& tab,
                                             const Gamma3Words& w) {
  const int layer = static_cast<int>(w.zig_lo & 127u);
  return ZigguratFastFrom<T>(tab.f32[layer], tab.x[layer], tab.x[layer + 1], w);
}

// The candidate's magnitude in float64 for the wedge test: u x[layer] (one
// double multiply; float64: the fast path's own).
template <typename T>
SAMPLER_HD double ZigguratWedgeX(const ZigguratTable& tab,
                                 const ZigguratCandidate<T>& c,
                                 const Gamma3Words& w) {
  if constexpr (std::is_same_v<T, float>) {
    return ZigguratUniform<T>(w) * tab.x[c.layer];
  } else {
    return c.mag;
  }
}

// The tail (layer 0, x >= r), in float64 for both precisions: Marsaglia's
// a = -log(U1) / r, b = -log(U2), accept if 2b > a^2, then the magnitude is
// r + a; iteration m uses auxiliary block attempt + (m << 16), U1 from its
// words (0, 1) and U2 from (2, 3) (53 bits each, float32 too). False only at
// the iteration cap.
SAMPLER_HD bool ZigguratTail(const ZigguratTable& tab, uint64_t seed,
                             KindTag aux_tag, uint64_t item, uint32_t attempt,
                             double* mag) {
  for (uint32_t m = 1; m <= kGamma3TailMax; ++m) {
    const PhiloxBlock b =
        gamma_internal::AttemptBlock(seed, aux_tag, item, attempt + (m << 16));
    const double a =
        -(detmath::Log(AuxUniform<double>(b, 0, true)) * tab.inv_r);
    const double e = -detmath::Log(AuxUniform<double>(b, 1, true));
    if (e + e > a * a) {
      *mag = tab.x[1] + a;
      return true;
    }
  }
  return false;
}

#if defined(__CUDA_ARCH__)
namespace gamma3_internal {

// The wedge's comparison y < E, E = detmath::Exp(q), decided on the device
// from the hardware's __expf where that provably gives the same outcome
// (the pattern of gamma_core.h's FastLogTest): a warp meets a wedge in most
// of its iterations (32 lanes, two items each, 2.7% of passes), and the
// float64 exponential is most of the wedge's arithmetic after its Philox
// block. Returns +1 (y < E), -1 (y >= E) or 0 (too close: compute E).
//
// Why it is exact. Here q = -x^2 / 2 with x <= r < 3.45, so q in [-5.93, 0]
// and E >= 0.0026. Rounding q to float moves exp(q) by at most |q| 2^-24 <
// 2^-21.4 relative; __expf is within 2 + floor(1.173 |q|) <= 8 float ulps,
// 2^-20 relative (CUDA programming guide); detmath's exp is within 1 double
// ulp. So e = __expf(float(q)) is within 2^-19 of E, relative, and the
// margin 2^-14 e is 32 times that: y < e - 2^-14 e implies y < E, y >
// e + 2^-14 e implies y > E. The double arithmetic on e rounds far inside
// the margin.
__device__ __forceinline__ int FastWedgeTest(double y, double q) {
  const double e = static_cast<double>(__expf(static_cast<float>(q)));
  const double margin = 0x1p-14 * e;
  if (y < e - margin) return 1;
  if (y > e + margin) return -1;
  return 0;
}

}  // namespace gamma3_internal
#endif

// The wedge test of layer i >= 1 for a candidate x >= x[i + 1], in float64
// for both precisions: a uniform height in the layer, y = f[i] + U (f[i + 1]
// - f[i]) (one fma; U from words (0, 1) of auxiliary block `attempt`, 53
// bits), under the curve at x: y < detmath::Exp(-0.5 * (x * x)) (on the
// device decided first by FastWedgeTest, same outcome). False rejects the
// attempt.
SAMPLER_HD bool ZigguratWedge(const ZigguratTable& tab, int layer, double x,
                              uint64_t seed, KindTag aux_tag, uint64_t item,
                              uint32_t attempt) {
  const PhiloxBlock b =
      gamma_internal::AttemptBlock(seed, aux_tag, item, attempt);
  const double y = detmath::Fma(AuxUniform<double>(b, 0, false), tab.df[layer],
                                tab.f[layer]);
  const double q = -0.5 * (x * x);
#if defined(__CUDA_ARCH__)
  const int decided = gamma3_internal::FastWedgeTest(y, q);
  if (decided != 0) return decided > 0;
#endif
  return y < detmath::Exp(q);
}

// The signed normal value of a pass from its magnitude in T.
template <typename T>
SAMPLER_HD T ZigguratValue(bool negative, T mag) {
  return negative ? -mag : mag;
}

// The rare part of a pass whose candidate left the fast path (layer 0: the
// tail; others: the wedge): true and *mag (in T: the tail's float64 r + a
// rounded once; the wedge's the candidate's), or false (the attempt is
// rejected).
template <typename T>
SAMPLER_HD bool ZigguratSlow(const ZigguratTable& tab,
                             const ZigguratCandidate<T>& c,
                             const Gamma3Words& w, uint64_t seed,
                             KindTag aux_tag, uint64_t item, uint32_t attempt,
                             T* mag, ZigguratPath* path = nullptr) {
  if (c.layer == 0) {
    if (path != nullptr) *path = ZigguratPath::kTail;
    double tail;
    if (!ZigguratTail(tab, seed, aux_tag, item, attempt, &tail)) return false;
    *mag = static_cast<T>(tail);
    return true;
  }
  const bool ok = ZigguratWedge(tab, c.layer, ZigguratWedgeX(tab, c, w), seed,
                                aux_tag, item, attempt);
  if (path != nullptr) {
    *path = ok ? ZigguratPath::kWedgeAccept : ZigguratPath::kWedgeReject;
  }
  *mag = c.mag;
  return ok;
}

// One ziggurat pass for attempt `attempt` of `item`: true and *z (exactly
// N(0, 1) given success, up to the rounding of its magnitude to T), or
// false (the attempt is rejected).
template <typename T>
SAMPLER_HD bool ZigguratNormal(const ZigguratTable& tab, const Gamma3Words& w,
                               uint64_t seed, KindTag aux_tag, uint64_t item,
                               uint32_t attempt, T* z,
                               ZigguratPath* path = nullptr) {
  const ZigguratCandidate<T> c = ZigguratFast<T>(tab, w);
  T mag = c.mag;
  if (path != nullptr) *path = ZigguratPath::kFast;
  if (!c.fast &&
      !ZigguratSlow(tab, c, w, seed, aux_tag, item, attempt, &mag, path)) {
    return false;
  }
  *z = ZigguratValue<T>(c.negative, mag);
  return true;
}

// The acceptance uniform of an attempt, (0, 1].
template <typename T>
SAMPLER_HD T Gamma3Ua(const Gamma3Words& w) {
  return Gamma3Uniform<T>(w.ua_lo, w.ua_hi, true);
}

// The boost uniform of an item (shape < 1 only), (0, 1]: the first uniform
// of its auxiliary block kGamma3BoostDraw, whichever attempt was accepted.
template <typename T>
SAMPLER_HD T Gamma3Boost(uint64_t seed, KindTag aux_tag, uint64_t item) {
  const PhiloxBlock b =
      gamma_internal::AttemptBlock(seed, aux_tag, item, kGamma3BoostDraw);
  return AuxUniform<T>(b, 0, true);
}

// One attempt from its words: the ziggurat pass, then version 2's test.
// On acceptance returns true and sets *dv.
template <typename T>
SAMPLER_HD bool Gamma3TryAttempt(const ZigguratTable& tab,
                                 const GammaShape<T>& g, const Gamma3Words& w,
                                 uint64_t seed, KindTag aux_tag, uint64_t item,
                                 uint32_t attempt, T* dv) {
  T z;
  if (!ZigguratNormal(tab, w, seed, aux_tag, item, attempt, &z)) return false;
  return GammaTryZ(g, z, Gamma3Ua<T>(w), dv);
}

// Runs the attempts of one item until the first acceptance (the CPU's
// loop; the kernel shares blocks between the two items of a pair).
// `tags` are the main and auxiliary kind tags.
template <typename T>
SAMPLER_HD GammaDraw<T> Gamma3DrawItem(
    const ZigguratTable& tab, KindTag tag, KindTag aux_tag, uint64_t seed,
    uint64_t item, const GammaShape<T>& g,
    uint32_t max_attempts = kGammaMaxAttempts) {
  const uint64_t block = Gamma3BlockIndex<T>(item);
  for (uint32_t a = 0; a < max_attempts; ++a) {
    const Gamma3Words w = Gamma3AttemptWords<T>(
        gamma_internal::AttemptBlock(seed, tag, block, a), item);
    T dv;
    if (Gamma3TryAttempt(tab, g, w, seed, aux_tag, item, a, &dv)) {
      return GammaDraw<T>{dv,
                          g.boost ? Gamma3Boost<T>(seed, aux_tag, item) : T(1)};
    }
  }
  return GammaDraw<T>{gamma_internal::QuietNaN<T>(), T(1)};
}

// Everything for one gamma item (tags GAM3 and GAX3); NaN only if the
// attempt cap was hit.
template <typename T>
SAMPLER_HD T Gamma3SampleItem(const ZigguratTable& tab, uint64_t seed,
                              uint64_t item, const GammaShape<T>& g, T scale,
                              T log_scale, bool log_output) {
  return GammaOutput(
      g,
      Gamma3DrawItem(tab, KindTag::kGamma3, KindTag::kGamma3Aux, seed, item, g),
      scale, log_scale, log_output);
}

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_GAMMA3_CORE_H_
