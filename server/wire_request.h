// Request bodies of the methods served raw (service.h: those whose answers
// go out through wire_answer.h), parsed by the service itself instead of by
// gRPC's typed handlers.
#ifndef SAMPLER_SERVER_WIRE_REQUEST_H_
#define SAMPLER_SERVER_WIRE_REQUEST_H_

#include <grpcpp/support/byte_buffer.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "sampler/v1/sampler.pb.h"

namespace sampler::server {

// What a client is told when its request body is not a valid protobuf
// message of `request_type` (a full name, "sampler.v1.SampleGammaRequest"):
// the same words whether gRPC's typed handler failed to parse it
// (bad_body_interceptor.h) or a raw handler did (ParseRequestBody).
std::string BadBodyMessage(absl::string_view request_type);

// Parses `body` into `request` (read where it lies when gRPC received it
// as one slice); INVALID_ARGUMENT with BadBodyMessage when it is not a
// valid message.
absl::Status ParseRequestBody(const grpc::ByteBuffer& body,
                              google::protobuf::Message* request);

// The same for the categorical requests, whose weights make up nearly all
// of a large body (a 16 MB upload: issue 13): a body of at least
// kPresizeFromBytes has its packed weights' length read off the wire first
// and their storage reserved at that size, so that parsing copies each
// value once into memory allocated once, rather than growing the field
// slice by slice (a copy of everything received so far at each doubling,
// into fresh pages). The message parsed is the same either way.
absl::Status ParseRequestBody(const grpc::ByteBuffer& body,
                              v1::SampleCategoricalRequest* request);
absl::Status ParseRequestBody(const grpc::ByteBuffer& body,
                              v1::SampleCategoricalStreamRequest* request);

// Bodies from this size have their weights' storage reserved (above);
// smaller ones are parsed as any other.
inline constexpr size_t kPresizeFromBytes = size_t{64} << 10;

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_WIRE_REQUEST_H_
