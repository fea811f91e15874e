// SampleGamma and SampleDirichlet batches on a GPU. The kernels' batch
// builders lay every job's parameters out in one arena, so a batch costs one
// host-to-device copy, one launch (two for Dirichlet: draw, then normalise)
// and one copy back per precision present.
#include <cstring>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sampler/kernels/cuda/dirichlet.h"
#include "sampler/kernels/cuda/gamma.h"
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

// Stages the batch, runs `launch`, and hands each placed job its slice of
// the outputs and its status word (the builder's OutLayout: the words
// follow the outputs in the same download). Returns the kernel seconds.
template <typename T, typename Builder, typename LaunchFn>
absl::StatusOr<double> RunArena(const Builder& builder,
                                const std::vector<Placed<T>>& placed,
                                CudaSlot& slot, LaunchFn launch) {
  if (placed.empty()) return 0.0;
  return slot.RunBatch(builder, launch, [&](const char* staged) {
    const T* values = builder.OutLayout().Values(staged);
    const uint32_t* words = builder.OutLayout().StatusWords(staged);
    for (const Placed<T>& p : placed) {
      const auto& segment = builder.segments()[p.segment];
      std::memcpy(p.out.data(), values + segment.out_begin,
                  p.out.size() * sizeof(T));
      if (words[p.segment] != 0) {
        p.job->status = kc::SegmentStatus(words[p.segment], p.segment);
      }
    }
  });
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
  const kc::GammaLaunchOptions options = builder.ServiceOptions();
  return RunArena<T>(builder, placed, slot,
                     [options](const kc::GammaBatch<T>& b, cudaStream_t s) {
                       return kc::LaunchGamma<T>(b, s, options);
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
