// CUDA enumeration (cuda/enumerate.h): the direct warp-cooperative
// convolution in linear and log space, the copy of one-term problems, the
// cuFFT path's kernels, and the launcher (which also launches the pair
// kernel of enumerate_pair.cu: a warp per two-term problem of at most 32
// values a term, the planner's choice for those; and the tensor-core kernel
// of enumerate_tensor.cu for the direct configurations that name it). The
// device helpers both direct kernels share are enumerate_direct.cuh. The
// host-side planning of a segmented batch is enumerate_plan.cc (the
// configurations both share: cuda/enumerate_plan.h), the cuFFT plans
// enumerate_fft_plans.cc.
//
// The direct kernel. r_k = sum_j x_j y_{k-j}, x the shorter operand (LX <=
// LY). A warp takes a task: a tile of TW = NG * R consecutive outputs
// [k0, k0 + TW) of one problem. Its 32 lanes are NG groups of G members
// (lane = member * NG + group); group g owns outputs k0 + g R + i, i < R, in
// registers, and member m takes j = jc + m + G t at step t, so that at each
// step a group's members hold G neighbouring pairs of each skew diagonal
// x + y = k of the outer product: the skew-diagonal tile of the blog, whose
// diagonals the members sum at the end with a __shfl_xor_sync butterfly, as
// in the lecture's version 3 (a warp per output there; here several outputs
// per lane, which is what makes the arithmetic, not the loads, the limit).
// Equal work per lane: every lane of a tile runs the same steps over the
// tile's j range, out-of-range pairs reading zeros (the padding of x and y in
// shared memory), so there is no divergence and no bounds test in the loop;
// the price is the triangles at the tile's ends, about TW / LX of the work.
//
// Shared memory (per warp, no __syncthreads: warps are independent): a chunk
// of x, stored member-major so that a member reads its next V steps with one
// 16-byte load (a broadcast across the groups), and the window of y the
// chunk needs. The y values of a group's R outputs slide by G per step, so a
// lane keeps them in R registers and loads only min(G, R) new ones per step;
// the registers rotate through a fully unrolled loop (slots are e mod R of
// the element's offset e, known at compile time), so nothing is moved and
// nothing is indexed at run time. R is odd: consecutive groups' loads then
// fall in distinct banks.
//
// Small problems are latency- and instruction-bound rather than
// arithmetic-bound, so some configurations split a warp into S = 2
// independent sub-warps of 16 lanes (G = 1, a problem each: a tile of 80
// outputs instead of 160 wastes less on a 63-output result), and load the
// first chunks of Q tasks together, every load in flight before any is used.
// Mid-sized problems (m around 256, float products) take S = 2 (or 4)
// sub-warps with long chunks and 16-byte x loads: the rectangle waste of a
// tile is about its width over the problem's length, so a tile of 80
// outputs wastes half of what one of 160 does; the planner gives a warp's
// sub-warps the same tile of S problems, so that they run equal steps.
// Long problems (m from 513 to 4096), whose tiles would fill less than a
// wave in the issue's batches, split each tile's j range over the 4 warps
// of a block (RunSplitTasks), the parts added in part order. Which
// configuration runs is a function of the step's sizes and product type
// (AutoLinearConfig), measured in bench/results/enumerate-kernel.md.
//
// Accuracy. Double problems: DFMA into a block sum of at most 28 steps,
// blocks added into the lane's accumulator, the butterfly in double: a
// relative error of at most (28 + J / (28 G) + 5) double roundings per
// output and tree level, J the pairs per output. Float problems, pairs of
// two terms (both operands float, the benchmarks' case): float FMA chains,
// two alternating chains of at most 14 steps each, added (one more
// rounding) and promoted to a double accumulator (every 28 steps or fewer);
// products of floats are
// exact in the FMA and every summand is non-negative, so a promoted block is
// within 15 float roundings of its exact value, the double part adds nothing
// visible and the final rounding to float one more: relative error <= 16 u +
// O(u^2) = 9.5e-7 (u = 2^-24), guaranteed, at the price of one add, one
// conversion and one double add per output per (up to) 28 FMAs. Float
// problems' pairs with a node of the tree (a double partial sum) use the
// double path, so that the partial sums keep double's precision, as on the
// CPU; a node carries its level-1 pairs' float error (at most 15 u, the
// convolution of non-negative values adds no more), so the bound holds.
//
// Log path (log input or output): extended-range arithmetic, the CPU's
// scheme (ExtendedKernel; enumerate_cpu_convolve.h): the tree's nodes are
// m * 2^e (a double mantissa, an int64 exponent) in scratch, each pair
// convolution a tilted, scaled plain multiply-add per tile, so a node's
// relative error is a few ulps per level whatever its magnitude (1e-300 and
// far below included), and the root converts to log (or linear) once. Only
// log inputs beyond the extended form's range (|v| > 2^32, as on the CPU)
// take the log kernel (LogKernel): an online log-sum-exp per output in
// double: each lane keeps the largest pair so far and the sum of exp(pair -
// largest), rescaling when the largest changes (one exp per pair either
// way); members combine their (max, sum) pairs by a butterfly of a
// symmetric operation, so every lane gets the same bits. -inf (a zero
// probability) stays exactly -inf.
//
// Determinism: every sum has a fixed order (lane order within a chunk, chunk
// order, a fixed butterfly), no floating-point atomics; a problem's kernel
// configuration is a function of its own sizes.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "enumerate_direct.cuh"
#include "enumerate_pair.h"
#include "enumerate_tensor.h"
#include "enumerate_tilt.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/enumerate_plan.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda {

using enumerate_internal::DeviceArgs;
using enumerate_internal::DirectConfigDef;
using enumerate_internal::FftProblem;
using enumerate_internal::FftSignal;
using enumerate_internal::Flag;
using enumerate_internal::ForEachWarpTask;
using enumerate_internal::ForOperandRange;
using enumerate_internal::Geometry;
using enumerate_internal::kAInScratch;
using enumerate_internal::kBInScratch;
using enumerate_internal::kDirectConfigDefs;
using enumerate_internal::kDstScratch;
using enumerate_internal::kInLog;
using enumerate_internal::kLogGroups;
using enumerate_internal::kNumDirectConfigs;
using enumerate_internal::kOutLog;
using enumerate_internal::Launch;
using enumerate_internal::LaunchKind;
using enumerate_internal::Log2;
using enumerate_internal::MakeGeometry;
using enumerate_internal::Operand;
using enumerate_internal::Operands;
using enumerate_internal::StepProblem;
using enumerate_internal::Task;
using enumerate_internal::TaskOf;
using enumerate_internal::WriteTile;

