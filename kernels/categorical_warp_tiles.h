// The warp-tiles categorical kernel (CategoricalKernel::kWarpTiles, in
// categorical_warp_tiles.cu): one warp per row for mid K, integer weights
// by tiles of 128. Private to the categorical CUDA library; categorical.cu
// plans and launches it.
#ifndef SAMPLER_KERNELS_CATEGORICAL_WARP_TILES_H_
#define SAMPLER_KERNELS_CATEGORICAL_WARP_TILES_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {

// Values per tile: 4 a lane. Each row keeps one uint64 running total per
// tile in shared memory.
inline constexpr int kWarpTilesValuesPerTile = 128;
// The largest K the kernel takes: 1,024 tiles, 8 KiB of tile ends a warp.
inline constexpr int64_t kWarpTilesMaxCategories = int64_t{1} << 17;

// Queues the kernel for plan.tasks rows (one warp each, numbered by
// task_begin as for kWarpPerRow) on `stream`, plan.smem_block_cap tile ends
// a warp in shared memory.
template <typename T>
absl::Status LaunchCategoricalWarpTiles(const CategoricalPlan& plan,
                                        const CategoricalSegment* segments,
                                        const T* values, int32_t* out,
                                        cudaStream_t stream);

extern template absl::Status LaunchCategoricalWarpTiles<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
extern template absl::Status LaunchCategoricalWarpTiles<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_WARP_TILES_H_
