// sampler-loadgen: drives one RPC of the sampler service at a fixed
// concurrency (closed loop) or rate (open loop) and reports throughput,
// errors by status code and exact latency percentiles.
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/common/args.h"
#include "client/common/grpc_util.h"
#include "client/common/parse.h"
#include "client/common/security_flags.h"
#include "client/loadgen/loadgen_driver.h"
#include "client/loadgen/loadgen_report.h"
#include "client/loadgen/loadgen_requests.h"
#include "sampler/kernels/status_macros.h"

ABSL_FLAG(std::string, target, "localhost:50051", "Server address");
ABSL_FLAG(std::string, rpc, "",
          "The RPC to drive: enumerate, categorical, gamma, dirichlet, boards");
ABSL_FLAG(int32_t, concurrency, 16,
          "Closed loop: requests kept in flight (ignored with --rate)");
ABSL_FLAG(double, rate, 0,
          "Open loop: requests started per second, on schedule whatever the "
          "answers (0: closed loop at --concurrency)");
ABSL_FLAG(int64_t, max_outstanding, 100000,
          "Open loop: most requests in flight; past it starts wait (and the "
          "wait counts in their latency)");
ABSL_FLAG(absl::Duration, duration, absl::ZeroDuration(),
          "Start no request after this long (default 10s unless --requests "
          "is given)");
ABSL_FLAG(int64_t, requests, 0,
          "Send at most this many requests (0: no limit)");
ABSL_FLAG(absl::Duration, deadline, absl::Seconds(10),
          "Deadline of each request (inf: none)");
ABSL_FLAG(absl::Duration, connect_timeout, absl::Seconds(10),
          "How long to wait for the connection before the run starts");
ABSL_FLAG(int32_t, channels, 1,
          "Channels (TCP connections) the requests are spread over");
ABSL_FLAG(int32_t, retry_overloaded, 0,
          "Attempts per request when the server answers RESOURCE_EXHAUSTED "
          "(2-5; 0: none): gRPC's own retries, with exponential backoff from "
          "10 ms and the server's grpc-retry-pushback-ms when it sends one, "
          "as a well-behaved client would; a request counts once, by its "
          "last answer");
ABSL_FLAG(uint64_t, seed, 1, "Request i carries seed + i");
ABSL_FLAG(bool, no_seed, false,
          "Send no seed: the server picks one per request");
ABSL_FLAG(bool, json, false,
          "Print the report as one JSON object (for committed benchmark "
          "reports)");
ABSL_FLAG(bool, progress, true,
          "A progress line on stderr every second for runs over ~2 s");
ABSL_FLAG(std::string, precision, "", "f32 or f64 (default: unspecified)");
ABSL_FLAG(int64_t, problems, 1, "enumerate: problems per request");
ABSL_FLAG(int64_t, terms, 2, "enumerate: terms per problem");
ABSL_FLAG(int64_t, pmf_len, 16, "enumerate: points per term");
ABSL_FLAG(bool, enumerate_packed, false,
          "enumerate: send each problem's terms in the packed form (values "
          "end to end) instead of one Pmf message per term");
ABSL_FLAG(int64_t, enumerate_repeat, 1,
          "enumerate: each term counts this many times (the request's "
          "repeats field), so the sum has terms x this many terms");
ABSL_FLAG(int64_t, poisson_binomial, 0,
          "enumerate: when > 0, one problem of this many Bernoulli terms "
          "(1 - p_i, p_i), p_i from a fixed seed (replaces --problems, "
          "--terms, --pmf_len)");
ABSL_FLAG(std::string, output_space, "linear",
          "enumerate: the answer's space, linear or log");
ABSL_FLAG(int64_t, categorical_rows, 256, "categorical: rows per request");
ABSL_FLAG(int64_t, categories, 32, "categorical: categories per row");
ABSL_FLAG(int32_t, draws, 1, "categorical: draws per row");
ABSL_FLAG(int64_t, gamma_samples, 256, "gamma: samples per request");
ABSL_FLAG(double, gamma_shape, 1.5, "gamma: shape of the samples");
ABSL_FLAG(bool, gamma_per_element, false,
          "gamma: per-element shapes, log-uniform over [0.1, 10], instead of "
          "one group");
