// Fuzz target for the streamed RPCs (SampleCategoricalStream,
// SampleGammaStream, SampleBoardsStream): the first byte picks the RPC
// (byte % 3: 0 categorical, 1 gamma, 2 boards; the letters 'c', 'g' and 'b'
// do), the rest is its stream request. Each is handled as the service does:
// Parse* with streamed = true, ValidateChunkMax on the client's chunk size,
// StreamUnits and ChunkSize, then Slice* chunk after chunk, all chunks run
// as one batch on the CPU backend. Checks: rejections as in the unary
// targets (a streamed INVALID_ARGUMENT names "request."); chunk sizes within
// the client's maximum, the item limit and the chunk byte budget; slices out
// of range refused; each chunk's fields, answer invariants and bits equal to
// the kernel on that chunk; and the chunks laid end to end equal, bit for
// bit, the kernel on the whole request (the randomness contract: chunking
// changes nothing). Then as the service computes it: pieces sized for the
// device (PlanStream), each cut into messages (Cut*Message), which must be
// byte for byte the chunks above.
#include <algorithm>
#include <memory>
#include <variant>
#include <vector>

#include "server/stream_chunk.h"
#include "tests/fuzz/fuzz_checks.h"
#include "tests/fuzz/fuzz_target.h"

namespace sampler::fuzz {
namespace {

// The unary targets' limits, but with a small max_message_bytes: whatever
// the limits, every chunk the service sends must fit it (it is also the
// gRPC server's max send size), and a small one brings the edge cases
// (a single categorical row or board larger than a message) within reach
// of small inputs. Chunks aim at min(target_chunk_bytes, half of it).
server::RequestLimits StreamLimits() {
  server::RequestLimits limits = Limits();
  limits.max_message_bytes = int64_t{32} << 10;
  limits.max_items_per_stream = 65536;
  return limits;
}

// Streams of up to max_items_per_stream units are parsed and sliced; their
// chunks all run when the whole answer has at most this many elements
// (indices, samples or words), else the first two and the last (a
// 65536-position stream of 16-colour 128 x 128 boards would be 2 GiB).
constexpr int64_t kMaxRunElements = int64_t{1} << 18;

struct CategoricalStream {
  using Request = v1::SampleCategoricalStreamRequest;
  using Chunk = v1::SampleCategoricalStreamResponse;
  using Job = server::CategoricalJob;
  static constexpr const char* kField = "max_rows_per_chunk";

  static absl::StatusOr<std::shared_ptr<Job>> Parse(const Request& r) {
    return server::ParseCategorical(r.request(), StreamLimits(), Seeds(), true);
  }
  static int64_t ClientMax(const Request& r) { return r.max_rows_per_chunk(); }
  static std::shared_ptr<Job> Slice(const Job& whole, int64_t first,
                                    int64_t count, Chunk* chunk) {
    return server::SliceCategorical(whole, first, count, chunk);
  }
  static bool Cut(const Chunk& piece, int64_t first, int64_t count,
                  Chunk* message) {
    return server::CutCategoricalMessage(piece, first, count, message);
  }
  static int64_t Elements(const Job& whole) { return whole.items; }
  static uint64_t FirstUnit(const Job& job) { return job.first_row; }

  static void CheckChunk(const Job& whole, const Job& job, const Chunk& chunk,
                         int64_t first, int64_t count) {
    FUZZ_CHECK(chunk.first_row() == first && chunk.rows() == count &&
               chunk.draws() == whole.shape.draws &&
               chunk.seed() == whole.seed);
    FUZZ_CHECK(job.items == count * whole.shape.draws);
    const absl::Span<const int32_t> indices(chunk.indices().data(),
                                            chunk.indices_size());
    std::visit(
        [&](const auto& work) {
          CheckCategorical(job, work, indices);
          absl::Status s;
          const std::vector<int32_t> direct = DirectCategorical(job, work, &s);
          FUZZ_CHECK(s.ok(), s.ToString());
          FUZZ_CHECK(SameBits<int32_t>(indices, direct),
                     FirstDifference<int32_t>(indices, direct));
        },
        job.work);
  }

