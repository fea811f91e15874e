// Device helpers of the direct pair convolution that the warp-cooperative
// kernel (enumerate.cu) and the tensor-core kernel (enumerate_tensor.cu)
// share: the kernels' arguments, a task's step problem, operands and tile
// geometry, the staging of an operand range (zero outside the operand) and
// the write of a finished tile. Private to the enumeration's CUDA library;
// compiled by nvcc only.
#ifndef SAMPLER_KERNELS_ENUMERATE_DIRECT_CUH_
#define SAMPLER_KERNELS_ENUMERATE_DIRECT_CUH_

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/warp.cuh"

namespace sampler::kernels::cuda::enumerate_internal {

template <typename T>
struct DeviceArgs {
  const StepProblem* steps;
  const Task* tasks;  // null: task t is step problem t, tile 0
  int64_t num_tasks;
  const T* values;
  double* scratch;
  T* out;
  uint32_t* status;
};

// An operand of a pair convolution: values (type T) or scratch (double).
struct Operand {
  int64_t base;
  int32_t len;
  bool scratch;
};

template <typename C, typename T>
__device__ __forceinline__ C LoadOperand(const DeviceArgs<T>& args,
                                         const Operand& o, int64_t i) {
  return o.scratch ? static_cast<C>(args.scratch[o.base + i])
                   : static_cast<C>(__ldg(args.values + (o.base + i)));
}

__device__ __forceinline__ void Flag(uint32_t* status, int32_t problem) {
  if (status != nullptr) atomicOr(status + problem, kEnumerateStatusNonFinite);
}

// A task's step problem and tile.
__device__ __forceinline__ void TaskOf(const StepProblem* steps,
                                       const Task* tasks, int64_t task,
                                       StepProblem* sp, int64_t* tile) {
  if (tasks != nullptr) {
    const Task t = tasks[task];
    *sp = steps[t.step_problem];
    *tile = t.tile;
  } else {
    *sp = steps[task];
    *tile = 0;
  }
}

// Calls run(step_problem, tile) for each task of warp `warp` of this block
// of kWarps warps (a grid-stride loop over the launch's warps).
template <int kWarps, typename T, typename Run>
__device__ __forceinline__ void ForEachWarpTask(const DeviceArgs<T>& args,
                                                int warp, Run run) {
  for (int64_t task = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
       task < args.num_tasks;
       task += static_cast<int64_t>(gridDim.x) * kWarps) {
    StepProblem sp;
    int64_t tile;
    TaskOf(args.steps, args.tasks, task, &sp, &tile);
    run(sp, tile);
  }
}

// x = the shorter operand (the summation index), y = the longer.
__device__ __forceinline__ void Operands(const StepProblem& sp, Operand* x,
                                         Operand* y) {
  const Operand a{sp.a, sp.a_len, (sp.bits & kAInScratch) != 0};
  const Operand b{sp.b, sp.b_len, (sp.bits & kBInScratch) != 0};
  if (sp.a_len <= sp.b_len) {
    *x = a;
    *y = b;
  } else {
    *x = b;
    *y = a;
  }
}

// Writes a finished tile: values[i] is output k0 + i (staged in shared
// memory), coalesced over the task's `lanes` lanes (lane index `sl`).
template <typename T>
__device__ __forceinline__ void WriteTile(const DeviceArgs<T>& args,
                                          const StepProblem& sp, int64_t k0,
                                          int64_t K, int tw, int sl, int lanes,
                                          const double* values,
                                          bool log_values) {
  const int n = static_cast<int>(K - k0 < tw ? K - k0 : tw);
  if ((sp.bits & kDstScratch) != 0) {
    double* const d = args.scratch + (sp.dst + k0);
    for (int i = sl; i < n; i += lanes) d[i] = values[i];
    return;
  }
  T* const d = args.out + (sp.dst + k0);
  bool bad = false;
  if (!log_values) {
    for (int i = sl; i < n; i += lanes) {
      const T r = static_cast<T>(values[i]);
      d[i] = r;
      bad |= !isfinite(r);
    }
  } else if ((sp.bits & kOutLog) != 0) {
    for (int i = sl; i < n; i += lanes) {
      const T r = static_cast<T>(values[i]);
      d[i] = r;
      bad |= !(r < std::numeric_limits<T>::infinity());  // +inf or NaN
    }
  } else {
    for (int i = sl; i < n; i += lanes) {
      const T r = static_cast<T>(exp(values[i]));
      d[i] = r;
      bad |= !isfinite(r);
    }
  }
  if (bad) Flag(args.status, sp.problem);
}

// A task's place in its problem: the tile [k0, k0 + TW) and its j range.
struct Geometry {
  Operand x, y;
  int64_t k0, K, jlo, jhi;
};

template <int TW>
__device__ __forceinline__ Geometry MakeGeometry(const StepProblem& sp,
                                                 int64_t tile) {
  Geometry g;
  Operands(sp, &g.x, &g.y);
  const int64_t LX = g.x.len, LY = g.y.len;
  g.K = LX + LY - 1;
  g.k0 = tile * TW;
  // Pairs (j, k - j) with k in the tile, both valid.
  g.jlo = g.k0 - LY + 1 > 0 ? g.k0 - LY + 1 : 0;
  g.jhi = g.k0 + TW - 1 < LX - 1 ? g.k0 + TW - 1 : LX - 1;
  return g;
}

// The operand values [start, start + n) of a chunk, zero outside [0, len),
// as the shared-memory type: `visit(i, value)` for i = sl, sl + LT, ...
// (`kInFlight` loads issued before their values are used). The operand's
// kind (scratch or values) is resolved once, not per value. kLate: the
// loads in flight are held as loaded (float values as floats: half the
// registers of doubles) and converted to C as they are visited (the same
// value either way).
template <int LT, int kInFlight, typename C, bool kLate = false, typename T,
          typename Visit>
__device__ __forceinline__ void ForOperandRange(const DeviceArgs<T>& args,
                                                const Operand& o, int64_t start,
                                                int n, int sl, Visit visit) {
  // Valid i: 0 <= start + i < len, i.e. lo <= i < hi (32-bit from here).
  const int lo = static_cast<int>(
      start >= 0 ? 0 : (-start < n ? -start : static_cast<int64_t>(n)));
  const int64_t room = o.len - start;
  const int hi = static_cast<int>(room <= 0 ? 0 : (room < n ? room : n));
  auto run = [&](const auto* p) {
    using L = std::conditional_t<
        kLate, std::remove_cv_t<std::remove_pointer_t<decltype(p)>>, C>;
    for (int i0 = sl; i0 < n; i0 += kInFlight * LT) {
      L v[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const int i = i0 + u * LT;
        v[u] = i >= lo && i < hi ? static_cast<L>(p[i]) : L(0);
      }
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const int i = i0 + u * LT;
        if (i < n) visit(i, static_cast<C>(v[u]));
      }
    }
  };
  if (o.scratch) {
    run(args.scratch + (o.base + start));
  } else {
    run(args.values + (o.base + start));
  }
}

}  // namespace sampler::kernels::cuda::enumerate_internal

#endif  // SAMPLER_KERNELS_ENUMERATE_DIRECT_CUH_
