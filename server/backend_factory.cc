#include "server/backend_factory.h"

#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/cpu_backend.h"

namespace sampler::server {
namespace {

// Why there is no GPU to use. The CUDA backend is not part of this build yet.
constexpr char kNoCuda[] = "this build has no CUDA backend";

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const std::string& name,
                                                       int cpu_threads) {
  if (name != "auto" && name != "cpu" && name != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend = ", name, ": must be auto, cpu or cuda"));
  }
  if (name == "cuda") {
    return absl::FailedPreconditionError(
        absl::StrCat("--backend = cuda: ", kNoCuda));
  }
  const int threads = cpu_threads > 0
                          ? cpu_threads
                          : static_cast<int>(std::max(
                                1u, std::thread::hardware_concurrency()));
  const std::string reason =
      name == "cpu" ? "asked for with --backend=cpu" : kNoCuda;
  absl::StatusOr<std::unique_ptr<CpuBackend>> cpu =
      CpuBackend::Create(threads, reason);
  if (!cpu.ok()) return cpu.status();
  return std::unique_ptr<Backend>(*std::move(cpu));
}

}  // namespace sampler::server
