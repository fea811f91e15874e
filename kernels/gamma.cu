// CUDA kernels of SampleGamma and SampleDirichlet: Marsaglia-Tsang rejection
// with warp-aware pre-caching (gamma-rejection-on-gpus.txt), over segmented
// batches, bit for bit the CPU backend (gamma_cpu.cc, dirichlet_cpu.cc).
//
// The rejection loop. Each lane owns a sequence of outputs: lane l of global
// warp w takes batch indices (w + k W) * 32 + l for k = 0, 1, ... (W warps in
// the grid), so each step k ("call") writes 32 consecutive outputs, one
// coalesced store per warp. A call runs warp-wide iterations until every
// lane has an accepted attempt for its current item; a lane that already has
// one is idle in a plain implementation (its "ghost" iteration computes
// nothing useful), while the warp waits for its slowest lane. With
// pre-caching the idle lane runs the attempts of its NEXT item instead and
// keeps the first accepted one, so that the next call may start with that
// lane already done. Attempt a of item i always uses Philox counter (a, i),
// whichever lane or iteration runs it, so the bits are those of the CPU loop.
// The per-attempt arithmetic is gamma_core.h's, where the device also
// settles most logarithmic tests from fast logarithms with a proven margin
// (FastLogTest) and computes Philox with direct 32 x 32 -> 64 multiplies.
//
// Measured (bench/results/gamma-kernel.md): warp iterations per call match
// the Markov-chain model of the seed to three digits, e.g. 1.871 -> 1.214
// for shape 1 (lane efficiency 0.56 -> 0.87). The kernel is bound by
// instruction issue (~250 instructions per attempt, ~70% of issue slots
// used), not by memory.
//
// Launch: 128-thread blocks (register allocation then leaves the fewest
// warps unused: 64 registers in float, 92-94 in double), as many blocks as
// are resident at once, the grid striding over the batch.
//
// Dirichlet: the same loop in log space (GammaLogUnscaled, Dirichlet tag)
// writes the row's log-gamma variates into out; a second kernel normalises
// every row in place exactly as dirichlet_cpu.cc does, the sum of
// exp(lg - m) added in component order.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/gamma3.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/gamma_core.h"
#include "sampler/kernels/philox.h"

namespace sampler::kernels::cuda {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kBlockThreads = 128;

// The item a lane works on (or has pre-cached): what its attempts and its
// output need, fetched once per item. Registers are what limits occupancy
// here, so nothing is kept that can be derived (the batch index of the
// pre-cached item is the current one plus the grid stride).
template <typename T>
struct Item {
  uint64_t item;  // contract item (Philox counter words 1 and 2)
  uint64_t seed;
  GammaShape<T> g;
  T scale;
  bool log_output;
};

// Index of the last entry in [lo, hi] whose key is <= x: empty segments and
// groups share their successor's begin and are skipped. Requires
// key(lo) <= x.
template <typename Key>
__device__ __forceinline__ int64_t LastAtOrBelow(int64_t lo, int64_t hi,
                                                 int64_t x, Key key) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (key(mid) <= x) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// ------------------------------------------------------ item sources ----
//
// A source maps batch indices to items. A lane fetches increasing indices
// (its own, then one grid stride further each time), so a per-lane cursor
// keeps the window of indices over which the segment's seed and flags (and,
// for groups, the group's parameters) stay the same. Inside the window an
// item is derived from the previous fetch; only on leaving it does the
// cursor search the descriptors again.

struct Cursor {
  int64_t segment = -1;
  int64_t window_end = 0;  // one past the last index of the window
  int64_t param_base = 0;  // per-element: param_begin - out_begin
  int64_t scale_base = 0;  // per-element: scale_begin - out_begin
  uint32_t flags = 0;
  bool grouped = false;
};

// The segment holding `index`, searched from the cursor's one.
template <typename Segment>
__device__ __forceinline__ int64_t FindSegment(const Segment* segs, int n,
                                               int64_t from, int64_t index) {
  return LastAtOrBelow(from < 0 ? 0 : from, n - 1, index,
                       [segs](int64_t k) { return segs[k].out_begin; });
}

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
    // log(scale) per item even for groups: the same pure function of the
    // same value as the CPU's per-group hoisting.
    const T log_scale = it.log_output ? detmath::Log(it.scale) : T(0);
    b.out[index] = GammaOutput(it.g, x, it.scale, log_scale, it.log_output);
  }
};

