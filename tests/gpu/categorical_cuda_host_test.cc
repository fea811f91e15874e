// Host-side code of the CUDA categorical path (batch planning, the batch
// builder and argument checks), which needs no device: these tests run,
// and can fail, on every machine, CI included. Moved out of
// categorical_gpu_test.cc, whose binary runs nothing without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {
namespace {

TEST(CategoricalCudaHostTest, RejectsBadSegmentsAndLeavesThemUnchanged) {
  std::vector<CategoricalSegment> segments(2);
  segments[0].rows = 10;
  segments[0].categories = 40;
  segments[1].rows = 10;
  segments[1].categories = 8;
  segments[1].values_offset = 400;
  segments[1].out_offset = 10;
  EXPECT_TRUE(PrepareCategoricalSegments(absl::MakeSpan(segments),
                                         Precision::kFloat32, 480, 20)
                  .ok());
  const auto rejected = [&](auto mutate, const char* field) {
    std::vector<CategoricalSegment> s = segments;
    mutate(s[1]);
    const std::vector<CategoricalSegment> before = s;
    absl::StatusOr<CategoricalPlan> plan = PrepareCategoricalSegments(
        absl::MakeSpan(s), Precision::kFloat32, 480, 20);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument)
        << field;
    EXPECT_NE(plan.status().message().find(field), std::string::npos)
        << plan.status();
    EXPECT_EQ(std::memcmp(s.data(), before.data(),
                          s.size() * sizeof(CategoricalSegment)),
              0)
        << field;
  };
  rejected([](CategoricalSegment& s) { s.rows = 0; }, "rows");
  rejected([](CategoricalSegment& s) { s.categories = 0; }, "categories");
  rejected([](CategoricalSegment& s) { s.categories = int64_t{1} << 31; },
           "categories");
  rejected([](CategoricalSegment& s) { s.draws = 0; }, "draws");
  rejected([](CategoricalSegment& s) { s.values_offset = 401; },
           "values_offset");
  rejected([](CategoricalSegment& s) { s.out_offset = 11; }, "out_offset");
  rejected([](CategoricalSegment& s) { s.first_row = ~uint64_t{0}; },
           "first_row");
  rejected([](CategoricalSegment& s) { s.kind = static_cast<WeightKind>(7); },
           "kind");
}

TEST(CategoricalCudaHostTest, OrdersSegmentsByClassAndCountsTasks) {
  std::vector<CategoricalSegment> segments(3);
  segments[0] = {0, 0, 1, 0, 100, 64, 1};       // K >= 64: 4 warps
  segments[1] = {6400, 100, 2, 31, 2, 10, 1};   // starts at lane 31: 2 warps
  segments[2] = {6420, 102, 3, 0, 1, 5000, 1};  // workspace: 156 blocks
  absl::StatusOr<CategoricalPlan> plan = PrepareCategoricalSegments(
      absl::MakeSpan(segments), Precision::kFloat32, 20000, 200);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(segments[0].seed, 2u);  // the K < 64 segment first
  EXPECT_EQ(segments[0].task_begin, 0);
  EXPECT_EQ(plan->split_task, 2);
  EXPECT_EQ(segments[1].task_begin, 2);
  EXPECT_EQ(segments[2].task_begin, 6);
  EXPECT_EQ(plan->tasks, 7);
  // Block ends are uint64 (exact integer weights) in both precisions.
  EXPECT_EQ(plan->workspace_bytes, 32u * 156u * sizeof(uint64_t));
}

