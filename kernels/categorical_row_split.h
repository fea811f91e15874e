// The row-split categorical kernel (CategoricalKernel::kRowSplit, in
// categorical_row_split.cu): one row across a cluster of kRowSplitCtas
// thread blocks, for large K and few rows. Private to the categorical CUDA
// library; categorical.cu plans and launches it.
#ifndef SAMPLER_KERNELS_CATEGORICAL_ROW_SPLIT_H_
#define SAMPLER_KERNELS_CATEGORICAL_ROW_SPLIT_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {

// Thread blocks per row (one cluster) and threads per block.
inline constexpr int kRowSplitCtas = 8;
inline constexpr int kRowSplitThreads = 256;
// Each block holds its chunk of the row in shared memory, at most this many
// bytes of values and group sums: K up to about 400k (float) or 200k
// (double).
inline constexpr size_t kRowSplitMaxSmemBytes = size_t{200} << 10;

// Elements of a row that each block of the cluster holds: ceil(K / 8),
// rounded up to a multiple of 32 (a group: one uint64 sum of quantized
// weights per 32 elements).
int64_t RowSplitChunk(int64_t categories);

// Dynamic shared memory of a block for chunks of `chunk` elements of
// `value_bytes` bytes: the values, then one uint64 per group.
size_t RowSplitSmemBytes(int64_t chunk, size_t value_bytes);

// Queues the kernel for plan.tasks rows (one per task, found by
// task_begin as for kWarpPerRow) on `stream`. The plan's row_split_chunk
// is the largest chunk of any segment.
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
