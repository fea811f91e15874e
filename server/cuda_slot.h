// One stream of one GPU with what a batch needs there: the GPU's memory pool,
// timing events and pinned staging buffers that grow to the largest batch
// seen and are then reused; and the one staging pipeline every kind's batch
// goes through (Run).
#ifndef SAMPLER_SERVER_CUDA_SLOT_H_
#define SAMPLER_SERVER_CUDA_SLOT_H_

#include <cuda_runtime.h>

#include <cstddef>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/raii.h"

namespace sampler::server {

// What one batch moves: bytes copied host -> device before the launch,
// bytes copied device -> host after it, and device-only scratch.
struct StagingPlan {
  size_t in_bytes = 0;
  size_t out_bytes = 0;
  size_t scratch_bytes = 0;
};

// The device side of a StagingPlan: three regions of one pool allocation,
// each 256-byte aligned (what cudaMalloc guarantees, so kernels may use wide
// loads on each as on a buffer of its own).
struct DeviceRegions {
  void* in = nullptr;
  void* out = nullptr;
  void* scratch = nullptr;
};

struct CudaSlot {
  int device = 0;
  cudaMemPool_t pool = nullptr;
  kernels::cuda::Stream stream;
  kernels::cuda::Event start;       // recorded before the batch's kernels
  kernels::cuda::Event stop;        // and after them: device seconds
  kernels::cuda::PinnedBuffer in;   // host -> device staging
  kernels::cuda::PinnedBuffer out;  // device -> host staging

  // Grows the staging buffers to at least these sizes.
  absl::Status Reserve(size_t in_bytes, size_t out_bytes);

  // Device memory from the pool, freed in stream order when released.
  absl::StatusOr<kernels::cuda::DeviceBuffer> Allocate(size_t bytes) {
    return kernels::cuda::DeviceBuffer::Create(bytes, stream.get(), pool);
  }

  // Waits for everything queued on the stream; the kernel time between the
  // start and stop events, in seconds.
  absl::StatusOr<double> Finish();

  // The staging pipeline of one batch, the same for every kind: grow the
  // pinned staging to the plan, `pack` the upload into it, allocate the
  // device regions from the pool, copy in, `launch` between the timing
  // events, copy the output back, wait, and hand the downloaded bytes to
  // `unpack`. Returns the kernel seconds. Device memory goes back to the
  // pool, in stream order, when this returns (on every path).
  absl::StatusOr<double> Run(
      const StagingPlan& plan, absl::FunctionRef<void(char* staged_in)> pack,
      absl::FunctionRef<absl::Status(const DeviceRegions&, cudaStream_t)>
          launch,
      absl::FunctionRef<void(const char* staged_out)> unpack);
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CUDA_SLOT_H_
