// CategoricalKernel::kLanes: one row of SampleCategorical per lane, for
// small K (up to kLanesMaxCategories). Bits of SampleCategoricalCpu
// (docs/randomness.md, section "Categorical", CAT2).
//
// Why a new kernel: the butterfly kernel (categorical.cu) spends its time on
// 64-bit shuffles (the butterfly table and its search), a ~15-instruction
// bit-path quantization per weight and 137 registers, and reads float32 at
// 16% of the copy bandwidth at K = 32 on an H100. CAT2 defines the category
// as the j with C_j <= X < C_j + q_j over exact integers, so any search
// finds it; only S_d's summation order is fixed, and one lane can form it
// in the contract's order (remnant, column sums, their pairwise tree) as
// easily as a warp.
//
// A warp (one thread block) takes 32 lane-aligned rows of one segment, as
// kButterfly does (lane r serves item index r mod 32; a chunk starting
// mid-warp leaves the low lanes idle):
//
//   1. load: the warp's rows are contiguous in memory; every lane copies
//      elements e = lane + 32 i of that span straight into shared memory
//      with cp.async (coalesced, 128 bytes an instruction, no registers
//      held, so a warp has all its 32 K values in flight at once), row
//      e / K at an odd row stride (K | 1), so that lanes walking their own
//      rows in step hit 32 different banks;
//   2. per lane, its own row only, from shared memory: logits become
//      weights in place (max, then exp(l - max)); S_d in the contract's
//      order (the remnant sequentially, the 32 column sums, their pairwise
//      tree merged as the columns complete); the scale; the quantized
//      weights q_j = floor(w_j 2^s) by floating-point multiplication
//      (categorical_core.h, QuantizeByMultiply: exact), their running total
//      stored at the end of every chunk of kLanesChunk = 8 weights;
//   3. per draw: X = floor(r Q / 2^64); the chunk is the number of chunk
//      totals <= X (all lanes read the same chunk index together, so these
//      loads are conflict-free); a walk of at most 8 weights from the
//      chunk's start recomputes their q and stops at the first j with
//      X < C_j + q_j, which is the contract's category (zero weights never
//      stop the walk, so an empty interval is never chosen).
//
// Instruction count per weight, float32, one draw (the budget at 70% of an
// H100's copy bandwidth: 3.0 TB/s / 132 SMs / 1.98 GHz = 11.5 bytes a clock
// per SM, 0.35 clocks a weight, so 4 schedulers x 32 lanes give about 44
// thread instructions a weight, and the 16-a-clock conversion pipe 5.6):
//   load 6 (cp.async, address, the row/column step), S_d 4 (LDS, F2F.F64,
//   DADD, loop), Q 7 (LDS, 2 FMUL, F2I.U64, 64-bit add, loop), search about
//   (3 (K / 8) + 9 x 4.5) / K (2 at K = 32, under 1 at 128): about 19
//   instructions and 2.1 conversions a weight, inside the budget. Bytes in
//   flight: a warp's whole 32 K values (16 KiB at K = 128), with about 20
//   KiB of shared memory a warp at K = 128 (11 warps per SM) and 5 KiB at
//   K = 32 (32 warps, the block limit): more than the ~25 KiB per SM that
//   the copy's bandwidth-latency product asks for.
// Many draws cost Philox (one block per two draws) and the walk: about 110
// instructions a draw, so D = 32 at K = 32 is above the budget (not
// measured yet).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "categorical_lanes.h"
#include "categorical_segments.cuh"
#include "categorical_shared_rows.cuh"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda {
namespace {

namespace cat = ::sampler::kernels::categorical;
using U = uint64_t;

// Weights per chunk: one running total is stored per chunk, and a draw
// walks at most this many weights.
constexpr int kLanesChunk = 8;

// Row stride in shared memory, in values: odd, so that lane r's element j
// (address r * stride + j) lies in a different bank for every r.
__host__ __device__ constexpr int64_t RowStride(int64_t categories) {
  return categories | 1;
}
__host__ __device__ constexpr int64_t Chunks(int64_t categories) {
  return (categories + kLanesChunk - 1) / kLanesChunk;
}
// Bytes of the rows' area, rounded up to 16 so that the chunk totals that
// follow are aligned.
__host__ __device__ constexpr size_t RowsBytes(int64_t categories,
                                               size_t value_bytes) {
  return (static_cast<size_t>(kWarpSize * RowStride(categories)) * value_bytes +
          15) /
         16 * 16;
}

// S_d of RowScaleSum for a row in shared memory: the remnant in order, the
// column sums c_l, their pairwise tree.
template <typename T>
__device__ __forceinline__ double LaneScaleSum(const T* row,
                                               int64_t categories) {
  const int remnant = static_cast<int>(cat::RemnantSize(categories));
  const int blocks = static_cast<int>(cat::NumBlocks(categories));
  const double sum = RemnantScaleSum(row, remnant);
  if (blocks == 0) return sum;
  return sum + ColumnTreeSum<kWarpSize>(row, remnant, blocks, 0);
}

template <typename T>
__global__ void __launch_bounds__(kWarpSize)
    LanesKernel(const SegmentedParams<T> p) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  const int lane = static_cast<int>(threadIdx.x);
  const int64_t task = blockIdx.x;
  const CategoricalSegment& seg = FindSegment(p.segments, p.num_segments, task);
  const int64_t categories = seg.categories;
  const int k = static_cast<int>(categories);  // <= kLanesMaxCategories
  const int32_t draws = seg.draws;

