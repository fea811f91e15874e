#include "client/ctl/ctl_output.h"

#include <iostream>
#include <string>

#include "absl/status/statusor.h"
#include "client/common/json_io.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::client {

int UsageError(const absl::Status& status) {
  std::cerr << "samplerctl: usage error: " << status.message()
            << "\n(samplerctl --help lists subcommands and flags)\n";
  return kExitUsage;
}

int RpcError(const absl::Status& status) {
  std::cerr << "samplerctl: " << absl::StatusCodeToString(status.code()) << ": "
            << status.message() << "\n";
  return kExitFailure;
}

absl::Status PrintJson(const google::protobuf::Message& message) {
  SAMPLER_ASSIGN_OR_RETURN(const std::string json, MessageToJson(message));
  std::cout << json << "\n";
  if (!std::cout.good()) return absl::UnavailableError("cannot write stdout");
  return absl::OkStatus();
}

}  // namespace sampler::client
