// CategoricalKernel::kBlockRow: one thread block per row of
// SampleCategorical at a time, the row held in shared memory, for K from a
// few hundred to 16,384 (float; 8,192 double); past that a cluster of 2 to
// 16 blocks a row (sm_90 thread block clusters, 16 non-portable), each
// holding a chunk of at most 32 KiB up to 16 such chunks (2^17 floats),
// then of at most 64 KiB where 8 blocks allow (BlockRowCtas), up to 8
// chunks of what two buffers of a block's shared memory hold. Bits of
// SampleCategoricalCpu (docs/randomness.md, "Categorical", CAT2).
//
// Why: the warp-tiles kernel reads every row twice from DRAM (S_d first,
// then the integer weights, which need the scale S_d gives; at K = 4,096 the
// first pass's lines are gone from L2 by the second: 1.08 GB read for
// 0.54 GB of weights, bench/results/categorical-ncu-h100-session8-
// 2026-11-26.md), and the row-split kernel (K past 2^15) is latency-bound
// at 3 blocks an SM that each load their 64 KiB chunk, then work on it with
// no load in flight. Here every weight leaves DRAM once, and a block's next
// row is always in flight:
//
//   * A block walks rows blockIdx.x, + gridDim.x, ... (clusters: their
//     index, + the clusters) with two row buffers: while it samples a row,
//     the next one arrives by one bulk asynchronous copy (cp.async.bulk,
//     completing on an mbarrier) of its 16-byte-aligned middle; the at most
//     3 + 3 values around it are loaded into registers then and stored when
//     that row's turn comes. Value j of a chunk sits at slot m + j of its
//     buffer (m = the chunk's misalignment in values), so the middle lands
//     16-byte aligned; the slots before 0 and after the chunk, to the end
//     of its last group, hold zeros.
//   * Logits: the maximum (block reduction, exact in any order; across a
//     cluster through its blocks' shared memory), then the weights
//     exp(l - max) in place.
//   * The scale s = 60 - floor(log2 S_d) from S_alt, the double sum in the
//     block's own order (16-byte vectors, a block reduction; a cluster adds
//     its blocks' sums in rank order), when that provably gives the
//     contract's binade (BinadeSettled, as the row-split kernel does);
//     otherwise (a total within 2^-19 of a power of two, with inexact sums,
//     or equal weights summing to a power of two) warp 0 forms the
//     contract's S_d in its column order, from shared memory (one block a
//     row) or from global memory (block 0 of a cluster).
//   * q_j = floor(w_j 2^s) by multiplication (exact, categorical_core.h),
//     one 16-byte vector a lane, the group totals of 4 vectors (16 floats,
//     8 doubles) by a 4-lane butterfly, stored; their inclusive scan over
//     the block (exact integers) gives the prefix at every group end and Q.
//     A cluster's blocks publish their chunk totals Q_c: the row's Q and
//     the chunk's first integer P_c.
//   * Draws, one thread each: X = floor(r Q / 2^64), the group by binary
//     search over the group ends, the category among the group's integers
//     (ValueInGroup: its 4 vectors loaded side by side, 16 independent
//     quantizations, then a chain of adds and compares; a walk of dependent
//     loads and conversions before session 11): the unique j with C_j <= X
//     < C_j + q_j, the contract's
//     category (every sum is exact; zero weights, pads included, own no X).
//     In a cluster every block draws every X and serves those in
//     [P_c, P_c + Q_c).
//
// Work per float32 weight, one draw (the budget at 70% of an H100's copy
// bandwidth is about 44 thread instructions and 5.6 conversions a weight,
// categorical_lanes.cu): no load instruction for the middle (the copy
// engine's); S_alt a quarter of a 16-byte shared load, one F2F.F64 and one
// DADD; quantization a quarter of a shared load, two FMUL (one where the
// scale needs one factor) and one F2I.U64, 1.5 64-bit adds, and a quarter
// lane's share of the 2-step 64-bit butterfly (2 x (2 SHFL + 2 adds) per 4
// values, 2 a weight); loops and addressing about 1: about 9-10
// instructions and 2 conversions a weight, against warp tiles' 16 and a
// second DRAM pass. Per row: about six block barriers, a scan of K / 16
// group totals, per draw a Philox block, ~log2(K / 16) shared loads and a
// walk of at most 16 values.
//
// Residency (float32, 64 registers at most): a block's shared memory is
// two buffers of its chunk plus a chunk / 2 bytes of group totals, so K =
// 1,024 takes 1 warp and 8.7 KB (26 blocks an SM: 26 warps, 104 KB of rows
// in flight), K = 4,096 4 warps and 34 KB (6 blocks: 24 warps), K = 16,384
// 16 warps and 136 KB (1 block: 16 warps, 64 KB in flight), K = 2^17 a
// cluster of 8 such blocks. Little's law at 2.1 TB/s and ~1 us under load
// wants about 16 KB in flight an SM, so the copies stay ahead and the
// kernel should be bound by DRAM: predicted 75-85% of the copy bandwidth at
// K = 1,024 to 16,384 and 1 or 4 draws, somewhat less at 32 draws (a
// thread's Philox block, binary search and walk of 16 per draw) and for
// clusters (2 or 3 cluster barriers a row, about a microsecond, against
// 4 us a row per cluster at K = 2^17 and 16 clusters).
//
// Measured (H100, session 9 mid-call, categorical_bench --issue, f32
// weights, % of copy at 1/4/32 draws, before the loops were unrolled):
// K = 257 25.9/25.1/26.8 (a row is too little work for a block: its fixed
// costs, barriers, scan and draw, dominate), 1,000 64.4/62.0/60.3, 1,024
// 60.2/58.3/56.6, 2,048 64.3/62.4/60.6, 4,096 70.3/68.3/65.8, 8,192
// 67.6/65.4/62.5, 16,384 47.6/46.1/43.1 (one block an SM); clusters 24.3/
// 24.1/23.3 at 2^15 (2 blocks of 16,384), 30.8/30.0/27.6 at 2^17 (8).
// Short of the prediction: throughput follows warps an SM (24 at 4,096 and
// 8,192, 16 at 16,384), as if a row took ~12k cycles for 1,024 values a
// warp, and equally bytes in flight (96 KB against 64 KB); the benchmark's
// block-row-2x (512 values a warp, the same bytes) tells the two apart, and
// Nsight Compute's warp states would say which stall it is.
//
// Session 10 (predictions, then the mid-session H100 call, % of copy at
// 1/4/32 draws):
//   * Split rows (ReplanBlockRowCtas, "-c2x" / "-c4x" / "-c8x": 2, 4, 8
//     times the planner's blocks a row, up to a non-portable cluster of
//     16). At K = 16,384 one block of two 64 KiB buffers (139 KB) fits an
//     SM: 16 warps, 64 KB in flight. Two blocks of 8,192 take 68 KB each,
//     3 an SM: 24 warps and 96 KB in flight, less two cluster barriers a
//     row. Predicted 55-62% at 16,384, 50-55% at 2^15, ~45% at 2^17.
//     Measured: splits lose wherever one block holds the row (16,384:
//     41.3 in 2 blocks against 50.2 in one; 4,096 and 8,192 worse still),
//     win past it: 2^15 31.2 in 4 blocks of 8,192 and 32.6 in 8 against
//     25.6 in 2 of 16,384; 2^17 36.7/36.7/33.7 in 16 of 8,192 against
//     32.1/31.4/28.7 in 8 of 16,384. So BlockRowCtas now takes chunks of
//     at most 32 KiB past 64 KiB rows (4 blocks at 20,000, 16 at 2^17).
//   * Warp-wide draws (CategoricalPlan::block_row_warp_draws): a thread's
//     draw is ~5 binary-search steps and a walk of up to 16 values, about
//     200 instructions and 1,500 cycles of dependent shared loads and
//     conversions on one lane; WarpDraws takes ~45 warp instructions a
//     draw, and warp 0 forms the Philox block 0 of 32 rows at a time.
//     Predicted at one draw: K = 257 25% -> ~33%, K = 1,000 to 2,048 +4-6
//     points. Measured at one draw: 26.2 -> 30.9 (257), 62.1 -> 68.9
//     (1,000), 68.2 -> 74.8 (2,048), 74.3 -> 80.1 (4,096), 71.5 -> 76.7
//     (8,192), 50.2 -> 54.8 (16,384); at four draws, four warp searches one
//     after another lost to four threads' side by side (61.3 -> 52.4 at
//     1,024), so it is on for rows of one draw only.
//
// Session 11 (predictions; the H100 numbers go to the session's results):
//   * A thread's draw finds its value within the group by ValueInGroup: the
//     group's four 16-byte shared loads issued together and 16 independent
//     quantizations instead of up to 16 dependent load-convert-add steps
//     (~600 of a draw's ~1,500 cycles). Predicted: +2-4 points at 4 and 32
//     draws for K = 1,000 to 16,384 (58-69% / 56-66% in session 10).
//     Measured (mid-session H100 call, % of copy at 4/32 draws, session 10
//     in brackets): 1,000 60.3/61.0 (58.0/56.4), 1,024 60.6/61.0
//     (58.6/57.1), 2,048 64.9/65.6 (63.0/61.0), 4,096 73.7/73.4
//     (68.5/65.9), 8,192 71.7/70.9 (65.9/62.7), 16,384 52.5/51.0
//     (45.9/42.9); one draw (warp draws) unchanged, 69.0 to 79.6.
//   * Streamed chunks (CategoricalPlan::block_row_streamed,
//     categorical_block_stream.cu) for K from 16,384 on, where the two
//     64 KiB buffers leave one block an SM: lost (42.5 against 55.0 at
//     16,384, 35.0 against 37.8 at 2^17; see that file), not planned.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "categorical_block.cuh"
#include "categorical_block_chunk.cuh"
#include "categorical_block_row.h"
#include "categorical_block_stream.h"
#include "categorical_segments.cuh"
#include "categorical_warp_row.cuh"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda {
namespace {

namespace cat = ::sampler::kernels::categorical;
using U = uint64_t;

constexpr int kMaxThreads = kBlockRowMaxWarps * kWarpSize;
// Values before the first 16-byte boundary of a row and after the last: at
// most kVecBytes / sizeof(T) - 1 each.
constexpr int kEdgeLanes = 8;

template <typename T>
struct BlockRowParams : SegmentedParams<T> {
  int64_t tasks;    // rows in the launch
  int64_t slots;    // values a row buffer holds
  bool warp_draws;  // CategoricalPlan::block_row_warp_draws
};

// ------------------------------------------ bulk copies on an mbarrier --

__device__ __forceinline__ unsigned SharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void BarrierInit(U* bar) {
  asm volatile(
      "mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(SharedAddress(bar))
      : "memory");
}

// Makes the initialized barriers visible to the copy engine (the async
// proxy); the block syncs after.
__device__ __forceinline__ void FenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Orders this thread's earlier shared-memory accesses (the generic proxy)
// before copies it queues next (the async proxy): a buffer read and written
// by the block is filled again by the copy engine.
__device__ __forceinline__ void FenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The barrier's one arrival for this phase, which completes once `bytes`
// have also arrived (0: at once).
__device__ __forceinline__ void BarrierArriveExpect(U* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   SharedAddress(bar)),
               "r"(bytes)
               : "memory");
}

// Global to shared memory by the copy engine, `bytes` a multiple of 16,
// both addresses 16-byte aligned; completes on `bar`.
__device__ __forceinline__ void BulkCopy(void* dst, const void* src,
                                         unsigned bytes, U* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
      "[%0], [%1], %2, [%3];\n" ::"r"(SharedAddress(dst)),
      "l"(src), "r"(bytes), "r"(SharedAddress(bar))
      : "memory");
}

// Waits until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void BarrierWait(U* bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(SharedAddress(bar)), "r"(parity)
        : "memory");
  } while (done == 0);
}

// ------------------------------------------------------------ a row --

// The values of a row outside its aligned middle, read into registers by
// threads 0 .. kEdgeLanes - 1 when the copy is queued and stored into the
// buffer when the row's turn comes.
template <typename T>
struct Edge {
  int64_t slot = -1;  // -1: none for this thread
  T value = T(0);
};

// Queues the copy of the row of `task` into `buf`: thread 0 queues the bulk
// copy of the aligned middle on `bar`; threads 0 .. kEdgeLanes - 1 read the
// edges.
template <int kCtas, typename T>
__device__ __forceinline__ Edge<T> QueueRow(const BlockRowParams<T>& p,
                                            int64_t task, int rank, T* buf,
                                            U* bar) {
  const RowRef<T> r = RowOf<kCtas>(p, task, rank);
  if (threadIdx.x == 0) {
    FenceProxyAsync();
    const unsigned bytes = static_cast<unsigned>(r.vecs) * kVecBytes;
    BarrierArriveExpect(bar, bytes);
    if (bytes > 0) {
      BulkCopy(buf + r.misalign + r.head, r.values + r.head, bytes, bar);
    }
  }
  Edge<T> e;
  const int t = static_cast<int>(threadIdx.x);
  const int64_t tail_first = r.head + r.vecs * kPerVec<T>;
  const int64_t j = t < r.head ? t : tail_first + (t - r.head);
  if (t < kEdgeLanes && j < r.k) {
    e.slot = r.misalign + j;
    e.value = __ldg(r.values + j);
  }
  return e;
}

