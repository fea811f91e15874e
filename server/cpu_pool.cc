#include "server/cpu_pool.h"

#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/thread_name.h"

namespace sampler::server {

CpuPool::CpuPool(int threads) : threads_(threads) {}

absl::StatusOr<std::unique_ptr<CpuPool>> CpuPool::Create(int threads) {
  if (threads < 1 || threads > kMaxThreads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cpu threads = ", threads, ": must be between 1 and ", kMaxThreads));
  }
  std::unique_ptr<CpuPool> pool(new CpuPool(threads));
  pool->workers_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    // std::thread reports a refused thread by throwing; this is the one
    // place that can happen. The destructor joins those already started.
    try {
      pool->workers_.emplace_back([p = pool.get()] { p->WorkerLoop(); });
    } catch (const std::system_error& e) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot start cpu thread ", i, " of ", threads, ": ", e.what()));
    }
  }
  return pool;
}

CpuPool::~CpuPool() { Shutdown(); }

void CpuPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

void CpuPool::Enqueue(std::vector<std::function<void()>> tasks) {
  const size_t n = tasks.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::function<void()>& t : tasks) queue_.push_back(std::move(t));
  }
  if (n == 1) {
    cv_.notify_one();
  } else {
    cv_.notify_all();
  }
}

void CpuPool::WorkerLoop() {
  NameThisThread("cpu-pool");
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      // Stopping drains the queue first: queued batches still get their
      // done callbacks (and tasks those callbacks queue are run too, since
      // a worker running a task is still in this loop).
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace sampler::server
