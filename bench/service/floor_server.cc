// The floor of the service benchmark: a bare gRPC callback-API server with
// sampler-server's service and message shapes that does no sampling. Each
// call is parsed by gRPC as sampler-server's is, and answered with a
// prebuilt response of the size sampler-server's answer would have (the
// same number of values of the same type, the seed echoed), copied from a
// cache. So a benchmark that drives both with the same requests measures,
// as the ratio of the two, what sampler-server adds to the RPC stack under
// it: validation, batching, the sampler and binding (issue 13).
//
// Unary RPCs and SampleGammaStream are served; the other streams and
// GetServerInfo answer UNIMPLEMENTED. Channel arguments match
// sampler-server's defaults where they affect throughput (message sizes,
// concurrent streams, no SO_REUSEPORT).
//
//   floor-server --listen 127.0.0.1:0   (prints "serving on port N")
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"
#include "sampler/v1/sampler.grpc.pb.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "host:port to listen on");
ABSL_FLAG(int64_t, max_message_bytes, int64_t{64} << 20,
          "largest message received or sent (sampler-server's default)");
ABSL_FLAG(int32_t, max_concurrent_streams, 256,
          "HTTP/2 streams per connection (sampler-server's default)");
ABSL_FLAG(int64_t, stream_chunk_bytes, int64_t{4} << 20,
          "bytes of values per SampleGammaStream message when the client "
          "sets no maximum (sampler-server's target chunk size)");

namespace {

namespace v1 = ::sampler::v1;

bool IsFloat32(v1::Precision p) { return p == v1::PRECISION_FLOAT32; }

// `n` values of the precision's type, all one value (fixed-width encoding,
// so the value does not change the size).
void FillReals(int64_t n, bool float32, v1::Reals* reals) {
  if (float32) {
    reals->mutable_f32()->mutable_values()->Resize(static_cast<int>(n), 0.5f);
  } else {
    reals->mutable_f64()->mutable_values()->Resize(static_cast<int>(n), 0.5);
  }
}

int64_t RealsSize(const v1::Reals& r) {
  return r.has_f32() ? r.f32().values_size() : r.f64().values_size();
}

int64_t GammaCount(const v1::SampleGammaRequest& r) {
  if (r.has_elements()) return RealsSize(r.elements().shape());
  int64_t n = 0;
  for (const v1::GammaGroup& g : r.groups().groups()) n += g.count();
  return n;
}

// Prebuilt responses by (kind, shape of the answer), built on first use.
// Requests of a benchmark repeat a few shapes, so the cache stays small; it
// is cleared when it would hold more than kMaxEntries.
template <typename Response>
class ResponseCache {
 public:
  using Key = std::tuple<int64_t, int64_t, int64_t>;
  template <typename Build>
  std::shared_ptr<const Response> Get(const Key& key, Build build) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    if (cache_.size() >= kMaxEntries) cache_.clear();
    auto response = std::make_shared<Response>();
    build(response.get());
    cache_.emplace(key, response);
    return response;
  }

 private:
  static constexpr size_t kMaxEntries = 64;
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const Response>> cache_;
};

grpc::Status TooLarge() {
  return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                      "floor-server: answer too large");
}

class FloorService final : public v1::SamplerService::CallbackService {
 public:
  explicit FloorService(int64_t max_values, int64_t chunk_bytes)
      : max_values_(max_values), chunk_bytes_(chunk_bytes) {}

  grpc::ServerUnaryReactor* SampleGamma(
      grpc::CallbackServerContext* ctx, const v1::SampleGammaRequest* request,
      v1::SampleGammaResponse* response) override {
    const int64_t n = GammaCount(*request);
    const bool f32 = IsFloat32(request->precision());
    grpc::Status status;
    if (n > max_values_) {
      status = TooLarge();
    } else {
      *response = *gamma_.Get({n, f32, 0}, [&](v1::SampleGammaResponse* r) {
        FillReals(n, f32, r->mutable_samples());
      });
      response->set_seed(request->seed());
    }
    return Done(ctx, status);
  }

  grpc::ServerWriteReactor<v1::SampleGammaStreamResponse>* SampleGammaStream(
      grpc::CallbackServerContext* ctx,
      const v1::SampleGammaStreamRequest* request) override;

  grpc::ServerUnaryReactor* SampleCategorical(
      grpc::CallbackServerContext* ctx,
      const v1::SampleCategoricalRequest* request,
      v1::SampleCategoricalResponse* response) override {
    const int64_t k = std::max<int64_t>(request->categories(), 1);
    const int64_t rows = RealsSize(request->values()) / k;
    const int64_t draws = std::max(request->draws(), 1);
    grpc::Status status;
    if (rows * draws > max_values_) {
      status = TooLarge();
    } else {
      // Indices are varints: answer with the middle category, about the
      // mean encoded size of uniform draws.
      *response = *categorical_.Get(
          {rows, draws, k}, [&](v1::SampleCategoricalResponse* r) {
            r->mutable_indices()->Resize(static_cast<int>(rows * draws),
                                         static_cast<int32_t>(k / 2));
            r->set_rows(rows);
            r->set_draws(static_cast<int32_t>(draws));
          });
      response->set_seed(request->seed());
    }
    return Done(ctx, status);
  }

