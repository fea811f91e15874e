// Who closes the jobs that waited for a completing batch
// (server/waiting_close.h): the decision Batcher::Complete takes, and the
// --close_waiting values. The batcher's behaviour under it is in
// batcher_test (LeftToTheNextCall*).
#include "server/waiting_close.h"

#include <gtest/gtest.h>

namespace sampler::server {
namespace {

TEST(WaitingCloseTest, ParsesTheThreeModesAndNothingElse) {
  EXPECT_EQ(ParseWaitingClose("dispatcher"), WaitingClose::kDispatcher);
  EXPECT_EQ(ParseWaitingClose("completer"), WaitingClose::kCompleter);
  EXPECT_EQ(ParseWaitingClose("next_call"), WaitingClose::kNextCall);
  for (const char* bad :
       {"", "Dispatcher", "next", "worker", "completing", "next_call "}) {
    EXPECT_FALSE(ParseWaitingClose(bad).has_value()) << bad;
  }
}

TEST(WaitingCloseTest, OnlyJobsThatMayCloseNowAndNextCallBehindSmallBatches) {
  constexpr WaitingClose kDispatcher = WaitingClose::kDispatcher;
  constexpr WaitingClose kCompleter = WaitingClose::kCompleter;
  constexpr WaitingClose kNextCall = WaitingClose::kNextCall;
  struct Case {
    WaitingClose mode;
    bool jobs_wait;
    bool may_close;
    int64_t completed_items;
    WaitingClose closer;
  };
  const Case cases[] = {
      // The dispatcher mode: always the dispatcher.
      {kDispatcher, true, true, 256, kDispatcher},
      {kDispatcher, true, false, 256, kDispatcher},
      // Jobs that wait and may close now: as the mode says.
      {kCompleter, true, true, 256, kCompleter},
      {kNextCall, true, true, 256, kNextCall},
      {kNextCall, true, true, 16383, kNextCall},
      // Nothing waits: nothing to close (the batcher wakes no one).
      {kCompleter, false, true, 256, kDispatcher},
      {kNextCall, false, true, 256, kDispatcher},
      // They may not close yet (a batch still holds the kind's eager
      // slots): the dispatcher keeps their delay.
      {kCompleter, true, false, 256, kDispatcher},
      {kNextCall, true, false, 256, kDispatcher},
      // A large batch's done calls may be long: next_call leaves them to
      // the dispatcher; the completer closes them before its done calls.
      {kNextCall, true, true, 16384, kDispatcher},
      {kNextCall, true, true, 1 << 24, kDispatcher},
      {kCompleter, true, true, 1 << 24, kCompleter},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(
        WhoCloses(c.mode, c.jobs_wait, c.may_close, c.completed_items, 16384),
        c.closer)
        << static_cast<int>(c.mode) << " " << c.jobs_wait << " " << c.may_close
        << " " << c.completed_items;
  }
}

}  // namespace
}  // namespace sampler::server
