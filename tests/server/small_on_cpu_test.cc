// --cpu_below_items' router (server/small_on_cpu.h) between two recording
// backends standing for the GPU and the CPU: which batches go where (by
// items, Enumerate never to the CPU), that RunHere goes to the same backend
// as Run would and that a decline leaves the batch and done with the
// caller, and that the batchers' flow control is the main backend's. Then
// the same with the real CPU backend on the small side: the answer of a
// routed batch is the kernel's.
#include "server/small_on_cpu.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "sampler/kernels/gamma.h"
#include "server/backend.h"
#include "server/cpu_backend.h"
#include "server/jobs.h"

namespace sampler::server {
namespace {

// Completes every batch at once (from inside Run: good enough here) and
// records the items of each; RunHere runs batches here when `here` is set.
class RecordingBackend : public Backend {
 public:
  RecordingBackend(std::string name, int capacity, int eager, bool here)
      : name_(std::move(name)),
        capacity_(capacity),
        eager_(eager),
        here_(here) {}

  BackendInfo Info() const override { return {name_, {}, "test"}; }
  int Capacity() const override { return capacity_; }
  int EagerBatches() const override { return eager_; }
  std::vector<PoolBytes> PoolUsage() const override { return {{name_, 1, 2}}; }
  void Run(AnyBatch batch, BatchDone done) override {
    runs.push_back(Items(batch));
    done(BatchResult{absl::OkStatus(), name_, 0});
  }
  bool RunHere(AnyBatch& batch, BatchDone& done) override {
    if (!here_) return false;
    here_runs.push_back(Items(batch));
    done(BatchResult{absl::OkStatus(), name_, 0});
    return true;
  }

  std::vector<int64_t> runs;
  std::vector<int64_t> here_runs;

 private:
  static int64_t Items(const AnyBatch& batch) {
    return std::visit([](const auto& b) { return b.items; }, batch);
  }

