// SampleGamma and SampleDirichlet batches on a GPU. The kernels' batch
// builders lay every job's parameters out in one arena, so a batch costs one
// host-to-device copy, one launch (two for Dirichlet: draw, then normalise)
// and one copy back per precision present.
#include <cstring>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/status.h"
#include "server/cuda_exec.h"

namespace sampler::server {
namespace {

namespace kc = kernels::cuda;

// A job placed in the builder: its segment and where its output goes.
template <typename T>
struct Placed {
  Job* job;
  int segment;
  absl::Span<T> out;
};

// Copies the arena in, runs `launch` between the slot's timing events,
// copies outputs and segment status words back, waits, and hands each placed
// job its slice and status. Returns the kernel seconds.
template <typename T, typename Builder, typename LaunchFn>
absl::StatusOr<double> RunArena(const Builder& builder,
                                const std::vector<Placed<T>>& placed,
                                CudaSlot& slot, LaunchFn launch) {
  if (placed.empty()) return 0.0;
  const size_t arena_bytes = builder.ArenaBytes();
  const size_t out_bytes = static_cast<size_t>(builder.total()) * sizeof(T);
  const size_t status_bytes = builder.segments().size() * sizeof(uint32_t);
  // Status words follow the outputs in the staging buffer, 8-byte aligned.
  const size_t status_at = (out_bytes + 7) / 8 * 8;
  if (absl::Status s = slot.Reserve(arena_bytes, status_at + status_bytes);
      !s.ok()) {
    return s;
  }
  builder.PackInto(slot.in.data());
  absl::StatusOr<kc::DeviceBuffer> arena = slot.Allocate(arena_bytes);
  if (!arena.ok()) return arena.status();
  absl::StatusOr<kc::DeviceBuffer> out = slot.Allocate(out_bytes);
  if (!out.ok()) return out.status();
  absl::StatusOr<kc::DeviceBuffer> status = slot.Allocate(status_bytes);
  if (!status.ok()) return status.status();

  const cudaStream_t stream = slot.stream.get();
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(arena->data(), slot.in.data(),
                                               arena_bytes,
                                               cudaMemcpyHostToDevice, stream));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.start.get(), stream));
  if (absl::Status s = launch(builder.View(arena->data(), out->as<T>(),
                                           status->as<uint32_t>()),
                              stream);
      !s.ok()) {
    return s;
  }
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.stop.get(), stream));
  char* staged = static_cast<char*>(slot.out.data());
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      staged, out->data(), out_bytes, cudaMemcpyDeviceToHost, stream));
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(staged + status_at, status->data(), status_bytes,
                      cudaMemcpyDeviceToHost, stream));
  absl::StatusOr<double> seconds = slot.Finish();
  if (!seconds.ok()) return seconds;

  const T* values = reinterpret_cast<const T*>(staged);
  const uint32_t* words = reinterpret_cast<const uint32_t*>(staged + status_at);
  for (const Placed<T>& p : placed) {
    const auto& segment = builder.segments()[p.segment];
    std::memcpy(p.out.data(), values + segment.out_begin,
                p.out.size() * sizeof(T));
    if (words[p.segment] != 0) {
      p.job->status = kc::SegmentStatus(words[p.segment], p.segment);
    }
  }
  return seconds;
}

template <typename T>
absl::StatusOr<double> RunGamma(Batch<GammaJob>& batch, CudaSlot& slot) {
  kc::GammaBatchBuilder<T> builder;
  std::vector<Placed<T>> placed;
  for (auto& job : batch.jobs) {
    auto* work = std::get_if<GammaWork<T>>(&job->work);
    if (work == nullptr) continue;  // the other precision's launch
    absl::StatusOr<int> segment =
        work->groups.empty()
            ? builder.AddElements(work->shape, work->scale, job->log_output,
                                  job->seed, job->first_sample)
            : builder.AddGroups(work->groups, job->log_output, job->seed,
                                job->first_sample);
    if (!segment.ok()) {  // validated before queueing: cannot happen
      job->status = segment.status();
      continue;
    }
    placed.push_back({job.get(), *segment, work->out});
  }
  return RunArena<T>(builder, placed, slot,
                     [](const kc::GammaBatch<T>& b, cudaStream_t s) {
                       return kc::LaunchGamma<T>(b, s);
                     });
}

template <typename T>
absl::StatusOr<double> RunDirichlet(Batch<DirichletJob>& batch,
                                    CudaSlot& slot) {
  kc::DirichletBatchBuilder<T> builder;
  std::vector<Placed<T>> placed;
  for (auto& job : batch.jobs) {
    auto* work = std::get_if<DirichletWork<T>>(&job->work);
    if (work == nullptr) continue;
    absl::StatusOr<int> segment =
        builder.AddRows(work->alpha, work->row_offsets, job->log_output,
                        job->seed, /*first_item=*/0);
    if (!segment.ok()) {
      job->status = segment.status();
      continue;
    }
    placed.push_back({job.get(), *segment, work->out});
  }
  return RunArena<T>(builder, placed, slot,
                     [](const kc::DirichletBatch<T>& b, cudaStream_t s) {
                       return kc::LaunchDirichlet<T>(b, s);
                     });
}

// Float jobs, then double jobs: the kernel seconds of both.
template <typename JobT, typename RunFloat, typename RunDouble>
absl::StatusOr<double> BothPrecisions(Batch<JobT>& batch, CudaSlot& slot,
                                      RunFloat run_float,
                                      RunDouble run_double) {
  absl::StatusOr<double> f = run_float(batch, slot);
  if (!f.ok()) return f;
  absl::StatusOr<double> d = run_double(batch, slot);
  if (!d.ok()) return d;
  return *f + *d;
}

}  // namespace

absl::StatusOr<double> ExecuteOnGpu(Batch<GammaJob>& batch, CudaSlot& slot) {
  return BothPrecisions(batch, slot, RunGamma<float>, RunGamma<double>);
}

absl::StatusOr<double> ExecuteOnGpu(Batch<DirichletJob>& batch,
                                    CudaSlot& slot) {
  return BothPrecisions(batch, slot, RunDirichlet<float>, RunDirichlet<double>);
}

}  // namespace sampler::server
