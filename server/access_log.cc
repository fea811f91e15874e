#include "server/access_log.h"

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace sampler::server {

absl::StatusOr<std::unique_ptr<AccessLog>> AccessLog::Open(
    const std::string& path) {
  if (path == "-")
    return std::unique_ptr<AccessLog>(new AccessLog(stderr, false));
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot open \"", path, "\" for appending: ", std::strerror(errno)));
  }
  return std::unique_ptr<AccessLog>(new AccessLog(file, true));
}

AccessLog::~AccessLog() {
  if (owned_) std::fclose(file_);
}

void AccessLog::Write(absl::string_view method, absl::string_view peer,
                      absl::string_view code, int64_t items, double seconds) {
  // Peer strings come from gRPC (ipv4:..., ipv6:[...]:..., unix:...); a
  // space or newline in one would break the one-line format, so they are
  // replaced.
  std::string clean(peer);
  for (char& c : clean) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') c = '_';
  }
  const std::string line =
      absl::StrFormat("%s method=%s peer=%s code=%s items=%d latency_s=%.6f\n",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(),
                                       absl::UTCTimeZone()),
                      method, clean, code, items, seconds);
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace sampler::server
