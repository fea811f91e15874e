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

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_WIRE_REQUEST_H_
