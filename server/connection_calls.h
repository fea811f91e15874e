// How many unary calls of each connection are in the server (issue 13: the
// CUDA backend's --gpu_inline=auto). A call is counted from its handler, just
// before it is queued, until its job is done (just before the reactor
// finishes it), so that the next call its client sends after the answer
// never sees it. A connection is its peer address (grpc's context->peer(),
// one per TCP connection), whatever client the queue budget names.
//
// Why it is asked: a gRPC thread reads a connection's requests and runs their
// handlers one after another. Running a GPU batch on that thread
// (CudaBackend::RunHere) holds it for the batch's round trip; when the
// connection has other calls in the server its client multiplexes, and more
// of its requests may be waiting for that thread (16 connections x 16
// streams lost 0.86 -> 0.83 of the floor so; one call a connection gained
// 0.80 -> 0.92: bench/results/floor-h100-session8-2026-11-26.md). A call
// alone on its connection (Job::lone_call) holds up no other call of it.
//
// Sharded by peer so that gRPC's threads rarely meet on one lock; an entry
// lives while its connection has a call in the server.
#ifndef SAMPLER_SERVER_CONNECTION_CALLS_H_
#define SAMPLER_SERVER_CONNECTION_CALLS_H_

#include <array>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sampler::server {

class ConnectionCalls {
 private:
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
    std::pair<const std::string, int>* entry_ = nullptr;
  };
  struct Entered {
    Ticket ticket;
    int calls = 0;  // of `peer` in the server now, this one included
  };

  ConnectionCalls() = default;
  ConnectionCalls(const ConnectionCalls&) = delete;
  ConnectionCalls& operator=(const ConnectionCalls&) = delete;

  // Counts a call of `peer` in. Leave it exactly once with the ticket.
  Entered Enter(const std::string& peer);
  void Leave(const Ticket& ticket);

  // Calls of `peer` counted now (tests).
  int Calls(const std::string& peer) const;
  // Connections with a call counted now (tests: entries do not outlive
  // their calls).
  size_t Connections() const;

 private:
  static constexpr size_t kShards = 16;
  struct alignas(64) Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, int> calls;  // only peers with > 0
  };
  Shard& ShardOf(const std::string& peer);
  const Shard& ShardOf(const std::string& peer) const;

  std::array<Shard, kShards> shards_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CONNECTION_CALLS_H_
