// The CUDA backend's choice and start of its GPUs, with fake devices (no
// GPU): --gpus indices checked against the visible count, and a GPU that
// cannot be initialised listed as unavailable with its reason while the
// others serve; only when none starts is it an error.
#include "server/device_init.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace sampler::server {
namespace {

TEST(SelectDevicesTest, EmptyMeansEveryVisibleDevice) {
  absl::StatusOr<std::vector<int>> selected = SelectDevices({}, 3);
  ASSERT_TRUE(selected.ok()) << selected.status();
  EXPECT_EQ(*selected, (std::vector<int>{0, 1, 2}));
}

TEST(SelectDevicesTest, KeepsTheOrderAskedFor) {
  absl::StatusOr<std::vector<int>> selected = SelectDevices({2, 0}, 4);
  ASSERT_TRUE(selected.ok()) << selected.status();
  EXPECT_EQ(*selected, (std::vector<int>{2, 0}));
}

TEST(SelectDevicesTest, RefusesIndicesThatAreNotVisible) {
  absl::StatusOr<std::vector<int>> selected = SelectDevices({0, 2}, 2);
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(selected.status().message(),
            "--gpus=2: not a visible GPU (2 CUDA devices are visible: 0 to 1)");
  selected = SelectDevices({1}, 1);
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().message(),
            "--gpus=1: not a visible GPU (1 CUDA device is visible: 0)");
  selected = SelectDevices({-1}, 2);
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SelectDevicesTest, RefusesDuplicatesAndNoDevice) {
  absl::StatusOr<std::vector<int>> selected = SelectDevices({1, 0, 1}, 2);
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().message(), "--gpus=1: listed twice");
  selected = SelectDevices({}, 0);
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().code(), absl::StatusCode::kFailedPrecondition);
}

// A fake GPU: its index.
struct FakeGpu {
  int index = 0;
};
using Start =
    std::function<absl::StatusOr<std::unique_ptr<FakeGpu>>(DeviceInfo&)>;

// Starts every index except those in `broken`, which fail (after their
// name was read) as a GPU whose stream cannot be created would.
Start StartAllBut(std::set<int> broken) {
  return
      [broken](DeviceInfo& info) -> absl::StatusOr<std::unique_ptr<FakeGpu>> {
        info.name = "fake " + std::to_string(info.index);
        if (broken.count(info.index) > 0) {
          return absl::InternalError(
              "cudaStreamCreate: cudaErrorDevicesUnavailable");
        }
        return std::make_unique<FakeGpu>(FakeGpu{info.index});
      };
}

TEST(StartDevicesTest, EveryDeviceServesWhenAllStart) {
  absl::StatusOr<StartedDevices<FakeGpu>> started =
      StartDevices<FakeGpu>({0, 1}, StartAllBut({}));
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(started->serving.size(), 2u);
  EXPECT_EQ(started->serving[0]->index, 0);
  EXPECT_EQ(started->serving[1]->index, 1);
  ASSERT_EQ(started->listed.size(), 2u);
  for (const DeviceInfo& info : started->listed) {
    EXPECT_EQ(info.unavailable_reason, "");
  }
}

TEST(StartDevicesTest, AFailingDeviceIsListedWithItsReasonAndTheOthersServe) {
  absl::StatusOr<StartedDevices<FakeGpu>> started =
      StartDevices<FakeGpu>({2, 0, 1}, StartAllBut({0}));
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(started->serving.size(), 2u);
  EXPECT_EQ(started->serving[0]->index, 2);
  EXPECT_EQ(started->serving[1]->index, 1);
  // Listed in the order asked for, the failed one with what was read of it.
  ASSERT_EQ(started->listed.size(), 3u);
  EXPECT_EQ(started->listed[0].index, 2);
  EXPECT_EQ(started->listed[0].unavailable_reason, "");
  EXPECT_EQ(started->listed[1].index, 0);
  EXPECT_EQ(started->listed[1].name, "fake 0");
  EXPECT_EQ(started->listed[1].unavailable_reason,
            "INTERNAL: cudaStreamCreate: cudaErrorDevicesUnavailable");
  EXPECT_EQ(started->listed[2].index, 1);
  EXPECT_EQ(started->listed[2].unavailable_reason, "");
}

TEST(StartDevicesTest, FailsOnlyWhenNoDeviceStarts) {
  absl::StatusOr<StartedDevices<FakeGpu>> started =
      StartDevices<FakeGpu>({0, 1}, StartAllBut({0, 1}));
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(started.status().message(),
            "no GPU could be initialised (GPU 0: INTERNAL: cudaStreamCreate: "
            "cudaErrorDevicesUnavailable; GPU 1: INTERNAL: cudaStreamCreate: "
            "cudaErrorDevicesUnavailable)");
}

}  // namespace
}  // namespace sampler::server
