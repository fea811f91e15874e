// GPU board kernels against their CPU twin: every bit of every position must
// equal SampleBoardsCpu's, for every kernel variant, board size, stone count
// and mix of requests in a segmented batch. Inputs are drawn fresh each run
// (the seed is printed with every failure); the output is poisoned before each
// launch, so words a kernel failed to write, or wrote outside its segments,
// show up as differences from the poisoned reference.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/cuda/boards.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/status_macros.h"
#include "tests/gpu/gpu_test_util.h"

namespace sampler::kernels::cuda {
namespace {

constexpr uint64_t kPoison = 0xABABABABABABABABull;

// One request of a batch, before it becomes a segment.
struct Request {
  BoardSpec spec;
  uint64_t seed = 0;
  uint64_t first_position = 0;
  int64_t count = 0;
};

std::string Describe(const Request& r) {
  std::string stones;
  for (int32_t k : r.spec.stones) absl::StrAppend(&stones, k, " ");
  return absl::StrCat(r.spec.rows, "x", r.spec.cols, " stones [ ", stones,
                      "] seed ", r.seed, " first ", r.first_position, " count ",
                      r.count);
}

// How PrepareBoardSegments picks variants: a BoardKernel, or one variant.
struct Choice {
  BoardKernel kernel = BoardKernel::kAuto;
  int32_t variant = -1;
};

std::string Describe(const Choice& c) {
  if (c.variant >= 0) return BoardVariantName(c.variant);
  switch (c.kernel) {
    case BoardKernel::kAuto:
      return "auto";
    case BoardKernel::kThreadwise:
      return "threadwise";
    case BoardKernel::kWarpwise:
      return "warpwise";
  }
  return "?";
}

// Fresh randomness per test; the seed goes into every failure message.
class BoardsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }

  std::string Trace() const {
    return absl::StrCat("test seed ", seed_,
                        " (std::random_device; rerun with it to reproduce)");
  }

