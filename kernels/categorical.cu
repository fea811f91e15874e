// CUDA kernels of SampleCategorical, bit-identical to SampleCategoricalCpu
// (kButterfly, kWarpPerRow) and to SampleCategoricalReferenceCpu
// (kPrefixSum). The contract is docs/randomness.md, section "Categorical"
// (tag CAT2); the per-row arithmetic comes from categorical_core.h.
//
// Exact integer weights (CAT2): per row, a first pass over the blocks forms
// the double scale sum S_d (each lane its column of the 32 rows, one double
// butterfly at the end), which fixes the power-of-two scale; the second
// pass quantizes every weight to a uint64 as it is loaded and builds the
// butterfly table on those integers; draws map a 64-bit uniform to
// X = floor(r Q / 2^64). Every table entry, block end and prefix is an
// exact integer, so the lane's add/subtract choice never changes a result.
//
// kButterfly (Steele & Tristan, Algorithms 7 to 10). A warp takes 32 rows of
// one segment; hardware lane r serves the row whose item index is r mod 32,
// so the first warp of a chunk that starts mid-warp leaves its low lanes
// idle. Per row: the remnant (K mod 32 leading columns), then nb = K / 32
// blocks of 32 columns. Two kernels, one per class of K (K < 64: at most
// one block; K >= 64), since their register needs differ; a batch is
// ordered by class and launched as at most two grids.
//
//   * Transposed, coalesced loads (Algorithm 5): for block b, lane r loads
//     column R + 32 b + r of each of the warp's 32 rows into a[k] (k = row),
//     so every load instruction reads 128 contiguous bytes.
//   * The butterfly-patterned table (Algorithm 8), built in place with 31
//     __shfl_xor_sync: afterwards a[31] is the block total T_b of row r
//     (lane r), and a[0..30] hold, spread over the lanes, exactly the tree
//     nodes that each row's butterfly search will ask for (Figure 5; the
//     node of row r at `level` for interval start f is register
//     (2^level - 1) | (r & ~(2^(level+1) - 1)) of lane f | (r & (2^(level+1)
//     - 1)); checked exhaustively by a simulation of the pattern). Every node
//     is left + right of one row's aligned pairwise tree, and IEEE addition
//     is commutative, so the values are those of BuildBlockTree.
//   * Block-end prefixes E_b = E_{b-1} + T_b per lane, kept in shared memory
//     (stride 32, conflict-free) or, past 64 blocks (float), in the
//     workspace. Algorithm 7 keeps a whole K-entry table p' per thread in
//     local memory instead; that would double the memory traffic. Only the
//     chosen block's table is needed for a draw, and its tree sums are
//     deterministic, so the kernel searches the E_b (Algorithm 9), then
//     reloads each row's chosen block transposed (row k's block b_k, column
//     r: still 128 contiguous bytes per load) and rebuilds its table. When
//     every row's block is the one already in registers (always for
//     K < 64, and for the last block after the first pass) nothing is
//     reloaded.
//   * The butterfly search (Algorithm 10) with 31 __shfl_sync per draw:
//     each level, lane r reads its node from lane f | (r & (span - 1)),
//     fetching every candidate register since which one it needs depends
//     on r's high bits (registers cannot be indexed at run time), and keeps
//     its own by a tree of selects on those bits. The bounds low/high and
//     the compare values low + y / high - y are the contract's.
//   * The remnant: its R < 32 columns of the 32 rows are staged through
//     shared memory (coalesced loads, a 33-element row stride), where each
//     lane then forms its row's sequential prefixes P_j for the linear
//     search.
//   * Logits: one extra pass computes each row's maximum with the same
//     butterfly (max is exact in any order), then w = detmath::Exp(l - max)
//     wherever a weight is read.
//
// Measured on an H200 (bench/results/categorical-cat2-h200-2026-11-23.md):
// CAT2 reads float32 weights at 20% to 24% of the copy bandwidth (one draw
// per row, K = 32 to 4096), float64 at 37% to 46%; the float CAT1 kernel
// read at 80% to 90% (bench/results/categorical-kernel.md). The extra
// scale pass, the per-weight quantization and the 64-bit shuffles (twice
// the float ones) make it instruction- and latency-bound at 137 (K < 64)
// and 213 (K >= 64) registers: see that report for what would recover it.
//
// kPrefixSum (the paper's baseline, Algorithms 1 and 3): one thread per row
// reads its row sequentially, writes p_j to the workspace (interleaved by
// lane so the writes coalesce) and binary-searches it.
//
// kWarpPerRow (a comparison point for benchmarks): one warp per row, lane j
// loads column R + 32 b + j (coalesced, no transposition); xor butterflies
// give every lane the block's tree sums, and the warp runs the contract's
// search for the row's lane together.
//
// kRowSplit (categorical_row_split.cu), kLanes (categorical_lanes.cu, one
// row per lane for K up to 128), kWarpTiles (categorical_warp_tiles.cu,
// one warp per row by tiles of 128 for K up to 2^17) and kLaneGroups
// (categorical_lane_groups.cu, 1 to 16 lanes a row for K up to 512) live in
// their own files; this one plans and launches them.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "categorical_block_row.h"
#include "categorical_lane_groups.h"
#include "categorical_lanes.h"
#include "categorical_row_split.h"
#include "categorical_segments.cuh"
#include "categorical_warp_row.cuh"
#include "categorical_warp_tiles.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/categorical.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda {
namespace {

namespace cat = ::sampler::kernels::categorical;

// Four warps per block: shared memory is per warp, so small blocks waste
// less of it to block granularity.
constexpr int kWarpsPerBlock = 4;
constexpr int kBlockThreads = kWarpsPerBlock * kWarpSize;
// Row stride of the remnant staging area: 33 makes lane r's walk along its
// own row (address 33 r + j) hit 32 different banks.
constexpr int kRemnantStride = kWarpSize + 1;
// Shared memory per warp for block ends.
constexpr int kBlockEndBytes = 8192;
// Blocks of 128 threads per multiprocessor that the register-capped
// instances are compiled for: 6 (80 registers) for K < 64, 5 (96) beyond.
constexpr int kCappedMinBlocksSingle = 6;
constexpr int kCappedMinBlocksMulti = 5;

// Tables, block ends, remnant prefixes and the workspace hold exact 64-bit
// integer weights (categorical_core.h), whatever the input precision.
using U = uint64_t;

constexpr int64_t ButterflyBlockCap() {
  return kBlockEndBytes / (kWarpSize * static_cast<int>(sizeof(U)));
}
constexpr int64_t WarpPerRowBlockCap() {
  return kBlockEndBytes / static_cast<int>(sizeof(U));
}

template <typename T>
struct KernelParams {
  const CategoricalSegment* segments;
  int32_t num_segments;
  // This launch runs tasks [task_offset, task_end).
  int64_t task_offset;
  int64_t task_end;
  const T* values;
  int32_t* out;
  U* workspace;
  // Shared memory per warp, in 8-byte units.
  int32_t smem_warp_elems;
  int32_t smem_remnant;
  int32_t smem_rowmax;
  int32_t smem_scale;
  int32_t smem_block_ends;
  int32_t smem_block_cap;
};

// A value staged in a 64-bit shared-memory slot by its bits.
__device__ __forceinline__ U StageBits(float v) { return detmath::Bits(v); }
__device__ __forceinline__ U StageBits(double v) { return detmath::Bits(v); }
template <typename T>
__device__ __forceinline__ T Staged(U bits) {
  if constexpr (std::is_same_v<T, float>) {
    return detmath::FloatFromBits(static_cast<uint32_t>(bits));
  } else {
    return detmath::DoubleFromBits(bits);
  }
}

template <typename T>
using Plus = WarpPlus<T>;
template <typename T>
using Max = WarpMax<T>;

// Algorithm 8, lines 13-23, in place. On entry a[k] holds column `lane` of
// row k's block; on exit a[31] holds op-reduction of row `lane`'s block and,
// for op = +, a[0..30] the butterfly-patterned table. Each step exchanges
// one register per pair of lanes 2^level apart; the lane whose bit is set
// keeps the upper register's row, the other the lower one's.
// (One template instance per level, so that every register index is a
// compile-time constant: a run-time index would move a[] to local memory.)
template <int kLevel, typename T, typename Op>
__device__ __forceinline__ void ButterflyLevel(T (&a)[kWarpSize], int lane,
                                               Op op) {
  constexpr int kBit = 1 << kLevel;
  const bool upper = (lane & kBit) != 0;
#pragma unroll
  for (int j = 0; j < (kWarpSize >> (kLevel + 1)); ++j) {
    const int d = 2 * kBit * j + kBit - 1;
    const T give = upper ? a[d] : a[d + kBit];
    const T got = __shfl_xor_sync(kFullMask, give, kBit);
    if (upper) a[d] = a[d + kBit];
    a[d + kBit] = op(a[d], got);
  }
}

template <typename T, typename Op>
__device__ __forceinline__ void Butterfly(T (&a)[kWarpSize], int lane, Op op) {
  static_assert(cat::kLevels == 5, "five levels for 32 lanes");
  ButterflyLevel<0>(a, lane, op);
  ButterflyLevel<1>(a, lane, op);
  ButterflyLevel<2>(a, lane, op);
  ButterflyLevel<3>(a, lane, op);
  ButterflyLevel<4>(a, lane, op);
}

// Algorithm 10 for one block per row, all lanes together (every lane must
// call it: it shuffles). `a` is the table of Butterfly; `low` and `high` the
// prefixes before and at the end of lane's row's block. Returns the position
// 0..31 within the block, as ButterflySearchBlock would for this lane.
template <int kLevel>
__device__ __forceinline__ void SearchLevel(const U (&a)[kWarpSize], int lane,
                                            U x, U& low, U& high, int& first) {
  constexpr int kBit = 1 << kLevel;
  constexpr int kSpan = 2 * kBit;
  constexpr int kCandidates = kWarpSize / kSpan;
  // The node sits in register kBit - 1 + kSpan * (lane / kSpan) of lane
  // src; since registers cannot be indexed at run time, every candidate
  // register is fetched and the lane's one kept by a tree of selects on the
  // bits of lane / kSpan (kCandidates - 1 selects rather than a compare and
  // a select per candidate).
  const int src = first | (lane & (kSpan - 1));
  U t[kCandidates];
#pragma unroll
  for (int i = 0; i < kCandidates; ++i) {
    t[i] = __shfl_sync(kFullMask, a[kBit - 1 + kSpan * i], src);
  }
#pragma unroll
  for (int step = 1; step < kCandidates; step *= 2) {
    const bool bit_set = (lane & (kSpan * step)) != 0;
#pragma unroll
    for (int i = 0; i < kCandidates; i += 2 * step) {
      t[i] = bit_set ? t[i + step] : t[i];
    }
  }
  const U y = t[0];
  const U compare =
      cat::ButterflyCompareValue(low, high, y, (lane & kBit) != 0);
  if (x < compare) {
    high = compare;
  } else {
    low = compare;
    first += kBit;
  }
}

__device__ __forceinline__ int ButterflySearch(const U (&a)[kWarpSize],
                                               int lane, U x, U low, U high) {
  int first = 0;
  SearchLevel<4>(a, lane, x, low, high, first);
  SearchLevel<3>(a, lane, x, low, high, first);
  SearchLevel<2>(a, lane, x, low, high, first);
  SearchLevel<1>(a, lane, x, low, high, first);
  SearchLevel<0>(a, lane, x, low, high, first);
  return first;
}

// Transposed load (Algorithm 5): a[k] = column remnant + 32 b_k + lane of
// the warp's row k, where b_k is `block` (kSameBlock) or lane k's `block`
// (each row its own block: the reload of chosen blocks). Each load
// instruction reads 128 contiguous bytes, one row's 32 columns.
//
// The pointer starts at the warp's first row inside the segment
// (first_valid) and walks down the rows (32 offsets k * K would stay live in
// registers), advancing before row k only if bit k of `advance` is set. So
// rows outside the segment (in a segment's first and last warps) read a
// copy of a row inside it: harmless, since every tree node sums one row, so
// those copies only reach the table entries of rows that are never output.
// With kZeroOutside those rows are zeroed as well: the K >= 64 kernel keeps
// the select because ptxas then allocates 126 registers instead of 164 (a
// measured quirk); the K < 64 kernel saves the 32 selects per block.
// Predicated loads under a run-time mask instead cost about 90 registers.
// Each value goes through a[k] = convert(k, v, a[k]) as it arrives (the
// identity, a double accumulation, or the quantization to an integer
// weight), so that no second array of registers holds the raw values.
template <typename T, bool kSameBlock, bool kZeroOutside, typename A,
          typename Convert>
__device__ __forceinline__ void LoadTransposed(
    A (&a)[kWarpSize], const T* __restrict__ values, int64_t first_valid,
    int64_t categories, uint32_t valid, uint32_t advance, int lane, int remnant,
    int32_t block, const Convert& convert) {
  const T* ptr = values + (first_valid + remnant + lane +
                           (kSameBlock ? kWarpSize * int64_t{block} : 0));
#pragma unroll
  for (int k = 0; k < kWarpSize; ++k) {
    if ((advance >> k) & 1u) ptr += categories;
    T v;
    if constexpr (kSameBlock) {
      v = *ptr;
    } else {
      v = ptr[kWarpSize * WarpBroadcast(block, k)];
    }
    a[k] = convert(k, !kZeroOutside || ((valid >> k) & 1u) ? v : T(0), a[k]);
  }
}

template <typename T>
struct Identity {
  __device__ __forceinline__ T operator()(int /*k*/, T v, T /*old*/) const {
    return v;
  }
};

// Column sums for the row scale (RowScaleSum): acc[k] += row k's weight,
// widened to double.
template <typename T>
struct AccumulateWeights {
  bool logits;
  const T* row_max;
  __device__ __forceinline__ double operator()(int k, T v, double old) const {
    return old + static_cast<double>(ToWeight(v, logits, row_max[k]));
  }
};

// Row k's integer weight from its stored value: the weight (or exp(l - max)
// for logits) times 2^scale_k, floored (cat::QuantizeWeight).
template <typename T>
struct QuantizeFromShared {
  bool logits;
  const T* row_max;
  const int32_t* scale;
  __device__ __forceinline__ U operator()(int k, T v, U /*old*/) const {
    return cat::QuantizeWeight(ToWeight(v, logits, row_max[k]), scale[k]);
  }
};

// Logits become weights in place; row k's maximum is row_max[k].
template <typename T>
__device__ __forceinline__ void LogitsToWeights(T (&a)[kWarpSize],
                                                const T* row_max) {
#pragma unroll
  for (int k = 0; k < kWarpSize; ++k) a[k] = detmath::Exp(a[k] - row_max[k]);
}

// The Philox block of draw d, kept out of line: called only for draws past
// the first block (d >= 2), it would otherwise add its temporaries to the
// register peak of the draw loop, where the 32-entry table is live.
__device__ __noinline__ PhiloxBlock DrawBlockOutOfLine(uint64_t seed,
                                                       uint64_t item,
                                                       int32_t d) {
  return cat::DrawBlock(seed, item, d);
}

// kMultiBlock = false serves K < 64 (at most one block: the table built in
// the first pass is the one every draw searches); true serves K >= 64. The
// two have different register needs, so each class gets its own kernel.
template <typename T, bool kMultiBlock>
__device__ __forceinline__ void ButterflyBody(const KernelParams<T>& p,
                                              unsigned char* smem_bytes) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t task =
      p.task_offset + static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (task >= p.task_end) return;  // whole warps only

