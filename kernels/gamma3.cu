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
// The loop body is laid out so that what is rare per lane but common per
// warp runs once per warp iteration, not once per item of the pair:
//   1. both items' ziggurat fast paths (float32: an integer compare of the
//      uniform's 24 bits against the layer's threshold and one float
//      multiply; the 1 KB table read through the read-only cache);
//   2. the slow ziggurat passes (wedge, tail: float64, an auxiliary Philox
//      block) of the lane's items, one after the other in ONE code path
//      (a loop over the items that need it, their inputs selected);
//   3. both items' squeezes;
//   4. the logarithmic tests the squeeze left open, again one code path
//      for both items (version 2's fast __logf test with a proven margin,
//      the deterministic log only when it is undecided).
// Written twice (once per item, as the first version-3 trial did), steps 2
// and 4 would each run about twice per warp iteration: a warp of 32 lanes x
// 2 items meets a wedge in 1 - 0.973^64 = 83% of its iterations and an open
// squeeze in ~99%, so both copies ran almost always.
//
// Predicted work per float32 warp iteration (SASS-level instruction counts
// per lane, from the version-2 profile in bench/results/gamma-kernel.md):
// Philox 64, two fast passes 20, slow pass ~75, two squeezes 28, the
// logarithmic test ~45, bookkeeping ~30: ~270 for ~1.8 samples, ~150 a
// sample, about 1.9x version 2 at shape 10.
// Measured (ncu, H100, 2^22 outputs, the 80-register FastHTest build of
// commit ff68f10; per-SASS counts in
// bench/results/gamma-v3-h100-2026-11-26.md): 535 warp instructions per loop
// iteration at shape 10, 9.5 per sample (version 2: 10.5), 20.4 active lanes
// per instruction: Philox 17%, pair loading 16% (the segment and group lookups:
// now skipped while a pair stays in the lane's group), slow ziggurat passes 15%
// (2 active lanes), fast passes and squeezes 15%, logarithmic test 10%, outputs
// 8%, branching 10%. Shape 0.3: outputs (the boost) 48%. U(0.1, 10): outputs
// 33%, pair loading 20% (per-element: looked up per item).
//
// Registers (ptxas -v, sm_90). float32: the service's build takes 78-80
// (__launch_bounds__(128, 6): 24 warps an SM) with little or no spilling;
// held to 64 (32 warps, GammaLaunchOptions::bench_max_warps) ptxas spills
// ~160 bytes, and the mid-session H100 run (2026-11-26) measured that
// build 1.08-1.36x slower at shapes >= 1. float64: 96-104 (16-20 warps).
//
// Mid-session H100 run, float32 G samples/s at shapes 0.3 / 1 / 2.5 / 10 /
// U(0.1, 10): 64 registers, exact h first 32.8 / 34.7 / 39.6 / 42.3 / 30.9;
// 80 registers and FastHTest 42.3 / 50.8 / 57.9 / 62.8 / 41.6; version 2's
// best 39.4 / 47.4 / 52.5 / 61.6 / 37.9; torch 51.1 / 63.5 / 73.5 / 82.0 /
// 50.5.
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

// Blocks per SM the register bound is set for (128-thread blocks): the
// service's float32 80 registers (6 blocks, 24 warps an SM), float64 128
// (4 blocks, 16 warps); with GammaLaunchOptions::bench_max_warps (the
// benchmark's comparison) float32 64 (8 blocks, 32 warps: ptxas spills
// ~160 bytes), float64 102 (5 blocks, 20 warps). The mid-session H100 run
// measured 80 registers 1.08-1.36x faster than 64 at float32 shapes >= 1.
template <typename T>
constexpr int MinBlocks(bool more_registers) {
  if (std::is_same_v<T, float>) return more_registers ? 6 : 8;
  return more_registers ? 4 : 5;
}

// The ziggurat table in global memory. The fast path reads it through the
// read-only cache (__ldg): lanes index it at random, which constant memory
// would serialise; the rare paths read it plainly.
__device__ ZigguratTable kDeviceZiggurat = {{SAMPLER_ZIGGURAT_X_DOUBLE},
                                            {SAMPLER_ZIGGURAT_F_DOUBLE},
                                            {SAMPLER_ZIGGURAT_DF_DOUBLE},
                                            SAMPLER_ZIGGURAT_INV_R_DOUBLE,
                                            {SAMPLER_ZIGGURAT_F32_ENTRIES}};

