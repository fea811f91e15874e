// Prometheus metrics of the service (DESIGN.md, "Metrics"). One registry
// holds every family, each registered once at construction; the per-label
// metric objects that the hot path touches are created up front (or on first
// use, for labels that are not known in advance, such as devices) and cached
// here, so recording is a lookup in a small array plus an atomic add.
#ifndef SAMPLER_SERVER_METRICS_H_
#define SAMPLER_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "server/jobs.h"
#include "server/rpc_names.h"

namespace prometheus {
class Counter;
class Exposer;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace sampler::server {

// The RPC names of the `method` label of the request-level metrics
// (sampler_requests_total, sampler_request_duration_seconds). The batch-level
// metrics use MethodName(Kind), which is the unary RPC's name.
// rpc_names.h holds the table.
inline constexpr const std::string_view* kRpcNames = rpc::kAll;
inline constexpr int kNumRpcs = sizeof(rpc::kAll) / sizeof(rpc::kAll[0]);

// gRPC status code names, indexed by the code's number.
inline constexpr std::string_view kStatusCodeNames[] = {"OK",
                                                        "CANCELLED",
                                                        "UNKNOWN",
                                                        "INVALID_ARGUMENT",
                                                        "DEADLINE_EXCEEDED",
                                                        "NOT_FOUND",
                                                        "ALREADY_EXISTS",
                                                        "PERMISSION_DENIED",
                                                        "RESOURCE_EXHAUSTED",
                                                        "FAILED_PRECONDITION",
                                                        "ABORTED",
                                                        "OUT_OF_RANGE",
                                                        "UNIMPLEMENTED",
                                                        "INTERNAL",
                                                        "UNAVAILABLE",
                                                        "DATA_LOSS",
                                                        "UNAUTHENTICATED"};
inline constexpr int kNumStatusCodes =
    sizeof(kStatusCodeNames) / sizeof(kStatusCodeNames[0]);

// The `reason` label of sampler_refused_total.
inline constexpr std::string_view kRefusalReasons[] = {
    "expired_on_arrival",  // the deadline had passed when the call arrived
    "overloaded",          // queues full or over the client's fair share
    "over_limit",          // OUT_OF_RANGE: items, message size, enumeration
    "invalid",             // INVALID_ARGUMENT
    "unauthenticated",     // no or a wrong bearer token
    "bad_body",            // not a protobuf message of the request type
    "other"};
inline constexpr int kNumRefusalReasons =
    sizeof(kRefusalReasons) / sizeof(kRefusalReasons[0]);

class ProcessCollector;  // metrics.cc

// Thread-safe; every method may be called from any thread.
class Metrics {
 public:
  // A registry only, with no HTTP endpoint (tests, or metrics turned off).
  Metrics();
  // A registry plus an HTTP exposer serving it at /metrics on `listen`
  // ("host:port"; port 0 picks a free port, see BoundPort). An address that
  // cannot be listened on (port in use, bad host) is an error, not a crash.
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(
      const std::string& listen);
  ~Metrics();

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A finished RPC: sampler_requests_total{method,code} and
  // sampler_request_duration_seconds{method,code} (by code too: under
  // overload the fast refusals would otherwise hide what the accepted calls
  // waited). `rpc` is one of kRpcNames and
  // `code_name` one of kStatusCodeNames; anything else is counted under
  // "unknown" and "UNKNOWN" so that label sets stay small.
  void RequestDone(std::string_view rpc, std::string_view code_name,
                   double seconds);
  // A job left its queue for a batch: sampler_queue_wait_seconds{method}.
  void QueueWait(Kind kind, double seconds);
  // A batch closed: sampler_batch_requests{method}, sampler_batch_items.
  void BatchClosed(Kind kind, int64_t requests, int64_t items);
  // A batch finished on `device` ("cpu", "0", ...) after `seconds` of
  // execution: sampler_device_seconds{method,device} and
  // sampler_items_total{method}.
  void BatchExecuted(Kind kind, const std::string& device, double seconds,
                     int64_t items);
  // Requests waiting in a kind's queue: sampler_queue_depth{method}.
  void SetQueueDepth(Kind kind, int64_t requests);
  // sampler_inflight_requests += delta (+1 when an RPC starts, -1 at end).
  void AddInflight(int64_t delta);
  // sampler_device_pool_bytes{device,state}; state is "used" or "reserved".
  void SetPoolBytes(const std::string& device, const std::string& state,
                    int64_t bytes);

  // Stream protection (issue 9 item 2): a stream cancelled because its
  // client read nothing for --stream_stall_timeout:
  // sampler_streams_stalled_total{method}.
  void StreamStalled(std::string_view rpc);

  // ---- Operators' view (issue 9 item 8) ----
  // Why a call was answered without its work being done:
  // sampler_refused_total{method,reason}. `reason` is one of kRefusalReasons
  // (anything else counts as "other"). Refused streams are those with a
  // *Stream method. Bodies that do not parse are counted as "bad_body" by
  // the interceptor (server/bad_body_interceptor.h); messages over
  // --max_message_bytes that gRPC refuses before a handler runs are not
  // visible here (gRPC's callback API answers them itself).
  void Refused(std::string_view rpc, std::string_view reason);
  // Work items waiting in a kind's queue: sampler_queue_items{method} (the
  // unit of --max_queued_items, which sampler_queue_limit_items reports).
  void SetQueueItems(Kind kind, int64_t items);
  void SetQueueLimitItems(int64_t items);
  // sampler_build_info{version} = 1.
  void SetBuildInfo(const std::string& version);

  // The registry in the text exposition format, as /metrics serves it, with
  // the process metrics (process_resident_memory_bytes,
  // process_virtual_memory_bytes, process_open_fds, process_max_fds, read
  // from /proc/self at each scrape: prometheus-cpp has no process collector).
  std::string Scrape() const;
  // The port the exposer listens on (the one picked for port 0), or -1 when
  // there is no exposer.
  int BoundPort() const;

 private:
  static constexpr int kNumKinds = sizeof(kAllKinds) / sizeof(kAllKinds[0]);
  static constexpr int kUnknownRpc = kNumRpcs;  // the "unknown" row

  prometheus::Counter& RequestCounter(int rpc, int code);

  // The registry outlives the exposer (declared before it), which holds only
  // a weak reference to it.
  std::shared_ptr<prometheus::Registry> registry_;

  prometheus::Family<prometheus::Counter>* requests_total_ = nullptr;
  prometheus::Family<prometheus::Histogram>* request_duration_family_ = nullptr;
  prometheus::Family<prometheus::Histogram>* device_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* pool_bytes_ = nullptr;

  // Request counters by [rpc][code], created on first use: pre-creating all
  // 170 would export mostly zeros. Family::Add returns the existing metric
  // for the same labels, so a race between two first uses is harmless.
  std::array<std::array<std::atomic<prometheus::Counter*>, kNumStatusCodes>,
             kNumRpcs + 1>
      requests_{};
  // Durations by [rpc][code], created on first use like the counters (OK
  // pre-created).
  prometheus::Histogram& RequestDuration(int rpc, int code);
  std::array<std::array<std::atomic<prometheus::Histogram*>, kNumStatusCodes>,
             kNumRpcs + 1>
      request_duration_{};

  // Operators' view (Refused, SetQueueItems, SetBuildInfo).
  prometheus::Family<prometheus::Counter>* refused_family_ = nullptr;
  std::array<std::array<std::atomic<prometheus::Counter*>, kNumRefusalReasons>,
             kNumRpcs + 1>
      refused_{};
  std::array<prometheus::Gauge*, kNumKinds> queue_items_{};
  prometheus::Gauge* queue_limit_items_ = nullptr;
  prometheus::Family<prometheus::Gauge>* build_info_ = nullptr;
  std::shared_ptr<ProcessCollector> process_;

  std::array<prometheus::Histogram*, kNumKinds> queue_wait_{};
  std::array<prometheus::Histogram*, kNumKinds> batch_requests_{};
  std::array<prometheus::Histogram*, kNumKinds> batch_items_{};
  std::array<prometheus::Counter*, kNumKinds> items_total_{};
  std::array<prometheus::Gauge*, kNumKinds> queue_depth_{};
  prometheus::Gauge* inflight_ = nullptr;
  // sampler_streams_stalled_total by rpc (only the streamed ones are used).
  std::array<prometheus::Counter*, kNumRpcs + 1> streams_stalled_{};

  // Labels known only at run time (device names), created on first use.
  // Touched once per batch, not per request, so a mutex is cheap enough.
  mutable std::mutex mu_;
  std::map<std::pair<int, std::string>, prometheus::Histogram*>
      device_seconds_by_kind_device_;
  std::map<std::pair<std::string, std::string>, prometheus::Gauge*>
      pool_bytes_by_device_state_;

  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_METRICS_H_
