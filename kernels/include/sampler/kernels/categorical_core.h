// The per-row arithmetic of the categorical sampler (docs/randomness.md,
// section "Categorical"; Steele & Tristan, Algorithms 8 to 10), shared by the
// CPU backend and the CUDA kernel so that both choose identical indices.
//
// The CUDA kernel runs 32 rows per warp, loads weights transposed and builds
// each block's butterfly-patterned table with __shfl_xor_sync: every entry of
// that table is a node of one row's pairwise summation tree over an aligned
// block of 32 weights (Figure 4), each node being left child + right child.
// Since IEEE addition is commutative and a node's value depends only on its
// children, the node values do not depend on which lane computes them. The CPU
// twin therefore computes the same trees row by row, level by level, and
// searches them exactly as lane r = row mod 32 would: the lane decides from
// the bits of r, not from the data, whether a midpoint is low + (left half)
// or high - (right half), which is why the lane is part of the contract.
//
// Row table layout (K entries, the positions of the paper's p'): with
// R = K mod 32 and nb = K / 32,
//   table[j]              = P_j, the sequential prefix of the remnant, j < R;
//   table[R + 32 b + s]   = node s of block b's tree, s < 31 (TreeSlot);
//   table[R + 32 b + 31]  = E_b, the running prefix at the end of block b.
//
// Nothing here allocates, throws or uses standard containers; the caller owns
// every array.
#ifndef SAMPLER_KERNELS_CATEGORICAL_CORE_H_
#define SAMPLER_KERNELS_CATEGORICAL_CORE_H_

#include <cstdint>

#include "sampler/kernels/common.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/philox.h"