ABSL_FLAG(int64_t, dirichlet_rows, 64, "dirichlet: vectors per request");
ABSL_FLAG(int64_t, dirichlet_dim, 8, "dirichlet: components per vector");
ABSL_FLAG(double, dirichlet_alpha, 0.5, "dirichlet: every concentration");
ABSL_FLAG(int32_t, board_rows, 9, "boards: rows of the grid");
ABSL_FLAG(int32_t, board_cols, 9, "boards: columns of the grid");
ABSL_FLAG(std::string, stones, "10,10", "boards: stones of each colour");
ABSL_FLAG(int64_t, board_count, 64, "boards: positions per request");

namespace sampler::client {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr char kUsage[] = R"(drives one RPC of the sampler service.

usage: sampler-loadgen --rpc KIND [flags]

  sampler-loadgen --rpc gamma --gamma_samples 4096 --concurrency 64 --duration 10s
  sampler-loadgen --rpc boards --rate 2000 --duration 30s --json > report.json
  sampler-loadgen --rpc categorical --requests 10000 --categories 1000 --draws 4

Reports requests/s, items/s (items: samples, rows x draws, positions or
output elements), failures by status code and exact latency percentiles of
the successful requests. Exit codes: 0 the run completed with at least one
successful request, 1 no connection or no request succeeded, 2 usage error.)";

int UsageError(const absl::Status& status) {
  std::cerr << "sampler-loadgen: usage error: " << status.message()
            << "\n(sampler-loadgen --help lists the flags)\n";
  return kExitUsage;
}

absl::StatusOr<LoadShape> ShapeFromFlags() {
  LoadShape shape;
  SAMPLER_ASSIGN_OR_RETURN(shape.precision,
                           ParsePrecision(absl::GetFlag(FLAGS_precision)));
  shape.problems = absl::GetFlag(FLAGS_problems);
  shape.terms = absl::GetFlag(FLAGS_terms);
  shape.pmf_len = absl::GetFlag(FLAGS_pmf_len);
  shape.enumerate_packed = absl::GetFlag(FLAGS_enumerate_packed);
  shape.enumerate_repeat = absl::GetFlag(FLAGS_enumerate_repeat);
  shape.poisson_binomial = absl::GetFlag(FLAGS_poisson_binomial);
  const std::string output_space = absl::GetFlag(FLAGS_output_space);
  if (output_space == "log") {
    shape.output_space = sampler::v1::PROBABILITY_SPACE_LOG;
  } else if (output_space != "linear") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--output_space must be linear or log, got \"", output_space, "\""));
  }
  shape.categorical_rows = absl::GetFlag(FLAGS_categorical_rows);
  shape.categories = absl::GetFlag(FLAGS_categories);
  shape.draws = absl::GetFlag(FLAGS_draws);
  shape.gamma_samples = absl::GetFlag(FLAGS_gamma_samples);
  shape.gamma_shape = absl::GetFlag(FLAGS_gamma_shape);
  shape.gamma_per_element = absl::GetFlag(FLAGS_gamma_per_element);
  shape.dirichlet_rows = absl::GetFlag(FLAGS_dirichlet_rows);
  shape.dirichlet_dim = absl::GetFlag(FLAGS_dirichlet_dim);
  shape.dirichlet_alpha = absl::GetFlag(FLAGS_dirichlet_alpha);
  shape.board_rows = absl::GetFlag(FLAGS_board_rows);
  shape.board_cols = absl::GetFlag(FLAGS_board_cols);
  SAMPLER_ASSIGN_OR_RETURN(const std::vector<int64_t> stones,
                           ParseInt64List(absl::GetFlag(FLAGS_stones)));
  shape.stones.clear();
  for (int64_t k : stones) {
    if (k < 0 || k > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--stones: ", k, " is not a stone count"));
    }
    shape.stones.push_back(static_cast<int32_t>(k));
  }
  shape.board_count = absl::GetFlag(FLAGS_board_count);
  return shape;
}

double ToSeconds(absl::Duration duration) {
  return duration == absl::InfiniteDuration() ? 0
                                              : absl::ToDoubleSeconds(duration);
}

