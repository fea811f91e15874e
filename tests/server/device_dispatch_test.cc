// DeviceDispatch with fake devices (no GPU): the least loaded device gets
// the next batch, ties go round-robin, a failing device's failures stay
// with its own batches, and Stop() drains every queue before the workers
// return, so nothing accepted is lost.
#include "server/device_dispatch.h"

#include <gtest/gtest.h>

#include <atomic>
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
        dispatch.Release(d, taken->items);
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
    dispatch.Release(d, 10);  // every device idle again: a tie each time
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
  dispatch.Release(0, 100);
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

}  // namespace
}  // namespace sampler::server