  // Lane r serves segment row row0 + r (item first_row + row0 + r).
  const int64_t warp_in_seg = task - seg.task_begin;
  const int64_t row0 = warp_in_seg * kWarpSize - cat::LaneOf(seg.first_row);
  const int k_begin = row0 < 0 ? static_cast<int>(-row0) : 0;
  const int k_end = seg.rows - row0 < kWarpSize
                        ? static_cast<int>(seg.rows - row0)
                        : kWarpSize;
  const int stride = static_cast<int>(RowStride(categories));
  T* rows = reinterpret_cast<T*>(smem_bytes);
  U* chunk_ends =
      reinterpret_cast<U*>(smem_bytes + RowsBytes(categories, sizeof(T)));

  // 1. The warp's rows k_begin .. k_end - 1, one contiguous span.
  {
    const T* src = p.values + seg.values_offset + (row0 + k_begin) * categories;
    QueueRowsCopy(rows, stride, src, k_end - k_begin, k, k_begin, lane);
    WaitAsyncCopies();
    __syncthreads();  // the block is this one warp
  }
  if (lane < k_begin || lane >= k_end) return;  // no shuffles below

  // 2. This lane's row: weights, S_d, the scale, the chunk totals.
  T* row = rows + lane * stride;
  if (seg.kind == WeightKind::kLogits) {
    T row_max = row[0];
    for (int j = 1; j < k; ++j) row_max = row[j] > row_max ? row[j] : row_max;
    for (int j = 0; j < k; ++j) row[j] = detmath::Exp(row[j] - row_max);
  }
  const int scale = cat::RowScale(LaneScaleSum(row, categories));
  const cat::ScaleFactors<T> factors = cat::ScaleFactorsFor<T>(scale);
  const int chunks = static_cast<int>(Chunks(categories));
  U total = 0;
  for (int c = 0; c < chunks; ++c) {
    const int end = c == chunks - 1 ? k : kLanesChunk * (c + 1);
    for (int j = kLanesChunk * c; j < end; ++j) {
      total = total + cat::QuantizeByMultiply(row[j], factors);
    }
    chunk_ends[kWarpSize * c + lane] = total;
  }

  // 3. Draws.
  const int64_t my_row = row0 + lane;
  const uint64_t item = seg.first_row + static_cast<uint64_t>(my_row);
  int32_t* my_out = p.out + seg.out_offset + my_row * draws;
  PhiloxBlock philox{};
#pragma unroll 1
  for (int32_t d = 0; d < draws; ++d) {
    const U x = cat::NextDrawX(seg.seed, item, d, total, philox);
    // X < Q = the last chunk's total, so at most chunks - 1 totals are <= X.
    int chunk = 0;
    for (int c = 0; c < chunks - 1; ++c) {
      chunk += chunk_ends[kWarpSize * c + lane] <= x ? 1 : 0;
    }
    U prefix = chunk > 0 ? chunk_ends[kWarpSize * (chunk - 1) + lane] : 0;
    const int last =
        chunk == chunks - 1 ? k - 1 : kLanesChunk * chunk + kLanesChunk - 1;
    int j = kLanesChunk * chunk;
    for (; j < last; ++j) {
      prefix = prefix + cat::QuantizeByMultiply(row[j], factors);
      if (x < prefix) break;
    }
    my_out[d] = j;
  }
}

}  // namespace

size_t LanesWarpSmemBytes(int64_t categories, size_t value_bytes) {
  return RowsBytes(categories, value_bytes) +
         static_cast<size_t>(kWarpSize * Chunks(categories)) * sizeof(U);
}

template <typename T>
absl::Status LaunchCategoricalLanes(const CategoricalPlan& plan,
                                    const CategoricalSegment* segments,
                                    const T* values, int32_t* out,
                                    cudaStream_t stream) {
  if (plan.tasks > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchCategorical: ", plan.tasks,
                     " warps are more than one lanes launch can take"));
  }
  const SegmentedParams<T> params =
      SegmentedParamsOf(plan, segments, values, out);
  const size_t smem = static_cast<size_t>(plan.smem_warp_elems[0]) * sizeof(U);
  SAMPLER_RETURN_IF_ERROR(AllowDynamicSharedMemory(
      reinterpret_cast<const void*>(LanesKernel<T>), smem));
  LanesKernel<T>
      <<<static_cast<unsigned>(plan.tasks), kWarpSize, smem, stream>>>(params);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

template absl::Status LaunchCategoricalLanes<float>(const CategoricalPlan&,
                                                    const CategoricalSegment*,
                                                    const float*, int32_t*,
                                                    cudaStream_t);
template absl::Status LaunchCategoricalLanes<double>(const CategoricalPlan&,
                                                     const CategoricalSegment*,
                                                     const double*, int32_t*,
                                                     cudaStream_t);

}  // namespace sampler::kernels::cuda
