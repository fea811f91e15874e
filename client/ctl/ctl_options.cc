#include "client/ctl/ctl_options.h"

#include "absl/flags/flag.h"
#include "client/common/grpc_util.h"
#include "client/common/parse.h"
#include "client/common/security_flags.h"
#include "sampler/kernels/status_macros.h"

ABSL_FLAG(std::string, target, "localhost:50051",
          "Server address, any gRPC target (host:port, unix:PATH, dns:///...)");
ABSL_FLAG(bool, json, false,
          "Print the response as proto JSON (one line; a stream's chunks are "
          "assembled into the unary response type)");
ABSL_FLAG(absl::optional<uint64_t>, seed, absl::nullopt,
          "Seed of the request (default: the server picks one and echoes it)");
ABSL_FLAG(std::string, precision, "",
          "f32 or f64 (default: unspecified, which the server treats as f64)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10),
          "Deadline of the call, e.g. 500ms, 10s, 2m (inf: none)");
ABSL_FLAG(std::string, request_json, "",
          "File with the whole request in proto JSON, sent as is instead of "
          "one built from the subcommand's flags (--seed and --stream still "
          "apply; with --stream the file may hold the stream request type)");
ABSL_FLAG(bool, stream, false,
          "gamma, categorical, boards: use the streaming RPC and assemble its "
          "chunks (answers of any size)");
ABSL_FLAG(int64_t, chunk, 0,
          "With --stream: most items per chunk (0: the server chooses)");
ABSL_FLAG(bool, log_output, false,
          "enumerate, gamma, dirichlet: ask for natural logarithms of "
          "probabilities or samples");
ABSL_FLAG(int64_t, count, 0,
          "gamma: samples of the group (default 1000); boards: positions "
          "(default 3)");
ABSL_FLAG(int64_t, rows, 0,
          "dirichlet: vectors (default 5); boards: rows of the grid "
          "(default 9)");
ABSL_FLAG(int64_t, max_print, 20,
          "Most PMF points, rows, positions or vectors shown (0: all)");

namespace sampler::client {

absl::StatusOr<CtlOptions> CtlOptionsFromFlags() {
  CtlOptions options;
  options.target = absl::GetFlag(FLAGS_target);
  if (options.target.empty()) {
    return absl::InvalidArgumentError("--target is empty");
  }
  options.json = absl::GetFlag(FLAGS_json);
  options.seed = absl::GetFlag(FLAGS_seed);
  SAMPLER_ASSIGN_OR_RETURN(options.precision,
                           ParsePrecision(absl::GetFlag(FLAGS_precision)));
  options.timeout = absl::GetFlag(FLAGS_timeout);
  options.request_json = absl::GetFlag(FLAGS_request_json);
  options.stream = absl::GetFlag(FLAGS_stream);
  options.chunk = absl::GetFlag(FLAGS_chunk);
  options.log_output = absl::GetFlag(FLAGS_log_output);
  options.count = absl::GetFlag(FLAGS_count);
  options.rows = absl::GetFlag(FLAGS_rows);
  options.max_print = absl::GetFlag(FLAGS_max_print);
  if (options.chunk < 0 || options.count < 0 || options.rows < 0) {
    return absl::InvalidArgumentError(
        "--chunk, --count and --rows cannot be negative");
  }
  SAMPLER_ASSIGN_OR_RETURN(const ChannelSecurity security,
                           ChannelSecurityFromFlags());
  options.channel = MakeChannel(options.target, 0, security);
  return options;
}

}  // namespace sampler::client
