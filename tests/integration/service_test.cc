// Integration tests: the real sampler-server binary as a child process,
// called over real gRPC on loopback, its metrics scraped over HTTP.
//
// What they prove, suite by suite (each suite runs one server with the
// flags it needs):
//   ServiceTest: every RPC answers exactly what the kernels' CPU functions
//     give for the same request and seed (bit for bit); bad requests get
//     INVALID_ARGUMENT naming field, index and value; over-limit requests get
//     OUT_OF_RANGE naming the Stream RPC; streams deliver answers larger
//     than one message, in order; health, reflection and the metric
//     families are there; a stream cancelled midway harms nobody.
//   SlowBatchTest: deadlines and client cancellation while a job is queued
//     (dropped unexecuted, counted under the right code), and the
//     queue-full answer for unary calls and streams.
//   BatchingTest / NoBatchingTest: concurrent clients share batches (seen in
//     sampler_batch_requests), or do not when batching is off; a request's
//     answer does not depend on its batch.
//   StallTest: a stream whose client stops reading is cancelled after
//     --stream_stall_timeout, counted and let go of.
//   ShutdownTest: SIGTERM lets calls in flight finish, refuses new ones and
//     exits 0.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/contract.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/gamma.h"
#include "sampler/v1/sampler.grpc.pb.h"
#include "tests/integration/metrics_scrape.h"
#include "tests/integration/server_process.h"

namespace sampler::testing {
namespace {

namespace v1 = ::sampler::v1;
namespace kernels = ::sampler::kernels;
using ::grpc::StatusCode;

// Longest any single call may take before the test calls it failed: no
// call of this suite comes near it on a loaded two-core machine.
constexpr absl::Duration kCallTimeout = absl::Seconds(30);
// How long to wait for something the server should do promptly (a metric to
// move, a socket to close).
constexpr absl::Duration kPatience = absl::Seconds(10);

// ------------------------------------------------------------- plumbing --

// The backend under test: "cpu" unless SAMPLER_TEST_BACKEND says "cuda" (the
// GPU host runs the whole suite both ways). Sampling answers are the CPU
// functions' bit for bit on either; enumeration on a GPU agrees within the
// tolerance its kernels document (EnumerateMatches).
std::string BackendUnderTest() {
  const char* backend = std::getenv("SAMPLER_TEST_BACKEND");
  return backend != nullptr && std::string(backend) == "cuda" ? "cuda" : "cpu";
}

// The server binary built beside this test, or SAMPLER_SERVER_BIN from the
// environment (a bundle copied to a GPU host has other paths).
std::string ServerBinary() {
  const char* bin = std::getenv("SAMPLER_SERVER_BIN");
  return bin != nullptr ? bin : SAMPLER_SERVER_BIN;
}

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> flags) {
  // Two CPU workers: the CI machine has two cores.
  flags.push_back("--backend=" + BackendUnderTest());
  flags.push_back("--worker_threads=2");
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(ServerBinary(), flags);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// Stops the server and checks that it exited cleanly.
void StopServer(std::unique_ptr<ServerProcess>& server) {
  if (server == nullptr) return;
  EXPECT_EQ(server->Stop(), 0) << "sampler-server output:\n"
                               << server->Stderr();
  server.reset();
}

std::shared_ptr<grpc::Channel> NewChannel(const ServerProcess& server) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  // A fresh connection per channel even to the same address, so that
  // "several channels" means several connections.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(server.address(),
                                   grpc::InsecureChannelCredentials(), args);
}

std::unique_ptr<v1::SamplerService::Stub> NewStub(const ServerProcess& server) {
  return v1::SamplerService::NewStub(NewChannel(server));
}

void SetDeadline(grpc::ClientContext& context,
                 absl::Duration timeout = kCallTimeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(status.error_code(), ": ", status.error_message());
}

// A unary call made with the callback API, so that a test can have many in
// flight at once and wait for each with a bound.
template <typename Request, typename Response>
struct AsyncCall {
  grpc::ClientContext context;
  Request request;
  Response response;

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;

  AsyncCall() = default;
  AsyncCall(const AsyncCall&) = delete;
  AsyncCall& operator=(const AsyncCall&) = delete;
  // The context must outlive the call: a test that gives up early (a
  // failed assertion) cancels it and waits for the callback.
  ~AsyncCall() {
    if (!Done()) {
      context.TryCancel();
      Wait();
    }
  }

  bool Wait(absl::Duration timeout = kCallTimeout) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                       [&] { return done; });
  }
  bool Done() {
    std::lock_guard<std::mutex> lock(mu);
    return done;
  }
  grpc::Status Status() {
    std::lock_guard<std::mutex> lock(mu);
    return status;
  }
};

using AsyncGamma = AsyncCall<v1::SampleGammaRequest, v1::SampleGammaResponse>;
using AsyncCategorical =
    AsyncCall<v1::SampleCategoricalRequest, v1::SampleCategoricalResponse>;

// Starts stub->async()->Method(...) on `call`. The callback holds a plain
// pointer: were it to hold the last reference, the context would be
// destroyed inside gRPC's own teardown of the call (a use after free). It
// notifies under the lock, so that ~AsyncCall cannot run before it is done
// with `call`.
template <typename Call, typename Method>
void Launch(const std::shared_ptr<Call>& call, Method method,
            absl::Duration timeout = kCallTimeout) {
  SetDeadline(call->context, timeout);
  Call* raw = call.get();
  method(&raw->context, &raw->request, &raw->response,
         [raw](grpc::Status status) {
           std::lock_guard<std::mutex> lock(raw->mu);
           raw->done = true;
           raw->status = std::move(status);
           raw->cv.notify_all();
         });
}

std::shared_ptr<AsyncGamma> LaunchGamma(v1::SamplerService::Stub& stub,
                                        v1::SampleGammaRequest request,
                                        absl::Duration timeout = kCallTimeout) {
  auto call = std::make_shared<AsyncGamma>();
  call->request = std::move(request);
  Launch(
      call, [&stub](auto... args) { stub.async()->SampleGamma(args...); },
      timeout);
  return call;
}

std::shared_ptr<AsyncCategorical> LaunchCategorical(
    v1::SamplerService::Stub& stub, v1::SampleCategoricalRequest request) {
  auto call = std::make_shared<AsyncCategorical>();
  call->request = std::move(request);
  Launch(call,
         [&stub](auto... args) { stub.async()->SampleCategorical(args...); });
  return call;
}

// Reads a whole server stream: its status and chunks in arrival order.
template <typename Chunk>
struct StreamResult {
  grpc::Status status;
  std::vector<Chunk> chunks;
};

// More chunks than any stream of these tests has: a runaway stream is
// cancelled (and fails its test) instead of filling memory.
constexpr size_t kMaxChunks = 100000;

template <typename Chunk, typename Open>
StreamResult<Chunk> ReadStream(Open open) {
  grpc::ClientContext context;
  SetDeadline(context);
  std::unique_ptr<grpc::ClientReader<Chunk>> reader = open(&context);
  StreamResult<Chunk> result;
  Chunk chunk;
  while (reader->Read(&chunk)) {
    result.chunks.push_back(chunk);
    if (result.chunks.size() == kMaxChunks) context.TryCancel();
  }
  result.status = reader->Finish();
  return result;
}

// --------------------------------------------------------------- metrics --

MetricsText Scrape(const ServerProcess& server) {
  absl::StatusOr<std::string> text = HttpGet(server.metrics_port(), "/metrics");
  EXPECT_TRUE(text.ok()) << text.status();
  return MetricsText(text.ok() ? *text : "");
}

// Waits (bounded) until `condition` holds of a scrape; the last scrape's
// verdict.
bool WaitForMetrics(const ServerProcess& server,
                    const std::function<bool(const MetricsText&)>& condition,
                    absl::Duration timeout = kPatience) {
  const absl::Time deadline = absl::Now() + timeout;
  for (int i = 0; i < 100000; ++i) {
    if (condition(Scrape(server))) return true;
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));  // between scrapes
  }
  return false;
}

std::string Requests(absl::string_view method, absl::string_view code) {
  return absl::StrCat("sampler_requests_total{code=\"", code, "\",method=\"",
                      method, "\"}");
}
std::string ByMethod(absl::string_view name, absl::string_view method) {
  return absl::StrCat(name, "{method=\"", method, "\"}");
}
std::string QueueDepth(absl::string_view method) {
  return ByMethod("sampler_queue_depth", method);
}
constexpr char kInflight[] = "sampler_inflight_requests";

// ----------------------------------------------------------- comparisons --

