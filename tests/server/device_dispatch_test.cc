// DeviceDispatch with fake devices (no GPU): the least loaded device gets
// the next batch, ties go round-robin, a failing device's failures stay
// with its own batches, and Stop() drains every queue before the workers
// return, so nothing accepted is lost. Slots: a batch holds one of its
// device's slots while it runs, whether a worker took it or a caller
// claimed one to run a batch itself (TryClaim), so that no slot ever runs
// two batches at once; a claim never overtakes queued work.
#include "server/device_dispatch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace sampler::server {
namespace {

// A fake batch: where it was queued, and its report.
struct FakeBatch {
  int id = 0;
  std::function<void(int device, const absl::Status&)> done;
};
using Dispatch = DeviceDispatch<FakeBatch>;

int SubmitOrDie(Dispatch& dispatch, int64_t items, int id = 0) {
  FakeBatch batch{id, nullptr};
  std::optional<int> device = dispatch.Submit(items, batch);
  EXPECT_TRUE(device.has_value());
  return device.value_or(-1);
}

// One worker per device, as the CUDA backend runs them: take, run (device
// `failing` fails every batch, as a GPU whose pool is capped would), release,
// report.
std::vector<std::thread> StartWorkers(Dispatch& dispatch, int failing,
                                      std::function<void()> before_run = {}) {
  std::vector<std::thread> workers;
  for (int d = 0; d < dispatch.devices(); ++d) {
    workers.emplace_back([&dispatch, d, failing, before_run] {
      while (std::optional<Dispatch::Taken> taken = dispatch.Take(d)) {
        if (before_run) before_run();
        const absl::Status status =
            d == failing ? absl::ResourceExhaustedError("pool cap")
                         : absl::OkStatus();
        dispatch.Release(d, taken->slot, taken->items);
        taken->work.done(d, status);
      }
    });
  }
  return workers;
}

TEST(DeviceDispatchTest, TiesGoRoundRobinStartingAtTheFirstDevice) {
  Dispatch dispatch(3);
  std::vector<int> picked;
  for (int i = 0; i < 6; ++i) {
    const int d = SubmitOrDie(dispatch, 10);
    picked.push_back(d);
    // Every device idle again: a tie each time.
    std::optional<Dispatch::Taken> taken = dispatch.Take(d);
    ASSERT_TRUE(taken.has_value());
    dispatch.Release(d, taken->slot, taken->items);
  }
  EXPECT_EQ(picked, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(DeviceDispatchTest, LeastOutstandingWorkFirstUnderUnevenLoads) {
  Dispatch dispatch(3);
  EXPECT_EQ(SubmitOrDie(dispatch, 100), 0);
  EXPECT_EQ(SubmitOrDie(dispatch, 30), 1);
  EXPECT_EQ(SubmitOrDie(dispatch, 50), 2);
  // Loads 100, 30, 50: device 1 until it passes 50, then device 2 (the tie
  // at 50 goes to the device after the one picked last).
  EXPECT_EQ(SubmitOrDie(dispatch, 20), 1);  // 100, 50, 50
  EXPECT_EQ(SubmitOrDie(dispatch, 20), 2);  // 100, 50, 70
  EXPECT_EQ(SubmitOrDie(dispatch, 20), 1);  // 100, 70, 70
  EXPECT_EQ(dispatch.Outstanding(0), 100);
  EXPECT_EQ(dispatch.Outstanding(1), 70);
  EXPECT_EQ(dispatch.Outstanding(2), 70);
  // Finished work no longer counts: device 0 is now the least loaded.
  std::optional<Dispatch::Taken> first = dispatch.Take(0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->items, 100);
  dispatch.Release(0, first->slot, first->items);
  EXPECT_EQ(SubmitOrDie(dispatch, 1), 0);
  // The devices with much queued work get nothing until it catches up.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(SubmitOrDie(dispatch, 1), 0);
}

TEST(DeviceDispatchTest, OneDeviceTakesEverything) {
  Dispatch dispatch(1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(SubmitOrDie(dispatch, i + 1), 0);
  EXPECT_EQ(dispatch.Outstanding(0), 15);
}

TEST(DeviceDispatchTest, FailuresStayWithTheBatchesOfTheFailingDevice) {
  constexpr int kSubmitters = 4;
  constexpr int kPerSubmitter = 250;
  Dispatch dispatch(2);
  std::mutex mu;
  std::vector<int> queued_on(kSubmitters * kPerSubmitter, -1);
  std::vector<int> ran_on(kSubmitters * kPerSubmitter, -1);
  std::vector<int> reports(kSubmitters * kPerSubmitter, 0);
  std::vector<absl::Status> statuses(kSubmitters * kPerSubmitter);
  std::vector<std::thread> workers = StartWorkers(dispatch, /*failing=*/1);
  std::vector<std::thread> submitters;
  for (int s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&, s] {
      for (int i = 0; i < kPerSubmitter; ++i) {
        const int id = s * kPerSubmitter + i;
        FakeBatch batch;
        batch.id = id;
        batch.done = [&, id](int device, const absl::Status& status) {
          std::lock_guard<std::mutex> lock(mu);
          ran_on[id] = device;
          statuses[id] = status;
          ++reports[id];
        };
        const std::optional<int> device = dispatch.Submit(1 + id % 7, batch);
        ASSERT_TRUE(device.has_value());
        std::lock_guard<std::mutex> lock(mu);
        queued_on[id] = *device;
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  dispatch.Stop();
  for (std::thread& t : workers) t.join();
  int on_failing = 0;
  for (int id = 0; id < kSubmitters * kPerSubmitter; ++id) {
    EXPECT_EQ(reports[id], 1) << "batch " << id;
    EXPECT_EQ(ran_on[id], queued_on[id]) << "batch " << id;
    if (ran_on[id] == 1) {
      ++on_failing;
      EXPECT_EQ(statuses[id].code(), absl::StatusCode::kResourceExhausted);
    } else {
      EXPECT_TRUE(statuses[id].ok()) << "batch " << id << ": " << statuses[id];
    }
  }
  // Both devices took work, and all of it has ended.
  EXPECT_GT(on_failing, 0);
  EXPECT_LT(on_failing, kSubmitters * kPerSubmitter);
  EXPECT_EQ(dispatch.Outstanding(0), 0);
  EXPECT_EQ(dispatch.Outstanding(1), 0);
}

TEST(DeviceDispatchTest, StopDrainsEveryQueueAndRefusesNewWork) {
  constexpr int kBatches = 60;
  Dispatch dispatch(3);
  // The workers are held until every batch is queued and Stop() was called.
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  std::vector<std::thread> workers =
      StartWorkers(dispatch, /*failing=*/-1, [&] {
        std::unique_lock<std::mutex> lock(gate_mu);
        gate_cv.wait(lock, [&] { return open; });
      });
  std::atomic<int> reported{0};
  std::vector<int> per_device(3, 0);
  for (int i = 0; i < kBatches; ++i) {
    FakeBatch batch;
    batch.id = i;
    batch.done = [&](int, const absl::Status& status) {
      EXPECT_TRUE(status.ok());
      ++reported;
    };
    const std::optional<int> device = dispatch.Submit(1, batch);
    ASSERT_TRUE(device.has_value());
    ++per_device[*device];
  }
  EXPECT_EQ(per_device, (std::vector<int>{20, 20, 20}));
  dispatch.Stop();
  FakeBatch late;
  late.id = -1;
  late.done = [](int, const absl::Status&) { ADD_FAILURE() << "ran late"; };
  EXPECT_FALSE(dispatch.Submit(1, late).has_value());
  EXPECT_TRUE(late.done != nullptr);  // left to the caller, to fail it
  {
    std::lock_guard<std::mutex> lock(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(reported.load(), kBatches);
  for (int d = 0; d < 3; ++d) EXPECT_EQ(dispatch.Outstanding(d), 0);
}

TEST(DeviceDispatchTest, AClaimTakesAFreeSlotOnlyWhileNothingIsQueued) {
  Dispatch dispatch(1, /*slots=*/2);
  EXPECT_EQ(dispatch.FreeSlots(0), 2);
  std::optional<Dispatch::Claim> a = dispatch.TryClaim(5);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->device, 0);
  std::optional<Dispatch::Claim> b = dispatch.TryClaim(7);
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(a->slot, b->slot);
  EXPECT_EQ(dispatch.Outstanding(0), 12);
  EXPECT_EQ(dispatch.FreeSlots(0), 0);
  // Every slot held: no claim, and nothing counted for the refused one.
  EXPECT_FALSE(dispatch.TryClaim(1).has_value());
  EXPECT_EQ(dispatch.Outstanding(0), 12);
  dispatch.Release(0, a->slot, 5, /*claimed=*/true);
  dispatch.Release(0, b->slot, 7, /*claimed=*/true);
  EXPECT_EQ(dispatch.Outstanding(0), 0);
  EXPECT_EQ(dispatch.FreeSlots(0), 2);
  // Queued work goes first: no claim while the queue holds some, though
  // both slots are free.
  SubmitOrDie(dispatch, 3);
  EXPECT_FALSE(dispatch.TryClaim(1).has_value());
  std::optional<Dispatch::Taken> taken = dispatch.Take(0);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(dispatch.FreeSlots(0), 1);
  // The worker holds one slot; the other may be claimed.
  std::optional<Dispatch::Claim> c = dispatch.TryClaim(1);
  ASSERT_TRUE(c.has_value());
  EXPECT_NE(c->slot, taken->slot);
  dispatch.Release(0, taken->slot, taken->items);
  dispatch.Release(0, c->slot, 1, /*claimed=*/true);
  EXPECT_EQ(dispatch.Outstanding(0), 0);
  EXPECT_EQ(dispatch.FreeSlots(0), 2);
}

TEST(DeviceDispatchTest, AClaimGoesWhereSubmitWouldOrNowhere) {
  Dispatch dispatch(2);
  // Ties round-robin, as Submit's.
  std::vector<int> claimed;
  for (int i = 0; i < 4; ++i) {
    std::optional<Dispatch::Claim> claim = dispatch.TryClaim(10);
    ASSERT_TRUE(claim.has_value());
    claimed.push_back(claim->device);
    dispatch.Release(claim->device, claim->slot, 10, /*claimed=*/true);
  }
  EXPECT_EQ(claimed, (std::vector<int>{0, 1, 0, 1}));
  // Work queued on device 0 (no worker): the claim goes to device 1, the
  // least loaded.
  EXPECT_EQ(SubmitOrDie(dispatch, 100), 0);
  std::optional<Dispatch::Claim> on_one = dispatch.TryClaim(10);
  ASSERT_TRUE(on_one.has_value());
  EXPECT_EQ(on_one->device, 1);
  // Device 1 is still the least loaded (10 < 100) but its one slot is
  // held: no claim on device 0 either, where the work is queued.
  EXPECT_FALSE(dispatch.TryClaim(10).has_value());
  dispatch.Release(1, on_one->slot, 10, /*claimed=*/true);
}

TEST(DeviceDispatchTest, AWorkerWaitsForTheSlotAClaimHolds) {
  Dispatch dispatch(1, /*slots=*/1);
  std::optional<Dispatch::Claim> claim = dispatch.TryClaim(1);
  ASSERT_TRUE(claim.has_value());
  std::atomic<int> ran{0};
  FakeBatch batch;
  batch.done = [&](int, const absl::Status&) { ++ran; };
  ASSERT_TRUE(dispatch.Submit(1, batch).has_value());
  std::vector<std::thread> workers = StartWorkers(dispatch, /*failing=*/-1);
  // The worker cannot take the batch while the only slot is claimed.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ran.load(), 0);
  dispatch.Release(0, claim->slot, 1, /*claimed=*/true);
  dispatch.Stop();
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(dispatch.Outstanding(0), 0);
  EXPECT_EQ(dispatch.FreeSlots(0), 1);
}

TEST(DeviceDispatchTest, StopRefusesClaimsAndWaitsForThoseHeld) {
  Dispatch dispatch(1, /*slots=*/2);
  std::optional<Dispatch::Claim> claim = dispatch.TryClaim(4);
  ASSERT_TRUE(claim.has_value());
  dispatch.Stop();
  EXPECT_FALSE(dispatch.TryClaim(1).has_value());
  std::atomic<bool> released{false};
  std::thread waiter([&] {
    dispatch.AwaitClaimsReleased();
    released = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(released.load());
  dispatch.Release(0, claim->slot, 4, /*claimed=*/true);
  waiter.join();
  EXPECT_TRUE(released.load());
  EXPECT_EQ(dispatch.Outstanding(0), 0);
}

// Workers and callers that run batches themselves when they can claim a
// slot, else submit them, all at once (as the CUDA backend's workers and
// gRPC threads): every batch runs once, no slot ever runs two batches at
// once, and everything is released at the end.
TEST(DeviceDispatchTest, ClaimsAndWorkersNeverShareASlot) {
  constexpr int kDevices = 2;
  constexpr int kSlots = 3;
  constexpr int kCallers = 4;
  constexpr int kPerCaller = 300;
  Dispatch dispatch(kDevices, kSlots);
  std::vector<std::atomic<int>> in_use(kDevices * kSlots);
  for (auto& slot : in_use) slot = 0;
  std::atomic<int> shared_slot{0};
  // Runs one batch on a slot, checking that nothing else runs there.
  const auto run_on = [&](int device, int slot) {
    std::atomic<int>& users = in_use[device * kSlots + slot];
    if (users.fetch_add(1) != 0) ++shared_slot;
    std::this_thread::yield();
    users.fetch_sub(1);
  };
  std::vector<std::thread> workers;
  for (int d = 0; d < kDevices; ++d) {
    for (int w = 0; w < kSlots; ++w) {
      workers.emplace_back([&, d] {
        while (std::optional<Dispatch::Taken> taken = dispatch.Take(d)) {
          run_on(d, taken->slot);
          dispatch.Release(d, taken->slot, taken->items);
          taken->work.done(d, absl::OkStatus());
        }
      });
    }
  }
  std::atomic<int> ran{0};
  std::atomic<int> ran_here{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < kPerCaller; ++i) {
        const int64_t items = 1 + (c + i) % 5;
        if (std::optional<Dispatch::Claim> claim = dispatch.TryClaim(items)) {
          run_on(claim->device, claim->slot);
          dispatch.Release(claim->device, claim->slot, items,
                           /*claimed=*/true);
          ++ran;
          ++ran_here;
          continue;
        }
        FakeBatch batch;
        batch.done = [&](int, const absl::Status&) { ++ran; };
        ASSERT_TRUE(dispatch.Submit(items, batch).has_value());
      }
    });
  }
  for (std::thread& t : callers) t.join();
  dispatch.Stop();
  for (std::thread& t : workers) t.join();
  dispatch.AwaitClaimsReleased();
  EXPECT_EQ(ran.load(), kCallers * kPerCaller);
  EXPECT_GT(ran_here.load(), 0);
  EXPECT_EQ(shared_slot.load(), 0);
  for (int d = 0; d < kDevices; ++d) {
    EXPECT_EQ(dispatch.Outstanding(d), 0);
    EXPECT_EQ(dispatch.FreeSlots(d), kSlots);
  }
}

}  // namespace
}  // namespace sampler::server
