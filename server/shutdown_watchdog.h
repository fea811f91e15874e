// Bounds the time from SIGTERM to exit (issue 9 item 4). grpc::Server's
// Shutdown(deadline) cancels calls at the deadline but then waits for every
// reactor to finish, a batch that is executing cannot be interrupted, and
// the teardown after "stopped" (the metrics exposer's threads, gRPC's own)
// took 9 to 20 s more. The watchdog does not depend on any of it: armed at
// SIGTERM with drain delay + shutdown grace + a fixed margin, it logs why
// and ends the process with _exit once that much time has passed, unless
// Disarm came first. Calls in flight still complete meanwhile when they can.
#ifndef SAMPLER_SERVER_SHUTDOWN_WATCHDOG_H_
#define SAMPLER_SERVER_SHUTDOWN_WATCHDOG_H_

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/time.h"

namespace sampler::server {

// What the process is doing after SIGTERM, for the watchdog's log line and
// exit code.
enum class ShutdownPhase {
  kDraining = 0,        // NOT_SERVING, --drain_delay
  kFinishingCalls = 1,  // gRPC refuses new calls, waits for those in flight
  kRunningQueued = 2,   // the batchers run what was queued
  kReleasing = 3,       // everything answered; objects being destroyed
};

// The margin after --drain_delay + --shutdown_grace (stated in README.md).
inline constexpr absl::Duration kShutdownMargin = absl::Seconds(5);

class ShutdownWatchdog {
 public:
  ShutdownWatchdog() = default;
  // Disarms and joins.
  ~ShutdownWatchdog();
  ShutdownWatchdog(const ShutdownWatchdog&) = delete;
  ShutdownWatchdog& operator=(const ShutdownWatchdog&) = delete;

  // Starts the clock: after `limit` the process exits with _exit, code 0
  // when the phase is kReleasing (every call was answered) and 1 otherwise,
  // after logging the phase to stderr. Call once.
  void Arm(absl::Duration limit);
  void SetPhase(ShutdownPhase phase) { phase_.store(phase); }
  // The process is about to exit by itself: the watchdog stands down.
  void Disarm();

 private:
  void Watch(absl::Duration limit);

  std::atomic<ShutdownPhase> phase_{ShutdownPhase::kDraining};
  std::mutex mu_;
  std::condition_variable cv_;
  bool disarmed_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_SHUTDOWN_WATCHDOG_H_
