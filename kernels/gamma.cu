// CUDA kernel of SampleGamma, bit for bit the CPU backend (gamma_cpu.cc):
// the rejection loop of gamma_device.cuh (Marsaglia-Tsang with warp-aware
// pre-caching, shared with SampleDirichlet's kernel in dirichlet.cu) over
// gamma segments. This file holds the gamma item source, the launcher and the
// batch builder.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "gamma_device.cuh"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/gamma_core.h"
#include "sampler/kernels/philox.h"
#include "segment_arena.h"

namespace sampler::kernels::cuda {
namespace {

using gamma_device::Cursor;
using gamma_device::FindSegment;
using gamma_device::Item;
using gamma_device::LastAtOrBelow;
using gamma_device::LaunchRejection;
using segment_arena::After;
using segment_arena::CheckRoom;
using segment_arena::CopyInto;

// ------------------------------------------------------ item source ----

template <typename T>
struct GammaSource {
  using Batch = GammaBatch<T>;
  static constexpr KindTag kTag = KindTag::kGamma;

  // `prev` is the item fetched before at index - delta (ignored on the
  // first fetch, whose window is empty); `out` may alias it.
  static __device__ __forceinline__ void Fetch(const Batch& b, int64_t index,
                                               int64_t delta, Cursor& c,
                                               const Item<T>& prev,
                                               Item<T>& out) {
    if (index >= b.total) return;
    if (index >= c.window_end) {
      Refresh(b, index, c, out);
      return;
    }
    // Same segment: seed and flags carry over, the item moves with the
    // index; same group: so do the parameters.
    out.seed = prev.seed;
    out.item = prev.item + static_cast<uint64_t>(delta);
    out.log_output = prev.log_output;
    if (c.grouped) {
      out.g = prev.g;
      out.scale = prev.scale;
    } else {
      LoadElement(b, index, c, out);
    }
  }

  static __device__ __forceinline__ void LoadElement(const Batch& b,
                                                     int64_t index,
                                                     const Cursor& c,
                                                     Item<T>& out) {
    out.g = GammaPrepare(__ldg(b.shape + (c.param_base + index)));
    out.scale = (c.flags & kSegmentUnitScale) != 0
                    ? T(1)
                    : __ldg(b.scale + (c.scale_base + index));
  }

  static __device__ __forceinline__ void Refresh(const Batch& b, int64_t index,
                                                 Cursor& c, Item<T>& out) {
    const int64_t s = FindSegment(b.segments, b.num_segments, c.segment, index);
    const GammaSegment seg = b.segments[s];
    c.segment = s;
    c.flags = seg.flags;
    c.grouped = seg.num_groups > 0;
    c.param_base = seg.param_begin - seg.out_begin;
    c.scale_base = seg.scale_begin - seg.out_begin;
    out.seed = seg.seed;
    out.item = seg.first_item + static_cast<uint64_t>(index - seg.out_begin);
    out.log_output = (seg.flags & kSegmentLogOutput) != 0;
    const int64_t segment_end = seg.out_begin + seg.count;
    if (!c.grouped) {
      c.window_end = segment_end;
      LoadElement(b, index, c, out);
      return;
    }
    const GammaGroupParams<T>* groups = b.groups;
    const int64_t limit = seg.param_begin + seg.num_groups;
    const int64_t g =
        LastAtOrBelow(seg.param_begin, limit - 1, index,
                      [groups](int64_t k) { return groups[k].out_begin; });
    c.window_end = g + 1 < limit ? groups[g + 1].out_begin : segment_end;
    // Once per group and lane: a pure function of the shape, so the bits
    // are those of the CPU's per-item (or per-group) preparation.
    out.g = GammaPrepare(groups[g].shape);
    out.scale = groups[g].scale;
  }

  static __device__ __forceinline__ void Write(const Batch& b, int64_t index,
                                               const Item<T>& it,
                                               const GammaDraw<T>& x) {
    Store(b.out, index, it.g, x, it.scale, it.log_output);
  }

  static __device__ __forceinline__ void Store(T* out, int64_t index,
                                               const GammaShape<T>& g,
                                               const GammaDraw<T>& x, T scale,
                                               bool log_output) {
    // log(scale) per item even for groups: the same pure function of the
    // same value as the CPU's per-group hoisting.
    const T log_scale = log_output ? detmath::Log(scale) : T(0);
    out[index] = GammaOutput(g, x, scale, log_scale, log_output);
  }

  // Deferred outputs (gamma_device.cuh, kDefer): the boost of shapes below
  // 1 (two logarithms, a division and an exponential per item).
  struct SlowOutput {
    int64_t index;
    T shape, scale, dv, ub;
    bool log_output;
  };
  static __device__ __forceinline__ bool IsSlow(const Item<T>& it) {
    return it.g.boost;
  }
  static __device__ __forceinline__ SlowOutput Slow(int64_t index,
                                                    const Item<T>& it,
                                                    const GammaDraw<T>& x) {
    return SlowOutput{index, it.g.shape, it.scale, x.dv, x.ub, it.log_output};
  }
  static __device__ __forceinline__ void WriteSlow(T* out,
                                                   const SlowOutput& e) {
    // GammaOutput reads the shape and the boost flag only.
    GammaShape<T> g;
    g.shape = e.shape;
    g.d = T(0);
    g.c = T(0);
    g.boost = true;
    Store(out, e.index, g, GammaDraw<T>{e.dv, e.ub}, e.scale, e.log_output);
  }
};

// The tunings of gamma_device.cuh that the batch allows and the options ask
// for, as template arguments.
template <typename T, bool kMoreWarps>
absl::Status LaunchTuned(const GammaBatch<T>& batch, cudaStream_t stream,
                         const GammaLaunchOptions& options, bool keys,
                         bool defer) {
  using S = GammaSource<T>;
  if (keys) {
    return defer ? LaunchRejection<T, S, true, true, kMoreWarps>(batch, stream,
                                                                 options)
                 : LaunchRejection<T, S, true, false, kMoreWarps>(batch, stream,
                                                                  options);
  }
  return defer ? LaunchRejection<T, S, false, true, kMoreWarps>(batch, stream,
                                                                options)
               : LaunchRejection<T, S, false, false, kMoreWarps>(batch, stream,
                                                                 options);
}

template <typename T>
absl::Status LaunchTuned(const GammaBatch<T>& batch, cudaStream_t stream,
                         const GammaLaunchOptions& options) {
  const bool keys = options.seed_keys_in_params && batch.one_seed;
  const bool defer = options.defer_slow_outputs;
  if constexpr (sizeof(T) == 4) {  // more warps: float only
    if (options.more_warps) {
      return LaunchTuned<T, true>(batch, stream, options, keys, defer);
    }
  }
  return LaunchTuned<T, false>(batch, stream, options, keys, defer);
}
}  // namespace

template <typename T>
absl::Status LaunchGamma(const GammaBatch<T>& batch, cudaStream_t stream,
                         const GammaLaunchOptions& options) {
  if (batch.num_segments > 0) {
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(batch.segment_status, 0,
                        sizeof(uint32_t) * batch.num_segments, stream));
  }
  return LaunchTuned(batch, stream, options);
}

