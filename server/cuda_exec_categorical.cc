// SampleCategorical batches on a GPU, one segment per job, rows placed so
// that each request's lanes are the contract's lanes. Seven kernels give the
// same bits (SampleCategoricalCpu's); CategoricalKernelFor picks one per job
// by its K (and, below 101, its draws), and each kernel present runs one
// launch per precision.
#include <cstring>
#include <type_traits>
#include <variant>
#include <vector>

#include "sampler/kernels/cuda/categorical.h"
#include "server/cuda_exec.h"

namespace sampler::server {
namespace {

namespace kc = kernels::cuda;

// The lane-group kernel (each row on 1, 2, 4, 8 or 16 lanes, four warps a
// block) up to its largest K, 512, the warp-tiles kernel (one warp per
// row, integer weights by tiles of 128) above, up to the row-split
// kernel's K. Measured on an H100 in session 8 (categorical_bench --issue,
// f32 weights, fraction of copy at 1/4/32 draws), lane groups against the
// lanes kernel that served K <= 128 before: K = 32 63.5/53.1/11.9 against
// 58.0/50.4/11.7, K = 64 66.8/64.0/26.2 against 65.6/54.3/18.1, K = 100
// 59.2/53.7/35.9 against 60.7/51.4/21.8 (one draw: 1.5 points behind), K =
// 128 65.5/60.4/40.6 against 49.1/42.3/18.7; at K = 256 against warp tiles
// 59.5/55.1/49.3 against 30.4/17.8/3.5. (Session 7: lanes 60.9/67.4/62.6% at
// K = 32/64/100 against the butterfly's 16% and one warp per row's 9-11%;
// warp tiles 38.9/36.7/36.5% at K = 4,096/8,192/16,384 against one warp per
// row's 31.7/30.5/28.7%.) Session 10 (H100 mid-session call) added groups
// of 16 lanes for K = 257 to 512 against block-row, which served them:
// K = 257 41.7/37.9/41.1 against 26.2/25.4/27.0 (30.9 at one draw with
// block-row's warp-wide draw), K = 512 48.6/45.2/46.1 against
// 44.4/42.7/43.5 (50.6 at one draw with the warp-wide draw: lane groups
// keep 512, 2 points behind at one draw, 2.5 and 2.6 ahead at 4 and 32).
constexpr int64_t kLaneGroupsUpToK = 512;

// Within that, float rows of K = 33 to kLanesUpToKFewDraws with at most
// kLanesFewDraws draws a row, and to kLanesUpToKOneDraw with one, go to the
// lanes kernel (one row a lane, 32 rows a warp at once). Session 11 on an
// H100 (mid-session call, categorical_bench, % of copy at 1/4/32 draws),
// lanes against lane groups: K = 32 58.0/50.5/11.8 against 60.5/51.0/23.3;
// K = 33 57.2/49.1/12.2 against 39.0/36.9/21.5; K = 64 65.2/54.1/18.2
// against 59.2/55.3/26.9 (two lanes a row without their register spills
// since session 11; 44.3/42.6/23.6 in session 10); K = 100 60.6/50.7/21.9
// against 58.3/53.2/31.0; K = 128 48.6/42.0/18.6 against 64.1/58.9/33.1.
// At four draws the lines cross near K = 61 (linear between 33 and 64),
// hence 60. Doubles are not measured: lane groups.
constexpr int64_t kLanesFromK = 33;
constexpr int64_t kLanesUpToKFewDraws = 60;
constexpr int32_t kLanesFewDraws = 4;
constexpr int64_t kLanesUpToKOneDraw = 100;

// The block-row kernel (a thread block a row, the row held in shared
// memory, read from DRAM once) from kLaneGroupsUpToK + 1: one block a row
// up to rows of 64 KiB (K = 16,384 float, 8,192 double).
// Measured on an H100 in session 9 (categorical_bench --issue, f32
// weights, fraction of the copy bandwidth at 1/4/32 draws) against warp
// tiles, which served this range: K = 257 25.9/25.1/26.8 against
// 26.4/15.8/3.3, K = 1,000 64.4/62.0/60.3 against 39.6/32.9/9.8, K = 1,024
// 60.2/58.3/56.6 against 45.7/36.8/10.1, K = 2,048 64.3/62.4/60.6 against
// 46.5/42.2/16.5, K = 4,096 70.3/68.3/65.8 against 38.9/36.4/22.1, K =
// 8,192 67.6/65.4/62.5 against 36.8/35.4/25.9, K = 16,384 47.6/46.1/43.1
// against 36.5/35.5/28.8. At 2^15 (two blocks a row, a cluster) it lost,
// 24.3/24.1/23.3 against 35.9/35.3/31.2, so warp tiles kept 16,385 to 2^15.
//
// Past 64 KiB, block-row clusters (BlockRowCtas: chunks of at most 32 KiB,
// 2 to 16 blocks a row). Session 10 on an H100 (the
// mid-session call, categorical_bench --issue, f32 weights, % of copy at
// 1/4/32 draws): K = 20,000 (rows of 80,000 bytes) 40.5/39.2/38.0 in 4
// blocks against warp tiles' 31.4/30.8/26.4 (session 9); at 2^15 warp
// tiles keep it, 34.9/34.3/30.5 (session 9) against 31.2/30.5/29.6 in 4
// blocks and 32.6/32.1/31.0 in 8; at 2^17 (rows of 512 KiB) 36.7/36.7/33.7
// in 16 blocks against row-split's 26.5/25.7/24.6 (session 9; 64 rows:
// 23.0/21.7/20.8 against 12.8/16.1/15.6). Between the measured sizes the
// bounds stay at the last one measured: block-row up to 80,000 bytes,
// warp tiles to 2^15, block-row again past 2^15 up to 512 KiB.
constexpr int64_t kBlockRowClustersUpToBytes = 80000;
constexpr int64_t kBlockRowLongRowsUpToBytes = int64_t{512} << 10;

// The row-split kernel (one row across up to 8 blocks) from this K (past
// block-row's long rows since session 10) up to its largest
// (kc::RowSplitMaxCategories). Measured on an H100 (session 7,
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
    if (CategoricalKernelFor(job->shape.categories, kPrecision,
                             job->shape.draws) != kernel) {
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
                                           kernels::Precision precision,
                                           int32_t draws) {
  if (precision == kernels::Precision::kFloat32 && categories >= kLanesFromK &&
      ((categories <= kLanesUpToKFewDraws && draws <= kLanesFewDraws) ||
       (categories <= kLanesUpToKOneDraw && draws == 1))) {
    return kc::CategoricalKernel::kLanes;
  }
  if (categories <= kLaneGroupsUpToK) {
    return kc::CategoricalKernel::kLaneGroups;
  }
  const int64_t value_bytes = precision == kernels::Precision::kFloat64 ? 8 : 4;
  if (categories <= kBlockRowClustersUpToBytes / value_bytes) {
    return kc::CategoricalKernel::kBlockRow;  // one block up to 64 KiB
  }
  if (categories >= kRowSplitFromK &&
      categories <= kBlockRowLongRowsUpToBytes / value_bytes) {
    return kc::CategoricalKernel::kBlockRow;
  }
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
       {kc::CategoricalKernel::kLanes, kc::CategoricalKernel::kLaneGroups,
        kc::CategoricalKernel::kBlockRow, kc::CategoricalKernel::kWarpTiles,
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
