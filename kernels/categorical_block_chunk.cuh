// A block's chunk of a categorical row and what the blocks of a cluster
// share about theirs, for the kernels that give a row (or a chunk of one) to
// each thread block: categorical_block_row.cu (the chunk held in shared
// memory) and categorical_block_stream.cu (the chunk read from global
// memory twice). Value j of a chunk is at slot m + j of its 16-byte vectors
// (m = the chunk's misalignment in values), grouped by kGroupVecs vectors.
#ifndef SAMPLER_KERNELS_CATEGORICAL_BLOCK_CHUNK_CUH_
#define SAMPLER_KERNELS_CATEGORICAL_BLOCK_CHUNK_CUH_

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "categorical_block.cuh"
#include "categorical_block_row.h"
#include "categorical_segments.cuh"
#include "categorical_warp_row.cuh"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/cuda/categorical.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda {

constexpr int kVecBytes = 16;
// 16-byte vectors per group: one uint64 total each in shared memory.
constexpr int kGroupVecs = 4;

template <typename T>
using Vec = std::conditional_t<std::is_same_v<T, float>, float4, double2>;
template <typename T>
constexpr int kPerVec = kVecBytes / static_cast<int>(sizeof(T));
template <typename T>
constexpr int kGroup = kGroupVecs* kPerVec<T>;

// Where a task's row (this block's chunk of it) is and how the chunk lies
// in 16-byte vectors (a block-row buffer's slots, or global memory from
// the last 16-byte boundary at or before the chunk).
template <typename T>
struct RowRef {
  const CategoricalSegment* seg;
  const T* row_values;  // the row's K values in global memory
  const T* values;      // this block's chunk of them
  int64_t row;          // within its segment
  int64_t row_k;        // K
  int64_t first;        // the chunk's first value within the row
  int64_t k;            // values in the chunk (0 past a short row's end)
  int misalign;         // m: values from the last 16-byte boundary to value 0
  int head;             // values before the first 16-byte boundary (<= K)
  int64_t vecs;         // 16-byte vectors of the aligned middle
  int64_t groups;       // groups the buffer's slots [0, m + K) span
};

// The chunk of block `rank` of a cluster of kCtas (BlockRowChunk: the
// whole row for one block).
template <int kCtas, typename T>
__device__ __forceinline__ RowRef<T> RowOf(const SegmentedParams<T>& p,
                                           int64_t task, int rank) {
  RowRef<T> r;
  r.seg = &FindSegment(p.segments, p.num_segments, task);
  r.row = task - r.seg->task_begin;
  r.row_k = r.seg->categories;
  r.row_values = p.values + r.seg->values_offset + r.row * r.row_k;
  const int64_t chunk =
      kCtas == 1 ? r.row_k
                 : ((r.row_k + kCtas - 1) / kCtas + kBlockRowChunkAlign - 1) /
                       kBlockRowChunkAlign * kBlockRowChunkAlign;
  r.first = rank * chunk < r.row_k ? rank * chunk : r.row_k;
  r.k = r.row_k - r.first < chunk ? r.row_k - r.first : chunk;
  r.values = r.row_values + r.first;
  r.misalign = static_cast<int>(
      (reinterpret_cast<uintptr_t>(r.values) / sizeof(T)) % kPerVec<T>);
  const int64_t head = (kPerVec<T> - r.misalign) % kPerVec<T>;
  r.head = static_cast<int>(head < r.k ? head : r.k);
  r.vecs = (r.k - r.head) / kPerVec<T>;
  r.groups = r.k > 0 ? (r.misalign + r.k + kGroup<T> - 1) / kGroup<T> : 0;
  return r;
}

// What each block of a cluster publishes about its chunk of a row, in one
// of two sets by the row's parity: a set is written again two rows later,
// after every block has passed the next row's cluster barriers, so after
// every block has read it.
struct ChunkSlots {
  double row_max;  // the chunk's largest logit, widened
  double sum;      // the chunk's double sum of weights
  uint64_t total;  // the chunk's integer total Q_c
  int scale;       // block 0, where the binade is not settled
};

// The row's value of `mine` (one per block of the cluster, published in
// slot field `field` of `slots`), combined by `op` in rank order, in every
// thread: the block's own value for one block. A cluster barrier first.
template <int kCtas, typename V, typename Op>
__device__ __forceinline__ V ClusterCombine(V mine, V ChunkSlots::*field,
                                            ChunkSlots* slots, Op op) {
  if constexpr (kCtas == 1) {
    return mine;
  } else {
    namespace cg = ::cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) slots->*field = mine;
    cluster.sync();
    V r = cluster.map_shared_rank(slots, 0)->*field;
    for (int rank = 1; rank < kCtas; ++rank) {
      r = op(r, cluster.map_shared_rank(slots, rank)->*field);
    }
    return r;
  }
}