// The row-split kernel takes one task per row, as few blocks a row (1, 2, 4,
// 8) as keep a chunk at 4,096 values, a chunk of ceil(K / blocks) rounded up
// to 32 (the batch's largest K decides both), and K up to what a block's
// shared memory holds: 385,280 float or 198,400 double values.
TEST(CategoricalCudaHostTest, RowSplitPlansRowsChunksAndItsLargestK) {
  std::vector<CategoricalSegment> segments(2);
  segments[0] = {0, 0, 1, 0, 3, 131072, 4};      // chunk 16384
  segments[1] = {393216, 12, 2, 5, 2, 1000, 1};  // chunk 128
  absl::StatusOr<CategoricalPlan> plan =
      PrepareCategoricalSegments(absl::MakeSpan(segments), Precision::kFloat32,
                                 395216, 14, CategoricalKernel::kRowSplit);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(segments[0].task_begin, 0);
  EXPECT_EQ(segments[1].task_begin, 3);
  EXPECT_EQ(plan->tasks, 5);
  EXPECT_EQ(plan->row_split_ctas, 8);
  EXPECT_EQ(plan->row_split_chunk, 16384);
  EXPECT_EQ(plan->workspace_bytes, 0u);
  EXPECT_STREQ(CategoricalKernelName(plan->kernel), "row-split");

  const auto fits = [](int64_t k, Precision precision) {
    std::vector<CategoricalSegment> one(1);
    one[0].rows = 1;
    one[0].categories = k;
    return PrepareCategoricalSegments(absl::MakeSpan(one), precision,
                                      static_cast<uint64_t>(k), 1,
                                      CategoricalKernel::kRowSplit)
        .status();
  };
  const auto blocks_and_chunk = [](int64_t k) {
    std::vector<CategoricalSegment> one(1);
    one[0].rows = 1;
    one[0].categories = k;
    const CategoricalPlan plan = *PrepareCategoricalSegments(
        absl::MakeSpan(one), Precision::kFloat32, static_cast<uint64_t>(k), 1,
        CategoricalKernel::kRowSplit);
    return std::make_pair(plan.row_split_ctas, plan.row_split_chunk);
  };
  EXPECT_EQ(blocks_and_chunk(33), std::make_pair(1, int64_t{64}));
  EXPECT_EQ(blocks_and_chunk(4096), std::make_pair(1, int64_t{4096}));
  EXPECT_EQ(blocks_and_chunk(4097), std::make_pair(2, int64_t{2080}));
  EXPECT_EQ(blocks_and_chunk(8193), std::make_pair(4, int64_t{2080}));
  EXPECT_EQ(blocks_and_chunk(16385), std::make_pair(8, int64_t{2080}));
  EXPECT_EQ(blocks_and_chunk(1 << 15), std::make_pair(8, int64_t{4096}));

  EXPECT_TRUE(fits(385280, Precision::kFloat32).ok());
  const absl::Status over = fits(385281, Precision::kFloat32);
  EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(over.message().find("segments[0].categories"), std::string::npos)
      << over;
  EXPECT_TRUE(fits(198400, Precision::kFloat64).ok());
  EXPECT_EQ(fits(198401, Precision::kFloat64).code(),
            absl::StatusCode::kInvalidArgument);
  // The largest K that the header announces (and the service routes by) is
  // the planner's.
  EXPECT_EQ(RowSplitMaxCategories(Precision::kFloat32), 385280);
  EXPECT_EQ(RowSplitMaxCategories(Precision::kFloat64), 198400);
}

