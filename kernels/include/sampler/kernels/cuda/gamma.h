// CUDA gamma sampler: segmented-batch descriptors, a host-side packer for
// them, and the launcher; also what the Dirichlet sampler (cuda/dirichlet.h)
// shares with it: segment flags and status bits, launch options, counters
// and SegmentStatus.
//
// One launch covers a whole batch: several requests ("segments"), each with
// its own seed, first item, parameters, output form and slice of the output.
// The kernels give the bits of the CPU backend (gamma.h, dirichlet.h) for
// every segment, whatever else is in the batch: the per-item arithmetic is
// gamma_core.h, and attempts are addressed by (item, attempt), never by
// thread, so the warp-aware pre-caching of the kernel cannot move a bit.
//
// Memory: the launchers take caller-provided device memory and a stream and
// never allocate. The usual flow goes through the staging pipeline
// (staging.h):
//
//   GammaBatchBuilder<float> b;
//   b.AddGroups(groups, log_output, seed, first_item);   // one per request
//   b.AddElements(shape, scale, log_output, seed, first_item);
//   stager.Run(b.Staging(), [&](char* in) { b.PackInto(in); },
//              [&](const DeviceRegions& d, cudaStream_t s) {
//                return LaunchGamma(b.View(d), s);
//              },
//              [&](const char* out) {
//                ... b.OutLayout().Values(out), b.OutLayout().StatusWords(out)
//              });
//   SegmentStatus(status[s], s)   // per request: OK, INTERNAL or OUT_OF_RANGE
//
// Request k's outputs are out[segments()[k].out_begin, + count).
#ifndef SAMPLER_KERNELS_CUDA_GAMMA_H_
#define SAMPLER_KERNELS_CUDA_GAMMA_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/philox.h"

namespace sampler::kernels::cuda {

// ------------------------------------------------------- descriptors ----

// Segment flags.
inline constexpr uint32_t kSegmentLogOutput = 1u;  // write log-variates
inline constexpr uint32_t kSegmentUnitScale = 2u;  // per-element, every scale 1

// Bits of a segment's status word, set by the kernels (atomicOr).
inline constexpr uint32_t kStatusAttemptCap = 1u;    // an item hit the cap
inline constexpr uint32_t kStatusRowUnderflow = 2u;  // Dirichlet row all -inf

// One gamma request of a batch. Segments are laid end to end in the output:
// out_begin of segment s + 1 is out_begin + count of segment s, starting at 0.
struct GammaSegment {
  uint64_t seed = 0;
  uint64_t first_item = 0;  // contract item of the segment's first output
  int64_t out_begin = 0;    // batch output index of its first output
  int64_t count = 0;        // outputs
  // Per-element: index in shape[] of its first output's shape. Grouped:
  // index in groups[] of its first group.
  int64_t param_begin = 0;
  // Per-element without kSegmentUnitScale: index in scale[] of its first
  // output's scale.
  int64_t scale_begin = 0;
  int64_t num_groups = 0;  // 0: per-element parameters
  uint32_t flags = 0;      // kSegmentLogOutput | kSegmentUnitScale
};

// One group of a grouped segment, with its place in the batch output (the
// exclusive prefix sum of the counts, plus the segment's out_begin). Groups of
// a segment are in order; empty groups are left out by the builder.
template <typename T>
struct GammaGroupParams {
  T shape;
  T scale;
  int64_t out_begin;
};

// A gamma batch in device memory.
template <typename T>
struct GammaBatch {
  const GammaSegment* segments = nullptr;
  int32_t num_segments = 0;
  int64_t total = 0;         // outputs, = sum of the segments' counts
  const T* shape = nullptr;  // per-element parameters
  const T* scale = nullptr;  // may be null when every per-element segment
                             // has kSegmentUnitScale
  const GammaGroupParams<T>* groups = nullptr;
  T* out = nullptr;                    // total elements
  uint32_t* segment_status = nullptr;  // num_segments words
  // Every segment has the same seed, whose Philox round keys these are
  // (GammaLaunchOptions::seed_keys_in_params).
  bool one_seed = false;
  PhiloxRoundKeys round_keys = {};
};

// ---------------------------------------------------------- launching ----

// Warp-efficiency counters of the instrumented kernel variant (device
// memory, 64-bit, added to: zero them before the launch).
struct GammaCounters {
  unsigned long long warp_calls;        // rows of 32 outputs a warp finished
  unsigned long long warp_iterations;   // rejection-loop iterations of warps
  unsigned long long lane_attempts;     // attempts computed by lanes
  unsigned long long lane_items;        // outputs written
  unsigned long long warp_full_tests;   // warp iterations past the squeeze
  unsigned long long lane_full_tests;   // attempts past the squeeze
  unsigned long long warp_exact_tests;  // warp iterations computing the
                                        // deterministic logarithms
  unsigned long long lane_exact_tests;  // attempts the fast test left open
};

struct GammaLaunchOptions {
  // Lanes whose item is accepted work on their next item while the warp
  // waits for its slowest lane (gamma-rejection-on-gpus.txt). The bits are
  // the same either way; it pays only where acceptance is low enough
  // (GammaBatchBuilder::PreCachePays, which the service follows).
  bool pre_cache = true;
  // Tunings of the gamma kernel (gamma_device.cuh; SampleDirichlet's kernel
  // ignores them), same bits either way; GammaBatchBuilder::ServiceOptions
  // picks them per batch. Where every segment of the batch has one seed
  // (GammaBatch::one_seed), the Philox round keys come from the kernel's
  // parameters rather than being added up for every block.
  bool seed_keys_in_params = true;
  // Outputs of shapes below 1 (the boost: ~130 instructions) that share a
  // warp's call with outputs of larger shapes are queued and written 32 at
  // a time, all lanes together. Pays for per-element shapes on both sides
  // of 1 only; elsewhere it costs 1-5% in float, up to 25% in float64 with
  // pre-caching (the queue's registers and shared memory).
  bool defer_slow_outputs = false;
  // Float without pre-caching: registers capped for 12 resident blocks of
  // 128 threads (75% occupancy) instead of 10, with a few bytes spilled.
  bool more_warps = false;
  // Non-null: run the instrumented variant (slower) and add to *counters;
  // it runs without the tunings above (they change nothing it counts).
  GammaCounters* counters = nullptr;
  // 0: as many blocks as fill the device (or fewer for small batches).
  int max_blocks = 0;
};

// Enqueues the batch on `stream`: zeroes segment_status, then one kernel.
// Errors are launch errors; per-segment results arrive in segment_status.
template <typename T>
absl::Status LaunchGamma(const GammaBatch<T>& batch, cudaStream_t stream,
                         const GammaLaunchOptions& options = {});

// A segment's status word as the CPU backend would have answered: OK;
// INTERNAL if an item exhausted kGammaMaxAttempts; OUT_OF_RANGE if every
// component of a Dirichlet row underflowed.
absl::Status SegmentStatus(uint32_t word, int segment);

// ------------------------------------------------------------ packing ----

// The view on a builder's staged regions, for the builders below.
template <typename Builder>
auto ViewOnRegions(const Builder& builder, const DeviceRegions& device) {
  const auto out = builder.OutLayout();
  return builder.View(device.in, out.Values(device.out),
                      out.StatusWords(device.out));
}

// Collects requests into the descriptor arrays of one batch (host memory),
// validating each as the CPU backend does. All arrays then travel in one
// copy: PackInto lays them out in ArenaBytes() bytes, View gives the batch
// over the device copy of that arena. For the staging pipeline (staging.h)
// the arena is the in region and the out region holds the outputs, then one
// status word per segment (OutLayout).
template <typename T>
class GammaBatchBuilder {
 public:
  // Per-element parameters; `scale` empty means every scale is 1. Returns
  // the segment index.
  absl::StatusOr<int> AddElements(absl::Span<const T> shape,
                                  absl::Span<const T> scale, bool log_output,
                                  uint64_t seed, uint64_t first_item);
  // Grouped parameters: sum of counts outputs.
  absl::StatusOr<int> AddGroups(absl::Span<const GammaGroup<T>> groups,
                                bool log_output, uint64_t seed,
                                uint64_t first_item);

