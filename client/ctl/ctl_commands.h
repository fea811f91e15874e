// The samplerctl subcommands, one per file (ctl_<name>.cc). Each builds its
// request from flags (or --request_json), calls the server, prints, and
// returns the process exit code (see ctl_output.h).
#ifndef SAMPLER_CLIENT_CTL_CTL_COMMANDS_H_
#define SAMPLER_CLIENT_CTL_CTL_COMMANDS_H_

#include "client/ctl/ctl_options.h"

namespace sampler::client {

int RunEnumerate(const CtlOptions& options);
int RunCategorical(const CtlOptions& options);
int RunGamma(const CtlOptions& options);
int RunDirichlet(const CtlOptions& options);
int RunBoards(const CtlOptions& options);
int RunInfo(const CtlOptions& options);
int RunHealth(const CtlOptions& options);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_CTL_CTL_COMMANDS_H_
