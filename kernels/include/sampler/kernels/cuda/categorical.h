// CUDA backend of SampleCategorical: the butterfly-patterned partial sums of
// Steele & Tristan (categorical-butterfly-partial-sums.txt, Algorithms 7 to
// 10), returning exactly the indices of SampleCategoricalCpu
// (docs/randomness.md, section "Categorical").
//
// One launch covers a whole segmented batch of one precision: every segment
// is one request (or a chunk of one) with its own K, D, seed, first row,
// weights or logits and output offset. As for the other kinds, a host-side
// builder plans the batch and the launcher never allocates and never copies:
//
//   CategoricalBatchBuilder<float> b(CategoricalKernel::kButterfly);
//   b.Add(values, shape, kind, seed, first_row);         // per request
//   b.Finish();        // PrepareCategoricalSegments: order, tasks, workspace
//   stager.Run(b.Staging(), [&](char* in) { b.PackInto(in); },
//              [&](const DeviceRegions& d, cudaStream_t s) {
//                return LaunchCategorical(b.View(d), s);
//              },
//              [&](const char* out) { ... b.Outputs(out) + b.out_offset(k) });
//
// (staging.h). PrepareCategoricalSegments, which Finish calls, validates the
// segment shapes, numbers their tasks (task_begin) and places their scratch
// in one workspace (workspace_offset); the segments travel as they are to
// the device (the struct has one layout on host and device).
//
// The values themselves are not checked on the device: the caller validates
// them first (ValidateCategorical), as the server does for every request.
#ifndef SAMPLER_KERNELS_CUDA_CATEGORICAL_H_
#define SAMPLER_KERNELS_CUDA_CATEGORICAL_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/staging.h"

