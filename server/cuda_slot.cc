#include "server/cuda_slot.h"

#include <algorithm>

namespace sampler::server {
namespace {

// Grows by at least half again, so a slowly growing load reallocates rarely.
absl::Status Grow(kernels::cuda::PinnedBuffer& buffer, size_t bytes) {
  if (buffer.size() >= bytes) return absl::OkStatus();
  const size_t size = std::max(bytes, buffer.size() + buffer.size() / 2);
  absl::StatusOr<kernels::cuda::PinnedBuffer> grown =
      kernels::cuda::PinnedBuffer::Create(size);
  if (!grown.ok()) return grown.status();
  buffer = *std::move(grown);
  return absl::OkStatus();
}

}  // namespace

absl::Status CudaSlot::Reserve(size_t in_bytes, size_t out_bytes) {
  if (absl::Status s = Grow(in, in_bytes); !s.ok()) return s;
  return Grow(out, out_bytes);
}

absl::StatusOr<double> CudaSlot::Finish() {
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  float ms = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms / 1e3;
}

}  // namespace sampler::server
