// Host-side code of the CUDA enumeration path (the batch builder and the
// launcher's argument checks), which needs no device: these tests run, and
// can fail, on every machine, CI included. Moved out of
// enumerate_gpu_test.cc, whose binary runs nothing without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/enumerate_plan.h"
#include "sampler/kernels/cuda/enumerate_small.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels::cuda {
namespace {

template <typename T>
class EnumerateCudaHostTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(EnumerateCudaHostTest, Types);

// Host-side contract: validation as on the CPU, scratch checks, Add after
// Finish refused, a launch without scratch refused before the device.
TYPED_TEST(EnumerateCudaHostTest, BuilderContract) {
  using T = TypeParam;
  EnumerateBatchBuilder<T> b;
  const std::vector<T> bad = {0.5, std::numeric_limits<T>::quiet_NaN()};
  const std::vector<PmfTerm<T>> terms = {{0, bad}};
  absl::StatusOr<int> added =
      b.Add(terms, ProbSpace::kLinear, ProbSpace::kLinear);
  EXPECT_EQ(added.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(added.status(), ValidateEnumerate<T>(terms, ProbSpace::kLinear));
  const std::vector<T> a = {0.5, 0.5}, c = {0.25, 0.75}, d = {1};
  const std::vector<PmfTerm<T>> three = {{0, a}, {0, c}, {0, d}};
  ASSERT_TRUE(b.Add(three, ProbSpace::kLinear, ProbSpace::kLinear).ok());
  ASSERT_TRUE(b.Finish().ok());
  EXPECT_FALSE(b.Add(three, ProbSpace::kLinear, ProbSpace::kLinear).ok());
  EXPECT_GT(b.ScratchBytes(), 0u);  // three terms: a partial sum
  const EnumerateBatch<T> view = b.View(nullptr, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(LaunchEnumerate(view, nullptr).code(),
            absl::StatusCode::kInvalidArgument);

  // The staging pipeline's layout: the arena in; the outputs, then one
  // status word per problem (8-byte aligned) out; the scratch as scratch.
  const StagingPlan plan = b.Staging();
  EXPECT_EQ(plan.in_bytes, b.ArenaBytes());
  const size_t status_at = (b.total_out() * sizeof(T) + 7) / 8 * 8;
  EXPECT_EQ(plan.out_bytes, status_at + b.problems().size() * sizeof(uint32_t));
  EXPECT_EQ(plan.scratch_bytes, b.ScratchBytes());
  char* const fake = reinterpret_cast<char*>(uintptr_t{0x10000});
  const EnumerateBatch<T> staged =
      b.View(DeviceRegions{fake, fake + 0x1000, fake + 0x2000});
  EXPECT_EQ(staged.arena, fake);
  EXPECT_EQ(reinterpret_cast<char*>(staged.out), fake + 0x1000);
  EXPECT_EQ(reinterpret_cast<char*>(staged.status), fake + 0x1000 + status_at);
  EXPECT_EQ(staged.scratch, fake + 0x2000);
  EXPECT_EQ(staged.scratch_bytes, b.ScratchBytes());
  EXPECT_EQ(staged.num_problems, 1);
  // Without scratch the launch is refused before the device.
  EXPECT_EQ(LaunchEnumerate(b.View(DeviceRegions{fake, fake + 0x1000, nullptr}),
                            nullptr)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// ------------------------------------------------------------ planning ----

using enumerate_internal::AutoLinearConfig;
using enumerate_internal::AutoLogConfig;
using enumerate_internal::kExtendedOutputs;
using enumerate_internal::kLogGroups;
using enumerate_internal::kNumDirectConfigs;
using enumerate_internal::LaunchKind;
using enumerate_internal::Log2;
using enumerate_internal::TileOutputs;

// The automatic choice depends on the shorter operand and the product type
// only, at the thresholds of bench/results/enumerate-kernel.md, and names a
// compiled configuration.
TEST(EnumeratePlanTest, AutoConfigsFollowTheShorterOperand) {
  // Float products' choice, and double products' (the tensor-core kernel
  // from 41 on, up to 4096; float k8 t4p from 193 to 1536).
  const std::vector<std::tuple<int64_t, int, int>> linear = {
      {1, 1, 1},      {40, 1, 1},     {41, 22, 22},   {64, 22, 22},
      {65, 25, 25},   {192, 25, 25},  {193, 31, 25},  {512, 31, 25},
      {513, 31, 25},  {768, 31, 25},  {769, 31, 25},  {1536, 31, 25},
      {1537, 16, 25}, {2048, 16, 25}, {4096, 16, 25}, {4097, 9, 9},
      {1 << 20, 9, 9}};
  for (const auto& [lx, config, f64] : linear) {
    for (int64_t ly : {lx, 2 * lx + 7, int64_t{1} << 22}) {
      EXPECT_EQ(AutoLinearConfig(lx, ly, true), config) << lx << " x " << ly;
      EXPECT_EQ(AutoLinearConfig(lx, ly, false), f64) << lx << " x " << ly;
    }
    EXPECT_LT(config, kNumDirectConfigs);
    EXPECT_LT(f64, kNumDirectConfigs);
  }
  EXPECT_STREQ(EnumerateDirectConfigs()[22].name, "dmma t2 (tensor)");
  EXPECT_STREQ(EnumerateDirectConfigs()[24].name, "dmma k8 t2 (tensor)");
  EXPECT_STREQ(EnumerateDirectConfigs()[25].name, "dmma k8 t4 (tensor)");
  EXPECT_STREQ(EnumerateDirectConfigs()[31].name, "dmma k8 t4p (tensor)");
  EXPECT_STREQ(EnumerateDirectConfigs()[13].name, "g1r5x2 (long)");
  EXPECT_STREQ(EnumerateDirectConfigs()[16].name, "g1r7s4 (split)");
  EXPECT_STREQ(EnumerateDirectConfigs()[18].name, "g1r9s4 (split)");
  EXPECT_EQ(AutoLogConfig(1), 0);
  EXPECT_EQ(AutoLogConfig(64), 0);
  EXPECT_EQ(AutoLogConfig(65), 1);
  EXPECT_EQ(AutoLogConfig(int64_t{1} << 30), 1);
}

// A task's tile: 32 / (S G) R outputs for a direct configuration (as
// EnumerateDirectConfigs() documents it; 64 tensor_tiles for a tensor-core
// one), 32 / G for a log one, 32 / G kExtendedOutputs for an extended one.
TEST(EnumeratePlanTest, TileOutputs) {
  const absl::Span<const EnumerateDirectConfig> configs =
      EnumerateDirectConfigs();
  ASSERT_EQ(static_cast<int>(configs.size()), kNumDirectConfigs);
  for (int c = 0; c < kNumDirectConfigs; ++c) {
    const EnumerateDirectConfig& d = configs[c];
    EXPECT_EQ(TileOutputs(LaunchKind::kLinear, c),
              d.tensor_tiles > 0
                  ? 64 * d.tensor_tiles
                  : 32 / (d.subwarps * d.group_lanes) * d.outputs)
        << d.name;
  }
  EXPECT_EQ(TileOutputs(LaunchKind::kLog, 0), 32 / kLogGroups[0]);
  EXPECT_EQ(TileOutputs(LaunchKind::kLog, 1), 32 / kLogGroups[1]);
  EXPECT_EQ(TileOutputs(LaunchKind::kExtended, 0),
            32 / kLogGroups[0] * kExtendedOutputs);
  EXPECT_EQ(TileOutputs(LaunchKind::kExtended, 1),
            32 / kLogGroups[1] * kExtendedOutputs);
}

TEST(EnumeratePlanTest, Log2RoundsUp) {
  EXPECT_EQ(Log2(1), 0);
  EXPECT_EQ(Log2(2), 1);
  EXPECT_EQ(Log2(3), 2);
  EXPECT_EQ(Log2(1024), 10);
  EXPECT_EQ(Log2(1025), 11);
  EXPECT_EQ(Log2(int64_t{1} << 40), 40);
}

// A uniform PMF of n values.
template <typename T>
std::vector<T> Uniform(int n) {
  return std::vector<T>(n, T(1) / T(n));
}

// The launch list: copies for one-term problems, one launch per tree level
// and configuration in level order, log space apart; a problem's launch is
// chosen from its own sizes, whatever else is in the batch.
TYPED_TEST(EnumerateCudaHostTest, LaunchList) {
  using T = TypeParam;
  const std::vector<T> one = Uniform<T>(3), small = Uniform<T>(10),
                       big = Uniform<T>(100);
  EnumerateBatchBuilder<T> alone;
  ASSERT_TRUE(
      alone.Add({{0, small}, {0, big}}, ProbSpace::kLinear, ProbSpace::kLinear)
          .ok());
  ASSERT_TRUE(alone.Finish().ok());
  const std::string name =
      EnumerateDirectConfigs()[AutoLinearConfig(10, 100, true)].name;
  const std::string f = std::is_same_v<T, float> ? " f32" : " f64";
  EXPECT_EQ(alone.DescribeLaunches(),
            "level 1 linear " + name + f + " problems 1 tasks 2; ");
  EXPECT_EQ(alone.ScratchBytes(), 0u);  // two terms: no partial sum
  EXPECT_EQ(alone.ArenaBytes() % 256, 0u);

  EnumerateBatchBuilder<T> mixed;
  ASSERT_TRUE(
      mixed.Add({{0, one}}, ProbSpace::kLinear, ProbSpace::kLinear).ok());
  ASSERT_TRUE(
      mixed.Add({{0, small}, {0, big}}, ProbSpace::kLinear, ProbSpace::kLinear)
          .ok());
  ASSERT_TRUE(mixed
                  .Add({{0, small}, {0, small}, {0, big}}, ProbSpace::kLinear,
                       ProbSpace::kLog)
                  .ok());
  ASSERT_TRUE(mixed.Finish().ok());
  // 109 outputs in tiles of 80 (g1r5x2q1); the log output's tree in
  // extended range: 19 in one tile of 160 (g1), 118 in one.
  EXPECT_EQ(mixed.DescribeLaunches(),
            "copy x1; level 1 linear " + name + f +
                " problems 1 tasks 2; level 1 extended g1 problems 1 tasks 1; "
                "level 2 extended g1 problems 1 tasks 1; ");
  EXPECT_GT(mixed.ScratchBytes(), 0u);
  EXPECT_EQ(mixed.ScratchBytes() % 256, 0u);
  EXPECT_EQ(mixed.ArenaBytes() % 256, 0u);
  EXPECT_EQ(mixed.total_out(), 3 + 109 + 118);
  EXPECT_EQ(mixed.pair_count(), 10 * 100 + (10 * 10 + 19 * 100));
}

// Float products only for a two-term problem (the pair is the whole sum):
// in a longer tree a leaf's float rounding would compound through every
// level above it, so its leaves are double products like every other node.
TYPED_TEST(EnumerateCudaHostTest, FloatProductsOnlyForTheWholeSum) {
  using T = TypeParam;
  const std::vector<T> v = Uniform<T>(10);
  EnumerateBatchBuilder<T> b;
  ASSERT_TRUE(b.Add({{0, v}, {0, v}, {0, v}, {0, v}}, ProbSpace::kLinear,
                    ProbSpace::kLinear)
                  .ok());
  ASSERT_TRUE(b.Finish().ok());
  const std::string described = b.DescribeLaunches();
  EXPECT_EQ(described.find(" f32"), std::string::npos) << described;
  EXPECT_NE(described.find("level 1 linear"), std::string::npos) << described;
}

// The tree's shape: five terms are three levels, (t0 t1) and (t2 t3), then
// their pair, then that with t4; scratch is three buffers of the lengths'
// sum, two doubles an element in extended range (a log problem), one in log
// space (log values beyond the extended range).
TYPED_TEST(EnumerateCudaHostTest, TreeLevels) {
  using T = TypeParam;
  const std::vector<T> v = Uniform<T>(10);
  EnumerateBatchBuilder<T> b;
  ASSERT_TRUE(b.Add({{0, v}, {0, v}, {0, v}, {0, v}, {0, v}}, ProbSpace::kLog,
                    ProbSpace::kLog)
                  .ok());
  ASSERT_TRUE(b.Finish().ok());
  EXPECT_EQ(b.DescribeLaunches(),
            "level 1 extended g1 problems 2 tasks 2; level 2 extended g1 "
            "problems 1 tasks 1; level 3 extended g1 problems 1 tasks 1; ");
  EXPECT_EQ(b.pair_count(), 2 * 10 * 10 + 19 * 19 + 10 * 37);
  EXPECT_EQ(b.ScratchBytes(), (3 * 50 * 2 * sizeof(double) + 255) / 256 * 256);

  std::vector<T> beyond = v;
  beyond[3] = static_cast<T>(-5e9);  // |v| > 2^32: log-space arithmetic
  EnumerateBatchBuilder<T> l;
  ASSERT_TRUE(l.Add({{0, v}, {0, v}, {0, beyond}, {0, v}, {0, v}},
                    ProbSpace::kLog, ProbSpace::kLog)
                  .ok());
  ASSERT_TRUE(l.Finish().ok());
  EXPECT_TRUE(l.problems()[0].beyond_extended);
  EXPECT_EQ(l.DescribeLaunches(),
            "level 1 log g1 problems 2 tasks 2; level 2 log g1 problems 1 "
            "tasks 2; level 3 log g1 problems 1 tasks 2; ");
  EXPECT_EQ(l.ScratchBytes(), (3 * 50 * sizeof(double) + 255) / 256 * 256);
}

// The planned launches run on the host by an interpreter of the kernels'
// contract (each step problem dst = a (*) b, operands from values or
// scratch, linear or log as its launch): no launch of a level writes scratch
// that the level reads or writes elsewhere, every scratch access is inside
// ScratchBytes(), and the results match EnumerateCpu. This checks the
// planner's tree and scratch layout without a GPU.
template <typename T>
class Interpreter {
 public:
  explicit Interpreter(const EnumerateBatchBuilder<T>& b)
      : arena_(b.ArenaBytes()),
        scratch_(b.ScratchBytes() / sizeof(double),
                 std::numeric_limits<double>::quiet_NaN()),
        out_(b.total_out(), std::numeric_limits<T>::quiet_NaN()) {
    b.PackInto(arena_.data());
    batch_ = b.View(arena_.data(), out_.data(), nullptr, scratch_.data(),
                    b.ScratchBytes());
  }

  const std::vector<T>& Run() {
    const auto* steps =
        reinterpret_cast<const StepProblem*>(arena_.data() + batch_.steps_at);
    const std::vector<Launch>& launches = *batch_.launches;
    for (size_t l0 = 0; l0 < launches.size();) {
      size_t l1 = l0;
      while (l1 < launches.size() && launches[l1].level == launches[l0].level) {
        ++l1;
      }
      RunLevel(steps, launches, l0, l1);
      l0 = l1;
    }
    return out_;
  }

 private:
  using Launch = enumerate_internal::Launch;
  using StepProblem = enumerate_internal::StepProblem;
  struct Range {
    int64_t begin, end;
  };

  // Launches [l0, l1): one level, all reads before any write.
  void RunLevel(const StepProblem* steps, const std::vector<Launch>& launches,
                size_t l0, size_t l1) {
    std::vector<Range> reads, writes;
    std::vector<std::pair<const StepProblem*, LaunchKind>> work;
    for (size_t l = l0; l < l1; ++l) {
      const LaunchKind kind = launches[l].kind;
      // Scratch doubles an element.
      const int64_t w = kind == LaunchKind::kExtended
                            ? enumerate_internal::kExtendedDoubles
                            : 1;
      for (int64_t i = 0; i < launches[l].sp_count; ++i) {
        const StepProblem& sp = steps[launches[l].sp_begin + i];
        work.push_back({&sp, kind});
        if (kind == LaunchKind::kCopy) continue;
        if (sp.bits & enumerate_internal::kAInScratch) {
          reads.push_back({sp.a, sp.a + w * sp.a_len});
        }
        if (sp.bits & enumerate_internal::kBInScratch) {
          reads.push_back({sp.b, sp.b + w * sp.b_len});
        }
        if (sp.bits & enumerate_internal::kDstScratch) {
          writes.push_back({sp.dst, sp.dst + w * (sp.a_len + sp.b_len - 1)});
        }
      }
    }
    const int64_t size = static_cast<int64_t>(scratch_.size());
    for (const Range& r : reads) {
      EXPECT_TRUE(r.begin >= 0 && r.end <= size) << r.begin << " " << r.end;
    }
    for (size_t w = 0; w < writes.size(); ++w) {
      const Range& x = writes[w];
      EXPECT_TRUE(x.begin >= 0 && x.end <= size) << x.begin << " " << x.end;
      for (const Range& r : reads) {
        EXPECT_TRUE(x.end <= r.begin || r.end <= x.begin)
            << "level " << launches[l0].level << " writes [" << x.begin << ", "
            << x.end << ") over a read [" << r.begin << ", " << r.end << ")";
      }
      for (size_t v = w + 1; v < writes.size(); ++v) {
        EXPECT_TRUE(x.end <= writes[v].begin || writes[v].end <= x.begin);
      }
    }
    if (::testing::Test::HasFailure()) return;
    std::vector<std::vector<double>> results;
    for (const auto& [sp, kind] : work) {
      results.push_back(Convolve(*sp, kind));
    }
    for (size_t i = 0; i < work.size(); ++i) {
      Write(*work[i].first, work[i].second, results[i]);
    }
  }

  // An operand in the launch's space (log values for log and extended
  // launches; an extended launch's scratch holds m and the bits of e).
  std::vector<double> Operand(int64_t at, int32_t len, bool scratch,
                              bool in_log, LaunchKind kind) const {
    const bool log = kind == LaunchKind::kLog || kind == LaunchKind::kExtended;
    const T* values =
        reinterpret_cast<const T*>(arena_.data() + batch_.values_at);
    std::vector<double> v(len);
    for (int32_t i = 0; i < len; ++i) {
      if (scratch && kind == LaunchKind::kExtended) {
        int64_t e;
        std::memcpy(&e, &scratch_[at + 2 * i + 1], sizeof(e));
        v[i] = static_cast<double>(
            std::log(static_cast<long double>(scratch_[at + 2 * i])) +
            static_cast<long double>(e) * std::log(2.0L));
      } else if (scratch) {
        v[i] = scratch_[at + i];
      } else {
        const double x = static_cast<double>(values[at + i]);
        v[i] = log && !in_log ? std::log(x) : x;
      }
    }
    return v;
  }

  std::vector<double> Convolve(const StepProblem& sp, LaunchKind kind) const {
    const bool in_log = sp.bits & enumerate_internal::kInLog;
    const bool log = kind == LaunchKind::kLog || kind == LaunchKind::kExtended;
    const std::vector<double> b =
        Operand(sp.b, sp.b_len, sp.bits & enumerate_internal::kBInScratch,
                in_log, kind);
    if (sp.a_len == 0) return b;  // a copy
    const std::vector<double> a =
        Operand(sp.a, sp.a_len, sp.bits & enumerate_internal::kAInScratch,
                in_log, kind);
    std::vector<double> r(a.size() + b.size() - 1);
    for (size_t k = 0; k < r.size(); ++k) {
      long double s = 0;
      for (size_t j = 0; j < a.size(); ++j) {
        if (k < j || k - j >= b.size()) continue;
        s += log ? std::exp(static_cast<long double>(a[j]) + b[k - j])
                 : static_cast<long double>(a[j]) * b[k - j];
      }
      r[k] = static_cast<double>(log ? std::log(s) : s);
    }
    return r;
  }

  void Write(const StepProblem& sp, LaunchKind kind,
             const std::vector<double>& r) {
    const bool in_log = sp.bits & enumerate_internal::kInLog;
    const bool out_log = sp.bits & enumerate_internal::kOutLog;
    if (sp.a_len == 0) {  // a copy: the term converted between spaces
      for (size_t i = 0; i < r.size(); ++i) {
        const double v = in_log == out_log ? r[i]
                         : in_log          ? std::exp(r[i])
                                           : std::log(r[i]);
        out_[sp.dst + i] = static_cast<T>(v);
      }
      return;
    }
    const bool log = (sp.bits & (enumerate_internal::kInLog |
                                 enumerate_internal::kOutLog)) != 0;
    for (size_t i = 0; i < r.size(); ++i) {
      if ((sp.bits & enumerate_internal::kDstScratch) &&
          kind == LaunchKind::kExtended) {
        // The log value as m * 2^e: e = floor(r / ln 2) + 1, m in [0.5, 1).
        const long double x = r[i];
        const long double n = std::floor(x / std::log(2.0L)) + 1;
        const double m = static_cast<double>(std::exp(x - n * std::log(2.0L)));
        const int64_t e = static_cast<int64_t>(n);
        scratch_[sp.dst + 2 * i] = m;
        std::memcpy(&scratch_[sp.dst + 2 * i + 1], &e, sizeof(e));
      } else if (sp.bits & enumerate_internal::kDstScratch) {
        scratch_[sp.dst + i] = r[i];
      } else {
        out_[sp.dst + i] =
            static_cast<T>(log && !out_log ? std::exp(r[i]) : r[i]);
      }
    }
  }

  std::vector<unsigned char> arena_;
  std::vector<double> scratch_;
  std::vector<T> out_;
  EnumerateBatch<T> batch_;
};

TYPED_TEST(EnumerateCudaHostTest, PlannedTreeComputesTheSum) {
  using T = TypeParam;
  std::mt19937_64 rng(5);
  std::vector<std::vector<std::vector<T>>> problems;
  std::vector<std::pair<ProbSpace, ProbSpace>> spaces;
  EnumerateBatchBuilder<T> b;
  for (int p = 0; p < 40; ++p) {
    const int nterms = 1 + static_cast<int>(rng() % (p < 30 ? 12 : 70));
    const ProbSpace in = rng() % 2 ? ProbSpace::kLog : ProbSpace::kLinear;
    const ProbSpace out = rng() % 2 ? ProbSpace::kLog : ProbSpace::kLinear;
    std::vector<std::vector<T>> terms;
    for (int t = 0; t < nterms; ++t) {
      std::vector<T> v(1 + rng() % 9);
      for (T& x : v) {
        const double u =
            0.05 + 0.95 * static_cast<double>(rng() >> 11) * 0x1p-53;
        x = static_cast<T>(in == ProbSpace::kLog ? std::log(u) : u);
      }
      terms.push_back(std::move(v));
    }
    std::vector<PmfTerm<T>> views;
    for (const std::vector<T>& v : terms) views.push_back({0, v});
    ASSERT_TRUE(b.Add(views, in, out).ok());
    problems.push_back(std::move(terms));
    spaces.push_back({in, out});
  }
  ASSERT_TRUE(b.Finish().ok());
  Interpreter<T> interpreter(b);
  const std::vector<T>& got = interpreter.Run();
  ASSERT_FALSE(::testing::Test::HasFailure());
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-12;
  for (size_t p = 0; p < problems.size(); ++p) {
    std::vector<PmfTerm<T>> views;
    for (const std::vector<T>& v : problems[p]) views.push_back({0, v});
    absl::StatusOr<Pmf<T>> cpu =
        EnumerateCpu<T>(views, spaces[p].first, spaces[p].second);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    const EnumerateProblem& prob = b.problems()[p];
    ASSERT_EQ(static_cast<size_t>(prob.out_length), cpu->values.size());
    for (int64_t k = 0; k < prob.out_length; ++k) {
      const double g = static_cast<double>(got[prob.out_begin + k]);
      const double c = static_cast<double>(cpu->values[k]);
      if (spaces[p].second == ProbSpace::kLog) {
        EXPECT_NEAR(g, c, tol * (1 + std::abs(c)))
            << "problem " << p << " element " << k;
      } else {
        EXPECT_NEAR(g, c, tol * c) << "problem " << p << " element " << k;
      }
    }
  }
}

// The (problem, tile) of each task of a batch planned into one launch.
std::vector<std::pair<int, int>> PlannedTasks(
    EnumerateBatchBuilder<float>& builder) {
  std::vector<std::pair<int, int>> got;
  EXPECT_TRUE(builder.Finish().ok());
  std::vector<unsigned char> arena(builder.ArenaBytes());
  builder.PackInto(arena.data());
  const EnumerateBatch<float> v =
      builder.View(arena.data(), nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(v.launches->size(), 1u);
  if (v.launches->size() != 1) return got;
  const enumerate_internal::Launch& l = v.launches->front();
  const auto* tasks = reinterpret_cast<const enumerate_internal::Task*>(
                          arena.data() + v.tasks_at) +
                      l.task_begin;
  for (int64_t i = 0; i < l.task_count; ++i) {
    got.push_back({tasks[i].step_problem, tasks[i].tile});
  }
  return got;
}

// A linear launch's task list holds every tile of every step problem once:
// in problem order for most configurations, and for the long-chunk
// sub-warps (g1r7x4) tile-major over runs of 4 problems, so that a warp's
// sub-warps take the same tile of 4 problems (the kernel's sums do not
// depend on the order; the planner's fingerprint does).
TEST(EnumeratePlanTest, LongSubwarpTasksRunTileMajor) {
  const std::vector<float> a = Uniform<float>(256), b = Uniform<float>(100);
  constexpr int kLongSubwarps = 14;
  ASSERT_EQ(std::string(EnumerateDirectConfigs()[kLongSubwarps].name),
            "g1r7x4 (long)");
  for (const int config : {kLongSubwarps, 4}) {
    EnumerateOptions o;
    o.method = EnumerateMethod::kDirect;
    o.direct_config = config;
    EnumerateBatchBuilder<float> builder(o);
    for (int p = 0; p < 5; ++p) {
      ASSERT_TRUE(builder
                      .Add({{0, p == 1 ? b : a}, {0, a}}, ProbSpace::kLinear,
                           ProbSpace::kLinear)
                      .ok());
    }
    const int tw = TileOutputs(LaunchKind::kLinear, config);
    auto tiles = [&](int p) { return ((p == 1 ? 355 : 511) + tw - 1) / tw; };
    const int run = config == kLongSubwarps ? 4 : 1;
    std::vector<std::pair<int, int>> want;
    for (int p0 = 0; p0 < 5; p0 += run) {
      const int p1 = std::min(5, p0 + run);
      for (int t = 0; t < tiles(0); ++t) {
        for (int p = p0; p < p1; ++p) {
          if (t < tiles(p)) want.push_back({p, t});
        }
      }
    }
    EXPECT_EQ(PlannedTasks(builder), want) << config;
  }
}

// Mirrored tensor tiles (tensor_mirror): a task is tile t with tile tiles -
// 1 - t, so a problem of `tiles` tiles has (tiles + 1) / 2 tasks, tiles 0
// to (tiles - 1) / 2 in problem order (an odd count's middle tile alone).
TEST(EnumeratePlanTest, MirroredTensorTasksCoverEachTileOnce) {
  const auto configs = EnumerateDirectConfigs();
  int tested = 0;
  for (int config = 0; config < static_cast<int>(configs.size()); ++config) {
    if (!enumerate_internal::kDirectConfigDefs[config].tensor_mirror) continue;
    ++tested;
    EnumerateOptions o;
    o.method = EnumerateMethod::kDirect;
    o.direct_config = config;
    EnumerateBatchBuilder<float> builder(o);
    // Results of 2047, 511, 1299, 767 and 100 outputs: 8, 2, 6, 3 and 1
    // tiles of 256 (16, 4, 11, 6 and 1 of 128).
    const std::pair<int, int> sizes[] = {
        {1024, 1024}, {256, 256}, {300, 1000}, {384, 384}, {50, 51}};
    const int tw = TileOutputs(LaunchKind::kLinear, config);
    std::vector<std::pair<int, int>> want;
    for (int p = 0; p < 5; ++p) {
      const auto [la, lb] = sizes[p];
      const std::vector<float> a = Uniform<float>(la), b = Uniform<float>(lb);
      ASSERT_TRUE(
          builder.Add({{0, a}, {0, b}}, ProbSpace::kLinear, ProbSpace::kLinear)
              .ok());
      const int tiles = (la + lb - 1 + tw - 1) / tw;
      for (int t = 0; t < (tiles + 1) / 2; ++t) want.push_back({p, t});
    }
    EXPECT_EQ(PlannedTasks(builder), want) << configs[config].name;
  }
  EXPECT_GE(tested, 2);
}

// The pair kernel's bounds: both terms of at most kPairMaxLength values; kAuto
// takes it wherever it fits.
TEST(EnumeratePlanTest, PairKernelBounds) {
  using enumerate_internal::kPairMaxLength;
  using enumerate_internal::PairKernelAuto;
  using enumerate_internal::PairKernelFits;
  EXPECT_TRUE(PairKernelFits(1, 1));
  EXPECT_TRUE(PairKernelFits(32, 32));
  EXPECT_TRUE(PairKernelFits(1, kPairMaxLength));
  EXPECT_FALSE(PairKernelFits(kPairMaxLength, kPairMaxLength + 1));
  EXPECT_FALSE(PairKernelFits(kPairMaxLength + 1, 1));
  EXPECT_FALSE(PairKernelFits(0, 3));
  for (int64_t lx = 1; lx <= 40; ++lx) {
    for (int64_t ly = lx; ly <= 40; ++ly) {
      EXPECT_EQ(PairKernelAuto(lx, ly), PairKernelFits(lx, ly));
    }
  }
}

// Two-term linear problems that fit a warp take the pair kernel (kAuto and
// kPair; a forced direct configuration does not), whatever else is in the
// batch; log-path problems, longer terms and longer trees do not. A batch
// of pair problems only leaves its status words to the kernel.
TYPED_TEST(EnumerateCudaHostTest, PairKernelRoute) {
  using T = TypeParam;
  const std::vector<T> v32 = Uniform<T>(32), v33 = Uniform<T>(33),
                       v1 = Uniform<T>(1), v7 = Uniform<T>(7);
  const auto described = [](EnumerateOptions options,
                            const std::vector<std::vector<PmfTerm<T>>>& ps,
                            ProbSpace out, bool* zero_status) {
    EnumerateBatchBuilder<T> b(options);
    for (const auto& terms : ps) {
      EXPECT_TRUE(b.Add(terms, ProbSpace::kLinear, out).ok());
    }
    EXPECT_TRUE(b.Finish().ok());
    *zero_status = b.View(nullptr, nullptr, nullptr, nullptr, 0).zero_status;
    return b.DescribeLaunches();
  };
  const std::vector<PmfTerm<T>> widest = {{0, v32}, {5, v32}};
  const std::vector<PmfTerm<T>> thin = {{0, v1}, {-2, v7}};
  bool zero_status = true;
  EXPECT_EQ(described({}, {widest, thin}, ProbSpace::kLinear, &zero_status),
            "level 1 pair (two problems a warp) problems 2; ");
  EXPECT_FALSE(zero_status);
  EnumerateOptions forced_pair;
  forced_pair.method = EnumerateMethod::kPair;
  EXPECT_EQ(described(forced_pair, {thin}, ProbSpace::kLinear, &zero_status),
            "level 1 pair (two problems a warp) problems 1; ");
  EXPECT_FALSE(zero_status);
  forced_pair.direct_config = 0;  // variant 0: a warp per problem
  EXPECT_EQ(
      described(forced_pair, {thin, widest}, ProbSpace::kLinear, &zero_status),
      "level 1 pair (warp per problem) problems 2; ");
  EXPECT_FALSE(zero_status);
  // Mixed: the other problems keep their kernels, the launch zeroes the
  // status words.
  const std::vector<PmfTerm<T>> longer = {{0, v32}, {0, v33}};
  const std::vector<PmfTerm<T>> three = {{0, v7}, {0, v7}, {0, v7}};
  const std::string mixed =
      described({}, {longer, widest, three}, ProbSpace::kLinear, &zero_status);
  const std::string pair_launch =
      "level 1 pair (two problems a warp) problems 1; ";
  const size_t at = mixed.find(pair_launch);
  EXPECT_NE(at, std::string::npos) << mixed;
  EXPECT_EQ(mixed.find("pair", at + pair_launch.size()), std::string::npos)
      << mixed;
  EXPECT_NE(mixed.find("level 2 linear"), std::string::npos) << mixed;
  EXPECT_TRUE(zero_status);
  EXPECT_EQ(described({}, {widest}, ProbSpace::kLog, &zero_status),
            "level 1 extended g1 problems 1 tasks 1; ");
  EXPECT_TRUE(zero_status);
  EnumerateOptions forced;
  forced.method = EnumerateMethod::kDirect;
  forced.direct_config = AutoLinearConfig(32, 32, true);
  const std::string f = std::is_same_v<T, float> ? " f32" : " f64";
  EXPECT_EQ(
      described(forced, {widest}, ProbSpace::kLinear, &zero_status),
      "level 1 linear " +
          std::string(EnumerateDirectConfigs()[forced.direct_config].name) + f +
          " problems 1 tasks 1; ");
  EXPECT_TRUE(zero_status);
}

// The small-problems path's routing: linear problems of 1..kSmallMaxTerms
// terms and at most kSmallMaxValues values take it; the log path, more
// terms or more values keep the planned tree.
TEST(EnumerateSmallTest, RoutingBounds) {
  constexpr ProbSpace kLin = ProbSpace::kLinear, kLog = ProbSpace::kLog;
  EXPECT_TRUE(EnumerateSmallFits(8, 32, kLin, kLin));  // the case
  EXPECT_TRUE(EnumerateSmallFits(1, 1, kLin, kLin));
  EXPECT_TRUE(EnumerateSmallFits(kSmallMaxTerms, kSmallMaxValues, kLin, kLin));
  EXPECT_FALSE(EnumerateSmallFits(kSmallMaxTerms + 1, 40, kLin, kLin));
  EXPECT_FALSE(EnumerateSmallFits(2, kSmallMaxValues + 1, kLin, kLin));
  EXPECT_FALSE(EnumerateSmallFits(0, 0, kLin, kLin));
  EXPECT_FALSE(EnumerateSmallFits(8, 32, kLog, kLin));
  EXPECT_FALSE(EnumerateSmallFits(8, 32, kLin, kLog));
  EXPECT_FALSE(EnumerateSmallFits(8, 32, kLog, kLog));
}

// The batch refuses what does not fit (the caller plans it instead) and
// packs what it took: descriptors, term lengths and values end to end, each
// result's slice of the output and its support offset.
TYPED_TEST(EnumerateCudaHostTest, SmallBatchRoutesAndPacks) {
  using T = TypeParam;
  using Span = absl::Span<const T>;
  const std::vector<T> a = {0.5, 0.5}, b = {0.25, 0.5, 0.25}, c = {1};
  const std::vector<T> long_term(kSmallMaxValues, T{0.01});
  EnumerateSmallBatch<T> batch;
  batch.Reset(ProbSpace::kLog, ProbSpace::kLinear);
  const std::vector<Span> two = {Span(a), Span(b)};
  const std::vector<int64_t> two_offsets = {-3, 10};
  EXPECT_FALSE(batch.Add(two, two_offsets));  // log input: planned path
  batch.Reset(ProbSpace::kLinear, ProbSpace::kLinear);
  EXPECT_TRUE(batch.Add(two, two_offsets));
  const std::vector<Span> too_long = {Span(a), Span(long_term)};
  EXPECT_FALSE(batch.Add(too_long, two_offsets));
  const std::vector<Span> many(kSmallMaxTerms + 1, Span(c));
  const std::vector<int64_t> many_offsets(many.size(), 0);
  EXPECT_FALSE(batch.Add(many, many_offsets));
  const std::vector<Span> three = {Span(c), Span(a), Span(a)};  // repeats
  const std::vector<int64_t> three_offsets = {7, 0, 1};
  EXPECT_TRUE(batch.Add(three, three_offsets));
  ASSERT_EQ(batch.num_problems(), 2);
  EXPECT_EQ(batch.out_begin(0), 0);
  EXPECT_EQ(batch.support_offset(0), 7);
  EXPECT_EQ(batch.out_begin(1), 4);  // 2 + 3 - 1 outputs before it
  EXPECT_EQ(batch.support_offset(1), 8);
  EXPECT_EQ(batch.OutLayout().values, 4 + 3);
  EXPECT_EQ(batch.OutLayout().words, 2u);
  const StagingPlan plan = batch.Staging();
  EXPECT_EQ(plan.in_bytes, batch.ArenaBytes());
  EXPECT_EQ(plan.out_bytes, batch.OutLayout().bytes());
  EXPECT_EQ(plan.scratch_bytes, 0u);

  std::vector<char> arena(batch.ArenaBytes() + 256);
  char* const host =
      arena.data() +
      (256 - reinterpret_cast<uintptr_t>(arena.data()) % 256) % 256;
  batch.PackInto(host);
  // The device view's pointers, read on the host: the same layout.
  std::vector<char> out(batch.OutLayout().bytes());
  const EnumerateSmallDeviceBatch<T> view =
      batch.View(DeviceRegions{host, out.data(), nullptr});
  EXPECT_EQ(view.num_problems, 2);
  EXPECT_EQ(view.problems[0].values, 0);
  EXPECT_EQ(view.problems[0].out, 0);
  EXPECT_EQ(view.problems[0].num_terms, 2);
  EXPECT_EQ(view.problems[0].num_values, 5);
  EXPECT_EQ(view.problems[1].values, 5);
  EXPECT_EQ(view.problems[1].out, 4);
  EXPECT_EQ(view.problems[1].lengths, 2);
  EXPECT_EQ(view.problems[1].num_terms, 3);
  EXPECT_EQ(view.problems[1].num_values, 5);
  const std::vector<int16_t> lengths(view.lengths, view.lengths + 5);
  EXPECT_EQ(lengths, (std::vector<int16_t>{2, 3, 1, 2, 2}));
  const std::vector<T> values(view.values, view.values + 10);
  EXPECT_EQ(values,
            (std::vector<T>{0.5, 0.5, 0.25, 0.5, 0.25, 1, 0.5, 0.5, 0.5, 0.5}));

  // Reset keeps the lists' memory for the next batch.
  const size_t kept = batch.MemoryBytes();
  EXPECT_GT(kept, 0u);
  batch.Reset(ProbSpace::kLinear, ProbSpace::kLinear);
  EXPECT_EQ(batch.num_problems(), 0);
  EXPECT_EQ(batch.MemoryBytes(), kept);
}

}  // namespace
}  // namespace sampler::kernels::cuda
