#include "client/grpc_util.h"

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace sampler::client {

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target,
                                           int channel_index) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  arguments.SetMaxSendMessageSize(-1);
  if (channel_index > 0) {
    // A distinct argument set keeps gRPC from reusing another channel's
    // connection.
    arguments.SetInt("sampler.client.channel_index", channel_index);
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  }
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   arguments);
}

void SetTimeout(absl::Duration timeout, grpc::ClientContext* context) {
  if (timeout <= absl::ZeroDuration() || timeout == absl::InfiniteDuration()) {
    return;
  }
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

absl::Status ToAbslStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

std::string StatusCodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace sampler::client
