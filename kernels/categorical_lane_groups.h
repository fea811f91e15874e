// The lane-group categorical kernel (CategoricalKernel::kLaneGroups, in
// categorical_lane_groups.cu): each row of small K served by a group of 1,
// 2, 4 or 8 lanes, four warps a block. Private to the categorical CUDA
// library; categorical.cu plans and launches it.
#ifndef SAMPLER_KERNELS_CATEGORICAL_LANE_GROUPS_H_
#define SAMPLER_KERNELS_CATEGORICAL_LANE_GROUPS_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {

// The largest K the kernel takes (16 lanes a row from 257, session 10),
// and the service routes it up to there.
inline constexpr int64_t kLaneGroupsMaxCategories = 512;

// Group sizes, one launch each: 1, 2, 4, 8, 16 lanes a row.
inline constexpr int kLaneGroupSizes = 5;

// Lanes a row (1, 2, 4, 8 or 16 for K up to 32, 64, 128, 256, 512): every
// member owns at least one chunk (8 weights, 4 for groups of 8, 2 for 16)
// of every block of 32.
inline constexpr int LaneGroupLanes(int64_t categories) {
  return categories <= 32    ? 1
         : categories <= 64  ? 2
         : categories <= 128 ? 4
         : categories <= 256 ? 8
                             : 16;
}

// When a batch stages its draws in shared memory and writes them out
// together (CategoricalPlan::lane_groups_staged; the staged instances hold
// 64 registers, 8 blocks an SM, against 48 and 10): some segment with at
// least kLaneGroupsStageFromDraws draws a row and at most
// kLaneGroupsStageUpToK categories. Session 8 on an H100, % of copy
// unstaged (mid-session call) -> staged (final call), K = 32/64/100/128/256:
// D = 4: 53.1/64.0/53.7/60.4/55.1 -> 46.0/42.5/49.5/55.5/52.2 (staging
// loses everywhere); D = 32: 11.9/26.2/35.9/40.6/49.3 ->
// 21.6/25.7/30.4/34.7/44.9 (wins only at K = 32, where a lane's row has
// the most draws to scatter). D = 1 agreed between the calls (63.5 / 63.2
// at K = 32).
inline constexpr int32_t kLaneGroupsStageFromDraws = 32;
inline constexpr int64_t kLaneGroupsStageUpToK = 32;

// When every row holds its prefix table (CategoricalPlan::lane_groups_table):
// some segment with at least kLaneGroupsTableFromDraws draws a row and at
// most kLaneGroupsTableUpToK categories. Why: with chunk ends a draw walks
// up to 8 weights (4, 2 for groups of 8, 16), re-quantizing each; the table
// costs an 8-byte store a weight and about 8 KiB more a warp (4 blocks an
// SM). Predicted K = 32, 32 draws 20.6% -> ~50% of copy from session 10's
// ~300 instructions a draw; measured (H100, session 11 mid-session call,
// % of copy at 1/4/32 draws, tables forced on against off): K = 32
// 42.3/39.1/23.2 against 60.3/50.8/21.2, K = 64 35.4/35.3/26.8 against
// 58.8/54.7/27.9, K = 256 41.5/39.3/36.1 against 59.5/55.2/49.6, K = 512
// 35.4/33.7/32.9 against 48.2/44.9/45.6. Nsight Compute at K = 32, 32
// draws: 969M warp instructions against 1,338M (session 10), but 24.7%
// occupancy (72 registers, shared memory) and 58.8% of issue slots
// busy: latency-bound. Tables stay only where they won.
inline constexpr int32_t kLaneGroupsTableFromDraws = 32;
inline constexpr int64_t kLaneGroupsTableUpToK = 32;

// Dynamic shared memory of one warp for rows of K values of `value_bytes`
// bytes: one round's rows (32 / group lanes) at an odd row stride, then
// an odd number of uint64 running totals per row, one per chunk, then
// (`staged`: some row has several draws) an odd number of int32 draws per
// row. A block holds 4 of these.
size_t LaneGroupsWarpSmemBytes(int64_t categories, size_t value_bytes,
                               bool staged);

// Queues the kernel for plan.tasks warps (32 lane-aligned rows each,
// numbered by task_begin as for kLanes, the segments ordered by
// LaneGroupLanes) on `stream`, one launch per group size present
// (plan.lane_group_ends), with plan.smem_warp_elems[0] eight-byte units of
// shared memory a warp.
template <typename T>
absl::Status LaunchCategoricalLaneGroups(const CategoricalPlan& plan,
                                         const CategoricalSegment* segments,
                                         const T* values, int32_t* out,
                                         cudaStream_t stream);

extern template absl::Status LaunchCategoricalLaneGroups<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
extern template absl::Status LaunchCategoricalLaneGroups<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_LANE_GROUPS_H_
