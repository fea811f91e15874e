// Validation: request protos -> typed jobs (jobs.h), before anything reaches
// a queue, plus the helpers the service needs to point a job's outputs into
// its response message (Bind*) and to cut a streamed request into chunks
// (ChunkSize, Slice*).
//
// The flow of one unary request:
//   auto job = ParseGamma(request, limits, seeds, /*streamed=*/false);
//   if (!job.ok()) -> reply with job.status()
//   BindGamma(**job, &response);  // outputs now alias response memory
//   enqueue *job; on done, send `response`.
// And of a streamed one:
//   auto whole = ParseGamma(stream_request.request(), limits, seeds, true);
//   plan = PlanStream(Kind::kGamma, **whole,
//                     stream_request.max_samples_per_chunk(), limits);
//   for first in 0, plan.piece, ... < StreamUnits(Kind::kGamma, **whole):
//     piece_job = SliceGamma(**whole, first, min(plan.piece, units - first),
//                            &piece);
//     enqueue piece_job; on done, for each plan.message units of `piece`:
//       CutGammaMessage(piece, offset, count, &message); write `message`.
//
// Error conventions (absl::Status; the service maps them to gRPC codes):
//   INVALID_ARGUMENT: the request is malformed. The message starts with the
//     proto field path of the offending field, its index and its value, as
//     in "elements.shape[3] = -1: must be finite, > 0 and not subnormal",
//     "values[2][5] = nan: weights must be finite and >= 0" (categorical
//     values by [row][column]), "problems[1].terms[0].probabilities[4] =
//     -0.2: must be finite and >= 0", "stones[1] = -2: must be >= 0",
//     "precision = 7: unknown Precision value". Reals are named without
//     their oneof (".f32.values"). For a streamed request the path starts
//     at the stream request: "request.values[2][5] = ...".
//     Requests with no work at all (no rows, no samples, count 0, no
//     problems) are INVALID_ARGUMENT too.
//   OUT_OF_RANGE: a well-formed request that exceeds one of the server's
//     RequestLimits (items, response bytes, enumeration work). Not
//     RESOURCE_EXHAUSTED: that code means "retry later" (queues are full),
//     while this request will fail the same way every time. When the
//     corresponding *Stream RPC would accept it, the message names that RPC
//     ("... use SampleGammaStream"); otherwise it says to split the request.
#ifndef SAMPLER_SERVER_VALIDATE_H_
#define SAMPLER_SERVER_VALIDATE_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sampler/v1/sampler.pb.h"
#include "server/jobs.h"