// The draws of a row of one block (at most kBlockRowWarpDrawsUpTo, 32 at
// most) by one whole warp, one draw after another: lane d forms X of draw
// d, then for each draw the warp finds the first group whose prefix exceeds
// X by 32-way steps (one shared load a lane and a ballot a step: two steps
// up to 1,024 groups), and the category within it by an inclusive scan of
// its kGroup integers across lanes and a ballot: the first j with
// X < C_j + q_j, the thread-per-draw search's category (prefixes are exact
// integers, so both find the unique j with C_j <= X < C_j + q_j). Why: a
// thread's binary search and walk of up to 16 values is a chain of about
// 20 dependent shared loads and conversions run by one lane while the other
// 31 wait (session 9: at K = 257 a row costs about 970 warp instructions,
// a one-warp block issue-bound). Philox block 0 of the row (draws 0 and 1)
// comes from lane `ahead_lane`'s `ahead` (BlockRowKernel forms it with the
// blocks of 31 other rows); lanes 2 and 3 form block 1 themselves.
template <typename T, typename Quantize>
__device__ __forceinline__ void WarpDraws(const CategoricalSegment& seg,
                                          uint64_t item, U total,
                                          const U* groups, int n_groups,
                                          const T* buf, Quantize quantize,
                                          int lane, int64_t category_of_slot0,
                                          const PhiloxBlock& ahead,
                                          int ahead_lane, int32_t* out) {
  const int32_t draws = seg.draws;
  PhiloxBlock block0;
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    block0.v[w] = __shfl_sync(kFullMask, ahead.v[w], ahead_lane);
  }
  U x_mine = 0;
  if (lane < draws) {
    const PhiloxBlock block = lane < cat::kDrawsPerBlock
                                  ? block0
                                  : cat::DrawBlock(seg.seed, item, lane);
    x_mine = cat::MulHi64(cat::DrawBits(block, lane), total);
  }
  int chosen_mine = 0;
  for (int32_t d = 0; d < draws; ++d) {
    const U x = __shfl_sync(kFullMask, x_mine, d);
    // groups[lo, lo + n) holds the answer; groups[lo + n - 1] > x.
    int lo = 0;
    int n = n_groups;
    while (n > 1) {
      const int step = (n + kWarpSize - 1) / kWarpSize;
      const int end = min((lane + 1) * step, n);  // one past this lane's part
      // Lanes past the range vote yes; a lane of it does first (its last).
      const bool exceeds = lane * step >= n || x < groups[lo + end - 1];
      const int f = __ffs(__ballot_sync(kFullMask, exceeds)) - 1;
      lo += f * step;
      n = min(step, n - f * step);
    }
    const int first = kGroup<T> * lo;
    U running = lane < kGroup<T> ? quantize(buf[first + lane]) : 0;
#pragma unroll
    for (int o = 1; o < kGroup<T>; o *= 2) {
      const U up = __shfl_up_sync(kFullMask, running, o);
      if (lane >= o) running += up;
    }
    const U before = lo > 0 ? groups[lo - 1] : 0;
    const int c = __ffs(__ballot_sync(
                      kFullMask, lane < kGroup<T> && x - before < running)) -
                  1;
    if (lane == d) chosen_mine = first + c;
  }
  if (lane < draws) {
    out[lane] = static_cast<int32_t>(category_of_slot0 + chosen_mine);
  }
}