  int64_t total() const { return total_; }
  const std::vector<GammaSegment>& segments() const { return segments_; }

  // Whether warp-aware pre-caching (GammaLaunchOptions::pre_cache) should
  // speed this batch up, from the items' shapes (estimated from up to 64
  // evenly spaced shapes of a per-element segment). Measured on H100s
  // (kernels-h100-session7-2026-11-26.md, gamma-v3-trial-h100-2026-11-25.md,
  // gamma-kernel.md "Session 11"): in float32 pre-caching wins at shapes
  // 0.3, 1 and 2.5 (acceptance 0.95-0.99: lanes idle for the warp's
  // slowest) and loses 3-8% at shape 10: most items below
  // kPreCacheShapeBelow. In float64 (two items of double state cost
  // occupancy) it wins only where acceptance is lowest, shape 1 (0.952:
  // +11%), and loses at 0.3 (0.967: -9%), 2.5 and 10: most items in
  // [1, kPreCacheDoubleBelow).
  bool PreCachePays() const;
  static constexpr double kPreCacheShapeBelow = 5.0;
  static constexpr double kPreCacheDoubleBelow = 1.25;

  // The options the service launches this batch with (bench/results/
  // gamma-kernel.md, "Session 11"): pre-caching where it pays; round keys
  // from the parameters always (+1-3%); slow outputs deferred where a
  // per-element segment has shapes on both sides of 1 (U(0.1, 10): +10%
  // float32, +23% float64; a loss elsewhere); more warps in float without
  // pre-caching (+1-2%).
  GammaLaunchOptions ServiceOptions() const;

  size_t ArenaBytes() const;
  void PackInto(void* host_arena) const;
  GammaBatch<T> View(const void* device_arena, T* out,
                     uint32_t* segment_status) const;

  ValuesAndStatusWords<T> OutLayout() const {
    return {total_, segments_.size()};
  }
  StagingPlan Staging() const { return {ArenaBytes(), OutLayout().bytes(), 0}; }
  GammaBatch<T> View(const DeviceRegions& device) const {
    return ViewOnRegions(*this, device);
  }

 private:
  struct Offsets {
    size_t segments, shape, scale, groups, end;
  };
  Offsets Layout() const;

  std::vector<GammaSegment> segments_;
  std::vector<T> shape_;
  std::vector<T> scale_;
  std::vector<GammaGroupParams<T>> groups_;
  int64_t total_ = 0;
  double low_shape_items_ = 0;   // estimated items below kPreCacheShapeBelow
  double unit_shape_items_ = 0;  // in [1, kPreCacheDoubleBelow)
  bool boost_mixed_ = false;     // a per-element segment's shapes straddle 1
};

extern template absl::Status LaunchGamma<float>(const GammaBatch<float>&,
                                                cudaStream_t,
                                                const GammaLaunchOptions&);
extern template absl::Status LaunchGamma<double>(const GammaBatch<double>&,
                                                 cudaStream_t,
                                                 const GammaLaunchOptions&);
extern template class GammaBatchBuilder<float>;
extern template class GammaBatchBuilder<double>;

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_GAMMA_H_
