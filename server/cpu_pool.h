// A fixed pool of worker threads taking tasks from one FIFO queue: what the
// CPU backend runs its batches on (cpu_executor.h cuts each batch into
// tasks). Tasks may queue more tasks, also while the pool shuts down.
#ifndef SAMPLER_SERVER_CPU_POOL_H_
#define SAMPLER_SERVER_CPU_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace sampler::server {

class CpuPool {
 public:
  // The most threads Create accepts: far above any machine's cores, it only
  // stops a mistyped flag from starting millions of threads.
  static constexpr int kMaxThreads = 4096;

  // A pool of `threads` workers (1 .. kMaxThreads, else InvalidArgument;
  // ResourceExhausted if the system refuses a thread).
  static absl::StatusOr<std::unique_ptr<CpuPool>> Create(int threads);

  // Shutdown(). Never throws.
  ~CpuPool();

  CpuPool(const CpuPool&) = delete;
  CpuPool& operator=(const CpuPool&) = delete;

  int threads() const { return threads_; }

  // Appends tasks to the queue under one lock and wakes the workers.
  void Enqueue(std::vector<std::function<void()>> tasks);

  // Runs every queued task, and those the running tasks queue meanwhile,
  // then joins the workers. Idempotent. Once it has begun, only the pool's
  // own tasks may call Enqueue.
  void Shutdown();

 private:
  explicit CpuPool(int threads);
  void WorkerLoop();

  const int threads_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CPU_POOL_H_
