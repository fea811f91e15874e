// CUDA error handling: every runtime call goes through one macro whose
// message carries the call, the file, the line and cudaGetErrorName.
#ifndef SAMPLER_KERNELS_CUDA_STATUS_H_
#define SAMPLER_KERNELS_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"

namespace sampler::kernels::cuda {

// OK for cudaSuccess; RESOURCE_EXHAUSTED for out-of-memory errors (the
// server answers those per batch and keeps serving); INTERNAL otherwise.
absl::Status ToStatus(cudaError_t error, const char* call, const char* file,
                      int line);

}  // namespace sampler::kernels::cuda

// Returns the error of a CUDA runtime call as an absl::Status.
#define SAMPLER_CUDA_RETURN_IF_ERROR(call)                                  \
  do {                                                                      \
    const cudaError_t sampler_cuda_error_ = (call);                         \
    if (sampler_cuda_error_ != cudaSuccess) {                               \
      return ::sampler::kernels::cuda::ToStatus(sampler_cuda_error_, #call, \
                                                __FILE__, __LINE__);        \
    }                                                                       \
  } while (false)

// After every kernel launch: a bad configuration is reported here.
#define SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED() \
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError())

#endif  // SAMPLER_KERNELS_CUDA_STATUS_H_
