// The batcher (server/batcher.h) against a fake backend that records every
// batch and completes it only when the test says so (or at once, in auto
// mode): when batches close (max_batch_items, max_batch_delay, a free
// backend slot), what they hold (never more than max_batch_items unless one
// oversized job), which jobs are dropped before execution (cancelled,
// expired), the queue budget, Drain, and that every job's done runs exactly
// once with the right status.
//
// Every wait is bounded; a test that would otherwise hang (a batcher that
// never drains) fails and leaks its batcher instead.
#include "server/batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/backend.h"
#include "server/jobs.h"
#include "server/metrics.h"

namespace sampler::server {
namespace {

// Long enough never to be reached by a test: such a batch closes only on
// max_batch_items, a drain or a free slot after the delay.
constexpr absl::Duration kForever = absl::Hours(1);
// How long a test waits for something that should happen promptly.
constexpr absl::Duration kPatience = absl::Seconds(10);
// How long a test watches for something that must not happen. A negative
// check cannot be proven by waiting; this only makes a bug show up.
constexpr absl::Duration kQuietPeriod = absl::Milliseconds(100);

// What the fake backend saw of one batch: the ids (seeds) of its jobs.
struct SeenBatch {
  Kind kind = Kind::kGamma;
  std::vector<uint64_t> ids;
  int64_t items = 0;
  bool closed_on_lone_call = false;
};

// The kind of each batch type, as the fake backend records it.
Kind KindOf(const Batch<EnumerateJob>&) { return Kind::kEnumerate; }
Kind KindOf(const Batch<CategoricalJob>&) { return Kind::kCategorical; }
Kind KindOf(const Batch<GammaJob>&) { return Kind::kGamma; }
Kind KindOf(const Batch<DirichletJob>&) { return Kind::kDirichlet; }
Kind KindOf(const Batch<BoardsJob>&) { return Kind::kBoards; }

// A backend that records batches and completes them on demand. In auto mode
// a completer thread completes each batch as it arrives (after `delay`),
// never from inside Run, as the real backends do.
class FakeBackend : public Backend {
 public:
  explicit FakeBackend(int capacity) : capacity_(capacity) {
    completer_ = std::thread([this] { CompleterLoop(); });
  }
  ~FakeBackend() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    completer_.join();
  }

  BackendInfo Info() const override { return {"fake", {}, "test"}; }
  int Capacity() const override { return capacity_; }
  int EagerBatches() const override { return eager_; }

  void Run(AnyBatch batch, BatchDone done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      run_threads_.push_back(std::this_thread::get_id());
    }
    std::visit([&](const auto& b) { Record(KindOf(b), b, std::move(done)); },
               batch);
  }

  // With `here`, RunHere completes every batch on the calling thread (OK,
  // recorded like Run's); else it declines, as the default does.
  bool RunHere(AnyBatch& batch, BatchDone& done) override {
    if (!here_) return false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      here_threads_.push_back(std::this_thread::get_id());
      std::visit(
          [&](const auto& b) {
            SeenBatch seen;
            seen.kind = KindOf(b);
            seen.items = b.items;
            seen.closed_on_lone_call = b.closed_on_lone_call;
            for (const auto& job : b.jobs) seen.ids.push_back(job->seed);
            seen_.push_back(std::move(seen));
          },
          batch);
    }
    cv_.notify_all();
    done(BatchResult{absl::OkStatus(), "fake", 1e-6});
    return true;
  }

  // Set before the batcher is made (it reads them once).
  void set_eager(int eager) { eager_ = eager; }
  void set_here(bool here) { here_ = here; }

  // The threads that called Run and RunHere, in order.
  std::vector<std::thread::id> run_threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return run_threads_;
  }
  std::vector<std::thread::id> here_threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return here_threads_;
  }

  // Auto mode completes every pending and future batch with `status` after
  // `delay` each (sleeping on the completer thread stands for execution
  // time, it synchronises nothing).
  void SetAuto(bool on, absl::Status status = absl::OkStatus(),
               absl::Duration delay = absl::ZeroDuration()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto_ = on;
      auto_status_ = std::move(status);
      auto_delay_ = delay;
    }
    cv_.notify_all();
  }

  // Waits until `n` batches have arrived in total; false after kPatience.
  bool WaitForBatches(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(kPatience),
                        [&] { return seen_.size() >= n; });
  }

  // Completes the oldest batch not yet completed, with `status`; false if
  // there is none. `before_done` runs first, e.g. to set per-job statuses.
  bool CompleteOldest(absl::Status status = absl::OkStatus(),
                      const std::function<void(size_t)>& before_done = {}) {
    Pending p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.empty()) return false;
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    if (before_done) before_done(p.index);
    p.done(BatchResult{std::move(status), "fake", 1e-6});
    return true;
  }

  std::vector<SeenBatch> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  size_t pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size();
  }
  // Most batches ever in flight at once.
  int max_in_flight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return max_in_flight_;
  }
  // Jobs of every batch, in arrival order (to set per-job statuses).
  std::vector<std::shared_ptr<Job>> jobs_of(size_t batch) const {
    std::lock_guard<std::mutex> lock(mu_);
    return jobs_[batch];
  }

 private:
  struct Pending {
    size_t index = 0;
    BatchDone done;
  };

  template <typename JobT>
  void Record(Kind kind, const Batch<JobT>& batch, BatchDone done) {
    SeenBatch seen;
    seen.kind = kind;
    seen.items = batch.items;
    seen.closed_on_lone_call = batch.closed_on_lone_call;
    std::vector<std::shared_ptr<Job>> jobs;
    for (const auto& job : batch.jobs) {
      seen.ids.push_back(job->seed);
      jobs.push_back(job);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      // In flight from Run until the backend reports it: the batcher may
      // launch the next batch from inside `done`.
      auto counted = [this, done = std::move(done)](BatchResult r) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          --in_flight_;
        }
        done(std::move(r));
      };
      pending_.push_back({seen_.size(), std::move(counted)});
      seen_.push_back(std::move(seen));
      jobs_.push_back(std::move(jobs));
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    }
    cv_.notify_all();
  }

  void CompleterLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock,
               [this] { return stopping_ || (auto_ && !pending_.empty()); });
      if (stopping_) return;
      const absl::Status status = auto_status_;
      const absl::Duration delay = auto_delay_;
      lock.unlock();
      absl::SleepFor(delay);
      CompleteOldest(status);
      lock.lock();
    }
  }

  const int capacity_;
  int eager_ = 1;
  bool here_ = false;
  mutable std::mutex mu_;
  std::vector<std::thread::id> run_threads_;
  std::vector<std::thread::id> here_threads_;
  std::condition_variable cv_;
  std::vector<SeenBatch> seen_;
  std::vector<std::vector<std::shared_ptr<Job>>> jobs_;
  std::deque<Pending> pending_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  bool auto_ = false;
  absl::Status auto_status_;
  absl::Duration auto_delay_;
  bool stopping_ = false;
  std::thread completer_;  // last: starts after everything above exists
};

