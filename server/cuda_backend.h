// The CUDA backend: every selected GPU gets a worker per stream (several
// streams per GPU, so the copies of one batch overlap the kernel of another),
// an explicit stream-ordered memory pool (cudaMemPoolCreate, with a release
// threshold and an optional cap) and pinned staging buffers reused across
// batches. A batch goes to the GPU with the least outstanding work; its worker
// packs it into staging, allocates device memory from the pool, copies in,
// launches one segmented kernel for the whole batch, copies out, frees,
// records events and waits for them, then hands each job its slice.
// A small batch closed on a request's gRPC thread skips the worker: it runs
// the same way on that thread when its GPU has nothing queued and a stream
// free (RunHere, --gpu_inline_below_items; with --gpu_inline=auto only when
// the call that closed it was alone on its connection, gpu_inline.h; each
// stream's slot is held by one batch at a time, whoever runs it:
// DeviceDispatch's slots).
// A failed allocation fails that batch with RESOURCE_EXHAUSTED; the backend
// goes on serving. The choice of GPU and the queues are DeviceDispatch
// (device_dispatch.h); a GPU that cannot be initialised is logged and listed
// as unavailable while the others serve (device_init.h).
//
// Test-only seam: SAMPLER_TEST_ONLY_FAIL_GPUS=1,3 (CUDA indices) makes those
// GPUs' initialisation fail before any CUDA call, so that the GPU host's
// tests can show the others serving (bench/service/multi_gpu.sh).
#ifndef SAMPLER_SERVER_CUDA_BACKEND_H_
#define SAMPLER_SERVER_CUDA_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/backend.h"
#include "server/cuda_slot.h"
#include "server/device_dispatch.h"
#include "server/gpu_inline.h"

namespace sampler::server {

struct CudaBackendOptions {
  // GPUs to use (CUDA device indices); empty: every visible GPU.
  std::vector<int> devices;
  int streams_per_device = 4;
  // Cap on each GPU's memory pool in bytes (0: no cap beyond the GPU's).
  int64_t pool_limit_bytes = 0;
  // Memory the pool keeps reserved between batches instead of returning it.
  int64_t pool_release_threshold_bytes = int64_t{1} << 30;
  // How a worker's cudaStreamSynchronize waits (cudaSetDeviceFlags): "auto"
  // (CUDA's default: spin while cores outnumber contexts, so a worker
  // holds a core for a whole batch), "spin", "yield" or "block" (sleep on
  // an interrupt, a core free for gRPC's threads, at some wake-up latency).
  // Measured on a 16-core H100 host (bench/results/
  // floor-h100-session7-2026-11-26.md, small requests): auto 0.87 / 0.96 of
  // the floor, yield 0.75 / 0.82, block 0.75 / 0.86; so auto stays.
  std::string wait = "auto";
  // A batch of fewer work items than this that a batcher closes on a
  // request's gRPC thread runs right there when its GPU has nothing queued
  // and a stream free (RunHere): no hand-off to that stream's worker (its
  // wake-up and sleep, two context switches a batch), and the calls finish
  // on the thread that read them. That thread is busy for the batch's
  // round trip meanwhile (about 0.1 ms for a small one). 0: off. On an
  // H100 host 16384, always, took 64 x 1 small requests from 0.82 to 0.86
  // of the floor (4.08 -> 2.99 context switches a call) but 16 x 16 from
  // 0.91 to 0.83 (batches of 17.9 requests instead of 23.8;
  // bench/results/cuda-inline-h100-session8-2026-11-26.md); with auto
  // (below) 0.91 and 0.94 against the hand-off's 0.82 and 0.92 (session 9
  // mid-session call), so 16384 with auto is the default.
  int64_t inline_below_items = 16384;
  // Which of those batches run there (gpu_inline.h): only those closed by
  // a call alone on a connection that does not multiplex (auto, the
  // default: the gain at 64 x 1 without the loss at 16 x 16; the service
  // must count calls per connection, ServiceOptions, else none is lone),
  // always (session 8's mode) or never (the hand-off).
  GpuInline inline_mode = GpuInline::kAuto;
  // Batches of a kind that may execute at once before a batcher holds its
  // next batch back so that it grows (Backend::EagerBatches; the batchers
  // clamp it to Capacity()). 1: one batch at a time grows the next one
  // (fewer launches under load); more: while a stream is free, a request
  // closes its batch at once, so that with inline_below_items small
  // requests run on their own gRPC threads as on the CPU backend, at a GPU
  // round trip each. Measured there with 16384 inline: 2 and 4 no better
  // at 64 x 1 (0.86, 0.85) and worse at 16 x 16 (0.82, 0.71); so 1.
  int eager_batches = 1;
  std::string reason;
};

class CudaBackend : public Backend {
 public:
  // Visible CUDA devices; 0 when there is no driver or no GPU.
  static int VisibleDevices();

  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      CudaBackendOptions options);
  ~CudaBackend() override;

  BackendInfo Info() const override;
  int Capacity() const override;
  int EagerBatches() const override;
  void Run(AnyBatch batch, BatchDone done) override;
  // A batch under options.inline_below_items that options.inline_mode
  // wants inline (WantsInline) runs on the calling thread when dispatch
  // gives it a free stream (DeviceDispatch::TryClaim); not one submitted
  // from the done of a batch running here (no nesting).
  bool RunHere(AnyBatch& batch, BatchDone& done) override;
  std::vector<PoolBytes> PoolUsage() const override;

 private:
  // Executes a batch on a slot and returns the kernel seconds.
  using Task = std::function<absl::StatusOr<double>(CudaSlot&)>;
  struct Pending {
    Task task;
    BatchDone done;
  };
  struct Device;

  CudaBackend(CudaBackendOptions options,
              std::vector<std::unique_ptr<Device>> devices,
              std::vector<DeviceInfo> listed);
  void Submit(int64_t items, Task task, BatchDone done);
  // Serves the queue of devices_[position], each batch on the slot it takes
  // with it.
  void WorkerLoop(int position);
  // Runs a batch on `slot` of devices_[position] with `execute` (unless
  // selecting that GPU on this thread failed: `selected`) and says how it
  // went, leaving the stream clean after a failure.
  BatchResult RunOnSlot(int position, int slot, const absl::Status& selected,
                        const Task& execute);

  const CudaBackendOptions options_;
  // The GPUs that serve; DeviceDispatch positions index this.
  std::vector<std::unique_ptr<Device>> devices_;
  // Every selected GPU, unavailable ones included (Info()).
  const std::vector<DeviceInfo> listed_;
  DeviceDispatch<Pending> dispatch_;
  std::vector<std::thread> workers_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CUDA_BACKEND_H_