namespace sampler::kernels::categorical {

// Weights per block: one per lane.
inline constexpr int kBlock = kWarpSize;
// Tree levels above the leaves: halves of 16, 8, 4, 2, 1 during the search.
inline constexpr int kLevels = 5;
static_assert(kBlock == 1 << kLevels, "the butterfly needs 32 = 2^5 lanes");
// Slot of E_b within a block's 32 table entries (after the 31 tree nodes).
inline constexpr int kBlockEndSlot = kBlock - 1;

SAMPLER_HD int64_t RemnantSize(int64_t categories) {
  return categories % kBlock;
}
SAMPLER_HD int64_t NumBlocks(int64_t categories) { return categories / kBlock; }
// The lane of a row: its item index within the request, modulo the warp.
SAMPLER_HD int LaneOf(uint64_t item) {
  return static_cast<int>(item % static_cast<uint64_t>(kBlock));
}

// Slot within a block of the tree node of `level` (1..5; it sums 2^level
// weights) that starts at position `first` (a multiple of 2^level). Levels
// are stored one after another: 16 pair sums, 8 quad sums, ..., the root.
SAMPLER_HD int TreeSlot(int level, int first) {
  return (kBlock - ((2 * kBlock) >> level)) + (first >> level);
}

// The pairwise tree of one block of 32 weights `w`, level by level; each node
// is left + right. Returns the root, the block total T_b.
template <typename T>
SAMPLER_HD T BuildBlockTree(const T* w, T* tree) {
  for (int i = 0; i < kBlock / 2; ++i) {
    tree[TreeSlot(1, 2 * i)] = w[2 * i] + w[2 * i + 1];
  }
  for (int level = 2; level <= kLevels; ++level) {
    const int half = 1 << (level - 1);
    for (int first = 0; first < kBlock; first += 2 * half) {
      tree[TreeSlot(level, first)] = tree[TreeSlot(level - 1, first)] +
                                     tree[TreeSlot(level - 1, first + half)];
    }
  }
  return tree[TreeSlot(kLevels, 0)];
}

// The tree node of `level` (0 = a single weight) starting at `first`.
template <typename T>
SAMPLER_HD T TreeNode(const T* w, const T* tree, int level, int first) {
  return level == 0 ? w[first] : tree[TreeSlot(level, first)];
}

// Fills the row table (layout above) from the row's K weights and returns the
// row total S: the remnant's sequential prefix, then each block's tree and
// running total E_b = E_{b-1} + T_b, starting from P_{R-1} (or 0).
template <typename T>
SAMPLER_HD T BuildRowTable(const T* w, int64_t categories, T* table) {
  const int64_t remnant = RemnantSize(categories);
  const int64_t blocks = NumBlocks(categories);
  T sum = T(0);
  for (int64_t j = 0; j < remnant; ++j) {
    sum = sum + w[j];
    table[j] = sum;
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t base = remnant + kBlock * b;
    const T block_total = BuildBlockTree(w + base, table + base);
    sum = sum + block_total;
    table[base + kBlockEndSlot] = sum;
  }
  return sum;
}

// The midpoint prefix that a lane compares with (Algorithm 10, lines 18-20):
// lanes whose bit is clear hold the left half's sum in the butterfly table
// and add it to the prefix before the interval; lanes whose bit is set hold
// the right half's sum and subtract it from the prefix at the interval's end.
// Exactly equal in real arithmetic, not in floating point.
template <typename T>
SAMPLER_HD T ButterflyCompareValue(T low, T high, T y, bool lane_bit_set) {
  return lane_bit_set ? high - y : low + y;
}

// Butterfly binary search within one block (Algorithm 10) for lane `lane`:
// `low` is the prefix before the block, `high` the prefix at its end, `u` the
// scaled uniform. Returns the position 0..31 within the block.
template <typename T>
SAMPLER_HD int ButterflySearchBlock(const T* w, const T* tree, T low, T high,
                                    T u, int lane) {
  int first = 0;  // start of the interval still under consideration
  for (int level = kLevels - 1; level >= 0; --level) {
    const int bit = 1 << level;  // size of each half of the interval
    const bool right = (lane & bit) != 0;
    const T y = TreeNode(w, tree, level, right ? first + bit : first);
    const T compare = ButterflyCompareValue(low, high, y, right);
    if (u < compare) {
      high = compare;  // keep the left half
    } else {
      low = compare;  // keep the right half
      first += bit;
    }
  }
  return first;
}

// Smallest j < n with u < prefix[j]; n - 1 if there is none (u may reach
// the total through rounding of S * u).
template <typename T>
SAMPLER_HD int64_t LinearSearch(const T* prefix, int64_t n, T u) {
  for (int64_t j = 0; j < n; ++j) {
    if (u < prefix[j]) return j;
  }
  return n - 1;
}

// Binary search over `blocks` >= 1 block-end prefixes E_b stored `stride`
// elements apart (Algorithm 9, lines 6-9): the first block whose end
// exceeds u, or the last block. The CUDA kernel keeps E_b of its 32 rows
// interleaved (stride 32), the CPU table keeps them 32 apart as well.
template <typename T>
SAMPLER_HD int64_t SearchBlockEnds(const T* ends, int64_t stride,
                                   int64_t blocks, T u) {
  int64_t lo = 0;
  int64_t hi = blocks - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (u < ends[stride * mid]) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// FindBlock over the row table of BuildRowTable.
template <typename T>
SAMPLER_HD int64_t FindBlock(const T* table, int64_t categories, T u) {
  return SearchBlockEnds(table + RemnantSize(categories) + kBlockEndSlot,
                         int64_t{kBlock}, NumBlocks(categories), u);
}

// The category that lane `lane` finds for the scaled uniform u = S * U
// (Algorithm 9), before the zero-weight fix-up. `w` and `table` are the row's
// weights and its table from BuildRowTable.
template <typename T>
SAMPLER_HD int64_t ButterflySearchRow(const T* w, const T* table,
                                      int64_t categories, T u, int lane) {
  const int64_t remnant = RemnantSize(categories);
  if (NumBlocks(categories) == 0) return LinearSearch(table, remnant, u);
  const int64_t b = FindBlock(table, categories, u);
  // Algorithm 9, lines 13-17: a u below the remnant's total lies in the
  // remnant, searched linearly. (For b > 0 the block search already ensures
  // u >= E_{b-1}, so only block 0 can lead here.)
  if (b == 0 && remnant > 0 && u < table[remnant - 1]) {
    return LinearSearch(table, remnant, u);
  }
  const int64_t base = remnant + kBlock * b;
  const T low =
      b > 0 ? table[base - 1] : (remnant > 0 ? table[remnant - 1] : T(0));
  const T high = table[base + kBlockEndSlot];
  return base +
         ButterflySearchBlock(w + base, table + base, low, high, u, lane);
}

// A zero-weight category can be chosen only through rounding at a boundary;
// it becomes the first non-zero category above it, or else the last below.
// `weight(i)` returns w_i in T; the CUDA kernel computes it from global
// memory (and from logits) instead of a table.
template <typename T, typename WeightAt>
SAMPLER_HD int64_t SkipZeroWeightBy(const WeightAt& weight, int64_t categories,
                                    int64_t j) {
  if (weight(j) != T(0)) return j;
  for (int64_t i = j + 1; i < categories; ++i) {
    if (weight(i) != T(0)) return i;
  }
  for (int64_t i = j - 1; i >= 0; --i) {
    if (weight(i) != T(0)) return i;
  }
  return j;  // all zero: rejected by validation
}

template <typename T>
struct WeightsArray {
  const T* w;
  SAMPLER_HD T operator()(int64_t i) const { return w[i]; }
};

template <typename T>
SAMPLER_HD int64_t SkipZeroWeight(const T* w, int64_t categories, int64_t j) {
  return SkipZeroWeightBy<T>(WeightsArray<T>{w}, categories, j);
}

// Weights from logits: w_j = exp(l_j - max l) with the deterministic exp, so
// that the largest weight is exactly 1 and -inf logits give exactly 0.
template <typename T>
SAMPLER_HD void LogitsToWeights(const T* logits, int64_t categories, T* w) {
  T m = logits[0];
  for (int64_t j = 1; j < categories; ++j) {
    if (logits[j] > m) m = logits[j];
  }
  for (int64_t j = 0; j < categories; ++j) w[j] = detmath::Exp(logits[j] - m);
}

// Which uniform draw d of a row uses: float takes one word per draw, four
// draws per Philox block; double takes two words, two draws per block.
template <typename T>
struct DrawUniforms;

// Word i (0..3) of a block by selection rather than a run-time array index,
// which would put the block in a GPU thread's local memory.
SAMPLER_HD uint32_t BlockWord(const PhiloxBlock& block, int i) {
  const uint32_t low = (i & 1) != 0 ? block.v[1] : block.v[0];
  const uint32_t high = (i & 1) != 0 ? block.v[3] : block.v[2];
  return (i & 2) != 0 ? high : low;
}

template <>
struct DrawUniforms<float> {
  static constexpr int kPerBlock = 4;
  static SAMPLER_HD float Uniform(const PhiloxBlock& block, int32_t d) {
    return UniformFloat(BlockWord(block, d % 4));
  }
};

template <>
struct DrawUniforms<double> {
  static constexpr int kPerBlock = 2;
  static SAMPLER_HD double Uniform(const PhiloxBlock& block, int32_t d) {
    const int k = 2 * (d % 2);
    return UniformDouble(BlockWord(block, k), BlockWord(block, k + 1));
  }
};

// The Philox block that draw d of `item` reads.
template <typename T>
SAMPLER_HD PhiloxBlock DrawBlock(uint64_t seed, uint64_t item, int32_t d) {
  return Philox(seed, KindTag::kCategorical, item,
                static_cast<uint32_t>(d / DrawUniforms<T>::kPerBlock));
}

// The uniform in [0, 1) of draw d of `item` (one Philox call; loops over
// many draws should reuse each block through DrawUniforms instead).
template <typename T>
SAMPLER_HD T DrawUniform(uint64_t seed, uint64_t item, int32_t d) {
  return DrawUniforms<T>::Uniform(DrawBlock<T>(seed, item, d), d);
}

// One draw, complete: scale the uniform by the row total (one multiply in
// T), search, fix up. `total` is BuildRowTable's result.
template <typename T>
SAMPLER_HD int64_t ButterflyDraw(const T* w, const T* table, int64_t categories,
                                 T total, T uniform, int lane) {
  const T u = total * uniform;
  const int64_t j = ButterflySearchRow(w, table, categories, u, lane);
  return SkipZeroWeight(w, categories, j);
}

}  // namespace sampler::kernels::categorical

#endif  // SAMPLER_KERNELS_CATEGORICAL_CORE_H_
