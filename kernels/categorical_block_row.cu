// CategoricalKernel::kBlockRow: one thread block per row of
// SampleCategorical at a time, the row held in shared memory, for K from a
// few hundred to what two rows of shared memory hold (RowSplit's range
// below). Bits of SampleCategoricalCpu (docs/randomness.md, "Categorical",
// CAT2).
//
// Why: the warp-tiles kernel reads every row twice from DRAM (S_d first,
// then the integer weights, which need the scale S_d gives; at K = 4,096 the
// first pass's lines are gone from L2 by the second: 1.08 GB read for
// 0.54 GB of weights, bench/results/categorical-ncu-h100-session8-
// 2026-11-26.md). Here every weight leaves DRAM once:
//
//   * A block walks rows blockIdx.x, + gridDim.x, ... (as many blocks as
//     stay resident) with two row buffers: while it samples a row, the next
//     one arrives by one bulk asynchronous copy (cp.async.bulk, completing
//     on an mbarrier) of its 16-byte-aligned middle; the at most 3 + 3
//     values around it are loaded into registers then and stored when that
//     row's turn comes. Value j of a row sits at slot m + j of its buffer
//     (m = the row's misalignment in values), so the middle lands 16-byte
//     aligned; the slots before 0 and after K, to the end of the last group,
//     hold zeros.
//   * Logits: the maximum (block reduction, exact in any order), then the
//     weights exp(l - max) in place.
//   * The scale s = 60 - floor(log2 S_d) from S_alt, the double sum in the
//     block's own order (16-byte vectors, a block reduction), when that
//     provably gives the contract's binade (BinadeSettled, as the row-split
//     kernel does); otherwise (a total within 2^-19 of a power of two, with
//     inexact sums, or rows of equal weights summing to one) warp 0 forms
//     the contract's S_d from shared memory in its column order.
//   * q_j = floor(w_j 2^s) by multiplication (exact, categorical_core.h),
//     one 16-byte vector a lane, the group totals of 4 vectors (16 floats,
//     8 doubles) by a 4-lane butterfly, stored; their inclusive scan over
//     the block (exact integers) gives the prefix at every group end and Q.
//   * Draws, one thread each: X = floor(r Q / 2^64), the group by binary
//     search over the group ends, the category by a walk of the group's
//     integers: the unique j with C_j <= X < C_j + q_j, the contract's
//     category (every sum is exact; zero weights, pads included, own no X).
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
// two buffers of K values plus K / 2 bytes of group totals, so K = 1,024
// takes 1 warp and 8.7 KB (26 blocks an SM: 26 warps, 104 KB of rows in
// flight), K = 4,096 4 warps and 34 KB (6 blocks: 24 warps), K = 16,384 16
// warps and 136 KB (1 block: 16 warps, 64 KB in flight). Little's law at
// 2.1 TB/s and ~1 us under load wants about 16 KB in flight an SM, so the
// copies stay ahead and the kernel should be bound by DRAM: predicted
// 75-85% of the copy bandwidth at K = 1,024 to 16,384 and 1 or 4 draws.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "categorical_block.cuh"
#include "categorical_block_row.h"
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
constexpr int kVecBytes = 16;
// 16-byte vectors per group: one uint64 total each in shared memory.
constexpr int kGroupVecs = 4;
// Values before the first 16-byte boundary of a row and after the last: at
// most kVecBytes / sizeof(T) - 1 each.
constexpr int kEdgeLanes = 8;

template <typename T>
using Vec = std::conditional_t<std::is_same_v<T, float>, float4, double2>;
template <typename T>
constexpr int kPerVec = kVecBytes / static_cast<int>(sizeof(T));
template <typename T>
constexpr int kGroup = kGroupVecs* kPerVec<T>;