// The block's work on one row (its chunk) in `buf` (its copy complete, its
// edges and pads stored): the scale, the group totals and their prefixes,
// the draws (those whose X falls in this chunk). `warp_draws`: a row of
// one block with at most kBlockRowWarpDrawsUpTo draws takes them by
// WarpDraws (warp 0), with the row's Philox block 0 in lane `ahead_lane`'s
// `ahead`.
template <int kCtas, typename T>
__device__ __forceinline__ void SampleRow(const RowRef<T>& r, int rank, T* buf,
                                          U* groups, double* scratch_double,
                                          U* scratch_u64, ChunkSlots* slots,
                                          int32_t* out_base, bool warp_draws,
                                          const PhiloxBlock& ahead,
                                          int ahead_lane) {
  const int t = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  const int warps = threads / kWarpSize;
  const int lane = t % kWarpSize;
  const int warp = t / kWarpSize;
  const CategoricalSegment& seg = *r.seg;
  const bool logits = seg.kind == WeightKind::kLogits;
  const int m = r.misalign;
  // At most BlockRowSlots values: int indices.
  const int slots_used = static_cast<int>(r.groups) * kGroup<T>;
  const int vecs = static_cast<int>(r.groups) * kGroupVecs;
  const int k = static_cast<int>(r.k);
  const Vec<T>* v = reinterpret_cast<const Vec<T>*>(buf);

  // 1. Logits: the maximum, then the weights in place (pads stay 0).
  T row_max = T(0);
  if (logits) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int i = t; i < slots_used; i += threads) {
      if (i >= m && i < m + k) {
        const double x = static_cast<double>(buf[i]);
        mx = x > mx ? x : mx;
      }
    }
    mx = BlockReduce(mx, WarpMax<double>(), scratch_double, warps);
    row_max = static_cast<T>(ClusterCombine<kCtas>(mx, &ChunkSlots::row_max,
                                                   slots, WarpMax<double>()));
    for (int i = t; i < slots_used; i += threads) {
      if (i >= m && i < m + k) buf[i] = detmath::Exp(buf[i] - row_max);
    }
    __syncthreads();
  }

  // 2. The scale: S_alt in the cluster's order, the contract's S_d where it
  // might fall in another binade.
  double sum = 0;
  // Unrolled here and in step 3 so that a thread has several shared loads
  // in flight (session 9: a row took about 12k cycles for 1,024 values a
  // warp, far more than its instructions, so latency-bound).
