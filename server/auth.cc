#include "server/auth.h"

#include <grpcpp/server_context.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sampler::server {
namespace {

constexpr absl::string_view kScheme = "Bearer ";

// False only if OpenSSL fails (out of memory): never treated as a match.
bool Sha256(absl::string_view text, std::array<uint8_t, 32>* digest) {
  unsigned int size = 0;
  return EVP_Digest(text.data(), text.size(), digest->data(), &size,
                    EVP_sha256(), nullptr) == 1 &&
         size == digest->size();
}

bool IsTokenChar(char c) { return c > ' ' && c <= '~'; }

}  // namespace

absl::StatusOr<std::unique_ptr<TokenAuthenticator>>
TokenAuthenticator::FromText(absl::string_view text) {
  std::vector<Digest> digests;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    for (char c : line) {
      if (!IsTokenChar(c)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "line ", line_number,
            ": a token is printable ASCII without spaces, one per line"));
      }
    }
    Digest digest;
    if (!Sha256(line, &digest)) return absl::InternalError("SHA-256 failed");
    digests.push_back(digest);
  }
  if (digests.empty()) {
    return absl::InvalidArgumentError("no token (one per line)");
  }
  return std::unique_ptr<TokenAuthenticator>(
      new TokenAuthenticator(std::move(digests)));
}

absl::StatusOr<std::unique_ptr<TokenAuthenticator>>
TokenAuthenticator::FromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  }
  absl::StatusOr<std::unique_ptr<TokenAuthenticator>> auth =
      FromText(contents.str());
  if (!auth.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", auth.status().message()));
  }
  return auth;
}

absl::Status TokenAuthenticator::CheckHeader(
    absl::optional<absl::string_view> value, size_t count) const {
  if (!value.has_value() || count == 0) {
    return absl::UnauthenticatedError(
        "this server requires a bearer token: send the metadata "
        "\"authorization: Bearer <token>\"");
  }
  if (count > 1) {
    return absl::UnauthenticatedError(
        "more than one \"authorization\" metadata entry");
  }
  // The scheme is case-insensitive (RFC 7235); the token is not.
  if (value->size() <= kScheme.size() ||
      !absl::StartsWithIgnoreCase(*value, kScheme)) {
    return absl::UnauthenticatedError(
        "the \"authorization\" metadata is not \"Bearer <token>\"");
  }
  Digest presented;
  if (!Sha256(absl::StripAsciiWhitespace(value->substr(kScheme.size())),
              &presented)) {
    return absl::UnauthenticatedError("cannot check the bearer token");
  }
  // Every accepted digest is compared, without stopping at a match.
  int match = 0;
  for (const Digest& accepted : digests_) {
    match |=
        CRYPTO_memcmp(presented.data(), accepted.data(), presented.size()) == 0;
  }
  if (match == 0) {
    return absl::UnauthenticatedError("the bearer token is not accepted");
  }
  return absl::OkStatus();
}

absl::Status TokenAuthenticator::Check(
    const grpc::ServerContextBase& context) const {
  const auto& metadata = context.client_metadata();
  const auto [first, last] = metadata.equal_range("authorization");
  size_t count = 0;
  absl::optional<absl::string_view> value;
  for (auto it = first; it != last; ++it) {
    ++count;
    value = absl::string_view(it->second.data(), it->second.size());
  }
  return CheckHeader(value, count);
}

absl::Status Authenticate(const TokenAuthenticator* auth,
                          const grpc::ServerContextBase& context) {
  return auth == nullptr ? absl::OkStatus() : auth->Check(context);
}

}  // namespace sampler::server