// What became of one job: how often done ran and with what.
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  absl::Status status;

  void Record(absl::Status s) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++calls;
      status = std::move(s);
    }
    cv.notify_all();
  }
  // Waits for the first call; false after kPatience.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, absl::ToChronoNanoseconds(kPatience),
                       [&] { return calls > 0; });
  }
  int Calls() {
    std::lock_guard<std::mutex> lock(mu);
    return calls;
  }
  absl::StatusCode Code() {
    std::lock_guard<std::mutex> lock(mu);
    return status.code();
  }
};

template <typename JobT = GammaJob>
std::shared_ptr<JobT> MakeJob(uint64_t id, int64_t items,
                              std::shared_ptr<Outcome> outcome) {
  auto job = std::make_shared<JobT>();
  job->seed = id;  // the fake backend reports jobs by seed
  job->items = items;
  job->done = [outcome](absl::Status s) { outcome->Record(std::move(s)); };
  return job;
}

// A batcher whose drain is bounded: Drain runs on a thread of its own, and
// if it has not returned by the time the test gives up (a batcher bug), the
// test fails and the batcher is leaked rather than hanging the test binary
// in its destructor.
template <typename JobT = GammaJob>
class BoundedBatcher {
 public:
  BoundedBatcher(BatcherOptions options, QueueBudget* budget,
                 FakeBackend* backend, Metrics* metrics,
                 Kind kind = Kind::kGamma)
      : backend_(backend),
        batcher_(std::make_unique<Batcher<JobT>>(kind, options, budget, backend,
                                                 metrics)) {}
  ~BoundedBatcher() {
    // Whatever a test left pending must complete for Drain to return.
    backend_->SetAuto(true);
    if (!DrainWithin(kPatience)) {
      ADD_FAILURE() << "Drain did not return within " << kPatience;
      drainer_.detach();
      batcher_.release();  // still in Drain: must outlive the drainer
      return;
    }
    drainer_.join();
  }

  Batcher<JobT>* operator->() { return batcher_.get(); }

  // Starts Drain on the drainer thread (once).
  void StartDrain() {
    if (drainer_.joinable()) return;
    // The thread shares only `state` and the batcher, both of which outlive
    // it even when it is left behind.
    drainer_ = std::thread([state = state_, batcher = batcher_.get()] {
      batcher->Drain();
      std::lock_guard<std::mutex> lock(state->mu);
      state->drained = true;
      state->cv.notify_all();
    });
  }
  // Whether Drain has returned, waiting for it up to `timeout`.
  bool WaitDrained(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(state_->mu);
    return state_->cv.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                               [&] { return state_->drained; });
  }
  bool DrainWithin(absl::Duration timeout) {
    StartDrain();
    return WaitDrained(timeout);
  }

 private:
  struct DrainState {
    std::mutex mu;
    std::condition_variable cv;
    bool drained = false;
  };

  FakeBackend* const backend_;
  std::unique_ptr<Batcher<JobT>> batcher_;
  std::shared_ptr<DrainState> state_ = std::make_shared<DrainState>();
  std::thread drainer_;
};

// The items-or-delay rule alone (close_when_idle off), which most tests
// exercise; the idle rule has tests of its own.
BatcherOptions Options(int64_t max_items, absl::Duration delay,
                       bool close_when_idle = false) {
  BatcherOptions options;
  options.max_batch_items = max_items;
  options.max_batch_delay = delay;
  options.close_when_idle = close_when_idle;
  return options;
}

std::vector<uint64_t> Ids(std::initializer_list<uint64_t> ids) { return ids; }

class BatcherTest : public ::testing::Test {
 protected:
  Metrics metrics_;  // a registry without an exposer
  QueueBudget budget_{int64_t{1} << 40};
};

TEST_F(BatcherTest, ClosesWhenMaxBatchItemsIsReached) {
  FakeBackend backend(/*capacity=*/4);
  backend.SetAuto(true);
  BoundedBatcher<> batcher(Options(100, kForever), &budget_, &backend,
                           &metrics_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (uint64_t id = 1; id <= 4; ++id) {
    outcomes.push_back(std::make_shared<Outcome>());
    ASSERT_TRUE(batcher->Enqueue(MakeJob(id, 25, outcomes.back())).ok());
  }
  // 4 x 25 = 100 items: the batch closes without waiting for the delay.
  ASSERT_TRUE(backend.WaitForBatches(1));
  const std::vector<SeenBatch> seen = backend.seen();
  EXPECT_EQ(seen[0].ids, Ids({1, 2, 3, 4}));
  EXPECT_EQ(seen[0].items, 100);
  for (auto& o : outcomes) {
    ASSERT_TRUE(o->Wait());
    EXPECT_EQ(o->Code(), absl::StatusCode::kOk);
  }
  // One more job is below the limit and must wait (for the delay, here
  // forever).
  auto late = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(5, 10, late)).ok());
  absl::SleepFor(kQuietPeriod);
  EXPECT_EQ(backend.seen().size(), 1u);
  EXPECT_EQ(late->Calls(), 0);
  EXPECT_EQ(budget_.used(), 10);
}