#pragma unroll 4
  for (int c = t; c < vecs; c += threads) {
    sum = sum + WideSum<T>(v[c]);
  }
  sum = BlockReduce(sum, WarpPlus<double>(), scratch_double, warps);
  const double s_alt =
      ClusterCombine<kCtas>(sum, &ChunkSlots::sum, slots, WarpPlus<double>());
  int scale = 0;
  if (s_alt == 0 ||
      (s_alt <= std::numeric_limits<double>::max() && BinadeSettled(s_alt))) {
    scale = cat::RowScale(s_alt);
  } else if constexpr (kCtas == 1) {
    // From the weights in shared memory.
    if (warp == 0) {
      T unused_remnant_weight;
      const T* row = buf + m;
      const double s_d =
          WarpRowScaleSumOf<T>([row](int64_t j) { return row[j]; }, r.k, lane,
                               false, T(0), &unused_remnant_weight);
      if (lane == 0) slots->scale = cat::RowScale(s_d);
    }
    __syncthreads();
    scale = slots->scale;
  } else {
    // From the whole row in global memory, by block 0.
    scale = ContractScaleFromGlobal<kCtas>(r, rank, logits, row_max, slots);
  }
  const cat::ScaleFactors<T> factors = cat::ScaleFactorsFor<T>(scale);
  const auto quantize = [factors](T w) {
    return cat::QuantizeByMultiply(w, factors);
  };

  // 3. Group totals (4 lanes a group, whole warps in the loop for the
  // shuffles), their inclusive prefixes, the chunk's total Q_c, and the
  // row's Q and the chunk's first integer.
