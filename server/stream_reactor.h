// Streamed calls on gRPC's callback API: a write reactor that computes the
// request in device-sized pieces (one batched job each), keeps a small
// window of them in flight and writes each as messages of the client's
// size, in order (StreamReactor, below, says how and why); and the reactor
// that answers a refused stream (StreamRefusal). Both write raw messages
// (grpc::ByteBuffer): a message's values go out borrowed from its computed
// piece (wire_answer.h), never copied. The handlers that start them are in
// service.cc.
#ifndef SAMPLER_SERVER_STREAM_REACTOR_H_
#define SAMPLER_SERVER_STREAM_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/batcher.h"
#include "server/grpc_status.h"
#include "server/jobs.h"
#include "server/metrics.h"
#include "server/stall_watch.h"
#include "server/stream_chunk.h"
#include "server/wire_answer.h"

namespace sampler::server {

// The client's deadline on the server's monotonic clock (the unary handlers
// use it too).
Clock::time_point SteadyDeadline(const grpc::CallbackServerContext* context);

// Seconds from `start` to now.
double SecondsSince(Clock::time_point start);

// The status a stream cancelled for stalling ends with; written to stderr
// too, naming the RPC, since the client that stalled never reads it.
absl::Status StalledStreamStatus(const char* rpc, absl::Duration stalled_for);

// A streamed call refused before its first piece: finished at once with
// `status` (no message), deleted when gRPC is done with it. The caller
// counts and logs the call.
class StreamRefusal : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  static grpc::ServerWriteReactor<grpc::ByteBuffer>* Finished(
      const absl::Status& status) {
    auto* refusal = new StreamRefusal;
    refusal->Finish(ToGrpcStatus(status));
    return refusal;
  }

  void OnDone() override { delete this; }

 private:
  StreamRefusal() = default;
};

// Test seam (stream_reactor_test): when set, called by every PieceDone
// after it has released the reactor's lock and before it acts, with whether
// it has nothing left to do (then other threads may end the stream
// meanwhile), so that a test can hold it there while the stream ends.
inline std::atomic<void (*)(bool idle)> piece_done_unlocked_for_test{nullptr};

