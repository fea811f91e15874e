// A pass over argv before absl::ParseCommandLine, for two things absl does
// not do the way the client tools need:
// - a flag given several times keeps only its last value in absl; for list
//   flags such as --pmf every occurrence counts, so they are joined here
//   into one "--name=v1;v2" argument;
// - absl exits with status 1 on an unknown flag or a bad value, where the
//   tools promise 2 for usage errors (1 means an RPC failed), so every flag
//   name and value is checked here first.
#ifndef SAMPLER_CLIENT_COMMON_ARGS_H_
#define SAMPLER_CLIENT_COMMON_ARGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace sampler::client {

// Returns `args` (args[0] is the program name) with every occurrence of the
// flags named in `joined_flags` replaced by one "--name=v1<joiner>v2..." at
// the place of the first, after checking that all flags are registered and
// their values parse. Help and other absl built-in flags pass unchecked.
absl::StatusOr<std::vector<std::string>> PrepareArgs(
    absl::Span<const std::string> args,
    absl::Span<const absl::string_view> joined_flags, char joiner);

// PrepareArgs, then absl::ParseCommandLine (which handles --help and exits).
// Returns the positional arguments, the program name first.
absl::StatusOr<std::vector<std::string>> ParseArgs(
    int argc, char** argv, absl::Span<const absl::string_view> joined_flags,
    char joiner);

// Sets the text --help starts with, and makes --help list the flags defined
// in client/ (by file) rather than only those of the main file.
void ConfigureUsage(absl::string_view usage);

// Whether argv asks for help (--help, -h, --helpshort or --helpfull) anywhere
// after the program name.
bool WantsHelp(int argc, char** argv);

// The help of the flags defined in source files whose names end in one of
// `files` (e.g. "client/ctl/ctl_gamma.cc"), one flag per entry, sorted by name:
// "  --name (help); default: value".
std::string FlagsHelp(absl::Span<const absl::string_view> files);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_COMMON_ARGS_H_