#pragma unroll 4
  for (int c0 = warp * kWarpSize; c0 < vecs; c0 += threads) {
    const int c = c0 + lane;
    U s = 0;
    if (c < vecs) s = QuantizedSum<T>(v[c], quantize);
    s = WarpButterfly<ButterflyOrder::kLowToHigh, kGroupVecs>(s, WarpPlus<U>());
    if (c < vecs && c % kGroupVecs == 0) groups[c / kGroupVecs] = s;
  }
  const ChunkTotals totals = ScanChunkGroups<kCtas>(
      groups, r.groups, scratch_u64, threads, rank, slots);

  // 4. Draws: by warp 0 together for a row of one draw (one block a row),
  // else one a thread.
  if (kCtas == 1 && warp_draws && seg.draws <= kBlockRowWarpDrawsUpTo) {
    // Every lane of warp 0 (the block's barriers are outside SampleRow).
    if (warp == 0) {
      const uint64_t item = seg.first_row + static_cast<uint64_t>(r.row);
      int32_t* out = out_base + seg.out_offset + r.row * seg.draws;
      WarpDraws(seg, item, totals.row, groups, static_cast<int>(r.groups), buf,
                quantize, lane, r.first - m, ahead, ahead_lane, out);
    }
    return;
  }
  ThreadDraws<kCtas>(
      r, groups, totals, [v](int c) { return v[c]; }, quantize, out_base);
}

// kCtas blocks a row (a cluster, launched with that cluster size, for
// kCtas > 1), each holding its chunk.
template <typename T, int kCtas>
__global__ void __launch_bounds__(kMaxThreads, 1)
    BlockRowKernel(const BlockRowParams<T> p) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ U bars[2];
  __shared__ double scratch_double[kBlockRowMaxWarps];
  __shared__ U scratch_u64[kBlockRowMaxWarps];
  __shared__ ChunkSlots slot_sets[2];

  T* const buf0 = reinterpret_cast<T*>(smem);
  T* const buf1 = buf0 + p.slots;
  U* groups = reinterpret_cast<U*>(smem + 2 * p.slots * sizeof(T));
  const int t = static_cast<int>(threadIdx.x);
  int rank = 0;
  if constexpr (kCtas > 1) {
    rank = static_cast<int>(::cooperative_groups::this_cluster().block_rank());
  }
  // Every block of a cluster walks the same rows: the whole cluster
  // returns or none of it does (its barriers need all of its blocks).
  const int64_t clusters = gridDim.x / kCtas;
  int64_t task = blockIdx.x / kCtas;
  if (task >= p.tasks) return;
  if (t == 0) {
    BarrierInit(&bars[0]);
    BarrierInit(&bars[1]);
    FenceBarrierInit();
  }
  __syncthreads();
  Edge<T> edge = QueueRow<kCtas>(p, task, rank, buf0, &bars[0]);

  // Warp-wide draws: lane l of warp 0 holds Philox block 0 of the row 32
  // rows on from the last multiple of 32 rows (row i + l of this block's
  // walk), formed 32 rows at a time: one Philox a row spread over the
  // warp, not one lane's chain of ~90 instructions a row.
  PhiloxBlock ahead{};
  const bool warp_draws = kCtas == 1 && p.warp_draws;
  for (int64_t i = 0; task < p.tasks; ++i, task += clusters) {
    const int b = static_cast<int>(i & 1);
    if (warp_draws && t < kWarpSize && i % kWarpSize == 0) {
      const int64_t later = task + t * clusters;
      if (later < p.tasks) {
        const CategoricalSegment& seg =
            FindSegment(p.segments, p.num_segments, later);
        ahead = cat::DrawBlock(
            seg.seed,
            seg.first_row + static_cast<uint64_t>(later - seg.task_begin), 0);
      }
    }
    T* const buf = b == 0 ? buf0 : buf1;
    const RowRef<T> r = RowOf<kCtas>(p, task, rank);
    // The edges and the zero pads of this row (the copy writes other
    // bytes), then the next row's copy into the other buffer, free since
    // the previous row's last barrier.
    if (edge.slot >= 0) buf[edge.slot] = edge.value;
    if (t < r.misalign) buf[t] = T(0);
    const int64_t pad_from = r.misalign + r.k;
    if (pad_from + t < r.groups * kGroup<T>) buf[pad_from + t] = T(0);
    const int64_t next = task + clusters;
    if (next < p.tasks) {
      edge = QueueRow<kCtas>(p, next, rank, b == 0 ? buf1 : buf0, &bars[b ^ 1]);
    }
    BarrierWait(&bars[b], static_cast<unsigned>((i >> 1) & 1));
    __syncthreads();
    SampleRow<kCtas>(r, rank, buf, groups, scratch_double, scratch_u64,
                     &slot_sets[b], p.out, warp_draws, ahead,
                     static_cast<int>(i % kWarpSize));
    __syncthreads();  // the buffer and the group totals free again
  }
  if constexpr (kCtas > 1) {
    // No block may leave (its shared memory with it) before every block has
    // read its slots.
    ::cooperative_groups::this_cluster().sync();
  }
