// The one mapping from absl::Status to grpc::Status (the codes share their
// numbering), plus the code names used as metric labels.
#ifndef SAMPLER_SERVER_GRPC_STATUS_H_
#define SAMPLER_SERVER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace sampler::server {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

// "OK", "INVALID_ARGUMENT", ...: the `code` label of sampler_requests_total.
inline std::string CodeName(const absl::Status& status) {
  return absl::StatusCodeToString(status.code());
}

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_GRPC_STATUS_H_
