// CategoricalKernel::kLaneGroups: each row of SampleCategorical served by a
// group of G = 1, 2, 4, 8 or 16 lanes (K up to 32, 64, 128, 256, 512), four
// warps a block.
// Bits of SampleCategoricalCpu (docs/randomness.md, section "Categorical",
// CAT2).
//
// Why, after kLanes (categorical_lanes.cu, one row per lane): Nsight
// Compute (bench/results/categorical-ncu-h100-session7-2026-11-26.md) finds
// kLanes issue-bound at 32 warps an SM at K = 32 (one-warp blocks meet the
// 32-blocks-an-SM cap) and latency-bound at 13 warps an SM at K = 100 (16.3
// KB of shared memory a warp: 32 whole rows and their chunk totals). The
// rows a warp holds at once are what costs shared memory; the lanes that
// work on them are what hides latency. So:
//
//   * blocks of 4 warps (each warp still its own task of 32 lane-aligned
//     rows, as kLanes), so that the block cap no longer binds;
//   * a warp takes its 32 rows in G rounds of 32 / G rows, each row served
//     by G lanes: at K = 100 a warp holds 8 rows (4.1 KB with their chunk
//     totals), not 32 (16.3 KB), and all 32 lanes work on them;
//   * the chunk totals stay in shared memory (a draw may land in any
//     member's part), 8 bytes per 8 weights (per 4 for G = 8, whose members
//     hold 4 columns);
//   * up to K = 256 (G = 8): warp tiles run K = 256 at 29.8% of copy
//     (session 7), one warp a row with a 64-bit butterfly per 128 weights.
//
// The contract fixes only S_d's order, and G lanes can form it exactly:
// member m of a group takes the columns l = m 32/G .. (m+1) 32/G - 1 (all
// blocks b, in order), builds their pairwise subtree (the node of level
// 5 - log2 G), and the group merges the G nodes level by level with xor
// shuffles (left + right = right + left in IEEE arithmetic, so both lanes
// of a pair hold the same node); member 0 adds the remnant first. The rest
// is exact integers, so any split works:
//
//   1. load: the round's rows are contiguous; cp.async copies them into
//      shared memory at an odd row stride (K | 1), coalesced;
//   2. per group: logits become weights in place (each member every G-th
//      value; the group's maximum by shuffles); S_d as above; the scale;
//      q_j = floor(w_j 2^s) by multiplication (QuantizeByMultiply, exact)
//      summed per chunk of 8 (G = 8: 4) weights in row order (the
//      remnant's chunks, then 32 / chunk a block of 32): member m takes the
//      remnant's chunks m, m + G, ... and the chunks of its own columns,
//      which makes a lane's reads conflict-free, as in S_d; member 0 turns
//      the chunk totals into running totals (C at each chunk's end);
//   3. per draw: member m takes the Philox blocks m, m + G, ... (draws
//      2p and 2p + 1 of block p); X = floor(r Q / 2^64); a binary search
//      over the chunk ends finds the first end > X; a walk of at most a
//      chunk from its start recomputes their q and stops at the
//      first j with X < C_j + q_j (zero weights never stop it); the
//      draws go to shared memory, a batch of 4 to 16 a row at a time, and
//      the warp writes each batch out as contiguous runs (session 7's
//      lanes kernel, one lane writing its row's draws one by one, ran
//      D = 32 at 11-18% of copy against 49-53% at D = 4: every store
//      touched 32 sectors for 128 useful bytes).
//
// Cost per weight, float32, one draw (the budget at 70% of an H100's copy
// bandwidth is about 44 thread instructions and 5.6 conversions a weight,
// categorical_lanes.cu): load 6, S_d 4 (LDS, F2F.F64, DADD, loop), Q 6
// (LDS, 2 FMUL, F2I.U64, 64-bit add; the block chunks are unrolled), the
// chunk scan 4 / chunk on one lane of G (G = 8: about 1 thread
// instruction / 4 weights x 8 lanes = 8 a weight at K = 256, the most), the
// logits and draws as kLanes; that is about kLanes's 19 (27 at K = 256),
// while the warps an SM hold, counting shared memory (6.2 KB a warp at
// most in float: 32 x 33 values and 5 x 32 chunk ends at K = 32; 8 x 129
// and 17 x 8 at K = 128; 4 x 257 and 65 x 4 at K = 256) and 48 registers
// (10 blocks of 128 threads), go to 40 from 32 at K = 32 and from 13 at
// K = 100 (from 11 at K = 128), 36 at K = 256 (9 blocks by shared memory).
// Predicted: K = 100 at or above kLanes's K = 32 (56.8%), K = 32 a little
// above it, K = 256 above warp tiles' 29.8%; D = 32 unchanged per draw,
// but a row's draws now run on G lanes.
//
// G = 16 (K = 257 to 512, session 10; the service routes block-row there
// until measured): block-row runs K = 257 at 25% of copy, issue-bound on
// a row a one-warp block (about 970 warp instructions a row: six block
// barriers, block reductions and scan, and one lane's draw). Here a warp
// takes 2 rows a round; chunks of 2 weights (a member owns 2 columns), whose
// running totals the group forms by a 16-lane scan a block of 32 (4
// shuffle steps) rather than one member's serial pass over up to 256
// chunk ends. A warp holds 2 x 513 values and 2 x 257 chunk ends at K = 512
// (8.2 KB: 6 blocks an SM by shared memory, 24 warps), 2 x 257 and 2 x 129
// at K = 257 (4.1 KB: 10 blocks by registers, 40 warps).
// Predicted per row at K = 257: load ~10, S_d ~25, quantization and scan
// ~9 blocks x 12 ~ 110, one draw (member 0: Philox, an 8-step binary
// search, a walk of at most 2) ~120 a round, which its 2 rows share: about
// 200-250 warp instructions a row against block-row's 970, so about 45-55%
// of copy at K = 257 to 512 (K = 256 at G = 8: 57%). Measured (H100,
// session 10 mid-session call, 1/4/32 draws): 41.7/37.9/41.1 at 257 and
// 48.6/45.2/46.1 at 512, against block-row's 26.2/25.4/27.0 and
// 44.4/42.7/43.5; the service routes lane groups up to 512 since.
//
// Session 11: prefix tables (kTable, CategoricalPlan::lane_groups_table):
// every row keeps its running total at every weight in place of the chunk
// ends, so a draw is a binary search with no walk re-quantizing weights.
// They cut K = 32, 32 draws from 1,338M to 969M warp instructions but
// take occupancy to 25%, and won only there (23.3 against 21.2% of copy;
// categorical_lane_groups.h has the numbers). A prefetch of the next
// round's rows into a second buffer lost at every K (reverted, 725af91).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "categorical_lane_groups.h"
#include "categorical_segments.cuh"
#include "categorical_shared_rows.cuh"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda {
namespace {

namespace cat = ::sampler::kernels::categorical;
using U = uint64_t;

constexpr int kWarpsPerBlock = 4;
constexpr int kBlockThreads = kWarpsPerBlock * kWarpSize;
// Blocks an SM for the register budget: 65,536 / (10 x 128) leaves 51
// registers a thread (48 after allocation granularity); the staged
// instances, which keep more live across the draw batches, get 64 (8
// blocks): at 48 they spill 88 to 192 bytes.
// Groups of 2 lanes (K = 33 to 64) get 80 (6 blocks): ptxas spilled 92
// bytes (348 bytes of loads) at 48 registers and 80 at 64 (session 11),
// and session 10 measured them at 34.7% of copy at K = 33 and 44.3% at 64
// against the lanes kernel's 55.5% and 63.3% (one draw). With prefix
// tables shared memory allows 4 blocks an SM (about 13 KB a warp in
// float): registers need not bind below that.
constexpr int MinBlocks(int group_lanes, bool staged, bool table) {
  return table ? 4 : group_lanes == 2 ? 6 : staged ? 8 : 10;
}
// Weights per chunk: one running total is stored per chunk, and a draw
// walks at most this many weights; 4 for groups of 8 lanes (4 columns a
// member), 2 for 16 (2 columns), 8 otherwise.
__host__ __device__ constexpr int ChunkSizeFor(int group_lanes) {
  return group_lanes == 16 ? 2 : group_lanes == 8 ? 4 : 8;
}
__host__ __device__ constexpr int ChunkSize(int64_t categories) {
  return ChunkSizeFor(LaneGroupLanes(categories));
}

// Rows of one round (a warp's shared memory holds these).
__host__ __device__ constexpr int RoundRows(int64_t categories) {
  return kWarpSize / LaneGroupLanes(categories);
}
// Odd row stride, in values, so that lanes reading their rows in step hit
// different banks.
__host__ __device__ constexpr int64_t RowStride(int64_t categories) {
  return categories | 1;
}
// Chunks of a row: ceil(R / c) for the remnant, 32 / c a block
// (K = R + 32 nb, c the chunk size).
__host__ __device__ constexpr int64_t Chunks(int64_t categories) {
  return (categories + ChunkSize(categories) - 1) / ChunkSize(categories);
}
// Odd stride of a row's chunk ends, in uint64.
__host__ __device__ constexpr int64_t ChunkStride(int64_t categories) {
  return Chunks(categories) | 1;
}
// Draws of a row staged in shared memory before the warp writes them out
// together, at an odd stride in int32: 8 (16 at G = 8, 32 at 16, so that every
// member has a Philox block; 4 at G = 1, which holds 32 rows a round).
__host__ __device__ constexpr int DrawBatchFor(int group_lanes) {
  return group_lanes == 1    ? 4
         : group_lanes == 8  ? 16
         : group_lanes == 16 ? 32
                             : 8;
}
__host__ __device__ constexpr int StageStride(int64_t categories) {
  return DrawBatchFor(LaneGroupLanes(categories)) + 1;
}
// Bytes of the round's rows, rounded up to 16 so that the chunk ends that
// follow are aligned.
__host__ __device__ constexpr size_t RowsBytes(int64_t categories,
                                               size_t value_bytes) {
  return (static_cast<size_t>(RoundRows(categories) * RowStride(categories)) *
              value_bytes +
          15) /
         16 * 16;
}

// The prefix tables of a warp's round (kTable): C_{j+1}, the running total
// at every weight of each row. One lane a row: entry j of lane r's row at
// [32 j + r] (a lane's search reads banks 2r and 2r + 1 only); G lanes a
// row: row after row at an odd stride (K | 1). At most 8,320 bytes (K = 64).
__host__ __device__ constexpr size_t TableBytes(int64_t categories) {
  return static_cast<size_t>(LaneGroupLanes(categories) == 1
                                 ? kWarpSize * categories
                                 : RoundRows(categories) *
                                       RowStride(categories)) *
         sizeof(U);
}

// Where a row's rows and chunk ends lie in its warp's shared memory.
template <typename T>
struct WarpArea {
  T* rows;
  U* chunk_ends;
  int32_t* staged;  // a round's rows x StageStride draws
  U* table;         // kTable: the round's prefix tables (TableBytes)
};

// The lanes of this lane's group, for the group's shuffles.
template <int G>
__device__ __forceinline__ unsigned GroupMask(int lane) {
  return G == kWarpSize ? 0xffffffffu : ((1u << G) - 1) << (lane & ~(G - 1));
}

// The maximum of a row of logits, then w_j = exp(l_j - max) in place:
// member m takes values m, m + G, ...; the maximum is exact in any order.
template <typename T, int G>
__device__ __forceinline__ void LogitsToWeights(T* row, int k, int member,
                                                unsigned mask) {
  T row_max = -std::numeric_limits<T>::infinity();
  for (int j = member; j < k; j += G) {
    row_max = row[j] > row_max ? row[j] : row_max;
  }
#pragma unroll
  for (int bit = 1; bit < G; bit <<= 1) {
    const T other = __shfl_xor_sync(mask, row_max, bit);
    row_max = other > row_max ? other : row_max;
  }
  for (int j = member; j < k; j += G) row[j] = detmath::Exp(row[j] - row_max);
  __syncwarp(mask);  // the group's other members read these weights
}

// S_d in the contract's order, in every member of the group: member m's
// subtree of 32 / G columns, the group's merges level by level, member 0's
// remnant first.
template <typename T, int G>
__device__ __forceinline__ double GroupScaleSum(const T* row, int k, int member,
                                                int lane, unsigned mask) {
  constexpr int kCols = kWarpSize / G;
  const int remnant = static_cast<int>(cat::RemnantSize(k));
  const int blocks = static_cast<int>(cat::NumBlocks(k));
  double sum = member == 0 ? RemnantScaleSum(row, remnant) : 0.0;
  if (blocks > 0) {
    double node = ColumnTreeSum<kCols>(row, remnant, blocks, member * kCols);
#pragma unroll
    for (int bit = 1; bit < G; bit <<= 1) {
      node = node + __shfl_xor_sync(mask, node, bit);
    }
    sum = sum + node;
  }
  if constexpr (G > 1) sum = __shfl_sync(mask, sum, lane & ~(G - 1));
  return sum;
}

// First value of chunk c of a row with `remnant` values before its blocks
// (remnant_chunks = ceil(remnant / kChunk)), and one past its last.
template <int kChunk>
__device__ __forceinline__ int ChunkBegin(int c, int remnant,
                                          int remnant_chunks) {
  return c < remnant_chunks ? kChunk * c
                            : remnant + kChunk * (c - remnant_chunks);
}
template <int kChunk>
__device__ __forceinline__ int ChunkEnd(int c, int remnant,
                                        int remnant_chunks) {
  return c < remnant_chunks ? min(kChunk * (c + 1), remnant)
                            : remnant + kChunk * (c - remnant_chunks + 1);
}

// Groups of 16 (K = 257 to 512, chunks of 2: up to 256 a row, too many for
// one member's running sum): the chunk totals of the remnant (at most 16
// chunks, one a member) and then of each block (one a member) are scanned
// across the group's lanes and carried on, so every member writes the
// running totals of its own chunks. The same integers as one member's
// running sum (exact).
template <typename T>
__device__ __forceinline__ U Group16ChunkEnds(const T* row, U* ends, int k,
                                              int member, unsigned mask,
                                              cat::ScaleFactors<T> factors) {
  constexpr int kChunk = ChunkSizeFor(16);
  const int remnant = static_cast<int>(cat::RemnantSize(k));
  const int blocks = static_cast<int>(cat::NumBlocks(k));
  const int remnant_chunks = (remnant + kChunk - 1) / kChunk;  // <= 16
  // Inclusive scan over the group's 16 lanes, then the carry by its total.
  U carry = 0;
  const auto scan_and_store = [&](U mine, int chunk) {
#pragma unroll
    for (int o = 1; o < 16; o *= 2) {
      const U up = __shfl_up_sync(mask, mine, o, 16);
      if (member >= o) mine = mine + up;
    }
    if (chunk >= 0) ends[chunk] = carry + mine;
    carry = carry + __shfl_sync(mask, mine, 15, 16);
  };
  U mine = 0;
  if (member < remnant_chunks) {
    const int end = ChunkEnd<kChunk>(member, remnant, remnant_chunks);
    for (int j = kChunk * member; j < end; ++j) {
      mine = mine + cat::QuantizeByMultiply(row[j], factors);
    }
  }
  scan_and_store(mine, member < remnant_chunks ? member : -1);
  for (int b = 0; b < blocks; ++b) {
    const T* chunk = row + remnant + kWarpSize * b + kChunk * member;
    scan_and_store(cat::QuantizeByMultiply(chunk[0], factors) +
                       cat::QuantizeByMultiply(chunk[1], factors),
                   remnant_chunks + 16 * b + member);
  }
  __syncwarp(mask);  // every member's draws read every chunk end
  return carry;
}

// The running totals C at every chunk's end (ends[c]), every member's
// chunks quantized by that member: the remnant's chunks m, m + G, ... and,
// in every block, the chunks of member m's columns. Returns Q.
template <typename T, int G>
__device__ __forceinline__ U GroupChunkEnds(const T* row, U* ends, int k,
                                            int member, unsigned mask,
                                            cat::ScaleFactors<T> factors) {
  if constexpr (G == 16) {
    return Group16ChunkEnds<T>(row, ends, k, member, mask, factors);
  }
  constexpr int kCols = kWarpSize / G;
  constexpr int kChunk = ChunkSizeFor(G);
  constexpr int kChunksPerBlock = kWarpSize / kChunk;
  constexpr int kMemberChunks = kCols / kChunk;  // per block
  const int remnant = static_cast<int>(cat::RemnantSize(k));
  const int blocks = static_cast<int>(cat::NumBlocks(k));
  const int remnant_chunks = (remnant + kChunk - 1) / kChunk;
  const int chunks = remnant_chunks + kChunksPerBlock * blocks;
  // G = 1: one lane owns every chunk in row order, so t runs on and ends
  // holds C at once; otherwise ends holds each chunk's own total first.
  U t = 0;
  for (int c = member; c < remnant_chunks; c += G) {
    if constexpr (G > 1) t = 0;
    const int end = ChunkEnd<kChunk>(c, remnant, remnant_chunks);
    for (int j = kChunk * c; j < end; ++j) {
      t = t + cat::QuantizeByMultiply(row[j], factors);
    }
    ends[c] = t;
  }
  for (int b = 0; b < blocks; ++b) {
#pragma unroll
    for (int s = 0; s < kMemberChunks; ++s) {
      if constexpr (G > 1) t = 0;
      const T* chunk =
          row + remnant + kWarpSize * b + member * kCols + kChunk * s;
#pragma unroll
      for (int i = 0; i < kChunk; ++i) {
        t = t + cat::QuantizeByMultiply(chunk[i], factors);
      }
      ends[remnant_chunks + kChunksPerBlock * b + member * kMemberChunks + s] =
          t;
    }
  }
  if constexpr (G > 1) {
    __syncwarp(mask);
    if (member == 0) {
      U running = 0;
      for (int c = 0; c < chunks; ++c) {
        running = running + ends[c];
        ends[c] = running;
      }
    }
    __syncwarp(mask);
  }
  return ends[chunks - 1];
}

// The category of X < Q: the first chunk whose end exceeds X (binary
// search; ends[chunks - 1] = Q > X), then a walk from the chunk's start.
template <int kChunk, typename T>
__device__ __forceinline__ int32_t FindCategory(const T* row, const U* ends,
                                                int remnant, int chunks, U x,
                                                cat::ScaleFactors<T> factors) {
  const int remnant_chunks = (remnant + kChunk - 1) / kChunk;
  int c = 0;
  for (int n = chunks; n > 1;) {
    const int half = n / 2;
    c = ends[c + half - 1] <= x ? c + half : c;
    n -= half;
  }
  U prefix = c > 0 ? ends[c - 1] : 0;
  const int last = ChunkEnd<kChunk>(c, remnant, remnant_chunks) - 1;
  int j = ChunkBegin<kChunk>(c, remnant, remnant_chunks);
  for (; j < last; ++j) {
    prefix = prefix + cat::QuantizeByMultiply(row[j], factors);
    if (x < prefix) break;
  }
  return j;
}

// The prefix table of a row (kTable): table[kStep j] = C_{j+1} for every
// j < k, member m quantizing its own parts: the remnant's m-th piece of
// ceil(R / G) weights and, in every block, its 32 / G columns. Each member
// stores its part's running totals, the group scans the parts' totals
// (exact integers: the same C as one pass in row order) and each member
// adds its offset to what it stored. Returns Q.
template <typename T, int G, int kStep>
__device__ __forceinline__ U GroupPrefixTable(const T* row, U* table, int k,
                                              int member, unsigned mask,
                                              cat::ScaleFactors<T> factors) {
  U carry = 0;  // C at the start of the part being scanned
  if constexpr (G == 1) {
    // One lane: the whole row in order, no offsets to add.
    for (int j = 0; j < k; ++j) {
      carry = carry + cat::QuantizeByMultiply(row[j], factors);
      table[kStep * j] = carry;
    }
  } else {
    constexpr int kCols = kWarpSize / G;
    const int remnant = static_cast<int>(cat::RemnantSize(k));
    const int blocks = static_cast<int>(cat::NumBlocks(k));
    const auto scan_part = [&](int begin, int end) {
      U local = 0;
      for (int j = begin; j < end; ++j) {
        local = local + cat::QuantizeByMultiply(row[j], factors);
        table[kStep * j] = local;
      }
      U inclusive = local;
#pragma unroll
      for (int o = 1; o < G; o *= 2) {
        const U up = __shfl_up_sync(mask, inclusive, o, G);
        if (member >= o) inclusive = inclusive + up;
      }
      const U offset = carry + (inclusive - local);
      for (int j = begin; j < end; ++j) table[kStep * j] += offset;
      carry = carry + __shfl_sync(mask, inclusive, G - 1, G);
    };
    const int piece = (remnant + G - 1) / G;
    scan_part(min(remnant, member * piece), min(remnant, (member + 1) * piece));
    for (int b = 0; b < blocks; ++b) {
      const int first = remnant + kWarpSize * b + member * kCols;
      scan_part(first, first + kCols);
    }
    __syncwarp(mask);  // every member's draws read the whole table
  }
  return carry;
}

// The category of X < Q in a row's prefix table (kTable): the first j
// whose running total C_{j+1} = table[kStep j] exceeds X (binary search;
// the last is Q > X). That j has C_j <= X < C_j + q_j, the contract's
// category; a zero weight (C_{j+1} = C_j) never exceeds X where its
// predecessor did not, so it is never chosen.
template <int kStep>
__device__ __forceinline__ int32_t FindInTable(const U* table, int k, U x) {
  int j = 0;
  for (int n = k; n > 1;) {
    const int half = n / 2;
    j = table[kStep * (j + half - 1)] <= x ? j + half : j;
    n -= half;
  }
  return j;
}

// One warp's task of 32 lane-aligned rows (as kLanes), in G rounds of
// 32 / G rows, G lanes a row; kTable: each row as a prefix table of every
// weight instead of chunk ends.
template <typename T, int G, bool kStaged, bool kTable>
__device__ __forceinline__ void RunTask(const SegmentedParams<T>& p,
                                        const CategoricalSegment& seg,
                                        int64_t task, int lane,
                                        WarpArea<T> area) {
  constexpr int kRows = kWarpSize / G;
  const int k = static_cast<int>(seg.categories);  // <= 512
  const int32_t draws = seg.draws;
  const int remnant = static_cast<int>(cat::RemnantSize(k));
  const int chunks = static_cast<int>(Chunks(k));
  const int stride = static_cast<int>(RowStride(k));
  const int chunk_stride = static_cast<int>(ChunkStride(k));
  constexpr int kDrawBatch = DrawBatchFor(G);
  constexpr int kStageStride = kDrawBatch + 1;
  const int member = lane % G;
  const int slot = lane / G;
  constexpr int kTableStep = G == 1 ? kWarpSize : 1;
  const unsigned mask = GroupMask<G>(lane);

  // Task row t (0..31) is segment row row0 + t.
  const int64_t row0 =
      (task - seg.task_begin) * kWarpSize - cat::LaneOf(seg.first_row);
  const int t_begin = row0 < 0 ? static_cast<int>(-row0) : 0;
  const int t_end = seg.rows - row0 < kWarpSize
                        ? static_cast<int>(seg.rows - row0)
                        : kWarpSize;
#pragma unroll 1
  for (int round = 0; round < G; ++round) {
    const int first = round * kRows;
    const int rb = max(t_begin, first);
    const int re = min(t_end, first + kRows);
    if (rb >= re) continue;  // the same in every lane
    QueueRowsCopy(area.rows, stride,
                  p.values + seg.values_offset + (row0 + rb) * k, re - rb, k,
                  rb - first, lane);
    WaitAsyncCopies();
    __syncwarp();
    const int t = first + slot;
    const bool active = t >= rb && t < re;  // whole groups
    T* row = area.rows + slot * stride;
    U* ends = area.chunk_ends + slot * chunk_stride;
    // kTable: this row's prefix table (one lane a row: interleaved).
    U* table = G == 1 ? area.table + lane : area.table + slot * stride;
    U total = 0;
    cat::ScaleFactors<T> factors{};
    if (active) {
      if (seg.kind == WeightKind::kLogits) {
        LogitsToWeights<T, G>(row, k, member, mask);
      }
      const int scale =
          cat::RowScale(GroupScaleSum<T, G>(row, k, member, lane, mask));
      factors = cat::ScaleFactorsFor<T>(scale);
      if constexpr (kTable) {
        total = GroupPrefixTable<T, G, kTableStep>(row, table, k, member, mask,
                                                   factors);
      } else {
        total = GroupChunkEnds<T, G>(row, ends, k, member, mask, factors);
      }
    }
    const auto find = [&](U x) {
      if constexpr (kTable) {
        return FindInTable<kTableStep>(table, k, x);
      } else {
        return FindCategory<ChunkSizeFor(G)>(row, ends, remnant, chunks, x,
                                             factors);
      }
    };

    const uint64_t item = seg.first_row + static_cast<uint64_t>(row0 + t);
    PhiloxBlock philox{};
    if constexpr (!kStaged) {
      // Each lane writes its row's draws itself (batches of one draw a
      // row: coalesced across the warp's rows when D = 1).
      if (active) {
        int32_t* my_out = p.out + seg.out_offset + (row0 + t) * draws;
        // Member m takes Philox blocks m, m + G, ...: draws 2b and 2b + 1
        // of block b.
#pragma unroll 1
        for (int32_t b = member; cat::kDrawsPerBlock * b < draws; b += G) {
          const int32_t d_end = min(draws, cat::kDrawsPerBlock * (b + 1));
          for (int32_t d = cat::kDrawsPerBlock * b; d < d_end; ++d) {
            const U x = cat::NextDrawX(seg.seed, item, d, total, philox);
            my_out[d] = find(x);
          }
        }
      }
    } else {
      // Draws, kDrawBatch a row at a time: staged in shared memory, then
      // written by the whole warp as (re - rb) runs of contiguous int32 (one
      // lane writing its row's draws one by one touches a different
      // 32-byte sector per lane and store).
      int32_t* staged = area.staged + slot * kStageStride;
      int32_t* round_out = p.out + seg.out_offset + (row0 + rb) * draws;
#pragma unroll 1
      for (int32_t d0 = 0; d0 < draws; d0 += kDrawBatch) {
        const int n = min(draws - d0, kDrawBatch);
        if (active) {
          // Member m takes the batch's Philox blocks m, m + G, ...: draws
          // d0 + 2b and d0 + 2b + 1 of block b (d0 is even).
          for (int b = member; cat::kDrawsPerBlock * b < n; b += G) {
            const int i_end = min(n, cat::kDrawsPerBlock * (b + 1));
            for (int i = cat::kDrawsPerBlock * b; i < i_end; ++i) {
              const U x = cat::NextDrawX(seg.seed, item, d0 + i, total, philox);
              staged[i] = find(x);
            }
          }
        }
        __syncwarp();
        const int32_t* from = area.staged + (rb - first) * kStageStride;
        ForEachInSpan(re - rb, n, lane, [&](int, int r, int i) {
          round_out[static_cast<int64_t>(r) * draws + d0 + i] =
              from[r * kStageStride + i];
        });
        __syncwarp();  // the next batch overwrites the staged draws
      }
    }
    __syncwarp();  // the next round overwrites the rows
  }
}

// One launch per group size (a kernel holding them all spills: their
// register needs differ), staged or not (the staging's registers would
// cost one draw a row as well), with the prefix table or not (G = 1).
template <typename T, int G, bool kStaged, bool kTable>
__global__ void __launch_bounds__(kBlockThreads, MinBlocks(G, kStaged, kTable))
    LaneGroupsKernel(const SegmentedParams<T> p, int64_t task_begin,
                     int64_t task_end, int32_t warp_bytes) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t task =
      task_begin + static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (task >= task_end) return;  // no block-wide synchronization below
  const CategoricalSegment& seg = FindSegment(p.segments, p.num_segments, task);
  unsigned char* mine = smem_bytes + static_cast<size_t>(warp) * warp_bytes;
  // After the rows: the chunk ends, or the prefix table in their place.
  unsigned char* after_rows = mine + RowsBytes(seg.categories, sizeof(T));
  const size_t ends_bytes =
      kTable ? TableBytes(seg.categories)
             : static_cast<size_t>(RoundRows(seg.categories) *
                                   ChunkStride(seg.categories)) *
                   sizeof(U);
  const WarpArea<T> area{reinterpret_cast<T*>(mine),
                         reinterpret_cast<U*>(after_rows),
                         reinterpret_cast<int32_t*>(after_rows + ends_bytes),
                         reinterpret_cast<U*>(after_rows)};
  RunTask<T, G, kStaged, kTable>(p, seg, task, lane, area);
}