namespace {

constexpr int kWarpsPerBlock = 4;  // warps are independent; 4 keeps
                                   // blocks small for the tail
constexpr int kMaxBlocks = 1 << 20;

constexpr int Gcd(int a, int b) { return b == 0 ? a : Gcd(b, a % b); }
constexpr int Lcm(int a, int b) { return a / Gcd(a, b) * b; }
constexpr int RoundUp(int a, int b) { return (a + b - 1) / b * b; }
// e mod r in [0, r) for any sign of e.
constexpr int Mod(int e, int r) { return ((e % r) + r) % r; }

// ------------------------------------------------------- shapes ----

// Compile-time shape of one direct configuration: G members per output
// group, R outputs per group, SW independent sub-warps per warp (each its own
// task; G = 1 only, no shuffles), Q tasks per sub-warp whose first chunks are
// loaded together (all loads in flight: small problems are latency-bound),
// XT the target length of a chunk of x; kScalarX: x read one value a step
// (the short chunks of small sub-warp problems), else 16 bytes at a time.
template <int G, int R, bool kF32, int SW, int Q, int XT, bool kScalarX>
struct Shape {
  static_assert(kWarpSize % (G * SW) == 0, "G and SW divide the warp");
  static_assert(SW == 1 || G == 1, "sub-warps own whole outputs");
  static_assert(R % 2 == 1, "R odd keeps the groups' loads in distinct banks");
  using C = std::conditional_t<kF32, float, double>;  // shared-memory type
  static constexpr int kG = G;
  static constexpr int LT = kWarpSize / SW;  // lanes per task
  static constexpr int NG = LT / G;          // groups per task
  static constexpr int TW = NG * R;          // outputs per tile
  // x values per load: 16 bytes, or one for sub-warps' short chunks (where
  // a multiple of 4 steps would waste more than it saves).
  static constexpr int V = kScalarX ? 1 : 16 / static_cast<int>(sizeof(C));
  static constexpr int U = Lcm(R, V);  // unrolled steps
  static constexpr int S_MAX = (XT / G) / U * U > 0 ? (XT / G) / U* U : U;
  // Member rows of x: 16 bytes more than a multiple of 128, so that the
  // members' 16-byte loads fall in distinct bank quads.
  static constexpr int XROW =
      G == 1 ? RoundUp(S_MAX, V)
             : RoundUp(S_MAX, 128 / static_cast<int>(sizeof(C))) + V;
  static constexpr int XS = G * XROW;
  static constexpr int YS = RoundUp(TW + G * S_MAX - 1, V);
  // A slot holds one task's chunk. Slots are 128 / SW bytes more than a
  // multiple of 128, so that the sub-warps' loads fall in different banks
  // (their lanes' y words g R + 32 s / SW, g < 32 / SW, R odd: distinct mod
  // 32).
  static constexpr int kSlotBytes =
      RoundUp((XS + YS) * static_cast<int>(sizeof(C)), 128) +
      (SW > 1 ? 128 / SW : 0);
  static constexpr int kSlot = kSlotBytes / static_cast<int>(sizeof(C));
  static constexpr int kWarpElems = kSlot * SW * Q;
  static constexpr int NEW = G < R ? G : R;  // y values loaded per step
  // Values a chunk stages per lane (x, then y), for the batched load.
  static constexpr int Kx() { return (G * S_MAX + LT - 1) / LT; }
  static constexpr int Ky() { return (TW + G * S_MAX - 1 + LT - 1) / LT; }
  // Float chains: at most 14 FMAs each between promotions (the bound in
  // the file comment), so a promotion every 28 steps, inside the unrolled
  // block at evenly spaced steps when it is longer, else every kBlocks
  // blocks (chain A takes the even steps of each block: ceil(U / 2)).
  static constexpr int kPromoteParts = U > 28 ? (U + 27) / 28 : 1;
  static constexpr int kPromoteEvery = U / kPromoteParts;
  static constexpr int kBlocks = U > 28 ? 1
                                        : (14 / ((U + 1) / 2) > 0
                                               ? 14 / ((U + 1) / 2)
                                               : 1);
  static_assert(U % kPromoteParts == 0, "even promotion points");
  static_assert((kPromoteEvery + 1) / 2 * kBlocks <= 14, "chains of <= 14");
  static_assert(kSlotBytes >= TW * static_cast<int>(sizeof(double)),
                "the output staging reuses the task's slot");
};

template <int C, bool kF32>
constexpr int ChunkTarget() {
  constexpr DirectConfigDef D = kDirectConfigDefs[C];
  if constexpr (D.chunk > 0) return kF32 ? D.chunk : D.chunk_f64;
  return D.small_chunks ? (D.r <= 3 ? 64 : 40) : (kF32 ? 1024 : 512);
}

// The shape of direct configuration C.
template <int C, bool kF32>
using ShapeOf =
    Shape<kDirectConfigDefs[C].g, kDirectConfigDefs[C].r, kF32,
          kDirectConfigDefs[C].sw, kDirectConfigDefs[C].q,
          ChunkTarget<C, kF32>(),
          (kDirectConfigDefs[C].sw > 1 && kDirectConfigDefs[C].small_chunks)>;

// A log-space configuration (kLogGroups): G members per output, NG outputs
// per tile.
template <int G>
struct LogShape {
  static constexpr int NG = kWarpSize / G;
  static constexpr int TW = NG;
  static constexpr int V = 2;  // doubles per 16-byte load
  static constexpr int U = 4;
  static constexpr int S_MAX = (512 / G) / U * U;
  static constexpr int XROW = RoundUp(S_MAX, 16) + V;
  static constexpr int XS = G * XROW;
  static constexpr int YS = RoundUp(TW + G * S_MAX - 1, V);
  static constexpr int kWarpElems = XS + YS;
};

// ------------------------------------------------- device helpers ----

// Stages n values, element i from load(i) (zero-padded by the loader), into
// dst[index(i)], four loads in flight per lane.
template <typename C, typename Load, typename Index>
__device__ __forceinline__ void Stage(int n, int lane, Load load, Index index,
                                      C* dst) {
  for (int i0 = 0; i0 < n; i0 += 4 * kWarpSize) {
    C v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = i0 + u * kWarpSize + lane;
      v[u] = i < n ? load(i) : C(0);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = i0 + u * kWarpSize + lane;
      if (i < n) dst[index(i)] = v[u];
    }
  }
}

// This warp's part of the block's dynamic shared memory, `elems` doubles a
// warp.
__device__ __forceinline__ double* WarpSharedDoubles(int elems) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  return reinterpret_cast<double*>(smem_raw) +
         static_cast<int>(threadIdx.x / kWarpSize) * elems;
}

// -------------------------------------------------- linear kernel ----

// The accumulators of one lane: R outputs.
template <int R, bool kF32>
struct Accumulators;

// Float products: two alternating float FMA chains, promoted to double.
template <int R>
struct Accumulators<R, true> {
  float chain[2][R];
  double total[R];
  __device__ __forceinline__ void Clear() {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      chain[0][i] = 0.0f;
      chain[1][i] = 0.0f;
      total[i] = 0.0;
    }
  }
  // `c` and `i` are compile-time after unrolling (register arrays).
  __device__ __forceinline__ void Add(int c, int i, float x, float y) {
    chain[c][i] = __fmaf_rn(x, y, chain[c][i]);
  }
  __device__ __forceinline__ void Promote() {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      total[i] += static_cast<double>(__fadd_rn(chain[0][i], chain[1][i]));
      chain[0][i] = 0.0f;
      chain[1][i] = 0.0f;
    }
  }
};

// Double products: a block sum (at most 28 steps) added into the total.
template <int R>
struct Accumulators<R, false> {
  double block[R];
  double total[R];
  __device__ __forceinline__ void Clear() {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      block[i] = 0.0;
      total[i] = 0.0;
    }
  }
  __device__ __forceinline__ void Add(int, int i, double x, double y) {
    block[i] = __fma_rn(x, y, block[i]);
  }
  __device__ __forceinline__ void Promote() {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      total[i] += block[i];
      block[i] = 0.0;
    }
  }
};

// One chunk of a task's j range: `steps` steps of its G members from jc,
// span = G * steps values of x; y from ybase, TW + span - 1 values.
struct Chunk {
  int64_t jc, ybase;
  int steps, span;
};

template <class S>
__device__ __forceinline__ Chunk MakeChunk(const Geometry& g, int64_t jc) {
  constexpr int G = S::kG, U = S::U;
  Chunk c;
  c.jc = jc;
  // Enough steps for the rest of the range, whole unrolled blocks, at most
  // S_MAX.
  const int64_t rest = (g.jhi - jc + G) / G;
  c.steps =
      rest >= S::S_MAX ? S::S_MAX : static_cast<int>((rest + U - 1) / U * U);
  c.span = G * c.steps;
  c.ybase = g.k0 - jc - c.span + 1;
  return c;
}

// Where x value i of a chunk goes in the slot: member i % G, step i / G.
template <class S>
__device__ __forceinline__ int XSlot(int i) {
  return (i % S::kG) * S::XROW + i / S::kG;
}

// Stages a chunk into a slot: x values, then the window of y.
template <class S, typename T>
__device__ __forceinline__ void StageChunk(const DeviceArgs<T>& args,
                                           const Geometry& g, const Chunk& c,
                                           int sl, typename S::C* slot) {
  using C = typename S::C;
  ForOperandRange<S::LT, 4, C>(args, g.x, c.jc, c.span, sl,
                               [&](int i, C v) { slot[XSlot<S>(i)] = v; });
  C* const ys = slot + S::XS;
  ForOperandRange<S::LT, 4, C>(args, g.y, c.ybase, S::TW + c.span - 1, sl,
                               [&](int i, C v) { ys[i] = v; });
}

// Loads operand values [start, start + n), zero outside [0, len), into K
// registers per lane (value i = sl + k LT in v[k]).
template <int LT, int K, typename C, typename T>
__device__ __forceinline__ void LoadRange(const DeviceArgs<T>& args,
                                          const Operand& o, int64_t start,
                                          int n, int sl, C (&v)[K]) {
  const int lo = static_cast<int>(
      start >= 0 ? 0 : (-start < n ? -start : static_cast<int64_t>(n)));
  const int64_t room = o.len - start;
  const int hi = static_cast<int>(room <= 0 ? 0 : (room < n ? room : n));
  if (o.scratch) {
    const double* const p = args.scratch + (o.base + start);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = sl + k * LT;
      v[k] = i >= lo && i < hi ? static_cast<C>(p[i]) : C(0);
    }
  } else {
    const T* const p = args.values + (o.base + start);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = sl + k * LT;
      v[k] = i >= lo && i < hi ? static_cast<C>(__ldg(p + i)) : C(0);
    }
  }
}

// The batched first-chunk load of one task: its values in registers, to be
// stored after every task's loads are in flight.
template <class S, typename T>
__device__ __forceinline__ void LoadFirstChunk(const DeviceArgs<T>& args,
                                               const Geometry& g,
                                               const Chunk& c, int sl,
                                               typename S::C (&vx)[S::Kx()],
                                               typename S::C (&vy)[S::Ky()]) {
  LoadRange<S::LT>(args, g.x, c.jc, c.span, sl, vx);
  LoadRange<S::LT>(args, g.y, c.ybase, S::TW + c.span - 1, sl, vy);
}

