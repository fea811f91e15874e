// The CUDA kernel of SampleGamma, contract version 3 (docs/randomness.md
// "Gamma"; arithmetic in gamma3_core.h), bit for bit the CPU backend
// (gamma_cpu.cc).
//
// Work unit: a pair of batch indices (2u, 2u + 1). A lane runs attempts
// k = 0, 1, ... of both items of its pair at once and takes its next pair
// (one grid stride further) as soon as both are accepted, so a lane never
// idles while its warp has work left (no warp-synchronous rows of outputs,
// no pre-caching slots). When the two items are the contract's pair (same
// seed, items 2j and 2j + 1: every pair of a float32 segment whose first
// item and first batch index have the same parity) one Philox block serves
// both attempts k; otherwise (float64, other segments, segment ends) each
// open item takes its own block.
//
// Work per float32 sample (shape 1; per attempt p(accept) ~ 0.95 overall,
// the ziggurat pass failing 1.2% of the time), against the version-2
// kernel (gamma.cu):
//   Philox4x32-10 blocks: ~0.55 per sample (a block per pair-attempt; a
//     pair needs max(K1, K2) blocks, E ~ 1.1), plus one auxiliary block on
//     the 2.8% of passes that leave the fast path and one per sample for
//     shapes < 1 (the boost). Version 2: ~1.05 per sample (one per attempt).
//   Transcendentals on the common path: none (ziggurat: two float64 table
//     reads, a float64 multiply and compare, one rounding to float; then the
//     squeeze in float). Version 2: a deterministic
//     log, a cos2pi polynomial and a correctly rounded sqrt per attempt.
//   Rare paths, per attempt: the wedge (2.7%: one Philox block and one
//     deterministic float64 exp), the tail (0.06%: per iteration a block and
//     two float64 logs), and the logarithmic test (the ~5-8% of attempts the
//     squeeze leaves undecided: log1p(t) - t and a fast __logf with proven
//     margin, the deterministic log only near the boundary), as in version 2.
//   Warp-wide branches, per loop iteration (32 lanes, about two open items
//     each): the ziggurat's slow path, P(some lane) = 1 - 0.972^64 ~ 0.8
//     (its cost is mostly one Philox block); the logarithmic test
//     (log1p(t) - t, ~15 operations, and __logf with a proven margin), with
//     per-attempt rate q ~ 0.06-0.08: inline (GammaLaunchOptions::
//     defer_log_tests = false, the loop of version 2's kind) the warp runs
//     both whenever some lane needs them, 1 - (1 - q)^64 ~ 0.99 of
//     iterations for the logarithm; deferred (the default, second kernel
//     below) wedge and logarithm run once per resolution, when 4 lanes are
//     stuck or 16 parked, i.e. every few iterations with about 4-16 lanes'
//     tests in one pass (only the 0.06% tail stays inline).
//   Registers (sm_90, ptxas, no spills, uninstrumented): float 78 inline /
//     128 deferred (63 / 114 before float32's ziggurat moved to float64),
//     double 96 / 164: the deferred loop holds up to three waiting attempts
//     per lane. Resident warps per SM: float 24 inline / 16 deferred (was
//     32 / 16), double 20 / 12.
//     Which loop is faster is for gamma_bench
//     ("gamma" vs "gamma_inline" rows) to say; the bits are the same.
// The ziggurat table (float64 for both precisions: gamma3_core.h says why)
// lives in shared memory (a block-wide copy of the __constant__ table: lanes
// index them at random, which constant memory would serialise).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/gamma3.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/gamma3_core.h"
#include "sampler/kernels/gamma_core.h"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/ziggurat_tables.h"