// The row scale s from the contract's S_d in its column order, where the
// blocks' own sum S_alt leaves its binade open: warp 0 of block 0 forms it
// from the whole row in global memory; every thread of the cluster gets it
// (a block barrier for one block a row, a cluster barrier for several).
template <int kCtas, typename T>
__device__ __forceinline__ int ContractScaleFromGlobal(const RowRef<T>& r,
                                                       int rank, bool logits,
                                                       T row_max,
                                                       ChunkSlots* slots) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  if (rank == 0 && threadIdx.x < kWarpSize) {
    T unused_remnant_weight;
    const double s_d = WarpRowScaleSum(r.row_values, r.row_k, lane, logits,
                                       row_max, &unused_remnant_weight);
    if (lane == 0) slots->scale = categorical::RowScale(s_d);
  }
  if constexpr (kCtas == 1) {
    __syncthreads();
    return slots->scale;
  } else {
    namespace cg = ::cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    return cluster.map_shared_rank(slots, 0)->scale;
  }
}

// A chunk's integer totals: its own Q_c, those of the chunks before it in
// the row, and the row's Q.
struct ChunkTotals {
  uint64_t chunk;
  uint64_t before;
  uint64_t row;
};

// Once every thread has stored its group totals in groups[0, n): their
// inclusive prefixes in place (a block barrier first), the chunk's total
// Q_c, and, a cluster's blocks publishing theirs in `slots` (summed in rank
// order after a cluster barrier), the row's Q and the chunk's first
// integer.
template <int kCtas>
__device__ __forceinline__ ChunkTotals ScanChunkGroups(uint64_t* groups,
                                                       int64_t n,
                                                       uint64_t* scratch_u64,
                                                       int threads, int rank,
                                                       ChunkSlots* slots) {
  __syncthreads();
  ChunkTotals totals;
  totals.chunk = BlockInclusiveScan(groups, n, scratch_u64, threads);
  totals.before = 0;
  totals.row = totals.chunk;
  if constexpr (kCtas > 1) {
    namespace cg = ::cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) slots->total = totals.chunk;
    cluster.sync();
    totals.row = 0;
    for (int q = 0; q < kCtas; ++q) {
      const uint64_t chunk = cluster.map_shared_rank(slots, q)->total;
      if (q < rank) totals.before += chunk;
      totals.row += chunk;
    }
  }
  return totals;
}