template <typename T, int G, bool kTable>
absl::Status LaunchGroupInstance(const SegmentedParams<T>& params,
                                 int64_t task_begin, int64_t task_end,
                                 size_t warp_bytes, bool staged,
                                 cudaStream_t stream) {
  const size_t smem = kWarpsPerBlock * warp_bytes;
  const auto kernel = staged ? LaneGroupsKernel<T, G, true, kTable>
                             : LaneGroupsKernel<T, G, false, kTable>;
  SAMPLER_RETURN_IF_ERROR(
      AllowDynamicSharedMemory(reinterpret_cast<const void*>(kernel), smem));
  const int64_t blocks =
      (task_end - task_begin + kWarpsPerBlock - 1) / kWarpsPerBlock;
  kernel<<<static_cast<unsigned>(blocks), kBlockThreads, smem, stream>>>(
      params, task_begin, task_end, static_cast<int32_t>(warp_bytes));
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

// With `table` (plan.lane_groups_table) a warp holds prefix tables in
// place of the chunk ends: the most that any K of G lanes a row needs.
template <typename T, int G>
absl::Status LaunchGroup(const SegmentedParams<T>& params, int64_t task_begin,
                         int64_t task_end, size_t warp_bytes, bool staged,
                         bool table, cudaStream_t stream) {
  if (task_end <= task_begin) return absl::OkStatus();
  if (!table) {
    return LaunchGroupInstance<T, G, false>(params, task_begin, task_end,
                                            warp_bytes, staged, stream);
  }
  constexpr int64_t kLargestK = int64_t{kWarpSize} * G;
  size_t table_warp_bytes =
      RowsBytes(kLargestK, sizeof(T)) + TableBytes(kLargestK) +
      (staged ? static_cast<size_t>(RoundRows(kLargestK) *
                                    StageStride(kLargestK)) *
                    sizeof(int32_t)
              : 0);
  table_warp_bytes = (table_warp_bytes + 15) / 16 * 16;
  return LaunchGroupInstance<T, G, true>(params, task_begin, task_end,
                                         table_warp_bytes, staged, stream);
}

}  // namespace

