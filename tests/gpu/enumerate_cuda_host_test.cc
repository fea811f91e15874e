// Host-side code of the CUDA enumeration path (the batch builder and the
// launcher's argument checks), which needs no device: these tests run, and
// can fail, on every machine, CI included. Moved out of
// enumerate_gpu_test.cc, whose binary runs nothing without a GPU.
#include <gtest/gtest.h>

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
}

}  // namespace
}  // namespace sampler::kernels::cuda
