// Cancels server streams whose client has stopped reading (issue 9 item 2).
//
// A stream's window bounds the bytes it holds (stream_reactor.h), but not
// how long it holds them: a client that opens a large stream and never reads
// keeps its pieces, and the call, until its deadline, which may be never. The
// watch looks at every registered stream a few times per timeout; one whose
// write has been pending (no progress: the client's flow-control window is
// full) for the whole --stream_stall_timeout is cancelled, logged and counted
// (sampler_streams_stalled_total). A client that reads, however slowly,
// completes a write now and then and is never cancelled.
#ifndef SAMPLER_SERVER_STALL_WATCH_H_
#define SAMPLER_SERVER_STALL_WATCH_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>

#include "absl/time/time.h"

namespace sampler::server {

// Nanoseconds on the steady clock; what Stream::WritePendingSinceNs uses.
int64_t NowNs();

class StallWatch {
 public:
  // A stream as the watch sees it. Both methods may be called from the
  // watch's thread at any time between Add and Remove.
  class Stream {
   public:
    virtual ~Stream() = default;
    // When the write in flight started (NowNs), or 0 when none is.
    virtual int64_t WritePendingSinceNs() const = 0;
    // Ends the stream: it made no write progress for `stalled_for`. May run
    // the stream's own gRPC callbacks (even its Remove) on this thread.
    virtual void CancelStalled(absl::Duration stalled_for) = 0;
  };

  // `timeout` <= 0: off (no thread; Add and Remove do nothing).
  explicit StallWatch(absl::Duration timeout);
  ~StallWatch();  // stops the thread; every stream must have been removed

  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  void Add(Stream* stream);
  // After Remove returns, the watch no longer touches `stream` (waits for a
  // CancelStalled of it that runs on another thread).
  void Remove(Stream* stream);

  absl::Duration timeout() const { return timeout_; }

 private:
  void Loop();

  const absl::Duration timeout_;
  // Recursive: CancelStalled, called under it, may end the call at once and
  // so run the stream's OnDone, hence Remove, on the watch's own thread.
  std::recursive_mutex mu_;
  std::condition_variable_any cv_;
  std::set<Stream*> streams_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_STALL_WATCH_H_
