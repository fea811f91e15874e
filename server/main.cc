// sampler-server: the gRPC sampling service.
//
// Startup: every flag checked (server/flags.h: a value that cannot work
// exits 1 naming the flag), security files (TLS certificates, bearer tokens;
// checked first, so that a wrong file fails at once), backend (CUDA when asked
// for or found, else CPU), metrics endpoint, service, gRPC server with health
// and reflection. Shutdown on SIGTERM or SIGINT: health goes NOT_SERVING, new
// calls are refused, calls in flight finish (bounded by --shutdown_grace),
// queued work drains, exit 0; a watchdog ends the process anyway once
// --drain_delay + --shutdown_grace + 5 s have passed
// (server/shutdown_watchdog.h).
#include <grpc/grpc.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.pb.h"
#include "server/answer_memory.h"
#include "server/auth.h"
#include "server/backend_factory.h"
#include "server/bad_body_interceptor.h"
#include "server/flags.h"
#include "server/metrics.h"
#include "server/service.h"
#include "server/shutdown_watchdog.h"
#include "server/tls.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051", "gRPC listen address");
ABSL_FLAG(std::string, metrics_listen, "0.0.0.0:9464",
          "Prometheus /metrics listen address (empty: no metrics endpoint); "
          "plaintext HTTP without authentication: bind it to a private "
          "interface");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain of the gRPC port (leaf first); with "
          "--tls_key_file turns TLS on (empty: plaintext)");
ABSL_FLAG(std::string, tls_key_file, "",
          "PEM private key (unencrypted) of --tls_cert_file's certificate");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA certificate(s): when given, every client must present a "
          "certificate signed by one of them (mutual TLS); needs TLS");
ABSL_FLAG(std::string, auth_token_file, "",
          "File of accepted bearer tokens, one per line: every "
          "sampler.v1.SamplerService call must then carry the metadata "
          "\"authorization: Bearer <token>\", else UNAUTHENTICATED (health "
          "and reflection stay open; empty: no token needed)");
ABSL_FLAG(bool, reflection, true,
          "Serve gRPC server reflection (describes the API; no tokens needed)");
ABSL_FLAG(std::string, backend, "auto",
          "auto (CUDA if a GPU is usable, else CPU), cpu or cuda");
ABSL_FLAG(int64_t, max_batch_items, int64_t{1} << 20,
          "A batch closes when it holds this many work items (1: no batching)");
ABSL_FLAG(absl::Duration, max_batch_delay, absl::Milliseconds(2),
          "... or when its oldest request has waited this long");
ABSL_FLAG(bool, close_batch_when_idle, true,
          "... or at once when no batch of its kind is executing (CPU "
          "backend: fewer than its threads; waiting would only add "
          "latency; batches still grow under load)");
ABSL_FLAG(bool, run_small_batches_inline, true,
          "CPU backend: a batch of under about 0.1 ms of work that closes "
          "when its request arrives runs on that request's gRPC thread (no "
          "hand-off to a worker thread); CUDA backend: see "
          "--gpu_inline_below_items");
ABSL_FLAG(int64_t, max_queued_items, int64_t{1} << 26,
          "Work items waiting in all queues together; beyond this new "
          "requests get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_items_per_request, int64_t{1} << 24,
          "Most work items in one unary request");
ABSL_FLAG(int64_t, max_items_per_stream, int64_t{1} << 33,
          "Most work items in one streamed request");
ABSL_FLAG(int64_t, max_enumerate_pairs, 2'000'000'000,
          "Most multiply-adds in one Enumerate request (CPU work is O(m n))");
ABSL_FLAG(int64_t, max_enumerate_terms, int64_t{1} << 22,
          "Most terms in one Enumerate request, all problems together, "
          "repeated terms counted as often as repeated (a job holds a view "
          "per term)");
ABSL_FLAG(int32_t, max_message_bytes, 64 << 20,
          "Largest gRPC message received or sent, in bytes (at least 64 KiB)");
ABSL_FLAG(int32_t, worker_threads, 0, "CPU backend threads (0: one per core)");
ABSL_FLAG(int64_t, answer_cache_bytes, int64_t{256} << 20,
          "Memory of large unary answers (4 MiB or more) kept for reuse "
          "between calls, in bytes (0: none, every answer on the heap; "
          "answer_memory.h)");
