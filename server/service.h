// The SamplerService on gRPC's callback API. Each call is validated into a
// typed job on the gRPC thread (bad input never reaches a queue), queued on
// its kind's batcher, and finished from whichever thread completes its batch.
// Streamed variants compute the request in device-sized pieces (one job
// each), keep at most a small window of them in flight, and cut each into
// messages of the client's size, written in order; a stream whose client
// stops reading is cancelled after stream_stall_timeout.
//
// Every method but GetServerInfo is a gRPC raw method: the service parses
// its request body itself (wire_request.h) and sends its answer with the
// packed fixed-width values (samples, bitboards, probabilities) borrowed
// from the answer's memory (wire_answer.h), the bytes exactly those
// protobuf would write. SampleCategorical's indices are varints, so its
// answers are serialized; it is raw for its request: its job reads the
// parsed weights in place (request_parse.h).
#ifndef SAMPLER_SERVER_SERVICE_H_
#define SAMPLER_SERVER_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "sampler/v1/sampler.grpc.pb.h"
#include "server/access_log.h"
#include "server/auth.h"
#include "server/backend.h"
#include "server/batcher.h"
#include "server/connection_calls.h"
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
  // Count each connection's unary calls in the server, so that a job knows
  // whether it arrived alone on its connection (Job::lone_call; for the
  // CUDA backend's --gpu_inline=auto, connection_calls.h). Off: no cost.
  bool count_connection_calls = false;
};

// The callback service with the raw methods (above) taking and giving
// grpc::ByteBuffer.
using SamplerServiceBase = v1::SamplerService::WithRawCallbackMethod_Enumerate<
    v1::SamplerService::WithRawCallbackMethod_SampleGamma<
        v1::SamplerService::WithRawCallbackMethod_SampleGammaStream<
            v1::SamplerService::WithRawCallbackMethod_SampleDirichlet<
                v1::SamplerService::WithRawCallbackMethod_SampleBoards<
                    v1::SamplerService::
                        WithRawCallbackMethod_SampleBoardsStream<
                            v1::SamplerService::
                                WithRawCallbackMethod_SampleCategoricalStream<
                                    v1::SamplerService::
                                        WithRawCallbackMethod_SampleCategorical<
                                            v1::SamplerService::
                                                CallbackService>>>>>>>>;

class SamplerServiceImpl final : public SamplerServiceBase {
 public:
  SamplerServiceImpl(ServiceOptions options, Backend* backend,
                     Metrics* metrics);
  ~SamplerServiceImpl() override;

  // Stops taking jobs and runs everything queued; returns when all batches
  // have completed. Call after the gRPC server has stopped taking calls.
  void Drain();

  // The full names ("/sampler.v1.SamplerService/GetServerInfo") of the
  // methods whose request gRPC deserializes before their handler runs: the
  // raw methods parse their bodies themselves. The bad body interceptor
  // (bad_body_interceptor.h) is needed only on these.
  static std::vector<std::string> DeserializedMethods();

  // Raw: v1::EnumerateRequest -> v1::EnumerateResponse.
  grpc::ServerUnaryReactor* Enumerate(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  // Raw: v1::SampleCategoricalRequest -> v1::SampleCategoricalResponse (the
  // job reads the request's values where protobuf parsed them).
  grpc::ServerUnaryReactor* SampleCategorical(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  // Raw: a v1::SampleCategoricalStreamRequest in, its response messages out.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* SampleCategoricalStream(
      grpc::CallbackServerContext* context,
      const grpc::ByteBuffer* request) override;
  // Raw: v1::SampleGammaRequest -> v1::SampleGammaResponse.
  grpc::ServerUnaryReactor* SampleGamma(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  // Raw: v1::SampleGammaStreamRequest -> v1::SampleGammaStreamResponse.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* SampleGammaStream(
      grpc::CallbackServerContext* context,
      const grpc::ByteBuffer* request) override;
  // Raw: v1::SampleDirichletRequest -> v1::SampleDirichletResponse.
  grpc::ServerUnaryReactor* SampleDirichlet(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  // Raw: v1::SampleBoardsRequest -> v1::SampleBoardsResponse.
  grpc::ServerUnaryReactor* SampleBoards(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  // Raw: v1::SampleBoardsStreamRequest -> v1::SampleBoardsStreamResponse.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* SampleBoardsStream(
      grpc::CallbackServerContext* context,
      const grpc::ByteBuffer* request) override;
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
  // Null unless options_.count_connection_calls.
  const std::unique_ptr<ConnectionCalls> connection_calls_;
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