template <typename T>
struct DirichletSource {
  using Batch = DirichletBatch<T>;
  static constexpr KindTag kTag = KindTag::kDirichlet;

  static __device__ __forceinline__ void Fetch(const Batch& b, int64_t index,
                                               int64_t delta, Cursor& c,
                                               const Item<T>& prev,
                                               Item<T>& out) {
    if (index >= b.total) return;
    if (index >= c.window_end) {
      const int64_t s =
          FindSegment(b.segments, b.num_segments, c.segment, index);
      const DirichletSegment seg = b.segments[s];
      c.segment = s;
      c.window_end = seg.out_begin + seg.count;
      out.seed = seg.seed;
      out.item = seg.first_item + static_cast<uint64_t>(index - seg.out_begin);
    } else {
      out.seed = prev.seed;
      out.item = prev.item + static_cast<uint64_t>(delta);
    }
    out.log_output = true;
    out.g = GammaPrepare(__ldg(b.alpha + index));
    out.scale = T(1);
  }

  // The row's log-gamma variate, normalised later by the row kernel.
  static __device__ __forceinline__ void Write(const Batch& b, int64_t index,
                                               const Item<T>& it,
                                               const GammaDraw<T>& x) {
    b.out[index] = GammaLogUnscaled(it.g, x);
  }
};

// ------------------------------------------------- the rejection loop ----

// Lane-local tallies of the instrumented variant.
struct Tally {
  unsigned long long calls = 0, iterations = 0, attempts = 0, items = 0,
                     warp_full = 0, lane_full = 0, warp_exact = 0,
                     lane_exact = 0;
};

__device__ __forceinline__ unsigned long long WarpSum(unsigned long long x) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o /= 2) {
    x += __shfl_xor_sync(kFullMask, x, o);
  }
  return x;
}

// The attempt cap was hit (never expected): flag the item's segment. Rare,
// so the segment is searched here rather than kept in registers.
template <typename Segment>
__device__ __forceinline__ void ReportCap(const Segment* segments, int n,
                                          uint32_t* status, int64_t index) {
  atomicOr(status + FindSegment(segments, n, 0, index), kStatusAttemptCap);
}

// What a lane knows about one of its items: where it is and how far its
// attempts have got.
template <typename T>
struct Slot {
  Item<T> it;
  uint32_t attempt;  // attempts made so far
  bool done;         // an attempt was accepted: `draw` holds it
  GammaDraw<T> draw;
};

