// The flags every samplerctl subcommand shares, gathered into one struct.
#ifndef SAMPLER_CLIENT_CTL_CTL_OPTIONS_H_
#define SAMPLER_CLIENT_CTL_CTL_OPTIONS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "client/common/json_io.h"
#include "grpcpp/channel.h"
#include "sampler/kernels/status_macros.h"
#include "sampler/v1/sampler.pb.h"

namespace sampler::client {

struct CtlOptions {
  std::string target;
  std::shared_ptr<grpc::Channel> channel;
  // Print the response as proto JSON instead of for a person.
  bool json = false;
  absl::optional<uint64_t> seed;
  sampler::v1::Precision precision = sampler::v1::PRECISION_UNSPECIFIED;
  // Deadline of the call, counted from its start.
  absl::Duration timeout;
  // Path of a request in proto JSON that replaces the subcommand's flags.
  std::string request_json;
  // Use the streaming RPC; `chunk` is its max items per chunk (0: server's
  // choice).
  bool stream = false;
  int64_t chunk = 0;
  bool log_output = false;
  // Shared size flags; 0 means the subcommand's own default.
  int64_t count = 0;
  int64_t rows = 0;
  // Most rows / positions / vectors printed for a person (0: all).
  int64_t max_print = 0;
};

// Reads the shared flags (after absl::ParseCommandLine) and opens the
// channel; an error is a usage error.
absl::StatusOr<CtlOptions> CtlOptionsFromFlags();

// Whether row `index` is within --max_print.
inline bool ShouldPrint(const CtlOptions& options, int64_t index) {
  return options.max_print <= 0 || index < options.max_print;
}

// Reads --request_json for a subcommand with a streaming variant: the file
// may hold the stream request type (with its chunk size) or the unary one,
// which is wrapped. Unknown fields are errors, so the two cannot be confused.
template <typename StreamRequest>
absl::Status ReadStreamRequestJson(const std::string& path,
                                   StreamRequest* request) {
  SAMPLER_ASSIGN_OR_RETURN(const std::string json, ReadFile(path));
  const absl::Status as_stream = JsonToMessage(json, request);
  if (as_stream.ok()) return as_stream;
  request->Clear();
  const absl::Status as_unary = JsonToMessage(json, request->mutable_request());
  if (as_unary.ok()) return as_unary;
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": ", as_unary.message(), "; ", as_stream.message()));
}

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_CTL_CTL_OPTIONS_H_