int Main(const std::vector<std::string>& positional) {
  if (positional.size() > 1) {
    return UsageError(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", positional[1], "\"")));
  }
  if (absl::GetFlag(FLAGS_rpc).empty()) {
    std::cerr << "sampler-loadgen " << kUsage << "\n";
    return kExitUsage;
  }
  absl::StatusOr<RpcKind> kind = ParseRpcKind(absl::GetFlag(FLAGS_rpc));
  if (!kind.ok()) return UsageError(kind.status());
  absl::StatusOr<LoadShape> shape = ShapeFromFlags();
  if (!shape.ok()) return UsageError(shape.status());
  absl::StatusOr<int64_t> items_per_request = ItemsPerRequest(*kind, *shape);
  if (!items_per_request.ok()) return UsageError(items_per_request.status());

  DriverOptions options;
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.rate_per_s = absl::GetFlag(FLAGS_rate);
  options.max_outstanding = absl::GetFlag(FLAGS_max_outstanding);
  options.duration = absl::GetFlag(FLAGS_duration);
  options.max_requests = absl::GetFlag(FLAGS_requests);
  if (options.duration == absl::ZeroDuration() && options.max_requests == 0) {
    options.duration = absl::Seconds(10);
  }
  options.deadline = absl::GetFlag(FLAGS_deadline);
  if (!absl::GetFlag(FLAGS_no_seed))
    options.base_seed = absl::GetFlag(FLAGS_seed);
  options.progress = absl::GetFlag(FLAGS_progress);
  const std::string target = absl::GetFlag(FLAGS_target);
  const int channels = absl::GetFlag(FLAGS_channels);
  if (channels <= 0) {
    return UsageError(
        absl::InvalidArgumentError("--channels must be positive"));
  }
  absl::StatusOr<ChannelSecurity> security = ChannelSecurityFromFlags();
  if (!security.ok()) return UsageError(security.status());
  // Connect first, so that connection setup is not counted as latency and a
  // wrong --target fails at once instead of as a run of errors.
  const absl::Time connect_by =
      absl::Now() + absl::GetFlag(FLAGS_connect_timeout);
  std::string service_config;
  if (const int attempts = absl::GetFlag(FLAGS_retry_overloaded);
      attempts != 0) {
    if (attempts < 2 || attempts > 5) {
      return UsageError(
          absl::InvalidArgumentError("--retry_overloaded must be 0 or 2 to 5"));
    }
    service_config = absl::StrCat(
        R"({"methodConfig": [{"name": [{"service": "sampler.v1.SamplerService"}],)",
        R"( "retryPolicy": {"maxAttempts": )", attempts,
        R"(, "initialBackoff": "0.01s", "maxBackoff": "1s",)",
        R"( "backoffMultiplier": 2,)",
        R"( "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]})");
  }
  for (int c = 0; c < channels; ++c) {
    options.channels.push_back(
        MakeChannel(target, c, *security, service_config));
    if (!options.channels.back()->WaitForConnected(
            absl::ToChronoTime(connect_by))) {
      std::cerr << "sampler-loadgen: UNAVAILABLE: cannot connect to " << target
                << " within " << absl::GetFlag(FLAGS_connect_timeout) << "\n";
      return kExitFailure;
    }
  }

  absl::StatusOr<LoadResult> result = RunLoad(*kind, *shape, options);
  if (!result.ok()) return UsageError(result.status());

  LoadConfig config;
  config.target = target;
  config.rpc = std::string(RpcKindName(*kind));
  config.mode = options.rate_per_s > 0 ? "rate" : "concurrency";
  config.concurrency = options.rate_per_s > 0 ? 0 : options.concurrency;
  config.rate_per_s = options.rate_per_s;
  config.duration_s = ToSeconds(options.duration);
  config.max_requests = options.max_requests;
  config.deadline_s = ToSeconds(options.deadline);
  config.channels = channels;
  config.base_seed = options.base_seed;
  config.items_per_request = *items_per_request;
  config.item_unit = std::string(ItemUnit(*kind));
  config.parameters = ShapeParameters(*kind, *shape);

  if (absl::GetFlag(FLAGS_json)) {
    std::cout << FormatLoadReportJson(config, *result) << "\n";
  } else {
    std::cout << FormatLoadReport(config, *result);
  }
  return result->ok > 0 ? kExitOk : kExitFailure;
}

}  // namespace
}  // namespace sampler::client

int main(int argc, char** argv) {
  sampler::client::ConfigureUsage(sampler::client::kUsage);
  const absl::StatusOr<std::vector<std::string>> positional =
      sampler::client::ParseArgs(argc, argv, {}, ';');
  if (!positional.ok()) return sampler::client::UsageError(positional.status());
  return sampler::client::Main(*positional);
}
