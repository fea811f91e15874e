// CUDA kernels of SampleBoards, bit-identical to SampleBoardsCpu.
//
// Each position runs the selection of boards_core.h (and of
// docs/randomness.md, section "Boards"): per step, word j of the board is
// Philox block t * B + j / 4, element j mod 4, masked by the candidates; the
// step's count m decides between include and exclude.
//
// Work split. A variant <kLanes, kPer> gives each position to a group of
// kLanes consecutive lanes; lane l of a group holds Philox blocks
// i * kLanes + l for i < kPer, i.e. words 4 (i * kLanes + l) .. + 3. All four
// words of every block a lane computes are used, so no Philox work is wasted
// whatever the group width. kLanes = 1 is the seed's threadwise kernel (the
// whole board in one thread's registers); kLanes > 1 its warpwise kernel
// (words across lanes, m summed by a __shfl_xor_sync butterfly whose width is
// a compile-time constant: the seed measured a 2x loss from run-time
// warpSize bounds).
//
// Flattened loop. A position takes a random number of steps (about
// log2(sites) per colour). Looping "for each position: while (n != k) step"
// makes a warp run as many steps as its slowest group; for 32x32 boards the
// mean of the maximum over 32 positions is 1.56x the mean (15.3 vs 9.8 steps,
// counted on the host). Instead every loop iteration is one step of the
// group's current position, and a group that finishes a colour writes it out
// and starts the next colour or position before the next step, so lanes stay
// busy until the grid runs out of positions. Grids are persistent (as many
// blocks as fit at once), each group looping over positions with a stride.
//
// Some lane of a warp finishes a colour in almost every iteration (32 lanes,
// about 10 steps per colour), so what happens then costs the whole warp each
// iteration. Done as a branch taken by the finishing lanes, it compiled to
// ~150 register moves (IMAD.MOV, issued on the same FMA-heavy pipe as the
// Philox multiplies, which bound the kernel) run with a few lanes active.
// The masked loop (BoardLoop::kFlat) instead lets every lane apply the
// transition with masks (two LOP3 per word on the ALU pipe) and branches only
// for the rare cases: a new segment, a colour without stones, the end of the
// grid's positions. It wins for threadwise one-colour runs (32x32: +10%);
// with more colours, or warpwise, the masked work every iteration costs more
// than it saves, and the divergent transitions are used (BoardLoop::kAuto;
// numbers in bench/results/boards-kernel.md).
//
// The decision is applied without branching: with keep = fits ? ~0 : 0,
// subset |= sel & keep and cand = sel ^ (cand & keep) (sel is a subset of
// cand, so this is cand & ~sel when it fits and sel when it does not).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/boards_core.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/boards.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/philox.h"

namespace sampler::kernels::cuda {
namespace {

// Small blocks: with up to ~200 registers per thread in the largest
// threadwise variant, 64-thread blocks waste less of the register file on
// block granularity than 128 or 256.
constexpr int kBlockThreads = 64;

// Every compiled variant; Dispatch below instantiates one kernel per entry.
constexpr BoardVariant kVariants[] = {
    // Threadwise: 4, 8, 12, 16, 24 and 32 words (up to 32x32 boards).
    {1, 1},
    {1, 2},
    {1, 3},
    {1, 4},
    {1, 6},
    {1, 8},
    // Warpwise for small boards (forced by tests and benchmarks).
    {2, 2},
    {2, 4},
    {4, 1},
    {4, 2},
    {8, 1},
    // Warpwise for large boards: 64, 128, 256 and 512 words (128x128).
    {8, 2},
    {8, 4},
    {16, 4},
    {32, 4},
    // Threadwise 32 words capped at 168 registers (12 warps per SM instead
    // of 8, a few words spilled): measured against the uncapped one.
    {1, 8, 6},
};
constexpr int kNumVariants =
    static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));

// ---------------------------------------------------------------------------
// Device code.

// The sum of `v` over the kLanes lanes of this lane's group, in every lane.
// The mask names only the group: groups of one warp may be at different
// points of their loops.
template <int kLanes>
__device__ __forceinline__ int GroupSum(int v) {
  if constexpr (kLanes > 1) {
    const unsigned lane = threadIdx.x % kWarpSize;
    const unsigned mask =
        kLanes == kWarpSize
            ? 0xffffffffu
            : ((1u << kLanes) - 1u)
                  << (lane & ~static_cast<unsigned>(kLanes - 1));
    v = WarpButterfly<ButterflyOrder::kHighToLow, kLanes>(v, WarpPlus<int>(),
                                                          mask);
  }
  return v;
}

// Two output words at p (16-byte aligned when `vector`) in one store.
__device__ __forceinline__ void StorePair(uint64_t* p, uint64_t lo, uint64_t hi,
                                          bool vector) {
  if (vector) {
    *reinterpret_cast<ulonglong2*>(p) = make_ulonglong2(lo, hi);
  } else {
    p[0] = lo;
    p[1] = hi;
  }
}

// Philox4x32-10 exactly as Random123 computes it for the CPU backend
// (philox.h), arranged for the step loop: the ten round keys depend only on
// the seed, so a step computes them once for all its blocks, and each
// 32x32-bit product is one 64-bit multiply (one IMAD.WIDE.U32 giving both
// halves). Random123's round: (hi0, lo0) = M0 * c0, (hi1, lo1) = M1 * c2,
// c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0), then the key is bumped by
// (W0, W1). The GPU tests pin these bits to SampleBoardsCpu's. On an H200
// this form ran 419 G blocks/s against 342 for philox.h's (bench ceilings):
// the __umulhi form compiled to an extra move per product and re-added the
// key schedule in every block.
struct PhiloxKeys {
  uint32_t k0[10];
  uint32_t k1[10];
};

SAMPLER_HD PhiloxKeys MakePhiloxKeys(uint64_t seed) {
  PhiloxKeys keys;
  const uint32_t k0 = static_cast<uint32_t>(seed);
  const uint32_t k1 = static_cast<uint32_t>(seed >> 32);
  SAMPLER_BOARDS_UNROLL
  for (uint32_t r = 0; r < 10; ++r) {
    keys.k0[r] = k0 + r * 0x9E3779B9u;
    keys.k1[r] = k1 + r * 0xBB67AE85u;
  }
  return keys;
}

// The block of counter (draw, item lo, item hi, kBoards tag).
SAMPLER_HD PhiloxBlock BoardPhilox(const PhiloxKeys& keys, uint32_t draw,
                                   uint32_t item_lo, uint32_t item_hi) {
  uint32_t c0 = draw;
  uint32_t c1 = item_lo;
  uint32_t c2 = item_hi;
  uint32_t c3 = static_cast<uint32_t>(KindTag::kBoards);
  SAMPLER_BOARDS_UNROLL
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0;
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c2;
    c0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ keys.k0[r];
    c1 = static_cast<uint32_t>(p1);
    c2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ keys.k1[r];
    c3 = static_cast<uint32_t>(p0);
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
}

// BoardSiteMask(sites, word) without branches on the device: a funnel shift
// by the clamped number of sites left gives 0, the low bits, or all ones.
SAMPLER_HD uint32_t SiteMask(int32_t sites, int word) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_lc(~0u, 0u,
                          static_cast<uint32_t>(max(sites - 32 * word, 0)));
#else
  return BoardSiteMask(sites, word);
#endif
}

// One lane's share of the position its group is sampling, with the state
// that carries the flattened loop from step to step. The work done between
// steps (a colour or position finished) runs with part of the warp masked
// off while the rest waits, so it is kept short: the current segment's
// fields are cached and reloaded only when a group moves past it, and a
// one-colour board keeps its vacant sites from the last position.
template <int kLanes, int kPer>
struct BoardLane {
  static constexpr int kWords = 4 * kPer;

  const BoardSegment* segs;
  int num_segs;
  uint64_t* out_base;
  int lane;  // Within the group.

  // The current segment (segs[i] for the last item i loaded).
  const BoardSegment* seg;
  int64_t seg_begin;  // Its item_begin ...
  int64_t seg_end;    // ... and item_begin + count.
  uint64_t seed;
  uint64_t first_position;
  uint64_t* seg_out;      // Its first output word.
  int64_t fast_end;       // min(seg_end, end of the launch's items).
  uint64_t stride_words;  // Output words between positions `stride` apart.
  int32_t first_k;        // Stones of colour 0.
  int32_t sites;
  int32_t colours;
  int32_t words64;
  int32_t blocks;  // Philox blocks per step (B).

  // The current position.
  int64_t index;  // Global item index in the batch.
  uint64_t item;  // Position index: the Philox counter's item.
  uint64_t* out;  // The position's first output word.
  int32_t colour;
  int32_t k;  // Stones of the current colour.
  int32_t n;  // Stones placed so far.
  uint32_t step;

  // Word 4 * (b * kLanes + lane) + e of the board is entry 4 * b + e.
  uint32_t vacant[kWords];
  uint32_t cand[kWords];
  uint32_t subset[kWords];
  uint32_t sel[kWords];

  __device__ __forceinline__ void StartColour() {
    k = seg->stones[colour];
    n = 0;
#pragma unroll
    for (int j = 0; j < kWords; ++j) {
      cand[j] = vacant[j];
      subset[j] = 0;
    }
  }

  // Starts item `i` of the batch; i grows from call to call, by multiples
  // of `stride` up to `end`.
  __device__ __forceinline__ void Load(int64_t i, int64_t stride, int64_t end) {
    index = i;
    const bool same_segment = i < seg_end;
    if (!same_segment) {
      // The last segment starting at or before i. Segments without
      // positions share their item_begin with the next one, so they are
      // never chosen.
      int lo = 0;
      int hi = num_segs - 1;
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (segs[mid].item_begin <= i) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      seg = segs + lo;
      seg_begin = seg->item_begin;
      seg_end = seg_begin + seg->count;
      seed = seg->seed;
      first_position = seg->first_position;
      sites = seg->rows * seg->cols;
      colours = seg->colours;
      blocks = BoardBlocksPerStep(BoardWords32(sites));
      words64 = BoardOutputWords64(sites);
      seg_out = out_base + seg->out_offset;
      fast_end = seg_end < end ? seg_end : end;
      stride_words = static_cast<uint64_t>(stride) *
                     static_cast<uint64_t>(colours * words64);
      first_k = seg->stones[0];
    }
    const uint64_t local = static_cast<uint64_t>(i - seg_begin);
    item = first_position + local;
    out = seg_out + local * static_cast<uint64_t>(colours * words64);
    // Only colours before the last one clear sites from `vacant`.
    if (!same_segment || colours > 1) {
#pragma unroll
      for (int b = 0; b < kPer; ++b) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          vacant[4 * b + e] = SiteMask(sites, 4 * (b * kLanes + lane) + e);
        }
      }
    }
    colour = 0;
    step = 0;
    StartColour();
  }

  __device__ __forceinline__ void WriteColour() {
    uint64_t* dst = out + static_cast<int64_t>(colour) * words64;
    const bool vector = (reinterpret_cast<uintptr_t>(dst) & 15) == 0;
    if (kLanes == 1 && vector && words64 == 2 * kPer) {
      // A board that fills the variant: whole 16-byte stores only.
#pragma unroll
      for (int b = 0; b < kPer; ++b) {
        StorePair(
            dst + 2 * b,
            subset[4 * b] | (static_cast<uint64_t>(subset[4 * b + 1]) << 32),
            subset[4 * b + 2] |
                (static_cast<uint64_t>(subset[4 * b + 3]) << 32),
            true);
      }
      return;
    }
#pragma unroll
    for (int b = 0; b < kPer; ++b) {
      const int w = 2 * (b * kLanes + lane);
      const uint64_t lo =
          subset[4 * b] | (static_cast<uint64_t>(subset[4 * b + 1]) << 32);
      const uint64_t hi =
          subset[4 * b + 2] | (static_cast<uint64_t>(subset[4 * b + 3]) << 32);
      if (w + 1 < words64) {
        StorePair(dst + w, lo, hi, vector);
      } else if (w < words64) {
        dst[w] = lo;
      }
    }
  }

  // Finishes colours and positions until the current colour needs a step.
  // False when the group has no positions left. Uniform within the group.
  __device__ __forceinline__ bool Advance(int64_t stride, int64_t end) {
    if (n != k) return true;
    WriteColour();
    return AdvanceAfterWrite(stride, end);
  }

  // Advance once the finished colour has been written.
  __device__ __forceinline__ bool AdvanceAfterWrite(int64_t stride,
                                                    int64_t end) {
    for (;;) {
      if (++colour < colours) {
#pragma unroll
        for (int j = 0; j < kWords; ++j) vacant[j] &= ~subset[j];
        StartColour();
      } else {
        if (index + stride >= end) return false;
        Load(index + stride, stride, end);
      }
      if (n != k) return true;
      WriteColour();
    }
  }

  // After a step (BoardLoop::kFlat): if the colour is done, writes it and
  // moves on to the next colour or position. Lanes whose colour goes on
  // apply the same masked updates with an all-zero mask, so the warp runs
  // them converged; the rare cases go through AdvanceAfterWrite. False when
  // the group has no positions left. Uniform within the group.
  __device__ __forceinline__ bool Next(int64_t stride, int64_t end) {
    const bool done = n == k;
    if (done) WriteColour();
    const int32_t next_colour = colour + 1;
    const bool board_done = next_colour == colours;
    int32_t k_next = first_k;
    if (done && !board_done) k_next = seg->stones[next_colour];
    if (done && (k_next == 0 || (board_done && index + stride >= fast_end))) {
      return AdvanceAfterWrite(stride, end);
    }
    const uint32_t all = done ? ~0u : 0u;
    if (colours == 1) {
      // The vacant sites stay those of the board.
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        cand[j] = (cand[j] & ~all) | (vacant[j] & all);
        subset[j] &= ~all;
      }
    } else {
      const uint32_t colour_mask = done && !board_done ? ~0u : 0u;
      const uint32_t board_mask = done && board_done ? ~0u : 0u;
#pragma unroll
      for (int b = 0; b < kPer; ++b) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = 4 * b + e;
          const uint32_t rest = vacant[j] & ~(subset[j] & colour_mask);
          vacant[j] =
              (rest & ~board_mask) |
              (SiteMask(sites, 4 * (b * kLanes + lane) + e) & board_mask);
          cand[j] = (cand[j] & ~all) | (vacant[j] & all);
          subset[j] &= ~all;
        }
      }
    }
    const bool next_board = done && board_done;
    colour = done ? (board_done ? 0 : next_colour) : colour;
    k = done ? k_next : k;
    n = done ? 0 : n;
    index += next_board ? stride : 0;
    item += next_board ? static_cast<uint64_t>(stride) : 0;
    out += next_board ? stride_words : 0;
    step = next_board ? 0 : step;
    return true;
  }

  // Draws this lane's words of step `step`; returns their selected count.
  //
  // Blocks past the board have no candidates, so drawing them selects
  // nothing; drawing every block without a branch per block lets the
  // compiler interleave the blocks' Philox chains and share the round keys.
  // So every block is drawn unless some block index b is past the board in
  // every lane of the group (a warpwise variant larger than the board); then
  // such indices are skipped by a branch that is uniform in the group.
  __device__ __forceinline__ int Select() {
    if (kLanes == 1 || blocks > (kPer - 1) * kLanes) return Draw<false>();
    return Draw<true>();
  }

  template <bool kSkip>
  __device__ __forceinline__ int Draw() {
    const PhiloxKeys keys = MakePhiloxKeys(seed);
    const uint32_t first_draw = step * static_cast<uint32_t>(blocks);
    const uint32_t item_lo = static_cast<uint32_t>(item);
    const uint32_t item_hi = static_cast<uint32_t>(item >> 32);
    int m = 0;
#pragma unroll
    for (int b = 0; b < kPer; ++b) {
      if (!kSkip || b * kLanes < blocks) {
        const uint32_t draw =
            first_draw + static_cast<uint32_t>(b * kLanes + lane);
        const PhiloxBlock r = BoardPhilox(keys, draw, item_lo, item_hi);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          sel[4 * b + e] = r.v[e] & cand[4 * b + e];
          m += Popcount32(sel[4 * b + e]);
        }
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) sel[4 * b + e] = 0;
      }
    }
    return m;
  }

  // Include or exclude by the group's total count `m`.
  __device__ __forceinline__ void Apply(int m) {
    const bool fits = n + m <= k;
    const uint32_t keep = fits ? ~0u : 0u;
#pragma unroll
    for (int j = 0; j < kWords; ++j) {
      subset[j] |= sel[j] & keep;
      cand[j] = sel[j] ^ (cand[j] & keep);
    }
    n += fits ? m : 0;
    ++step;
  }
};

// Samples batch items [begin, end) of the segments segs[0 .. num_segs), all
// of which fit variant <kLanes, kPer>, with loop kLoop (a BoardLoop).
template <int kLanes, int kPer, int kMinBlocks, int kLoop>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocks)
    SampleBoardsKernel(const BoardSegment* __restrict__ segs, int num_segs,
                       int64_t begin, int64_t end, uint64_t* __restrict__ out) {
  static_assert(kLanes >= 1 && kLanes <= kWarpSize &&
                    (kLanes & (kLanes - 1)) == 0 && kBlockThreads % kLanes == 0,
                "a group is a power-of-two slice of one warp");
  const int64_t thread =
      static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  const int64_t stride =
      static_cast<int64_t>(gridDim.x) * (kBlockThreads / kLanes);
  const int64_t first = begin + thread / kLanes;
  // Whole groups leave together: every lane of a group has the same items.
  if (first >= end) return;
  BoardLane<kLanes, kPer> lane;
  lane.segs = segs;
  lane.num_segs = num_segs;
  lane.out_base = out;
  lane.lane = static_cast<int>(threadIdx.x % kLanes);
  lane.seg_end = 0;  // Items are >= 0: the first Load finds its segment.
  if constexpr (kLoop == static_cast<int>(BoardLoop::kNested)) {
    for (int64_t i = first; i < end; i += stride) {
      lane.Load(i, stride, end);
      for (;;) {
        while (lane.n != lane.k) lane.Apply(GroupSum<kLanes>(lane.Select()));
        lane.WriteColour();
        if (++lane.colour == lane.colours) break;
#pragma unroll
        for (int j = 0; j < lane.kWords; ++j) {
          lane.vacant[j] &= ~lane.subset[j];
        }
        lane.StartColour();
      }
    }
  } else if constexpr (kLoop == static_cast<int>(BoardLoop::kFlatDivergent)) {
    lane.Load(first, stride, end);
    while (lane.Advance(stride, end)) {
      lane.Apply(GroupSum<kLanes>(lane.Select()));
    }
  } else {
    lane.Load(first, stride, end);
    if (!lane.Advance(stride, end)) return;
    do {
      lane.Apply(GroupSum<kLanes>(lane.Select()));
    } while (lane.Next(stride, end));
  }
}

// ---------------------------------------------------------------------------
// Host code.

// What the loop choice needs to know about a run of segments.
struct RunShape {
  int max_colours = 0;
  int64_t min_count = 0;  // Over the segments with positions.
};

// A persistent grid: a position per group of kLanes lanes and pass.
template <int kLanes, int kPer, int kMinBlocks, int kLoop>
absl::StatusOr<int> GridBlocks(int64_t items, int max_blocks) {
  return ResidentGridBlocks(SampleBoardsKernel<kLanes, kPer, kMinBlocks, kLoop>,
                            kBlockThreads, items, kBlockThreads / kLanes,
                            max_blocks);
}

template <int kLanes, int kPer, int kMinBlocks, int kLoop>
absl::Status LaunchLoop(const BoardSegment* segs, int num_segs, int64_t begin,
                        int64_t end, uint64_t* out, cudaStream_t stream,
                        int max_blocks) {
  absl::StatusOr<int> blocks =
      GridBlocks<kLanes, kPer, kMinBlocks, kLoop>(end - begin, max_blocks);
  if (!blocks.ok()) return blocks.status();
  SampleBoardsKernel<kLanes, kPer, kMinBlocks, kLoop>
      <<<static_cast<unsigned>(*blocks), kBlockThreads, 0, stream>>>(
          segs, num_segs, begin, end, out);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

template <int kLanes, int kPer, int kMinBlocks>
absl::Status LaunchVariant(const BoardSegment* segs, int num_segs,
                           int64_t begin, int64_t end, uint64_t* out,
                           cudaStream_t stream,
                           const BoardLaunchOptions& options,
                           const RunShape& shape) {
  constexpr int kFlat = static_cast<int>(BoardLoop::kFlat);
  constexpr int kFlatDivergent = static_cast<int>(BoardLoop::kFlatDivergent);
  constexpr int kNested = static_cast<int>(BoardLoop::kNested);
  BoardLoop loop = options.loop;
  if (loop == BoardLoop::kAuto) {
    // Measured on an H200 (bench/results/boards-kernel.md): the masked
    // transitions win for threadwise one-colour boards (32x32: 2.47 vs 2.25
    // G/s) and lose with more colours (19x19 two colours: 2.97 vs 3.25) and
    // warpwise (64x64: 0.48 vs 0.56). Their fast path also needs the next
    // position of a group (`stride` items on) to lie in the same segment;
    // otherwise it takes the divergent path anyway, plus the masked work.
    loop = BoardLoop::kFlatDivergent;
    if (kLanes == 1 && shape.max_colours == 1) {
      absl::StatusOr<int> blocks = GridBlocks<kLanes, kPer, kMinBlocks, kFlat>(
          end - begin, options.max_blocks);
      if (!blocks.ok()) return blocks.status();
      const int64_t stride = int64_t{*blocks} * (kBlockThreads / kLanes);
      if (shape.min_count >= 4 * stride) loop = BoardLoop::kFlat;
    }
  }
  switch (loop) {
    case BoardLoop::kFlat:
      return LaunchLoop<kLanes, kPer, kMinBlocks, kFlat>(
          segs, num_segs, begin, end, out, stream, options.max_blocks);
    case BoardLoop::kNested:
      return LaunchLoop<kLanes, kPer, kMinBlocks, kNested>(
          segs, num_segs, begin, end, out, stream, options.max_blocks);
    default:
      return LaunchLoop<kLanes, kPer, kMinBlocks, kFlatDivergent>(
          segs, num_segs, begin, end, out, stream, options.max_blocks);
  }
}

// LaunchVariant for kVariants[variant].
template <int kIndex = 0>
absl::Status Dispatch(int variant, const BoardSegment* segs, int num_segs,
                      int64_t begin, int64_t end, uint64_t* out,
                      cudaStream_t stream, const BoardLaunchOptions& options,
                      const RunShape& shape) {
  if constexpr (kIndex == kNumVariants) {
    return absl::InternalError(absl::StrCat("no board variant ", variant));
  } else {
    if (variant == kIndex) {
      return LaunchVariant<kVariants[kIndex].lanes,
                           kVariants[kIndex].blocks_per_lane,
                           kVariants[kIndex].min_blocks>(
          segs, num_segs, begin, end, out, stream, options, shape);
    }
    return Dispatch<kIndex + 1>(variant, segs, num_segs, begin, end, out,
                                stream, options, shape);
  }
}

int Capacity(int variant) {
  return kVariants[variant].lanes * kVariants[variant].blocks_per_lane;
}

int32_t SegmentSites(const BoardSegment& s) { return s.rows * s.cols; }

// Philox blocks per step of a valid segment's board.
int SegmentBlocks(const BoardSegment& s) {
  return BoardBlocksPerStep(BoardWords32(SegmentSites(s)));
}

// Everything about a segment except its variant and item_begin.
absl::Status ValidateSegment(const BoardSegment& s, size_t i, size_t out_words,
                             BoardSpec& spec) {
  const auto error = [i](const auto&... parts) {
    return absl::InvalidArgumentError(
        absl::StrCat("segments[", i, "].", parts...));
  };
  if (s.colours < 1 || s.colours > kMaxBoardColours) {
    return error("colours = ", s.colours, ": must be between 1 and ",
                 kMaxBoardColours);
  }
  spec.rows = s.rows;
  spec.cols = s.cols;
  spec.stones.assign(s.stones, s.stones + s.colours);
  if (absl::Status status = ValidateBoardSpec(spec); !status.ok()) {
    return error(status.message());
  }
  if (s.count < 0) return error("count = ", s.count, ": must be >= 0");
  if (s.count > 0 &&
      s.first_position > std::numeric_limits<uint64_t>::max() -
                             static_cast<uint64_t>(s.count - 1)) {
    return error("first_position = ", s.first_position, ", count = ", s.count,
                 ": the last position index exceeds 2^64 - 1");
  }
  // Divide rather than multiply: count * words may overflow.
  const uint64_t per_position =
      static_cast<uint64_t>(s.colours) * BoardOutputWords64(SegmentSites(s));
  if (s.out_offset > out_words || (out_words - s.out_offset) / per_position <
                                      static_cast<uint64_t>(s.count)) {
    return error("out_offset = ", s.out_offset, ", count = ", s.count,
                 ": the segment's ", per_position,
                 " words per position run past the ", out_words,
                 " output words");
  }
  return absl::OkStatus();
}

// The automatic choice for a board of `blocks` Philox blocks per step.
int AutoVariant(int blocks, BoardKernel kernel) {
  const bool threadwise = kernel == BoardKernel::kThreadwise ||
                          (kernel == BoardKernel::kAuto && blocks <= 8);
  int best = -1;
  for (int v = 0; v < kNumVariants; ++v) {
    if ((kVariants[v].lanes == 1) != threadwise || Capacity(v) < blocks ||
        kVariants[v].min_blocks != 1) {
      continue;
    }
    if (best < 0 || Capacity(v) < Capacity(best)) best = v;
  }
  return best;
}

absl::Status Prepare(absl::Span<BoardSegment> segments, size_t out_words,
                     BoardKernel kernel, int32_t forced) {
  if (forced != -1 && (forced < 0 || forced >= kNumVariants)) {
    return absl::InvalidArgumentError(
        absl::StrCat("variant = ", forced, ": must be below ", kNumVariants));
  }
  BoardSpec spec;
  std::vector<int32_t> variants(segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    const BoardSegment& s = segments[i];
    if (absl::Status status = ValidateSegment(s, i, out_words, spec);
        !status.ok()) {
      return status;
    }
    const int blocks = SegmentBlocks(s);
    variants[i] = forced != -1 ? forced : AutoVariant(blocks, kernel);
    if (variants[i] < 0 || Capacity(variants[i]) < blocks) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segments[", i, "]: a ", s.rows, "x", s.cols, " board (",
          BoardWords32(SegmentSites(s)), " words) does not fit ",
          forced != -1 ? BoardVariantName(forced)
                       : std::string("the threadwise kernels (at most "
                                     "32 words)")));
    }
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    segments[i].variant = variants[i];
  }
  std::stable_sort(segments.begin(), segments.end(),
                   [](const BoardSegment& a, const BoardSegment& b) {
                     return a.variant < b.variant;
                   });
  int64_t item = 0;
  for (BoardSegment& s : segments) {
    s.item_begin = item;
    item += s.count;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Span<const BoardVariant> BoardVariants() {
  return absl::MakeConstSpan(kVariants);
}

std::string BoardVariantName(int32_t variant) {
  if (variant < 0 || variant >= kNumVariants) {
    return absl::StrCat("variant-", variant);
  }
  const BoardVariant& v = kVariants[variant];
  const std::string cap =
      v.min_blocks > 1 ? absl::StrCat("-min", v.min_blocks) : "";
  if (v.lanes == 1) {
    return absl::StrCat("threadwise-", 4 * v.blocks_per_lane, "w", cap);
  }
  return absl::StrCat("warpwise-", v.lanes, "x", v.blocks_per_lane, cap);
}

absl::StatusOr<BoardSegment> MakeBoardSegment(const BoardSpec& spec,
                                              uint64_t seed,
                                              uint64_t first_position,
                                              int64_t count,
                                              uint64_t out_offset) {
  if (absl::Status status = ValidateBoardSpec(spec); !status.ok()) {
    return status;
  }
  BoardSegment s;
  s.seed = seed;
  s.first_position = first_position;
  s.count = count;
  s.out_offset = out_offset;
  s.rows = spec.rows;
  s.cols = spec.cols;
  s.colours = static_cast<int32_t>(spec.stones.size());
  std::copy(spec.stones.begin(), spec.stones.end(), s.stones);
  return s;
}

uint64_t BoardSegmentWords(const BoardSegment& segment) {
  BoardSpec spec;
  if (!ValidateSegment(segment, 0, std::numeric_limits<size_t>::max(), spec)
           .ok()) {
    return 0;
  }
  return static_cast<uint64_t>(segment.count) *
         static_cast<uint64_t>(segment.colours) *
         BoardOutputWords64(SegmentSites(segment));
}

absl::Status PrepareBoardSegments(absl::Span<BoardSegment> segments,
                                  size_t out_words, BoardKernel kernel) {
  return Prepare(segments, out_words, kernel, -1);
}

absl::Status PrepareBoardSegmentsWithVariant(absl::Span<BoardSegment> segments,
                                             size_t out_words,
                                             int32_t variant) {
  if (variant < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("variant = ", variant, ": must be >= 0"));
  }
  return Prepare(segments, out_words, BoardKernel::kAuto, variant);
}

absl::Status LaunchBoards(const BoardsBatch& batch, cudaStream_t stream,
                          const BoardLaunchOptions& options) {
  const absl::Span<const BoardSegment> segments = batch.segments;
  const BoardSegment* device_segments = batch.device_segments;
  uint64_t* device_out = batch.out;
  const size_t out_words = batch.out_words;
  if (segments.empty()) return absl::OkStatus();
  if (device_segments == nullptr) {
    return absl::InvalidArgumentError("device_segments: null");
  }
  if (segments.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("segments: ", segments.size(), " is too many"));
  }
  BoardSpec spec;
  int64_t items = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const BoardSegment& s = segments[i];
    if (absl::Status status = ValidateSegment(s, i, out_words, spec);
        !status.ok()) {
      return status;
    }
    if (s.variant < 0 || s.variant >= kNumVariants ||
        Capacity(s.variant) < SegmentBlocks(s) || s.item_begin != items) {
      return absl::FailedPreconditionError(absl::StrCat(
          "segments[", i, "]: variant ", s.variant, ", item_begin ",
          s.item_begin, ": not prepared by PrepareBoardSegments"));
    }
    items += s.count;
  }
  if (items == 0) return absl::OkStatus();
  if (device_out == nullptr) {
    return absl::InvalidArgumentError("device_out: null");
  }
  // One launch per run of segments with positions and one variant; segments
  // without positions never split a run (the kernel never picks them).
  size_t i = 0;
  while (i < segments.size()) {
    if (segments[i].count == 0) {
      ++i;
      continue;
    }
    const int variant = segments[i].variant;
    RunShape shape{segments[i].colours, segments[i].count};
    size_t j = i + 1;
    while (j < segments.size() &&
           (segments[j].count == 0 || segments[j].variant == variant)) {
      if (segments[j].count > 0) {
        shape.max_colours = std::max(shape.max_colours, segments[j].colours);
        shape.min_count = std::min(shape.min_count, segments[j].count);
      }
      ++j;
    }
    const int64_t begin = segments[i].item_begin;
    const int64_t end = segments[j - 1].item_begin + segments[j - 1].count;
    if (absl::Status status =
            Dispatch(variant, device_segments + i, static_cast<int>(j - i),
                     begin, end, device_out, stream, options, shape);
        !status.ok()) {
      return status;
    }
    i = j;
  }
  return absl::OkStatus();
}

}  // namespace sampler::kernels::cuda
