// Which GPU runs a batch, and the queue of batches each GPU's workers take
// from: the CUDA backend's dispatch, kept free of CUDA so that it can be
// tested with fake devices (tests/server/device_dispatch_test.cc).
//
// A batch goes to the device with the least outstanding work (items queued
// or running there). Ties go round-robin, starting after the device picked
// last, so that light load (one batch at a time) still spreads over every
// device and warms each one's pool. Each device has its own queue; a
// device's workers take only from it, so a batch that fails on one device
// fails only itself. Stop() lets the workers drain every queue before they
// return: nothing accepted is lost. Work submitted after Stop() is refused.
#ifndef SAMPLER_SERVER_DEVICE_DISPATCH_H_
#define SAMPLER_SERVER_DEVICE_DISPATCH_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace sampler::server {

template <typename Work>
class DeviceDispatch {
 public:
  // What a worker takes: the work and the items it counts for.
  struct Taken {
    Work work;
    int64_t items = 0;
  };

  // `devices` >= 1: positions 0..devices-1 (not CUDA indices).
  explicit DeviceDispatch(int devices) {
    devices_.reserve(devices);
    for (int i = 0; i < devices; ++i) {
      devices_.push_back(std::make_unique<Device>());
    }
  }

  int devices() const { return static_cast<int>(devices_.size()); }

  // Queues `work` (counting `items`) on the least loaded device and returns
  // that device's position; after Stop(), returns nullopt and `work` is left
  // untouched (the caller fails it).
  std::optional<int> Submit(int64_t items, Work& work) {
    int best = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return std::nullopt;
      const int n = devices();
      for (int k = 1; k <= n; ++k) {
        const int i = (last_ + k) % n;
        if (best < 0 ||
            devices_[i]->outstanding < devices_[best]->outstanding) {
          best = i;
        }
      }
      last_ = best;
      Device& device = *devices_[best];
      device.outstanding += items;
      device.queue.push_back({std::move(work), items});
    }
    devices_[best]->cv.notify_one();
    return best;
  }

  // A worker of `device`: waits for work queued there and returns it; after
  // Stop(), returns what is still queued and then nullopt. The work's items
  // stay outstanding until Release().
  std::optional<Taken> Take(int device) {
    Device& d = *devices_[device];
    std::unique_lock<std::mutex> lock(mu_);
    d.cv.wait(lock, [&] { return stopping_ || !d.queue.empty(); });
    if (d.queue.empty()) return std::nullopt;
    Taken taken = std::move(d.queue.front());
    d.queue.pop_front();
    return taken;
  }

  // Work taken from `device` ended (succeeded or failed): its items no
  // longer count there. Call it before reporting the result, so that a
  // batch submitted from the report sees the device's true load.
  void Release(int device, int64_t items) {
    std::lock_guard<std::mutex> lock(mu_);
    devices_[device]->outstanding -= items;
  }

  // Refuses new work and wakes every worker; queued work is still taken.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    for (auto& device : devices_) device->cv.notify_all();
  }

  int64_t Outstanding(int device) const {
    std::lock_guard<std::mutex> lock(mu_);
    return devices_[device]->outstanding;
  }

 private:
  struct Device {
    std::condition_variable cv;
    std::deque<Taken> queue;
    int64_t outstanding = 0;
  };

  // One lock for the choice and every queue: it is taken once per batch, not
  // per request, and a choice must see every device's load at one moment.
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Device>> devices_;
  bool stopping_ = false;
  int last_ = -1;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_DEVICE_DISPATCH_H_
