// When the CUDA backend runs a small batch on the gRPC thread that closed it
// (CudaBackend::RunHere; --gpu_inline, --gpu_inline_below_items), kept free
// of CUDA so that the decision is tested without a GPU
// (tests/server/gpu_inline_test.cc).
//
// Measured on a 16-core H100 host (bench/results/floor-h100-session8-
// 2026-11-26.md, small requests of 256 samples): always running such a
// batch there took 64 connections x 1 stream from 0.80 to 0.92 of the floor
// (no hand-off to the stream's worker: 3.93 -> 2.44 context switches a
// call) but 16 x 16 from 0.86 to 0.83: the gRPC thread is held for the GPU
// round trip while the other calls of its connection wait to be read, and
// batches shrink. `auto` runs a batch there only when the call that closed
// it was alone on its connection, which has not multiplexed calls lately
// (Batch::closed_on_lone_call, connection_calls.h), where holding the
// thread delays no one else's call.
#ifndef SAMPLER_SERVER_GPU_INLINE_H_
#define SAMPLER_SERVER_GPU_INLINE_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace sampler::server {

enum class GpuInline {
  kNever,   // every batch goes to a stream's worker
  kAlways,  // every small batch closed on a gRPC thread (session 8's mode)
  kAuto,    // ... whose closing call was alone on its connection
};

// "never", "always" or "auto"; nullopt for anything else.
inline std::optional<GpuInline> ParseGpuInline(absl::string_view name) {
  if (name == "never") return GpuInline::kNever;
  if (name == "always") return GpuInline::kAlways;
  if (name == "auto") return GpuInline::kAuto;
  return std::nullopt;
}

// Whether a batch of `items` work items, closed on a request's gRPC thread,
// should run there (given a free stream: the backend then looks for one):
// under `below_items` (0: never) and as `mode` allows.
inline bool WantsInline(GpuInline mode, int64_t below_items, int64_t items,
                        bool closed_on_lone_call) {
  if (items >= below_items) return false;
  switch (mode) {
    case GpuInline::kNever:
      return false;
    case GpuInline::kAlways:
      return true;
    case GpuInline::kAuto:
      return closed_on_lone_call;
  }
  return false;
}

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_GPU_INLINE_H_
