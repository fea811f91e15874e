// What a sampler-loadgen run measured, and its text and JSON reports. Pure:
// the driver fills LoadResult, these functions only format.
#ifndef SAMPLER_CLIENT_LOADGEN_LOADGEN_REPORT_H_
#define SAMPLER_CLIENT_LOADGEN_LOADGEN_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sampler::client {

// How the run was set up.
struct LoadConfig {
  std::string target;
  std::string rpc;
  // "concurrency" (closed loop) or "rate" (open loop).
  std::string mode;
  int concurrency = 0;
  double rate_per_s = 0;
  // Bounds of the run: 0 means unbounded.
  double duration_s = 0;
  int64_t max_requests = 0;
  double deadline_s = 0;
  int channels = 1;
  std::optional<uint64_t> base_seed;
  int64_t items_per_request = 0;
  std::string item_unit;
  // The request size flags of the RPC, by name.
  std::vector<std::pair<std::string, std::string>> parameters;
};

// What happened.
struct LoadResult {
  // From the first request sent to the last answer received.
  double elapsed_s = 0;
  int64_t sent = 0;
  int64_t ok = 0;
  // Failed requests by status code name, and the first message of each.
  std::map<std::string, int64_t> errors;
  std::map<std::string, std::string> first_error_message;
  // Latency of every successful request; in rate mode counted from when the
  // request was due, so that a server falling behind shows in it.
  std::vector<int64_t> latencies_ns;
};

int64_t FailedCount(const LoadResult& result);

// A report for a person (several lines).
std::string FormatLoadReport(const LoadConfig& config,
                             const LoadResult& result);

// The same as one JSON object, for committed benchmark reports: keys in a
// fixed order (see the .cc), latencies in milliseconds, no trailing newline.
std::string FormatLoadReportJson(const LoadConfig& config,
                                 const LoadResult& result);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_LOADGEN_LOADGEN_REPORT_H_
