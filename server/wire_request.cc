// Request bodies parsed by raw handlers; see wire_request.h.
#include "server/wire_request.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/slice.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace sampler::server {

std::string BadBodyMessage(absl::string_view request_type) {
  return absl::StrCat("the request body is not a valid ", request_type,
                      " message (protobuf parsing failed)");
}

absl::Status ParseRequestBody(const grpc::ByteBuffer& body,
                              google::protobuf::Message* request) {
  bool parsed = false;
  grpc::Slice single;
  if (body.TrySingleSlice(&single).ok()) {
    parsed = request->ParseFromArray(single.begin(),
                                     static_cast<int>(single.size()));
  } else {
    // The reader walks the buffer's slices; it needs a mutable buffer, and
    // a copy of one only adds references to its slices.
    grpc::ByteBuffer slices(body);
    grpc::ProtoBufferReader reader(&slices);
    parsed = reader.status().ok() && request->ParseFromZeroCopyStream(&reader);
  }
  if (parsed) return absl::OkStatus();
  return absl::InvalidArgumentError(
      BadBodyMessage(request->GetDescriptor()->full_name()));
}

}  // namespace sampler::server
