#include "client/common/grpc_util.h"

#include <map>
#include <utility>
#include <vector>

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/client_interceptor.h"

namespace sampler::client {
namespace {

// Adds the bearer token to every call's initial metadata. An interceptor,
// not call credentials: gRPC sends call credentials only over TLS, and the
// server accepts tokens on plaintext ports too.
class BearerToken : public grpc::experimental::Interceptor {
 public:
  explicit BearerToken(std::shared_ptr<const std::string> header)
      : header_(std::move(header)) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", *header_);
    }
    methods->Proceed();
  }

 private:
  std::shared_ptr<const std::string> header_;
};

class BearerTokenFactory
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenFactory(const std::string& token)
      : header_(std::make_shared<const std::string>("Bearer " + token)) {}

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* /*info*/) override {
    return new BearerToken(header_);
  }

 private:
  std::shared_ptr<const std::string> header_;
};

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(
    const std::string& target, int channel_index,
    const ChannelSecurity& security, const std::string& service_config_json) {
  grpc::ChannelArguments arguments;
  if (!service_config_json.empty()) {
    arguments.SetServiceConfigJSON(service_config_json);
  }
  arguments.SetMaxReceiveMessageSize(-1);
  arguments.SetMaxSendMessageSize(-1);
  if (channel_index > 0) {
    // A distinct argument set keeps gRPC from reusing another channel's
    // connection.
    arguments.SetInt("sampler.client.channel_index", channel_index);
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (security.tls) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = security.root_certs_pem;
    tls.pem_cert_chain = security.cert_chain_pem;
    tls.pem_private_key = security.private_key_pem;
    credentials = grpc::SslCredentials(tls);
    if (!security.server_name.empty()) {
      arguments.SetSslTargetNameOverride(security.server_name);
    }
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  if (security.token.empty()) {
    return grpc::CreateCustomChannel(target, credentials, arguments);
  }
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<BearerTokenFactory>(security.token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      target, credentials, arguments, std::move(interceptors));
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
