// The contract-version-3 gamma kernel (gamma3.cu), which LaunchGamma runs.
// Declared apart so that the launcher's switch between kernel versions stays
// a few lines in gamma.cu.
#ifndef SAMPLER_KERNELS_CUDA_GAMMA3_H_
#define SAMPLER_KERNELS_CUDA_GAMMA3_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "sampler/kernels/cuda/gamma.h"

namespace sampler::kernels::cuda {

// One kernel over the batch (segment_status already zeroed by the caller).
// options.pre_cache is ignored: every lane takes its next pair of items as
// soon as its pair is accepted. options.zig_table_shared picks where the
// ziggurat table is read from; options.counters: the instrumented variant.
template <typename T>
absl::Status LaunchGamma3Kernel(const GammaBatch<T>& batch, cudaStream_t stream,
                                const GammaLaunchOptions& options);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_GAMMA3_H_
