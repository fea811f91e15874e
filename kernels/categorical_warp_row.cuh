// One warp per categorical row: the row's maximum (logits) and the double
// scale sum S_d in the contract's order (docs/randomness.md, "Categorical",
// step 2), shared by the kernels that give a row to a warp
// (categorical.cu's kWarpPerRow, categorical_warp_tiles.cu), and by
// categorical_block_row.cu for a row held in shared memory.
#ifndef SAMPLER_KERNELS_CATEGORICAL_WARP_ROW_CUH_
#define SAMPLER_KERNELS_CATEGORICAL_WARP_ROW_CUH_

#include <cstdint>
#include <limits>

#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/detmath.h"

namespace sampler::kernels::cuda {

// w from a stored value: the weight itself, or exp(l - max) for logits.
template <typename T>
__device__ __forceinline__ T ToWeight(T v, bool logits, T row_max) {
  return logits ? detmath::Exp(v - row_max) : v;
}

// The maximum of a row of K values, in every lane (exact in any order).
template <typename T>
__device__ __forceinline__ T WarpRowMax(const T* __restrict__ row,
                                        int64_t categories, int lane) {
  T row_max = -std::numeric_limits<T>::infinity();
  for (int64_t j = lane; j < categories; j += kWarpSize) {
    row_max = WarpMax<T>()(row_max, row[j]);
  }
  return WarpMaxOf<ButterflyOrder::kLowToHigh>(row_max);
}

// S_d of RowScaleSum, in every lane, for a row whose value j is load(j)
// (global or shared memory): the remnant's double sum in order (lane j < R
// holds w_j, returned in *remnant_weight, 0 elsewhere), lane l's column sum
// c_l over the blocks in order, and the pairwise tree of the 32 column sums
// by an xor butterfly (each node left + right, in either order: the same
// double). Lane l's loads are coalesced across the warp, eight blocks in
// flight.
template <typename T, typename Load>
__device__ __forceinline__ double WarpRowScaleSumOf(Load load,
                                                    int64_t categories,
                                                    int lane, bool logits,
                                                    T row_max,
                                                    T* remnant_weight) {
  namespace cat = ::sampler::kernels::categorical;
  const int remnant = static_cast<int>(cat::RemnantSize(categories));
  const int64_t blocks = cat::NumBlocks(categories);
  const T my_weight =
      lane < remnant ? ToWeight(load(lane), logits, row_max) : T(0);
  *remnant_weight = my_weight;
  double scale_sum = WarpSumInLaneOrder(0.0, my_weight, remnant);
  if (blocks > 0) {
    double column = 0;
#pragma unroll 8
    for (int64_t b = 0; b < blocks; ++b) {
      column =
          column + static_cast<double>(ToWeight(
                       load(remnant + kWarpSize * b + lane), logits, row_max));
    }
    scale_sum = scale_sum + WarpSum<ButterflyOrder::kLowToHigh>(column);
  }
  return scale_sum;
}

// WarpRowScaleSumOf for a row in global memory (read-only loads).
template <typename T>
__device__ __forceinline__ double WarpRowScaleSum(const T* __restrict__ row,
                                                  int64_t categories, int lane,
                                                  bool logits, T row_max,
                                                  T* remnant_weight) {
  return WarpRowScaleSumOf<T>([row](int64_t j) { return __ldg(row + j); },
                              categories, lane, logits, row_max,
                              remnant_weight);
}

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_WARP_ROW_CUH_