  const CategoricalSegment& seg = FindSegment(p.segments, p.num_segments, task);
  const int64_t categories = seg.categories;
  const int64_t seg_rows = seg.rows;
  const int32_t draws = seg.draws;
  const uint64_t seed = seg.seed;
  const bool logits = seg.kind == WeightKind::kLogits;
  const int remnant = static_cast<int>(cat::RemnantSize(categories));
  const int32_t blocks = static_cast<int32_t>(cat::NumBlocks(categories));

  // Register / lane k serves segment row row0 + k, whose item index is
  // first_row + row0 + k: k is the contract's lane.
  const int64_t warp_in_seg = task - seg.task_begin;
  const int64_t row0 = warp_in_seg * kWarpSize - cat::LaneOf(seg.first_row);
  const int k_begin = row0 < 0 ? static_cast<int>(-row0) : 0;
  const int k_end = seg_rows - row0 < kWarpSize
                        ? static_cast<int>(seg_rows - row0)
                        : kWarpSize;
  const bool active = lane >= k_begin && lane < k_end;
  const int64_t my_row = row0 + lane;
  // Rows of the segment (bits k_begin .. k_end - 1), and the rows before
  // which the load pointer advances (bits k_begin + 1 .. k_end - 1).
  const uint32_t valid_rows =
      (k_end == kWarpSize ? kFullMask : (1u << k_end) - 1u) &
      ~((1u << k_begin) - 1u);
  const uint32_t advance_rows = valid_rows & (valid_rows << 1);
  // Row k of the warp starts at p.values[first + k * categories] (first may
  // be negative for a chunk that starts mid-warp; rows outside [k_begin,
  // k_end) are never read at their own addresses: LoadTransposed).
  const int64_t first =
      static_cast<int64_t>(seg.values_offset) + row0 * categories;
  const int64_t first_valid = first + k_begin * categories;