template <typename T>
::testing::AssertionResult SameBits(const std::vector<T>& got,
                                    const std::vector<T>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << "size " << got.size() << ", expected " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      return ::testing::AssertionFailure()
             << "first difference at [" << i << "]: " << got[i] << ", expected "
             << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// The values of an answer's Reals in precision T; the answer must use T's
// representation.
template <typename T>
std::vector<T> Values(const v1::Reals& reals) {
  if constexpr (std::is_same_v<T, float>) {
    EXPECT_TRUE(reals.has_f32()) << "a float32 answer must be f32";
    return {reals.f32().values().begin(), reals.f32().values().end()};
  } else {
    EXPECT_TRUE(reals.has_f64()) << "a float64 answer must be f64";
    return {reals.f64().values().begin(), reals.f64().values().end()};
  }
}

template <typename T>
void SetReals(const std::vector<T>& values, v1::Reals* reals) {
  if constexpr (std::is_same_v<T, float>) {
    reals->mutable_f32()->mutable_values()->Assign(values.begin(),
                                                   values.end());
  } else {
    reals->mutable_f64()->mutable_values()->Assign(values.begin(),
                                                   values.end());
  }
}

template <typename T>
v1::Precision PrecisionOf() {
  return std::is_same_v<T, float> ? v1::PRECISION_FLOAT32
                                  : v1::PRECISION_FLOAT64;
}

// -------------------------------------------------- requests and answers --

struct Group {
  double shape;
  double scale;
  int64_t count;
};

template <typename T>
v1::SampleGammaRequest GammaGroupsRequest(const std::vector<Group>& groups,
                                          uint64_t seed,
                                          bool log_output = false) {
  v1::SampleGammaRequest request;
  for (const Group& g : groups) {
    v1::GammaGroup* group = request.mutable_groups()->add_groups();
    group->set_shape(g.shape);
    group->set_scale(g.scale);
    group->set_count(g.count);
  }
  request.set_precision(PrecisionOf<T>());
  request.set_log_output(log_output);
  request.set_seed(seed);
  return request;
}

template <typename T>
std::vector<T> GammaGroupsCpu(const std::vector<Group>& groups, uint64_t seed,
                              bool log_output = false) {
  std::vector<kernels::GammaGroup<T>> g;
  int64_t total = 0;
  for (const Group& group : groups) {
    g.push_back({static_cast<T>(group.shape),
                 static_cast<T>(group.scale == 0 ? 1.0 : group.scale),
                 group.count});
    total += group.count;
  }
  std::vector<T> out(static_cast<size_t>(total));
  const absl::Status s = kernels::SampleGammaGroupedCpu<T>(
      g, log_output, seed, /*first_item=*/0, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// A small gamma request whose size and parameters vary with `i`.
v1::SampleGammaRequest SmallGamma(int i, uint64_t seed) {
  return GammaGroupsRequest<float>(
      {{0.3 + 0.1 * (i % 7), 1.0 + i % 3, 5 + (i * 13) % 40}}, seed);
}
std::vector<float> SmallGammaCpu(int i, uint64_t seed) {
  return GammaGroupsCpu<float>(
      {{0.3 + 0.1 * (i % 7), 1.0 + i % 3, 5 + (i * 13) % 40}}, seed);
}

// Categorical: `rows` rows of K = 37 weights (a remnant of 5 past the
// warp-sized blocks), some zero.
std::vector<double> CategoricalWeights(int64_t rows, int salt) {
  std::vector<double> w(static_cast<size_t>(rows * 37));
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = (i * 7 + salt) % 11 == 0 ? 0.0 : 0.25 + ((i * 31 + salt) % 17);
  }
  return w;
}

template <typename T>
v1::SampleCategoricalRequest CategoricalRequest(const std::vector<double>& w,
                                                int32_t draws, uint64_t seed) {
  v1::SampleCategoricalRequest request;
  request.set_categories(37);
  SetReals(std::vector<T>(w.begin(), w.end()), request.mutable_values());
  request.set_draws(draws);
  request.set_precision(PrecisionOf<T>());
  request.set_seed(seed);
  return request;
}

template <typename T>
std::vector<int32_t> CategoricalCpu(
    const std::vector<double>& w, int32_t draws, uint64_t seed,
    kernels::WeightKind kind = kernels::WeightKind::kWeights) {
  const std::vector<T> values(w.begin(), w.end());
  kernels::CategoricalShape shape;
  shape.rows = static_cast<int64_t>(w.size()) / 37;
  shape.categories = 37;
  shape.draws = draws;
  std::vector<int32_t> out(static_cast<size_t>(shape.rows * draws));
  const absl::Status s = kernels::SampleCategoricalCpu<T>(
      values, shape, kind, seed, /*first_row=*/0, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

v1::SampleBoardsRequest BoardsRequest(int rows, int cols,
                                      const std::vector<int32_t>& stones,
                                      int64_t count, uint64_t seed) {
  v1::SampleBoardsRequest request;
  request.set_rows(rows);
  request.set_cols(cols);
  for (int32_t s : stones) request.add_stones(s);
  request.set_count(count);
  request.set_seed(seed);
  return request;
}

std::vector<uint64_t> BoardsCpu(int rows, int cols,
                                const std::vector<int32_t>& stones,
                                int64_t count, uint64_t seed) {
  kernels::BoardSpec spec;
  spec.rows = rows;
  spec.cols = cols;
  spec.stones = stones;
  std::vector<uint64_t> out(
      static_cast<size_t>(count * static_cast<int64_t>(stones.size()) *
                          kernels::BoardWords64(spec)));
  const absl::Status s = kernels::SampleBoardsCpu(
      spec, seed, /*first_position=*/0, count, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// ------------------------------------------------------------ reflection --

// The services that grpc.reflection.v1alpha lists, through a generic stub
// and hand-encoded messages (gRPC ships no generated C++ for reflection
// here): ServerReflectionRequest.list_services is field 7 (a string);
// ServerReflectionResponse.list_services_response is field 6, whose
// ListServiceResponse.service (1) holds ServiceResponse.name (1).
absl::StatusOr<std::vector<std::string>> ListServices(
    std::shared_ptr<grpc::Channel> channel) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  SetDeadline(context, kPatience);
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&context,
                       "/grpc.reflection.v1alpha.ServerReflection/"
                       "ServerReflectionInfo",
                       &cq);
  // Each step waits for its own tag; the context's deadline bounds them.
  auto step = [&cq](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    if (!cq.Next(&tag, &ok)) return false;
    return ok && reinterpret_cast<intptr_t>(tag) == want;
  };
  const std::string request_bytes("\x3a\x01*", 3);  // list_services: "*"
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  bool ok = true;
  call->StartCall(reinterpret_cast<void*>(1));
  ok = ok && step(1);
  if (ok) call->Write(request, reinterpret_cast<void*>(2));
  ok = ok && step(2);
  if (ok) call->Read(&response, reinterpret_cast<void*>(3));
  ok = ok && step(3);
  if (ok) call->WritesDone(reinterpret_cast<void*>(4));
  ok = ok && step(4);
  if (!ok) context.TryCancel();
  call->Finish(&status, reinterpret_cast<void*>(5));
  // Drain whatever is left (a failed step may leave its own tag behind).
  void* tag = nullptr;
  bool tag_ok = false;
  while (cq.Next(&tag, &tag_ok) && reinterpret_cast<intptr_t>(tag) != 5) {
  }
  cq.Shutdown();
  while (cq.Next(&tag, &tag_ok)) {
  }
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("reflection: ", Describe(status)));
  }
  if (!ok) return absl::UnavailableError("reflection: a step failed");

  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) {
    return absl::DataLossError("reflection: unreadable response");
  }
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  std::vector<std::string> names;
  google::protobuf::UnknownFieldSet top;
  if (!top.ParseFromString(bytes)) {
    return absl::DataLossError("reflection: not a protobuf message");
  }
  for (int i = 0; i < top.field_count(); ++i) {
    const auto& list = top.field(i);
    if (list.number() != 6 ||
        list.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    google::protobuf::UnknownFieldSet services;
    if (!services.ParseFromString(list.length_delimited())) continue;
    for (int j = 0; j < services.field_count(); ++j) {
      const auto& service = services.field(j);
      if (service.number() != 1 ||
          service.type() !=
              google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
        continue;
      }
      google::protobuf::UnknownFieldSet name;
      if (!name.ParseFromString(service.length_delimited())) continue;
      for (int k = 0; k < name.field_count(); ++k) {
        if (name.field(k).number() == 1 &&
            name.field(k).type() ==
                google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
          names.push_back(name.field(k).length_delimited());
        }
      }
    }
  }
  return names;
}

grpc::health::v1::HealthCheckResponse::ServingStatus HealthOf(
    grpc::health::v1::Health::Stub& health, const std::string& service,
    grpc::Status* status_out = nullptr) {
  grpc::ClientContext context;
  SetDeadline(context, kPatience);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = health.Check(&context, request, &response);
  if (status_out != nullptr) *status_out = status;
  return status.ok() ? response.status()
                     : grpc::health::v1::HealthCheckResponse::UNKNOWN;
}

// ================================================================ suites ===

// A suite of tests that share one server, started with the derived
// fixture's static Flags() before its first test and stopped (exit code 0
// checked) after its last.
template <typename Suite>
class ServerSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartServer(Suite::Flags()).release();
  }
  static void TearDownTestSuite() {
    std::unique_ptr<ServerProcess> server(server_);
    server_ = nullptr;
    StopServer(server);
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr) << "the server did not start";
    stub_ = NewStub(*server_);
  }

  static inline ServerProcess* server_ = nullptr;
  std::unique_ptr<v1::SamplerService::Stub> stub_;
};

// One server for the correctness, error, stream and observability tests.
// A 1 MiB message limit makes streaming of large answers necessary, and a
// small unary item limit makes OUT_OF_RANGE cheap to reach (so does the
// term limit).
class ServiceTest : public ServerSuite<ServiceTest> {
 public:
  static constexpr int64_t kMaxMessageBytes = 1 << 20;
  static constexpr int64_t kMaxItemsPerRequest = 200000;
  static constexpr int64_t kMaxEnumerateTerms = 300000;

  static std::vector<std::string> Flags() {
    return {absl::StrCat("--max_message_bytes=", kMaxMessageBytes),
            absl::StrCat("--max_items_per_request=", kMaxItemsPerRequest),
            absl::StrCat("--max_enumerate_terms=", kMaxEnumerateTerms),
            "--max_batch_delay=1ms"};
  }
};

// ----------------------------------------------------- answers = kernels --

// The CPU backend's enumeration is EnumerateCpu bit for bit. The GPU's sums
// in another order: relative 1e-6 (float) or 1e-12 (double) per element in
// linear space, the documented bound of the CUDA kernels, and in log space
// an absolute error of that size plus eps * |log r|; exact zeros stay exact.
template <typename T>
bool EnumerateMatches(const std::vector<T>& got, const std::vector<T>& want,
                      v1::ProbabilitySpace out) {
  if (BackendUnderTest() == "cpu") return SameBits(got, want);
  if (got.size() != want.size()) return false;
  const double rel = std::is_same_v<T, float> ? 1e-6 : 1e-12;
  const double eps = std::numeric_limits<T>::epsilon();
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isinf(w) || w == 0) {
      if (g != w) return false;
      continue;
    }
    const double err = std::fabs(g - w);
    const double tol = out == v1::PROBABILITY_SPACE_LOG
                           ? rel + 4 * eps * std::fabs(w)
                           : rel * std::fabs(w);
    if (!(err <= tol)) return false;
  }
  return true;
}

template <typename T>
void CheckEnumerate(v1::SamplerService::Stub& stub, v1::ProbabilitySpace in,
                    v1::ProbabilitySpace out) {
  SCOPED_TRACE(absl::StrCat(sizeof(T) == 4 ? "float32" : "float64", " in ", in,
                            " out ", out));
  // Two problems: dice-like terms with offsets, and a lopsided pair.
  const std::vector<std::vector<std::pair<int64_t, std::vector<T>>>> problems =
      {{{1, {1, 1, 1, 1, 1, 1}}, {-3, {0.5, 0.25, 0.125, 0.125}}, {0, {2}}},
       {{100, {0.9, 0, 0.1}}, {-7, {0.001, 0.999}}}};
  v1::EnumerateRequest request;
  request.set_precision(PrecisionOf<T>());
  request.set_input_space(in);
  request.set_output_space(out);
  const auto space = [](v1::ProbabilitySpace s) {
    return s == v1::PROBABILITY_SPACE_LOG ? kernels::ProbSpace::kLog
                                          : kernels::ProbSpace::kLinear;
  };
  for (const auto& problem : problems) {
    v1::EnumerateProblem* p = request.add_problems();
    for (const auto& [offset, values] : problem) {
      v1::Pmf* term = p->add_terms();
      term->set_offset(offset);
      std::vector<T> v = values;
      if (in == v1::PROBABILITY_SPACE_LOG) {
        for (T& x : v) x = std::log(x);
      }
      SetReals(v, term->mutable_probabilities());
    }
  }
  grpc::ClientContext context;
  SetDeadline(context);
  v1::EnumerateResponse response;
  const grpc::Status status = stub.Enumerate(&context, request, &response);
  ASSERT_TRUE(status.ok()) << Describe(status);
  ASSERT_EQ(response.results_size(), static_cast<int>(problems.size()));
  for (size_t p = 0; p < problems.size(); ++p) {
    // The kernel sees exactly what the server parsed: the request's values.
    std::vector<std::vector<T>> values;
    for (const v1::Pmf& term : request.problems(static_cast<int>(p)).terms()) {
      values.push_back(Values<T>(term.probabilities()));
    }
    std::vector<kernels::PmfTerm<T>> terms;
    for (size_t t = 0; t < values.size(); ++t) {
      terms.push_back({problems[p][t].first, values[t]});
    }
    absl::StatusOr<kernels::Pmf<T>> expected =
        kernels::EnumerateCpu<T>(terms, space(in), space(out));
    ASSERT_TRUE(expected.ok()) << expected.status();
    const v1::Pmf& result = response.results(static_cast<int>(p));
    EXPECT_EQ(result.offset(), expected->offset) << "problem " << p;
    EXPECT_TRUE(EnumerateMatches(Values<T>(result.probabilities()),
                                 expected->values, out))
        << "problem " << p;
  }
}

TEST_F(ServiceTest, EnumerateEqualsEnumerateCpu) {
  CheckEnumerate<double>(*stub_, v1::PROBABILITY_SPACE_LINEAR,
                         v1::PROBABILITY_SPACE_LINEAR);
  CheckEnumerate<float>(*stub_, v1::PROBABILITY_SPACE_LINEAR,
                        v1::PROBABILITY_SPACE_LOG);
  CheckEnumerate<double>(*stub_, v1::PROBABILITY_SPACE_LOG,
                         v1::PROBABILITY_SPACE_LINEAR);
}

// Issue 15: the packed form and repeat counts are only other spellings of
// the explicit problem. Two problems (a die repeated three times with a
// shifted coin; 200 Bernoulli terms) sent three ways: explicit copies,
// explicit terms with repeats, packed with repeats. The answers are the
// same (bit for bit on the CPU backend).
template <typename T>
void CheckEnumeratePackedAndRepeated(v1::SamplerService::Stub& stub) {
  SCOPED_TRACE(sizeof(T) == 4 ? "float32" : "float64");
  struct Problem {
    std::vector<std::pair<int64_t, std::vector<T>>> terms;
    std::vector<int64_t> repeats;
  };
  Problem bernoulli;
  for (int i = 0; i < 200; ++i) {
    const T p = static_cast<T>((i + 1) / 201.0);
    bernoulli.terms.push_back({0, {1 - p, p}});
  }
  const std::vector<Problem> problems = {
      {{{1, {1, 1, 1, 1, 1, 1}}, {-3, {0.5, 0.5}}}, {3, 1}}, bernoulli};
  auto request = [&](int form) {
    v1::EnumerateRequest r;
    r.set_precision(PrecisionOf<T>());
    r.set_output_space(v1::PROBABILITY_SPACE_LOG);
    for (const Problem& problem : problems) {
      v1::EnumerateProblem* p = r.add_problems();
      std::vector<T> values;
      for (size_t t = 0; t < problem.terms.size(); ++t) {
        const auto& [offset, term_values] = problem.terms[t];
        const int64_t k = problem.repeats.empty() ? 1 : problem.repeats[t];
        if (form == 0) {  // explicit copies
          for (int64_t i = 0; i < k; ++i) {
            v1::Pmf* term = p->add_terms();
            term->set_offset(offset);
            SetReals(term_values, term->mutable_probabilities());
          }
          continue;
        }
        p->add_repeats(k);
        if (form == 1) {  // explicit terms, repeated
          v1::Pmf* term = p->add_terms();
          term->set_offset(offset);
          SetReals(term_values, term->mutable_probabilities());
        } else {  // packed, repeated
          values.insert(values.end(), term_values.begin(), term_values.end());
          p->add_lengths(static_cast<int64_t>(term_values.size()));
          p->add_offsets(offset);
        }
      }
      if (form == 2) SetReals(values, p->mutable_values());
    }
    return r;
  };
  std::vector<v1::EnumerateResponse> responses(3);
  for (int form = 0; form < 3; ++form) {
    grpc::ClientContext context;
    SetDeadline(context);
    const grpc::Status status =
        stub.Enumerate(&context, request(form), &responses[form]);
    ASSERT_TRUE(status.ok()) << "form " << form << ": " << Describe(status);
    ASSERT_EQ(responses[form].results_size(), 2);
  }
  // 1 + 3 * 5 + 1 and 201 points.
  EXPECT_EQ(Values<T>(responses[0].results(0).probabilities()).size(), 17u);
  EXPECT_EQ(Values<T>(responses[0].results(1).probabilities()).size(), 201u);
  for (int form = 1; form < 3; ++form) {
    for (int p = 0; p < 2; ++p) {
      EXPECT_EQ(responses[form].results(p).offset(),
                responses[0].results(p).offset());
      EXPECT_TRUE(EnumerateMatches(
          Values<T>(responses[form].results(p).probabilities()),
          Values<T>(responses[0].results(p).probabilities()),
          v1::PROBABILITY_SPACE_LOG))
          << "form " << form << " problem " << p;
    }
  }
}