  uint64_t U64() { return rng_(); }
  // Uniform in [lo, hi].
  int64_t Int(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  // A first position: small, around 2^32, above 2^32, or near 2^64 - count.
  uint64_t FirstPosition(int64_t count) {
    switch (Int(0, 3)) {
      case 0:
        return static_cast<uint64_t>(Int(0, 1000));
      case 1:
        return (uint64_t{1} << 32) - static_cast<uint64_t>(Int(0, 2 * count));
      case 2:
        return (U64() >> 1) | (uint64_t{1} << 33);
      default:
        return std::numeric_limits<uint64_t>::max() -
               static_cast<uint64_t>(std::max<int64_t>(count - 1, 0)) -
               static_cast<uint64_t>(Int(0, 3));
    }
  }

  // `colours` random stone counts that fit on `sites` sites; edge values
  // (0, all that is left, one less) come up often.
  std::vector<int32_t> Stones(int sites, int colours) {
    std::vector<int32_t> stones;
    int left = sites;
    for (int c = 0; c < colours; ++c) {
      int k = 0;
      switch (Int(0, 5)) {
        case 0:
          k = 0;
          break;
        case 1:
          k = left;
          break;
        case 2:
          k = std::max(left - 1, 0);
          break;
        case 3:
          k = std::min(left, 1);
          break;
        default:
          k = static_cast<int>(Int(0, left / std::max(colours - c, 1)));
      }
      stones.push_back(k);
      left -= k;
    }
    return stones;
  }

  // Positions per request for a board: fewer for large boards (the CPU
  // reference costs about 20 Philox blocks per site-ish position).
  int64_t Count(int sites, int64_t most) {
    return Int(0,
               std::max<int64_t>(2, std::min<int64_t>(most, 400000 / sites)));
  }

  // Runs `requests` as one batch on the GPU (outputs in random order with
  // random gaps between them) and expects every word of the output buffer to
  // equal the CPU's (gaps stay poisoned).
  void ExpectBatchMatchesCpu(const std::vector<Request>& requests,
                             const Choice& choice, int max_blocks = 0,
                             BoardLoop loop = BoardLoop::kAuto) {
    SCOPED_TRACE(Trace());
    SCOPED_TRACE(absl::StrCat("kernel choice ", Describe(choice),
                              ", max_blocks ", max_blocks, ", loop ",
                              static_cast<int>(loop)));
    // Output layout: a random order with gaps of 0 to 2 words.
    std::vector<size_t> order(requests.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng_);
    std::vector<BoardSegment> segments(requests.size());
    uint64_t words = 0;
    for (size_t i : order) {
      words += static_cast<uint64_t>(Int(0, 2));
      const Request& r = requests[i];
      absl::StatusOr<BoardSegment> s =
          MakeBoardSegment(r.spec, r.seed, r.first_position, r.count, words);
      ASSERT_TRUE(s.ok()) << s.status() << " for " << Describe(r);
      segments[i] = *s;
      words += BoardSegmentWords(*s);
    }
    words += static_cast<uint64_t>(Int(0, 2));

    std::vector<uint64_t> want(words, kPoison);
    for (size_t i = 0; i < requests.size(); ++i) {
      const Request& r = requests[i];
      const absl::Status status =
          SampleBoardsCpu(r.spec, r.seed, r.first_position, r.count,
                          absl::MakeSpan(want.data() + segments[i].out_offset,
                                         BoardSegmentWords(segments[i])));
      ASSERT_TRUE(status.ok()) << status;
    }

    std::vector<BoardSegment> prepared = segments;
    const absl::Status prepare =
        choice.variant >= 0
            ? PrepareBoardSegmentsWithVariant(absl::MakeSpan(prepared), words,
                                              choice.variant)
            : PrepareBoardSegments(absl::MakeSpan(prepared), words,
                                   choice.kernel);
    ASSERT_TRUE(prepare.ok()) << prepare;

    absl::StatusOr<std::vector<uint64_t>> got =
        RunOnGpu(prepared, words, {max_blocks, loop});
    ASSERT_TRUE(got.ok()) << got.status();
    if (*got == want) return;
    // Name the first wrong word and the request that owns it.
    for (size_t w = 0; w < words; ++w) {
      if ((*got)[w] == want[w]) continue;
      std::string owner = "no request (a gap)";
      for (size_t i = 0; i < requests.size(); ++i) {
        const uint64_t begin = segments[i].out_offset;
        if (w < begin || w >= begin + BoardSegmentWords(segments[i])) {
          continue;
        }
        int32_t variant = -1;
        for (const BoardSegment& p : prepared) {
          if (p.out_offset == begin && p.count > 0) variant = p.variant;
        }
        const uint64_t per_position = BoardSegmentWords(segments[i]) /
                                      static_cast<uint64_t>(requests[i].count);
        owner = absl::StrCat("request ", i, " (", Describe(requests[i]),
                             ") on ", BoardVariantName(variant), ", position ",
                             (w - begin) / per_position, ", word ",
                             (w - begin) % per_position);
      }
      ADD_FAILURE() << "first wrong word " << w << " of " << words << ": got 0x"
                    << std::hex << (*got)[w] << ", want 0x" << want[w]
                    << std::dec << ", in " << owner;
      return;
    }
  }

  // Runs the prepared batch through the staging pipeline, its output region
  // of `words` words poisoned before the launch, and returns that region.
  static absl::StatusOr<std::vector<uint64_t>> RunOnGpu(
      const std::vector<BoardSegment>& prepared, uint64_t words,
      const BoardLaunchOptions& options) {
    SAMPLER_ASSIGN_OR_RETURN(const std::unique_ptr<Stager> stager,
                             Stager::Create());
    const StagingPlan plan{prepared.size() * sizeof(BoardSegment),
                           words * sizeof(uint64_t), 0};
    std::vector<uint64_t> out(words);
    SAMPLER_RETURN_IF_ERROR(
        stager
            ->Run(
                plan,
                [&](char* staged) {
                  if (plan.in_bytes > 0) {
                    std::memcpy(staged, prepared.data(), plan.in_bytes);
                  }
                },
                [&](const DeviceRegions& device,
                    cudaStream_t stream) -> absl::Status {
                  SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
                      device.out, 0xAB, plan.out_bytes, stream));
                  return LaunchBoards(
                      {prepared, static_cast<const BoardSegment*>(device.in),
                       static_cast<uint64_t*>(device.out), words},
                      stream, options);
                },
                [&](const char* staged) {
                  if (plan.out_bytes > 0) {
                    std::memcpy(out.data(), staged, plan.out_bytes);
                  }
                })
            .status());
    return out;
  }

  uint32_t seed_ = 0;
  std::mt19937_64 rng_;
};