// close_when_idle: with nothing of its kind executing, a job is launched at
// once, whatever the delay; while a batch executes, later jobs gather and
// leave together as soon as it completes (not after the delay).
TEST_F(BatcherTest, ClosesAtOnceWhenIdleAndGathersWhileBusy) {
  FakeBackend backend(/*capacity=*/4);
  BoundedBatcher<> batcher(Options(1 << 20, kForever, /*close_when_idle=*/true),
                           &budget_, &backend, &metrics_);
  auto first = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(1, 5, first)).ok());
  ASSERT_TRUE(backend.WaitForBatches(1));  // at once, not after forever
  EXPECT_EQ(backend.seen()[0].ids, Ids({1}));
  std::vector<std::shared_ptr<Outcome>> later;
  for (uint64_t id = 2; id <= 4; ++id) {
    later.push_back(std::make_shared<Outcome>());
    ASSERT_TRUE(batcher->Enqueue(MakeJob(id, 5, later.back())).ok());
  }
  // A slot is free, but a batch of this kind executes: they wait together.
  absl::SleepFor(kQuietPeriod);
  EXPECT_EQ(backend.seen().size(), 1u);
  ASSERT_TRUE(backend.CompleteOldest());
  ASSERT_TRUE(first->Wait());
  ASSERT_TRUE(backend.WaitForBatches(2));
  EXPECT_EQ(backend.seen()[1].ids, Ids({2, 3, 4}));
  EXPECT_EQ(backend.seen()[1].items, 15);
  ASSERT_TRUE(backend.CompleteOldest());
  for (auto& o : later) {
    ASSERT_TRUE(o->Wait());
    EXPECT_EQ(o->Code(), absl::StatusCode::kOk);
  }
}

// Issue 13: a batch that may close when its job arrives is handed to the
// backend by the thread that enqueued the job, not by the dispatcher (Run,
// recorded before Enqueue returns). A backend that runs small batches where
// it is called (RunHere) finishes the job before Enqueue returns; batches
// the dispatcher closes (here: on their delay) still go through Run.
TEST_F(BatcherTest, AnIdleBatcherHandsTheBatchOverOnTheEnqueuingThread) {
  {
    FakeBackend backend(/*capacity=*/4);
    backend.SetAuto(true);
    BoundedBatcher<> batcher(
        Options(1 << 20, kForever, /*close_when_idle=*/true), &budget_,
        &backend, &metrics_);
    auto outcome = std::make_shared<Outcome>();
    ASSERT_TRUE(batcher->Enqueue(MakeJob(1, 5, outcome)).ok());
    ASSERT_EQ(backend.run_threads().size(), 1u);
    EXPECT_EQ(backend.run_threads()[0], std::this_thread::get_id());
    ASSERT_TRUE(outcome->Wait());
  }
  FakeBackend backend(/*capacity=*/4);
  backend.set_here(true);
  BoundedBatcher<> batcher(Options(1 << 20, kForever, /*close_when_idle=*/true),
                           &budget_, &backend, &metrics_);
  auto outcome = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(1, 5, outcome)).ok());
  EXPECT_EQ(outcome->Calls(), 1);
  EXPECT_EQ(outcome->Code(), absl::StatusCode::kOk);
  ASSERT_EQ(backend.here_threads().size(), 1u);
  EXPECT_EQ(backend.here_threads()[0], std::this_thread::get_id());
  EXPECT_TRUE(backend.run_threads().empty());
  EXPECT_EQ(budget_.used(), 0);

  BoundedBatcher<> delayed(Options(1 << 20, absl::Milliseconds(20)), &budget_,
                           &backend, &metrics_);
  auto late = std::make_shared<Outcome>();
  ASSERT_TRUE(delayed->Enqueue(MakeJob(2, 5, late)).ok());
  ASSERT_TRUE(backend.WaitForBatches(2));
  ASSERT_EQ(backend.run_threads().size(), 1u);
  EXPECT_NE(backend.run_threads()[0], std::this_thread::get_id());
  EXPECT_EQ(backend.here_threads().size(), 1u);
  backend.SetAuto(true);
  ASSERT_TRUE(late->Wait());

  // --run_small_batches_inline=false: handed over with Run, still from the
  // enqueuing thread.
  BatcherOptions handoff = Options(1 << 20, kForever, /*close_when_idle=*/true);
  handoff.run_here = false;
  BoundedBatcher<> no_here(handoff, &budget_, &backend, &metrics_);
  auto handed = std::make_shared<Outcome>();
  ASSERT_TRUE(no_here->Enqueue(MakeJob(3, 5, handed)).ok());
  ASSERT_EQ(backend.run_threads().size(), 2u);
  EXPECT_EQ(backend.run_threads()[1], std::this_thread::get_id());
  EXPECT_EQ(backend.here_threads().size(), 1u);
  ASSERT_TRUE(handed->Wait());
}

// A batch closed on the enqueuing thread says whether that thread's call
// arrived alone on its connection (Job::lone_call; the CUDA backend's
// --gpu_inline=auto runs only such a batch there); one the dispatcher
// closes never does: no call's thread holds it.
TEST_F(BatcherTest, ABatchClosedOnACallsThreadCarriesWhetherItWasLone) {
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(1 << 20, kForever, /*close_when_idle=*/true),
                           &budget_, &backend, &metrics_);
  const auto lone = [](uint64_t id, bool is_lone,
                       std::shared_ptr<Outcome> outcome) {
    auto job = MakeJob(id, 5, std::move(outcome));
    job->lone_call = is_lone;
    return job;
  };
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (int i = 0; i < 5; ++i) outcomes.push_back(std::make_shared<Outcome>());
  // Idle: closes on this thread, lone.
  ASSERT_TRUE(batcher->Enqueue(lone(1, true, outcomes[0])).ok());
  ASSERT_TRUE(backend.WaitForBatches(1));
  // While it runs, a lone call and another queue; the dispatcher closes
  // them when it completes.
  ASSERT_TRUE(batcher->Enqueue(lone(2, true, outcomes[1])).ok());
  ASSERT_TRUE(batcher->Enqueue(lone(3, false, outcomes[2])).ok());
  ASSERT_TRUE(backend.CompleteOldest());
  ASSERT_TRUE(backend.WaitForBatches(2));
  ASSERT_TRUE(backend.CompleteOldest());
  ASSERT_TRUE(outcomes[2]->Wait());
  // Idle again: closes on this thread, not lone.
  ASSERT_TRUE(batcher->Enqueue(lone(4, false, outcomes[3])).ok());
  ASSERT_TRUE(backend.WaitForBatches(3));
  ASSERT_TRUE(backend.CompleteOldest());
  ASSERT_TRUE(outcomes[3]->Wait());
  // A job made without the count is not lone.
  ASSERT_TRUE(batcher->Enqueue(MakeJob(5, 5, outcomes[4])).ok());
  ASSERT_TRUE(backend.WaitForBatches(4));
  ASSERT_TRUE(backend.CompleteOldest());
  ASSERT_TRUE(outcomes[4]->Wait());

  const std::vector<SeenBatch> seen = backend.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].ids, Ids({1}));
  EXPECT_TRUE(seen[0].closed_on_lone_call);
  EXPECT_EQ(seen[1].ids, Ids({2, 3}));
  EXPECT_FALSE(seen[1].closed_on_lone_call);
  EXPECT_EQ(seen[2].ids, Ids({4}));
  EXPECT_FALSE(seen[2].closed_on_lone_call);
  EXPECT_EQ(seen[3].ids, Ids({5}));
  EXPECT_FALSE(seen[3].closed_on_lone_call);
}

