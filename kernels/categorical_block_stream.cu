// CategoricalKernel::kBlockRow with CategoricalPlan::block_row_streamed: one
// thread block (a cluster of 2 to 16 past 64 KiB of values) per row at a
// time, as the block-row kernel, but each block streams its chunk from
// global memory twice instead of holding it in shared memory. Bits of
// SampleCategoricalCpu (docs/randomness.md, "Categorical", CAT2).
//
// Why (issue 11, K from 16,384 on): block-row's two shared buffers of a
// 64 KiB row allow one block an SM (16 warps, session 10: 52.2% of copy at
// K = 16,384, 25% occupancy, latency-bound), its clusters of 32 KiB chunks
// three (35.6% at 2^17); warp tiles read each row twice from DRAM (34.8%
// at 2^15, the DRAM 62.7% busy: a warp's row of 128 KiB, 30 warps an SM,
// so 500 MB between a row's two passes, far past the L2). Here a block's
// chunk is at most kBlockStreamChunkBytes and only 2 blocks an SM run, so
// the bytes between a chunk's two passes are about 2 x 132 x 64 KiB = 17 MB:
// the second pass (and the draws' groups) should hit the 50 MB L2, and
// every weight leave DRAM once. Shared memory holds only the group totals
// (8 KiB at 16,384 floats), so occupancy is set by registers: 2 blocks of
// 16 warps, 32 warps an SM against block-row's 16 (or, the benchmark's
// "-st-8w", 4 blocks of 8 warps with chunks of half the size: the same
// bytes in L2, four rows' phases interleaved).
//
// Per row (chunk), after block-row (categorical_block_row.cu):
//   1. logits: the maximum (a block reduction, a cluster's across its
//      blocks);
//   2. S_alt, the double sum in the block's order: 8 16-byte loads a
//      thread in flight (default L2 policy), a block reduction, a cluster's
//      blocks' sums in rank order; the scale from it where BinadeSettled,
//      else the contract's S_d by warp 0 of block 0 from global memory;
//   3. the second pass, with evict-first loads (L2 drops a line once it is
//      read again, keeping those still waiting for it): q_j by
//      multiplication, group totals of 4 vectors by a 4-lane butterfly
//      into shared memory, their inclusive scan, the chunk total; a
//      cluster's blocks publish theirs (the row's Q and the chunk's first
//      integer);
//   4. draws, a thread each: X, the group by binary search over the group
//      ends, its 4 vectors loaded again (L2) and the value within it
//      (ValueInGroup). In a cluster each block draws every X and serves
//      those in its chunk.
//
// Prediction (H100, float32, % of copy): DRAM traffic one read of the
// weights; L2 traffic twice that. A block's row at K = 16,384: pass 1
// 64 KiB at about 8 B/cycle an SM's share of DRAM, ~8k cycles with two
// blocks sharing it; pass 2 from L2 ~3k cycles; the scan and barriers
// ~1.5k; a draw ~1.5k. With two blocks an SM out of phase, DRAM stays
// busy about 70-80% of the time: 60-70% of copy at 16,384 to 2^17 for 1
// and 4 draws, a few points less at 32 (against 52 / 35-39 / 35 now).
//
// Measured (session 11's mid-session H100 call, categorical_bench --issue,
// f32 weights, % of copy, the same at 1, 4 and 32 draws within a point):
// K = 4,096 20.0, 8,192 32.8, 16,384 42.5, 20,000 31.3, 2^15 32.1, 2^17
// 35.0, 64 rows of 2^17 24.7, against block-row's 79.6, 76.1, 55.0, 41.7,
// 31.4, 37.8 and 22.3; twice the blocks a row lost everywhere (27.3 at
// 16,384), blocks of 8 warps tied (42.1, 32.6, 34.7). Nsight Compute at
// 16,384: DRAM 36.7% busy, L2 hit rate 41.2% (50% would be every second-
// pass load a hit), achieved occupancy 46.4%. So the second pass mostly
// hits L2 as intended, but the kernel is latency-bound on each row's fixed
// steps (five or more block barriers, the scan of ~1,000 group totals, the
// draws), with nothing in flight from DRAM while a block is past its first
// pass; block-row overlaps the next row's copy with them. Not routed; kept
// as the benchmark's "block-row-st" for the record.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/status/status.h"
#include "categorical_block.cuh"
#include "categorical_block_chunk.cuh"
#include "categorical_block_row.h"
#include "categorical_block_stream.h"
#include "categorical_segments.cuh"
#include "categorical_warp_row.cuh"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/philox.h"

