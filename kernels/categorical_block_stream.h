// The block-stream categorical kernel (CategoricalPlan::block_row_streamed
// of CategoricalKernel::kBlockRow, in categorical_block_stream.cu): one
// thread block (or a cluster of 2 to 16) per row at a time, as block-row,
// but the chunk is not held in shared memory: it is read from global memory
// twice, the second pass from L2. Private to the categorical CUDA library;
// categorical_block_row.cu launches it for plans that ask for it.
#ifndef SAMPLER_KERNELS_CATEGORICAL_BLOCK_STREAM_H_
#define SAMPLER_KERNELS_CATEGORICAL_BLOCK_STREAM_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {

// Warps a block: 16 (512 threads, two blocks an SM at 64 registers), or
// (CategoricalPlan::block_row_warps, the benchmark's "-st-8w") 8, four
// blocks an SM: as many warps, but four rows' phases (DRAM pass, L2 pass,
// scan, draws) interleaved instead of two.
inline constexpr int kBlockStreamWarps = 16;
inline constexpr int kBlockStreamFewerWarps = 8;
// The most bytes of a row a block streams: the fewest of 1, 2, 4, 8, 16
// blocks a row whose chunks hold at most this (16,384 floats, 8,192
// doubles). Why 64 KiB: a chunk's first pass must still be in L2 when its
// second pass comes, and the rows in flight, 2 blocks an SM x 132 SMs x
// 64 KiB = 17 MB, fit the H100's 50 MB L2 with room to spare.
inline constexpr int64_t kBlockStreamChunkBytes = int64_t{64} << 10;

// Blocks a row that the block-stream kernel takes for a batch whose largest
// K is `categories`, of values of `value_bytes` bytes (1 to 16).
int BlockStreamCtas(int64_t categories, size_t value_bytes);

// Queues the kernel for plan.tasks rows on `stream`: plan.block_row_ctas
// blocks a row, plan.block_row_warps (kBlockStreamWarps or
// kBlockStreamFewerWarps) warps a block, plan.block_row_slots
// values a chunk's groups span (BlockRowSlots).
template <typename T>
absl::Status LaunchCategoricalBlockStream(const CategoricalPlan& plan,
                                          const CategoricalSegment* segments,
                                          const T* values, int32_t* out,
                                          cudaStream_t stream);

extern template absl::Status LaunchCategoricalBlockStream<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
extern template absl::Status LaunchCategoricalBlockStream<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_BLOCK_STREAM_H_