TEST_F(ServiceTest, EnumeratePackedAndRepeatedEqualExplicit) {
  CheckEnumeratePackedAndRepeated<double>(*stub_);
  CheckEnumeratePackedAndRepeated<float>(*stub_);
}

// A tiny request asking for 2^62 terms is refused at once, before any work.
TEST_F(ServiceTest, EnumerateRepeatsAreBounded) {
  v1::EnumerateRequest request;
  v1::EnumerateProblem* problem = request.add_problems();
  problem->mutable_values()->mutable_f32()->add_values(1);
  problem->set_term_length(1);
  problem->add_repeats(int64_t{1} << 62);
  grpc::ClientContext context;
  SetDeadline(context);
  v1::EnumerateResponse response;
  const grpc::Status status = stub_->Enumerate(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::OUT_OF_RANGE)
      << Describe(status);
  EXPECT_TRUE(absl::StrContains(status.error_message(), "max_enumerate_terms"))
      << status.error_message();
  // --max_enumerate_terms is exact: at it accepted, one more refused.
  for (const int64_t terms : {kMaxEnumerateTerms, kMaxEnumerateTerms + 1}) {
    problem->set_repeats(0, terms);
    grpc::ClientContext at_limit;
    SetDeadline(at_limit);
    const grpc::Status s = stub_->Enumerate(&at_limit, request, &response);
    if (terms == kMaxEnumerateTerms) {
      EXPECT_TRUE(s.ok()) << Describe(s);
    } else {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE) << Describe(s);
      EXPECT_TRUE(absl::StrContains(
          s.error_message(),
          absl::StrCat("max_enumerate_terms = ", kMaxEnumerateTerms)))
          << s.error_message();
    }
  }
}

