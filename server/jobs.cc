#include "server/jobs.h"

namespace sampler::server {

const char* MethodName(Kind kind) {
  switch (kind) {
    case Kind::kEnumerate:
      return "Enumerate";
    case Kind::kCategorical:
      return "SampleCategorical";
    case Kind::kGamma:
      return "SampleGamma";
    case Kind::kDirichlet:
      return "SampleDirichlet";
    case Kind::kBoards:
      return "SampleBoards";
  }
  return "Unknown";
}

}  // namespace sampler::server
