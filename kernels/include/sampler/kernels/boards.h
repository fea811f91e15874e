// Random board positions (SampleBoards): `stones[c]` stones of each colour c
// on a rows x cols grid, uniform over all such positions. The bits follow
// docs/randomness.md, section "Boards"; boards_core.h holds the selection
// that the CPU and CUDA backends share.
#ifndef SAMPLER_KERNELS_BOARDS_H_
#define SAMPLER_KERNELS_BOARDS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace sampler::kernels {

// 128 x 128: the selection of one colour then spans 512 32-bit words.
inline constexpr int kMaxBoardSites = 16384;
inline constexpr int kMaxBoardColours = 16;

struct BoardSpec {
  int32_t rows = 0;
  int32_t cols = 0;
  std::vector<int32_t> stones;  // Stones per colour, in placement order.
};

// InvalidArgument naming the field, index and value unless: 1 <= rows, cols;
// rows * cols <= kMaxBoardSites; 1 to kMaxBoardColours colours; every
// stones[i] >= 0; and the stones fit on the board.
absl::Status ValidateBoardSpec(const BoardSpec& spec);

// 64-bit output words per colour: ceil(rows * cols / 64). 0 when rows or
// cols is below 1 or the board exceeds kMaxBoardSites.
int BoardWords64(const BoardSpec& spec);

// Writes positions first_position .. first_position + count - 1 (the item
// index of each is its position index) into `out`, laid out
// [position][colour][word] with BoardWords64(spec) words per colour: site
// s = row * cols + col is bit s mod 64 of word s / 64; bits past rows * cols
// are 0. `out.size()` must equal count * stones.size() * BoardWords64(spec).
// Spec, count and size are validated before anything is written.
absl::Status SampleBoardsCpu(const BoardSpec& spec, uint64_t seed,
                             uint64_t first_position, int64_t count,
                             absl::Span<uint64_t> out);

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_BOARDS_H_
