// Warp-level reductions, scans and broadcasts by shuffles, written once for
// the kernels. Each helper fixes its order of operations (the xor offsets of
// a butterfly and their order, or lane order), and the kernels' bits depend
// on it for floating-point values: a caller picks the order its contract
// (docs/randomness.md) or its CPU twin pins, and a helper never reorders.
// Widths are compile-time constants (see kWarpSize in common.h).
//
// Shuffle patterns that are not plain reductions stay in their kernels:
// categorical's butterfly-patterned table and butterfly search, enumerate's
// (max, sum) log-sum-exp butterfly and the per-level tree of categorical's
// warp-per-row search.
#ifndef SAMPLER_KERNELS_CUDA_WARP_CUH_
#define SAMPLER_KERNELS_CUDA_WARP_CUH_

#include <cstdint>

#include "sampler/kernels/common.h"

namespace sampler::kernels::cuda {

inline constexpr unsigned kFullMask = 0xffffffffu;

template <typename T>
struct WarpPlus {
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

// b > a ? b : a: the first operand wins ties and NaN comparisons.
template <typename T>
struct WarpMax {
  __device__ __forceinline__ T operator()(T a, T b) const {
    return b > a ? b : a;
  }
};

// The order of a butterfly's xor offsets.
enum class ButterflyOrder {
  kHighToLow,  // kSpan / 2, ..., kLowest
  kLowToHigh,  // kLowest, ..., kSpan / 2
};

// v = op(v, v of lane ^ o) for each xor offset o, a power of two from
// kLowest to kSpan / 2 in kOrder: afterwards every lane holds the op-reduction
// over the lanes whose index differs from its own in bits [log2 kLowest,
// log2 kSpan) only, and both lanes of every pair got the same value at every
// step when op is commutative. `mask` names the lanes taking part (all the
// lanes of each kSpan-aligned group that calls it).
template <ButterflyOrder kOrder, int kSpan = kWarpSize, int kLowest = 1,
          typename T, typename Op>
__device__ __forceinline__ T WarpButterfly(T v, Op op,
                                           unsigned mask = kFullMask) {
  static_assert(kSpan <= kWarpSize && (kSpan & (kSpan - 1)) == 0,
                "a power-of-two part of the warp");
  if constexpr (kOrder == ButterflyOrder::kHighToLow) {
#pragma unroll
    for (int o = kSpan / 2; o >= kLowest; o /= 2) {
      v = op(v, __shfl_xor_sync(mask, v, o));
    }
  } else {
#pragma unroll
    for (int o = kLowest; o < kSpan; o *= 2) {
      v = op(v, __shfl_xor_sync(mask, v, o));
    }
  }
  return v;
}

// The sum of v over the whole warp, in every lane, by a butterfly in kOrder.
template <ButterflyOrder kOrder, typename T>
__device__ __forceinline__ T WarpSum(T v) {
  return WarpButterfly<kOrder>(v, WarpPlus<T>());
}

// The maximum of v over the whole warp (WarpMax), in every lane.
template <ButterflyOrder kOrder, typename T>
__device__ __forceinline__ T WarpMaxOf(T v) {
  return WarpButterfly<kOrder>(v, WarpMax<T>());
}

// Lane src's v, in every lane.
template <typename T>
__device__ __forceinline__ T WarpBroadcast(T v, int src) {
  return __shfl_sync(kFullMask, v, src);
}

// acc + v of lane 0 + v of lane 1 + ... + v of lane n - 1 (each converted to
// Acc; n <= 32, of the caller's integer type), added left to right as a CPU
// loop adds, in every lane.
template <typename Acc, typename T, typename Count>
__device__ __forceinline__ Acc WarpSumInLaneOrder(Acc acc, T v, Count n) {
  for (int k = 0; k < n; ++k) {
    acc = acc + static_cast<Acc>(__shfl_sync(kFullMask, v, k));
  }
  return acc;
}

// The same over all 32 lanes, fully unrolled.
template <typename Acc, typename T>
__device__ __forceinline__ Acc WarpSumInLaneOrder(Acc acc, T v) {
#pragma unroll
  for (int k = 0; k < kWarpSize; ++k) {
    acc = acc + static_cast<Acc>(__shfl_sync(kFullMask, v, k));
  }
  return acc;
}

// The inclusive scan of v over lanes 0 .. n - 1 (n <= 32), added left to
// right: returns this lane's prefix (zero in lanes n and above) and sets
// *total to the last prefix in every lane.
template <typename T>
__device__ __forceinline__ T WarpInclusiveScanInLaneOrder(T v, int n, int lane,
                                                          T* total) {
  T prefix = 0;
  T sum = 0;
  for (int j = 0; j < n; ++j) {
    sum = sum + __shfl_sync(kFullMask, v, j);
    if (lane == j) prefix = sum;
  }
  *total = sum;
  return prefix;
}

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_WARP_CUH_
