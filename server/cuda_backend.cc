#include "server/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <utility>
#include <variant>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/status_macros.h"
#include "server/cuda_exec.h"
#include "server/device_init.h"
#include "server/thread_name.h"

namespace sampler::server {

// A GPU that serves: its pool and its slots (one per stream, each served by
// one worker thread, which takes from this GPU's queue in dispatch_).
struct CudaBackend::Device {
  DeviceInfo info;
  kernels::cuda::MemPool pool;
  std::vector<std::unique_ptr<CudaSlot>> slots;

  ~Device() {
    slots.clear();  // streams and buffers first: they use the pool
  }
};

namespace {

absl::StatusOr<DeviceInfo> Describe(int index) {
  cudaDeviceProp prop;
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, index));
  DeviceInfo info;
  info.index = index;
  info.name = prop.name;
  info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  info.compute_capability = absl::StrCat(prop.major, ".", prop.minor);
  info.multiprocessors = prop.multiProcessorCount;
  return info;
}

// The test-only seam (cuda_backend.h): the CUDA indices listed in
// SAMPLER_TEST_ONLY_FAIL_GPUS, whose initialisation is to fail.
constexpr char kFailGpusVariable[] = "SAMPLER_TEST_ONLY_FAIL_GPUS";
std::set<int> GpusToFailForTests() {
  std::set<int> indices;
  const char* value = std::getenv(kFailGpusVariable);
  if (value == nullptr) return indices;
  for (absl::string_view part : absl::StrSplit(value, ',')) {
    int index = 0;
    if (absl::SimpleAtoi(part, &index)) indices.insert(index);
  }
  return indices;
}

}  // namespace

int CudaBackend::VisibleDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

CudaBackend::CudaBackend(CudaBackendOptions options,
                         std::vector<std::unique_ptr<Device>> devices,
                         std::vector<DeviceInfo> listed)
    : options_(std::move(options)),
      devices_(std::move(devices)),
      listed_(std::move(listed)),
      dispatch_(static_cast<int>(devices_.size()),
                options_.streams_per_device) {}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    CudaBackendOptions options) {
  if (options.streams_per_device < 1 || options.streams_per_device > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("streams per device = ", options.streams_per_device,
                     ": must be between 1 and 64"));
  }
  if (options.eager_batches < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eager batches = ", options.eager_batches, ": must be at least 1"));
  }
  SAMPLER_ASSIGN_OR_RETURN(const std::vector<int> indices,
                           SelectDevices(options.devices, VisibleDevices()));
  const std::set<int> fail_for_tests = GpusToFailForTests();
  // One GPU's resources; any failure leaves that GPU out (StartDevices).
  const auto start =
      [&](DeviceInfo& info) -> absl::StatusOr<std::unique_ptr<Device>> {
    const int index = info.index;
    if (fail_for_tests.count(index) > 0) {
      return absl::UnavailableError(absl::StrCat(
          "initialisation failed on purpose (", kFailGpusVariable, ")"));
    }
    absl::Status set = kernels::cuda::ToStatus(
        cudaSetDevice(index), "cudaSetDevice", __FILE__, __LINE__);
    if (set.ok() && options.wait != "auto") {
      const unsigned flags = options.wait == "spin" ? cudaDeviceScheduleSpin
                             : options.wait == "yield"
                                 ? cudaDeviceScheduleYield
                                 : cudaDeviceScheduleBlockingSync;
      set = kernels::cuda::ToStatus(cudaSetDeviceFlags(flags),
                                    "cudaSetDeviceFlags", __FILE__, __LINE__);
    }
    if (!set.ok()) {
      cudaGetLastError();
      return set;
    }
    SAMPLER_ASSIGN_OR_RETURN(info, Describe(index));
    auto device = std::make_unique<Device>();
    device->info = info;
    SAMPLER_ASSIGN_OR_RETURN(
        device->pool,
        kernels::cuda::MemPool::Create(
            index,
            static_cast<size_t>(std::max<int64_t>(0, options.pool_limit_bytes)),
            static_cast<uint64_t>(
                std::max<int64_t>(0, options.pool_release_threshold_bytes))));
    for (int s = 0; s < options.streams_per_device; ++s) {
      // On the current device (`index`), from its pool.
      SAMPLER_ASSIGN_OR_RETURN(std::unique_ptr<CudaSlot> slot,
                               CudaSlot::Create(device->pool.get()));
      device->slots.push_back(std::move(slot));
    }
    return device;
  };
  SAMPLER_ASSIGN_OR_RETURN(StartedDevices<Device> started,
                           StartDevices<Device>(indices, start));
  std::unique_ptr<CudaBackend> backend(
      new CudaBackend(std::move(options), std::move(started.serving),
                      std::move(started.listed)));
  for (size_t d = 0; d < backend->devices_.size(); ++d) {
    for (size_t s = 0; s < backend->devices_[d]->slots.size(); ++s) {
      backend->workers_.emplace_back(
          [b = backend.get(), p = static_cast<int>(d)] { b->WorkerLoop(p); });
    }
  }
  return backend;
}

CudaBackend::~CudaBackend() {
  // Workers finish what is queued, then stop; a batch still running on a
  // caller's thread (RunHere) ends before its slot goes away.
  dispatch_.Stop();
  for (std::thread& worker : workers_) worker.join();
  dispatch_.AwaitClaimsReleased();
}

