// Text pictures of board positions decoded from the bitboard layout of
// SampleBoardsResponse. Pure: no gRPC.
#ifndef SAMPLER_CLIENT_CTL_BOARD_RENDER_H_
#define SAMPLER_CLIENT_CTL_BOARD_RENDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sampler::client {

// The character for a stone of `colour`: 'X' for colour 0, 'O' for colour 1,
// then 'A', 'B', ... (skipping 'O' and 'X'), '*' past the alphabet.
char ColourChar(int colour);

// Empty sites are drawn as this, and a site claimed by two colours (which a
// correct server never sends) as kCollisionChar, so that it stands out.
inline constexpr char kEmptyChar = '.';
inline constexpr char kCollisionChar = '#';

// One position as `rows` lines of `cols` characters. `words` holds the
// position's colours x words_per_board words: site s = row * cols + col is
// bit s % 64 of word s / 64 of its colour's board.
absl::StatusOr<std::vector<std::string>> RenderBoard(
    absl::Span<const uint64_t> words, int rows, int cols, int colours,
    int words_per_board);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_CTL_BOARD_RENDER_H_
