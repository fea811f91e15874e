// Who closes the jobs that waited for a batch of their kind to complete
// (--close_waiting), kept free of threads and CUDA so that the decision is
// tested on its own (tests/server/waiting_close_test.cc); the batcher
// (batcher.h, Batcher::Complete) acts on it.
//
// With --gpu_eager_batches=1 a call that arrives while its kind's batch runs
// queues; when that batch completes, the queued calls may close at once (the
// idle rule). Before session 10 the completing thread woke the batcher's
// dispatcher, which closed them and handed the batch to a stream's worker:
// two wake-ups on the way to the GPU and the batch's round trip and done
// calls on a worker. On a 16-core H100 host that was about half the
// batches at 64 connections x 1 stream, 17-19 us a call of worker CPU with
// --gpu_inline=auto (bench/results/cuda-inline-auto-h100-session9-
// 2026-11-26.md: threads-0911.md). Two other ways, neither waking the
// dispatcher for them:
// - `completer`: the completing thread closes them itself, before its done
//   calls, and hands the batch to the backend (Backend::Run: a stream's
//   worker), as the dispatcher would have: one wake-up less a batch.
// - `next_call`: they are left to the next call of the kind to arrive,
//   which closes them with itself on its gRPC thread (Batcher::Enqueue),
//   where --gpu_inline may run the batch without a hand-off; under load a
//   call arrives within microseconds (every 12 us at 80k calls a second).
//   So that no call waits on an arrival that does not come, the completing
//   thread closes them itself (Backend::Run) once `grace` has passed since
//   the completion, checked between its done calls, or when its done calls
//   have returned, whichever is first; and only behind a small batch, whose
//   done calls are short (a large answer's may take milliseconds).
#ifndef SAMPLER_SERVER_WAITING_CLOSE_H_
#define SAMPLER_SERVER_WAITING_CLOSE_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace sampler::server {

enum class WaitingClose {
  kDispatcher,  // the completing thread wakes the dispatcher (before 10)
  kCompleter,   // the completing thread, before its done calls
  kNextCall,    // the next call to arrive, else the completing thread
};

// "dispatcher", "completer" or "next_call"; nullopt for anything else.
inline std::optional<WaitingClose> ParseWaitingClose(absl::string_view name) {
  if (name == "dispatcher") return WaitingClose::kDispatcher;
  if (name == "completer") return WaitingClose::kCompleter;
  if (name == "next_call") return WaitingClose::kNextCall;
  return std::nullopt;
}

// Who closes the jobs queued behind a completing batch of
// `completed_items` work items, when `jobs_wait`: the dispatcher (woken),
// unless they may close now (the batcher's closing rules, `may_close`) and
// the mode says otherwise; `next_call` only behind a batch under
// `below_items`.
inline WaitingClose WhoCloses(WaitingClose mode, bool jobs_wait, bool may_close,
                              int64_t completed_items, int64_t below_items) {
  if (!jobs_wait || !may_close) return WaitingClose::kDispatcher;
  if (mode == WaitingClose::kNextCall && completed_items >= below_items) {
    return WaitingClose::kDispatcher;
  }
  return mode;
}

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_WAITING_CLOSE_H_
