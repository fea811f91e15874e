// Tests of samplerctl's pure parts: board rendering. No server needed.
#include <cstdint>
#include <string>
#include <vector>

#include "client/ctl/board_render.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sampler::client {
namespace {

using ::testing::ElementsAre;

// ------------------------------------------------------ board rendering --

TEST(ColourCharTest, XThenOThenLettersWithoutXAndO) {
  EXPECT_EQ(ColourChar(0), 'X');
  EXPECT_EQ(ColourChar(1), 'O');
  EXPECT_EQ(ColourChar(2), 'A');
  std::string seen;
  for (int colour = 0; colour < 26; ++colour) seen += ColourChar(colour);
  // X and O appear only as colours 0 and 1.
  EXPECT_EQ(seen.find('X', 1), std::string::npos);
  EXPECT_EQ(seen.find('O', 2), std::string::npos);
  EXPECT_EQ(ColourChar(100), '*');
}

TEST(RenderBoardTest, DrawsSitesRowMajorFromBitZero) {
  // 2 x 3 board, one word per colour: colour 0 at sites 0 and 5, colour 1
  // at site 4.
  const std::vector<uint64_t> words = {(1u << 0) | (1u << 5), 1u << 4};
  absl::StatusOr<std::vector<std::string>> lines =
      RenderBoard(words, 2, 3, 2, 1);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_THAT(*lines, ElementsAre("X..", ".OX"));
}

TEST(RenderBoardTest, SitesPastTheFirstWordUseTheNextOne) {
  // 9 x 9 = 81 sites: site 80 (the last) is bit 16 of word 1.
  std::vector<uint64_t> words = {0, 0, 0, 0, 0, 0};
  words[0 * 2 + 1] = uint64_t{1} << 16;  // colour 0, word 1
  words[1 * 2 + 0] = uint64_t{1} << 63;  // colour 1, site 63 = row 7 col 0
  words[2 * 2 + 0] = uint64_t{1} << 1;   // colour 2, site 1
  absl::StatusOr<std::vector<std::string>> lines =
      RenderBoard(words, 9, 9, 3, 2);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ((*lines)[0], ".A.......");
  EXPECT_EQ((*lines)[7], "O........");
  EXPECT_EQ((*lines)[8], "........X");
}

TEST(RenderBoardTest, MarksSitesClaimedTwice) {
  const std::vector<uint64_t> words = {1, 1};
  absl::StatusOr<std::vector<std::string>> lines =
      RenderBoard(words, 1, 2, 2, 1);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_THAT(*lines, ElementsAre(std::string{kCollisionChar, kEmptyChar}));
}

TEST(RenderBoardTest, RejectsInconsistentShapes) {
  const std::vector<uint64_t> words = {0, 0};
  EXPECT_FALSE(RenderBoard(words, 9, 9, 2, 1).ok());  // 81 sites > 64 bits
  EXPECT_FALSE(RenderBoard(words, 2, 2, 3, 1).ok());  // 3 words needed
  EXPECT_FALSE(RenderBoard(words, 0, 2, 2, 1).ok());
}

}  // namespace
}  // namespace sampler::client
