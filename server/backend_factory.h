// Picks and creates the backend named by --backend.
#ifndef SAMPLER_SERVER_BACKEND_FACTORY_H_
#define SAMPLER_SERVER_BACKEND_FACTORY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend.h"
#include "server/gpu_inline.h"

namespace sampler::server {

struct BackendOptions {
  // "auto": CUDA when a usable GPU is present, else CPU; "cpu"; "cuda" (an
  // error if no GPU can be used). Info().reason says why.
  std::string name = "auto";
  // CPU backend threads (0: one per core).
  int cpu_threads = 0;
  // CUDA backend: GPUs to use (empty: all), streams per GPU, the cap on each
  // GPU's memory pool (0: none) and what the pool keeps between batches.
  std::vector<int> gpus;
  int streams_per_gpu = 4;
  int64_t gpu_pool_limit_bytes = 0;
  int64_t gpu_pool_release_threshold_bytes = int64_t{1} << 30;
  // How a CUDA worker waits for its stream (CudaBackendOptions::wait).
  std::string gpu_wait = "auto";
  // CUDA batches of fewer work items than this may run on the thread that
  // closed them (CudaBackendOptions::inline_below_items); 0: never.
  int64_t gpu_inline_below_items = 16384;
  // Which of them do (CudaBackendOptions::inline_mode, gpu_inline.h).
  GpuInline gpu_inline = GpuInline::kAuto;
  // CUDA batches of a kind run at once before the next is held back to
  // grow (CudaBackendOptions::eager_batches).
  int gpu_eager_batches = 1;
  // With the CUDA backend: batches of fewer work items than this (all kinds
  // but Enumerate) run on a CPU backend of cpu_threads beside it
  // (small_on_cpu.h); 0: none. No effect on the CPU backend.
  int64_t cpu_below_items = 0;
};

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const BackendOptions& options);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_BACKEND_FACTORY_H_