  U* smem = reinterpret_cast<U*>(smem_bytes) + warp * p.smem_warp_elems;
  // The remnant: first the staged values' bits, then in place the row's
  // integer prefixes P_j.
  U* remnant_area = smem + p.smem_remnant;  // used when remnant > 0
  U* my_prefix = remnant_area + lane * kRemnantStride;
  T* row_max_area = reinterpret_cast<T*>(smem + p.smem_rowmax);  // logits
  int32_t* scale_area = reinterpret_cast<int32_t*>(smem + p.smem_scale);
  // E_b of lane's row at ends[32 b] (kMultiBlock only).
  U* ends = nullptr;
  if constexpr (kMultiBlock) {
    ends = (blocks <= p.smem_block_cap ? smem + p.smem_block_ends
                                       : p.workspace + seg.workspace_offset +
                                             warp_in_seg * kWarpSize * blocks) +
           lane;
  }

  // The first Philox block now, while few registers are live.
  const uint64_t item = seg.first_row + static_cast<uint64_t>(my_row);
  PhiloxBlock philox = cat::DrawBlock(seed, item, 0);

  // Remnant: stage the R leading columns of the 32 rows, element
  // e = lane + 32 t of the warp's 32 x R values per step, so that every
  // load instruction is used by all lanes.
  if (remnant > 0) {
#pragma unroll 1
    for (int t = 0; t < remnant; ++t) {
      const int e = lane + kWarpSize * t;
      const int k = e / remnant;
      const int j = e - k * remnant;
      if (k >= k_begin && k < k_end) {
        remnant_area[k * kRemnantStride + j] =
            StageBits(p.values[first + k * categories + j]);
      }
    }
    __syncwarp();
  }