namespace sampler::kernels::cuda {
namespace {

constexpr unsigned kAllLanes = 0xffffffffu;
constexpr int kThreads = 128;

// The one ziggurat table of both precisions (gamma3_core.h).
__constant__ ZigguratTable kDeviceZiggurat = {{SAMPLER_ZIGGURAT_X_DOUBLE},
                                              {SAMPLER_ZIGGURAT_F_DOUBLE},
                                              {SAMPLER_ZIGGURAT_DF_DOUBLE},
                                              SAMPLER_ZIGGURAT_INV_R_DOUBLE};

// The first k in [first, last] with key(k + 1) > x (or last): the entry
// holding x when entries start at key(k) and key(first) <= x.
template <typename Key>
__device__ __forceinline__ int64_t EntryHolding(int64_t first, int64_t last,
                                                int64_t x, Key key) {
  int64_t count = last - first;
  while (count > 0) {
    const int64_t half = (count + 1) / 2;
    if (key(first + half) <= x) {
      first += half;
      count -= half;
    } else {
      count = half - 1;
    }
  }
  return first;
}

// One item of a lane's pair, as its attempts and its output need it.
template <typename T>
struct PairItem {
  uint64_t seed = 0;
  uint64_t item = 0;
  GammaShape<T> g;
  T scale = T(1);
  bool log_output = false;
  bool open = false;  // exists and not yet accepted
  GammaDraw<T> draw;
};

// The parameters of batch index `index`; `segment` is a search hint (the
// lane's indices increase) and is updated.
template <typename T>
__device__ void LoadItem(const GammaBatch<T>& b, int64_t index,
                         int64_t& segment, PairItem<T>& it) {
  it.open = index < b.total;
  if (!it.open) return;
  const GammaSegment* segs = b.segments;
  segment = EntryHolding(segment, b.num_segments - 1, index,
                         [segs](int64_t k) { return segs[k].out_begin; });
  const GammaSegment& seg = segs[segment];
  const int64_t offset = index - seg.out_begin;
  it.seed = seg.seed;
  it.item = seg.first_item + static_cast<uint64_t>(offset);
  it.log_output = (seg.flags & kSegmentLogOutput) != 0;
  if (seg.num_groups == 0) {
    it.g = GammaPrepare(__ldg(b.shape + seg.param_begin + offset));
    it.scale = (seg.flags & kSegmentUnitScale) != 0
                   ? T(1)
                   : __ldg(b.scale + seg.scale_begin + offset);
  } else {
    const GammaGroupParams<T>* groups = b.groups;
    const int64_t g = EntryHolding(
        seg.param_begin, seg.param_begin + seg.num_groups - 1, index,
        [groups](int64_t k) { return groups[k].out_begin; });
    it.g = GammaPrepare(groups[g].shape);
    it.scale = groups[g].scale;
  }
}

// The output of an item whose accepted attempt gave `dv` (the boost block
// read here, once per item, for shapes below 1).
template <typename T>
__device__ __forceinline__ T ItemOutput(const PairItem<T>& it, T dv) {
  GammaDraw<T> x{dv, T(1)};
  if (it.g.boost) {
    x.ub = Gamma3Boost<T>(it.seed, KindTag::kGamma3Aux, it.item);
  }
  const T log_scale = it.log_output ? detmath::Log(it.scale) : T(0);
  return GammaOutput(it.g, x, it.scale, log_scale, it.log_output);
}

template <typename T>
__device__ __forceinline__ void WriteItem(const GammaBatch<T>& b, int64_t index,
                                          const PairItem<T>& it) {
  b.out[index] = ItemOutput(it, it.draw.dv);
}

// The segment of `index` flagged: an item hit the attempt cap (never
// expected; searched here rather than kept in registers).
template <typename T>
__device__ void ReportCap(const GammaBatch<T>& b, int64_t index) {
  const GammaSegment* segs = b.segments;
  const int64_t s =
      EntryHolding(0, b.num_segments - 1, index,
                   [segs](int64_t j) { return segs[j].out_begin; });
  atomicOr(b.segment_status + s, kStatusAttemptCap);
}

// The block's ziggurat tables into shared memory (lanes index them at
// random; constant memory would serialise the reads).
__device__ __forceinline__ void LoadZiggurat(ZigguratTable& tab) {
  static_assert(sizeof(ZigguratTable) % 4 == 0, "copied by words");
  const uint32_t* from = reinterpret_cast<const uint32_t*>(&kDeviceZiggurat);
  uint32_t* to = reinterpret_cast<uint32_t*>(&tab);
  for (int i = threadIdx.x; i < static_cast<int>(sizeof(tab) / 4);
       i += kThreads) {
    to[i] = from[i];
  }
  __syncthreads();
}

// Lane-local tallies of the instrumented variant.
struct Tallies {
  unsigned long long iterations = 0, attempts = 0, items = 0, full = 0,
                     exact = 0, warp_full = 0, warp_exact = 0, pairs = 0;
};

// The instrumented variant's tallies, summed over the warp and added to
// *counters by its first lane.
__device__ void AddTallies(const Tallies& tally, GammaCounters* counters) {
  unsigned long long sums[5] = {tally.attempts, tally.items, tally.full,
                                tally.exact, tally.pairs};
#pragma unroll
  for (int i = 0; i < 5; ++i) {
#pragma unroll
    for (int o = kWarpSize / 2; o > 0; o /= 2) {
      sums[i] += __shfl_xor_sync(kAllLanes, sums[i], o);
    }
  }
  if (threadIdx.x % kWarpSize == 0) {
    atomicAdd(&counters->warp_calls, sums[4]);
    atomicAdd(&counters->warp_iterations, tally.iterations);
    atomicAdd(&counters->warp_full_tests, tally.warp_full);
    atomicAdd(&counters->warp_exact_tests, tally.warp_exact);
    atomicAdd(&counters->lane_attempts, sums[0]);
    atomicAdd(&counters->lane_items, sums[1]);
    atomicAdd(&counters->lane_full_tests, sums[2]);
    atomicAdd(&counters->lane_exact_tests, sums[3]);
  }
}

// Attempt k of one open item from its words; on the cap, NaN and the
// segment flagged (as the CPU's loop).
template <typename T, bool kCount>
__device__ __forceinline__ void Attempt(const GammaBatch<T>& b,
                                        const ZigguratTable& tab, int64_t index,
                                        uint32_t k, const PhiloxBlock& block,
                                        PairItem<T>& it, GammaTestPath& path) {
  const Gamma3Words w = Gamma3AttemptWords<T>(block, it.item);
  T z;
  T dv;
  if (ZigguratNormal(tab, w, it.seed, KindTag::kGamma3Aux, it.item, k, &z) &&
      GammaTryZ(it.g, z, Gamma3Ua<T>(w), &dv, kCount ? &path : nullptr)) {
    it.draw.dv = dv;
    it.open = false;
  } else if (k + 1 == kGammaMaxAttempts) {
    it.draw.dv = gamma_internal::QuietNaN<T>();
    it.open = false;
    ReportCap(b, index);
  }
}

template <typename T, bool kCount>
__global__ void __launch_bounds__(kThreads)
    Gamma3Kernel(const GammaBatch<T> batch, GammaCounters* counters) {
  __shared__ ZigguratTable tab;
  LoadZiggurat(tab);
  const int64_t units = (batch.total + 1) / 2;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  int64_t unit = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  int64_t segment = 0;
  PairItem<T> a, b;
  uint32_t k = 0;
  if (unit < units) {
    LoadItem(batch, 2 * unit, segment, a);
    LoadItem(batch, 2 * unit + 1, segment, b);
  }
  Tallies tally;
  // Every lane stays in the loop until its warp is done, so the votes of
  // the instrumented variant see all lanes.
  while (__any_sync(kAllLanes, unit < units)) {
    GammaTestPath path_a = GammaTestPath::kSqueeze;
    GammaTestPath path_b = GammaTestPath::kSqueeze;
    if (unit < units) {
      const bool shared =
          b.open && a.seed == b.seed &&
          Gamma3BlockIndex<T>(a.item) == Gamma3BlockIndex<T>(b.item);
      PhiloxBlock block_a{}, block_b{};
      if (a.open || shared) {
        block_a = gamma_internal::AttemptBlock(a.seed, KindTag::kGamma3,
                                               Gamma3BlockIndex<T>(a.item), k);
      }
      if (shared) {
        block_b = block_a;
      } else if (b.open) {
        block_b = gamma_internal::AttemptBlock(b.seed, KindTag::kGamma3,
                                               Gamma3BlockIndex<T>(b.item), k);
      }
      if constexpr (kCount)
        tally.attempts += (a.open ? 1 : 0) + (b.open ? 1 : 0);
      if (a.open) {
        Attempt<T, kCount>(batch, tab, 2 * unit, k, block_a, a, path_a);
      }
      if (b.open) {
        Attempt<T, kCount>(batch, tab, 2 * unit + 1, k, block_b, b, path_b);
      }
      ++k;
      if (!a.open && !b.open) {
        WriteItem(batch, 2 * unit, a);
        const bool has_b = 2 * unit + 1 < batch.total;
        if (has_b) WriteItem(batch, 2 * unit + 1, b);
        if constexpr (kCount) {
          tally.items += has_b ? 2 : 1;
          ++tally.pairs;
        }
        unit += stride;
        k = 0;
        if (unit < units) {
          LoadItem(batch, 2 * unit, segment, a);
          LoadItem(batch, 2 * unit + 1, segment, b);
        }
      }
    }
    if constexpr (kCount) {
      // Two attempt slots per lane and iteration (one per item of a pair).
      tally.iterations += 2;
      const bool full = path_a != GammaTestPath::kSqueeze ||
                        path_b != GammaTestPath::kSqueeze;
      const bool exact = path_a == GammaTestPath::kExactLog ||
                         path_b == GammaTestPath::kExactLog;
      tally.full += (path_a != GammaTestPath::kSqueeze ? 1 : 0) +
                    (path_b != GammaTestPath::kSqueeze ? 1 : 0);
      tally.exact += (path_a == GammaTestPath::kExactLog ? 1 : 0) +
                     (path_b == GammaTestPath::kExactLog ? 1 : 0);
      tally.warp_full += __any_sync(kAllLanes, full) ? 1 : 0;
      tally.warp_exact += __any_sync(kAllLanes, exact) ? 1 : 0;
    }
  }
  if constexpr (kCount) AddTallies(tally, counters);
}

// ------------------------------------- deferred logarithmic tests ----
//
// The variant the service runs (GammaLaunchOptions::defer_log_tests). In
// the loop above the logarithmic test runs inline, so a warp pays for it in
// almost every iteration (some lane of 32, each with two items, needs it);
// so does the ziggurat's wedge test (an auxiliary Philox block and an exp).
// Here an attempt that the squeeze leaves undecided, or whose ziggurat pass
// needs its wedge, is recorded (WaitingTest) and the item goes on
// speculatively with its next attempts; the warp runs the recorded tests of all
// its lanes together, only when enough are waiting. The bits cannot change: an
// item's output is still its first accepted attempt, the recorded one if its
// test accepts, else the first later attempt the squeeze accepted (the
// "fallback"). Per item: at most one recorded test; a second undecided attempt
// stops the item ("blocked") until the resolution, which redoes that attempt if
// the first test rejects. A pair whose item waits with a fallback is finished
// at once: the fallback's output is written and the item parks in the
// lane's one parking slot (its alternative output precomputed), so the lane
// takes its next pair; the resolution overwrites the output if the parked
// test accepts.
//
// The warp resolves when kStuckLanes lanes can do nothing else (a pair to
// finish and the slot taken, or every item waiting), when kParkedLanes
// slots are taken, or when no lane can make progress; once more at the end.

constexpr int kStuckLanes = 4;
constexpr int kParkedLanes = 16;

// An attempt whose outcome waits for its warp: the logarithmic test the
// squeeze left undecided, and/or the ziggurat's wedge test (whose Philox
// block and exp are as rare per lane, and as common per warp, as the
// logarithm). It is accepted iff the wedge passes (when there is one) and
// the squeeze accepted or the logarithmic test does.
template <typename T>
struct WaitingTest {
  GammaPending<T> p;
  T ua = T(1);
  double x = 0;          // the wedge's candidate magnitude (float64 always)
  uint32_t attempt = 0;  // the wedge's auxiliary block
  int layer = 0;
  bool wedge = false;
  bool squeeze = false;  // the squeeze accepted: no logarithm needed
};

template <typename T>
struct DeferredItem : PairItem<T> {
  uint32_t k = 0;         // its next attempt
  bool pend = false;      // `wait` holds an undecided attempt
  bool fallback = false;  // pend, and draw.dv holds a later accepted attempt
  bool blocked = false;   // pend, and attempt k was undecided too
  WaitingTest<T> wait;
};

// A finished item whose waiting attempt is still to be decided; out[index]
// holds the fallback's output until then.
template <typename T>
struct Parked {
  bool full = false;
  int64_t index = 0;
  uint64_t seed = 0, item = 0;
  T d = T(0);
  WaitingTest<T> wait;
  T alt = T(0);  // the output should the waiting attempt be accepted
};

// The outcome of a waiting attempt (d: the shape's, for the logarithm).
template <typename T>
__device__ __forceinline__ bool Decide(const ZigguratTable& tab, T d,
                                       uint64_t seed, uint64_t item,
                                       const WaitingTest<T>& wt,
                                       GammaTestPath* path) {
  if (wt.wedge && !ZigguratWedge(tab, wt.layer, wt.x, seed, KindTag::kGamma3Aux,
                                 item, wt.attempt)) {
    return false;
  }
  if (wt.squeeze) return true;
  GammaShape<T> g;  // GammaLogTest reads d only
  g.d = d;
  return GammaLogTest(g, wt.p, wt.ua, path);
}

template <typename T>
__device__ __forceinline__ bool Active(const DeferredItem<T>& it) {
  return it.open && !it.fallback && !it.blocked && it.k < kGammaMaxAttempts;
}

// Attempt it.k of an active item from its block.
template <typename T>
__device__ __forceinline__ void DeferredAttempt(const GammaBatch<T>& b,
                                                const ZigguratTable& tab,
                                                int64_t index,
                                                const PhiloxBlock& block,
                                                DeferredItem<T>& it) {
  const uint32_t k = it.k;
  const Gamma3Words w = Gamma3AttemptWords<T>(block, it.item);
  const T ua = Gamma3Ua<T>(w);
  const ZigguratCandidate c = ZigguratFast<T>(tab, w);
  // Layer 0 beyond r: the tail, at once (0.06% of passes); other layers
  // beyond x[i + 1]: the wedge, deferred with the attempt.
  const bool wedge = !c.fast && c.layer != 0;
  double mag = c.x;
  const bool ok =
      c.fast || wedge ||
      ZigguratTail(tab, it.seed, KindTag::kGamma3Aux, it.item, k, &mag);
  GammaPending<T> p;
  const int squeeze =
      ok ? GammaSqueezeTest(it.g, ZigguratValue<T>(c.negative, mag), ua, &p)
         : -1;
  const bool undecided = squeeze == 0 || (squeeze > 0 && wedge);
  if (undecided && it.pend) {
    it.blocked = true;  // attempt k is redone if the waiting one fails
    return;
  }
  it.k = k + 1;
  if (undecided) {
    it.pend = true;
    it.wait.p = p;
    it.wait.ua = ua;
    it.wait.x = c.x;
    it.wait.attempt = k;
    it.wait.layer = c.layer;
    it.wait.wedge = wedge;
    it.wait.squeeze = squeeze > 0;
  } else if (squeeze > 0) {
    it.draw.dv = p.out;
    if (it.pend) {
      it.fallback = true;
    } else {
      it.open = false;
    }
  } else if (!it.pend && it.k == kGammaMaxAttempts) {
    it.draw.dv = gamma_internal::QuietNaN<T>();
    it.open = false;
    ReportCap(b, index);
  }
}

// An item's recorded test, decided (resolution).
template <typename T, bool kCount>
__device__ __forceinline__ void ResolveItem(const GammaBatch<T>& b,
                                            const ZigguratTable& tab,
                                            int64_t index, DeferredItem<T>& it,
                                            Tallies& tally) {
  GammaTestPath path = GammaTestPath::kFastLog;
  const bool accept =
      Decide(tab, it.g.d, it.seed, it.item, it.wait, kCount ? &path : nullptr);
  if constexpr (kCount) {
    ++tally.full;
    tally.exact += path == GammaTestPath::kExactLog ? 1 : 0;
  }
  it.pend = false;
  it.blocked = false;
  if (accept) {
    it.draw.dv = it.wait.p.out;
    it.open = false;
  } else if (it.fallback) {
    it.open = false;  // draw.dv holds the fallback
  } else if (it.k == kGammaMaxAttempts) {
    it.draw.dv = gamma_internal::QuietNaN<T>();
    it.open = false;
    ReportCap(b, index);
  }
  it.fallback = false;
}

// Every recorded test of the lane: the parked one, then its pair's.
template <typename T, bool kCount>
__device__ void Resolve(const GammaBatch<T>& b, const ZigguratTable& tab,
                        int64_t unit, Parked<T>& parked, DeferredItem<T>& x,
                        DeferredItem<T>& y, Tallies& tally) {
  if (parked.full) {
    if (Decide(tab, parked.d, parked.seed, parked.item, parked.wait,
               static_cast<GammaTestPath*>(nullptr))) {
      b.out[parked.index] = parked.alt;
    }
    parked.full = false;
    if constexpr (kCount) ++tally.full;
  }
  if (x.pend) ResolveItem<T, kCount>(b, tab, 2 * unit, x, tally);
  if (y.pend) ResolveItem<T, kCount>(b, tab, 2 * unit + 1, y, tally);
}

// Writes a settled item's output; an item waiting with a fallback goes to
// the parking slot (free: the caller checked).
template <typename T>
__device__ __forceinline__ void FinishItem(const GammaBatch<T>& b,
                                           int64_t index, DeferredItem<T>& it,
                                           Parked<T>& parked) {
  if (index >= b.total) return;
  if (it.fallback) {
    parked.full = true;
    parked.index = index;
    parked.seed = it.seed;
    parked.item = it.item;
    parked.d = it.g.d;
    parked.wait = it.wait;
    parked.alt = ItemOutput(it, it.wait.p.out);
  }
  WriteItem(b, index, it);
}

template <typename T>
__device__ __forceinline__ void LoadPair(const GammaBatch<T>& b, int64_t unit,
                                         int64_t& segment, DeferredItem<T>& x,
                                         DeferredItem<T>& y) {
  x.k = y.k = 0;
  x.pend = x.fallback = x.blocked = false;
  y.pend = y.fallback = y.blocked = false;
  LoadItem(b, 2 * unit, segment, x);
  LoadItem(b, 2 * unit + 1, segment, y);
}

template <typename T, bool kCount>
__global__ void __launch_bounds__(kThreads)
    Gamma3DeferredKernel(const GammaBatch<T> batch, GammaCounters* counters) {
  __shared__ ZigguratTable tab;
  LoadZiggurat(tab);
  DeferredItem<T> a, b;  // the lane's pair
  Parked<T> parked;      // its finished item waiting for a test
  const int64_t units = (batch.total + 1) / 2;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  int64_t unit = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  int64_t segment = 0;
  if (unit < units) LoadPair(batch, unit, segment, a, b);
  Tallies tally;
  // Every lane stays in the loop until its warp is done: the votes that
  // decide the resolutions see all lanes.
  while (__any_sync(kAllLanes, unit < units)) {
    bool stuck = false, progress = false;
    if (unit < units) {
      const bool act_a = Active(a), act_b = Active(b);
      const bool shared =
          act_a && act_b && a.k == b.k && a.seed == b.seed &&
          Gamma3BlockIndex<T>(a.item) == Gamma3BlockIndex<T>(b.item);
      PhiloxBlock block_a{}, block_b{};
      if (act_a) {
        block_a = gamma_internal::AttemptBlock(
            a.seed, KindTag::kGamma3, Gamma3BlockIndex<T>(a.item), a.k);
      }
      if (shared) {
        block_b = block_a;
      } else if (act_b) {
        block_b = gamma_internal::AttemptBlock(
            b.seed, KindTag::kGamma3, Gamma3BlockIndex<T>(b.item), b.k);
      }
      if (act_a) DeferredAttempt(batch, tab, 2 * unit, block_a, a);
      if (act_b) DeferredAttempt(batch, tab, 2 * unit + 1, block_b, b);
      if constexpr (kCount) tally.attempts += (act_a ? 1 : 0) + (act_b ? 1 : 0);
      const bool settled = (!a.open || a.fallback) && (!b.open || b.fallback);
      const int to_park = (a.fallback ? 1 : 0) + (b.fallback ? 1 : 0);
      if (settled && to_park <= (parked.full ? 0 : 1)) {
        FinishItem(batch, 2 * unit, a, parked);
        FinishItem(batch, 2 * unit + 1, b, parked);
        if constexpr (kCount) {
          tally.items += 2 * unit + 1 < batch.total ? 2 : 1;
          ++tally.pairs;
        }
        unit += stride;
        if (unit < units) LoadPair(batch, unit, segment, a, b);
        // The parked item's record lives on; the pair is a fresh one.
        a.pend = a.fallback = b.pend = b.fallback = false;
      }
      progress = unit < units && (Active(a) || Active(b));
      stuck = unit < units && !progress;
    }
    if constexpr (kCount) tally.iterations += 2;
    const int stuck_lanes = __popc(__ballot_sync(kAllLanes, stuck));
    const int parked_lanes = __popc(__ballot_sync(kAllLanes, parked.full));
    if (stuck_lanes >= kStuckLanes || parked_lanes >= kParkedLanes ||
        (stuck_lanes > 0 && !__any_sync(kAllLanes, progress))) {
      Resolve<T, kCount>(batch, tab, unit, parked, a, b, tally);
      if constexpr (kCount) ++tally.warp_full;
    }
  }
  // The parked tests left (no lane has a pair any more).
  if (__any_sync(kAllLanes, parked.full)) {
    Resolve<T, kCount>(batch, tab, unit, parked, a, b, tally);
    if constexpr (kCount) ++tally.warp_full;
  }
  if constexpr (kCount) AddTallies(tally, counters);
}

template <typename T, bool kCount>
absl::Status Run(const GammaBatch<T>& batch, cudaStream_t stream,
                 const GammaLaunchOptions& options) {
  const auto kernel = options.defer_log_tests ? Gamma3DeferredKernel<T, kCount>
                                              : Gamma3Kernel<T, kCount>;
  int device = 0, sms = 0, resident = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &resident, kernel, kThreads, 0));
  // Pairs, not outputs, are the threads' work.
  const int64_t needed = ((batch.total + 1) / 2 + kThreads - 1) / kThreads;
  int64_t blocks = std::min<int64_t>(
      needed, static_cast<int64_t>(sms) * std::max(resident, 1));
  if (options.max_blocks > 0) {
    blocks = std::min<int64_t>(blocks, options.max_blocks);
  }
  kernel<<<static_cast<int>(std::max<int64_t>(blocks, 1)), kThreads, 0,
           stream>>>(batch, options.counters);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::Status LaunchGamma3Kernel(const GammaBatch<T>& batch, cudaStream_t stream,
                                const GammaLaunchOptions& options) {
  if (batch.total <= 0) return absl::OkStatus();
  return options.counters != nullptr ? Run<T, true>(batch, stream, options)
                                     : Run<T, false>(batch, stream, options);
}

template absl::Status LaunchGamma3Kernel<float>(const GammaBatch<float>&,
                                                cudaStream_t,
                                                const GammaLaunchOptions&);
template absl::Status LaunchGamma3Kernel<double>(const GammaBatch<double>&,
                                                 cudaStream_t,
                                                 const GammaLaunchOptions&);

}  // namespace sampler::kernels::cuda