  grpc::ServerUnaryReactor* SampleDirichlet(
      grpc::CallbackServerContext* ctx,
      const v1::SampleDirichletRequest* request,
      v1::SampleDirichletResponse* response) override {
    const int64_t n = RealsSize(request->concentrations());
    const bool f32 = IsFloat32(request->precision());
    *response =
        *dirichlet_.Get({n, f32, 0}, [&](v1::SampleDirichletResponse* r) {
          FillReals(n, f32, r->mutable_samples());
        });
    response->set_seed(request->seed());
    return Done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* SampleBoards(
      grpc::CallbackServerContext* ctx, const v1::SampleBoardsRequest* request,
      v1::SampleBoardsResponse* response) override {
    const int64_t sites = int64_t{request->rows()} * request->cols();
    const int64_t words = (sites + 63) / 64;
    const int64_t colours = request->stones_size();
    const int64_t total = request->count() * colours * words;
    grpc::Status status;
    if (total > max_values_ || total < 0) {
      status = TooLarge();
    } else {
      *response = *boards_.Get(
          {request->count(), colours, words}, [&](v1::SampleBoardsResponse* r) {
            r->mutable_bitboards()->Resize(static_cast<int>(total), 0);
            r->set_words_per_board(static_cast<int32_t>(words));
            r->set_colours(static_cast<int32_t>(colours));
            r->set_count(request->count());
          });
      response->set_seed(request->seed());
    }
    return Done(ctx, status);
  }

  grpc::ServerUnaryReactor* Enumerate(
      grpc::CallbackServerContext* ctx, const v1::EnumerateRequest* request,
      v1::EnumerateResponse* response) override {
    const bool f32 = IsFloat32(request->precision());
    for (const v1::EnumerateProblem& problem : request->problems()) {
      int64_t length = 1;
      int64_t offset = 0;
      for (const v1::Pmf& term : problem.terms()) {
        length += RealsSize(term.probabilities()) - 1;
        offset += term.offset();
      }
      v1::Pmf* result = response->add_results();
      result->set_offset(offset);
      FillReals(std::max<int64_t>(length, 1), f32,
                result->mutable_probabilities());
    }
    return Done(ctx, grpc::Status::OK);
  }

 private:
  static grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* ctx,
                                        const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

  const int64_t max_values_;
  const int64_t chunk_bytes_;
  ResponseCache<v1::SampleGammaResponse> gamma_;
  ResponseCache<v1::SampleCategoricalResponse> categorical_;
  ResponseCache<v1::SampleDirichletResponse> dirichlet_;
  ResponseCache<v1::SampleBoardsResponse> boards_;
  ResponseCache<v1::SampleGammaStreamResponse> gamma_chunks_;
};

// Writes a gamma stream of prebuilt chunks, one write in flight at a time
// (as sampler-server's reactor), each chunk's first_sample set.
class GammaStreamWriter final
    : public grpc::ServerWriteReactor<v1::SampleGammaStreamResponse> {
 public:
  GammaStreamWriter(std::shared_ptr<const v1::SampleGammaStreamResponse> full,
                    std::shared_ptr<const v1::SampleGammaStreamResponse> last,
                    int64_t total, int64_t per_chunk, uint64_t seed)
      : full_(std::move(full)),
        last_(std::move(last)),
        total_(total),
        per_chunk_(per_chunk),
        seed_(seed) {
    Next();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (sent_ >= total_) {
      Finish(grpc::Status::OK);
      return;
    }
    const bool is_last = total_ - sent_ <= per_chunk_;
    message_ = is_last ? *last_ : *full_;
    message_.set_first_sample(sent_);
    message_.set_seed(seed_);
    sent_ += is_last ? total_ - sent_ : per_chunk_;
    StartWrite(&message_);
  }

  std::shared_ptr<const v1::SampleGammaStreamResponse> full_, last_;
  const int64_t total_, per_chunk_;
  const uint64_t seed_;
  int64_t sent_ = 0;
  v1::SampleGammaStreamResponse message_;
};

grpc::ServerWriteReactor<v1::SampleGammaStreamResponse>*
FloorService::SampleGammaStream(grpc::CallbackServerContext*,
                                const v1::SampleGammaStreamRequest* request) {
  const int64_t total = GammaCount(request->request());
  const bool f32 = IsFloat32(request->request().precision());
  int64_t per_chunk = chunk_bytes_ / (f32 ? 4 : 8);
  if (request->max_samples_per_chunk() > 0) {
    per_chunk = std::min(per_chunk, request->max_samples_per_chunk());
  }
  per_chunk = std::max<int64_t>(per_chunk, 1);
  const int64_t tail = total % per_chunk == 0 ? per_chunk : total % per_chunk;
  auto chunk = [&](int64_t n) {
    return gamma_chunks_.Get({n, f32, 1},
                             [&](v1::SampleGammaStreamResponse* r) {
                               FillReals(n, f32, r->mutable_samples());
                             });
  };
  return new GammaStreamWriter(chunk(per_chunk), chunk(tail), total, per_chunk,
                               request->request().seed());
}

std::unique_ptr<grpc::Server> g_server;

void OnSignal(int) {
  // Shutdown is not async-signal-safe: hand it to a thread.
  std::thread([] { g_server->Shutdown(); }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // The same setting as sampler-server's main (Debian's Abseil leaves
  // absl::Mutex's lock-order graph on, about 6% of a small call's
  // instructions): the floor is the RPC stack at its best, so it must not
  // pay a cost the server no longer pays.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const int64_t max_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  FloorService service(/*max_values=*/max_bytes / 4,
                       absl::GetFlag(FLAGS_stream_chunk_bytes));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen),
                           grpc::InsecureServerCredentials(), &port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(max_bytes));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             absl::GetFlag(FLAGS_max_concurrent_streams));
  builder.RegisterService(&service);
  g_server = builder.BuildAndStart();
  if (!g_server) {
    std::fprintf(stderr, "floor-server: could not listen on %s\n",
                 absl::GetFlag(FLAGS_listen).c_str());
    return 1;
  }
  std::fprintf(stderr, "floor-server: serving on port %d\n", port);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  g_server->Wait();
  return 0;
}
