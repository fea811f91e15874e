// The CUDA gamma and Dirichlet kernels against their CPU twins, bit for bit,
// on fresh random segmented batches (the seed of the inputs is printed on
// failure). Outputs are poisoned before every launch, so an unwritten
// element fails as surely as a wrong one. Each batch also runs on a tiny
// grid (many items per lane: the grid-stride loop and pre-caching across
// segment and group boundaries), without pre-caching, without the kernel's
// tunings and instrumented: the bits must not depend on any of it.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/cuda/dirichlet.h"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/gamma.h"
#include "tests/gpu/gpu_test_util.h"

namespace sampler::kernels::cuda {
namespace {

template <typename T>
class GammaGpuTest : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GammaGpuTest, Precisions);

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const absl::Status assert_ok_status_ = (expr);            \
    ASSERT_TRUE(assert_ok_status_.ok()) << assert_ok_status_; \
  } while (false)

// A fresh seed per test, reported on failure so that a rare mismatch can be
// replayed.
uint64_t FreshSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) | rd();
}

template <typename T>
bool SameBits(T a, T b) {
  return detmath::Bits(a) == detmath::Bits(b);
}

// Log-uniform in [lo, hi], rounded to T.
template <typename T>
T LogUniform(std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
  return static_cast<T>(std::exp(u(rng)));
}

// The launch variants that must all give the CPU's bits: pre-caching or
// not, the gamma kernel's tunings (round keys from the launch parameters
// where the batch has one seed; slow outputs deferred; more warps for float
// without pre-caching) or not, the grid.
struct Variant {
  const char* name;
  bool pre_cache;
  bool count;
  int max_blocks;
  bool keys = true;
  bool defer = true;
  bool more_warps = false;
};
constexpr Variant kVariants[] = {
    {"default", true, false, 0},
    {"tiny grid", true, false, 2},
    {"no pre-caching", false, false, 0},
    {"no pre-caching, tiny grid", false, false, 3},
    {"instrumented, tiny grid", true, true, 1},
    // The gamma kernel's tunings off, and more warps (SampleDirichlet's
    // kernel takes none of them: its checks stop above).
    {"no tunings", true, false, 0, false, false},
    {"no tunings, no pre-caching, tiny grid", false, false, 3, false, false},
    {"more warps, no pre-caching, tiny grid", false, false, 2, true, true,
     true},
};
constexpr size_t kDirichletVariants = 5;
// Each tuning alone, for one-seed batches (the round keys apply there only).
constexpr Variant kTuningVariants[] = {
    {"keys only, tiny grid", true, false, 2, true, false},
    {"keys only, no pre-caching", false, false, 0, true, false},
    {"defer only, tiny grid", true, false, 2, false, true},
    {"defer only, no pre-caching, tiny grid", false, false, 1, false, true},
    {"more warps, no pre-caching", false, false, 0, true, true, true},
    {"more warps only, no pre-caching", false, false, 0, false, false, true},
};