  T w[kWarpSize];

  // Logits: each row's maximum first (every weight depends on it).
  T row_max = T(0);
  if (logits) {
    row_max = -std::numeric_limits<T>::infinity();
    if (active) {
      for (int j = 0; j < remnant; ++j) {
        row_max = Max<T>()(row_max, Staged<T>(my_prefix[j]));
      }
    }
#pragma unroll 1
    for (int32_t b = 0; b < blocks; ++b) {
      LoadTransposed<T, true, kMultiBlock>(w, p.values, first_valid, categories,
                                           valid_rows, advance_rows, lane,
                                           remnant, b, Identity<T>());
      Butterfly(w, lane, Max<T>());
      row_max = Max<T>()(row_max, w[kWarpSize - 1]);
    }
    // (Lanes outside the segment hold the maximum of the row copy they
    // loaded, so their copies' weights stay finite.)
    row_max_area[lane] = row_max;
    __syncwarp();
  }

  // The row scale from the double sum S_d of RowScaleSum: the remnant in
  // order, the column sums over the blocks (each lane its column of the 32
  // rows), their pairwise tree (one butterfly for all the blocks).
  double scale_sum = 0;
  if (remnant > 0 && active) {
    for (int j = 0; j < remnant; ++j) {
      scale_sum = scale_sum + static_cast<double>(ToWeight(
                                  Staged<T>(my_prefix[j]), logits, row_max));
    }
  }
  if (blocks > 0) {
    double acc[kWarpSize];
#pragma unroll
    for (int k = 0; k < kWarpSize; ++k) acc[k] = 0;
    const AccumulateWeights<T> accumulate{logits, row_max_area};
#pragma unroll 1
    for (int32_t b = 0; b < blocks; ++b) {
      LoadTransposed<T, true, kMultiBlock>(acc, p.values, first_valid,
                                           categories, valid_rows, advance_rows,
                                           lane, remnant, b, accumulate);
    }
    Butterfly(acc, lane, Plus<double>());
    scale_sum = scale_sum + acc[kWarpSize - 1];
  }
  const int32_t scale = cat::RowScale(scale_sum);
  scale_area[lane] = scale;
  __syncwarp();

  // The remnant's integer prefixes P_j, in place; E_{-1} = P_{R-1}.
  U remnant_total = 0;
  if (remnant > 0 && active) {
    U sum = 0;
    for (int j = 0; j < remnant; ++j) {
      sum =
          sum + cat::QuantizeWeight(
                    ToWeight(Staged<T>(my_prefix[j]), logits, row_max), scale);
      my_prefix[j] = sum;
    }
    remnant_total = sum;
  }

  // First pass over the blocks: each block's butterfly table, its total,
  // the running E_b.
  const QuantizeFromShared<T> quantize{logits, row_max_area, scale_area};
  U a[kWarpSize];
  U total = remnant_total;
#pragma unroll 1
  for (int32_t b = 0; b < blocks; ++b) {
    LoadTransposed<T, true, kMultiBlock>(a, p.values, first_valid, categories,
                                         valid_rows, advance_rows, lane,
                                         remnant, b, quantize);
    Butterfly(a, lane, Plus<U>());
    total = total + a[kWarpSize - 1];
    if constexpr (kMultiBlock) ends[kWarpSize * b] = total;
  }
  // a[] now holds the table of the last block for every row.
  int32_t loaded = blocks - 1;

  int32_t* my_out =
      p.out + (static_cast<int64_t>(seg.out_offset) + my_row * draws);
#pragma unroll 1
  for (int32_t d = 0; d < draws; ++d) {
    if (d > 0 && d % cat::kDrawsPerBlock == 0) {
      philox = DrawBlockOutOfLine(seed, item, d);
    }
    const U x = cat::MulHi64(cat::DrawBits(philox, d), total);
    int64_t j = 0;
    if (blocks == 0) {
      if (active) j = cat::LinearSearch(my_prefix, remnant, x);
    } else {
      int32_t b = 0;
      U low = remnant_total;
      U high = total;
      if constexpr (kMultiBlock) {
        b = static_cast<int32_t>(
            cat::SearchBlockEnds(ends, int64_t{kWarpSize}, blocks, x));
        // Rows that need no block (inactive, or in the remnant) keep the
        // loaded one, so that they never force a reload.
        const bool in_remnant = b == 0 && remnant > 0 && x < remnant_total;
        const int32_t want = active && !in_remnant ? b : loaded;
        if (__any_sync(kFullMask, want != loaded)) {
          LoadTransposed<T, false, kMultiBlock>(
              a, p.values, first_valid, categories, valid_rows, advance_rows,
              lane, remnant, want, quantize);
          Butterfly(a, lane, Plus<U>());
          loaded = want;
        }
        if (b > 0) low = ends[kWarpSize * (b - 1)];
        high = ends[kWarpSize * b];
      }
      const int pos = ButterflySearch(a, lane, x, low, high);
      if (active) {
        j = b == 0 && remnant > 0 && x < remnant_total
                ? cat::LinearSearch(my_prefix, remnant, x)
                : remnant + kWarpSize * b + pos;
      }
    }
    if (active) my_out[d] = static_cast<int32_t>(j);
  }
}

// No minimum of blocks per multiprocessor: bounding these to 4 blocks (128
// registers) made ptxas spill and measured 1.6x to 3x slower on an H200
// (bench/results/categorical-cat2-h200-2026-11-23.md, run 3) than the
// unbounded 137 (K < 64) and 213 (K >= 64) registers.
template <typename T, bool kMultiBlock>
__global__ void __launch_bounds__(kBlockThreads)
    ButterflyKernel(const KernelParams<T> p) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  ButterflyBody<T, kMultiBlock>(p, smem_bytes);
}

// The same with a register cap (kMinBlocks blocks per multiprocessor): more
// resident warps at the price of some spilling. For benchmarks
// (CategoricalPlan::register_cap).
template <typename T, bool kMultiBlock, int kMinBlocks>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocks)
    ButterflyKernelCapped(const KernelParams<T> p) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  ButterflyBody<T, kMultiBlock>(p, smem_bytes);
}