absl::Status SegmentStatus(uint32_t word, int segment) {
  if ((word & kStatusAttemptCap) != 0) {
    return absl::InternalError(
        absl::StrCat("segment ", segment, ": an item exceeded ",
                     kGammaMaxAttempts, " rejection attempts"));
  }
  if ((word & kStatusRowUnderflow) != 0) {
    return absl::OutOfRangeError(absl::StrCat(
        "segment ", segment,
        ": every component's log-gamma variate of a Dirichlet row underflowed "
        "to -inf (concentrations too close to the smallest normal number)"));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ builder ----

template <typename T>
absl::StatusOr<int> GammaBatchBuilder<T>::AddElements(absl::Span<const T> shape,
                                                      absl::Span<const T> scale,
                                                      bool log_output,
                                                      uint64_t seed,
                                                      uint64_t first_item) {
  // An empty scale stands for all ones: checking the shapes against
  // themselves names a bad shape as "shape[i]" (shapes are checked first).
  if (absl::Status s =
          ValidateGammaParams(shape, scale.empty() ? shape : scale);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRoom(segments_.size(), total_, shape.size());
      !s.ok()) {
    return s;
  }
  GammaSegment seg;
  seg.seed = seed;
  seg.first_item = first_item;
  seg.out_begin = total_;
  seg.count = static_cast<int64_t>(shape.size());
  seg.param_begin = static_cast<int64_t>(shape_.size());
  seg.num_groups = 0;
  seg.flags = (log_output ? kSegmentLogOutput : 0u) |
              (scale.empty() ? kSegmentUnitScale : 0u);
  seg.scale_begin = static_cast<int64_t>(scale_.size());
  // The launch options' estimates from a bounded sample: a heuristic, so a
  // 10M element request does not pay a scan for it.
  const size_t n = shape.size();
  const size_t samples = std::min<size_t>(n, 64);
  int below = 0, unit = 0, boost = 0;
  for (size_t i = 0; i < samples; ++i) {
    const T a = shape[i * n / samples];
    below += a < T(kPreCacheShapeBelow) ? 1 : 0;
    unit += a >= T(1) && a < T(kPreCacheDoubleBelow) ? 1 : 0;
    boost += a < T(1) ? 1 : 0;
  }
  if (samples > 0) {
    low_shape_items_ += static_cast<double>(n) * below / samples;
    unit_shape_items_ += static_cast<double>(n) * unit / samples;
  }
  boost_mixed_ =
      boost_mixed_ || (boost > 0 && boost < static_cast<int>(samples));
  shape_.insert(shape_.end(), shape.begin(), shape.end());
  // Unit scales are not stored: the kernel does not read them.
  scale_.insert(scale_.end(), scale.begin(), scale.end());
  total_ += seg.count;
  segments_.push_back(seg);
  return static_cast<int>(segments_.size() - 1);
}

template <typename T>
absl::StatusOr<int> GammaBatchBuilder<T>::AddGroups(
    absl::Span<const GammaGroup<T>> groups, bool log_output, uint64_t seed,
    uint64_t first_item) {
  uint64_t count = 0;
  for (const GammaGroup<T>& g : groups) {
    if (g.count > 0) count += static_cast<uint64_t>(g.count);
  }
  if (absl::Status s = ValidateGammaGroups(groups, count); !s.ok()) return s;
  if (absl::Status s = CheckRoom(segments_.size(), total_, count); !s.ok()) {
    return s;
  }
  GammaSegment seg;
  seg.seed = seed;
  seg.first_item = first_item;
  seg.out_begin = total_;
  seg.count = static_cast<int64_t>(count);
  seg.param_begin = static_cast<int64_t>(groups_.size());
  seg.flags = log_output ? kSegmentLogOutput : 0u;
  int64_t at = total_;
  for (const GammaGroup<T>& g : groups) {
    if (g.count == 0) continue;  // no outputs: nothing to find
    groups_.push_back(GammaGroupParams<T>{g.shape, g.scale, at});
    at += g.count;
    if (g.shape < T(kPreCacheShapeBelow)) {
      low_shape_items_ += static_cast<double>(g.count);
    }
    if (g.shape >= T(1) && g.shape < T(kPreCacheDoubleBelow)) {
      unit_shape_items_ += static_cast<double>(g.count);
    }
  }
  seg.num_groups = static_cast<int64_t>(groups_.size()) - seg.param_begin;
  total_ += seg.count;
  segments_.push_back(seg);
  return static_cast<int>(segments_.size() - 1);
}

template <typename T>
bool GammaBatchBuilder<T>::PreCachePays() const {
  const double items = sizeof(T) == 4 ? low_shape_items_ : unit_shape_items_;
  return 2 * items > static_cast<double>(total_);
}

template <typename T>
GammaLaunchOptions GammaBatchBuilder<T>::ServiceOptions() const {
  GammaLaunchOptions options;
  options.pre_cache = PreCachePays();
  options.seed_keys_in_params = true;
  options.defer_slow_outputs = boost_mixed_;
  options.more_warps = sizeof(T) == 4 && !options.pre_cache;
  return options;
}

template <typename T>
typename GammaBatchBuilder<T>::Offsets GammaBatchBuilder<T>::Layout() const {
  Offsets o;
  o.segments = 0;
  o.shape = After(o.segments, segments_);
  o.scale = After(o.shape, shape_);
  o.groups = After(o.scale, scale_);
  o.end = After(o.groups, groups_);
  return o;
}

template <typename T>
size_t GammaBatchBuilder<T>::ArenaBytes() const {
  return Layout().end;
}

template <typename T>
void GammaBatchBuilder<T>::PackInto(void* host_arena) const {
  const Offsets o = Layout();
  char* base = static_cast<char*>(host_arena);
  CopyInto(base, o.segments, segments_);
  CopyInto(base, o.shape, shape_);
  CopyInto(base, o.scale, scale_);
  CopyInto(base, o.groups, groups_);
}

template <typename T>
GammaBatch<T> GammaBatchBuilder<T>::View(const void* device_arena, T* out,
                                         uint32_t* segment_status) const {
  const Offsets o = Layout();
  const char* base = static_cast<const char*>(device_arena);
  GammaBatch<T> b;
  b.segments = reinterpret_cast<const GammaSegment*>(base + o.segments);
  b.num_segments = static_cast<int32_t>(segments_.size());
  b.total = total_;
  b.shape = reinterpret_cast<const T*>(base + o.shape);
  b.scale = reinterpret_cast<const T*>(base + o.scale);
  b.groups = reinterpret_cast<const GammaGroupParams<T>*>(base + o.groups);
  b.out = out;
  b.segment_status = segment_status;
  // One seed for the whole batch (every batch of one request): the kernel
  // may take its Philox round keys from its parameters.
  b.one_seed = !segments_.empty() &&
               std::all_of(segments_.begin(), segments_.end(),
                           [&](const GammaSegment& seg) {
                             return seg.seed == segments_.front().seed;
                           });
  if (b.one_seed) b.round_keys = PhiloxKeySchedule(segments_.front().seed);
  return b;
}

template absl::Status LaunchGamma<float>(const GammaBatch<float>&, cudaStream_t,
                                         const GammaLaunchOptions&);
template absl::Status LaunchGamma<double>(const GammaBatch<double>&,
                                          cudaStream_t,
                                          const GammaLaunchOptions&);
template class GammaBatchBuilder<float>;
template class GammaBatchBuilder<double>;

}  // namespace sampler::kernels::cuda
