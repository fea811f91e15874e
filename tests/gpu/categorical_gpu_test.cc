// GPU tests of the categorical kernels: every output must equal, bit for
// bit, what the CPU backend returns for the same request (kButterfly,
// kWarpPerRow, kRowSplit, kLanes, kWarpTiles, kLaneGroups and kBlockRow:
// SampleCategoricalCpu;
// kPrefixSum:
// SampleCategoricalReferenceCpu). Inputs are fresh random values from
// std::random_device seeds, printed on failure; outputs are poisoned before
// each launch so that an unwritten output fails. Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/categorical.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/cuda/status.h"
#include "tests/gpu/gpu_test_util.h"

namespace sampler::kernels::cuda {
namespace {

constexpr int32_t kPoison = static_cast<int32_t>(0xabababab);

// Input values from a seeded engine, converted by hand so that they do not
// depend on the standard library's distributions.
class InputRng {
 public:
  explicit InputRng(uint64_t seed) : engine_(seed) {}
  double Unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  int64_t Below(int64_t n) {
    return static_cast<int64_t>(Unit() * static_cast<double>(n));
  }
  uint64_t Bits() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

uint64_t FreshSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) | device();
}

// One row's values of kind `kind` in T: a mix of patterns that exercises
// zero weights (and -inf logits), wide dynamic ranges, subnormals and rows
// whose mass sits in one category.
template <typename T>
void FillRow(InputRng& rng, int64_t k, WeightKind kind, T* row) {
  const int pattern = static_cast<int>(rng.Below(8));
  // Up to 1e30 for float (so that a row of 1500 stays under max / 2), 1e300
  // for double.
  const double big = std::is_same_v<T, float> ? 1e30 : 1e300;
  const double tiny = std::is_same_v<T, float> ? 1e-42 : 1e-310;  // subnormal
  std::vector<double> w(k);
  for (int64_t j = 0; j < k; ++j) {
    const double u = rng.Unit();
    switch (pattern) {
      case 0:  // uniform (0, 1]
        w[j] = 1.0 - u;
        break;
      case 1:  // log-uniform over 30 decades, some zeros
        w[j] = rng.Below(4) == 0 ? 0.0 : std::pow(10.0, -30.0 * u);
        break;
      case 2:  // mostly zeros
        w[j] = rng.Below(8) == 0 ? 1.0 - u : 0.0;
        break;
      case 3:  // huge and tiny (subnormal) together, zeros of both signs
        w[j] = rng.Below(3) == 0   ? big * (1.0 - u)
               : rng.Below(2) == 0 ? tiny
               : rng.Below(2) == 0 ? 0.0
                                   : -0.0;
        break;
      case 4:  // one dominant category among tiny ones
        w[j] = 1e-20 * (1.0 - u);
        break;
      case 6:  // a subnormal total: every weight subnormal or zero
        w[j] = rng.Below(3) == 0 ? 0.0 : tiny * (1.0 - u);
        break;
      default:  // small integers with many zeros (ties at boundaries)
        w[j] = static_cast<double>(rng.Below(3));
        break;
    }
  }
  if (pattern == 4) w[rng.Below(k)] = 1.0;
  // Never all zero.
  bool any = false;
  for (double x : w) any = any || static_cast<T>(x) > T(0);
  if (!any) w[rng.Below(k)] = 1.0;
  for (int64_t j = 0; j < k; ++j) {
    if (kind == WeightKind::kWeights) {
      row[j] = static_cast<T>(w[j]);
    } else {
      // Logits: log of the weight (-inf for zero), shifted by a random
      // offset so that the maximum is not 0.
      const T l = w[j] > 0 ? static_cast<T>(std::log(w[j]))
                           : -std::numeric_limits<T>::infinity();
      row[j] = l + static_cast<T>(std::floor(40.0 * rng.Unit() - 20.0));
    }
  }
}

template <typename T>
std::vector<T> MakeValues(InputRng& rng, int64_t rows, int64_t k,
                          WeightKind kind) {
  std::vector<T> v(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) FillRow(rng, k, kind, v.data() + r * k);
  return v;
}

const char* KindName(WeightKind kind) {
  return kind == WeightKind::kLogits ? "logits" : "weights";
}

// A request (or a chunk of one) and its expected output from the CPU.
struct Request {
  CategoricalSegment segment;
  std::vector<int32_t> expected;
};

// A segmented batch: the concatenated values, the segments, and everything
// the CPU expects.
template <typename T>
struct Batch {
  std::vector<T> values;
  std::vector<Request> requests;
  uint64_t out_size = 0;

  // Appends a request of `rows` rows; its expected output comes from
  // `kernel`'s CPU twin.
  void Add(InputRng& rng, int64_t rows, int64_t k, int32_t draws,
           WeightKind kind, uint64_t seed, uint64_t first_row,
           CategoricalKernel kernel) {
    std::vector<T> v = MakeValues<T>(rng, rows, k, kind);
    AddValues(v, rows, k, draws, kind, seed, first_row, kernel);
  }

  void AddValues(const std::vector<T>& v, int64_t rows, int64_t k,
                 int32_t draws, WeightKind kind, uint64_t seed,
                 uint64_t first_row, CategoricalKernel kernel) {
    Request req;
    req.segment.values_offset = values.size();
    req.segment.out_offset = out_size;
    req.segment.seed = seed;
    req.segment.first_row = first_row;
    req.segment.rows = rows;
    req.segment.categories = k;
    req.segment.draws = draws;
    req.segment.kind = kind;
    values.insert(values.end(), v.begin(), v.end());
    out_size += static_cast<uint64_t>(rows * draws);
    req.expected.assign(static_cast<size_t>(rows * draws), -1);
    const CategoricalShape shape{rows, k, draws};
    const absl::Status s =
        kernel == CategoricalKernel::kPrefixSum
            ? SampleCategoricalReferenceCpu<T>(v, shape, kind, seed, first_row,
                                               absl::MakeSpan(req.expected))
            : SampleCategoricalCpu<T>(v, shape, kind, seed, first_row,
                                      absl::MakeSpan(req.expected));
    ASSERT_TRUE(s.ok()) << s;
    requests.push_back(std::move(req));
  }
};

// Changes to a plan that keep the bits (the benchmark's variants).
struct PlanTweaks {
  bool warp_tiles_evict_first = false;
  // > 0: the warps of a block-row block (the benchmark's "-2x"; 8 for
  // streamed chunks: "-st-8w").
  int block_row_warps = 0;
  // > 0: block-row's blocks a row (ReplanBlockRowCtas, "-c2x" to "-c8x").
  int block_row_ctas = 0;
  // Block-row with a thread a draw at one draw too, its warp-wide draw off
  // ("-td").
  bool block_row_thread_draws = false;
  // > 0: block-row's streamed chunks at this factor of their planner's
  // blocks a row (ReplanBlockRowStreamed, "-st", "-st-c2x", "-st-c4x").
  int block_row_streamed_split = 0;
  // Lane groups' prefix table (one lane a row, K <= 32) forced on (1) or
  // off (0) whatever the draws ("-pt", "-ce"); -1: as planned.
  int lane_groups_table = -1;
};

// Runs `batch` through `kernel` on the GPU (the staging pipeline, with the
// requests added in order, so that their offsets are the batch's) and
// returns the whole output, with `tweaks` applied to the plan.
template <typename T>
std::vector<int32_t> RunOnGpu(const Batch<T>& batch, CategoricalKernel kernel,
                              const PlanTweaks& tweaks = {}) {
  CategoricalBatchBuilder<T> builder(kernel);
  for (const Request& r : batch.requests) {
    const CategoricalSegment& s = r.segment;
    const absl::Span<const T> values =
        absl::MakeConstSpan(batch.values)
            .subspan(s.values_offset,
                     static_cast<size_t>(s.rows * s.categories));
    const absl::StatusOr<int> added = builder.Add(
        values, {s.rows, s.categories, s.draws}, s.kind, s.seed, s.first_row);
    EXPECT_TRUE(added.ok()) << added.status();
    if (!added.ok()) return {};
    EXPECT_EQ(builder.out_offset(*added), s.out_offset);
  }
  const absl::Status finished = builder.Finish();
  EXPECT_TRUE(finished.ok()) << finished;
  if (!finished.ok()) return {};
  builder.mutable_plan().warp_tiles_evict_first = tweaks.warp_tiles_evict_first;
  if (tweaks.block_row_thread_draws) {
    builder.mutable_plan().block_row_warp_draws = false;
  }
  int64_t largest_k = 0;
  for (const Request& r : batch.requests) {
    largest_k = std::max(largest_k, r.segment.categories);
  }
  if (tweaks.lane_groups_table >= 0) {
    builder.mutable_plan().lane_groups_table = tweaks.lane_groups_table == 1;
  }
  if (tweaks.block_row_ctas > 0) {
    const absl::Status replanned = ReplanBlockRowCtas(
        largest_k, tweaks.block_row_ctas, &builder.mutable_plan());
    EXPECT_TRUE(replanned.ok()) << replanned;
    if (!replanned.ok()) return {};
  }
  if (tweaks.block_row_streamed_split > 0) {
    const absl::Status replanned = ReplanBlockRowStreamed(
        largest_k, tweaks.block_row_streamed_split, &builder.mutable_plan());
    EXPECT_TRUE(replanned.ok()) << replanned;
    if (!replanned.ok()) return {};
  }
  if (tweaks.block_row_warps > 0) {  // after the replans, which set them
    builder.mutable_plan().block_row_warps = tweaks.block_row_warps;
  }

  absl::StatusOr<std::unique_ptr<Stager>> stager = Stager::Create();
  EXPECT_TRUE(stager.ok()) << stager.status();
  if (!stager.ok()) return {};
  const StagingPlan plan = builder.Staging();
  std::vector<int32_t> host(batch.out_size, kPoison);
  const absl::StatusOr<double> ran = (*stager)->Run(
      plan, [&](char* staged) { builder.PackInto(staged); },
      [&](const DeviceRegions& device, cudaStream_t st) -> absl::Status {
        // Poison: every output must be written.
        SAMPLER_CUDA_RETURN_IF_ERROR(
            cudaMemsetAsync(device.out, 0xab, plan.out_bytes, st));
        SAMPLER_CUDA_RETURN_IF_ERROR(
            cudaMemsetAsync(device.scratch, 0xff, plan.scratch_bytes, st));
        return LaunchCategorical(builder.View(device), st);
      },
      [&](const char* staged) {
        const int32_t* out = builder.Outputs(staged);
        std::copy(out, out + batch.out_size, host.begin());
      });
  EXPECT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  return host;
}

// Compares every request's slice; reports the first mismatches.
template <typename T>
void ExpectMatches(const Batch<T>& batch, const std::vector<int32_t>& got,
                   const std::string& what) {
  ASSERT_EQ(got.size(), batch.out_size) << what;
  int64_t bad = 0;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const Request& r = batch.requests[i];
    const CategoricalSegment& s = r.segment;
    for (int64_t row = 0; row < s.rows; ++row) {
      for (int32_t d = 0; d < s.draws; ++d) {
        const size_t at = static_cast<size_t>(row * s.draws + d);
        const int32_t want = r.expected[at];
        const int32_t have = got[s.out_offset + at];
        if (want != have) {
          if (++bad <= 8) {
            ADD_FAILURE() << what << ": request " << i << " (K " << s.categories
                          << ", D " << s.draws << ", " << KindName(s.kind)
                          << ", seed " << s.seed << ", first_row "
                          << s.first_row << ") row " << row << " draw " << d
                          << ": CPU " << want << ", GPU " << have;
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " mismatches";
}

// One launch of `requests` requests with their own K (one in six large:
// big_from + Below(big_span), the others 1 to 3,000), D (one in three up to
// 300), kind, seed and first row, 1 to max_rows rows each, through `kernel`.
template <typename T>
void ExpectMixedBatchMatches(InputRng& rng, CategoricalKernel kernel,
                             int requests, int64_t big_from, int64_t big_span,
                             int64_t max_rows, const std::string& what,
                             const PlanTweaks& tweaks = {}) {
  Batch<T> batch;
  for (int i = 0; i < requests; ++i) {
    const int64_t k = rng.Below(6) == 0 ? big_from + rng.Below(big_span)
                                        : 1 + rng.Below(3000);
    const int32_t draws = rng.Below(3) == 0 ? 1 + rng.Below(300) : 1;
    const WeightKind kind =
        rng.Below(2) == 0 ? WeightKind::kWeights : WeightKind::kLogits;
    batch.Add(rng, 1 + rng.Below(max_rows), k, draws, kind, rng.Bits(),
              rng.Below(1000), kernel);
  }
  ExpectMatches(batch, RunOnGpu(batch, kernel, tweaks), what);
}

template <typename T>
class CategoricalGpuTest : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CategoricalGpuTest, Precisions);

constexpr int64_t kCategories[] = {1,  2,   7,    31,   32,  33,
                                   64, 100, 1000, 1024, 1500};
constexpr int32_t kDraws[] = {1, 3, 17};

// Each K, D and kind as its own request, rows not a multiple of 32, and a
// first row that is usually not a multiple of 32 either.
TYPED_TEST(CategoricalGpuTest, ButterflyMatchesCpuForEveryShape) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  for (int64_t k : kCategories) {
    for (int32_t draws : kDraws) {
      for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
        Batch<T> batch;
        const int64_t rows = 33 + rng.Below(70) * (k > 512 ? 1 : 2);
        const uint64_t first_row = rng.Below(3) == 0 ? 0 : rng.Bits() >> 20;
        batch.Add(rng, rows, k, draws, kind, rng.Bits(), first_row,
                  CategoricalKernel::kButterfly);
        ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kButterfly),
                      absl::StrCat("K ", k, " D ", draws, " ", KindName(kind)));
      }
    }
  }
}

// The grid of issue 10: K from 1 to 2^20 (remnant only, one block, a
// remnant and blocks, shared-memory and workspace block ends), D = 1, 4, 32,
// weights and logits; rows mix every FillRow pattern (subnormal totals,
// weights spanning 30 decades, zeros), 33 rows starting at an odd item so
// that two warps and their idle lanes are exercised.
TYPED_TEST(CategoricalGpuTest, ButterflyMatchesCpuUpToTwoToThe20) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  for (int64_t k :
       {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{100},
        int64_t{1024}, int64_t{4096}, int64_t{131072}, int64_t{1} << 20}) {
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      const int64_t rows = k >= 131072 ? 33 : 33 + rng.Below(100);
      const std::vector<T> values = MakeValues<T>(rng, rows, k, kind);
      for (int32_t draws : {1, 4, 32}) {
        const uint64_t first_row = 1 + 2 * rng.Below(1000);
        Batch<T> batch;
        batch.AddValues(values, rows, k, draws, kind, rng.Bits(), first_row,
                        CategoricalKernel::kButterfly);
        ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kButterfly),
                      absl::StrCat("K ", k, " D ", draws, " ", KindName(kind)));
      }
    }
  }
}

// One launch for many requests with their own K, D, kind, seed and first
// row, some of a single row, in random order.
TYPED_TEST(CategoricalGpuTest, ButterflyMixedBatch) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  for (int round = 0; round < 3; ++round) {
    Batch<T> batch;
    const int n = 20 + static_cast<int>(rng.Below(20));
    for (int i = 0; i < n; ++i) {
      const int64_t k = rng.Below(4) == 0
                            ? kCategories[rng.Below(std::size(kCategories))]
                            : 1 + rng.Below(300);
      const int64_t rows = rng.Below(5) == 0 ? 1 : 1 + rng.Below(90);
      const int32_t draws = rng.Below(3) == 0 ? 1 + rng.Below(9) : 1;
      const WeightKind kind =
          rng.Below(2) == 0 ? WeightKind::kWeights : WeightKind::kLogits;
      const uint64_t first_row = rng.Below(2) == 0 ? 0 : rng.Below(1000);
      batch.Add(rng, rows, k, draws, kind, rng.Bits(), first_row,
                CategoricalKernel::kButterfly);
    }
    ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kButterfly),
                  absl::StrCat("mixed batch ", round));
  }
}

// A request cut into chunks at arbitrary rows (stream chunks start
// mid-warp) and sent in one batch, out of order, equals the whole request
// on the CPU.
TYPED_TEST(CategoricalGpuTest, ButterflyChunksEqualTheWholeRequest) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  for (int64_t k : {int64_t{5}, int64_t{32}, int64_t{70}, int64_t{1000}}) {
    const int64_t rows = 300;
    const int32_t draws = 2;
    const uint64_t request_seed = rng.Bits();
    const std::vector<T> values =
        MakeValues<T>(rng, rows, k, WeightKind::kWeights);
    std::vector<int32_t> whole(rows * draws);
    ASSERT_TRUE(SampleCategoricalCpu<T>(values, {rows, k, draws},
                                        WeightKind::kWeights, request_seed, 0,
                                        absl::MakeSpan(whole))
                    .ok());
    // Cut points, then the chunks in reverse order.
    std::vector<int64_t> cuts = {0, rows};
    for (int i = 0; i < 6; ++i) cuts.push_back(1 + rng.Below(rows - 1));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    Batch<T> batch;
    std::vector<std::pair<int64_t, uint64_t>> placed;  // first row, offset
    for (size_t c = cuts.size() - 1; c > 0; --c) {
      const int64_t begin = cuts[c - 1];
      const int64_t end = cuts[c];
      std::vector<T> chunk(values.begin() + begin * k,
                           values.begin() + end * k);
      placed.push_back({begin, batch.out_size});
      batch.AddValues(chunk, end - begin, k, draws, WeightKind::kWeights,
                      request_seed, static_cast<uint64_t>(begin),
                      CategoricalKernel::kButterfly);
    }
    const std::vector<int32_t> got =
        RunOnGpu(batch, CategoricalKernel::kButterfly);
    ExpectMatches(batch, got, absl::StrCat("chunks, K ", k));
    // And the chunks laid back together are the whole request.
    for (size_t i = 0; i < placed.size(); ++i) {
      const CategoricalSegment& s = batch.requests[i].segment;
      for (int64_t r = 0; r < s.rows * draws; ++r) {
        ASSERT_EQ(got[placed[i].second + r], whole[placed[i].first * draws + r])
            << "K " << k << " chunk at row " << placed[i].first;
      }
    }
  }
}

// Past the shared-memory capacity for block ends (32 blocks of uint64) the
// kernel keeps them in the workspace.
TYPED_TEST(CategoricalGpuTest, ButterflyLargeKUsesTheWorkspace) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  Batch<T> batch;
  batch.Add(rng, 45, 2100, 3, WeightKind::kWeights, rng.Bits(), 7,
            CategoricalKernel::kButterfly);
  batch.Add(rng, 33, 5000, 1, WeightKind::kLogits, rng.Bits(), 64,
            CategoricalKernel::kButterfly);
  batch.Add(rng, 40, 96, 2, WeightKind::kWeights, rng.Bits(), 3,
            CategoricalKernel::kButterfly);
  ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kButterfly),
                "large K");
}

// Many draws per row: several Philox blocks per row, and reloads of the
// chosen blocks from draw to draw.
TYPED_TEST(CategoricalGpuTest, ButterflyManyDraws) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  Batch<T> batch;
  for (int64_t k : {int64_t{3}, int64_t{32}, int64_t{40}, int64_t{300}}) {
    batch.Add(rng, 35, k, 257, WeightKind::kWeights, rng.Bits(), 1,
              CategoricalKernel::kButterfly);
  }
  ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kButterfly),
                "many draws");
}

// The baseline agrees with the CPU reference (sequential prefix sums).
TYPED_TEST(CategoricalGpuTest, PrefixSumMatchesCpuReference) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  Batch<T> batch;
  for (int64_t k : kCategories) {
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      batch.Add(rng, 1 + rng.Below(60), k, kDraws[rng.Below(3)], kind,
                rng.Bits(), rng.Below(100), CategoricalKernel::kPrefixSum);
    }
  }
  ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kPrefixSum),
                "prefix sum");
}

// The comparison kernel (one warp per row) gives the contract's bits too.
TYPED_TEST(CategoricalGpuTest, WarpPerRowMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  Batch<T> batch;
  for (int64_t k : kCategories) {
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      batch.Add(rng, 1 + rng.Below(60), k, kDraws[rng.Below(3)], kind,
                rng.Bits(), rng.Below(100), CategoricalKernel::kWarpPerRow);
    }
  }
  batch.Add(rng, 5, 70000, 2, WeightKind::kWeights, rng.Bits(), 0,
            CategoricalKernel::kWarpPerRow);  // block ends in the workspace
  ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kWarpPerRow),
                "warp per row");
}

// The row-split kernel (one row across a cluster of 1 to 8 thread blocks)
// at issue 11's sizes and at its split boundaries: one block up to K = 4096
// (K = 33: one group and one element; 257: a partial last group), 4097,
// 8193 and 16385 (two, four and eight blocks of 2,080 values, the last one
// short), 2^15, 2^17 (8 chunks of 16,384) and the largest K a block's shared
// memory takes; D = 1, 4, 32; weights and logits, every FillRow pattern.
TYPED_TEST(CategoricalGpuTest, RowSplitMatchesCpuAtIssueSizes) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  const int64_t largest = std::is_same_v<T, float> ? 385280 : 198400;
  for (int64_t k :
       {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{64},
        int64_t{100}, int64_t{256}, int64_t{257}, int64_t{449}, int64_t{4096},
        int64_t{4097}, int64_t{1} << 15, int64_t{1} << 17, largest}) {
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      const int64_t rows = k >= 4096 ? 3 + rng.Below(4) : 5 + rng.Below(40);
      const std::vector<T> values = MakeValues<T>(rng, rows, k, kind);
      for (int32_t draws : {1, 4, 32}) {
        Batch<T> batch;
        batch.AddValues(values, rows, k, draws, kind, rng.Bits(),
                        rng.Below(1000), CategoricalKernel::kRowSplit);
        ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kRowSplit),
                      absl::StrCat("row split, K ", k, " D ", draws, " ",
                                   KindName(kind)));
      }
    }
  }
}

// The largest K that kBlockRow takes in T.
template <typename T>
int64_t BlockRowLargestK() {
  return BlockRowMaxCategories(std::is_same_v<T, float> ? Precision::kFloat32
                                                        : Precision::kFloat64);
}

// Rows whose total lies within 2^-19 of a power of two with inexact sums
// (weights with long significands): the blocks' own sum cannot settle the
// scale, and the row-split kernel's block 0 forms the contract's
// column-order sum itself from global memory, the block-row kernel's warp 0
// from shared memory. Just below and just above 1, and the exact case
// (equal weights summing to a power of two: settled by the row-split
// kernel's exactness test, by the contract's sum in the block-row kernel).
// `tweaks` go to RunOnGpu.
template <typename T>
void ExpectScaleNearAPowerOfTwoMatches(InputRng& rng, CategoricalKernel kernel,
                                       const PlanTweaks& tweaks = {},
                                       std::initializer_list<int64_t> ks = {
                                           int64_t{1000}, int64_t{4097},
                                           int64_t{1} << 17}) {
  Batch<T> batch;
  for (int64_t k : ks) {
    if (kernel == CategoricalKernel::kBlockRow && k > BlockRowLargestK<T>()) {
      continue;
    }
    for (const double head : {1.0 - 0x1p-20, 1.0 + 0x1p-20, 1.0}) {
      const int64_t rows = 2;
      std::vector<T> values(static_cast<size_t>(rows * k));
      for (int64_t r = 0; r < rows; ++r) {
        T* row = values.data() + r * k;
        for (int64_t j = 0; j < k; ++j) {
          // Tiny weights with every significand bit random, about 2^-50
          // in all: the total stays within 2^-19 of 1.
          row[j] = head == 1.0
                       ? T(1)
                       : static_cast<T>((0.5 + 0.5 * rng.Unit()) * 0x1p-68);
        }
        if (head != 1.0) row[rng.Below(k)] = static_cast<T>(head);
      }
      batch.AddValues(values, rows, k, 1 + static_cast<int32_t>(rng.Below(40)),
                      WeightKind::kWeights, rng.Bits(), rng.Below(64), kernel);
    }
  }
  ExpectMatches(
      batch, RunOnGpu(batch, kernel, tweaks),
      absl::StrCat(CategoricalKernelName(kernel), " near a power of two"));
}

TYPED_TEST(CategoricalGpuTest, RowSplitScaleNearAPowerOfTwo) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  ExpectScaleNearAPowerOfTwoMatches<T>(rng, CategoricalKernel::kRowSplit);
}

// One launch of many requests with their own K (the chunk is the batch's
// largest, so small rows sit in the first block), D, kind, seed and row.
TYPED_TEST(CategoricalGpuTest, RowSplitMixedBatch) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  ExpectMixedBatchMatches<T>(rng, CategoricalKernel::kRowSplit, 24, 20000,
                             50000, 8, "row split mixed batch");
}

// The kernels for small K: the lane-per-row kernel (K up to 128) and the
// lane-group kernel (up to 512: 1, 2, 4, 8 or 16 lanes a row, one launch
// per group size).
constexpr CategoricalKernel kSmallKKernels[] = {CategoricalKernel::kLanes,
                                                CategoricalKernel::kLaneGroups};

// Every K from 1 to the kernel's largest in one batch (the remnant alone,
// blocks and a remnant, every chunk length, every group size), D = 1, 4,
// 17 and 32,
// weights and logits, every FillRow pattern (subnormal totals, zeros of
// both signs, 30 decades), rows not a multiple of 32 from a first row
// usually mid-warp.
TYPED_TEST(CategoricalGpuTest, LanesMatchesCpuForEveryK) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  for (CategoricalKernel kernel : kSmallKKernels) {
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      for (const int32_t draws : {1, 4, 17, 32}) {
        Batch<T> batch;
        const int64_t largest_k =
            kernel == CategoricalKernel::kLanes ? 128 : 512;
        for (int64_t k = 1; k <= largest_k; ++k) {
          const uint64_t first_row = rng.Below(3) == 0 ? 0 : rng.Bits() >> 20;
          batch.Add(rng, 1 + rng.Below(80), k, draws, kind, rng.Bits(),
                    first_row, kernel);
        }
        ExpectMatches(batch, RunOnGpu(batch, kernel),
                      absl::StrCat(CategoricalKernelName(kernel), ", D ", draws,
                                   " ", KindName(kind)));
      }
    }
  }
}

// Many rows of one K (several warps per SM in flight, full warps) and many
// draws, and a request cut into chunks that start mid-warp.
TYPED_TEST(CategoricalGpuTest, LanesManyRowsAndChunks) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  for (CategoricalKernel kernel : kSmallKKernels) {
    Batch<T> batch;
    for (int64_t k : {int64_t{32}, int64_t{64}, int64_t{100}, int64_t{128},
                      int64_t{256}, int64_t{257}, int64_t{512}}) {
      if (k > 128 && kernel == CategoricalKernel::kLanes) continue;
      batch.Add(rng, 5000, k, 1, WeightKind::kWeights, rng.Bits(), 0, kernel);
      batch.Add(rng, 300, k, 257, WeightKind::kWeights, rng.Bits(), 5, kernel);
      const std::vector<T> values =
          MakeValues<T>(rng, 200, k, WeightKind::kLogits);
      const uint64_t request_seed = rng.Bits();
      for (int64_t begin : {int64_t{0}, int64_t{7}, int64_t{61}}) {
        const int64_t end = begin == 0 ? 7 : begin == 7 ? 61 : 200;
        batch.AddValues(std::vector<T>(values.begin() + begin * k,
                                       values.begin() + end * k),
                        end - begin, k, 3, WeightKind::kLogits, request_seed,
                        static_cast<uint64_t>(begin), kernel);
      }
    }
    ExpectMatches(
        batch, RunOnGpu(batch, kernel),
        absl::StrCat(CategoricalKernelName(kernel), ", many rows and chunks"));
  }
}

// Lane groups' prefix tables (the planner's at K <= 32 from 32 draws a row)
// forced on and off at every K to 40 (not multiples of 32 or of 4 among them)
// and at every group size's edges to 512, with 1, 4 and 32 draws, weights and
// logits, every FillRow pattern (zeros of both signs, one huge weight
// among tiny ones, subnormal totals), rows not a multiple of 32 from a
// first row usually mid-warp.
TYPED_TEST(CategoricalGpuTest, LaneGroupsPrefixTableMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  const CategoricalKernel kernel = CategoricalKernel::kLaneGroups;
  for (const int table : {1, 0}) {
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      for (const int32_t draws : {1, 4, 32}) {
        Batch<T> batch;
        for (int64_t k = 1; k <= 40; ++k) {
          const uint64_t first_row = rng.Below(3) == 0 ? 0 : rng.Bits() >> 20;
          batch.Add(rng, 1 + rng.Below(200), k, draws, kind, rng.Bits(),
                    first_row, kernel);
        }
        for (const int64_t k : {63, 64, 65, 97, 100, 127, 128, 129, 200, 255,
                                256, 257, 300, 511, 512}) {
          batch.Add(rng, 1 + rng.Below(80), k, draws, kind, rng.Bits(),
                    rng.Below(1000), kernel);
        }
        PlanTweaks tweaks;
        tweaks.lane_groups_table = table;
        ExpectMatches(batch, RunOnGpu(batch, kernel, tweaks),
                      absl::StrCat("lane groups, table ", table, ", D ", draws,
                                   " ", KindName(kind)));
      }
    }
  }
}

// The warp-tiles kernel (K up to 2^17): K around its tiles of 128 (one
// tile, a partial last tile, many tiles) and the contract's blocks of 32,
// D = 1, 4 and 32, weights and logits, every FillRow pattern, rows whose
// start is and is not 16-byte aligned.
TYPED_TEST(CategoricalGpuTest, WarpTilesMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  for (int64_t k :
       {int64_t{1}, int64_t{33}, int64_t{127}, int64_t{128}, int64_t{129},
        int64_t{255}, int64_t{256}, int64_t{1000}, int64_t{1001}, int64_t{4096},
        int64_t{16385}, int64_t{1} << 17}) {
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      const int64_t rows = k >= 16384 ? 2 + rng.Below(4) : 3 + rng.Below(40);
      const std::vector<T> values = MakeValues<T>(rng, rows, k, kind);
      Batch<T> batch;
      for (int32_t draws : {1, 4, 32}) {
        batch.AddValues(values, rows, k, draws, kind, rng.Bits(),
                        rng.Below(1000), CategoricalKernel::kWarpTiles);
      }
      // Also with the evict-first second pass (CategoricalPlan::
      // warp_tiles_evict_first, a benchmark variant): the same loads.
      for (const bool evict_first : {false, true}) {
        ExpectMatches(
            batch,
            RunOnGpu(batch, CategoricalKernel::kWarpTiles,
                     PlanTweaks{evict_first}),
            absl::StrCat("warp tiles", evict_first ? " evict-first" : "",
                         ", K ", k, " ", KindName(kind)));
      }
    }
  }
}

// One launch of many requests with their own K (the tile ends sized by the
// largest), D, kind, seed and first row.
TYPED_TEST(CategoricalGpuTest, WarpTilesMixedBatch) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  ExpectMixedBatchMatches<T>(rng, CategoricalKernel::kWarpTiles, 30, 10000,
                             30000, 20, "warp tiles mixed batch");
}

// The block-row tests' batch: random rows of K (3 to 8 from K = 8,192, 3
// to 62 below), the same values once for each of `draws_list` draws a row,
// each with its own seed and first row.
template <typename T>
Batch<T> BlockRowBatch(InputRng& rng, int64_t k, WeightKind kind,
                       std::initializer_list<int32_t> draws_list) {
  const int64_t rows = k >= 8192 ? 3 + rng.Below(6) : 3 + rng.Below(60);
  const std::vector<T> values = MakeValues<T>(rng, rows, k, kind);
  Batch<T> batch;
  for (int32_t draws : draws_list) {
    batch.AddValues(values, rows, k, draws, kind, rng.Bits(), rng.Below(1000),
                    CategoricalKernel::kBlockRow);
  }
  return batch;
}

// The block-row kernel (one block a row, the row in shared memory; a
// cluster of 2 to 8 blocks past K = 16,384, each holding a chunk): K around
// its groups of 16 floats (8 doubles) and 16-byte vectors (rows whose start
// is and is not 16-byte aligned: consecutive rows of odd K start at every
// offset, and K < 4 has no aligned middle at all), the contract's blocks of
// 32, the block sizes (1 warp up to K = 1,024, 16 from 8,193), the cluster
// sizes (4, 8 and 16 blocks of up to 32 KiB: 16,385, 2^15 + 1, 2^17) and
// the largest K (8 blocks of up to 64 KiB);
// D = 1, 4 and 32; weights and logits; every FillRow pattern (zeros of both
// signs, one dominant weight, subnormal totals, 30 decades).
TYPED_TEST(CategoricalGpuTest, BlockRowMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  const int64_t largest = BlockRowLargestK<T>();
  for (int64_t k : {int64_t{1},
                    int64_t{2},
                    int64_t{3},
                    int64_t{5},
                    int64_t{15},
                    int64_t{16},
                    int64_t{17},
                    int64_t{33},
                    int64_t{255},
                    int64_t{257},
                    int64_t{1000},
                    int64_t{1023},
                    int64_t{1025},
                    int64_t{4096},
                    int64_t{4097},
                    int64_t{8193},
                    int64_t{13001},
                    int64_t{16385},
                    (int64_t{1} << 15) + 1,
                    int64_t{1} << 17,
                    largest}) {
    if (k > largest) continue;  // double's largest is below 2^17
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      const Batch<T> batch = BlockRowBatch<T>(rng, k, kind, {1, 4, 32});
      ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kBlockRow),
                    absl::StrCat("block row, K ", k, " ", KindName(kind)));
    }
  }
}

// Many rows a block (each block walks rows blockIdx.x, + gridDim.x, ...
// through its two buffers), many draws (more than a block's threads), and
// the near-power-of-two scales of the row-split test.
TYPED_TEST(CategoricalGpuTest, BlockRowManyRowsAndDraws) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  Batch<T> batch;
  batch.Add(rng, 20000, 257, 1, WeightKind::kWeights, rng.Bits(), 3,
            CategoricalKernel::kBlockRow);
  batch.Add(rng, 3000, 1001, 3, WeightKind::kLogits, rng.Bits(), 0,
            CategoricalKernel::kBlockRow);
  batch.Add(rng, 40, 300, 700, WeightKind::kWeights, rng.Bits(), 9,
            CategoricalKernel::kBlockRow);
  batch.Add(rng, 5, 5000, 1000, WeightKind::kWeights, rng.Bits(), 1,
            CategoricalKernel::kBlockRow);
  ExpectMatches(batch, RunOnGpu(batch, CategoricalKernel::kBlockRow),
                "block row, many rows and draws");
  // Any warps a block give the same bits (the plan's are 8 here).
  for (const int warps : {1, 32}) {
    ExpectMatches(batch,
                  RunOnGpu(batch, CategoricalKernel::kBlockRow,
                           PlanTweaks{false, /*block_row_warps=*/warps}),
                  absl::StrCat("block row, many rows and draws, ", warps,
                               " warps a block"));
  }
  ExpectScaleNearAPowerOfTwoMatches<T>(rng, CategoricalKernel::kBlockRow);
}

// For each K of `ks` up to block-row's largest, weights and logits: a
// BlockRowBatch of 1, 4 and 32 draws a row through block-row with each of
// the plan tweaks that tweaks_for(K) gives (each with its label).
template <typename T, typename TweaksFor>
void ExpectBlockRowTweaksMatch(InputRng& rng, std::initializer_list<int64_t> ks,
                               TweaksFor tweaks_for) {
  for (const int64_t k : ks) {
    if (k > BlockRowLargestK<T>()) continue;  // double's stops below 2^17
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      const Batch<T> batch = BlockRowBatch<T>(rng, k, kind, {1, 4, 32});
      for (const auto& [tweaks, label] : tweaks_for(k)) {
        ExpectMatches(
            batch, RunOnGpu(batch, CategoricalKernel::kBlockRow, tweaks),
            absl::StrCat("block row, K ", k, " ", KindName(kind), ", ", label));
      }
    }
  }
}

// Split rows (ReplanBlockRowCtas, the benchmark's "-c2x" to "-c8x"
// variants): any blocks a row give the same bits, 16 (a non-portable
// cluster) included. K below 32 and not a multiple of 4 (most of a
// cluster's blocks hold empty chunks), K = 257 and 1,000, one past the
// planner's one-block range, 2^15 + 1 and 2^17 (float; double stops at its
// largest); D = 1, 4 and 32; weights and logits; every FillRow pattern
// (zeros, one dominant weight, subnormal totals), and the near-power-of-two
// scales (block 0 forms the contract's sum from global memory).
TYPED_TEST(CategoricalGpuTest, BlockRowSplitRowsMatchCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  ExpectBlockRowTweaksMatch<T>(
      rng,
      {int64_t{17}, int64_t{257}, int64_t{1000}, int64_t{4097},
       int64_t{65536 / sizeof(T)} + 1, int64_t{20000}, (int64_t{1} << 15) + 1,
       int64_t{1} << 17},
      [](int64_t k) {
        std::vector<std::pair<PlanTweaks, std::string>> tweaks;
        for (const int ctas : {2, 4, 8, 16}) {
          // Chunks of at most 64 KiB: two buffers fit a block.
          if ((k + ctas - 1) / ctas * static_cast<int64_t>(sizeof(T)) <=
              65536) {
            tweaks.push_back({PlanTweaks{false, 0, /*block_row_ctas=*/ctas},
                              absl::StrCat(ctas, " blocks a row")});
          }
        }
        return tweaks;
      });
  ExpectScaleNearAPowerOfTwoMatches<T>(
      rng, CategoricalKernel::kBlockRow,
      PlanTweaks{false, 0, /*block_row_ctas=*/16});
}

// Warp-wide draws (CategoricalPlan::block_row_warp_draws, on in every
// plan) against a thread a draw (off: the benchmark's "-td"): rows of one
// block with 1 draw (2 to 5 and 32 keep a thread a draw in the same
// launch); K below a group (16 floats, 8 doubles), not a multiple of 4 or
// 32, up to 32 groups (one ballot step) and past 1,024 (a third), up to the
// largest one-block row; weights and logits, every FillRow pattern (zeros
// of both signs, one dominant weight, subnormal totals, 30 decades); a
// mixed batch; and many rows.
TYPED_TEST(CategoricalGpuTest, BlockRowWarpDrawsMatchCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  PlanTweaks warp_draws;  // the plan's own
  PlanTweaks thread_draws;
  thread_draws.block_row_thread_draws = true;
  const int64_t one_block = 65536 / static_cast<int64_t>(sizeof(T));
  for (int64_t k :
       {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}, int64_t{15},
        int64_t{16}, int64_t{17}, int64_t{33}, int64_t{255}, int64_t{257},
        int64_t{509}, int64_t{1000}, int64_t{1023}, int64_t{1025},
        int64_t{4097}, int64_t{13001}, one_block - 3, one_block}) {
    if (k > one_block) continue;  // double's one-block rows stop at 8,192
    for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
      const Batch<T> batch =
          BlockRowBatch<T>(rng, k, kind, {1, 2, 3, 4, 5, 32});
      for (const PlanTweaks* tweaks : {&warp_draws, &thread_draws}) {
        ExpectMatches(
            batch, RunOnGpu(batch, CategoricalKernel::kBlockRow, *tweaks),
            absl::StrCat("block row, ",
                         tweaks->block_row_thread_draws ? "thread" : "warp",
                         " draws, K ", k, " ", KindName(kind)));
      }
    }
  }
  Batch<T> mixed;
  for (int i = 0; i < 30; ++i) {
    const int64_t k = 1 + rng.Below(one_block);
    const WeightKind kind =
        rng.Below(2) == 0 ? WeightKind::kWeights : WeightKind::kLogits;
    mixed.Add(rng, 1 + rng.Below(k > 4096 ? 4 : 40), k,
              1 + static_cast<int32_t>(rng.Below(6)), kind, rng.Bits(),
              rng.Below(1000), CategoricalKernel::kBlockRow);
  }
  ExpectMatches(mixed,
                RunOnGpu(mixed, CategoricalKernel::kBlockRow, warp_draws),
                "block row, warp draws, mixed batch");
  // Enough rows that every block walks more than 32 of them (at K = 257 an
  // SM holds 32 one-warp blocks: 4,224 on 132 SMs), so that warp 0 forms
  // the Philox blocks of the next 32 rows again, some of them in the next
  // segment.
  Batch<T> many;
  many.Add(rng, 150000, 257, 1, WeightKind::kWeights, rng.Bits(), 5,
           CategoricalKernel::kBlockRow);
  many.Add(rng, 3000, 300, 3, WeightKind::kLogits, rng.Bits(), 0,
           CategoricalKernel::kBlockRow);
  many.Add(rng, 2000, 257, 2, WeightKind::kWeights, rng.Bits(), 1,
           CategoricalKernel::kBlockRow);
  ExpectMatches(many, RunOnGpu(many, CategoricalKernel::kBlockRow, warp_draws),
                "block row, warp draws, many rows");
}

// One launch of many requests with their own K (the buffers sized by the
// largest, the block's warps too), D, kind, seed and first row; then with
// large K, so that a cluster serves every row and the small rows leave its
// last blocks empty chunks.
TYPED_TEST(CategoricalGpuTest, BlockRowMixedBatch) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  ExpectMixedBatchMatches<T>(rng, CategoricalKernel::kBlockRow, 30, 4000, 9000,
                             20, "block row mixed batch");
  ExpectMixedBatchMatches<T>(rng, CategoricalKernel::kBlockRow, 24, 20000,
                             50000, 8, "block row mixed batch, clusters");
}

// Streamed chunks (CategoricalPlan::block_row_streamed, ReplanBlockRowStreamed;
// the benchmark's "block-row-st" variants): each block reads its chunk from
// global memory twice. K below a vector and a group, not a multiple of 4 or
// 32 (rows at every 16-byte offset), one block a row up to 64 KiB of values
// (16,384 floats, 8,192 doubles), then 2, 4, 8 and 16 blocks (16,385, 20,000,
// 2^15 + 1, 2^17), at 1, 2 and 4 times the planner's blocks a row (most
// blocks of small rows hold empty chunks); D = 1, 4 and 32; weights and
// logits; every FillRow pattern (zeros of both signs, one dominant weight,
// subnormal totals, 30 decades); and many rows a block or cluster (both
// slot sets, rows of several segments).
TYPED_TEST(CategoricalGpuTest, BlockRowStreamedMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  const int64_t one_block = 65536 / static_cast<int64_t>(sizeof(T));
  ExpectBlockRowTweaksMatch<T>(
      rng,
      {int64_t{1}, int64_t{3}, int64_t{17}, int64_t{257}, int64_t{1001},
       int64_t{4097}, one_block - 3, one_block, one_block + 1, int64_t{20000},
       (int64_t{1} << 15) + 1, int64_t{1} << 17},
      [one_block](int64_t k) {
        // At most 16 blocks a row: the planner's are the fewest power of
        // two whose chunks hold at most one_block values.
        int ctas = 1;
        while ((k + ctas - 1) / ctas > one_block) ctas *= 2;
        std::vector<std::pair<PlanTweaks, std::string>> tweaks;
        for (const int split : {1, 2, 4}) {
          if (ctas * split > 16) continue;
          PlanTweaks streamed;
          streamed.block_row_streamed_split = split;
          tweaks.push_back({streamed, absl::StrCat("streamed, split ", split)});
          if (split == 2) {  // "-st-8w"
            streamed.block_row_warps = 8;
            tweaks.push_back({streamed, "streamed, split 2, 8 warps"});
          }
        }
        return tweaks;
      });
  // Many rows a block or cluster (3,600 rows against 264 blocks, or 66
  // clusters of 4): each walks rows of both slot sets and of every segment.
  Batch<T> many;
  for (int i = 0; i < 3; ++i) {
    many.Add(rng, 2000 - 800 * i, 2999 + 1001 * i, i == 0 ? 40 : 1 + 2 * i,
             i == 1 ? WeightKind::kLogits : WeightKind::kWeights, rng.Bits(), i,
             CategoricalKernel::kBlockRow);
  }
  for (const int split : {1, 2, 4}) {
    PlanTweaks streamed;
    streamed.block_row_streamed_split = split;
    streamed.block_row_warps = split == 2 ? 8 : 0;  // "-st-8w"
    ExpectMatches(many, RunOnGpu(many, CategoricalKernel::kBlockRow, streamed),
                  absl::StrCat("block row streamed, many rows, split ", split));
  }
}

// Streamed chunks in one launch of many requests with their own K (the
// groups sized by the largest, which takes 8 blocks a row), D, kind, seed
// and first row (the small rows leave most of a cluster's blocks empty
// chunks), at 1 and (float) 2 times the planner's blocks a row (the latter
// in blocks of 8 warps); and the
// near-power-of-two scales (the contract's S_d from global memory, by one
// block and by a cluster's block 0). Small enough for the sanitizers.
TYPED_TEST(CategoricalGpuTest, BlockRowStreamedMixedBatch) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  // The largest K here (2^17 and under 70,000) takes 8 blocks a row in
  // float, so twice that stays at 16; in double 70,000 takes 16 already.
  const int most_split = std::is_same_v<T, float> ? 2 : 1;
  for (int split = 1; split <= most_split; ++split) {
    PlanTweaks streamed;
    streamed.block_row_streamed_split = split;
    streamed.block_row_warps = split == 2 ? 8 : 0;  // "-st-8w"
    ExpectScaleNearAPowerOfTwoMatches<T>(rng, CategoricalKernel::kBlockRow,
                                         streamed);
    ExpectMixedBatchMatches<T>(rng, CategoricalKernel::kBlockRow, 24, 20000,
                               50000, 8,
                               absl::StrCat("block row streamed mixed batch, "
                                            "split ",
                                            split),
                               streamed);
  }
}

// A few rows of streamed chunks, for the sanitizers (racecheck within a
// minute): one launch of rows of K = 1,001 and 20,000 (clusters of 2
// blocks in float, 4 in double) with 1, 4 (logits) and 32 draws, then rows
// of 20,000 whose scale needs the contract's S_d (block 0 reads it from
// global memory, its cluster waits for it); at the planner's blocks a row,
// and at twice them in blocks of 8 warps.
TYPED_TEST(CategoricalGpuTest, BlockRowStreamedFewRows) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", seed));
  InputRng rng(seed);
  Batch<T> batch;
  for (const int64_t k : {int64_t{1001}, int64_t{20000}}) {
    for (const int32_t draws : {1, 4, 32}) {
      batch.Add(rng, 2, k, draws,
                draws == 4 ? WeightKind::kLogits : WeightKind::kWeights,
                rng.Bits(), rng.Below(1000), CategoricalKernel::kBlockRow);
    }
  }
  for (const int split : {1, 2}) {
    PlanTweaks streamed;
    streamed.block_row_streamed_split = split;
    streamed.block_row_warps = split == 2 ? 8 : 0;  // "-st-8w"
    ExpectMatches(batch,
                  RunOnGpu(batch, CategoricalKernel::kBlockRow, streamed),
                  absl::StrCat("block row streamed, few rows, split ", split));
    ExpectScaleNearAPowerOfTwoMatches<T>(rng, CategoricalKernel::kBlockRow,
                                         streamed, {int64_t{20000}});
  }
}

}  // namespace
}  // namespace sampler::kernels::cuda