template <typename T>
struct BlockRowParams : SegmentedParams<T> {
  int64_t tasks;  // rows in the launch
  int64_t slots;  // values a row buffer holds
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

// Where a task's row is and how it lies in a buffer.
template <typename T>
struct RowRef {
  const CategoricalSegment* seg;
  const T* values;  // the row's K values in global memory
  int64_t row;      // within its segment
  int64_t k;        // K
  int misalign;     // m: values from the last 16-byte boundary to value 0
  int head;         // values before the first 16-byte boundary (<= K)
  int64_t vecs;     // 16-byte vectors of the aligned middle
  int64_t groups;   // groups the buffer's slots [0, m + K) span
};

template <typename T>
__device__ __forceinline__ RowRef<T> RowOf(const BlockRowParams<T>& p,
                                           int64_t task) {
  RowRef<T> r;
  r.seg = &FindSegment(p.segments, p.num_segments, task);
  r.row = task - r.seg->task_begin;
  r.k = r.seg->categories;
  r.values = p.values + r.seg->values_offset + r.row * r.k;
  r.misalign = static_cast<int>(
      (reinterpret_cast<uintptr_t>(r.values) / sizeof(T)) % kPerVec<T>);
  const int64_t head = (kPerVec<T> - r.misalign) % kPerVec<T>;
  r.head = static_cast<int>(head < r.k ? head : r.k);
  r.vecs = (r.k - r.head) / kPerVec<T>;
  r.groups = (r.misalign + r.k + kGroup<T> - 1) / kGroup<T>;
  return r;
}

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
template <typename T>
__device__ __forceinline__ Edge<T> QueueRow(const BlockRowParams<T>& p,
                                            int64_t task, T* buf, U* bar) {
  const RowRef<T> r = RowOf(p, task);
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

// The block's work on one row in `buf` (its copy complete, its edges and
// pads stored): the scale, the group totals and their prefixes, the draws.
template <typename T>
__device__ __forceinline__ void SampleRow(const RowRef<T>& r, T* buf, U* groups,
                                          double* scratch_double,
                                          U* scratch_u64, int* shared_scale,
                                          int32_t* out_base) {
  const int t = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  const int warps = threads / kWarpSize;
  const int lane = t % kWarpSize;
  const int warp = t / kWarpSize;
  const CategoricalSegment& seg = *r.seg;
  const int m = r.misalign;
  // At most BlockRowSlots values: int indices.
  const int slots = static_cast<int>(r.groups) * kGroup<T>;
  const int vecs = static_cast<int>(r.groups) * kGroupVecs;
  const int k = static_cast<int>(r.k);
  const Vec<T>* v = reinterpret_cast<const Vec<T>*>(buf);

  // 1. Logits: the maximum, then the weights in place (pads stay 0).
  T row_max = T(0);
  if (seg.kind == WeightKind::kLogits) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int i = t; i < slots; i += threads) {
      if (i >= m && i < m + k) {
        const double x = static_cast<double>(buf[i]);
        mx = x > mx ? x : mx;
      }
    }
    row_max = static_cast<T>(
        BlockReduce(mx, WarpMax<double>(), scratch_double, warps));
    for (int i = t; i < slots; i += threads) {
      if (i >= m && i < m + k) buf[i] = detmath::Exp(buf[i] - row_max);
    }
    __syncthreads();
  }

  // 2. The scale: S_alt in the block's order, the contract's S_d where it
  // might fall in another binade.
  double sum = 0;
  for (int c = t; c < vecs; c += threads) {
    const Vec<T> x = v[c];
    if constexpr (std::is_same_v<T, float>) {
      sum = sum + ((static_cast<double>(x.x) + static_cast<double>(x.y)) +
                   (static_cast<double>(x.z) + static_cast<double>(x.w)));
    } else {
      sum = sum + (x.x + x.y);
    }
  }
  const double s_alt =
      BlockReduce(sum, WarpPlus<double>(), scratch_double, warps);
  int scale = 0;
  if (s_alt == 0 ||
      (s_alt <= std::numeric_limits<double>::max() && BinadeSettled(s_alt))) {
    scale = cat::RowScale(s_alt);
  } else {
    if (warp == 0) {
      T unused_remnant_weight;
      const T* row = buf + m;
      const double s_d =
          WarpRowScaleSumOf<T>([row](int64_t j) { return row[j]; }, r.k, lane,
                               false, T(0), &unused_remnant_weight);
      if (lane == 0) *shared_scale = cat::RowScale(s_d);
    }
    __syncthreads();
    scale = *shared_scale;
  }
  const cat::ScaleFactors<T> factors = cat::ScaleFactorsFor<T>(scale);
  const auto quantize = [factors](T w) {
    return cat::QuantizeByMultiply(w, factors);
  };

