// Streamed requests in pieces: how many units a stream has, how large its
// computed pieces and its messages are (PlanStream), the job of one piece
// (Slice*) and the messages cut from a computed piece (Cut*Message).
//
// The flow of one streamed request:
//   auto whole = ParseGamma(stream_request.request(), limits, seeds, true);
//   plan = PlanStream(**whole, stream_request.max_samples_per_chunk(),
//                     limits, max_piece_items);
//   for first in 0, plan.piece, ... < StreamUnits(**whole):
//     piece_job = SliceGamma(**whole, first, min(plan.piece, units - first),
//                            &piece);
//     enqueue piece_job; on done, for each plan.message units of `piece`:
//       CutGammaMessage(piece, offset, count, &message); write `message`.
//
// The unit a stream is cut in: categorical rows, gamma samples, board
// positions. Only those three kinds are streamed; each function below has
// one overload per streamed job type, so the type picks the unit.
#ifndef SAMPLER_SERVER_STREAM_CHUNK_H_
#define SAMPLER_SERVER_STREAM_CHUNK_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "sampler/v1/sampler.pb.h"
#include "server/jobs.h"
#include "server/request_limits.h"

namespace sampler::server {

namespace v1 = ::sampler::v1;

// Total units of a parsed job: shape.rows, items or count.
int64_t StreamUnits(const CategoricalJob& whole);
int64_t StreamUnits(const GammaJob& whole);
int64_t StreamUnits(const BoardsJob& whole);

// Units per chunk for a streamed job: each chunk message stays at most
// min(target_chunk_bytes, max_message_bytes / 2) as estimated, at most
// max_items_per_request items (but at least one unit, even if a single
// categorical row has more draws), at most `client_max_per_chunk` when that
// is > 0 (max_rows_per_chunk, max_samples_per_chunk,
// max_positions_per_chunk) and at most StreamUnits. At least 1.
int64_t ChunkSize(const CategoricalJob& whole, int64_t client_max_per_chunk,
                  const RequestLimits& limits);
int64_t ChunkSize(const GammaJob& whole, int64_t client_max_per_chunk,
                  const RequestLimits& limits);
int64_t ChunkSize(const BoardsJob& whole, int64_t client_max_per_chunk,
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
StreamPlan PlanStream(const CategoricalJob& whole, int64_t client_max_per_chunk,
                      const RequestLimits& limits, int64_t max_piece_items);
StreamPlan PlanStream(const GammaJob& whole, int64_t client_max_per_chunk,
                      const RequestLimits& limits, int64_t max_piece_items);
StreamPlan PlanStream(const BoardsJob& whole, int64_t client_max_per_chunk,
                      const RequestLimits& limits, int64_t max_piece_items);

// INVALID_ARGUMENT ("max_rows_per_chunk = -1: must be >= 0 (0 lets the
// server choose)") for a negative client chunk size; `field` names it.
absl::Status ValidateChunkMax(absl::string_view field, int64_t value);

// A chunk of a parsed streamed job: units [first, first + count) of `whole`
// (relative to whole; precondition 0 <= first, 1 <= count, first + count <=
// StreamUnits, otherwise nullptr). The chunk job owns a copy of its part of
// the inputs (categorical pieces share the whole's values and their owner
// instead), keeps the Philox item indices of the whole request
// (first_row / first_sample / first_position = whole's + first), has items,
// seed, deadline and cancelled of its own (copied; done, status and
// enqueued are left to the caller), and its outputs are bound to `chunk`
// (response_bind.h), whose other fields (first_*, rows, draws, seed, ...)
// are filled.
std::shared_ptr<CategoricalJob> SliceCategorical(
    const CategoricalJob& whole, int64_t first_row, int64_t rows,
    v1::SampleCategoricalStreamResponse* chunk);

// Per-element parameters are copied; groups become the overlapping parts
// of the groups with their counts cut to the chunk (zero-count groups
// dropped). The first group is found through whole.group_ends when it has
// one entry per group, else by a walk over the groups.
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

#endif  // SAMPLER_SERVER_STREAM_CHUNK_H_
