// Cross-client batching: one Batcher per request kind gathers validated jobs
// and hands them to the backend as whole batches.
//
// A batch closes when it holds `max_batch_items` work items or its oldest job
// has waited `max_batch_delay`, whichever comes first, or at once when fewer
// batches of its kind execute than the backend runs eagerly
// (`close_when_idle` and Backend::EagerBatches: one on a GPU, where waiting
// for the running batch lets the next one grow; a thread's worth on the CPU,
// where a small batch costs the same alone); and only when the backend has a
// free slot (Backend::Capacity), so that under load batches grow instead of
// queueing up as many small launches. Jobs whose client has gone or whose
// deadline has passed are dropped when their batch closes, before any work
// is spent on them. A full queue refuses at once.
//
// Hand-offs (issue 13): a batch that may close when its job arrives closes
// on the arriving thread (the gRPC thread, in Enqueue) and is handed to the
// backend from there; the dispatcher thread closes the batches that wait
// for their delay or for a slot, which a completing batch frees before its
// jobs' done calls run. A small request on an idle server so reaches the
// backend without a thread hop, and with the CPU backend runs on its own
// gRPC thread (Backend::RunHere).
#ifndef SAMPLER_SERVER_BATCHER_H_
#define SAMPLER_SERVER_BATCHER_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "sampler/kernels/status_macros.h"
#include "server/backend.h"
#include "server/jobs.h"
#include "server/metrics.h"
#include "server/thread_name.h"

namespace sampler::server {

// Bounds the work items waiting in all queues together (--max_queued_items)
// and shares them fairly between clients (issue 9 item 5).
//
// A client is whatever the service names it by: the bearer token when
// tokens are required, else the peer address (one TCP connection). A client
// alone may fill the whole budget: refusing work while the queue has room
// would only waste it. But a client refused within the last
// `waiting_window`, asking for no more than its fair share, is *waiting*,
// and room is kept for what it asked: while others wait, a client that
// holds more than its fair share - max_items / (clients with work queued or
// waiting) - may not take room the waiting clients need. So as queued work
// drains, the room goes to the clients that were refused rather than back
// to the one that filled the queue; and a waiting client's retry fits. A
// client asking for more than its fair share when refused does not make
// others yield (it gets what is left over), and neither does one that gave
// up: its claim lapses after the window.
class QueueBudget {
 public:
  explicit QueueBudget(int64_t max_items,
                       absl::Duration waiting_window = absl::Seconds(10))
      : max_items_(max_items),
        waiting_window_(absl::ToChronoNanoseconds(waiting_window)) {}

  // Takes `items` for `client` when the fairness rule above allows it, or
  // always when `force` (a chunk of a stream that was already admitted:
  // refusing it would break a promise). RESOURCE_EXHAUSTED (retry later)
  // otherwise, saying why.
  absl::Status Acquire(const std::string& client, int64_t items, bool force) {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    PruneWaiting(now);
    auto held_it = held_.find(client);
    const int64_t held = held_it == held_.end() ? 0 : held_it->second;
    if (!force) {
      SAMPLER_RETURN_IF_ERROR(Check(client, held, items, now));
    }
    held_[client] = held + items;
    used_ += items;
    StopWaiting(client);
    return absl::OkStatus();
  }

  void Release(const std::string& client, int64_t items) {
    std::lock_guard<std::mutex> lock(mu_);
    used_ -= items;
    auto it = held_.find(client);
    if (it == held_.end()) return;  // cannot happen: Acquire created it
    it->second -= items;
    if (it->second <= 0) held_.erase(it);
  }

  int64_t used() const {
    std::lock_guard<std::mutex> lock(mu_);
    return used_;
  }
  // Work items `client` holds in the queues.
  int64_t held(const std::string& client) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(client);
    return it == held_.end() ? 0 : it->second;
  }
  int64_t max_items() const { return max_items_; }

 private:
  struct Waiting {
    Clock::time_point since;
    int64_t items = 0;  // what it asked for, kept free for its retry
  };

  // Clients with work queued or waiting, `client` included.
  int64_t Clients(const std::string& client) const {
    int64_t n = static_cast<int64_t>(held_.size());
    for (const auto& [name, waiting] : waiting_) {
      if (held_.count(name) == 0) ++n;
    }
    if (held_.count(client) == 0 && waiting_.count(client) == 0) ++n;
    return n;
  }

