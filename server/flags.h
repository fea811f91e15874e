// Startup checks of sampler-server's flags (issue 9 item 6): every value is
// checked before anything starts, and a value that cannot work is refused
// with a message naming the flag and the value, so that the process exits 1
// instead of serving on a port nobody asked for or refusing every request
// while health says SERVING.
//
// The flags themselves stay defined in server/main.cc (the deploy tests read
// them there); main.cc copies their values into ServerFlags.
#ifndef SAMPLER_SERVER_FLAGS_H_
#define SAMPLER_SERVER_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/request_limits.h"

namespace sampler::server {

// The smallest --max_message_bytes: GetServerInfo's answer and one chunk of
// every stream (with its fixed fields) must fit a message, with room to
// spare; below this no answer of useful size fits.
inline constexpr int64_t kMinMessageBytes = 64 << 10;
// Upper bounds that keep a typo (an extra digit) from exhausting the host.
inline constexpr int64_t kMaxWorkerThreads = 4096;
inline constexpr int64_t kMaxStreamsPerGpu = 64;
// The smallest --memory_quota_bytes: gRPC's transport needs a few MiB for
// its own buffers before any call is read.
inline constexpr int64_t kMinMemoryQuotaBytes = 16 << 20;

// Every flag value that needs checking, as parsed by Abseil.
struct ServerFlags {
  std::string listen;
  std::string metrics_listen;
  std::string backend;
  int64_t max_batch_items = 0;
  absl::Duration max_batch_delay;
  int64_t max_queued_items = 0;
  int64_t max_items_per_request = 0;
  int64_t max_items_per_stream = 0;
  int64_t max_enumerate_pairs = 0;
  int64_t max_enumerate_terms = 0;
  int64_t max_message_bytes = 0;
  int64_t worker_threads = 0;
  int64_t answer_cache_bytes = 0;
  std::vector<std::string> gpus;
  int64_t streams_per_gpu = 0;
  int64_t gpu_pool_limit_bytes = 0;
  int64_t gpu_pool_release_threshold_bytes = 0;
  int64_t cpu_below_items = 0;
  std::string gpu_wait;
  int64_t gpu_inline_below_items = 0;
  std::string gpu_inline;
  int64_t gpu_eager_batches = 0;
  absl::Duration drain_delay;
  absl::Duration shutdown_grace;
  // Transport bounds (issue 9 item 2).
  int64_t max_concurrent_streams = 0;
  int64_t memory_quota_bytes = 0;
  absl::Duration max_connection_age;
  absl::Duration max_connection_age_grace;
  absl::Duration handshake_timeout;
};

// A "host:port" address with a port in 0..65535 (0: the system picks one).
// `allow_empty`: the empty string is valid (--metrics_listen= turns metrics
// off). For --listen, gRPC's "unix:PATH" form is accepted as is.
absl::Status CheckListenAddress(absl::string_view flag, absl::string_view value,
                                bool allow_empty, bool allow_unix);

// The port of a checked "host:port" address (-1 for a unix: address).
int ListenPort(absl::string_view value);

// The most work items of any first stream chunk the server would pick by
// itself (client chunk size 0) under `limits`: a stream whose chunk cannot
// enter the queue can never start.
int64_t LargestServerChunkItems(const RequestLimits& limits);

// --gpus as CUDA indices: each a non-negative integer, listed once (whether
// each is visible is checked where the GPUs are: SelectDevices in
// device_init.h). INVALID_ARGUMENT naming the flag and the value otherwise.
absl::StatusOr<std::vector<int>> ParseGpuList(
    const std::vector<std::string>& gpus);

// Checks every value; the first bad one gives INVALID_ARGUMENT whose message
// starts with "--flag=value: " and says what would work.
absl::Status CheckServerFlags(const ServerFlags& flags);

// Values that work but limit what clients can do, as sentences for the log
// ("note: ..."): a --max_queued_items below the largest stream chunk the
// server picks (tests and small deployments use such budgets on purpose, so
// it is not refused).
std::vector<std::string> ServerFlagNotes(const ServerFlags& flags);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_FLAGS_H_
