// Cross-client batching: one Batcher per request kind gathers validated jobs
// and hands them to the backend as whole batches.
//
// A batch closes when it holds `max_batch_items` work items or its oldest job
// has waited `max_batch_delay`, whichever comes first, or at once when no
// batch of its kind is executing (`close_when_idle`: waiting would only add
// latency); and only when the backend has a free slot (Backend::Capacity),
// so that under load batches grow instead of queueing up as many small
// launches. Jobs whose client has
// gone or whose deadline has passed are dropped when their batch closes,
// before any work is spent on them. A full queue refuses at once.
#ifndef SAMPLER_SERVER_BATCHER_H_
#define SAMPLER_SERVER_BATCHER_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/backend.h"
#include "server/jobs.h"
#include "server/metrics.h"

namespace sampler::server {

// Bounds the work items waiting in all queues together (--max_queued_items).
class QueueBudget {
 public:
  explicit QueueBudget(int64_t max_items) : max_items_(max_items) {}

  // Takes `items` if they fit, or all of them when `force` (a chunk of a
  // stream that was already admitted: refusing it would break a promise).
  bool TryAcquire(int64_t items, bool force) {
    int64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (!force && used + items > max_items_) return false;
    } while (!used_.compare_exchange_weak(used, used + items,
                                          std::memory_order_relaxed));
    return true;
  }
  void Release(int64_t items) {
    used_.fetch_sub(items, std::memory_order_relaxed);
  }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t max_items() const { return max_items_; }

 private:
  const int64_t max_items_;
  std::atomic<int64_t> used_{0};
};

struct BatcherOptions {
  int64_t max_batch_items = 1 << 20;
  absl::Duration max_batch_delay = absl::Milliseconds(2);
  // Also close a batch at once when no batch of this kind is executing:
  // waiting then only adds latency, since nothing would be launched
  // meanwhile. Batches still grow under load, while one executes.
  bool close_when_idle = true;
};

template <typename JobT>
class Batcher {
 public:
  Batcher(Kind kind, BatcherOptions options, QueueBudget* budget,
          Backend* backend, Metrics* metrics)
      : kind_(kind),
        options_(options),
        budget_(budget),
        backend_(backend),
        metrics_(metrics),
        capacity_(std::max(1, backend->Capacity())),
        dispatcher_([this] { DispatchLoop(); }) {}

  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  ~Batcher() {
    Drain();
    dispatcher_.join();
  }

