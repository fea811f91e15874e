// The CPU backend: executes batches with the kernels' CPU functions on a
// fixed pool of threads. It serves when no GPU is present, and its outputs
// are the reference the CUDA backend is checked against.
//
// A batch is one unit of work spread over the whole pool. Run queues one
// planning task; on a pool thread, it cuts the jobs into pieces (large jobs
// into ranges of samples, rows or positions, which the kernels address by
// index through first_item / first_row / first_position, so the bits do not
// depend on the cut), packs small pieces into tasks of similar cost (about
// four per thread for a large batch, none under 0.1 ms), queues them behind
// whatever is already in the pool's FIFO queue and runs the first itself.
// The last task of a batch to finish reports the batch.
#ifndef SAMPLER_SERVER_CPU_BACKEND_H_
#define SAMPLER_SERVER_CPU_BACKEND_H_

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

namespace sampler::server {

class CpuBackend : public Backend {
 public:
  // The most threads Create accepts: far above any machine's cores, it only
  // stops a mistyped flag from starting millions of threads.
  static constexpr int kMaxThreads = 4096;

  // A pool of `threads` workers (1 .. kMaxThreads, else InvalidArgument;
  // ResourceExhausted if the system refuses a thread). `reason` is what
  // Info() reports as the reason this backend was chosen.
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

  // Queues the batch and returns at once; `done` is called exactly once
  // from a pool thread (never from inside Run), with status OK, device "cpu"
  // and device_seconds = wall time from the start of the batch's planning to
  // the end of its last task. Per-job kernel failures go to job->status (a
  // failure in one piece of a cut job names the piece's range). `done` may
  // call Run again, also while the destructor drains the queue; other
  // threads must not call Run once destruction has begun.
  void Run(AnyBatch batch, BatchDone done) override;

 private:
  CpuBackend(int threads, std::string reason);

  template <typename JobT>
  void RunBatch(Batch<JobT> batch, BatchDone done);

  // Appends tasks to the queue under one lock and wakes the workers.
  void Enqueue(std::vector<std::function<void()>> tasks);
  void WorkerLoop();

  const int threads_;
  const std::string reason_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CPU_BACKEND_H_
