// The staging pipeline every GPU batch goes through, whoever runs it (the
// server's CUDA backend, the GPU tests, the benchmarks): a batch object
// says what it moves (a StagingPlan) and packs its upload; a Stager owns
// one stream's resources (the GPU's memory pool, timing events, pinned
// staging buffers that grow to the largest batch seen and are then reused)
// and runs pack -> one pool allocation -> copy in -> launch -> copy out ->
// wait -> unpack (Run). Launchers take the batch's view on the
// DeviceRegions and a stream, and never allocate.
#ifndef SAMPLER_KERNELS_CUDA_STAGING_H_
#define SAMPLER_KERNELS_CUDA_STAGING_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/raii.h"

namespace sampler::kernels::cuda {

// What one batch moves: bytes copied host -> device before the launch,
// bytes copied device -> host after it, and device-only scratch.
struct StagingPlan {
  size_t in_bytes = 0;
  size_t out_bytes = 0;
  size_t scratch_bytes = 0;
};

// The device side of a StagingPlan: three regions of one pool allocation,
// each 256-byte aligned (what cudaMalloc guarantees, so kernels may use wide
// loads on each as on a buffer of its own).
struct DeviceRegions {
  void* in = nullptr;
  void* out = nullptr;
  void* scratch = nullptr;
};

// The out region of the kinds that answer `values` elements of T and one
// status word per segment or problem: the values, then the words from the
// next multiple of 8 bytes. The same layout on the device and in the
// downloaded staging.
template <typename T>
struct ValuesAndStatusWords {
  int64_t values = 0;
  size_t words = 0;

  size_t status_at() const {
    return (static_cast<size_t>(values) * sizeof(T) + 7) / 8 * 8;
  }
  size_t bytes() const { return status_at() + words * sizeof(uint32_t); }
  T* Values(void* region) const { return static_cast<T*>(region); }
  const T* Values(const void* region) const {
    return static_cast<const T*>(region);
  }
  uint32_t* StatusWords(void* region) const {
    return reinterpret_cast<uint32_t*>(static_cast<char*>(region) +
                                       status_at());
  }
  const uint32_t* StatusWords(const void* region) const {
    return reinterpret_cast<const uint32_t*>(static_cast<const char*>(region) +
                                             status_at());
  }
};

// A batch while it is on the device: its plan and the one pool allocation
// holding its regions (given back to the pool, in stream order, when this
// goes away).
struct StagedBatch {
  StagingPlan plan;
  DeviceBuffer memory;
  DeviceRegions regions;
};

// One stream of one GPU with what a batch needs there. The server builds
// one per stream (its CudaSlot); tests and benchmarks take one from Create.
struct Stager {
  cudaMemPool_t pool = nullptr;  // null: the device's default pool
  Stream stream;
  Event start;       // recorded before the batch's kernels
  Event stop;        // and after them: device seconds
  PinnedBuffer in;   // host -> device staging
  PinnedBuffer out;  // device -> host staging

  // The GPU it runs on: its stream's.
  int device() const { return stream.device(); }

  // A stager on the current device: a new non-blocking stream, timing
  // events, empty staging; device memory from `pool` (null: the device's
  // default pool).
  static absl::StatusOr<std::unique_ptr<Stager>> Create(
      cudaMemPool_t pool = nullptr);

  // Grows the staging buffers to at least these sizes.
  absl::Status Reserve(size_t in_bytes, size_t out_bytes);

  // Device memory from the pool, freed in stream order when released.
  absl::StatusOr<DeviceBuffer> Allocate(size_t bytes) {
    return DeviceBuffer::Create(bytes, stream.get(), pool);
  }

  // Waits for everything queued on the stream; the kernel time between the
  // start and stop events, in seconds.
  absl::StatusOr<double> Finish();

  // The staging pipeline of one batch, the same for every kind: grow the
  // pinned staging to the plan, `pack` the upload into it, allocate the
  // device regions from the pool, copy in, `launch` between the timing
  // events, copy the output back, wait, and hand the downloaded bytes to
  // `unpack`. Returns the kernel seconds. Device memory goes back to the
  // pool, in stream order, when this returns (on every path).
  absl::StatusOr<double> Run(
      const StagingPlan& plan, absl::FunctionRef<void(char* staged_in)> pack,
      absl::FunctionRef<absl::Status(const DeviceRegions&, cudaStream_t)>
          launch,
      absl::FunctionRef<void(const char* staged_out)> unpack);

  // Run for a batch builder (every kind's has Staging, PackInto and a View
  // on DeviceRegions): `launch(builder.View(regions), stream)` between its
  // upload and `unpack`.
  template <typename Builder, typename LaunchFn>
  absl::StatusOr<double> RunBatch(
      const Builder& builder, LaunchFn launch,
      absl::FunctionRef<void(const char* staged_out)> unpack) {
    return Run(
        builder.Staging(), [&](char* staged) { builder.PackInto(staged); },
        [&](const DeviceRegions& device, cudaStream_t s) {
          return launch(builder.View(device), s);
        },
        unpack);
  }

  // Run in two halves, for benchmarks and tests that launch one staged
  // batch many times (and time the kernels alone). Upload: Run's steps up
  // to the copy in, then a wait for it, so that the staging is free again;
  // the batch stays on the device while the result lives.
  absl::StatusOr<StagedBatch> Upload(
      const StagingPlan& plan, absl::FunctionRef<void(char* staged_in)> pack);
  // Download: copy the out region back, wait for the stream, `unpack`.
  absl::Status Download(const StagedBatch& staged,
                        absl::FunctionRef<void(const char* staged_out)> unpack);

 private:
  // Run's first steps: grow, pack, allocate, queue the copy in.
  absl::StatusOr<StagedBatch> CopyIn(
      const StagingPlan& plan, absl::FunctionRef<void(char* staged_in)> pack);
  absl::Status CopyOut(const StagedBatch& staged);
};

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_STAGING_H_