// Runs the builder's batch through the staging pipeline with `variant` and
// returns the outputs and status words. The instrumented variant's counters
// follow the builder's out region (8-byte aligned) and come back with it.
template <typename T, typename Builder, typename Launch>
void RunOnDevice(const Builder& builder, const Variant& variant, Launch launch,
                 std::vector<T>* out, std::vector<uint32_t>* status) {
  absl::StatusOr<std::unique_ptr<Stager>> stager = Stager::Create();
  ASSERT_TRUE(stager.ok()) << stager.status();
  StagingPlan plan = builder.Staging();
  const size_t counters_at = (plan.out_bytes + 7) / 8 * 8;
  plan.out_bytes = counters_at + sizeof(GammaCounters);
  const ValuesAndStatusWords<T> layout = builder.OutLayout();
  GammaCounters counters{};
  const absl::StatusOr<double> ran = (*stager)->Run(
      plan, [&](char* staged) { builder.PackInto(staged); },
      [&](const DeviceRegions& device, cudaStream_t s) -> absl::Status {
        char* region = static_cast<char*>(device.out);
        // Poison outputs and status words: all-ones bytes are a NaN no
        // backend produces.
        SAMPLER_CUDA_RETURN_IF_ERROR(
            cudaMemsetAsync(region, 0xff, counters_at, s));
        SAMPLER_CUDA_RETURN_IF_ERROR(
            cudaMemsetAsync(region + counters_at, 0, sizeof(GammaCounters), s));
        GammaLaunchOptions options;
        options.pre_cache = variant.pre_cache;
        options.max_blocks = variant.max_blocks;
        options.seed_keys_in_params = variant.keys;
        options.defer_slow_outputs = variant.defer;
        options.more_warps = variant.more_warps;
        options.counters =
            variant.count
                ? reinterpret_cast<GammaCounters*>(region + counters_at)
                : nullptr;
        return launch(builder.View(device), s, options);
      },
      [&](const char* staged) {
        const T* values = layout.Values(staged);
        out->assign(values, values + layout.values);
        const uint32_t* words = layout.StatusWords(staged);
        status->assign(words, words + layout.words);
        std::memcpy(&counters, staged + counters_at, sizeof(counters));
      });
  ASSERT_OK(ran.status());
  if (variant.count) {
    // Every output is written once, and every attempt belongs to one.
    EXPECT_EQ(counters.lane_items,
              static_cast<unsigned long long>(layout.values));
    EXPECT_GE(counters.lane_attempts, counters.lane_items);
    EXPECT_LE(counters.lane_attempts, 32ull * counters.warp_iterations);
  }
}

// ------------------------------------------------------------- gamma ----

// One random request, its CPU answer and how it was added to the batch.
template <typename T>
struct GammaRequest {
  std::vector<T> expected;
  std::string description;
};

// `seed`: the request's seed, or 0 for a random one.
template <typename T>
void AddRandomGammaRequest(std::mt19937_64& rng, int64_t count,
                           GammaBatchBuilder<T>* builder,
                           std::vector<GammaRequest<T>>* requests,
                           uint64_t seed = 0) {
  const bool log_output = rng() % 2 == 0;
  if (seed == 0) seed = rng();
  uint64_t first_item = 0;
  switch (rng() % 4) {
    case 0:
      break;
    case 1:
      first_item = rng() % 100000;
      break;
    case 2:  // both counter words in play
      first_item = (uint64_t{1} << 32) - rng() % 1000;
      break;
    default:
      first_item = rng() >> 1;
  }
  GammaRequest<T> req;
  req.expected.resize(count);
  const int kind = static_cast<int>(rng() % 4);
  req.description =
      absl::StrCat("kind ", kind, " log ", log_output, " seed ", seed,
                   " first_item ", first_item, " count ", count);
  if (kind <= 1) {  // per-element, with (0) or without (1) scales
    std::vector<T> shape(count), scale;
    for (T& a : shape) a = LogUniform<T>(rng, 1e-6, 1e10);
    if (kind == 0) {
      scale.resize(count);
      for (T& b : scale) b = LogUniform<T>(rng, 1e-3, 1e3);
    }
    const std::vector<T> ones(count, T(1));
    ASSERT_OK(SampleGammaCpu<T>(shape, kind == 0 ? scale : ones, log_output,
                                seed, first_item,
                                absl::MakeSpan(req.expected)));
    ASSERT_TRUE(
        builder->AddElements(shape, scale, log_output, seed, first_item).ok());
  } else {  // grouped: one group (2) or many, some empty (3)
    std::vector<GammaGroup<T>> groups;
    int64_t left = count;
    while (left > 0 || groups.empty()) {
      int64_t n = kind == 2 ? left : static_cast<int64_t>(rng() % 700);
      if (rng() % 5 == 0) n = 0;
      n = std::min(n, left);
      groups.push_back(GammaGroup<T>{LogUniform<T>(rng, 1e-3, 1e3),
                                     LogUniform<T>(rng, 1e-3, 1e3), n});
      left -= n;
      if (kind == 2 && left == 0) break;
    }
    ASSERT_OK(SampleGammaGroupedCpu<T>(groups, log_output, seed, first_item,
                                       absl::MakeSpan(req.expected)));
    ASSERT_TRUE(builder->AddGroups(groups, log_output, seed, first_item).ok());
  }
  requests->push_back(std::move(req));
}

// A per-element request of 50,000 shapes U(0.1, 10) and unit scales.
template <typename T>
void AddUniformShapesRequest(std::mt19937_64& rng, uint64_t seed,
                             bool log_output, GammaBatchBuilder<T>* builder,
                             std::vector<GammaRequest<T>>* requests) {
  const int64_t count = 50000;
  std::vector<T> shape(count);
  std::uniform_real_distribution<double> u(0.1, 10.0);
  for (T& a : shape) a = static_cast<T>(u(rng));
  const uint64_t first_item = rng() % 2 == 0 ? 0 : rng() >> 1;
  GammaRequest<T> req;
  req.expected.resize(count);
  req.description = absl::StrCat("U(0.1, 10) log ", log_output, " seed ", seed,
                                 " first_item ", first_item);
  const std::vector<T> ones(count, T(1));
  ASSERT_OK(SampleGammaCpu<T>(shape, ones, log_output, seed, first_item,
                              absl::MakeSpan(req.expected)));
  ASSERT_TRUE(
      builder->AddElements(shape, {}, log_output, seed, first_item).ok());
  requests->push_back(std::move(req));
}

template <typename T>
void CheckGammaBatch(const GammaBatchBuilder<T>& builder,
                     const std::vector<GammaRequest<T>>& requests,
                     absl::Span<const Variant> variants = kVariants) {
  for (const Variant& variant : variants) {
    SCOPED_TRACE(variant.name);
    std::vector<T> out;
    std::vector<uint32_t> status;
    RunOnDevice<T>(
        builder, variant,
        [](const GammaBatch<T>& b, cudaStream_t s,
           const GammaLaunchOptions& o) { return LaunchGamma<T>(b, s, o); },
        &out, &status);
    if (::testing::Test::HasFatalFailure()) return;
    for (size_t r = 0; r < requests.size(); ++r) {
      const GammaSegment& seg = builder.segments()[r];
      EXPECT_EQ(status[r], 0u) << "request " << r;
      for (int64_t i = 0; i < seg.count; ++i) {
        const T got = out[seg.out_begin + i];
        const T want = requests[r].expected[i];
        ASSERT_TRUE(SameBits(got, want))
            << "request " << r << " (" << requests[r].description << ") output "
            << i << ": GPU " << got << " (bits " << detmath::Bits(got)
            << ") vs CPU " << want << " (bits " << detmath::Bits(want) << ")";
      }
    }
  }
}

// Batches 0-3: requests of their own seeds. Batches 4-5 share one seed
// among their requests (what every one-request batch does): the kernel takes
// the Philox round keys from its parameters, and these batches also run each
// tuning alone. Each of those starts with per-element shapes U(0.1, 10)
// (the random requests' reach 1e-6 to 1e10): outputs with and without the
// boost share calls, so deferred slow outputs are queued, written 32 at a
// time and flushed at the end.
TYPED_TEST(GammaGpuTest, MixedBatchesMatchCpuBitForBit) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t input_seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", input_seed));
  std::mt19937_64 rng(input_seed);
  for (int batch = 0; batch < 6; ++batch) {
    GammaBatchBuilder<T> builder;
    std::vector<GammaRequest<T>> requests;
    const bool one_seed = batch >= 4;
    const uint64_t seed = one_seed ? rng() | 1 : 0;  // 0: each its own
    if (one_seed) {
      AddUniformShapesRequest<T>(rng, seed, batch == 5, &builder, &requests);
      if (::testing::Test::HasFatalFailure()) return;
    }
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int r = 0; r < n; ++r) {
      const int64_t count = rng() % 8 == 0 ? 0
                            : rng() % 3 == 0
                                ? static_cast<int64_t>(rng() % 40)
                                : static_cast<int64_t>(rng() % 20000);
      AddRandomGammaRequest<T>(rng, count, &builder, &requests, seed);
      if (::testing::Test::HasFatalFailure()) return;
    }
    SCOPED_TRACE(absl::StrCat("batch ", batch, " of ", requests.size(),
                              " requests, ", builder.total(), " outputs"));
    CheckGammaBatch<T>(builder, requests);
    if (one_seed) CheckGammaBatch<T>(builder, requests, kTuningVariants);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Every shape decade from 1e-6 to 1e10 in one request each, log and linear,
