// The gRPC port's transport security, from --tls_cert_file, --tls_key_file
// and --tls_client_ca_file: plaintext when no certificate is given, TLS when
// one is, and mutual TLS (every client must present a certificate that
// chains to the client CA) when a client CA is given too.
//
// The files are read and checked at startup with OpenSSL, so that a wrong
// path, a file that is not PEM, an encrypted key or a key that does not
// belong to the certificate stops the server with a message naming the flag
// (gRPC itself would only fail the handshakes later). The files are read
// once: to rotate a certificate, restart the server.
#ifndef SAMPLER_SERVER_TLS_H_
#define SAMPLER_SERVER_TLS_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace sampler::server {

struct TlsFiles {
  std::string cert_file;       // PEM certificate chain, leaf first
  std::string key_file;        // PEM private key of the leaf, unencrypted
  std::string client_ca_file;  // PEM CA certificates (empty: no mTLS)
};

struct ServerSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  bool tls = false;
  // For the startup log: "plaintext", "TLS" or "mutual TLS ...".
  std::string description;
};

// INVALID_ARGUMENT naming the flag and the file for anything wrong.
absl::StatusOr<ServerSecurity> ServerSecurityFromFiles(const TlsFiles& files);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_TLS_H_