ABSL_FLAG(std::vector<std::string>, gpus, {},
          "CUDA backend: GPUs to use, e.g. 0,2 (empty: every visible GPU)");
ABSL_FLAG(int32_t, streams_per_gpu, 4,
          "CUDA backend: streams (batches in flight) per GPU");
ABSL_FLAG(int64_t, gpu_pool_limit_bytes, 0,
          "CUDA backend: cap on each GPU's memory pool (0: none); a batch "
          "that does not fit fails with RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, gpu_pool_release_threshold_bytes, int64_t{1} << 30,
          "CUDA backend: pool memory kept reserved between batches");
ABSL_FLAG(std::string, gpu_wait, "auto",
          "CUDA backend: how a worker waits for its GPU: auto (CUDA's "
          "choice: spin while the host has more cores than GPU contexts), "
          "spin, yield or block (sleep until the GPU is done)");
ABSL_FLAG(int64_t, gpu_inline_below_items, 16384,
          "CUDA backend: a batch of fewer work items than this that closes "
          "when its request arrives may run on that request's gRPC thread "
          "when its GPU has nothing queued and a stream free (no hand-off to "
          "the stream's worker thread; which ones: --gpu_inline; needs "
          "--run_small_batches_inline); 0: off");
ABSL_FLAG(std::string, gpu_inline, "auto",
          "CUDA backend: which batches under --gpu_inline_below_items run "
          "on the gRPC thread: always, auto (only when the call that closed "
          "the batch is its connection's only call in the server, on a "
          "connection without two at once within the last second: the "
          "thread then keeps no other call of it waiting) or never");
ABSL_FLAG(int32_t, gpu_eager_batches, 1,
          "CUDA backend: batches of a kind that may run at once before the "
          "next one is held back to grow (at most --streams_per_gpu times "
          "the GPUs); above 1, small requests close their batch at once "
          "while a stream is free (with --gpu_inline_below_items: on their "
          "own gRPC thread)");
ABSL_FLAG(int64_t, cpu_below_items, 0,
          "CUDA backend: batches of fewer work items than this run on the "
          "CPU in the same process (0: off); same bits for every sampling "
          "kind, Enumerate always on the GPU");
ABSL_FLAG(absl::Duration, drain_delay, absl::ZeroDuration(),
          "On SIGTERM: how long to stay up reporting NOT_SERVING before "
          "refusing new calls (lets load balancers move away)");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(30),
          "On SIGTERM: how long calls in flight may take to finish (after "
          "--drain_delay); the process exits at the latest 5s after that, "
          "whatever is still running");
// Transport bounds (issue 9 item 2): what a client can make the server hold
// before a single call reaches a handler.
ABSL_FLAG(int32_t, max_concurrent_streams, 256,
          "Most calls open at once on one client connection (HTTP/2 "
          "SETTINGS_MAX_CONCURRENT_STREAMS): gRPC clients queue the rest "
          "themselves; a peer that opens more loses its connection");
ABSL_FLAG(int64_t, memory_quota_bytes, int64_t{1} << 30,
          "gRPC's resource quota: memory the transport may use for all "
          "connections together (read buffers, incoming messages); under "
          "pressure it shrinks windows and cancels the largest streams");
ABSL_FLAG(absl::Duration, max_connection_age, absl::Minutes(30),
          "A client connection is asked to go away (GOAWAY) after this long; "
          "clients reconnect transparently (inf: never, and gRPC's max-age "
          "filter leaves every call's path: cheaper small calls, but then "
          "nothing bounds a request that never finishes arriving)");
ABSL_FLAG(absl::Duration, max_connection_age_grace, absl::Minutes(30),
          "... and is closed this long after that, with whatever calls it "
          "still carries: the longest a call (or a request that never "
          "finishes arriving) can hold a connection is the sum of the two");
ABSL_FLAG(absl::Duration, handshake_timeout, absl::Seconds(10),
          "A new connection must finish its TLS and HTTP/2 handshake within "
          "this long, else it is closed");
ABSL_FLAG(absl::Duration, stream_stall_timeout, absl::Seconds(30),
          "Cancel a stream whose client has read nothing for this long "
          "(its write made no progress); 0 = never");
