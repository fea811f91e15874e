#include "server/stream_reactor.h"

#include <chrono>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"

namespace sampler::server {

Clock::time_point SteadyDeadline(const grpc::CallbackServerContext* context) {
  const auto deadline = context->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return Clock::time_point::max();
  }
  const auto left = deadline - std::chrono::system_clock::now();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(left);
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

absl::Status StalledStreamStatus(const char* rpc, absl::Duration stalled_for) {
  const absl::Status stalled = absl::CancelledError(
      absl::StrCat("stream stalled: the client read nothing for ",
                   absl::FormatDuration(stalled_for),
                   " (--stream_stall_timeout); cancelled by the server"));
  std::fprintf(stderr, "sampler-server: %s: %s\n", rpc,
               std::string(stalled.message()).c_str());
  return stalled;
}

}  // namespace sampler::server
