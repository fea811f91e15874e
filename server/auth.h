// Bearer-token authentication of sampler.v1.SamplerService calls
// (--auth_token_file). Every handler of the service calls Authenticate first;
// grpc.health.v1.Health and server reflection are other services and stay
// open (README, "Security", says why).
//
// A call is accepted when its metadata holds exactly one
// `authorization: Bearer <token>` whose token is one of the file's. Tokens
// are kept only as SHA-256 digests and compared in constant time (the time
// depends neither on where a wrong token differs nor on which token matched).
// Nothing here logs or returns a token.
#ifndef SAMPLER_SERVER_AUTH_H_
#define SAMPLER_SERVER_AUTH_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace grpc {
class ServerContextBase;
}  // namespace grpc

namespace sampler::server {

class TokenAuthenticator {
 public:
  // The accepted tokens, one per line: surrounding whitespace (and a
  // Windows line end) is dropped, blank lines are skipped. A token is
  // printable ASCII without spaces (what a metadata value can carry). At
  // least one token. Errors name the line, never the token.
  static absl::StatusOr<std::unique_ptr<TokenAuthenticator>> FromText(
      absl::string_view text);
  // FromText on the file's contents; errors name the file.
  static absl::StatusOr<std::unique_ptr<TokenAuthenticator>> FromFile(
      const std::string& path);

  // OK, or UNAUTHENTICATED saying what is missing or wrong.
  absl::Status Check(const grpc::ServerContextBase& context) const;
  // The same for the value of the `authorization` metadata (nullopt: none).
  // `count` is how many `authorization` entries the call carried.
  absl::Status CheckHeader(absl::optional<absl::string_view> value,
                           size_t count = 1) const;

  size_t num_tokens() const { return digests_.size(); }

 private:
  using Digest = std::array<uint8_t, 32>;
  explicit TokenAuthenticator(std::vector<Digest> digests)
      : digests_(std::move(digests)) {}

  std::vector<Digest> digests_;
};

// OK when `auth` is null (no --auth_token_file), else auth->Check(context).
absl::Status Authenticate(const TokenAuthenticator* auth,
                          const grpc::ServerContextBase& context);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_AUTH_H_
