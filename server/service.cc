#include "server/service.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "sampler/kernels/contract.h"
#include "server/answer_memory.h"
#include "server/grpc_status.h"
#include "server/rpc_names.h"
#include "server/stream_reactor.h"
#include "server/wire_answer.h"
#include "server/wire_request.h"

namespace sampler::server {
namespace {

uint64_t EntropySeed() {
  thread_local std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) | device();
}

// Every response names the randomness contract version its bits follow
// (docs/randomness.md), so that a client can pin it. Called by each serve
// and refuse helper below (and GetServerInfo) before anything is sent:
// initial metadata can only be added until it goes out.
void AddContractVersion(grpc::CallbackServerContext* context) {
  context->AddInitialMetadata("sampler-contract-version",
                              std::to_string(kernels::kContractVersion));
}

// ---- Operators' view and fair admission (issue 9 items 5 and 8) ----

// What the end of a call needs besides its status: where to count it and
// log it, and who the client was.
struct CallEnv {
  Metrics* metrics = nullptr;
  AccessLog* access_log = nullptr;           // null: no access log
  const TokenAuthenticator* auth = nullptr;  // null: no token needed
  // Null: calls per connection not counted (ServiceOptions).
  ConnectionCalls* connection_calls = nullptr;
};

// The client a call is admitted as (QueueBudget): its bearer token when
// tokens are required (a client behind one token is one client, however
// many connections it opens), else its peer address, i.e. its connection.
// The token is kept only as a hash: the budget's map must not hold secrets.
std::string ClientKey(const grpc::CallbackServerContext& context,
                      const TokenAuthenticator* auth) {
  if (auth != nullptr) {
    const auto& metadata = context.client_metadata();
    auto it = metadata.find("authorization");
    if (it != metadata.end()) {
      return absl::StrCat("token:",
                          absl::Hash<absl::string_view>{}(absl::string_view(
                              it->second.data(), it->second.size())));
    }
  }
  return context.peer();
}

// A deadline that has passed, or is nearer than gRPC's own deadline
// resolution (1 ms), when the call arrives: no answer can reach the client
// in time, so the call is answered DEADLINE_EXCEEDED without any work.
// Measured on loopback: of calls sent with a 1 ns deadline, most arrive
// already expired, but some arrive looking up to ~9 ms away (gRPC encodes
// the timeout from a cached clock); those are dropped when their batch
// closes if expired by then, else answered (the client has gone).
constexpr Clock::duration kDeadlineResolution = std::chrono::milliseconds(1);
bool ExpiredOnArrival(Clock::time_point deadline) {
  return deadline != Clock::time_point::max() &&
         deadline - Clock::now() <= kDeadlineResolution;
}
absl::Status ExpiredStatus() {
  return absl::DeadlineExceededError(
      "the call's deadline had passed (or was under 1 ms away) when it "
      "arrived: dropped without work");
}

// sampler_refused_total's reason for a call answered without work.
const char* RefusalReason(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kDeadlineExceeded:
      return "expired_on_arrival";
    case absl::StatusCode::kResourceExhausted:
      return "overloaded";
    case absl::StatusCode::kOutOfRange:
      return "over_limit";
    case absl::StatusCode::kInvalidArgument:
      return "invalid";
    case absl::StatusCode::kUnauthenticated:
      return "unauthenticated";
    default:
      return "other";
  }
}

// Counts, logs and times a finished call. `refused`: answered without its
// work being done (before any queue, or refused by one).
void EndCall(const CallEnv& env, const char* rpc, absl::string_view peer,
             const absl::Status& status, int64_t items, double seconds,
             bool refused) {
  env.metrics->RequestDone(rpc, CodeName(status), seconds);
  if (refused && !status.ok()) env.metrics->Refused(rpc, RefusalReason(status));
  if (env.access_log != nullptr) {
    env.access_log->Write(rpc, peer, CodeName(status), items, seconds);
  }
}

