#include "server/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/status_macros.h"
#include "server/cuda_exec.h"

namespace sampler::server {

// A GPU: its pool, its slots (one per stream, each served by one worker
// thread) and the queue of batches waiting for a slot.
struct CudaBackend::Device {
  DeviceInfo info;
  kernels::cuda::MemPool pool;
  std::vector<std::unique_ptr<CudaSlot>> slots;

  struct Pending {
    Task task;
    BatchDone done;
    int64_t items;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Pending> queue;
  bool stopping = false;
  // Work items queued or running here: the dispatch picks the least loaded.
  std::atomic<int64_t> outstanding{0};

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

}  // namespace

int CudaBackend::VisibleDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

CudaBackend::CudaBackend(CudaBackendOptions options)
    : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    CudaBackendOptions options) {
  const int visible = VisibleDevices();
  if (visible == 0) {
    return absl::FailedPreconditionError("no CUDA device is visible");
  }
  if (options.devices.empty()) {
    for (int i = 0; i < visible; ++i) options.devices.push_back(i);
  }
  if (options.streams_per_device < 1 || options.streams_per_device > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("streams per device = ", options.streams_per_device,
                     ": must be between 1 and 64"));
  }
  std::unique_ptr<CudaBackend> backend(new CudaBackend(options));
  for (int index : options.devices) {
    if (index < 0 || index >= visible) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device ", index, ": only ", visible, " CUDA devices are visible"));
    }
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    auto device = std::make_unique<Device>();
    SAMPLER_ASSIGN_OR_RETURN(device->info, Describe(index));
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
    backend->devices_.push_back(std::move(device));
  }
  for (auto& device : backend->devices_) {
    for (auto& slot : device->slots) {
      backend->workers_.emplace_back([b = backend.get(), d = device.get(),
                                      s = slot.get()] { b->WorkerLoop(d, s); });
    }
  }
  return backend;
}

CudaBackend::~CudaBackend() {
  // Workers finish what is queued, then stop.
  for (auto& device : devices_) {
    std::lock_guard<std::mutex> lock(device->mu);
    device->stopping = true;
    device->cv.notify_all();
  }
  for (std::thread& worker : workers_) worker.join();
}

BackendInfo CudaBackend::Info() const {
  BackendInfo info;
  info.name = "cuda";
  info.reason = options_.reason;
  for (const auto& device : devices_) info.devices.push_back(device->info);
  return info;
}

int CudaBackend::Capacity() const { return static_cast<int>(workers_.size()); }

void CudaBackend::Submit(int64_t items, Task task, BatchDone done) {
  Device* best = devices_.front().get();
  for (const auto& device : devices_) {
    if (device->outstanding.load() < best->outstanding.load()) {
      best = device.get();
    }
  }
  best->outstanding += items;
  {
    std::lock_guard<std::mutex> lock(best->mu);
    best->queue.push_back({std::move(task), std::move(done), items});
  }
  best->cv.notify_one();
}

void CudaBackend::WorkerLoop(Device* device, CudaSlot* slot) {
  // Runtime calls from this thread go to this slot's GPU. Should selecting
  // it fail, every batch this worker takes fails with that error: running
  // them on whatever device is current would mix GPUs and pools.
  const absl::Status selected = kernels::cuda::ToStatus(
      cudaSetDevice(slot->device()), "cudaSetDevice", __FILE__, __LINE__);
  if (!selected.ok()) {
    std::fprintf(stderr, "sampler-server: GPU %d worker: %s\n", slot->device(),
                 std::string(selected.message()).c_str());
  }
  const std::string name = std::to_string(slot->device());
  for (;;) {
    Device::Pending pending;
    {
      std::unique_lock<std::mutex> lock(device->mu);
      device->cv.wait(lock, [device] {
        return device->stopping || !device->queue.empty();
      });
      if (device->queue.empty()) return;
      pending = std::move(device->queue.front());
      device->queue.pop_front();
    }
    absl::StatusOr<double> seconds =
        selected.ok() ? pending.task(*slot) : absl::StatusOr<double>(selected);
    if (!seconds.ok()) {
      // Leave the stream clean for the next batch: whatever was queued for
      // the failed one must finish (or fail) before the slot is reused.
      cudaStreamSynchronize(slot->stream.get());
      cudaGetLastError();
    }
    device->outstanding -= pending.items;
    BatchResult result;
    result.status = seconds.status();
    result.device = name;
    result.device_seconds = seconds.ok() ? *seconds : 0;
    pending.done(std::move(result));
  }
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