// Operators' view (issue 9 item 8).
ABSL_FLAG(std::string, access_log, "",
          "Write one line per finished call (time, method, peer, code, "
          "items, latency) to this file, appending; \"-\" is standard error "
          "(empty: no access log)");

namespace sampler::server {
namespace {

constexpr char kVersion[] = "0.1.0";
constexpr char kServiceName[] = "sampler.v1.SamplerService";

// Drops the reflection plugin, which linking it registers with every
// ServerBuilder (--reflection=false).
class WithoutReflection : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>*
                         plugins) override {
    plugins->erase(
        std::remove_if(plugins->begin(), plugins->end(),
                       [](const std::unique_ptr<grpc::ServerBuilderPlugin>& p) {
                         return p->name() == "proto_server_reflection";
                       }),
        plugins->end());
  }
};

ServerFlags FlagValues() {
  ServerFlags f;
  f.listen = absl::GetFlag(FLAGS_listen);
  f.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  f.backend = absl::GetFlag(FLAGS_backend);
  f.max_batch_items = absl::GetFlag(FLAGS_max_batch_items);
  f.max_batch_delay = absl::GetFlag(FLAGS_max_batch_delay);
  f.max_queued_items = absl::GetFlag(FLAGS_max_queued_items);
  f.max_items_per_request = absl::GetFlag(FLAGS_max_items_per_request);
  f.max_items_per_stream = absl::GetFlag(FLAGS_max_items_per_stream);
  f.max_enumerate_pairs = absl::GetFlag(FLAGS_max_enumerate_pairs);
  f.max_enumerate_terms = absl::GetFlag(FLAGS_max_enumerate_terms);
  f.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  f.worker_threads = absl::GetFlag(FLAGS_worker_threads);
  f.answer_cache_bytes = absl::GetFlag(FLAGS_answer_cache_bytes);
  f.gpus = absl::GetFlag(FLAGS_gpus);
  f.streams_per_gpu = absl::GetFlag(FLAGS_streams_per_gpu);
  f.gpu_pool_limit_bytes = absl::GetFlag(FLAGS_gpu_pool_limit_bytes);
  f.gpu_pool_release_threshold_bytes =
      absl::GetFlag(FLAGS_gpu_pool_release_threshold_bytes);
  f.cpu_below_items = absl::GetFlag(FLAGS_cpu_below_items);
  f.gpu_wait = absl::GetFlag(FLAGS_gpu_wait);
  f.gpu_inline_below_items = absl::GetFlag(FLAGS_gpu_inline_below_items);
  f.gpu_inline = absl::GetFlag(FLAGS_gpu_inline);
  f.gpu_eager_batches = absl::GetFlag(FLAGS_gpu_eager_batches);
  f.drain_delay = absl::GetFlag(FLAGS_drain_delay);
  f.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  f.max_concurrent_streams = absl::GetFlag(FLAGS_max_concurrent_streams);
  f.memory_quota_bytes = absl::GetFlag(FLAGS_memory_quota_bytes);
  f.max_connection_age = absl::GetFlag(FLAGS_max_connection_age);
  f.max_connection_age_grace = absl::GetFlag(FLAGS_max_connection_age_grace);
  f.handshake_timeout = absl::GetFlag(FLAGS_handshake_timeout);
  return f;
}

int ToMillis(absl::Duration d) {
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(d),
                                            std::numeric_limits<int>::max()));
}

