// Host-side code of the CUDA boards path (segment preparation, the batch
// builder and the launcher's argument checks), which needs no device: these
// tests run, and can fail, on every machine, CI included. PrepareOrders...
// moved here from boards_gpu_test.cc, whose binary runs nothing without a GPU;
// the refusals of BadLaunchesAreRefused (which stays there: it ends by running
// a good batch on the device) are repeated here with pointers that are never
// dereferenced, since every refusal must come before any device work.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/cuda/boards.h"

namespace sampler::kernels::cuda {
namespace {

TEST(BoardsCudaHostTest, PrepareOrdersByVariantAndNumbersPositions) {
  std::vector<BoardSegment> segments = {
      *MakeBoardSegment({64, 64, {9}}, 1, 0, 5, 0),
      *MakeBoardSegment({9, 9, {9}}, 2, 0, 7, 5 * 64),
      *MakeBoardSegment({64, 64, {9}}, 3, 0, 0, 5 * 64 + 7 * 2),
      *MakeBoardSegment({9, 9, {9}}, 4, 0, 11, 5 * 64 + 7 * 2)};
  ASSERT_TRUE(PrepareBoardSegments(absl::MakeSpan(segments), 1 << 20).ok());
  // Stable by variant: the 9x9 segments (threadwise) first, in their order.
  EXPECT_EQ(segments[0].seed, 2u);
  EXPECT_EQ(segments[1].seed, 4u);
  EXPECT_EQ(segments[2].seed, 1u);
  EXPECT_EQ(segments[3].seed, 3u);
  EXPECT_EQ(segments[0].item_begin, 0);
  EXPECT_EQ(segments[1].item_begin, 7);
  EXPECT_EQ(segments[2].item_begin, 18);
  EXPECT_EQ(segments[3].item_begin, 23);
  EXPECT_EQ(BoardVariants()[segments[0].variant].lanes, 1);
  EXPECT_GT(BoardVariants()[segments[2].variant].lanes, 1);
}

::testing::AssertionResult HasCode(const absl::Status& status,
                                   absl::StatusCode code,
                                   const std::string& part) {
  if (status.code() != code ||
      status.message().find(part) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "got " << status << ", want code " << static_cast<int>(code)
           << " with \"" << part << "\"";
  }
  return ::testing::AssertionSuccess();
}

// Addresses that stand for device buffers: the launcher must refuse every
// call below before it touches them or the device (a launch would fail
// with a CUDA error instead of the expected code, or fault).
BoardSegment* FakeDeviceSegments() {
  return reinterpret_cast<BoardSegment*>(uintptr_t{0x1000});
}
uint64_t* FakeDeviceOut() {
  return reinterpret_cast<uint64_t*>(uintptr_t{0x2000});
}

TEST(BoardsCudaHostTest, BadLaunchesAreRefusedBeforeTheDevice) {
  absl::StatusOr<BoardSegment> good =
      MakeBoardSegment({19, 19, {120, 120}}, 7, 0, 10, 0);
  ASSERT_TRUE(good.ok()) << good.status();
  const uint64_t words = BoardSegmentWords(*good);
  ASSERT_EQ(words, 10u * 2 * 6);
  BoardSegment* dseg = FakeDeviceSegments();
  uint64_t* dout = FakeDeviceOut();
  cudaStream_t stream = nullptr;

  EXPECT_TRUE(LaunchBoards({{}, nullptr, nullptr, 0}, stream).ok());
  std::vector<BoardSegment> none;
  EXPECT_TRUE(PrepareBoardSegments(absl::MakeSpan(none), 0).ok());

  std::vector<BoardSegment> batch = {*good};
  ASSERT_TRUE(PrepareBoardSegments(absl::MakeSpan(batch), words).ok());
  EXPECT_TRUE(HasCode(LaunchBoards({batch, nullptr, dout, words}, stream),
                      absl::StatusCode::kInvalidArgument, "device_segments"));
  EXPECT_TRUE(HasCode(LaunchBoards({batch, dseg, nullptr, words}, stream),
                      absl::StatusCode::kInvalidArgument, "device_out"));
  EXPECT_TRUE(HasCode(LaunchBoards({batch, dseg, dout, words - 1}, stream),
                      absl::StatusCode::kInvalidArgument,
                      "segments[0].out_offset"));

  // No positions: nothing to launch, so no output pointer is needed.
  std::vector<BoardSegment> empty = {*good};
  empty[0].count = 0;
  ASSERT_TRUE(PrepareBoardSegments(absl::MakeSpan(empty), 0).ok());
  EXPECT_TRUE(LaunchBoards({empty, dseg, nullptr, 0}, stream).ok());

  // Not prepared, or changed after preparing.
  std::vector<BoardSegment> raw = {*good};
  EXPECT_TRUE(HasCode(LaunchBoards({raw, dseg, dout, words}, stream),
                      absl::StatusCode::kFailedPrecondition, "not prepared"));
  std::vector<BoardSegment> shifted = batch;
  shifted[0].item_begin = 1;
  EXPECT_TRUE(HasCode(LaunchBoards({shifted, dseg, dout, words}, stream),
                      absl::StatusCode::kFailedPrecondition, "not prepared"));
  std::vector<BoardSegment> grown = batch;
  grown[0].rows = 33;
  grown[0].cols = 33;
  grown[0].count = 1;
  EXPECT_TRUE(HasCode(LaunchBoards({grown, dseg, dout, words}, stream),
                      absl::StatusCode::kFailedPrecondition, "not prepared"));

  // Bad specs, counts and positions, refused by both steps; Prepare leaves
  // the array as it was.
  const auto expect_invalid = [&](BoardSegment s, const std::string& part) {
    std::vector<BoardSegment> one = {*good, s};
    const std::vector<BoardSegment> before = one;
    EXPECT_TRUE(HasCode(PrepareBoardSegments(absl::MakeSpan(one), 1 << 20),
                        absl::StatusCode::kInvalidArgument, part));
    EXPECT_EQ(std::memcmp(one.data(), before.data(),
                          one.size() * sizeof(BoardSegment)),
              0);
    s.variant = 0;
    std::vector<BoardSegment> launched = {s};
    EXPECT_TRUE(HasCode(LaunchBoards({launched, dseg, dout, 1 << 20}, stream),
                        absl::StatusCode::kInvalidArgument, part));
  };
  BoardSegment bad = *good;
  bad.stones[1] = 300;
  expect_invalid(bad, "stones: total 420");
  bad = *good;
  bad.stones[0] = -1;
  expect_invalid(bad, "stones[0] = -1");
  bad = *good;
  bad.colours = 0;
  expect_invalid(bad, "colours = 0");
  bad = *good;
  bad.colours = kMaxBoardColours + 1;
  expect_invalid(bad, "colours = 17");
  bad = *good;
  bad.rows = 129;
  bad.cols = 128;
  expect_invalid(bad, "129x128");
  bad = *good;
  bad.rows = 0;
  expect_invalid(bad, "rows = 0");
  bad = *good;
  bad.count = -1;
  expect_invalid(bad, "count = -1");
  bad = *good;
  bad.first_position = std::numeric_limits<uint64_t>::max() - 8;
  expect_invalid(bad, "exceeds 2^64 - 1");
  bad = *good;
  bad.out_offset = (1 << 20) - 5;
  expect_invalid(bad, "out_offset");

  // Kernel choices that cannot hold the board.
  std::vector<BoardSegment> big = {
      *MakeBoardSegment({33, 33, {5}}, 1, 0, 1, 0)};
  EXPECT_TRUE(HasCode(PrepareBoardSegments(absl::MakeSpan(big), 1 << 20,
                                           BoardKernel::kThreadwise),
                      absl::StatusCode::kInvalidArgument, "threadwise"));
  EXPECT_TRUE(
      HasCode(PrepareBoardSegmentsWithVariant(absl::MakeSpan(big), 1 << 20, 0),
              absl::StatusCode::kInvalidArgument, "does not fit"));
  EXPECT_TRUE(
      HasCode(PrepareBoardSegmentsWithVariant(absl::MakeSpan(big), 1 << 20, -2),
              absl::StatusCode::kInvalidArgument, "variant = -2"));
  EXPECT_TRUE(HasCode(PrepareBoardSegmentsWithVariant(
                          absl::MakeSpan(big), 1 << 20,
                          static_cast<int32_t>(BoardVariants().size())),
                      absl::StatusCode::kInvalidArgument, "variant"));
  EXPECT_TRUE(HasCode(MakeBoardSegment({19, 19, {400}}, 1, 0, 1, 0).status(),
                      absl::StatusCode::kInvalidArgument, "stones"));
}

// The builder places requests end to end in the order of adding, plans them
// (reordered by variant, offsets kept) and lays them out for the staging
// pipeline: the segments go in, the words come out.
TEST(BoardsCudaHostTest, BuilderPlacesPlansAndStagesRequests) {
  BoardsBatchBuilder b;
  ASSERT_EQ(*b.Add({64, 64, {9}}, 1, 0, 5), 0);
  ASSERT_EQ(*b.Add({9, 9, {9, 3}}, 2, 100, 7), 1);
  EXPECT_TRUE(HasCode(b.Add({19, 19, {400}}, 3, 0, 1).status(),
                      absl::StatusCode::kInvalidArgument, "stones"));
  EXPECT_EQ(b.out_offset(0), 0u);
  EXPECT_EQ(b.out_offset(1), 5u * 64);
  EXPECT_EQ(b.out_words(), 5u * 64 + 7 * 2 * 2);
  ASSERT_TRUE(b.Finish().ok());
  EXPECT_TRUE(HasCode(b.Add({9, 9, {9}}, 4, 0, 1).status(),
                      absl::StatusCode::kFailedPrecondition, "after Finish"));
  // The threadwise 9x9 request first; each keeps its output words.
  ASSERT_EQ(b.segments().size(), 2u);
  EXPECT_EQ(b.segments()[0].seed, 2u);
  EXPECT_EQ(b.segments()[0].out_offset, 5u * 64);
  EXPECT_EQ(b.segments()[1].out_offset, 0u);

  const StagingPlan plan = b.Staging();
  EXPECT_EQ(plan.in_bytes, 2 * sizeof(BoardSegment));
  EXPECT_EQ(plan.out_bytes, b.out_words() * sizeof(uint64_t));
  EXPECT_EQ(plan.scratch_bytes, 0u);
  std::vector<BoardSegment> packed(2);
  b.PackInto(packed.data());
  EXPECT_EQ(std::memcmp(packed.data(), b.segments().data(), plan.in_bytes), 0);

  const DeviceRegions regions{FakeDeviceSegments(), FakeDeviceOut(), nullptr};
  const BoardsBatch view = b.View(regions);
  EXPECT_EQ(view.segments.data(), b.segments().data());
  EXPECT_EQ(view.segments.size(), 2u);
  EXPECT_EQ(view.device_segments, FakeDeviceSegments());
  EXPECT_EQ(view.out, FakeDeviceOut());
  EXPECT_EQ(view.out_words, b.out_words());
  EXPECT_EQ(b.Outputs(packed.data()),
            reinterpret_cast<const uint64_t*>(packed.data()));

  BoardsBatchBuilder big;
  ASSERT_TRUE(big.Add({33, 33, {5}}, 1, 0, 1).ok());
  EXPECT_TRUE(HasCode(big.Finish(BoardKernel::kThreadwise),
                      absl::StatusCode::kInvalidArgument, "threadwise"));
  EXPECT_TRUE(HasCode(big.FinishWithVariant(0),
                      absl::StatusCode::kInvalidArgument, "does not fit"));
  EXPECT_TRUE(big.Finish().ok());
}

}  // namespace
}  // namespace sampler::kernels::cuda