template <class S>
__device__ __forceinline__ void StoreFirstChunk(
    const Chunk& c, int sl, const typename S::C (&vx)[S::Kx()],
    const typename S::C (&vy)[S::Ky()], typename S::C* slot) {
  constexpr int LT = S::LT;
#pragma unroll
  for (int k = 0; k < S::Kx(); ++k) {
    const int i = sl + k * LT;
    if (i < c.span) slot[XSlot<S>(i)] = vx[k];
  }
  typename S::C* const ys = slot + S::XS;
  const int ny = S::TW + c.span - 1;
#pragma unroll
  for (int k = 0; k < S::Ky(); ++k) {
    const int i = sl + k * LT;
    if (i < ny) ys[i] = vy[k];
  }
}

// The steps of one staged chunk: accumulates R outputs of group `group` over
// member `member`'s j's.
template <class S, int G, int R, bool kF32>
__device__ __forceinline__ void ComputeChunk(Accumulators<R, kF32>& acc,
                                             const typename S::C* slot,
                                             const Chunk& c, int member,
                                             int group) {
  using C = typename S::C;
  constexpr int U = S::U, V = S::V;
  using Vec = std::conditional_t<V == 4, float4,
                                 std::conditional_t<V == 2, double2, C>>;
  constexpr int kBlocks = S::kBlocks;
  const C* const ys = slot + S::XS;
  // Window element e (offset from b0) of output i at step t is
  // ys[b0 + i - G t], kept in slot Mod(e, R).
  const int b0 = group * R - member + c.span - 1;
  C win[R];
#pragma unroll
  for (int e = S::NEW; e < R; ++e) win[Mod(e, R)] = ys[b0 + e];
  const C* xrow = slot + member * S::XROW;
  int blocks = 0;
  for (int tb = 0; tb < c.steps; tb += U) {
    const C* yp = ys + (b0 - G * tb);
    const C* xp = xrow + tb;
    Vec xv;
#pragma unroll
    for (int tt = 0; tt < U; ++tt) {
      C xj;
      if constexpr (V == 1) {
        xj = xp[tt];
      } else {
        if (tt % V == 0) xv = *reinterpret_cast<const Vec*>(xp + tt);
        if constexpr (V == 4) {
          xj = tt % 4 == 0   ? xv.x
               : tt % 4 == 1 ? xv.y
               : tt % 4 == 2 ? xv.z
                             : xv.w;
        } else {
          xj = tt % 2 == 0 ? xv.x : xv.y;
        }
      }
#pragma unroll
      for (int k = 0; k < S::NEW; ++k) {
        win[Mod(k - G * tt, R)] = yp[k - G * tt];
      }
#pragma unroll
      for (int i = 0; i < R; ++i) {
        acc.Add(tt % 2, i, xj, win[Mod(i - G * tt, R)]);
      }
      if constexpr (U > 28) {
        if (tt % S::kPromoteEvery == S::kPromoteEvery - 1) acc.Promote();
      }
    }
    if constexpr (U <= 28) {
      if (++blocks == kBlocks) {
        acc.Promote();
        blocks = 0;
      }
    }
  }
  if constexpr (U <= 28) {
    if (blocks != 0) acc.Promote();
  }
}

// The sums of a tile over j in [g.jlo, g.jhi] (the tile's whole range, or
// a part of it that ends on whole unrolled blocks), its first chunk
// (optionally) staged already: every chunk staged and computed, then the
// members' butterfly, after which every member holds its group's totals.
template <class S, typename T, int G, int R, bool kF32>
__device__ __forceinline__ void SumTile(const DeviceArgs<T>& args,
                                        const Geometry& g, bool first_staged,
                                        unsigned mask, int sl,
                                        typename S::C* slot,
                                        Accumulators<R, kF32>& acc) {
  constexpr int NG = S::NG, LT = S::LT;
  const int member = sl / NG;
  const int group = sl % NG;
  acc.Clear();
  bool staged = first_staged;
  for (int64_t jc = g.jlo; jc <= g.jhi;) {
    const Chunk c = MakeChunk<S>(g, jc);
    if (!staged) {
      __syncwarp(mask);
      StageChunk<S>(args, g, c, sl, slot);
      __syncwarp(mask);
    }
    staged = false;
    ComputeChunk<S, G, R, kF32>(acc, slot, c, member, group);
    jc += c.span;
  }
  // Sum each group's members: a butterfly over the member bits of the
  // lane index (lane = member * NG + group; sub-warps have G = 1, so none).
#pragma unroll
  for (int i = 0; i < R; ++i) {
    acc.total[i] = WarpButterfly<ButterflyOrder::kLowToHigh, LT, NG>(
        acc.total[i], WarpPlus<double>());
  }
}

// Stages a tile's totals (SumTile's) in the slot as TW doubles, output k0 +
// i at i (member m stores the outputs i = m mod G), and returns them.
template <class S, int G, int R, bool kF32>
__device__ __forceinline__ double* StageTotals(const Accumulators<R, kF32>& acc,
                                               unsigned mask, int sl,
                                               typename S::C* slot) {
  const int member = sl / S::NG;
  const int group = sl % S::NG;
  double* const staged_out = reinterpret_cast<double*>(slot);
  __syncwarp(mask);
#pragma unroll
  for (int i = 0; i < R; ++i) {
    if (i % G == member) staged_out[group * R + i] = acc.total[i];
  }
  __syncwarp(mask);
  return staged_out;
}

// One task after its first chunk is (optionally) staged: its sums, then
// the write, coalesced.
template <class S, typename T, int G, int R, bool kF32>
__device__ __forceinline__ void RunTask(const DeviceArgs<T>& args,
                                        const StepProblem& sp, int64_t tile,
                                        bool first_staged, unsigned mask,
                                        int sl, typename S::C* slot) {
  const Geometry g = MakeGeometry<S::TW>(sp, tile);
  Accumulators<R, kF32> acc;
  SumTile<S, T, G, R, kF32>(args, g, first_staged, mask, sl, slot, acc);
  WriteTile(args, sp, g.k0, g.K, S::TW, sl, S::LT,
            StageTotals<S, G, R>(acc, mask, sl, slot),
            /*log_values=*/false);
}

// Split tiles (P = kWarpsPerBlock warps a tile, one task a block): warp w
// sums part w of the tile's j range, P parts of whole unrolled blocks
// (so that no chunk runs past its part's end into the next part's x; the
// last part ends where the tile's range does, padded as a whole tile's), and
// output i of the tile is ((part 0 + part 1) + part 2) + part 3 in double:
// a fixed order, a function of the tile only. Same bound as a whole tile (a
// part is a whole tile's sum over fewer steps, and the parts' additions are
// double roundings).
template <class S, typename T, int G, int R, bool kF32>
__device__ __forceinline__ void RunSplitTasks(const DeviceArgs<T>& args,
                                              int warp, int lane,
                                              typename S::C* block_smem) {
  constexpr int TW = S::TW, U = S::U;
  constexpr int kThreads = kWarpsPerBlock * kWarpSize;
  typename S::C* const slot = block_smem + warp * S::kWarpElems;
  for (int64_t task = blockIdx.x; task < args.num_tasks; task += gridDim.x) {
    StepProblem sp;
    int64_t tile;
    TaskOf(args.steps, args.tasks, task, &sp, &tile);
    const Geometry g = MakeGeometry<TW>(sp, tile);
    const int64_t steps = (g.jhi - g.jlo + G) / G;
    const int64_t per =
        ((steps + kWarpsPerBlock - 1) / kWarpsPerBlock + U - 1) / U * U;
    Geometry part = g;
    part.jlo = g.jlo + warp * per * G;
    part.jhi = std::min(g.jhi, part.jlo + per * G - 1);
    Accumulators<R, kF32> acc;
    __syncthreads();  // the previous task's totals are read no more
    SumTile<S, T, G, R, kF32>(args, part, false, kFullMask, lane, slot, acc);
    StageTotals<S, G, R>(acc, kFullMask, lane, slot);
    __syncthreads();
    double* const sum = reinterpret_cast<double*>(block_smem);  // part 0's
    for (int i = static_cast<int>(threadIdx.x); i < TW; i += kThreads) {
      double v = sum[i];
#pragma unroll
      for (int w = 1; w < kWarpsPerBlock; ++w) {
        v += reinterpret_cast<const double*>(block_smem + w * S::kWarpElems)[i];
      }
      sum[i] = v;
    }
    __syncthreads();
    WriteTile(args, sp, g.k0, g.K, TW, static_cast<int>(threadIdx.x), kThreads,
              sum, /*log_values=*/false);
  }
}

template <typename T, int CONFIG, bool kF32>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarpSize)
    LinearKernel(const DeviceArgs<T> args) {
  constexpr DirectConfigDef D = kDirectConfigDefs[CONFIG];
  constexpr int G = D.g, R = D.r, SW = D.sw, Q = D.q;
  using S = ShapeOf<CONFIG, kF32>;
  using C = typename S::C;
  constexpr int LT = S::LT, TW = S::TW;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warp = threadIdx.x / kWarpSize;
  const int sub = lane / LT;
  const int sl = lane % LT;
  const unsigned mask = SW == 1 ? kFullMask : (((1u << LT) - 1u) << (sub * LT));
  if constexpr (D.split > 1) {
    static_assert(D.split == kWarpsPerBlock && SW == 1 && Q == 1,
                  "a split tile takes the block's warps, one task a block");
    RunSplitTasks<S, T, G, R, kF32>(args, warp, lane,
                                    reinterpret_cast<C*>(smem_raw));
    return;
  }
  C* const warp_smem = reinterpret_cast<C*>(smem_raw) + warp * S::kWarpElems;
  constexpr int64_t kPerWarp = SW * Q;
  const int64_t stride =
      static_cast<int64_t>(gridDim.x) * kWarpsPerBlock * kPerWarp;
  for (int64_t base =
           (static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp) *
           kPerWarp;
       base < args.num_tasks; base += stride) {
    // This sub-warp's tasks: base + sub * Q + q; slot q * SW + sub.
    if constexpr (Q == 1) {
      const int64_t task = base + sub;
      if (task < args.num_tasks) {
        StepProblem sp;
        int64_t tile;
        TaskOf(args.steps, args.tasks, task, &sp, &tile);
        RunTask<S, T, G, R, kF32>(args, sp, tile, false, mask, sl,
                                  warp_smem + sub * S::kSlot);
      }
    } else {
      // Descriptors of all Q tasks, then the first chunks of all of them,
      // every load in flight before any is used.
      StepProblem sp[Q];
      int64_t tile[Q];
      bool live[Q];
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        const int64_t task = base + sub * Q + q;
        live[q] = task < args.num_tasks;
        if (live[q]) TaskOf(args.steps, args.tasks, task, &sp[q], &tile[q]);
      }
      C vx[Q][S::Kx()];
      C vy[Q][S::Ky()];
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        if (!live[q]) continue;
        const Geometry g = MakeGeometry<TW>(sp[q], tile[q]);
        LoadFirstChunk<S>(args, g, MakeChunk<S>(g, g.jlo), sl, vx[q], vy[q]);
      }
      __syncwarp();
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        if (!live[q]) continue;
        const Geometry g = MakeGeometry<TW>(sp[q], tile[q]);
        StoreFirstChunk<S>(MakeChunk<S>(g, g.jlo), sl, vx[q], vy[q],
                           warp_smem + (q * SW + sub) * S::kSlot);
      }
      __syncwarp();
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        if (!live[q]) continue;
        RunTask<S, T, G, R, kF32>(args, sp[q], tile[q], true, mask, sl,
                                  warp_smem + (q * SW + sub) * S::kSlot);
      }
      __syncwarp();
    }
  }
}

// Split tiles with float products and D.min_blocks set: RunSplitTasks
// under a register cap for min_blocks blocks an SM. (LinearKernel runs the
// others: an explicit cap of 1 would let them take more registers.)
template <typename T, int CONFIG, bool kF32>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarpSize,
                                  kDirectConfigDefs[CONFIG].min_blocks)
    CappedSplitKernel(const DeviceArgs<T> args) {
  constexpr DirectConfigDef D = kDirectConfigDefs[CONFIG];
  static_assert(kF32 && D.min_blocks > 0 && D.split == kWarpsPerBlock &&
                    D.sw == 1 && D.q == 1,
                "float split tiles with a register cap");
  using S = ShapeOf<CONFIG, kF32>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  RunSplitTasks<S, T, D.g, D.r, kF32>(
      args, static_cast<int>(threadIdx.x / kWarpSize),
      static_cast<int>(threadIdx.x & (kWarpSize - 1)),
      reinterpret_cast<typename S::C*>(smem_raw));
}

// ----------------------------------------------------- log kernel ----

// x and y converted to log-probabilities in double: log of linear values
// (zero gives -inf), log values as they are; scratch is already log.
template <typename T>
__device__ __forceinline__ double LoadLog(const DeviceArgs<T>& args,
                                          const Operand& o, int64_t i,
                                          bool in_log) {
  if (o.scratch) return args.scratch[o.base + i];
  const double v = static_cast<double>(__ldg(args.values + (o.base + i)));
  return in_log ? v : log(v);
}

template <typename T, int G>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarpSize)
    LogKernel(const DeviceArgs<T> args) {
  using S = LogShape<G>;
  constexpr int NG = S::NG, TW = S::TW, U = S::U;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  const int lane = threadIdx.x & (kWarpSize - 1);
  double* const xs = WarpSharedDoubles(S::kWarpElems);
  double* const ys = xs + S::XS;
  const int member = lane / NG;
  const int group = lane % NG;

  ForEachWarpTask<kWarpsPerBlock>(
      args, threadIdx.x / kWarpSize, [&](const StepProblem& sp, int64_t tile) {
        const Geometry g = MakeGeometry<TW>(sp, tile);
        const Operand &xo = g.x, &yo = g.y;
        const bool in_log = (sp.bits & kInLog) != 0;
        const int64_t LX = xo.len, LY = yo.len;
        const int64_t K = g.K, k0 = g.k0, jlo = g.jlo, jhi = g.jhi;

        double mx = kNegInf, sum = 0.0;
        for (int64_t jc = jlo; jc <= jhi;) {
          const int64_t rest = (jhi - jc + G) / G;
          const int steps = rest >= S::S_MAX
                                ? S::S_MAX
                                : static_cast<int>((rest + U - 1) / U * U);
          const int span = G * steps;
          __syncwarp();
          Stage<double>(
              span, lane,
              [&](int i) {
                const int64_t j = jc + i;
                return j < LX ? LoadLog(args, xo, j, in_log) : kNegInf;
              },
              [](int i) { return (i % G) * S::XROW + i / G; }, xs);
          const int64_t ybase = k0 - jc - span + 1;
          Stage<double>(
              TW + span - 1, lane,
              [&](int i) {
                const int64_t y = ybase + i;
                return y >= 0 && y < LY ? LoadLog(args, yo, y, in_log)
                                        : kNegInf;
              },
              [](int i) { return i; }, ys);
          __syncwarp();
          const double* xp = xs + member * S::XROW;
          const double* yp = ys + (group - member + span - 1);
          for (int t = 0; t < steps; ++t) {
            const double v = xp[t] + yp[-G * t];
            // Online log-sum-exp: one exp per pair, whichever way it goes.
            const bool up = v > mx;
            const double e = exp(up ? mx - v : v - mx);
            sum = up ? __fma_rn(sum, e, 1.0) : (v > kNegInf ? sum + e : sum);
            mx = up ? v : mx;
          }
          jc += span;
        }
    // Combine the members' (max, sum): symmetric, so both partners of a
    // butterfly step get the same bits. (Two values per step and a combine
    // of both: not a WarpButterfly.)
#pragma unroll
        for (int mask = NG; mask < kWarpSize; mask <<= 1) {
          const double omx = __shfl_xor_sync(kFullMask, mx, mask);
          const double osum = __shfl_xor_sync(kFullMask, sum, mask);
          const double nm = mx > omx ? mx : omx;
          const double mine = mx == kNegInf ? 0.0 : sum * exp(mx - nm);
          const double theirs = omx == kNegInf ? 0.0 : osum * exp(omx - nm);
          sum = mine + theirs;
          mx = nm;
        }
        double* const staged = xs;
        __syncwarp();
        if (member == 0)
          staged[group] = mx == kNegInf ? kNegInf : mx + log(sum);
        __syncwarp();
        WriteTile(args, sp, k0, K, TW, lane, kWarpSize, staged,
                  /*log_values=*/true);
      });
}

// ------------------------------------------------ extended kernel ----

