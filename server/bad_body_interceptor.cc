#include "server/bad_body_interceptor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "sampler/v1/sampler.pb.h"
#include "server/wire_request.h"

namespace sampler::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class BadBodyInterceptor : public grpc::experimental::Interceptor {
 public:
  BadBodyInterceptor(const std::string* request_type,
                     const std::function<void(const std::string&)>* on_bad_body,
                     std::string method)
      : request_type_(request_type),
        on_bad_body_(on_bad_body),
        method_(std::move(method)) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
          status.error_message().empty()) {
        methods->ModifySendStatus(
            grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                         BadBodyMessage(*request_type_)));
        if (*on_bad_body_) (*on_bad_body_)(method_);
      }
    }
    methods->Proceed();
  }

 private:
  const std::string* const request_type_;
  const std::function<void(const std::string&)>* const on_bad_body_;
  const std::string method_;
};

void AddService(const google::protobuf::ServiceDescriptor* service,
                const std::vector<std::string>& watched,
                std::map<std::string, std::string>& types) {
  if (service == nullptr) return;
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* method = service->method(i);
    // Client-streaming and bidi handlers read their messages later, through
    // the reactor, and report a bad one themselves.
    if (method->client_streaming()) continue;
    std::string name =
        absl::StrCat("/", service->full_name(), "/", method->name());
    if (std::find(watched.begin(), watched.end(), name) == watched.end()) {
      continue;
    }
    types[std::move(name)] = method->input_type()->full_name();
  }
}

}  // namespace

BadBodyInterceptorFactory::BadBodyInterceptorFactory(
    const std::vector<std::string>& methods,
    std::function<void(const std::string& method)> on_bad_body)
    : on_bad_body_(std::move(on_bad_body)) {
  AddService(v1::EnumerateRequest::descriptor()->file()->FindServiceByName(
                 "SamplerService"),
             methods, request_types_);
}

grpc::experimental::Interceptor*
BadBodyInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  const char* method = info->method();
  if (method == nullptr) return nullptr;
  const auto it = request_types_.find(method);
  // nullptr: no interceptor for this call (unknown methods stay
  // UNIMPLEMENTED).
  if (it == request_types_.end()) return nullptr;
  return new BadBodyInterceptor(&it->second, &on_bad_body_, it->first);
}

}  // namespace sampler::server
