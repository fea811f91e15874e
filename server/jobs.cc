#include "server/jobs.h"

#include "server/rpc_names.h"

namespace sampler::server {

const char* MethodName(Kind kind) {
  switch (kind) {
    case Kind::kEnumerate:
      return rpc::kEnumerate;
    case Kind::kCategorical:
      return rpc::kSampleCategorical;
    case Kind::kGamma:
      return rpc::kSampleGamma;
    case Kind::kDirichlet:
      return rpc::kSampleDirichlet;
    case Kind::kBoards:
      return rpc::kSampleBoards;
  }
  return "Unknown";
}

}  // namespace sampler::server
