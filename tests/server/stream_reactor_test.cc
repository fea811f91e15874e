// The streamed calls' reactor (server/stream_reactor.h) against a real
// service on loopback, in process: its lifetime when a piece's completion is
// still on its way out as the stream ends on other threads.
//
// The defect this guards against (found by CI under AddressSanitizer, after
// session 5): PieceDone released the reactor's lock, and with nothing left
// to do, still called a member on the reactor. Meanwhile gRPC threads could
// write the rest, finish the call and run OnDone, which freed the reactor.
// The test seam holds such a PieceDone until the stream has ended and its
// OnDone has run; the old reactor was then used after being freed, which the
// sanitizer stage of CI reports (tools/ci/30-sanitizers.sh runs this test).
#include "server/stream_reactor.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sampler/v1/sampler.grpc.pb.h"
#include "server/cpu_backend.h"
#include "server/metrics.h"
#include "server/service.h"
#include "tests/server/loopback_server.h"
#include "tests/server/request_test_util.h"

namespace sampler::server {
namespace {

// sampler_inflight_requests, from the registry (-1 when absent).
double Inflight(const Metrics& metrics) {
  const std::string text = metrics.Scrape();
  const std::string name = "\nsampler_inflight_requests ";
  const size_t at = text.find(name);
  if (at == std::string::npos) return -1;
  const size_t begin = at + name.size();
  double value = -1;
  if (!absl::SimpleAtod(text.substr(begin, text.find('\n', begin) - begin),
                        &value)) {
    return -1;
  }
  return value;
}

std::atomic<const Metrics*> watched_metrics{nullptr};
std::atomic<bool> held{false};      // a PieceDone has been held
std::atomic<bool> saw_end{false};   // ... and the stream ended meanwhile
std::atomic<bool> released{false};  // ... and it has been let go

// The seam: holds the first PieceDone that has nothing left to do until no
// call is in flight (the stream's OnDone has run), then a little longer so
// that OnDone has returned.
void HoldUntilTheStreamEnds(bool idle) {
  if (!idle || held.exchange(true)) return;
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    if (Inflight(*watched_metrics.load()) == 0) {
      saw_end = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  released = true;
}

TEST(StreamReactorTest, APieceDoneHeldWhileItsStreamEndsUsesNoFreedReactor) {
  absl::StatusOr<std::unique_ptr<CpuBackend>> backend = CpuBackend::Create(2);
  ASSERT_TRUE(backend.ok()) << backend.status();
  Metrics metrics;
  ServiceOptions options;
  // Pieces of at most 8192 samples (the queue budget's share of a stream's
  // window), so 16384 samples are two pieces, queued together.
  options.max_queued_items = 1 << 14;
  // Pieces run on the CPU pool, never on the gRPC thread that queues them.
  options.batcher.run_here = false;
  auto service =
      std::make_unique<SamplerServiceImpl>(options, backend->get(), &metrics);
  int port = 0;
  std::unique_ptr<grpc::Server> server = StartOnLoopback(service.get(), &port);
  ASSERT_NE(server, nullptr);
  auto stub = v1::SamplerService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));

  watched_metrics = &metrics;
  piece_done_unlocked_for_test = &HoldUntilTheStreamEnds;
  // A stream whose pieces complete in an order that leaves one of them with
  // nothing to do (the other being written, or not yet computed) comes
  // within a few attempts; every answer must be whole either way.
  for (int attempt = 0; attempt < 100 && !held; ++attempt) {
    v1::SampleGammaStreamRequest request;
    *request.mutable_request() = GammaCount(1 << 14, /*f32=*/true);
    request.set_max_samples_per_chunk(256);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    auto reader = stub->SampleGammaStream(&context, request);
    v1::SampleGammaStreamResponse chunk;
    int64_t samples = 0;
    while (reader->Read(&chunk)) {
      EXPECT_EQ(chunk.first_sample(), samples);
      samples += chunk.samples().f32().values_size();
    }
    const grpc::Status status = reader->Finish();
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(samples, 1 << 14);
  }
  ASSERT_TRUE(held) << "no piece completed with nothing left to do";
  while (!released) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  piece_done_unlocked_for_test = nullptr;
  // The case happened: the stream ended while a PieceDone was held.
  EXPECT_TRUE(saw_end);

  server->Shutdown();
  service->Drain();
  service.reset();
}

}  // namespace
}  // namespace sampler::server
