// Item caps and derived limits; see request_limits.h.
#include "server/request_limits.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "sampler/kernels/enumerate.h"

namespace sampler::server {
namespace {

// Protobuf's limit on a message's bytes and on a repeated field's elements.
constexpr int64_t kProtoMaxBytes = std::numeric_limits<int32_t>::max();

// Most items of `item_bytes` each that a unary response of `overhead` plus
// those items can hold (the size estimates of request_parse.cc).
int64_t MaxItemsInMessage(const RequestLimits& limits, int64_t overhead,
                          int64_t item_bytes) {
  const int64_t room = MaxMessageBytes(limits) - overhead;
  return std::max<int64_t>(
      std::min(MaxUnaryItems(limits), room < 0 ? 0 : room / item_bytes), 0);
}

}  // namespace

int64_t VarintBytes(uint64_t v) {
  int64_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

int64_t MaxMessageBytes(const RequestLimits& limits) {
  return std::min(limits.max_message_bytes, kProtoMaxBytes);
}

int64_t MaxUnaryItems(const RequestLimits& limits) {
  return std::min(limits.max_items_per_request, kProtoMaxBytes);
}

int64_t MaxStreamChunkItems(const RequestLimits& limits) {
  return std::max<int64_t>(
      std::min(MaxUnaryItems(limits), limits.max_queued_items / 2), 1);
}

DerivedLimits DeriveLimits(const RequestLimits& limits) {
  DerivedLimits d;
  d.max_gamma_samples_float32 = MaxItemsInMessage(limits, kMessageOverhead, 4);
  d.max_gamma_samples_float64 = MaxItemsInMessage(limits, kMessageOverhead, 8);
  d.max_dirichlet_elements_float32 = d.max_gamma_samples_float32;
  d.max_dirichlet_elements_float64 = d.max_gamma_samples_float64;
  d.max_enumerate_elements_float32 =
      std::min(kernels::kMaxEnumerateSupport,
               MaxItemsInMessage(limits, kMessageOverhead + kPmfOverhead, 4));
  d.max_enumerate_elements_float64 =
      std::min(kernels::kMaxEnumerateSupport,
               MaxItemsInMessage(limits, kMessageOverhead + kPmfOverhead, 8));
  d.max_categorical_items = MaxItemsInMessage(limits, kMessageOverhead, 1);
  // Words, not positions: one position is at least one word per colour.
  d.max_board_words =
      std::max<int64_t>((MaxMessageBytes(limits) - kMessageOverhead) / 8, 0);
  d.max_stream_chunk_items = MaxStreamChunkItems(limits);
  return d;
}

}  // namespace sampler::server
