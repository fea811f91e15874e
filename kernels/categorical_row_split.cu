// CategoricalKernel::kRowSplit: one row of SampleCategorical across a
// cluster of 1 to 8 thread blocks (sm_90 thread block clusters), for
// the large K and few rows of LLM vocabularies (32k to 256k categories), with
// every draw of the row served from one read of it. Bits of
// SampleCategoricalCpu (docs/randomness.md, section "Categorical", CAT2).
//
// Each block loads its contiguous chunk of the row once, into shared memory
// (16-byte loads where the row is aligned), and works from there:
//
//   1. logits: the chunk's maximum; the cluster's maximum (exact in any
//      order) from the blocks' shared memory; weights exp(l - max) in place;
//   2. the scale s = 60 - floor(log2 S_d). S_d is the contract's double sum
//      in its column order (categorical_core.h, RowScaleSum), which a row
//      split across blocks cannot form. Only floor(log2 S_d) matters,
//      though, and every order of summing K non-negative doubles lies within
//      gamma_(K-1) S of the exact total S (gamma_n = n u / (1 - n u),
//      u = 2^-53; additions with subnormal results are exact), so each block
//      forms its chunk's sum in its own order, the cluster adds them in
//      rank order (S_alt, the same bits in every block), and s follows from
//      S_alt when that is provably the contract's (ScaleSettled): either no
//      order can round at all (every weight a multiple of 2^m, the lowest set
//      bit of any weight, and S_alt <= 2^(m+52): then S <= 2^(m+53), so
//      every partial sum is exact and S_d = S_alt), or S_alt (1 -+ 2^-19)
//      lie in one binade (|S_d - S_alt| <= 2 gamma S < 2^-20.9 S_alt for
//      K < 2^31). Otherwise (a total within 2^-19 of a power of two, with
//      inexact sums: rare) warp 0 of block 0 forms the contract's S_d itself
//      from global memory (ContractScaleSum) and the cluster takes its scale;
//   3. the quantized weights q_j = floor(w_j 2^s) (exact), one uint64 sum
//      per group of 32 elements, their inclusive prefix over the chunk
//      (exact integers), and the chunk totals Q_c of the cluster: the row's
//      Q and this chunk's first integer P_c;
//   4. draws, one thread each: X = floor(r Q / 2^64) as the contract says;
//      the block whose [P_c, P_c + Q_c) holds X finds the group by binary
//      search over its prefixes and the category by a walk of 32 weights.
//      Every sum is exact, so this is the contract's category (the j with
//      C_j <= X < C_j + q_j is unique; the butterfly search finds the same).
//
// Not measured yet: bench/categorical_bench --issue compares it with the
// butterfly and warp-per-row kernels at the sizes of issue 11.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "categorical_block.cuh"
#include "categorical_row_split.h"
#include "categorical_segments.cuh"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda {

namespace cat = ::sampler::kernels::categorical;

namespace {

namespace cg = ::cooperative_groups;

constexpr int kWarps = kRowSplitThreads / kWarpSize;
// Elements per group: one uint64 sum of quantized weights each.
constexpr int kGroup = kWarpSize;

template <typename T>
struct RowSplitParams : SegmentedParams<T> {
  int64_t chunk;  // elements per block
};

// What each block publishes to the cluster, one field per phase, so that no
// field is written again while another block may read it.
struct ClusterSlots {
  double row_max;  // the chunk's maximum logit, widened
  double sum;      // the chunk's double sum of weights
  int32_t lsb;     // lowest set-bit exponent of its nonzero weights
  int32_t scale;   // block 0 only: the contract's scale when unsettled
  uint64_t total;  // Q_c
};

template <typename T>
__device__ __forceinline__ T Weight(T v, bool logits, T row_max) {
  return logits ? detmath::Exp(v - row_max) : v;
}

// The contract's S_d (cat::RowScaleSum) by one warp from global memory:
// lane l sums column l of the nb blocks in order, the xor butterfly adds
// the 32 column sums as the aligned pairwise tree (IEEE addition is
// commutative, so both lanes of a pair get the node's bits), lane 0 adds
// the remnant sequentially. The value is in every lane.
template <typename T>
__device__ double ContractScaleSum(const T* row, int64_t categories,
                                   bool logits, T row_max, int lane) {
  const int64_t remnant = cat::RemnantSize(categories);
  const int64_t blocks = cat::NumBlocks(categories);
  double column = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    column =
        column + static_cast<double>(Weight(row[remnant + kWarpSize * b + lane],
                                            logits, row_max));
  }
  const double tree =
      WarpButterfly<ButterflyOrder::kLowToHigh>(column, WarpPlus<double>());
  double remnant_sum = 0;
  for (int64_t j = 0; j < remnant; ++j) {
    remnant_sum =
        remnant_sum + static_cast<double>(Weight(row[j], logits, row_max));
  }
  return blocks == 0 ? remnant_sum : remnant_sum + tree;
}

