// The cuFFT loader (cufft_loader.h).
#include "cufft_loader.h"

#include <dlfcn.h>

#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sampler::kernels::cuda {

const CufftApi& Cufft() {
  static const CufftApi api = [] {
    CufftApi a;
    void* lib = nullptr;
    for (const char* name : {"libcufft.so.12", "libcufft.so.13",
                             "libcufft.so.11", "libcufft.so"}) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
    }
    if (lib == nullptr) return a;
    auto get = [lib](auto* fn, const char* name) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(
          dlsym(lib, name));
      return *fn != nullptr;
    };
    a.ok = get(&a.create, "cufftCreate") && get(&a.destroy, "cufftDestroy") &&
           get(&a.set_auto_allocation, "cufftSetAutoAllocation") &&
           get(&a.make_plan_many, "cufftMakePlanMany") &&
           get(&a.set_work_area, "cufftSetWorkArea") &&
           get(&a.set_stream, "cufftSetStream") &&
           get(&a.exec_d2z, "cufftExecD2Z") &&
           get(&a.exec_z2d, "cufftExecZ2D") &&
           get(&a.estimate_1d, "cufftEstimate1d");
    return a;
  }();
  return api;
}

absl::Status CufftStatus(cufftResult r, const char* what) {
  if (r == CUFFT_SUCCESS) return absl::OkStatus();
  if (r == CUFFT_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cuFFT ", what, ": allocation failed"));
  }
  return absl::InternalError(
      absl::StrCat("cuFFT ", what, " failed with code ", static_cast<int>(r)));
}

}  // namespace sampler::kernels::cuda
