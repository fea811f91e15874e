// Host-side code of the CUDA categorical path (batch planning and argument
// checks), which needs no device: these tests run, and can fail, on every
// machine, CI included. Moved out of categorical_gpu_test.cc, whose binary
// runs nothing without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
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

TEST(CategoricalCudaHostTest, EmptyBatchLaunchesNothing) {
  std::vector<CategoricalSegment> none;
  absl::StatusOr<CategoricalPlan> plan = PrepareCategoricalSegments(
      absl::MakeSpan(none), Precision::kFloat64, 0, 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->tasks, 0);
  const double* values = nullptr;
  EXPECT_TRUE(
      LaunchCategorical(*plan, nullptr, values, nullptr, nullptr, 0, nullptr)
          .ok());
  const float* float_values = nullptr;
  EXPECT_EQ(LaunchCategorical(*plan, nullptr, float_values, nullptr, nullptr, 0,
                              nullptr)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sampler::kernels::cuda