struct Size {
  int rows;
  int cols;
};

// The sizes the issue names, plus odd shapes around word boundaries.
const std::vector<Size>& Sizes() {
  static const auto* sizes = new std::vector<Size>{
      {1, 1},   {1, 5},     {9, 9},     {19, 19},   {32, 32},  {33, 33},
      {64, 64}, {128, 128}, {1, 16384}, {2, 16},    {4, 33},   {7, 13},
      {24, 24}, {16, 31},   {45, 46},   {100, 100}, {16384, 1}};
  return *sizes;
}

std::vector<Choice> ChoicesFor(int sites) {
  std::vector<Choice> choices = {{BoardKernel::kAuto, -1},
                                 {BoardKernel::kWarpwise, -1}};
  if (sites <= 1024) choices.push_back({BoardKernel::kThreadwise, -1});
  return choices;
}

TEST_F(BoardsGpuTest, EdgeStoneCountsOnEverySizeMatchCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  for (const Size& size : Sizes()) {
    const int sites = size.rows * size.cols;
    std::vector<Request> requests;
    for (int k : {0, 1, sites - 1, sites, static_cast<int>(Int(0, sites))}) {
      if (k < 0) continue;
      requests.push_back({{size.rows, size.cols, {k}},
                          U64(),
                          FirstPosition(64),
                          Count(sites, 64)});
    }
    for (const Choice& choice : ChoicesFor(sites)) {
      SCOPED_TRACE(absl::StrCat(size.rows, "x", size.cols));
      ExpectBatchMatchesCpu(requests, choice);
    }
  }
}

TEST_F(BoardsGpuTest, SeveralColoursOnEverySizeMatchCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  for (const Size& size : Sizes()) {
    const int sites = size.rows * size.cols;
    std::vector<Request> requests;
    for (int i = 0; i < 4; ++i) {
      const int colours =
          static_cast<int>(Int(2, std::min(kMaxBoardColours, sites + 1)));
      requests.push_back({{size.rows, size.cols, Stones(sites, colours)},
                          U64(),
                          FirstPosition(64),
                          Count(sites, 64)});
    }
    for (const Choice& choice : ChoicesFor(sites)) {
      SCOPED_TRACE(absl::StrCat(size.rows, "x", size.cols));
      ExpectBatchMatchesCpu(requests, choice);
    }
  }
}

TEST_F(BoardsGpuTest, Go19x19TwoColoursMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  const std::vector<Request> requests = {
      {{19, 19, {120, 120}}, U64(), FirstPosition(20000), 20000},
      {{19, 19, {181, 180}}, U64(), FirstPosition(3000), 3000},
      {{19, 19, {0, 361}}, U64(), FirstPosition(100), 100}};
  for (const Choice& choice : ChoicesFor(361)) {
    ExpectBatchMatchesCpu(requests, choice);
  }
}

TEST_F(BoardsGpuTest, EveryVariantMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  const absl::Span<const BoardVariant> variants = BoardVariants();
  for (int32_t v = 0; v < static_cast<int32_t>(variants.size()); ++v) {
    const int max_words = 4 * variants[v].lanes * variants[v].blocks_per_lane;
    std::vector<Request> requests;
    for (int i = 0; i < 6; ++i) {
      // Up to the variant's capacity, exactly at it for the first request.
      const int most_sites = std::min(32 * max_words, kMaxBoardSites);
      const int sites =
          i == 0 ? most_sites : static_cast<int>(Int(1, most_sites));
      int rows = 1;
      for (int r = static_cast<int>(std::sqrt(sites)); r >= 1; --r) {
        if (sites % r == 0) {
          rows = r;
          break;
        }
      }
      const int colours = static_cast<int>(Int(1, 4));
      requests.push_back({{rows, sites / rows, Stones(sites, colours)},
                          U64(),
                          FirstPosition(256),
                          Count(sites, 256)});
    }
    SCOPED_TRACE(BoardVariantName(v));
    for (BoardLoop loop :
         {BoardLoop::kFlat, BoardLoop::kFlatDivergent, BoardLoop::kNested}) {
      ExpectBatchMatchesCpu(requests, {BoardKernel::kAuto, v}, 0, loop);
      ExpectBatchMatchesCpu(requests, {BoardKernel::kAuto, v},
                            /*max_blocks=*/1, loop);
    }
  }
}

