// Move-only owners of CUDA resources (in the style of rmm's cuda_stream and
// device_buffer). Destructors never throw and never report: they release
// what they own and ignore errors, which at that point have nowhere to go.
#ifndef SAMPLER_KERNELS_CUDA_RAII_H_
#define SAMPLER_KERNELS_CUDA_RAII_H_

#include <cuda_runtime.h>

#include <cassert>
#include <cstddef>
#include <utility>

#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/status.h"

namespace sampler::kernels::cuda {

// A non-blocking stream.
class Stream {
 public:
  // A non-blocking stream of the current device, which it records: a stream
  // belongs to the device that was current when it was made, and work queued
  // on it from another device is an error.
  static absl::StatusOr<Stream> Create() {
    int device = -1;
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
    cudaStream_t s = nullptr;
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return Stream(s, device);
  }
  Stream() = default;
  Stream(Stream&& o) noexcept
      : s_(std::exchange(o.s_, nullptr)), device_(o.device_) {}
  Stream& operator=(Stream&& o) noexcept {
    std::swap(s_, o.s_);
    std::swap(device_, o.device_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s_ != nullptr) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }
  // The device it belongs to (-1 for an empty Stream).
  int device() const { return device_; }

 private:
  Stream(cudaStream_t s, int device) : s_(s), device_(device) {}
  cudaStream_t s_ = nullptr;
  int device_ = -1;
};

// A stream-ordered memory pool of one device, owned: destroyed with its
// owner (after everything allocated from it has been freed, which the
// owner orders by destroying its users first). maxSize 0 means no cap; the
// release threshold is how much freed memory the pool keeps reserved.
class MemPool {
 public:
  static absl::StatusOr<MemPool> Create(int device, size_t max_bytes,
                                        uint64_t release_threshold_bytes) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    props.maxSize = max_bytes;
    cudaMemPool_t pool = nullptr;
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemPoolCreate(&pool, &props));
    MemPool owned(pool, device);
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemPoolSetAttribute(
        pool, cudaMemPoolAttrReleaseThreshold, &release_threshold_bytes));
    return owned;
  }
  MemPool() = default;
  MemPool(MemPool&& o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)), device_(o.device_) {}
  MemPool& operator=(MemPool&& o) noexcept {
    std::swap(pool_, o.pool_);
    std::swap(device_, o.device_);
    return *this;
  }
  MemPool(const MemPool&) = delete;
  MemPool& operator=(const MemPool&) = delete;
  ~MemPool() {
    if (pool_ != nullptr) cudaMemPoolDestroy(pool_);
  }
  cudaMemPool_t get() const { return pool_; }
  // The device whose memory it holds (-1 for an empty MemPool).
  int device() const { return device_; }

 private:
  MemPool(cudaMemPool_t pool, int device) : pool_(pool), device_(device) {}
  cudaMemPool_t pool_ = nullptr;
  int device_ = -1;
};

// An event; timing on request (for kernel time from events).
class Event {
 public:
  static absl::StatusOr<Event> Create(bool timing) {
    cudaEvent_t e = nullptr;
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(
        &e, timing ? cudaEventDefault : cudaEventDisableTiming));
    return Event(e);
  }
  Event() = default;
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (e_ != nullptr) cudaEventDestroy(e_);
  }
  cudaEvent_t get() const { return e_; }

 private:
  explicit Event(cudaEvent_t e) : e_(e) {}
  cudaEvent_t e_ = nullptr;
};

// Page-locked host memory (staging for copies that overlap kernels).
class PinnedBuffer {
 public:
  static absl::StatusOr<PinnedBuffer> Create(size_t bytes) {
    void* p = nullptr;
    if (bytes > 0) SAMPLER_CUDA_RETURN_IF_ERROR(cudaMallocHost(&p, bytes));
    return PinnedBuffer(p, bytes);
  }
  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (p_ != nullptr) cudaFreeHost(p_);
  }
  void* data() const { return p_; }
  size_t size() const { return bytes_; }

 private:
  PinnedBuffer(void* p, size_t bytes) : p_(p), bytes_(bytes) {}
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Device memory from a stream-ordered pool: allocated and freed in stream
// order (cudaMallocAsync / cudaFreeAsync), so the free waits for the work
// queued before it on that stream. It records the device that was current
// when it was allocated (in the style of rmm's device_buffer); debug builds
// assert that it is freed with that device current, since freeing on a
// stream of the wrong device is an error the destructor cannot report.
class DeviceBuffer {
 public:
  static absl::StatusOr<DeviceBuffer> Create(size_t bytes, cudaStream_t stream,
                                             cudaMemPool_t pool = nullptr) {
    void* p = nullptr;
    int device = -1;
    if (bytes > 0) {
      SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
      if (pool != nullptr) {
        SAMPLER_CUDA_RETURN_IF_ERROR(
            cudaMallocFromPoolAsync(&p, bytes, pool, stream));
      } else {
        SAMPLER_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p, bytes, stream));
      }
    }
    return DeviceBuffer(p, bytes, stream, device);
  }
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)),
        stream_(o.stream_),
        device_(o.device_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    std::swap(stream_, o.stream_);
    std::swap(device_, o.device_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_ == nullptr) return;
#ifndef NDEBUG
    int current = -1;
    assert(cudaGetDevice(&current) == cudaSuccess && current == device_ &&
           "DeviceBuffer freed with another device current");
#endif
    cudaFreeAsync(p_, stream_);
  }
  void* data() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t size() const { return bytes_; }
  // The device it lives on (-1 for an empty buffer).
  int device() const { return device_; }

 private:
  DeviceBuffer(void* p, size_t bytes, cudaStream_t stream, int device)
      : p_(p), bytes_(bytes), stream_(stream), device_(device) {}
  void* p_ = nullptr;
  size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  int device_ = -1;
};

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_RAII_H_