size_t LaneGroupsWarpSmemBytes(int64_t categories, size_t value_bytes,
                               bool staged) {
  return RowsBytes(categories, value_bytes) +
         static_cast<size_t>(RoundRows(categories) * ChunkStride(categories)) *
             sizeof(U) +
         (staged ? static_cast<size_t>(RoundRows(categories) *
                                       StageStride(categories)) *
                       sizeof(int32_t)
                 : 0);
}

template <typename T>
absl::Status LaunchCategoricalLaneGroups(const CategoricalPlan& plan,
                                         const CategoricalSegment* segments,
                                         const T* values, int32_t* out,
                                         cudaStream_t stream) {
  if ((plan.tasks + kWarpsPerBlock - 1) / kWarpsPerBlock >
      std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchCategorical: ", plan.tasks,
                     " warps are more than one lane-groups launch can take"));
  }
  const SegmentedParams<T> params =
      SegmentedParamsOf(plan, segments, values, out);
  const size_t warp_bytes =
      static_cast<size_t>(plan.smem_warp_elems[0]) * sizeof(U);
  const int64_t* ends = plan.lane_group_ends;
  const bool staged = plan.lane_groups_staged;
  const bool table = plan.lane_groups_table;
  SAMPLER_RETURN_IF_ERROR((LaunchGroup<T, 1>)(params, 0, ends[0], warp_bytes,
                                              staged, table, stream));
  SAMPLER_RETURN_IF_ERROR((LaunchGroup<T, 2>)(params, ends[0], ends[1],
                                              warp_bytes, staged, table,
                                              stream));
  SAMPLER_RETURN_IF_ERROR((LaunchGroup<T, 4>)(params, ends[1], ends[2],
                                              warp_bytes, staged, table,
                                              stream));
  SAMPLER_RETURN_IF_ERROR((LaunchGroup<T, 8>)(params, ends[2], ends[3],
                                              warp_bytes, staged, table,
                                              stream));
  return LaunchGroup<T, 16>(params, ends[3], ends[4], warp_bytes, staged, table,
                            stream);
}

template absl::Status LaunchCategoricalLaneGroups<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
template absl::Status LaunchCategoricalLaneGroups<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda
