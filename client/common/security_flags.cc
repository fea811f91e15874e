#include "client/common/security_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/common/json_io.h"
#include "sampler/kernels/status_macros.h"

ABSL_FLAG(bool, tls, false,
          "Connect with TLS, trusting the system's CAs (implied by "
          "--tls_ca_file and --tls_cert_file)");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA certificate(s) the server's certificate must chain to; "
          "turns TLS on");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM client certificate chain for mutual TLS (with --tls_key_file); "
          "turns TLS on");
ABSL_FLAG(std::string, tls_key_file, "",
          "PEM private key (unencrypted) of --tls_cert_file");
ABSL_FLAG(std::string, tls_server_name, "",
          "Check the server's certificate against this name instead of the "
          "target's host (e.g. localhost when connecting to 127.0.0.1)");
ABSL_FLAG(std::string, token_file, "",
          "File whose first non-blank line is a bearer token, sent with every "
          "call as \"authorization: Bearer <token>\" (TLS or not)");

namespace sampler::client {
namespace {

absl::StatusOr<std::string> ReadFlagFile(const char* flag,
                                         const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", text.status().message()));
  }
  return text;
}

}  // namespace

absl::StatusOr<ChannelSecurity> ChannelSecurityFromFlags() {
  ChannelSecurity security;
  const std::string ca_file = absl::GetFlag(FLAGS_tls_ca_file);
  const std::string cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  const std::string key_file = absl::GetFlag(FLAGS_tls_key_file);
  security.server_name = absl::GetFlag(FLAGS_tls_server_name);
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert_file and --tls_key_file go together");
  }
  security.tls =
      absl::GetFlag(FLAGS_tls) || !ca_file.empty() || !cert_file.empty();
  if (!security.tls && !security.server_name.empty()) {
    return absl::InvalidArgumentError(
        "--tls_server_name needs TLS (--tls or --tls_ca_file)");
  }
  if (!ca_file.empty()) {
    SAMPLER_ASSIGN_OR_RETURN(security.root_certs_pem,
                             ReadFlagFile("tls_ca_file", ca_file));
  }
  if (!cert_file.empty()) {
    SAMPLER_ASSIGN_OR_RETURN(security.cert_chain_pem,
                             ReadFlagFile("tls_cert_file", cert_file));
    SAMPLER_ASSIGN_OR_RETURN(security.private_key_pem,
                             ReadFlagFile("tls_key_file", key_file));
  }
  if (const std::string token_file = absl::GetFlag(FLAGS_token_file);
      !token_file.empty()) {
    SAMPLER_ASSIGN_OR_RETURN(const std::string text,
                             ReadFlagFile("token_file", token_file));
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty()) {
        security.token = std::string(line);
        break;
      }
    }
    if (security.token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token_file: ", token_file, " holds no token"));
    }
  }
  return security;
}

}  // namespace sampler::client