// Extended-range arithmetic on the device: enumerate_cpu_convolve.{h,cc}'s
// scheme (a double mantissa in [0.5, 1) and an int64 exponent), so that the
// log path's tree is linear arithmetic with a relative error of a few ulps
// per level, converted to log (or linear) once, at the root.
namespace ext {

// The fractional tilt's helpers, shared with the CPU (enumerate_tilt.h).
namespace tilt = ::sampler::kernels::enumerate_internal;

constexpr int64_t kZeroExponent = -(int64_t{1} << 61);
constexpr int64_t kNoPair = -(int64_t{1} << 60);
constexpr double kAccurate = 0x1p-900;
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
// Steps of a lane's block sum before it joins the lane's total.
constexpr int kBlock = 32;

// 2^d for d in [-1022, 1023], exactly.
__device__ __forceinline__ double Pow2(int64_t d) {
  return __longlong_as_double(static_cast<long long>(d + 1023) << 52);
}

// m * 2^d for m in [0, 1) and d <= 0, rounded once; 0 below 2^-1100 (the
// CPU's Scale).
__device__ __forceinline__ double Scale(double m, int64_t d) {
  if (d >= -1022) return __dmul_rn(m, Pow2(d));
  if (d < -1100) return 0.0;
  return __dmul_rn(__dmul_rn(m, Pow2(d + 200)), Pow2(-200));
}

// A term's value (linear or log) in extended form (the CPU's FromLinear and
// FromLog; exp on the device is within an ulp of the host's).
__device__ __forceinline__ void FromValue(double v, bool in_log, double* m,
                                          int64_t* e) {
  if (in_log) {
    if (v == -std::numeric_limits<double>::infinity()) {
      *m = 0.0;
      *e = kZeroExponent;
      return;
    }
    const double n = floor(__dmul_rn(v, kInvLn2));
    v = __dsub_rn(__dsub_rn(v, __dmul_rn(n, kLn2Hi)), __dmul_rn(n, kLn2Lo));
    int ee = 0;
    *m = frexp(exp(v), &ee);
    *e = static_cast<int64_t>(n) + ee;
    return;
  }
  if (v == 0.0) {
    *m = 0.0;
    *e = kZeroExponent;
    return;
  }
  int ee = 0;
  *m = frexp(v, &ee);
  *e = ee;
}

// The CPU's ToLog and ToLinear (no contraction: the same roundings).
__device__ __forceinline__ double ToLog(double m, int64_t e) {
  if (m == 0.0) return -std::numeric_limits<double>::infinity();
  const double n = static_cast<double>(e);
  return __dadd_rn(__dmul_rn(n, kLn2Hi),
                   __dadd_rn(log(m), __dmul_rn(n, kLn2Lo)));
}
__device__ __forceinline__ double ToLinear(double m, int64_t e) {
  if (m == 0.0) return 0.0;
  if (e > 2000) return std::numeric_limits<double>::infinity();
  if (e < -2000) return 0.0;
  return ldexp(m, static_cast<int>(e));
}

// The fractional tilt's factors 2^(-c / 32) (enumerate_tilt.h, the CPU's
// literals): lane c of a warp holds factor c and hands it out by shuffle.
static_assert(tilt::kTiltSteps == kWarpSize, "one tilt factor per lane");
__constant__ double kTiltFactor[tilt::kTiltSteps] =
    SAMPLER_ENUMERATE_TILT_FACTORS;

// Outputs recomputed by ExactOutput since the last reset (a diagnostic:
// EnumerateExtendedFallbacks).
__device__ unsigned long long fallback_count = 0;

}  // namespace ext

// Element i of an operand in extended form: a node of scratch (already
// extended) or a term value, converted. kNode: the caller knows that o is a
// node, so there is no branch (loops over nodes then keep their unrolled
// loads together).
template <bool kNode = false, typename T>
__device__ __forceinline__ void LoadExtended(const DeviceArgs<T>& args,
                                             const Operand& o, int64_t i,
                                             bool in_log, double* m,
                                             int64_t* e) {
  if (kNode || o.scratch) {
    const double* const p = args.scratch + (o.base + 2 * i);
    *m = p[0];
    *e = __double_as_longlong(p[1]);
    return;
  }
  ext::FromValue(static_cast<double>(__ldg(args.values + (o.base + i))), in_log,
                 m, e);
}

template <bool kNode = false, typename T>
__device__ __forceinline__ int64_t ExponentOf(const DeviceArgs<T>& args,
                                              const Operand& o, int64_t i,
                                              bool in_log) {
  double m;
  int64_t e;
  LoadExtended<kNode>(args, o, i, in_log, &m, &e);
  return e;
}

__device__ __forceinline__ int64_t WarpMaxI64(int64_t v) {
  return WarpButterfly<ButterflyOrder::kHighToLow>(v, WarpMax<int64_t>());
}

// The largest pair exponent of output k of x (*) y, in every lane (below
// ext::kNoPair: no pair of non-zero values). Unrolled, and without the
// node-or-term branch where both operands are nodes (the upper levels), so
// that several loads are in flight: a level with few warps (the top of a
// tree of a few thousand terms, about 100) waits on their latency.
template <bool kNodes, typename T>
__device__ __forceinline__ int64_t LargestPairOf(const DeviceArgs<T>& args,
                                                 const Operand& x,
                                                 const Operand& y, int64_t k,
                                                 bool in_log, int lane) {
  const int64_t lo = k - (y.len - 1) > 0 ? k - (y.len - 1) : 0;
  const int64_t hi = k < x.len - 1 ? k : x.len - 1;
  int64_t best = std::numeric_limits<int64_t>::min();
#pragma unroll 4
  for (int64_t j = lo + lane; j <= hi; j += kWarpSize) {
    const int64_t e = ExponentOf<kNodes>(args, x, j, in_log) +
                      ExponentOf<kNodes>(args, y, k - j, in_log);
    best = e > best ? e : best;
  }
  return WarpMaxI64(best);
}
template <typename T>
__device__ __forceinline__ int64_t LargestPair(const DeviceArgs<T>& args,
                                               const Operand& x,
                                               const Operand& y, int64_t k,
                                               bool in_log, int lane) {
  return x.scratch && y.scratch
             ? LargestPairOf<true>(args, x, y, k, in_log, lane)
             : LargestPairOf<false>(args, x, y, k, in_log, lane);
}

// The largest exponent of o[lo..hi] tilted by the whole part of a i / 32
// (enumerate_tilt.h), in every lane; unrolled as LargestPair.
template <bool kNode, typename T>
__device__ __forceinline__ int64_t WindowTopOf(const DeviceArgs<T>& args,
                                               const Operand& o, int64_t lo,
                                               int64_t hi, int64_t a,
                                               bool in_log, int lane) {
  int64_t top = std::numeric_limits<int64_t>::min();
#pragma unroll 4
  for (int64_t i = lo + lane; i <= hi; i += kWarpSize) {
    const int64_t e =
        ExponentOf<kNode>(args, o, i, in_log) - ext::tilt::TiltWhole(a * i);
    top = e > top ? e : top;
  }
  return WarpMaxI64(top);
}
template <typename T>
__device__ __forceinline__ int64_t WindowTop(const DeviceArgs<T>& args,
                                             const Operand& o, int64_t lo,
                                             int64_t hi, int64_t a, bool in_log,
                                             int lane) {
  return o.scratch ? WindowTopOf<true>(args, o, lo, hi, a, in_log, lane)
                   : WindowTopOf<false>(args, o, lo, hi, a, in_log, lane);
}

// Output k on its own, by the whole warp (the CPU's ExactOutput): every pair
// scaled by the largest (at least 1/4 after scaling), each lane's pairs
// summed in ascending j, the lanes' sums by a butterfly.
template <typename T>
__device__ __forceinline__ void ExactOutput(const DeviceArgs<T>& args,
                                            const Operand& x, const Operand& y,
                                            int64_t k, bool in_log, int lane,
                                            double* m, int64_t* e) {
  const int64_t largest = LargestPair(args, x, y, k, in_log, lane);
  if (largest < ext::kNoPair) {
    *m = 0.0;
    *e = ext::kZeroExponent;
    return;
  }
  const int64_t lo = k - (y.len - 1) > 0 ? k - (y.len - 1) : 0;
  const int64_t hi = k < x.len - 1 ? k : x.len - 1;
  double s = 0.0;
  for (int64_t j = lo + lane; j <= hi; j += kWarpSize) {
    double mx, my;
    int64_t ex, ey;
    LoadExtended(args, x, j, in_log, &mx, &ex);
    LoadExtended(args, y, k - j, in_log, &my, &ey);
    s = __dadd_rn(s, ext::Scale(__dmul_rn(mx, my), ex + ey - largest));
  }
  s = WarpButterfly<ButterflyOrder::kHighToLow>(s, WarpPlus<double>());
  int ee = 0;
  *m = frexp(s, &ee);
  *e = largest + ee;
}

// Output k on its own by one lane, for operands short enough
// (kLaneExactPairs) that a lane's serial passes (unrolled; for nodes without
// a branch, so their loads are in flight together) cost less than the
// warp's passes and butterflies per output once a few outputs of a tile
// fall back: where the tails of the lower levels' nodes bend by more than a
// tile resolves, most of a tile does, and the warp then takes 32 of them at
// a time. The same scaling as ExactOutput, the pairs summed in ascending j:
// at most J + 2 <= 34 roundings, inside the tile's bound.
constexpr int64_t kLaneExactPairs = 32;
template <bool kNodes, typename T>
__device__ __forceinline__ void LaneExactOutput(const DeviceArgs<T>& args,
                                                const Operand& x,
                                                const Operand& y, int64_t k,
                                                bool in_log, double* m,
                                                int64_t* e) {
  const int64_t lo = k - (y.len - 1) > 0 ? k - (y.len - 1) : 0;
  const int64_t hi = k < x.len - 1 ? k : x.len - 1;
  int64_t largest = std::numeric_limits<int64_t>::min();
#pragma unroll 4
  for (int64_t j = lo; j <= hi; ++j) {
    const int64_t p = ExponentOf<kNodes>(args, x, j, in_log) +
                      ExponentOf<kNodes>(args, y, k - j, in_log);
    largest = p > largest ? p : largest;
  }
  if (largest < ext::kNoPair) {
    *m = 0.0;
    *e = ext::kZeroExponent;
    return;
  }
  double s = 0.0;
#pragma unroll 4
  for (int64_t j = lo; j <= hi; ++j) {
    double mx, my;
    int64_t ex, ey;
    LoadExtended<kNodes>(args, x, j, in_log, &mx, &ex);
    LoadExtended<kNodes>(args, y, k - j, in_log, &my, &ey);
    s = __dadd_rn(s, ext::Scale(__dmul_rn(mx, my), ex + ey - largest));
  }
  int ee = 0;
  *m = frexp(s, &ee);
  *e = largest + ee;
}