namespace sampler::server {

namespace v1 = ::sampler::v1;

// Supplies a seed for a request that has none (the server's entropy
// source). Called at most once per Parse; must be thread-safe if Parse is
// called from several threads.
using SeedSource = std::function<uint64_t()>;

// The server's limits on one request. Items are counted per kind as in
// Job::items: gamma samples; categorical rows x draws; Dirichlet output
// elements; board positions; enumeration output elements (all problems).
struct RequestLimits {
  // Most items in one unary request (and in one chunk of a stream).
  int64_t max_items_per_request = int64_t{1} << 24;
  // Most items in one streamed request, all chunks together.
  int64_t max_items_per_stream = int64_t{1} << 31;
  // Largest message the server sends (and receives): a unary response must
  // fit, as estimated conservatively from its item count, before any work
  // is done. The gRPC server's max send size should be the same number.
  int64_t max_message_bytes = int64_t{64} << 20;
  // Most multiply-adds of one Enumerate request (kernels::EnumeratePairCount
  // summed over its problems): the direct convolution costs O(m n).
  int64_t max_enumerate_pairs = 2'000'000'000;
  // Chunks of a stream aim at this size (and at most half of
  // max_message_bytes): big enough to batch well, small enough to keep
  // latency and memory per chunk low.
  int64_t target_chunk_bytes = int64_t{4} << 20;
  // The queues' capacity (--max_queued_items): a stream's chunk holds at
  // most half of it (MaxStreamChunkItems), so that a stream always fits.
  int64_t max_queued_items = int64_t{1} << 62;
};

// The limits that follow from RequestLimits for each kind and precision
// (issue 9 item 7): exact thresholds of the Parse functions below, which
// GetServerInfo reports (sampler.v1.Limits documents each) and startup
// checks can use to refuse a flag set under which a kind could never be
// served (a field < 1). A pure function of `limits`.
struct DerivedLimits {
  int64_t max_gamma_samples_float32 = 0;
  int64_t max_gamma_samples_float64 = 0;
  int64_t max_dirichlet_elements_float32 = 0;
  int64_t max_dirichlet_elements_float64 = 0;
  int64_t max_enumerate_elements_float32 = 0;  // one problem
  int64_t max_enumerate_elements_float64 = 0;
  int64_t max_categorical_items = 0;  // at most 128 categories
  int64_t max_board_words = 0;
  int64_t max_stream_chunk_items = 0;
};
DerivedLimits DeriveLimits(const RequestLimits& limits);

// ------------------------------------------------------------------ Parse --
// Each Parse checks every field, applies the proto's defaults (precision
// UNSPECIFIED = float64, probability space UNSPECIFIED = linear, categorical
// input UNSPECIFIED = weights, draws 0 = 1, GammaGroup.scale 0 = 1, no
// GammaElements.scale = all 1), converts Reals of either representation to
// the request's precision (f64 given to a float32 request is rounded; a
// finite value that overflows float32 is INVALID_ARGUMENT, and so is a
// gamma or Dirichlet parameter that would become zero or subnormal), takes
// the request's seed or else one from `seeds`, counts the items and checks
// the limits. The job has everything but its outputs (spans empty) and its
// service fields (deadline, cancelled, done).
//
// `streamed`: the request came inside a *StreamRequest; it is then checked
// against max_items_per_stream instead of the unary item and message-size
// limits (but one categorical row or board position, the least a chunk
// holds, must fit max_message_bytes: OUT_OF_RANGE otherwise), and error
// paths start with "request.".

absl::StatusOr<std::shared_ptr<EnumerateJob>> ParseEnumerate(
    const v1::EnumerateRequest& request, const RequestLimits& limits);

absl::StatusOr<std::shared_ptr<CategoricalJob>> ParseCategorical(
    const v1::SampleCategoricalRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed);

absl::StatusOr<std::shared_ptr<GammaJob>> ParseGamma(
    const v1::SampleGammaRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed);

absl::StatusOr<std::shared_ptr<DirichletJob>> ParseDirichlet(
    const v1::SampleDirichletRequest& request, const RequestLimits& limits,
    const SeedSource& seeds);

absl::StatusOr<std::shared_ptr<BoardsJob>> ParseBoards(
    const v1::SampleBoardsRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed);

// ------------------------------------------------------------------- Bind --
// Sizes the response's output field(s) for a parsed (whole) job, points the
// job's output span(s) at that memory (zero-copy: the backend writes the
// answer in place) and fills the other response fields (seed, rows, draws,
// words_per_board, ...). The response must outlive the job's execution and
// its output fields must not be resized afterwards. Binding again rebinds.

// results[i] gets the problem's length and offset (the sum of its terms'
// offsets, known before execution, so Bind writes it; the job's
// out_offset pointers point at storage owned by the job, so a backend that
// writes them changes nothing in the response).
void BindEnumerate(EnumerateJob& job, v1::EnumerateResponse* response);
void BindCategorical(CategoricalJob& job,
                     v1::SampleCategoricalResponse* response);
void BindGamma(GammaJob& job, v1::SampleGammaResponse* response);
void BindDirichlet(DirichletJob& job, v1::SampleDirichletResponse* response);
void BindBoards(BoardsJob& job, v1::SampleBoardsResponse* response);

// ----------------------------------------------------------------- Stream --
// The unit a stream is cut in: categorical rows, gamma samples, board
// positions. Parsed jobs of other kinds are not streamed.

// Total units of a parsed job: shape.rows, items or count. 0 for the kinds
// that have no stream.
int64_t StreamUnits(Kind kind, const Job& whole);

// Units per chunk for a streamed job: each chunk message stays at most
// min(target_chunk_bytes, max_message_bytes / 2) as estimated, at most
// max_items_per_request items (but at least one unit, even if a single
// categorical row has more draws), at most `client_max_per_chunk` when that
// is > 0 (max_rows_per_chunk, max_samples_per_chunk,
// max_positions_per_chunk) and at most StreamUnits. At least 1.
int64_t ChunkSize(Kind kind, const Job& whole, int64_t client_max_per_chunk,
                  const RequestLimits& limits);

// How a stream is computed and sent. Message size is a wire concern, not a
// unit of work: the answer is computed in pieces sized for the device, each
// ONE job (ChunkSize without the client's maximum: about
// target_chunk_bytes, whole warps), and each computed piece is cut into
// messages of the client's size (ChunkSize with its maximum). A piece is a
// whole number of messages (rounded down to a multiple of lcm(message, 32)
// where that leaves at least one, else of message), so every message but
// the last has exactly `message` units, as if the answer had been computed
// message by message; the Philox item indices are the whole request's
// either way, so the bits do not depend on either size. A categorical row
// larger than one message still goes alone (both are at least 1 unit).
// `max_piece_items` bounds the work items of one piece (the service passes
// its queue budget over the pieces a stream keeps in flight, so that a
// stream fits an idle server's queue whatever its size); a piece is never
// smaller than one message, though. <= 0: no such bound.
struct StreamPlan {
  int64_t piece = 1;    // units per computed piece (one job); >= message
  int64_t message = 1;  // units per message; piece % message == 0
};
StreamPlan PlanStream(Kind kind, const Job& whole, int64_t client_max_per_chunk,
                      const RequestLimits& limits, int64_t max_piece_items);

// INVALID_ARGUMENT ("max_rows_per_chunk = -1: must be >= 0 (0 lets the
// server choose)") for a negative client chunk size; `field` names it.
absl::Status ValidateChunkMax(absl::string_view field, int64_t value);

// A chunk of a parsed streamed job: units [first, first + count) of `whole`
// (relative to whole; precondition 0 <= first, 1 <= count, first + count <=
// StreamUnits, otherwise nullptr). The chunk job owns a copy of its part of
// the inputs, keeps the Philox item indices of the whole request
// (first_row / first_sample / first_position = whole's + first), has items,
// seed, deadline and cancelled of its own (copied; done, status and
// enqueued are left to the caller), and its outputs are bound to `chunk`,
// whose other fields (first_*, rows, draws, seed, ...) are filled.
std::shared_ptr<CategoricalJob> SliceCategorical(
    const CategoricalJob& whole, int64_t first_row, int64_t rows,
    v1::SampleCategoricalStreamResponse* chunk);

// Per-element parameters are copied; groups become the overlapping parts
// of the groups with their counts cut to the chunk (zero-count groups
// dropped).
std::shared_ptr<GammaJob> SliceGamma(const GammaJob& whole,
                                     int64_t first_sample, int64_t samples,
                                     v1::SampleGammaStreamResponse* chunk);

std::shared_ptr<BoardsJob> SliceBoards(const BoardsJob& whole,
                                       int64_t first_position,
                                       int64_t positions,
                                       v1::SampleBoardsStreamResponse* chunk);

// A message of a computed piece: units [first, first + count) of `piece`
// (relative to the piece; a piece is what Slice* filled). Copies the
// outputs of those units and sets the other fields as Slice* would have for
// a chunk of that range (first_* counted within the request). False, with
// `message` untouched, when the range is not inside the piece.
bool CutCategoricalMessage(const v1::SampleCategoricalStreamResponse& piece,
                           int64_t first, int64_t count,
                           v1::SampleCategoricalStreamResponse* message);
bool CutGammaMessage(const v1::SampleGammaStreamResponse& piece, int64_t first,
                     int64_t count, v1::SampleGammaStreamResponse* message);
bool CutBoardsMessage(const v1::SampleBoardsStreamResponse& piece,
                      int64_t first, int64_t count,
                      v1::SampleBoardsStreamResponse* message);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_VALIDATE_H_
