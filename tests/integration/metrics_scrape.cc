#include "tests/integration/metrics_scrape.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace sampler::testing {
namespace {

// A scrape of this service is tens of kilobytes; this only stops a runaway.
constexpr size_t kMaxResponseBytes = size_t{64} << 20;

// A TCP socket to 127.0.0.1:port with send and receive timeouts, or -1
// (errno tells why).
int ConnectLoopback(int port, absl::Duration timeout) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::string> HttpGet(int port, absl::string_view path,
                                    absl::Duration timeout) {
  const int fd = ConnectLoopback(port, timeout);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("connect 127.0.0.1:", port, ": ", std::strerror(errno)));
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1:", port,
                   "\r\nConnection: close\r\n\r\n");
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n =
        send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      close(fd);
      return absl::UnavailableError(
          absl::StrCat("send: ", std::strerror(error)));
    }
    sent += static_cast<size_t>(n);
  }
  // Read to the end: HTTP/1.0 closes the connection after the body. Each
  // read is bounded by SO_RCVTIMEO, the whole by `deadline`.
  const absl::Time deadline = absl::Now() + timeout;
  std::string response;
  char buf[16384];
  for (;;) {
    if (absl::Now() > deadline || response.size() > kMaxResponseBytes) {
      close(fd);
      return absl::DeadlineExceededError(
          absl::StrCat("GET ", path, ": no complete answer in ",
                       absl::FormatDuration(timeout)));
    }
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      return absl::UnavailableError(
          absl::StrCat("recv: ", std::strerror(error)));
    }
    if (n == 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t header_end = response.find("\r\n\r\n");
  if (header_end == std::string::npos) {
    return absl::DataLossError(absl::StrCat("GET ", path, ": no headers in ",
                                            response.size(), " bytes"));
  }
  const absl::string_view status_line =
      absl::string_view(response).substr(0, response.find("\r\n"));
  // "HTTP/1.1 200 OK"
  const std::vector<absl::string_view> words = absl::StrSplit(status_line, ' ');
  if (words.size() < 2 || words[1] != "200") {
    return absl::UnavailableError(
        absl::StrCat("GET ", path, ": ", status_line));
  }
  return response.substr(header_end + 4);
}

bool ConnectionRefused(int port) {
  const int fd = ConnectLoopback(port, absl::Seconds(1));
  if (fd >= 0) {
    close(fd);
    return false;
  }
  return errno == ECONNREFUSED;
}

MetricsText::MetricsText(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      // "# TYPE name type"
      const std::vector<absl::string_view> words =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (words.size() == 4 && words[1] == "TYPE") {
        families_[std::string(words[2])] = std::string(words[3]);
      }
      continue;
    }
    // Label values of this service hold no spaces: the value follows the
    // last one.
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    const std::string value(line.substr(space + 1));
    samples_[std::string(line.substr(0, space))] =
        std::strtod(value.c_str(), nullptr);
  }
}

std::optional<double> MetricsText::Value(absl::string_view series) const {
  auto it = samples_.find(series);
  if (it == samples_.end()) return std::nullopt;
  return it->second;
}

double MetricsText::ValueOr0(absl::string_view series) const {
  return Value(series).value_or(0);
}

bool MetricsText::HasFamily(absl::string_view name) const {
  return families_.find(name) != families_.end();
}

std::string MetricsText::FamilyType(absl::string_view name) const {
  auto it = families_.find(name);
  return it == families_.end() ? "" : it->second;
}

}  // namespace sampler::testing
