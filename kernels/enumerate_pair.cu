// The pair kernel (enumerate_pair.h): r_k = sum_j x_j y_{k-j} for a
// two-term linear problem whose terms fit one warp (x the shorter, lx <= ly
// <= kPairMaxLength values: at most 63 outputs), one warp per problem.
//
// Why a kernel of its own (bench/results/enumerate-kernel.md, "Roofline",
// m = 32): the direct kernel is instruction-bound there, its per-problem
// fixed cost (a tile's geometry in 64-bit arithmetic, the staging loops
// with their bounds, the output staged through shared memory) as large as
// its arithmetic. Here a problem costs two coalesced loads a lane (x_l and
// y_l), two shared stores, and two stores of its outputs, with no bounds
// tests beyond "l < length": the arithmetic, about 3 issue slots a step
// (one shared load, two FMAs), is most of it.
//
// Lane l owns the consecutive outputs k = 2l and 2l + 1 (64 slots cover the
// at most 63 outputs), as a register tile of two: at step j it needs
// y_{2l-j} and y_{2l+1-j}, and the second is the first of step j - 1, so a
// step loads one y value and x_j, a broadcast (four steps a 16-byte load).
// y sits in shared memory as elements -32 .. 63 with zeros outside [0, ly)
// (the padding is written once per warp; a problem rewrites [0, 32)), so
// every lane runs the same steps j < lx with no bounds test: each output
// sums only products of its valid j range, the others being exact zeros
// (x_j = 0 past lx, y = 0 outside [0, ly)). The elements are stored split by
// parity (YSlot), so that the lanes' loads of elements 2l - j, a stride of
// two, fall in consecutive banks.
//
// Considered and not taken: lane l owning outputs l and l + 32 (the
// lecture's pairing: every lane has exactly lx products, no zero products,
// and coalesced stores), because each step must then pick the output its
// product goes to per lane (a compare and two predicated FMAs, one of them
// idle: the same issue slots as the zero products here) and cannot reuse a
// y value, so it needs two loads or shuffles a step where this needs one;
// and the session-7 small-problems kernel (enumerate_small.cu), whose
// per-output loop over shared memory (two loads and a double FMA a
// product, the lanes' loops of l + 1 and 31 - l steps run one after the
// other) issues several times what this does for a 32 x 32 pair (measured
// on an H100, session 8: 3.0x slower in float, 2.0x in double, at m = 32;
// bench/results/enumerate-kernel.md).
//
// Two variants (kPairVariants), the same bits: 0, a warp per problem, and
// 1 (kAuto's, kAutoPairVariant), two problems a warp with four outputs a lane
// (below), which halves the shared loads that keep the L1/shared unit the
// busiest in variant 0.
//
// Accuracy: products are exact in the FMA and every summand is non-negative,
// so a chain of at most kChainSteps = 8 FMAs is within 8 roundings of its
// exact sum; the (at most four) chains of an output are added as a tree of
// two levels: 10 roundings of T in all, 6.0e-7 relative for float (the
// direct kernel's bound is 9.5e-7; the contract's 1e-6), 1.1e-15 for double.
// The order of every sum is fixed by the problem's sizes alone: the same
// bits on every run, whatever the batch.
//
// Memory: the values of the next problem a warp takes, and the descriptor of
// the one after it, are loaded before the current one's arithmetic, so their
// latency hides behind it; the grid is the device's resident blocks, each
// warp striding over the problems.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "enumerate_pair.h"
#include "sampler/kernels/cuda/enumerate_plan.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda::enumerate_internal {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kBlockThreads = kWarpsPerBlock * kWarpSize;
// At most 64 registers a thread: 32 warps a multiprocessor.
constexpr int kMinBlocksPerSm = 8;
constexpr int kChainSteps = 8;
constexpr int kChains = kPairMaxLength / kChainSteps;
static_assert(kPairMaxLength == kWarpSize, "a lane per term value");
static_assert(kChains * kChainSteps == kPairMaxLength, "whole chains");

// y's window in shared memory: elements -32 .. 63, even (i + 32) in the
// first half, odd in the second.
constexpr int kYHalf = 48;
constexpr int kWarpElems = kWarpSize + 2 * kYHalf;  // x, then y's window

__device__ constexpr int FloorHalf(int c) { return (c - (c & 1)) / 2; }

// The slot of y element i, i in [-32, 64).
__device__ constexpr int YSlot(int i) {
  return ((i + 32) & 1) * kYHalf + FloorHalf(i + 32);
}

// The slot of element 2l + c relative to lane l's base (slot l): even 2l +
// 32 + c fall in the first half, odd in the second, consecutive in l.
__device__ constexpr int YOffset(int c) {
  return (c & 1) * kYHalf + 16 + FloorHalf(c);
}

