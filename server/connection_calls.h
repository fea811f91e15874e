// How many unary calls of each connection are in the server, and whether the
// connection multiplexes calls (issue 13: the CUDA backend's
// --gpu_inline=auto). A call is counted from its handler, just before it is
// queued, until its job is done (just before the reactor finishes it), so
// that the next call its client sends after the answer never sees it. A
// connection is its peer address (grpc's context->peer(), one per TCP
// connection), whatever client the queue budget names. (Over a unix socket
// every connection may have the same peer: they then count as one, which
// multiplexes, and auto runs nothing inline: the default's behaviour.)
//
// Why it is asked: a gRPC thread reads a connection's requests and runs their
// handlers one after another. Running a GPU batch on that thread
// (CudaBackend::RunHere) holds it for the batch's round trip; when the
// connection has other calls in the server its client multiplexes, and more
// of its requests may be waiting for that thread (16 connections x 16
// streams lost 0.86 -> 0.83 of the floor so; one call a connection gained
// 0.80 -> 0.92: bench/results/floor-h100-session8-2026-11-26.md). A call is
// lone when no other call of its connection is in the server and the
// connection has not had two at once within `multiplexed_window`: a
// multiplexing client whose calls all happen to be answered sends its next
// ones together, and the first of them to arrive would otherwise look
// alone while the others wait behind it.
//
// Sharded by peer so that gRPC's threads rarely meet on one lock. An entry
// lives while its connection has a call in the server or multiplexed within
// the window; entries past both are swept when a shard has doubled. The
// clock is read only for connections that multiplex.
#ifndef SAMPLER_SERVER_CONNECTION_CALLS_H_
#define SAMPLER_SERVER_CONNECTION_CALLS_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace sampler::server {

class ConnectionCalls {
 public:
  using Clock = std::chrono::steady_clock;

 private:
  struct Calls {
    int in_server = 0;
    // Until when the connection counts as multiplexing (it had two calls in
    // the server at once up to `window` before); the epoch: never did.
    Clock::time_point multiplexed_until{};
  };
  struct Shard;

 public:
  // What Leave needs of a counted call (a copyable value, so that a job's
  // done function can hold it).
  class Ticket {
   private:
    friend class ConnectionCalls;
    Shard* shard_ = nullptr;
    // The peer's entry; std::unordered_map keeps it at this address while
    // it exists, and it exists while this ticket's call is counted.
    std::pair<const std::string, Calls>* entry_ = nullptr;
  };
  struct Entered {
    Ticket ticket;
    int calls = 0;      // of `peer` in the server now, this one included
    bool lone = false;  // calls == 1 and not multiplexing (above)
  };

  // `now`: the clock (tests pass their own).
  explicit ConnectionCalls(
      std::chrono::nanoseconds multiplexed_window = std::chrono::seconds(1),
      std::function<Clock::time_point()> now = Clock::now)
      : window_(multiplexed_window), now_(std::move(now)) {}
  ConnectionCalls(const ConnectionCalls&) = delete;
  ConnectionCalls& operator=(const ConnectionCalls&) = delete;

  // Counts a call of `peer` in. Leave it exactly once with the ticket.
  Entered Enter(const std::string& peer);
  void Leave(const Ticket& ticket);

  // Calls of `peer` counted now (tests).
  int InServer(const std::string& peer) const;
  // Connections with an entry (tests: entries do not outlive their calls
  // and the window).
  size_t Connections() const;

 private:
  static constexpr size_t kShards = 16;
  static constexpr size_t kMinSweepSize = 64;
  struct alignas(64) Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, Calls> calls;
    size_t sweep_at = kMinSweepSize;  // sweep when calls grows to this
  };
  Shard& ShardOf(const std::string& peer);
  const Shard& ShardOf(const std::string& peer) const;
  // Erases the entries with no call in the server whose window has passed.
  static void SweepLocked(Shard& shard, Clock::time_point now);

  const std::chrono::nanoseconds window_;
  const std::function<Clock::time_point()> now_;
  std::array<Shard, kShards> shards_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CONNECTION_CALLS_H_
