#include "absl/strings/str_cat.h"
#include "sampler/kernels/cuda/status.h"

namespace sampler::kernels::cuda {

absl::Status ToStatus(cudaError_t error, const char* call, const char* file,
                      int line) {
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat(cudaGetErrorName(error), " (", cudaGetErrorString(error),
                   ") from ", call, " at ", file, ":", line);
  if (error == cudaErrorMemoryAllocation) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

}  // namespace sampler::kernels::cuda
