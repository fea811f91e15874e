// The per-row arithmetic of the categorical sampler (docs/randomness.md,
// section "Categorical, contract CAT2"; Steele & Tristan, Algorithms 8 to
// 10), shared by the CPU backend and the CUDA kernel so that both choose
// identical indices.
//
// Exact integer weights. Each row's weights w_i (float or double, or
// exp(l_i - max l) from logits) are quantized to 64-bit integers
// q_i = floor(w_i * 2^s), with one power-of-two scale s per row chosen from
// a double-precision sum of the row (RowScaleSum, RowScale) so that the
// integer total Q = sum q_i lies in about [2^60 - K, 2^61]. A power-of-two
// scaling of a binary float followed by floor is exact (QuantizeWeight works
// on the bits), so q_i differs from w_i * 2^s by less than one unit: less
// than 2^-59.9 of the row total. Every sum after that is an exact integer sum,
// so the butterfly table, its search and the textbook prefix sum all give the
// same answer whatever the order of additions or the lane, and the host and the
// device agree by construction. A draw takes a 64-bit uniform integer r and
// picks the category whose integer interval [C_i, C_i + q_i) holds
// X = floor(r * Q / 2^64) (MulHi64); exactly ceil(C * 2^64 / Q) values of r
// give an X below C, so the realized probabilities are known in closed form
// (RealizedCount) and tests check them exactly.
//
// The CUDA kernel runs 32 rows per warp, loads weights transposed and builds
// each block's butterfly-patterned table with __shfl_xor_sync: every entry of
// that table is a node of one row's pairwise summation tree over an aligned
// block of 32 quantized weights (Figure 4), each node being left child +
// right child. The CPU twin computes the same trees row by row, level by
// level, and searches them as lane r = row mod 32 would (with exact integers
// the lane no longer changes the answer, but the search keeps the paper's
// shape: lanes whose bit is clear add the left half's sum to `low`, lanes
// whose bit is set subtract the right half's sum from `high`).
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

// Smallest j < n with u < prefix[j]; n - 1 if there is none (never, for
// X = floor(r Q / 2^64) < Q).
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

// The category that lane `lane` finds for the scaled uniform u (Algorithm
// 9; under CAT2, u = X and the weights are the integers q). `w` and `table`
// are the row's weights and its table from BuildRowTable.
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

// ------------------------------------------------ exact integer weights --

// Bits of the integer scale: Q = sum q_i < 2^61 (RowScale), far from 2^64.
inline constexpr int kScaleBits = 60;

SAMPLER_HD int CountLeadingZeros64(uint64_t x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}

// floor(log2(x)) for a finite x > 0, subnormals included; integer work on
// the bits, so exact and identical on host and device.
SAMPLER_HD int FloorLog2(double x) {
  const uint64_t bits = detmath::Bits(x);
  const int biased = static_cast<int>(bits >> 52);
  if (biased != 0) return biased - 1023;
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  return -1074 + (63 - CountLeadingZeros64(fraction));
}

// The power-of-two scale s of a row from its double sum S_d (RowScaleSum):
// s = 60 - floor(log2 S_d). With 2^f <= S_d < 2^(f+1) and S_d within
// K * 2^-53 of the true total S (K < 2^31), S < 2^(f+2), so every
// w_i * 2^s < 2^62 and Q <= S * 2^s < 2^61 (no partial sum can overflow),
// while Q > S * 2^s - K >= 2^60 (1 - 2^-22) - K: one unit is at most
// 2^-59.9 of the total. Rows outside a segment (the GPU's idle lanes) may
// sum to 0; they get scale 0 and quantize to 0.
SAMPLER_HD int RowScale(double sum) {
  return sum > 0 ? kScaleBits - FloorLog2(sum) : 0;
}