// What the fast path of precision T reads: float32 the 8-byte entries
// (threshold, width), float64 the widths x[0..128]. In global memory or
// (GammaLaunchOptions::zig_table_shared, for the benchmark) a block's
// shared-memory copy.
template <typename T>
struct FastTable {
  using Entry = std::conditional_t<std::is_same_v<T, float>, uint2, double>;
  static constexpr int kEntries = std::is_same_v<T, float> ? 128 : 129;
};

template <typename T>
__device__ __forceinline__ const typename FastTable<T>::Entry*
GlobalFastTable() {
  if constexpr (std::is_same_v<T, float>) {
    static_assert(sizeof(ZigguratF32Entry) == sizeof(uint2), "8-byte entries");
    return reinterpret_cast<const uint2*>(kDeviceZiggurat.f32);
  } else {
    return kDeviceZiggurat.x;
  }
}

// The fast pass of one item from its words (gamma3_core.h's ZigguratFast,
// reading `table`).
template <typename T, bool kShared>
__device__ __forceinline__ ZigguratCandidate<T> FastPass(
    const typename FastTable<T>::Entry* table, const Gamma3Words& w) {
  const int layer = static_cast<int>(w.zig_lo & 127u);
  if constexpr (std::is_same_v<T, float>) {
    const uint2 e = kShared ? table[layer] : __ldg(table + layer);
    return ZigguratFastFrom<float>(ZigguratF32Entry{e.x, __uint_as_float(e.y)},
                                   0.0, 0.0, w);
  } else {
    const double x = kShared ? table[layer] : __ldg(table + layer);
    const double next = kShared ? table[layer + 1] : __ldg(table + layer + 1);
    return ZigguratFastFrom<double>(ZigguratF32Entry{}, x, next, w);
  }
}

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
  GammaShape<T> g{};  // zero or GammaPrepare(g.shape): Prepare's hint
  T scale = T(1);
  bool log_output = false;
  bool open = false;  // exists and not yet accepted
  T dv = T(0);        // the accepted attempt's d v
};

// The shape constants of `shape`: `prev`'s when it is the same shape (a
// group's items, scalar-shape requests), so that GammaPrepare's correctly
// rounded division and square root run once per change of shape rather
// than once per item; GammaPrepare is a pure function of the shape, so the
// bits are the same.
template <typename T>
__device__ __forceinline__ GammaShape<T> Prepare(T shape,
                                                 const GammaShape<T>& prev) {
  return shape == prev.shape ? prev : GammaPrepare(shape);
}

// The parameters of batch index `index`; `segment` is a search hint (the
// lane's indices increase) and is updated; `prev`: the shape constants of
// the lane's item loaded last (Prepare). Returns the first batch index past
// `index` whose parameters may differ: its group's end in a grouped
// segment, else index + 1.
template <typename T>
__device__ int64_t LoadItem(const GammaBatch<T>& b, int64_t index,
                            int64_t& segment, const GammaShape<T>& prev,
                            PairItem<T>& it) {
  it.open = index < b.total;
  if (!it.open) return index + 1;
  const GammaSegment* segs = b.segments;
  segment = EntryHolding(segment, b.num_segments - 1, index,
                         [segs](int64_t k) { return segs[k].out_begin; });
  const GammaSegment& seg = segs[segment];
  const int64_t offset = index - seg.out_begin;
  it.seed = seg.seed;
  it.item = seg.first_item + static_cast<uint64_t>(offset);
  it.log_output = (seg.flags & kSegmentLogOutput) != 0;
  if (seg.num_groups == 0) {
    it.g = Prepare(__ldg(b.shape + seg.param_begin + offset), prev);
    it.scale = (seg.flags & kSegmentUnitScale) != 0
                   ? T(1)
                   : __ldg(b.scale + seg.scale_begin + offset);
    return index + 1;
  }
  const GammaGroupParams<T>* groups = b.groups;
  const int64_t last = seg.param_begin + seg.num_groups - 1;
  const int64_t g =
      EntryHolding(seg.param_begin, last, index,
                   [groups](int64_t k) { return groups[k].out_begin; });
  it.g = Prepare(groups[g].shape, prev);
  it.scale = groups[g].scale;
  return g < last ? groups[g + 1].out_begin : seg.out_begin + seg.count;
}

