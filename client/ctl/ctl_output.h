// How samplerctl ends: exit codes, error reports, JSON output.
#ifndef SAMPLER_CLIENT_CTL_CTL_OUTPUT_H_
#define SAMPLER_CLIENT_CTL_CTL_OUTPUT_H_

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace sampler::client {

inline constexpr int kExitOk = 0;
// An RPC failed, the answer was malformed, or the server is not SERVING.
inline constexpr int kExitFailure = 1;
// The command line was wrong; nothing was sent.
inline constexpr int kExitUsage = 2;

// Prints "samplerctl: usage error: MESSAGE" to stderr; returns kExitUsage.
int UsageError(const absl::Status& status);

// Prints "samplerctl: CODE_NAME: MESSAGE" to stderr; returns kExitFailure.
int RpcError(const absl::Status& status);

// Prints `message` as one line of JSON to stdout.
absl::Status PrintJson(const google::protobuf::Message& message);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_CTL_CTL_OUTPUT_H_