  // Queues the job, or refuses it without calling job->done:
  // RESOURCE_EXHAUSTED when the queues are full, OUT_OF_RANGE for a job
  // larger than the queues could ever hold, UNAVAILABLE when draining.
  // `admitted_stream_chunk` skips the budget check for the later chunks of a
  // stream whose first chunk was accepted.
  absl::Status Enqueue(std::shared_ptr<JobT> job,
                       bool admitted_stream_chunk = false) {
    if (!admitted_stream_chunk && job->items > budget_->max_items()) {
      // Never fits, whatever the load: not a reason to retry.
      return absl::OutOfRangeError(absl::StrCat(
          "request of ", job->items, " work items exceeds the server's queue "
          "capacity of ", budget_->max_items(),
          " (max_queued_items); split the request"));
    }
    if (!budget_->TryAcquire(job->items, admitted_stream_chunk)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "server overloaded: ", budget_->used(), " work items queued, limit ",
          budget_->max_items(), "; retry later"));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (draining_) {
        budget_->Release(job->items);
        return absl::UnavailableError("server is shutting down");
      }
      job->enqueued = Clock::now();
      queued_items_ += job->items;
      queue_.push_back(std::move(job));
      metrics_->SetQueueDepth(kind_, static_cast<int64_t>(queue_.size()));
    }
    cv_.notify_all();
    return absl::OkStatus();
  }

  // Stops taking jobs, runs everything already queued (ignoring the delay)
  // and returns when every batch has completed. Idempotent.
  void Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    draining_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return queue_.empty() && in_flight_ == 0; });
  }

 private:
  void DispatchLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] {
        return (!queue_.empty() && in_flight_ < capacity_) ||
               (draining_ && queue_.empty());
      });
      if (queue_.empty()) {
        if (in_flight_ == 0) return;  // drained: nothing queued or running
        cv_.wait(lock, [this] { return in_flight_ == 0 || !queue_.empty(); });
        if (queue_.empty()) return;
        continue;
      }
      // A slot is free: wait until the batch is full or its oldest job has
      // waited long enough (new jobs may arrive meanwhile).
      const Clock::time_point close_at =
          queue_.front()->enqueued + absl::ToChronoNanoseconds(options_.max_batch_delay);
      cv_.wait_until(lock, close_at, [this] {
        return queued_items_ >= options_.max_batch_items || draining_ ||
               (options_.close_when_idle && in_flight_ == 0);
      });
      Batch<JobT> batch;
      std::vector<std::shared_ptr<JobT>> dropped;
      const Clock::time_point now = Clock::now();
      while (!queue_.empty()) {
        std::shared_ptr<JobT>& next = queue_.front();
        const bool live = !next->cancelled() && next->deadline > now;
        if (live && !batch.jobs.empty() &&
            batch.items + next->items > options_.max_batch_items) {
          break;
        }
        queued_items_ -= next->items;
        budget_->Release(next->items);
        if (live) {
          metrics_->QueueWait(
              kind_, std::chrono::duration<double>(now - next->enqueued).count());
          batch.items += next->items;
          batch.jobs.push_back(std::move(next));
        } else {
          dropped.push_back(std::move(next));
        }
        queue_.pop_front();
      }
      metrics_->SetQueueDepth(kind_, static_cast<int64_t>(queue_.size()));
      if (!batch.jobs.empty()) ++in_flight_;
      // Dropped jobs count as in flight until their done has returned, so
      // that Drain neither returns before then nor sleeps through the end:
      // when only dropped jobs were queued, no batch completion wakes it.
      const bool dropping = !dropped.empty();
      if (dropping) ++in_flight_;
      lock.unlock();
      for (auto& job : dropped) {
        // Expiry first: gRPC marks a call whose deadline has passed as
        // cancelled too, and the metrics should say what happened.
        job->done(
            job->deadline <= now
                ? absl::DeadlineExceededError("deadline passed while queued")
                : absl::CancelledError("cancelled by the client"));
      }
      if (!batch.jobs.empty()) Launch(std::move(batch));
      lock.lock();
      if (dropping) {
        --in_flight_;
        cv_.notify_all();
      }
    }
  }

  void Launch(Batch<JobT> batch) {
    metrics_->BatchClosed(kind_, static_cast<int64_t>(batch.jobs.size()),
                          batch.items);
    auto jobs = std::make_shared<std::vector<std::shared_ptr<JobT>>>(batch.jobs);
    const int64_t items = batch.items;
    backend_->Run(std::move(batch), [this, jobs, items](BatchResult result) {
      metrics_->BatchExecuted(kind_, result.device, result.device_seconds,
                              result.status.ok() ? items : 0);
      for (const Backend::PoolBytes& pool : backend_->PoolUsage()) {
        metrics_->SetPoolBytes(pool.device, "used", pool.used);
        metrics_->SetPoolBytes(pool.device, "reserved", pool.reserved);
      }
      for (auto& job : *jobs) {
        job->done(result.status.ok() ? job->status : result.status);
      }
      // Notified under the lock: once in_flight_ reaches 0, Drain may
      // return and the batcher be destroyed, cv_ included.
      std::lock_guard<std::mutex> lock(mu_);
      --in_flight_;
      cv_.notify_all();
    });
  }

  const Kind kind_;
  const BatcherOptions options_;
  QueueBudget* const budget_;
  Backend* const backend_;
  Metrics* const metrics_;
  const int capacity_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<JobT>> queue_;
  int64_t queued_items_ = 0;
  int in_flight_ = 0;
  bool draining_ = false;
  std::thread dispatcher_;  // last: starts after everything above exists
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_BATCHER_H_