// Many requests of mixed sizes in one batch: several variants, so several
// launches, and many segments per launch for the binary search.
TEST_F(BoardsGpuTest, MixedBatchMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  for (int round = 0; round < 3; ++round) {
    std::vector<Request> requests;
    const int n = static_cast<int>(Int(1, 60));
    for (int i = 0; i < n; ++i) {
      int rows = 0;
      int cols = 0;
      if (Int(0, 1) == 0) {
        const Size& size = Sizes()[Int(0, Sizes().size() - 1)];
        rows = size.rows;
        cols = size.cols;
      } else {
        rows = static_cast<int>(Int(1, 128));
        cols = static_cast<int>(Int(1, kMaxBoardSites / rows));
      }
      const int sites = rows * cols;
      const int colours =
          static_cast<int>(Int(1, std::min(kMaxBoardColours, sites + 1)));
      // Now and then a seed shared with another request.
      const uint64_t seed =
          !requests.empty() && Int(0, 9) == 0 ? requests[0].seed : U64();
      requests.push_back({{rows, cols, Stones(sites, colours)},
                          seed,
                          FirstPosition(300),
                          Count(sites, 300)});
    }
    ExpectBatchMatchesCpu(requests, {BoardKernel::kAuto, -1});
    ExpectBatchMatchesCpu(requests, {BoardKernel::kAuto, -1},
                          static_cast<int>(Int(1, 4)));
    ExpectBatchMatchesCpu(requests, {BoardKernel::kWarpwise, -1},
                          static_cast<int>(Int(0, 4)));
    ExpectBatchMatchesCpu(requests, {BoardKernel::kAuto, -1},
                          static_cast<int>(Int(0, 4)),
                          BoardLoop::kFlatDivergent);
    ExpectBatchMatchesCpu(requests, {BoardKernel::kAuto, -1},
                          static_cast<int>(Int(0, 4)), BoardLoop::kNested);
  }
}

// Far more positions than threads: each group loops over many positions.
TEST_F(BoardsGpuTest, LargeBatchMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  const std::vector<Request> requests = {
      {{32, 32, {512}}, U64(), FirstPosition(40000), 40000},
      {{32, 32, {16}}, U64(), FirstPosition(20000), 20000},
      {{32, 32, {1000}}, U64(), FirstPosition(20000), 20000}};
  ExpectBatchMatchesCpu(requests, {BoardKernel::kAuto, -1});
  ExpectBatchMatchesCpu(requests, {BoardKernel::kAuto, -1},
                        /*max_blocks=*/3);
  ExpectBatchMatchesCpu(requests, {BoardKernel::kThreadwise, -1},
                        /*max_blocks=*/5, BoardLoop::kFlatDivergent);
}

// ---------------------------------------------------------------------------
// Bad input.

::testing::AssertionResult HasCode(const absl::Status& status,
                                   absl::StatusCode code,
                                   const std::string& part) {
  if (status.code() != code ||
      std::string(status.message()).find(part) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "got " << status << ", want code " << static_cast<int>(code)
           << " with \"" << part << "\"";
  }
  return ::testing::AssertionSuccess();
}