// One call: warp iterations until every lane's current item (slot kCur) is
// accepted, its output, and the refill of the freed slot. With pre-caching
// the two slots swap roles from call to call (the caller alternates kCur),
// so no item is ever copied between registers: the next item is fetched
// straight into the slot the written one leaves. `index` is the batch index
// of the current item; the pre-cached one is one stride further.
template <int kCur, typename T, typename Source, bool kPreCache, bool kCount>
__device__ __forceinline__ void RunCall(const typename Source::Batch& batch,
                                        int64_t& index, int64_t stride,
                                        Cursor& cursor, Slot<T> (&slots)[2],
                                        Tally& tally) {
  constexpr int kNxt = kPreCache ? 1 - kCur : kCur;
  Slot<T>& cur = slots[kCur];
  Slot<T>& nxt = slots[kNxt];
  const int64_t total = batch.total;
  for (;;) {
    const bool need = index < total && !cur.done;
    if (!__any_sync(kFullMask, need)) break;
    bool ahead = false;
    if constexpr (kPreCache) {
      ahead = !need && index + stride < total && !nxt.done;
    }
    GammaTestPath path = GammaTestPath::kSqueeze;
    if (need || ahead) {
      const uint64_t seed = need ? cur.it.seed : nxt.it.seed;
      const uint64_t item = need ? cur.it.item : nxt.it.item;
      const uint32_t attempt = need ? cur.attempt : nxt.attempt;
      GammaShape<T> g;  // GammaTryAttempt reads d and c only
      g.d = need ? cur.it.g.d : nxt.it.g.d;
      g.c = need ? cur.it.g.c : nxt.it.g.c;
      const GammaUniforms<T> u =
          GammaAttemptUniforms<T>(Source::kTag, seed, item, attempt);
      GammaDraw<T> draw{T(0), u.ub};
      bool accepted = GammaTryAttempt(g, u, &draw.dv, kCount ? &path : nullptr);
      if (!accepted && attempt + 1 == kGammaMaxAttempts) {
        // As GammaDrawItem: NaN, and the segment is flagged.
        accepted = true;
        draw = GammaDraw<T>{gamma_internal::QuietNaN<T>(), T(1)};
        ReportCap(batch.segments, batch.num_segments, batch.segment_status,
                  need ? index : index + stride);
      }
      if (need) {
        cur.attempt = attempt + 1;
        cur.done = accepted;
        if (accepted) cur.draw = draw;
      } else {
        nxt.attempt = attempt + 1;
        nxt.done = accepted;
        if (accepted) nxt.draw = draw;
      }
      if constexpr (kCount) {
        ++tally.attempts;
        tally.lane_full += path != GammaTestPath::kSqueeze ? 1 : 0;
        tally.lane_exact += path == GammaTestPath::kExactLog ? 1 : 0;
      }
    }
    if constexpr (kCount) {
      ++tally.iterations;
      tally.warp_full +=
          __any_sync(kFullMask, path != GammaTestPath::kSqueeze) ? 1 : 0;
      tally.warp_exact +=
          __any_sync(kFullMask, path == GammaTestPath::kExactLog) ? 1 : 0;
    }
  }
  if (index < total) {
    Source::Write(batch, index, cur.it, cur.draw);
    if constexpr (kCount) ++tally.items;
  }
  if constexpr (kCount) ++tally.calls;
  index += stride;
  // The freed slot takes the lane's item after the (new) current one; the
  // previous fetch, from which it may derive, is the other slot's.
  if constexpr (kPreCache) {
    Source::Fetch(batch, index + stride, stride, cursor, nxt.it, cur.it);
  } else {
    Source::Fetch(batch, index, stride, cursor, cur.it, cur.it);
  }
  cur.attempt = 0;
  cur.done = false;
}