namespace sampler::kernels::cuda {
namespace {

namespace cat = ::sampler::kernels::categorical;
using U = uint64_t;

// 16-byte loads a thread keeps in flight in the first pass (from DRAM) and
// the second (from L2).
constexpr int kFirstPassBatch = 8;
constexpr int kSecondPassBatch = 4;

template <typename T>
struct BlockStreamParams : SegmentedParams<T> {
  int64_t tasks;  // rows in the launch
};

template <typename T>
__device__ __forceinline__ Vec<T> PackVec(const T (&e)[kPerVec<T>]) {
  if constexpr (std::is_same_v<T, float>) {
    return make_float4(e[0], e[1], e[2], e[3]);
  } else {
    return make_double2(e[0], e[1]);
  }
}

// Vector c of a chunk (slots kPerVec c ... on, value j at slot m + j, the
// layout of a block-row buffer): its weights (exp(l - max) for logits),
// zeros outside the chunk. Whole vectors by one 16-byte load, evict-first
// where kStreaming; the chunk's first and last vectors value by value (no
// byte outside the chunk is read).
template <bool kStreaming, typename T>
__device__ __forceinline__ Vec<T> LoadVec(const RowRef<T>& r, int64_t c,
                                          bool logits, T row_max) {
  const int64_t j0 = kPerVec<T> * c - r.misalign;
  T e[kPerVec<T>];
  if (j0 >= 0 && j0 + kPerVec<T> <= r.k) {
    const Vec<T>* p = reinterpret_cast<const Vec<T>*>(r.values + j0);
    Vec<T> x;
    if constexpr (kStreaming) {
      x = __ldcs(p);
    } else {
      x = __ldg(p);
    }
    if (!logits) return x;
    if constexpr (std::is_same_v<T, float>) {
      e[0] = x.x;
      e[1] = x.y;
      e[2] = x.z;
      e[3] = x.w;
    } else {
      e[0] = x.x;
      e[1] = x.y;
    }
#pragma unroll
    for (int i = 0; i < kPerVec<T>; ++i) e[i] = ToWeight(e[i], true, row_max);
    return PackVec<T>(e);
  }
#pragma unroll
  for (int i = 0; i < kPerVec<T>; ++i) {
    const int64_t j = j0 + i;
    e[i] = j >= 0 && j < r.k ? ToWeight(__ldg(r.values + j), logits, row_max)
                             : T(0);
  }
  return PackVec<T>(e);
}

// The block's work on one row (its chunk): the scale, the group totals and
// their prefixes, the draws whose X falls in this chunk.
template <int kCtas, int kWarps, typename T>
__device__ __forceinline__ void SampleStreamedRow(
    const RowRef<T>& r, int rank, U* groups, double* scratch_double,
    U* scratch_u64, ChunkSlots* slots, int32_t* out_base) {
  constexpr int kThreads = kWarps * kWarpSize;
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t % kWarpSize;
  const int warp = t / kWarpSize;
  const CategoricalSegment& seg = *r.seg;
  const bool logits = seg.kind == WeightKind::kLogits;
  const int64_t vecs = r.groups * kGroupVecs;

  // 1. Logits: the maximum.
  T row_max = T(0);
  if (logits) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = t; j < r.k; j += kThreads) {
      const double x = static_cast<double>(__ldg(r.values + j));
      mx = x > mx ? x : mx;
    }
    mx = BlockReduce(mx, WarpMax<double>(), scratch_double, kWarps);
    row_max = static_cast<T>(ClusterCombine<kCtas>(mx, &ChunkSlots::row_max,
                                                   slots, WarpMax<double>()));
  }

  // 2. The first pass: S_alt, then the scale.
  double sum = 0;
  for (int64_t c0 = t; c0 < vecs; c0 += kFirstPassBatch * kThreads) {
    Vec<T> x[kFirstPassBatch];
#pragma unroll
    for (int b = 0; b < kFirstPassBatch; ++b) {
      const int64_t c = c0 + int64_t{b} * kThreads;
      x[b] = c < vecs ? LoadVec<false>(r, c, logits, row_max) : Vec<T>{};
    }
#pragma unroll
    for (int b = 0; b < kFirstPassBatch; ++b) sum = sum + WideSum<T>(x[b]);
  }
  sum = BlockReduce(sum, WarpPlus<double>(), scratch_double, kWarps);
  const double s_alt =
      ClusterCombine<kCtas>(sum, &ChunkSlots::sum, slots, WarpPlus<double>());
  const int scale =
      s_alt == 0 || (s_alt <= std::numeric_limits<double>::max() &&
                     BinadeSettled(s_alt))
          ? cat::RowScale(s_alt)
          : ContractScaleFromGlobal<kCtas>(r, rank, logits, row_max, slots);
  const cat::ScaleFactors<T> factors = cat::ScaleFactorsFor<T>(scale);
  const auto quantize = [factors](T w) {
    return cat::QuantizeByMultiply(w, factors);
  };

