// The row-split categorical kernel (CategoricalKernel::kRowSplit, in
// categorical_row_split.cu): one row across a cluster of 1 to 8 thread
// blocks, for large K and few rows. Private to the categorical CUDA
// library; categorical.cu plans and launches it.
#ifndef SAMPLER_KERNELS_CATEGORICAL_ROW_SPLIT_H_
#define SAMPLER_KERNELS_CATEGORICAL_ROW_SPLIT_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {

// Thread blocks per row (one cluster): at most 8 (the portable cluster
// size), as few as keep a block's chunk at kRowSplitTargetChunk elements.
inline constexpr int kRowSplitMaxCtas = 8;
inline constexpr int64_t kRowSplitTargetChunk = 4096;
inline constexpr int kRowSplitThreads = 256;
// Each block holds its chunk of the row in shared memory, at most this many
// bytes of values and group sums: K up to about 400k (float) or 200k
// (double).
inline constexpr size_t kRowSplitMaxSmemBytes = size_t{200} << 10;

// Blocks per row for K: the fewest of 1, 2, 4, 8 whose chunks hold at most
// kRowSplitTargetChunk elements, else 8. A batch runs the most that any of
// its rows wants.
int RowSplitCtas(int64_t categories);

// Elements of a row that each of `ctas` blocks holds: ceil(K / ctas),
// rounded up to a multiple of 32 (a group: one uint64 sum of quantized
// weights per 32 elements).
int64_t RowSplitChunk(int64_t categories, int ctas);

// Dynamic shared memory of a block for chunks of `chunk` elements of
// `value_bytes` bytes: the values, then one uint64 per group.
size_t RowSplitSmemBytes(int64_t chunk, size_t value_bytes);

// Queues the kernel for plan.tasks rows (one per task, found by
// task_begin as for kWarpPerRow) on `stream`, plan.row_split_ctas blocks a
// row, chunks of plan.row_split_chunk elements.
template <typename T>
absl::Status LaunchCategoricalRowSplit(const CategoricalPlan& plan,
                                       const CategoricalSegment* segments,
                                       const T* values, int32_t* out,
                                       cudaStream_t stream);

extern template absl::Status LaunchCategoricalRowSplit<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
extern template absl::Status LaunchCategoricalRowSplit<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_ROW_SPLIT_H_
