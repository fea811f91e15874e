// How the CUDA backend chooses and starts its GPUs, free of CUDA so that it
// can be tested without one (tests/server/device_init_test.cc): the indices
// --gpus asked for checked against the visible count, and each GPU started
// on its own, so that one that cannot be initialised is logged and listed
// as unavailable (with the reason) while the others serve. Only when none
// starts does the backend fail.
#ifndef SAMPLER_SERVER_DEVICE_INIT_H_
#define SAMPLER_SERVER_DEVICE_INIT_H_

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/backend.h"

namespace sampler::server {

// The CUDA indices to use: `requested` (from --gpus; empty: every one of the
// `visible` devices), each checked to be visible and listed once.
absl::StatusOr<std::vector<int>> SelectDevices(
    const std::vector<int>& requested, int visible);

// The GPUs that serve (in the order asked for) and what GetServerInfo lists:
// every selected GPU, the unavailable ones with their reason.
template <typename Device>
struct StartedDevices {
  std::vector<std::unique_ptr<Device>> serving;
  std::vector<DeviceInfo> listed;
};

// Starts each of `indices` with `start`, which fills in what it learns of
// the device (`info.index` is set before) and returns it, or the error that
// makes it unusable. A failure is logged to stderr and recorded in that
// device's `unavailable_reason`; FAILED_PRECONDITION, naming every failure,
// when no device starts.
template <typename Device>
absl::StatusOr<StartedDevices<Device>> StartDevices(
    const std::vector<int>& indices,
    const std::function<
        absl::StatusOr<std::unique_ptr<Device>>(DeviceInfo& info)>& start) {
  StartedDevices<Device> started;
  std::string failures;
  for (int index : indices) {
    DeviceInfo info;
    info.index = index;
    absl::StatusOr<std::unique_ptr<Device>> device = start(info);
    if (device.ok()) {
      started.serving.push_back(*std::move(device));
    } else {
      info.unavailable_reason = device.status().ToString();
      std::fprintf(stderr, "sampler-server: GPU %d cannot be used: %s\n", index,
                   info.unavailable_reason.c_str());
      absl::StrAppend(&failures, failures.empty() ? "" : "; ", "GPU ", index,
                      ": ", info.unavailable_reason);
    }
    started.listed.push_back(std::move(info));
  }
  if (started.serving.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no GPU could be initialised (", failures, ")"));
  }
  return started;
}

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_DEVICE_INIT_H_
