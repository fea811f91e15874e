// The tensor-core kernel of the CUDA enumeration's direct path (in
// enumerate_tensor.cu): a linear pair convolution as a sum of small Toeplitz
// matrix products on the FP64 tensor cores (mma.sync m8n8k4 .f64), for float
// and double problems alike. It runs the direct configurations whose
// DirectConfigDef::tensor is set (enumerate_plan.h), over the same tasks (a
// tile of consecutive outputs each) as the warp-cooperative kernel.
// Private to the enumeration's CUDA library: enumerate.cu launches it.
#ifndef SAMPLER_KERNELS_ENUMERATE_TENSOR_H_
#define SAMPLER_KERNELS_ENUMERATE_TENSOR_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "enumerate_direct.cuh"

namespace sampler::kernels::cuda::enumerate_internal {

// Queues the kernel of direct configuration `config` (its tensor field > 0)
// over args.num_tasks tiles on `stream`. Errors are launch errors.
template <typename T>
absl::Status LaunchTensorKernel(int config, const DeviceArgs<T>& args,
                                cudaStream_t stream);

extern template absl::Status LaunchTensorKernel<float>(int,
                                                       const DeviceArgs<float>&,
                                                       cudaStream_t);
extern template absl::Status LaunchTensorKernel<double>(
    int, const DeviceArgs<double>&, cudaStream_t);

}  // namespace sampler::kernels::cuda::enumerate_internal

#endif  // SAMPLER_KERNELS_ENUMERATE_TENSOR_H_
