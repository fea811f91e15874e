// Answers serialized around borrowed payloads; see wire_answer.h.
#include "server/wire_answer.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/config.h"
#include "absl/container/inlined_vector.h"
#include "server/request_limits.h"
#include "server/saturating.h"
#include "server/stream_chunk.h"

namespace sampler::server {
namespace {

// The borrowed bytes are the values' memory: protobuf writes fixed-width
// values little-endian.
static_assert(ABSL_IS_LITTLE_ENDIAN, "packed values are borrowed as stored");

// Protobuf's wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;

size_t VarintSize(uint64_t value) {
  return static_cast<size_t>(VarintBytes(value));
}

// Every field number here is under 16: one byte of tag.
constexpr size_t kTagSize = 1;

// A run of fixed-width values in memory that the message owning them keeps.
struct PackedView {
  const void* data = nullptr;
  int64_t count = 0;
  size_t width = 0;
  size_t bytes() const { return static_cast<size_t>(count) * width; }
};

template <typename T>
PackedView ViewOf(const google::protobuf::RepeatedField<T>& values,
                  int64_t first, int64_t count) {
  return PackedView{values.data() + first, count, sizeof(T)};
}

// A packed repeated field's bytes: none when empty (proto3 packs repeated
// scalars and writes nothing for an empty one).
size_t PackedFieldSize(const PackedView& values) {
  if (values.count == 0) return 0;
  return kTagSize + VarintSize(values.bytes()) + values.bytes();
}

// v1::Reals: which member of its oneof is set (0: none, else the field
// number of FloatList f32 or DoubleList f64) and that list's values.
struct RealsView {
  uint32_t field = 0;
  PackedView values;
};

// `reals`' values [first, first + count), or nullopt-like (field 0) when
// its oneof is unset. The caller has checked the range.
RealsView ViewOf(const v1::Reals& reals, int64_t first, int64_t count) {
  switch (reals.values_case()) {
    case v1::Reals::kF32:
      return RealsView{v1::Reals::kF32FieldNumber,
                       ViewOf(reals.f32().values(), first, count)};
    case v1::Reals::kF64:
      return RealsView{v1::Reals::kF64FieldNumber,
                       ViewOf(reals.f64().values(), first, count)};
    default:
      return RealsView{};
  }
}

int64_t RealsLength(const v1::Reals& reals) {
  switch (reals.values_case()) {
    case v1::Reals::kF32:
      return reals.f32().values_size();
    case v1::Reals::kF64:
      return reals.f64().values_size();
    default:
      return 0;
  }
}

// A message field's bytes with its tag and length.
size_t MessageFieldSize(size_t body) {
  return kTagSize + VarintSize(body) + body;
}

// The bytes of a Reals message (its body, without its own tag and length).
size_t RealsBodySize(const RealsView& reals) {
  if (reals.field == 0) return 0;
  // The FloatList or DoubleList field.
  return MessageFieldSize(PackedFieldSize(reals.values));
}

// A proto3 int64 scalar's bytes: none when zero.
size_t Int64FieldSize(int64_t value) {
  if (value == 0) return 0;
  return kTagSize + VarintSize(static_cast<uint64_t>(value));
}

// Payloads under this many bytes are copied with the bytes around them:
// a borrowed slice costs a reference and a slice of its own, more than
// copying a few hundred bytes (an answer of many small PMFs would otherwise
// be thousands of slices).
constexpr size_t kMinBorrowedBytes = 1024;

void DeleteOwner(void* owner) {
  delete static_cast<std::shared_ptr<const void>*>(owner);
}

// Writes a message field by field, in field-number order as protobuf does;
// scalars and headers go into small copied slices, payloads are borrowed.
class WireWriter {
 public:
  explicit WireWriter(std::shared_ptr<const void> owner)
      : owner_(std::move(owner)) {}