  // 3. Group totals (4 lanes a group, whole warps in the loop for the
  // shuffles), their inclusive prefixes and Q.
  for (int c0 = warp * kWarpSize; c0 < vecs; c0 += threads) {
    const int c = c0 + lane;
    U s = 0;
    if (c < vecs) {
      const Vec<T> x = v[c];
      if constexpr (std::is_same_v<T, float>) {
        s = (quantize(x.x) + quantize(x.y)) + (quantize(x.z) + quantize(x.w));
      } else {
        s = quantize(x.x) + quantize(x.y);
      }
    }
    s = WarpButterfly<ButterflyOrder::kLowToHigh, kGroupVecs>(s, WarpPlus<U>());
    if (c < vecs && c % kGroupVecs == 0) groups[c / kGroupVecs] = s;
  }
  __syncthreads();
  const U total = BlockInclusiveScan(groups, r.groups, scratch_u64, threads);

  // 4. Draws, one a thread.
  const uint64_t item = seg.first_row + static_cast<uint64_t>(r.row);
  int32_t* out = out_base + seg.out_offset + r.row * seg.draws;
  for (int32_t d = t; d < seg.draws; d += threads) {
    const U x = cat::MulHi64(
        cat::DrawBits(cat::DrawBlock(seg.seed, item, d), d), total);
    int lo = 0;  // the first group whose prefix exceeds x
    int hi = static_cast<int>(r.groups) - 1;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (x < groups[mid]) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    U acc = lo > 0 ? groups[lo - 1] : 0;
    const int first = kGroup<T> * lo;
    int chosen = first;
    for (int l = 0; l < kGroup<T>; ++l) {
      acc += quantize(buf[first + l]);
      if (x < acc) {
        chosen = first + l;
        break;
      }
    }
    out[d] = chosen - m;
  }
}

template <typename T>
__global__ void __launch_bounds__(kMaxThreads, 2)
    BlockRowKernel(const BlockRowParams<T> p) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ U bars[2];
  __shared__ double scratch_double[kBlockRowMaxWarps];
  __shared__ U scratch_u64[kBlockRowMaxWarps];
  __shared__ int shared_scale;

  T* const buf0 = reinterpret_cast<T*>(smem);
  T* const buf1 = buf0 + p.slots;
  U* groups = reinterpret_cast<U*>(smem + 2 * p.slots * sizeof(T));
  const int t = static_cast<int>(threadIdx.x);

  int64_t task = blockIdx.x;
  if (task >= p.tasks) return;  // the whole block
  if (t == 0) {
    BarrierInit(&bars[0]);
    BarrierInit(&bars[1]);
    FenceBarrierInit();
  }
  __syncthreads();
  Edge<T> edge = QueueRow(p, task, buf0, &bars[0]);

  for (int64_t i = 0; task < p.tasks; ++i, task += gridDim.x) {
    const int b = static_cast<int>(i & 1);
    T* const buf = b == 0 ? buf0 : buf1;
    const RowRef<T> r = RowOf(p, task);
    // The edges and the zero pads of this row (the copy writes other
    // bytes), then the next row's copy into the other buffer, free since
    // the previous row's last barrier.
    if (edge.slot >= 0) buf[edge.slot] = edge.value;
    if (t < r.misalign) buf[t] = T(0);
    const int64_t pad_from = r.misalign + r.k;
    if (pad_from + t < r.groups * kGroup<T>) buf[pad_from + t] = T(0);
    const int64_t next = task + gridDim.x;
    if (next < p.tasks) {
      edge = QueueRow(p, next, b == 0 ? buf1 : buf0, &bars[b ^ 1]);
    }
    BarrierWait(&bars[b], static_cast<unsigned>((i >> 1) & 1));
    __syncthreads();
    SampleRow(r, buf, groups, scratch_double, scratch_u64, &shared_scale,
              p.out);
    __syncthreads();  // the buffer and the group totals free again
  }
