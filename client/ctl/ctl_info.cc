// samplerctl info: what the server runs on and the limits it enforces.
#include <iostream>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "client/common/grpc_util.h"
#include "client/ctl/ctl_commands.h"
#include "client/ctl/ctl_output.h"
#include "sampler/v1/sampler.grpc.pb.h"

namespace sampler::client {
namespace {

using sampler::v1::GetServerInfoResponse;

// "BACKEND_CUDA" -> "CUDA"; an enum value this client does not know (a newer
// server) prints as its number.
std::string BackendName(sampler::v1::Backend backend) {
  if (!sampler::v1::Backend_IsValid(backend)) {
    return absl::StrFormat("backend %d", static_cast<int>(backend));
  }
  absl::string_view name = sampler::v1::Backend_Name(backend);
  absl::ConsumePrefix(&name, "BACKEND_");
  return std::string(name);
}

void PrintInfo(const GetServerInfoResponse& info) {
  std::cout << absl::StreamFormat("version:  %s\n", info.version());
  // The randomness contract (docs/randomness.md): seeds replay to the same
  // bits only on servers of the same contract version.
  std::cout << absl::StreamFormat("contract: %d\n",
                                  info.randomness_contract_version());
  std::cout << absl::StreamFormat("backend:  %s", BackendName(info.backend()));
  if (!info.backend_reason().empty()) {
    std::cout << " (" << info.backend_reason() << ")";
  }
  std::cout << "\n";
  std::cout << absl::StreamFormat("devices:  %d\n", info.devices_size());
  for (const sampler::v1::Device& device : info.devices()) {
    if (!device.unavailable_reason().empty()) {
      std::cout << absl::StreamFormat("  %d: unavailable (%s)\n",
                                      device.index(),
                                      device.unavailable_reason());
      continue;
    }
    std::cout << absl::StreamFormat(
        "  %d: %s, %.1f GiB, compute capability %s, %d multiprocessors\n",
        device.index(), device.name(),
        static_cast<double>(device.memory_bytes()) / (1 << 30),
        device.compute_capability(), device.multiprocessors());
  }
  if (!info.has_limits()) return;
  const sampler::v1::Limits& limits = info.limits();
  std::cout << "limits:\n";
  std::cout << absl::StreamFormat("  max items per request    %d\n",
                                  limits.max_items_per_request());
  std::cout << absl::StreamFormat("  max message bytes        %d\n",
                                  limits.max_message_bytes());
  std::cout << absl::StreamFormat("  max batch items          %d\n",
                                  limits.max_batch_items());
  std::cout << absl::StreamFormat("  max batch delay          %g s\n",
                                  limits.max_batch_delay_seconds());
  std::cout << absl::StreamFormat("  max queued items         %d\n",
                                  limits.max_queued_items());
  std::cout << absl::StreamFormat("  max board sites          %d\n",
                                  limits.max_board_sites());
}

}  // namespace

int RunInfo(const CtlOptions& options) {
  auto stub = sampler::v1::SamplerService::NewStub(options.channel);
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  GetServerInfoResponse response;
  absl::Status status = ToAbslStatus(stub->GetServerInfo(
      &context, sampler::v1::GetServerInfoRequest(), &response));
  if (status.ok() && options.json) status = PrintJson(response);
  if (!status.ok()) return RpcError(status);
  if (!options.json) PrintInfo(response);
  return kExitOk;
}

}  // namespace sampler::client
