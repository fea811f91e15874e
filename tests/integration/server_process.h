// A sampler-server child process for integration tests: started with the
// test's flags on 127.0.0.1 (a gRPC port the server picks, a metrics port
// picked here), ready once it prints "serving on port N", stopped with
// SIGTERM (and SIGKILL if it does not exit in time, so that no test hangs).
// Its stderr is collected (and echoed, prefixed, to the test's stderr) so
// that a test can wait for a line and a failure shows what the server said.
#ifndef SAMPLER_TESTS_INTEGRATION_SERVER_PROCESS_H_
#define SAMPLER_TESTS_INTEGRATION_SERVER_PROCESS_H_

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace sampler::testing {

class ServerProcess {
 public:
  // Starts `binary` with `flags` plus --listen 127.0.0.1:0 and
  // --metrics_listen 127.0.0.1:<a free port>, and waits up to `timeout` for
  // "serving on port N". A start that fails because the metrics port was
  // taken in the meantime is retried with another port (a few times).
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& binary, const std::vector<std::string>& flags,
      absl::Duration timeout = absl::Seconds(30));

  // Kills the process if it still runs (tests should Stop it and check the
  // exit code first).
  ~ServerProcess();

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  // "127.0.0.1:N", for grpc::CreateChannel.
  std::string address() const;
  pid_t pid() const { return pid_; }

  // Sends `signal` to the process (if it has not been reaped).
  void Signal(int signal);

  // Waits up to `timeout` for the process to exit. Its exit code, or
  // 128 + the signal that killed it; nullopt if it still runs.
  std::optional<int> Wait(absl::Duration timeout);

  // SIGTERM, then waits up to `grace` for the exit; SIGKILL after that (and
  // the result says so: 128 + 9). Returns the exit code as Wait does.
  int Stop(absl::Duration grace = absl::Seconds(30));

  // Whether stderr has contained `needle`, waiting up to `timeout` for it.
  bool WaitForStderr(absl::string_view needle, absl::Duration timeout);
  std::string Stderr() const;

 private:
  ServerProcess() = default;

  // One attempt of Start with a given metrics port.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> StartOnce(
      const std::string& binary, const std::vector<std::string>& flags,
      int metrics_port, absl::Duration timeout);

  void ReadStderr(int fd);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string stderr_;       // guarded by mu_
  bool stderr_eof_ = false;  // guarded by mu_
  std::thread reader_;
};

// A port on 127.0.0.1 that was free a moment ago: bound to port 0, read
// back and released. Another process may take it before it is used; callers
// that can tell (ServerProcess::Start) retry.
absl::StatusOr<int> PickFreePort();

}  // namespace sampler::testing

#endif  // SAMPLER_TESTS_INTEGRATION_SERVER_PROCESS_H_