TEST(CategoricalCudaHostTest, EmptyBatchLaunchesNothing) {
  std::vector<CategoricalSegment> none;
  absl::StatusOr<CategoricalPlan> plan = PrepareCategoricalSegments(
      absl::MakeSpan(none), Precision::kFloat64, 0, 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->tasks, 0);
  EXPECT_TRUE(LaunchCategorical(CategoricalBatch<double>{*plan}, nullptr).ok());
  EXPECT_EQ(LaunchCategorical(CategoricalBatch<float>{*plan}, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

// Addresses that stand for device memory: never dereferenced.
template <typename P>
P* Fake(uintptr_t at) {
  return reinterpret_cast<P*>(at);
}

// The builder places requests end to end in the order of adding, plans them
// (K < 64 first for the butterfly kernel, offsets kept) and lays them out
// for the staging pipeline: segments then values (8-byte aligned) in, int32
// outputs out, the workspace as scratch.
TEST(CategoricalCudaHostTest, BuilderPlacesPlansAndStagesRequests) {
  const std::vector<float> wide(2 * 100, 1.0f), narrow(3 * 5, 2.0f);
  CategoricalBatchBuilder<float> b;
  ASSERT_EQ(*b.Add(wide, {2, 100, 3}, WeightKind::kWeights, 7, 0), 0);
  ASSERT_EQ(*b.Add(narrow, {3, 5, 1}, WeightKind::kLogits, 8, 40), 1);
  EXPECT_EQ(
      b.Add(narrow, {2, 5, 1}, WeightKind::kWeights, 9, 0).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.values_size(), 215u);
  EXPECT_EQ(b.out_size(), 9u);
  EXPECT_EQ(b.out_offset(0), 0u);
  EXPECT_EQ(b.out_offset(1), 6u);
  ASSERT_TRUE(b.Finish().ok());
  EXPECT_EQ(
      b.Add(narrow, {3, 5, 1}, WeightKind::kWeights, 9, 0).status().code(),
      absl::StatusCode::kFailedPrecondition);
  ASSERT_EQ(b.segments().size(), 2u);
  EXPECT_EQ(b.segments()[0].seed, 8u);  // K < 64 first
  EXPECT_EQ(b.segments()[0].values_offset, 200u);
  EXPECT_EQ(b.segments()[0].out_offset, 6u);
  EXPECT_EQ(b.plan().precision, Precision::kFloat32);
  EXPECT_EQ(b.plan().num_segments, 2);

  const size_t values_at = (2 * sizeof(CategoricalSegment) + 7) / 8 * 8;
  const StagingPlan plan = b.Staging();
  EXPECT_EQ(plan.in_bytes, values_at + 215 * sizeof(float));
  EXPECT_EQ(plan.out_bytes, 9 * sizeof(int32_t));
  EXPECT_EQ(plan.scratch_bytes, b.plan().workspace_bytes);
  std::vector<char> staged(plan.in_bytes);
  b.PackInto(staged.data());
  EXPECT_EQ(std::memcmp(staged.data(), b.segments().data(),
                        2 * sizeof(CategoricalSegment)),
            0);
  const float* values = reinterpret_cast<const float*>(&staged[values_at]);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[199], 1.0f);
  EXPECT_EQ(values[200], 2.0f);
  EXPECT_EQ(values[214], 2.0f);

  const DeviceRegions regions{Fake<void>(0x1000), Fake<void>(0x2000),
                              Fake<void>(0x3000)};
  const CategoricalBatch<float> view = b.View(regions);
  EXPECT_EQ(view.segments, Fake<const CategoricalSegment>(0x1000));
  EXPECT_EQ(view.values, Fake<const float>(0x1000 + values_at));
  EXPECT_EQ(view.out, Fake<int32_t>(0x2000));
  EXPECT_EQ(view.workspace, Fake<void>(0x3000));
  EXPECT_EQ(view.workspace_bytes, b.plan().workspace_bytes);
  EXPECT_EQ(view.plan.tasks, b.plan().tasks);

  // A bad shape is named by Finish, by its index in the order of adding.
  CategoricalBatchBuilder<double> bad;
  const std::vector<double> none;
  ASSERT_TRUE(bad.Add(none, {0, 5, 1}, WeightKind::kWeights, 1, 0).ok());
  const absl::Status finished = bad.Finish();
  EXPECT_EQ(finished.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(finished.message().find("segments[0].rows"), std::string::npos)
      << finished;
}

// The lanes kernel takes lane-aligned warps of 32 rows as the butterfly
// kernel does, shared memory for the batch's largest K (32 rows at an odd
// stride, 16-byte aligned, then one uint64 per chunk of 8 and row), no
// workspace, and K up to 128.
TEST(CategoricalCudaHostTest, LanesPlansWarpsSharedMemoryAndItsLargestK) {
  std::vector<CategoricalSegment> segments(2);
  segments[0] = {0, 0, 1, 5, 40, 128, 2};   // lanes 5..44: 2 warps
  segments[1] = {5120, 80, 2, 0, 3, 7, 1};  // 1 warp
  absl::StatusOr<CategoricalPlan> plan =
      PrepareCategoricalSegments(absl::MakeSpan(segments), Precision::kFloat32,
                                 5141, 83, CategoricalKernel::kLanes);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(segments[0].task_begin, 0);
  EXPECT_EQ(segments[1].task_begin, 2);
  EXPECT_EQ(plan->tasks, 3);
  EXPECT_EQ(plan->workspace_bytes, 0u);
  // 32 x 129 floats = 16,512 bytes, then 32 x 16 uint64: 20,608 bytes.
  EXPECT_EQ(plan->smem_warp_elems[0], 20608 / 8);
  EXPECT_STREQ(CategoricalKernelName(plan->kernel), "lanes");

  std::vector<CategoricalSegment> wide(1);
  wide[0].rows = 1;
  wide[0].categories = 129;
  EXPECT_EQ(
      PrepareCategoricalSegments(absl::MakeSpan(wide), Precision::kFloat64, 129,
                                 1, CategoricalKernel::kLanes)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

// The lane-group kernel takes the lanes kernel's warps, orders the segments
// by lanes a row (1, 2, 4, 8, 16 for K up to 32, 64, 128, 256, 512: one
// launch each, ends in lane_group_ends), sizes a warp's shared memory for
// the largest need (one round's 32 / G rows at an odd stride, 16-byte
// aligned, then an odd number of uint64 chunk ends per row: chunks of 8
// weights, 4 for 8 lanes, 2 for 16; then, where some row has several
// draws, an odd number of int32 staged draws per row), uses no workspace
// and takes K up to 512.
TEST(CategoricalCudaHostTest, LaneGroupsOrdersByGroupSizeAndSizesWarps) {
  std::vector<CategoricalSegment> segments(3);
  segments[0] = {0, 0, 1, 5, 40, 100, 2};     // 4 lanes a row, 2 warps
  segments[1] = {4000, 80, 2, 0, 3, 7, 1};    // 1 lane, 1 warp
  segments[2] = {4021, 83, 3, 0, 33, 64, 1};  // 2 lanes, 2 warps
  absl::StatusOr<CategoricalPlan> plan =
      PrepareCategoricalSegments(absl::MakeSpan(segments), Precision::kFloat32,
                                 6133, 116, CategoricalKernel::kLaneGroups);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(segments[0].categories, 7);
  EXPECT_EQ(segments[1].categories, 64);
  EXPECT_EQ(segments[2].categories, 100);
  EXPECT_EQ(segments[0].task_begin, 0);
  EXPECT_EQ(segments[1].task_begin, 1);
  EXPECT_EQ(segments[2].task_begin, 3);
  EXPECT_EQ(plan->tasks, 5);
  EXPECT_EQ(plan->lane_group_ends[0], 1);
  EXPECT_EQ(plan->lane_group_ends[1], 3);
  EXPECT_EQ(plan->lane_group_ends[2], 5);
  EXPECT_EQ(plan->lane_group_ends[3], 5);
  // D = 2 in one segment: not staged (kLaneGroupsStageFromDraws).
  EXPECT_FALSE(plan->lane_groups_staged);
  EXPECT_EQ(plan->workspace_bytes, 0u);
  // K = 64 needs the most: 16 x 65 floats = 4,160 bytes and 16 x 9 uint64
  // chunk ends = 1,152 (K = 100: 8 x 101 x 4 + 8 x 13 x 8 = 4,064; K = 7:
  // 32 x 7 x 4 + 32 x 1 x 8 = 1,152).
  EXPECT_EQ(plan->smem_warp_elems[0], 5312 / 8);
  EXPECT_STREQ(CategoricalKernelName(plan->kernel), "lane-groups");

  // 32 draws a row at K <= 32 are staged; at K = 33 they are not.
  std::vector<CategoricalSegment> many(1);
  many[0] = {0, 0, 1, 0, 10, 32, 32};
  plan = PrepareCategoricalSegments(absl::MakeSpan(many), Precision::kFloat32,
                                    320, 320, CategoricalKernel::kLaneGroups);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->lane_groups_staged);
  many[0] = {0, 0, 1, 0, 10, 33, 32};
  plan = PrepareCategoricalSegments(absl::MakeSpan(many), Precision::kFloat32,
                                    330, 320, CategoricalKernel::kLaneGroups);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->lane_groups_staged);

  // Only rows of 4 lanes: the launches of 1 and 2 lanes are empty, and
  // that of 8 too.
  std::vector<CategoricalSegment> wide(1);
  wide[0].rows = 1;
  wide[0].categories = 128;
  plan = PrepareCategoricalSegments(absl::MakeSpan(wide), Precision::kFloat64,
                                    128, 1, CategoricalKernel::kLaneGroups);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->lane_group_ends[0], 0);
  EXPECT_EQ(plan->lane_group_ends[1], 0);
  EXPECT_EQ(plan->lane_group_ends[2], 1);
  EXPECT_EQ(plan->lane_group_ends[3], 1);
  // One draw a row: nothing staged. 8 x 129 doubles = 8,256 bytes, then
  // 8 x 17 uint64 = 1,088.
  EXPECT_FALSE(plan->lane_groups_staged);
  EXPECT_EQ(plan->smem_warp_elems[0], 9344 / 8);

  // K = 256: 8 lanes a row, 4 rows a round, chunks of 4 weights: 4 x 257
  // floats = 4,112 bytes (16 x 257), 4 x 65 uint64 = 2,080.
  wide[0].categories = 256;
  plan = PrepareCategoricalSegments(absl::MakeSpan(wide), Precision::kFloat32,
                                    256, 1, CategoricalKernel::kLaneGroups);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->lane_group_ends[2], 0);
  EXPECT_EQ(plan->lane_group_ends[3], 1);
  EXPECT_EQ(plan->smem_warp_elems[0], 6192 / 8);

  // K = 257 and 512: 16 lanes a row, 2 rows a round, chunks of 2 weights:
  // 2 x 257 floats = 2,056 bytes (2,064 rounded up to 16), 2 x 129 uint64 =
  // 2,064; 2 x 513 floats = 4,104 (4,112), 2 x 257 uint64 = 4,112.
  wide[0].categories = 257;
  plan = PrepareCategoricalSegments(absl::MakeSpan(wide), Precision::kFloat32,
                                    257, 1, CategoricalKernel::kLaneGroups);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->lane_group_ends[3], 0);
  EXPECT_EQ(plan->lane_group_ends[4], 1);
  EXPECT_EQ(plan->smem_warp_elems[0], 4128 / 8);
  wide[0].categories = 512;
  plan = PrepareCategoricalSegments(absl::MakeSpan(wide), Precision::kFloat32,
                                    512, 1, CategoricalKernel::kLaneGroups);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->smem_warp_elems[0], 8224 / 8);

  wide[0].categories = 513;
  EXPECT_EQ(
      PrepareCategoricalSegments(absl::MakeSpan(wide), Precision::kFloat32, 513,
                                 1, CategoricalKernel::kLaneGroups)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

// The warp-tiles kernel takes one task per row, one uint64 tile end per
// 128 values of the batch's largest K and row in shared memory, and K up to
// 2^17.
TEST(CategoricalCudaHostTest, WarpTilesPlansRowsTilesAndItsLargestK) {
  std::vector<CategoricalSegment> segments(2);
  segments[0] = {0, 0, 1, 5, 3, 1000, 2};  // 8 tiles
  segments[1] = {3000, 6, 2, 0, 2, 129, 1};
  absl::StatusOr<CategoricalPlan> plan =
      PrepareCategoricalSegments(absl::MakeSpan(segments), Precision::kFloat32,
                                 3258, 8, CategoricalKernel::kWarpTiles);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(segments[1].task_begin, 3);
  EXPECT_EQ(plan->tasks, 5);
  EXPECT_EQ(plan->smem_block_cap, 8);
  EXPECT_EQ(plan->workspace_bytes, 0u);
  EXPECT_STREQ(CategoricalKernelName(plan->kernel), "warp-tiles");

  std::vector<CategoricalSegment> wide(1);
  wide[0].rows = 1;
  wide[0].categories = (int64_t{1} << 17) + 1;
  EXPECT_EQ(
      PrepareCategoricalSegments(absl::MakeSpan(wide), Precision::kFloat32,
                                 static_cast<uint64_t>(wide[0].categories), 1,
                                 CategoricalKernel::kWarpTiles)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

// ReplanBlockRowStreamed (the benchmark's "block-row-st" variants): split
// times the fewest blocks a row whose chunks hold at most 64 KiB, at most
// 16, 16 warps a block, the group totals of the held chunk's layout.
TEST(CategoricalCudaHostTest, BlockRowStreamedReplans) {
  // (streamed, blocks a row, warps a block, values a chunk's groups span),
  // or (false, 0, 0, 0) where the replan is refused.
  const auto streamed = [](int64_t k, Precision precision, int split) {
    std::vector<CategoricalSegment> one(1);
    one[0].rows = 1;
    one[0].categories = k;
    absl::StatusOr<CategoricalPlan> p = PrepareCategoricalSegments(
        absl::MakeSpan(one), precision, static_cast<uint64_t>(k), 1,
        CategoricalKernel::kBlockRow);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok() || !ReplanBlockRowStreamed(k, split, &*p).ok()) {
      return std::make_tuple(false, 0, 0, int64_t{0});
    }
    return std::make_tuple(p->block_row_streamed, p->block_row_ctas,
                           p->block_row_warps, p->block_row_slots);
  };
  EXPECT_EQ(streamed(1, Precision::kFloat32, 1),
            std::make_tuple(true, 1, 16, int64_t{16}));
  EXPECT_EQ(streamed(16384, Precision::kFloat32, 1),
            std::make_tuple(true, 1, 16, int64_t{16400}));
  EXPECT_EQ(streamed(16385, Precision::kFloat32, 1),
            std::make_tuple(true, 2, 16, int64_t{8224}));
  EXPECT_EQ(streamed(16384, Precision::kFloat32, 4),
            std::make_tuple(true, 4, 16, int64_t{4112}));
  EXPECT_EQ(streamed(int64_t{1} << 17, Precision::kFloat32, 1),
            std::make_tuple(true, 8, 16, int64_t{16400}));
  EXPECT_EQ(streamed(int64_t{1} << 17, Precision::kFloat32, 2),
            std::make_tuple(true, 16, 16, int64_t{8208}));
  EXPECT_EQ(streamed(8192, Precision::kFloat64, 1),
            std::make_tuple(true, 1, 16, int64_t{8200}));
  EXPECT_EQ(streamed(8193, Precision::kFloat64, 2),
            std::make_tuple(true, 4, 16, int64_t{2072}));
  // Past 16 blocks a row, or a split other than 1, 2 or 4: refused.
  EXPECT_EQ(streamed(int64_t{1} << 17, Precision::kFloat32, 4),
            std::make_tuple(false, 0, 0, int64_t{0}));
  EXPECT_EQ(streamed(1000, Precision::kFloat32, 3),
            std::make_tuple(false, 0, 0, int64_t{0}));
  // Only a block-row plan.
  CategoricalPlan lanes;
  lanes.kernel = CategoricalKernel::kLaneGroups;
  EXPECT_EQ(ReplanBlockRowStreamed(1000, 1, &lanes).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CategoricalCudaHostTest, BlockRowPlansWarpsBuffersAndItsLargestK) {
  std::vector<CategoricalSegment> segments(2);
  segments[0] = {0, 0, 1, 5, 3, 4097, 2};  // 8 warps (4097 > 4 x 1024)
  segments[1] = {12291, 6, 2, 0, 2, 300, 1};
  absl::StatusOr<CategoricalPlan> plan =
      PrepareCategoricalSegments(absl::MakeSpan(segments), Precision::kFloat32,
                                 12891, 8, CategoricalKernel::kBlockRow);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(segments[1].task_begin, 3);
  EXPECT_EQ(plan->tasks, 5);
  EXPECT_EQ(plan->block_row_ctas, 1);
  EXPECT_EQ(plan->block_row_warps, 8);
  // 3 values of misalignment and 4,097 values, in groups of 16.
  EXPECT_EQ(plan->block_row_slots, 4112);
  EXPECT_EQ(plan->workspace_bytes, 0u);
  EXPECT_STREQ(CategoricalKernelName(plan->kernel), "block-row");

  // (blocks a row, warps a block, values a buffer) for one row of K.
  const auto layout = [](int64_t k, Precision precision) {
    std::vector<CategoricalSegment> one(1);
    one[0].rows = 1;
    one[0].categories = k;
    const absl::StatusOr<CategoricalPlan> p = PrepareCategoricalSegments(
        absl::MakeSpan(one), precision, static_cast<uint64_t>(k), 1,
        CategoricalKernel::kBlockRow);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::make_tuple(p->block_row_ctas, p->block_row_warps,
                                    p->block_row_slots)
                  : std::make_tuple(0, 0, int64_t{0});
  };
  EXPECT_EQ(layout(1, Precision::kFloat32), std::make_tuple(1, 1, int64_t{16}));
  EXPECT_EQ(layout(1024, Precision::kFloat32),
            std::make_tuple(1, 1, int64_t{1040}));
  EXPECT_EQ(layout(1025, Precision::kFloat64),
            std::make_tuple(1, 2, int64_t{1032}));
  EXPECT_EQ(layout(16384, Precision::kFloat32),
            std::make_tuple(1, 16, int64_t{16400}));
  // Past 16,384 a cluster: chunks of ceil(K / blocks), a multiple of 16,
  // of at most 32 KiB (8,192 floats) up to 16 blocks (2^17), of at most
  // 64 KiB in up to 8 blocks past that.
  EXPECT_EQ(layout(20000, Precision::kFloat32),
            std::make_tuple(4, 8, int64_t{5024}));
  EXPECT_EQ(layout(int64_t{1} << 17, Precision::kFloat32),
            std::make_tuple(16, 8, int64_t{8208}));
  EXPECT_EQ(layout((int64_t{1} << 17) + 16, Precision::kFloat32),
            std::make_tuple(8, 32, int64_t{16416}));

  // Double: one block up to 64 KiB (8,192 values), chunks of at most 32 KiB
  // (4,096 values) up to 16 blocks (65,536), of at most 64 KiB in up to 8
  // blocks past that.
  EXPECT_EQ(layout(8192, Precision::kFloat64),
            std::make_tuple(1, 8, int64_t{8200}));
  EXPECT_EQ(layout(16384, Precision::kFloat64),
            std::make_tuple(4, 4, int64_t{4104}));
  EXPECT_EQ(layout(36172, Precision::kFloat64),
            std::make_tuple(16, 4, int64_t{2280}));
  EXPECT_EQ(layout(65537, Precision::kFloat64),
            std::make_tuple(8, 16, int64_t{8216}));
  // Every K up to the largest: a block's two buffers and group totals (16
  // floats or 8 doubles a group) within 220 KiB, the most a block may take
  // (227 KiB on an H100, less the static shared memory).
  for (const Precision p : {Precision::kFloat32, Precision::kFloat64}) {
    const int64_t bytes = p == Precision::kFloat64 ? 8 : 4;
    for (int64_t k = 1; k <= BlockRowMaxCategories(p); k += 997) {
      const int64_t slots = std::get<2>(layout(k, p));
      EXPECT_LE(2 * slots * bytes + slots / (64 / bytes) * 8, 220 * 1024)
          << "K " << k;
    }
  }

  // The largest K: 8 chunks, each one's buffers and group totals within
  // 220 KiB.
  EXPECT_EQ(BlockRowMaxCategories(Precision::kFloat32), 211840);
  EXPECT_EQ(BlockRowMaxCategories(Precision::kFloat64), 105856);
  for (const Precision p : {Precision::kFloat32, Precision::kFloat64}) {
    std::vector<CategoricalSegment> wide(1);
    wide[0].rows = 1;
    wide[0].categories = BlockRowMaxCategories(p) + 1;
    EXPECT_EQ(
        PrepareCategoricalSegments(absl::MakeSpan(wide), p,
                                   static_cast<uint64_t>(wide[0].categories), 1,
                                   CategoricalKernel::kBlockRow)
            .status()
            .code(),
        absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace sampler::kernels::cuda
