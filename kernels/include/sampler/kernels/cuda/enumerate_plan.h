// Host planning of the CUDA enumeration, shared by the planner
// (enumerate_plan.cc: EnumerateBatchBuilder) and the kernels (enumerate.cu):
// the direct kernel's configurations, which the kernels instantiate and the
// planner picks from, and the planner's choices, each a function of one
// problem's sizes only (so a problem's bits never depend on its batch).
// Plain C++, no device code: tests/gpu/enumerate_cuda_host_test.cc checks
// the choices without a GPU.
#ifndef SAMPLER_KERNELS_CUDA_ENUMERATE_PLAN_H_
#define SAMPLER_KERNELS_CUDA_ENUMERATE_PLAN_H_

#include <cstdint>

#include "sampler/kernels/cuda/enumerate.h"

namespace sampler::kernels::cuda::enumerate_internal {

// One direct configuration: G members per output group, R outputs per
// group, SW sub-warps, Q tasks per sub-warp (EnumerateDirectConfig, plus
// the chunk size the kernel stages).
struct DirectConfigDef {
  int g, r, sw, q;
  bool small_chunks;  // x chunks of 64 (single-chunk small problems)
  const char* name;
  // Warps of a block that share one tile, each summing a contiguous part of
  // its j range, the parts added in part order (1: a warp a tile). For
  // batches of few long problems, whose tiles would fill less than a wave.
  int split = 1;
  // The x chunk's target length for float and for double products, 0 for
  // the default (small_chunks' or 1024 / 512): smaller chunks, less shared
  // memory a warp, more blocks an SM.
  int chunk = 0;
  int chunk_f64 = 0;
  // Split tiles with float products: blocks an SM that the registers must
  // allow (__launch_bounds__; 0: no cap).
  int min_blocks = 0;
  // The tensor-core kernel (enumerate_tensor.cu) with this many sub-tiles of
  // 8 x 8 outputs a warp (a tile of 64 tensor outputs), x chunks of `chunk`
  // values, every product in double (float values converted): 0 for the
  // warp-cooperative kernel. g, r, sw, q and split are 1 for it.
  int tensor = 0;
  // Its mma: 4 (m8n8k4, a step of a sub-tile) or 8 (m16n8k8, sm_90: two
  // steps of two sub-tiles; tensor even).
  int tensor_k = 4;
  // Its sub-tiles: interleaved rows (false), or 64 consecutive outputs each,
  // each running only its own j range's steps (true).
  bool tensor_contiguous = false;
  // Interleaved sub-tiles: how many share a group of 64 G consecutive
  // outputs (rows interleaved inside the group, groups contiguous, each
  // group running only its own j range's steps); 0 for all T (one group).
  int tensor_group = 0;
  // Alternating chains of a block sum (0: 2 for T <= 2, 1 for T = 4).
  int tensor_chains = 0;
  // A task is a tile and its mirror image (tile tiles - 1 - t of the same
  // problem): the pair's steps are about equal, so every warp (and every
  // SM sub-partition) gets the same work.
  bool tensor_mirror = false;
  // The tensor kernel on a resident grid (each warp a list of tasks), the
  // operands of a warp's next tile prefetched into L2 as it starts a tile.
  bool tensor_prefetch = false;
  // Passes over a staged chunk: a tile of 64 tensor tensor_passes outputs,
  // whose passes (64 tensor outputs each, one set of accumulators) share
  // the chunk's staging, so that a problem of one chunk is staged once.
  int tensor_passes = 1;
};

// The direct configurations (the template instantiations). Index = config.
inline constexpr DirectConfigDef kDirectConfigDefs[] = {
    {1, 5, 2, 2, true, "g1r5x2q2 (sub-warps)"},
    {1, 5, 2, 1, true, "g1r5x2q1 (sub-warps)"},
    {1, 3, 1, 2, true, "g1r3q2"},
    {1, 3, 1, 1, false, "g1r3"},
    {1, 5, 1, 1, false, "g1r5"},
    {1, 7, 1, 1, false, "g1r7"},
    {1, 9, 1, 1, false, "g1r9"},
    {1, 15, 1, 1, false, "g1r15"},
    {2, 9, 1, 1, false, "g2r9"},
    {2, 15, 1, 1, false, "g2r15"},
    {4, 15, 1, 1, false, "g4r15"},
    {8, 7, 1, 1, false, "g8r7"},
    {32, 1, 1, 1, false, "g32r1 (lecture v3)"},
    // Session 9 (issue 11, m = 256 and 1024). Sub-warps with long chunks
    // and 16-byte x loads: a tile of 16 R or 8 R outputs wastes less of
    // its rectangle at m = 256 (executed / useful products 1.34 at g1r5x2,
    // 1.32 at g1r7x4 and 1.42 at g1r9x4, against g1r5's 1.61); chunks of
    // 140-260 values (float) keep a warp's shared memory at 5.0-6.3 KB,
    // below g1r5's 8.8 KB; double chunks as long as still fit the blocks an
    // SM that their registers allow (6-7; a shorter chunk costs a staging
    // round more).
    {1, 5, 2, 1, false, "g1r5x2 (long)", 1, 260, 200},
    {1, 7, 4, 1, false, "g1r7x4 (long)", 1, 140, 112},
    {1, 9, 4, 1, false, "g1r9x4 (long)", 1, 144, 108},
    // Split tiles: the block's 4 warps share a tile (m = 1024, B = 256: 2,560
    // tiles of g1r7 are 0.81 waves of warps; split, 10,240 warps; g1r5's
    // 3,328 tiles waste less, 1.17x against 1.24x, and fill 4.2 waves of
    // blocks rather than 3.2).
    {1, 7, 1, 1, false, "g1r7s4 (split)", 4, 280, 280},
    {1, 5, 1, 1, false, "g1r5s4 (split)", 4, 260, 260},
    {1, 9, 1, 1, false, "g1r9s4 (split)", 4, 288, 288},
    // Tiles of 40 outputs: 1.18x at m = 256, the least waste, but 5 FMAs a
    // step for 1.25 shared loads (the shared-memory pipe as busy as the FMA
    // pipe).
    {1, 5, 4, 1, false, "g1r5x4 (long)", 1, 140, 120},
    // g1r7s4 with registers capped for 7 blocks an SM in float (80 -> 71
    // and an 8-byte spill: 28 warps an SM instead of 24; at m = 1024 g1r7s4
    // ran at 33% occupancy, issue slots 59.5% busy). Not yet measured.
    {1, 7, 1, 1, false, "g1r7s4c7 (split, capped)", 4, 280, 280, 7},
    // Session 10 (issue 11): the FP64 tensor cores (mma.sync m8n8k4 .f64)
    // for float and double problems, tiles of 64, 128 and 256 outputs (1, 2
    // and 4 sub-tiles of 8 x 8 sharing each step's Toeplitz block of x).
    {1, 1, 1, 1, false, "dmma t1 (tensor)", 1, 256, 256, 0, 1},
    {1, 1, 1, 1, false, "dmma t2 (tensor)", 1, 288, 288, 0, 2},
    {1, 1, 1, 1, false, "dmma t4 (tensor)", 1, 224, 224, 0, 4},
    // The same tiles on Hopper's m16n8k8 .f64 (twice the products an
    // instruction, half the mma's and their operand traffic); k8 t4 stages
    // chunks of 72 steps, so that a tile at m = 256 waits on one staging.
    {1, 1, 1, 1, false, "dmma k8 t2 (tensor)", 1, 256, 256, 0, 2, 8},
    {1, 1, 1, 1, false, "dmma k8 t4 (tensor)", 1, 288, 288, 0, 4, 8},
    // Contiguous sub-tiles (each its own steps: at m = 256, 1.24x fewer
    // mma's than t2's interleaved rows), m8n8k4 and m16n8k8.
    {1, 1, 1, 1, false, "dmma c2 (tensor)", 1, 288, 288, 0, 2, 4, true},
    {1, 1, 1, 1, false, "dmma k8 c2 (tensor)", 1, 288, 288, 0, 2, 8, true},
    // Session 11 (issue 11, float32): k8 t4 as two groups of 128 outputs
    // (two interleaved sub-tiles each), each group running only its own
    // steps (m = 256: 100 m16n8k8 a problem against k8 t4's 144); "p": the
    // next tile's operands prefetched into L2 while this one runs, a
    // resident grid; "h2": two chains (twice the independent mma's a
    // warp); "m": mirrored tile pairs as tasks (m = 1024, B = 256: k8 t4's
    // tiles of 72 to 264 steps leave the busiest sub-partitions ~1.6x the
    // mean).
    {1, 1, 1, 1, false, "dmma k8 g2 (tensor)", 1, 288, 288, 0, 4, 8, false, 2},
    {1, 1, 1, 1, false, "dmma k8 g2p (tensor)", 1, 288, 288, 0, 4, 8, false, 2,
     0, false, true},
    {1, 1, 1, 1, false, "dmma k8 g2h2p (tensor)", 1, 288, 288, 0, 4, 8, false,
     2, 2, false, true},
    {1, 1, 1, 1, false, "dmma k8 t4p (tensor)", 1, 288, 288, 0, 4, 8, false, 0,
     0, false, true},
    {1, 1, 1, 1, false, "dmma k8 t4m (tensor)", 1, 288, 288, 0, 4, 8, false, 0,
     0, true},
    {1, 1, 1, 1, false, "dmma k8 g2mp (tensor)", 1, 288, 288, 0, 4, 8, false, 2,
     0, true, true},
    {1, 1, 1, 1, false, "dmma k8 g2h2mp (tensor)", 1, 288, 288, 0, 4, 8, false,
     2, 2, true, true},
    // Tiles of 512 outputs in two passes of g2p's 256 over one staging: at
    // m = 256 a problem is one tile, one chunk (x and y staged once: 1,087
    // values against g2's 2 x 831), half the tasks.
    {1, 1, 1, 1, false, "dmma k8 g2x2p (tensor)", 1, 288, 288, 0, 4, 8, false,
     2, 0, false, true, 2},
    // k8 t2 (tiles of 128: m = 1024 wastes 1.13x, not 1.31x) with mirrored
    // pairs and prefetch: m = 1024, B = 256 is 2,048 equal tasks.
    {1, 1, 1, 1, false, "dmma k8 t2mp (tensor)", 1, 256, 256, 0, 2, 8, false, 0,
     0, true, true},
};
inline constexpr int kNumDirectConfigs =
    sizeof(kDirectConfigDefs) / sizeof(kDirectConfigDefs[0]);
// The tensor-core configurations kAuto takes (AutoLinearConfig).
inline constexpr int kTensorT2 = 22;     // dmma t2
inline constexpr int kTensorK8T4 = 25;   // dmma k8 t4
inline constexpr int kTensorK8T4P = 31;  // dmma k8 t4p
static_assert(kDirectConfigDefs[kTensorT2].tensor == 2 &&
                  kDirectConfigDefs[kTensorT2].tensor_k == 4 &&
                  !kDirectConfigDefs[kTensorT2].tensor_contiguous &&
                  kDirectConfigDefs[kTensorK8T4].tensor == 4 &&
                  kDirectConfigDefs[kTensorK8T4].tensor_k == 8 &&
                  kDirectConfigDefs[kTensorK8T4P].tensor == 4 &&
                  kDirectConfigDefs[kTensorK8T4P].tensor_k == 8 &&
                  kDirectConfigDefs[kTensorK8T4P].tensor_group == 0 &&
                  !kDirectConfigDefs[kTensorK8T4P].tensor_mirror &&
                  kDirectConfigDefs[kTensorK8T4P].tensor_prefetch,
              "kAuto's tensor configurations");

// Log-space configurations: G members per output, NG outputs per tile
// (kLog); the extended-range kernel (kExtended) takes the same G's, with
// kExtendedOutputs outputs per group.
inline constexpr int kLogGroups[] = {1, 4};
inline constexpr int kExtendedOutputs = 5;

// The automatic direct configuration for a linear step with shorter
// operand lx and longer ly (both at least 1) and float (f32) or double
// products, a function of the step's own sizes and type only (so a
// problem's bits never depend on its batch). Indices into
// kDirectConfigDefs; the thresholds come from bench/results/
// enumerate-kernel.md.
int AutoLinearConfig(int64_t lx, int64_t ly, bool f32);

// The pair kernel (LaunchKind::kPair, enumerate_pair.cu) takes two-term
// linear problems whose terms have at most kPairMaxLength values each (a
// lane per value, a lane per two outputs).
inline constexpr int kPairMaxLength = 32;
// Its variants (Launch::config; the same bits): 0 a warp per problem
// (kAuto's), 1 two problems a warp (EnumerateMethod::kPair, direct_config 1).
inline constexpr int kPairVariants = 2;
// The variant kAuto (and kPair without a direct_config) runs: 1, faster in
// the final call of session 8 on an H100 (kernels-h100-session8-2026-11-26,
// Mpairs/s, variant 0 -> 1): float m = 32 2,765 -> 3,455, m = 16 3,570 ->
// 4,285; double m = 32 1,810 -> 2,038, m = 16 2,813 -> 2,517 (the one loss).
inline constexpr int kAutoPairVariant = 1;
inline bool PairKernelFits(int64_t lx, int64_t ly) {
  return lx >= 1 && ly >= 1 && lx <= kPairMaxLength && ly <= kPairMaxLength;
}

// Whether kAuto sends such a problem (shorter term lx, longer ly) to the
// pair kernel: a function of the sizes only, like AutoLinearConfig.
bool PairKernelAuto(int64_t lx, int64_t ly);

// The log-space configuration (an index of kLogGroups) for a step whose
// shorter operand has lx values.
int AutoLogConfig(int64_t lx);

// Outputs of one task's tile for a launch of `kind` (kLinear, kLog or
// kExtended) with
// configuration `config`.
int TileOutputs(LaunchKind kind, int config);

// The smallest k with 2^k >= n (n >= 1): FFT lengths are powers of two.
int Log2(int64_t n);

}  // namespace sampler::kernels::cuda::enumerate_internal

#endif  // SAMPLER_KERNELS_CUDA_ENUMERATE_PLAN_H_