  absl::Status Check(const std::string& client, int64_t held, int64_t items,
                     Clock::time_point now) {
    const int64_t clients = Clients(client);
    const int64_t share = max_items_ / std::max<int64_t>(clients, 1);
    auto own = waiting_.find(client);
    const int64_t others_need =
        waiting_items_ - (own == waiting_.end() ? 0 : own->second.items);
    if (others_need > 0 && held + items > share &&
        used_ + items + others_need > max_items_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "server overloaded: this client already has ", held,
          " work items queued and asks for ", items,
          " more, over its fair share of ", share, " (max_queued_items ",
          max_items_, " shared by ", clients,
          " clients), and the room left is kept for clients that were "
          "refused; retry later"));
    }
    if (used_ + items > max_items_) {
      // Waiting (room kept for its retry) only when it asks for no more
      // than a fair share.
      if (held + items <= share) {
        StopWaiting(client);
        waiting_[client] = Waiting{now, items};
        waiting_items_ += items;
      }
      return absl::ResourceExhaustedError(absl::StrCat(
          "server overloaded: ", used_, " work items queued, limit ",
          max_items_, " (max_queued_items); retry later"));
    }
    return absl::OkStatus();
  }

  void StopWaiting(const std::string& client) {
    auto it = waiting_.find(client);
    if (it == waiting_.end()) return;
    waiting_items_ -= it->second.items;
    waiting_.erase(it);
  }

  // Forgets clients refused longer than waiting_window_ ago. Linear in the
  // clients waiting, so it runs only when the map has doubled since the last
  // time or the oldest entry may have expired (checked at most every 1/8th
  // of the window).
  void PruneWaiting(Clock::time_point now) {
    if (waiting_.empty()) return;
    if (now < next_prune_ &&
        waiting_.size() < 2 * std::max<size_t>(pruned_size_, 16)) {
      return;
    }
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (now - it->second.since > waiting_window_) {
        waiting_items_ -= it->second.items;
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    pruned_size_ = waiting_.size();
    next_prune_ = now + waiting_window_ / 8;
  }

  const int64_t max_items_;
  const Clock::duration waiting_window_;
  mutable std::mutex mu_;
  int64_t used_ = 0;
  std::unordered_map<std::string, int64_t> held_;  // only clients with > 0
  std::unordered_map<std::string, Waiting> waiting_;
  int64_t waiting_items_ = 0;  // sum of waiting_[*].items
  size_t pruned_size_ = 0;
  Clock::time_point next_prune_{};
};

struct BatcherOptions {
  int64_t max_batch_items = 1 << 20;
  absl::Duration max_batch_delay = absl::Milliseconds(2);
  // Also close a batch at once when no batch of this kind is executing (or
  // fewer than the backend's EagerBatches): waiting then only adds latency,
  // since nothing would be launched meanwhile. Batches still grow under
  // load, while one executes.
  bool close_when_idle = true;
  // Let the backend run a batch closed on a request's own thread right there
  // when it can (Backend::RunHere): no hand-off, but the requests that one
  // gRPC thread reads together are then served one after the other.
  bool run_here = true;
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
        eager_(std::clamp(backend->EagerBatches(), 1, capacity_)),
        dispatcher_([this] { DispatchLoop(); }) {}

  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  ~Batcher() {
    Drain();
    {
      // The dispatcher may be waiting for a slot that the last completions
      // freed after closing the rest of the queue themselves.
      std::lock_guard<std::mutex> lock(mu_);
      dispatch_cv_.notify_all();
    }
    dispatcher_.join();
  }

