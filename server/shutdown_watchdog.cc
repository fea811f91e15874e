#include "server/shutdown_watchdog.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "server/thread_name.h"

namespace sampler::server {
namespace {

const char* PhaseText(ShutdownPhase phase) {
  switch (phase) {
    case ShutdownPhase::kDraining:
      return "still reporting NOT_SERVING (--drain_delay)";
    case ShutdownPhase::kFinishingCalls:
      return "calls still in flight";
    case ShutdownPhase::kRunningQueued:
      return "queued work still running";
    case ShutdownPhase::kReleasing:
      return "every call answered, library teardown still running";
  }
  return "unknown phase";
}

}  // namespace

ShutdownWatchdog::~ShutdownWatchdog() {
  Disarm();
  if (thread_.joinable()) thread_.join();
}

void ShutdownWatchdog::Arm(absl::Duration limit) {
  if (thread_.joinable()) return;
  thread_ = std::thread([this, limit] { Watch(limit); });
}

void ShutdownWatchdog::Disarm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    disarmed_ = true;
  }
  cv_.notify_all();
}

void ShutdownWatchdog::Watch(absl::Duration limit) {
  NameThisThread("shutdown-watch");
  // The steady clock: a wall-clock step must not shorten or stretch the
  // bound.
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(limit);
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_until(lock, deadline, [this] { return disarmed_; })) return;
  const ShutdownPhase phase = phase_.load();
  const int code = phase == ShutdownPhase::kReleasing ? 0 : 1;
  // fprintf to stderr is unbuffered; flush stdout too, then leave without
  // running destructors (they are what may hang).
  std::fprintf(stderr,
               "sampler-server: shutdown watchdog: not exited %s after the "
               "signal (--drain_delay + --shutdown_grace + %s margin), %s: "
               "exiting now with code %d\n",
               absl::FormatDuration(limit).c_str(),
               absl::FormatDuration(kShutdownMargin).c_str(), PhaseText(phase),
               code);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

}  // namespace sampler::server