// floor(w * 2^scale) for a finite w >= 0 (float or double, subnormals
// included) with w * 2^scale < 2^63: the significand shifted by the
// exponent, exact (no floating-point rounding anywhere). The sign bit is
// dropped first: -0.0 is a valid weight of zero (a test pins it: once the
// sign reached the exponent and made -0.0 a large weight).
SAMPLER_HD uint64_t QuantizeWeight(float w, int scale) {
  const uint32_t bits = detmath::Bits(w) & 0x7fffffffu;
  const int biased = static_cast<int>(bits >> 23);
  const uint64_t fraction = bits & ((1u << 23) - 1u);
  const uint64_t significand =
      biased != 0 ? (fraction | (uint64_t{1} << 23)) : fraction;
  const int shift = (biased != 0 ? biased : 1) - 150 + scale;
  if (significand == 0) return 0;
  if (shift >= 0) return shift < 64 ? significand << shift : 0;
  return -shift < 64 ? significand >> -shift : 0;
}
SAMPLER_HD uint64_t QuantizeWeight(double w, int scale) {
  const uint64_t bits = detmath::Bits(w) & 0x7fffffffffffffffu;
  const int biased = static_cast<int>(bits >> 52);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  const uint64_t significand =
      biased != 0 ? (fraction | (uint64_t{1} << 52)) : fraction;
  const int shift = (biased != 0 ? biased : 1) - 1075 + scale;
  if (significand == 0) return 0;
  if (shift >= 0) return shift < 64 ? significand << shift : 0;
  return -shift < 64 ? significand >> -shift : 0;
}

// QuantizeWeight by floating-point multiplication, for kernels where the
// bit path (about 15 integer instructions a weight) is the bottleneck:
// floor(w * 2^scale) = round-toward-zero conversion of w * 2^a * 2^b, with
// a + b = scale, computed in T. Exact, because
//   * scale >= 0: a = min(scale, the largest exponent of T), b = scale - a
//     >= 0 (b <= 82 for float, whose scales stay below 60 + 149 = 209 since
//     S_d >= 2^-149; b <= 111 for double, scale <= 60 + 1074). Each factor
//     is a normal power of two >= 1 and every intermediate is at most
//     w * 2^scale < 2^62 (RowScale), so nothing overflows, and multiplying
//     any representable value (subnormals included) by 2^a with a >= 0
//     without overflow is exact;
//   * scale < 0: scale >= 60 - 1024 = -964 (double; S_d at most +inf) and
//     scale >= 60 - 159 = -99 (float: K < 2^31 weights below 2^128), both
//     above T's smallest normal exponent, so 2^scale is one normal factor
//     (b = 0). w * 2^scale is exact where it is normal; below the smallest
//     normal it may round, but it is then below 1 and rounds to at most the
//     smallest normal (< 1), so the floor stays 0, as on the bit path;
//   * the conversion of a value in [0, 2^62) toward zero is its floor;
//     -0.0 gives 0 (the bit path drops the sign the same way).
// Device code must not flush subnormals to zero (the build never passes
// -ftz=true or --use_fast_math). tests/unit/categorical_quantize_test.cc
// compares this with QuantizeWeight for every exponent of both precisions,
// subnormals, -0.0 and every scale a row can have.
template <typename T>
struct ScaleFactors {
  T first;
  T second;
};

template <typename T>
SAMPLER_HD ScaleFactors<T> ScaleFactorsFor(int scale) {
  constexpr int kMaxExponent = sizeof(T) == 4 ? 127 : 1023;
  const int a = scale > kMaxExponent ? kMaxExponent : scale;
  if constexpr (sizeof(T) == 4) {
    return {detmath::Pow2(a), detmath::Pow2(scale - a)};
  } else {
    return {detmath::Pow2D(a), detmath::Pow2D(scale - a)};
  }
}

SAMPLER_HD uint64_t TruncateToUint64(float x) {  // x in [0, 2^64) or -0.0
#if defined(__CUDA_ARCH__)
  return __float2ull_rz(x);
#else
  return x > 0 ? static_cast<uint64_t>(x) : 0;
#endif
}
SAMPLER_HD uint64_t TruncateToUint64(double x) {
#if defined(__CUDA_ARCH__)
  return __double2ull_rz(x);
#else
  return x > 0 ? static_cast<uint64_t>(x) : 0;
#endif
}

template <typename T>
SAMPLER_HD uint64_t QuantizeByMultiply(T w, ScaleFactors<T> f) {
  const T once = w * f.first;
  return TruncateToUint64(once * f.second);
}