// The first of groups[0, n) (inclusive prefixes, n >= 1) that exceeds x,
// n - 1 if none does: a binary search.
__device__ __forceinline__ int FirstGroupAbove(const uint64_t* groups, int n,
                                               uint64_t x) {
  int lo = 0;
  int hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (x < groups[mid]) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The value of a group (its kGroupVecs vectors `g`, `before` the integers
// of the groups before it) that holds X: the first l with X < before + q_0
// + ... + q_l, 0 if none does. Its 4 vector loads are the caller's, side by
// side, and the 16 quantizations independent: a short chain of 64-bit adds
// and compares, not a walk of dependent loads and conversions.
template <typename T, typename Quantize>
__device__ __forceinline__ int ValueInGroup(const Vec<T> (&g)[kGroupVecs],
                                            uint64_t before, uint64_t x,
                                            Quantize quantize) {
  uint64_t q[kGroup<T>];
#pragma unroll
  for (int i = 0; i < kGroupVecs; ++i) {
    if constexpr (std::is_same_v<T, float>) {
      q[4 * i] = quantize(g[i].x);
      q[4 * i + 1] = quantize(g[i].y);
      q[4 * i + 2] = quantize(g[i].z);
      q[4 * i + 3] = quantize(g[i].w);
    } else {
      q[2 * i] = quantize(g[i].x);
      q[2 * i + 1] = quantize(g[i].y);
    }
  }
  uint64_t acc = before;
  int chosen = -1;
#pragma unroll
  for (int l = 0; l < kGroup<T>; ++l) {
    acc += q[l];
    if (chosen < 0 && x < acc) chosen = l;
  }
  return chosen < 0 ? 0 : chosen;
}

// The draws of a row (its chunk, its groups' inclusive prefixes in
// `groups`), a thread each (threads t, t + blockDim.x, ...): X = floor(r Q /
// 2^64) (each block of a cluster draws every X and serves those in its
// chunk), its group by FirstGroupAbove, the value by ValueInGroup over the
// group's vectors load_vec(c) (c = kGroupVecs g ...: slots, not values),
// out = the category.
template <int kCtas, typename T, typename LoadVec, typename Quantize>
__device__ __forceinline__ void ThreadDraws(const RowRef<T>& r,
                                            const uint64_t* groups,
                                            const ChunkTotals& totals,
                                            LoadVec load_vec, Quantize quantize,
                                            int32_t* out_base) {
  namespace cat = ::sampler::kernels::categorical;
  const CategoricalSegment& seg = *r.seg;
  const uint64_t item = seg.first_row + static_cast<uint64_t>(r.row);
  int32_t* out = out_base + seg.out_offset + r.row * seg.draws;
  for (int32_t d = static_cast<int32_t>(threadIdx.x); d < seg.draws;
       d += static_cast<int32_t>(blockDim.x)) {
    const uint64_t x_row = cat::MulHi64(
        cat::DrawBits(cat::DrawBlock(seg.seed, item, d), d), totals.row);
    if (kCtas > 1 &&
        (x_row < totals.before || x_row - totals.before >= totals.chunk)) {
      continue;
    }
    const uint64_t x = x_row - totals.before;
    const int g = FirstGroupAbove(groups, static_cast<int>(r.groups), x);
    Vec<T> group[kGroupVecs];
#pragma unroll
    for (int i = 0; i < kGroupVecs; ++i)
      group[i] = load_vec(kGroupVecs * g + i);
    const int chosen =
        kGroup<T> * g +
        ValueInGroup<T>(group, g > 0 ? groups[g - 1] : 0, x, quantize);
    out[d] = static_cast<int32_t>(r.first + chosen - r.misalign);
  }
}

// The integer total of a vector's values.
template <typename T, typename Quantize>
__device__ __forceinline__ uint64_t QuantizedSum(const Vec<T>& x,
                                                 Quantize quantize) {
  if constexpr (std::is_same_v<T, float>) {
    return (quantize(x.x) + quantize(x.y)) + (quantize(x.z) + quantize(x.w));
  } else {
    return quantize(x.x) + quantize(x.y);
  }
}

// The double sum of a vector's values.
template <typename T>
__device__ __forceinline__ double WideSum(const Vec<T>& x) {
  if constexpr (std::is_same_v<T, float>) {
    return (static_cast<double>(x.x) + static_cast<double>(x.y)) +
           (static_cast<double>(x.z) + static_cast<double>(x.w));
  } else {
    return x.x + x.y;
  }
}

// Host: launches `kernel` (kCtas blocks a row, a cluster for kCtas > 1, of
// `threads` threads and `smem` bytes of dynamic shared memory) on as many
// rows at a time (blocks, or clusters) as stay resident, each walking its
// rows of the `tasks`: the grid of the block-row and block-stream kernels.
template <int kCtas, typename Params>
absl::Status LaunchResidentRows(void (*kernel)(Params), const Params& params,
                                int threads, size_t smem, int64_t tasks,
                                const char* kernel_name, cudaStream_t stream) {
  SAMPLER_RETURN_IF_ERROR(
      AllowDynamicSharedMemory(reinterpret_cast<const void*>(kernel), smem));
  // All of the unified L1 as shared memory (the rows bypass L1): at K =
  // 1,024 the block-row blocks of an SM take 26 x 8.7 KB.
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
      kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
      cudaSharedmemCarveoutMaxShared));
  if constexpr (kCtas > 8) {  // past the portable cluster size
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kCtas);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = kCtas;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  if (kCtas > 1) {
    config.attrs = &cluster;
    config.numAttrs = 1;
  }
  int64_t resident = 0;
  if (kCtas > 1) {
    int clusters = 0;
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    resident = clusters;
  } else {
    int device = 0;
    int sms = 0;
    int per_sm = 0;
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, kernel, threads, smem));
    resident = static_cast<int64_t>(per_sm) * sms;
  }
  if (resident < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LaunchCategorical: no ", kernel_name, " cluster of ", kCtas,
        " blocks of ", smem, " bytes of shared memory fits the device"));
  }
  const int64_t rows_at_once = tasks < resident ? tasks : resident;
  config.gridDim = dim3(static_cast<unsigned>(rows_at_once * kCtas));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(&config, kernel, params));
  return absl::OkStatus();
}

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_BLOCK_CHUNK_CUH_
