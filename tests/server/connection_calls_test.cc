// The count of each connection's unary calls in the server
// (server/connection_calls.h): what a call sees when it enters, that an
// entry goes when its last call leaves, and the count under gRPC-like
// concurrency (many threads entering and leaving the same and different
// peers; run under ThreadSanitizer in CI).
#include "server/connection_calls.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace sampler::server {
namespace {

TEST(ConnectionCallsTest, CountsEachPeersCallsInTheServer) {
  ConnectionCalls calls;
  const std::string a = "ipv4:127.0.0.1:40001";
  const std::string b = "ipv4:127.0.0.1:40002";
  const ConnectionCalls::Entered first = calls.Enter(a);
  EXPECT_EQ(first.calls, 1);  // alone on its connection
  const ConnectionCalls::Entered other = calls.Enter(b);
  EXPECT_EQ(other.calls, 1);  // another connection's calls do not count
  const ConnectionCalls::Entered second = calls.Enter(a);
  EXPECT_EQ(second.calls, 2);
  EXPECT_EQ(calls.Calls(a), 2);
  EXPECT_EQ(calls.Connections(), 2u);

  calls.Leave(first.ticket);
  EXPECT_EQ(calls.Calls(a), 1);
  calls.Leave(second.ticket);
  EXPECT_EQ(calls.Calls(a), 0);
  EXPECT_EQ(calls.Connections(), 1u);  // no entry outlives its calls
  // The next call of `a` (its client's next request) is alone again.
  const ConnectionCalls::Entered next = calls.Enter(a);
  EXPECT_EQ(next.calls, 1);
  calls.Leave(next.ticket);
  calls.Leave(other.ticket);
  EXPECT_EQ(calls.Connections(), 0u);
  // A ticket of no call leaves nothing.
  calls.Leave(ConnectionCalls::Ticket());
  EXPECT_EQ(calls.Connections(), 0u);
}

// Threads stand for gRPC's: each enters and leaves calls of a few peers, some
// peers shared between threads (a connection's calls run on any thread).
// Every count a call sees is at least 1 and at most the calls that could be
// in at once; at the end nothing is counted.
TEST(ConnectionCallsTest, ManyThreadsEnteringAndLeaving) {
  ConnectionCalls calls;
  constexpr int kThreads = 8;
  constexpr int kPeers = 5;
  constexpr int kRounds = 2000;
  constexpr int kHeld = 3;  // calls a thread keeps in at once
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&calls, &bad, t] {
      std::vector<ConnectionCalls::Ticket> held;
      for (int r = 0; r < kRounds; ++r) {
        const std::string peer =
            "ipv6:[::1]:" + std::to_string(50000 + (t + r) % kPeers);
        const ConnectionCalls::Entered entered = calls.Enter(peer);
        if (entered.calls < 1 || entered.calls > kThreads * kHeld) ++bad;
        held.push_back(entered.ticket);
        if (held.size() == kHeld) {
          for (const ConnectionCalls::Ticket& ticket : held)
            calls.Leave(ticket);
          held.clear();
        }
      }
      for (const ConnectionCalls::Ticket& ticket : held) calls.Leave(ticket);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(calls.Connections(), 0u);
}

}  // namespace
}  // namespace sampler::server
