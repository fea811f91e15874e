// Host-side code of the CUDA enumeration path (the batch builder and the
// launcher's argument checks), which needs no device: these tests run, and
// can fail, on every machine, CI included. Moved out of
// enumerate_gpu_test.cc, whose binary runs nothing without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/enumerate_plan.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels::cuda {
namespace {

template <typename T>
class EnumerateCudaHostTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(EnumerateCudaHostTest, Types);

// Host-side contract: validation as on the CPU, scratch checks, Add after
// Finish refused, a launch without scratch refused before the device.
TYPED_TEST(EnumerateCudaHostTest, BuilderContract) {
  using T = TypeParam;
  EnumerateBatchBuilder<T> b;
  const std::vector<T> bad = {0.5, std::numeric_limits<T>::quiet_NaN()};
  const std::vector<PmfTerm<T>> terms = {{0, bad}};
  absl::StatusOr<int> added =
      b.Add(terms, ProbSpace::kLinear, ProbSpace::kLinear);
  EXPECT_EQ(added.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(added.status(), ValidateEnumerate<T>(terms, ProbSpace::kLinear));
  const std::vector<T> a = {0.5, 0.5}, c = {0.25, 0.75}, d = {1};
  const std::vector<PmfTerm<T>> three = {{0, a}, {0, c}, {0, d}};
  ASSERT_TRUE(b.Add(three, ProbSpace::kLinear, ProbSpace::kLinear).ok());
  ASSERT_TRUE(b.Finish().ok());
  EXPECT_FALSE(b.Add(three, ProbSpace::kLinear, ProbSpace::kLinear).ok());
  EXPECT_GT(b.ScratchBytes(), 0u);  // three terms: a partial sum
  const EnumerateBatch<T> view = b.View(nullptr, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(LaunchEnumerate(view, nullptr).code(),
            absl::StatusCode::kInvalidArgument);

  // The staging pipeline's layout: the arena in; the outputs, then one
  // status word per problem (8-byte aligned) out; the scratch as scratch.
  const StagingPlan plan = b.Staging();
  EXPECT_EQ(plan.in_bytes, b.ArenaBytes());
  const size_t status_at = (b.total_out() * sizeof(T) + 7) / 8 * 8;
  EXPECT_EQ(plan.out_bytes, status_at + b.problems().size() * sizeof(uint32_t));
  EXPECT_EQ(plan.scratch_bytes, b.ScratchBytes());
  char* const fake = reinterpret_cast<char*>(uintptr_t{0x10000});
  const EnumerateBatch<T> staged =
      b.View(DeviceRegions{fake, fake + 0x1000, fake + 0x2000});
  EXPECT_EQ(staged.arena, fake);
  EXPECT_EQ(reinterpret_cast<char*>(staged.out), fake + 0x1000);
  EXPECT_EQ(reinterpret_cast<char*>(staged.status), fake + 0x1000 + status_at);
  EXPECT_EQ(staged.scratch, fake + 0x2000);
  EXPECT_EQ(staged.scratch_bytes, b.ScratchBytes());
  EXPECT_EQ(staged.num_problems, 1);
  // Without scratch the launch is refused before the device.
  EXPECT_EQ(LaunchEnumerate(b.View(DeviceRegions{fake, fake + 0x1000, nullptr}),
                            nullptr)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// ------------------------------------------------------------ planning ----

using enumerate_internal::AutoLinearConfig;
using enumerate_internal::AutoLogConfig;
using enumerate_internal::kLogGroups;
using enumerate_internal::kNumDirectConfigs;
using enumerate_internal::LaunchKind;
using enumerate_internal::Log2;
using enumerate_internal::TileOutputs;

// The automatic choice depends on the shorter operand only, at the
// thresholds of bench/results/enumerate-kernel.md, and names a compiled
// configuration.
TEST(EnumeratePlanTest, AutoConfigsFollowTheShorterOperand) {
  const std::vector<std::pair<int64_t, int>> linear = {
      {1, 1},   {40, 1},  {41, 2},   {64, 2},   {65, 4},
      {512, 4}, {513, 5}, {2048, 5}, {2049, 9}, {1 << 20, 9}};
  for (const auto& [lx, config] : linear) {
    for (int64_t ly : {lx, 2 * lx + 7, int64_t{1} << 22}) {
      EXPECT_EQ(AutoLinearConfig(lx, ly), config) << lx << " x " << ly;
    }
    EXPECT_LT(config, kNumDirectConfigs);
  }
  EXPECT_EQ(AutoLogConfig(1), 0);
  EXPECT_EQ(AutoLogConfig(64), 0);
  EXPECT_EQ(AutoLogConfig(65), 1);
  EXPECT_EQ(AutoLogConfig(int64_t{1} << 30), 1);
}

// A task's tile: 32 / (S G) R outputs for a direct configuration (as
// EnumerateDirectConfigs() documents it), 32 / G for a log one.
TEST(EnumeratePlanTest, TileOutputs) {
  const absl::Span<const EnumerateDirectConfig> configs =
      EnumerateDirectConfigs();
  ASSERT_EQ(static_cast<int>(configs.size()), kNumDirectConfigs);
  for (int c = 0; c < kNumDirectConfigs; ++c) {
    const EnumerateDirectConfig& d = configs[c];
    EXPECT_EQ(TileOutputs(LaunchKind::kLinear, c),
              32 / (d.subwarps * d.group_lanes) * d.outputs)
        << d.name;
  }
  EXPECT_EQ(TileOutputs(LaunchKind::kLog, 0), 32 / kLogGroups[0]);
  EXPECT_EQ(TileOutputs(LaunchKind::kLog, 1), 32 / kLogGroups[1]);
}

TEST(EnumeratePlanTest, Log2RoundsUp) {
  EXPECT_EQ(Log2(1), 0);
  EXPECT_EQ(Log2(2), 1);
  EXPECT_EQ(Log2(3), 2);
  EXPECT_EQ(Log2(1024), 10);
  EXPECT_EQ(Log2(1025), 11);
  EXPECT_EQ(Log2(int64_t{1} << 40), 40);
}

// A uniform PMF of n values.
template <typename T>
std::vector<T> Uniform(int n) {
  return std::vector<T>(n, T(1) / T(n));
}

// The launch list: copies for one-term problems, one launch per fold step
// and configuration in step order, log space apart; a problem's launch is
// chosen from its own sizes, whatever else is in the batch.
TYPED_TEST(EnumerateCudaHostTest, LaunchList) {
  using T = TypeParam;
  const std::vector<T> one = Uniform<T>(3), small = Uniform<T>(10),
                       big = Uniform<T>(100);
  EnumerateBatchBuilder<T> alone;
  ASSERT_TRUE(
      alone.Add({{0, small}, {0, big}}, ProbSpace::kLinear, ProbSpace::kLinear)
          .ok());
  ASSERT_TRUE(alone.Finish().ok());
  const std::string name =
      EnumerateDirectConfigs()[AutoLinearConfig(10, 100)].name;
  const std::string f = std::is_same_v<T, float> ? " f32" : " f64";
  EXPECT_EQ(alone.DescribeLaunches(),
            "step 1 linear " + name + f + " problems 1 tasks 2; ");
  EXPECT_EQ(alone.ScratchBytes(), 0u);  // two terms: no partial sum
  EXPECT_EQ(alone.ArenaBytes() % 256, 0u);

  EnumerateBatchBuilder<T> mixed;
  ASSERT_TRUE(
      mixed.Add({{0, one}}, ProbSpace::kLinear, ProbSpace::kLinear).ok());
  ASSERT_TRUE(
      mixed.Add({{0, small}, {0, big}}, ProbSpace::kLinear, ProbSpace::kLinear)
          .ok());
  ASSERT_TRUE(mixed
                  .Add({{0, small}, {0, small}, {0, big}}, ProbSpace::kLinear,
                       ProbSpace::kLog)
                  .ok());
  ASSERT_TRUE(mixed.Finish().ok());
  // 109 outputs in tiles of 80 (g1r5x2q1), 19 in one of 32 (g1), 118 in 4.
  EXPECT_EQ(mixed.DescribeLaunches(),
            "copy x1; step 1 linear " + name + f +
                " problems 1 tasks 2; step 1 log g1 problems 1 tasks 1; "
                "step 2 log g1 problems 1 tasks 4; ");
  EXPECT_GT(mixed.ScratchBytes(), 0u);
  EXPECT_EQ(mixed.ScratchBytes() % 256, 0u);
  EXPECT_EQ(mixed.ArenaBytes() % 256, 0u);
  EXPECT_EQ(mixed.total_out(), 3 + 109 + 118);
  EXPECT_EQ(mixed.pair_count(), 10 * 100 + (10 * 10 + 19 * 100));
}

}  // namespace
}  // namespace sampler::kernels::cuda
