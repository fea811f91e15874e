// The one source of randomness: Philox4x32-10 under the counter layout of
// docs/randomness.md. Counter-based, so any item's stream can be computed
// by any thread, lane or CPU loop without state.
#ifndef SAMPLER_KERNELS_PHILOX_H_
#define SAMPLER_KERNELS_PHILOX_H_

#include <Random123/philox.h>

#include <cstdint>

#include "sampler/kernels/common.h"

namespace sampler::kernels {

// Kind tags: the fourth counter word. They keep the streams of the request
// kinds independent even when a client reuses one seed for several kinds.
// Values are part of the wire contract (golden tests pin them): never renumber.
// A kind whose bits change takes a new tag (docs/randomness.md lists the
// retired ones: gamma "GAM1" 0x47414d31 and Dirichlet "DIR1" 0x44495231 were
// contract version 1's).
enum class KindTag : uint32_t {
  kGamma = 0x47414d32,        // "GAM2", contract version 2
  kDirichlet = 0x44495232,    // "DIR2", contract version 2
  kCategorical = 0x43415431,  // "CAT1": retired (float prefix sums)
  kBoards = 0x42524431,       // "BRD1"
  // "CAT2": categorical with exact integer weights and 64-bit uniforms.
  kCategorical2 = 0x43415432,
};

struct PhiloxBlock {
  uint32_t v[4];
};

// One Philox4x32-10 block: key = seed, counter = (draw, item lo, item hi, tag).
SAMPLER_HD PhiloxBlock Philox(uint64_t seed, KindTag tag, uint64_t item,
                              uint32_t draw) {
  r123::Philox4x32::key_type key = {
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  r123::Philox4x32::ctr_type ctr = {{draw, static_cast<uint32_t>(item),
                                     static_cast<uint32_t>(item >> 32),
                                     static_cast<uint32_t>(tag)}};
  r123::Philox4x32 philox;
  r123::Philox4x32::ctr_type out = philox(ctr, key);
  return PhiloxBlock{{out.v[0], out.v[1], out.v[2], out.v[3]}};
}

// Philox4x32-10's key schedule for one seed: round r (0 to 9) uses the key
// (seed lo + r * 0x9E3779B9, seed hi + r * 0xBB67AE85) mod 2^32, Random123's
// Weyl sequence. A kernel whose items all share one seed can take the table
// from its launch parameters instead of adding it up per block (the gamma
// kernel: 18 of a block's ~64 instructions); the block's words are the same.
struct PhiloxRoundKeys {
  uint32_t k0[10];
  uint32_t k1[10];
};
inline constexpr uint32_t kPhiloxWeyl0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxWeyl1 = 0xBB67AE85u;

SAMPLER_HD PhiloxRoundKeys PhiloxKeySchedule(uint64_t seed) {
  PhiloxRoundKeys keys;
  for (uint32_t r = 0; r < 10; ++r) {
    keys.k0[r] = static_cast<uint32_t>(seed) + r * kPhiloxWeyl0;
    keys.k1[r] = static_cast<uint32_t>(seed >> 32) + r * kPhiloxWeyl1;
  }
  return keys;
}

// Uniform variates from raw words. Every conversion is exact (an integer
// times a power of two), so host and device agree bit for bit.

// [0, 1) with 24 random bits: the float32 grid.
SAMPLER_HD float UniformFloat(uint32_t x) {
  return static_cast<float>(x >> 8) * 0x1.0p-24f;
}
// (0, 1] with 24 random bits, for logarithms.
SAMPLER_HD float UniformOpenFloat(uint32_t x) {
  return static_cast<float>((x >> 8) + 1u) * 0x1.0p-24f;
}
// [0, 1) with 53 random bits from two words.
SAMPLER_HD double UniformDouble(uint32_t lo, uint32_t hi) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}
// (0, 1] with 53 random bits from two words.
SAMPLER_HD double UniformOpenDouble(uint32_t lo, uint32_t hi) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>((bits >> 11) + 1u) * 0x1.0p-53;
}

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_PHILOX_H_
