// The CPU backend: executes batches with the kernels' CPU functions on a
// fixed pool of threads (cpu_pool.h; how a batch is cut into tasks:
// cpu_executor.h). It serves when no GPU is present, and its outputs are the
// reference the CUDA backend is checked against.
#ifndef SAMPLER_SERVER_CPU_BACKEND_H_
#define SAMPLER_SERVER_CPU_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/backend.h"
#include "server/cpu_pool.h"

namespace sampler::server {

class CpuBackend : public Backend {
 public:
  // A pool of `threads` workers (1 .. CpuPool::kMaxThreads, else
  // InvalidArgument; ResourceExhausted if the system refuses a thread).
  // `reason` is what Info() reports as the reason this backend was chosen.
  static absl::StatusOr<std::unique_ptr<CpuBackend>> Create(
      int threads, std::string reason = "cpu");

  // Finishes every queued task (done callbacks included), then joins the
  // workers. Never throws.
  ~CpuBackend() override;

  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  BackendInfo Info() const override;
  // The number of threads: as many batches as can make progress at once.
  int Capacity() const override;

  // Queues the batch and returns at once (ExecuteOnCpu says how `done` is
  // called). `done` may call Run again, also while the destructor drains
  // the queue; other threads must not call Run once destruction has begun.
  void Run(AnyBatch batch, BatchDone done) override;
  // As many small batches as threads run at once, each on its own thread.
  int EagerBatches() const override;
  // A batch of one task's work runs on the calling thread
  // (ExecuteOnCpuHere).
  bool RunHere(AnyBatch& batch, BatchDone& done) override;

 private:
  CpuBackend(std::unique_ptr<CpuPool> pool, std::string reason);

  const std::string reason_;
  const std::unique_ptr<CpuPool> pool_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CPU_BACKEND_H_
