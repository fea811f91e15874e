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
//
// Slots: each device has `slots` of them (the CUDA backend's streams with
// their staging, cuda_slot.h), and whoever runs a batch holds one slot for
// it, so that no two batches use one stream's staging at once. A worker
// takes a batch together with a free slot of its device. A caller may also
// run a batch on its own thread (issue 13: the gRPC thread that closed a
// small batch, CudaBackend::RunHere): TryClaim gives it a free slot of the
// device Submit would pick, when that device has nothing queued, so that
// it neither overtakes queued batches nor waits for a slot.
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
  // What a worker takes: the work, the items it counts for, and the slot
  // of the device it holds for it.
  struct Taken {
    Work work;
    int64_t items = 0;
    int slot = -1;
  };
  // A slot claimed for work run by the claimer (TryClaim).
  struct Claim {
    int device = -1;
    int slot = -1;
  };

  // `devices` >= 1: positions 0..devices-1 (not CUDA indices), each with
  // `slots` >= 1 slots, 0..slots-1.
  explicit DeviceDispatch(int devices, int slots = 1) {
    devices_.reserve(devices);
    for (int i = 0; i < devices; ++i) {
      auto device = std::make_unique<Device>();
      // Taken from the back: slot 0 first, and the slot released last is
      // reused first (its staging is the warmest).
      for (int s = slots - 1; s >= 0; --s) device->free_slots.push_back(s);
      devices_.push_back(std::move(device));
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
      best = PickLocked();
      last_ = best;
      Device& device = *devices_[best];
      device.outstanding += items;
      device.queue.push_back({std::move(work), items, -1});
    }
    devices_[best]->cv.notify_one();
    return best;
  }

  // A worker of `device`: waits for work queued there and a free slot of
  // the device, and returns the work with that slot, which it holds until
  // Release(); after Stop(), returns what is still queued and then nullopt.
  // The work's items stay outstanding until Release().
  std::optional<Taken> Take(int device) {
    Device& d = *devices_[device];
    std::unique_lock<std::mutex> lock(mu_);
    d.cv.wait(lock, [&] {
      return (stopping_ && d.queue.empty()) ||
             (!d.queue.empty() && !d.free_slots.empty());
    });
    if (d.queue.empty()) return std::nullopt;
    Taken taken = std::move(d.queue.front());
    d.queue.pop_front();
    taken.slot = d.free_slots.back();
    d.free_slots.pop_back();
    return taken;
  }

  // For work of `items` that the caller runs itself: when the device Submit
  // would pick has nothing queued and a free slot, holds that slot and
  // counts the items there (both until Release) and returns them; otherwise
  // (and after Stop()) changes nothing and returns nullopt (the caller
  // submits the work instead).
  std::optional<Claim> TryClaim(int64_t items) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return std::nullopt;
    const int best = PickLocked();
    Device& device = *devices_[best];
    if (!device.queue.empty() || device.free_slots.empty()) {
      return std::nullopt;
    }
    last_ = best;
    device.outstanding += items;
    const int slot = device.free_slots.back();
    device.free_slots.pop_back();
    ++claimed_;
    return Claim{best, slot};
  }

  // Work taken from `device` on `slot` ended (succeeded or failed): its
  // items no longer count there and the slot is free. Call it before
  // reporting the result, so that a batch submitted from the report sees
  // the device's true load. `claimed`: the slot came from TryClaim.
  void Release(int device, int slot, int64_t items, bool claimed = false) {
    Device& d = *devices_[device];
    bool wake_worker = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      d.outstanding -= items;
      d.free_slots.push_back(slot);
      // A worker may be waiting for this slot (queued work, every slot
      // held); when nothing is queued, none needs it.
      wake_worker = !d.queue.empty();
      if (claimed && --claimed_ == 0) released_cv_.notify_all();
    }
    if (wake_worker) d.cv.notify_one();
  }

  // Refuses new work and new claims (TryClaim) and wakes every worker;
  // queued work is still taken.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    for (auto& device : devices_) device->cv.notify_all();
  }

  // Returns once every slot held through TryClaim has been released (after
  // Stop(), none can be claimed any more): the slots may then go away.
  void AwaitClaimsReleased() {
    std::unique_lock<std::mutex> lock(mu_);
    released_cv_.wait(lock, [this] { return claimed_ == 0; });
  }

  int64_t Outstanding(int device) const {
    std::lock_guard<std::mutex> lock(mu_);
    return devices_[device]->outstanding;
  }

  int FreeSlots(int device) const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(devices_[device]->free_slots.size());
  }

 private:
  struct Device {
    std::condition_variable cv;
    std::deque<Taken> queue;
    std::vector<int> free_slots;
    int64_t outstanding = 0;
  };

  // The least loaded device, ties going to the first after last_.
  int PickLocked() const {
    int best = -1;
    const int n = devices();
    for (int k = 1; k <= n; ++k) {
      const int i = (last_ + k) % n;
      if (best < 0 || devices_[i]->outstanding < devices_[best]->outstanding) {
        best = i;
      }
    }
    return best;
  }

  // One lock for the choice and every queue: it is taken once per batch, not
  // per request, and a choice must see every device's load at one moment.
  mutable std::mutex mu_;
  std::condition_variable released_cv_;  // AwaitClaimsReleased waits on it
  std::vector<std::unique_ptr<Device>> devices_;
  bool stopping_ = false;
  int last_ = -1;
  int claimed_ = 0;  // slots held through TryClaim
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_DEVICE_DISPATCH_H_
