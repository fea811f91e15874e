// The lane-per-row categorical kernel (CategoricalKernel::kLanes, in
// categorical_lanes.cu): one row per lane for small K, no shuffles. Private
// to the categorical CUDA library; categorical.cu plans and launches it.
#ifndef SAMPLER_KERNELS_CATEGORICAL_LANES_H_
#define SAMPLER_KERNELS_CATEGORICAL_LANES_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {

// The largest K the kernel takes: a warp holds its 32 rows in shared
// memory (about 20 KiB a warp at K = 128 in float).
inline constexpr int64_t kLanesMaxCategories = 128;

// Dynamic shared memory of one warp (one block) for rows of K values of
// `value_bytes` bytes: the 32 rows at an odd row stride, then one uint64
// running total per chunk of kLanesChunk weights and row.
size_t LanesWarpSmemBytes(int64_t categories, size_t value_bytes);

// Queues the kernel for plan.tasks warps (32 lane-aligned rows each,
// numbered by task_begin as for kButterfly) on `stream`, with
// plan.smem_warp_elems[0] eight-byte units of shared memory a warp.
template <typename T>
absl::Status LaunchCategoricalLanes(const CategoricalPlan& plan,
                                    const CategoricalSegment* segments,
                                    const T* values, int32_t* out,
                                    cudaStream_t stream);

extern template absl::Status LaunchCategoricalLanes<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
extern template absl::Status LaunchCategoricalLanes<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_LANES_H_
