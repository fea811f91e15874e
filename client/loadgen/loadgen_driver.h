// The engine of sampler-loadgen: keeps a fixed number of requests in flight
// (closed loop) or starts them at a fixed rate (open loop), on gRPC's
// callback API, so that concurrency costs no threads of ours.
#ifndef SAMPLER_CLIENT_LOADGEN_LOADGEN_DRIVER_H_
#define SAMPLER_CLIENT_LOADGEN_LOADGEN_DRIVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/loadgen/loadgen_report.h"
#include "client/loadgen/loadgen_requests.h"
#include "grpcpp/channel.h"

namespace sampler::client {

struct DriverOptions {
  // Requests go round-robin over these.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  // Closed loop: this many requests outstanding at all times. Used when
  // rate_per_s is 0.
  int concurrency = 1;
  // Open loop: requests start on a fixed schedule, whether or not earlier
  // ones have finished (up to max_outstanding at once).
  double rate_per_s = 0;
  int64_t max_outstanding = 100'000;
  // No request starts after `duration` or past `max_requests` (0, and an
  // infinite duration, mean no bound of that kind; one must be set).
  absl::Duration duration = absl::ZeroDuration();
  int64_t max_requests = 0;
  // Per-request deadline (infinite: none).
  absl::Duration deadline = absl::Seconds(10);
  // Request i carries seed base_seed + i; none when absent.
  std::optional<uint64_t> base_seed;
  // A \r-updated progress line on stderr every second.
  bool progress = false;
};

// Runs the load with requests of `kind` and size `shape`; the error is a
// usage error (bad shape or options). RPC failures are counted in the
// result, not returned.
absl::StatusOr<LoadResult> RunLoad(RpcKind kind, const LoadShape& shape,
                                   const DriverOptions& options);

// Work items in one request of `kind` and size `shape`.
absl::StatusOr<int64_t> ItemsPerRequest(RpcKind kind, const LoadShape& shape);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_LOADGEN_LOADGEN_DRIVER_H_
