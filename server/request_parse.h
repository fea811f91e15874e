// Request parsing: request protos -> typed jobs (jobs.h), before anything
// reaches a queue. Outputs are bound into the response by response_bind.h;
// streamed requests are cut into pieces by stream_chunk.h.
//
// The flow of one unary request:
//   auto job = ParseGamma(request, limits, seeds, /*streamed=*/false);
//   if (!job.ok()) -> reply with job.status()
//   BindGamma(**job, &response);  // outputs now alias response memory
//   enqueue *job; on done, send `response`.
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
#ifndef SAMPLER_SERVER_REQUEST_PARSE_H_
#define SAMPLER_SERVER_REQUEST_PARSE_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/v1/sampler.pb.h"
#include "server/jobs.h"
#include "server/request_limits.h"

namespace sampler::server {

namespace v1 = ::sampler::v1;

// Supplies a seed for a request that has none (the server's entropy
// source). Called at most once per Parse; must be thread-safe if Parse is
// called from several threads.
using SeedSource = std::function<uint64_t()>;

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

// The job's values are a copy of the request's (CategoricalWork).
absl::StatusOr<std::shared_ptr<CategoricalJob>> ParseCategorical(
    const v1::SampleCategoricalRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed);
// The same, the job reading the values where they lie in `request` and
// sharing its ownership (issue 13 item 3: a 16 MB upload is not copied
// again after protobuf has parsed it). Values in the other representation
// than the request's precision are converted, which takes a copy.
absl::StatusOr<std::shared_ptr<CategoricalJob>> ParseCategorical(
    std::shared_ptr<const v1::SampleCategoricalRequest> request,
    const RequestLimits& limits, const SeedSource& seeds, bool streamed);

absl::StatusOr<std::shared_ptr<GammaJob>> ParseGamma(
    const v1::SampleGammaRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed);

absl::StatusOr<std::shared_ptr<DirichletJob>> ParseDirichlet(
    const v1::SampleDirichletRequest& request, const RequestLimits& limits,
    const SeedSource& seeds);

absl::StatusOr<std::shared_ptr<BoardsJob>> ParseBoards(
    const v1::SampleBoardsRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_REQUEST_PARSE_H_