int Run(ShutdownWatchdog& watchdog) {
  // Every flag first: a value that cannot work stops the server before
  // anything starts, naming the flag and the value.
  const ServerFlags flag_values = FlagValues();
  if (absl::Status checked = CheckServerFlags(flag_values); !checked.ok()) {
    std::fprintf(stderr, "sampler-server: %s\n",
                 std::string(checked.message()).c_str());
    return 1;
  }
  for (const std::string& note : ServerFlagNotes(flag_values)) {
    std::fprintf(stderr, "sampler-server: note: %s\n", note.c_str());
  }
  // Security next: a wrong file stops the server before anything starts.
  TlsFiles tls_files;
  tls_files.cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  tls_files.key_file = absl::GetFlag(FLAGS_tls_key_file);
  tls_files.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  absl::StatusOr<ServerSecurity> security = ServerSecurityFromFiles(tls_files);
  if (!security.ok()) {
    std::fprintf(stderr, "sampler-server: %s\n",
                 std::string(security.status().message()).c_str());
    return 1;
  }
  std::shared_ptr<const TokenAuthenticator> auth;
  if (const std::string path = absl::GetFlag(FLAGS_auth_token_file);
      !path.empty()) {
    absl::StatusOr<std::unique_ptr<TokenAuthenticator>> created =
        TokenAuthenticator::FromFile(path);
    if (!created.ok()) {
      std::fprintf(stderr, "sampler-server: --auth_token_file: %s\n",
                   std::string(created.status().message()).c_str());
      return 1;
    }
    auth = *std::move(created);
  }
  // Never the tokens themselves.
  const std::string token_text =
      auth == nullptr ? "no bearer token needed"
                      : absl::StrCat("bearer token needed (",
                                     auth->num_tokens(), " accepted)");
  std::fprintf(stderr, "sampler-server: gRPC port: %s; %s\n",
               security->description.c_str(), token_text.c_str());

  AnswerBlocks().SetCapBytes(
      static_cast<size_t>(flag_values.answer_cache_bytes));

  BackendOptions backend_options;
  backend_options.name = absl::GetFlag(FLAGS_backend);
  backend_options.cpu_threads = absl::GetFlag(FLAGS_worker_threads);
  // Checked with the other flags above.
  backend_options.gpus = ParseGpuList(flag_values.gpus).value();
  backend_options.streams_per_gpu = absl::GetFlag(FLAGS_streams_per_gpu);
  backend_options.gpu_pool_limit_bytes =
      absl::GetFlag(FLAGS_gpu_pool_limit_bytes);
  backend_options.gpu_pool_release_threshold_bytes =
      absl::GetFlag(FLAGS_gpu_pool_release_threshold_bytes);
  backend_options.cpu_below_items = absl::GetFlag(FLAGS_cpu_below_items);
  backend_options.gpu_wait = absl::GetFlag(FLAGS_gpu_wait);
  backend_options.gpu_inline_below_items =
      absl::GetFlag(FLAGS_gpu_inline_below_items);
  // Checked with the other flags above.
  backend_options.gpu_inline = *ParseGpuInline(flag_values.gpu_inline);
  backend_options.gpu_eager_batches = absl::GetFlag(FLAGS_gpu_eager_batches);
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      CreateBackend(backend_options);
  if (!backend.ok()) {
    std::fprintf(stderr, "sampler-server: %s\n",
                 backend.status().ToString().c_str());
    return 1;
  }
  const BackendInfo info = (*backend)->Info();
  std::fprintf(stderr, "sampler-server: backend %s (%s)\n", info.name.c_str(),
               info.reason.c_str());
  // Those that could not be initialised were logged as they failed.
  for (const DeviceInfo& device : info.devices) {
    if (device.unavailable_reason.empty()) {
      std::fprintf(stderr, "sampler-server: GPU %d serves (%s)\n", device.index,
                   device.name.c_str());
    }
  }

  std::unique_ptr<Metrics> metrics;
  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (metrics_listen.empty()) {
    metrics = std::make_unique<Metrics>();
  } else {
    absl::StatusOr<std::unique_ptr<Metrics>> created =
        Metrics::Create(metrics_listen);
    if (!created.ok()) {
      // Names the flag; "cannot serve metrics" stays in the message (tests
      // retry on it when a picked port was taken meanwhile).
      std::fprintf(stderr, "sampler-server: --metrics_listen=%s: %s\n",
                   metrics_listen.c_str(),
                   std::string(created.status().message()).c_str());
      return 1;
    }
    metrics = *std::move(created);
    if ((auth != nullptr || security->tls) &&
        (absl::StartsWith(metrics_listen, "0.0.0.0:") ||
         absl::StartsWith(metrics_listen, "[::]:"))) {
      std::fprintf(stderr,
                   "sampler-server: note: metrics on %s are plaintext and "
                   "need no token: bind --metrics_listen to a private "
                   "interface unless the network keeps clients off it\n",
                   metrics_listen.c_str());
    }
  }

  ServiceOptions options;
  options.version = kVersion;
  options.limits.max_items_per_request =
      absl::GetFlag(FLAGS_max_items_per_request);
  options.limits.max_items_per_stream =
      absl::GetFlag(FLAGS_max_items_per_stream);
  options.limits.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.limits.max_enumerate_pairs = absl::GetFlag(FLAGS_max_enumerate_pairs);
  options.limits.max_enumerate_terms = absl::GetFlag(FLAGS_max_enumerate_terms);
  options.batcher.max_batch_items = absl::GetFlag(FLAGS_max_batch_items);
  options.batcher.max_batch_delay = absl::GetFlag(FLAGS_max_batch_delay);
  options.batcher.close_when_idle = absl::GetFlag(FLAGS_close_batch_when_idle);
  options.batcher.run_here = absl::GetFlag(FLAGS_run_small_batches_inline);
  // Only --gpu_inline=auto asks whether a call is alone on its connection.
  options.count_connection_calls =
      backend_options.gpu_inline == GpuInline::kAuto &&
      backend_options.gpu_inline_below_items > 0 && info.name == "cuda";
  options.max_queued_items = absl::GetFlag(FLAGS_max_queued_items);
  options.auth = auth;
  options.stream_stall_timeout = absl::GetFlag(FLAGS_stream_stall_timeout);
  if (options.stream_stall_timeout < absl::ZeroDuration()) {
    std::fprintf(stderr,
                 "sampler-server: --stream_stall_timeout=%s: must be >= 0 "
                 "(0 turns it off)\n",
                 absl::FormatDuration(options.stream_stall_timeout).c_str());
    return 1;
  }
  if (const std::string path = absl::GetFlag(FLAGS_access_log); !path.empty()) {
    absl::StatusOr<std::unique_ptr<AccessLog>> log = AccessLog::Open(path);
    if (!log.ok()) {
      std::fprintf(stderr, "sampler-server: --access_log=%s: %s\n",
                   path.c_str(), std::string(log.status().message()).c_str());
      return 1;
    }
    options.access_log = *std::move(log);
  }
  auto service = std::make_unique<SamplerServiceImpl>(options, backend->get(),
                                                      metrics.get());

  // The built-in health service has no protobuf descriptor; naming the
  // generated one keeps it linked, so reflection can describe the service to
  // clients like grpcurl and buf curl.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (!absl::GetFlag(FLAGS_reflection)) {
    builder.SetOption(std::make_unique<WithoutReflection>());
  }
  const std::string listen = absl::GetFlag(FLAGS_listen);
  int port = 0;
  builder.AddListeningPort(listen, security->credentials, &port);
  // One server per port: gRPC sets SO_REUSEPORT on Linux by default, and a
  // second server on a busy port then started without error and took a
  // share of the connections (issue 9 item 3).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_message_bytes));
  builder.SetMaxSendMessageSize(absl::GetFlag(FLAGS_max_message_bytes));
  // What one client can make the transport hold (issue 9 item 2): streams
  // per connection, memory of all connections together, the lifetime of a
  // connection (and so of a request that never finishes arriving), and the
  // handshake of a new one.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             absl::GetFlag(FLAGS_max_concurrent_streams));
  grpc::ResourceQuota quota("sampler-server");
  quota.Resize(static_cast<size_t>(absl::GetFlag(FLAGS_memory_quota_bytes)));
  builder.SetResourceQuota(quota);
  // Setting an age puts gRPC's max-age filter in every call's path: about
  // 6.7k instructions of a small call's 162k (callgrind, CPU backend,
  // gamma 256 f32 at 64 x 1; issue 13); "inf" leaves it out.
  if (absl::GetFlag(FLAGS_max_connection_age) != absl::InfiniteDuration()) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_MS,
        ToMillis(absl::GetFlag(FLAGS_max_connection_age)));
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
        ToMillis(absl::GetFlag(FLAGS_max_connection_age_grace)));
  }
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             ToMillis(absl::GetFlag(FLAGS_handshake_timeout)));
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<BadBodyInterceptorFactory>(
      SamplerServiceImpl::DeserializedMethods(),
      [m = metrics.get()](const std::string& method) {
        // "/sampler.v1.SamplerService/SampleGamma" -> "SampleGamma".
        m->Refused(std::string_view(method).substr(method.rfind('/') + 1),
                   "bad_body");
      }));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(service.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  const int wanted_port = ListenPort(listen);
  if (server == nullptr || port == 0 ||
      (wanted_port > 0 && port != wanted_port)) {
    std::fprintf(stderr,
                 "sampler-server: --listen=%s: cannot listen there (is the "
                 "port in use, perhaps by another sampler-server?)\n",
                 listen.c_str());
    return 1;
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus(true);
  health->SetServingStatus(kServiceName, true);
  std::fprintf(stderr, "sampler-server: serving on port %d, metrics on %s\n",
               port, metrics_listen.empty() ? "(off)" : metrics_listen.c_str());

  // Wait for SIGTERM or SIGINT (blocked in every thread, see main).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  int signal = 0;
  sigwait(&signals, &signal);
  std::fprintf(stderr, "sampler-server: %s: draining\n",
               signal == SIGTERM ? "SIGTERM" : "SIGINT");
  // From here the process exits within drain delay + grace + margin,
  // whatever gRPC's shutdown, a running batch or a destructor does.
  watchdog.Arm(absl::GetFlag(FLAGS_drain_delay) +
               absl::GetFlag(FLAGS_shutdown_grace) + kShutdownMargin);

  health->SetServingStatus(false);
  health->SetServingStatus(kServiceName, false);
  absl::SleepFor(absl::GetFlag(FLAGS_drain_delay));
  watchdog.SetPhase(ShutdownPhase::kFinishingCalls);
  // Refuses new calls and waits for the ones in flight (which keep being
  // batched and executed meanwhile), cancelling what is left at the deadline.
  server->Shutdown(
      std::chrono::system_clock::now() +
      absl::ToChronoNanoseconds(absl::GetFlag(FLAGS_shutdown_grace)));
  watchdog.SetPhase(ShutdownPhase::kRunningQueued);
  service->Drain();
  server.reset();
  service.reset();
  watchdog.SetPhase(ShutdownPhase::kReleasing);
  std::fprintf(stderr, "sampler-server: stopped\n");
  return 0;
}

}  // namespace
}  // namespace sampler::server

