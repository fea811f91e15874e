#include "client/common/json_io.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace sampler::client {

absl::StatusOr<std::string> MessageToJson(
    const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status =
      google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot print ", message.GetTypeName(),
                     " as JSON: ", status.message().as_string()));
  }
  return json;
}

absl::Status JsonToMessage(absl::string_view json,
                           google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message,
      options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a ", message->GetTypeName(), ": ", status.message().as_string()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) {
    return absl::DataLossError(absl::StrCat("cannot read ", path));
  }
  return contents.str();
}

}  // namespace sampler::client
