#include "server/cuda_slot.h"

#include <algorithm>

#include "sampler/kernels/cuda/status.h"

namespace sampler::server {
namespace {

constexpr size_t kRegionAlign = 256;

size_t AlignUp(size_t bytes) {
  return (bytes + kRegionAlign - 1) / kRegionAlign * kRegionAlign;
}

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

absl::StatusOr<double> CudaSlot::Run(
    const StagingPlan& plan, absl::FunctionRef<void(char* staged_in)> pack,
    absl::FunctionRef<absl::Status(const DeviceRegions&, cudaStream_t)> launch,
    absl::FunctionRef<void(const char* staged_out)> unpack) {
  if (absl::Status s = Reserve(plan.in_bytes, plan.out_bytes); !s.ok()) {
    return s;
  }
  pack(static_cast<char*>(in.data()));
  const size_t out_at = AlignUp(plan.in_bytes);
  const size_t scratch_at = out_at + AlignUp(plan.out_bytes);
  absl::StatusOr<kernels::cuda::DeviceBuffer> device =
      Allocate(scratch_at + plan.scratch_bytes);
  if (!device.ok()) return device.status();
  char* base = static_cast<char*>(device->data());
  const DeviceRegions regions{base, base + out_at, base + scratch_at};

  const cudaStream_t s = stream.get();
  if (plan.in_bytes > 0) {
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        regions.in, in.data(), plan.in_bytes, cudaMemcpyHostToDevice, s));
  }
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), s));
  if (absl::Status launched = launch(regions, s); !launched.ok()) {
    return launched;
  }
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), s));
  if (plan.out_bytes > 0) {
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        out.data(), regions.out, plan.out_bytes, cudaMemcpyDeviceToHost, s));
  }
  absl::StatusOr<double> seconds = Finish();
  if (!seconds.ok()) return seconds;
  unpack(static_cast<const char*>(out.data()));
  return seconds;
}

}  // namespace sampler::server
