// Answers written around borrowed payloads (server/wire_answer.h) are, byte
// for byte, what protobuf serializes, for every shape of every answer and
// stream message; their values are borrowed, not copied, and stay valid
// while the buffer lives.
#include "server/wire_answer.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/stream_chunk.h"
#include "tests/server/wire_bytes.h"

namespace sampler::server {
namespace {

// True when some slice of `wire` starts at `data`: the values were
// borrowed, not copied.
bool Borrows(const grpc::ByteBuffer& wire, const void* data) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(wire.Dump(&slices).ok());
  for (const grpc::Slice& slice : slices) {
    if (static_cast<const void*>(slice.begin()) == data) return true;
  }
  return false;
}

// Value counts that take one, two and three bytes of length.
const int kCounts[] = {0, 1, 2, 31, 32, 33, 1000, 40000};

const uint64_t kSeeds[] = {0, 1, 127, 128,
                           std::numeric_limits<uint64_t>::max()};

// Fills `reals`: 0 no member of the oneof, 1 f32, 2 f64.
void FillReals(int which, int n, v1::Reals* reals) {
  for (int i = 0; i < n; ++i) {
    if (which == 1) reals->mutable_f32()->add_values(0.5f * i - 3.25f);
    if (which == 2) reals->mutable_f64()->add_values(-1e300 + i * 1e296);
  }
  if (which == 1) reals->mutable_f32();
  if (which == 2) reals->mutable_f64();
}

template <typename Answer>
void ExpectSamplesAnswersMatch() {
  int cases = 0;
  for (int present = 0; present < 2; ++present) {
    for (int which = 0; which < 3; ++which) {
      for (int n : kCounts) {
        if ((!present || which == 0) && n > 0) continue;
        for (uint64_t seed : kSeeds) {
          auto answer = std::make_shared<Answer>();
          if (present) FillReals(which, n, answer->mutable_samples());
          answer->set_seed(seed);
          const std::string expected = answer->SerializeAsString();
          const grpc::ByteBuffer wire = AnswerToWire(answer);
          answer.reset();  // the buffer keeps the message alive
          EXPECT_EQ(Bytes(wire), expected)
              << "present " << present << " which " << which << " n " << n
              << " seed " << seed;
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 80);
}

TEST(WireAnswer, GammaAnswersAreProtobufsBytes) {
  ExpectSamplesAnswersMatch<v1::SampleGammaResponse>();
}

TEST(WireAnswer, DirichletAnswersAreProtobufsBytes) {
  ExpectSamplesAnswersMatch<v1::SampleDirichletResponse>();
}

// Results of every shape, each with its own offset and length; short
// payloads are copied and long ones borrowed, in one answer.
TEST(WireAnswer, EnumerateAnswersAreProtobufsBytes) {
  const int64_t offsets[] = {0,   1,   -1,
                             127, 128, std::numeric_limits<int64_t>::min()};
  int cases = 0;
  for (int results : {0, 1, 3}) {
    for (int present = 0; present < 2; ++present) {
      for (int which = 0; which < 3; ++which) {
        for (int n : kCounts) {
          if ((!present || which == 0) && n > 0) continue;
          for (int64_t offset : offsets) {
            auto answer = std::make_shared<v1::EnumerateResponse>();
            for (int r = 0; r < results; ++r) {
              v1::Pmf* pmf = answer->add_results();
              pmf->set_offset(offset + r);
              if (present) {
                FillReals(which, n * r, pmf->mutable_probabilities());
              }
            }
            const std::string expected = answer->SerializeAsString();
            const grpc::ByteBuffer wire = AnswerToWire(answer);
            answer.reset();  // the buffer keeps the message alive
            EXPECT_EQ(Bytes(wire), expected)
                << "results " << results << " present " << present << " which "
                << which << " n " << n << " offset " << offset;
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 150);
}

TEST(WireAnswer, BoardsAnswersAreProtobufsBytes) {
  const int32_t small_ints[] = {0, 1, 300, -1,
                                std::numeric_limits<int32_t>::min()};
  const int64_t counts[] = {0, 5, -7, std::numeric_limits<int64_t>::max()};
  for (int n : kCounts) {
    for (int32_t words : small_ints) {
      for (int32_t colours : small_ints) {
        for (int64_t count : counts) {
          for (uint64_t seed : kSeeds) {
            auto answer = std::make_shared<v1::SampleBoardsResponse>();
            for (int i = 0; i < n; ++i) {
              answer->add_bitboards(0x0123456789abcdefULL * (i + 1));
            }
            answer->set_words_per_board(words);
            answer->set_colours(colours);
            answer->set_count(count);
            answer->set_seed(seed);
            EXPECT_EQ(Bytes(AnswerToWire(answer)), answer->SerializeAsString())
                << "n " << n << " words " << words << " colours " << colours
                << " count " << count << " seed " << seed;
          }
        }
      }
    }
  }
}

TEST(WireAnswer, LargeValuesAreBorrowedNotCopied) {
  auto gamma = std::make_shared<v1::SampleGammaResponse>();
  FillReals(1, 40000, gamma->mutable_samples());
  gamma->set_seed(9);
  EXPECT_TRUE(
      Borrows(AnswerToWire(gamma), gamma->samples().f32().values().data()));
  auto boards = std::make_shared<v1::SampleBoardsResponse>();
  for (int i = 0; i < 1000; ++i) boards->add_bitboards(i);
  EXPECT_TRUE(Borrows(AnswerToWire(boards), boards->bitboards().data()));
  auto pmfs = std::make_shared<v1::EnumerateResponse>();
  FillReals(2, 3, pmfs->add_results()->mutable_probabilities());
  FillReals(2, 5000, pmfs->add_results()->mutable_probabilities());
  const grpc::ByteBuffer wire = AnswerToWire(pmfs);
  EXPECT_TRUE(
      Borrows(wire, pmfs->results(1).probabilities().f64().values().data()));
  // A short payload is copied with the bytes around it.
  EXPECT_FALSE(
      Borrows(wire, pmfs->results(0).probabilities().f64().values().data()));
}

// Every message PieceToWire writes from `piece` equals the one Cut writes,
// serialized; both refuse the same ranges.
template <typename Piece, typename CutFn>
void ExpectMessagesMatch(std::shared_ptr<const Piece> piece, int64_t units,
                         CutFn cut, const std::string& what) {
  for (int64_t first = -1; first <= units + 1; ++first) {
    for (int64_t count = -1; count <= units + 1 - std::max<int64_t>(first, 0);
         ++count) {
      Piece message;
      const bool cut_ok = cut(*piece, first, count, &message);
      grpc::ByteBuffer wire;
      const bool wire_ok = PieceToWire(piece, first, count, &wire);
      ASSERT_EQ(wire_ok, cut_ok)
          << what << " first " << first << " count " << count;
      if (!cut_ok) continue;
      EXPECT_EQ(Bytes(wire), message.SerializeAsString())
          << what << " first " << first << " count " << count;
    }
  }
}

TEST(WireAnswer, GammaStreamMessagesAreProtobufsBytes) {
  const int64_t firsts[] = {0, 1000, std::numeric_limits<int64_t>::max() / 2};
  for (int which = 0; which < 3; ++which) {
    for (int n : {0, 1, 7, 40}) {
      for (int64_t first_sample : firsts) {
        for (uint64_t seed : kSeeds) {
          auto piece = std::make_shared<v1::SampleGammaStreamResponse>();
          FillReals(which, n, piece->mutable_samples());
          piece->set_first_sample(first_sample);
          piece->set_seed(seed);
          ExpectMessagesMatch<v1::SampleGammaStreamResponse>(
              piece, n, CutGammaMessage,
              absl::StrCat("which ", which, " n ", n, " first_sample ",
                           first_sample, " seed ", seed));
          if (which != 0 && n > 0) {  // the whole piece is itself
            grpc::ByteBuffer wire;
            ASSERT_TRUE(PieceToWire(piece, 0, n, &wire));
            EXPECT_EQ(Bytes(wire), piece->SerializeAsString());
          }
        }
      }
    }
  }
  // A long cut borrows the piece's values from where it starts.
  auto piece = std::make_shared<v1::SampleGammaStreamResponse>();
  FillReals(2, 40000, piece->mutable_samples());
  grpc::ByteBuffer wire;
  ASSERT_TRUE(PieceToWire(piece, 100, 30000, &wire));
  EXPECT_TRUE(Borrows(wire, piece->samples().f64().values().data() + 100));
}

TEST(WireAnswer, BoardsStreamMessagesAreProtobufsBytes) {
  for (int32_t colours : {0, 1, 2}) {
    for (int32_t words : {0, 1, 3}) {
      for (int64_t positions : {0, 1, 5}) {
        for (uint64_t seed : {uint64_t{0}, uint64_t{77}}) {
          auto piece = std::make_shared<v1::SampleBoardsStreamResponse>();
          for (int64_t i = 0; i < positions * colours * words; ++i) {
            piece->add_bitboards(~uint64_t{0} - i);
          }
          piece->set_first_position(positions == 5 ? 12345 : 0);
          piece->set_words_per_board(words);
          piece->set_colours(colours);
          piece->set_count(positions);
          piece->set_seed(seed);
          ExpectMessagesMatch<v1::SampleBoardsStreamResponse>(
              piece, positions, CutBoardsMessage,
              absl::StrCat("colours ", colours, " words ", words, " positions ",
                           positions, " seed ", seed));
        }
      }
    }
  }
  // A piece whose words do not add up is refused, as Cut refuses it.
  auto bad = std::make_shared<v1::SampleBoardsStreamResponse>();
  bad->set_words_per_board(1);
  bad->set_colours(2);
  bad->set_count(3);
  bad->add_bitboards(1);
  ExpectMessagesMatch<v1::SampleBoardsStreamResponse>(bad, 3, CutBoardsMessage,
                                                      "inconsistent");
}

TEST(WireAnswer, CategoricalStreamMessagesAreProtobufsBytes) {
  for (int32_t draws : {1, 3}) {
    for (int64_t rows : {0, 1, 6}) {
      auto piece = std::make_shared<v1::SampleCategoricalStreamResponse>();
      for (int64_t i = 0; i < rows * draws; ++i) {
        piece->add_indices(static_cast<int32_t>(i * 1000 - 2));
      }
      piece->set_first_row(rows == 6 ? 99 : 0);
      piece->set_rows(rows);
      piece->set_draws(draws);
      piece->set_seed(5);
      ExpectMessagesMatch<v1::SampleCategoricalStreamResponse>(
          piece, rows, CutCategoricalMessage,
          absl::StrCat("draws ", draws, " rows ", rows));
    }
  }
}

}  // namespace
}  // namespace sampler::server
