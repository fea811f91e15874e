// In-process gRPC servers for the service tests: a service on 127.0.0.1 at
// a port the system picks.
#ifndef SAMPLER_TESTS_SERVER_LOOPBACK_SERVER_H_
#define SAMPLER_TESTS_SERVER_LOOPBACK_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>

namespace sampler::server {

// Serves `service` on 127.0.0.1; `*port` is where. Null if it cannot start.
inline std::unique_ptr<grpc::Server> StartOnLoopback(grpc::Service* service,
                                                     int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

}  // namespace sampler::server

#endif  // SAMPLER_TESTS_SERVER_LOOPBACK_SERVER_H_
