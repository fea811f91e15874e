// The per-position core of the board sampler: bit-parallel k-subset selection
// with popcount (board-positions-k-subsets.txt) under the exact layout of
// docs/randomness.md, section "Boards". Host and device share this one
// definition, so the CPU backend and the CUDA kernels produce the same bits.
//
// Nothing here allocates, throws or uses the standard library's containers:
// the caller owns every word array. A CUDA threadwise kernel instantiates the
// templates with a compile-time word count (kWords > 0) so that its local
// arrays stay in registers; the CPU passes kWords = 0 and a run-time count.
#ifndef SAMPLER_KERNELS_BOARDS_CORE_H_
#define SAMPLER_KERNELS_BOARDS_CORE_H_

#include <cstdint>

#include "sampler/kernels/common.h"
#include "sampler/kernels/philox.h"

// GCC warns about an unknown `#pragma unroll`; only nvcc needs the hint.
#if defined(__CUDACC__)
#define SAMPLER_BOARDS_UNROLL _Pragma("unroll")
#else
#define SAMPLER_BOARDS_UNROLL
#endif

namespace sampler::kernels {

SAMPLER_HD int Popcount32(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}

// 32-bit selection words of a board of `sites` sites: word j holds sites
// 32 j .. 32 j + 31, bit b being site 32 j + b.
SAMPLER_HD int BoardWords32(int32_t sites) { return (sites + 31) / 32; }

// 64-bit output words per colour.
SAMPLER_HD int BoardOutputWords64(int32_t sites) { return (sites + 63) / 64; }

// Philox blocks consumed by one selection step: each block feeds four words.
SAMPLER_HD int BoardBlocksPerStep(int words32) { return (words32 + 3) / 4; }

// The bits of word j that are sites of the board; the rest must stay 0.
SAMPLER_HD uint32_t BoardSiteMask(int32_t sites, int j) {
  const int32_t rest = sites - 32 * j;
  if (rest >= 32) return ~0u;
  if (rest <= 0) return 0u;
  return (1u << rest) - 1u;
}

// Places `k` stones uniformly at random among the sites set in `vacant`.
//
// On return `subset` holds the chosen sites and they are cleared from `vacant`,
// so that the next colour starts from what is left. `*step` is the position's
// global step counter t: it runs on across colours, and step t reads block
// `draw = t * B + j / 4`, word `j mod 4`, for selection word j.
//
// `cand` and `sel` are scratch. Every array has `words` entries, where
// words = kWords if kWords > 0, else `words_rt`.
//
// Precondition: 0 <= k <= popcount(vacant). The host validates the spec; with
// more stones than vacant sites the loop would never end.
template <int kWords = 0>
SAMPLER_HD void SelectStones(uint64_t seed, uint64_t item, int words_rt,
                             int32_t k, uint32_t* step, uint32_t* vacant,
                             uint32_t* cand, uint32_t* sel, uint32_t* subset) {
  const int words = kWords > 0 ? kWords : words_rt;
  const uint32_t blocks = static_cast<uint32_t>(BoardBlocksPerStep(words));
  SAMPLER_BOARDS_UNROLL
  for (int j = 0; j < words; ++j) {
    cand[j] = vacant[j];
    subset[j] = 0;
  }
  // Invariant: popcount(cand) >= k - n, so the loop ends with probability 1;
  // each step halves the candidates on average (about log2(sites) steps).
  int32_t n = 0;
  while (n != k) {
    const uint32_t first_draw = *step * blocks;
    PhiloxBlock block{};
    int32_t m = 0;
    SAMPLER_BOARDS_UNROLL
    for (int j = 0; j < words; ++j) {
      if (j % 4 == 0) {
        block = Philox(seed, KindTag::kBoards, item,
                       first_draw + static_cast<uint32_t>(j / 4));
      }
      sel[j] = block.v[j % 4] & cand[j];
      m += Popcount32(sel[j]);
    }
    if (n + m <= k) {
      // Include: the whole selection fits.
      SAMPLER_BOARDS_UNROLL
      for (int j = 0; j < words; ++j) {
        subset[j] |= sel[j];
        cand[j] &= ~sel[j];
      }
      n += m;
    } else {
      // Exclude: too many; only the selected candidates stay in the running.
      SAMPLER_BOARDS_UNROLL
      for (int j = 0; j < words; ++j) cand[j] = sel[j];
    }
    ++*step;
  }
  SAMPLER_BOARDS_UNROLL
  for (int j = 0; j < words; ++j) vacant[j] &= ~subset[j];
}

// Scratch words that SampleBoardPosition needs: vacant, cand, sel and subset.
SAMPLER_HD int BoardScratchWords32(int32_t sites) {
  return 4 * BoardWords32(sites);
}

// Samples position `item`: `stones[c]` stones of colour c, for c in
// [0, colours), into `out`, laid out [colour][BoardOutputWords64(sites)]
// (site s = bit s mod 64 of word s / 64; bits past `sites` are 0).
//
// `scratch` holds BoardScratchWords32(sites) words. A kWords > 0 must equal
// BoardWords32(sites). Precondition: a valid spec (sum of stones <=
// sites), as SelectStones requires.
template <int kWords = 0>
SAMPLER_HD void SampleBoardPosition(uint64_t seed, uint64_t item, int32_t sites,
                                    const int32_t* stones, int colours,
                                    uint32_t* scratch, uint64_t* out) {
  const int words = kWords > 0 ? kWords : BoardWords32(sites);
  // ceil(ceil(sites / 32) / 2) = ceil(sites / 64), written in terms of
  // `words` so that with kWords > 0 every loop bound is a compile-time
  // constant and the scratch arrays can stay in registers.
  const int words64 = (words + 1) / 2;
  uint32_t* vacant = scratch;
  uint32_t* cand = scratch + words;
  uint32_t* sel = scratch + 2 * words;
  uint32_t* subset = scratch + 3 * words;
  SAMPLER_BOARDS_UNROLL
  for (int j = 0; j < words; ++j) vacant[j] = BoardSiteMask(sites, j);
  uint32_t step = 0;
  for (int c = 0; c < colours; ++c) {
    SelectStones<kWords>(seed, item, words, stones[c], &step, vacant, cand, sel,
                         subset);
    uint64_t* colour_out = out + static_cast<int64_t>(c) * words64;
    SAMPLER_BOARDS_UNROLL
    for (int i = 0; i < words64; ++i) {
      const uint64_t lo = subset[2 * i];
      const uint64_t hi = 2 * i + 1 < words ? subset[2 * i + 1] : 0u;
      colour_out[i] = lo | (hi << 32);
    }
  }
}

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_BOARDS_CORE_H_
