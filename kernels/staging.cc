#include "sampler/kernels/cuda/staging.h"

#include <algorithm>
#include <utility>

#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/status_macros.h"
#include "segment_arena.h"

namespace sampler::kernels::cuda {
namespace {

using segment_arena::AlignUp;

// Grows by at least half again, so a slowly growing load reallocates rarely.
absl::Status Grow(PinnedBuffer& buffer, size_t bytes) {
  if (buffer.size() >= bytes) return absl::OkStatus();
  const size_t size = std::max(bytes, buffer.size() + buffer.size() / 2);
  SAMPLER_ASSIGN_OR_RETURN(buffer, PinnedBuffer::Create(size));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Stager>> Stager::Create(cudaMemPool_t pool) {
  auto stager = std::make_unique<Stager>();
  stager->pool = pool;
  SAMPLER_ASSIGN_OR_RETURN(stager->stream, Stream::Create());
  SAMPLER_ASSIGN_OR_RETURN(stager->start, Event::Create(/*timing=*/true));
  SAMPLER_ASSIGN_OR_RETURN(stager->stop, Event::Create(/*timing=*/true));
  return stager;
}

absl::Status Stager::Reserve(size_t in_bytes, size_t out_bytes) {
  SAMPLER_RETURN_IF_ERROR(Grow(in, in_bytes));
  return Grow(out, out_bytes);
}

absl::StatusOr<double> Stager::Finish() {
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  float ms = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms / 1e3;
}

absl::StatusOr<StagedBatch> Stager::CopyIn(
    const StagingPlan& plan, absl::FunctionRef<void(char* staged_in)> pack) {
  SAMPLER_RETURN_IF_ERROR(Reserve(plan.in_bytes, plan.out_bytes));
  pack(static_cast<char*>(in.data()));
  const size_t out_at = AlignUp(plan.in_bytes);
  const size_t scratch_at = out_at + AlignUp(plan.out_bytes);
  StagedBatch staged;
  staged.plan = plan;
  SAMPLER_ASSIGN_OR_RETURN(staged.memory,
                           Allocate(scratch_at + plan.scratch_bytes));
  char* base = static_cast<char*>(staged.memory.data());
  staged.regions = DeviceRegions{base, base + out_at, base + scratch_at};
  if (plan.in_bytes > 0) {
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(staged.regions.in, in.data(), plan.in_bytes,
                        cudaMemcpyHostToDevice, stream.get()));
  }
  return staged;
}

absl::StatusOr<StagedBatch> Stager::Upload(
    const StagingPlan& plan, absl::FunctionRef<void(char* staged_in)> pack) {
  SAMPLER_ASSIGN_OR_RETURN(StagedBatch staged, CopyIn(plan, pack));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  return staged;
}

absl::Status Stager::CopyOut(const StagedBatch& staged) {
  if (staged.plan.out_bytes > 0) {
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out.data(), staged.regions.out, staged.plan.out_bytes,
                        cudaMemcpyDeviceToHost, stream.get()));
  }
  return absl::OkStatus();
}

absl::Status Stager::Download(
    const StagedBatch& staged,
    absl::FunctionRef<void(const char* staged_out)> unpack) {
  SAMPLER_RETURN_IF_ERROR(CopyOut(staged));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  unpack(static_cast<const char*>(out.data()));
  return absl::OkStatus();
}

absl::StatusOr<double> Stager::Run(
    const StagingPlan& plan, absl::FunctionRef<void(char* staged_in)> pack,
    absl::FunctionRef<absl::Status(const DeviceRegions&, cudaStream_t)> launch,
    absl::FunctionRef<void(const char* staged_out)> unpack) {
  SAMPLER_ASSIGN_OR_RETURN(const StagedBatch staged, CopyIn(plan, pack));
  const cudaStream_t s = stream.get();
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), s));
  SAMPLER_RETURN_IF_ERROR(launch(staged.regions, s));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), s));
  SAMPLER_RETURN_IF_ERROR(CopyOut(staged));
  SAMPLER_ASSIGN_OR_RETURN(const double seconds, Finish());
  unpack(static_cast<const char*>(out.data()));
  return seconds;
}

}  // namespace sampler::kernels::cuda