// The baseline: thread per row, p_j in the workspace at [j][lane] of the
// warp's area.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    PrefixSumKernel(const KernelParams<T> p) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t task =
      p.task_offset + static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (task >= p.task_end) return;
  const CategoricalSegment& seg = FindSegment(p.segments, p.num_segments, task);
  const int64_t categories = seg.categories;
  const int64_t warp_in_seg = task - seg.task_begin;
  const int64_t my_row =
      warp_in_seg * kWarpSize - cat::LaneOf(seg.first_row) + lane;
  if (my_row < 0 || my_row >= seg.rows) return;  // no shuffles here
  const bool logits = seg.kind == WeightKind::kLogits;
  const int32_t draws = seg.draws;
  const T* row = p.values + seg.values_offset + my_row * categories;
  const int64_t remnant = cat::RemnantSize(categories);
  const int64_t blocks = cat::NumBlocks(categories);

  T row_max = T(0);
  if (logits) {
    row_max = row[0];
    for (int64_t j = 1; j < categories; ++j) {
      if (row[j] > row_max) row_max = row[j];
    }
  }
  // S_d in RowScaleSum's order: the remnant, then the 32 column sums merged
  // into their pairwise tree as they complete (stack[l] holds a finished
  // node of 2^l columns; every index is a compile-time constant).
  double scale_sum = 0;
  for (int64_t j = 0; j < remnant; ++j) {
    scale_sum =
        scale_sum + static_cast<double>(ToWeight(row[j], logits, row_max));
  }
  if (blocks > 0) {
    double stack[cat::kLevels + 1];
#pragma unroll
    for (int c = 0; c < kWarpSize; ++c) {
      double v = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        v = v + static_cast<double>(ToWeight(row[remnant + kWarpSize * b + c],
                                             logits, row_max));
      }
      int l = 0;
#pragma unroll
      for (; l < cat::kLevels && ((c >> l) & 1); ++l) v = stack[l] + v;
      stack[l] = v;
    }
    scale_sum = scale_sum + stack[cat::kLevels];
  }
  const int scale = cat::RowScale(scale_sum);

  U* prefix = p.workspace + seg.workspace_offset +
              warp_in_seg * kWarpSize * categories + lane;
  U sum = 0;
  for (int64_t j = 0; j < categories; ++j) {
    sum = sum + cat::QuantizeWeight(ToWeight(row[j], logits, row_max), scale);
    prefix[kWarpSize * j] = sum;
  }

  const uint64_t item = seg.first_row + static_cast<uint64_t>(my_row);
  int32_t* my_out = p.out + seg.out_offset + my_row * draws;
  PhiloxBlock philox{};
#pragma unroll 1
  for (int32_t d = 0; d < draws; ++d) {
    const U x = cat::NextDrawX(seg.seed, item, d, sum, philox);
    my_out[d] = static_cast<int32_t>(
        cat::SearchBlockEnds(prefix, int64_t{kWarpSize}, categories, x));
  }
}

// One warp per row; every lane computes the same search (for the row's
// contract lane) and lane 0 writes.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    WarpPerRowKernel(const KernelParams<T> p) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t task =
      p.task_offset + static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (task >= p.task_end) return;
  const CategoricalSegment& seg = FindSegment(p.segments, p.num_segments, task);
  const int64_t categories = seg.categories;
  const int64_t my_row = task - seg.task_begin;
  const uint64_t item = seg.first_row + static_cast<uint64_t>(my_row);
  const int row_lane = cat::LaneOf(item);
  const bool logits = seg.kind == WeightKind::kLogits;
  const int32_t draws = seg.draws;
  const int remnant = static_cast<int>(cat::RemnantSize(categories));
  const int64_t blocks = cat::NumBlocks(categories);
  const T* __restrict__ row =
      p.values + seg.values_offset + my_row * categories;
  U* ends = blocks <= p.smem_block_cap
                ? reinterpret_cast<U*>(smem_bytes) + warp * p.smem_warp_elems +
                      p.smem_block_ends
                : p.workspace + seg.workspace_offset + my_row * blocks;

  const T row_max = logits ? WarpRowMax(row, categories, lane) : T(0);
  // The row scale (categorical_warp_row.cuh).
  T my_weight;
  const int scale = cat::RowScale(
      WarpRowScaleSum(row, categories, lane, logits, row_max, &my_weight));

  // Remnant prefixes: lane j keeps P_j; everyone gets P_{R-1}.
  const U my_q = cat::QuantizeWeight(my_weight, scale);
  U remnant_total;
  const U my_prefix =
      WarpInclusiveScanInLaneOrder(my_q, remnant, lane, &remnant_total);

  // Block totals: an xor butterfly gives every lane the aligned pairwise
  // tree sums of its group, the root at the end. Eight loads in flight.
  constexpr int kUnroll = 8;
  U total = remnant_total;
  for (int64_t b0 = 0; b0 < blocks; b0 += kUnroll) {
    T v[kUnroll];
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      v[i] = b0 + i < blocks
                 ? __ldg(row + remnant + kWarpSize * (b0 + i) + lane)
                 : T(0);
    }
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      if (b0 + i < blocks) {
        const U s = cat::QuantizeWeight(ToWeight(v[i], logits, row_max), scale);
        total = total + WarpSum<ButterflyOrder::kLowToHigh>(s);
        if (lane == 0) ends[b0 + i] = total;
      }
    }
  }
  __syncwarp();

  int32_t* my_out = p.out + seg.out_offset + my_row * draws;
  PhiloxBlock philox{};
