// CUDA backend of SampleBoards: bit-parallel k-subset selection
// (board-positions-k-subsets.txt) producing exactly the bits of
// SampleBoardsCpu (docs/randomness.md, section "Boards").
//
// One call covers a whole segmented batch: every segment is one request with
// its own spec, seed, first position, count and output offset. A host-side
// builder plans the batch, so that the launcher never allocates and never
// copies:
//
//   BoardsBatchBuilder b;
//   b.Add(spec, seed, first_position, count);            // per request
//   b.Finish();        // PrepareBoardSegments: variants, order, item_begin
//   stager.Run(b.Staging(), [&](char* in) { b.PackInto(in); },
//              [&](const DeviceRegions& d, cudaStream_t s) {
//                return LaunchBoards(b.View(d), s);
//              },
//              [&](const char* out) { ... b.Outputs(out) + b.out_offset(k) });
//
// (staging.h). PrepareBoardSegments validates the segments, picks a kernel
// variant for each, orders them by variant and numbers their positions
// (item_begin); the prepared array travels as it is to the device (the
// struct has one layout on host and device), and LaunchBoards queues one
// kernel per variant present on the caller's stream.
#ifndef SAMPLER_KERNELS_CUDA_BOARDS_H_
#define SAMPLER_KERNELS_CUDA_BOARDS_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/cuda/staging.h"