// Copies n values from global to shared memory, 16 bytes a load where the
// source is aligned to 16 bytes, streaming (read once).
template <typename T>
__device__ __forceinline__ void LoadChunk(const T* src, int64_t n, T* dst) {
  using Vec = std::conditional_t<std::is_same_v<T, float>, float4, double2>;
  constexpr int kPerVec = static_cast<int>(sizeof(Vec) / sizeof(T));
  int64_t done = 0;
  if (reinterpret_cast<uintptr_t>(src) % sizeof(Vec) == 0) {
    const int64_t vecs = n / kPerVec;
    const Vec* s = reinterpret_cast<const Vec*>(src);
    Vec* d = reinterpret_cast<Vec*>(dst);
    // Four loads in flight per thread before their stores.
    constexpr int64_t kStride = kRowSplitThreads;
    int64_t i = threadIdx.x;
    for (; i + 3 * kStride < vecs; i += 4 * kStride) {
      const Vec a = __ldcs(s + i);
      const Vec b = __ldcs(s + i + kStride);
      const Vec c = __ldcs(s + i + 2 * kStride);
      const Vec e = __ldcs(s + i + 3 * kStride);
      d[i] = a;
      d[i + kStride] = b;
      d[i + 2 * kStride] = c;
      d[i + 3 * kStride] = e;
    }
    for (; i < vecs; i += kStride) d[i] = __ldcs(s + i);
    done = vecs * kPerVec;
  }
  for (int64_t i = done + threadIdx.x; i < n; i += kRowSplitThreads) {
    dst[i] = __ldcs(src + i);
  }
}