// large enough that the default grid's lanes hold several items (the large
// shapes take the near branch and the series of the acceptance test).
TYPED_TEST(GammaGpuTest, EveryShapeDecadeMatchesCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t input_seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", input_seed));
  std::mt19937_64 rng(input_seed);
  GammaBatchBuilder<T> builder;
  std::vector<GammaRequest<T>> requests;
  for (double shape : {1e-6, 1e-3, 1e-2, 0.1, 0.3, 0.999, 1.0, 2.5, 10.0, 1e2,
                       1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}) {
    for (bool log_output : {false, true}) {
      const int64_t count = 60000;
      const T scale = LogUniform<T>(rng, 1e-3, 1e3);
      const std::vector<GammaGroup<T>> groups = {
          {static_cast<T>(shape), scale, count}};
      const uint64_t seed = rng();
      const uint64_t first_item = rng() >> 20;
      GammaRequest<T> req;
      req.expected.resize(count);
      req.description =
          absl::StrCat("shape ", shape, " log ", log_output, " seed ", seed);
      ASSERT_OK(SampleGammaGroupedCpu<T>(groups, log_output, seed, first_item,
                                         absl::MakeSpan(req.expected)));
      ASSERT_TRUE(builder.AddGroups(groups, log_output, seed, first_item).ok());
      requests.push_back(std::move(req));
    }
  }
  CheckGammaBatch<T>(builder, requests);
}

// Batches of 1, 31, 33 outputs and an empty batch: partial warps and no
// work at all.
TYPED_TEST(GammaGpuTest, TinyAndEmptyBatches) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t input_seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", input_seed));
  std::mt19937_64 rng(input_seed);
  for (int64_t count : {1, 31, 33}) {
    GammaBatchBuilder<T> builder;
    std::vector<GammaRequest<T>> requests;
    AddRandomGammaRequest<T>(rng, count, &builder, &requests);
    if (::testing::Test::HasFatalFailure()) return;
    CheckGammaBatch<T>(builder, requests);
    if (::testing::Test::HasFatalFailure()) return;
  }
  GammaBatchBuilder<T> empty;
  ASSERT_TRUE(empty.AddElements({}, {}, false, 1, 0).ok());
  CheckGammaBatch<T>(empty, {GammaRequest<T>{}});
}

// --------------------------------------------------------- Dirichlet ----

template <typename T>
struct DirichletRequest {
  std::vector<T> expected;
  absl::Status cpu_status;
  std::string description;
};

// Ragged rows: K = 1 and lengths around the warp width and beyond, the
// long ones taken by a whole warp.
template <typename T>
void AddRandomDirichletRequest(std::mt19937_64& rng, int rows,
                               DirichletBatchBuilder<T>* builder,
                               std::vector<DirichletRequest<T>>* requests) {
  static constexpr int64_t kLengths[] = {1,  1,  2,  3,   5,   17,   31,  32,
                                         33, 64, 65, 100, 257, 1000, 4097};
  std::vector<T> alpha;
  std::vector<int64_t> offsets = {0};
  for (int r = 0; r < rows; ++r) {
    const int64_t k = kLengths[rng() % std::size(kLengths)];
    // Per row: concentrations spread over 1e-3..100 (or, in one row of two,
    // up to 1e10: the large-shape branch of the acceptance test), or all
    // alike.
    const bool alike = rng() % 3 == 0;
    const double hi = rng() % 2 == 0 ? 100 : 1e10;
    const T same = LogUniform<T>(rng, 1e-3, hi);
    for (int64_t j = 0; j < k; ++j) {
      alpha.push_back(alike ? same : LogUniform<T>(rng, 1e-3, hi));
    }
    offsets.push_back(static_cast<int64_t>(alpha.size()));
  }
  const bool log_output = rng() % 2 == 0;
  const uint64_t seed = rng();
  const uint64_t first_item = rng() % 2 == 0 ? 0 : rng() >> 1;
  DirichletRequest<T> req;
  req.expected.resize(alpha.size());
  req.description = absl::StrCat("rows ", rows, " log ", log_output, " seed ",
                                 seed, " first_item ", first_item);
  req.cpu_status =
      SampleDirichletCpu<T>(alpha, offsets, log_output, seed, first_item,
                            absl::MakeSpan(req.expected));
  ASSERT_TRUE(req.cpu_status.ok()) << req.cpu_status;
  ASSERT_TRUE(
      builder->AddRows(alpha, offsets, log_output, seed, first_item).ok());
  requests->push_back(std::move(req));
}

template <typename T>
void CheckDirichletBatch(const DirichletBatchBuilder<T>& builder,
                         const std::vector<DirichletRequest<T>>& requests) {
  for (const Variant& variant :
       absl::MakeConstSpan(kVariants, kDirichletVariants)) {
    SCOPED_TRACE(variant.name);
    std::vector<T> out;
    std::vector<uint32_t> status;
    RunOnDevice<T>(
        builder, variant,
        [](const DirichletBatch<T>& b, cudaStream_t s,
           const GammaLaunchOptions& o) { return LaunchDirichlet<T>(b, s, o); },
        &out, &status);
    if (::testing::Test::HasFatalFailure()) return;
    for (size_t r = 0; r < requests.size(); ++r) {
      const DirichletSegment& seg = builder.segments()[r];
      EXPECT_EQ(SegmentStatus(status[r], static_cast<int>(r)).code(),
                requests[r].cpu_status.code())
          << "request " << r;
      if (!requests[r].cpu_status.ok()) continue;
      for (int64_t i = 0; i < seg.count; ++i) {
        const T got = out[seg.out_begin + i];
        const T want = requests[r].expected[i];
        ASSERT_TRUE(SameBits(got, want))
            << "request " << r << " (" << requests[r].description
            << ") component " << i << ": GPU " << got << " vs CPU " << want;
      }
    }
  }
}

TYPED_TEST(GammaGpuTest, DirichletRaggedBatchesMatchCpuBitForBit) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const uint64_t input_seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("input seed ", input_seed));
  std::mt19937_64 rng(input_seed);
  for (int batch = 0; batch < 3; ++batch) {
    DirichletBatchBuilder<T> builder;
    std::vector<DirichletRequest<T>> requests;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int r = 0; r < n; ++r) {
      const int rows = rng() % 6 == 0 ? 0 : static_cast<int>(rng() % 300);
      AddRandomDirichletRequest<T>(rng, rows, &builder, &requests);
      if (::testing::Test::HasFatalFailure()) return;
    }
    SCOPED_TRACE(absl::StrCat("batch ", batch, " of ", n, " requests, ",
                              builder.num_rows(), " rows, ", builder.total(),
                              " components"));
    CheckDirichletBatch<T>(builder, requests);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Many K = 1 rows at the smallest normal concentration underflow: that
// request is flagged OUT_OF_RANGE, as the CPU answers, and its neighbours
// (tiny components beside normal ones give exact zeros) are untouched.
TYPED_TEST(GammaGpuTest, DirichletUnderflowIsReportedPerRequest) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const T tiny = std::numeric_limits<T>::min();
  DirichletBatchBuilder<T> builder;
  std::vector<DirichletRequest<T>> requests;
  std::vector<T> mixed;
  std::vector<int64_t> mixed_offsets = {0};
  for (int i = 0; i < 500; ++i) {
    mixed.push_back(tiny);
    mixed.push_back(T(2));
    mixed_offsets.push_back(2 * (i + 1));
  }
  const std::vector<T> under(1000, tiny);
  std::vector<int64_t> under_offsets;
  for (int64_t i = 0; i <= 1000; ++i) under_offsets.push_back(i);
  for (int r = 0; r < 3; ++r) {
    const bool is_under = r == 1;
    const std::vector<T>& alpha = is_under ? under : mixed;
    const std::vector<int64_t>& offsets =
        is_under ? under_offsets : mixed_offsets;
    DirichletRequest<T> req;
    req.expected.resize(alpha.size());
    req.cpu_status = SampleDirichletCpu<T>(alpha, offsets, false, 7 + r, 0,
                                           absl::MakeSpan(req.expected));
    ASSERT_EQ(req.cpu_status.code(),
              is_under ? absl::StatusCode::kOutOfRange : absl::StatusCode::kOk);
    ASSERT_TRUE(builder.AddRows(alpha, offsets, false, 7 + r, 0).ok());
    requests.push_back(std::move(req));
  }
  CheckDirichletBatch<T>(builder, requests);
}

}  // namespace
}  // namespace sampler::kernels::cuda