// kPreCache: finished lanes work on their next item (see the file comment).
// kCount: the instrumented variant, adding to *counters.
template <typename T, typename Source, bool kPreCache, bool kCount>
__global__ void __launch_bounds__(kBlockThreads)
    RejectionKernel(const typename Source::Batch batch,
                    GammaCounters* counters) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  // Batch indices between a lane's consecutive items.
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlockThreads;
  const int64_t total = batch.total;

  Cursor cursor;
  Slot<T> slots[2];  // indexed by constants only: registers
  int64_t index =
      static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  Source::Fetch(batch, index, stride, cursor, slots[0].it, slots[0].it);
  if constexpr (kPreCache) {
    Source::Fetch(batch, index + stride, stride, cursor, slots[0].it,
                  slots[1].it);
  }
  for (Slot<T>& s : slots) {
    s.attempt = 0;
    s.done = false;
    s.draw = GammaDraw<T>{T(0), T(1)};
  }
  Tally tally;

  // Every lane stays in the loops to the end, so the full-mask votes are
  // legal: all lanes of a warp see the same loop conditions. Unrolled by
  // two so that the slots' roles are compile-time constants.
  for (;;) {
    if (!__any_sync(kFullMask, index < total)) break;
    RunCall<0, T, Source, kPreCache, kCount>(batch, index, stride, cursor,
                                             slots, tally);
    if constexpr (kPreCache) {
      if (!__any_sync(kFullMask, index < total)) break;
      RunCall<1, T, Source, kPreCache, kCount>(batch, index, stride, cursor,
                                               slots, tally);
    }
  }

  if constexpr (kCount) {
    // Warp tallies are the same in every lane; lane tallies are summed.
    const unsigned long long attempts = WarpSum(tally.attempts);
    const unsigned long long items = WarpSum(tally.items);
    const unsigned long long lane_full = WarpSum(tally.lane_full);
    const unsigned long long lane_exact = WarpSum(tally.lane_exact);
    if (lane == 0) {
      atomicAdd(&counters->warp_calls, tally.calls);
      atomicAdd(&counters->warp_iterations, tally.iterations);
      atomicAdd(&counters->warp_full_tests, tally.warp_full);
      atomicAdd(&counters->warp_exact_tests, tally.warp_exact);
      atomicAdd(&counters->lane_attempts, attempts);
      atomicAdd(&counters->lane_items, items);
      atomicAdd(&counters->lane_full_tests, lane_full);
      atomicAdd(&counters->lane_exact_tests, lane_exact);
    }
  }
}

// ---------------------------------------------- Dirichlet rows ----

// Per lane: the segment of increasing row indices (rows are searched like
// outputs, by row_begin).
struct RowCursor {
  int64_t segment = -1;
  int64_t row_end = 0;
  bool log_output = false;
};

template <typename T>
__device__ __forceinline__ void FindRowSegment(const DirichletBatch<T>& b,
                                               int64_t row, RowCursor& c) {
  if (row < c.row_end) return;
  const DirichletSegment* segs = b.segments;
  c.segment = LastAtOrBelow(c.segment + 1, b.num_segments - 1, row,
                            [segs](int64_t k) { return segs[k].row_begin; });
  const DirichletSegment& seg = segs[c.segment];
  c.row_end = seg.row_begin + seg.num_rows;
  c.log_output = (seg.flags & kSegmentLogOutput) != 0;
}

template <typename T>
__device__ __forceinline__ T NegativeInfinity() {
  if constexpr (std::is_same_v<T, float>) {
    return -detmath::FloatFromBits(0x7f800000u);
  } else {
    return -detmath::DoubleFromBits(0x7ff0000000000000ull);
  }
}

// A short row by one thread: the CPU loop itself.
template <typename T>
__device__ void NormalizeRowThread(const DirichletBatch<T>& b, int64_t begin,
                                   int64_t end, int64_t segment,
                                   bool log_output) {
  T* out = b.out;
  T m = NegativeInfinity<T>();
  for (int64_t j = begin; j < end; ++j) {
    if (out[j] > m) m = out[j];
  }
  if (m == NegativeInfinity<T>()) {
    atomicOr(b.segment_status + segment, kStatusRowUnderflow);
  }
  T sum = T(0);
  for (int64_t j = begin; j < end; ++j) sum += DirichletTerm(out[j], m);
  const T log_sum = DirichletLogSum(sum);
  for (int64_t j = begin; j < end; ++j) {
    out[j] = DirichletOutput(out[j], m, log_sum, log_output);
  }
}

