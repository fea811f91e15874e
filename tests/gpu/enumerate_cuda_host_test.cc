// Host-side code of the CUDA enumeration path (the batch builder and the
// launcher's argument checks), which needs no device: these tests run, and
// can fail, on every machine, CI included. Moved out of
// enumerate_gpu_test.cc, whose binary runs nothing without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/enumerate.h"
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

}  // namespace
}  // namespace sampler::kernels::cuda