// EagerBatches: with close_when_idle, batches close at once while fewer
// than that many execute (the CPU backend: one per thread), and only then
// gather.
TEST_F(BatcherTest, ClosesAtOnceWhileFewerThanEagerBatchesExecute) {
  FakeBackend backend(/*capacity=*/4);
  backend.set_eager(2);
  BoundedBatcher<> batcher(Options(1 << 20, kForever, /*close_when_idle=*/true),
                           &budget_, &backend, &metrics_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (uint64_t id = 1; id <= 4; ++id) {
    outcomes.push_back(std::make_shared<Outcome>());
    ASSERT_TRUE(batcher->Enqueue(MakeJob(id, 5, outcomes.back())).ok());
  }
  ASSERT_TRUE(backend.WaitForBatches(2));
  absl::SleepFor(kQuietPeriod);
  ASSERT_EQ(backend.seen().size(), 2u);
  EXPECT_EQ(backend.seen()[0].ids, Ids({1}));
  EXPECT_EQ(backend.seen()[1].ids, Ids({2}));
  // One completes: the two that waited leave together.
  ASSERT_TRUE(backend.CompleteOldest());
  ASSERT_TRUE(backend.WaitForBatches(3));
  EXPECT_EQ(backend.seen()[2].ids, Ids({3, 4}));
  backend.SetAuto(true);
  for (auto& o : outcomes) {
    ASSERT_TRUE(o->Wait());
    EXPECT_EQ(o->Code(), absl::StatusCode::kOk);
  }
  EXPECT_EQ(backend.max_in_flight(), 2);
}

// A completing batch frees its slot before its jobs' done calls run, so a
// slow done (a large answer being written) does not hold the next batch.
TEST_F(BatcherTest, TheNextBatchLaunchesWhileTheLastOnesDoneRuns) {
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(1 << 20, kForever, /*close_when_idle=*/true),
                           &budget_, &backend, &metrics_);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  auto first = std::make_shared<GammaJob>();
  first->seed = 1;
  first->items = 1;
  first->done = [&](absl::Status) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, absl::ToChronoNanoseconds(kPatience),
                [&] { return release; });
  };
  ASSERT_TRUE(batcher->Enqueue(first).ok());
  ASSERT_TRUE(backend.WaitForBatches(1));
  auto second = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(2, 1, second)).ok());
  // Completed on a thread of its own, whose done then blocks.
  std::thread completer([&] { backend.CompleteOldest(); });
  EXPECT_TRUE(backend.WaitForBatches(2));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  completer.join();
  backend.SetAuto(true);
  ASSERT_TRUE(second->Wait());
}

TEST_F(BatcherTest, ClosesWhenTheOldestJobHasWaitedMaxBatchDelay) {
  FakeBackend backend(/*capacity=*/1);
  backend.SetAuto(true);
  const absl::Duration delay = absl::Milliseconds(80);
  BoundedBatcher<> batcher(Options(1 << 20, delay), &budget_, &backend,
                           &metrics_);
  auto outcome = std::make_shared<Outcome>();
  const absl::Time start = absl::Now();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(1, 3, outcome)).ok());
  ASSERT_TRUE(outcome->Wait());
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(outcome->Code(), absl::StatusCode::kOk);
  // Not before the delay (nothing else could close it), and not much later.
  EXPECT_GE(waited, delay);
  EXPECT_LT(waited, delay + absl::Seconds(5));
  ASSERT_EQ(backend.seen().size(), 1u);
  EXPECT_EQ(backend.seen()[0].ids, Ids({1}));
}

TEST_F(BatcherTest, NeverExceedsMaxBatchItemsExceptForOneOversizedJob) {
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(100, absl::Milliseconds(5)), &budget_,
                           &backend, &metrics_);
  // A blocker occupies the only slot while the rest queues up, so that the
  // split below depends only on the sizes, not on timing.
  auto blocker = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(100, 1, blocker)).ok());
  ASSERT_TRUE(backend.WaitForBatches(1));
  const std::vector<std::pair<uint64_t, int64_t>> jobs = {
      {1, 30}, {2, 30}, {3, 30}, {4, 30}, {5, 250}, {6, 10}, {7, 60}, {8, 50}};
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (const auto& [id, items] : jobs) {
    outcomes.push_back(std::make_shared<Outcome>());
    ASSERT_TRUE(batcher->Enqueue(MakeJob(id, items, outcomes.back())).ok());
  }
  // In FIFO order, each batch as large as fits; 250 alone.
  const std::vector<std::vector<uint64_t>> expected = {{100}, {1, 2, 3}, {4},
                                                       {5},   {6, 7},    {8}};
  for (size_t b = 0; b < expected.size(); ++b) {
    ASSERT_TRUE(backend.WaitForBatches(b + 1)) << "batch " << b;
    const SeenBatch seen = backend.seen()[b];
    EXPECT_EQ(seen.ids, expected[b]) << "batch " << b;
    if (seen.ids.size() > 1) {
      EXPECT_LE(seen.items, 100) << "batch " << b;
    }
    ASSERT_TRUE(backend.CompleteOldest());
  }
  for (auto& o : outcomes) {
    ASSERT_TRUE(o->Wait());
    EXPECT_EQ(o->Calls(), 1);
    EXPECT_EQ(o->Code(), absl::StatusCode::kOk);
  }
  EXPECT_EQ(backend.max_in_flight(), 1);
  EXPECT_EQ(budget_.used(), 0);
}

TEST_F(BatcherTest, HoldsBatchesBackWhileTheBackendIsAtCapacity) {
  FakeBackend backend(/*capacity=*/2);
  BoundedBatcher<> batcher(Options(1 << 20, absl::Milliseconds(5)), &budget_,
                           &backend, &metrics_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  auto enqueue = [&](uint64_t id) {
    outcomes.push_back(std::make_shared<Outcome>());
    return batcher->Enqueue(MakeJob(id, 1, outcomes.back())).ok();
  };
  ASSERT_TRUE(enqueue(1));
  ASSERT_TRUE(backend.WaitForBatches(1));
  ASSERT_TRUE(enqueue(2));
  ASSERT_TRUE(backend.WaitForBatches(2));
  // Both slots busy: new jobs wait although their delay has passed...
  for (uint64_t id = 3; id <= 6; ++id) ASSERT_TRUE(enqueue(id));
  absl::SleepFor(kQuietPeriod);
  EXPECT_EQ(backend.seen().size(), 2u);
  // ...and go out as one batch once a slot frees.
  ASSERT_TRUE(backend.CompleteOldest());
  ASSERT_TRUE(backend.WaitForBatches(3));
  EXPECT_EQ(backend.seen()[2].ids, Ids({3, 4, 5, 6}));
  EXPECT_EQ(backend.max_in_flight(), 2);
  backend.SetAuto(true);
  for (auto& o : outcomes) ASSERT_TRUE(o->Wait());
}

TEST_F(BatcherTest, DropsCancelledAndExpiredJobsBeforeExecution) {
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(1 << 20, absl::Milliseconds(1)), &budget_,
                           &backend, &metrics_);
  auto blocker = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(100, 1, blocker)).ok());
  ASSERT_TRUE(backend.WaitForBatches(1));

  auto live = std::make_shared<Outcome>();
  auto cancelled = std::make_shared<Outcome>();
  auto expired = std::make_shared<Outcome>();
  auto client_left = std::make_shared<std::atomic<bool>>(false);
  auto cancelled_job = MakeJob(2, 7, cancelled);
  cancelled_job->cancelled = [client_left] { return client_left->load(); };
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(20);
  auto expired_job = MakeJob(3, 5, expired);
  expired_job->deadline = deadline;
  // gRPC also marks a call whose deadline has passed as cancelled: that is
  // still an expiry.
  auto expired_and_marked = std::make_shared<Outcome>();
  auto marked_job = MakeJob(4, 6, expired_and_marked);
  marked_job->deadline = deadline;
  marked_job->cancelled = [deadline] { return Clock::now() > deadline; };
  ASSERT_TRUE(batcher->Enqueue(cancelled_job).ok());
  ASSERT_TRUE(batcher->Enqueue(MakeJob(1, 4, live)).ok());
  ASSERT_TRUE(batcher->Enqueue(expired_job).ok());
  ASSERT_TRUE(batcher->Enqueue(marked_job).ok());
  // The client goes away and the deadline passes while the jobs are queued.
  client_left->store(true);
  while (Clock::now() <= deadline) {
    std::this_thread::sleep_until(deadline + std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(backend.CompleteOldest());

  ASSERT_TRUE(backend.WaitForBatches(2));
  const SeenBatch second = backend.seen()[1];
  EXPECT_EQ(second.ids, Ids({1}));
  EXPECT_EQ(second.items, 4);
  // Dropped jobs are told before the batch reaches the backend.
  EXPECT_EQ(cancelled->Calls(), 1);
  EXPECT_EQ(cancelled->Code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(expired->Calls(), 1);
  EXPECT_EQ(expired->Code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(expired_and_marked->Calls(), 1);
  EXPECT_EQ(expired_and_marked->Code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(live->Calls(), 0);
  ASSERT_TRUE(backend.CompleteOldest());
  ASSERT_TRUE(live->Wait());
  EXPECT_EQ(live->Code(), absl::StatusCode::kOk);
  EXPECT_EQ(backend.seen().size(), 2u);
  EXPECT_EQ(budget_.used(), 0);
}

TEST_F(BatcherTest, FullQueueRefusesAtOnceButAdmittedStreamChunksBypass) {
  QueueBudget budget(100);
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(1 << 20, absl::Milliseconds(1)), &budget,
                           &backend, &metrics_);
  // Jobs leave the budget when they leave the queue: the blocker in flight
  // holds none of it.
  auto blocker = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(100, 90, blocker)).ok());
  ASSERT_TRUE(backend.WaitForBatches(1));
  EXPECT_EQ(budget.used(), 0);

  auto first = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(1, 60, first)).ok());
  EXPECT_EQ(budget.used(), 60);
  auto refused = std::make_shared<Outcome>();
  const absl::Status status = batcher->Enqueue(MakeJob(2, 50, refused));
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_NE(status.message().find("100"), absl::string_view::npos) << status;
  EXPECT_EQ(budget.used(), 60);
  // A later chunk of an admitted stream is a promise kept: it goes over.
  auto chunk = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher
                  ->Enqueue(MakeJob(3, 50, chunk),
                            /*admitted_stream_chunk=*/true)
                  .ok());
  EXPECT_EQ(budget.used(), 110);

  backend.SetAuto(true);
  ASSERT_TRUE(first->Wait());
  ASSERT_TRUE(chunk->Wait());
  EXPECT_EQ(first->Code(), absl::StatusCode::kOk);
  EXPECT_EQ(chunk->Code(), absl::StatusCode::kOk);
  // A refused job is not the batcher's: its done is never called.
  EXPECT_EQ(refused->Calls(), 0);
  EXPECT_EQ(budget.used(), 0);
  // Once the queue has drained, the same job fits.
  auto retried = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(2, 50, retried)).ok());
  ASSERT_TRUE(retried->Wait());
  EXPECT_EQ(retried->Code(), absl::StatusCode::kOk);
}

// A job larger than the whole queue budget can never be queued: OUT_OF_RANGE
// (do not retry), not RESOURCE_EXHAUSTED (retry later); nothing is taken.
TEST_F(BatcherTest, AJobLargerThanTheQueueCapacityIsOutOfRange) {
  QueueBudget budget(100);
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(1 << 20, absl::Milliseconds(1)), &budget,
                           &backend, &metrics_);
  auto huge = std::make_shared<Outcome>();
  const absl::Status status = batcher->Enqueue(MakeJob(1, 101, huge));
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
  EXPECT_NE(status.message().find("max_queued_items"), absl::string_view::npos)
      << status;
  EXPECT_EQ(budget.used(), 0);
  auto fits = std::make_shared<Outcome>();
  EXPECT_TRUE(batcher->Enqueue(MakeJob(2, 100, fits)).ok());
}

