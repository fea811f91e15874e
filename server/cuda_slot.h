// One stream of one GPU with what a batch needs there: the GPU's memory pool,
// timing events and pinned staging buffers that grow to the largest batch
// seen and are then reused.
#ifndef SAMPLER_SERVER_CUDA_SLOT_H_
#define SAMPLER_SERVER_CUDA_SLOT_H_

#include <cuda_runtime.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/raii.h"

namespace sampler::server {

struct CudaSlot {
  int device = 0;
  cudaMemPool_t pool = nullptr;
  kernels::cuda::Stream stream;
  kernels::cuda::Event start;  // recorded before the batch's kernels
  kernels::cuda::Event stop;   // and after them: device seconds
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
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CUDA_SLOT_H_
