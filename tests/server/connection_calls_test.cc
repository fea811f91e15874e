// The count of each connection's unary calls in the server
// (server/connection_calls.h): what a call sees when it enters, that a
// connection which had two calls at once stays "multiplexing" for the
// window, that entries go when their calls and window have, and the count
// under gRPC-like concurrency (many threads entering and leaving the same
// and different peers; run under ThreadSanitizer in CI).
#include "server/connection_calls.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace sampler::server {
namespace {

using std::chrono::milliseconds;

// A clock the test moves.
struct FakeClock {
  ConnectionCalls::Clock::time_point now =
      ConnectionCalls::Clock::time_point{} + std::chrono::hours(1);
  std::function<ConnectionCalls::Clock::time_point()> Fn() {
    return [this] { return now; };
  }
};

TEST(ConnectionCallsTest, CountsEachPeersCallsInTheServer) {
  FakeClock clock;
  ConnectionCalls calls(milliseconds(100), clock.Fn());
  const std::string a = "ipv4:127.0.0.1:40001";
  const std::string b = "ipv4:127.0.0.1:40002";
  const ConnectionCalls::Entered first = calls.Enter(a);
  EXPECT_EQ(first.calls, 1);
  EXPECT_TRUE(first.lone);
  const ConnectionCalls::Entered other = calls.Enter(b);
  EXPECT_EQ(other.calls, 1);  // another connection's calls do not count
  EXPECT_TRUE(other.lone);
  calls.Leave(other.ticket);
  EXPECT_EQ(calls.Connections(), 1u);  // b never multiplexed: forgotten
  const ConnectionCalls::Entered second = calls.Enter(a);
  EXPECT_EQ(second.calls, 2);
  EXPECT_FALSE(second.lone);
  EXPECT_EQ(calls.InServer(a), 2);

  calls.Leave(first.ticket);
  EXPECT_EQ(calls.InServer(a), 1);
  calls.Leave(second.ticket);
  EXPECT_EQ(calls.InServer(a), 0);
  // a multiplexed: within the window its next call is not lone, though
  // alone in the server (its client may be sending the others).
  clock.now += milliseconds(99);
  const ConnectionCalls::Entered soon = calls.Enter(a);
  EXPECT_EQ(soon.calls, 1);
  EXPECT_FALSE(soon.lone);
  calls.Leave(soon.ticket);
  // After the window it is lone again, and forgotten when it leaves.
  clock.now += milliseconds(2);
  const ConnectionCalls::Entered later = calls.Enter(a);
  EXPECT_EQ(later.calls, 1);
  EXPECT_TRUE(later.lone);
  calls.Leave(later.ticket);
  EXPECT_EQ(calls.Connections(), 0u);
  // A ticket of no call leaves nothing.
  calls.Leave(ConnectionCalls::Ticket());
  EXPECT_EQ(calls.Connections(), 0u);
}

// Connections that multiplexed and went away are swept once their window
// has passed and their shard has grown: the entries stay bounded.
TEST(ConnectionCallsTest,
     ForgetsConnectionsThatMultiplexedOnceTheWindowPasses) {
  FakeClock clock;
  ConnectionCalls calls(milliseconds(10), clock.Fn());
  for (int round = 0; round < 50; ++round) {
    for (int port = 0; port < 100; ++port) {
      const std::string peer =
          "ipv4:127.0.0.1:" + std::to_string(10000 + round * 100 + port);
      const ConnectionCalls::Entered one = calls.Enter(peer);
      const ConnectionCalls::Entered two = calls.Enter(peer);
      EXPECT_FALSE(two.lone);
      calls.Leave(one.ticket);
      calls.Leave(two.ticket);
    }
    clock.now += milliseconds(20);
  }
  // 5,000 connections came and went; at most about two rounds' worth (the
  // last, within its window, and what the shards had not yet swept) stay.
  EXPECT_LE(calls.Connections(), 16u * 64 + 200);
}

// Threads stand for gRPC's: each enters and leaves calls of a few peers, some
// peers shared between threads (a connection's calls run on any thread).
// Every count a call sees is at least 1 and at most the calls that could be
// in at once; at the end no call is counted.
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
        if (entered.lone && entered.calls != 1) ++bad;
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
  for (int p = 0; p < kPeers; ++p) {
    EXPECT_EQ(calls.InServer("ipv6:[::1]:" + std::to_string(50000 + p)), 0);
  }
}

}  // namespace
}  // namespace sampler::server
