#include "server/backend_factory.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sampler/kernels/status_macros.h"
#include "server/cpu_backend.h"
#if SAMPLER_WITH_CUDA_BACKEND
#include "server/cuda_backend.h"
#include "server/small_on_cpu.h"
#endif

namespace sampler::server {
namespace {

absl::StatusOr<std::unique_ptr<Backend>> Cpu(const BackendOptions& options,
                                             const std::string& reason) {
  const int threads =
      options.cpu_threads > 0
          ? options.cpu_threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  SAMPLER_ASSIGN_OR_RETURN(std::unique_ptr<CpuBackend> cpu,
                           CpuBackend::Create(threads, reason));
  return std::unique_ptr<Backend>(std::move(cpu));
}

#if SAMPLER_WITH_CUDA_BACKEND
// --cpu_below_items: a CPU backend beside the GPU's for small batches.
absl::StatusOr<std::unique_ptr<Backend>> WithSmallOnCpu(
    const BackendOptions& options, std::unique_ptr<Backend> main) {
  if (options.cpu_below_items <= 0) return main;
  SAMPLER_ASSIGN_OR_RETURN(
      std::unique_ptr<Backend> cpu,
      Cpu(options, absl::StrCat("batches under ", options.cpu_below_items,
                                " items (--cpu_below_items)")));
  return std::unique_ptr<Backend>(std::make_unique<SmallOnCpuBackend>(
      std::move(main), std::move(cpu), options.cpu_below_items));
}

absl::StatusOr<std::unique_ptr<Backend>> Cuda(const BackendOptions& options,
                                              const std::string& reason) {
  CudaBackendOptions cuda;
  cuda.devices = options.gpus;
  cuda.streams_per_device = options.streams_per_gpu;
  cuda.pool_limit_bytes = options.gpu_pool_limit_bytes;
  cuda.pool_release_threshold_bytes = options.gpu_pool_release_threshold_bytes;
  cuda.wait = options.gpu_wait;
  cuda.inline_below_items = options.gpu_inline_below_items;
  cuda.inline_mode = options.gpu_inline;
  cuda.eager_batches = options.gpu_eager_batches;
  cuda.reason = reason;
  SAMPLER_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> backend,
                           CudaBackend::Create(std::move(cuda)));
  return WithSmallOnCpu(options, std::move(backend));
}
#endif

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const BackendOptions& options) {
  const std::string& name = options.name;
  if (name != "auto" && name != "cpu" && name != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend = ", name, ": must be auto, cpu or cuda"));
  }
  if (name == "cpu") return Cpu(options, "asked for with --backend=cpu");
#if SAMPLER_WITH_CUDA_BACKEND
  if (name == "cuda") return Cuda(options, "asked for with --backend=cuda");
  if (CudaBackend::VisibleDevices() == 0) {
    return Cpu(options, "no CUDA device is visible");
  }
  return Cuda(options, "a CUDA device is visible");
#else
  constexpr char kNoCuda[] = "this build has no CUDA backend (no nvcc)";
  if (name == "cuda") {
    return absl::FailedPreconditionError(
        absl::StrCat("--backend = cuda: ", kNoCuda));
  }
  return Cpu(options, kNoCuda);
#endif
}

}  // namespace sampler::server