// A long row by the whole warp: the maximum by a butterfly (exact in any
// order: log-variates are never NaN or -0, see below), the terms in
// parallel, their sum in component order (every lane adds the 32 terms of a
// chunk as broadcast by shuffles, so every lane holds the CPU's sum).
template <typename T>
__device__ void NormalizeRowWarp(const DirichletBatch<T>& b, int64_t begin,
                                 int64_t end, int64_t segment, bool log_output,
                                 int lane) {
  T* out = b.out;
  // Log-variates are log(d v) [+ log(ub) / shape]: detmath::Log gives -0
  // nowhere and a sum of nonzero values rounds to +0, so no +0/-0 tie can
  // make the maximum's bits depend on the order; NaN (the attempt cap) is
  // ignored by `>` in both backends and reported anyway.
  T m = NegativeInfinity<T>();
  for (int64_t j = begin + lane; j < end; j += kWarpSize) {
    const T lg = out[j];
    if (lg > m) m = lg;
  }
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o /= 2) {
    const T other = __shfl_xor_sync(kFullMask, m, o);
    if (other > m) m = other;
  }
  if (lane == 0 && m == NegativeInfinity<T>()) {
    atomicOr(b.segment_status + segment, kStatusRowUnderflow);
  }
  T sum = T(0);
  for (int64_t chunk = begin; chunk < end; chunk += kWarpSize) {
    const int64_t left = end - chunk;
    const T term = lane < left ? DirichletTerm(out[chunk + lane], m) : T(0);
    if (left >= kWarpSize) {
#pragma unroll
      for (int k = 0; k < kWarpSize; ++k) {
        sum += __shfl_sync(kFullMask, term, k);
      }
    } else {
      for (int k = 0; k < left; ++k) sum += __shfl_sync(kFullMask, term, k);
    }
  }
  const T log_sum = DirichletLogSum(sum);
  for (int64_t j = begin + lane; j < end; j += kWarpSize) {
    out[j] = DirichletOutput(out[j], m, log_sum, log_output);
  }
}

// Rows of up to 32 components go one per lane; longer rows are taken by the
// whole warp, one after the other, so that one long row does not leave 31
// lanes waiting for a sequential loop.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    DirichletNormalizeKernel(const DirichletBatch<T> b) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t warp =
      (static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x) /
      kWarpSize;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlockThreads;
  RowCursor cursor;
  for (int64_t base = warp * kWarpSize; base < b.num_rows; base += stride) {
    const int64_t row = base + lane;
    const bool valid = row < b.num_rows;
    int64_t begin = 0, end = 0;
    if (valid) {
      begin = b.row_offsets[row];
      end = b.row_offsets[row + 1];
      FindRowSegment(b, row, cursor);
    }
    const bool is_long = valid && end - begin > kWarpSize;
    if (valid && !is_long) {
      NormalizeRowThread(b, begin, end, cursor.segment, cursor.log_output);
    }
    unsigned long_rows = __ballot_sync(kFullMask, is_long);
    while (long_rows != 0) {
      const int src = __ffs(long_rows) - 1;
      long_rows &= long_rows - 1;
      const int64_t rb = __shfl_sync(kFullMask, begin, src);
      const int64_t re = __shfl_sync(kFullMask, end, src);
      const int64_t seg = __shfl_sync(kFullMask, cursor.segment, src);
      const bool log_output = __shfl_sync(kFullMask, cursor.log_output, src);
      NormalizeRowWarp(b, rb, re, seg, log_output, lane);
    }
  }
}

// ------------------------------------------------------- launching ----

// Blocks for `work` threads' worth of items: as many as are resident at
// once on the device at most (the grid strides over the rest), fewer when
// the batch has fewer items than resident threads.
template <typename Kernel>
absl::Status GridSize(Kernel kernel, int64_t work, int max_blocks,
                      int* blocks) {
  int device = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  int sms = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int per_sm = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, kernel, kBlockThreads, 0));
  int64_t n = static_cast<int64_t>(sms) * std::max(per_sm, 1);
  n = std::min(n, (work + kBlockThreads - 1) / kBlockThreads);
  if (max_blocks > 0) n = std::min<int64_t>(n, max_blocks);
  *blocks = static_cast<int>(std::max<int64_t>(n, 1));
  return absl::OkStatus();
}

