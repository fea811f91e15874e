// The gRPC plumbing the client tools share: channels, deadlines, status
// conversion.
#ifndef SAMPLER_CLIENT_COMMON_GRPC_UTIL_H_
#define SAMPLER_CLIENT_COMMON_GRPC_UTIL_H_

#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "grpcpp/support/sync_stream.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::client {

// How a channel secures its calls (client/common/security_flags.h fills it from
// --tls, --tls_ca_file, --tls_cert_file, --tls_key_file, --tls_server_name
// and --token_file). The default is plaintext without a token.
struct ChannelSecurity {
  bool tls = false;
  // PEM CA certificates the server's certificate must chain to (empty: the
  // system's trusted roots).
  std::string root_certs_pem;
  // Client certificate chain and its unencrypted key, for mutual TLS
  // (both or neither).
  std::string cert_chain_pem;
  std::string private_key_pem;
  // The name the server's certificate is checked against instead of the
  // target's host (empty: the target's host).
  std::string server_name;
  // Sent as "authorization: Bearer <token>" with every call (empty: none).
  std::string token;
};

// A channel to `target` that accepts messages of any size: gRPC's client
// default of 4 MiB is far below what the server may send.
// `channel_index` > 0 gives a channel that shares no connection with the
// others (gRPC otherwise pools subchannels for equal arguments), so that a
// load generator can spread load over several TCP connections. Plaintext
// unless `security` says otherwise; its token goes with every call on the
// channel, TLS or not.
std::shared_ptr<grpc::Channel> MakeChannel(
    const std::string& target, int channel_index = 0,
    const ChannelSecurity& security = ChannelSecurity(),
    const std::string& service_config_json = "");

// Sets the deadline to now + timeout; an infinite or non-positive timeout
// sets none.
void SetTimeout(absl::Duration timeout, grpc::ClientContext* context);

// gRPC and absl share status codes and their names ("UNAVAILABLE").
absl::Status ToAbslStatus(const grpc::Status& status);
std::string StatusCodeName(grpc::StatusCode code);

// Reads a server stream to its end, handing each chunk to `on_chunk` in
// order. An error from `on_chunk` (a malformed chunk) cancels the call and is
// returned; otherwise the call's own status is.
template <typename Chunk>
absl::Status ReadStream(
    grpc::ClientContext* context, grpc::ClientReaderInterface<Chunk>* reader,
    absl::FunctionRef<absl::Status(const Chunk&)> on_chunk) {
  Chunk chunk;
  absl::Status chunk_status;
  while (reader->Read(&chunk)) {
    chunk_status = on_chunk(chunk);
    if (!chunk_status.ok()) {
      context->TryCancel();
      while (reader->Read(&chunk)) {
      }
      break;
    }
  }
  const grpc::Status call_status = reader->Finish();
  SAMPLER_RETURN_IF_ERROR(chunk_status);
  return ToAbslStatus(call_status);
}

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_COMMON_GRPC_UTIL_H_