  static void CheckWhole(const Job& whole,
                         const std::vector<std::unique_ptr<Chunk>>& chunks) {
    std::vector<int32_t> all;
    for (const auto& c : chunks) {
      all.insert(all.end(), c->indices().begin(), c->indices().end());
    }
    std::visit(
        [&](const auto& work) {
          absl::Status s;
          const std::vector<int32_t> direct =
              DirectCategorical(whole, work, &s);
          FUZZ_CHECK(s.ok(), s.ToString());
          FUZZ_CHECK(SameBits<int32_t>(all, direct),
                     FirstDifference<int32_t>(all, direct));
        },
        whole.work);
  }
};

struct GammaStream {
  using Request = v1::SampleGammaStreamRequest;
  using Chunk = v1::SampleGammaStreamResponse;
  using Job = server::GammaJob;
  static constexpr const char* kField = "max_samples_per_chunk";

  static absl::StatusOr<std::shared_ptr<Job>> Parse(const Request& r) {
    return server::ParseGamma(r.request(), StreamLimits(), Seeds(), true);
  }
  static int64_t ClientMax(const Request& r) {
    return r.max_samples_per_chunk();
  }
  static std::shared_ptr<Job> Slice(const Job& whole, int64_t first,
                                    int64_t count, Chunk* chunk) {
    return server::SliceGamma(whole, first, count, chunk);
  }
  static bool Cut(const Chunk& piece, int64_t first, int64_t count,
                  Chunk* message) {
    return server::CutGammaMessage(piece, first, count, message);
  }
  static int64_t Elements(const Job& whole) { return whole.items; }
  static uint64_t FirstUnit(const Job& job) { return job.first_sample; }

  static void CheckChunk(const Job& whole, const Job& job, const Chunk& chunk,
                         int64_t first, int64_t count) {
    FUZZ_CHECK(chunk.first_sample() == first && chunk.seed() == whole.seed);
    FUZZ_CHECK(job.items == count && job.log_output == whole.log_output);
    FUZZ_CHECK(job.work.index() == whole.work.index());
    std::visit(
        [&](const auto& work) {
          using T = typename decltype(work.out)::value_type;
          const absl::Span<const T> samples = Values<T>(chunk.samples());
          FUZZ_CHECK(static_cast<int64_t>(samples.size()) == count);
          CheckGamma(job, work, samples);
          absl::Status s;
          const std::vector<T> direct = DirectGamma(job, work, &s);
          FUZZ_CHECK(s.ok(), s.ToString());
          FUZZ_CHECK(SameBits<T>(samples, direct),
                     FirstDifference<T>(samples, direct));
        },
        job.work);
  }

  static void CheckWhole(const Job& whole,
                         const std::vector<std::unique_ptr<Chunk>>& chunks) {
    std::visit(
        [&](const auto& work) {
          using T = typename decltype(work.out)::value_type;
          std::vector<T> all;
          for (const auto& c : chunks) {
            const absl::Span<const T> v = Values<T>(c->samples());
            all.insert(all.end(), v.begin(), v.end());
          }
          absl::Status s;
          const std::vector<T> direct = DirectGamma(whole, work, &s);
          FUZZ_CHECK(s.ok(), s.ToString());
          FUZZ_CHECK(SameBits<T>(all, direct), FirstDifference<T>(all, direct));
        },
        whole.work);
  }
};

struct BoardsStream {
  using Request = v1::SampleBoardsStreamRequest;
  using Chunk = v1::SampleBoardsStreamResponse;
  using Job = server::BoardsJob;
  static constexpr const char* kField = "max_positions_per_chunk";

  static absl::StatusOr<std::shared_ptr<Job>> Parse(const Request& r) {
    return server::ParseBoards(r.request(), StreamLimits(), Seeds(), true);
  }
  static int64_t ClientMax(const Request& r) {
    return r.max_positions_per_chunk();
  }
  static std::shared_ptr<Job> Slice(const Job& whole, int64_t first,
                                    int64_t count, Chunk* chunk) {
    return server::SliceBoards(whole, first, count, chunk);
  }
  static bool Cut(const Chunk& piece, int64_t first, int64_t count,
                  Chunk* message) {
    return server::CutBoardsMessage(piece, first, count, message);
  }
  static int64_t Elements(const Job& whole) {
    return whole.count * static_cast<int64_t>(whole.spec.stones.size()) *
           kernels::BoardWords64(whole.spec);
  }
  static uint64_t FirstUnit(const Job& job) { return job.first_position; }