template <typename T, typename Source, bool kPreCache, bool kCount>
absl::Status RunRejection(const typename Source::Batch& batch,
                          cudaStream_t stream,
                          const GammaLaunchOptions& options) {
  const auto kernel = RejectionKernel<T, Source, kPreCache, kCount>;
  int blocks = 0;
  if (absl::Status s =
          GridSize(kernel, batch.total, options.max_blocks, &blocks);
      !s.ok()) {
    return s;
  }
  kernel<<<blocks, kBlockThreads, 0, stream>>>(batch, options.counters);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

template <typename T, typename Source>
absl::Status LaunchRejection(const typename Source::Batch& batch,
                             cudaStream_t stream,
                             const GammaLaunchOptions& options) {
  if (batch.total <= 0) return absl::OkStatus();
  const bool count = options.counters != nullptr;
  if (options.pre_cache) {
    return count ? RunRejection<T, Source, true, true>(batch, stream, options)
                 : RunRejection<T, Source, true, false>(batch, stream, options);
  }
  return count ? RunRejection<T, Source, false, true>(batch, stream, options)
               : RunRejection<T, Source, false, false>(batch, stream, options);
}

size_t AlignUp(size_t x) {
  constexpr size_t kAlign = 256;  // cudaMalloc's alignment
  return (x + kAlign - 1) / kAlign * kAlign;
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
  // Contract version 3 (gamma3.cu); version 2's kernel only for gamma_bench.
  if (!options.bench_v2_kernel) {
    return LaunchGamma3Kernel(batch, stream, options);
  }
  return LaunchRejection<T, GammaSource<T>>(batch, stream, options);
}

template <typename T>
absl::Status LaunchDirichlet(const DirichletBatch<T>& batch,
                             cudaStream_t stream,
                             const GammaLaunchOptions& options) {
  if (batch.num_segments > 0) {
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(batch.segment_status, 0,
                        sizeof(uint32_t) * batch.num_segments, stream));
  }
  if (absl::Status s =
          LaunchRejection<T, DirichletSource<T>>(batch, stream, options);
      !s.ok()) {
    return s;
  }
  if (batch.num_rows <= 0) return absl::OkStatus();
  int blocks = 0;
  // One warp per 32 rows.
  if (absl::Status s = GridSize(DirichletNormalizeKernel<T>, batch.num_rows,
                                options.max_blocks, &blocks);
      !s.ok()) {
    return s;
  }
  DirichletNormalizeKernel<T><<<blocks, kBlockThreads, 0, stream>>>(batch);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
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

// ------------------------------------------------------------ builders ----

namespace {

absl::Status CheckRoom(size_t segments, int64_t total, size_t more) {
  if (segments >= static_cast<size_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError("too many segments in one batch");
  }
  if (more > static_cast<uint64_t>(INT64_MAX - total)) {
    return absl::ResourceExhaustedError("too many outputs in one batch");
  }
  return absl::OkStatus();
}

}  // namespace

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
  }
  seg.num_groups = static_cast<int64_t>(groups_.size()) - seg.param_begin;
  total_ += seg.count;
  segments_.push_back(seg);
  return static_cast<int>(segments_.size() - 1);
}

template <typename T>
typename GammaBatchBuilder<T>::Offsets GammaBatchBuilder<T>::Layout() const {
  Offsets o;
  o.segments = 0;
  o.shape = AlignUp(o.segments + sizeof(GammaSegment) * segments_.size());
  o.scale = AlignUp(o.shape + sizeof(T) * shape_.size());
  o.groups = AlignUp(o.scale + sizeof(T) * scale_.size());
  o.end = AlignUp(o.groups + sizeof(GammaGroupParams<T>) * groups_.size());
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
  if (!segments_.empty()) {
    std::memcpy(base + o.segments, segments_.data(),
                sizeof(GammaSegment) * segments_.size());
  }
  if (!shape_.empty()) {
    std::memcpy(base + o.shape, shape_.data(), sizeof(T) * shape_.size());
  }
  if (!scale_.empty()) {
    std::memcpy(base + o.scale, scale_.data(), sizeof(T) * scale_.size());
  }
  if (!groups_.empty()) {
    std::memcpy(base + o.groups, groups_.data(),
                sizeof(GammaGroupParams<T>) * groups_.size());
  }
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
  return b;
}

