// The CUDA kernel of SampleGamma, contract version 3 (docs/randomness.md
// "Gamma"; arithmetic in gamma3_core.h), bit for bit the CPU backend
// (gamma_cpu.cc).
//
// Work unit: a pair of batch indices (2u, 2u + 1). A lane runs attempts
// k = 0, 1, ... of both items of its pair at once and takes its next pair
// (one grid stride further) as soon as both are accepted, so a lane never
// idles while its warp has work left (no warp-synchronous rows of outputs,
// no pre-caching slots). When the two items are the contract's pair (same
// seed, items 2j and 2j + 1: every pair of a float32 segment with an even
// first item) one Philox block serves both attempts k; otherwise (float64,
// odd first items, segment ends) each open item takes its own block.
//
// Work per float32 sample (shape 1; per attempt p(accept) ~ 0.95 overall,
// the ziggurat pass failing 1.2% of the time), against the version-2
// kernel (gamma.cu):
//   Philox4x32-10 blocks: ~0.55 per sample (a block per pair-attempt; a
//     pair needs max(K1, K2) blocks, E ~ 1.1), plus one auxiliary block on
//     the 2.8% of passes that leave the fast path and one per sample for
//     shapes < 1 (the boost). Version 2: ~1.05 per sample (one per attempt).
//   Transcendentals on the common path: none (ziggurat: two table reads, a
//     multiply and a compare; then the squeeze). Version 2: a deterministic
//     log, a cos2pi polynomial and a correctly rounded sqrt per attempt.
//   Rare paths, per attempt: the wedge (2.7%: one Philox block and one
//     deterministic exp), the tail (0.06%: per iteration a block and two
//     logs), and the logarithmic test (the ~5-8% of attempts the squeeze
//     leaves undecided: log1p(t) - t and a fast __logf with proven margin,
//     the deterministic log only near the boundary), as in version 2.
//   Warp-wide branches: per loop iteration, P(some lane leaves the fast
//     path) = 1 - 0.972^(32 x open items) ~ 0.6-0.8, P(some lane needs the
//     logarithmic test) ~ 0.9: these are what the next step (deferring the
//     logarithmic tests of a warp and running them together) is for.
// The ziggurat tables live in shared memory (a block-wide copy of the
// __constant__ tables: lanes index them at random, which constant memory
// would serialise).
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

__constant__ ZigguratTable<float> kDeviceZigguratFloat = {
    {SAMPLER_ZIGGURAT_X_FLOAT},
    {SAMPLER_ZIGGURAT_F_FLOAT},
    {SAMPLER_ZIGGURAT_DF_FLOAT},
    SAMPLER_ZIGGURAT_INV_R_FLOAT};
__constant__ ZigguratTable<double> kDeviceZigguratDouble = {
    {SAMPLER_ZIGGURAT_X_DOUBLE},
    {SAMPLER_ZIGGURAT_F_DOUBLE},
    {SAMPLER_ZIGGURAT_DF_DOUBLE},
    SAMPLER_ZIGGURAT_INV_R_DOUBLE};

template <typename T>
__device__ __forceinline__ const ZigguratTable<T>& ConstantZiggurat() {
  if constexpr (std::is_same_v<T, float>) {
    return kDeviceZigguratFloat;
  } else {
    return kDeviceZigguratDouble;
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

template <typename T>
__device__ __forceinline__ void WriteItem(const GammaBatch<T>& b, int64_t index,
                                          const PairItem<T>& it) {
  GammaDraw<T> x = it.draw;
  if (it.g.boost) {
    x.ub = Gamma3Boost<T>(it.seed, KindTag::kGamma3Aux, it.item);
  }
  const T log_scale = it.log_output ? detmath::Log(it.scale) : T(0);
  b.out[index] = GammaOutput(it.g, x, it.scale, log_scale, it.log_output);
}

// Lane-local tallies of the instrumented variant.
struct Tallies {
  unsigned long long iterations = 0, attempts = 0, items = 0, full = 0,
                     exact = 0, warp_full = 0, warp_exact = 0, pairs = 0;
};

// Attempt k of one open item from its words; on the cap, NaN and the
// segment flagged (as the CPU's loop).
template <typename T, bool kCount>
__device__ __forceinline__ void Attempt(const GammaBatch<T>& b,
                                        const ZigguratTable<T>& tab,
                                        int64_t index, uint32_t k,
                                        const PhiloxBlock& block,
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
    const GammaSegment* segs = b.segments;
    const int64_t s =
        EntryHolding(0, b.num_segments - 1, index,
                     [segs](int64_t j) { return segs[j].out_begin; });
    atomicOr(b.segment_status + s, kStatusAttemptCap);
  }
}

template <typename T, bool kCount>
__global__ void __launch_bounds__(kThreads)
    Gamma3Kernel(const GammaBatch<T> batch, GammaCounters* counters) {
  __shared__ ZigguratTable<T> tab;
  {
    static_assert(sizeof(ZigguratTable<T>) % 4 == 0, "copied by words");
    const uint32_t* from =
        reinterpret_cast<const uint32_t*>(&ConstantZiggurat<T>());
    uint32_t* to = reinterpret_cast<uint32_t*>(&tab);
    for (int i = threadIdx.x; i < static_cast<int>(sizeof(tab) / 4);
         i += kThreads) {
      to[i] = from[i];
    }
    __syncthreads();
  }
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
  if constexpr (kCount) {
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
}

template <typename T, bool kCount>
absl::Status Run(const GammaBatch<T>& batch, cudaStream_t stream,
                 const GammaLaunchOptions& options) {
  const auto kernel = Gamma3Kernel<T, kCount>;
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
