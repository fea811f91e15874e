// --gpus parsing (pure: no GPU needed); whether an index is visible is
// checked where the GPUs are (device_init_test.cc).
#include "server/flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sampler::server {
namespace {

TEST(ParseGpuListTest, IndicesInTheOrderGiven) {
  absl::StatusOr<std::vector<int>> gpus = ParseGpuList({"1", "0", "3"});
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ(*gpus, (std::vector<int>{1, 0, 3}));
  gpus = ParseGpuList({});
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_TRUE(gpus->empty());
}

TEST(ParseGpuListTest, NamesTheFlagAndTheBadValue) {
  const struct {
    std::vector<std::string> gpus;
    std::string message;
  } cases[] = {
      {{"0", "x"}, "--gpus=\"x\": not a GPU index (0, 1, ...)"},
      {{"-1"}, "--gpus=\"-1\": not a GPU index (0, 1, ...)"},
      {{""}, "--gpus=\"\": not a GPU index (0, 1, ...)"},
      {{"1.5"}, "--gpus=\"1.5\": not a GPU index (0, 1, ...)"},
      {{"99999999999"}, "--gpus=\"99999999999\": not a GPU index (0, 1, ...)"},
      {{"1", "0", "1"}, "--gpus=1: listed twice"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::vector<int>> gpus = ParseGpuList(c.gpus);
    ASSERT_FALSE(gpus.ok()) << c.message;
    EXPECT_EQ(gpus.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(gpus.status().message(), c.message);
  }
}

}  // namespace
}  // namespace sampler::server
