// Gives a request body that is not a valid protobuf message a clear
// INVALID_ARGUMENT (issue 9 item 9). gRPC 1.51's callback handlers answer a
// body that fails to deserialize with UNIMPLEMENTED and an empty message
// (server_callback_handlers.h: "if deserialization or reactor creator
// failed"), before any handler of ours runs. Our handlers never fail to
// return a reactor, so for a method that exists an UNIMPLEMENTED status
// with an empty message can only mean that parse failure: this server
// interceptor rewrites it, at PRE_SEND_STATUS, into INVALID_ARGUMENT naming
// the expected message type. Unknown methods keep their UNIMPLEMENTED. Only
// sampler.v1.SamplerService's methods that gRPC deserializes (today only
// GetServerInfo): the raw methods parse their bodies themselves and answer
// a bad one the same way (wire_request.h), and an interceptor costs every
// call it is created for several thousand instructions in gRPC's
// interception hooks (issue 13: bench/results/
// small-request-profile-2core-2026-11-26.md); grpc.health.v1's built-in
// service parses its requests itself and already answers INVALID_ARGUMENT.
#ifndef SAMPLER_SERVER_BAD_BODY_INTERCEPTOR_H_
#define SAMPLER_SERVER_BAD_BODY_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sampler::server {

class BadBodyInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `methods`: the full names of the methods to watch (those gRPC
  // deserializes, SamplerServiceImpl::DeserializedMethods); the others get
  // no interceptor. `on_bad_body` (may be empty) is called with the full
  // method name of every call answered this way (for a counter).
  BadBodyInterceptorFactory(
      const std::vector<std::string>& methods,
      std::function<void(const std::string& method)> on_bad_body);

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  // Full method name ("/sampler.v1.SamplerService/Enumerate") -> request
  // message type ("sampler.v1.GetServerInfoRequest"), for the methods
  // watched.
  std::map<std::string, std::string> request_types_;
  std::function<void(const std::string&)> on_bad_body_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_BAD_BODY_INTERCEPTOR_H_
