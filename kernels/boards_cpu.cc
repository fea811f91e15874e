// CPU backend of SampleBoards: the shared per-position core (boards_core.h)
// run over the requested positions, one after another.
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/boards_core.h"

namespace sampler::kernels {

absl::Status ValidateBoardSpec(const BoardSpec& spec) {
  if (spec.rows < 1 || spec.rows > kMaxBoardSites) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rows = ", spec.rows, ": must be between 1 and ", kMaxBoardSites));
  }
  if (spec.cols < 1 || spec.cols > kMaxBoardSites) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cols = ", spec.cols, ": must be between 1 and ", kMaxBoardSites));
  }
  // Both factors are at most kMaxBoardSites, so the product fits in 64 bits.
  const int64_t sites = int64_t{spec.rows} * spec.cols;
  if (sites > kMaxBoardSites) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows x cols = ", spec.rows, "x", spec.cols, " = ", sites,
                     " sites: must be at most ", kMaxBoardSites));
  }
  if (spec.stones.empty()) {
    return absl::InvalidArgumentError("stones: must give at least one colour");
  }
  if (spec.stones.size() > static_cast<size_t>(kMaxBoardColours)) {
    return absl::InvalidArgumentError(
        absl::StrCat("stones: ", spec.stones.size(),
                     " colours: must be at most ", kMaxBoardColours));
  }
  // At most 16 terms of at most 2^31 each: no overflow in 64 bits.
  int64_t total = 0;
  for (size_t i = 0; i < spec.stones.size(); ++i) {
    if (spec.stones[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("stones[", i, "] = ", spec.stones[i], ": must be >= 0"));
    }
    total += spec.stones[i];
  }
  if (total > sites) {
    return absl::InvalidArgumentError(
        absl::StrCat("stones: total ", total, " exceeds the ", sites,
                     " sites of a ", spec.rows, "x", spec.cols, " board"));
  }
  return absl::OkStatus();
}

int BoardWords64(const BoardSpec& spec) {
  if (spec.rows < 1 || spec.cols < 1 || spec.rows > kMaxBoardSites ||
      spec.cols > kMaxBoardSites) {
    return 0;
  }
  const int64_t sites = int64_t{spec.rows} * spec.cols;
  if (sites > kMaxBoardSites) return 0;
  return BoardOutputWords64(static_cast<int32_t>(sites));
}

absl::Status SampleBoardsCpu(const BoardSpec& spec, uint64_t seed,
                             uint64_t first_position, int64_t count,
                             absl::Span<uint64_t> out) {
  if (absl::Status status = ValidateBoardSpec(spec); !status.ok()) {
    return status;
  }
  if (count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("count = ", count, ": must be >= 0"));
  }
  // Position indices are Philox counter words: they must not wrap around.
  if (count > 0 && first_position > std::numeric_limits<uint64_t>::max() -
                                        static_cast<uint64_t>(count - 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("first_position = ", first_position, ", count = ", count,
                     ": the last position index exceeds 2^64 - 1"));
  }
  const int32_t sites = spec.rows * spec.cols;
  const int colours = static_cast<int>(spec.stones.size());
  const size_t per_position =
      static_cast<size_t>(colours) * BoardOutputWords64(sites);
  // Divide rather than multiply: count * per_position may overflow.
  if (out.size() % per_position != 0 ||
      out.size() / per_position != static_cast<uint64_t>(count)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "out: size ", out.size(), " must be count (", count, ") x colours (",
        colours, ") x words per colour (", BoardOutputWords64(sites), ")"));
  }
  std::vector<uint32_t> scratch(BoardScratchWords32(sites));
  for (int64_t i = 0; i < count; ++i) {
    SampleBoardPosition(seed, first_position + static_cast<uint64_t>(i), sites,
                        spec.stones.data(), colours, scratch.data(),
                        out.data() + static_cast<size_t>(i) * per_position);
  }
  return absl::OkStatus();
}

}  // namespace sampler::kernels