#endif
}

}  // namespace

int BlockRowCtas(int64_t categories, size_t value_bytes) {
  const int64_t target =
      kBlockRowTargetChunkBytes / static_cast<int64_t>(value_bytes);
  const int64_t cluster_chunk =
      kBlockRowClusterChunkBytes / static_cast<int64_t>(value_bytes);
  if (categories > target &&
      categories <= kBlockRowMaxSplitCtas * cluster_chunk) {
    int ctas = 2;
    while ((categories + ctas - 1) / ctas > cluster_chunk) ctas *= 2;
    return ctas;
  }
  int ctas = 1;
  while (ctas < kBlockRowMaxCtas && (categories + ctas - 1) / ctas > target) {
    ctas *= 2;
  }
  return ctas;
}

void PlanBlockRow(int64_t categories, int ctas, size_t value_bytes,
                  CategoricalPlan* plan) {
  plan->block_row_ctas = ctas;
  const int64_t chunk = BlockRowChunk(categories, ctas);
  plan->block_row_warps = BlockRowWarps(chunk);
  plan->block_row_slots = BlockRowSlots(chunk, value_bytes);
}

absl::Status ReplanBlockRowCtas(int64_t categories, int ctas,
                                CategoricalPlan* plan) {
  if (plan->kernel != CategoricalKernel::kBlockRow || categories < 1 ||
      (ctas != 1 && ctas != 2 && ctas != 4 && ctas != 8 &&
       ctas != kBlockRowMaxSplitCtas)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReplanBlockRowCtas: no block-row plan of ", ctas,
                     " blocks a row for K = ", categories));
  }
  const size_t value_bytes = plan->precision == Precision::kFloat64 ? 8 : 4;
  CategoricalPlan replanned = *plan;
  PlanBlockRow(categories, ctas, value_bytes, &replanned);
  if (BlockRowSmemBytes(replanned.block_row_slots, value_bytes) >
      kBlockRowMaxSmemBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReplanBlockRowCtas: K = ", categories, " in ", ctas,
                     " blocks a row exceeds a block's shared memory"));
  }
  *plan = replanned;
  return absl::OkStatus();
}

absl::Status ReplanBlockRowStreamed(int64_t categories, int split,
                                    CategoricalPlan* plan) {
  const size_t value_bytes = plan->precision == Precision::kFloat64 ? 8 : 4;
  const int ctas =
      categories >= 1 ? split * BlockStreamCtas(categories, value_bytes) : 0;
  if (plan->kernel != CategoricalKernel::kBlockRow || categories < 1 ||
      (split != 1 && split != 2 && split != 4) ||
      ctas > kBlockRowMaxSplitCtas) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReplanBlockRowStreamed: no streamed plan of ", split,
                     " times the blocks a row for K = ", categories));
  }
  plan->block_row_streamed = true;
  plan->block_row_ctas = ctas;
  plan->block_row_warps = kBlockStreamWarps;
  plan->block_row_slots =
      BlockRowSlots(BlockRowChunk(categories, ctas), value_bytes);
  return absl::OkStatus();
}

