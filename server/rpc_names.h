// The names of sampler.v1.SamplerService's RPCs, in one table: the handlers
// (service.cc), the metrics' `method` label (metrics.h), MethodName(Kind)
// (jobs.cc) and the streamed RPCs' names in messages (request_parse.cc) all
// take them from here, so a renamed or added RPC changes one file.
#ifndef SAMPLER_SERVER_RPC_NAMES_H_
#define SAMPLER_SERVER_RPC_NAMES_H_

#include <string_view>

namespace sampler::server::rpc {

inline constexpr char kEnumerate[] = "Enumerate";
inline constexpr char kSampleCategorical[] = "SampleCategorical";
inline constexpr char kSampleCategoricalStream[] = "SampleCategoricalStream";
inline constexpr char kSampleGamma[] = "SampleGamma";
inline constexpr char kSampleGammaStream[] = "SampleGammaStream";
inline constexpr char kSampleDirichlet[] = "SampleDirichlet";
inline constexpr char kSampleBoards[] = "SampleBoards";
inline constexpr char kSampleBoardsStream[] = "SampleBoardsStream";
inline constexpr char kGetServerInfo[] = "GetServerInfo";

// Every RPC, in the order of the metrics' pre-created labels.
inline constexpr std::string_view kAll[] = {
    kEnumerate,    kSampleCategorical,  kSampleCategoricalStream,
    kSampleGamma,  kSampleGammaStream,  kSampleDirichlet,
    kSampleBoards, kSampleBoardsStream, kGetServerInfo};

}  // namespace sampler::server::rpc

#endif  // SAMPLER_SERVER_RPC_NAMES_H_