#pragma unroll 1
  for (int32_t d = 0; d < draws; ++d) {
    if (d % cat::kDrawsPerBlock == 0) {
      philox = cat::DrawBlock(seg.seed, item, d);
    }
    const U x = cat::MulHi64(cat::DrawBits(philox, d), total);
    const int64_t b =
        blocks > 1 ? cat::SearchBlockEnds(ends, int64_t{1}, blocks, x) : 0;
    int64_t j;
    if (blocks == 0 || (b == 0 && remnant > 0 && x < remnant_total)) {
      const unsigned below =
          __ballot_sync(kFullMask, lane < remnant && x < my_prefix);
      j = below != 0 ? __ffs(below) - 1 : remnant - 1;
    } else {
      // The block's tree: level[l] = node of 2^l weights holding this lane.
      U level[cat::kLevels];
      level[0] = cat::QuantizeWeight(
          ToWeight(row[remnant + kWarpSize * b + lane], logits, row_max),
          scale);
#pragma unroll
      for (int l = 1; l < cat::kLevels; ++l) {
        level[l] = level[l - 1] +
                   __shfl_xor_sync(kFullMask, level[l - 1], 1 << (l - 1));
      }
      U low = b > 0 ? ends[b - 1] : remnant_total;
      U high = blocks > 1 ? ends[b] : total;
      int first = 0;
#pragma unroll
      for (int l = cat::kLevels - 1; l >= 0; --l) {
        const int bit = 1 << l;
        const bool right = (row_lane & bit) != 0;
        const U y =
            __shfl_sync(kFullMask, level[l], right ? first + bit : first);
        const U compare = cat::ButterflyCompareValue(low, high, y, right);
        if (x < compare) {
          high = compare;
        } else {
          low = compare;
          first += bit;
        }
      }
      j = remnant + kWarpSize * b + first;
    }
    if (lane == 0) my_out[d] = static_cast<int32_t>(j);
  }
}

// ------------------------------------------------------------------ host --

template <typename V>
absl::Status SegmentError(size_t i, const char* field, const V& value,
                          const char* rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("segments[", i, "].", field, " = ", value, ": ", rule));
}

template <typename T>
absl::Status LaunchOne(void (*kernel)(KernelParams<T>), KernelParams<T> params,
                       int64_t task_offset, int64_t task_end,
                       int32_t warp_elems, cudaStream_t stream) {
  if (task_end <= task_offset) return absl::OkStatus();
  const int64_t grid =
      (task_end - task_offset + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (grid > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchCategorical: ", task_end - task_offset,
                     " tasks are more than one launch can take"));
  }
  params.task_offset = task_offset;
  params.task_end = task_end;
  params.smem_warp_elems = warp_elems;
  const size_t smem = static_cast<size_t>(kWarpsPerBlock) *
                      static_cast<size_t>(warp_elems) * sizeof(U);
  SAMPLER_RETURN_IF_ERROR(
      AllowDynamicSharedMemory(reinterpret_cast<const void*>(kernel), smem));
  kernel<<<dim3(static_cast<unsigned>(grid)), kBlockThreads, smem, stream>>>(
      params);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

template <typename T>
absl::Status Launch(const CategoricalPlan& plan,
                    const CategoricalSegment* device_segments, const T* values,
                    int32_t* out, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream) {
  const Precision precision =
      std::is_same_v<T, double> ? Precision::kFloat64 : Precision::kFloat32;
  if (plan.precision != precision) {
    return absl::InvalidArgumentError(
        "LaunchCategorical: values of the other precision than the "
        "plan's");
  }
  if (plan.tasks == 0) return absl::OkStatus();
  if (device_segments == nullptr || values == nullptr || out == nullptr) {
    return absl::InvalidArgumentError("LaunchCategorical: null device pointer");
  }
  if (workspace_bytes < plan.workspace_bytes ||
      (plan.workspace_bytes > 0 && workspace == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchCategorical: workspace of ", workspace_bytes,
                     " bytes, the plan needs ", plan.workspace_bytes));
  }
  if (reinterpret_cast<uintptr_t>(workspace) % 16 != 0) {
    return absl::InvalidArgumentError(
        "LaunchCategorical: workspace not aligned to 16 bytes");
  }
  if (plan.split_task < 0 || plan.split_task > plan.tasks) {
    return absl::InvalidArgumentError("LaunchCategorical: bad plan");
  }
  KernelParams<T> params{};
  params.segments = device_segments;
  params.num_segments = plan.num_segments;
  params.values = values;
  params.out = out;
  params.workspace = static_cast<U*>(workspace);
  params.smem_remnant = plan.smem_remnant;
  params.smem_rowmax = plan.smem_rowmax;
  params.smem_scale = plan.smem_scale;
  params.smem_block_ends = plan.smem_block_ends;
  params.smem_block_cap = plan.smem_block_cap;
  switch (plan.kernel) {
    case CategoricalKernel::kButterfly: {
      const bool capped = plan.register_cap;
      if (absl::Status s = LaunchOne<T>(
              capped ? ButterflyKernelCapped<T, false, kCappedMinBlocksSingle>
                     : ButterflyKernel<T, false>,
              params, 0, plan.split_task, plan.smem_warp_elems[0], stream);
          !s.ok()) {
        return s;
      }
      return LaunchOne<T>(
          capped ? ButterflyKernelCapped<T, true, kCappedMinBlocksMulti>
                 : ButterflyKernel<T, true>,
          params, plan.split_task, plan.tasks, plan.smem_warp_elems[1], stream);
    }
    case CategoricalKernel::kPrefixSum:
      return LaunchOne<T>(PrefixSumKernel<T>, params, 0, plan.tasks, 0, stream);
    case CategoricalKernel::kWarpPerRow:
      return LaunchOne<T>(WarpPerRowKernel<T>, params, 0, plan.tasks,
                          plan.smem_warp_elems[0], stream);
    case CategoricalKernel::kRowSplit:
      return LaunchCategoricalRowSplit<T>(plan, device_segments, values, out,
                                          stream);
    case CategoricalKernel::kLanes:
      return LaunchCategoricalLanes<T>(plan, device_segments, values, out,
                                       stream);
    case CategoricalKernel::kWarpTiles:
      return LaunchCategoricalWarpTiles<T>(plan, device_segments, values, out,
                                           stream);
    case CategoricalKernel::kLaneGroups:
      return LaunchCategoricalLaneGroups<T>(plan, device_segments, values, out,
                                            stream);
    case CategoricalKernel::kBlockRow:
      return LaunchCategoricalBlockRow<T>(plan, device_segments, values, out,
                                          stream);
  }
  return absl::InvalidArgumentError("LaunchCategorical: bad kernel");
}

}  // namespace

const char* CategoricalKernelName(CategoricalKernel kernel) {
  switch (kernel) {
    case CategoricalKernel::kButterfly:
      return "butterfly";
    case CategoricalKernel::kPrefixSum:
      return "prefix-sum";
    case CategoricalKernel::kWarpPerRow:
      return "warp-per-row";
    case CategoricalKernel::kRowSplit:
      return "row-split";
    case CategoricalKernel::kLanes:
      return "lanes";
    case CategoricalKernel::kWarpTiles:
      return "warp-tiles";
    case CategoricalKernel::kLaneGroups:
      return "lane-groups";
    case CategoricalKernel::kBlockRow:
      return "block-row";
  }
  return "unknown";
}

