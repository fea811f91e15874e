// CategoricalKernel::kWarpTiles: one warp per row of SampleCategorical, for
// mid K (129 to 2^17; the service's past the block-row kernel's rows, to
// 2^15). Bits of SampleCategoricalCpu (docs/randomness.md,
// section "Categorical", CAT2).
//
// Why a new kernel: kWarpPerRow (categorical.cu) quantizes each weight by
// the ~15-instruction bit path and reduces every block of 32 integers with
// a 64-bit xor butterfly (10 shuffles and 10 adds a lane per 32 weights), so
// it spends about 37 instructions a weight on the integer pass alone and
// reads at 11% to 32% of the copy bandwidth. CAT2 fixes only S_d's order;
// the integers can be summed, and X searched, in any order.
//
// Per row (one warp):
//   1. logits: the row's maximum; S_d in the contract's order, lane l
//      adding column l (categorical_warp_row.cuh): the one pass over DRAM;
//   2. q_j = floor(w_j 2^s) by floating-point multiplication (exact:
//      categorical_core.h, QuantizeByMultiply) over tiles of 128 values,
//      lane l holding values 128 t + 4 l .. + 3 (one 16-byte load where the
//      row is aligned, which the first pass left in L1 or L2); each tile's
//      integer total by one 64-bit xor butterfly (per 128 weights, not 32),
//      its running end E_t kept in shared memory;
//   3. per draw: X = floor(r Q / 2^64); the tile t with E_(t-1) <= X < E_t
//      by binary search (the same address in every lane: a broadcast);
//      its 128 integers again, an inclusive scan of the lanes' 4-value
//      sums, the first lane whose prefix passes X by ballot, and that
//      lane's walk of its 4 values: the j with C_j <= X < C_j + q_j.
//
// Instruction count per weight, float32, one draw (budget at 70% of an
// H100's copy bandwidth: about 44 thread instructions and 5.6 conversions a
// weight, categorical_lanes.cu): pass 1 about 5 (load, F2F.F64, DADD,
// address, loop), pass 2 about 11 (per lane and tile: one 16-byte load,
// 4 x (2 FMUL + F2I.U64), 3 64-bit adds, a 64-bit butterfly of 5 x (2
// shuffles + 2 adds), the store: about 43 for 128 weights), so about 16;
// 2 conversions. Bytes in flight: pass 1 keeps eight 128-byte loads a warp
// in flight, 32 warps a multiprocessor (64 registers at most) give 32 KiB.
// A draw costs about 60 instructions a lane (Philox's share, the search,
// one tile's 4 quantizations, a 5-step 64-bit scan), small beside K's.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "categorical_segments.cuh"
#include "categorical_warp_row.cuh"
#include "categorical_warp_tiles.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda {
namespace {

namespace cat = ::sampler::kernels::categorical;
using U = uint64_t;

constexpr int kTileWarps = 4;  // warps (rows) per block
constexpr int kTileThreads = kTileWarps * kWarpSize;
constexpr int kPerLane = kWarpTilesValuesPerTile / kWarpSize;
constexpr int kTile = kWarpTilesValuesPerTile;
static_assert(kPerLane == 4, "one 16-byte load of floats a lane and tile");
// Blocks a multiprocessor keeps resident: 8 x 4 warps (64 registers).
constexpr int kTileMinBlocks = 8;

template <typename T>
struct WarpTilesParams : SegmentedParams<T> {
  int64_t tasks;     // rows in the launch
  int32_t tile_cap;  // tile ends per warp in shared memory
};

// One load of the second pass: __ldg, or __ldcs (evict-first in L1 and L2)
// for CategoricalPlan::warp_tiles_evict_first.
template <bool kEvictFirst, typename V>
__device__ __forceinline__ V LoadAgain(const V* p) {
  if constexpr (kEvictFirst) {
    return __ldcs(p);
  } else {
    return __ldg(p);
  }
}

// Lane's 4 values of tile t (zeros past K): one 16-byte load (two for
// double) where the row is 16-byte aligned and the 4 lie inside it.
template <bool kEvictFirst, typename T>
__device__ __forceinline__ void LoadTile(const T* __restrict__ row,
                                         int64_t categories, bool aligned,
                                         int64_t t, int lane,
                                         T (&v)[kPerLane]) {
  const int64_t j0 = kTile * t + kPerLane * lane;
  if (aligned && j0 + kPerLane <= categories) {
    if constexpr (std::is_same_v<T, float>) {
      const float4 x =
          LoadAgain<kEvictFirst>(reinterpret_cast<const float4*>(row + j0));
      v[0] = x.x;
      v[1] = x.y;
      v[2] = x.z;
      v[3] = x.w;
    } else {
      const double2 a =
          LoadAgain<kEvictFirst>(reinterpret_cast<const double2*>(row + j0));
      const double2 b = LoadAgain<kEvictFirst>(
          reinterpret_cast<const double2*>(row + j0 + 2));
      v[0] = a.x;
      v[1] = a.y;
      v[2] = b.x;
      v[3] = b.y;
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    v[i] = j0 + i < categories ? LoadAgain<kEvictFirst>(row + j0 + i) : T(0);
  }
}

// Inclusive scan of exact integers over the warp (any order gives the same
// sums).
__device__ __forceinline__ U WarpInclusiveScan(U v, int lane) {
#pragma unroll
  for (int o = 1; o < kWarpSize; o *= 2) {
    const U up = __shfl_up_sync(kFullMask, v, o);
    if (lane >= o) v = v + up;
  }
  return v;
}

template <typename T, bool kEvictFirst>
__global__ void __launch_bounds__(kTileThreads, kTileMinBlocks)
    WarpTilesKernel(const WarpTilesParams<T> p) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t task = static_cast<int64_t>(blockIdx.x) * kTileWarps + warp;
  if (task >= p.tasks) return;  // whole warps only
  const CategoricalSegment& seg = FindSegment(p.segments, p.num_segments, task);
  const int64_t categories = seg.categories;
  const int64_t my_row = task - seg.task_begin;
  const uint64_t item = seg.first_row + static_cast<uint64_t>(my_row);
  const bool logits = seg.kind == WeightKind::kLogits;
  const int32_t draws = seg.draws;
  const T* __restrict__ row =
      p.values + seg.values_offset + my_row * categories;
  const bool aligned = reinterpret_cast<uintptr_t>(row) % 16 == 0;
  const int64_t tiles = (categories + kTile - 1) / kTile;
  U* ends = reinterpret_cast<U*>(smem_bytes) + warp * p.tile_cap;

  // 1. The maximum (logits) and the scale.
  const T row_max = logits ? WarpRowMax(row, categories, lane) : T(0);
  T unused_remnant_weight;
  const int scale = cat::RowScale(WarpRowScaleSum(
      row, categories, lane, logits, row_max, &unused_remnant_weight));
  const cat::ScaleFactors<T> factors = cat::ScaleFactorsFor<T>(scale);

  // Lane's 4 integer weights of tile t (0 past K, where a logit's padding
  // would not be a zero weight) and their sum.
  const auto quantize_tile = [&](int64_t t, U(&q)[kPerLane]) {
    T v[kPerLane];
    LoadTile<kEvictFirst>(row, categories, aligned, t, lane, v);
    const int64_t j0 = kTile * t + kPerLane * lane;
    U sum = 0;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      q[i] = j0 + i < categories ? cat::QuantizeByMultiply(
                                       ToWeight(v[i], logits, row_max), factors)
                                 : 0;
      sum = sum + q[i];
    }
    return sum;
  };

