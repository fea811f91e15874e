// Proto messages to and from their canonical JSON mapping.
#ifndef SAMPLER_CLIENT_COMMON_JSON_IO_H_
#define SAMPLER_CLIENT_COMMON_JSON_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace sampler::client {

// One line of JSON; fields at their default values are printed too, so that
// a script reading it finds every field (e.g. "count": "0").
absl::StatusOr<std::string> MessageToJson(
    const google::protobuf::Message& message);

// Parses JSON into `message`. Unknown fields are errors, which is what lets
// a caller tell one request type from another (see ReadRequestJson).
absl::Status JsonToMessage(absl::string_view json,
                           google::protobuf::Message* message);

// Reads a whole file.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_COMMON_JSON_IO_H_