int64_t BlockRowChunk(int64_t categories, int ctas) {
  if (ctas == 1) return categories;
  const int64_t per = (categories + ctas - 1) / ctas;
  return (per + kBlockRowChunkAlign - 1) / kBlockRowChunkAlign *
         kBlockRowChunkAlign;
}

int BlockRowWarps(int64_t chunk) {
  int warps = 1;
  while (warps < kBlockRowMaxWarps &&
         static_cast<int64_t>(warps) * 1024 < chunk) {
    warps *= 2;
  }
  return warps;
}

int64_t BlockRowSlots(int64_t chunk, size_t value_bytes) {
  const int64_t per_vec = kVecBytes / static_cast<int64_t>(value_bytes);
  const int64_t group = kGroupVecs * per_vec;
  return (per_vec - 1 + chunk + group - 1) / group * group;
}

size_t BlockRowSmemBytes(int64_t slots, size_t value_bytes) {
  const int64_t group =
      kGroupVecs * (kVecBytes / static_cast<int64_t>(value_bytes));
  return 2 * static_cast<size_t>(slots) * value_bytes +
         static_cast<size_t>(slots / group) * sizeof(U);
}

int64_t BlockRowMaxCategories(Precision precision) {
  const size_t value_bytes = precision == Precision::kFloat64 ? 8 : 4;
  // The largest chunk (a multiple of kBlockRowChunkAlign) whose buffers
  // fit, times the most blocks a row.
  int64_t chunk =
      static_cast<int64_t>(kBlockRowMaxSmemBytes / value_bytes / 2) /
      kBlockRowChunkAlign * kBlockRowChunkAlign;
  while (BlockRowSmemBytes(BlockRowSlots(chunk, value_bytes), value_bytes) >
         kBlockRowMaxSmemBytes) {
    chunk -= kBlockRowChunkAlign;
  }
  return chunk * kBlockRowMaxCtas;
}

namespace {

template <typename T, int kCtas>
absl::Status LaunchWith(const CategoricalPlan& plan,
                        const BlockRowParams<T>& params, cudaStream_t stream) {
  return LaunchResidentRows<kCtas>(
      BlockRowKernel<T, kCtas>, params, plan.block_row_warps * kWarpSize,
      BlockRowSmemBytes(plan.block_row_slots, sizeof(T)), plan.tasks,
      "block-row", stream);
}

}  // namespace

template <typename T>
absl::Status LaunchCategoricalBlockRow(const CategoricalPlan& plan,
                                       const CategoricalSegment* segments,
                                       const T* values, int32_t* out,
                                       cudaStream_t stream) {
  if (plan.block_row_streamed) {
    return LaunchCategoricalBlockStream<T>(plan, segments, values, out, stream);
  }
  if (plan.block_row_warps < 1 || plan.block_row_warps > kBlockRowMaxWarps ||
      plan.block_row_slots < 1) {
    return absl::InvalidArgumentError("LaunchCategorical: bad block-row plan");
  }
  BlockRowParams<T> params{};
  static_cast<SegmentedParams<T>&>(params) =
      SegmentedParamsOf(plan, segments, values, out);
  params.tasks = plan.tasks;
  params.slots = plan.block_row_slots;
  params.warp_draws = plan.block_row_warp_draws;
  if (plan.block_row_ctas == kBlockRowMaxSplitCtas) {  // ReplanBlockRowCtas
    return LaunchWith<T, kBlockRowMaxSplitCtas>(plan, params, stream);
  }
  return LaunchForClusterSize(plan.block_row_ctas, "block-row", [&](auto ctas) {
    return LaunchWith<T, decltype(ctas)::value>(plan, params, stream);
  });
}

template absl::Status LaunchCategoricalBlockRow<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
template absl::Status LaunchCategoricalBlockRow<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda
