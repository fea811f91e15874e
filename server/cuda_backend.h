// The CUDA backend: every selected GPU gets a worker per stream (several
// streams per GPU, so the copies of one batch overlap the kernel of another),
// an explicit stream-ordered memory pool (cudaMemPoolCreate, with a release
// threshold and an optional cap) and pinned staging buffers reused across
// batches. A batch goes to the GPU with the least outstanding work; its worker
// packs it into staging, allocates device memory from the pool, copies in,
// launches one segmented kernel for the whole batch, copies out, frees,
// records events and waits for them, then hands each job its slice.
// A failed allocation fails that batch with RESOURCE_EXHAUSTED; the backend
// goes on serving.
#ifndef SAMPLER_SERVER_CUDA_BACKEND_H_
#define SAMPLER_SERVER_CUDA_BACKEND_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend.h"
#include "server/cuda_slot.h"

namespace sampler::server {

struct CudaBackendOptions {
  // GPUs to use (CUDA device indices); empty: every visible GPU.
  std::vector<int> devices;
  int streams_per_device = 4;
  // Cap on each GPU's memory pool in bytes (0: no cap beyond the GPU's).
  int64_t pool_limit_bytes = 0;
  // Memory the pool keeps reserved between batches instead of returning it.
  int64_t pool_release_threshold_bytes = int64_t{1} << 30;
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
  void Run(AnyBatch batch, BatchDone done) override;
  std::vector<PoolBytes> PoolUsage() const override;

 private:
  // Executes a batch on a slot and returns the kernel seconds.
  using Task = std::function<absl::StatusOr<double>(CudaSlot&)>;
  struct Device;

  explicit CudaBackend(CudaBackendOptions options);
  void Submit(int64_t items, Task task, BatchDone done);
  void WorkerLoop(Device* device, CudaSlot* slot);

  const CudaBackendOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<std::thread> workers_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CUDA_BACKEND_H_