namespace sampler::kernels::cuda {

// One request of a segmented batch: positions first_position ..
// first_position + count - 1 of the board under `seed`, written from
// out[out_offset] on, laid out as SampleBoardsCpu lays out its span
// ([position][colour][BoardWords64 words]).
//
// Plain data, trivially copyable, with the same layout on host and device:
// the batcher fills an array of these (pinned memory, say) and copies it to
// the device byte for byte.
struct BoardSegment {
  uint64_t seed = 0;
  uint64_t first_position = 0;
  int64_t count = 0;
  // In 64-bit words from the start of the batch's output buffer.
  uint64_t out_offset = 0;
  // Set by PrepareBoardSegments: positions of all earlier segments in the
  // array, so that a kernel finds a position's segment by binary search.
  int64_t item_begin = 0;
  int32_t rows = 0;
  int32_t cols = 0;
  int32_t colours = 0;
  // Set by PrepareBoardSegments: an index into BoardVariants().
  int32_t variant = -1;
  int32_t stones[kMaxBoardColours] = {};
};

// A kernel variant: `lanes` threads cooperate on one position, each holding
// `blocks_per_lane` Philox blocks (4 selection words each) of every step, so
// a variant takes boards of up to 4 * lanes * blocks_per_lane 32-bit words.
// lanes == 1 is the threadwise kernel (whole board in one thread's
// registers); lanes > 1 is warpwise (words across lanes, counts summed by
// __shfl_xor_sync butterflies of compile-time width).
struct BoardVariant {
  int32_t lanes;
  int32_t blocks_per_lane;
  // Blocks of 64 threads per multiprocessor that the compiler must make room
  // for (__launch_bounds__), which caps the registers per thread; 1 leaves
  // the compiler free.
  int32_t min_blocks = 1;
};

// Every compiled variant, indexed by BoardSegment::variant.
absl::Span<const BoardVariant> BoardVariants();

// "threadwise-4w", "warpwise-8x2", "threadwise-32w-min6", ...: for logs and
// benchmark tables.
std::string BoardVariantName(int32_t variant);

enum class BoardKernel {
  kAuto,        // Threadwise up to 32x32 (32 words), warpwise beyond.
  kThreadwise,  // Threadwise only; boards over 1024 sites are refused.
  kWarpwise,    // Warpwise for every size (tests, benchmarks).
};

// A segment for `spec`, checked by ValidateBoardSpec (InvalidArgument naming
// the field otherwise).
absl::StatusOr<BoardSegment> MakeBoardSegment(const BoardSpec& spec,
                                              uint64_t seed,
                                              uint64_t first_position,
                                              int64_t count,
                                              uint64_t out_offset);

// 64-bit output words that `segment` writes: count * colours * words per
// colour. 0 for a segment that is not valid.
uint64_t BoardSegmentWords(const BoardSegment& segment);

// Validates every segment (the spec as ValidateBoardSpec does, count >= 0, no
// position index past 2^64 - 1, its output inside [0, out_words)), picks each
// one's variant, reorders the array by variant (stably; the order of segments
// does not change any bit of the output) and sets item_begin. InvalidArgument
// naming the segment index and field otherwise, with the array unchanged.
// Outputs of different segments must not overlap; that is not checked.
absl::Status PrepareBoardSegments(absl::Span<BoardSegment> segments,
                                  size_t out_words,
                                  BoardKernel kernel = BoardKernel::kAuto);

// As above, with every segment on one variant (an index into
// BoardVariants()): for tests and benchmarks. InvalidArgument if a board has
// more words than the variant holds.
absl::Status PrepareBoardSegmentsWithVariant(absl::Span<BoardSegment> segments,
                                             size_t out_words, int32_t variant);

// How a kernel loops over positions; every loop gives the same bits.
enum class BoardLoop {
  // The measured best: kFlat for threadwise runs of one-colour segments
  // that are long next to the grid (each at least 4x as many positions as
  // the grid has threads),
  // kFlatDivergent otherwise (bench/results/boards-kernel.md).
  kAuto,
  // One step of the group's current position per iteration; when a colour
  // is done the lanes that finished it write it out and every lane updates
  // its state with masks (no branch), so the warp stays converged. Only a
  // new segment, a colour of no stones or the end take a branch.
  kFlat,
  // As kFlat, but the lanes that finished a colour take a branch to write
  // it and start the next colour or position while the others wait.
  kFlatDivergent,
  // The seed's loop: for each position, while (n != k) step. A warp runs
  // as many steps as its slowest group.
  kNested,
};

// Knobs for tests and benchmarks; the defaults are what the service uses.
struct BoardLaunchOptions {
  // Caps the grid (0: as many blocks as can be resident at once, which loop
  // over the positions); tests set it low to exercise that loop.
  int max_blocks = 0;
  BoardLoop loop = BoardLoop::kAuto;
};

// A prepared batch in device memory, as BoardsBatchBuilder::View gives it.
struct BoardsBatch {
  // The host copy returned by PrepareBoardSegments (the launcher splits the
  // launches by variant from it) ...
  absl::Span<const BoardSegment> segments;
  // ... and a byte-for-byte copy of it in device memory that stays
  // unchanged until the kernels finish.
  const BoardSegment* device_segments = nullptr;
  uint64_t* out = nullptr;  // out_words words
  size_t out_words = 0;
};

// Queues the kernels for a prepared batch on `stream`: one launch per run of
// consecutive segments with one variant (so one per variant present after
// PrepareBoardSegments). Returns once they are queued; the output is ready
// when the stream reaches that point.
//
// The host copy is validated again (cheap next to the kernels):
// InvalidArgument for a bad segment or a null pointer with work to do,
// FailedPrecondition for an array that PrepareBoardSegments did not
// prepare. An empty batch, or one of no positions, queues nothing.
absl::Status LaunchBoards(const BoardsBatch& batch, cudaStream_t stream,
                          const BoardLaunchOptions& options = {});

// Collects the requests of one batch (host memory), plans it
// (PrepareBoardSegments) and lays it out for the staging pipeline: the
// segments go in, the 64-bit output words come out.
class BoardsBatchBuilder {
 public:
  // A request: positions first_position .. first_position + count - 1 of
  // the board `spec` under `seed`, its output after those added before.
  // Returns its index in the order of adding; MakeBoardSegment's
  // InvalidArgument for a bad spec.
  absl::StatusOr<int> Add(const BoardSpec& spec, uint64_t seed,
                          uint64_t first_position, int64_t count);

  // Plans the batch: PrepareBoardSegments with `kernel`, or
  // PrepareBoardSegmentsWithVariant (tests, benchmarks). Add() is refused
  // afterwards.
  absl::Status Finish(BoardKernel kernel = BoardKernel::kAuto);
  absl::Status FinishWithVariant(int32_t variant);

  // The segments, in launch order after Finish().
  const std::vector<BoardSegment>& segments() const { return segments_; }
  uint64_t out_words() const { return out_words_; }
  // The first output word of request `index` (in the order of adding).
  uint64_t out_offset(int index) const { return out_offsets_[index]; }

  StagingPlan Staging() const;
  void PackInto(void* staged_in) const;
  BoardsBatch View(const DeviceRegions& device) const;
  // The outputs in a downloaded (or device) out region.
  const uint64_t* Outputs(const void* out_region) const {
    return static_cast<const uint64_t*>(out_region);
  }

 private:
  absl::Status Finished(absl::Status prepared);

  bool finished_ = false;
  std::vector<BoardSegment> segments_;
  std::vector<uint64_t> out_offsets_;  // in the order of adding
  uint64_t out_words_ = 0;
};

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_BOARDS_H_