BackendInfo CudaBackend::Info() const {
  BackendInfo info;
  info.name = "cuda";
  info.reason = options_.reason;
  info.devices = listed_;
  return info;
}

int CudaBackend::Capacity() const { return static_cast<int>(workers_.size()); }

int CudaBackend::EagerBatches() const { return options_.eager_batches; }

void CudaBackend::Submit(int64_t items, Task task, BatchDone done) {
  Pending pending{std::move(task), std::move(done)};
  if (!dispatch_.Submit(items, pending).has_value()) {
    BatchResult result;
    result.status = absl::UnavailableError("the CUDA backend is stopping");
    pending.done(std::move(result));
  }
}

BatchResult CudaBackend::RunOnSlot(int position, int slot,
                                   const absl::Status& selected,
                                   const Task& execute) {
  CudaSlot& on = *devices_[position]->slots[slot];
  absl::StatusOr<double> seconds =
      selected.ok() ? execute(on) : absl::StatusOr<double>(selected);
  if (!seconds.ok()) {
    // Leave the stream clean for the next batch: whatever was queued for
    // the failed one must finish (or fail) before the slot is reused.
    cudaStreamSynchronize(on.stream.get());
    cudaGetLastError();
  }
  BatchResult result;
  result.status = seconds.status();
  result.device = std::to_string(on.device());
  result.device_seconds = seconds.ok() ? *seconds : 0;
  return result;
}

void CudaBackend::WorkerLoop(int position) {
  NameThisThread("cuda-slot");
  // Runtime calls from this thread go to this worker's GPU. Should selecting
  // it fail, every batch this worker takes fails with that error: running
  // them on whatever device is current would mix GPUs and pools.
  const int device = devices_[position]->info.index;
  const absl::Status selected = kernels::cuda::ToStatus(
      cudaSetDevice(device), "cudaSetDevice", __FILE__, __LINE__);
  if (!selected.ok()) {
    std::fprintf(stderr, "sampler-server: GPU %d worker: %s\n", device,
                 std::string(selected.message()).c_str());
  }
  while (std::optional<DeviceDispatch<Pending>::Taken> taken =
             dispatch_.Take(position)) {
    BatchResult result =
        RunOnSlot(position, taken->slot, selected, taken->work.task);
    dispatch_.Release(position, taken->slot, taken->items);
    taken->work.done(std::move(result));
  }
}

namespace {
// Set while a batch runs through RunHere on this thread, its done calls
// included: a batch those submit (a stream's next chunk) goes to a worker,
// so that runs do not nest (as the CPU backend's, cpu_executor.cc).
thread_local bool running_here = false;
}  // namespace

bool CudaBackend::RunHere(AnyBatch& batch, BatchDone& done) {
  const int64_t items =
      std::visit([](const auto& b) { return b.items; }, batch);
  const bool lone =
      std::visit([](const auto& b) { return b.closed_on_lone_call; }, batch);
  if (running_here || !WantsInline(options_.inline_mode,
                                   options_.inline_below_items, items, lone)) {
    return false;
  }
  const std::optional<DeviceDispatch<Pending>::Claim> claim =
      dispatch_.TryClaim(items);
  if (!claim.has_value()) return false;
  running_here = true;
  // Runtime calls from this thread go to the claimed slot's GPU (selected
  // for every batch: a gRPC thread may serve batches of several GPUs).
  const int device = devices_[claim->device]->info.index;
  const absl::Status selected = kernels::cuda::ToStatus(
      cudaSetDevice(device), "cudaSetDevice", __FILE__, __LINE__);
  BatchResult result =
      RunOnSlot(claim->device, claim->slot, selected, [&batch](CudaSlot& slot) {
        return std::visit([&slot](auto& b) { return ExecuteOnGpu(b, slot); },
                          batch);
      });
  dispatch_.Release(claim->device, claim->slot, items, /*claimed=*/true);
  // Nothing of this object is touched after `done`: the batcher may be
  // destroyed once its last batch has reported, and the backend after it.
  done(std::move(result));
  running_here = false;
  return true;
}

std::vector<Backend::PoolBytes> CudaBackend::PoolUsage() const {
  std::vector<PoolBytes> usage;
  for (const auto& device : devices_) {
    uint64_t used = 0, reserved = 0;
    cudaMemPoolGetAttribute(device->pool.get(), cudaMemPoolAttrUsedMemCurrent,
                            &used);
    cudaMemPoolGetAttribute(device->pool.get(),
                            cudaMemPoolAttrReservedMemCurrent, &reserved);
    usage.push_back({std::to_string(device->info.index),
                     static_cast<int64_t>(used),
                     static_cast<int64_t>(reserved)});
  }
  return usage;
}

// A batch becomes a task for a slot worker; the batch (and the jobs it
// shares) lives in the task until the worker is done with it. The task runs
// its kind's ExecuteOnGpu (cuda_exec.h).
void CudaBackend::Run(AnyBatch batch, BatchDone done) {
  const int64_t items =
      std::visit([](const auto& b) { return b.items; }, batch);
  auto shared = std::make_shared<AnyBatch>(std::move(batch));
  Submit(
      items,
      [shared](CudaSlot& slot) {
        return std::visit([&slot](auto& b) { return ExecuteOnGpu(b, slot); },
                          *shared);
      },
      std::move(done));
}

}  // namespace sampler::server