template <typename T, int kCtas>
__global__ void __cluster_dims__(kCtas, 1, 1)
    __launch_bounds__(kRowSplitThreads)
        RowSplitKernel(const RowSplitParams<T> p) {
  static_assert(kCtas >= 1 && kCtas <= kRowSplitMaxCtas, "a portable cluster");
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ ClusterSlots slots;
  __shared__ double scratch_double[kWarps];
  __shared__ int scratch_int[kWarps];
  __shared__ uint64_t scratch_u64[kWarps];

  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  // Every block of a cluster has the same task: the whole cluster returns
  // or none of it does (cluster.sync() needs all of its blocks).
  const int64_t task = static_cast<int64_t>(blockIdx.x) / kCtas;
  const CategoricalSegment& seg = FindSegment(p.segments, p.num_segments, task);
  const int64_t row = task - seg.task_begin;
  const int64_t categories = seg.categories;
  const bool logits = seg.kind == WeightKind::kLogits;
  const int64_t first = static_cast<int64_t>(rank) * p.chunk;
  const int64_t left = categories - first;
  const int64_t n = left <= 0 ? 0 : (left < p.chunk ? left : p.chunk);
  const T* row_values = p.values + seg.values_offset + row * categories;

  T* vals = reinterpret_cast<T*>(smem);
  const size_t vals_bytes =
      (static_cast<size_t>(p.chunk) * sizeof(T) + 15) / 16 * 16;
  uint64_t* groups = reinterpret_cast<uint64_t*>(smem + vals_bytes);
  const int64_t num_groups = (n + kGroup - 1) / kGroup;

  LoadChunk(row_values + first, n, vals);
  __syncthreads();

  // 1. Logits: the row maximum, then the weights in place.
  T row_max = T(0);
  if (logits) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t i = threadIdx.x; i < n; i += kRowSplitThreads) {
      const double v = static_cast<double>(vals[i]);
      m = v > m ? v : m;
    }
    m = BlockReduce(m, WarpMax<double>(), scratch_double, kWarps);
    if (threadIdx.x == 0) slots.row_max = m;
    cluster.sync();
    for (int r = 0; r < kCtas; ++r) {
      const double v = cluster.map_shared_rank(&slots, r)->row_max;
      m = v > m ? v : m;
    }
    row_max = static_cast<T>(m);  // exact: a value of the row
    for (int64_t i = threadIdx.x; i < n; i += kRowSplitThreads) {
      vals[i] = detmath::Exp(vals[i] - row_max);
    }
    __syncthreads();
  }

  // 2. The scale.
  double sum = 0;
  int lsb = INT_MAX;
  for (int64_t i = threadIdx.x; i < n; i += kRowSplitThreads) {
    const T w = vals[i];
    sum = sum + static_cast<double>(w);
    if (w > T(0)) lsb = min(lsb, LowestBitExponent(w));
  }
  sum = BlockReduce(sum, WarpPlus<double>(), scratch_double, kWarps);
  lsb = BlockReduce(lsb, MinOf<int>(), scratch_int, kWarps);
  if (threadIdx.x == 0) {
    slots.sum = sum;
    slots.lsb = lsb;
  }
  cluster.sync();
  double s_alt = 0;
  for (int r = 0; r < kCtas; ++r) {
    const ClusterSlots* other = cluster.map_shared_rank(&slots, r);
    s_alt = s_alt + other->sum;
    lsb = min(lsb, other->lsb);
  }
  int scale = 0;
  if (ScaleSettled(s_alt, lsb)) {  // the same in every block of the cluster
    scale = cat::RowScale(s_alt);
  } else {
    if (rank == 0 && warp == 0) {
      const double s_d =
          ContractScaleSum(row_values, categories, logits, row_max, lane);
      if (lane == 0) slots.scale = cat::RowScale(s_d);
    }
    cluster.sync();
    scale = cluster.map_shared_rank(&slots, 0)->scale;
  }

  // 3. Group sums of the quantized weights, their prefixes, the chunk
  // totals of the cluster.
  for (int64_t g = warp; g < num_groups; g += kWarps) {
    const int64_t i = kGroup * g + lane;
    uint64_t q = i < n ? cat::QuantizeWeight(vals[i], scale) : 0;
    q = WarpButterfly<ButterflyOrder::kLowToHigh>(q, WarpPlus<uint64_t>());
    if (lane == 0) groups[g] = q;
  }
  __syncthreads();
  const uint64_t chunk_total =
      BlockInclusiveScan(groups, num_groups, scratch_u64, kRowSplitThreads);
  if (threadIdx.x == 0) slots.total = chunk_total;
  cluster.sync();
  uint64_t before = 0;
  uint64_t total = 0;
  for (int r = 0; r < kCtas; ++r) {
    const uint64_t q = cluster.map_shared_rank(&slots, r)->total;
    if (r < rank) before += q;
    total += q;
  }
  // No block may leave (its shared memory with it) before every block has
  // read the totals.
  cluster.sync();

  // 4. Draws.
  const uint64_t item = seg.first_row + static_cast<uint64_t>(row);
  int32_t* out = p.out + seg.out_offset + row * seg.draws;
  for (int32_t d = static_cast<int32_t>(threadIdx.x); d < seg.draws;
       d += kRowSplitThreads) {
    const uint64_t r = cat::DrawBits(cat::DrawBlock(seg.seed, item, d), d);
    const uint64_t x_row = cat::MulHi64(r, total);
    if (x_row < before || x_row - before >= chunk_total) continue;
    const uint64_t x = x_row - before;
    int64_t lo = 0;  // first group whose inclusive prefix exceeds x
    int64_t hi = num_groups - 1;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (x < groups[mid]) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    uint64_t acc = lo > 0 ? groups[lo - 1] : 0;
    const int64_t base = kGroup * lo;
    int64_t chosen = base;
    for (int l = 0; l < kGroup && base + l < n; ++l) {
      acc += cat::QuantizeWeight(vals[base + l], scale);
      if (x < acc) {
        chosen = base + l;
        break;
      }
    }
    out[d] = static_cast<int32_t>(first + chosen);
  }
