// The SamplerService on gRPC's callback API. Each call is validated into a
// typed job on the gRPC thread (bad input never reaches a queue), queued on
// its kind's batcher, and finished from whichever thread completes its batch.
// Streamed variants compute the request in device-sized pieces (one job
// each), keep at most a small window of them in flight, and cut each into
// messages of the client's size, written in order; a stream whose client
// stops reading is cancelled after stream_stall_timeout.
#ifndef SAMPLER_SERVER_SERVICE_H_
#define SAMPLER_SERVER_SERVICE_H_

#include <memory>
#include <string>

#include "sampler/v1/sampler.grpc.pb.h"
#include "server/access_log.h"
#include "server/auth.h"
#include "server/backend.h"
#include "server/batcher.h"
#include "server/metrics.h"
#include "server/pool_metrics.h"
#include "server/request_limits.h"
#include "server/request_parse.h"
#include "server/response_bind.h"
#include "server/stall_watch.h"
#include "server/stream_chunk.h"

namespace sampler::server {

struct ServiceOptions {
  RequestLimits limits;
  BatcherOptions batcher;
  int64_t max_queued_items = int64_t{1} << 26;
  std::string version;
  // Bearer tokens every call must carry (null: none needed); checked first
  // in every handler, before the request is parsed.
  std::shared_ptr<const TokenAuthenticator> auth;
  // A stream whose write has made no progress for this long (its client
  // reads nothing) is cancelled (--stream_stall_timeout); zero: never.
  absl::Duration stream_stall_timeout = absl::Seconds(30);
  // One line per finished call when set (--access_log).
  std::shared_ptr<AccessLog> access_log;
};

class SamplerServiceImpl final : public v1::SamplerService::CallbackService {
 public:
  SamplerServiceImpl(ServiceOptions options, Backend* backend,
                     Metrics* metrics);
  ~SamplerServiceImpl() override;

  // Stops taking jobs and runs everything queued; returns when all batches
  // have completed. Call after the gRPC server has stopped taking calls.
  void Drain();

  grpc::ServerUnaryReactor* Enumerate(grpc::CallbackServerContext* context,
                                      const v1::EnumerateRequest* request,
                                      v1::EnumerateResponse* response) override;
  grpc::ServerUnaryReactor* SampleCategorical(
      grpc::CallbackServerContext* context,
      const v1::SampleCategoricalRequest* request,
      v1::SampleCategoricalResponse* response) override;
  grpc::ServerWriteReactor<v1::SampleCategoricalStreamResponse>*
  SampleCategoricalStream(
      grpc::CallbackServerContext* context,
      const v1::SampleCategoricalStreamRequest* request) override;
  grpc::ServerUnaryReactor* SampleGamma(
      grpc::CallbackServerContext* context,
      const v1::SampleGammaRequest* request,
      v1::SampleGammaResponse* response) override;
  grpc::ServerWriteReactor<v1::SampleGammaStreamResponse>* SampleGammaStream(
      grpc::CallbackServerContext* context,
      const v1::SampleGammaStreamRequest* request) override;
  grpc::ServerUnaryReactor* SampleDirichlet(
      grpc::CallbackServerContext* context,
      const v1::SampleDirichletRequest* request,
      v1::SampleDirichletResponse* response) override;
  grpc::ServerUnaryReactor* SampleBoards(
      grpc::CallbackServerContext* context,
      const v1::SampleBoardsRequest* request,
      v1::SampleBoardsResponse* response) override;
  grpc::ServerWriteReactor<v1::SampleBoardsStreamResponse>* SampleBoardsStream(
      grpc::CallbackServerContext* context,
      const v1::SampleBoardsStreamRequest* request) override;
  grpc::ServerUnaryReactor* GetServerInfo(
      grpc::CallbackServerContext* context,
      const v1::GetServerInfoRequest* request,
      v1::GetServerInfoResponse* response) override;

 private:
  const ServiceOptions options_;
  Backend* const backend_;
  Metrics* const metrics_;
  const SeedSource seeds_;
  QueueBudget budget_;
  // What the batchers run on: backend_, recording its memory pools' usage
  // after each batch. Declared before the batchers, which use it until they
  // have drained.
  PoolMetricsBackend pool_metered_;
  Batcher<EnumerateJob> enumerate_;
  Batcher<CategoricalJob> categorical_;
  Batcher<GammaJob> gamma_;
  Batcher<DirichletJob> dirichlet_;
  Batcher<BoardsJob> boards_;
  // Declared last: its thread stops first (every stream has ended by then).
  StallWatch stall_watch_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_SERVICE_H_