// The double sum S_d that fixes a row's scale, in the order the CUDA kernel
// forms it from its transposed loads: the remnant sequentially
// (w_0 + w_1 + ... + w_{R-1}, from 0); column sums c_l = sum over blocks b,
// in order, of w_{R + 32 b + l} (lane l's running sum, from 0); the pairwise
// tree of the 32 column sums (the butterfly's root); S_d = remnant + tree
// (just the remnant when nb = 0). Every weight is widened to double first,
// so float rows sum without overflow.
template <typename T>
SAMPLER_HD double RowScaleSum(const T* w, int64_t categories) {
  const int64_t remnant = RemnantSize(categories);
  const int64_t blocks = NumBlocks(categories);
  double remnant_sum = 0;
  for (int64_t j = 0; j < remnant; ++j) {
    remnant_sum = remnant_sum + static_cast<double>(w[j]);
  }
  if (blocks == 0) return remnant_sum;
  double columns[kBlock];
  for (int l = 0; l < kBlock; ++l) {
    double c = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      c = c + static_cast<double>(w[remnant + kBlock * b + l]);
    }
    columns[l] = c;
  }
  double tree[kBlock];
  return remnant_sum + BuildBlockTree(columns, tree);
}

// The high 64 bits of a * b: X = floor(r * Q / 2^64) < Q for the draw.
SAMPLER_HD uint64_t MulHi64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// How many of the 2^64 values of r give X = MulHi64(r, total) < c, for
// c <= total (the closed form of the realized distribution: category i is
// drawn by RealizedCount(C_i + q_i) - RealizedCount(C_i) values of r).
// Host only (the tests).
inline unsigned __int128 RealizedCount(uint64_t c, uint64_t total) {
  // X < c  <=>  r * Q < c * 2^64  <=>  r < ceil(c * 2^64 / Q).
  const unsigned __int128 scaled = static_cast<unsigned __int128>(c) << 64;
  return (scaled + total - 1) / total;
}

// ------------------------------------------------------------- draws --

// Draw d of a row uses a 64-bit uniform integer: words 2 (d mod 2) (low
// half) and 2 (d mod 2) + 1 (high half) of Philox block d / 2.
inline constexpr int kDrawsPerBlock = 2;

// Word i (0..3) of a block by selection rather than a run-time array index,
// which would put the block in a GPU thread's local memory.
SAMPLER_HD uint32_t BlockWord(const PhiloxBlock& block, int i) {
  const uint32_t low = (i & 1) != 0 ? block.v[1] : block.v[0];
  const uint32_t high = (i & 1) != 0 ? block.v[3] : block.v[2];
  return (i & 2) != 0 ? high : low;
}

SAMPLER_HD uint64_t DrawBits(const PhiloxBlock& block, int32_t d) {
  const int k = 2 * (d % kDrawsPerBlock);
  return (static_cast<uint64_t>(BlockWord(block, k + 1)) << 32) |
         BlockWord(block, k);
}

// The Philox block that draw d of `item` reads.
SAMPLER_HD PhiloxBlock DrawBlock(uint64_t seed, uint64_t item, int32_t d) {
  return Philox(seed, KindTag::kCategorical2, item,
                static_cast<uint32_t>(d / kDrawsPerBlock));
}

// X = floor(r * Q / 2^64) of draw d of `item`, for a row of total Q; `block`
// carries the Philox block from draw to draw and is refreshed at every even
// d (the draw loop of the kernels that walk their draws in order from 0).
SAMPLER_HD uint64_t NextDrawX(uint64_t seed, uint64_t item, int32_t d,
                              uint64_t total, PhiloxBlock& block) {
  if (d % kDrawsPerBlock == 0) block = DrawBlock(seed, item, d);
  return MulHi64(DrawBits(block, d), total);
}

// One draw, complete: X = floor(r * Q / 2^64), then the butterfly search of
// the integer table. `q` and `table` come from QuantizeWeight and
// BuildRowTable<uint64_t>, `total` is Q. Every category with q_i > 0 owns
// [C_i, C_i + q_i), one with q_i = 0 nothing, so no fix-up is needed.
SAMPLER_HD int64_t ButterflyDraw(const uint64_t* q, const uint64_t* table,
                                 int64_t categories, uint64_t total, uint64_t r,
                                 int lane) {
  return ButterflySearchRow(q, table, categories, MulHi64(r, total), lane);
}

}  // namespace sampler::kernels::categorical

#endif  // SAMPLER_KERNELS_CATEGORICAL_CORE_H_