namespace {

// --help lists the flags of this binary's own source files (Abseil's default
// looks for a file named after the program, "sampler-server.cc", and found
// none: "No flags matched"); file names are shown relative to the project,
// without the build machine's paths.
bool IsServerFlagFile(absl::string_view file) {
  return absl::EndsWith(file, "server/main.cc");
}

std::string NormalizeFlagFile(absl::string_view file) {
  const size_t at = file.rfind("server/");
  if (at != absl::string_view::npos && absl::EndsWith(file, ".cc")) {
    return std::string(file.substr(at));
  }
  return std::string(file);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "random sampling over gRPC on GPUs or CPUs.\n"
      "Usage: sampler-server [--flag=value ...]; README.md describes every "
      "flag");
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = IsServerFlagFile;
  usage.contains_helpshort_flags = IsServerFlagFile;
  usage.contains_helppackage_flags = IsServerFlagFile;
  usage.normalize_filename = NormalizeFlagFile;
  usage.version_string = [] {
    return absl::StrCat("sampler-server ", sampler::server::kVersion, "\n");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  // Debian builds Abseil without NDEBUG, which leaves absl::Mutex's lock
  // order checking on (kAbort): every lock and unlock of every gRPC mutex
  // then updates a global graph of lock pairs, about 6% of the instructions
  // of a small call (issue 13: bench/results/
  // small-request-profile-2core-2026-11-26.md). It is a debugging aid, off
  // in Abseil's own release builds; set before any thread starts.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Block the shutdown signals before any thread starts, so that every
  // thread inherits the mask and only sigwait in Run receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Never destroyed nor disarmed: once armed by a signal it also bounds the
  // teardown after Run returns (static destructors, gRPC's shutdown), which
  // is where the process stayed 9 to 20 s after "stopped". Reachable from
  // a static, so no leak.
  static sampler::server::ShutdownWatchdog* const watchdog =
      new sampler::server::ShutdownWatchdog();
  return sampler::server::Run(*watchdog);
}
