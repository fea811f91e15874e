// Launch helpers shared by the kernels' launchers (host code): the grid of a
// grid-stride kernel and the opt-in to more than 48 KiB of dynamic shared
// memory. The check after every launch is SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED
// (cuda/status.h).
#ifndef SAMPLER_KERNELS_CUDA_LAUNCH_H_
#define SAMPLER_KERNELS_CUDA_LAUNCH_H_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/status.h"

namespace sampler::kernels::cuda {

// Blocks of `block_threads` threads for a grid-stride `kernel` over `work`
// items, a block taking `items_per_block` of them per pass: as many blocks
// as are resident at once on the current device at most (the grid strides
// over the rest), fewer when the work needs fewer, at most `max_blocks` when
// that is positive, and at least one.
template <typename Kernel>
absl::StatusOr<int> ResidentGridBlocks(Kernel kernel, int block_threads,
                                       int64_t work, int64_t items_per_block,
                                       int max_blocks) {
  int device = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  int sms = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int per_sm = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, kernel, block_threads, 0));
  int64_t n = static_cast<int64_t>(sms) * std::max(per_sm, 1);
  n = std::min(n, (work + items_per_block - 1) / items_per_block);
  if (max_blocks > 0) n = std::min<int64_t>(n, max_blocks);
  return static_cast<int>(std::max<int64_t>(n, 1));
}

// A block may use more than 48 KiB of dynamic shared memory only once its
// kernel's limit is raised: does so when `bytes` needs it.
inline absl::Status AllowDynamicSharedMemory(const void* kernel, size_t bytes) {
  if (bytes > 48 * 1024) {
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(bytes)));
  }
  return absl::OkStatus();
}

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_LAUNCH_H_
