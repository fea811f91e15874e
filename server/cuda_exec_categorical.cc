// SampleCategorical batches on a GPU, one segment per job, rows placed so
// that each request's lanes are the contract's lanes. Five kernels give the
// same bits (SampleCategoricalCpu's); CategoricalKernelFor picks one per job
// by its K, and each kernel present runs one launch per precision.
#include <cstring>
#include <type_traits>
#include <variant>
#include <vector>

#include "sampler/kernels/cuda/categorical.h"
#include "server/cuda_exec.h"

namespace sampler::server {
namespace {

namespace kc = kernels::cuda;

// The lanes kernel (one row per lane, no shuffles) up to its largest K,
// 128, the warp-tiles kernel (one warp per row, integer weights by tiles of
// 128) above, up to the row-split kernel's K. By their instruction counts
// (categorical_lanes.cu, categorical_warp_tiles.cu) they should read at
// well over twice the rates of the kernels they replace there, the
// butterfly kernel (16% of the copy bandwidth at K = 32 on an H100) and one
// warp per row (9% to 32% from K = 64 to 4,096;
// bench/results/kernels-h100-2026-11-26.md). Measured on the H100 in
// session 7 (categorical_bench --issue, one draw): lanes 60.9/67.4/62.6% at
// K = 32/64/100, warp tiles 38.9/36.7/36.5% at K = 4,096/8,192/16,384 (one
// warp per row: 31.7/30.5/28.7%). (Before it, the butterfly kernel ran
// below K = 64 and one warp per row from 64: 1.3x to 6x faster from there,
// bench/results/kernels-h100-2026-11-23.md.)
constexpr int64_t kLanesUpToK = 128;

// The row-split kernel (one row across up to 8 blocks) from this K up to
// its largest (kc::RowSplitMaxCategories). Measured on an H100 (session 7,
// categorical_bench --issue, fraction of the copy bandwidth at 1/4/32
// draws, f32 weights): at K = 2^15 (4,096 rows) warp tiles read at
// 35.8/34.8/31.2% against row-split's 25.9/24.7/22.8%; at 2^17 (1,024 rows)
// row-split wins, 27.2/26.3/25.2% against 11.6/11.6/11.3% (warp tiles
// re-read a row that no longer stays in L2). Sizes in between are not
// measured, so row-split starts just past the last K where warp tiles won.
constexpr int64_t kRowSplitFromK = (int64_t{1} << 15) + 1;

// The jobs of one precision whose kernel is `kernel`, in one launch.
template <typename T>
absl::StatusOr<double> RunCategorical(Batch<CategoricalJob>& batch,
                                      CudaSlot& slot,
                                      kc::CategoricalKernel kernel) {
  constexpr kernels::Precision kPrecision = std::is_same_v<T, double>
                                                ? kernels::Precision::kFloat64
                                                : kernels::Precision::kFloat32;
  kc::CategoricalBatchBuilder<T> builder(kernel);
  std::vector<CategoricalJob*> placed;
  for (auto& job : batch.jobs) {
    auto* work = std::get_if<CategoricalWork<T>>(&job->work);
    if (work == nullptr) continue;  // the other precision's launch
    if (CategoricalKernelFor(job->shape.categories, kPrecision) != kernel) {
      continue;  // another kernel's launch
    }
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

kc::CategoricalKernel CategoricalKernelFor(int64_t categories,
                                           kernels::Precision precision) {
  if (categories <= kLanesUpToK) return kc::CategoricalKernel::kLanes;
  if (categories >= kRowSplitFromK &&
      categories <= kc::RowSplitMaxCategories(precision)) {
    return kc::CategoricalKernel::kRowSplit;
  }
  if (categories < kRowSplitFromK) return kc::CategoricalKernel::kWarpTiles;
  return kc::CategoricalKernel::kWarpPerRow;
}

absl::StatusOr<double> ExecuteOnGpu(Batch<CategoricalJob>& batch,
                                    CudaSlot& slot) {
  double seconds = 0;
  for (const kc::CategoricalKernel kernel :
       {kc::CategoricalKernel::kLanes, kc::CategoricalKernel::kWarpTiles,
        kc::CategoricalKernel::kWarpPerRow, kc::CategoricalKernel::kRowSplit}) {
    absl::StatusOr<double> f = RunCategorical<float>(batch, slot, kernel);
    if (!f.ok()) return f;
    absl::StatusOr<double> d = RunCategorical<double>(batch, slot, kernel);
    if (!d.ok()) return d;
    seconds += *f + *d;
  }
  return seconds;
}

}  // namespace sampler::server