  // 3. The second pass: group totals (4 lanes a group, whole warps in the
  // loop for the shuffles), their inclusive prefixes, the chunk's total
  // Q_c, the row's Q and the chunk's first integer.
  for (int64_t base = int64_t{warp} * kWarpSize; base < vecs;
       base += kSecondPassBatch * kThreads) {
    Vec<T> x[kSecondPassBatch];
#pragma unroll
    for (int b = 0; b < kSecondPassBatch; ++b) {
      const int64_t c = base + int64_t{b} * kThreads + lane;
      x[b] = c < vecs ? LoadVec<true>(r, c, logits, row_max) : Vec<T>{};
    }
#pragma unroll
    for (int b = 0; b < kSecondPassBatch; ++b) {
      const int64_t c = base + int64_t{b} * kThreads + lane;
      const U s = WarpButterfly<ButterflyOrder::kLowToHigh, kGroupVecs>(
          QuantizedSum<T>(x[b], quantize), WarpPlus<U>());
      if (c < vecs && c % kGroupVecs == 0) groups[c / kGroupVecs] = s;
    }
  }
  const ChunkTotals totals = ScanChunkGroups<kCtas>(
      groups, r.groups, scratch_u64, kThreads, rank, slots);

  // 4. Draws, one a thread, the group's vectors from L2.
  ThreadDraws<kCtas>(
      r, groups, totals,
      [&r, logits, row_max](int64_t c) {
        return LoadVec<true>(r, c, logits, row_max);
      },
      quantize, out_base);
}

// kCtas blocks a row (a cluster, launched with that cluster size, for
// kCtas > 1) of kWarps warps, each streaming its chunk; as many blocks an
// SM as make 32 warps (64 registers a thread fill the register file).
template <typename T, int kCtas, int kWarps>
__global__ void __launch_bounds__(kWarps* kWarpSize, 32 / kWarps)
    BlockStreamKernel(const BlockStreamParams<T> p) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ double scratch_double[kBlockStreamWarps];
  __shared__ U scratch_u64[kBlockStreamWarps];
  __shared__ ChunkSlots slot_sets[2];
  U* const groups = reinterpret_cast<U*>(smem);
  int rank = 0;
  if constexpr (kCtas > 1) {
    rank = static_cast<int>(::cooperative_groups::this_cluster().block_rank());
  }
  // Every block of a cluster walks the same rows, so every block reaches
  // every cluster barrier.
  const int64_t clusters = gridDim.x / kCtas;
  int64_t i = 0;
  for (int64_t task = blockIdx.x / kCtas; task < p.tasks;
       task += clusters, ++i) {
    // Slot sets by the row's parity (ChunkSlots): each row passes at least
    // one cluster barrier, so a set is free again two rows on.
    SampleStreamedRow<kCtas, kWarps>(RowOf<kCtas>(p, task, rank), rank, groups,
                                     scratch_double, scratch_u64,
                                     &slot_sets[i & 1], p.out);
    __syncthreads();  // the group totals free again
  }
  if constexpr (kCtas > 1) {
    // No block may leave (its shared memory with it) before every block has
    // read its slots.
    ::cooperative_groups::this_cluster().sync();
  }
#endif
}

template <typename T, int kCtas>
absl::Status LaunchWith(const CategoricalPlan& plan,
                        const BlockStreamParams<T>& params,
                        cudaStream_t stream) {
  const size_t smem =
      static_cast<size_t>(plan.block_row_slots / kGroup<T>) * sizeof(U);
  if (plan.block_row_warps == kBlockStreamFewerWarps) {
    return LaunchResidentRows<kCtas>(
        BlockStreamKernel<T, kCtas, kBlockStreamFewerWarps>, params,
        kBlockStreamFewerWarps * kWarpSize, smem, plan.tasks, "block-stream",
        stream);
  }
  return LaunchResidentRows<kCtas>(
      BlockStreamKernel<T, kCtas, kBlockStreamWarps>, params,
      kBlockStreamWarps * kWarpSize, smem, plan.tasks, "block-stream", stream);
}

}  // namespace

int BlockStreamCtas(int64_t categories, size_t value_bytes) {
  const int64_t target =
      kBlockStreamChunkBytes / static_cast<int64_t>(value_bytes);
  int ctas = 1;
  while (ctas < kBlockRowMaxSplitCtas &&
         (categories + ctas - 1) / ctas > target) {
    ctas *= 2;
  }
  return ctas;
}

template <typename T>
absl::Status LaunchCategoricalBlockStream(const CategoricalPlan& plan,
                                          const CategoricalSegment* segments,
                                          const T* values, int32_t* out,
                                          cudaStream_t stream) {
  if (plan.block_row_slots < kGroup<T> ||
      (plan.block_row_warps != kBlockStreamWarps &&
       plan.block_row_warps != kBlockStreamFewerWarps)) {
    return absl::InvalidArgumentError(
        "LaunchCategorical: bad block-stream plan");
  }
  BlockStreamParams<T> params{};
  static_cast<SegmentedParams<T>&>(params) =
      SegmentedParamsOf(plan, segments, values, out);
  params.tasks = plan.tasks;
  if (plan.block_row_ctas == kBlockRowMaxSplitCtas) {
    return LaunchWith<T, kBlockRowMaxSplitCtas>(plan, params, stream);
  }
  return LaunchForClusterSize(
      plan.block_row_ctas, "block-stream", [&](auto ctas) {
        return LaunchWith<T, decltype(ctas)::value>(plan, params, stream);
      });
}

template absl::Status LaunchCategoricalBlockStream<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
template absl::Status LaunchCategoricalBlockStream<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda
