// The tensor-core kernel of the direct path (enumerate_tensor.h): r_k =
// sum_j x_j y_{k-j} (x the shorter operand) as products of small Toeplitz
// matrices on the FP64 tensor cores, mma.sync.aligned.m8n8k4 .f64 (a warp
// instruction of 256 multiply-adds, D = A B + C with A 8 x 4, B 4 x 8, C 8 x
// 8), for float and double problems alike: a product of two floats is exact
// in double, so float problems convert their values to double when they are
// staged, accumulate in double and are rounded to float once, at the write.
//
// The decomposition. A warp takes a task, a tile of TW = 64 T consecutive
// outputs [k0, k0 + TW) of one problem, as T sub-tiles of 8 x 8 outputs:
// output (t, i, n) (t < T, row i < 8, column n < 8) is
//   k = k0 + 8 T i + 8 t + n,
// the rows of the T sub-tiles interleaved. Step s of the tile's j range has
// the base c = c0 + 4 s; at step s the products of output (t, i, n) are
// x_{c + n - kk} y_{k0 + 8 T i + 8 t + kk - c}, kk < 4, so that
//   D_t += A_{t,s} B_s,  B_s[kk][n] = x_{c + n - kk} (a Toeplitz block of x),
//                        A_{t,s}[i][kk] = y_{k0 + 8 T i + 8 t + kk - c}.
// Over the steps, (s, kk) meets every j = c + n - kk of an output exactly
// once, so the steps from c0 = jlo - 4 to the first base >= jhi cover every
// pair of every output of the tile (the tile's j range [jlo, jhi] as in the
// warp-cooperative kernel); pairs outside the operands read zeros (the
// staging pads them), so every lane runs the same steps with no bounds test.
// Executed products are about (TW + 8) / LX more than the useful ones (the
// tile's rectangle: its triangles and a step's overhang), as in the
// warp-cooperative kernel's tiles.
//
// Fragments (PTX's m8n8k4 .f64 layouts): lane l holds A[l / 4][l % 4],
// B[l % 4][l / 4] and C[l / 4][2 (l % 4) + c], c < 2. B_s is one value of x a
// lane, read from shared memory by index (4 s + 3 + l / 4 - l % 4 of the
// staged chunk: no Toeplitz matrix is materialised). A_{t,s} = A_{0,s-2t}
// (the interleaved rows make sub-tile t's y window that of sub-tile 0 two
// steps earlier), so a lane loads one value of y a step and keeps the last
// 2T - 1 in registers, rotating through a fully unrolled loop (slot s mod
// (2T - 1), known at compile time): a step is two shared loads and T mma's.
// Hopper's m16n8k8 .f64 (configurations with tensor_k = 8) does two steps
// (s, s + 1) of two sub-tiles (t, t + 1) in one instruction: its A rows 0-7
// and 8-15 are the two sub-tiles, its k 0-3 and 4-7 the two steps, so A is
// a_{s-2t}, a_{s-2t-2}, a_{s+1-2t}, a_{s-1-2t} from the same ring (of 2T
// values) and B the two steps' x values; the same products, added in the
// unit's order, half the mma instructions.
// Groups (session 11, tensor_group = G): the T sub-tiles form T / G groups
// of G, group g the 64 G consecutive outputs from k0 + 64 G g, its rows
// interleaved as above with G for T; each group keeps its own ring (loaded
// from its own place in the y window) and runs only the steps of its own j
// range, as the contiguous sub-tiles do (steps outside it add exact zeros:
// skipping them changes no bit). At m = 256, k8 t4 in two groups of two
// needs 100 m16n8k8 a problem instead of 144, but measured (session 11) it
// issues all 144: the compiler predicates the skipped mma's of the
// unrolled loop instead of branching around them, so the groups cost
// their extra shared loads and save nothing (g2 ran 6% below k8 t4).
// Mirrored tasks (tensor_mirror): a warp runs tile t and then tile tiles - 1
// - t of the same problem, about equal work whatever t, so that the busiest
// sub-partitions of a batch of few problems do no more than the mean.
// Prefetch (tensor_prefetch): a resident grid, each warp a list of tasks;
// as it starts a tile it prefetches the operands of its next one into L2.
// None of these changes what a tile sums or in which order.
// y is staged with 4 doubles of padding after every 8 G values, so that the
// 32 lanes' loads (8T apart by row, 4 apart by step) fall in distinct banks:
// a warp's A load is two wavefronts, its B load (11 distinct consecutive
// values) one or two.
//
// Accuracy: every product is exact in the mma (x y of two floats is exact in
// double; for double values the unit adds the exact products with at most
// one rounding per addition, whatever order it adds in). With non-negative
// values an output's block sum over F steps (C alternating chains of F / C
// mma's: C = 2 for T <= 2, 1 for T = 4; F = 8, 12, 14 for T = 1, 2, 4, and
// 8 with m16n8k8) is within 4 F / C roundings of its exact value (one an
// addition of a product, 4 F / C products), the chains add one rounding and
// the block joins the output's total with one more: a relative error of at most
// (4 F / C + 2 + B) u per output (u = 2^-53, B the output's blocks, about S / F
// + one a chunk for S steps: at m = 16,384, S = 4,100, below 4e-14), then the
// rounding to T (float: half an ulp, 6e-8, far inside the 1e-6 that the float
// path guarantees). Double problems' tree nodes go through it as through the
// warp-cooperative kernel's double path.
//
// Determinism: an output's sum has a fixed order: its chunks in order, the
// steps of a chunk in order, each mma's four products added by the unit in
// an order fixed by the chip (the same bits for the same operands on the same
// GPU model), the chains and blocks in a fixed order; a tile's steps and
// chunks are functions of the problem's sizes and the tile's index only, so
// a problem's bits do not depend on its batch.
//
// Predicted speed (H100, before measuring; bench/results/enumerate-kernel.md
// has the measurements): the FP64 tensor peak, 67 TFLOP/s, is one m8n8k4 mma
// every 2 cycles an SM (8 a sub-partition); a step of T = 2 is 2 mma's, two
// shared loads (3-4 wavefronts at one a cycle) and three other
// instructions, so the mma's, not the issue slots or the shared memory,
// bound the inner loop. m = 256: tiles of 128 outputs execute 1.6x the useful
// products (4 tiles of 36, 68, 68 and 36 steps); at half the mma peak
// (staging, the chunk's tail and occupancy taking the rest) 0.25 mma / cycle
// / SM x 256 x 132 SMs x 1.75 GHz / (1.6 x 65,536) = 141 Mpairs/s (the direct
// kernel: 84-89). m = 1024: 1.13x waste, about 200 Mpairs/s x (65,536 /
// 1,048,576) / 1.13 x 1.6 = 12 Mpairs/s (direct: 7.3); float and double the
// same (the staging reads float or double, the rest is double). Measured
// (session 10, H100): well below that, the mma pipe 23-38% busy; the
// m16n8k8 tiles of 256 outputs (fewest instructions and shared loads a
// product) the fastest: m = 256 83-86, m = 1024 7.3-7.9 Mpairs/s. Session
// 11: with the prefetch (k8 t4p) float m = 256 93.8, m = 1024 8.24; kAuto
// takes k8 t4 for both types' shorter operands of 65-192, k8 t4p for float
// 193-1536, k8 t4 for double 193-4096.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "enumerate_direct.cuh"
#include "enumerate_tensor.h"
#include "sampler/kernels/cuda/enumerate_plan.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda::enumerate_internal {
namespace {

constexpr int kWarpsPerBlock = 4;  // warps are independent
constexpr int kBlockThreads = kWarpsPerBlock * kWarpSize;
constexpr int kMaxBlocks = 1 << 20;

constexpr int Gcd(int a, int b) { return b == 0 ? a : Gcd(b, a % b); }
// a / b rounded down, for a of either sign (b > 0).
constexpr int FloorDiv(int a, int b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
// a mod b in [0, b).
constexpr int PosMod(int a, int b) { return ((a % b) + b) % b; }
// The largest divisor of n that is at most cap.
constexpr int DivisorAtMost(int n, int cap) {
  int d = cap < n ? cap : n;
  while (n % d != 0) --d;
  return d;
}

// Compile-time shape of one tensor configuration: kTiles sub-tiles of 8 x 8
// outputs, x chunks of about kChunk values (4 a step), mma's of kK = 4
// (m8n8k4: one step of one sub-tile) or 8 (m16n8k8: two steps of two
// sub-tiles) products an output.
// kContiguous: sub-tile t is the 64 consecutive outputs k0 + 64 t + 8 i + n
// instead of the interleaved rows k0 + 8 T i + 8 t + n, so that each
// sub-tile runs only the steps of its own j range (the tile's rectangle
// waste of T = 1), at the price of a longer ring (sub-tile t's A is a_{s -
// 16 t}).
// kGroupTiles (interleaved sub-tiles only; 0 for all T): the sub-tiles
// form groups of G, group g the 64 G consecutive outputs k0 + 64 G g + ...,
// its rows interleaved (k0 + 64 G g + 8 G i + 8 u + n for its sub-tile u),
// so that each group runs only its own j range's steps (as the contiguous
// sub-tiles do) while its sub-tiles share one short ring: each group keeps
// its own ring of A values, loaded from its own place in the y window.
// kChainsCfg: the block sum's chains (0: the default below). kMirror: a
// task is the tile and its mirror image (RunTask).
template <int kTiles, int kChunk, int kMmaK, bool kContiguous,
          int kGroupTiles = 0, int kChainsCfg = 0, bool kMirror = false,
          bool kPrefetchNext = false, int kPassCount = 1>
struct TensorShape {
  static constexpr int T = kTiles;
  static constexpr int kK = kMmaK;
  static constexpr bool kContig = kContiguous;
  static constexpr bool kMirrored = kMirror;
  static constexpr bool kPrefetch = kPrefetchNext;
  // Passes over a staged chunk, each 64 T outputs with the same registers.
  static constexpr int P = kPassCount;
  static_assert(P == 1 || (!kContig && kGroupTiles > 0), "passes: groups");
  static_assert(kK == 4 || (kK == 8 && T % 2 == 0), "m16n8k8: sub-tile pairs");
  static constexpr int TW = 64 * T * P;  // outputs a tile
  static constexpr int kPassOutputs = 64 * T;
  // Sub-tiles a group (interleaved rows), groups (each its own ring).
  static constexpr int G = kContig ? 1 : kGroupTiles > 0 ? kGroupTiles : T;
  static constexpr int NG = kContig ? 1 : T / G;
  static_assert(kContig || (T % G == 0 && (kK == 4 || G % 2 == 0)),
                "whole groups; m16n8k8 pairs inside a group");
  // Groups that run only their own steps (ActiveSteps): the contiguous
  // sub-tiles, and groups of interleaved ones.
  static constexpr bool kSkips = kContig || NG > 1;
  // y values between a sub-tile's rows (8 G interleaved, 8 contiguous), the
  // offset of sub-tile t + 1's outputs from sub-tile t's in its group (8 or
  // 64), and the steps between their A fragments (sub-tile u's A at step s
  // is a_{s - kSubSteps u} of its group's ring; contiguous: one ring).
  static constexpr int kRowValues = kContig ? 8 : 8 * G;
  static constexpr int kSubOffset = kContig ? 64 : 8;
  static constexpr int kSubSteps = kSubOffset / 4;
  // Outputs a group covers (the contiguous sub-tiles: one each).
  static constexpr int kGroupOutputs = kContig ? 64 : 64 * G;
  // A values kept a ring: a_s .. a_{s - kSubSteps (G - 1)} (contiguous:
  // T - 1), and a_{s+1} for m16n8k8's second step.
  static constexpr int kPreroll = kSubSteps * ((kContig ? T : G) - 1);
  static constexpr int W = kPreroll + kK / 4;
  // Group g's A window in the padded y window: its outputs are 64 G g
  // further, 8 g whole rows (each padded by 4).
  static constexpr int GroupY(int g) {
    return kGroupOutputs * g + 4 * (kGroupOutputs * g / kRowValues);
  }
  // Sub-tile t's group and place in it.
  static constexpr int GroupOf(int t) { return kContig ? 0 : t / G; }
  static constexpr int SubOf(int t) { return kContig ? t : t % G; }
  // The first output of the group of outputs sub-tile t runs the steps of
  // (relative to the tile's), and sub-tile t's output (i, n).
  static constexpr int RangeOf(int t) {
    return kContig ? 64 * t : kGroupOutputs * (t / G);
  }
  static constexpr int OutputOf(int t, int i, int n) {
    return kContig ? 64 * t + 8 * i + n
                   : kGroupOutputs * (t / G) + kRowValues * i +
                         kSubOffset * (t % G) + n;
  }
  // Steps a row of y covers (kRowValues values, then the 4 of padding): a
  // chunk's steps are a multiple of it, so that the padding's place is a
  // compile-time offset of the step.
  static constexpr int kRow = kRowValues / 4;
  static constexpr int U0 = W / Gcd(W, kRow) * kRow;
  static constexpr int kMinUnroll = 8;
  static constexpr int U = U0 * ((kMinUnroll + U0 - 1) / U0);  // unrolled
  // Steps of a block sum (a divisor of U, even for m16n8k8); chains of the
  // block sum.
  static constexpr int F = DivisorAtMost(U, kContig ? 18 : 14);
  static constexpr int kChains = kChainsCfg > 0 ? kChainsCfg : (T >= 4 ? 1 : 2);
  static constexpr int NS = kChunk / 4 / U * U > 0 ? kChunk / 4 / U* U : U;
  // The staged chunk: x values [c0 - 3, c0 + 4 NS + 4), y's window of TW +
  // 4 NS - 8 values, padded.
  static constexpr int kYValues = TW + 4 * NS - 8;
  static constexpr int Pad(int e) { return e + 4 * (e / kRowValues); }
  static constexpr int kXElems = (4 * NS + 7 + 1) / 2 * 2;
  static constexpr int kYElems = (Pad(kYValues - 1) + 1 + 1) / 2 * 2;
  // Passes: their outputs staged apart from the chunk, which the next pass
  // reads again.
  static constexpr int kOutElems = P > 1 ? kPassOutputs : 0;
  static constexpr int kWarpElems = kXElems + kYElems + kOutElems;
  static_assert(U % W == 0 && U % kRow == 0 && NS % U == 0, "whole blocks");
  static_assert(kK == 4 || F % 2 == 0, "m16n8k8 blocks of whole step pairs");
  static_assert(P > 1 || kWarpElems >= TW,
                "the output staging reuses the chunk");
  static_assert(!kMirror || !kContig, "mirrored tasks: interleaved tiles");
  // Session 11's shapes hold float loads in flight as floats while staging
  // (ForOperandRange's kLate: fewer registers at the kernel's peak), and
  // are held to 4 blocks an SM for T = 4 (128 registers: a 24-64 byte
  // spill for two chains and for passes), 5 for T = 2.
  static constexpr bool kSession11 =
      kGroupTiles > 0 || kMirror || kPrefetch || P > 1;
  static constexpr bool kLateConvert = kSession11;
  // Blocks an SM the registers must allow (__launch_bounds__), as many as
  // the shared memory allows where that costs no spill (ptxas -v): T = 1 9
  // (56 registers), T = 2 7 (72); no cap for m16n8k8's T = 2 (96: it spills
  // at 80), T = 4 (120-128; m16n8k8 spills at 5 blocks) and the contiguous
  // sub-tiles' rings (115 and 144; 96 spills).
  // Loads a lane has in flight while staging a chunk: a tile's chunk is
  // 400-700 values (13-22 a lane), so 8 make its x and y three round trips
  // to memory instead of six, and 16 (T = 4, within its registers) two (the
  // mid-session run: 13 G warp-steps/s whatever the tile, the mma pipe 23-38%
  // busy: the tiles wait on their one or two chunks).
  static constexpr int kStageInFlight = T == 4 ? 16 : 8;
  static constexpr int kMinBlocks = T == 1                          ? 9
                                    : T == 2 && kK == 4 && !kContig ? 7
                                    : kSession11 && T == 2          ? 5
                                    : kSession11                    ? 4
                                                                    : 1;
};

// The offset of step tt's y value (relative to a block's base, below) in the
// padded window: Pad(4 (Q - 1 - tt)) = 4 Q + 4 Q / kRow + YOffset(tt) for Q
// a multiple of kRow.
template <class S>
constexpr int YOffset(int tt) {
  return -4 - 4 * tt + 4 * FloorDiv(-1 - tt, S::kRow);
}

// D += A B for one lane's fragments of m8n8k4 .f64.
__device__ __forceinline__ void Mma(double& d0, double& d1, double a,
                                    double b) {
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, "
      "{%0, %1};\n"
      : "+d"(d0), "+d"(d1)
      : "d"(a), "d"(b));
}

// D += A B for one lane's fragments of m16n8k8 .f64: rows 0-7 (d0, d1; a0
// and a2, k 0-3 and 4-7) and rows 8-15 (d2, d3; a1 and a3), B's k 0-3 in
// b0 and 4-7 in b1.
__device__ __forceinline__ void Mma16(double& d0, double& d1, double& d2,
                                      double& d3, double a0, double a1,
                                      double a2, double a3, double b0,
                                      double b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3)
      : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(b0), "d"(b1));
}

// One lane's accumulators: per sub-tile, kChains block sums of 2 outputs and
// the outputs' totals.
template <class S>
struct TensorAccumulators {
  double block[S::T][S::kChains][2];
  double total[S::T][2];
  __device__ __forceinline__ void Clear() {
#pragma unroll
    for (int t = 0; t < S::T; ++t) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        total[t][c] = 0.0;
#pragma unroll
        for (int h = 0; h < S::kChains; ++h) block[t][h][c] = 0.0;
      }
    }
  }
  // The block sums into the totals, in chain order.
  __device__ __forceinline__ void Flush() {
#pragma unroll
    for (int t = 0; t < S::T; ++t) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        double b = block[t][0][c];
#pragma unroll
        for (int h = 1; h < S::kChains; ++h) b += block[t][h][c];
        total[t][c] += b;
#pragma unroll
        for (int h = 0; h < S::kChains; ++h) block[t][h][c] = 0.0;
      }
    }
  }
};

// The steps of one staged chunk (`steps`, a multiple of kRow).
// Contiguous sub-tiles: the steps of sub-tile t (m16n8k8: of the pair t, t
// + 1, t even), relative to the chunk's first step: lo[t] .. lo[t] +
// span[t], none where span[t] < 0. Steps outside them add exact zeros (their
// pairs lie outside the operands), so skipping them changes no bit.
template <class S>
struct ActiveSteps {
  int lo[S::T];
  int span[S::T];
  // Whether sub-tile t (or the pair t, t + 1) has work at step s (or s + 1).
  __device__ __forceinline__ bool Any(int t, int s) const {
    if constexpr (!S::kSkips) {
      return true;
    } else {
      constexpr int kLast = S::kK / 4 - 1;  // the mma's last step past s
      return span[t] >= 0 && static_cast<unsigned>(s + kLast - lo[t]) <=
                                 static_cast<unsigned>(span[t] + kLast);
    }
  }
};

template <class S>
__device__ __forceinline__ void ComputeChunk(TensorAccumulators<S>& acc,
                                             const double* xs, const double* ys,
                                             int steps, int lane,
                                             const ActiveSteps<S>& active) {
  constexpr int T = S::T, W = S::W, U = S::U, F = S::F, kRow = S::kRow;
  constexpr int NG = S::NG;
  const int row = lane >> 2, kk = lane & 3;
  // B_s: x at 4 s + 3 + n - kk, n = lane / 4.
  const double* const xb = xs + 3 + row - kk;
  // A: a_s is y at Pad(8 G row + kk + 4 (steps - 1 - s)) = (8 G + 4) row +
  // kk + Pad(4 (steps - 1 - s)) (the row's padding, and the step's: 4 (...)
  // is a multiple of 4 and kk < 4); group g's from GroupY(g) on.
  const double* const ylane = ys + (S::kRowValues + 4) * row + kk;
  double ring[NG][W];
  {
    // a_{-1} .. a_{-kPreroll}: sub-tile t's A at the chunk's first steps.
    const double* const ya = ylane + 4 * steps + 4 * (steps / kRow);
#pragma unroll
    for (int g = 0; g < NG; ++g) {
#pragma unroll
      for (int r = 1; r <= S::kPreroll; ++r) {
        ring[g][PosMod(-r, W)] = ya[S::GroupY(g) + YOffset<S>(-r)];
      }
    }
  }
  constexpr int kChains = S::kChains;
  for (int tb = 0; tb < steps; tb += U) {
    const int q = steps - tb;  // a multiple of kRow
    const double* const ya = ylane + 4 * q + 4 * (q / kRow);
    const double* const xp = xb + 4 * tb;
#pragma unroll
    for (int tt = 0; tt < U; tt += S::kK / 4) {
      if (tt % kRow == 0 && tt > 0 && tt >= q) break;
      if constexpr (S::kK == 4) {
#pragma unroll
        for (int g = 0; g < NG; ++g) {
          ring[g][tt % W] = ya[S::GroupY(g) + YOffset<S>(tt)];
        }
        const double b = xp[4 * tt];
#pragma unroll
        for (int t = 0; t < T; ++t) {
          if (!active.Any(t, tb + tt)) continue;  // warp-uniform
          double(&d)[2] = acc.block[t][tt % kChains];
          Mma(d[0], d[1],
              ring[S::GroupOf(t)][PosMod(tt - S::kSubSteps * S::SubOf(t), W)],
              b);
        }
      } else {
        // Steps tt and tt + 1 of sub-tiles t and t + 1 in one m16n8k8:
        // sub-tile t's A at step s is a_{s - kSubSteps t} (of its group).
#pragma unroll
        for (int g = 0; g < NG; ++g) {
          ring[g][tt % W] = ya[S::GroupY(g) + YOffset<S>(tt)];
          ring[g][(tt + 1) % W] = ya[S::GroupY(g) + YOffset<S>(tt + 1)];
        }
        const double b0 = xp[4 * tt];
        const double b1 = xp[4 * tt + 4];
        constexpr int kS = S::kSubSteps;
#pragma unroll
        for (int t = 0; t < T; t += 2) {
          if (!active.Any(t, tb + tt)) continue;  // warp-uniform
          double(&d)[2] = acc.block[t][tt / 2 % kChains];
          double(&e)[2] = acc.block[t + 1][tt / 2 % kChains];
          const double* const rg = ring[S::GroupOf(t)];
          const int u = S::SubOf(t);
          Mma16(d[0], d[1], e[0], e[1], rg[PosMod(tt - kS * u, W)],
                rg[PosMod(tt - kS * (u + 1), W)],
                rg[PosMod(tt + 1 - kS * u, W)],
                rg[PosMod(tt + 1 - kS * (u + 1), W)], b0, b1);
        }
      }
      if ((tt + S::kK / 4) % F == 0) acc.Flush();
    }
  }
  acc.Flush();  // the last block's partial sums (zeros add nothing)
}

// One task: its tile's chunks staged and computed, then the write; with
// passes (P > 1), pass p computes and writes the tile's outputs [64 T p,
// 64 T (p + 1)) over the same chunks (the same steps as the whole tile's,
// those of no group of the pass skipped), a chunk staged once where the
// tile has only one.
template <class S, typename T>
__device__ __forceinline__ void RunTile(const DeviceArgs<T>& args,
                                        const StepProblem& sp, int64_t tile,
                                        int lane, double* smem) {
  const Geometry g = MakeGeometry<S::TW>(sp, tile);
  double* const xs = smem;
  double* const ys = smem + S::kXElems;
  int staged_at = -1;  // passes: the first step of the chunk in xs, ys
#pragma unroll 1
  for (int pass = 0; pass < S::P; ++pass) {
    const int64_t kp = g.k0 + static_cast<int64_t>(S::kPassOutputs) * pass;
    if (S::P > 1 && kp >= g.K) break;  // (pass 0 never)
    TensorAccumulators<S> acc;
    acc.Clear();
    // Contiguous sub-tiles and groups: sub-tile t's steps of the tile (its
    // group's), from the last base c <= jlo_t - 4 to the first c >= jhi_t
    // (none past the result), and for m16n8k8 the union of each pair's in
    // its first.
    int lo[S::T], hi[S::T];
    if constexpr (S::kSkips) {
      const int64_t LX = g.x.len, LY = g.y.len;
#pragma unroll
      for (int t = 0; t < S::T; ++t) {
        const int64_t k = kp + S::RangeOf(t);
        const int64_t jlo = k - LY + 1 > 0 ? k - LY + 1 : 0;
        const int64_t last = k + S::kGroupOutputs - 1;
        const int64_t jhi = last < LX - 1 ? last : LX - 1;
        lo[t] = static_cast<int>((jlo - g.jlo) / 4);
        hi[t] = k < g.K ? static_cast<int>((jhi - g.jlo + 7) / 4) : lo[t] - 1;
      }
      if constexpr (S::kK == 8) {
#pragma unroll
        for (int t = 0; t < S::T; t += 2) {
          if (hi[t + 1] >= lo[t + 1]) {  // (sub-tile t is never past the end
                                         // where t + 1 is not)
            lo[t] = lo[t] < lo[t + 1] ? lo[t] : lo[t + 1];
            hi[t] = hi[t] > hi[t + 1] ? hi[t] : hi[t + 1];
          }
        }
      }
    }
    int step0 = 0;  // the chunk's first step in the tile
    for (int64_t c0 = g.jlo - 4; c0 < g.jhi + 4;) {
      const int64_t rest = (g.jhi - c0 + 3) / 4 + 1;
      const int steps =
          rest >= S::NS
              ? S::NS
              : static_cast<int>((rest + S::kRow - 1) / S::kRow * S::kRow);
      ActiveSteps<S> active;
      bool any = true;
      if constexpr (S::kSkips) {
        if constexpr (S::P > 1) any = false;
#pragma unroll
        for (int t = 0; t < S::T; ++t) {
          active.lo[t] = lo[t] - step0;
          active.span[t] = hi[t] - lo[t];
          if constexpr (S::P > 1) {
            // Steps lo - 1 .. hi (an m16n8k8 at s runs s and s + 1) meet
            // the chunk's 0 .. steps - 1.
            any |= active.span[t] >= 0 && active.lo[t] - 1 < steps &&
                   active.lo[t] + active.span[t] >= 0;
          }
        }
      }
      if (any) {
        if (S::P == 1 || staged_at != step0) {
          __syncwarp();
          ForOperandRange<kWarpSize, S::kStageInFlight, double,
                          S::kLateConvert>(args, g.x, c0 - 3, 4 * steps + 7,
                                           lane,
                                           [&](int i, double v) { xs[i] = v; });
          ForOperandRange<kWarpSize, S::kStageInFlight, double,
                          S::kLateConvert>(
              args, g.y, g.k0 - c0 - 4 * (steps - 1), S::TW + 4 * steps - 8,
              lane, [&](int i, double v) { ys[S::Pad(i)] = v; });
          __syncwarp();
          staged_at = step0;
        }
        // Pass p's groups are groups NG p .. of the tile's y window.
        ComputeChunk<S>(acc, xs, ys + S::GroupY(S::NG) * pass, steps, lane,
                        active);
      }
      c0 += 4 * steps;
      step0 += steps;
    }
    // Output (t, i, n) = kp + OutputOf(t, i, n); lane l holds i = l / 4, n
    // = 2 (l % 4) + c. Passes stage them apart from the chunk.
    __syncwarp();
    double* const staged = S::P > 1 ? ys + S::kYElems : smem;
#pragma unroll
    for (int t = 0; t < S::T; ++t) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        staged[S::OutputOf(t, lane >> 2, 2 * (lane & 3) + c)] = acc.total[t][c];
      }
    }
    __syncwarp();
    WriteTile(args, sp, kp, g.K, S::kPassOutputs, lane, kWarpSize, staged,
              /*log_values=*/false);
  }
}

// Prefetches operand values [start, start + n) (those inside the operand)
// into L2, a 128-byte line a lane.
template <typename T>
__device__ __forceinline__ void PrefetchOperand(const DeviceArgs<T>& args,
                                                const Operand& o, int64_t start,
                                                int64_t n, int lane) {
  const int64_t lo = start > 0 ? start : 0;
  const int64_t hi = start + n < o.len ? start + n : o.len;
  if (lo >= hi) return;
  const char* const p =
      o.scratch ? reinterpret_cast<const char*>(args.scratch + o.base)
                : reinterpret_cast<const char*>(args.values + o.base);
  const int64_t size = o.scratch ? sizeof(double) : sizeof(T);
  const uintptr_t first =
      reinterpret_cast<uintptr_t>(p + lo * size) & ~uintptr_t{127};
  const uintptr_t end = reinterpret_cast<uintptr_t>(p + hi * size);
  for (uintptr_t at = first + 128 * static_cast<uintptr_t>(lane); at < end;
       at += 128 * kWarpSize) {
    asm volatile("prefetch.global.L2 [%0];\n" : : "l"(at));
  }
}

// Prefetches every operand value a tile's chunks stage (RunTile): x from
// its j range's first chunk base - 3 to past its last, y over the window
// of every chunk.
template <class S, typename T>
__device__ __forceinline__ void PrefetchTile(const DeviceArgs<T>& args,
                                             const StepProblem& sp,
                                             int64_t tile, int lane) {
  const Geometry g = MakeGeometry<S::TW>(sp, tile);
  PrefetchOperand(args, g.x, g.jlo - 7, g.jhi - g.jlo + 16, lane);
  PrefetchOperand(args, g.y, g.k0 - g.jhi - 8, S::TW + g.jhi - g.jlo + 16,
                  lane);
}

// A warp's unit of work number `half` (0, or 1 for a mirrored task's
// second tile) of task `task`: false where there is none.
template <class S, typename T>
__device__ __forceinline__ bool UnitOf(const DeviceArgs<T>& args, int64_t task,
                                       int half, StepProblem* sp,
                                       int64_t* tile) {
  if (task >= args.num_tasks) return false;
  TaskOf(args.steps, args.tasks, task, sp, tile);
  if (half == 0) return true;
  const int64_t K = static_cast<int64_t>(sp->a_len) + sp->b_len - 1;
  const int64_t mirror = (K + S::TW - 1) / S::TW - 1 - *tile;
  if (mirror == *tile) return false;
  *tile = mirror;
  return true;
}

template <typename T, class S>
__global__ void __launch_bounds__(kBlockThreads, S::kMinBlocks)
    TensorKernel(const DeviceArgs<T> args) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warp = threadIdx.x / kWarpSize;
  double* const smem = reinterpret_cast<double*>(smem_raw) +
                       static_cast<int64_t>(warp) * S::kWarpElems;
  if constexpr (!S::kMirrored && !S::kPrefetch) {
    ForEachWarpTask<kWarpsPerBlock>(args, warp,
                                    [&](const StepProblem& sp, int64_t tile) {
                                      RunTile<S>(args, sp, tile, lane, smem);
                                    });
  } else {
    // Mirrored: a task is tile t and its mirror image, tile tiles - 1 - t,
    // together about the same steps whatever t (the planner made (tiles +
    // 1) / 2 tasks a problem). A unit's task is read again where it is
    // needed, so that nothing of one tile stays in registers over another.
    // Prefetch: as a warp starts a tile, its next tile's operands are
    // fetched into L2 (its first tile's too, for the chunks after the
    // first), so that their staging waits on L2 rather than memory.
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
    const int64_t first =
        static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
    constexpr int kHalves = S::kMirrored ? 2 : 1;
    for (int64_t task = first; task < args.num_tasks; task += stride) {
#pragma unroll 1
      for (int half = 0; half < kHalves; ++half) {
        StepProblem sp;
        int64_t tile;
        if (!UnitOf<S>(args, task, half, &sp, &tile)) break;
        if constexpr (S::kPrefetch) {
          if (task == first && half == 0) PrefetchTile<S>(args, sp, tile, lane);
          StepProblem next;
          int64_t next_tile;
          if ((half + 1 < kHalves &&
               UnitOf<S>(args, task, half + 1, &next, &next_tile)) ||
              UnitOf<S>(args, task + stride, 0, &next, &next_tile)) {
            PrefetchTile<S>(args, next, next_tile, lane);
          }
        }
        RunTile<S>(args, sp, tile, lane, smem);
      }
    }
  }
}

template <typename T, int CONFIG>
absl::Status LaunchConfig(const DeviceArgs<T>& args, cudaStream_t stream) {
  constexpr DirectConfigDef D = kDirectConfigDefs[CONFIG];
  if constexpr (D.tensor == 0) {
    return absl::InternalError("enumerate: not a tensor configuration");
  } else {
    using S = TensorShape<D.tensor, D.chunk, D.tensor_k, D.tensor_contiguous,
                          D.tensor_group, D.tensor_chains, D.tensor_mirror,
                          D.tensor_prefetch, D.tensor_passes>;
    const void* fn = reinterpret_cast<const void*>(&TensorKernel<T, S>);
    const size_t smem =
        static_cast<size_t>(kWarpsPerBlock) * S::kWarpElems * sizeof(double);
    SAMPLER_RETURN_IF_ERROR(AllowDynamicSharedMemory(fn, smem));
    int64_t blocks = std::min<int64_t>(
        (args.num_tasks + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxBlocks);
    if constexpr (S::kPrefetch) {
      // A resident grid: each warp's next task is one it will run. The
      // device's resident blocks are asked once a device (the occupancy
      // query costs host time that a launch of ~30 us would show).
      constexpr int kCachedDevices = 64;
      static std::atomic<int> resident[kCachedDevices];
      int device = 0;
      SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
      int most = device < kCachedDevices
                     ? resident[device].load(std::memory_order_relaxed)
                     : 0;
      if (most == 0) {
        SAMPLER_ASSIGN_OR_RETURN(
            most, ResidentGridBlocks(&TensorKernel<T, S>, kBlockThreads,
                                     int64_t{kMaxBlocks}, 1, kMaxBlocks));
        if (device < kCachedDevices) {
          resident[device].store(most, std::memory_order_relaxed);
        }
      }
      blocks = std::min<int64_t>(blocks, most);
    }
    TensorKernel<T, S>
        <<<static_cast<unsigned>(blocks), kBlockThreads, smem, stream>>>(args);
    SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
    return absl::OkStatus();
  }
}

template <typename T, int... I>
absl::Status LaunchIndexed(int config, const DeviceArgs<T>& args,
                           cudaStream_t stream,
                           std::integer_sequence<int, I...>) {
  using Fn = absl::Status (*)(const DeviceArgs<T>&, cudaStream_t);
  static constexpr Fn kTable[] = {&LaunchConfig<T, I>...};
  return kTable[config](args, stream);
}

}  // namespace

template <typename T>
absl::Status LaunchTensorKernel(int config, const DeviceArgs<T>& args,
                                cudaStream_t stream) {
  if (config < 0 || config >= kNumDirectConfigs ||
      kDirectConfigDefs[config].tensor == 0) {
    return absl::InternalError("enumerate: not a tensor configuration");
  }
  if (args.num_tasks == 0) return absl::OkStatus();
  return LaunchIndexed<T>(config, args, stream,
                          std::make_integer_sequence<int, kNumDirectConfigs>{});
}

template absl::Status LaunchTensorKernel<float>(int, const DeviceArgs<float>&,
                                                cudaStream_t);
template absl::Status LaunchTensorKernel<double>(int, const DeviceArgs<double>&,
                                                 cudaStream_t);

}  // namespace sampler::kernels::cuda::enumerate_internal
