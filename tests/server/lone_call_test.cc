// The service's count of each connection's unary calls (ServiceOptions::
// count_connection_calls, server/connection_calls.h) over real gRPC on
// loopback, in process: a batch closed on a call's thread says whether that
// call was alone on its connection (Batch::closed_on_lone_call, what the
// CUDA backend's --gpu_inline=auto reads), a call of another connection is
// not counted with it, a call leaves the count before its answer goes out
// (the next call its client sends is alone again), and a connection that
// had two calls at once stays multiplexing for a while.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sampler/v1/sampler.grpc.pb.h"
#include "server/backend.h"
#include "server/cpu_backend.h"
#include "server/metrics.h"
#include "server/service.h"
#include "tests/server/loopback_server.h"
#include "tests/server/request_test_util.h"

namespace sampler::server {
namespace {

constexpr uint64_t kHeldSeed = 1;

// The CPU backend behind a recorder: RunHere notes, per seed, whether the
// batch was closed by a lone call, then declines, so that Run executes it;
// Run holds the batch of kHeldSeed back until Release. Four batches at once
// and as many eagerly, so that a call arriving while another is held closes
// its own batch on its own thread.
class RecordingBackend : public Backend {
 public:
  explicit RecordingBackend(std::unique_ptr<CpuBackend> cpu)
      : cpu_(std::move(cpu)) {}

  BackendInfo Info() const override { return cpu_->Info(); }
  int Capacity() const override { return 4; }
  int EagerBatches() const override { return 4; }

  bool RunHere(AnyBatch& batch, BatchDone& /*done*/) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto& gamma = std::get<Batch<GammaJob>>(batch);
    for (const auto& job : gamma.jobs) {
      lone_[job->seed] = gamma.closed_on_lone_call;
    }
    cv_.notify_all();
    return false;
  }

  void Run(AnyBatch batch, BatchDone done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto& gamma = std::get<Batch<GammaJob>>(batch);
      if (gamma.jobs.size() == 1 && gamma.jobs[0]->seed == kHeldSeed &&
          !released_) {
        held_.emplace_back(std::move(batch), std::move(done));
        return;
      }
    }
    cpu_->Run(std::move(batch), std::move(done));
  }

  void Release() {
    std::vector<std::pair<AnyBatch, BatchDone>> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
      held.swap(held_);
    }
    for (auto& [batch, done] : held) {
      cpu_->Run(std::move(batch), std::move(done));
    }
  }

  // Whether the batch of `seed` was closed by a lone call; waits for it to
  // be recorded (false after 10 s: the test then fails on `seen`).
  bool Lone(uint64_t seed, bool* seen) {
    std::unique_lock<std::mutex> lock(mu_);
    *seen = cv_.wait_for(lock, std::chrono::seconds(10),
                         [&] { return lone_.count(seed) > 0; });
    return *seen && lone_[seed];
  }

 private:
  std::unique_ptr<CpuBackend> cpu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, bool> lone_;
  bool released_ = false;
  std::vector<std::pair<AnyBatch, BatchDone>> held_;
};

// A channel of its own: a subchannel pool per channel, so that each is a
// connection of its own (gRPC shares connections between equal channels).
std::unique_ptr<v1::SamplerService::Stub> Connect(int port) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return v1::SamplerService::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                grpc::InsecureChannelCredentials(), args));
}

grpc::Status Call(v1::SamplerService::Stub& stub, uint64_t seed) {
  v1::SampleGammaRequest request = GammaCount(256, /*f32=*/true);
  request.set_seed(seed);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  v1::SampleGammaResponse response;
  grpc::Status status = stub.SampleGamma(&context, request, &response);
  if (status.ok()) {
    EXPECT_EQ(response.samples().f32().values_size(), 256) << seed;
  }
  return status;
}

TEST(LoneCallTest,
     ABatchSaysWhetherTheCallThatClosedItWasAloneOnItsConnection) {
  absl::StatusOr<std::unique_ptr<CpuBackend>> cpu = CpuBackend::Create(2);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  RecordingBackend backend(*std::move(cpu));
  Metrics metrics;
  ServiceOptions options;
  options.count_connection_calls = true;
  auto service =
      std::make_unique<SamplerServiceImpl>(options, &backend, &metrics);
  int port = 0;
  std::unique_ptr<grpc::Server> server = StartOnLoopback(service.get(), &port);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::SamplerService::Stub> x = Connect(port);
  std::unique_ptr<v1::SamplerService::Stub> y = Connect(port);

  // Call 1 on connection x, held in the backend: alone when it arrived.
  grpc::Status held_status;
  std::thread held([&] { held_status = Call(*x, kHeldSeed); });
  bool seen = false;
  EXPECT_TRUE(backend.Lone(kHeldSeed, &seen));
  ASSERT_TRUE(seen);
  // Call 2 on x while call 1 is in the server: not alone.
  ASSERT_TRUE(Call(*x, 2).ok());
  EXPECT_FALSE(backend.Lone(2, &seen));
  EXPECT_TRUE(seen);
  // Call 3 on connection y: alone there, whatever x has in the server.
  ASSERT_TRUE(Call(*y, 3).ok());
  EXPECT_TRUE(backend.Lone(3, &seen));
  EXPECT_TRUE(seen);
  // y's next call, sent after the answer to call 3: alone again (a call
  // leaves the count before its answer goes out).
  ASSERT_TRUE(Call(*y, 4).ok());
  EXPECT_TRUE(backend.Lone(4, &seen));
  EXPECT_TRUE(seen);
  // Call 1 answered: x is empty, but it had two calls at once within the
  // last second (a multiplexing client), so its next call is not lone.
  backend.Release();
  held.join();
  ASSERT_TRUE(held_status.ok()) << held_status.error_message();
  ASSERT_TRUE(Call(*x, 5).ok());
  EXPECT_FALSE(backend.Lone(5, &seen));
  EXPECT_TRUE(seen);

  server->Shutdown();
  service->Drain();
  service.reset();
}

}  // namespace
}  // namespace sampler::server
