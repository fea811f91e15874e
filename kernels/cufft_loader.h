// cuFFT, loaded at run time (dlopen) for the enumeration's FFT path: its
// library is large (hundreds of MB) and only that path needs it, so a
// missing library disables the path instead of the binary.
#ifndef SAMPLER_KERNELS_CUFFT_LOADER_H_
#define SAMPLER_KERNELS_CUFFT_LOADER_H_

#include <cufft.h>

#include "absl/status/status.h"

namespace sampler::kernels::cuda {

// The cuFFT entry points the FFT path calls; ok is false when the library
// or one of them could not be loaded (every pointer may then be null).
struct CufftApi {
  decltype(&cufftCreate) create = nullptr;
  decltype(&cufftDestroy) destroy = nullptr;
  decltype(&cufftSetAutoAllocation) set_auto_allocation = nullptr;
  decltype(&cufftMakePlanMany) make_plan_many = nullptr;
  decltype(&cufftSetWorkArea) set_work_area = nullptr;
  decltype(&cufftSetStream) set_stream = nullptr;
  decltype(&cufftExecD2Z) exec_d2z = nullptr;
  decltype(&cufftExecZ2D) exec_z2d = nullptr;
  decltype(&cufftEstimate1d) estimate_1d = nullptr;
  bool ok = false;
};

// The process's cuFFT, loaded on first use (thread-safe).
const CufftApi& Cufft();

// OK for CUFFT_SUCCESS; RESOURCE_EXHAUSTED for CUFFT_ALLOC_FAILED;
// INTERNAL naming `what` and the code otherwise.
absl::Status CufftStatus(cufftResult r, const char* what);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUFFT_LOADER_H_