TEST_F(ServiceTest, SampleCategoricalEqualsTheCpuKernel) {
  const std::vector<double> w = CategoricalWeights(45, 1);
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleCategoricalResponse response;
    const grpc::Status status = stub_->SampleCategorical(
        &context, CategoricalRequest<float>(w, 3, 42), &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    EXPECT_EQ(response.rows(), 45);
    EXPECT_EQ(response.draws(), 3);
    EXPECT_EQ(response.seed(), 42u);
    EXPECT_TRUE(SameBits(std::vector<int32_t>(response.indices().begin(),
                                              response.indices().end()),
                         CategoricalCpu<float>(w, 3, 42)));
  }
  {
    // Logits in float64, one draw (draws = 0 means 1).
    std::vector<double> logits = w;
    for (double& x : logits) x = std::log(x);  // zeros become -inf
    v1::SampleCategoricalRequest request =
        CategoricalRequest<double>(logits, 0, 7);
    request.set_input(v1::CATEGORICAL_INPUT_LOGITS);
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleCategoricalResponse response;
    const grpc::Status status =
        stub_->SampleCategorical(&context, request, &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    EXPECT_EQ(response.draws(), 1);
    EXPECT_TRUE(SameBits(
        std::vector<int32_t>(response.indices().begin(),
                             response.indices().end()),
        CategoricalCpu<double>(logits, 1, 7, kernels::WeightKind::kLogits)));
  }
}

// A categorical request of `rows` rows of K = `categories` (zero weights
// scattered among them), its precision and input kind, and its answer
// from the CPU kernel.
struct CategoricalCase {
  int64_t categories;
  int64_t rows;
  int32_t draws;
  bool float32;
  bool logits;
};

std::string CaseName(const CategoricalCase& c) {
  return absl::StrCat("K ", c.categories, " x ", c.rows, " rows",
                      c.float32 ? " f32" : " f64",
                      c.logits ? " logits" : " weights");
}

std::vector<double> CaseValues(const CategoricalCase& c) {
  std::vector<double> w(static_cast<size_t>(c.rows * c.categories));
  for (size_t i = 0; i < w.size(); ++i) {
    const double weight =
        (i * 13 + c.categories) % 7 == 0 ? 0.0 : 0.5 + (i * 29) % 23;
    w[i] = c.logits ? std::log(weight) : weight;
  }
  return w;
}

v1::SampleCategoricalRequest CaseRequest(const CategoricalCase& c) {
  const std::vector<double> w = CaseValues(c);
  v1::SampleCategoricalRequest request;
  request.set_categories(c.categories);
  if (c.float32) {
    SetReals(std::vector<float>(w.begin(), w.end()), request.mutable_values());
  } else {
    SetReals(w, request.mutable_values());
  }
  request.set_draws(c.draws);
  request.set_precision(c.float32 ? v1::PRECISION_FLOAT32
                                  : v1::PRECISION_FLOAT64);
  request.set_input(c.logits ? v1::CATEGORICAL_INPUT_LOGITS
                             : v1::CATEGORICAL_INPUT_WEIGHTS);
  request.set_seed(1000 + c.categories);
  return request;
}

std::vector<int32_t> CaseCpu(const CategoricalCase& c) {
  const std::vector<double> w = CaseValues(c);
  kernels::CategoricalShape shape;
  shape.rows = c.rows;
  shape.categories = c.categories;
  shape.draws = c.draws;
  std::vector<int32_t> expected(static_cast<size_t>(c.rows * c.draws));
  const kernels::WeightKind kind =
      c.logits ? kernels::WeightKind::kLogits : kernels::WeightKind::kWeights;
  const uint64_t seed = 1000 + c.categories;
  const absl::Status s =
      c.float32 ? kernels::SampleCategoricalCpu<float>(
                      std::vector<float>(w.begin(), w.end()), shape, kind, seed,
                      0, absl::MakeSpan(expected))
                : kernels::SampleCategoricalCpu<double>(
                      w, shape, kind, seed, 0, absl::MakeSpan(expected));
  EXPECT_TRUE(s.ok()) << s;
  return expected;
}

// On the CUDA backend (server/cuda_exec_categorical.cc) K up to 512 takes the
// lane-group kernel (1, 2, 4, 8 or 16 lanes a row from K = 33, 65, 129,
// 257), 513 to rows of 80,000 bytes the block-row kernel (one block a row up
// to 64 KiB, clusters past), then warp tiles to 2^15, block-row clusters
// again to rows of 512 KiB, the row-split kernel up to its largest K
// (385,280 float, 198,400 double), and one warp per row again past it:
// every one must give the CPU's bits, in both precisions and input kinds,
// at each boundary and far past it.
TEST_F(ServiceTest, SampleCategoricalWideRowsEqualTheCpuKernel) {
  // Each request under this suite's 1 MiB message limit: 2^17 in double and
  // rows past the row-split kernel's largest K in either precision do not
  // fit, and are in BatchingTest's mixed batch.
  const CategoricalCase cases[] = {
      {63, 40, 2, true, false},    {64, 33, 3, true, false},
      {128, 35, 5, false, true},   {129, 34, 2, true, false},
      {100, 70, 1, false, true},   {256, 20, 3, false, true},
      {257, 12, 2, true, false},   {512, 10, 1, false, true},
      {513, 8, 1, true, false},    {1000, 9, 4, true, true},
      {16385, 2, 1, true, true},   {10000, 3, 2, false, false},
      {20000, 2, 4, true, false},  {20001, 2, 1, true, false},
      {5000, 3, 32, false, false}, {32767, 2, 4, true, false},
      {32768, 5, 4, true, false},  {32769, 3, 32, false, true},
      {131072, 1, 1, true, true},  {131072, 1, 32, true, false},
      {198401, 1, 4, true, false}};  // past double's largest, f32 row-split
  for (const CategoricalCase& c : cases) {
    SCOPED_TRACE(CaseName(c));
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleCategoricalResponse response;
    const grpc::Status status =
        stub_->SampleCategorical(&context, CaseRequest(c), &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    EXPECT_TRUE(SameBits(std::vector<int32_t>(response.indices().begin(),
                                              response.indices().end()),
                         CaseCpu(c)));
  }
}

TEST_F(ServiceTest, SampleCategoricalStreamChunksInOrderEqualTheCpuKernel) {
  const std::vector<double> w = CategoricalWeights(100, 2);
  v1::SampleCategoricalStreamRequest request;
  *request.mutable_request() = CategoricalRequest<double>(w, 2, 99);
  request.set_max_rows_per_chunk(7);
  auto result = ReadStream<v1::SampleCategoricalStreamResponse>(
      [&](grpc::ClientContext* c) {
        return stub_->SampleCategoricalStream(c, request);
      });
  ASSERT_TRUE(result.status.ok()) << Describe(result.status);
  ASSERT_EQ(result.chunks.size(), 15u);  // ceil(100 / 7)
  std::vector<int32_t> all;
  int64_t next_row = 0;
  for (const auto& chunk : result.chunks) {
    EXPECT_EQ(chunk.first_row(), next_row);
    EXPECT_LE(chunk.rows(), 7);
    EXPECT_EQ(chunk.draws(), 2);
    EXPECT_EQ(chunk.seed(), 99u);
    EXPECT_EQ(chunk.indices_size(), chunk.rows() * 2);
    next_row += chunk.rows();
    all.insert(all.end(), chunk.indices().begin(), chunk.indices().end());
  }
  EXPECT_EQ(next_row, 100);
  EXPECT_TRUE(SameBits(all, CategoricalCpu<double>(w, 2, 99)));
}

TEST_F(ServiceTest, SampleGammaEqualsTheCpuKernel) {
  {
    // Per-element parameters in float64, with scales.
    const std::vector<double> shape = {0.01, 0.5, 1.0, 2.5, 30.0, 0.999};
    const std::vector<double> scale = {1.0, 2.0, 0.5, 1.0, 3.0, 1e-3};
    v1::SampleGammaRequest request;
    SetReals(shape, request.mutable_elements()->mutable_shape());
    SetReals(scale, request.mutable_elements()->mutable_scale());
    request.set_seed(1234);
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status =
        stub_->SampleGamma(&context, request, &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    EXPECT_EQ(response.seed(), 1234u);
    std::vector<double> expected(shape.size());
    ASSERT_TRUE(kernels::SampleGammaCpu<double>(shape, scale, false, 1234, 0,
                                                absl::MakeSpan(expected))
                    .ok());
    EXPECT_TRUE(SameBits(Values<double>(response.samples()), expected));
  }
  {
    // Groups in float32, log output (tiny shapes), scale 0 meaning 1.
    const std::vector<Group> groups = {
        {1e-3, 0, 100}, {0.7, 2.0, 50}, {5.0, 1.0, 0}, {12.0, 0.1, 77}};
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status = stub_->SampleGamma(
        &context, GammaGroupsRequest<float>(groups, 5, /*log_output=*/true),
        &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    EXPECT_TRUE(SameBits(Values<float>(response.samples()),
                         GammaGroupsCpu<float>(groups, 5, true)));
  }
}

// 2 million float32 samples are 8 MB, eight times the server's message
// limit: refused as one message, delivered as a stream of chunks that each
// fit, in order, equal to one CPU call for the whole request.
TEST_F(ServiceTest, SampleGammaStreamDeliversAnAnswerLargerThanOneMessage) {
  const std::vector<Group> groups = {
      {0.5, 1.0, 700000}, {3.0, 2.0, 800000}, {0.05, 1.0, 500000}};
  const v1::SampleGammaRequest whole = GammaGroupsRequest<float>(groups, 77);
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status = stub_->SampleGamma(&context, whole, &response);
    EXPECT_EQ(status.error_code(), StatusCode::OUT_OF_RANGE)
        << Describe(status);
    EXPECT_TRUE(absl::StrContains(status.error_message(), "SampleGammaStream"))
        << status.error_message();
  }
  v1::SampleGammaStreamRequest request;
  *request.mutable_request() = whole;
  auto result =
      ReadStream<v1::SampleGammaStreamResponse>([&](grpc::ClientContext* c) {
        return stub_->SampleGammaStream(c, request);
      });
  ASSERT_TRUE(result.status.ok()) << Describe(result.status);
  EXPECT_GT(result.chunks.size(), 1u);
  std::vector<float> all;
  all.reserve(2000000);
  size_t bytes = 0;
  for (const auto& chunk : result.chunks) {
    EXPECT_EQ(chunk.first_sample(), static_cast<int64_t>(all.size()));
    EXPECT_EQ(chunk.seed(), 77u);
    EXPECT_LE(chunk.ByteSizeLong(), static_cast<size_t>(kMaxMessageBytes));
    bytes += chunk.ByteSizeLong();
    const std::vector<float> values = Values<float>(chunk.samples());
    all.insert(all.end(), values.begin(), values.end());
  }
  EXPECT_GT(bytes, static_cast<size_t>(kMaxMessageBytes));
  EXPECT_TRUE(SameBits(all, GammaGroupsCpu<float>(groups, 77)));
}

TEST_F(ServiceTest, SampleDirichletEqualsTheCpuKernel) {
  {
    // Ragged rows in float64, concentrations far below 1 included.
    const std::vector<double> alpha = {0.5, 0.5, 1e-3, 2e-3, 5e-4,
                                       3.0, 1.0, 7.0,  0.1};
    const std::vector<int64_t> lengths = {2, 3, 1, 3};
    v1::SampleDirichletRequest request;
    SetReals(alpha, request.mutable_concentrations());
    for (int64_t l : lengths) request.add_row_lengths(l);
    request.set_seed(31);
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleDirichletResponse response;
    const grpc::Status status =
        stub_->SampleDirichlet(&context, request, &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    const std::vector<int64_t> offsets = {0, 2, 5, 6, 9};
    std::vector<double> expected(alpha.size());
    ASSERT_TRUE(kernels::SampleDirichletCpu<double>(alpha, offsets, false, 31,
                                                    0, absl::MakeSpan(expected))
                    .ok());
    EXPECT_TRUE(SameBits(Values<double>(response.samples()), expected));
  }
  {
    // Equal rows (dimension) in float32, log output.
    std::vector<float> alpha(4 * 5);
    for (size_t i = 0; i < alpha.size(); ++i) alpha[i] = 0.05f * (i + 1);
    v1::SampleDirichletRequest request;
    SetReals(alpha, request.mutable_concentrations());
    request.set_dimension(5);
    request.set_precision(v1::PRECISION_FLOAT32);
    request.set_log_output(true);
    request.set_seed(32);
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleDirichletResponse response;
    const grpc::Status status =
        stub_->SampleDirichlet(&context, request, &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    const std::vector<int64_t> offsets = {0, 5, 10, 15, 20};
    std::vector<float> expected(alpha.size());
    ASSERT_TRUE(kernels::SampleDirichletCpu<float>(alpha, offsets, true, 32, 0,
                                                   absl::MakeSpan(expected))
                    .ok());
    EXPECT_TRUE(SameBits(Values<float>(response.samples()), expected));
  }
}

TEST_F(ServiceTest, SampleBoardsAndItsStreamEqualTheCpuKernel) {
  // 19 x 19 (6 words per colour), three colours.
  const std::vector<int32_t> stones = {40, 39, 10};
  grpc::ClientContext context;
  SetDeadline(context);
  v1::SampleBoardsResponse response;
  const grpc::Status status = stub_->SampleBoards(
      &context, BoardsRequest(19, 19, stones, 20, 8), &response);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_EQ(response.words_per_board(), 6);
  EXPECT_EQ(response.colours(), 3);
  EXPECT_EQ(response.count(), 20);
  EXPECT_EQ(response.seed(), 8u);
  const std::vector<uint64_t> expected = BoardsCpu(19, 19, stones, 20, 8);
  EXPECT_TRUE(SameBits(std::vector<uint64_t>(response.bitboards().begin(),
                                             response.bitboards().end()),
                       expected));

  v1::SampleBoardsStreamRequest request;
  *request.mutable_request() = BoardsRequest(19, 19, stones, 20, 8);
  request.set_max_positions_per_chunk(6);
  auto result =
      ReadStream<v1::SampleBoardsStreamResponse>([&](grpc::ClientContext* c) {
        return stub_->SampleBoardsStream(c, request);
      });
  ASSERT_TRUE(result.status.ok()) << Describe(result.status);
  ASSERT_EQ(result.chunks.size(), 4u);  // 6 + 6 + 6 + 2
  std::vector<uint64_t> all;
  for (const auto& chunk : result.chunks) {
    EXPECT_EQ(chunk.first_position(),
              static_cast<int64_t>(all.size()) / (3 * 6));
    EXPECT_EQ(chunk.words_per_board(), 6);
    EXPECT_EQ(chunk.colours(), 3);
    EXPECT_EQ(chunk.seed(), 8u);
    all.insert(all.end(), chunk.bitboards().begin(), chunk.bitboards().end());
  }
  EXPECT_TRUE(SameBits(all, expected));
}

// Jobs the server has executed for `method` (sampler_batch_requests_sum:
// each batch observes how many jobs it held).
double JobsRun(const MetricsText& m, absl::string_view method) {
  return m.ValueOr0(ByMethod("sampler_batch_requests_sum", method));
}

// Issue 9 item 1: message size is a wire concern, not a unit of work. A
// 20,000-sample stream with one sample per message is computed as one
// batched job (not 20,000) and is bit for bit the unary answer. Its deadline
// is generous (a loaded CI machine must not fail it): it used to queue one
// job per message and, with a window of two, ran one batch per two samples.
TEST_F(ServiceTest, AOneSamplePerMessageStreamIsComputedInDeviceSizedPieces) {
  constexpr int64_t kSamples = 20000;
  const v1::SampleGammaRequest whole = GammaGroupsRequest<double>(
      {{0.3, 1.0, 7000}, {2.5, 3.0, 6000}, {40.0, 0.5, 7000}}, 20261121);
  v1::SampleGammaResponse unary;
  {
    grpc::ClientContext context;
    SetDeadline(context);
    const grpc::Status status = stub_->SampleGamma(&context, whole, &unary);
    ASSERT_TRUE(status.ok()) << Describe(status);
  }
  const std::vector<double> expected = Values<double>(unary.samples());
  ASSERT_EQ(expected.size(), static_cast<size_t>(kSamples));
  EXPECT_TRUE(SameBits(
      expected,
      GammaGroupsCpu<double>(
          {{0.3, 1.0, 7000}, {2.5, 3.0, 6000}, {40.0, 0.5, 7000}}, 20261121)));

  const MetricsText before = Scrape(*server_);
  v1::SampleGammaStreamRequest request;
  *request.mutable_request() = whole;
  request.set_max_samples_per_chunk(1);
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(60));
  const absl::Time start = absl::Now();
  auto reader = stub_->SampleGammaStream(&context, request);
  v1::SampleGammaStreamResponse chunk;
  std::vector<double> all;
  all.reserve(kSamples);
  int64_t messages = 0;
  bool in_order = true;
  while (reader->Read(&chunk)) {
    ++messages;
    in_order = in_order &&
               chunk.first_sample() == static_cast<int64_t>(all.size()) &&
               chunk.seed() == 20261121u;
    const std::vector<double> values = Values<double>(chunk.samples());
    EXPECT_EQ(values.size(), 1u);
    all.insert(all.end(), values.begin(), values.end());
    if (messages > kSamples) context.TryCancel();  // runaway: bounded
  }
  const grpc::Status status = reader->Finish();
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(status.ok()) << Describe(status) << " after " << messages
                           << " messages, " << took;
  std::printf("[ info ] %lld one-sample messages in %s\n",
              static_cast<long long>(messages),
              absl::FormatDuration(took).c_str());
  EXPECT_EQ(messages, kSamples);
  EXPECT_TRUE(in_order) << "messages out of order or with the wrong seed";
  EXPECT_TRUE(SameBits(all, expected));
  // 160 KB of samples: one device-sized piece, so one job (a few at most,
  // should the server's piece size change), not one per message.
  const MetricsText after = Scrape(*server_);
  EXPECT_LE(JobsRun(after, "SampleGamma") - JobsRun(before, "SampleGamma"), 4)
      << "the stream was computed in message-sized jobs";
}

// Message sizes 1..7 (none of which divides a device piece) for all three
// streamed RPCs, on answers of several pieces each (the server's piece is
// about half of this suite's 1 MiB message limit): every message is the
// requested size but the last, they come in order, and together they are
// bit for bit the CPU functions' answer for the whole request.
TEST_F(ServiceTest, StreamsCutIntoSmallMessagesEqualTheCpuKernels) {
  // Gamma: 300,000 float32 samples (1.2 MB, three pieces or so).
  const std::vector<Group> groups = {
      {0.2, 1.0, 100001}, {3.0, 2.0, 99999}, {0.9, 1.0, 100000}};
  const std::vector<float> gamma = GammaGroupsCpu<float>(groups, 4242);
  // Boards: 19 x 19, three colours, 144 bytes a position: about 3,600 a
  // piece, so 10,000 positions are three pieces.
  const std::vector<int32_t> stones = {40, 39, 10};
  const std::vector<uint64_t> boards = BoardsCpu(19, 19, stones, 10000, 11);
  // Categorical: every row is one message of its own at max 1; 2,000 rows
  // fit one piece (a request must fit one message, so several categorical
  // pieces would need a larger request than this suite allows).
  const std::vector<double> w = CategoricalWeights(2000, 5);
  const std::vector<int32_t> categorical = CategoricalCpu<double>(w, 3, 99);
  for (int64_t m = 1; m <= 7; ++m) {
    SCOPED_TRACE(absl::StrCat("max per message ", m));
    {
      v1::SampleGammaStreamRequest request;
      *request.mutable_request() = GammaGroupsRequest<float>(groups, 4242);
      request.set_max_samples_per_chunk(m * 1000 + m);  // not a divisor
      grpc::ClientContext context;
      SetDeadline(context, absl::Seconds(60));
      auto reader = stub_->SampleGammaStream(&context, request);
      v1::SampleGammaStreamResponse chunk;
      std::vector<float> all;
      bool sized = true;
      while (reader->Read(&chunk)) {
        EXPECT_EQ(chunk.first_sample(), static_cast<int64_t>(all.size()));
        const std::vector<float> values = Values<float>(chunk.samples());
        all.insert(all.end(), values.begin(), values.end());
        sized = sized && (static_cast<int64_t>(values.size()) == m * 1000 + m ||
                          all.size() == gamma.size());
        if (all.size() > gamma.size()) context.TryCancel();
      }
      const grpc::Status status = reader->Finish();
      ASSERT_TRUE(status.ok()) << Describe(status);
      EXPECT_TRUE(sized) << "a message other than the last was short";
      EXPECT_TRUE(SameBits(all, gamma));
    }
    {
      v1::SampleBoardsStreamRequest request;
      *request.mutable_request() = BoardsRequest(19, 19, stones, 10000, 11);
      request.set_max_positions_per_chunk(m * 100 + m);
      auto result = ReadStream<v1::SampleBoardsStreamResponse>(
          [&](grpc::ClientContext* c) {
            return stub_->SampleBoardsStream(c, request);
          });
      ASSERT_TRUE(result.status.ok()) << Describe(result.status);
      std::vector<uint64_t> all;
      int64_t next = 0;
      for (size_t i = 0; i < result.chunks.size(); ++i) {
        const auto& chunk = result.chunks[i];
        EXPECT_EQ(chunk.first_position(), next);
        if (i + 1 < result.chunks.size()) {
          EXPECT_EQ(chunk.count(), m * 100 + m);
        }
        EXPECT_EQ(chunk.bitboards_size(), chunk.count() * 3 * 6);
        EXPECT_EQ(chunk.seed(), 11u);
        next += chunk.count();
        all.insert(all.end(), chunk.bitboards().begin(),
                   chunk.bitboards().end());
      }
      EXPECT_TRUE(SameBits(all, boards));
    }
    {
      v1::SampleCategoricalStreamRequest request;
      *request.mutable_request() = CategoricalRequest<double>(w, 3, 99);
      request.set_max_rows_per_chunk(m);
      auto result = ReadStream<v1::SampleCategoricalStreamResponse>(
          [&](grpc::ClientContext* c) {
            return stub_->SampleCategoricalStream(c, request);
          });
      ASSERT_TRUE(result.status.ok()) << Describe(result.status);
      EXPECT_EQ(result.chunks.size(), static_cast<size_t>((2000 + m - 1) / m));
      std::vector<int32_t> all;
      int64_t next = 0;
      for (size_t i = 0; i < result.chunks.size(); ++i) {
        const auto& chunk = result.chunks[i];
        EXPECT_EQ(chunk.first_row(), next);
        if (i + 1 < result.chunks.size()) {
          EXPECT_EQ(chunk.rows(), m);
        }
        EXPECT_EQ(chunk.draws(), 3);
        EXPECT_EQ(chunk.seed(), 99u);
        EXPECT_EQ(chunk.indices_size(), chunk.rows() * 3);
        next += chunk.rows();
        all.insert(all.end(), chunk.indices().begin(), chunk.indices().end());
      }
      EXPECT_TRUE(SameBits(all, categorical));
    }
  }
}

TEST_F(ServiceTest, GetServerInfoReportsTheFlags) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::GetServerInfoResponse info;
  const grpc::Status status =
      stub_->GetServerInfo(&context, v1::GetServerInfoRequest(), &info);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_FALSE(info.version().empty());
  EXPECT_FALSE(info.backend_reason().empty());
  if (BackendUnderTest() == "cuda") {
    EXPECT_EQ(info.backend(), v1::BACKEND_CUDA);
    EXPECT_GT(info.devices_size(), 0);
  } else {
    EXPECT_EQ(info.backend(), v1::BACKEND_CPU);
    EXPECT_EQ(info.devices_size(), 0);
  }
  EXPECT_EQ(info.limits().max_message_bytes(), kMaxMessageBytes);
  EXPECT_EQ(info.limits().max_items_per_request(), kMaxItemsPerRequest);
  EXPECT_DOUBLE_EQ(info.limits().max_batch_delay_seconds(), 1e-3);
  EXPECT_EQ(info.limits().max_board_sites(), kernels::kMaxBoardSites);
  EXPECT_GT(info.limits().max_batch_items(), 0);
  EXPECT_GT(info.limits().max_queued_items(), 0);
  // Every limit is reported (issue 9 item 7).
  const v1::Limits& limits = info.limits();
  EXPECT_GT(limits.max_items_per_stream(), kMaxItemsPerRequest);
  EXPECT_GT(limits.max_enumerate_pairs(), 0);
  EXPECT_EQ(limits.max_enumerate_terms(), kMaxEnumerateTerms);
  EXPECT_EQ(limits.max_enumerate_support(), kernels::kMaxEnumerateSupport);
  EXPECT_EQ(limits.max_categorical_draws(), kernels::kMaxCategoricalDraws);
  EXPECT_EQ(limits.max_board_colours(), kernels::kMaxBoardColours);
  // float32: capped by max_items_per_request; float64 by the message.
  EXPECT_EQ(limits.max_gamma_samples_float32(),
            std::min(kMaxItemsPerRequest, (kMaxMessageBytes - 256) / 4));
  EXPECT_EQ(limits.max_gamma_samples_float64(), (kMaxMessageBytes - 256) / 8);
  EXPECT_EQ(limits.max_dirichlet_elements_float64(),
            (kMaxMessageBytes - 256) / 8);
  EXPECT_GT(limits.max_enumerate_elements_float32(), 0);
  EXPECT_GT(limits.max_enumerate_elements_float64(), 0);
  EXPECT_EQ(limits.max_categorical_items(), kMaxItemsPerRequest);
  EXPECT_GT(limits.max_board_words(), 0);
  EXPECT_GT(limits.max_stream_chunk_items(), 0);
}

// Issue 9 item 7: the reported float64 gamma limit is reachable over gRPC
// (and one more sample is OUT_OF_RANGE), where max_items_per_request alone
// promised more than a message can hold.
TEST_F(ServiceTest, TheReportedGammaLimitIsReachable) {
  v1::GetServerInfoResponse info;
  {
    grpc::ClientContext context;
    SetDeadline(context);
    ASSERT_TRUE(
        stub_->GetServerInfo(&context, v1::GetServerInfoRequest(), &info).ok());
  }
  const int64_t max = info.limits().max_gamma_samples_float64();
  ASSERT_LT(max, info.limits().max_items_per_request());
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status = stub_->SampleGamma(
        &context, GammaGroupsRequest<double>({{2.0, 1.0, max}}, 5), &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    EXPECT_EQ(response.samples().f64().values_size(), max);
  }
  grpc::ClientContext context;
  SetDeadline(context);
  v1::SampleGammaResponse response;
  const grpc::Status status = stub_->SampleGamma(
      &context, GammaGroupsRequest<double>({{2.0, 1.0, max + 1}}, 5),
      &response);
  EXPECT_EQ(status.error_code(), StatusCode::OUT_OF_RANGE) << Describe(status);
}

// Issue 9 item 8: a call whose deadline has passed when it arrives (a 1 ns
// deadline was answered OK) is answered DEADLINE_EXCEEDED without work, and
// counted as expired on arrival. Some 1 ns calls never reach the server
// (the client gives up first) and a few arrive looking some milliseconds
// away (gRPC's cached clocks): of 50, at least one must be counted, and
// samples are computed only for calls the server answered OK. Such a call
// the server serves, and a small one served on its own gRPC thread (issue
// 13) can come back before the client's own deadline timer fires: then the
// client gets the whole answer, OK, and the server counted it OK.
TEST_F(ServiceTest, ACallExpiredOnArrivalIsDroppedWithoutWork) {
  {  // A connected channel: the calls below are sent, not failed locally.
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    ASSERT_TRUE(stub_->SampleGamma(&context, SmallGamma(1, 1), &response).ok());
  }
  const MetricsText before = Scrape(*server_);
  constexpr int kCalls = 50;
  constexpr int64_t kSamples = 1000;
  int answered = 0;
  for (int i = 0; i < kCalls; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::nanoseconds(1));
    v1::SampleGammaResponse response;
    const grpc::Status status = stub_->SampleGamma(
        &context, GammaGroupsRequest<double>({{2.0, 1.0, kSamples}}, 5),
        &response);
    if (status.ok()) {
      ++answered;
      EXPECT_EQ(response.samples().f64().values_size(), kSamples);
    } else {
      EXPECT_EQ(status.error_code(), StatusCode::DEADLINE_EXCEEDED)
          << Describe(status);
    }
  }
  const std::string expired =
      "sampler_refused_total{method=\"SampleGamma\",reason="
      "\"expired_on_arrival\"}";
  // The server's verdicts follow the client's: wait until nothing is left
  // in flight.
  ASSERT_TRUE(WaitForMetrics(*server_, [](const MetricsText& m) {
    return m.Value(kInflight) == 0.0;
  }));
  const MetricsText after = Scrape(*server_);
  const double dropped = after.ValueOr0(expired) - before.ValueOr0(expired);
  EXPECT_GE(dropped, 1) << "no call counted as expired on arrival";
  EXPECT_LE(dropped, kCalls);
  const double ok = after.ValueOr0(Requests("SampleGamma", "OK")) -
                    before.ValueOr0(Requests("SampleGamma", "OK"));
  EXPECT_GE(ok, answered);
  EXPECT_EQ(after.ValueOr0(ByMethod("sampler_items_total", "SampleGamma")) -
                before.ValueOr0(ByMethod("sampler_items_total", "SampleGamma")),
            ok * kSamples);
  // Every expired one was answered DEADLINE_EXCEEDED.
  EXPECT_GE(after.ValueOr0(Requests("SampleGamma", "DEADLINE_EXCEEDED")) -
                before.ValueOr0(Requests("SampleGamma", "DEADLINE_EXCEEDED")),
            dropped);
}

// The randomness contract version (docs/randomness.md) that a client pins:
// in GetServerInfo and in the initial metadata of every response, answers,
// refusals and streams alike. A refusal without a message may travel as a
// trailers-only response, where gRPC hands the headers over as trailing
// metadata: either place counts.
std::string ContractHeader(const grpc::ClientContext& context) {
  for (const auto* md : {&context.GetServerInitialMetadata(),
                         &context.GetServerTrailingMetadata()}) {
    auto it = md->find("sampler-contract-version");
    if (it != md->end()) {
      return std::string(it->second.data(), it->second.size());
    }
  }
  return "(missing)";
}

TEST_F(ServiceTest, ContractVersionIsInServerInfoAndEveryResponse) {
  const std::string version = std::to_string(kernels::kContractVersion);
  EXPECT_GE(kernels::kContractVersion, 2);
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::GetServerInfoResponse info;
    ASSERT_TRUE(
        stub_->GetServerInfo(&context, v1::GetServerInfoRequest(), &info).ok());
    EXPECT_EQ(info.randomness_contract_version(), kernels::kContractVersion);
    EXPECT_EQ(ContractHeader(context), version);
  }
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    ASSERT_TRUE(stub_->SampleGamma(&context, SmallGamma(3, 0), &response).ok());
    EXPECT_EQ(ContractHeader(context), version) << "answer";
  }
  {
    v1::SampleGammaRequest bad = SmallGamma(3, 0);
    bad.clear_parameters();  // neither elements nor groups
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status = stub_->SampleGamma(&context, bad, &response);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT)
        << Describe(status);
    EXPECT_EQ(ContractHeader(context), version) << "refusal";
  }
  {
    v1::SampleGammaStreamRequest request;
    *request.mutable_request() = SmallGamma(3, 0);
    grpc::ClientContext context;
    SetDeadline(context);
    std::unique_ptr<grpc::ClientReader<v1::SampleGammaStreamResponse>> reader =
        stub_->SampleGammaStream(&context, request);
    v1::SampleGammaStreamResponse chunk;
    int chunks = 0;
    while (reader->Read(&chunk)) ++chunks;
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_GT(chunks, 0);
    EXPECT_EQ(ContractHeader(context), version) << "stream";
  }
}