#endif
}

}  // namespace

int BlockRowWarps(int64_t categories) {
  int warps = 1;
  while (warps < kBlockRowMaxWarps &&
         static_cast<int64_t>(warps) * 1024 < categories) {
    warps *= 2;
  }
  return warps;
}

int64_t BlockRowSlots(int64_t categories, size_t value_bytes) {
  const int64_t per_vec = kVecBytes / static_cast<int64_t>(value_bytes);
  const int64_t group = kGroupVecs * per_vec;
  return (per_vec - 1 + categories + group - 1) / group * group;
}

size_t BlockRowSmemBytes(int64_t slots, size_t value_bytes) {
  const int64_t group =
      kGroupVecs * (kVecBytes / static_cast<int64_t>(value_bytes));
  return 2 * static_cast<size_t>(slots) * value_bytes +
         static_cast<size_t>(slots / group) * sizeof(U);
}

int64_t BlockRowMaxCategories(Precision precision) {
  const size_t value_bytes = precision == Precision::kFloat64 ? 8 : 4;
  const int64_t group = kGroupVecs * (kVecBytes / value_bytes);
  // The largest K whose buffers fit, in whole groups.
  int64_t k = static_cast<int64_t>(kBlockRowMaxSmemBytes / value_bytes / 2) /
              group * group;
  while (BlockRowSmemBytes(BlockRowSlots(k, value_bytes), value_bytes) >
         kBlockRowMaxSmemBytes) {
    k -= group;
  }
  return k;
}

template <typename T>
absl::Status LaunchCategoricalBlockRow(const CategoricalPlan& plan,
                                       const CategoricalSegment* segments,
                                       const T* values, int32_t* out,
                                       cudaStream_t stream) {
  const int threads = plan.block_row_warps * kWarpSize;
  if (plan.block_row_warps < 1 || plan.block_row_warps > kBlockRowMaxWarps ||
      plan.block_row_slots < 1) {
    return absl::InvalidArgumentError("LaunchCategorical: bad block-row plan");
  }
  BlockRowParams<T> params{};
  static_cast<SegmentedParams<T>&>(params) =
      SegmentedParamsOf(plan, segments, values, out);
  params.tasks = plan.tasks;
  params.slots = plan.block_row_slots;
  const size_t smem = BlockRowSmemBytes(plan.block_row_slots, sizeof(T));
  const void* kernel = reinterpret_cast<const void*>(BlockRowKernel<T>);
  SAMPLER_RETURN_IF_ERROR(AllowDynamicSharedMemory(kernel, smem));
  // All of the unified L1 as shared memory (the rows bypass L1): at K =
  // 1,024 the blocks of an SM take 26 x 8.7 KB.
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
      kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
      cudaSharedmemCarveoutMaxShared));
  // As many blocks as stay resident, each walking its rows.
  int device = 0;
  int sms = 0;
  int per_sm = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, BlockRowKernel<T>, threads, smem));
  if (per_sm < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchCategorical: a block-row block of ", smem,
                     " bytes of shared memory does not fit a multiprocessor"));
  }
  const int64_t resident = static_cast<int64_t>(per_sm) * sms;
  const int64_t grid = plan.tasks < resident ? plan.tasks : resident;
  BlockRowKernel<T>
      <<<static_cast<unsigned>(grid), threads, smem, stream>>>(params);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

template absl::Status LaunchCategoricalBlockRow<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
template absl::Status LaunchCategoricalBlockRow<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda
