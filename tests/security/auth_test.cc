// TokenAuthenticator (server/auth.h) without a server: the token file's
// format and the check of an `authorization` header.
#include "server/auth.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/match.h"

namespace sampler::server {
namespace {

using ::absl::StatusCode;

TEST(AuthTest, ReadsOneTokenPerLine) {
  auto auth = TokenAuthenticator::FromText(
      "\n  alpha-token \r\n\n\tbeta-token\ngamma-token");
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_EQ((*auth)->num_tokens(), 3u);
  for (const char* header : {"Bearer alpha-token", "Bearer beta-token",
                             "bearer gamma-token", "BEARER   alpha-token  "}) {
    EXPECT_TRUE((*auth)->CheckHeader(header).ok()) << header;
  }
}

TEST(AuthTest, RefusesWhatIsNotAnAcceptedToken) {
  auto auth = TokenAuthenticator::FromText("alpha-token\nbeta-token\n");
  ASSERT_TRUE(auth.ok()) << auth.status();
  const struct {
    absl::optional<absl::string_view> header;
    size_t count;
  } cases[] = {
      {absl::nullopt, 0},
      {"", 1},
      {"Bearer", 1},
      {"Bearer ", 1},
      {"Bearer alpha", 1},          // a prefix
      {"Bearer alpha-token-x", 1},  // longer
      {"Bearer ALPHA-TOKEN", 1},    // tokens are case-sensitive
      {"Bearer alpha-tokenbeta-token", 1},
      {"Basic alpha-token", 1},
      {"alpha-token", 1},
      {"Bearer alpha-token", 2},  // two authorization entries
  };
  for (const auto& c : cases) {
    const absl::Status status = (*auth)->CheckHeader(c.header, c.count);
    EXPECT_EQ(status.code(), StatusCode::kUnauthenticated)
        << c.header.value_or("(none)") << " x" << c.count;
    EXPECT_FALSE(absl::StrContains(status.message(), "alpha"))
        << status.message();
  }
}

TEST(AuthTest, RejectsFilesWithoutTokensOrWithBadCharacters) {
  EXPECT_EQ(TokenAuthenticator::FromText("").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(TokenAuthenticator::FromText(" \n\r\n\t\n").status().code(),
            StatusCode::kInvalidArgument);
  const absl::Status spaced =
      TokenAuthenticator::FromText("good-token\nsecret with space\n").status();
  EXPECT_EQ(spaced.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(spaced.message(), "line 2")) << spaced;
  EXPECT_FALSE(absl::StrContains(spaced.message(), "secret")) << spaced;
  EXPECT_EQ(TokenAuthenticator::FromText("caf\xc3\xa9").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(AuthTest, MissingFileNamesThePath) {
  const absl::Status status =
      TokenAuthenticator::FromFile("/nonexistent/tokens").status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "/nonexistent/tokens"))
      << status;
}

}  // namespace
}  // namespace sampler::server