absl::StatusOr<CategoricalPlan> PrepareCategoricalSegments(
    absl::Span<CategoricalSegment> segments, Precision precision,
    uint64_t values_size, uint64_t out_size, CategoricalKernel kernel) {
  if (kernel != CategoricalKernel::kButterfly &&
      kernel != CategoricalKernel::kPrefixSum &&
      kernel != CategoricalKernel::kWarpPerRow &&
      kernel != CategoricalKernel::kRowSplit &&
      kernel != CategoricalKernel::kLanes &&
      kernel != CategoricalKernel::kWarpTiles &&
      kernel != CategoricalKernel::kLaneGroups &&
      kernel != CategoricalKernel::kBlockRow) {
    return absl::InvalidArgumentError("PrepareCategoricalSegments: bad kernel");
  }
  if (segments.size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PrepareCategoricalSegments: ", segments.size(), " segments"));
  }
  const int64_t butterfly_cap = ButterflyBlockCap();
  const int64_t warp_per_row_cap = WarpPerRowBlockCap();
  // Workspace elements are counted in uint64 and checked against this.
  const uint64_t max_elems =
      std::numeric_limits<uint64_t>::max() / 64 / sizeof(U);

  // First pass: validate everything, so that the array stays unchanged on
  // error.
  for (size_t i = 0; i < segments.size(); ++i) {
    const CategoricalSegment& s = segments[i];
    if (s.rows < 1) return SegmentError(i, "rows", s.rows, "must be >= 1");
    if (s.categories < 1 ||
        s.categories > std::numeric_limits<int32_t>::max()) {
      return SegmentError(i, "categories", s.categories,
                          "must be in [1, 2147483647]");
    }
    if (s.draws < 1 || s.draws > kMaxCategoricalDraws) {
      return SegmentError(
          i, "draws", s.draws,
          absl::StrCat("must be in [1, ", kMaxCategoricalDraws, "]").c_str());
    }
    if (s.kind != WeightKind::kWeights && s.kind != WeightKind::kLogits) {
      return SegmentError(i, "kind", static_cast<int>(s.kind),
                          "must be weights or logits");
    }
    if (s.first_row > std::numeric_limits<uint64_t>::max() -
                          static_cast<uint64_t>(s.rows - 1)) {
      return SegmentError(i, "first_row", s.first_row,
                          "row indices must stay below 2^64");
    }
    const uint64_t rows = static_cast<uint64_t>(s.rows);
    const uint64_t k = static_cast<uint64_t>(s.categories);
    if (rows > values_size / k || s.values_offset > values_size - rows * k) {
      return SegmentError(
          i, "values_offset", s.values_offset,
          absl::StrCat("rows * categories = ", s.rows, " * ", s.categories,
                       " values must fit in values_size = ", values_size)
              .c_str());
    }
    const uint64_t d = static_cast<uint64_t>(s.draws);
    if (rows > out_size / d || s.out_offset > out_size - rows * d) {
      return SegmentError(
          i, "out_offset", s.out_offset,
          absl::StrCat("rows * draws = ", s.rows, " * ", s.draws,
                       " outputs must fit in out_size = ", out_size)
              .c_str());
    }
    if (kernel == CategoricalKernel::kRowSplit &&
        RowSplitSmemBytes(
            RowSplitChunk(s.categories, RowSplitCtas(s.categories)),
            precision == Precision::kFloat64 ? 8 : 4) > kRowSplitMaxSmemBytes) {
      return SegmentError(i, "categories", s.categories,
                          "too many for the row-split kernel's shared memory");
    }
    if (kernel == CategoricalKernel::kLanes &&
        s.categories > kLanesMaxCategories) {
      return SegmentError(i, "categories", s.categories,
                          "too many for the lanes kernel (at most 128)");
    }
    if (kernel == CategoricalKernel::kLaneGroups &&
        s.categories > kLaneGroupsMaxCategories) {
      return SegmentError(i, "categories", s.categories,
                          "too many for the lane-groups kernel (at most 256)");
    }
    if (kernel == CategoricalKernel::kWarpTiles &&
        s.categories > kWarpTilesMaxCategories) {
      return SegmentError(i, "categories", s.categories,
                          "too many for the warp-tiles kernel (at most 2^17)");
    }
    if (kernel == CategoricalKernel::kBlockRow &&
        s.categories > BlockRowMaxCategories(precision)) {
      return SegmentError(i, "categories", s.categories,
                          "too many for the block-row kernel's shared memory");
    }
  }

  // kButterfly: segments with K < 64 first (stable), one launch per class.
  const auto multi_block = [](const CategoricalSegment& s) {
    return cat::NumBlocks(s.categories) > 1;
  };
  if (kernel == CategoricalKernel::kButterfly) {
    std::stable_partition(
        segments.begin(), segments.end(),
        [&](const CategoricalSegment& s) { return !multi_block(s); });
  }

  // kLaneGroups: one launch per group size (1, 2, 4, 8, 16 lanes a row),
  // in order.
  if (kernel == CategoricalKernel::kLaneGroups) {
    std::stable_sort(
        segments.begin(), segments.end(),
        [](const CategoricalSegment& a, const CategoricalSegment& b) {
          return LaneGroupLanes(a.categories) < LaneGroupLanes(b.categories);
        });
  }

  CategoricalPlan plan;
  plan.kernel = kernel;
  plan.precision = precision;
  plan.num_segments = static_cast<int32_t>(segments.size());
  int64_t tasks = 0;
  int64_t split = -1;
  uint64_t workspace = 0;
  bool any_remnant = false;
  bool any_logits = false;
  int64_t block_cap_used = 0;
  int64_t max_categories = 0;  // kRowSplit, kLanes, kWarpTiles, kBlockRow
  for (CategoricalSegment& s : segments) {
    const int64_t blocks = cat::NumBlocks(s.categories);
    if (kernel == CategoricalKernel::kButterfly && split < 0 &&
        multi_block(s)) {
      split = tasks;
    }
    const int64_t seg_tasks =
        kernel == CategoricalKernel::kWarpPerRow ||
                kernel == CategoricalKernel::kRowSplit ||
                kernel == CategoricalKernel::kWarpTiles ||
                kernel == CategoricalKernel::kBlockRow
            ? s.rows
            : (cat::LaneOf(s.first_row) + s.rows + kWarpSize - 1) / kWarpSize;
    s.task_begin = tasks;
    s.workspace_offset = 0;
    tasks += seg_tasks;
    uint64_t need = 0;  // workspace elements
    switch (kernel) {
      case CategoricalKernel::kButterfly:
        any_remnant = any_remnant || cat::RemnantSize(s.categories) > 0;
        any_logits = any_logits || s.kind == WeightKind::kLogits;
        if (blocks > butterfly_cap) {
          need = static_cast<uint64_t>(seg_tasks) * kWarpSize * blocks;
        } else if (blocks > 1 && blocks > block_cap_used) {
          block_cap_used = blocks;
        }
        break;
      case CategoricalKernel::kPrefixSum:
        need = static_cast<uint64_t>(seg_tasks) * kWarpSize * s.categories;
        break;
      case CategoricalKernel::kWarpPerRow:
        if (blocks > warp_per_row_cap) {
          need = static_cast<uint64_t>(s.rows) * blocks;
        } else if (blocks > block_cap_used) {
          block_cap_used = blocks;
        }
        break;
      case CategoricalKernel::kRowSplit:
      case CategoricalKernel::kLanes:
      case CategoricalKernel::kWarpTiles:
      case CategoricalKernel::kBlockRow:
        max_categories = std::max(max_categories, s.categories);
        break;
      case CategoricalKernel::kLaneGroups:
        for (int i = 0; i < kLaneGroupSizes; ++i) {
          if (LaneGroupLanes(s.categories) <= (1 << i)) {
            plan.lane_group_ends[i] = tasks;
          }
        }
        plan.lane_groups_staged =
            plan.lane_groups_staged || (s.draws >= kLaneGroupsStageFromDraws &&
                                        s.categories <= kLaneGroupsStageUpToK);
        plan.lane_groups_table =
            plan.lane_groups_table || (s.draws >= kLaneGroupsTableFromDraws &&
                                       s.categories <= kLaneGroupsTableUpToK);
        break;
    }
    if (need > 0) {
      // Every segment's area starts on a multiple of 32 elements, so that
      // the warps' interleaved rows of E_b are 128-byte aligned.
      workspace = (workspace + kWarpSize - 1) / kWarpSize * kWarpSize;
      s.workspace_offset = workspace;
      workspace += need;
      if (workspace > max_elems) {
        return absl::InvalidArgumentError(
            "PrepareCategoricalSegments: workspace too large");
      }
    }
  }
  plan.tasks = tasks;
  plan.split_task = split < 0 ? tasks : split;
  if (kernel == CategoricalKernel::kRowSplit && max_categories > 0) {
    // The largest K wants the most blocks and, with them, the largest chunk.
    plan.row_split_ctas = RowSplitCtas(max_categories);
    plan.row_split_chunk = RowSplitChunk(max_categories, plan.row_split_ctas);
  }
  if (kernel == CategoricalKernel::kBlockRow && max_categories > 0) {
    // The largest K wants the most blocks and, with them, the largest chunk.
    const size_t value_bytes = precision == Precision::kFloat64 ? 8 : 4;
    PlanBlockRow(max_categories, BlockRowCtas(max_categories, value_bytes),
                 value_bytes, &plan);
  }
  plan.workspace_bytes = static_cast<size_t>(workspace) * sizeof(U);

  // Areas are in 8-byte units; keep each warp's area 32-byte aligned.
  const auto round = [](int32_t elems) { return (elems + 3) / 4 * 4; };
  int32_t elems = 0;
  if (kernel == CategoricalKernel::kButterfly) {
    if (any_remnant) {
      plan.smem_remnant = elems;
      elems += kWarpSize * kRemnantStride;
    }
    if (any_logits) {
      plan.smem_rowmax = elems;
      elems += kWarpSize;
    }
    // 32 row scales (int32): 16 eight-byte units.
    plan.smem_scale = elems;
    elems += kWarpSize / 2;
    plan.smem_warp_elems[0] = round(elems);
    if (block_cap_used > 0) {
      plan.smem_block_ends = elems;
      elems += static_cast<int32_t>(kWarpSize * block_cap_used);
    }
    plan.smem_warp_elems[1] = round(elems);
  } else if (kernel == CategoricalKernel::kWarpPerRow) {
    if (block_cap_used > 0) {
      plan.smem_block_ends = 0;
      elems = static_cast<int32_t>(block_cap_used);
    }
    plan.smem_warp_elems[0] = plan.smem_warp_elems[1] = round(elems);
  } else if (kernel == CategoricalKernel::kLanes && max_categories > 0) {
    const size_t bytes = LanesWarpSmemBytes(
        max_categories, precision == Precision::kFloat64 ? 8 : 4);
    plan.smem_warp_elems[0] = plan.smem_warp_elems[1] =
        static_cast<int32_t>((bytes + sizeof(U) - 1) / sizeof(U));
  } else if (kernel == CategoricalKernel::kLaneGroups) {
    // A warp's shared memory is not monotonic in K (its rows a round halve
    // where its lanes a row double): the most over the batch's K.
    size_t bytes = 0;
    for (const CategoricalSegment& s : segments) {
      bytes = std::max(
          bytes, LaneGroupsWarpSmemBytes(
                     s.categories, precision == Precision::kFloat64 ? 8 : 4,
                     plan.lane_groups_staged));
    }
    plan.smem_warp_elems[0] = plan.smem_warp_elems[1] =
        static_cast<int32_t>((bytes + sizeof(U) - 1) / sizeof(U));
  } else if (kernel == CategoricalKernel::kWarpTiles) {
    // One running total per tile and row (warp).
    block_cap_used = (max_categories + kWarpTilesValuesPerTile - 1) /
                     kWarpTilesValuesPerTile;
  }
  plan.smem_block_cap = static_cast<int32_t>(block_cap_used);
  return plan;
}

template <typename T>
absl::Status LaunchCategorical(const CategoricalBatch<T>& batch,
                               cudaStream_t stream) {
  return Launch<T>(batch.plan, batch.segments, batch.values, batch.out,
                   batch.workspace, batch.workspace_bytes, stream);
}

template absl::Status LaunchCategorical<float>(const CategoricalBatch<float>&,
                                               cudaStream_t);
template absl::Status LaunchCategorical<double>(const CategoricalBatch<double>&,
                                                cudaStream_t);

}  // namespace sampler::kernels::cuda