  // Queues the job, or refuses it without calling job->done:
  // RESOURCE_EXHAUSTED when the queues are full, OUT_OF_RANGE for a job
  // larger than the queues could ever hold, UNAVAILABLE when draining.
  // `admitted_stream_chunk` skips the budget check for the later chunks of a
  // stream whose first chunk was accepted.
  //
  // When the job's batch may close at once (the closing rules above), it
  // closes and is handed to the backend on the calling thread, without
  // waking the dispatcher; a backend that runs small batches where it is
  // called (Backend::RunHere) then calls job->done before Enqueue returns.
  // So the caller must hold no lock that job->done takes.
  absl::Status Enqueue(std::shared_ptr<JobT> job,
                       bool admitted_stream_chunk = false) {
    if (!admitted_stream_chunk && job->items > budget_->max_items()) {
      // Never fits, whatever the load: not a reason to retry.
      return absl::OutOfRangeError(absl::StrCat(
          "request of ", job->items,
          " work items exceeds the server's queue "
          "capacity of ",
          budget_->max_items(), " (max_queued_items); split the request"));
    }
    SAMPLER_RETURN_IF_ERROR(
        budget_->Acquire(job->client, job->items, admitted_stream_chunk));
    const bool lone_call = job->lone_call;
    Closed closed;
    bool wake_dispatcher = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (draining_) {
        budget_->Release(job->client, job->items);
        return absl::UnavailableError("server is shutting down");
      }
      const Clock::time_point now = Clock::now();
      job->enqueued = now;
      queued_items_ += job->items;
      // The dispatcher sleeps while the queue is empty; a job joining a
      // non-empty queue changes nothing it waits for (a batch that may
      // close closes here, a freed slot is reported by Complete).
      wake_dispatcher = queue_.empty();
      queue_.push_back(std::move(job));
      if (MayCloseLocked(now)) {
        closed = CloseLocked(now);
        closed.batch.closed_on_lone_call = lone_call;
        wake_dispatcher = false;
      } else {
        SetQueueGaugesLocked();
      }
    }
    if (wake_dispatcher) dispatch_cv_.notify_one();
    Dispatch(std::move(closed), /*here=*/true);
    return absl::OkStatus();
  }

  // Stops taking jobs, runs everything already queued (ignoring the delay)
  // and returns when every batch has completed and every done has returned.
  // Idempotent.
  void Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    draining_ = true;
    dispatch_cv_.notify_all();
    idle_cv_.wait(lock, [this] {
      return queue_.empty() && in_flight_ == 0 && completing_ == 0;
    });
  }

 private:
  // A batch taken from the queue, and the jobs dropped on the way (client
  // gone, deadline passed), to be handed out unlocked by Dispatch.
  struct Closed {
    Batch<JobT> batch;
    std::vector<std::shared_ptr<JobT>> dropped;
    Clock::time_point now{};
  };

  // Whether a batch may close now: a backend slot is free and the batch is
  // full, the oldest job has waited max_batch_delay, the server drains, or
  // (close_when_idle) fewer batches execute than the backend runs eagerly.
  bool MayCloseLocked(Clock::time_point now) const {
    if (queue_.empty() || in_flight_ >= capacity_) return false;
    return queued_items_ >= options_.max_batch_items || draining_ ||
           (options_.close_when_idle && in_flight_ < eager_) ||
           now >= CloseAtLocked();
  }

  // When the oldest queued job has waited max_batch_delay.
  Clock::time_point CloseAtLocked() const {
    return queue_.front()->enqueued +
           absl::ToChronoNanoseconds(options_.max_batch_delay);
  }

  void SetQueueGaugesLocked() {
    metrics_->SetQueueDepth(kind_, static_cast<int64_t>(queue_.size()));
    metrics_->SetQueueItems(kind_, queued_items_);
  }

  // Takes the next batch off the queue (FIFO, up to max_batch_items unless
  // its first job alone is larger) with the dead jobs before and among it,
  // and counts it as executing (the dropped jobs as completing) until
  // Dispatch has handed them out.
  Closed CloseLocked(Clock::time_point now) {
    Closed closed;
    closed.now = now;
    Batch<JobT>& batch = closed.batch;
    while (!queue_.empty()) {
      std::shared_ptr<JobT>& next = queue_.front();
      const bool live = !next->cancelled() && next->deadline > now;
      if (live && !batch.jobs.empty() &&
          batch.items + next->items > options_.max_batch_items) {
        break;
      }
      queued_items_ -= next->items;
      budget_->Release(next->client, next->items);
      if (live) {
        metrics_->QueueWait(
            kind_, std::chrono::duration<double>(now - next->enqueued).count());
        batch.items += next->items;
        batch.jobs.push_back(std::move(next));
      } else {
        closed.dropped.push_back(std::move(next));
      }
      queue_.pop_front();
    }
    SetQueueGaugesLocked();
    if (!batch.jobs.empty()) ++in_flight_;
    // Dropped jobs count as completing until their done has returned, so
    // that Drain neither returns before then nor sleeps through the end.
    if (!closed.dropped.empty()) ++completing_;
    return closed;
  }

  // Hands out what CloseLocked took, unlocked: the dropped jobs' done, then
  // the batch to the backend (`here`: on the calling thread if the backend
  // can, Backend::RunHere).
  void Dispatch(Closed closed, bool here) {
    for (auto& job : closed.dropped) {
      // Expiry first: gRPC marks a call whose deadline has passed as
      // cancelled too, and the metrics should say what happened.
      job->done(
          job->deadline <= closed.now
              ? absl::DeadlineExceededError("deadline passed while queued")
              : absl::CancelledError("cancelled by the client"));
    }
    const bool dropping = !closed.dropped.empty();
    if (!closed.batch.jobs.empty()) Launch(std::move(closed.batch), here);
    if (dropping) FinishCompleting();
  }

  // One batch's or one set of dropped jobs' done calls have returned.
  void FinishCompleting() {
    // Notified under the lock: once everything is done, Drain may return
    // and the batcher be destroyed, idle_cv_ included.
    std::lock_guard<std::mutex> lock(mu_);
    --completing_;
    if (draining_) idle_cv_.notify_all();
  }

  // Closes batches whose delay has passed or that waited for a free slot
  // (those that may close when their job arrives close in Enqueue). Ends
  // once draining has emptied the queue (nothing can join it then).
  void DispatchLoop() {
    NameThisThread("batcher");
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (draining_ && queue_.empty()) return;
      if (queue_.empty() || in_flight_ >= capacity_) {
        dispatch_cv_.wait(lock);
        continue;
      }
      const Clock::time_point now = Clock::now();
      if (!MayCloseLocked(now)) {
        dispatch_cv_.wait_until(lock, CloseAtLocked());
        continue;
      }
      Closed closed = CloseLocked(now);
      lock.unlock();
      Dispatch(std::move(closed), /*here=*/false);
      lock.lock();
    }
  }

  void Launch(Batch<JobT> batch, bool here) {
    metrics_->BatchClosed(kind_, static_cast<int64_t>(batch.jobs.size()),
                          batch.items);
    auto jobs =
        std::make_shared<std::vector<std::shared_ptr<JobT>>>(batch.jobs);
    const int64_t items = batch.items;
    BatchDone done = [this, jobs, items](BatchResult result) {
      Complete(*jobs, items, result);
    };
    AnyBatch any(std::move(batch));
    if (here && options_.run_here && backend_->RunHere(any, done)) return;
    backend_->Run(std::move(any), std::move(done));
  }

  // A batch has executed: its slot is free at once (the dispatcher may
  // launch the next batch while this thread finishes the jobs), then every
  // job's done runs.
  void Complete(const std::vector<std::shared_ptr<JobT>>& jobs, int64_t items,
                const BatchResult& result) {
    metrics_->BatchExecuted(kind_, result.device, result.device_seconds,
                            result.status.ok() ? items : 0);
    bool wake_dispatcher = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --in_flight_;
      ++completing_;
      wake_dispatcher = !queue_.empty();
    }
    // completing_ keeps the batcher alive until FinishCompleting.
    if (wake_dispatcher) dispatch_cv_.notify_one();
    for (const auto& job : jobs) {
      job->done(result.status.ok() ? job->status : result.status);
    }
    FinishCompleting();
  }

  const Kind kind_;
  const BatcherOptions options_;
  QueueBudget* const budget_;
  Backend* const backend_;
  Metrics* const metrics_;
  const int capacity_;
  const int eager_;  // Backend::EagerBatches, within 1..capacity_

  std::mutex mu_;
  std::condition_variable dispatch_cv_;  // the dispatcher waits on it
  std::condition_variable idle_cv_;      // Drain waits on it
  std::deque<std::shared_ptr<JobT>> queue_;
  int64_t queued_items_ = 0;
  int in_flight_ = 0;   // batches handed to the backend, not yet reported
  int completing_ = 0;  // batches or dropped sets whose done calls run
  bool draining_ = false;
  std::thread dispatcher_;  // last: starts after everything above exists
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_BATCHER_H_
