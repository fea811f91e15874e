// The server's limits on one request (RequestLimits), the thresholds that
// follow from them for each kind (DeriveLimits, which GetServerInfo
// reports), and the serialized-size estimates and item caps that both
// request parsing (request_parse.h) and stream planning (stream_chunk.h)
// measure against, so that the two agree on what fits.
#ifndef SAMPLER_SERVER_REQUEST_LIMITS_H_
#define SAMPLER_SERVER_REQUEST_LIMITS_H_

#include <cstdint>

namespace sampler::server {

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
  // Most terms of one Enumerate request, all problems together, each
  // repeated term counted as often as it is repeated: a job holds a view
  // per term, so this bounds its memory however small the request.
  int64_t max_enumerate_terms = int64_t{1} << 22;
  // Chunks of a stream aim at this size (and at most half of
  // max_message_bytes): big enough to batch well, small enough to keep
  // latency and memory per chunk low.
  int64_t target_chunk_bytes = int64_t{4} << 20;
  // The queues' capacity (--max_queued_items): a stream's chunk holds at
  // most half of it (MaxStreamChunkItems), so that a stream always fits.
  int64_t max_queued_items = int64_t{1} << 62;
};

// The limits that follow from RequestLimits for each kind and precision
// (issue 9 item 7): exact thresholds of the Parse functions
// (request_parse.h), which GetServerInfo reports (sampler.v1.Limits
// documents each) and startup checks can use to refuse a flag set under
// which a kind could never be served (a field < 1). A pure function of
// `limits`.
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

// ------------------------------------------------------- size estimates --
// Serialized-size estimates. Every length-delimited field costs at most a
// 2-byte tag and a 10-byte length; scalars at most 11 bytes. These bounds
// cover a message's fields and wrappers (Reals -> FloatList -> values) with
// room to spare, so an estimate is never below the real size.
inline constexpr int64_t kMessageOverhead = 256;
// One Pmf of an EnumerateResponse: its entry, offset, Reals and list.
inline constexpr int64_t kPmfOverhead = 64;

// Bytes of a varint holding v.
int64_t VarintBytes(uint64_t v);

// ------------------------------------------------------------ item caps --
// The RequestLimits as they bind: protobuf can neither serialize a message
// of 2 GiB or more nor hold a repeated field of more than INT_MAX elements,
// whatever the flags say.

// Largest message: max_message_bytes, at most INT32_MAX.
int64_t MaxMessageBytes(const RequestLimits& limits);
// Most items of a unary request: max_items_per_request, at most INT32_MAX.
int64_t MaxUnaryItems(const RequestLimits& limits);
// Items in one chunk of a stream: one unary request's worth, and at most
// half the queues (a chunk larger than the queues could never be admitted,
// and one that takes them all would almost always be refused). At least 1.
int64_t MaxStreamChunkItems(const RequestLimits& limits);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_REQUEST_LIMITS_H_
