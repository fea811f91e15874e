// Kernel benchmark of SampleCategorical on one GPU: the butterfly kernel
// against the in-house baselines (full prefix sum, one warp per row) over a
// sweep of K, with the device-to-device copy bandwidth measured in the same
// run as the ceiling.
//
// --issue runs only issue 11's table instead: K = 32, 33, 64, 100, 128, 256,
// 257, 512, 1000, 1024, 2048, 4096, 8192, 16384, 20000, 2^15, 2^17 with
// D = 1, 4 and 32 draws per row, float32
// weights, 512 MiB of rows, for the small-K kernel at that K (butterfly below
// 64, warp per row from 64 on), the row-split kernel (the K where row-split
// wins at every D is server/cuda_exec_categorical.cc's kRowSplitFromK), the
// lane-per-row kernel up to K = 128, the lane-group kernel up to 512 (to
// K = 32 also with its prefix tables on and off: "-pt", "-ce"), the
// warp-tiles kernel from 64 and the block-row kernel (row in shared memory)
// from 257 to its largest K (BlockRowMaxCategories; --k measures any K);
// then few rows (64) of K = 4096, 16384 and 2^17 (an LLM batch: 32 MiB at
// 2^17, still three rotated inputs) for warp per row, row split and block
// row, and 64 x 2^17 in logits.
// Each line gives the fraction of the copy bandwidth; --csv's last column,
// `service`, is 1 where the row is what the service runs (the kernel the
// CUDA backend's CategoricalKernelFor picks for that K and precision, as
// planned: no variant).
//
// Inputs are random weights (or logits) larger than the L2 cache, staged
// three times through the staging pipeline (staging.h) and rotated so that
// no launch reads what the previous one left in L2; each timing is the median
// of CUDA-event timings of single launches after warm-up. Bytes counted per
// launch: M * K * sizeof(T) read plus M * D * 4 written (the fewest a sampler
// must move).
//
//   categorical_bench [--quick] [--issue] [--csv FILE] [--k K] [--kernel L]
//
// Reports only; asserts nothing about speed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/categorical.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/status_macros.h"
#include "server/cuda_exec.h"

namespace sampler::kernels::cuda {
namespace {

constexpr int kBuffers = 3;  // rotated inputs

#define BENCH_CHECK(expr)                                     \
  do {                                                        \
    const absl::Status bench_status_ = (expr);                \
    if (!bench_status_.ok()) {                                \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, \
                   bench_status_.ToString().c_str());         \
      std::exit(1);                                           \
    }                                                         \
  } while (false)

absl::Status Check(cudaError_t e, const char* what) {
  return ToStatus(e, what, __FILE__, __LINE__);
}

// splitmix64: fast, good enough for benchmark inputs.
uint64_t Mix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Result {
  std::string kernel;
  std::string precision;
  std::string kind;
  int64_t k = 0;
  int64_t rows = 0;
  int32_t draws = 0;
  double median_us = 0;
  double min_us = 0;
  double rows_per_s = 0;
  double tb_per_s = 0;
  double fraction_of_copy = 0;
  // Whether the service runs this row as timed: the kernel the CUDA
  // backend's CategoricalKernelFor picks for K and the precision, with the
  // plan as planned (no benchmark variant).
  bool service = false;
};

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A benchmark-only variant of a kernel (Bench::Time).
enum class Variant {
  kNone,
  // The register-capped instances of kButterfly ("-cap"), kWarpTiles's
  // evict-first second pass ("-ef"), kBlockRow with twice the warps a block
  // ("-2x").
  kAlternate,
  // kBlockRow with 2, 4 or 8 times the planner's blocks a row
  // (ReplanBlockRowCtas, at most 16): smaller chunks, so more rows in flight
  // an SM ("-c2x", "-c4x", "-c8x").
  kSplit2,
  kSplit4,
  kSplit8,
  // kBlockRow with a thread a draw at one draw too, the warp-wide draw of
  // CategoricalPlan::block_row_warp_draws off ("-td", what ran before
  // session 10).
  kThreadDraws,
  // kBlockRow with streamed chunks (CategoricalPlan::block_row_streamed,
  // ReplanBlockRowStreamed: each block reads its chunk of at most 64 KiB
  // twice, the second pass from L2, instead of holding it in shared
  // memory), at the streaming planner's blocks a row ("-st") and twice
  // them ("-st-c2x"), and twice them in blocks of 8 warps instead of 16
  // ("-st-8w": four blocks an SM): session 11, issue 11's K from 16,384 on.
  // Lost to held rows (H100, % of copy at one draw: "-st" 42.5 against 55.0
  // at 16,384, 35.0 against 37.8 at 2^17; "-st-c2x" and "-st-8w" no
  // better), so not planned.
  kStreamed,
  kStreamedSplit2,
  kStreamed8Warps,
  // kLaneGroups with every row's prefix table on ("-pt") or off ("-ce":
  // chunk ends and a walk), whatever the draws
  // (CategoricalPlan::lane_groups_table; the planner turns it on from 8
  // draws a row).
  kPrefixTable,
  kChunkEnds,
};

// The label suffix of a variant.
const char* VariantSuffix(CategoricalKernel kernel, Variant variant) {
  switch (variant) {
    case Variant::kNone:
      return "";
    case Variant::kAlternate:
      if (kernel == CategoricalKernel::kWarpTiles) return "-ef";
      return kernel == CategoricalKernel::kBlockRow ? "-2x" : "-cap";
    case Variant::kSplit2:
      return "-c2x";
    case Variant::kSplit4:
      return "-c4x";
    case Variant::kSplit8:
      return "-c8x";
    case Variant::kThreadDraws:
      return "-td";
    case Variant::kStreamed:
      return "-st";
    case Variant::kStreamedSplit2:
      return "-st-c2x";
    case Variant::kStreamed8Warps:
      return "-st-8w";
    case Variant::kPrefixTable:
      return "-pt";
    case Variant::kChunkEnds:
      return "-ce";
  }
  return "";
}

// The factor of a split variant's blocks a row (1 for the others).
int SplitFactor(Variant variant) {
  return variant == Variant::kSplit2   ? 2
         : variant == Variant::kSplit4 ? 4
         : variant == Variant::kSplit8 ? 8
                                       : 1;
}

// The factor of a streamed variant's blocks a row (0 for the others).
int StreamedSplit(Variant variant) {
  if (variant == Variant::kStreamed) return 1;
  return variant == Variant::kStreamedSplit2 ||
                 variant == Variant::kStreamed8Warps
             ? 2
             : 0;
}

// The most warps a block-row block takes (kernels/categorical_block_row.h,
// private to the library), and the fewer warps of a streamed block's
// "-st-8w" (kernels/categorical_block_stream.h).
constexpr int kBlockRowLargestWarps = 32;
constexpr int kBlockStreamFewerWarps = 8;

class Bench {
 public:
  Bench(size_t input_bytes, int reps) : bytes_(input_bytes), reps_(reps) {}

  absl::Status Init() {
    SAMPLER_ASSIGN_OR_RETURN(stager_, Stager::Create());
    return absl::OkStatus();
  }

  // Generates the inputs (host memory, once per precision and kind):
  // weights (positive, in (0, 1]) or logits (in [-10, 0)) of type T.
  template <typename T>
  void Fill(WeightKind kind) {
    std::vector<T>& host = HostValues<T>();
    host.resize(bytes_ / sizeof(T));
    uint64_t state = 12345;
    for (T& x : host) {
      const double u = static_cast<double>(Mix(state) >> 11) * 0x1.0p-53;
      x = kind == WeightKind::kWeights ? static_cast<T>(1.0 - u)
                                       : static_cast<T>(-10.0 * u);
    }
  }

  // Device-to-device copy of half a buffer into the other half of another
  // (kBuffers buffers of the inputs' size from the stager's pool, rotated):
  // bytes read plus bytes written over the median time.
  absl::StatusOr<double> CopyTbPerS() {
    const size_t half = bytes_ / 2;
    const cudaStream_t stream = stager_->stream.get();
    std::vector<DeviceBuffer> buffers;
    for (int i = 0; i < kBuffers; ++i) {
      SAMPLER_ASSIGN_OR_RETURN(DeviceBuffer b, stager_->Allocate(bytes_));
      SAMPLER_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(b.data(), 0x5A, bytes_, stream));
      buffers.push_back(std::move(b));
    }
    std::vector<float> ms;
    for (int i = 0; i < reps_ + 3; ++i) {
      char* src = static_cast<char*>(buffers[i % kBuffers].data());
      char* dst = static_cast<char*>(buffers[(i + 1) % kBuffers].data()) + half;
      SAMPLER_ASSIGN_OR_RETURN(
          const float t, TimeMs([&] {
            SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
                dst, src, half, cudaMemcpyDeviceToDevice, stream));
            return absl::OkStatus();
          }));
      if (i >= 3) ms.push_back(t);
    }
    return 2.0 * static_cast<double>(half) / (Median(ms) * 1e-3) / 1e12;
  }

  // Times `kernel` on M rows of K with D draws; the values fill as many
  // whole rows of the inputs as fit. The batch is staged kBuffers times (one
  // pool allocation each), rotated so that no launch reads what the
  // previous one left in L2.
  // `only_rows` > 0 times that many rows instead (at most what fits).
  // `variant`: the kernel's benchmark-only variant, the register-capped
  // instances of kButterfly ("-cap"), kWarpTiles's evict-first second
  // pass ("-ef"), kBlockRow with twice the warps a block ("-2x", at most
  // 32: 512 values a warp instead of 1,024; whether a row's time follows
  // its values a warp, session 9's open question) or kBlockRow's split
  // rows ("-c2x" ...: session 10, more rows in flight an SM at K = 16,384
  // and past it, where two 64 KiB buffers allow one block an SM) or its
  // thread draws at one draw ("-td": session 10 made the warp-wide draw the
  // plan's).
  template <typename T>
  absl::StatusOr<Result> Time(CategoricalKernel kernel, Variant variant,
                              WeightKind kind, int64_t k, int32_t draws,
                              double copy_tb, int64_t only_rows = 0) {
    const int64_t fit = static_cast<int64_t>(bytes_ / sizeof(T)) / k;
    const int64_t rows = only_rows > 0 && only_rows < fit ? only_rows : fit;
    CategoricalBatchBuilder<T> builder(kernel);
    SAMPLER_RETURN_IF_ERROR(builder
                                .Add(absl::MakeConstSpan(HostValues<T>())
                                         .first(static_cast<size_t>(rows * k)),
                                     {rows, k, draws}, kind, 0x5eed, 0)
                                .status());
    SAMPLER_RETURN_IF_ERROR(builder.Finish());
    CategoricalPlan& plan = builder.mutable_plan();
    const bool alternate = variant == Variant::kAlternate;
    if (kernel == CategoricalKernel::kWarpTiles) {
      plan.warp_tiles_evict_first = alternate;
    } else if (kernel == CategoricalKernel::kBlockRow) {
      if (alternate) {
        plan.block_row_warps =
            std::min(2 * plan.block_row_warps, kBlockRowLargestWarps);
      }
      if (variant == Variant::kThreadDraws) plan.block_row_warp_draws = false;
      if (SplitFactor(variant) > 1) {
        SAMPLER_RETURN_IF_ERROR(ReplanBlockRowCtas(
            k, SplitFactor(variant) * plan.block_row_ctas, &plan));
      }
      if (StreamedSplit(variant) > 0) {
        SAMPLER_RETURN_IF_ERROR(
            ReplanBlockRowStreamed(k, StreamedSplit(variant), &plan));
      }
      if (variant == Variant::kStreamed8Warps) {
        plan.block_row_warps = kBlockStreamFewerWarps;
      }
    } else if (kernel == CategoricalKernel::kLaneGroups &&
               (variant == Variant::kPrefixTable ||
                variant == Variant::kChunkEnds)) {
      plan.lane_groups_table = variant == Variant::kPrefixTable;
    } else {
      plan.register_cap = alternate;
    }
    std::vector<StagedBatch> staged;
    for (int i = 0; i < kBuffers; ++i) {
      SAMPLER_ASSIGN_OR_RETURN(
          StagedBatch b, stager_->Upload(builder.Staging(), [&](char* in) {
            builder.PackInto(in);
          }));
      staged.push_back(std::move(b));
    }
    std::vector<float> ms;
    const int warmup = 3;
    for (int i = 0; i < reps_ + warmup; ++i) {
      const CategoricalBatch<T> view =
          builder.View(staged[i % kBuffers].regions);
      SAMPLER_ASSIGN_OR_RETURN(const float t, TimeMs([&] {
                                 return LaunchCategorical(
                                     view, stager_->stream.get());
                               }));
      if (i >= warmup) ms.push_back(t);
    }
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stager_->stream.get()));
    Result r;
    r.kernel = absl::StrCat(CategoricalKernelName(kernel),
                            VariantSuffix(kernel, variant));
    r.precision = std::is_same_v<T, double> ? "f64" : "f32";
    r.kind = kind == WeightKind::kWeights ? "weights" : "logits";
    r.k = k;
    r.rows = rows;
    r.draws = draws;
    r.median_us = Median(ms) * 1e3;
    r.min_us = *std::min_element(ms.begin(), ms.end()) * 1e3;
    const double bytes = static_cast<double>(rows) * k * sizeof(T) +
                         static_cast<double>(rows) * draws * sizeof(int32_t);
    r.rows_per_s = rows / (r.median_us * 1e-6);
    r.tb_per_s = bytes / (r.median_us * 1e-6) / 1e12;
    r.fraction_of_copy = r.tb_per_s / copy_tb;
    r.service = variant == Variant::kNone &&
                server::CategoricalKernelFor(k,
                                             std::is_same_v<T, double>
                                                 ? Precision::kFloat64
                                                 : Precision::kFloat32,
                                             draws) == kernel;
    return r;
  }

 private:
  template <typename T>
  std::vector<T>& HostValues() {
    if constexpr (std::is_same_v<T, double>) {
      return host_f64_;
    } else {
      return host_f32_;
    }
  }

  // Milliseconds between the stager's events around `work`, after a wait.
  template <typename Work>
  absl::StatusOr<float> TimeMs(Work work) {
    const cudaStream_t stream = stager_->stream.get();
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(stager_->start.get(), stream));
    SAMPLER_RETURN_IF_ERROR(work());
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(stager_->stop.get(), stream));
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stager_->stop.get()));
    float t = 0;
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaEventElapsedTime(&t, stager_->start.get(), stager_->stop.get()));
    return t;
  }

  size_t bytes_;
  int reps_;
  std::unique_ptr<Stager> stager_;
  std::vector<float> host_f32_;
  std::vector<double> host_f64_;
};

void Print(const Result& r) {
  std::printf(
      "%-13s %-4s %-8s K=%-6lld M=%-9lld D=%-3d %10.1f us %9.1f Mrows/s "
      "%6.3f TB/s %5.1f%% of copy\n",
      r.kernel.c_str(), r.precision.c_str(), r.kind.c_str(),
      static_cast<long long>(r.k), static_cast<long long>(r.rows), r.draws,
      r.median_us, r.rows_per_s / 1e6, r.tb_per_s, 100 * r.fraction_of_copy);
  std::fflush(stdout);
}

// The largest K of the lane-per-row and lane-group kernels
// (kernels/categorical_lanes.h, categorical_lane_groups.h, private to the
// library; PrepareCategoricalSegments refuses more).
constexpr int64_t kLanesLargestK = 128;
constexpr int64_t kLaneGroupsLargestK = 512;
// And of the warp-tiles kernel (kernels/categorical_warp_tiles.h).
constexpr int64_t kWarpTilesLargestK = int64_t{1} << 17;
// Where the table runs block-row from: 257, past the lane groups of 8 (the
// service runs lane groups of 16 up to 512 since session 10; block-row
// stays beside them there).
constexpr int64_t kBlockRowSmallestK = 257;

// The block-row split variants measured at K (float32): those whose blocks a
// row stay at most 16, from K = 4,096 (a block of 4 warps) on; the planner
// gives 1 block a row up to 16,384, then chunks of at most 8,192 (4 blocks
// at 20,000 and 2^15, 16 at 2^17).
std::vector<Variant> BlockRowSplits(int64_t k) {
  if (k < 4096) return {};
  if (k <= 8192) return {Variant::kSplit2, Variant::kSplit4};
  if (k <= 16384) return {Variant::kSplit2, Variant::kSplit4, Variant::kSplit8};
  if (k <= 32768) return {Variant::kSplit2, Variant::kSplit4};
  return {};
}

// The block-row streamed variants measured at K (float32, up to the
// block-row kernel's `largest` K): from K = 4,096 (where block-row's held
// rows met 70% at one draw, for comparison) on; twice the blocks a row
// (also in blocks of 8 warps) while they stay at most 16 (2^17 takes 8).
std::vector<Variant> BlockRowStreamed(int64_t k, int64_t largest) {
  if (k < 4096 || k > largest) return {};
  return {Variant::kStreamed, Variant::kStreamedSplit2,
          Variant::kStreamed8Warps};
}

int Main(int argc, char** argv) {
  bool quick = false;
  bool issue = false;  // --issue: issue 11's table only
  const char* csv_path = nullptr;
  int64_t only_k = 0;       // --k: one K only (for profilers)
  int32_t only_draws = 0;   // --draws: one D only (for profilers)
  std::string only_kernel;  // --kernel: one kernel label only
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--issue") == 0) {
      issue = true;
    } else if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
      csv_path = argv[++i];
    } else if (std::strcmp(argv[i], "--k") == 0 && i + 1 < argc) {
      only_k = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--draws") == 0 && i + 1 < argc) {
      only_draws = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) {
      only_kernel = argv[++i];
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--quick] [--issue] [--csv FILE] [--k K] [--draws D] "
          "[--kernel butterfly|butterfly-cap|warp-per-row|"
          "prefix-sum|row-split|lanes|warp-tiles|warp-tiles-ef|lane-groups|"
          "lane-groups-pt|lane-groups-ce|"
          "block-row|block-row-2x|block-row-c2x|block-row-c4x|"
          "block-row-c8x|block-row-td|block-row-st|block-row-st-c2x|"
          "block-row-st-8w]\n",
          argv[0]);
      return 2;
    }
  }
  // The block-row kernel's largest K, float32.
  const int64_t block_row_largest_k =
      BlockRowMaxCategories(Precision::kFloat32);
  int device = 0;
  cudaDeviceProp prop{};
  BENCH_CHECK(Check(cudaGetDevice(&device), "cudaGetDevice"));
  BENCH_CHECK(Check(cudaGetDeviceProperties(&prop, device), "props"));
  std::printf("device: %s, %d SMs, L2 %d MiB\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20);

  // 512 MiB per buffer: about 10x the L2, three rotated.
  const size_t bytes = size_t{512} << 20;
  Bench bench(bytes, quick ? 5 : 20);
  BENCH_CHECK(bench.Init());
  bench.Fill<float>(WeightKind::kWeights);
  absl::StatusOr<double> copy = bench.CopyTbPerS();
  BENCH_CHECK(copy.status());
  std::printf("d2d copy: %.3f TB/s (read + write)\n", *copy);

  std::vector<Result> results;
  const auto run = [&](auto tag, CategoricalKernel kernel, WeightKind kind,
                       int64_t k, int32_t draws,
                       Variant variant = Variant::kNone,
                       int64_t only_rows = 0) {
    using T = decltype(tag);
    const std::string label = absl::StrCat(CategoricalKernelName(kernel),
                                           VariantSuffix(kernel, variant));
    if ((only_k != 0 && k != only_k) ||
        (only_draws != 0 && draws != only_draws) ||
        (!only_kernel.empty() && label != only_kernel)) {
      return;
    }
    // Block-row's variants run only when --kernel names them (session 10's
    // in gpu_session.sh's catblock part; "-2x", which lost at every K in
    // session 9, by hand), so that the whole table stays within its part's
    // time.
    const bool block_row_variant =
        kernel == CategoricalKernel::kBlockRow && variant != Variant::kNone;
    if (only_kernel.empty() && block_row_variant) return;
    absl::StatusOr<Result> r =
        bench.Time<T>(kernel, variant, kind, k, draws, *copy, only_rows);
    if (!r.ok() && (SplitFactor(variant) > 1 || StreamedSplit(variant) > 1)) {
      // A split the device cannot hold (a cluster of 16 that no GPC
      // schedules, say): say so and go on.
      std::printf("%s K=%lld D=%d skipped: %s\n", label.c_str(),
                  static_cast<long long>(k), draws,
                  std::string(r.status().message()).c_str());
      return;
    }
    BENCH_CHECK(r.status());
    Print(*r);
    results.push_back(*r);
  };
  // Issue 11's table: the kernels that served K below 2^15 before the lanes
  // kernel (butterfly or warp per row) against the row-split kernel, which
  // the service runs past 2^15, the lanes kernel (up to K = 128 before the
  // lane-group kernel), the lane-group kernel, which it runs up to K = 256,
  // and the warp-tiles kernel (server/cuda_exec_categorical.cc).
  const auto issue_table = [&] {
    // Issue 11's K (2^15 = 32768, 2^17 = 131072) and the block-row range.
    std::vector<int64_t> issue_ks = {32,   33,    64,    100,   128,   256,
                                     257,  512,   1000,  1024,  2048,  4096,
                                     8192, 16384, 20000, 32768, 131072};
    if (only_k != 0 &&
        std::find(issue_ks.begin(), issue_ks.end(), only_k) == issue_ks.end()) {
      issue_ks.push_back(only_k);  // --k: any K
    }
    for (int64_t k : issue_ks) {
      for (int32_t draws : {1, 4, 32}) {
        run(float{},
            k < 64 ? CategoricalKernel::kButterfly
                   : CategoricalKernel::kWarpPerRow,
            WeightKind::kWeights, k, draws);
        run(float{}, CategoricalKernel::kRowSplit, WeightKind::kWeights, k,
            draws);
        if (k <= kLanesLargestK) {
          run(float{}, CategoricalKernel::kLanes, WeightKind::kWeights, k,
              draws);
        }
        if (k <= kLaneGroupsLargestK) {
          run(float{}, CategoricalKernel::kLaneGroups, WeightKind::kWeights, k,
              draws);
        }
        if (k <= 32) {  // prefix tables on and off (session 11: they lost
                        // everywhere else)
          run(float{}, CategoricalKernel::kLaneGroups, WeightKind::kWeights, k,
              draws, Variant::kPrefixTable);
          run(float{}, CategoricalKernel::kLaneGroups, WeightKind::kWeights, k,
              draws, Variant::kChunkEnds);
        }
        if (k > 32 && k <= kWarpTilesLargestK) {
          run(float{}, CategoricalKernel::kWarpTiles, WeightKind::kWeights, k,
              draws);
        }
        if (k >= 4096 && k <= kWarpTilesLargestK) {  // lever 2's candidate
          run(float{}, CategoricalKernel::kWarpTiles, WeightKind::kWeights, k,
              draws, Variant::kAlternate);
        }
        if (k >= kBlockRowSmallestK && k <= block_row_largest_k) {
          run(float{}, CategoricalKernel::kBlockRow, WeightKind::kWeights, k,
              draws);
        }
        if (k >= kBlockRowSmallestK && k <= block_row_largest_k &&
            (k <= 16384 || k == 131072)) {  // twice the warps
          run(float{}, CategoricalKernel::kBlockRow, WeightKind::kWeights, k,
              draws, Variant::kAlternate);
        }
        for (Variant split : BlockRowSplits(k)) {
          run(float{}, CategoricalKernel::kBlockRow, WeightKind::kWeights, k,
              draws, split);
        }
        if (k >= kBlockRowSmallestK && k <= 16384 && draws == 1) {
          run(float{}, CategoricalKernel::kBlockRow, WeightKind::kWeights, k,
              draws, Variant::kThreadDraws);
        }
        for (Variant streamed : BlockRowStreamed(k, block_row_largest_k)) {
          run(float{}, CategoricalKernel::kBlockRow, WeightKind::kWeights, k,
              draws, streamed);
        }
      }
    }
    // Few rows: where one warp per row leaves most SMs idle (whether the
    // service should route by rows too, below 2^15).
    constexpr int64_t kFewRows = 64;
    for (int64_t k : {int64_t{4096}, int64_t{16384}, int64_t{1} << 17}) {
      for (int32_t draws : {1, 4, 32}) {
        for (CategoricalKernel kernel :
             {CategoricalKernel::kWarpPerRow, CategoricalKernel::kRowSplit,
              CategoricalKernel::kBlockRow}) {
          run(float{}, kernel, WeightKind::kWeights, k, draws, Variant::kNone,
              kFewRows);
        }
        for (Variant split : BlockRowSplits(k)) {
          run(float{}, CategoricalKernel::kBlockRow, WeightKind::kWeights, k,
              draws, split, kFewRows);
        }
        for (Variant streamed : BlockRowStreamed(k, block_row_largest_k)) {
          run(float{}, CategoricalKernel::kBlockRow, WeightKind::kWeights, k,
              draws, streamed, kFewRows);
        }
      }
    }
    bench.Fill<float>(WeightKind::kLogits);
    for (CategoricalKernel kernel :
         {CategoricalKernel::kWarpPerRow, CategoricalKernel::kRowSplit,
          CategoricalKernel::kBlockRow}) {
      run(float{}, kernel, WeightKind::kLogits, int64_t{1} << 17, 1,
          Variant::kNone, kFewRows);
    }
    for (Variant split : BlockRowSplits(int64_t{1} << 17)) {
      run(float{}, CategoricalKernel::kBlockRow, WeightKind::kLogits,
          int64_t{1} << 17, 1, split, kFewRows);
    }
    for (Variant streamed :
         BlockRowStreamed(int64_t{1} << 17, block_row_largest_k)) {
      run(float{}, CategoricalKernel::kBlockRow, WeightKind::kLogits,
          int64_t{1} << 17, 1, streamed, kFewRows);
    }
  };
  if (issue) {
    issue_table();
  } else {
    const std::vector<int64_t> sweep = {32, 33, 64, 100, 256, 1000, 1024, 4096};
    for (int64_t k : sweep) {
      if (k <= kLanesLargestK) {
        run(float{}, CategoricalKernel::kLanes, WeightKind::kWeights, k, 1);
      }
      if (k <= kLaneGroupsLargestK) {
        run(float{}, CategoricalKernel::kLaneGroups, WeightKind::kWeights, k,
            1);
      }
      run(float{}, CategoricalKernel::kButterfly, WeightKind::kWeights, k, 1);
      run(float{}, CategoricalKernel::kButterfly, WeightKind::kWeights, k, 1,
          Variant::kAlternate);
      run(float{}, CategoricalKernel::kWarpPerRow, WeightKind::kWeights, k, 1);
      run(float{}, CategoricalKernel::kWarpTiles, WeightKind::kWeights, k, 1);
      run(float{}, CategoricalKernel::kBlockRow, WeightKind::kWeights, k, 1);
      if (!quick || k == 32 || k == 1024) {
        run(float{}, CategoricalKernel::kPrefixSum, WeightKind::kWeights, k, 1);
      }
    }
    for (int64_t k : {int64_t{32}, int64_t{256}, int64_t{1024}}) {
      run(float{}, CategoricalKernel::kButterfly, WeightKind::kWeights, k, 4);
    }
    for (int64_t k : {int64_t{32}, int64_t{64}, int64_t{128}}) {
      for (int32_t draws : {4, 32}) {
        run(float{}, CategoricalKernel::kLanes, WeightKind::kWeights, k, draws);
        run(float{}, CategoricalKernel::kLaneGroups, WeightKind::kWeights, k,
            draws);
      }
    }
    bench.Fill<float>(WeightKind::kLogits);
    for (int64_t k : {int64_t{32}, int64_t{256}, int64_t{1024}}) {
      if (k <= kLanesLargestK) {
        run(float{}, CategoricalKernel::kLanes, WeightKind::kLogits, k, 1);
      }
      if (k <= kLaneGroupsLargestK) {
        run(float{}, CategoricalKernel::kLaneGroups, WeightKind::kLogits, k, 1);
      }
      run(float{}, CategoricalKernel::kButterfly, WeightKind::kLogits, k, 1);
      run(float{}, CategoricalKernel::kWarpPerRow, WeightKind::kLogits, k, 1);
      run(float{}, CategoricalKernel::kWarpTiles, WeightKind::kLogits, k, 1);
      run(float{}, CategoricalKernel::kBlockRow, WeightKind::kLogits, k, 1);
    }
    bench.Fill<double>(WeightKind::kWeights);
    for (int64_t k : {int64_t{32}, int64_t{256}, int64_t{1024}}) {
      if (k <= kLanesLargestK) {
        run(double{}, CategoricalKernel::kLanes, WeightKind::kWeights, k, 1);
      }
      if (k <= kLaneGroupsLargestK) {
        run(double{}, CategoricalKernel::kLaneGroups, WeightKind::kWeights, k,
            1);
      }
      run(double{}, CategoricalKernel::kButterfly, WeightKind::kWeights, k, 1);
      run(double{}, CategoricalKernel::kWarpPerRow, WeightKind::kWeights, k, 1);
      run(double{}, CategoricalKernel::kWarpTiles, WeightKind::kWeights, k, 1);
      run(double{}, CategoricalKernel::kBlockRow, WeightKind::kWeights, k, 1);
    }
  }

  if (csv_path != nullptr) {
    FILE* f = std::fopen(csv_path, "w");
    if (f == nullptr) {
      std::perror(csv_path);
      return 1;
    }
    std::fprintf(f, "device,%s\ncopy_tb_per_s,%.4f\n", prop.name, *copy);
    std::fprintf(f,
                 "kernel,precision,kind,K,rows,draws,median_us,min_us,"
                 "rows_per_s,tb_per_s,fraction_of_copy,service\n");
    for (const Result& r : results) {
      std::fprintf(f, "%s,%s,%s,%lld,%lld,%d,%.2f,%.2f,%.4g,%.4f,%.4f,%d\n",
                   r.kernel.c_str(), r.precision.c_str(), r.kind.c_str(),
                   static_cast<long long>(r.k), static_cast<long long>(r.rows),
                   r.draws, r.median_us, r.min_us, r.rows_per_s, r.tb_per_s,
                   r.fraction_of_copy, r.service ? 1 : 0);
    }
    std::fclose(f);
  }
  return 0;
}

}  // namespace
}  // namespace sampler::kernels::cuda

int main(int argc, char** argv) {
  return sampler::kernels::cuda::Main(argc, argv);
}
