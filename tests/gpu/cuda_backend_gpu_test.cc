// The CUDA backend's RunHere (issue 13): a small batch runs on the calling
// thread, done included, with the bits a worker gives the same batch (and
// the CPU twin's); a batch over --gpu_inline_below_items, any batch when it
// is 0, and one submitted from a here-run's done are declined and left to
// the caller; with --gpu_inline=auto only a batch closed by a call alone
// on its connection runs here (never: none); and callers running batches
// here while others go to the workers never share a stream (every answer
// stays right).
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sampler/kernels/gamma.h"
#include "server/backend.h"
#include "server/cuda_backend.h"
#include "server/jobs.h"

namespace sampler::server {
namespace {

// A grouped float32 gamma job of `count` samples and its output.
struct GammaCase {
  std::shared_ptr<GammaJob> job;
  std::shared_ptr<std::vector<float>> out;
};

GammaCase Gamma(int64_t count, uint64_t seed) {
  GammaCase c;
  c.out = std::make_shared<std::vector<float>>(count, -1.0f);
  GammaWork<float> work;
  work.groups = {{1.5f, 2.0f, count / 2}, {0.3f, 1.0f, count - count / 2}};
  work.out = absl::MakeSpan(*c.out);
  c.job = std::make_shared<GammaJob>();
  c.job->items = count;
  c.job->seed = seed;
  c.job->work = std::move(work);
  return c;
}

// What the CPU twin gives the job (the randomness contract: same bits).
std::vector<float> CpuBits(const GammaJob& job) {
  const auto& work = std::get<GammaWork<float>>(job.work);
  std::vector<float> expected(work.out.size());
  EXPECT_TRUE(kernels::SampleGammaGroupedCpu<float>(work.groups, job.log_output,
                                                    job.seed, job.first_sample,
                                                    absl::MakeSpan(expected))
                  .ok());
  return expected;
}

AnyBatch BatchOf(const std::vector<GammaCase>& cases) {
  Batch<GammaJob> batch;
  for (const GammaCase& c : cases) {
    batch.jobs.push_back(c.job);
    batch.items += c.job->items;
  }
  return AnyBatch(std::move(batch));
}

std::unique_ptr<CudaBackend> MakeBackend(int64_t inline_below_items,
                                         int streams = 2,
                                         GpuInline mode = GpuInline::kAlways) {
  CudaBackendOptions options;
  options.devices = {0};
  options.streams_per_device = streams;
  options.inline_below_items = inline_below_items;
  options.inline_mode = mode;
  absl::StatusOr<std::unique_ptr<CudaBackend>> backend =
      CudaBackend::Create(std::move(options));
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *std::move(backend) : nullptr;
}

// Waits for one done call and keeps its result.
class DoneWaiter {
 public:
  BatchDone Callback() {
    return [this](BatchResult result) {
      std::lock_guard<std::mutex> lock(mu_);
      result_ = std::move(result);
      done_ = true;
      cv_.notify_all();
    };
  }
  BatchResult Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return result_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  BatchResult result_;
};

// RunHere declines the batch of `cases`, leaving batch and done to the
// caller, and a worker then runs it.
void ExpectDeclinedAndRunByAWorker(CudaBackend& backend,
                                   const std::vector<GammaCase>& cases) {
  AnyBatch batch = BatchOf(cases);
  DoneWaiter waiter;
  BatchDone done = waiter.Callback();
  EXPECT_FALSE(backend.RunHere(batch, done));
  ASSERT_TRUE(done);
  ASSERT_EQ(std::get<Batch<GammaJob>>(batch).jobs.size(), cases.size());
  backend.Run(std::move(batch), std::move(done));
  EXPECT_TRUE(waiter.Wait().status.ok());
}

TEST(CudaBackendRunHereTest, RunsOnTheCallingThreadWithTheWorkersBits) {
  std::unique_ptr<CudaBackend> backend = MakeBackend(16384);
  ASSERT_NE(backend, nullptr);
  const std::vector<GammaCase> here = {Gamma(256, 1), Gamma(1000, 2)};
  AnyBatch batch = BatchOf(here);
  int calls = 0;
  std::thread::id thread;
  BatchDone done = [&](BatchResult result) {
    EXPECT_TRUE(result.status.ok()) << result.status;
    EXPECT_EQ(result.device, "0");
    EXPECT_GE(result.device_seconds, 0);
    ++calls;
    thread = std::this_thread::get_id();
  };
  ASSERT_TRUE(backend->RunHere(batch, done));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(thread, std::this_thread::get_id());

  // The same jobs through a worker.
  const std::vector<GammaCase> worker = {Gamma(256, 1), Gamma(1000, 2)};
  DoneWaiter waiter;
  backend->Run(BatchOf(worker), waiter.Callback());
  const BatchResult result = waiter.Wait();
  ASSERT_TRUE(result.status.ok()) << result.status;
  for (size_t i = 0; i < here.size(); ++i) {
    EXPECT_TRUE(here[i].job->status.ok()) << here[i].job->status;
    EXPECT_EQ(*here[i].out, *worker[i].out) << "job " << i;
    EXPECT_EQ(*here[i].out, CpuBits(*here[i].job)) << "job " << i;
  }
}

TEST(CudaBackendRunHereTest, DeclinesLargeBatchesWhenOffAndWhenNested) {
  std::unique_ptr<CudaBackend> backend = MakeBackend(1000);
  ASSERT_NE(backend, nullptr);
  // The jobs' outputs live in their cases: kept until the end.
  const std::vector<GammaCase> large_case = {Gamma(1000, 3)};
  const std::vector<GammaCase> small_case = {Gamma(100, 4)};
  const std::vector<GammaCase> next_case = {Gamma(10, 5)};
  const std::vector<GammaCase> tiny_case = {Gamma(2, 6)};
  // At the threshold: declined, batch and done left to the caller.
  ExpectDeclinedAndRunByAWorker(*backend, large_case);

  // A batch submitted from a here-run's done goes to a worker.
  bool nested_declined = false;
  AnyBatch small = BatchOf(small_case);
  BatchDone done = [&](BatchResult result) {
    EXPECT_TRUE(result.status.ok()) << result.status;
    AnyBatch next = BatchOf(next_case);
    BatchDone next_done = [](BatchResult) {};
    nested_declined = !backend->RunHere(next, next_done);
  };
  ASSERT_TRUE(backend->RunHere(small, done));
  EXPECT_TRUE(nested_declined);
  EXPECT_EQ(*large_case[0].out, CpuBits(*large_case[0].job));
  EXPECT_EQ(*small_case[0].out, CpuBits(*small_case[0].job));

  // Off (0): every batch declined.
  std::unique_ptr<CudaBackend> off = MakeBackend(0);
  ASSERT_NE(off, nullptr);
  AnyBatch tiny = BatchOf(tiny_case);
  BatchDone tiny_done = [](BatchResult) { ADD_FAILURE() << "ran"; };
  EXPECT_FALSE(off->RunHere(tiny, tiny_done));
  ASSERT_TRUE(tiny_done);
}

// --gpu_inline=auto: only a batch closed by a call alone on its connection
// (Batch::closed_on_lone_call) runs here; never: none.
TEST(CudaBackendRunHereTest, AutoRunsHereOnlyBatchesClosedByALoneCall) {
  std::unique_ptr<CudaBackend> backend =
      MakeBackend(16384, /*streams=*/2, GpuInline::kAuto);
  ASSERT_NE(backend, nullptr);
  const std::vector<GammaCase> crowded_case = {Gamma(256, 7)};
  const std::vector<GammaCase> lone_case = {Gamma(256, 8)};
  // Not closed by a lone call (the default): to a worker.
  ExpectDeclinedAndRunByAWorker(*backend, crowded_case);

  AnyBatch lone = BatchOf(lone_case);
  std::get<Batch<GammaJob>>(lone).closed_on_lone_call = true;
  int calls = 0;
  BatchDone lone_done = [&calls](BatchResult result) {
    EXPECT_TRUE(result.status.ok()) << result.status;
    ++calls;
  };
  ASSERT_TRUE(backend->RunHere(lone, lone_done));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(*crowded_case[0].out, CpuBits(*crowded_case[0].job));
  EXPECT_EQ(*lone_case[0].out, CpuBits(*lone_case[0].job));

  std::unique_ptr<CudaBackend> never =
      MakeBackend(16384, /*streams=*/2, GpuInline::kNever);
  ASSERT_NE(never, nullptr);
  const std::vector<GammaCase> never_case = {Gamma(256, 9)};
  AnyBatch declined = BatchOf(never_case);
  std::get<Batch<GammaJob>>(declined).closed_on_lone_call = true;
  BatchDone declined_done = [](BatchResult) { ADD_FAILURE() << "ran"; };
  EXPECT_FALSE(never->RunHere(declined, declined_done));
  ASSERT_TRUE(declined_done);
}

TEST(CudaBackendRunHereTest, CallersAndWorkersNeverShareAStream) {
  constexpr int kCallers = 6;
  constexpr int kPerCaller = 40;
  std::unique_ptr<CudaBackend> backend = MakeBackend(16384, /*streams=*/2);
  ASSERT_NE(backend, nullptr);
  std::atomic<int> ran_here{0};
  std::vector<std::vector<GammaCase>> cases(kCallers);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < kPerCaller; ++i) {
        const uint64_t seed = 100 + c * kPerCaller + i;
        GammaCase one = Gamma(64 + 97 * ((c + i) % 9), seed);
        cases[c].push_back(one);
        AnyBatch batch = BatchOf({one});
        DoneWaiter waiter;
        BatchDone done = waiter.Callback();
        if (backend->RunHere(batch, done)) {
          ++ran_here;
        } else {
          backend->Run(std::move(batch), std::move(done));
        }
        EXPECT_TRUE(waiter.Wait().status.ok());
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_GT(ran_here.load(), 0);
  for (const auto& per_caller : cases) {
    for (const GammaCase& one : per_caller) {
      ASSERT_TRUE(one.job->status.ok()) << one.job->status;
      EXPECT_EQ(*one.out, CpuBits(*one.job)) << "seed " << one.job->seed;
    }
  }
}

}  // namespace
}  // namespace sampler::server
