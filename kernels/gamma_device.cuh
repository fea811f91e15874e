// The gamma rejection loop on the device, shared by SampleGamma's kernel
// (gamma.cu) and SampleDirichlet's (dirichlet.cu): Marsaglia-Tsang rejection
// with warp-aware pre-caching (gamma-rejection-on-gpus.txt) over a segmented
// batch, generic in where its items come from and where its outputs go.
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
// A Source (GammaSource in gamma.cu, DirichletSource in dirichlet.cu) gives
// the loop its batch type (Batch: total, segments, num_segments,
// segment_status), its Philox kind tag (kTag), Fetch(batch, index, delta,
// cursor, prev, out), which loads the item at a batch index, and
// Write(batch, index, item, draw), which stores its output.
//
// Tunings, none of which moves a bit (bench/results/gamma-kernel.md,
// "Session 11"), for sources that support them (GammaSource):
// - kKeys: every segment shares one seed, and the batch carries its Philox
//   round keys (Batch::round_keys, PhiloxKeySchedule): they are read from the
//   kernel's parameters, an operand of the rounds' XORs, instead of being
//   added up per block (18 of a block's ~64 instructions) and the seed is
//   not kept per item.
// - kDefer: outputs that need the slow path (Source::IsSlow: the boost of a
//   shape below 1, ~130 instructions) are queued in the warp's shared memory
//   where the warp's items are mixed, and written 32 at a time by every lane
//   rather than by the few lanes that need them while the others wait
//   (OutputWriter). The source then also gives SlowOutput (what
//   such an output is made from), Slow(index, item, draw) and
//   WriteSlow(out, entry).
// And one for any source, float without pre-caching: kMoreWarps, fewer
// registers for more resident warps (kMinBlocks).
#ifndef SAMPLER_KERNELS_GAMMA_DEVICE_CUH_
#define SAMPLER_KERNELS_GAMMA_DEVICE_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/gamma_core.h"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda::gamma_device {

inline constexpr int kBlockThreads = 128;

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
// ------------------------------------------------- the rejection loop ----

// Lane-local tallies of the instrumented variant.
struct Tally {
  unsigned long long calls = 0, iterations = 0, attempts = 0, items = 0,
                     warp_full = 0, lane_full = 0, warp_exact = 0,
                     lane_exact = 0;
};

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

// An attempt's uniforms, its round keys from the seed or (kKeys) from the
// batch's table in the kernel's parameters.
template <typename T, typename Source, bool kKeys>
__device__ __forceinline__ GammaUniforms<T> AttemptUniforms(
    const typename Source::Batch& batch, uint64_t seed, uint64_t item,
    uint32_t attempt) {
  if constexpr (kKeys) {
    return GammaAttemptUniformsFromKeys<T>(Source::kTag, batch.round_keys, item,
                                           attempt);
  } else {
    return GammaAttemptUniforms<T>(Source::kTag, seed, item, attempt);
  }
}

// Writes each lane's current item at the end of a call, there and then.
template <typename T, typename Source, bool kDefer>
struct OutputWriter {
  __device__ __forceinline__ void Write(const typename Source::Batch& batch,
                                        int64_t index, const Item<T>& it,
                                        const GammaDraw<T>& draw) {
    if (index < batch.total) Source::Write(batch, index, it, draw);
  }
  __device__ __forceinline__ void Flush(const typename Source::Batch&) {}
};

// The deferring writer (kDefer): where some of a call's valid items need
// the slow output and others do not, the slow ones go to the warp's queue
// in shared memory, and once 32 are queued every lane writes one of them.
// Where all or none of them are slow it writes there and then. An output is
// a pure function of (item, draw), so when it is written moves no bit; the
// outputs the queue writes are scattered, which costs little: the kernel
// writes 5-10% of the copy rate.
template <typename T, typename Source>
struct OutputWriter<T, Source, true> {
  using Entry = typename Source::SlowOutput;
  static constexpr int kCapacity = 2 * kWarpSize;  // 31 left + 32 new

  // The warp's queue, its address derived where used (no register kept).
  static __device__ __forceinline__ Entry* Queue() {
    __shared__ Entry queues[kBlockThreads / kWarpSize][kCapacity];
    return queues[threadIdx.x / kWarpSize];
  }

