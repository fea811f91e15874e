// The block-row categorical kernel (CategoricalKernel::kBlockRow, in
// categorical_block_row.cu): one thread block (or a cluster of 2 to 8 for
// large K, 16 by ReplanBlockRowCtas) per row at a time, the row held in shared
// memory (two rows a block, the next one arriving by a bulk asynchronous copy
// while this one is sampled), so that every weight is read from DRAM once.
// Private to the categorical CUDA library; categorical.cu plans and launches
// it.
#ifndef SAMPLER_KERNELS_CATEGORICAL_BLOCK_ROW_H_
#define SAMPLER_KERNELS_CATEGORICAL_BLOCK_ROW_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {

// Blocks a row (one cluster): one for rows of at most
// kBlockRowTargetChunkBytes (16,384 floats, 8,192 doubles); past that the
// fewest of 2, 4, 8, 16 whose chunks hold at most kBlockRowClusterChunkBytes
// (8,192 floats, 4,096 doubles: 68 KB a block, 3 an SM), up to 16 such
// chunks; past that the fewest of 1, 2, 4, 8 whose chunks hold at most
// kBlockRowTargetChunkBytes, else 8. A batch runs the most that any of its
// rows wants. Session 10 (H100, % of copy at 1/4/32 draws): K = 2^17 in
// 16 blocks of 8,192 36.7/36.7/33.7 against 8 of 16,384 32.1/31.4/28.7
// (64 rows: 23.0/21.7/20.8 against 21.5/21.5/20.4); K = 20,000 in 4 of
// 5,000 40.5/39.2/38.0, in 2 of 10,000 40.2/39.1/37.0.
inline constexpr int kBlockRowMaxCtas = 8;
inline constexpr int64_t kBlockRowTargetChunkBytes = int64_t{64} << 10;
inline constexpr int64_t kBlockRowClusterChunkBytes = int64_t{32} << 10;
// With several blocks a row, a chunk is ceil(K / blocks) rounded up to a
// multiple of this.
inline constexpr int64_t kBlockRowChunkAlign = 16;
// Warps a block: one per 1,024 values of the batch's largest chunk (a power
// of two), 1 to 32 (a plan may ask for any number up to 32: the
// benchmark's "-2x" variant doubles them).
inline constexpr int kBlockRowMaxWarps = 32;
// Dynamic shared memory a block may take: its two row buffers and its
// group totals.
inline constexpr size_t kBlockRowMaxSmemBytes = size_t{220} << 10;

// The most blocks a row (BlockRowCtas's clusters of small chunks,
// ReplanBlockRowCtas): 16, a non-portable cluster size (sm_90 allows it
// where the kernel opts in).
inline constexpr int kBlockRowMaxSplitCtas = 16;

// CategoricalPlan::block_row_warp_draws: rows of one block with at most
// this many draws take them by one warp together (WarpDraws in
// categorical_block_row.cu); a thread a draw above (session 10: at 4 draws
// the warp's searches one after another lost to 4 threads' side by side).
inline constexpr int32_t kBlockRowWarpDrawsUpTo = 1;

// Blocks a row for a batch whose largest K is `categories`, of values of
// `value_bytes` bytes.
int BlockRowCtas(int64_t categories, size_t value_bytes);

// Sets plan's block-row fields for a batch whose largest K is `categories`
// at `ctas` blocks a row: the chunk of that K, its warps and its buffers.
void PlanBlockRow(int64_t categories, int ctas, size_t value_bytes,
                  CategoricalPlan* plan);

// Values of a row of K `categories` that each of `ctas` blocks holds: K
// itself for one block.
int64_t BlockRowChunk(int64_t categories, int ctas);

// The block's warps for chunks of up to `chunk` values.
int BlockRowWarps(int64_t chunk);

// Values each of a block's two row buffers holds for chunks of up to
// `chunk` values of `value_bytes` bytes (room for the misaligned head of a
// chunk and the zeros that pad its last group).
int64_t BlockRowSlots(int64_t chunk, size_t value_bytes);

// A block's dynamic shared memory for buffers of `slots` values: the two
// buffers, then one uint64 per group of values.
size_t BlockRowSmemBytes(int64_t slots, size_t value_bytes);

// Queues the kernel for plan.tasks rows (one task a row, numbered by
// task_begin as for kWarpPerRow) on `stream`: plan.block_row_ctas blocks a
// row (a cluster), plan.block_row_warps warps a block, buffers of
// plan.block_row_slots values, as many rows at a time as stay resident
// (each block or cluster walks its rows, then the rows a grid further).
template <typename T>
absl::Status LaunchCategoricalBlockRow(const CategoricalPlan& plan,
                                       const CategoricalSegment* segments,
                                       const T* values, int32_t* out,
                                       cudaStream_t stream);

extern template absl::Status LaunchCategoricalBlockRow<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
extern template absl::Status LaunchCategoricalBlockRow<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_BLOCK_ROW_H_
