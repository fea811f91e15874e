// Streams: chunk sizes, stream plans, piece jobs sliced from a parsed
// request and messages cut from a computed piece, all checked against the
// whole request run at once.
#include "server/stream_chunk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/gamma.h"
#include "server/request_limits.h"
#include "server/request_parse.h"
#include "server/response_bind.h"
#include "tests/server/request_test_util.h"

namespace sampler::server {
namespace {

TEST(ValidateStream, NegativeChunkMaxIsInvalid) {
  EXPECT_TRUE(ValidateChunkMax("max_rows_per_chunk", 0).ok());
  EXPECT_TRUE(ValidateChunkMax("max_rows_per_chunk", 7).ok());
  ExpectError(ValidateChunkMax("max_rows_per_chunk", -1),
              {"", kInvalid, {"max_rows_per_chunk = -1: must be >= 0"}});
}

// -------------------------------------------------------------- chunks ----

// Runs a job on the kernels' CPU functions, as a backend would.
template <typename T>
void RunGamma(const GammaJob& job, GammaWork<T>& work) {
  if (!work.groups.empty()) {
    ASSERT_TRUE(kernels::SampleGammaGroupedCpu<T>(work.groups, job.log_output,
                                                  job.seed, job.first_sample,
                                                  work.out)
                    .ok());
    return;
  }
  const std::vector<T> ones(work.shape.size(), T(1));
  ASSERT_TRUE(kernels::SampleGammaCpu<T>(
                  work.shape, work.scale.empty() ? ones : work.scale,
                  job.log_output, job.seed, job.first_sample, work.out)
                  .ok());
}
void RunGamma(GammaJob& job) {
  std::visit([&](auto& work) { RunGamma(job, work); }, job.work);
}

template <typename T>
const google::protobuf::RepeatedField<T>& Values(const v1::Reals& reals) {
  if constexpr (std::is_same_v<T, float>) {
    return reals.f32().values();
  } else {
    return reals.f64().values();
  }
}

// Whole request vs the same request in chunks of `chunk_max`: the chunks
// cover every sample once, in order, with the same bits.
template <typename T>
void CheckGammaChunks(const std::string& text, int64_t chunk_max,
                      bool streamed_parse) {
  SCOPED_TRACE(text);
  const auto request = Text<v1::SampleGammaRequest>(text);
  auto whole = ParseGamma(request, RequestLimits(), kSeeds, false);
  ASSERT_TRUE(whole.ok()) << whole.status();
  v1::SampleGammaResponse response;
  BindGamma(**whole, &response);
  RunGamma(**whole);

  // Slicing works on a job parsed for a stream (with its group index) and
  // on any other.
  auto stream = ParseGamma(request, RequestLimits(), kSeeds, streamed_parse);
  ASSERT_TRUE(stream.ok());
  // The group index: one end per group, for streams with groups only.
  const auto& groups = std::get<GammaWork<T>>((*stream)->work).groups;
  if (streamed_parse && !groups.empty()) {
    ASSERT_EQ((*stream)->group_ends.size(), groups.size());
    EXPECT_EQ((*stream)->group_ends.back(), (*whole)->items);
  } else {
    EXPECT_TRUE((*stream)->group_ends.empty());
  }
  const int64_t units = StreamUnits(**stream);
  ASSERT_EQ(units, (*whole)->items);
  const int64_t n = ChunkSize(**stream, chunk_max, RequestLimits());
  EXPECT_EQ(n, std::min(chunk_max, units));
  std::vector<T> joined;
  for (int64_t first = 0; first < units; first += n) {
    const int64_t count = std::min(n, units - first);
    v1::SampleGammaStreamResponse chunk;
    auto job = SliceGamma(**stream, first, count, &chunk);
    ASSERT_NE(job, nullptr);
    EXPECT_EQ(job->first_sample, static_cast<uint64_t>(first));
    EXPECT_EQ(job->items, count);
    EXPECT_EQ(job->seed, (*whole)->seed);
    auto& work = std::get<GammaWork<T>>(job->work);
    if (!work.groups.empty()) {
      int64_t sum = 0;
      for (const auto& g : work.groups) {
        EXPECT_GT(g.count, 0);
        sum += g.count;
      }
      EXPECT_EQ(sum, count);
    } else {
      EXPECT_EQ(work.shape.size(), static_cast<size_t>(count));
    }
    EXPECT_EQ(work.out.data(), Values<T>(chunk.samples()).data());
    EXPECT_EQ(chunk.first_sample(), first);
    EXPECT_EQ(chunk.seed(), (*whole)->seed);
    RunGamma(*job);
    const auto& values = Values<T>(chunk.samples());
    joined.insert(joined.end(), values.begin(), values.end());
  }
  const auto& expected = Values<T>(response.samples());
  ASSERT_EQ(joined.size(), static_cast<size_t>(expected.size()));
  EXPECT_EQ(
      std::memcmp(joined.data(), expected.data(), joined.size() * sizeof(T)),
      0);
}

TEST(ValidateStream, GammaChunksMatchTheWholeRequest) {
  const std::string groups =
      " groups { groups { shape: 0.5 count: 5 } groups { shape: 2 scale: 3 "
      "count: 0 } groups { shape: 1.5 count: 7 } groups { shape: 0.1 scale: "
      "2 count: 11 } }";
  const std::string elements =
      " elements { shape { f64 { values: [0.3, 1, 2, 3, 4, 5, 0.2, 7, 8, 9, "
      "10, 11, 0.05] } } scale { f64 { values: [1, 2, 3, 4, 5, 6, 7, 8, 9, "
      "10, 11, 12, 13] } } }";
  const std::string unscaled =
      " elements { shape { f32 { values: [0.3, 1, 2, 3, 4, 5, 0.2] } } }";
  for (bool streamed : {true, false}) {
    for (int64_t chunk : {1, 4, 6, 100}) {
      CheckGammaChunks<double>("seed: 5" + groups, chunk, streamed);
      CheckGammaChunks<float>(
          "seed: 5 log_output: true precision: PRECISION_FLOAT32" + groups,
          chunk, streamed);
      CheckGammaChunks<double>("seed: 6" + elements, chunk, streamed);
      CheckGammaChunks<float>("precision: PRECISION_FLOAT32" + unscaled, chunk,
                              streamed);
    }
  }
}

TEST(ValidateStream, CategoricalChunksMatchTheWholeRequest) {
  std::string text = "seed: 11 categories: 5 draws: 3 values { f32 { values: [";
  for (int i = 0; i < 37 * 5; ++i) {
    absl::StrAppend(&text, i ? "," : "", (i * 7) % 5);
  }
  text += "] } }";
  const auto request = Text<v1::SampleCategoricalRequest>(text);
  auto whole = ParseCategorical(request, RequestLimits(), kSeeds, false);
  ASSERT_TRUE(whole.ok()) << whole.status();
  v1::SampleCategoricalResponse response;
  BindCategorical(**whole, &response);
  auto& whole_work = std::get<CategoricalWork<double>>((*whole)->work);
  ASSERT_TRUE(kernels::SampleCategoricalCpu<double>(
                  whole_work.values, (*whole)->shape, (*whole)->weight_kind,
                  (*whole)->seed, (*whole)->first_row, whole_work.out)
                  .ok());

  auto stream = ParseCategorical(request, RequestLimits(), kSeeds, true);
  ASSERT_TRUE(stream.ok());
  ASSERT_EQ(StreamUnits(**stream), 37);
  const int64_t n = ChunkSize(**stream, 8, RequestLimits());
  ASSERT_EQ(n, 8);
  std::vector<int32_t> joined;
  for (int64_t first = 0; first < 37; first += n) {
    const int64_t rows = std::min<int64_t>(n, 37 - first);
    v1::SampleCategoricalStreamResponse chunk;
    auto job = SliceCategorical(**stream, first, rows, &chunk);
    ASSERT_NE(job, nullptr);
    EXPECT_EQ(job->first_row, static_cast<uint64_t>(first));
    EXPECT_EQ(job->shape.rows, rows);
    EXPECT_EQ(job->items, rows * 3);
    EXPECT_EQ(chunk.first_row(), first);
    EXPECT_EQ(chunk.rows(), rows);
    EXPECT_EQ(chunk.draws(), 3);
    EXPECT_EQ(chunk.seed(), 11u);
    auto& work = std::get<CategoricalWork<double>>(job->work);
    EXPECT_EQ(work.out.data(), chunk.indices().data());
    // The piece reads the whole's values (no copy) and shares their owner.
    const auto& stream_work =
        std::get<CategoricalWork<double>>((*stream)->work);
    EXPECT_EQ(work.values.data(), stream_work.values.data() + first * 5);
    EXPECT_EQ(job->values_owner, (*stream)->values_owner);
    ASSERT_TRUE(kernels::SampleCategoricalCpu<double>(
                    work.values, job->shape, job->weight_kind, job->seed,
                    job->first_row, work.out)
                    .ok());
    joined.insert(joined.end(), chunk.indices().begin(), chunk.indices().end());
  }
  EXPECT_EQ(joined, std::vector<int32_t>(response.indices().begin(),
                                         response.indices().end()));
}

TEST(ValidateStream, BoardChunksMatchTheWholeRequest) {
  const auto request = Text<v1::SampleBoardsRequest>(
      "seed: 21 rows: 9 cols: 11 stones: [10, 20, 5] count: 19");
  auto whole = ParseBoards(request, RequestLimits(), kSeeds, false);
  ASSERT_TRUE(whole.ok()) << whole.status();
  v1::SampleBoardsResponse response;
  BindBoards(**whole, &response);
  ASSERT_TRUE(kernels::SampleBoardsCpu((*whole)->spec, (*whole)->seed, 0,
                                       (*whole)->count, (*whole)->out)
                  .ok());
  auto stream = ParseBoards(request, RequestLimits(), kSeeds, true);
  ASSERT_TRUE(stream.ok());
  const int64_t n = ChunkSize(**stream, 5, RequestLimits());
  ASSERT_EQ(n, 5);
  std::vector<uint64_t> joined;
  for (int64_t first = 0; first < 19; first += n) {
    const int64_t count = std::min<int64_t>(n, 19 - first);
    v1::SampleBoardsStreamResponse chunk;
    auto job = SliceBoards(**stream, first, count, &chunk);
    ASSERT_NE(job, nullptr);
    EXPECT_EQ(job->first_position, static_cast<uint64_t>(first));
    EXPECT_EQ(job->items, count);
    EXPECT_EQ(chunk.first_position(), first);
    EXPECT_EQ(chunk.count(), count);
    EXPECT_EQ(chunk.colours(), 3);
    EXPECT_EQ(chunk.words_per_board(), 2);
    EXPECT_EQ(chunk.seed(), 21u);
    EXPECT_EQ(job->out.data(), chunk.bitboards().data());
    ASSERT_TRUE(kernels::SampleBoardsCpu(job->spec, job->seed,
                                         job->first_position, job->count,
                                         job->out)
                    .ok());
    joined.insert(joined.end(), chunk.bitboards().begin(),
                  chunk.bitboards().end());
  }
  EXPECT_EQ(joined, std::vector<uint64_t>(response.bitboards().begin(),
                                          response.bitboards().end()));
}

TEST(ValidateStream, SliceRefusesRangesOutsideTheRequest) {
  auto job = ParseBoards(
      Text<v1::SampleBoardsRequest>("rows: 3 cols: 3 stones: [1] count: 10"),
      RequestLimits(), kSeeds, true);
  ASSERT_TRUE(job.ok());
  v1::SampleBoardsStreamResponse chunk;
  EXPECT_EQ(SliceBoards(**job, -1, 2, &chunk), nullptr);
  EXPECT_EQ(SliceBoards(**job, 0, 0, &chunk), nullptr);
  EXPECT_EQ(SliceBoards(**job, 9, 2, &chunk), nullptr);
  EXPECT_NE(SliceBoards(**job, 9, 1, &chunk), nullptr);
}

TEST(ValidateStream, ChunksStayWellUnderTheMessageLimit) {
  RequestLimits limits;
  limits.max_message_bytes = 4096;
  auto gamma = ParseGamma(Text<v1::SampleGammaRequest>(
                              "seed: 18446744073709551615 groups { groups { "
                              "shape: 1 count: 100000 } }"),
                          limits, kSeeds, true);
  ASSERT_TRUE(gamma.ok()) << gamma.status();
  const int64_t n = ChunkSize(**gamma, 0, limits);
  EXPECT_GE(n, 32);
  v1::SampleGammaStreamResponse chunk;
  ASSERT_NE(SliceGamma(**gamma, 100000 - n, n, &chunk), nullptr);
  EXPECT_LE(chunk.ByteSizeLong(), 2048u);
  // The client's maximum wins when smaller; never more than the request.
  EXPECT_EQ(ChunkSize(**gamma, 3, limits), 3);
  EXPECT_EQ(ChunkSize(**gamma, 1 << 30, limits), n);

  // One categorical row of many draws still makes a chunk of one row.
  limits.max_items_per_request = 10;
  auto categorical = ParseCategorical(
      Text<v1::SampleCategoricalRequest>(
          "categories: 1 draws: 100 values { f32 { values: [1, 1] } }"),
      limits, kSeeds, true);
  ASSERT_TRUE(categorical.ok()) << categorical.status();
  EXPECT_EQ(ChunkSize(**categorical, 0, limits), 1);

  // With the defaults: at most max_items_per_request items, and no more
  // units than the request has.
  auto boards = ParseBoards(
      Text<v1::SampleBoardsRequest>("rows: 3 cols: 3 stones: [1] count: 7"),
      RequestLimits(), kSeeds, true);
  ASSERT_TRUE(boards.ok());
  EXPECT_EQ(ChunkSize(**boards, 0, RequestLimits()), 7);
  auto many = ParseBoards(Text<v1::SampleBoardsRequest>(
                              "rows: 3 cols: 3 stones: [1] count: 100000000"),
                          RequestLimits(), kSeeds, true);
  ASSERT_TRUE(many.ok());
  const int64_t boards_chunk = ChunkSize(**many, 0, RequestLimits());
  EXPECT_LE(boards_chunk * 8, RequestLimits().target_chunk_bytes);
  EXPECT_LE(boards_chunk, RequestLimits().max_items_per_request);
  EXPECT_EQ(boards_chunk % 32, 0);
}

// Issue 9 item 1: pieces sized for the device, messages sized for the
// client; a piece is a whole number of messages (whole warps too where
// that leaves one), never over the queue share it is given.
TEST(ValidateStream, PlanComputesDeviceSizedPiecesOfWholeMessages) {
  RequestLimits limits;
  limits.max_message_bytes = 1 << 20;  // pieces of about 512 KiB
  auto gamma = ParseGamma(Text<v1::SampleGammaRequest>(
                              "groups { groups { shape: 1 count: 1000000 } }"),
                          limits, kSeeds, true);
  ASSERT_TRUE(gamma.ok()) << gamma.status();
  const int64_t device = ChunkSize(**gamma, 0, limits);
  ASSERT_GT(device, 10000);
  for (int64_t m : {1, 2, 3, 7, 32, 100, 1000, 4096}) {
    SCOPED_TRACE(m);
    const StreamPlan plan = PlanStream(**gamma, m, limits, 0);
    EXPECT_EQ(plan.message, m);
    EXPECT_EQ(plan.piece % m, 0);
    EXPECT_EQ(plan.piece % 32, 0);
    EXPECT_LE(plan.piece, device);
    EXPECT_GT(plan.piece, device / 2);  // still about the device's size
  }
  // No client maximum, or a larger one: a piece is one message.
  for (int64_t m : {int64_t{0}, int64_t{1} << 40}) {
    const StreamPlan plan = PlanStream(**gamma, m, limits, 0);
    EXPECT_EQ(plan.piece, device);
    EXPECT_EQ(plan.message, device);
  }
  // A queue share: pieces of at most that many items, but one message at
  // least.
  StreamPlan plan = PlanStream(**gamma, 7, limits, 500);
  EXPECT_EQ(plan.piece, 448);  // 2 x lcm(7, 32)
  EXPECT_EQ(plan.message, 7);
  plan = PlanStream(**gamma, 0, limits, 1);
  EXPECT_EQ(plan.piece, 1);
  EXPECT_EQ(plan.message, 1);
  // A small request: one piece of whole messages and a remainder.
  auto small = ParseGamma(
      Text<v1::SampleGammaRequest>("groups { groups { shape: 1 count: 100 } }"),
      limits, kSeeds, true);
  ASSERT_TRUE(small.ok());
  plan = PlanStream(**small, 7, limits, 0);
  EXPECT_EQ(plan.piece, 98);
  EXPECT_EQ(plan.message, 7);
  // A categorical row larger than one message still goes alone.
  limits.max_items_per_request = 10;
  auto categorical = ParseCategorical(
      Text<v1::SampleCategoricalRequest>(
          "categories: 1 draws: 100 values { f32 { values: [1, 1] } }"),
      limits, kSeeds, true);
  ASSERT_TRUE(categorical.ok()) << categorical.status();
  plan = PlanStream(**categorical, 0, limits, 0);
  EXPECT_EQ(plan.piece, 1);
  EXPECT_EQ(plan.message, 1);
}

// A message cut from a computed piece is the chunk that slicing its range
// directly would have given, field for field, outputs included.
TEST(ValidateStream, MessagesCutFromAPieceEqualChunksOfTheirRange) {
  {
    const auto request = Text<v1::SampleGammaRequest>(
        "seed: 5 precision: PRECISION_FLOAT32 groups { groups { shape: 0.5 "
        "count: 40 } groups { shape: 3 count: 60 } }");
    auto whole = ParseGamma(request, RequestLimits(), kSeeds, true);
    ASSERT_TRUE(whole.ok());
    v1::SampleGammaStreamResponse piece;
    auto job = SliceGamma(**whole, 10, 80, &piece);
    ASSERT_NE(job, nullptr);
    RunGamma(*job);
    for (auto [first, count] :
         {std::pair<int64_t, int64_t>{0, 80}, {0, 7}, {35, 7}, {77, 3}}) {
      v1::SampleGammaStreamResponse cut, direct;
      ASSERT_TRUE(CutGammaMessage(piece, first, count, &cut));
      auto part = SliceGamma(**whole, 10 + first, count, &direct);
      ASSERT_NE(part, nullptr);
      RunGamma(*part);
      EXPECT_EQ(cut.SerializeAsString(), direct.SerializeAsString())
          << first << " " << count;
    }
    v1::SampleGammaStreamResponse bad;
    EXPECT_FALSE(CutGammaMessage(piece, 78, 3, &bad));
    EXPECT_FALSE(CutGammaMessage(piece, -1, 3, &bad));
    EXPECT_FALSE(CutGammaMessage(piece, 0, 0, &bad));
  }
  {
    std::string text =
        "seed: 11 categories: 5 draws: 3 values { f32 { "
        "values: [";
    for (int i = 0; i < 37 * 5; ++i) {
      absl::StrAppend(&text, i ? "," : "", 1 + (i * 7) % 5);
    }
    text += "] } }";
    auto whole = ParseCategorical(Text<v1::SampleCategoricalRequest>(text),
                                  RequestLimits(), kSeeds, true);
    ASSERT_TRUE(whole.ok()) << whole.status();
    auto run = [](CategoricalJob& job) {
      auto& work = std::get<CategoricalWork<double>>(job.work);
      ASSERT_TRUE(kernels::SampleCategoricalCpu<double>(
                      work.values, job.shape, job.weight_kind, job.seed,
                      job.first_row, work.out)
                      .ok());
    };
    v1::SampleCategoricalStreamResponse piece;
    auto job = SliceCategorical(**whole, 3, 30, &piece);
    ASSERT_NE(job, nullptr);
    run(*job);
    for (auto [first, count] :
         {std::pair<int64_t, int64_t>{0, 30}, {0, 1}, {13, 4}, {29, 1}}) {
      v1::SampleCategoricalStreamResponse cut, direct;
      ASSERT_TRUE(CutCategoricalMessage(piece, first, count, &cut));
      auto part = SliceCategorical(**whole, 3 + first, count, &direct);
      ASSERT_NE(part, nullptr);
      run(*part);
      EXPECT_EQ(cut.SerializeAsString(), direct.SerializeAsString())
          << first << " " << count;
    }
    v1::SampleCategoricalStreamResponse bad;
    EXPECT_FALSE(CutCategoricalMessage(piece, 29, 2, &bad));
  }
  {
    auto whole = ParseBoards(Text<v1::SampleBoardsRequest>(
                                 "seed: 21 rows: 9 cols: 11 stones: [10, 20, "
                                 "5] count: 19"),
                             RequestLimits(), kSeeds, true);
    ASSERT_TRUE(whole.ok());
    auto run = [](BoardsJob& job) {
      ASSERT_TRUE(kernels::SampleBoardsCpu(job.spec, job.seed,
                                           job.first_position, job.count,
                                           job.out)
                      .ok());
    };
    v1::SampleBoardsStreamResponse piece;
    auto job = SliceBoards(**whole, 2, 15, &piece);
    ASSERT_NE(job, nullptr);
    run(*job);
    for (auto [first, count] :
         {std::pair<int64_t, int64_t>{0, 15}, {0, 2}, {5, 5}, {14, 1}}) {
      v1::SampleBoardsStreamResponse cut, direct;
      ASSERT_TRUE(CutBoardsMessage(piece, first, count, &cut));
      auto part = SliceBoards(**whole, 2 + first, count, &direct);
      ASSERT_NE(part, nullptr);
      run(*part);
      EXPECT_EQ(cut.SerializeAsString(), direct.SerializeAsString())
          << first << " " << count;
    }
    v1::SampleBoardsStreamResponse bad;
    EXPECT_FALSE(CutBoardsMessage(piece, 10, 6, &bad));
  }
}

// Issue 9 item 7: below --max_queued_items 524,256 every stream whose chunk
// size the server picked failed, its chunks being larger than the queues.
// Chunks now hold at most half the queues, whoever picks their size.
TEST(Limits, StreamChunksFitTheQueues) {
  RequestLimits limits;
  limits.max_queued_items = 100000;
  const DerivedLimits d = DeriveLimits(limits);
  EXPECT_EQ(d.max_stream_chunk_items, 50000);
  auto job = ParseGamma(GammaCount(1'000'000, false), limits, kSeeds, true);
  ASSERT_TRUE(job.ok()) << job.status();
  // 50000 in whole warps of 32.
  EXPECT_EQ(ChunkSize(**job, 0, limits), 49984);
  EXPECT_EQ(ChunkSize(**job, 10'000'000, limits), 49984);
  EXPECT_EQ(ChunkSize(**job, 7, limits), 7);
  // Categorical chunks count items (rows x draws).
  auto cat =
      ParseCategorical(CategoricalDraws(1000, 1000, 2), limits, kSeeds, true);
  ASSERT_TRUE(cat.ok()) << cat.status();
  EXPECT_LE(ChunkSize(**cat, 0, limits) * 1000, 50000);
}

}  // namespace
}  // namespace sampler::server