  const std::string name_;
  const int capacity_;
  const int eager_;
  const bool here_;
};

template <typename JobT>
AnyBatch BatchOf(int64_t items) {
  Batch<JobT> batch;
  batch.jobs.push_back(std::make_shared<JobT>());
  batch.jobs.back()->items = items;
  batch.items = items;
  return batch;
}

struct Routed {
  RecordingBackend* gpu = nullptr;
  RecordingBackend* cpu = nullptr;
  std::unique_ptr<SmallOnCpuBackend> router;
};

Routed MakeRouter(int64_t below_items, bool cpu_here = false) {
  auto gpu = std::make_unique<RecordingBackend>("gpu", 8, 1, false);
  auto cpu = std::make_unique<RecordingBackend>("cpu", 3, 3, cpu_here);
  Routed r{gpu.get(), cpu.get(), nullptr};
  r.router = std::make_unique<SmallOnCpuBackend>(std::move(gpu), std::move(cpu),
                                                 below_items);
  return r;
}

// Runs `batch` through the router and says on which backend it ran.
std::string RanOn(SmallOnCpuBackend& router, AnyBatch batch) {
  std::string device;
  router.Run(std::move(batch),
             [&device](BatchResult result) { device = result.device; });
  return device;
}

TEST(SmallOnCpuTest, BatchesBelowTheThresholdRunOnTheCpu) {
  Routed r = MakeRouter(/*below_items=*/1000);
  EXPECT_EQ(RanOn(*r.router, BatchOf<GammaJob>(1)), "cpu");
  EXPECT_EQ(RanOn(*r.router, BatchOf<GammaJob>(999)), "cpu");
  EXPECT_EQ(RanOn(*r.router, BatchOf<GammaJob>(1000)), "gpu");
  EXPECT_EQ(RanOn(*r.router, BatchOf<GammaJob>(1 << 20)), "gpu");
  EXPECT_EQ(RanOn(*r.router, BatchOf<CategoricalJob>(10)), "cpu");
  EXPECT_EQ(RanOn(*r.router, BatchOf<DirichletJob>(10)), "cpu");
  EXPECT_EQ(RanOn(*r.router, BatchOf<BoardsJob>(10)), "cpu");
  EXPECT_EQ(r.cpu->runs, (std::vector<int64_t>{1, 999, 10, 10, 10}));
  EXPECT_EQ(r.gpu->runs, (std::vector<int64_t>{1000, 1 << 20}));
}

TEST(SmallOnCpuTest, EnumerateAlwaysRunsOnTheMainBackend) {
  // Its CPU twin agrees only within a tolerance: an answer must not depend
  // on which backend the load sent it to.
  Routed r = MakeRouter(/*below_items=*/1000);
  EXPECT_EQ(RanOn(*r.router, BatchOf<EnumerateJob>(1)), "gpu");
  EXPECT_FALSE(r.router->OnCpu(BatchOf<EnumerateJob>(1)));
  EXPECT_TRUE(r.cpu->runs.empty());
}

TEST(SmallOnCpuTest, RunHereAsksTheBackendRunWouldUse) {
  Routed r = MakeRouter(/*below_items=*/100, /*cpu_here=*/true);
  AnyBatch small = BatchOf<GammaJob>(5);
  std::string device;
  BatchDone done = [&device](BatchResult result) { device = result.device; };
  ASSERT_TRUE(r.router->RunHere(small, done));
  EXPECT_EQ(device, "cpu");
  EXPECT_EQ(r.cpu->here_runs, std::vector<int64_t>{5});

  // The GPU side declines: the batch and done stay the caller's, whole.
  AnyBatch large = BatchOf<GammaJob>(500);
  device.clear();
  BatchDone large_done = [&device](BatchResult result) {
    device = result.device;
  };
  EXPECT_FALSE(r.router->RunHere(large, large_done));
  ASSERT_TRUE(large_done);
  EXPECT_EQ(std::get<Batch<GammaJob>>(large).items, 500);
  r.router->Run(std::move(large), std::move(large_done));
  EXPECT_EQ(device, "gpu");
}

TEST(SmallOnCpuTest, FlowControlAndInfoAreTheMainBackends) {
  Routed r = MakeRouter(/*below_items=*/100);
  EXPECT_EQ(r.router->Capacity(), 8);
  EXPECT_EQ(r.router->EagerBatches(), 1);
  EXPECT_EQ(r.router->Info().name, "gpu");
  ASSERT_EQ(r.router->PoolUsage().size(), 1u);
  EXPECT_EQ(r.router->PoolUsage()[0].device, "gpu");
}

TEST(SmallOnCpuTest, ARoutedBatchGetsTheKernelsBits) {
  auto gpu = std::make_unique<RecordingBackend>("gpu", 4, 1, false);
  absl::StatusOr<std::unique_ptr<CpuBackend>> cpu = CpuBackend::Create(2);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  SmallOnCpuBackend router(std::move(gpu), *std::move(cpu), 1000);

  auto job = std::make_shared<GammaJob>();
  job->seed = 42;
  GammaWork<float> work;
  work.shape = {0.5f, 1.0f, 2.5f, 7.0f};
  std::vector<float> out(work.shape.size(), -1.0f);
  work.out = absl::MakeSpan(out);
  job->work = work;
  job->items = static_cast<int64_t>(out.size());
  Batch<GammaJob> batch;
  batch.jobs.push_back(job);
  batch.items = job->items;

  AnyBatch any(std::move(batch));
  std::string device;
  BatchDone done = [&device](BatchResult result) {
    EXPECT_TRUE(result.status.ok()) << result.status;
    device = result.device;
  };
  // Four samples: one task's work, run here.
  ASSERT_TRUE(router.RunHere(any, done));
  EXPECT_EQ(device, "cpu");
  ASSERT_TRUE(job->status.ok()) << job->status;

  std::vector<float> expected(out.size());
  const std::vector<float> ones(out.size(), 1.0f);
  ASSERT_TRUE(kernels::SampleGammaCpu<float>(work.shape, ones,
                                             /*log_output=*/false, 42, 0,
                                             absl::MakeSpan(expected))
                  .ok());
  EXPECT_EQ(out, expected);
}

}  // namespace
}  // namespace sampler::server