template <typename T>
absl::StatusOr<int> DirichletBatchBuilder<T>::AddRows(
    absl::Span<const T> alpha, absl::Span<const int64_t> row_offsets,
    bool log_output, uint64_t seed, uint64_t first_item) {
  if (absl::Status s = ValidateDirichletParams(alpha, row_offsets); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRoom(segments_.size(), total_, alpha.size());
      !s.ok()) {
    return s;
  }
  DirichletSegment seg;
  seg.seed = seed;
  seg.first_item = first_item;
  seg.out_begin = total_;
  seg.count = static_cast<int64_t>(alpha.size());
  seg.row_begin = static_cast<int64_t>(rows_.size()) - 1;
  seg.num_rows = static_cast<int64_t>(row_offsets.size()) - 1;
  seg.flags = log_output ? kSegmentLogOutput : 0u;
  alpha_.insert(alpha_.end(), alpha.begin(), alpha.end());
  for (size_t r = 1; r < row_offsets.size(); ++r) {
    rows_.push_back(total_ + row_offsets[r]);
  }
  total_ += seg.count;
  segments_.push_back(seg);
  return static_cast<int>(segments_.size() - 1);
}

template <typename T>
typename DirichletBatchBuilder<T>::Offsets DirichletBatchBuilder<T>::Layout()
    const {
  Offsets o;
  o.segments = 0;
  o.alpha = AlignUp(o.segments + sizeof(DirichletSegment) * segments_.size());
  o.rows = AlignUp(o.alpha + sizeof(T) * alpha_.size());
  o.end = AlignUp(o.rows + sizeof(int64_t) * rows_.size());
  return o;
}

template <typename T>
size_t DirichletBatchBuilder<T>::ArenaBytes() const {
  return Layout().end;
}

template <typename T>
void DirichletBatchBuilder<T>::PackInto(void* host_arena) const {
  const Offsets o = Layout();
  char* base = static_cast<char*>(host_arena);
  if (!segments_.empty()) {
    std::memcpy(base + o.segments, segments_.data(),
                sizeof(DirichletSegment) * segments_.size());
  }
  if (!alpha_.empty()) {
    std::memcpy(base + o.alpha, alpha_.data(), sizeof(T) * alpha_.size());
  }
  std::memcpy(base + o.rows, rows_.data(), sizeof(int64_t) * rows_.size());
}

template <typename T>
DirichletBatch<T> DirichletBatchBuilder<T>::View(
    const void* device_arena, T* out, uint32_t* segment_status) const {
  const Offsets o = Layout();
  const char* base = static_cast<const char*>(device_arena);
  DirichletBatch<T> b;
  b.segments = reinterpret_cast<const DirichletSegment*>(base + o.segments);
  b.num_segments = static_cast<int32_t>(segments_.size());
  b.total = total_;
  b.num_rows = num_rows();
  b.alpha = reinterpret_cast<const T*>(base + o.alpha);
  b.row_offsets = reinterpret_cast<const int64_t*>(base + o.rows);
  b.out = out;
  b.segment_status = segment_status;
  return b;
}

template absl::Status LaunchGamma<float>(const GammaBatch<float>&, cudaStream_t,
                                         const GammaLaunchOptions&);
template absl::Status LaunchGamma<double>(const GammaBatch<double>&,
                                          cudaStream_t,
                                          const GammaLaunchOptions&);
template absl::Status LaunchDirichlet<float>(const DirichletBatch<float>&,
                                             cudaStream_t,
                                             const GammaLaunchOptions&);
template absl::Status LaunchDirichlet<double>(const DirichletBatch<double>&,
                                              cudaStream_t,
                                              const GammaLaunchOptions&);
template class GammaBatchBuilder<float>;
template class GammaBatchBuilder<double>;
template class DirichletBatchBuilder<float>;
template class DirichletBatchBuilder<double>;

}  // namespace sampler::kernels::cuda
