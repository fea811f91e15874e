#include "client/ctl/board_render.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sampler::client {

char ColourChar(int colour) {
  // Colours 0 and 1 keep the familiar X and O; the rest must not reuse them.
  static constexpr char kOthers[] = "ABCDEFGHIJKLMNPQRSTUVWYZ";
  if (colour == 0) return 'X';
  if (colour == 1) return 'O';
  const int other = colour - 2;
  if (other >= 0 && other < static_cast<int>(sizeof(kOthers) - 1)) {
    return kOthers[other];
  }
  return '*';
}

absl::StatusOr<std::vector<std::string>> RenderBoard(
    absl::Span<const uint64_t> words, int rows, int cols, int colours,
    int words_per_board) {
  if (rows <= 0 || cols <= 0 || colours <= 0 || words_per_board <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad board shape: rows ", rows, ", cols ", cols, ", colours ", colours,
        ", words_per_board ", words_per_board));
  }
  const int64_t sites = int64_t{rows} * cols;
  if (sites > int64_t{words_per_board} * 64) {
    return absl::InvalidArgumentError(
        absl::StrCat(rows, " x ", cols, " sites do not fit in ",
                     words_per_board, " words per board"));
  }
  if (words.size() != static_cast<size_t>(colours) * words_per_board) {
    return absl::InvalidArgumentError(
        absl::StrCat("a position needs ", colours * words_per_board,
                     " words, got ", words.size()));
  }
  std::vector<std::string> lines(rows, std::string(cols, kEmptyChar));
  for (int colour = 0; colour < colours; ++colour) {
    const uint64_t* board = words.data() + int64_t{colour} * words_per_board;
    for (int64_t site = 0; site < sites; ++site) {
      if (((board[site / 64] >> (site % 64)) & 1) == 0) continue;
      char& cell = lines[site / cols][site % cols];
      cell = cell == kEmptyChar ? ColourChar(colour) : kCollisionChar;
    }
  }
  return lines;
}

}  // namespace sampler::client
