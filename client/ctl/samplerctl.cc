// samplerctl: a command-line client for every RPC of sampler.v1 and for the
// standard gRPC health check. See kUsage for the subcommands.
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/common/args.h"
#include "client/ctl/ctl_commands.h"
#include "client/ctl/ctl_options.h"
#include "client/ctl/ctl_output.h"

namespace {

constexpr char kUsage[] = R"(a client for the sampler service.

usage: samplerctl SUBCOMMAND [flags]

subcommands:
  enumerate    PMF of a sum of independent terms
               samplerctl enumerate --pmf 0:0.5,0.5 --pmf 1:0.2,0.3,0.5
  categorical  draws from one categorical distribution per row
               samplerctl categorical --weights "1,2,3;5,0,5" --draws 10
  gamma        gamma variates, summarised (--print: all of them)
               samplerctl gamma --shape 0.5 --scale 2 --count 100000
               samplerctl gamma --shapes 0.1,1,10 --print
  dirichlet    Dirichlet vectors and their component means
               samplerctl dirichlet --alpha 0.5,1,2 --rows 1000
  boards       random positions: k stones of each colour on a grid
               samplerctl boards --rows 9 --cols 9 --stones 10,10 --count 2
  info         the server's version, backend, devices and limits
  health       grpc.health.v1 Check; exit 0 if SERVING, 1 otherwise
               samplerctl health --service sampler.v1.SamplerService

gamma, categorical and boards take --stream (the streaming RPC; answers of
any size). Every subcommand takes --json (print the response as proto JSON)
and --request_json FILE (send that request instead of one built from flags).
A TLS server: --tls_ca_file CA.pem (and --tls_cert_file/--tls_key_file for
mutual TLS); one that wants a bearer token: --token_file FILE.
Exit codes: 0 success, 1 RPC error or not SERVING, 2 usage error.)";

using Command = int (*)(const sampler::client::CtlOptions&);

struct NamedCommand {
  const char* name;
  Command run;
  // Whether the RPC has a streaming variant (--stream).
  bool streams;
  // The source file of its own flags (nullptr: none), and one line on it.
  const char* flags_file;
  const char* summary;
};

constexpr NamedCommand kCommands[] = {
    {"enumerate", sampler::client::RunEnumerate, false, "ctl_enumerate.cc",
     "PMF of a sum of independent terms"},
    {"categorical", sampler::client::RunCategorical, true, "ctl_categorical.cc",
     "draws from one categorical distribution per row"},
    {"gamma", sampler::client::RunGamma, true, "ctl_gamma.cc",
     "gamma variates, summarised (--print: all of them)"},
    {"dirichlet", sampler::client::RunDirichlet, false, "ctl_dirichlet.cc",
     "Dirichlet vectors and their component means"},
    {"boards", sampler::client::RunBoards, true, "ctl_boards.cc",
     "random positions: k stones of each colour on a grid"},
    {"info", sampler::client::RunInfo, false, nullptr,
     "the server's version, backend, devices and limits"},
    {"health", sampler::client::RunHealth, false, "ctl_health.cc",
     "grpc.health.v1 Check; exit 0 if SERVING, 1 otherwise"},
};

const NamedCommand* FindCommand(absl::string_view name) {
  for (const NamedCommand& candidate : kCommands) {
    if (name == candidate.name) return &candidate;
  }
  return nullptr;
}

// `samplerctl SUB --help`: that subcommand's own flags, then the common ones.
int PrintCommandHelp(const NamedCommand& command) {
  std::cout << "samplerctl " << command.name << ": " << command.summary
            << "\n\nusage: samplerctl " << command.name << " [flags]\n";
  if (command.flags_file != nullptr) {
    const absl::string_view own[] = {command.flags_file};
    std::cout << "\n"
              << command.name << " flags:\n"
              << sampler::client::FlagsHelp(own);
  }
  if (command.streams) {
    std::cout << "\n"
              << command.name
              << " takes --stream (the streaming RPC: answers of any size).\n";
  }
  static constexpr absl::string_view kCommon[] = {"ctl_options.cc",
                                                  "security_flags.cc"};
  std::cout << "\ncommon flags:\n" << sampler::client::FlagsHelp(kCommon);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using sampler::client::UsageError;
  sampler::client::ConfigureUsage(kUsage);
  // absl's --help knows no subcommands: answer `samplerctl SUB --help` here.
  if (argc >= 2 && sampler::client::WantsHelp(argc, argv)) {
    if (const NamedCommand* command = FindCommand(argv[1])) {
      return PrintCommandHelp(*command);
    }
  }
  // Repeated --pmf flags are the terms of one problem.
  static constexpr absl::string_view kJoinedFlags[] = {"pmf"};
  const absl::StatusOr<std::vector<std::string>> positional =
      sampler::client::ParseArgs(argc, argv, kJoinedFlags, ';');
  if (!positional.ok()) return UsageError(positional.status());

  if (positional->size() < 2) {
    std::cerr << "samplerctl " << kUsage << "\n";
    return sampler::client::kExitUsage;
  }
  const std::string& command_name = (*positional)[1];
  if (positional->size() > 2) {
    return UsageError(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", (*positional)[2], "\" after ",
                     command_name)));
  }
  const NamedCommand* command = FindCommand(command_name);
  if (command == nullptr) {
    return UsageError(absl::InvalidArgumentError(
        absl::StrCat("unknown subcommand \"", command_name, "\"")));
  }
  absl::StatusOr<sampler::client::CtlOptions> options =
      sampler::client::CtlOptionsFromFlags();
  if (!options.ok()) return UsageError(options.status());
  if (options->stream && !command->streams) {
    return UsageError(absl::InvalidArgumentError(
        absl::StrCat(command_name, " has no streaming RPC; drop --stream")));
  }
  return command->run(*options);
}
