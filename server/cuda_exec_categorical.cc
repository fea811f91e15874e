// SampleCategorical batches on a GPU, one segment per job, rows placed so
// that each request's lanes are the contract's lanes. Two kernels give the
// same bits (SampleCategoricalCpu's): the butterfly kernel (32 rows per
// warp) for K below kWarpPerRowFromK, and one warp per row from there on,
// which the H100 run of 2026-11-23 (bench/results/kernels-h100-2026-11-23.md)
// measured 1.3x (K = 64) to 6x (K >= 1000) faster under contract CAT2.
#include <cstring>
#include <variant>
#include <vector>

#include "sampler/kernels/cuda/categorical.h"
#include "server/cuda_exec.h"

namespace sampler::server {
namespace {

namespace kc = kernels::cuda;

constexpr int64_t kWarpPerRowFromK = 64;

// The jobs of one precision and one kernel class (K below kWarpPerRowFromK,
// or from it on) in one launch.
template <typename T>
absl::StatusOr<double> RunCategorical(Batch<CategoricalJob>& batch,
                                      CudaSlot& slot, bool wide_rows) {
  kc::CategoricalBatchBuilder<T> builder(
      wide_rows ? kc::CategoricalKernel::kWarpPerRow
                : kc::CategoricalKernel::kButterfly);
  std::vector<CategoricalJob*> placed;
  for (auto& job : batch.jobs) {
    auto* work = std::get_if<CategoricalWork<T>>(&job->work);
    if (work == nullptr) continue;  // the other precision's launch
    if ((job->shape.categories >= kWarpPerRowFromK) != wide_rows) continue;
    absl::StatusOr<int> segment = builder.Add(
        work->values, job->shape, job->weight_kind, job->seed, job->first_row);
    if (!segment.ok()) return segment.status();  // validated: cannot happen
    placed.push_back(job.get());
  }
  if (placed.empty()) return 0.0;
  if (absl::Status s = builder.Finish(); !s.ok()) return s;
  return slot.RunBatch(
      builder,
      [](const auto& view, cudaStream_t stream) {
        return kc::LaunchCategorical(view, stream);
      },
      [&](const char* staged) {
        const int32_t* indices = builder.Outputs(staged);
        for (size_t i = 0; i < placed.size(); ++i) {
          absl::Span<int32_t> out =
              std::get<CategoricalWork<T>>(placed[i]->work).out;
          std::memcpy(out.data(),
                      indices + builder.out_offset(static_cast<int>(i)),
                      out.size() * sizeof(int32_t));
        }
      });
}

}  // namespace

absl::StatusOr<double> ExecuteOnGpu(Batch<CategoricalJob>& batch,
                                    CudaSlot& slot) {
  double seconds = 0;
  for (const bool wide_rows : {false, true}) {
    absl::StatusOr<double> f = RunCategorical<float>(batch, slot, wide_rows);
    if (!f.ok()) return f;
    absl::StatusOr<double> d = RunCategorical<double>(batch, slot, wide_rows);
    if (!d.ok()) return d;
    seconds += *f + *d;
  }
  return seconds;
}

}  // namespace sampler::server