  __device__ __forceinline__ void Write(const typename Source::Batch& batch,
                                        int64_t index, const Item<T>& it,
                                        const GammaDraw<T>& draw) {
    const bool valid = index < batch.total;
    const bool slow = valid && Source::IsSlow(it);
    const unsigned slow_lanes = __ballot_sync(kFullMask, slow);
    const unsigned valid_lanes = __ballot_sync(kFullMask, valid);
    if (slow_lanes == 0 || slow_lanes == valid_lanes) {
      if (valid) Source::Write(batch, index, it, draw);
      return;
    }
    const unsigned lane = threadIdx.x % kWarpSize;
    if (slow) {
      const int at = queued + __popc(slow_lanes & ((1u << lane) - 1u));
      Queue()[at] = Source::Slow(index, it, draw);
    } else if (valid) {
      Source::Write(batch, index, it, draw);
    }
    queued += __popc(slow_lanes);
    if (queued >= kWarpSize) {
      __syncwarp();
      queued -= kWarpSize;
      WriteQueued(batch.out, queued + static_cast<int>(lane));
      __syncwarp();  // read before the next call's entries overwrite them
    }
  }

  // The queue's rest, at the end of the kernel.
  __device__ __forceinline__ void Flush(const typename Source::Batch& batch) {
    __syncwarp();
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    if (lane < queued) WriteQueued(batch.out, lane);
  }

  // Not inlined: the rejection loop's registers are saved around the call,
  // which runs once in about eleven calls at U(0.1, 10), instead of the
  // slow output's own registers pressing on the whole loop.
  static __device__ __noinline__ void WriteQueued(T* out, int at) {
    Source::WriteSlow(out, Queue()[at]);
  }

  int queued = 0;  // the same in every lane
};

// An attempt's outcome with the cap applied: an item whose last allowed
// attempt is rejected takes NaN and flags its segment, as GammaDrawItem.
template <typename T, typename Batch>
__device__ __forceinline__ bool SettleCap(const Batch& batch, bool accepted,
                                          uint32_t attempt, int64_t index,
                                          GammaDraw<T>* draw) {
  if (accepted || attempt + 1 != kGammaMaxAttempts) return accepted;
  *draw = GammaDraw<T>{gamma_internal::QuietNaN<T>(), T(1)};
  ReportCap(batch.segments, batch.num_segments, batch.segment_status, index);
  return true;
}

// A slot after its attempt `attempt`.
template <typename T>
__device__ __forceinline__ void Record(Slot<T>& slot, uint32_t attempt,
                                       bool accepted,
                                       const GammaDraw<T>& draw) {
  slot.attempt = attempt + 1;
  slot.done = accepted;
  if (accepted) slot.draw = draw;
}

// One call: warp iterations until every lane's current item (slot kCur) is
// accepted, its output, and the refill of the freed slot. With pre-caching
// the two slots swap roles from call to call (the caller alternates kCur),
// so no item is ever copied between registers: the next item is fetched
// straight into the slot the written one leaves. `index` is the batch index
// of the current item; the pre-cached one is one stride further.
template <int kCur, typename T, typename Source, bool kPreCache, bool kCount,
          bool kKeys, typename Writer>
