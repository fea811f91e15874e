// samplerctl health: the standard grpc.health.v1 Check, as an exit code.
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "client/common/grpc_util.h"
#include "client/ctl/ctl_commands.h"
#include "client/ctl/ctl_output.h"
#include "grpc/health/v1/health.grpc.pb.h"

ABSL_FLAG(std::string, service, "",
          "health: the service to check (empty: the server as a whole; "
          "sampler.v1.SamplerService for the sampler)");

namespace sampler::client {

int RunHealth(const CtlOptions& options) {
  grpc::health::v1::HealthCheckRequest request;
  if (!options.request_json.empty()) {
    absl::StatusOr<std::string> json = ReadFile(options.request_json);
    if (!json.ok()) return UsageError(json.status());
    absl::Status parsed = JsonToMessage(*json, &request);
    if (!parsed.ok()) return UsageError(parsed);
  } else {
    request.set_service(absl::GetFlag(FLAGS_service));
  }
  auto stub = grpc::health::v1::Health::NewStub(options.channel);
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  grpc::health::v1::HealthCheckResponse response;
  absl::Status status = ToAbslStatus(stub->Check(&context, request, &response));
  if (status.ok() && options.json) status = PrintJson(response);
  if (!status.ok()) return RpcError(status);
  if (!options.json) {
    std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                     response.status())
              << "\n";
  }
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING
             ? kExitOk
             : kExitFailure;
}

}  // namespace sampler::client
