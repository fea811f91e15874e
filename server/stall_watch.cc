#include "server/stall_watch.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "server/thread_name.h"

namespace sampler::server {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

StallWatch::StallWatch(absl::Duration timeout) : timeout_(timeout) {
  if (timeout_ > absl::ZeroDuration()) {
    thread_ = std::thread([this] { Loop(); });
  }
}

StallWatch::~StallWatch() {
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StallWatch::Add(Stream* stream) {
  if (timeout_ <= absl::ZeroDuration()) return;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  streams_.insert(stream);
}

void StallWatch::Remove(Stream* stream) {
  if (timeout_ <= absl::ZeroDuration()) return;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  streams_.erase(stream);
}

void StallWatch::Loop() {
  NameThisThread("stall-watch");
  // A stall is seen between timeout and timeout + period after it began.
  const absl::Duration period =
      std::clamp(timeout_ / 4, absl::Milliseconds(5), absl::Seconds(1));
  const int64_t timeout_ns = absl::ToInt64Nanoseconds(timeout_);
  std::unique_lock<std::recursive_mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, absl::ToChronoNanoseconds(period));
    if (stop_) break;
    const int64_t now = NowNs();
    std::vector<std::pair<Stream*, int64_t>> stalled;
    for (Stream* stream : streams_) {
      const int64_t since = stream->WritePendingSinceNs();
      if (since != 0 && now - since >= timeout_ns) {
        stalled.emplace_back(stream, now - since);
      }
    }
    // Still under the lock, so no stream can be removed (and deleted) by
    // another thread meanwhile; one removed by an earlier CancelStalled on
    // this thread is skipped.
    for (const auto& [stream, ns] : stalled) {
      if (streams_.count(stream) == 0) continue;
      stream->CancelStalled(absl::Nanoseconds(ns));
    }
  }
}

}  // namespace sampler::server
