// Large answers onto the wire without copying their values (issue 13 item
// 4). A response's packed payload (samples, bitboards) is already in the
// response message, written there in place by the backend (response_bind.h);
// protobuf's serializer would copy it once more into gRPC's buffer. Instead,
// these functions write the message's other bytes themselves (tags, lengths,
// scalars: exactly what protobuf's serialization writes, fields in number
// order) and hand gRPC the payload as a slice that borrows the message's
// memory (payloads under 1 KiB are copied: cheaper than a slice of their
// own), keeping the message alive until gRPC lets go of the slice. The
// bytes on the wire are those of message.SerializeAsString()
// (wire_answer_test proves it for every shape), so every client reads them
// as before.
//
// Only fixed-width packed values can be borrowed: categorical indices are
// varints (their bytes are not their memory), so those answers keep
// protobuf's serializer (SerializedToWire).
#ifndef SAMPLER_SERVER_WIRE_ANSWER_H_
#define SAMPLER_SERVER_WIRE_ANSWER_H_

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <memory>

#include "google/protobuf/message_lite.h"
#include "sampler/v1/sampler.pb.h"

namespace sampler::server {

namespace v1 = ::sampler::v1;

// Whole unary answers. The message must not change while gRPC holds the
// returned buffer (it holds a reference to the message until then).
grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::EnumerateResponse> answer);
grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::SampleGammaResponse> answer);
grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::SampleDirichletResponse> answer);
grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::SampleBoardsResponse> answer);
// Serialized (SerializedToWire): its indices are varints.
grpc::ByteBuffer AnswerToWire(
    std::shared_ptr<const v1::SampleCategoricalResponse> answer);

// Streams: the message of units [first, first + count) of a computed piece
// (stream_chunk.h), the bytes Cut*Message(*piece, first, count, &m) would
// give m, borrowed from the piece (the whole piece when first is 0 and
// count all its units). False, and *wire untouched, where Cut*Message would
// fail. Categorical messages are cut and serialized (their indices are
// varints).
bool PieceToWire(std::shared_ptr<const v1::SampleGammaStreamResponse> piece,
                 int64_t first, int64_t count, grpc::ByteBuffer* wire);
bool PieceToWire(std::shared_ptr<const v1::SampleBoardsStreamResponse> piece,
                 int64_t first, int64_t count, grpc::ByteBuffer* wire);
bool PieceToWire(
    std::shared_ptr<const v1::SampleCategoricalStreamResponse> piece,
    int64_t first, int64_t count, grpc::ByteBuffer* wire);

// Any message through protobuf's serializer (one copy), as gRPC's typed
// methods send it.
grpc::ByteBuffer SerializedToWire(const google::protobuf::MessageLite& message);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_WIRE_ANSWER_H_