// A request without a seed gets one, echoed; sending it back reproduces the
// answer.
TEST_F(ServiceTest, AServerChosenSeedIsEchoedAndReproduces) {
  v1::SampleGammaRequest request = SmallGamma(3, 0);
  request.clear_seed();
  v1::SampleGammaResponse first;
  {
    grpc::ClientContext context;
    SetDeadline(context);
    const grpc::Status status = stub_->SampleGamma(&context, request, &first);
    ASSERT_TRUE(status.ok()) << Describe(status);
  }
  EXPECT_TRUE(
      SameBits(Values<float>(first.samples()), SmallGammaCpu(3, first.seed())));
}

// ---------------------------------------------------------------- errors --

// The call's status; the answer is dropped.
template <typename Request, typename Response, typename Method>
grpc::Status Call(Method method, const Request& request) {
  grpc::ClientContext context;
  SetDeadline(context);
  Response response;
  return method(&context, request, &response);
}

// A stream's final status (the stream must carry no chunk).
template <typename Chunk, typename Open>
grpc::Status StreamStatus(Open open) {
  StreamResult<Chunk> result = ReadStream<Chunk>(open);
  EXPECT_TRUE(result.chunks.empty());
  return result.status;
}

void ExpectInvalid(const grpc::Status& status, absl::string_view prefix,
                   absl::string_view value) {
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT)
      << Describe(status);
  EXPECT_TRUE(absl::StartsWith(status.error_message(), prefix))
      << "expected the message to start with \"" << prefix
      << "\": " << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), value))
      << "expected the value " << value << " in: " << status.error_message();
}

TEST_F(ServiceTest, BadRequestsAreInvalidArgumentNamingFieldIndexAndValue) {
  auto& stub = *stub_;
  {
    v1::EnumerateRequest request;
    v1::EnumerateProblem* problem = request.add_problems();
    SetReals(std::vector<double>{1.0},
             problem->add_terms()->mutable_probabilities());
    SetReals(std::vector<double>{0.5, 0.25, -0.5},
             problem->add_terms()->mutable_probabilities());
    ExpectInvalid(Call<v1::EnumerateRequest, v1::EnumerateResponse>(
                      [&](auto... a) { return stub.Enumerate(a...); }, request),
                  "problems[0].terms[1].probabilities[2]", "-0.5");
  }
  {
    std::vector<double> w = CategoricalWeights(3, 0);
    w[1 * 37 + 2] = std::numeric_limits<double>::quiet_NaN();
    const v1::SampleCategoricalRequest request =
        CategoricalRequest<double>(w, 1, 1);
    ExpectInvalid(
        Call<v1::SampleCategoricalRequest, v1::SampleCategoricalResponse>(
            [&](auto... a) { return stub.SampleCategorical(a...); }, request),
        "values[1][2]", "nan");
    v1::SampleCategoricalStreamRequest stream;
    *stream.mutable_request() = request;
    ExpectInvalid(StreamStatus<v1::SampleCategoricalStreamResponse>(
                      [&](grpc::ClientContext* c) {
                        return stub.SampleCategoricalStream(c, stream);
                      }),
                  "request.values[1][2]", "nan");
    // A bad chunk size of a good request.
    *stream.mutable_request() =
        CategoricalRequest<double>(CategoricalWeights(3, 0), 1, 1);
    stream.set_max_rows_per_chunk(-1);
    ExpectInvalid(StreamStatus<v1::SampleCategoricalStreamResponse>(
                      [&](grpc::ClientContext* c) {
                        return stub.SampleCategoricalStream(c, stream);
                      }),
                  "max_rows_per_chunk", "-1");
  }
  {
    v1::SampleGammaRequest request;
    SetReals(std::vector<double>{1, 2, 3, -1},
             request.mutable_elements()->mutable_shape());
    ExpectInvalid(
        Call<v1::SampleGammaRequest, v1::SampleGammaResponse>(
            [&](auto... a) { return stub.SampleGamma(a...); }, request),
        "elements.shape[3]", "-1");
    v1::SampleGammaStreamRequest stream;
    *stream.mutable_request() = request;
    ExpectInvalid(StreamStatus<v1::SampleGammaStreamResponse>(
                      [&](grpc::ClientContext* c) {
                        return stub.SampleGammaStream(c, stream);
                      }),
                  "request.elements.shape[3]", "-1");
    request.set_precision(static_cast<v1::Precision>(7));
    ExpectInvalid(
        Call<v1::SampleGammaRequest, v1::SampleGammaResponse>(
            [&](auto... a) { return stub.SampleGamma(a...); }, request),
        "precision", "7");
  }
  {
    v1::SampleDirichletRequest request;
    SetReals(std::vector<double>{1, 2, 0, 4}, request.mutable_concentrations());
    request.set_dimension(2);
    ExpectInvalid(
        Call<v1::SampleDirichletRequest, v1::SampleDirichletResponse>(
            [&](auto... a) { return stub.SampleDirichlet(a...); }, request),
        "concentrations[2]", "0");
  }
  {
    const v1::SampleBoardsRequest request = BoardsRequest(9, 9, {3, -2}, 1, 1);
    ExpectInvalid(
        Call<v1::SampleBoardsRequest, v1::SampleBoardsResponse>(
            [&](auto... a) { return stub.SampleBoards(a...); }, request),
        "stones[1]", "-2");
    v1::SampleBoardsStreamRequest stream;
    *stream.mutable_request() = request;
    ExpectInvalid(StreamStatus<v1::SampleBoardsStreamResponse>(
                      [&](grpc::ClientContext* c) {
                        return stub.SampleBoardsStream(c, stream);
                      }),
                  "request.stones[1]", "-2");
  }
}

