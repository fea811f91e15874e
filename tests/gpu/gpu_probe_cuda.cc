// The real GPU probe: asks the CUDA runtime for devices.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>

#include "tests/gpu/gpu_probe.h"

namespace sampler::testing {

namespace {

// Whether the driver library (libcuda, installed with the NVIDIA driver,
// absent on machines without a GPU) can be loaded.
bool HaveDriverLibrary() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

}  // namespace

GpuProbe ProbeGpu() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaSuccess) {
    if (count > 0) {
      return {GpuState::kPresent, std::to_string(count) + " device(s)"};
    }
    return {GpuState::kAbsent, "the runtime sees 0 devices"};
  }
  const std::string said =
      std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
  // No device behind a working driver, or no driver at all (the runtime
  // then says the driver is insufficient): a machine without a GPU.
  if (error == cudaErrorNoDevice ||
      (error == cudaErrorInsufficientDriver && !HaveDriverLibrary())) {
    return {GpuState::kAbsent, said};
  }
  // A driver that is there but too old, a device that is busy or lost:
  // the GPU host is broken, which must not pass for "no GPU".
  return {GpuState::kBroken, said};
}

}  // namespace sampler::testing
