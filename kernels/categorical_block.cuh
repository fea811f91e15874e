// Block-wide helpers of the categorical kernels that hold a row (or a
// chunk of one) in a thread block's shared memory and share its work among
// the block's warps (categorical_row_split.cu, categorical_block_row.cu):
// reductions and an exact integer scan across the block, and the test
// that fixes a row's scale from a sum of its weights in another order than
// the contract's (docs/randomness.md, "Categorical", the row-split
// paragraph).
#ifndef SAMPLER_KERNELS_CATEGORICAL_BLOCK_CUH_
#define SAMPLER_KERNELS_CATEGORICAL_BLOCK_CUH_

#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/detmath.h"

namespace sampler::kernels::cuda {

// Block-wide reduction through `scratch` (`warps` entries, the block's
// warps); the result is in every thread. Fixed order: the warp's butterfly,
// then warps 0, 1, ... in order.
template <typename V, typename Op>
__device__ __forceinline__ V BlockReduce(V v, Op op, V* scratch, int warps) {
  v = WarpButterfly<ButterflyOrder::kLowToHigh>(v, op);
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  if (threadIdx.x % kWarpSize == 0) scratch[warp] = v;
  __syncthreads();
  V r = scratch[0];
  for (int w = 1; w < warps; ++w) r = op(r, scratch[w]);
  __syncthreads();  // scratch free again
  return r;
}

template <typename V>
struct MinOf {
  __device__ __forceinline__ V operator()(V a, V b) const {
    return b < a ? b : a;
  }
};

// Inclusive prefix sums of groups[0, n) in place, n of any size, by the
// block's `threads` threads (a multiple of 32): each thread takes a
// contiguous run, the runs' sums are scanned across the block. Returns the
// total (in every thread). Exact (integers). warp_totals holds threads / 32
// entries.
__device__ __forceinline__ uint64_t BlockInclusiveScan(uint64_t* groups,
                                                       int64_t n,
                                                       uint64_t* warp_totals,
                                                       int threads) {
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t % kWarpSize;
  const int warp = t / kWarpSize;
  const int warps = threads / kWarpSize;
  const int64_t per = (n + threads - 1) / threads;
  const int64_t begin = t * per < n ? t * per : n;
  const int64_t end = begin + per < n ? begin + per : n;
  uint64_t mine = 0;
  for (int64_t i = begin; i < end; ++i) mine += groups[i];
  uint64_t incl = mine;  // inclusive scan over the warp's lanes
#pragma unroll
  for (int o = 1; o < kWarpSize; o *= 2) {
    const uint64_t up = __shfl_up_sync(kFullMask, incl, o);
    if (lane >= o) incl += up;
  }
  if (lane == kWarpSize - 1) warp_totals[warp] = incl;
  __syncthreads();
  uint64_t before = incl - mine;
  uint64_t total = 0;
  for (int w = 0; w < warps; ++w) {
    if (w < warp) before += warp_totals[w];
    total += warp_totals[w];
  }
  for (int64_t i = begin; i < end; ++i) {
    before += groups[i];
    groups[i] = before;
  }
  __syncthreads();
  return total;
}

// The exponent of the lowest set bit of a finite w > 0: w is a multiple of
// 2^LowestBitExponent(w).
__device__ __forceinline__ int LowestBitExponent(float w) {
  const uint32_t bits = detmath::Bits(w) & 0x7fffffffu;
  const int biased = static_cast<int>(bits >> 23);
  const uint32_t fraction = bits & ((1u << 23) - 1u);
  const uint32_t significand = biased != 0 ? (fraction | (1u << 23)) : fraction;
  return (biased != 0 ? biased : 1) - 150 + (__ffs(significand) - 1);
}
__device__ __forceinline__ int LowestBitExponent(double w) {
  const uint64_t bits = detmath::Bits(w) & 0x7fffffffffffffffull;
  const int biased = static_cast<int>(bits >> 52);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  const uint64_t significand =
      biased != 0 ? (fraction | (uint64_t{1} << 52)) : fraction;
  return (biased != 0 ? biased : 1) - 1075 +
         (__ffsll(static_cast<long long>(significand)) - 1);
}

// Whether floor(log2) of the contract's S_d is provably that of a finite
// S_alt > 0, a double sum of the same K < 2^31 non-negative weights in
// another order: every order lies within gamma_(K-1) S of the exact total
// S (gamma_n = n 2^-53 / (1 - n 2^-53); additions with subnormal results
// are exact), so |S_d - S_alt| <= 2 gamma S < 2^-20.9 S_alt, and when
// S_alt (1 -+ 2^-19) lie in one binade, so does S_d.
__device__ __forceinline__ bool BinadeSettled(double s_alt) {
  const double low = s_alt * (1.0 - 0x1p-19);
  const double high = s_alt * (1.0 + 0x1p-19);
  return categorical::FloorLog2(low) == categorical::FloorLog2(high);
}

// BinadeSettled, or no order can round at all: every weight is a multiple
// of 2^lsb (the lowest set bit of any of them) and S_alt <= 2^(lsb + 52),
// so S <= 2^(lsb + 53) and every partial sum is exact: S_d = S_alt.
__device__ __forceinline__ bool ScaleSettled(double s_alt, int lsb) {
  if (categorical::FloorLog2(s_alt) < int64_t{lsb} + 52) {
    return true;  // every sum exact
  }
  return BinadeSettled(s_alt);
}

// Host: launch(std::integral_constant<int, C>()) for the cluster size C =
// `ctas` of a plan (1, 2, 4 or 8 blocks a row, each its own kernel
// instance); InvalidArgument naming `kernel_name` for another.
template <typename Launch>
absl::Status LaunchForClusterSize(int ctas, const char* kernel_name,
                                  Launch&& launch) {
  switch (ctas) {
    case 1:
      return launch(std::integral_constant<int, 1>());
    case 2:
      return launch(std::integral_constant<int, 2>());
    case 4:
      return launch(std::integral_constant<int, 4>());
    case 8:
      return launch(std::integral_constant<int, 8>());
  }
  return absl::InvalidArgumentError(
      absl::StrCat("LaunchCategorical: bad ", kernel_name, " plan"));
}

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_BLOCK_CUH_