TEST_F(ServiceTest, OverLimitRequestsAreOutOfRangeNamingTheStreamRpc) {
  auto& stub = *stub_;
  const int64_t too_many = kMaxItemsPerRequest + 1;
  {
    const grpc::Status status =
        Call<v1::SampleGammaRequest, v1::SampleGammaResponse>(
            [&](auto... a) { return stub.SampleGamma(a...); },
            GammaGroupsRequest<float>({{1.0, 1.0, too_many}}, 1));
    EXPECT_EQ(status.error_code(), StatusCode::OUT_OF_RANGE)
        << Describe(status);
    EXPECT_TRUE(absl::StrContains(status.error_message(), "SampleGammaStream"))
        << status.error_message();
  }
  {
    // rows x draws over the limit: 1 row of 37 categories, many draws.
    v1::SampleCategoricalRequest request =
        CategoricalRequest<float>(CategoricalWeights(1, 0), 1, 1);
    request.set_draws(static_cast<int32_t>(too_many));
    const grpc::Status status =
        Call<v1::SampleCategoricalRequest, v1::SampleCategoricalResponse>(
            [&](auto... a) { return stub.SampleCategorical(a...); }, request);
    EXPECT_EQ(status.error_code(), StatusCode::OUT_OF_RANGE)
        << Describe(status);
    EXPECT_TRUE(
        absl::StrContains(status.error_message(), "SampleCategoricalStream"))
        << status.error_message();
  }
  {
    const grpc::Status status =
        Call<v1::SampleBoardsRequest, v1::SampleBoardsResponse>(
            [&](auto... a) { return stub.SampleBoards(a...); },
            BoardsRequest(3, 3, {1}, too_many, 1));
    EXPECT_EQ(status.error_code(), StatusCode::OUT_OF_RANGE)
        << Describe(status);
    EXPECT_TRUE(absl::StrContains(status.error_message(), "SampleBoardsStream"))
        << status.error_message();
  }
  {
    // Dirichlet has no stream: the message says to split.
    v1::SampleDirichletRequest request;
    SetReals(std::vector<float>(static_cast<size_t>(too_many), 1.0f),
             request.mutable_concentrations());
    request.set_dimension(too_many);
    request.set_precision(v1::PRECISION_FLOAT32);
    const grpc::Status status =
        Call<v1::SampleDirichletRequest, v1::SampleDirichletResponse>(
            [&](auto... a) { return stub.SampleDirichlet(a...); }, request);
    EXPECT_EQ(status.error_code(), StatusCode::OUT_OF_RANGE)
        << Describe(status);
    EXPECT_TRUE(absl::StrContains(status.error_message(), "split"))
        << status.error_message();
  }
}

// --------------------------------------------------- health, reflection --

