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
  std::vector<kc::CategoricalSegment> segments;
  std::vector<CategoricalJob*> placed;
  uint64_t values_size = 0, out_size = 0;
  for (auto& job : batch.jobs) {
    auto* work = std::get_if<CategoricalWork<T>>(&job->work);
    if (work == nullptr) continue;  // the other precision's launch
    if ((job->shape.categories >= kWarpPerRowFromK) != wide_rows) continue;
    kc::CategoricalSegment segment;
    segment.values_offset = values_size;
    segment.out_offset = out_size;
    segment.seed = job->seed;
    segment.first_row = job->first_row;
    segment.rows = job->shape.rows;
    segment.categories = job->shape.categories;
    segment.draws = job->shape.draws;
    segment.kind = job->weight_kind;
    values_size += work->values.size();
    out_size += work->out.size();
    segments.push_back(segment);
    placed.push_back(job.get());
  }
  if (segments.empty()) return 0.0;
  const kernels::Precision precision = std::is_same_v<T, float>
                                           ? kernels::Precision::kFloat32
                                           : kernels::Precision::kFloat64;
  absl::StatusOr<kc::CategoricalPlan> plan = kc::PrepareCategoricalSegments(
      absl::MakeSpan(segments), precision, values_size, out_size,
      wide_rows ? kc::CategoricalKernel::kWarpPerRow
                : kc::CategoricalKernel::kButterfly);
  if (!plan.ok()) return plan.status();

  // Upload: the segments, then the values (8-byte aligned).
  const size_t segment_bytes = segments.size() * sizeof(kc::CategoricalSegment);
  const size_t values_at = (segment_bytes + 7) / 8 * 8;
  const StagingPlan staging{values_at + values_size * sizeof(T),
                            out_size * sizeof(int32_t), plan->workspace_bytes};
  return slot.Run(
      staging,
      [&](char* staged) {
        std::memcpy(staged, segments.data(), segment_bytes);
        T* values = reinterpret_cast<T*>(staged + values_at);
        for (CategoricalJob* job : placed) {
          const auto& work = std::get<CategoricalWork<T>>(job->work);
          std::memcpy(values, work.values.data(),
                      work.values.size() * sizeof(T));
          values += work.values.size();
        }
      },
      [&](const DeviceRegions& device, cudaStream_t stream) {
        const char* in = static_cast<const char*>(device.in);
        return kc::LaunchCategorical(
            *plan, reinterpret_cast<const kc::CategoricalSegment*>(in),
            reinterpret_cast<const T*>(in + values_at),
            static_cast<int32_t*>(device.out), device.scratch,
            plan->workspace_bytes, stream);
      },
      [&](const char* staged) {
        const auto* indices = reinterpret_cast<const int32_t*>(staged);
        for (CategoricalJob* job : placed) {
          absl::Span<int32_t> out = std::get<CategoricalWork<T>>(job->work).out;
          std::memcpy(out.data(), indices, out.size() * sizeof(int32_t));
          indices += out.size();
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
