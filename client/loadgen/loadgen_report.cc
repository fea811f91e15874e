#include "client/loadgen/loadgen_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/common/stats.h"
#include "client/loadgen/json_writer.h"

namespace sampler::client {
namespace {

double PerSecond(int64_t count, double elapsed_s) {
  return elapsed_s > 0 ? static_cast<double>(count) / elapsed_s : 0.0;
}

double Milliseconds(double ns) { return ns / 1e6; }

}  // namespace

int64_t FailedCount(const LoadResult& result) {
  int64_t failed = 0;
  for (const auto& [code, count] : result.errors) failed += count;
  return failed;
}

std::string FormatLoadReport(const LoadConfig& config,
                             const LoadResult& result) {
  std::string text =
      absl::StrFormat("rpc %s on %s, ", config.rpc, config.target);
  if (config.mode == "rate") {
    absl::StrAppendFormat(&text, "open loop at %g requests/s",
                          config.rate_per_s);
  } else {
    absl::StrAppendFormat(&text, "%d concurrent requests", config.concurrency);
  }
  absl::StrAppendFormat(&text, ", %d channel%s\n", config.channels,
                        config.channels == 1 ? "" : "s");
  absl::StrAppend(&text, "request:");
  for (const auto& [name, value] : config.parameters) {
    absl::StrAppend(&text, " ", name, "=", value);
  }
  absl::StrAppendFormat(&text, " (%d %s each)\n", config.items_per_request,
                        config.item_unit);

  const int64_t failed = FailedCount(result);
  absl::StrAppendFormat(&text,
                        "requests: %d sent, %d ok, %d failed in %.3f s\n",
                        result.sent, result.ok, failed, result.elapsed_s);
  for (const auto& [code, count] : result.errors) {
    const auto message = result.first_error_message.find(code);
    absl::StrAppendFormat(
        &text, "  %s: %d (first: %s)\n", code, count,
        message == result.first_error_message.end() ? "" : message->second);
  }
  absl::StrAppendFormat(
      &text, "throughput: %.1f requests/s, %.4g %s/s\n",
      PerSecond(result.ok, result.elapsed_s),
      PerSecond(result.ok * config.items_per_request, result.elapsed_s),
      config.item_unit);

  const LatencyPercentiles latency =
      ComputeLatencyPercentiles(result.latencies_ns);
  if (latency.count == 0) {
    absl::StrAppend(&text, "latency: no successful requests\n");
  } else {
    absl::StrAppendFormat(
        &text,
        "latency (ms, %d ok requests, exact): mean %.3f  p50 %.3f  p90 %.3f  "
        "p99 %.3f  p99.9 %.3f  max %.3f\n",
        latency.count, Milliseconds(latency.mean_ns),
        Milliseconds(latency.p50_ns), Milliseconds(latency.p90_ns),
        Milliseconds(latency.p99_ns), Milliseconds(latency.p999_ns),
        Milliseconds(latency.max_ns));
  }
  return text;
}

std::string FormatLoadReportJson(const LoadConfig& config,
                                 const LoadResult& result) {
  JsonObject parameters;
  for (const auto& [name, value] : config.parameters) {
    parameters.String(name, value);
  }
  JsonObject errors;
  for (const auto& [code, count] : result.errors) errors.Number(code, count);
  JsonObject messages;
  for (const auto& [code, message] : result.first_error_message) {
    messages.String(code, message);
  }
  const LatencyPercentiles latency =
      ComputeLatencyPercentiles(result.latencies_ns);
  JsonObject latency_ms;
  latency_ms.Number("count", latency.count)
      .Number("mean", Milliseconds(latency.mean_ns))
      .Number("p50", Milliseconds(latency.p50_ns))
      .Number("p90", Milliseconds(latency.p90_ns))
      .Number("p99", Milliseconds(latency.p99_ns))
      .Number("p99_9", Milliseconds(latency.p999_ns))
      .Number("max", Milliseconds(latency.max_ns));

  JsonObject report;
  report.String("rpc", config.rpc)
      .String("target", config.target)
      .String("mode", config.mode)
      .Number("concurrency", config.concurrency)
      .Number("rate_per_s", config.rate_per_s)
      .Number("duration_s", config.duration_s)
      .Number("max_requests", config.max_requests)
      .Number("deadline_s", config.deadline_s)
      .Number("channels", config.channels);
  if (config.base_seed.has_value()) {
    // A string: seeds use all 64 bits, which a JSON number cannot hold.
    report.String("base_seed", absl::StrCat(*config.base_seed));
  } else {
    report.Null("base_seed");
  }
  report.Object("request", std::move(parameters))
      .Number("items_per_request", config.items_per_request)
      .String("item_unit", config.item_unit)
      .Number("elapsed_s", result.elapsed_s)
      .Number("requests_sent", result.sent)
      .Number("requests_ok", result.ok)
      .Number("requests_failed", FailedCount(result))
      .Object("errors", std::move(errors))
      .Object("first_error_message", std::move(messages))
      .Number("requests_per_s", PerSecond(result.ok, result.elapsed_s))
      .Number("items_per_s",
              PerSecond(result.ok * config.items_per_request, result.elapsed_s))
      .Object("latency_ms", std::move(latency_ms));
  return report.Render();
}

}  // namespace sampler::client