TEST_F(ServiceTest, HealthSaysServingForTheServerAndTheService) {
  auto health = grpc::health::v1::Health::NewStub(NewChannel(*server_));
  EXPECT_EQ(HealthOf(*health, ""),
            grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(HealthOf(*health, "sampler.v1.SamplerService"),
            grpc::health::v1::HealthCheckResponse::SERVING);
  grpc::Status status;
  HealthOf(*health, "no.such.Service", &status);
  EXPECT_EQ(status.error_code(), StatusCode::NOT_FOUND) << Describe(status);
}

TEST_F(ServiceTest, ReflectionListsTheServices) {
  absl::StatusOr<std::vector<std::string>> services =
      ListServices(NewChannel(*server_));
  ASSERT_TRUE(services.ok()) << services.status();
  for (const char* name :
       {"sampler.v1.SamplerService", "grpc.health.v1.Health"}) {
    EXPECT_NE(std::find(services->begin(), services->end(), name),
              services->end())
        << name << " not listed";
  }
}

// ---------------------------------------------------------------- metrics --

TEST_F(ServiceTest, MetricsHaveEveryFamilyAndCountRequestsAndItems) {
  // A first request, so that the families created on first use (device
  // seconds) exist whatever ran before.
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    ASSERT_TRUE(stub_->SampleGamma(&context, SmallGamma(1, 1), &response).ok());
  }
  const MetricsText before = Scrape(*server_);
  // DESIGN.md, "Metrics", with their types.
  const std::vector<std::pair<std::string, std::string>> families = {
      {"sampler_requests_total", "counter"},
      {"sampler_request_duration_seconds", "histogram"},
      {"sampler_queue_wait_seconds", "histogram"},
      {"sampler_batch_requests", "histogram"},
      {"sampler_batch_items", "histogram"},
      {"sampler_device_seconds", "histogram"},
      {"sampler_items_total", "counter"},
      {"sampler_queue_depth", "gauge"},
      {"sampler_inflight_requests", "gauge"},
  };
  for (const auto& [name, type] : families) {
    EXPECT_EQ(before.FamilyType(name), type) << name;
  }
  // Operators' view (issue 9 item 8): queue depth in items and its limit,
  // the build, the process's memory and descriptors.
  for (const auto& [name, type] :
       std::vector<std::pair<std::string, std::string>>{
           {"sampler_queue_items", "gauge"},
           {"sampler_queue_limit_items", "gauge"},
           {"sampler_build_info", "gauge"},
           {"process_resident_memory_bytes", "gauge"},
           {"process_virtual_memory_bytes", "gauge"},
           {"process_open_fds", "gauge"},
           {"process_max_fds", "gauge"}}) {
    EXPECT_EQ(before.FamilyType(name), type) << name;
  }
  EXPECT_EQ(before.ValueOr0(ByMethod("sampler_queue_items", "SampleGamma")), 0);
  EXPECT_GT(before.ValueOr0("sampler_queue_limit_items"), 0);
  EXPECT_GT(before.ValueOr0("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(before.ValueOr0("process_open_fds"), 3);
  // sampler_device_pool_bytes has series only where there are device pools
  // (not on this CPU backend), and the exposition omits empty families.

  // One good request of 100 samples and one bad one.
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status = stub_->SampleGamma(
        &context, GammaGroupsRequest<double>({{2.0, 1.0, 100}}, 3), &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
  }
  {
    v1::SampleGammaRequest bad;
    SetReals(std::vector<double>{-1}, bad.mutable_elements()->mutable_shape());
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    ASSERT_EQ(stub_->SampleGamma(&context, bad, &response).error_code(),
              StatusCode::INVALID_ARGUMENT);
  }
  // Both are counted by the time their answers arrive.
  const MetricsText after = Scrape(*server_);
  const auto delta = [&](const std::string& series) {
    return after.ValueOr0(series) - before.ValueOr0(series);
  };
  EXPECT_EQ(delta(Requests("SampleGamma", "OK")), 1);
  EXPECT_EQ(delta(Requests("SampleGamma", "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(delta(ByMethod("sampler_items_total", "SampleGamma")), 100);
  // Latency by code (issue 9 item 8): the refusal apart from the answer.
  EXPECT_EQ(delta("sampler_request_duration_seconds_count{code=\"OK\","
                  "method=\"SampleGamma\"}"),
            1);
  EXPECT_EQ(delta("sampler_request_duration_seconds_count{code="
                  "\"INVALID_ARGUMENT\",method=\"SampleGamma\"}"),
            1);
  // The bad one was refused without work, and counted as such.
  EXPECT_EQ(delta("sampler_refused_total{method=\"SampleGamma\",reason="
                  "\"invalid\"}"),
            1);
  EXPECT_EQ(delta(ByMethod("sampler_batch_items_sum", "SampleGamma")), 100);
  EXPECT_EQ(delta(ByMethod("sampler_queue_wait_seconds_count", "SampleGamma")),
            1);
}

// --------------------------------------------------- a cancelled stream --

// A client cancels a long stream after a few chunks. The server notices
// (CANCELLED in its metrics), frees the call (nothing left in flight) and
// the calls of another client that ran meanwhile got exact answers.
TEST_F(ServiceTest, AStreamCancelledMidwayHarmsNoOtherCall) {
  const MetricsText before = Scrape(*server_);
  std::atomic<bool> stop{false};
  std::atomic<int> other_calls{0};
  std::thread other([&] {
    auto stub = NewStub(*server_);
    // Bounded: at most 200 calls, and the stream's end stops it sooner.
    for (int i = 0; i < 200 && !stop.load(); ++i) {
      grpc::ClientContext context;
      SetDeadline(context);
      v1::SampleGammaResponse response;
      const grpc::Status status =
          stub->SampleGamma(&context, SmallGamma(i, 1000 + i), &response);
      ASSERT_TRUE(status.ok()) << Describe(status);
      ASSERT_TRUE(SameBits(Values<float>(response.samples()),
                           SmallGammaCpu(i, 1000 + i)))
          << "call " << i;
      ++other_calls;
    }
  });

  v1::SampleGammaStreamRequest request;
  *request.mutable_request() =
      GammaGroupsRequest<float>({{1.5, 1.0, 2000000}}, 5);
  request.set_max_samples_per_chunk(1000);  // 2000 chunks: cancelled early
  grpc::ClientContext context;
  SetDeadline(context);
  auto reader = stub_->SampleGammaStream(&context, request);
  v1::SampleGammaStreamResponse chunk;
  int read = 0;
  while (read < 5 && reader->Read(&chunk)) ++read;
  ASSERT_EQ(read, 5);
  context.TryCancel();
  // Ends at once after the cancellation (at most the chunks already
  // received are left).
  for (int i = 0; i < 100000 && reader->Read(&chunk); ++i) {
  }
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), StatusCode::CANCELLED) << Describe(status);

  // The server saw the cancellation and let go of the call.
  EXPECT_TRUE(WaitForMetrics(*server_, [&](const MetricsText& m) {
    return m.ValueOr0(Requests("SampleGammaStream", "CANCELLED")) -
               before.ValueOr0(Requests("SampleGammaStream", "CANCELLED")) ==
           1;
  })) << "no CANCELLED stream in the metrics";
  stop = true;
  other.join();
  EXPECT_GT(other_calls.load(), 0);
  EXPECT_TRUE(WaitForMetrics(*server_, [](const MetricsText& m) {
    return m.Value(kInflight) == 0.0;
  })) << "calls left in flight";
  // And it still serves.
  grpc::ClientContext next;
  SetDeadline(next);
  v1::SampleGammaResponse response;
  ASSERT_TRUE(stub_->SampleGamma(&next, SmallGamma(2, 2), &response).ok());
  EXPECT_TRUE(SameBits(Values<float>(response.samples()), SmallGammaCpu(2, 2)));
}

// ======================================================= slow batching ====

// Batches close only after 300 ms, and at most 1000 items may wait: time
// enough to cancel a queued request or let its deadline pass, and a queue
// that is easy to fill.
class SlowBatchTest : public ServerSuite<SlowBatchTest> {
 public:
  static constexpr int64_t kMaxQueuedItems = 1000;

  static std::vector<std::string> Flags() {
    return {"--max_batch_delay=300ms", "--close_batch_when_idle=false",
            "--max_batch_items=1000000000",
            absl::StrCat("--max_queued_items=", kMaxQueuedItems)};
  }

 protected:
  void SetUp() override {
    ServerSuite::SetUp();
    if (HasFatalFailure()) return;
    // Each test starts with empty queues (a previous test's dropped job may
    // still wait for its batch to close).
    ASSERT_TRUE(WaitForMetrics(*server_, [](const MetricsText& m) {
      return m.Value(QueueDepth("SampleGamma")) == 0.0 &&
             m.Value(kInflight) == 0.0;
    }));
  }
};

TEST_F(SlowBatchTest, ADeadlineShorterThanTheBatchDelayIsExceeded) {
  const MetricsText before = Scrape(*server_);
  grpc::ClientContext context;
  SetDeadline(context, absl::Milliseconds(50));
  v1::SampleGammaResponse response;
  const grpc::Status status =
      stub_->SampleGamma(&context, SmallGamma(0, 1), &response);
  EXPECT_EQ(status.error_code(), StatusCode::DEADLINE_EXCEEDED)
      << Describe(status);
  // The server dropped the job before executing it: the call is finished
  // (not OK) and no gamma item was computed.
  ASSERT_TRUE(WaitForMetrics(*server_, [](const MetricsText& m) {
    return m.Value(kInflight) == 0.0;
  }));
  const MetricsText after = Scrape(*server_);
  EXPECT_EQ(after.ValueOr0(Requests("SampleGamma", "OK")),
            before.ValueOr0(Requests("SampleGamma", "OK")));
  // Counted as what it is: an expiry, not a cancellation by the client
  // (gRPC marks a call whose deadline has passed as cancelled too).
  EXPECT_EQ(after.ValueOr0(Requests("SampleGamma", "DEADLINE_EXCEEDED")) -
                before.ValueOr0(Requests("SampleGamma", "DEADLINE_EXCEEDED")),
            1);
  EXPECT_EQ(after.ValueOr0(Requests("SampleGamma", "CANCELLED")),
            before.ValueOr0(Requests("SampleGamma", "CANCELLED")));
  EXPECT_EQ(after.ValueOr0(ByMethod("sampler_items_total", "SampleGamma")),
            before.ValueOr0(ByMethod("sampler_items_total", "SampleGamma")));
}

TEST_F(SlowBatchTest, AClientCancelledRequestIsCancelledAndServingGoesOn) {
  const MetricsText before = Scrape(*server_);
  auto call = LaunchGamma(*stub_, SmallGamma(0, 1));
  // Cancel once the request waits in the queue.
  ASSERT_TRUE(WaitForMetrics(*server_, [](const MetricsText& m) {
    return m.Value(QueueDepth("SampleGamma")) == 1.0;
  }));
  call->context.TryCancel();
  ASSERT_TRUE(call->Wait());
  EXPECT_EQ(call->Status().error_code(), StatusCode::CANCELLED)
      << Describe(call->Status());
  // The server dropped it as cancelled, without computing it.
  ASSERT_TRUE(WaitForMetrics(*server_, [&](const MetricsText& m) {
    return m.ValueOr0(Requests("SampleGamma", "CANCELLED")) -
               before.ValueOr0(Requests("SampleGamma", "CANCELLED")) ==
           1;
  })) << "the server did not count a CANCELLED request";
  EXPECT_EQ(
      Scrape(*server_).ValueOr0(ByMethod("sampler_items_total", "SampleGamma")),
      before.ValueOr0(ByMethod("sampler_items_total", "SampleGamma")));
  // The next request is served.
  grpc::ClientContext context;
  SetDeadline(context);
  v1::SampleGammaResponse response;
  const grpc::Status status =
      stub_->SampleGamma(&context, SmallGamma(4, 9), &response);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_TRUE(SameBits(Values<float>(response.samples()), SmallGammaCpu(4, 9)));
}

TEST_F(SlowBatchTest, AFullQueueIsResourceExhaustedAtOnceUntilItDrains) {
  const std::vector<Group> big = {{2.0, 1.0, 800}};
  const std::vector<Group> more = {{3.0, 1.0, 500}};
  // 800 of the 1000 queued items are taken while this waits for its batch.
  auto first = LaunchGamma(*stub_, GammaGroupsRequest<float>(big, 1));
  ASSERT_TRUE(WaitForMetrics(*server_, [](const MetricsText& m) {
    return m.Value(QueueDepth("SampleGamma")) == 1.0;
  }));
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status = stub_->SampleGamma(
        &context, GammaGroupsRequest<float>(more, 2), &response);
    // Refused while the first still waits: at once, not after queueing.
    EXPECT_FALSE(first->Done());
    EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED)
        << Describe(status);
  }
  ASSERT_TRUE(first->Wait());
  ASSERT_TRUE(first->Status().ok()) << Describe(first->Status());
  EXPECT_TRUE(SameBits(Values<float>(first->response.samples()),
                       GammaGroupsCpu<float>(big, 1)));
  // The queue has drained: the same request now fits.
  grpc::ClientContext context;
  SetDeadline(context);
  v1::SampleGammaResponse response;
  const grpc::Status status = stub_->SampleGamma(
      &context, GammaGroupsRequest<float>(more, 2), &response);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_TRUE(SameBits(Values<float>(response.samples()),
                       GammaGroupsCpu<float>(more, 2)));
}

// The same for a stream whose first chunk does not fit: refused at once,
// and none of its later chunks is queued (they were promised only to a
// stream whose first chunk was accepted).
TEST_F(SlowBatchTest, AStreamWhoseFirstChunkDoesNotFitIsRefusedAtOnce) {
  const std::vector<Group> big = {{2.0, 1.0, 800}};
  const MetricsText before = Scrape(*server_);
  auto first = LaunchGamma(*stub_, GammaGroupsRequest<float>(big, 1));
  ASSERT_TRUE(WaitForMetrics(*server_, [](const MetricsText& m) {
    return m.Value(QueueDepth("SampleGamma")) == 1.0;
  }));
  v1::SampleGammaStreamRequest request;
  *request.mutable_request() = GammaGroupsRequest<float>({{3.0, 1.0, 1500}}, 2);
  request.set_max_samples_per_chunk(500);  // 3 chunks; 800 + 500 > 1000
  auto result =
      ReadStream<v1::SampleGammaStreamResponse>([&](grpc::ClientContext* c) {
        return stub_->SampleGammaStream(c, request);
      });
  EXPECT_FALSE(first->Done());
  EXPECT_EQ(result.status.error_code(), StatusCode::RESOURCE_EXHAUSTED)
      << Describe(result.status);
  EXPECT_TRUE(result.chunks.empty());
  ASSERT_TRUE(first->Wait());
  ASSERT_TRUE(first->Status().ok()) << Describe(first->Status());
  // Only the unary request's 800 samples were computed: the batch that ran
  // it held no chunk of the refused stream.
  EXPECT_EQ(Scrape(*server_).ValueOr0(
                ByMethod("sampler_items_total", "SampleGamma")) -
                before.ValueOr0(ByMethod("sampler_items_total", "SampleGamma")),
            800);
}

// ============================================================ batching ====

// ============================================================ fairness ====

// Issue 9 item 5: two clients (two connections) and a queue of 1000 items
// that holds its jobs for 300 ms, with the access log on standard error.
class FairnessTest : public ServerSuite<FairnessTest> {
 public:
  static std::vector<std::string> Flags() {
    return {"--max_batch_delay=300ms", "--close_batch_when_idle=false",
            "--max_batch_items=1000000000", "--max_queued_items=1000",
            "--access_log=-"};
  }
};

// Client A fills the queue; B is refused. Once A's work has run, A asks
// again first: it gets its fair share (half), but not the room B needs; B's
// retry is accepted. Every accepted call is answered exactly; the refused
// get RESOURCE_EXHAUSTED saying why.
TEST_F(FairnessTest, OneClientCannotKeepTheQueueWhileAnotherIsRefused) {
  auto a = NewStub(*server_);
  auto b = NewStub(*server_);
  const std::vector<Group> half = {{2.0, 1.0, 500}};
  // Queued requests (all of 500 items here): sampler_queue_depth rather
  // than sampler_queue_items, so that the test runs against a server of
  // before this change too (where it fails at the fair-share refusal).
  auto queued = [](double requests) {
    return [requests](const MetricsText& m) {
      return m.Value(QueueDepth("SampleGamma")) == requests;
    };
  };
  // A fills the queue.
  std::vector<std::shared_ptr<AsyncGamma>> calls;
  calls.push_back(LaunchGamma(*a, GammaGroupsRequest<float>(half, 1)));
  calls.push_back(LaunchGamma(*a, GammaGroupsRequest<float>(half, 2)));
  ASSERT_TRUE(WaitForMetrics(*server_, queued(2)));
  // B is refused: the queue is full.
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status =
        b->SampleGamma(&context, GammaGroupsRequest<float>(half, 3), &response);
    EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED)
        << Describe(status);
    EXPECT_TRUE(absl::StrContains(status.error_message(), "max_queued_items"))
        << Describe(status);
  }
  for (auto& call : calls) {
    ASSERT_TRUE(call->Wait());
    ASSERT_TRUE(call->Status().ok()) << Describe(call->Status());
  }
  EXPECT_TRUE(SameBits(Values<float>(calls[0]->response.samples()),
                       GammaGroupsCpu<float>(half, 1)));
  // A again, first: its share is taken ...
  calls.push_back(LaunchGamma(*a, GammaGroupsRequest<float>(half, 4)));
  ASSERT_TRUE(WaitForMetrics(*server_, queued(1)));
  // ... and the rest is B's: A is refused, naming its fair share.
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status =
        a->SampleGamma(&context, GammaGroupsRequest<float>(half, 5), &response);
    EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED)
        << Describe(status);
    EXPECT_TRUE(absl::StrContains(status.error_message(), "fair share"))
        << Describe(status);
  }
  // B's retry is accepted and answered exactly.
  {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status =
        b->SampleGamma(&context, GammaGroupsRequest<float>(half, 3), &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    EXPECT_TRUE(SameBits(Values<float>(response.samples()),
                         GammaGroupsCpu<float>(half, 3)));
  }
  ASSERT_TRUE(calls.back()->Wait());
  ASSERT_TRUE(calls.back()->Status().ok()) << Describe(calls.back()->Status());
  EXPECT_TRUE(SameBits(Values<float>(calls.back()->response.samples()),
                       GammaGroupsCpu<float>(half, 4)));
  // The access log has a line per call, with method, peer, code, items and
  // latency (one of B's refusals, for instance).
  EXPECT_TRUE(server_->WaitForStderr("method=SampleGamma peer=ipv4:127.0.0.1:",
                                     kPatience));
  const std::string log = server_->Stderr();
  EXPECT_TRUE(absl::StrContains(log, "code=RESOURCE_EXHAUSTED items=500"))
      << log;
  EXPECT_TRUE(absl::StrContains(log, "code=OK items=500 latency_s=")) << log;
}

// Batches that close after 50 ms: concurrent requests arriving within that
// window share them.
class BatchingTest : public ServerSuite<BatchingTest> {
 public:
  // The delay rule alone, so that concurrent requests surely share batches.
  static std::vector<std::string> Flags() {
    return {"--max_batch_delay=50ms", "--close_batch_when_idle=false"};
  }
};

// Sends `per_thread` small gamma requests from each of `threads` threads,
// each on a channel of its own and all in flight at once; checks each
// answer against the CPU kernel. Returns the change in batches and in
// requests batched (sampler_batch_requests _count and _sum).
std::pair<double, double> ConcurrentGamma(const ServerProcess& server,
                                          int threads, int per_thread) {
  const MetricsText before = Scrape(server);
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&server, t, per_thread] {
      auto stub = NewStub(server);
      std::vector<std::shared_ptr<AsyncGamma>> calls;
      for (int i = 0; i < per_thread; ++i) {
        const int k = t * per_thread + i;
        calls.push_back(LaunchGamma(*stub, SmallGamma(k, 500 + k)));
      }
      for (int i = 0; i < per_thread; ++i) {
        const int k = t * per_thread + i;
        ASSERT_TRUE(calls[i]->Wait());
        ASSERT_TRUE(calls[i]->Status().ok()) << Describe(calls[i]->Status());
        EXPECT_TRUE(SameBits(Values<float>(calls[i]->response.samples()),
                             SmallGammaCpu(k, 500 + k)))
            << "request " << k;
      }
    });
  }
  for (auto& c : clients) c.join();
  const MetricsText after = Scrape(server);
  const auto delta = [&](const char* name) {
    const std::string series = ByMethod(name, "SampleGamma");
    return after.ValueOr0(series) - before.ValueOr0(series);
  };
  return {delta("sampler_batch_requests_count"),
          delta("sampler_batch_requests_sum")};
}

TEST_F(BatchingTest, ConcurrentClientsShareBatches) {
  const auto [batches, requests] = ConcurrentGamma(*server_, 4, 16);
  EXPECT_EQ(requests, 64);
  // 64 requests sent within a few milliseconds, batches closing after 50:
  // at least two requests per batch on average.
  EXPECT_GT(batches, 0);
  EXPECT_LE(batches * 2, requests) << batches << " batches";
}

