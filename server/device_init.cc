#include "server/device_init.h"

#include <set>

namespace sampler::server {

absl::StatusOr<std::vector<int>> SelectDevices(
    const std::vector<int>& requested, int visible) {
  if (visible <= 0) {
    return absl::FailedPreconditionError("no CUDA device is visible");
  }
  std::vector<int> selected;
  if (requested.empty()) {
    for (int i = 0; i < visible; ++i) selected.push_back(i);
    return selected;
  }
  std::set<int> seen;
  for (int index : requested) {
    if (index < 0 || index >= visible) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--gpus=", index, ": not a visible GPU (", visible,
          visible == 1 ? " CUDA device is visible: 0)"
                       : absl::StrCat(" CUDA devices are visible: 0 to ",
                                      visible - 1, ")")));
    }
    if (!seen.insert(index).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--gpus=", index, ": listed twice"));
    }
    selected.push_back(index);
  }
  return selected;
}

}  // namespace sampler::server