// The lane's pair at batch indices first and first + 1. `group_end` and
// `item_base` remember the group of the lane's last full lookup (batch
// indices below group_end share a's seed and parameters; item = item_base +
// index, modulo 2^64): while a pair lies inside it, no segment or group is
// looked up at all (the profile of the first version: ~90 of ~535 warp
// instructions per loop iteration went to these lookups). When only the
// first item lies in a group, the second is looked up on its own.
template <typename T>
__device__ __forceinline__ void LoadPair(const GammaBatch<T>& batch,
                                         int64_t first, int64_t& segment,
                                         int64_t& group_end,
                                         uint64_t& item_base, PairItem<T>& a,
                                         PairItem<T>& b) {
  if (first + 1 < group_end) {  // a keeps the group's seed and parameters
    a.item = item_base + static_cast<uint64_t>(first);
    a.open = true;
  } else {
    group_end = LoadItem(batch, first, segment, b.g, a);
    item_base = a.item - static_cast<uint64_t>(first);
  }
  if (first + 1 < group_end) {
    b.seed = a.seed;
    b.item = a.item + 1;
    b.g = a.g;
    b.scale = a.scale;
    b.log_output = a.log_output;
    b.open = true;
  } else {
    LoadItem(batch, first + 1, segment, a.g, b);
  }
}

// The output of an accepted item (the boost block read here, once per item,
// for shapes below 1: WritePair runs it once for both items).
template <typename T>
__device__ __forceinline__ void WriteItem(const GammaBatch<T>& b, int64_t index,
                                          const PairItem<T>& it) {
  GammaDraw<T> x{it.dv, T(1)};
  if (it.g.boost) {
    x.ub = Gamma3Boost<T>(it.seed, KindTag::kGamma3Aux, it.item);
  }
  const T log_scale = it.log_output ? detmath::Log(it.scale) : T(0);
  b.out[index] = GammaOutput(it.g, x, it.scale, log_scale, it.log_output);
}

template <typename T>
__device__ __forceinline__ GammaShape<T> PickShape(bool first,
                                                   const GammaShape<T>& x,
                                                   const GammaShape<T>& y) {
  return GammaShape<T>{first ? x.shape : y.shape, first ? x.d : y.d,
                       first ? x.c : y.c, first ? x.boost : y.boost};
}

