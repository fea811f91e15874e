#include "tests/integration/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace sampler::testing {
namespace {

constexpr char kServingOn[] = "serving on port ";
constexpr size_t kServingOnSize = sizeof(kServingOn) - 1;
// What main.cc prints when the metrics exposer cannot listen.
constexpr char kMetricsRefused[] = "cannot serve metrics";
constexpr int kStartAttempts = 4;

// The port after "serving on port " once its digits are complete (followed
// by another character), or 0.
int ParsePort(const std::string& text) {
  const size_t at = text.find(kServingOn);
  if (at == std::string::npos) return 0;
  size_t end = at + kServingOnSize;
  while (end < text.size() && absl::ascii_isdigit(text[end])) ++end;
  if (end == text.size()) return 0;  // the line may not be complete yet
  int port = 0;
  if (!absl::SimpleAtoi(absl::string_view(text).substr(
                            at + kServingOnSize, end - at - kServingOnSize),
                        &port)) {
    return 0;
  }
  return port;
}

}  // namespace

absl::StatusOr<int> PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int error = errno;
    close(fd);
    return absl::InternalError(
        absl::StrCat("bind 127.0.0.1:0: ", std::strerror(error)));
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::string& binary, const std::vector<std::string>& flags,
    absl::Duration timeout) {
  absl::Status last;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    absl::StatusOr<int> metrics_port = PickFreePort();
    if (!metrics_port.ok()) return metrics_port.status();
    absl::StatusOr<std::unique_ptr<ServerProcess>> server =
        StartOnce(binary, flags, *metrics_port, timeout);
    if (server.ok() ||
        !absl::StrContains(server.status().message(), kMetricsRefused)) {
      return server;
    }
    last = server.status();  // the port was taken meanwhile: another one
  }
  return last;
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::StartOnce(
    const std::string& binary, const std::vector<std::string>& flags,
    int metrics_port, absl::Duration timeout) {
  std::vector<std::string> args = {
      binary, "--listen=127.0.0.1:0",
      absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port)};
  args.insert(args.end(), flags.begin(), flags.end());
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls.
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(error)));
  }
  if (pid == 0) {
    // The server must not outlive a test binary that crashes or is killed.
    // (PR_SET_PDEATHSIG fires when the forking thread exits: Start is
    // called from the test's main thread.)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);

  std::unique_ptr<ServerProcess> server(new ServerProcess());
  server->pid_ = pid;
  server->metrics_port_ = metrics_port;
  server->reader_ =
      std::thread([s = server.get(), fd = pipe_fds[0]] { s->ReadStderr(fd); });

  // Ready when the port is printed; failed when the output ends first.
  int port = 0;
  {
    std::unique_lock<std::mutex> lock(server->mu_);
    server->cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] {
      port = ParsePort(server->stderr_);
      return port != 0 || server->stderr_eof_;
    });
  }
  if (port == 0) {
    const std::optional<int> code = server->Wait(absl::Seconds(5));
    const std::string exit_text =
        code.has_value()
            ? absl::StrCat("exited with ", *code)
            : absl::StrCat("not ready after ", absl::FormatDuration(timeout));
    return absl::UnavailableError(absl::StrCat(
        binary, " ", exit_text, "; its output:\n", server->Stderr()));
  }
  server->port_ = port;
  return server;
}

ServerProcess::~ServerProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    // SIGKILL cannot be ignored: this returns once the kernel has reaped.
    for (int i = 0; i < 1000 && waitpid(pid_, &status, 0) < 0 && errno == EINTR;
         ++i) {
    }
    reaped_ = true;
  }
  // The pipe ends with the process.
  if (reader_.joinable()) reader_.join();
}

std::string ServerProcess::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

void ServerProcess::Signal(int signal) {
  if (!reaped_ && pid_ > 0) kill(pid_, signal);
}

std::optional<int> ServerProcess::Wait(absl::Duration timeout) {
  if (reaped_) return exit_code_;
  const absl::Time deadline = absl::Now() + timeout;
  // No portable way to wait for a child with a timeout: poll every 2 ms
  // (the count is a second bound, should the clock misbehave).
  const int64_t polls = absl::ToInt64Milliseconds(timeout) / 2 + 2;
  for (int64_t i = 0; i < polls; ++i) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      exit_code_ = WIFEXITED(status)     ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                         : -1;
      return exit_code_;
    }
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (absl::Now() >= deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return std::nullopt;
}

int ServerProcess::Stop(absl::Duration grace) {
  Signal(SIGTERM);
  if (std::optional<int> code = Wait(grace)) return *code;
  std::fprintf(stderr, "sampler-server %d: no exit %s after SIGTERM: SIGKILL\n",
               static_cast<int>(pid_), absl::FormatDuration(grace).c_str());
  Signal(SIGKILL);
  return Wait(absl::Seconds(30)).value_or(-1);
}

bool ServerProcess::WaitForStderr(absl::string_view needle,
                                  absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                      [&] { return absl::StrContains(stderr_, needle); });
}

std::string ServerProcess::Stderr() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stderr_;
}

void ServerProcess::ReadStderr(int fd) {
  char buf[4096];
  std::string line;
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stderr_.append(buf, static_cast<size_t>(n));
    }
    cv_.notify_all();
    // Echo whole lines, marked, so that a test log shows the server's side.
    line.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = line.find('\n')) != std::string::npos;) {
      std::fprintf(stderr, "[server %d] %s\n", static_cast<int>(pid_),
                   line.substr(0, nl).c_str());
      line.erase(0, nl + 1);
    }
  }
  if (!line.empty()) {
    std::fprintf(stderr, "[server %d] %s\n", static_cast<int>(pid_),
                 line.c_str());
  }
  close(fd);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stderr_eof_ = true;
  }
  cv_.notify_all();
}

}  // namespace sampler::testing