// Calls refused by Authenticate (server/auth.h), before their request is
// parsed; counted in the metrics under their code.
grpc::ServerUnaryReactor* RefuseUnary(const char* rpc,
                                      grpc::CallbackServerContext* context,
                                      const absl::Status& status,
                                      const CallEnv& env) {
  AddContractVersion(context);
  EndCall(env, rpc, env.access_log != nullptr ? context->peer() : "", status, 0,
          0, /*refused=*/true);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* RefuseStream(
    const char* rpc, grpc::CallbackServerContext* context,
    const absl::Status& status, const CallEnv& env) {
  AddContractVersion(context);
  EndCall(env, rpc, env.access_log != nullptr ? context->peer() : "", status, 0,
          0, /*refused=*/true);
  return StreamRefusal::Finished(status);
}

// A raw method's request body (service.h) parsed into a shared message:
// the call's parsing into a job may keep it alive (categorical jobs read
// their values in place); jobs of other kinds hold their own copies, and
// the message goes when the handler returns. On the heap, not in an arena:
// a large packed field arrives in many slices and protobuf grows its
// RepeatedField slice by slice; in an arena every growth takes fresh memory
// (the old storage is kept until the arena goes), which measured 2-4 times
// slower for a 16 MB upload than the heap, where freed storage is reused.
// (A categorical upload's weights no longer grow: ParseRequestBody reserves
// them at their size from the wire, wire_request.h.)
// A body that is not a valid message is refused as gRPC's typed methods
// refuse it (bad_body_interceptor.h): before authentication, counted only
// as sampler_refused_total{reason="bad_body"}.
template <typename Request>
absl::StatusOr<std::shared_ptr<const Request>> ParseBody(
    const char* rpc, const grpc::ByteBuffer& body, const CallEnv& env) {
  auto request = std::make_shared<Request>();
  if (absl::Status parsed = ParseRequestBody(body, request.get());
      !parsed.ok()) {
    env.metrics->Refused(rpc, "bad_body");
    return parsed;
  }
  return request;
}

grpc::ServerUnaryReactor* FinishedUnary(grpc::CallbackServerContext* context,
                                        const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// Unary calls: authenticate, validate (`parse`: the request into a job;
// only for an authenticated caller), bind the output into the response,
// queue, and finish from whichever thread completes the job (`encode`
// first when it succeeded: what the raw method sends, ServeRawUnary).
// `bind(job)` binds the job's output into the answer's message.
template <typename JobT, typename ParseFn, typename BindFn, typename EncodeFn>
grpc::ServerUnaryReactor* ServeUnary(const char* rpc,
                                     grpc::CallbackServerContext* context,
                                     ParseFn parse, BindFn bind,
                                     Batcher<JobT>& batcher, const CallEnv& env,
                                     EncodeFn encode) {
  if (absl::Status denied = Authenticate(env.auth, *context); !denied.ok()) {
    return RefuseUnary(rpc, context, denied, env);
  }
  absl::StatusOr<std::shared_ptr<JobT>> job = parse();
  AddContractVersion(context);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const Clock::time_point start = Clock::now();
  Metrics* const metrics = env.metrics;
  metrics->AddInflight(1);
  const int64_t items = job.ok() ? (*job)->items : 0;
  // The peer only when something will log it (a string per call otherwise).
  std::string peer = env.access_log != nullptr ? context->peer() : "";
  auto finish = [reactor, env, rpc, start, items, peer = std::move(peer),
                 encode](const absl::Status& status, bool refused) {
    if (status.ok()) encode();
    EndCall(env, rpc, peer, status, items, SecondsSince(start), refused);
    env.metrics->AddInflight(-1);
    reactor->Finish(ToGrpcStatus(status));
  };
  if (!job.ok()) {
    finish(job.status(), /*refused=*/true);
    return reactor;
  }
  std::shared_ptr<JobT> j = *std::move(job);
  j->deadline = SteadyDeadline(context);
  if (ExpiredOnArrival(j->deadline)) {
    finish(ExpiredStatus(), /*refused=*/true);
    return reactor;
  }
  bind(*j);
  j->client = ClientKey(*context, env.auth);
  // Only called while the job is queued, i.e. before Finish: the context is
  // alive then.
  j->cancelled = [context] { return context->IsCancelled(); };
  // Counted until its answer is decided, before Finish: the next call its
  // client sends after the answer must not find it counted.
  ConnectionCalls* const calls = env.connection_calls;
  ConnectionCalls::Ticket ticket;
  if (calls != nullptr) {
    const ConnectionCalls::Entered entered =
        calls->Enter(env.auth == nullptr ? j->client : context->peer());
    ticket = entered.ticket;
    j->lone_call = entered.lone;
  }
  j->done = [finish, calls, ticket](const absl::Status& status) {
    if (calls != nullptr) calls->Leave(ticket);
    finish(status, /*refused=*/false);
  };
  if (absl::Status queued = batcher.Enqueue(j); !queued.ok()) {
    if (calls != nullptr) calls->Leave(ticket);
    finish(queued, /*refused=*/true);
  }
  return reactor;
}

// Raw unary calls (service.h): the body parsed (ParseBody; `parse` takes
// the shared Request), the answer bound into a message of the call's own,
// which the wire buffer then borrows its values from (AnswerToWire) until
// gRPC has sent them.
template <typename Request, typename Response, typename JobT, typename ParseFn,
          typename BindFn>
grpc::ServerUnaryReactor* ServeRawUnary(
    const char* rpc, grpc::CallbackServerContext* context,
    const grpc::ByteBuffer& body, ParseFn parse, BindFn bind,
    grpc::ByteBuffer* wire, Batcher<JobT>& batcher, const CallEnv& env) {
  absl::StatusOr<std::shared_ptr<const Request>> request =
      ParseBody<Request>(rpc, body, env);
  if (!request.ok()) return FinishedUnary(context, request.status());
  // The message is made when the job is bound, once its size is known
  // (NewAnswer: large answers in reused memory, answer_memory.h).
  auto answer = std::make_shared<std::shared_ptr<Response>>();
  return ServeUnary(
      rpc, context, [&] { return parse(*std::move(request)); },
      [answer, bind](JobT& job) {
        *answer = NewAnswer<Response>(job.items);
        bind(job, answer->get());
      },
      batcher, env, [answer, wire] { *wire = AnswerToWire(*answer); });
}

// Starts a stream, or refuses it at once when its caller is not
// authenticated or its request is invalid (`parse`, as for ServeUnary).
template <typename JobT, typename ChunkResponse, typename ParseFn,
          typename SliceFn>
grpc::ServerWriteReactor<grpc::ByteBuffer>* ServeStream(
    const char* rpc, grpc::CallbackServerContext* context, ParseFn parse,
    const char* chunk_field, int64_t client_max_per_chunk,
    const ServiceOptions& options, SliceFn slice,
    typename StreamReactor<JobT, ChunkResponse>::WireFn to_wire,
    Batcher<JobT>& batcher, const CallEnv& env, StallWatch* watch) {
  if (absl::Status denied = Authenticate(env.auth, *context); !denied.ok()) {
    return RefuseStream(rpc, context, denied, env);
  }
  absl::StatusOr<std::shared_ptr<JobT>> job = parse();
  AddContractVersion(context);
  Metrics* const metrics = env.metrics;
  if (job.ok()) {
    if (absl::Status s = ValidateChunkMax(chunk_field, client_max_per_chunk);
        !s.ok()) {
      job = s;
    }
  }
  if (job.ok() && ExpiredOnArrival(SteadyDeadline(context))) {
    job = ExpiredStatus();
  }
  const int64_t items = job.ok() ? (*job)->items : 0;
  std::string peer = env.access_log != nullptr ? context->peer() : "";
  if (!job.ok()) {
    EndCall(env, rpc, peer, job.status(), items, 0, /*refused=*/true);
    return StreamRefusal::Finished(job.status());
  }
  (*job)->client = ClientKey(*context, env.auth);
  const int64_t units = StreamUnits(**job);
  // A piece holds at most the queue budget's share of one stream's window:
  // a stream then fits an idle server's queue, whatever its size.
  const StreamPlan plan = PlanStream(
      **job, client_max_per_chunk, options.limits,
      options.max_queued_items / StreamReactor<JobT, ChunkResponse>::kWindow);
  // The reactor counts the call itself (RequestDone); this adds the refusal
  // count (a first piece refused by the queues is the only way a stream
  // ends RESOURCE_EXHAUSTED before any work) and the access log line.
  auto on_finish = [env, rpc, items, peer = std::move(peer)](
                       const absl::Status& status, double seconds) {
    if (status.code() == absl::StatusCode::kResourceExhausted) {
      env.metrics->Refused(rpc, "overloaded");
    }
    if (env.access_log != nullptr) {
      env.access_log->Write(rpc, peer, CodeName(status), items, seconds);
    }
  };
  return StreamReactor<JobT, ChunkResponse>::Start(
      rpc, context, *std::move(job), units, plan, std::move(slice), to_wire,
      &batcher, metrics, watch, std::move(on_finish));
}

// Raw streamed calls: the body parsed (ParseBody), then ServeStream with
// the inner request (`parse` takes it, shared: the pointer owns the whole
// body's message) and the client's chunk maximum (`chunk_max`, the stream
// request's field).
template <typename JobT, typename ChunkResponse, typename Request,
          typename ParseFn, typename SliceFn>
grpc::ServerWriteReactor<grpc::ByteBuffer>* ServeRawStream(
    const char* rpc, grpc::CallbackServerContext* context,
    const grpc::ByteBuffer& body, ParseFn parse, const char* chunk_field,
    int64_t (Request::*chunk_max)() const, const ServiceOptions& options,
    SliceFn slice, typename StreamReactor<JobT, ChunkResponse>::WireFn to_wire,
    Batcher<JobT>& batcher, const CallEnv& env, StallWatch* watch) {
  absl::StatusOr<std::shared_ptr<const Request>> request =
      ParseBody<Request>(rpc, body, env);
  if (!request.ok()) return StreamRefusal::Finished(request.status());
  const std::shared_ptr<const Request>& whole = *request;
  using Inner = std::decay_t<decltype(whole->request())>;
  // The inner request, owned with the whole body's message.
  std::shared_ptr<const Inner> inner(whole, &whole->request());
  return ServeStream<JobT, ChunkResponse>(
      rpc, context, [&] { return parse(std::move(inner)); }, chunk_field,
      (*whole.*chunk_max)(), options, std::move(slice), to_wire, batcher, env,
      watch);
}

}  // namespace

namespace {
// Where a call is authenticated, counted and logged.
CallEnv EnvOf(const ServiceOptions& options, Metrics* metrics,
              ConnectionCalls* connection_calls) {
  return CallEnv{metrics, options.access_log.get(), options.auth.get(),
                 connection_calls};
}

// Chunks of streams are sized to fit the queues (stream_chunk.h).
ServiceOptions WithQueueLimit(ServiceOptions options) {
  options.limits.max_queued_items = options.max_queued_items;
  return options;
}
}  // namespace

SamplerServiceImpl::SamplerServiceImpl(ServiceOptions options, Backend* backend,
                                       Metrics* metrics)
    : options_(WithQueueLimit(std::move(options))),
      backend_(backend),
      metrics_(metrics),
      seeds_(EntropySeed),
      budget_(options_.max_queued_items),
      connection_calls_(options_.count_connection_calls
                            ? std::make_unique<ConnectionCalls>()
                            : nullptr),
      pool_metered_(backend, metrics),
      enumerate_(Kind::kEnumerate, options_.batcher, &budget_, &pool_metered_,
                 metrics),
      categorical_(Kind::kCategorical, options_.batcher, &budget_,
                   &pool_metered_, metrics),
      gamma_(Kind::kGamma, options_.batcher, &budget_, &pool_metered_, metrics),
      dirichlet_(Kind::kDirichlet, options_.batcher, &budget_, &pool_metered_,
                 metrics),
      boards_(Kind::kBoards, options_.batcher, &budget_, &pool_metered_,
              metrics),
      stall_watch_(options_.stream_stall_timeout) {
  metrics_->SetQueueLimitItems(options_.max_queued_items);
  metrics_->SetBuildInfo(options_.version);
}

SamplerServiceImpl::~SamplerServiceImpl() { Drain(); }

void SamplerServiceImpl::Drain() {
  enumerate_.Drain();
  categorical_.Drain();
  gamma_.Drain();
  dirichlet_.Drain();
  boards_.Drain();
}

std::vector<std::string> SamplerServiceImpl::DeserializedMethods() {
  // SamplerServiceBase makes every other method raw (gRPC keeps which is
  // which private to its Server).
  return {absl::StrCat("/", v1::SamplerService::service_full_name(),
                       "/GetServerInfo")};
}

grpc::ServerUnaryReactor* SamplerServiceImpl::Enumerate(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* body,
    grpc::ByteBuffer* wire) {
  return ServeRawUnary<v1::EnumerateRequest, v1::EnumerateResponse>(
      rpc::kEnumerate, context, *body,
      [&](const std::shared_ptr<const v1::EnumerateRequest>& request) {
        return ParseEnumerate(*request, options_.limits);
      },
      BindEnumerate, wire, enumerate_,
      EnvOf(options_, metrics_, connection_calls_.get()));
}

grpc::ServerUnaryReactor* SamplerServiceImpl::SampleCategorical(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* body,
    grpc::ByteBuffer* wire) {
  return ServeRawUnary<v1::SampleCategoricalRequest,
                       v1::SampleCategoricalResponse>(
      rpc::kSampleCategorical, context, *body,
      [&](std::shared_ptr<const v1::SampleCategoricalRequest> request) {
        return ParseCategorical(std::move(request), options_.limits, seeds_,
                                /*streamed=*/false);
      },
      BindCategorical, wire, categorical_,
      EnvOf(options_, metrics_, connection_calls_.get()));
}

grpc::ServerWriteReactor<grpc::ByteBuffer>*
SamplerServiceImpl::SampleCategoricalStream(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* body) {
  return ServeRawStream<CategoricalJob, v1::SampleCategoricalStreamResponse>(
      rpc::kSampleCategoricalStream, context, *body,
      [&](std::shared_ptr<const v1::SampleCategoricalRequest> request) {
        return ParseCategorical(std::move(request), options_.limits, seeds_,
                                /*streamed=*/true);
      },
      "max_rows_per_chunk",
      &v1::SampleCategoricalStreamRequest::max_rows_per_chunk, options_,
      SliceCategorical, PieceToWire, categorical_,
      EnvOf(options_, metrics_, connection_calls_.get()), &stall_watch_);
}

grpc::ServerUnaryReactor* SamplerServiceImpl::SampleGamma(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* body,
    grpc::ByteBuffer* wire) {
  return ServeRawUnary<v1::SampleGammaRequest, v1::SampleGammaResponse>(
      rpc::kSampleGamma, context, *body,
      [&](const std::shared_ptr<const v1::SampleGammaRequest>& request) {
        return ParseGamma(*request, options_.limits, seeds_,
                          /*streamed=*/false);
      },
      BindGamma, wire, gamma_,
      EnvOf(options_, metrics_, connection_calls_.get()));
}

grpc::ServerWriteReactor<grpc::ByteBuffer>*
SamplerServiceImpl::SampleGammaStream(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* body) {
  return ServeRawStream<GammaJob, v1::SampleGammaStreamResponse>(
      rpc::kSampleGammaStream, context, *body,
      [&](const std::shared_ptr<const v1::SampleGammaRequest>& request) {
        return ParseGamma(*request, options_.limits, seeds_,
                          /*streamed=*/true);
      },
      "max_samples_per_chunk",
      &v1::SampleGammaStreamRequest::max_samples_per_chunk, options_,
      SliceGamma, PieceToWire, gamma_,
      EnvOf(options_, metrics_, connection_calls_.get()), &stall_watch_);
}

grpc::ServerUnaryReactor* SamplerServiceImpl::SampleDirichlet(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* body,
    grpc::ByteBuffer* wire) {
  return ServeRawUnary<v1::SampleDirichletRequest, v1::SampleDirichletResponse>(
      rpc::kSampleDirichlet, context, *body,
      [&](const std::shared_ptr<const v1::SampleDirichletRequest>& request) {
        return ParseDirichlet(*request, options_.limits, seeds_);
      },
      BindDirichlet, wire, dirichlet_,
      EnvOf(options_, metrics_, connection_calls_.get()));
}

grpc::ServerUnaryReactor* SamplerServiceImpl::SampleBoards(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* body,
    grpc::ByteBuffer* wire) {
  return ServeRawUnary<v1::SampleBoardsRequest, v1::SampleBoardsResponse>(
      rpc::kSampleBoards, context, *body,
      [&](const std::shared_ptr<const v1::SampleBoardsRequest>& request) {
        return ParseBoards(*request, options_.limits, seeds_,
                           /*streamed=*/false);
      },
      BindBoards, wire, boards_,
      EnvOf(options_, metrics_, connection_calls_.get()));
}

grpc::ServerWriteReactor<grpc::ByteBuffer>*
SamplerServiceImpl::SampleBoardsStream(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* body) {
  return ServeRawStream<BoardsJob, v1::SampleBoardsStreamResponse>(
      rpc::kSampleBoardsStream, context, *body,
      [&](const std::shared_ptr<const v1::SampleBoardsRequest>& request) {
        return ParseBoards(*request, options_.limits, seeds_,
                           /*streamed=*/true);
      },
      "max_positions_per_chunk",
      &v1::SampleBoardsStreamRequest::max_positions_per_chunk, options_,
      SliceBoards, PieceToWire, boards_,
      EnvOf(options_, metrics_, connection_calls_.get()), &stall_watch_);
}

grpc::ServerUnaryReactor* SamplerServiceImpl::GetServerInfo(
    grpc::CallbackServerContext* context,
    const v1::GetServerInfoRequest* /*request*/,
    v1::GetServerInfoResponse* response) {
  const CallEnv env = EnvOf(options_, metrics_, connection_calls_.get());
  if (absl::Status denied = Authenticate(env.auth, *context); !denied.ok()) {
    return RefuseUnary(rpc::kGetServerInfo, context, denied, env);
  }
  AddContractVersion(context);
  const Clock::time_point start = Clock::now();
  const BackendInfo info = backend_->Info();
  response->set_version(options_.version);
  response->set_randomness_contract_version(kernels::kContractVersion);
  response->set_backend(info.name == "cuda" ? v1::BACKEND_CUDA
                                            : v1::BACKEND_CPU);
  response->set_backend_reason(info.reason);
  for (const DeviceInfo& d : info.devices) {
    v1::Device* device = response->add_devices();
    device->set_index(d.index);
    device->set_name(d.name);
    device->set_memory_bytes(d.memory_bytes);
    device->set_compute_capability(d.compute_capability);
    device->set_multiprocessors(d.multiprocessors);
    device->set_unavailable_reason(d.unavailable_reason);
  }
  v1::Limits* limits = response->mutable_limits();
  limits->set_max_items_per_request(options_.limits.max_items_per_request);
  limits->set_max_message_bytes(options_.limits.max_message_bytes);
  limits->set_max_batch_items(options_.batcher.max_batch_items);
  limits->set_max_batch_delay_seconds(
      absl::ToDoubleSeconds(options_.batcher.max_batch_delay));
  limits->set_max_queued_items(options_.max_queued_items);
  limits->set_max_board_sites(kernels::kMaxBoardSites);
  // Every limit, each reachable (issue 9 item 7; sampler.proto says what
  // each means).
  limits->set_max_items_per_stream(options_.limits.max_items_per_stream);
  limits->set_max_enumerate_pairs(options_.limits.max_enumerate_pairs);
  limits->set_max_enumerate_terms(options_.limits.max_enumerate_terms);
  limits->set_max_enumerate_support(kernels::kMaxEnumerateSupport);
  limits->set_max_categorical_draws(kernels::kMaxCategoricalDraws);
  limits->set_max_board_colours(kernels::kMaxBoardColours);
  const DerivedLimits derived = DeriveLimits(options_.limits);
  limits->set_max_gamma_samples_float32(derived.max_gamma_samples_float32);
  limits->set_max_gamma_samples_float64(derived.max_gamma_samples_float64);
  limits->set_max_dirichlet_elements_float32(
      derived.max_dirichlet_elements_float32);
  limits->set_max_dirichlet_elements_float64(
      derived.max_dirichlet_elements_float64);
  limits->set_max_enumerate_elements_float32(
      derived.max_enumerate_elements_float32);
  limits->set_max_enumerate_elements_float64(
      derived.max_enumerate_elements_float64);
  limits->set_max_categorical_items(derived.max_categorical_items);
  limits->set_max_board_words(derived.max_board_words);
  limits->set_max_stream_chunk_items(derived.max_stream_chunk_items);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  EndCall(env, rpc::kGetServerInfo,
          options_.access_log != nullptr ? context->peer() : "",
          absl::OkStatus(), 0, SecondsSince(start), /*refused=*/false);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace sampler::server