TEST(QueueBudgetTest, AcquiresWhatFitsAndForcesOnlyWhenAsked) {
  QueueBudget budget(10);
  EXPECT_TRUE(budget.Acquire("a", 10, false).ok());
  EXPECT_EQ(budget.Acquire("a", 1, false).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(budget.Acquire("a", 5, true).ok());
  EXPECT_EQ(budget.used(), 15);
  budget.Release("a", 15);
  EXPECT_EQ(budget.used(), 0);
  EXPECT_EQ(budget.held("a"), 0);
  EXPECT_FALSE(budget.Acquire("a", 11, false).ok());
  EXPECT_EQ(budget.used(), 0);
}

// Issue 9 item 5: one client must not keep the whole queue while another is
// refused. Client "a" fills the budget alone (allowed: nobody else wants
// it); "b" is refused asking for 30; as a's work drains, a may not take the
// room b needs (a holds more than its fair share, half: two clients), and
// b's retry gets it.
TEST(QueueBudgetTest, OneClientCannotKeepTheQueueWhileAnotherIsRefused) {
  QueueBudget budget(100, absl::Hours(1));  // b waits for the whole test
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(budget.Acquire("a", 10, false).ok());
  const absl::Status full = budget.Acquire("b", 30, false);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("max_queued_items"), absl::string_view::npos)
      << full;
  // Four of a's jobs leave the queue (their batch ran): 40 free.
  budget.Release("a", 40);
  // a asks again first: it holds 60, over its share of 50, and 20 more
  // would leave b's 30 no room.
  const absl::Status share = budget.Acquire("a", 20, false);
  EXPECT_EQ(share.code(), absl::StatusCode::kResourceExhausted) << share;
  EXPECT_NE(share.message().find("fair share of 50"), absl::string_view::npos)
      << share;
  // What leaves b's room is still a's to take (the queue is not kept idle).
  EXPECT_TRUE(budget.Acquire("a", 10, false).ok());
  // b's retry fits.
  EXPECT_TRUE(budget.Acquire("b", 30, false).ok());
  EXPECT_EQ(budget.held("a"), 70);
  EXPECT_EQ(budget.held("b"), 30);
  EXPECT_EQ(budget.used(), 100);
}

// A client refused for asking more than a fair share does not make others
// yield (it gets what is left over), and a refusal is forgotten after the
// waiting window.
TEST(QueueBudgetTest, OnlyFairRequestsMakeOthersYield) {
  QueueBudget budget(100, absl::Hours(1));
  ASSERT_TRUE(budget.Acquire("a", 90, false).ok());
  // b asks for 60, more than its share of 50: refused, but not waiting.
  EXPECT_FALSE(budget.Acquire("b", 60, false).ok());
  budget.Release("a", 40);
  EXPECT_TRUE(budget.Acquire("a", 40, false).ok());  // a alone again

  QueueBudget short_window(100, absl::ZeroDuration());
  ASSERT_TRUE(short_window.Acquire("a", 100, false).ok());
  EXPECT_FALSE(short_window.Acquire("b", 10, false).ok());
  short_window.Release("a", 50);
  // The window has passed: b is no longer waiting, a may refill.
  absl::SleepFor(absl::Milliseconds(2));
  EXPECT_TRUE(short_window.Acquire("a", 50, false).ok());
}

// The same through a Batcher: jobs carry their client, and the budget is
// released per client as jobs leave the queue for a batch.
TEST_F(BatcherTest, AdmissionIsFairBetweenClients) {
  QueueBudget budget(100, absl::Hours(1));
  FakeBackend backend(/*capacity=*/1);
  // Batches of 50 items; one executes at a time, completed by the test.
  BoundedBatcher<> batcher(Options(50, kForever), &budget, &backend, &metrics_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  auto job_of = [&](const std::string& client, uint64_t id, int64_t items) {
    outcomes.push_back(std::make_shared<Outcome>());
    auto job = MakeJob(id, items, outcomes.back());
    job->client = client;
    return job;
  };
  // a1 + a2 close the first batch, which executes; a3..a6 fill the queue.
  for (uint64_t id = 1; id <= 6; ++id) {
    ASSERT_TRUE(batcher->Enqueue(job_of("a", id, 25)).ok()) << id;
    if (id == 2) {
      ASSERT_TRUE(backend.WaitForBatches(1));
    }
  }
  EXPECT_EQ(budget.held("a"), 100);
  const absl::Status refused = batcher->Enqueue(job_of("b", 10, 25));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  // The first batch completes; a3 + a4 leave the queue for the next one.
  ASSERT_TRUE(backend.CompleteOldest());
  ASSERT_TRUE(backend.WaitForBatches(2));
  EXPECT_EQ(budget.held("a"), 50);
  // a asks first, but b waits for 25: a holds its share (50 of 100)
  // already, and 30 more would leave b no room.
  const absl::Status share = batcher->Enqueue(job_of("a", 7, 30));
  EXPECT_EQ(share.code(), absl::StatusCode::kResourceExhausted) << share;
  EXPECT_NE(share.message().find("fair share"), absl::string_view::npos)
      << share;
  EXPECT_TRUE(batcher->Enqueue(job_of("b", 11, 25)).ok());
  // Everything admitted runs (auto mode completes the pending batch too);
  // the per-client accounting ends clean.
  backend.SetAuto(true);
  ASSERT_TRUE(batcher.DrainWithin(kPatience));
  EXPECT_EQ(budget.used(), 0);
  EXPECT_EQ(budget.held("a"), 0);
  EXPECT_EQ(budget.held("b"), 0);
}

TEST_F(BatcherTest, DrainRunsEverythingQueuedThenRefusesWithUnavailable) {
  FakeBackend backend(/*capacity=*/2);
  backend.SetAuto(true);
  // Neither limit would ever close these batches: only the drain does.
  BoundedBatcher<> batcher(Options(1 << 20, kForever), &budget_, &backend,
                           &metrics_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (uint64_t id = 1; id <= 5; ++id) {
    outcomes.push_back(std::make_shared<Outcome>());
    ASSERT_TRUE(batcher->Enqueue(MakeJob(id, 10, outcomes.back())).ok());
  }
  ASSERT_TRUE(batcher.DrainWithin(kPatience));
  // Drain returns only after every job is done: no waiting here.
  for (auto& o : outcomes) {
    EXPECT_EQ(o->Calls(), 1);
    EXPECT_EQ(o->Code(), absl::StatusCode::kOk);
  }
  EXPECT_EQ(backend.seen().size(), 1u);
  EXPECT_EQ(budget_.used(), 0);
}

TEST_F(BatcherTest, AfterDrainEnqueueIsUnavailableAndTakesNoBudget) {
  FakeBackend backend(/*capacity=*/1);
  backend.SetAuto(true);
  Batcher<GammaJob> batcher(Kind::kGamma, Options(1 << 20, kForever), &budget_,
                            &backend, &metrics_);
  batcher.Drain();
  batcher.Drain();  // idempotent
  auto outcome = std::make_shared<Outcome>();
  const absl::Status status = batcher.Enqueue(MakeJob(1, 10, outcome));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_EQ(outcome->Calls(), 0);
  EXPECT_EQ(budget_.used(), 0);
  EXPECT_TRUE(backend.seen().empty());
}

TEST_F(BatcherTest, DrainWaitsForBatchesInFlight) {
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(1 << 20, absl::Milliseconds(1)), &budget_,
                           &backend, &metrics_);
  auto outcome = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(1, 10, outcome)).ok());
  ASSERT_TRUE(backend.WaitForBatches(1));
  batcher.StartDrain();
  EXPECT_FALSE(batcher.WaitDrained(kQuietPeriod))
      << "Drain returned with a batch in flight";
  ASSERT_TRUE(backend.CompleteOldest());
  EXPECT_TRUE(batcher.WaitDrained(kPatience));
  EXPECT_EQ(outcome->Calls(), 1);
}

// A queue that holds nothing but jobs to drop: the drain must still end
// (nothing launches, so no batch completion wakes it).
TEST_F(BatcherTest, DrainEndsWhenEveryQueuedJobIsDropped) {
  FakeBackend backend(/*capacity=*/1);
  backend.SetAuto(true);
  BoundedBatcher<> batcher(Options(1 << 20, kForever), &budget_, &backend,
                           &metrics_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (uint64_t id = 1; id <= 3; ++id) {
    outcomes.push_back(std::make_shared<Outcome>());
    auto job = MakeJob(id, 10, outcomes.back());
    job->cancelled = [] { return true; };
    ASSERT_TRUE(batcher->Enqueue(job).ok());
  }
  ASSERT_TRUE(batcher.DrainWithin(kPatience));
  for (auto& o : outcomes) {
    EXPECT_EQ(o->Calls(), 1);
    EXPECT_EQ(o->Code(), absl::StatusCode::kCancelled);
  }
  EXPECT_TRUE(backend.seen().empty());
}

// Drain must not return while a dropped job's done is still running: the
// caller may destroy what that done touches (the reactor, the response).
TEST_F(BatcherTest, DrainWaitsForTheDoneOfDroppedJobs) {
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(1 << 20, absl::Milliseconds(1)), &budget_,
                           &backend, &metrics_);
  auto blocker = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob(100, 1, blocker)).ok());
  ASSERT_TRUE(backend.WaitForBatches(1));

  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool release = false;
  auto job = std::make_shared<GammaJob>();
  job->seed = 1;
  job->items = 1;
  job->cancelled = [] { return true; };
  std::atomic<int> calls{0};
  job->done = [&](absl::Status) {
    std::unique_lock<std::mutex> lock(mu);
    ++calls;
    entered = true;
    cv.notify_all();
    cv.wait_for(lock, absl::ToChronoNanoseconds(kPatience),
                [&] { return release; });
  };
  ASSERT_TRUE(batcher->Enqueue(job).ok());

  batcher.StartDrain();
  // The blocker completes, the dispatcher drops the job and calls its done,
  // which blocks.
  ASSERT_TRUE(backend.CompleteOldest());
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, absl::ToChronoNanoseconds(kPatience),
                            [&] { return entered; }));
  }
  EXPECT_FALSE(batcher.WaitDrained(kQuietPeriod))
      << "Drain returned before a done returned";
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(batcher.WaitDrained(kPatience));
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(BatcherTest, BatchFailurePropagatesToEveryJob) {
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(3, kForever), &budget_, &backend, &metrics_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (uint64_t id = 1; id <= 3; ++id) {
    outcomes.push_back(std::make_shared<Outcome>());
    ASSERT_TRUE(batcher->Enqueue(MakeJob(id, 1, outcomes.back())).ok());
  }
  ASSERT_TRUE(backend.WaitForBatches(1));
  ASSERT_TRUE(
      backend.CompleteOldest(absl::ResourceExhaustedError("device memory")));
  for (auto& o : outcomes) {
    ASSERT_TRUE(o->Wait());
    EXPECT_EQ(o->Calls(), 1);
    EXPECT_EQ(o->Code(), absl::StatusCode::kResourceExhausted);
  }
}

TEST_F(BatcherTest, PerJobFailuresReachOnlyTheirJob) {
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(3, kForever), &budget_, &backend, &metrics_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (uint64_t id = 1; id <= 3; ++id) {
    outcomes.push_back(std::make_shared<Outcome>());
    ASSERT_TRUE(batcher->Enqueue(MakeJob(id, 1, outcomes.back())).ok());
  }
  ASSERT_TRUE(backend.WaitForBatches(1));
  ASSERT_TRUE(backend.CompleteOldest(absl::OkStatus(), [&](size_t batch) {
    backend.jobs_of(batch)[1]->status =
        absl::InvalidArgumentError("overflows float32");
  }));
  for (auto& o : outcomes) ASSERT_TRUE(o->Wait());
  EXPECT_EQ(outcomes[0]->Code(), absl::StatusCode::kOk);
  EXPECT_EQ(outcomes[1]->Code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(outcomes[2]->Code(), absl::StatusCode::kOk);
}

// Many threads, random sizes, some jobs cancelled or expiring, a slow
// backend and a small budget: every accepted job's done runs exactly once,
// every refused job's never, and nothing is left queued or counted.
TEST_F(BatcherTest, EveryAcceptedJobIsDoneExactlyOnceUnderConcurrency) {
  QueueBudget budget(20000);
  FakeBackend backend(/*capacity=*/2);
  backend.SetAuto(true, absl::OkStatus(), absl::Microseconds(200));
  BoundedBatcher<> batcher(Options(500, absl::Microseconds(300)), &budget,
                           &backend, &metrics_);
  constexpr int kThreads = 4;
  constexpr int kJobsPerThread = 400;
  std::vector<std::shared_ptr<Outcome>> outcomes(kThreads * kJobsPerThread);
  std::vector<char> accepted(outcomes.size(), 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kJobsPerThread; ++i) {
        const size_t k = static_cast<size_t>(t * kJobsPerThread + i);
        outcomes[k] = std::make_shared<Outcome>();
        auto job = MakeJob(k, std::uniform_int_distribution<int>(1, 300)(rng),
                           outcomes[k]);
        switch (rng() % 8) {
          case 0:
            job->cancelled = [] { return true; };
            break;
          case 1:
            job->deadline = Clock::now();
            break;
          default:
            break;
        }
        accepted[k] = batcher->Enqueue(job).ok();
        // Let the dispatcher in now and then, so that jobs come and go.
        if (i % 8 == 0) std::this_thread::yield();
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(batcher.DrainWithin(kPatience));
  int accepted_count = 0;
  for (size_t k = 0; k < outcomes.size(); ++k) {
    EXPECT_EQ(outcomes[k]->Calls(), accepted[k] ? 1 : 0) << "job " << k;
    accepted_count += accepted[k];
  }
  // Both paths were taken (the budget holds about 130 average jobs).
  EXPECT_GT(accepted_count, 0);
  EXPECT_LT(accepted_count, static_cast<int>(outcomes.size()));
  EXPECT_EQ(budget.used(), 0);
  for (const SeenBatch& b : backend.seen()) {
    if (b.ids.size() > 1) {
      EXPECT_LE(b.items, 500);
    }
  }
  EXPECT_LE(backend.max_in_flight(), 2);
}

// The series of `text` that starts with `series` exactly, or -1.
double Sample(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + key.size(), nullptr);
}

TEST_F(BatcherTest, RecordsBatchAndQueueMetrics) {
  FakeBackend backend(/*capacity=*/1);
  BoundedBatcher<> batcher(Options(3, kForever), &budget_, &backend, &metrics_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (uint64_t id = 1; id <= 2; ++id) {
    outcomes.push_back(std::make_shared<Outcome>());
    ASSERT_TRUE(batcher->Enqueue(MakeJob(id, 1, outcomes.back())).ok());
  }
  const std::string queued = "\n" + metrics_.Scrape();
  EXPECT_EQ(Sample(queued, "sampler_queue_depth{method=\"SampleGamma\"}"), 2);
  outcomes.push_back(std::make_shared<Outcome>());
  ASSERT_TRUE(batcher->Enqueue(MakeJob(3, 1, outcomes.back())).ok());
  ASSERT_TRUE(backend.WaitForBatches(1));
  ASSERT_TRUE(backend.CompleteOldest());
  for (auto& o : outcomes) ASSERT_TRUE(o->Wait());
  const std::string text = "\n" + metrics_.Scrape();
  EXPECT_EQ(Sample(text, "sampler_queue_depth{method=\"SampleGamma\"}"), 0);
  EXPECT_EQ(Sample(text, "sampler_batch_requests_sum{method=\"SampleGamma\"}"),
            3);
  EXPECT_EQ(
      Sample(text, "sampler_batch_requests_count{method=\"SampleGamma\"}"), 1);
  EXPECT_EQ(Sample(text, "sampler_batch_items_sum{method=\"SampleGamma\"}"), 3);
  EXPECT_EQ(Sample(text, "sampler_items_total{method=\"SampleGamma\"}"), 3);
  EXPECT_EQ(
      Sample(text, "sampler_queue_wait_seconds_count{method=\"SampleGamma\"}"),
      3);
  EXPECT_EQ(Sample(text,
                   "sampler_device_seconds_count{device=\"fake\",method="
                   "\"SampleGamma\"}"),
            1);
}

// Each kind's batcher hands its batches to that kind's Run overload.
template <typename JobT>
class BatcherKindTest : public BatcherTest {};

template <typename JobT>
constexpr Kind KindOf();
template <>
constexpr Kind KindOf<EnumerateJob>() {
  return Kind::kEnumerate;
}
template <>
constexpr Kind KindOf<CategoricalJob>() {
  return Kind::kCategorical;
}
template <>
constexpr Kind KindOf<GammaJob>() {
  return Kind::kGamma;
}
template <>
constexpr Kind KindOf<DirichletJob>() {
  return Kind::kDirichlet;
}
template <>
constexpr Kind KindOf<BoardsJob>() {
  return Kind::kBoards;
}

using JobTypes = ::testing::Types<EnumerateJob, CategoricalJob, GammaJob,
                                  DirichletJob, BoardsJob>;
TYPED_TEST_SUITE(BatcherKindTest, JobTypes);

TYPED_TEST(BatcherKindTest, RunsOnItsKindsOverload) {
  FakeBackend backend(/*capacity=*/1);
  backend.SetAuto(true);
  constexpr Kind kind = KindOf<TypeParam>();
  BoundedBatcher<TypeParam> batcher(Options(2, kForever), &this->budget_,
                                    &backend, &this->metrics_, kind);
  auto a = std::make_shared<Outcome>();
  auto b = std::make_shared<Outcome>();
  ASSERT_TRUE(batcher->Enqueue(MakeJob<TypeParam>(1, 1, a)).ok());
  ASSERT_TRUE(batcher->Enqueue(MakeJob<TypeParam>(2, 1, b)).ok());
  ASSERT_TRUE(a->Wait());
  ASSERT_TRUE(b->Wait());
  ASSERT_EQ(backend.seen().size(), 1u);
  EXPECT_EQ(backend.seen()[0].kind, kind);
  const std::string text = "\n" + this->metrics_.Scrape();
  EXPECT_EQ(Sample(text, std::string("sampler_batch_requests_sum{method=\"") +
                             MethodName(kind) + "\"}"),
            2);
}

}  // namespace
}  // namespace sampler::server