#endif
}

}  // namespace

int RowSplitCtas(int64_t categories) {
  int ctas = 1;
  while (ctas < kRowSplitMaxCtas &&
         (categories + ctas - 1) / ctas > kRowSplitTargetChunk) {
    ctas *= 2;
  }
  return ctas;
}

int64_t RowSplitChunk(int64_t categories, int ctas) {
  const int64_t per = (categories + ctas - 1) / ctas;
  return (per + kGroup - 1) / kGroup * kGroup;
}

size_t RowSplitSmemBytes(int64_t chunk, size_t value_bytes) {
  const size_t vals = (static_cast<size_t>(chunk) * value_bytes + 15) / 16 * 16;
  return vals + static_cast<size_t>(chunk / kGroup) * sizeof(uint64_t);
}

int64_t RowSplitMaxCategories(Precision precision) {
  const size_t value_bytes = precision == Precision::kFloat64 ? 8 : 4;
  // K this large runs kRowSplitMaxCtas blocks, each a chunk of
  // RowSplitChunk elements (a multiple of a group): the largest such chunk
  // that fits, times the blocks.
  int64_t chunk = static_cast<int64_t>(kRowSplitMaxSmemBytes / value_bytes) /
                  kGroup * kGroup;
  while (RowSplitSmemBytes(chunk, value_bytes) > kRowSplitMaxSmemBytes) {
    chunk -= kGroup;
  }
  return chunk * kRowSplitMaxCtas;
}

namespace {

template <typename T, int kCtas>
absl::Status LaunchWith(const CategoricalPlan& plan,
                        const RowSplitParams<T>& params, cudaStream_t stream) {
  if (plan.tasks > std::numeric_limits<int32_t>::max() / kCtas) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchCategorical: ", plan.tasks,
                     " rows are more than one row-split launch can take"));
  }
  const size_t smem = RowSplitSmemBytes(plan.row_split_chunk, sizeof(T));
  SAMPLER_RETURN_IF_ERROR(AllowDynamicSharedMemory(
      reinterpret_cast<const void*>(RowSplitKernel<T, kCtas>), smem));
  const unsigned grid = static_cast<unsigned>(plan.tasks * kCtas);
  RowSplitKernel<T, kCtas><<<grid, kRowSplitThreads, smem, stream>>>(params);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::Status LaunchCategoricalRowSplit(const CategoricalPlan& plan,
                                       const CategoricalSegment* segments,
                                       const T* values, int32_t* out,
                                       cudaStream_t stream) {
  RowSplitParams<T> params{};
  static_cast<SegmentedParams<T>&>(params) =
      SegmentedParamsOf(plan, segments, values, out);
  params.chunk = plan.row_split_chunk;
  return LaunchForClusterSize(plan.row_split_ctas, "row-split", [&](auto ctas) {
    return LaunchWith<T, decltype(ctas)::value>(plan, params, stream);
  });
}

template absl::Status LaunchCategoricalRowSplit<float>(
    const CategoricalPlan&, const CategoricalSegment*, const float*, int32_t*,
    cudaStream_t);
template absl::Status LaunchCategoricalRowSplit<double>(
    const CategoricalPlan&, const CategoricalSegment*, const double*, int32_t*,
    cudaStream_t);

}  // namespace sampler::kernels::cuda