TEST_F(BoardsGpuTest, BadLaunchesAreRefused) {
  SAMPLER_SKIP_WITHOUT_GPU();
  absl::StatusOr<std::unique_ptr<Stager>> stager = Stager::Create();
  ASSERT_TRUE(stager.ok()) << stager.status();
  const cudaStream_t stream = (*stager)->stream.get();
  absl::StatusOr<BoardSegment> good =
      MakeBoardSegment({19, 19, {120, 120}}, 7, 0, 10, 0);
  ASSERT_TRUE(good.ok()) << good.status();
  const uint64_t words = BoardSegmentWords(*good);
  ASSERT_EQ(words, 10u * 2 * 6);

  // No segments: nothing to do, whatever the pointers.
  EXPECT_TRUE(LaunchBoards({{}, nullptr, nullptr, 0}, stream).ok());
  std::vector<BoardSegment> none;
  EXPECT_TRUE(PrepareBoardSegments(absl::MakeSpan(none), 0).ok());

  // The good batch on the device (staged, not launched yet): its regions
  // are the real device pointers of the refusals below.
  std::vector<BoardSegment> batch = {*good};
  ASSERT_TRUE(PrepareBoardSegments(absl::MakeSpan(batch), words).ok());
  absl::StatusOr<StagedBatch> staged = (*stager)->Upload(
      {sizeof(BoardSegment), words * sizeof(uint64_t), 0},
      [&](char* in) { std::memcpy(in, batch.data(), sizeof(BoardSegment)); });
  ASSERT_TRUE(staged.ok()) << staged.status();
  auto* dseg = static_cast<const BoardSegment*>(staged->regions.in);
  auto* dout = static_cast<uint64_t*>(staged->regions.out);

  EXPECT_TRUE(HasCode(LaunchBoards({batch, nullptr, dout, words}, stream),
                      absl::StatusCode::kInvalidArgument, "device_segments"));
  EXPECT_TRUE(HasCode(LaunchBoards({batch, dseg, nullptr, words}, stream),
                      absl::StatusCode::kInvalidArgument, "device_out"));
  // Too small an output buffer.
  EXPECT_TRUE(HasCode(LaunchBoards({batch, dseg, dout, words - 1}, stream),
                      absl::StatusCode::kInvalidArgument,
                      "segments[0].out_offset"));

  // No positions: nothing to launch, so no output pointer is needed.
  std::vector<BoardSegment> empty = {*good};
  empty[0].count = 0;
  ASSERT_TRUE(PrepareBoardSegments(absl::MakeSpan(empty), 0).ok());
  EXPECT_TRUE(LaunchBoards({empty, dseg, nullptr, 0}, stream).ok());

  // Not prepared, or changed after preparing.
  std::vector<BoardSegment> raw = {*good};
  EXPECT_TRUE(HasCode(LaunchBoards({raw, dseg, dout, words}, stream),
                      absl::StatusCode::kFailedPrecondition, "not prepared"));
  std::vector<BoardSegment> shifted = batch;
  shifted[0].item_begin = 1;
  EXPECT_TRUE(HasCode(LaunchBoards({shifted, dseg, dout, words}, stream),
                      absl::StatusCode::kFailedPrecondition, "not prepared"));
  std::vector<BoardSegment> grown = batch;
  grown[0].rows = 33;
  grown[0].cols = 33;
  grown[0].count = 1;
  EXPECT_TRUE(HasCode(LaunchBoards({grown, dseg, dout, words}, stream),
                      absl::StatusCode::kFailedPrecondition, "not prepared"));

  // Bad specs, counts, positions and kernel choices are refused by both
  // steps before any device work: BoardsCudaHostTest
  // (boards_cuda_host_test.cc) checks each of them without a GPU; here the
  // refusals above ran with real device pointers and a real stream.

  // None of that reached the device: the stream is healthy and the good
  // batch still runs.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_TRUE(LaunchBoards({batch, dseg, dout, words}, stream).ok());
  std::vector<uint64_t> got(words);
  ASSERT_TRUE((*stager)
                  ->Download(*staged,
                             [&](const char* out) {
                               std::memcpy(got.data(), out,
                                           words * sizeof(uint64_t));
                             })
                  .ok());
  std::vector<uint64_t> want(words);
  ASSERT_TRUE(
      SampleBoardsCpu({19, 19, {120, 120}}, 7, 0, 10, absl::MakeSpan(want))
          .ok());
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace sampler::kernels::cuda
