// The flags that secure a client's channel, shared by samplerctl and
// sampler-loadgen: --tls, --tls_ca_file, --tls_cert_file, --tls_key_file,
// --tls_server_name and --token_file (client/README.md, "Security").
#ifndef SAMPLER_CLIENT_COMMON_SECURITY_FLAGS_H_
#define SAMPLER_CLIENT_COMMON_SECURITY_FLAGS_H_

#include "absl/status/statusor.h"
#include "client/common/grpc_util.h"

namespace sampler::client {

// Reads the flags (after absl::ParseCommandLine) and the files they name.
// An error names the flag and is a usage error.
absl::StatusOr<ChannelSecurity> ChannelSecurityFromFlags();

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_COMMON_SECURITY_FLAGS_H_