// 16 bytes of T: the x values of 16 / sizeof(T) steps in one broadcast load.
template <typename T>
struct Vec16;
template <>
struct Vec16<float> {
  using Type = float4;
  static constexpr int kCount = 4;
  __device__ static float At(const float4& v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
  }
};
template <>
struct Vec16<double> {
  using Type = double2;
  static constexpr int kCount = 2;
  __device__ static double At(const double2& v, int i) {
    return i == 0 ? v.x : v.y;
  }
};

__device__ __forceinline__ float Fma(float a, float b, float c) {
  return __fmaf_rn(a, b, c);
}
__device__ __forceinline__ double Fma(double a, double b, double c) {
  return __fma_rn(a, b, c);
}

// What the kernel reads of a step problem: x the shorter operand (a where
// the lengths are equal, as the direct kernel's Operands).
struct PairDesc {
  int64_t x, y, dst;
  int32_t lx, ly, problem;
};

__device__ __forceinline__ PairDesc ReadDesc(const StepProblem* step) {
  const StepProblem s = *step;
  const bool a_shorter = s.a_len <= s.b_len;
  PairDesc d;
  d.x = a_shorter ? s.a : s.b;
  d.y = a_shorter ? s.b : s.a;
  d.lx = a_shorter ? s.a_len : s.b_len;
  d.ly = a_shorter ? s.b_len : s.a_len;
  d.dst = s.dst;
  d.problem = s.problem;
  return d;
}

// Value `lane` of a term of `len` values at `at`, zero past its end.
template <typename T>
__device__ __forceinline__ T TermValue(const T* values, int64_t at, int len,
                                       int lane) {
  return lane < len ? __ldg(values + (at + lane)) : T(0);
}

// The steps j of chain b, step(j, x_j), x_j from 16-byte broadcast loads of
// xs (j is a constant once the callers' loops are unrolled).
template <typename T, typename Step>
__device__ __forceinline__ void ChainSteps(const T* xs, int b, Step step) {
  using V = Vec16<T>;
#pragma unroll
  for (int q = 0; q < kChainSteps / V::kCount; ++q) {
    const typename V::Type xv = *reinterpret_cast<const typename V::Type*>(
        xs + b * kChainSteps + q * V::kCount);
#pragma unroll
    for (int e = 0; e < V::kCount; ++e) {
      step(b * kChainSteps + q * V::kCount + e, V::At(xv, e));
    }
  }
}

// Outputs 2l and 2l + 1 of the staged problem: xs its x (zeros past lx), yl
// lane l's base in its y window.
template <typename T>
__device__ __forceinline__ void PairSums(const T* xs, const T* yl, int lx,
                                         T* r0, T* r1) {
  T c0[kChains], c1[kChains];
  T w = yl[YOffset(1)];  // y_{2l+1}, output 2l + 1's value at step 0
#pragma unroll
  for (int b = 0; b < kChains; ++b) {
    c0[b] = T(0);
    c1[b] = T(0);
    if (b * kChainSteps < lx) {  // warp-uniform
      ChainSteps(xs, b, [&](int j, T xj) {
        const T y = yl[YOffset(-j)];  // y_{2l-j}
        c0[b] = Fma(xj, y, c0[b]);
        c1[b] = Fma(xj, w, c1[b]);
        w = y;  // y_{2l+1-(j+1)}
      });
    }
  }
  static_assert(kChains == 4, "the tree below");
  *r0 = (c0[0] + c0[1]) + (c0[2] + c0[3]);
  *r1 = (c1[0] + c1[1]) + (c1[2] + c1[3]);
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocksPerSm)
    PairKernel(const StepProblem* steps, int64_t count, const T* values, T* out,
               uint32_t* status) {
  __shared__ __align__(16) T smem[kWarpsPerBlock][kWarpElems];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  T* const xs = smem[warp];
  T* const ys = smem[warp] + kWarpSize;
  const T* const yl = ys + lane;
  // The window's padding, never written again: elements -32 .. -1, 32 .. 63.
  ys[YSlot(lane - 32)] = T(0);
  ys[YSlot(lane + 32)] = T(0);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  int64_t p = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (p >= count) return;  // whole warps only
  PairDesc d = ReadDesc(steps + p);
  T xv = TermValue(values, d.x, d.lx, lane);
  T yv = TermValue(values, d.y, d.ly, lane);
  PairDesc next{};
  if (p + stride < count) next = ReadDesc(steps + p + stride);
  for (;;) {
    __syncwarp();  // the previous problem's reads are done
    xs[lane] = xv;
    ys[YSlot(lane)] = yv;
    __syncwarp();
    // In flight during the arithmetic: the next problem's values and the
    // descriptor after it.
    const int64_t p_next = p + stride;
    const bool more = p_next < count;
    if (more) {
      xv = TermValue(values, next.x, next.lx, lane);
      yv = TermValue(values, next.y, next.ly, lane);
    }
    PairDesc after{};
    if (p_next + stride < count) after = ReadDesc(steps + p_next + stride);

    T r0, r1;
    PairSums(xs, yl, d.lx, &r0, &r1);
    const int k = 2 * lane;
    const int outputs = d.lx + d.ly - 1;
    T* const o = out + d.dst;
    bool bad = false;
    if (k < outputs) {
      o[k] = r0;
      bad |= !isfinite(r0);
    }
    if (k + 1 < outputs) {
      o[k + 1] = r1;
      bad |= !isfinite(r1);
    }
    bad = __any_sync(kFullMask, bad);
    if (lane == 0 && status != nullptr) {
      status[d.problem] = bad ? kEnumerateStatusNonFinite : 0u;
    }
    if (!more) break;
    p = p_next;
    d = next;
    next = after;
  }
}