// The extended-range pair convolution (LaunchKind::kExtended). A warp
// takes a tile of TW = NG * R outputs [k0, k0 + TW): NG groups of G
// members, group g owning outputs k0 + g R + i (i < R), member m taking
// j = jc + m + G t at step t, as in the log kernel's shape. The CPU's tile
// scheme (enumerate_cpu_convolve.h): both operands' windows tilted by
// 2^(-sigma i), sigma the secant slope of the tile's first and last outputs'
// largest pair exponents in whole bits, or in 1/32 bits where whole bits
// would leave the outputs far below the tile's scale (enumerate_tilt.h: the
// fraction a table multiply, its factors held one per lane and read by
// shuffle), scaled so that their largest value is below 1, and staged as
// plain doubles; then a plain FMA loop (block sums of kBlock steps into a
// lane total, a butterfly over the members), and each output un-tilted. An
// output whose scaled sum is at least 2^-900 is within (kBlock + J / (kBlock
// G) + log2 G + 8) roundings of its exact value (J its pairs; six of them
// the fractional tilt's: two table entries and two multiplies in the
// product, one entry and one multiply in the un-tilt); any other is
// recomputed on its own by the warp (ExactOutput), or by a lane where the
// pairs are few and several outputs fall back (LaneExactOutput); both
// counted for EnumerateExtendedFallbacks. Nodes stay extended in scratch; the
// root writes log (or linear) values, one conversion.

// Shared memory of one warp of the extended kernel: the log kernel's x
// chunk, and the window of y for TW outputs.
template <int G>
constexpr int ExtendedWarpElems() {
  using S = LogShape<G>;
  constexpr int TW = S::NG * enumerate_internal::kExtendedOutputs;
  return S::XS + RoundUp(TW + G * S::S_MAX - 1, S::V);
}

template <typename T, int G>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarpSize)
    ExtendedKernel(const DeviceArgs<T> args) {
  using S = LogShape<G>;
  constexpr int NG = S::NG, R = enumerate_internal::kExtendedOutputs;
  constexpr int TW = NG * R;
  constexpr int kSteps = S::S_MAX;  // steps per staged chunk
  static_assert(S::XS >= 2 * TW, "the output staging reuses the x chunk");
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int member = lane / NG;
  const int group = lane % NG;
  double* const xs = WarpSharedDoubles(ExtendedWarpElems<G>());
  double* const ys = xs + S::XS;
  // Factor `lane` of the fractional tilt (enumerate_tilt.h); tilt_factor(c)
  // below is a shuffle, so every lane of the warp must call it together.
  const double lane_tilt_factor = ext::kTiltFactor[lane];
  auto tilt_factor = [&](int c) {
    return __shfl_sync(kFullMask, lane_tilt_factor, c);
  };

  ForEachWarpTask<kWarpsPerBlock>(
      args, threadIdx.x / kWarpSize, [&](const StepProblem& sp, int64_t tile) {
        const Geometry g = MakeGeometry<TW>(sp, tile);
        const Operand &xo = g.x, &yo = g.y;
        const bool in_log = (sp.bits & kInLog) != 0;
        const int64_t LY = yo.len;
        const int64_t k0 = g.k0, jlo = g.jlo, jhi = g.jhi;
        const int64_t kt = g.K - k0 < TW ? g.K - k0 : TW;

        // The tilt, sigma = a / 32 bits per index (enumerate_tilt.h): whole
        // bits unless that leaves a wide gap, as on the CPU; and each
        // window's largest exponent tilted by the tilt's whole part.
        const int64_t first = kt > 1
                                  ? LargestPair(args, xo, yo, k0, in_log, lane)
                                  : ext::kNoPair - 1;
        const int64_t last =
            kt > 1 ? LargestPair(args, xo, yo, k0 + kt - 1, in_log, lane)
                   : ext::kNoPair - 1;
        const bool has_slope = first >= ext::kNoPair && last >= ext::kNoPair;
        int64_t a =
            has_slope ? ext::tilt::WholeTiltNumerator(first, last, kt) : 0;
        const int64_t ilo = k0 - jhi > 0 ? k0 - jhi : 0;
        const int64_t ihi =
            k0 + kt - 1 - jlo < LY - 1 ? k0 + kt - 1 - jlo : LY - 1;
        int64_t ex = 0, ey = 0;
        auto window_tops = [&] {
          ex = WindowTop(args, xo, jlo, jhi, a, in_log, lane);
          ey = WindowTop(args, yo, ilo, ihi, a, in_log, lane);
        };
        window_tops();
        if (has_slope && ext::tilt::NeedsFractionalTilt(
                             ex, ey, first, last, k0, kt, a)) {  // warp-uniform
          a = ext::tilt::FractionalTiltNumerator(first, last, kt);
          window_tops();
        }
        // Staging: elements [first, first + count) of an operand (those in
        // [lo, hi], zero elsewhere) tilted by a idx / 32 and scaled by
        // 2^-top: the whole part exactly, the fraction (if the tilt has one:
        // warp-uniform) a table multiply; element first + i to store(i, v).
        // kStageBatch elements a lane at a time, their loads first: for a
        // node (o in scratch) at clamped indices, so without a branch and in
        // flight together (a level with few warps waits on their latency).
        // Warp-uniform trip counts: the fraction's factor is a shuffle.
        const bool fractional = ext::tilt::TiltFraction(a) != 0;
        auto stage = [&](const Operand& o, int count, int64_t first, int64_t lo,
                         int64_t hi, int64_t top, auto store) {
          constexpr int kStageBatch = 4;
          auto run = [&](auto node) {
            for (int i0 = 0; i0 < count; i0 += kStageBatch * kWarpSize) {
              double m[kStageBatch];
              int64_t e[kStageBatch];
#pragma unroll
              for (int u = 0; u < kStageBatch; ++u) {
                const int64_t idx = first + i0 + u * kWarpSize + lane;
                m[u] = 0.0;
                e[u] = 0;
                if constexpr (decltype(node)::value) {
                  const int64_t at = idx < 0       ? 0
                                     : idx < o.len ? idx
                                                   : o.len - 1;
                  LoadExtended<true>(args, o, at, in_log, &m[u], &e[u]);
                } else if (idx >= lo && idx <= hi) {
                  LoadExtended(args, o, idx, in_log, &m[u], &e[u]);
                }
              }
#pragma unroll
              for (int u = 0; u < kStageBatch; ++u) {
                const int i = i0 + u * kWarpSize + lane;
                const int64_t idx = first + i;
                const int64_t ai = a * idx;
                double v =
                    i < count && idx >= lo && idx <= hi
                        ? ext::Scale(m[u],
                                     e[u] - ext::tilt::TiltWhole(ai) - top)
                        : 0.0;
                if (fractional) {
                  v = __dmul_rn(v, tilt_factor(ext::tilt::TiltFraction(ai)));
                }
                if (i < count) store(i, v);
              }
            }
          };
          if (o.scratch) {
            run(std::true_type{});
          } else {
            run(std::false_type{});
          }
        };

        // The tilted, scaled windows as plain doubles in [0, 1), chunk by
        // chunk; a lane's R sums in block sums of at most kBlock steps.
        double total[R], block[R];
#pragma unroll
        for (int i = 0; i < R; ++i) total[i] = block[i] = 0.0;
        for (int64_t jc = jlo; jc <= jhi;) {
          const int64_t rest = (jhi - jc + G) / G;
          const int steps = rest >= kSteps ? kSteps : static_cast<int>(rest);
          const int span = G * steps;
          __syncwarp();
          stage(xo, span, jc, jlo, jhi, ex,
                [&](int i, double v) { xs[(i % G) * S::XROW + i / G] = v; });
          // y index of ys[0]: output k0 - pair jc + span - 1.
          stage(yo, TW + span - 1, k0 - jc - span + 1, ilo, ihi, ey,
                [&](int i, double v) { ys[i] = v; });
          __syncwarp();
          const double* const xp = xs + member * S::XROW;
          // Output g R + i, pair jc + member + G t: y at ys[g R + i - member -
          // G t + span - 1].
          const double* const yp = ys + (group * R - member + span - 1);
          for (int t0 = 0; t0 < steps; t0 += ext::kBlock) {
            const int t1 = steps - t0 < ext::kBlock ? steps : t0 + ext::kBlock;
            for (int t = t0; t < t1; ++t) {
              const double xv = xp[t];
#pragma unroll
              for (int i = 0; i < R; ++i) {
                block[i] = __fma_rn(xv, yp[i - G * t], block[i]);
              }
            }
#pragma unroll
            for (int i = 0; i < R; ++i) {
              total[i] = __dadd_rn(total[i], block[i]);
              block[i] = 0.0;
            }
          }
          jc += span;
        }
#pragma unroll
        for (int i = 0; i < R; ++i) {
          total[i] = WarpButterfly<ButterflyOrder::kLowToHigh, kWarpSize, NG>(
              total[i], WarpPlus<double>());
        }
        // The tile's outputs in shared memory: mantissas, then exponents;
        // un-tilted by 2^(a k / 32): the whole part into the exponent, the
        // fraction c as 2^(c / 32) = 2 * factor (32 - c) (every lane: the
        // factor is a shuffle).
        double* const out_m = xs;
        int64_t* const out_e = reinterpret_cast<int64_t*>(xs + TW);
        __syncwarp();
#pragma unroll
        for (int i = 0; i < R; ++i) {
          const double s = total[i];
          const int64_t ak = a * (k0 + group * R + i);
          const int c = ext::tilt::TiltFraction(ak);
          const double up = fractional
                                ? tilt_factor((ext::tilt::kTiltSteps - c) &
                                              (ext::tilt::kTiltSteps - 1))
                                : 1.0;
          int ee = 0;
          const double m = frexp(c == 0 ? s : __dmul_rn(s, 2.0 * up), &ee);
          if (member == 0) {
            out_m[group * R + i] = m;
            out_e[group * R + i] = s >= ext::kAccurate
                                       ? ex + ey + ext::tilt::TiltWhole(ak) + ee
                                       : ext::kNoPair;  // recomputed below
          }
        }
        __syncwarp();
        // Fallbacks: by lanes where the pairs are few (x the shorter) and at
        // least kLaneExactPairs / 8 outputs fall back (about where the
        // lanes' cost, J / 4 load latencies, meets the warp's, 2 and two
        // butterflies an output), else by the warp, one at a time.
        int fallbacks = 0;
        for (int t0 = 0; t0 < kt; t0 += kWarpSize) {
          const int t = t0 + lane;
          fallbacks += __popc(
              __ballot_sync(kFullMask, t < kt && out_e[t] == ext::kNoPair));
        }
        if (xo.len <= kLaneExactPairs &&
            fallbacks >= kLaneExactPairs / 8) {  // warp-uniform
          const bool nodes = xo.scratch && yo.scratch;
          for (int t = lane; t < kt; t += kWarpSize) {
            if (out_e[t] != ext::kNoPair) continue;
            if (nodes) {
              LaneExactOutput<true>(args, xo, yo, k0 + t, in_log, &out_m[t],
                                    &out_e[t]);
            } else {
              LaneExactOutput<false>(args, xo, yo, k0 + t, in_log, &out_m[t],
                                     &out_e[t]);
            }
            atomicAdd(&ext::fallback_count, 1ULL);
          }
          __syncwarp();
        }
        // (None left where the lanes took them.)
        for (int t = 0; t < kt; ++t) {
          if (out_e[t] != ext::kNoPair) continue;  // warp-uniform
          double m;
          int64_t e;
          ExactOutput(args, xo, yo, k0 + t, in_log, lane, &m, &e);
          __syncwarp();
          if (lane == 0) {
            out_m[t] = m;
            out_e[t] = e;
            atomicAdd(&ext::fallback_count, 1ULL);
          }
          __syncwarp();
        }
        // The write: extended to scratch, or converted once at the root.
        if ((sp.bits & kDstScratch) != 0) {
          double* const d = args.scratch + (sp.dst + 2 * k0);
          for (int i = lane; i < kt; i += kWarpSize) {
            d[2 * i] = out_m[i];
            d[2 * i + 1] = __longlong_as_double(out_e[i]);
          }
        } else {
          const bool out_log = (sp.bits & kOutLog) != 0;
          T* const d = args.out + (sp.dst + k0);
          bool bad = false;
          for (int i = lane; i < kt; i += kWarpSize) {
            const T r =
                static_cast<T>(out_log ? ext::ToLog(out_m[i], out_e[i])
                                       : ext::ToLinear(out_m[i], out_e[i]));
            d[i] = r;
            bad |= out_log ? !(r < std::numeric_limits<T>::infinity())
                           : !isfinite(r);
          }
          if (bad) Flag(args.status, sp.problem);
        }
        __syncwarp();
      });
}

// ---------------------------------------------------- copy kernel ----

// One-term problems: the term itself, converted between spaces as
// EnumerateCpu does (in double, one rounding to T). One warp per problem.
template <typename T>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarpSize)
    CopyKernel(const DeviceArgs<T> args) {
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warp = threadIdx.x / kWarpSize;
  for (int64_t task = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
       task < args.num_tasks;
       task += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    const StepProblem sp = args.steps[task];
    const bool in_log = (sp.bits & kInLog) != 0;
    const bool out_log = (sp.bits & kOutLog) != 0;
    bool bad = false;
    for (int64_t i = lane; i < sp.b_len; i += kWarpSize) {
      double v = static_cast<double>(__ldg(args.values + (sp.b + i)));
      if (in_log && !out_log) {
        v = exp(v);
      } else if (!in_log && out_log) {
        v = log(v);  // log(0) = -inf
      } else {
        v = v + 0.0;  // -0 becomes +0, as on the CPU
      }
      const T r = static_cast<T>(v);
      args.out[sp.dst + i] = r;
      bad |= out_log ? !(r < std::numeric_limits<T>::infinity()) : !isfinite(r);
    }
    if (bad) Flag(args.status, sp.problem);
  }
}

// ----------------------------------------------------- FFT kernels ----

struct FftArgs {
  const FftSignal* signals;
  const FftProblem* problems;
  int64_t num_signals;
  int64_t num_problems;
  int64_t n;  // transform length (a power of two)
  int log2n;
  double* real;      // num_signals * n
  double2* spectra;  // num_signals * (n / 2 + 1)
  double2* product;  // num_problems * (n / 2 + 1)
};

// Zero-padded signals in double.
template <typename T>
__global__ void FftPackKernel(const FftArgs f, const T* values) {
  const int64_t total = f.num_signals * f.n;
  for (int64_t idx =
           static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < total; idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t s = idx >> f.log2n;
    const int64_t i = idx & (f.n - 1);
    const FftSignal sig = f.signals[s];
    f.real[idx] = i < sig.length
                      ? static_cast<double>(__ldg(values + (sig.values + i)))
                      : 0.0;
  }
}

// The product of each problem's spectra, in term order, scaled by 1 / n
// (cuFFT's inverse is unnormalised).
__global__ void FftMultiplyKernel(const FftArgs f) {
  const int64_t bins = f.n / 2 + 1;
  const int64_t total = f.num_problems * bins;
  const double scale = 1.0 / static_cast<double>(f.n);
  for (int64_t idx =
           static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < total; idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t q = idx / bins;
    const int64_t b = idx - q * bins;
    const FftProblem p = f.problems[q];
    double2 z = f.spectra[(p.sig_begin) * bins + b];
    for (int t = 1; t < p.num_terms; ++t) {
      const double2 w = f.spectra[(p.sig_begin + t) * bins + b];
      z = make_double2(z.x * w.x - z.y * w.y, z.x * w.y + z.y * w.x);
    }
    f.product[idx] = make_double2(z.x * scale, z.y * scale);
  }
}

// The inverse transforms' first out_length values, negatives (rounding
// noise around zero) clamped to 0.
template <typename T>
__global__ void FftUnpackKernel(const FftArgs f, T* out, uint32_t* status) {
  const int64_t total = f.num_problems * f.n;
  for (int64_t idx =
           static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < total; idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t q = idx >> f.log2n;
    const int64_t i = idx & (f.n - 1);
    const FftProblem p = f.problems[q];
    if (i >= p.out_length) continue;
    const double v = f.real[idx];
    const T r = static_cast<T>(v > 0.0 ? v : 0.0);
    out[p.dst + i] = r;
    if (!isfinite(r)) Flag(status, p.problem);
  }
}

// --------------------------------------------------- kernel tables ----

template <typename T>
using KernelFn = void (*)(DeviceArgs<T>);

struct KernelEntry {
  const void* fn;
  int smem_bytes;
  // Tasks a block takes at a time: a warp's (kWarpsPerBlock times the tasks
  // a warp takes), or one for split tiles.
  int tasks_per_block;
};

template <typename T, int CONFIG, bool kF32>
KernelEntry LinearEntry() {
  if constexpr ((kF32 && !std::is_same_v<T, float>) ||
                kDirectConfigDefs[CONFIG].tensor > 0) {
    // (Tensor configurations: enumerate_tensor.cu's kernel.)
    return {nullptr, 0, kWarpsPerBlock};
  } else {
    constexpr DirectConfigDef D = kDirectConfigDefs[CONFIG];
    using S = ShapeOf<CONFIG, kF32>;
    const void* fn;
    if constexpr (kF32 && D.min_blocks > 0) {
      fn = reinterpret_cast<const void*>(&CappedSplitKernel<T, CONFIG, kF32>);
    } else {
      fn = reinterpret_cast<const void*>(&LinearKernel<T, CONFIG, kF32>);
    }
    return {fn,
            static_cast<int>(kWarpsPerBlock * S::kWarpElems *
                             sizeof(typename S::C)),
            D.split > 1 ? 1 : kWarpsPerBlock * D.sw * D.q};
  }
}

template <typename T, bool kF32, int... I>
const KernelEntry* LinearTable(std::integer_sequence<int, I...>) {
  static const KernelEntry table[] = {LinearEntry<T, I, kF32>()...};
  return table;
}

template <typename T>
KernelEntry LinearKernelFor(int config, bool f32) {
  using Seq = std::make_integer_sequence<int, kNumDirectConfigs>;
  return f32 ? LinearTable<T, true>(Seq{})[config]
             : LinearTable<T, false>(Seq{})[config];
}

// A log-path kernel's entry: one task a warp, `warp_elems` doubles of
// shared memory a warp.
KernelEntry DoublesEntry(const void* fn, int warp_elems) {
  return {fn, static_cast<int>(kWarpsPerBlock * warp_elems * sizeof(double)),
          kWarpsPerBlock};
}

template <typename T>
KernelEntry LogKernelFor(int config) {
  static const KernelEntry table[] = {
      DoublesEntry(reinterpret_cast<const void*>(&LogKernel<T, kLogGroups[0]>),
                   LogShape<kLogGroups[0]>::kWarpElems),
      DoublesEntry(reinterpret_cast<const void*>(&LogKernel<T, kLogGroups[1]>),
                   LogShape<kLogGroups[1]>::kWarpElems),
  };
  return table[config];
}

template <typename T>
KernelEntry ExtendedKernelFor(int config) {
  static const KernelEntry table[] = {
      DoublesEntry(
          reinterpret_cast<const void*>(&ExtendedKernel<T, kLogGroups[0]>),
          ExtendedWarpElems<kLogGroups[0]>()),
      DoublesEntry(
          reinterpret_cast<const void*>(&ExtendedKernel<T, kLogGroups[1]>),
          ExtendedWarpElems<kLogGroups[1]>()),
  };
  return table[config];
}

// Launches `entry` over the launch's tasks, tasks_per_block a block.
template <typename T>
absl::Status LaunchEntry(const KernelEntry& entry, const DeviceArgs<T>& args,
                         cudaStream_t stream) {
  if (entry.fn == nullptr) {
    return absl::InternalError("enumerate: no kernel for this configuration");
  }
  if (args.num_tasks == 0) return absl::OkStatus();
  SAMPLER_RETURN_IF_ERROR(AllowDynamicSharedMemory(
      entry.fn, static_cast<size_t>(entry.smem_bytes)));
  const int64_t per_block = entry.tasks_per_block;
  const int64_t blocks64 = (args.num_tasks + per_block - 1) / per_block;
  const unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>(blocks64, kMaxBlocks));
  void* params[] = {const_cast<DeviceArgs<T>*>(&args)};
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaLaunchKernel(entry.fn, dim3(blocks), dim3(kWarpsPerBlock * kWarpSize),
                       params, static_cast<size_t>(entry.smem_bytes), stream));
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

}  // namespace

// ------------------------------------------------------ launcher ----

template <typename T>
absl::Status LaunchEnumerate(const EnumerateBatch<T>& batch,
                             cudaStream_t stream, EnumerateFftPlans* fft) {
  if (batch.launches == nullptr) {
    return absl::FailedPreconditionError("enumerate batch not finished");
  }
  if (batch.scratch_needed > 0 &&
      (batch.scratch == nullptr ||
       batch.scratch_bytes < batch.scratch_needed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("enumerate: the batch needs ", batch.scratch_needed,
                     " bytes of scratch, got ", batch.scratch_bytes));
  }
  if (batch.status != nullptr && batch.num_problems > 0 && batch.zero_status) {
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
        batch.status, 0, sizeof(uint32_t) * batch.num_problems, stream));
  }
  const auto* arena = static_cast<const unsigned char*>(batch.arena);
  const T* values = reinterpret_cast<const T*>(arena + batch.values_at);
  const auto* steps =
      reinterpret_cast<const StepProblem*>(arena + batch.steps_at);
  const auto* tasks = reinterpret_cast<const Task*>(arena + batch.tasks_at);
  double* scratch = static_cast<double*>(batch.scratch);
  for (const Launch& l : *batch.launches) {
    DeviceArgs<T> args{steps + l.sp_begin,
                       l.task_begin < 0 ? nullptr : tasks + l.task_begin,
                       l.task_count,
                       values,
                       scratch,
                       batch.out,
                       batch.status};
    switch (l.kind) {
      case LaunchKind::kCopy:
        if (absl::Status s =
                LaunchEntry<T>({reinterpret_cast<const void*>(&CopyKernel<T>),
                                0, kWarpsPerBlock},
                               args, stream);
            !s.ok()) {
          return s;
        }
        break;
      case LaunchKind::kLinear:
        if (kDirectConfigDefs[l.config].tensor > 0) {
          SAMPLER_RETURN_IF_ERROR(enumerate_internal::LaunchTensorKernel<T>(
              l.config, args, stream));
          break;
        }
        if (absl::Status s = LaunchEntry<T>(LinearKernelFor<T>(l.config, l.f32),
                                            args, stream);
            !s.ok()) {
          return s;
        }
        break;
      case LaunchKind::kLog:
        if (absl::Status s =
                LaunchEntry<T>(LogKernelFor<T>(l.config), args, stream);
            !s.ok()) {
          return s;
        }
        break;
      case LaunchKind::kExtended:
        SAMPLER_RETURN_IF_ERROR(
            LaunchEntry<T>(ExtendedKernelFor<T>(l.config), args, stream));
        break;
      case LaunchKind::kPair:
        SAMPLER_RETURN_IF_ERROR(enumerate_internal::LaunchPairKernel<T>(
            l.config, args.steps, args.num_tasks, values, batch.out,
            batch.status, stream));
        break;
      case LaunchKind::kFft: {
        if (fft == nullptr) {
          return absl::FailedPreconditionError(
              "enumerate: the batch has FFT problems but no EnumerateFftPlans");
        }
        FftArgs f;
        f.signals =
            reinterpret_cast<const FftSignal*>(arena + batch.fft_signals_at) +
            l.fft_signal_begin;
        f.problems =
            reinterpret_cast<const FftProblem*>(arena + batch.fft_problems_at) +
            l.fft_problem_begin;
        f.num_signals = l.fft_signals;
        f.num_problems = l.fft_problems;
        f.n = l.fft_length;
        f.log2n = Log2(l.fft_length);
        f.real = scratch + l.fft_real;
        f.spectra = reinterpret_cast<double2*>(scratch + l.fft_spectra);
        f.product = reinterpret_cast<double2*>(scratch + l.fft_product);
        void* work =
            static_cast<unsigned char*>(batch.scratch) + batch.fft_work_at;
        constexpr int kThreads = 256;
        auto blocks = [](int64_t n) {
          return static_cast<unsigned>(
              std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
        };
        FftPackKernel<T>
            <<<blocks(f.num_signals * f.n), kThreads, 0, stream>>>(f, values);
        SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
        if (absl::Status s = fft->Forward(f.n, f.num_signals, f.real, f.spectra,
                                          work, stream);
            !s.ok()) {
          return s;
        }
        FftMultiplyKernel<<<blocks(f.num_problems * (f.n / 2 + 1)), kThreads, 0,
                            stream>>>(f);
        SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
        if (absl::Status s = fft->Inverse(f.n, f.num_problems, f.product,
                                          f.real, work, stream);
            !s.ok()) {
          return s;
        }
        FftUnpackKernel<T>
            <<<blocks(f.num_problems * f.n), kThreads, 0, stream>>>(
                f, batch.out, batch.status);
        SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
        break;
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> EnumerateExtendedFallbacks() {
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  unsigned long long count = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaMemcpyFromSymbol(&count, ext::fallback_count, sizeof(count)));
  return static_cast<uint64_t>(count);
}

absl::Status ResetEnumerateExtendedFallbacks() {
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  const unsigned long long zero = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaMemcpyToSymbol(ext::fallback_count, &zero, sizeof(zero)));
  return absl::OkStatus();
}

template absl::Status LaunchEnumerate<float>(const EnumerateBatch<float>&,
                                             cudaStream_t, EnumerateFftPlans*);
template absl::Status LaunchEnumerate<double>(const EnumerateBatch<double>&,
                                              cudaStream_t, EnumerateFftPlans*);

}  // namespace sampler::kernels::cuda