namespace sampler::kernels::cuda {

enum class CategoricalKernel {
  // The service's kernel below K = 64 until kLanes (now a comparison point
  // for benchmarks): 32 rows per warp, transposed
  // coalesced loads, the butterfly table built with __shfl_xor_sync, the
  // butterfly search, the remnant. Bits of SampleCategoricalCpu.
  kButterfly,
  // The in-house baseline (the paper's Algorithms 1 and 3): one thread per
  // row, a full sequential prefix-sum table in the workspace, a binary
  // search. Bits of SampleCategoricalReferenceCpu.
  kPrefixSum,
  // The service's kernel past kRowSplit's largest K (from K = 64 to
  // 2^15 - 1 until kLanes and kWarpTiles): one warp per row, coalesced
  // without any transposition, block tree sums by xor butterflies, the
  // contract's search done by the whole warp. Bits of SampleCategoricalCpu.
  kWarpPerRow,
  // For large K and few rows (categorical_row_split.cu), the service's from
  // K = 2^15 (server/cuda_exec_categorical.cc): one row across a cluster of
  // up to 8 thread blocks (4,096 values a block where K allows), each
  // holding its chunk of the row in shared memory, so that the row is read
  // once whatever the draws. Bits of SampleCategoricalCpu. K up to 385,280
  // (float) or 198,400 (double): RowSplitMaxCategories.
  kRowSplit,
  // The service's kernel up to K = 128 until kLaneGroups (a comparison
  // point now; categorical_lanes.cu, 128 its largest K):
  // 32 lane-aligned rows per warp as kButterfly, loaded into shared memory
  // by coalesced asynchronous copies, then one row per lane with no
  // shuffles (S_d in the contract's order, quantization by multiplication,
  // a walk over chunk totals). Bits of SampleCategoricalCpu.
  kLanes,
  // The service's kernel past kBlockRow's rows of 80,000 bytes (K = 20,001
  // float, 10,001 double; 16,385 before session 10, 257 before kBlockRow,
  // 129 before kLaneGroups) to 2^15
  // (categorical_warp_tiles.cu; its largest K is 2^17): one warp per row as
  // kWarpPerRow, S_d in the contract's column order, then the integer
  // weights by tiles of 128 (one 16-byte load a lane, quantization by
  // multiplication, one 64-bit butterfly a tile), a binary search over the
  // tile ends and a warp scan within the tile per draw. Bits of
  // SampleCategoricalCpu.
  kWarpTiles,
  // The service's kernel up to K = 512 (categorical_lane_groups.cu; its
  // largest):
  // kLanes's tasks of 32 lane-aligned rows, four warps a block, each row
  // served by a group of 1, 2, 4, 8 or 16 lanes (K up to 32, 64, 128, 256,
  // 512) so that a warp holds fewer rows in shared memory at once (S_d in the
  // contract's order by per-member column subtrees merged by shuffles,
  // chunk totals of 8, 4 or 2 weights in shared memory, a binary search and
  // a walk per draw). Bits of SampleCategoricalCpu.
  kLaneGroups,
  // The service's kernel from K = 513 to rows of 80,000 bytes and from
  // 2^15 + 1 to rows of 512 KiB (server/cuda_exec_categorical.cc), K up to
  // BlockRowMaxCategories (categorical_block_row.cu): one thread block per
  // row at a time (a cluster of 2 to 16 blocks past 64 KiB of values, each
  // holding a chunk), the row
  // held in shared memory (the next one arriving by a bulk asynchronous
  // copy while this one is sampled), so that every weight leaves DRAM
  // once; the scale from the blocks' own double sum where that provably
  // gives the contract's binade (else the contract's S_d), integer group
  // totals of 16 floats (8 doubles), a thread per draw. Bits of
  // SampleCategoricalCpu.
  kBlockRow,
};

// "butterfly", "prefix-sum", "warp-per-row", "row-split", "lanes",
// "warp-tiles", "lane-groups", "block-row".
const char* CategoricalKernelName(CategoricalKernel kernel);

// The largest K that kRowSplit takes in `precision`: the most whose chunk
// (K over its 8 blocks) fits a block's shared memory with its group sums,
// 385,280 (float) or 198,400 (double). PrepareCategoricalSegments refuses a
// larger K for kRowSplit; the service routes one to kWarpPerRow.
int64_t RowSplitMaxCategories(Precision precision);

// The largest K that kBlockRow takes in `precision`: 8 blocks a row, each
// chunk's two buffers and group totals in a block's shared memory, 211,840
// (float) or 105,856 (double). PrepareCategoricalSegments refuses a larger K
// for it.
int64_t BlockRowMaxCategories(Precision precision);

// One request (or a chunk of one) of a segmented batch: rows first_row ..
// first_row + rows - 1 of a request under `seed`, their values row after row
// from values[values_offset] on, draw d of row r written to
// out[out_offset + r * draws + d] (SampleCategoricalCpu's layout).
//
// Plain data, trivially copyable, with the same layout on host and device:
// the batcher fills an array of these (pinned memory, say) and copies it to
// the device byte for byte after PrepareCategoricalSegments.
struct CategoricalSegment {
  // Elements of the precision's type from the start of the batch's values.
  uint64_t values_offset = 0;
  // int32 outputs from the start of the batch's output.
  uint64_t out_offset = 0;
  uint64_t seed = 0;
  // Item index (Philox counter and contract lane) of the segment's row 0.
  // Any value: a chunk that starts mid-warp is placed at lane
  // first_row mod 32 so that the hardware lane is the contract's lane.
  uint64_t first_row = 0;
  int64_t rows = 0;
  int64_t categories = 0;  // K
  int32_t draws = 1;       // D
  WeightKind kind = WeightKind::kWeights;
  // Set by PrepareCategoricalSegments: tasks of all earlier segments (a task
  // is a warp of 32 lane-aligned rows, or one row for kWarpPerRow,
  // kRowSplit, kWarpTiles and kBlockRow), so that a warp finds its segment by
  // binary search.
  int64_t task_begin = 0;
  // Set by PrepareCategoricalSegments: where this segment's scratch starts
  // in the workspace, in 8-byte elements (uint64 integer weights; 0 if it
  // has none).
  uint64_t workspace_offset = 0;
};

// What PrepareCategoricalSegments decided; LaunchCategorical takes it
// as is. Plain data.
struct CategoricalPlan {
  CategoricalKernel kernel = CategoricalKernel::kButterfly;
  Precision precision = Precision::kFloat32;
  int32_t num_segments = 0;
  int64_t tasks = 0;  // warps to launch, all launches together
  // kButterfly runs two kernels, one per class of K (their register needs
  // differ): tasks [0, split_task) are the segments with K < 64, [split_task,
  // tasks) those with K >= 64. The other kernels run one launch
  // (split_task = tasks).
  int64_t split_task = 0;
  // Device memory the launch needs as scratch, 0 for most batches:
  // kButterfly keeps each row's block-end prefixes E_b (uint64) in shared
  // memory up to 32 blocks, in the workspace beyond, which is 1/32 of those
  // segments' values (in 8-byte units); kPrefixSum writes its uint64 prefix
  // table there (one per value); kWarpPerRow keeps up to 1024 block ends per
  // row in shared memory, the rest in the workspace.
  size_t workspace_bytes = 0;
  // Shared-memory layout per warp, in 8-byte units (offsets are -1 where a
  // part is absent), and each launch's size per warp.
  int32_t smem_remnant = -1;     // 32 x 33 staging area / remnant prefixes
  int32_t smem_rowmax = -1;      // 32 row maxima (logits)
  int32_t smem_scale = -1;       // 32 row scales (int32; kButterfly)
  int32_t smem_block_ends = -1;  // block ends, smem_block_cap per row
  int32_t smem_block_cap = 0;
  int32_t smem_warp_elems[2] = {0, 0};
  // kRowSplit: thread blocks per row (1, 2, 4 or 8, from the batch's
  // largest K) and the most elements of a row that one of them holds (that
  // K over the blocks, rounded up to a multiple of 32).
  int32_t row_split_ctas = 0;
  int64_t row_split_chunk = 0;
  // kBlockRow: blocks a row (a cluster of 1, 2, 4 or 8, from the batch's
  // largest K), warps a block (1 to 32, from its chunk) and the values each
  // of a block's two row buffers holds.
  int32_t block_row_ctas = 0;
  int32_t block_row_warps = 0;
  int64_t block_row_slots = 0;
  // kBlockRow, one block a row: a row of one draw takes it by warp 0
  // together (a warp-wide search, its Philox block formed with 31 other
  // rows') instead of by one thread (a chain of ~20 dependent shared loads
  // and a Philox while the warp's other lanes wait). Same bits. On in every
  // plan: session 10 (H100, % of copy at one draw) measured 68.9 against
  // 62.1 at K = 1,000, 69.8/62.8 at 1,024, 74.8/68.2 at 2,048, 80.1/74.3
  // at 4,096, 76.7/71.5 at 8,192, 54.8/50.2 at 16,384; at four draws the
  // warp's four searches in a row lost (52.4 against 61.3 at 1,024), so
  // rows of several draws keep a thread a draw. Off only for the
  // benchmark's "block-row-td".
  bool block_row_warp_draws = true;
  // kBlockRow: each block streams its chunk from global memory twice (the
  // second pass from L2) instead of holding it in shared memory
  // (categorical_block_stream.cu, block_row_ctas and block_row_slots as
  // for a held chunk, block_row_warps 16 or, for the benchmark's "-st-8w",
  // 8). Same
  // bits. Off in the planner's plans (session 11, H100: 42.5% of copy at
  // K = 16,384 against held rows' 55.0, 35.0 against 37.8 at 2^17); the
  // benchmark's "block-row-st" variants (ReplanBlockRowStreamed) measure
  // it.
  bool block_row_streamed = false;
  // kLaneGroups: the segments come ordered by lanes a row (1, 2, 4, 8),
  // and lane_group_ends[i] is one past the last task of those with 2^i
  // lanes a row (one launch each).
  int64_t lane_group_ends[5] = {0, 0, 0, 0, 0};
  // kLaneGroups: whether some segment has kLaneGroupsStageFromDraws (32) or
  // more draws a row and at most kLaneGroupsStageUpToK (32) categories
  // (categorical_lane_groups.h); then the launches stage draws in shared memory
  // and write them out together (instances with more registers), otherwise each
  // lane writes its own.
  bool lane_groups_staged = false;
  // kLaneGroups: whether some segment has kLaneGroupsTableFromDraws (32) or
  // more draws a row and at most kLaneGroupsTableUpToK (32) categories
  // (categorical_lane_groups.h); then every row keeps its running total at
  // every weight in place of the chunk ends (about 8 KiB more a warp) and
  // a draw is a binary search over it, with no walk re-quantizing weights.
  // Same bits; benchmarks may set it for any segments.
  bool lane_groups_table = false;
  // kWarpTiles only, for benchmarks (issue 11's lever 2): the second pass
  // and the draws load with the evict-first (streaming) policy, so that L2
  // drops a row's lines once they are re-read and keeps the rows still
  // waiting for their second pass (at K = 4,096 the first pass's lines no
  // longer survive to the second: 10.9% L2 hits, session 7's profile).
  bool warp_tiles_evict_first = false;
  // kButterfly only, for benchmarks: run instances compiled with a register
  // cap (more resident warps, some spilling) instead of the default ones.
  bool register_cap = false;
};

// Re-plans a kBlockRow `plan` (CategoricalBatchBuilder::Finish's, for a
// batch whose largest K is `categories`) for `ctas` blocks a row instead of
// the planner's choice: 1, 2, 4, 8 or 16 (a non-portable cluster size),
// each block holding a chunk of about K / ctas values, with the warps and
// buffers for it. The bits do not depend on it. For the benchmark's split
// variants (more, smaller blocks a row: more rows in flight an SM) and their
// tests; InvalidArgument for another `ctas` or buffers past a block's
// shared memory.
absl::Status ReplanBlockRowCtas(int64_t categories, int ctas,
                                CategoricalPlan* plan);

// Re-plans a kBlockRow `plan` (as ReplanBlockRowCtas) for the streamed
// chunks of CategoricalPlan::block_row_streamed: `split` (1, 2 or 4) times
// the fewest blocks a row whose chunks hold at most 64 KiB of values, at
// most 16. The bits do not depend on it. For the benchmark's "block-row-st"
// variants and the tests; InvalidArgument for another `split` or more than
// 16 blocks.
absl::Status ReplanBlockRowStreamed(int64_t categories, int split,
                                    CategoricalPlan* plan);

// Validates every segment's shape (rows >= 1, 1 <= categories <= INT32_MAX,
// 1 <= draws <= kMaxCategoricalDraws, kind, no item index past 2^64 - 1,
// its values inside [0, values_size) and its outputs inside [0, out_size)),
// for kButterfly reorders the array stably so that segments with K < 64 come
// first, for kLaneGroups by lanes a row (K up to 32, 64, 128, 256, 512; the
// order of segments changes no bit of the output), sets
// task_begin and workspace_offset in place and returns the plan.
// InvalidArgument naming the segment index and field otherwise, with the
// array unchanged. Outputs of different segments must not overlap; that is
// not checked. An empty array gives a plan of no tasks.
absl::StatusOr<CategoricalPlan> PrepareCategoricalSegments(
    absl::Span<CategoricalSegment> segments, Precision precision,
    uint64_t values_size, uint64_t out_size,
    CategoricalKernel kernel = CategoricalKernel::kButterfly);

// A prepared batch of one precision in device memory, as
// CategoricalBatchBuilder::View gives it.
template <typename T>
struct CategoricalBatch {
  // What PrepareCategoricalSegments decided for `segments`.
  CategoricalPlan plan;
  // A byte-for-byte copy of the array that PrepareCategoricalSegments
  // prepared with `plan`, unchanged until the kernel finishes.
  const CategoricalSegment* segments = nullptr;
  const T* values = nullptr;  // the batch's values
  int32_t* out = nullptr;     // its int32 outputs
  // At least plan.workspace_bytes of device memory aligned to 16 bytes (may
  // be null when that is 0).
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Queues the kernels for a prepared batch on `stream` (one launch per class
// of K present, see CategoricalPlan) and returns once they are queued; the
// output is ready when the stream reaches that point. Nothing is allocated
// and nothing is copied. InvalidArgument for a plan of the other precision,
// a null pointer with work to do or a short workspace; a CUDA error as its
// absl::Status (cuda/status.h). A plan of no tasks queues nothing.
template <typename T>
absl::Status LaunchCategorical(const CategoricalBatch<T>& batch,
                               cudaStream_t stream);

// Collects the requests of one batch of one precision (host memory), plans
// it (PrepareCategoricalSegments) and lays it out for the staging pipeline:
// the segments, then the values (8-byte aligned), go in; the int32 outputs
// come out; the plan's workspace is the scratch.
template <typename T>
class CategoricalBatchBuilder {
 public:
  explicit CategoricalBatchBuilder(
      CategoricalKernel kernel = CategoricalKernel::kButterfly)
      : kernel_(kernel) {}

  // A request, or a chunk of one: shape.rows rows of shape.categories
  // values, row after row (the span must stay alive and unchanged until
  // PackInto), shape.draws draws a row, under `seed` from item `first_row`.
  // Its values and outputs follow those added before. Returns its index in
  // the order of adding. InvalidArgument if values does not hold rows *
  // categories values; the shape itself is checked by Finish.
  absl::StatusOr<int> Add(absl::Span<const T> values,
                          const CategoricalShape& shape, WeightKind kind,
                          uint64_t seed, uint64_t first_row);

  // Plans the batch (PrepareCategoricalSegments, which names a bad segment
  // by its index in the order of adding). Add() is refused afterwards.
  absl::Status Finish();

  // After Finish(): the plan (benchmarks may set register_cap and
  // warp_tiles_evict_first) and the
  // segments in launch order.
  const CategoricalPlan& plan() const { return plan_; }
  CategoricalPlan& mutable_plan() { return plan_; }
  const std::vector<CategoricalSegment>& segments() const { return segments_; }
  uint64_t values_size() const { return values_size_; }
  uint64_t out_size() const { return out_size_; }
  // The first output of request `index` (in the order of adding).
  uint64_t out_offset(int index) const { return out_offsets_[index]; }

  StagingPlan Staging() const;
  void PackInto(void* staged_in) const;
  CategoricalBatch<T> View(const DeviceRegions& device) const;
  // The outputs in a downloaded (or device) out region.
  const int32_t* Outputs(const void* out_region) const {
    return static_cast<const int32_t*>(out_region);
  }

 private:
  size_t ValuesAt() const;

  CategoricalKernel kernel_;
  bool finished_ = false;
  CategoricalPlan plan_;
  std::vector<CategoricalSegment> segments_;
  std::vector<absl::Span<const T>> values_;  // in the order of adding
  std::vector<uint64_t> out_offsets_;        // in the order of adding
  uint64_t values_size_ = 0;
  uint64_t out_size_ = 0;
};

extern template absl::Status LaunchCategorical<float>(
    const CategoricalBatch<float>&, cudaStream_t);
extern template absl::Status LaunchCategorical<double>(
    const CategoricalBatch<double>&, cudaStream_t);
extern template class CategoricalBatchBuilder<float>;
extern template class CategoricalBatchBuilder<double>;

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_CATEGORICAL_H_