  // proto3 scalars: nothing when zero. int32 and int64 are written as
  // their two's complement in 64 bits (a negative value takes 10 bytes).
  void Uint64(uint32_t field, uint64_t value) {
    if (value == 0) return;
    Tag(field, kVarint);
    Varint(value);
  }
  void Int64(uint32_t field, int64_t value) {
    Uint64(field, static_cast<uint64_t>(value));
  }
  void Int32(uint32_t field, int32_t value) {
    Uint64(field, static_cast<uint64_t>(static_cast<int64_t>(value)));
  }

  // A packed repeated fixed-width field, its values borrowed (copied when
  // small: kMinBorrowedBytes).
  void Packed(uint32_t field, const PackedView& values) {
    if (values.count == 0) return;
    Tag(field, kLengthDelimited);
    Varint(values.bytes());
    if (values.bytes() < kMinBorrowedBytes) {
      pending_.append(static_cast<const char*>(values.data), values.bytes());
    } else {
      Borrow(values.data, values.bytes());
    }
  }

  // The tag and length of a message field whose body (`body` bytes) the
  // caller writes next. Written even when empty (a set message field, or
  // an element of a repeated one).
  void MessageHeader(uint32_t field, size_t body) {
    Tag(field, kLengthDelimited);
    Varint(body);
  }

  // A Reals message field; `present`: the field is set (message fields
  // have presence: a set, empty Reals is written as a tag and length 0).
  void Reals(uint32_t field, const RealsView& reals, bool present) {
    if (!present) return;
    MessageHeader(field, RealsBodySize(reals));
    if (reals.field == 0) return;
    MessageHeader(reals.field, PackedFieldSize(reals.values));
    Packed(1, reals.values);  // FloatList.values / DoubleList.values
  }

  grpc::ByteBuffer Finish() && {
    Flush();
    return grpc::ByteBuffer(slices_.data(), slices_.size());
  }

 private:
  void Tag(uint32_t field, uint32_t wire_type) {
    Varint((uint64_t{field} << 3) | wire_type);
  }
  void Varint(uint64_t value) {
    while (value >= 0x80) {
      pending_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    pending_.push_back(static_cast<char>(value));
  }
  // The slice holds its own reference to the owner, dropped when gRPC
  // frees the slice (possibly after this buffer is gone).
  void Borrow(const void* data, size_t bytes) {
    Flush();
    slices_.emplace_back(const_cast<void*>(data), bytes, DeleteOwner,
                         new std::shared_ptr<const void>(owner_));
  }
  void Flush() {
    if (pending_.empty()) return;
    slices_.emplace_back(pending_);  // copied: a few bytes
    pending_.clear();
  }

  const std::shared_ptr<const void> owner_;
  std::string pending_;
  // An answer is mostly a header, its borrowed values and a tail: inline
  // room for four slices spares a small answer the vector's allocations
  // (three a call as it grew 1, 2, 4; issue 13).
  absl::InlinedVector<grpc::Slice, 4> slices_;
};

// Units [first, first + count) of `total`, none empty (as the Cut*Message
// functions of stream_chunk.cc check them).
bool InRange(int64_t first, int64_t count, int64_t total) {
  return first >= 0 && count >= 1 && first <= total && count <= total - first;
}

// SampleGammaResponse and SampleDirichletResponse: samples = 1, seed = 2.
template <typename Answer>
grpc::ByteBuffer SamplesAnswerToWire(std::shared_ptr<const Answer> answer) {
  const Answer& a = *answer;
  const RealsView samples = ViewOf(a.samples(), 0, RealsLength(a.samples()));
  WireWriter writer(answer);
  writer.Reals(1, samples, a.has_samples());
  writer.Uint64(2, a.seed());
  return std::move(writer).Finish();
}

}  // namespace

grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::EnumerateResponse> answer) {
  WireWriter writer(answer);
  for (const v1::Pmf& pmf : answer->results()) {  // results = 1
    const RealsView probabilities =
        ViewOf(pmf.probabilities(), 0, RealsLength(pmf.probabilities()));
    const bool present = pmf.has_probabilities();
    writer.MessageHeader(
        1, Int64FieldSize(pmf.offset()) +
               (present ? MessageFieldSize(RealsBodySize(probabilities)) : 0));
    writer.Int64(1, pmf.offset());            // Pmf.offset
    writer.Reals(2, probabilities, present);  // Pmf.probabilities
  }
  return std::move(writer).Finish();
}

grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::SampleGammaResponse> answer) {
  return SamplesAnswerToWire(std::move(answer));
}

grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::SampleDirichletResponse> answer) {
  return SamplesAnswerToWire(std::move(answer));
}

grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::SampleBoardsResponse> answer) {
  const v1::SampleBoardsResponse& a = *answer;
  const PackedView bitboards = ViewOf(a.bitboards(), 0, a.bitboards_size());
  WireWriter writer(answer);
  writer.Packed(1, bitboards);
  writer.Int32(2, a.words_per_board());
  writer.Int32(3, a.colours());
  writer.Int64(4, a.count());
  writer.Uint64(5, a.seed());
  return std::move(writer).Finish();
}

grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::SampleCategoricalResponse> answer) {
  return SerializedToWire(*answer);
}

bool PieceToWire(std::shared_ptr<const v1::SampleGammaStreamResponse> piece,
                 int64_t first, int64_t count, grpc::ByteBuffer* wire) {
  const v1::SampleGammaStreamResponse& p = *piece;
  if (p.samples().values_case() == v1::Reals::VALUES_NOT_SET ||
      !InRange(first, count, RealsLength(p.samples()))) {
    return false;
  }
  const RealsView samples = ViewOf(p.samples(), first, count);
  WireWriter writer(piece);
  writer.Int64(1, p.first_sample() + first);
  writer.Reals(2, samples, /*present=*/true);
  writer.Uint64(3, p.seed());
  *wire = std::move(writer).Finish();
  return true;
}

bool PieceToWire(std::shared_ptr<const v1::SampleBoardsStreamResponse> piece,
                 int64_t first, int64_t count, grpc::ByteBuffer* wire) {
  const v1::SampleBoardsStreamResponse& p = *piece;
  const int64_t words =
      SatMul(int64_t{p.colours()}, int64_t{p.words_per_board()});
  if (!InRange(first, count, p.count()) || words <= 0 ||
      SatMul(p.count(), words) != p.bitboards_size()) {
    return false;
  }
  const PackedView bitboards =
      ViewOf(p.bitboards(), first * words, count * words);
  WireWriter writer(piece);
  writer.Int64(1, p.first_position() + first);
  writer.Packed(2, bitboards);
  writer.Int32(3, p.words_per_board());
  writer.Int32(4, p.colours());
  writer.Int64(5, count);
  writer.Uint64(6, p.seed());
  *wire = std::move(writer).Finish();
  return true;
}

bool PieceToWire(
    std::shared_ptr<const v1::SampleCategoricalStreamResponse> piece,
    int64_t first, int64_t count, grpc::ByteBuffer* wire) {
  const v1::SampleCategoricalStreamResponse& p = *piece;
  if (first == 0 && count == p.rows() && count >= 1 &&
      SatMul(p.rows(), int64_t{p.draws()}) == p.indices_size()) {
    *wire = SerializedToWire(p);  // the whole piece: no cut copy first
    return true;
  }
  v1::SampleCategoricalStreamResponse message;
  if (!CutCategoricalMessage(p, first, count, &message)) return false;
  *wire = SerializedToWire(message);
  return true;
}

grpc::ByteBuffer SerializedToWire(
    const google::protobuf::MessageLite& message) {
  grpc::ByteBuffer wire;
  bool own_buffer = false;
  // What gRPC's typed methods do; fails only past 2 GiB, which no limit
  // lets through (max_message_bytes).
  (void)grpc::SerializationTraits<google::protobuf::MessageLite>::Serialize(
      message, &wire, &own_buffer);
  return wire;
}

}  // namespace sampler::server