__device__ __forceinline__ void RunCall(const typename Source::Batch& batch,
                                        int64_t& index, int64_t stride,
                                        Cursor& cursor, Slot<T> (&slots)[2],
                                        Writer& writer, Tally& tally) {
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
          AttemptUniforms<T, Source, kKeys>(batch, seed, item, attempt);
      GammaDraw<T> draw{T(0), u.ub};
      const bool accepted = SettleCap(
          batch, GammaTryAttempt(g, u, &draw.dv, kCount ? &path : nullptr),
          attempt, need ? index : index + stride, &draw);
      if (need) {
        Record(cur, attempt, accepted, draw);
      } else {
        Record(nxt, attempt, accepted, draw);
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
  writer.Write(batch, index, cur.it, cur.draw);
  if constexpr (kCount) tally.items += index < total ? 1 : 0;
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

// Resident blocks per SM the register allocation must allow (0: no bound).
// Float with pre-caching needs 68 registers unbounded (7 blocks of 4 warps,
// 44% occupancy) and fits 64 (8 blocks, 50%); double without it needs 66
// and fits 64 as well.
// kMoreWarps (float without pre-caching only): 12 blocks (75%) in 40
// registers instead of 10 (62.5%) in 43-48, for more warps to hide the
// loop's fixed-latency dependencies at the price of a few spilled bytes
// (12 with round keys from the parameters, per ptxas).
template <typename T, bool kPreCache, bool kMoreWarps = false>
inline constexpr int kMinBlocks = kMoreWarps && sizeof(T) == 4 && !kPreCache
                                      ? 12
                                  : (sizeof(T) == 4) == kPreCache ? 8
                                                                  : 0;

// kPreCache: finished lanes work on their next item (see the file comment).
// kCount: the instrumented variant, adding to *counters.
// kKeys, kDefer, kMoreWarps: the tunings of the file comment.
template <typename T, typename Source, bool kPreCache, bool kCount, bool kKeys,
          bool kDefer, bool kMoreWarps>
__global__ void __launch_bounds__(kBlockThreads,
                                  kMinBlocks<T, kPreCache, kMoreWarps>)
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
  OutputWriter<T, Source, kDefer> writer;

  // Every lane stays in the loops to the end, so the full-mask votes are
  // legal: all lanes of a warp see the same loop conditions. Unrolled by
  // two so that the slots' roles are compile-time constants.
  for (;;) {
    if (!__any_sync(kFullMask, index < total)) break;
    RunCall<0, T, Source, kPreCache, kCount, kKeys>(
        batch, index, stride, cursor, slots, writer, tally);
    if constexpr (kPreCache) {
      if (!__any_sync(kFullMask, index < total)) break;
      RunCall<1, T, Source, kPreCache, kCount, kKeys>(
          batch, index, stride, cursor, slots, writer, tally);
    }
  }
  writer.Flush(batch);

  if constexpr (kCount) {
    // Warp tallies are the same in every lane; lane tallies are summed.
    constexpr ButterflyOrder kDown = ButterflyOrder::kHighToLow;
    const unsigned long long attempts = WarpSum<kDown>(tally.attempts);
    const unsigned long long items = WarpSum<kDown>(tally.items);
    const unsigned long long lane_full = WarpSum<kDown>(tally.lane_full);
    const unsigned long long lane_exact = WarpSum<kDown>(tally.lane_exact);
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

// ------------------------------------------------------- launching ----

template <typename T, typename Source, bool kPreCache, bool kCount, bool kKeys,
          bool kDefer, bool kMoreWarps = false>
absl::Status RunRejection(const typename Source::Batch& batch,
                          cudaStream_t stream,
                          const GammaLaunchOptions& options) {
  const auto kernel =
      RejectionKernel<T, Source, kPreCache, kCount, kKeys, kDefer, kMoreWarps>;
  SAMPLER_ASSIGN_OR_RETURN(
      const int blocks, ResidentGridBlocks(kernel, kBlockThreads, batch.total,
                                           kBlockThreads, options.max_blocks));
  kernel<<<blocks, kBlockThreads, 0, stream>>>(batch, options.counters);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

// The caller picks the tunings (kKeys and kDefer need the source's support;
// kMoreWarps applies to float without pre-caching only); the instrumented
// variant always runs without them: they change no iteration, attempt or
// output that it counts.
template <typename T, typename Source, bool kKeys = false, bool kDefer = false,
          bool kMoreWarps = false>
absl::Status LaunchRejection(const typename Source::Batch& batch,
                             cudaStream_t stream,
                             const GammaLaunchOptions& options) {
  if (batch.total <= 0) return absl::OkStatus();
  if (options.counters != nullptr) {
    return options.pre_cache
               ? RunRejection<T, Source, true, true, false, false>(
                     batch, stream, options)
               : RunRejection<T, Source, false, true, false, false>(
                     batch, stream, options);
  }
  return options.pre_cache
             ? RunRejection<T, Source, true, false, kKeys, kDefer>(
                   batch, stream, options)
             : RunRejection<T, Source, false, false, kKeys, kDefer, kMoreWarps>(
                   batch, stream, options);
}

}  // namespace sampler::kernels::cuda::gamma_device

#endif  // SAMPLER_KERNELS_GAMMA_DEVICE_CUH_