// ------------------------------------ two problems a warp (variant 1) ----
//
// Half h of the warp (lanes 16h .. 16h + 15) takes a problem of its own; its
// lane l' owns outputs 4l' .. 4l' + 3, a register tile of four: a step loads
// one y value per lane for four FMAs, so that a problem costs half the
// shared loads of variant 0 (whose loads keep the L1/shared unit the
// busiest: 82% under Nsight Compute at m = 32, float). Each half's window is
// split by element mod 4 (QSlot), so that its lanes' loads of elements
// 4l' - j fall in consecutive banks, and the second half's window starts 16
// banks after the first's (kHalfStride), so that the two halves' loads do
// not collide. The chains and their tree are variant 0's, term for term:
// the same bits.
constexpr int kHalf = kWarpSize / 2;
constexpr int kQuarter = 24;      // window elements of one residue mod 4
constexpr int kHalfStride = 112;  // = 16 (mod 32): the halves' windows
constexpr int kTwoWarpElems = 2 * kHalfStride + 2 * kWarpSize;

__device__ constexpr int FloorQuarter(int c) { return (c - (c & 3)) / 4; }

// The slot of y element i, i in [-32, 64), in a half's window.
__device__ constexpr int QSlot(int i) {
  return ((i + 32) & 3) * kQuarter + FloorQuarter(i + 32);
}

// The slot of element 4l' + c relative to lane l''s base (slot l').
__device__ constexpr int QOffset(int c) {
  return (c & 3) * kQuarter + 8 + FloorQuarter(c);
}

// Outputs 4l' + o (o < 4) of the staged problem, with variant 0's chains
// and tree ((c0 + c1) + (c2 + c3)), the tree's sums taken as the chains end.
template <typename T>
__device__ __forceinline__ void QuadSums(const T* xs, const T* yl, int lx,
                                         T (&r)[4]) {
  T w1 = yl[QOffset(1)], w2 = yl[QOffset(2)], w3 = yl[QOffset(3)];
  T c[4], prev[4], pair[4];
#pragma unroll
  for (int b = 0; b < kChains; ++b) {
#pragma unroll
    for (int o = 0; o < 4; ++o) c[o] = T(0);
    if (b * kChainSteps < lx) {  // warp-uniform
      ChainSteps(xs, b, [&](int j, T xj) {
        const T y = yl[QOffset(-j)];  // y_{4l'-j}
        c[0] = Fma(xj, y, c[0]);
        c[1] = Fma(xj, w1, c[1]);
        c[2] = Fma(xj, w2, c[2]);
        c[3] = Fma(xj, w3, c[3]);
        w3 = w2;
        w2 = w1;
        w1 = y;
      });
    }
#pragma unroll
    for (int o = 0; o < 4; ++o) {
      if (b % 2 == 0) {
        prev[o] = c[o];
      } else if (b == 1) {
        pair[o] = prev[o] + c[o];
      } else {
        r[o] = pair[o] + (prev[o] + c[o]);
      }
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocksPerSm)
    PairTwoKernel(const StepProblem* steps, int64_t count, const T* values,
                  T* out, uint32_t* status) {
  static_assert(kChains == 4, "QuadSums' tree");
  __shared__ __align__(16) T smem[kWarpsPerBlock][kTwoWarpElems];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int half = lane / kHalf;
  const int hl = lane % kHalf;
  T* const ys = smem[warp] + half * kHalfStride;
  T* const xs = smem[warp] + 2 * kHalfStride + half * kWarpSize;
  const T* const yl = ys + hl;
  // The window's padding, never written again: elements -32 .. -1, 32 .. 63.
  ys[QSlot(hl - 32)] = T(0);
  ys[QSlot(hl - 16)] = T(0);
  ys[QSlot(hl + 32)] = T(0);
  ys[QSlot(hl + 48)] = T(0);
  const int64_t pairs = (count + 1) / 2;  // of problems: a warp's work
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  int64_t g = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (g >= pairs) return;  // whole warps only
  // This half's problem of pair g; none (no values, no outputs) past the
  // last problem.
  const auto desc_of = [&](int64_t pair_index) {
    const int64_t p = 2 * pair_index + half;
    return p < count ? ReadDesc(steps + p) : PairDesc{};
  };
  PairDesc d = desc_of(g);
  T x0 = TermValue(values, d.x, d.lx, hl);
  T x1 = TermValue(values, d.x, d.lx, hl + kHalf);
  T y0 = TermValue(values, d.y, d.ly, hl);
  T y1 = TermValue(values, d.y, d.ly, hl + kHalf);
  PairDesc next{};
  if (g + stride < pairs) next = desc_of(g + stride);
  for (;;) {
    __syncwarp();  // the previous problems' reads are done
    xs[hl] = x0;
    xs[hl + kHalf] = x1;
    ys[QSlot(hl)] = y0;
    ys[QSlot(hl + kHalf)] = y1;
    __syncwarp();
    const int64_t g_next = g + stride;
    const bool more = g_next < pairs;
    if (more) {
      x0 = TermValue(values, next.x, next.lx, hl);
      x1 = TermValue(values, next.x, next.lx, hl + kHalf);
      y0 = TermValue(values, next.y, next.ly, hl);
      y1 = TermValue(values, next.y, next.ly, hl + kHalf);
    }
    PairDesc after{};
    if (g_next + stride < pairs) after = desc_of(g_next + stride);

    const int lx_max = max(d.lx, __shfl_xor_sync(kFullMask, d.lx, kHalf));
    T r[4];
    QuadSums(xs, yl, lx_max, r);
    const int outputs = d.lx + d.ly - 1;  // -1 for no problem
    T* const o = out + d.dst;
    bool bad = false;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = 4 * hl + i;
      if (k < outputs) {
        o[k] = r[i];
        bad |= !isfinite(r[i]);
      }
    }
    const unsigned bad_lanes = __ballot_sync(kFullMask, bad);
    if (hl == 0 && outputs > 0 && status != nullptr) {
      status[d.problem] = ((bad_lanes >> (half * kHalf)) & 0xffffu) != 0
                              ? kEnumerateStatusNonFinite
                              : 0u;
    }
    if (!more) break;
    g = g_next;
    d = next;
    next = after;
  }
}

constexpr int kCachedDevices = 64;

// A kernel's resident blocks on the current device, queried once per device
// (the occupancy query would be host time inside a launch of about 100
// microseconds).
template <typename T, int kVariant, typename Kernel>
absl::StatusOr<int> ResidentBlocks(Kernel kernel) {
  static std::atomic<int> cached[kCachedDevices];  // 0: not yet queried
  int device = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  const bool cacheable = device >= 0 && device < kCachedDevices;
  if (cacheable) {
    const int blocks = cached[device].load(std::memory_order_relaxed);
    if (blocks > 0) return blocks;
  }
  SAMPLER_ASSIGN_OR_RETURN(
      const int blocks,
      ResidentGridBlocks(kernel, kBlockThreads,
                         std::numeric_limits<int64_t>::max() / 2, 1, 0));
  if (cacheable) cached[device].store(blocks, std::memory_order_relaxed);
  return blocks;
}

}  // namespace

template <typename T>
absl::Status LaunchPairKernel(int variant, const StepProblem* steps,
                              int64_t count, const T* values, T* out,
                              uint32_t* status, cudaStream_t stream) {
  if (count == 0) return absl::OkStatus();
  // Warps needed: a problem each (variant 0) or two (variant 1).
  const int64_t warps = variant == 1 ? (count + 1) / 2 : count;
  const int64_t needed = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (variant == 1) {
    SAMPLER_ASSIGN_OR_RETURN(const int resident,
                             (ResidentBlocks<T, 1>(PairTwoKernel<T>)));
    PairTwoKernel<T>
        <<<static_cast<unsigned>(std::min<int64_t>(needed, resident)),
           kBlockThreads, 0, stream>>>(steps, count, values, out, status);
  } else {
    SAMPLER_ASSIGN_OR_RETURN(const int resident,
                             (ResidentBlocks<T, 0>(PairKernel<T>)));
    PairKernel<T>
        <<<static_cast<unsigned>(std::min<int64_t>(needed, resident)),
           kBlockThreads, 0, stream>>>(steps, count, values, out, status);
  }
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

template absl::Status LaunchPairKernel<float>(int, const StepProblem*, int64_t,
                                              const float*, float*, uint32_t*,
                                              cudaStream_t);
template absl::Status LaunchPairKernel<double>(int, const StepProblem*, int64_t,
                                               const double*, double*,
                                               uint32_t*, cudaStream_t);

}  // namespace sampler::kernels::cuda::enumerate_internal