  static void CheckChunk(const Job& whole, const Job& job, const Chunk& chunk,
                         int64_t first, int64_t count) {
    FUZZ_CHECK(chunk.first_position() == first && chunk.count() == count &&
               chunk.seed() == whole.seed &&
               chunk.colours() ==
                   static_cast<int32_t>(whole.spec.stones.size()) &&
               chunk.words_per_board() == kernels::BoardWords64(whole.spec));
    FUZZ_CHECK(job.items == count && job.count == count);
    const absl::Span<const uint64_t> words(chunk.bitboards().data(),
                                           chunk.bitboards_size());
    CheckBoards(job, words);
    absl::Status s;
    const std::vector<uint64_t> direct = DirectBoards(job, &s);
    FUZZ_CHECK(s.ok(), s.ToString());
    FUZZ_CHECK(SameBits<uint64_t>(words, direct),
               FirstDifference<uint64_t>(words, direct));
  }

  static void CheckWhole(const Job& whole,
                         const std::vector<std::unique_ptr<Chunk>>& chunks) {
    std::vector<uint64_t> all;
    for (const auto& c : chunks) {
      all.insert(all.end(), c->bitboards().begin(), c->bitboards().end());
    }
    absl::Status s;
    const std::vector<uint64_t> direct = DirectBoards(whole, &s);
    FUZZ_CHECK(s.ok(), s.ToString());
    FUZZ_CHECK(SameBits<uint64_t>(all, direct),
               FirstDifference<uint64_t>(all, direct));
  }
};

template <typename S>
void FuzzStream(const uint8_t* data, size_t size) {
  typename S::Request request;
  if (!ParseInput(data, size, &request)) return;
  const server::RequestLimits limits = StreamLimits();
  auto parsed = S::Parse(request);
  if (!parsed.ok()) {
    CheckRejection(parsed.status(), /*streamed=*/true);
    return;
  }
  const typename S::Job& whole = **parsed;
  FUZZ_CHECK(whole.items >= 1 && whole.items <= limits.max_items_per_stream,
             whole.items, " items");
  FUZZ_CHECK(whole.seed == ExpectedSeed(request.request()));
  FUZZ_CHECK(S::FirstUnit(whole) == 0);
  // The service checks the client's chunk size after parsing.
  const int64_t client_max = S::ClientMax(request);
  const absl::Status chunk_max =
      server::ValidateChunkMax(S::kField, client_max);
  if (client_max < 0) {
    FUZZ_CHECK(chunk_max.code() == absl::StatusCode::kInvalidArgument &&
                   absl::StartsWith(chunk_max.message(), S::kField),
               chunk_max.ToString());
    return;
  }
  FUZZ_CHECK(chunk_max.ok(), chunk_max.ToString());

  const int64_t units = server::StreamUnits(whole);
  FUZZ_CHECK(units >= 1 && units <= whole.items, units, " units");
  const int64_t n = server::ChunkSize(whole, client_max, limits);
  FUZZ_CHECK(n >= 1 && n <= units, "chunk of ", n, " for ", units, " units");
  if (client_max > 0) FUZZ_CHECK(n <= client_max, n, " > ", client_max);
  const int64_t items_per_unit = whole.items / units;
  FUZZ_CHECK(n == 1 || n * items_per_unit <= limits.max_items_per_request,
             "chunk of ", n, " units of ", items_per_unit, " items");
  // Slices out of range are refused, not clamped.
  typename S::Chunk scratch;
  FUZZ_CHECK(S::Slice(whole, units, 1, &scratch) == nullptr);
  FUZZ_CHECK(S::Slice(whole, 0, 0, &scratch) == nullptr);
  FUZZ_CHECK(S::Slice(whole, -1, 1, &scratch) == nullptr);
  FUZZ_CHECK(S::Slice(whole, 0, units + 1, &scratch) == nullptr);
  FUZZ_CHECK(S::Slice(whole, units - 1, 2, &scratch) == nullptr);

  const int64_t chunks = (units + n - 1) / n;
  const bool all = S::Elements(whole) <= kMaxRunElements;
  std::vector<int64_t> picked;
  if (all) {
    for (int64_t c = 0; c < chunks; ++c) picked.push_back(c);
  } else {
    picked = {0, 1, chunks - 1};
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    picked.erase(std::remove_if(picked.begin(), picked.end(),
                                [&](int64_t c) { return c >= chunks; }),
                 picked.end());
  }
  std::vector<std::unique_ptr<typename S::Chunk>> messages;
  std::vector<std::shared_ptr<typename S::Job>> jobs;
  for (const int64_t c : picked) {
    const int64_t first = c * n;
    const int64_t count = std::min(n, units - first);
    messages.push_back(std::make_unique<typename S::Chunk>());
    jobs.push_back(S::Slice(whole, first, count, messages.back().get()));
    FUZZ_CHECK(jobs.back() != nullptr, "chunk ", c, " [", first, ", +", count,
               ") of ", units);
    FUZZ_CHECK(S::FirstUnit(*jobs.back()) == static_cast<uint64_t>(first));
    FUZZ_CHECK(jobs.back()->seed == whole.seed);
  }
  RunBatch(jobs);
  const int64_t budget =
      std::min(limits.target_chunk_bytes, limits.max_message_bytes / 2);
  for (size_t i = 0; i < picked.size(); ++i) {
    const int64_t first = picked[i] * n;
    const int64_t count = std::min(n, units - first);
    FUZZ_CHECK(jobs[i]->status.ok(), "chunk ", picked[i], ": ",
               jobs[i]->status.ToString());
    S::CheckChunk(whole, *jobs[i], *messages[i], first, count);
    // Every chunk fits a message; more than one unit per chunk only while
    // the chunk fits the budget.
    const int64_t bytes = static_cast<int64_t>(messages[i]->ByteSizeLong());
    FUZZ_CHECK(bytes <= limits.max_message_bytes, "chunk ", picked[i], " of ",
               count, " units takes ", bytes, " bytes, max_message_bytes ",
               limits.max_message_bytes);
    FUZZ_CHECK(n == 1 || bytes <= budget, "chunk of ", n, " units takes ",
               bytes, " bytes, budget ", budget);
  }
  if (all) S::CheckWhole(whole, messages);

  // The service's path (issue 9): the answer is computed in pieces sized
  // for the device (PlanStream), one job each, and every piece is cut into
  // messages of n units. Message for message, the bytes must be those of
  // the chunks sliced and run one by one above.
  const int64_t device = server::ChunkSize(whole, 0, limits);
  const server::StreamPlan plan =
      server::PlanStream(whole, client_max, limits, 0);
  FUZZ_CHECK(plan.message == n, "message of ", plan.message, ", chunk ", n);
  FUZZ_CHECK(plan.piece >= plan.message && plan.piece % plan.message == 0 &&
                 plan.piece <= device,
             "piece of ", plan.piece, " for messages of ", plan.message,
             " and a device size of ", device);
  if (!all) return;
  std::vector<std::unique_ptr<typename S::Chunk>> pieces;
  std::vector<std::shared_ptr<typename S::Job>> piece_jobs;
  for (int64_t first = 0; first < units; first += plan.piece) {
    pieces.push_back(std::make_unique<typename S::Chunk>());
    piece_jobs.push_back(S::Slice(whole, first,
                                  std::min(plan.piece, units - first),
                                  pieces.back().get()));
    FUZZ_CHECK(piece_jobs.back() != nullptr, "piece at ", first);
  }
  RunBatch(piece_jobs);
  size_t next = 0;
  for (size_t p = 0; p < pieces.size(); ++p) {
    FUZZ_CHECK(piece_jobs[p]->status.ok(), piece_jobs[p]->status.ToString());
    const int64_t piece_units =
        std::min(plan.piece, units - static_cast<int64_t>(p) * plan.piece);
    for (int64_t off = 0; off < piece_units; off += plan.message) {
      typename S::Chunk message;
      FUZZ_CHECK(S::Cut(*pieces[p], off,
                        std::min(plan.message, piece_units - off), &message),
                 "cut at ", off, " of a piece of ", piece_units);
      FUZZ_CHECK(next < messages.size(), "more messages than chunks");
      FUZZ_CHECK(
          message.SerializeAsString() == messages[next]->SerializeAsString(),
          "message ", next, " differs from its chunk");
      ++next;
    }
    typename S::Chunk scratch_message;
    FUZZ_CHECK(!S::Cut(*pieces[p], piece_units, 1, &scratch_message));
  }
  FUZZ_CHECK(next == messages.size(), next, " messages for ", messages.size(),
             " chunks");
}

}  // namespace
}  // namespace sampler::fuzz

SAMPLER_FUZZ_TARGET(stream) {
  using namespace sampler::fuzz;  // NOLINT
  if (size == 0) return 0;
  switch (data[0] % 3) {
    case 0:
      FuzzStream<CategoricalStream>(data + 1, size - 1);
      break;
    case 1:
      FuzzStream<GammaStream>(data + 1, size - 1);
      break;
    default:
      FuzzStream<BoardsStream>(data + 1, size - 1);
      break;
  }
  return 0;
}