// The outputs of a finished pair. Items below shape 1 (the boost: a Philox
// block, two logarithms, a division, an exponential) go through one code
// path for both items, like the rare paths of the loop: with per-element
// shapes a warp meets a boosted item in most pair ends, and two copies would
// both run.
template <typename T>
__device__ __forceinline__ void WritePair(const GammaBatch<T>& batch,
                                          int64_t first, const PairItem<T>& a,
                                          const PairItem<T>& b, bool has_b) {
  bool boost_a = a.g.boost, boost_b = has_b && b.g.boost;
  if (!boost_a) WriteItem(batch, first, a);
  if (has_b && !boost_b) WriteItem(batch, first + 1, b);
  while (boost_a || boost_b) {
    const bool on_a = boost_a;
    PairItem<T> it;
    it.seed = on_a ? a.seed : b.seed;
    it.item = on_a ? a.item : b.item;
    it.g = PickShape(on_a, a.g, b.g);
    it.scale = on_a ? a.scale : b.scale;
    it.log_output = on_a ? a.log_output : b.log_output;
    it.dv = on_a ? a.dv : b.dv;
    WriteItem(batch, on_a ? first : first + 1, it);
    if (on_a) {
      boost_a = false;
    } else {
      boost_b = false;
    }
  }
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

// Lane-local tallies of the instrumented variant.
struct Tallies {
  unsigned long long iterations = 0, attempts = 0, items = 0, full = 0,
                     exact = 0, warp_full = 0, warp_exact = 0, pairs = 0,
                     blocks = 0;
};

// The instrumented variant's tallies, summed over the warp and added to
// *counters by its first lane.
__device__ void AddTallies(const Tallies& tally, GammaCounters* counters) {
  unsigned long long sums[6] = {tally.attempts, tally.items, tally.full,
                                tally.exact,    tally.pairs, tally.blocks};
#pragma unroll
  for (int i = 0; i < 6; ++i) {
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
    atomicAdd(&counters->lane_blocks, sums[5]);
  }
}

// Field-by-field selections: a conditional between two structs (`on_a ? x
// : y`) is an lvalue of either, whose address sends both to local memory.
template <typename T>
__device__ __forceinline__ ZigguratCandidate<T> Pick(
    bool first, const ZigguratCandidate<T>& x, const ZigguratCandidate<T>& y) {
  return ZigguratCandidate<T>{first ? x.layer : y.layer,
                              first ? x.negative : y.negative,
                              first ? x.fast : y.fast, first ? x.mag : y.mag};
}

__device__ __forceinline__ Gamma3Words Pick(bool first, const Gamma3Words& x,
                                            const Gamma3Words& y) {
  return Gamma3Words{first ? x.zig_lo : y.zig_lo, first ? x.zig_hi : y.zig_hi,
                     first ? x.ua_lo : y.ua_lo, first ? x.ua_hi : y.ua_hi};
}

template <typename T>
__device__ __forceinline__ GammaPending<T> Pick(bool first,
                                                const GammaPending<T>& x,
                                                const GammaPending<T>& y) {
  return GammaPending<T>{first ? x.z2 : y.z2, first ? x.t : y.t,
                         first ? x.v : y.v, first ? x.out : y.out,
                         first ? x.near : y.near};
}

// The logarithmic test log(ua) < h decided, where provably safe, without
// the exact path's h (the series or the deterministic log of GammaLogTest):
// both sides estimated with the hardware's __logf, in float for both
// precisions. +1 accept, -1 reject, 0 undecided (GammaLogTest decides).
// The service's (GammaLaunchOptions::bench_exact_h turns it off): the
// mid-session H100 run measured it 1.07-1.25x faster in float32.
//
// Why it is exact. Both paths start from the same t (near: 1 + t = v) or v
// (far), z2 and d. Exact path: e_x = Log1pMinusId(t) (near; within a few
// float ulps of e, relative: well inside 2^-20 (|t| + |e_x|)) or
// detmath::Log(v) - t (far; 2.1 ulps of log v, one rounding);
// h_x = fma(d, e_x, z2 / 2). Here e = __logf(float(1 + t) or float(v)) - t:
// __logf is within 2^-21.41 absolute on [0.5, 2], 3 ulps elsewhere, the
// conversions and 1 + t add 2^-24 relative, so |e - e_x| < 2^-19 (1 + |t| +
// |e|) (|log v| <= |t| + |e|); h = d e + z2 / 2 in float, so |h - h_x| <
// d 2^-18 (1 + |t| + |e|) + 2^-22 (1 + |h|) (roundings of the products and
// sums, the conversions of d and z2 in float64 too). The log side is
// FastLogTest's: |__logf(ua) - detmath::Log(ua)| < 2^-19 (1 + |l|). The
// margin takes each bound 32 times. NaN or infinite terms (v underflowing
// in float, huge d) make the margin infinite or the comparisons false:
// undecided.
template <typename T>
__device__ __forceinline__ int FastHTest(T d, const GammaPending<T>& p, T ua) {
  const float t = static_cast<float>(p.t);
  const float arg = p.near ? 1.0f + t : static_cast<float>(p.v);
  const float e = __logf(arg) - t;
  const float df = static_cast<float>(d);
  const float h = df * e + static_cast<float>(p.z2) * 0.5f;
  const float l = __logf(static_cast<float>(ua));
  const float margin = 0x1p-14f * (1.0f + fabsf(l)) +
                       df * (0x1p-13f * (1.0f + fabsf(t) + fabsf(e))) +
                       0x1p-17f * (1.0f + fabsf(h));
  const float gap = l - h;
  if (gap < -margin) return 1;
  if (gap > margin) return -1;
  return 0;
}

// How attempt k of an item ended: accepted (dv set), or not (on the cap:
// NaN and the segment flagged, as the CPU's loop).
template <typename T>
__device__ __forceinline__ void Settle(const GammaBatch<T>& b, int64_t index,
                                       uint32_t k, bool accepted, T out,
                                       PairItem<T>& it) {
  if (accepted) {
    it.dv = out;
    it.open = false;
  } else if (k + 1 == kGammaMaxAttempts) {
    it.dv = gamma_internal::QuietNaN<T>();
    it.open = false;
    ReportCap(b, index);
  }
}

template <typename T, bool kCount, bool kShared, bool kMoreRegisters,
          bool kFastH>
__global__ void __launch_bounds__(kThreads, MinBlocks<T>(kMoreRegisters))
    Gamma3Kernel(const GammaBatch<T> batch, GammaCounters* counters) {
  using Entry = typename FastTable<T>::Entry;
  constexpr bool kFloat = std::is_same_v<T, float>;
  const Entry* table = GlobalFastTable<T>();
  if constexpr (kShared) {
    __shared__ Entry copy[FastTable<T>::kEntries];
    for (int i = threadIdx.x; i < FastTable<T>::kEntries; i += kThreads) {
      copy[i] = table[i];
    }
    __syncthreads();
    table = copy;
  }
  // `first`: the batch index of the pair's first item (pair u = (2u, 2u +
  // 1)); the pair exists while first < total. The grid stride is recomputed
  // where it is used rather than held in registers.
  int64_t first =
      2 * (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x);
  int64_t segment = 0;
  int64_t group_end = 0;  // LoadPair's group: none yet
  uint64_t item_base = 0;
  PairItem<T> a, b;
  uint32_t k = 0;
  if (first < batch.total) {
    // b.g.shape is 0, no shape's (Prepare's hint).
    LoadPair(batch, first, segment, group_end, item_base, a, b);
  }
  Tallies tally;
  // The instrumented variant keeps every lane in the loop until its warp is
  // done, so that its votes see all lanes; the service's needs no votes.
  while (kCount ? __any_sync(kAllLanes, first < batch.total)
                : first < batch.total) {
    GammaTestPath path_a = GammaTestPath::kSqueeze;
    GammaTestPath path_b = GammaTestPath::kSqueeze;
    if (first < batch.total) {
      // One block for both items when they are the contract's pair.
      const bool shared = kFloat && b.open && a.seed == b.seed &&
                          (a.item >> 1) == (b.item >> 1);
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
      if constexpr (kCount) {
        tally.attempts += (a.open ? 1 : 0) + (b.open ? 1 : 0);
        tally.blocks +=
            (a.open || shared ? 1 : 0) + (!shared && b.open ? 1 : 0);
      }
      const Gamma3Words wa = Gamma3AttemptWords<T>(block_a, a.item);
      const Gamma3Words wb = Gamma3AttemptWords<T>(block_b, b.item);
      // 1. The fast passes.
      ZigguratCandidate<T> ca = FastPass<T, kShared>(table, wa);
      ZigguratCandidate<T> cb = FastPass<T, kShared>(table, wb);
      bool ok_a = a.open, ok_b = b.open;
      // 2. The slow passes of both items through one code path.
      bool slow_a = a.open && !ca.fast, slow_b = b.open && !cb.fast;
      while (slow_a || slow_b) {
        const bool on_a = slow_a;
        if constexpr (kCount) ++tally.blocks;  // the wedge's or the tail's
        T mag;
        const bool ok =
            ZigguratSlow(kDeviceZiggurat, Pick(on_a, ca, cb),
                         Pick(on_a, wa, wb), on_a ? a.seed : b.seed,
                         KindTag::kGamma3Aux, on_a ? a.item : b.item, k, &mag);
        if (on_a) {
          slow_a = false;
          ok_a = ok;
          ca.mag = mag;
        } else {
          slow_b = false;
          ok_b = ok;
          cb.mag = mag;
        }
      }
      // 3. The squeezes: -1 rejected, +1 accepted, 0 open.
      GammaPending<T> pa{}, pb{};
      const T ua_a = Gamma3Ua<T>(wa), ua_b = Gamma3Ua<T>(wb);
      int sa = -1, sb = -1;
      if (ok_a) {
        sa = GammaSqueezeTest(a.g, ZigguratValue(ca.negative, ca.mag), ua_a,
                              &pa);
      }
      if (ok_b) {
        sb = GammaSqueezeTest(b.g, ZigguratValue(cb.negative, cb.mag), ua_b,
                              &pb);
      }
      // 4. The logarithmic tests of both items through one code path.
      bool log_a = sa == 0, log_b = sb == 0;
      while (log_a || log_b) {
        const bool on_a = log_a;
        GammaShape<T> g;  // GammaLogTest reads d only
        g.d = on_a ? a.g.d : b.g.d;
        GammaTestPath path = GammaTestPath::kFastLog;
        const GammaPending<T> p = Pick(on_a, pa, pb);
        const T ua = on_a ? ua_a : ua_b;
        int decided = 0;
        if constexpr (kFastH) decided = FastHTest(g.d, p, ua);
        const bool accept =
            decided != 0 ? decided > 0
                         : GammaLogTest(g, p, ua, kCount ? &path : nullptr);
        if (on_a) {
          log_a = false;
          sa = accept ? 1 : -1;
          path_a = path;
        } else {
          log_b = false;
          sb = accept ? 1 : -1;
          path_b = path;
        }
      }
      if (a.open) Settle(batch, first, k, sa > 0, pa.out, a);
      if (b.open) Settle(batch, first + 1, k, sb > 0, pb.out, b);
      ++k;
      if (!a.open && !b.open) {
        const bool has_b = first + 1 < batch.total;
        WritePair(batch, first, a, b, has_b);
        if constexpr (kCount) {
          tally.items += has_b ? 2 : 1;
          ++tally.pairs;
          tally.blocks += (a.g.boost ? 1 : 0) + (has_b && b.g.boost ? 1 : 0);
        }
        first += 2 * static_cast<int64_t>(gridDim.x) * kThreads;
        k = 0;
        if (first < batch.total) {
          LoadPair(batch, first, segment, group_end, item_base, a, b);
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

template <typename T, bool kCount, bool kShared, bool kMoreRegisters,
          bool kFastH = false>
absl::Status Run(const GammaBatch<T>& batch, cudaStream_t stream,
                 const GammaLaunchOptions& options) {
  const auto kernel = Gamma3Kernel<T, kCount, kShared, kMoreRegisters, kFastH>;
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

// The variant `options` asks for: the service's (80 registers, the
// logarithmic test pre-decided by FastHTest) unless a benchmark comparison
// asks for the table in shared memory, the 64-register build and / or the
// exact h first.
template <typename T, bool kCount>
absl::Status RunVariant(const GammaBatch<T>& batch, cudaStream_t stream,
                        const GammaLaunchOptions& options) {
  if (options.zig_table_shared) {
    return Run<T, kCount, true, true, true>(batch, stream, options);
  }
  if (options.bench_max_warps) {
    return options.bench_exact_h
               ? Run<T, kCount, false, false, false>(batch, stream, options)
               : Run<T, kCount, false, false, true>(batch, stream, options);
  }
  if (options.bench_exact_h) {
    return Run<T, kCount, false, true, false>(batch, stream, options);
  }
  return Run<T, kCount, false, true, true>(batch, stream, options);
}

}  // namespace

template <typename T>
absl::Status LaunchGamma3Kernel(const GammaBatch<T>& batch, cudaStream_t stream,
                                const GammaLaunchOptions& options) {
  if (batch.total <= 0) return absl::OkStatus();
  return options.counters != nullptr
             ? RunVariant<T, true>(batch, stream, options)
             : RunVariant<T, false>(batch, stream, options);
}

template absl::Status LaunchGamma3Kernel<float>(const GammaBatch<float>&,
                                                cudaStream_t,
                                                const GammaLaunchOptions&);
template absl::Status LaunchGamma3Kernel<double>(const GammaBatch<double>&,
                                                 cudaStream_t,
                                                 const GammaLaunchOptions&);

}  // namespace sampler::kernels::cuda
