// Staging a warp's contiguous rows in shared memory by asynchronous copies,
// shared by the kernels that give each row to one lane or a few lanes
// (categorical_lanes.cu, categorical_lane_groups.cu).
#ifndef SAMPLER_KERNELS_CATEGORICAL_SHARED_ROWS_CUH_
#define SAMPLER_KERNELS_CATEGORICAL_SHARED_ROWS_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "sampler/kernels/common.h"

namespace sampler::kernels::cuda {

// Global to shared memory without registers (sm_80 and later), one value.
template <typename T>
__device__ __forceinline__ void CopyAsync(T* smem, const T* global) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cp.async of 4 or 8 bytes");
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to),
               "l"(global), "n"(sizeof(T)));
}
__device__ __forceinline__ void WaitAsyncCopies() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;\n" ::: "memory");
}

// Calls f(e, row, col) for every element e = lane + 32 i of `rows` rows
// of `cols` values laid end to end (row = e / cols, col = e % cols, kept
// by steps rather than divisions): a warp's coalesced walk over a span.
template <typename F>
__device__ __forceinline__ void ForEachInSpan(int rows, int cols, int lane,
                                              F&& f) {
  const int n = rows * cols;
  int row = lane / cols;
  int col = lane % cols;
  const int row_step = kWarpSize / cols;
  const int col_step = kWarpSize % cols;
#pragma unroll 4
  for (int e = lane; e < n; e += kWarpSize) {
    f(e, row, col);
    row += row_step;
    col += col_step;
    if (col >= cols) {
      col -= cols;
      ++row;
    }
  }
}

// Queues the copy of `rows` contiguous rows of `k` values from `src` into
// shared memory, row r at rows_smem + (first_slot + r) * stride: every
// lane copies elements e = lane + 32 i of the span (coalesced, 128 bytes
// an instruction for float). The caller waits (WaitAsyncCopies) and syncs
// the lanes that read the rows.
template <typename T>
__device__ __forceinline__ void QueueRowsCopy(T* rows_smem, int stride,
                                              const T* src, int rows, int k,
                                              int first_slot, int lane) {
  T* first = rows_smem + first_slot * stride;
  ForEachInSpan(rows, k, lane, [&](int e, int row, int col) {
    CopyAsync(first + row * stride + col, src + e);
  });
}

// The sum of the remnant w_0 .. w_{R-1} of a row in shared memory,
// sequentially from 0, each weight widened to double (S_d's first term).
template <typename T>
__device__ __forceinline__ double RemnantScaleSum(const T* row, int remnant) {
  double sum = 0;
  for (int j = 0; j < remnant; ++j) sum = sum + static_cast<double>(row[j]);
  return sum;
}

// The pairwise tree of the column sums c_l for l = first_col ..
// first_col + kCols - 1 of a row in shared memory (kCols a power of two
// dividing 32): c_l = sum over b = 0 .. blocks - 1, in order, of
// w_{R + 32 b + l}, from 0, in double; the node of those kCols columns,
// merged left + right level by level as the columns complete (stack[l]
// holds a finished node of 2^l columns). With kCols = 32 and first_col = 0
// it is S_d's tree term (docs/randomness.md, "Categorical", step 2).
template <int kCols, typename T>
__device__ __forceinline__ double ColumnTreeSum(const T* row, int remnant,
                                                int blocks, int first_col) {
  static_assert(kCols >= 1 && kCols <= kWarpSize && (kCols & (kCols - 1)) == 0,
                "a power of two columns");
  constexpr int kLevels = kCols >= 32   ? 5
                          : kCols >= 16 ? 4
                          : kCols >= 8  ? 3
                          : kCols >= 4  ? 2
                          : kCols >= 2  ? 1
                                        : 0;
  const T* first = row + remnant + first_col;
  double stack[kLevels + 1];
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    double v = 0;
    for (int b = 0; b < blocks; ++b) {
      v = v + static_cast<double>(first[kWarpSize * b + c]);
    }
    int l = 0;
#pragma unroll
    for (; l < kLevels && ((c >> l) & 1); ++l) v = stack[l] + v;
    stack[l] = v;
  }
  return stack[kLevels];
}

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_SHARED_ROWS_CUH_