// Streamed calls. Message size is a wire concern, not a unit of work: the
// answer is computed in pieces sized for the device (StreamPlan: about
// target_chunk_bytes each, ONE batched job per piece), and each computed
// piece is cut into messages of the client's size as it is written. At most
// kWindow pieces are queued, computing or waiting to be written at a time,
// so the bytes a stream holds are bounded whatever the request's size and
// however slowly its client reads: kWindow pieces, each at most
// min(target_chunk_bytes, max_message_bytes / 2) as estimated (4 MiB with
// the defaults, so 8 MiB); a message is written from its piece's memory
// (PieceToWire, wire_answer.h: the values borrowed, not copied, so gRPC's
// reference keeps the piece until the message is sent). Messages are written
// in order, one at a time. Finish is called only once no piece job is
// outstanding. A client that stops reading is cancelled by the StallWatch
// after --stream_stall_timeout without write progress.
//
// Lifetime: the reactor is shared, held by itself until gRPC's OnDone and by
// each piece job's done callback (Start). A piece's PieceDone can still be
// on its way out, the lock released, when another thread finishes the stream
// and gRPC calls OnDone; the reactor must outlive that call, so OnDone only
// drops its own reference, and the last holder frees it.
template <typename JobT, typename ChunkResponse>
class StreamReactor
    : public grpc::ServerWriteReactor<grpc::ByteBuffer>,
      public StallWatch::Stream,
      public std::enable_shared_from_this<StreamReactor<JobT, ChunkResponse>> {
 public:
  using SliceFn = std::function<std::shared_ptr<JobT>(
      const JobT& whole, int64_t first, int64_t count, ChunkResponse* piece)>;
  // The message of a piece's units [first, first + count) (PieceToWire).
  using WireFn = bool (*)(std::shared_ptr<const ChunkResponse> piece,
                          int64_t first, int64_t count, grpc::ByteBuffer* wire);

  static constexpr int kWindow = 2;

  // Creates the reactor for a call and queues its first pieces; gRPC takes
  // the returned pointer (the reactor frees itself, see Lifetime above).
  template <typename... Args>
  static StreamReactor* Start(Args&&... args) {
    std::shared_ptr<StreamReactor> reactor(
        new StreamReactor(std::forward<Args>(args)...));
    reactor->self_ = reactor;
    Actions actions;
    {
      std::lock_guard<std::mutex> lock(reactor->mu_);
      reactor->Plan(actions);
    }
    reactor->Perform(actions);
    return reactor.get();
  }

  void OnWriteDone(bool ok) override {
    write_since_ns_.store(0, std::memory_order_relaxed);
    Actions actions;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      wire_.Clear();
      next_offset_ += writing_units_;
      if (next_offset_ >= PieceUnits(next_piece_)) {
        ready_.erase(next_piece_++);
        next_offset_ = 0;
      }
      if (!ok && failure_.ok()) {
        failure_ = absl::CancelledError("the client went away");
        cancelled_ = true;
      }
      Plan(actions);
    }
    Perform(actions);
  }

  void OnCancel() override { cancelled_ = true; }

  void OnDone() override {
    watch_->Remove(this);
    metrics_->AddInflight(-1);
    // Frees the reactor here unless a piece job still holds it; moved out
    // first, so that self_ is not being reset while the reactor is freed.
    std::shared_ptr<StreamReactor> last = std::move(self_);
  }

  // StallWatch::Stream.
  int64_t WritePendingSinceNs() const override {
    return write_since_ns_.load(std::memory_order_relaxed);
  }
  void CancelStalled(absl::Duration stalled_for) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_ || stalled_) return;
      stalled_ = true;
      const absl::Status stalled = StalledStreamStatus(rpc_, stalled_for);
      if (failure_.ok()) failure_ = stalled;
    }
    metrics_->StreamStalled(rpc_);
    cancelled_ = true;
    // The pending write cannot complete while the client reads nothing (and
    // a status would queue behind it); cancelling the call ends the write
    // with ok = false, and the stream then finishes with failure_.
    context_->TryCancel();
  }

 private:
  StreamReactor(const char* rpc, grpc::CallbackServerContext* context,
                std::shared_ptr<JobT> whole, int64_t units, StreamPlan plan,
                SliceFn slice, WireFn to_wire, Batcher<JobT>* batcher,
                Metrics* metrics, StallWatch* watch,
                std::function<void(const absl::Status&, double)> on_finish = {})
      : on_finish_(std::move(on_finish)),
        rpc_(rpc),
        context_(context),
        metrics_(metrics),
        watch_(watch),
        start_(Clock::now()),
        deadline_(SteadyDeadline(context)),
        whole_(std::move(whole)),
        total_(units),
        piece_units_(std::max<int64_t>(1, plan.piece)),
        message_units_(std::clamp<int64_t>(plan.message, 1,
                                           std::max<int64_t>(1, plan.piece))),
        pieces_((total_ + piece_units_ - 1) / piece_units_),
        slice_(std::move(slice)),
        to_wire_(to_wire),
        batcher_(batcher) {
    metrics_->AddInflight(1);
    watch_->Add(this);
  }

  struct Actions {
    std::vector<std::pair<int64_t, std::shared_ptr<JobT>>> submit;
    // Write units [write_first, write_first + write_count) of this piece.
    std::shared_ptr<const ChunkResponse> write;
    int64_t write_first = 0;
    int64_t write_count = 0;
    bool finish = false;
    absl::Status finish_status;
  };

  int64_t PieceUnits(int64_t piece) const {
    return std::min(piece_units_, total_ - piece * piece_units_);
  }

  // Decides, under the lock, what to do next; Perform does it unlocked
  // (gRPC operations and queueing must not run under our mutex).
  void Plan(Actions& actions) {
    if (finished_) return;
    if (!failure_.ok() || cancelled_) {
      if (failure_.ok())
        failure_ = absl::CancelledError("cancelled by the client");
      if (!writing_ && outstanding_ == 0) {
        finished_ = true;
        actions.finish = true;
        actions.finish_status = failure_;
      }
      return;
    }
    if (!writing_) {
      auto it = ready_.find(next_piece_);
      if (it != ready_.end()) {
        const int64_t units = PieceUnits(next_piece_);
        const int64_t count = std::min(message_units_, units - next_offset_);
        writing_ = true;
        writing_units_ = count;
        // The piece is not changed once computed, so Perform may read it
        // unlocked (and gRPC, until it has sent the message).
        actions.write = it->second;
        actions.write_first = next_offset_;
        actions.write_count = count;
      }
    }
    while (next_submit_ < pieces_ &&
           outstanding_ + static_cast<int64_t>(ready_.size()) < kWindow) {
      const int64_t index = next_submit_++;
      const int64_t first = index * piece_units_;
      auto piece = std::make_shared<ChunkResponse>();
      std::shared_ptr<JobT> job =
          slice_(*whole_, first, PieceUnits(index), piece.get());
      if (job == nullptr) {  // cannot happen: pieces tile the request
        failure_ = absl::InternalError("stream piece out of range");
        Plan(actions);
        return;
      }
      job->deadline = deadline_;
      // Asked only while the job is queued (outstanding_ counts it).
      job->cancelled = [this] { return cancelled_.load(); };
      // Holds the reactor: see Lifetime above.
      job->done = [self = this->shared_from_this(),
                   index](absl::Status status) {
        self->PieceDone(index, std::move(status));
      };
      pending_[index] = std::move(piece);
      ++outstanding_;
      actions.submit.emplace_back(index, std::move(job));
    }
    if (next_piece_ == pieces_ && !writing_ && outstanding_ == 0) {
      finished_ = true;
      actions.finish = true;
      actions.finish_status = absl::OkStatus();
    }
  }

  void Perform(Actions& actions) {
    bool refused = false;
    for (auto& [index, job] : actions.submit) {
      // Later pieces were promised when the first was accepted. Once a
      // piece is refused (the first one, submitted together with the
      // second), the rest of this submission is not queued: the stream
      // fails at once instead of after computing pieces nobody will get.
      absl::Status queued =
          refused ? absl::CancelledError("an earlier piece was refused")
                  : batcher_->Enqueue(job, /*admitted_stream_chunk=*/index > 0);
      if (!queued.ok()) {
        refused = true;
        PieceDone(index, std::move(queued));
      }
    }
    if (actions.write != nullptr) {
      // wire_ is this writer's alone until OnWriteDone (writing_).
      if (!to_wire_(std::move(actions.write), actions.write_first,
                    actions.write_count, &wire_)) {
        // Cannot happen (messages tile their piece); fail the stream rather
        // than send a wrong message.
        Actions after;
        {
          std::lock_guard<std::mutex> lock(mu_);
          writing_ = false;
          if (failure_.ok()) {
            failure_ = absl::InternalError("stream message out of range");
          }
          Plan(after);
        }
        Perform(after);
      } else {
        write_since_ns_.store(std::max<int64_t>(NowNs(), 1),
                              std::memory_order_relaxed);
        this->StartWrite(&wire_);
      }
    }
    if (actions.finish) {
      metrics_->RequestDone(rpc_, CodeName(actions.finish_status),
                            SecondsSince(start_));
      if (on_finish_) on_finish_(actions.finish_status, SecondsSince(start_));
      this->Finish(ToGrpcStatus(actions.finish_status));
    }
  }

  void PieceDone(int64_t index, absl::Status status) {
    Actions actions;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --outstanding_;
      auto it = pending_.find(index);
      if (status.ok()) {
        ready_[index] = std::move(it->second);
      } else if (failure_.ok()) {
        failure_ = std::move(status);
      }
      pending_.erase(it);
      Plan(actions);
    }
    if (auto* hook = piece_done_unlocked_for_test.load()) {
      hook(actions.submit.empty() && actions.write == nullptr &&
           !actions.finish);
    }
    Perform(actions);
  }

  // Refusal counting and the access log (set by ServeStream, service.cc);
  // first, as the constructor may already finish the call.
  const std::function<void(const absl::Status&, double)> on_finish_;
  const char* const rpc_;
  grpc::CallbackServerContext* const context_;
  Metrics* const metrics_;
  StallWatch* const watch_;
  const Clock::time_point start_;
  const Clock::time_point deadline_;
  const std::shared_ptr<JobT> whole_;
  const int64_t total_;          // stream units: rows, samples or positions
  const int64_t piece_units_;    // units per computed piece (one job)
  const int64_t message_units_;  // units per message (divides piece_units_)
  const int64_t pieces_;
  const SliceFn slice_;
  const WireFn to_wire_;
  Batcher<JobT>* const batcher_;
  // The reactor's own reference, from Start until OnDone.
  std::shared_ptr<StreamReactor> self_;

  std::atomic<bool> cancelled_{false};
  // When the write in flight started (NowNs), 0 when none is.
  std::atomic<int64_t> write_since_ns_{0};
  std::mutex mu_;
  std::map<int64_t, std::shared_ptr<ChunkResponse>> pending_;  // queued
  std::map<int64_t, std::shared_ptr<ChunkResponse>> ready_;    // computed
  grpc::ByteBuffer wire_;    // the message being written
  int64_t next_submit_ = 0;  // next piece to queue
  int64_t next_piece_ = 0;   // piece being written
  int64_t next_offset_ = 0;  // its units already written
  int64_t writing_units_ = 0;
  int64_t outstanding_ = 0;
  bool writing_ = false;
  bool finished_ = false;
  bool stalled_ = false;
  absl::Status failure_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_STREAM_REACTOR_H_