  // 2. Tile totals and their running ends E_t.
  U total = 0;
#pragma unroll 2
  for (int64_t t = 0; t < tiles; ++t) {
    U q[kPerLane];
    total = total + WarpSum<ButterflyOrder::kLowToHigh>(quantize_tile(t, q));
    if (lane == 0) ends[t] = total;
  }
  __syncwarp();

  // 3. Draws.
  int32_t* my_out = p.out + seg.out_offset + my_row * draws;
  PhiloxBlock philox{};
#pragma unroll 1
  for (int32_t d = 0; d < draws; ++d) {
    const U x = cat::NextDrawX(seg.seed, item, d, total, philox);
    const int64_t t =
        tiles > 1 ? cat::SearchBlockEnds(ends, int64_t{1}, tiles, x) : 0;
    const U base = t > 0 ? ends[t - 1] : 0;
    U q[kPerLane];
    const U sum = quantize_tile(t, q);
    const U prefix = base + WarpInclusiveScan(sum, lane);
    // E_t > X, so some lane's prefix passes X; the first one holds j.
    const unsigned past = __ballot_sync(kFullMask, x < prefix);
    if (lane == __ffs(past) - 1) {
      U c = prefix - sum;
      int i = 0;
      for (; i < kPerLane - 1; ++i) {
        c = c + q[i];
        if (x < c) break;
      }
      my_out[d] = static_cast<int32_t>(kTile * t + kPerLane * lane + i);
    }
  }
}

}  // namespace

template <typename T>
absl::Status LaunchCategoricalWarpTiles(const CategoricalPlan& plan,
                                        const CategoricalSegment* segments,
                                        const T* values, int32_t* out,
                                        cudaStream_t stream) {
  const int64_t grid = (plan.tasks + kTileWarps - 1) / kTileWarps;
  if (grid > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchCategorical: ", plan.tasks,
                     " rows are more than one warp-tiles launch can take"));
  }
  WarpTilesParams<T> params{};
  static_cast<SegmentedParams<T>&>(params) =
      SegmentedParamsOf(plan, segments, values, out);
  params.tasks = plan.tasks;
  params.tile_cap = plan.smem_block_cap;
  const size_t smem = static_cast<size_t>(kTileWarps) *
                      static_cast<size_t>(plan.smem_block_cap) * sizeof(U);
  const auto kernel = plan.warp_tiles_evict_first ? WarpTilesKernel<T, true>
                                                  : WarpTilesKernel<T, false>;
  SAMPLER_RETURN_IF_ERROR(
      AllowDynamicSharedMemory(reinterpret_cast<const void*>(kernel), smem));
  kernel<<<static_cast<unsigned>(grid), kTileThreads, smem, stream>>>(params);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

template absl::Status LaunchCategoricalWarpTiles<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
template absl::Status LaunchCategoricalWarpTiles<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda
