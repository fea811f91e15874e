#include "client/common/args.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::client {
namespace {

// Flags that absl::ParseCommandLine handles itself.
bool IsBuiltinFlag(absl::string_view name) {
  static constexpr absl::string_view kBuiltins[] = {
      "help",    "helpfull",        "helpshort", "helppackage",
      "version", "flagfile",        "fromenv",   "tryfromenv",
      "undefok", "only_check_args", "helpon",    "helpmatch"};
  return absl::c_linear_search(kBuiltins, name);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> PrepareArgs(
    absl::Span<const std::string> args,
    absl::Span<const absl::string_view> joined_flags, char joiner) {
  std::vector<std::string> out;
  // Values of each joined flag, and where in `out` its argument goes.
  std::vector<std::vector<std::string>> joined_values(joined_flags.size());
  std::vector<std::optional<size_t>> joined_slot(joined_flags.size());

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (i == 0 || arg.size() < 2 || arg[0] != '-') {
      out.push_back(arg);
      continue;
    }
    if (arg == "--") {
      // Everything after is positional, as in absl.
      out.insert(out.end(), args.begin() + i, args.end());
      break;
    }
    absl::string_view body(arg);
    body.remove_prefix(absl::StartsWith(body, "--") ? 2 : 1);
    const size_t equals = body.find('=');
    const absl::string_view name = body.substr(0, equals);
    std::optional<std::string> value;
    if (equals != absl::string_view::npos) {
      value = std::string(body.substr(equals + 1));
    }
    if (IsBuiltinFlag(name)) {
      out.push_back(arg);
      continue;
    }

    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      const absl::CommandLineFlag* negated =
          absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) {
        if (value.has_value()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--", name, " takes no value"));
        }
        out.push_back(arg);
        continue;
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }

    const bool is_bool = flag->IsOfType<bool>();
    const bool value_in_next_arg = !value.has_value() && !is_bool;
    if (value_in_next_arg) {
      if (i + 1 == args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", name, " needs a value"));
      }
      value = args[++i];
    }

    const auto joined = absl::c_find(joined_flags, name);
    if (joined != joined_flags.end()) {
      const size_t index = joined - joined_flags.begin();
      joined_values[index].push_back(*value);
      if (!joined_slot[index].has_value()) {
        joined_slot[index] = out.size();
        out.emplace_back();  // filled in below
      }
      continue;
    }

    if (value.has_value()) {
      // ParseFrom sets the flag; harmless, as ParseCommandLine sets it again
      // to the same value.
      std::string error;
      if (!flag->ParseFrom(*value, &error)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "bad value \"", *value, "\" for --", name, ": ", error));
      }
    }
    // One "--name=value" argument, so that absl cannot mistake a value that
    // starts with '-' (a negative offset, "-inf") for a flag.
    out.push_back(value.has_value() ? absl::StrCat("--", name, "=", *value)
                                    : arg);
  }

  for (size_t f = 0; f < joined_flags.size(); ++f) {
    if (!joined_slot[f].has_value()) continue;
    out[*joined_slot[f]] =
        absl::StrCat("--", joined_flags[f], "=",
                     absl::StrJoin(joined_values[f], std::string(1, joiner)));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ParseArgs(
    int argc, char** argv, absl::Span<const absl::string_view> joined_flags,
    char joiner) {
  SAMPLER_ASSIGN_OR_RETURN(
      std::vector<std::string> args,
      PrepareArgs(std::vector<std::string>(argv, argv + argc), joined_flags,
                  joiner));
  std::vector<char*> prepared_argv;
  for (std::string& arg : args) prepared_argv.push_back(arg.data());
  prepared_argv.push_back(nullptr);
  const std::vector<char*> positional = absl::ParseCommandLine(
      static_cast<int>(args.size()), prepared_argv.data());
  return std::vector<std::string>(positional.begin(), positional.end());
}

bool WantsHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") return false;
    if (arg == "-h" || arg == "--help" || arg == "-help" ||
        arg == "--helpshort" || arg == "--helpfull") {
      return true;
    }
  }
  return false;
}

std::string FlagsHelp(absl::Span<const absl::string_view> files) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const std::string filename = flag->Filename();
    for (absl::string_view file : files) {
      if (absl::EndsWith(filename, file)) flags.push_back(flag);
    }
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string out;
  for (const absl::CommandLineFlag* flag : flags) {
    absl::StrAppend(&out, "  --", flag->Name(), " (", flag->Help(),
                    "); default: ", flag->DefaultValue(), "\n");
  }
  return out;
}

void ConfigureUsage(absl::string_view usage) {
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "client/");
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  config.normalize_filename = [](absl::string_view file) {
    const size_t start = file.rfind("client/");
    return std::string(start == absl::string_view::npos ? file
                                                        : file.substr(start));
  };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage);
}

}  // namespace sampler::client