// The same seeded requests, first alone, then each among 50 other
// concurrent requests of its kind, of other seeds and sizes (and so in a
// shared batch, at another position): the same bits.
TEST_F(BatchingTest, AnAnswerDoesNotDependOnItsBatch) {
  auto& stub = stub_;
  const v1::SampleGammaRequest gamma =
      GammaGroupsRequest<double>({{0.3, 1.0, 64}, {4.0, 2.0, 33}}, 2024);
  const std::vector<double> w = CategoricalWeights(40, 5);
  const v1::SampleCategoricalRequest categorical =
      CategoricalRequest<float>(w, 2, 2025);

  auto alone_gamma = LaunchGamma(*stub, gamma);
  ASSERT_TRUE(alone_gamma->Wait());
  ASSERT_TRUE(alone_gamma->Status().ok()) << Describe(alone_gamma->Status());
  auto alone_categorical = LaunchCategorical(*stub, categorical);
  ASSERT_TRUE(alone_categorical->Wait());
  ASSERT_TRUE(alone_categorical->Status().ok());

  const MetricsText before = Scrape(*server_);
  std::vector<std::shared_ptr<AsyncGamma>> others;
  std::vector<std::shared_ptr<AsyncCategorical>> other_categoricals;
  for (int i = 0; i < 50; ++i) {
    others.push_back(LaunchGamma(*stub, SmallGamma(i, 7000 + i)));
    other_categoricals.push_back(LaunchCategorical(
        *stub,
        CategoricalRequest<float>(CategoricalWeights(1 + i % 9, i), 1, i)));
  }
  auto batched_gamma = LaunchGamma(*stub, gamma);
  auto batched_categorical = LaunchCategorical(*stub, categorical);
  ASSERT_TRUE(batched_gamma->Wait());
  ASSERT_TRUE(batched_categorical->Wait());
  for (auto& c : others) ASSERT_TRUE(c->Wait());
  for (auto& c : other_categoricals) ASSERT_TRUE(c->Wait());
  ASSERT_TRUE(batched_gamma->Status().ok());
  ASSERT_TRUE(batched_categorical->Status().ok());

  EXPECT_TRUE(SameBits(Values<double>(batched_gamma->response.samples()),
                       Values<double>(alone_gamma->response.samples())));
  EXPECT_TRUE(SameBits(
      std::vector<int32_t>(batched_categorical->response.indices().begin(),
                           batched_categorical->response.indices().end()),
      std::vector<int32_t>(alone_categorical->response.indices().begin(),
                           alone_categorical->response.indices().end())));
  // And those batches were shared.
  const MetricsText after = Scrape(*server_);
  for (const char* method : {"SampleGamma", "SampleCategorical"}) {
    const double batches =
        after.ValueOr0(ByMethod("sampler_batch_requests_count", method)) -
        before.ValueOr0(ByMethod("sampler_batch_requests_count", method));
    const double requests =
        after.ValueOr0(ByMethod("sampler_batch_requests_sum", method)) -
        before.ValueOr0(ByMethod("sampler_batch_requests_sum", method));
    EXPECT_EQ(requests, 51) << method;
    EXPECT_LE(batches * 2, requests) << method << ": " << batches << " batches";
  }
}

// Categorical requests of small and large K in flight together share
// batches, in which the CUDA backend runs each kernel's jobs (lanes, warp
// tiles, row-split, one warp per row) as launches of their own: each answer is
// still the CPU's. (Their 1.7 million items fill more than one batch of
// --max_batch_items' default 2^20.)
TEST_F(BatchingTest, CategoricalBatchOfSmallAndLargeKEqualsTheCpuKernel) {
  const CategoricalCase cases[] = {
      {37, 50, 2, true, false},
      {32768, 4, 4, true, false},
      {100, 20, 3, true, true},
      {131072, 2, 1, true, false},
      {5000, 6, 32, true, false},
      {131072, 3, 4, false, true},
      {32768, 2, 32, false, false},
      {63, 33, 1, false, false},
      // Past the row-split kernel's largest K: one warp per row again.
      {198401, 2, 4, false, false},
      {385281, 1, 2, true, true}};
  const MetricsText before = Scrape(*server_);
  std::vector<std::shared_ptr<AsyncCategorical>> calls;
  for (const CategoricalCase& c : cases) {
    calls.push_back(LaunchCategorical(*stub_, CaseRequest(c)));
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE(CaseName(cases[i]));
    ASSERT_TRUE(calls[i]->Wait());
    ASSERT_TRUE(calls[i]->Status().ok()) << Describe(calls[i]->Status());
    EXPECT_TRUE(
        SameBits(std::vector<int32_t>(calls[i]->response.indices().begin(),
                                      calls[i]->response.indices().end()),
                 CaseCpu(cases[i])));
  }
  // And they shared batches.
  const MetricsText after = Scrape(*server_);
  const auto delta = [&](const char* name) {
    const std::string series = ByMethod(name, "SampleCategorical");
    return after.ValueOr0(series) - before.ValueOr0(series);
  };
  const double requests = delta("sampler_batch_requests_sum");
  EXPECT_EQ(requests, static_cast<double>(std::size(cases)));
  EXPECT_LT(delta("sampler_batch_requests_count"), requests);
}

// Batching off: every batch holds exactly one request, however many arrive
// together.
class NoBatchingTest : public ServerSuite<NoBatchingTest> {
 public:
  static std::vector<std::string> Flags() {
    return {"--max_batch_delay=50ms", "--max_batch_items=1"};
  }
};

TEST_F(NoBatchingTest, EveryBatchHoldsOneRequest) {
  const auto [batches, requests] = ConcurrentGamma(*server_, 2, 8);
  EXPECT_EQ(requests, 16);
  EXPECT_EQ(batches, 16);
}

// ======================================================= large answers ====

// Unary answers of 2^20 work items or more are built in reused memory
// (server/answer_memory.h), here a cache that holds one such answer: each
// call's samples are the CPU kernel's, also where a call reuses the memory
// of the one before (another seed, another size, then the first again).
class LargeAnswerTest : public ServerSuite<LargeAnswerTest> {
 public:
  static std::vector<std::string> Flags() {
    return {"--answer_cache_bytes=8388608"};
  }
};

TEST_F(LargeAnswerTest, AnswersInReusedMemoryEqualTheCpuKernel) {
  const int64_t n = (int64_t{1} << 20) + 5;
  for (const auto& [count, seed] : std::vector<std::pair<int64_t, uint64_t>>{
           {n, 11}, {n, 12}, {n + 100000, 13}, {n, 11}}) {
    const std::vector<Group> groups = {{2.0, 1.0, count}};
    grpc::ClientContext context;
    SetDeadline(context);
    v1::SampleGammaResponse response;
    const grpc::Status status = stub_->SampleGamma(
        &context, GammaGroupsRequest<float>(groups, seed), &response);
    ASSERT_TRUE(status.ok()) << Describe(status);
    EXPECT_EQ(response.seed(), seed);
    EXPECT_TRUE(SameBits(Values<float>(response.samples()),
                         GammaGroupsCpu<float>(groups, seed, false)))
        << count << " samples, seed " << seed;
  }
}

// =============================================================== stalls ====

// Streams whose client stops reading (issue 9 item 2): cancelled after
// --stream_stall_timeout without write progress, and counted.
class StallTest : public ServerSuite<StallTest> {
 public:
  static std::vector<std::string> Flags() {
    return {"--stream_stall_timeout=1s"};
  }
};

std::string StreamsStalled(absl::string_view method) {
  return ByMethod("sampler_streams_stalled_total", method);
}

// A client opens a stream of 100M float64 samples (800 MB, far more than
// the flow-control windows and socket buffers between them hold), reads
// one message and stops reading. The server's write then makes no
// progress; after the stall timeout the server cancels the stream, counts
// it, lets go of the call (nothing in flight, the pieces freed), and keeps
// serving. The client, reading again, sees the stream end CANCELLED.
TEST_F(StallTest, AStreamWhoseClientStopsReadingIsCancelledAndCounted) {
  const MetricsText before = Scrape(*server_);
  ASSERT_TRUE(before.HasFamily("sampler_streams_stalled_total"));
  EXPECT_EQ(before.Value(StreamsStalled("SampleGammaStream")), 0.0);
  v1::SampleGammaStreamRequest request;
  *request.mutable_request() =
      GammaGroupsRequest<double>({{2.0, 1.0, 100'000'000}}, 3);
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(60));
  auto reader = stub_->SampleGammaStream(&context, request);
  v1::SampleGammaStreamResponse chunk;
  ASSERT_TRUE(reader->Read(&chunk));
  EXPECT_EQ(chunk.first_sample(), 0);

  // Not reading now. Bounded waits: the server must act by itself.
  EXPECT_TRUE(WaitForMetrics(
      *server_,
      [&](const MetricsText& m) {
        return m.ValueOr0(StreamsStalled("SampleGammaStream")) == 1.0;
      },
      absl::Seconds(30)))
      << "the unread stream was not cancelled";
  EXPECT_TRUE(WaitForMetrics(*server_, [&](const MetricsText& m) {
    return m.Value(kInflight) == 0.0 &&
           m.ValueOr0(Requests("SampleGammaStream", "CANCELLED")) -
                   before.ValueOr0(
                       Requests("SampleGammaStream", "CANCELLED")) ==
               1;
  })) << "the stalled stream was not let go";
  const std::string log = server_->Stderr();
  EXPECT_TRUE(absl::StrContains(log, "stream_stall_timeout")) << log;

  int64_t read = 1;
  while (read < 100000 && reader->Read(&chunk)) ++read;
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), StatusCode::CANCELLED) << Describe(status);
  EXPECT_LT(read, 100000);

  // Still serving; other streams, read as they come, are not stalled.
  v1::SampleGammaStreamRequest small;
  *small.mutable_request() = GammaGroupsRequest<float>({{1.5, 1.0, 3000}}, 4);
  small.set_max_samples_per_chunk(100);
  auto result =
      ReadStream<v1::SampleGammaStreamResponse>([&](grpc::ClientContext* c) {
        return stub_->SampleGammaStream(c, small);
      });
  ASSERT_TRUE(result.status.ok()) << Describe(result.status);
  EXPECT_EQ(result.chunks.size(), 30u);
  EXPECT_EQ(Scrape(*server_).ValueOr0(StreamsStalled("SampleGammaStream")),
            1.0);
}

// ============================================================ shutdown ====

// SIGTERM while three requests wait for a slow batch: health turns
// NOT_SERVING during --drain_delay, then new connections are refused and
// new calls fail UNAVAILABLE while the three still wait; they finish OK
// with exact answers and the server exits 0.
TEST(ShutdownTest, SigtermFinishesCallsInFlightRefusesNewOnesAndExitsZero) {
  std::unique_ptr<ServerProcess> server =
      StartServer({"--max_batch_delay=2s", "--close_batch_when_idle=false",
                   "--max_batch_items=1000000000", "--drain_delay=300ms",
                   "--shutdown_grace=20s"});
  ASSERT_NE(server, nullptr);
  auto channel = NewChannel(*server);
  auto stub = v1::SamplerService::NewStub(channel);
  auto health = grpc::health::v1::Health::NewStub(channel);
  std::vector<std::shared_ptr<AsyncGamma>> calls;
  for (int i = 0; i < 3; ++i) {
    calls.push_back(LaunchGamma(*stub, SmallGamma(i, 300 + i)));
  }
  ASSERT_TRUE(WaitForMetrics(*server, [](const MetricsText& m) {
    return m.Value(QueueDepth("SampleGamma")) == 3.0;
  }));
  const absl::Time sigterm = absl::Now();
  server->Signal(SIGTERM);
  ASSERT_TRUE(server->WaitForStderr("draining", kPatience));

  // During the drain delay: still answering, but no longer SERVING. (The
  // status flips just after "draining" is printed: polled, bounded.)
  {
    using grpc::health::v1::HealthCheckResponse;
    const absl::Time deadline = absl::Now() + kPatience;
    HealthCheckResponse::ServingStatus status = HealthCheckResponse::UNKNOWN;
    for (int i = 0; i < 10000 && absl::Now() < deadline; ++i) {
      status = HealthOf(*health, "sampler.v1.SamplerService");
      if (status != HealthCheckResponse::SERVING) break;
    }
    EXPECT_EQ(status, HealthCheckResponse::NOT_SERVING);
  }

  // Then the listener closes. Polled: nothing else says when.
  const absl::Time deadline = absl::Now() + kPatience;
  for (int i = 0; i < 10000 && !ConnectionRefused(server->port()) &&
                  absl::Now() < deadline;
       ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_TRUE(ConnectionRefused(server->port()));
  {
    auto fresh = NewStub(*server);
    grpc::ClientContext context;
    SetDeadline(context, kPatience);
    v1::SampleGammaResponse response;
    const grpc::Status status =
        fresh->SampleGamma(&context, SmallGamma(9, 9), &response);
    EXPECT_EQ(status.error_code(), StatusCode::UNAVAILABLE) << Describe(status);
  }
  {
    // The channel of the calls in flight does not take new ones either.
    grpc::ClientContext context;
    SetDeadline(context, kPatience);
    v1::SampleGammaResponse response;
    const grpc::Status status =
        stub->SampleGamma(&context, SmallGamma(9, 9), &response);
    EXPECT_EQ(status.error_code(), StatusCode::UNAVAILABLE) << Describe(status);
  }
  // All that happened while the three were still waiting for their batch.
  for (auto& call : calls) EXPECT_FALSE(call->Done());
  EXPECT_LT(absl::Now() - sigterm, absl::Seconds(2));

  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(calls[i]->Wait());
    ASSERT_TRUE(calls[i]->Status().ok()) << Describe(calls[i]->Status());
    EXPECT_TRUE(SameBits(Values<float>(calls[i]->response.samples()),
                         SmallGammaCpu(i, 300 + i)));
  }
  const std::optional<int> code = server->Wait(absl::Seconds(30));
  ASSERT_TRUE(code.has_value()) << "no exit 30 s after SIGTERM";
  EXPECT_EQ(*code, 0) << server->Stderr();
  EXPECT_TRUE(absl::StrContains(server->Stderr(), "stopped"));
}

}  // namespace
}  // namespace sampler::testing
