// Who closes the jobs that waited for a completing batch
// (server/waiting_close.h): the decision Batcher::Complete takes, and the
// --close_waiting values. The batcher's behaviour under it is in
// batcher_test (LeftToTheNextCall*).
#include "server/waiting_close.h"

#include <gtest/gtest.h>

namespace sampler::server {
namespace {

TEST(WaitingCloseTest, ParsesTheTwoModesAndNothingElse) {
  EXPECT_EQ(ParseWaitingClose("dispatcher"), WaitingClose::kDispatcher);
  EXPECT_EQ(ParseWaitingClose("next_call"), WaitingClose::kNextCall);
  for (const char* bad : {"", "Dispatcher", "next", "worker", "next_call "}) {
    EXPECT_FALSE(ParseWaitingClose(bad).has_value()) << bad;
  }
}

TEST(WaitingCloseTest, LeavesOnlyClosableJobsBehindSmallBatches) {
  struct Case {
    WaitingClose mode;
    bool jobs_wait;
    bool may_close;
    int64_t completed_items;
    bool left;
  };
  const Case cases[] = {
      // The dispatcher mode never leaves them.
      {WaitingClose::kDispatcher, true, true, 256, false},
      {WaitingClose::kDispatcher, true, false, 256, false},
      // next_call: jobs that wait and may close now, behind a small batch.
      {WaitingClose::kNextCall, true, true, 256, true},
      {WaitingClose::kNextCall, true, true, 16383, true},
      // Nothing waits: nothing to leave.
      {WaitingClose::kNextCall, false, true, 256, false},
      // They may not close yet (a batch still holds the kind's eager
      // slots): the dispatcher keeps their delay.
      {WaitingClose::kNextCall, true, false, 256, false},
      // A large batch's done calls may be long: the dispatcher, at once.
      {WaitingClose::kNextCall, true, true, 16384, false},
      {WaitingClose::kNextCall, true, true, 1 << 24, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(LeaveToNextCall(c.mode, c.jobs_wait, c.may_close,
                              c.completed_items, 16384),
              c.left)
        << static_cast<int>(c.mode) << " " << c.jobs_wait << " " << c.may_close
        << " " << c.completed_items;
  }
}

}  // namespace
}  // namespace sampler::server
