// The CPU backend: for every kind, a batch gives bit for bit what the
// kernel's CPU function gives when called directly per job (however the
// backend cut the jobs across its threads); done is called exactly once per
// batch; per-job failures land in job->status; concurrent submitters and
// destruction with work queued lose nothing.
#include "server/cpu_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/gamma.h"

namespace sampler::server {
namespace {

// Compares a job's output with the direct kernel call, after the batch.
using Check = std::function<void()>;

template <typename T>
T Poison() {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::quiet_NaN();
  } else {
    return static_cast<T>(-1);
  }
}

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <typename T>
Check CompareLater(std::shared_ptr<std::vector<T>> out, std::vector<T> expected,
                   std::string name) {
  return [out, expected = std::move(expected), name] {
    EXPECT_TRUE(SameBits(*out, expected)) << name;
  };
}

// Collects done calls; Wait blocks until the first.
class DoneWaiter {
 public:
  BatchDone Callback() {
    return [this](BatchResult r) {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_;
      result_ = std::move(r);
      thread_ = std::this_thread::get_id();
      cv_.notify_all();
    };
  }
  BatchResult Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, std::chrono::seconds(120),
                             [this] { return calls_ > 0; }));
    return result_;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::thread::id thread() {
    std::lock_guard<std::mutex> lock(mu_);
    return thread_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  BatchResult result_;
  std::thread::id thread_;
};

std::unique_ptr<CpuBackend> MakeBackend(int threads) {
  absl::StatusOr<std::unique_ptr<CpuBackend>> b = CpuBackend::Create(threads);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : nullptr;
}

// Runs one batch to completion; checks the batch result and that done came
// once, from a pool thread.
template <typename JobT>
void RunBatch(CpuBackend& backend, Batch<JobT> batch) {
  DoneWaiter waiter;
  backend.Run(std::move(batch), waiter.Callback());
  const BatchResult r = waiter.Wait();
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.device, "cpu");
  EXPECT_GE(r.device_seconds, 0);
  EXPECT_NE(waiter.thread(), std::this_thread::get_id());
  // A second call would come from a pool thread right after the first.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(waiter.calls(), 1);
}

// ----------------------------------------------------------------- gamma ----

template <typename T>
std::shared_ptr<GammaJob> GammaPerElement(size_t n, bool with_scale,
                                          bool log_output, uint64_t seed,
                                          uint64_t first_sample,
                                          std::vector<Check>& checks) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> shape_dist(0.05, 20);
  std::uniform_real_distribution<double> scale_dist(0.1, 10);
  GammaWork<T> w;
  for (size_t i = 0; i < n; ++i) {
    w.shape.push_back(static_cast<T>(shape_dist(rng)));
    if (with_scale) w.scale.push_back(static_cast<T>(scale_dist(rng)));
  }
  auto out = std::make_shared<std::vector<T>>(n, Poison<T>());
  w.out = absl::MakeSpan(*out);
  std::vector<T> expected(n, Poison<T>());
  const std::vector<T> ones(n, T(1));
  EXPECT_TRUE(kernels::SampleGammaCpu<T>(w.shape, with_scale ? w.scale : ones,
                                         log_output, seed, first_sample,
                                         absl::MakeSpan(expected))
                  .ok());
  checks.push_back(CompareLater(out, std::move(expected),
                                "gamma seed " + std::to_string(seed)));
  auto job = std::make_shared<GammaJob>();
  job->items = static_cast<int64_t>(n);
  job->seed = seed;
  job->log_output = log_output;
  job->first_sample = first_sample;
  job->work = std::move(w);
  return job;
}

template <typename T>
std::shared_ptr<GammaJob> GammaGrouped(
    std::vector<kernels::GammaGroup<T>> groups, bool log_output, uint64_t seed,
    uint64_t first_sample, std::vector<Check>& checks) {
  size_t n = 0;
  for (const auto& g : groups) n += static_cast<size_t>(g.count);
  GammaWork<T> w;
  w.groups = std::move(groups);
  auto out = std::make_shared<std::vector<T>>(n, Poison<T>());
  w.out = absl::MakeSpan(*out);
  std::vector<T> expected(n, Poison<T>());
  EXPECT_TRUE(kernels::SampleGammaGroupedCpu<T>(w.groups, log_output, seed,
                                                first_sample,
                                                absl::MakeSpan(expected))
                  .ok());
  checks.push_back(CompareLater(out, std::move(expected),
                                "gamma grouped seed " + std::to_string(seed)));
  auto job = std::make_shared<GammaJob>();
  job->items = static_cast<int64_t>(n);
  job->seed = seed;
  job->log_output = log_output;
  job->first_sample = first_sample;
  job->work = std::move(w);
  return job;
}

template <typename T>
std::vector<kernels::GammaGroup<T>> RandomGroups(int groups, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> shape_dist(0.01, 10);
  std::uniform_int_distribution<int64_t> count_dist(0, 400);
  std::vector<kernels::GammaGroup<T>> out;
  for (int g = 0; g < groups; ++g) {
    out.push_back({static_cast<T>(shape_dist(rng)),
                   static_cast<T>(shape_dist(rng)), count_dist(rng)});
  }
  return out;
}

TEST(CpuBackendTest, GammaMatchesKernel) {
  auto backend = MakeBackend(4);
  std::vector<Check> checks;
  Batch<GammaJob> batch;
  batch.jobs.push_back(GammaPerElement<float>(1000, true, false, 1, 0, checks));
  batch.jobs.push_back(
      GammaPerElement<double>(777, false, true, 2, 12345, checks));
  batch.jobs.push_back(GammaGrouped<float>(
      {{0.5f, 2.0f, 100}, {3.0f, 1.0f, 0}, {0.01f, 1.0f, 300}}, false, 3, 0,
      checks));
  // Large jobs: cut into ranges across all threads.
  batch.jobs.push_back(GammaPerElement<double>(600000, true, false, 4,
                                               uint64_t{1} << 40, checks));
  batch.jobs.push_back(
      GammaGrouped<float>(RandomGroups<float>(2000, 5), true, 5, 77, checks));
  batch.jobs.push_back(
      GammaPerElement<float>(300000, false, true, 6, 3, checks));
  for (const auto& job : batch.jobs) batch.items += job->items;
  auto jobs = batch.jobs;
  RunBatch(*backend, std::move(batch));
  for (const auto& job : jobs) EXPECT_TRUE(job->status.ok()) << job->status;
  for (const Check& c : checks) c();
}

TEST(CpuBackendTest, SingleHugeGammaJobOnOneThreadAndMany) {
  // The same request on 1 and 5 threads: identical bits (and the kernel's).
  for (int threads : {1, 5}) {
    auto backend = MakeBackend(threads);
    std::vector<Check> checks;
    Batch<GammaJob> batch;
    batch.jobs.push_back(
        GammaPerElement<float>(1000003, true, true, 99, 5, checks));
    RunBatch(*backend, std::move(batch));
    for (const Check& c : checks) c();
  }
}

// ----------------------------------------------------------- categorical ----

template <typename T>
std::shared_ptr<CategoricalJob> Categorical(int64_t rows, int64_t k,
                                            int32_t draws,
                                            kernels::WeightKind kind,
                                            uint64_t seed, uint64_t first_row,
                                            std::vector<Check>& checks) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(0, 1);
  auto values = std::make_shared<std::vector<T>>();
  for (int64_t i = 0; i < rows * k; ++i) {
    double v = dist(rng);
    if (kind == kernels::WeightKind::kWeights) {
      if (v < 0.2 && i % k != 0) v = 0;  // zero weights
    } else {
      v = v < 0.1 && i % k != 0 ? -std::numeric_limits<double>::infinity()
                                : 10 * v - 5;
    }
    values->push_back(static_cast<T>(v));
  }
  CategoricalWork<T> w;
  w.values = absl::MakeConstSpan(*values);
  const size_t n = static_cast<size_t>(rows * draws);
  auto out = std::make_shared<std::vector<int32_t>>(n, -1);
  w.out = absl::MakeSpan(*out);
  auto job = std::make_shared<CategoricalJob>();
  job->shape = {rows, k, draws};
  job->weight_kind = kind;
  job->first_row = first_row;
  job->seed = seed;
  job->items = rows * draws;
  std::vector<int32_t> expected(n, -1);
  const absl::Status s = kernels::SampleCategoricalCpu<T>(
      w.values, job->shape, kind, seed, first_row, absl::MakeSpan(expected));
  EXPECT_TRUE(s.ok()) << s;
  checks.push_back(CompareLater(out, std::move(expected),
                                "categorical seed " + std::to_string(seed)));
  job->work = std::move(w);
  job->values_owner = std::move(values);
  return job;
}

TEST(CpuBackendTest, CategoricalMatchesKernel) {
  using kernels::WeightKind;
  auto backend = MakeBackend(4);
  std::vector<Check> checks;
  Batch<CategoricalJob> batch;
  batch.jobs.push_back(
      Categorical<float>(10, 7, 1, WeightKind::kWeights, 11, 0, checks));
  batch.jobs.push_back(
      Categorical<double>(33, 100, 5, WeightKind::kLogits, 12, 31, checks));
  batch.jobs.push_back(
      Categorical<double>(5, 1, 4, WeightKind::kWeights, 13, 0, checks));
  batch.jobs.push_back(
      Categorical<float>(1000, 33, 2, WeightKind::kLogits, 14, 1, checks));
  // Large: rows cut across threads, at first rows that are not multiples
  // of the warp size.
  batch.jobs.push_back(
      Categorical<float>(20000, 40, 3, WeightKind::kWeights, 15, 7, checks));
  batch.jobs.push_back(
      Categorical<double>(3001, 500, 8, WeightKind::kWeights, 16, 0, checks));
  auto jobs = batch.jobs;
  RunBatch(*backend, std::move(batch));
  for (const auto& job : jobs) EXPECT_TRUE(job->status.ok()) << job->status;
  for (const Check& c : checks) c();
}

// ------------------------------------------------------------- dirichlet ----

template <typename T>
std::shared_ptr<DirichletJob> Dirichlet(int rows, int max_len, double lo,
                                        double hi, bool log_output,
                                        uint64_t seed,
                                        std::vector<Check>& checks) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> len_dist(1, max_len);
  std::uniform_real_distribution<double> alpha_dist(std::log(lo), std::log(hi));
  DirichletWork<T> w;
  w.row_offsets.push_back(0);
  for (int r = 0; r < rows; ++r) {
    const int len = len_dist(rng);
    for (int j = 0; j < len; ++j) {
      w.alpha.push_back(static_cast<T>(std::exp(alpha_dist(rng))));
    }
    w.row_offsets.push_back(static_cast<int64_t>(w.alpha.size()));
  }
  auto out = std::make_shared<std::vector<T>>(w.alpha.size(), Poison<T>());
  w.out = absl::MakeSpan(*out);
  std::vector<T> expected(w.alpha.size(), Poison<T>());
  const absl::Status s = kernels::SampleDirichletCpu<T>(
      w.alpha, w.row_offsets, log_output, seed, 0, absl::MakeSpan(expected));
  EXPECT_TRUE(s.ok()) << s;
  checks.push_back(CompareLater(out, std::move(expected),
                                "dirichlet seed " + std::to_string(seed)));
  auto job = std::make_shared<DirichletJob>();
  job->seed = seed;
  job->log_output = log_output;
  job->items = static_cast<int64_t>(w.alpha.size());
  job->work = std::move(w);
  return job;
}

TEST(CpuBackendTest, DirichletMatchesKernel) {
  auto backend = MakeBackend(4);
  std::vector<Check> checks;
  Batch<DirichletJob> batch;
  batch.jobs.push_back(Dirichlet<float>(100, 10, 0.1, 10, false, 21, checks));
  batch.jobs.push_back(Dirichlet<double>(1, 1, 0.5, 2, true, 22, checks));
  batch.jobs.push_back(Dirichlet<float>(300, 5, 1e-3, 1e-2, true, 23, checks));
  // Large and ragged: rows cut where the components cross the target.
  batch.jobs.push_back(Dirichlet<double>(30000, 50, 0.01, 5, true, 24, checks));
  batch.jobs.push_back(Dirichlet<float>(5, 100000, 0.3, 3, false, 25, checks));
  auto jobs = batch.jobs;
  RunBatch(*backend, std::move(batch));
  for (const auto& job : jobs) EXPECT_TRUE(job->status.ok()) << job->status;
  for (const Check& c : checks) c();
}

// ---------------------------------------------------------------- boards ----

std::shared_ptr<BoardsJob> Boards(int rows, int cols,
                                  std::vector<int32_t> stones, int64_t count,
                                  uint64_t seed, uint64_t first_position,
                                  std::vector<Check>& checks) {
  auto job = std::make_shared<BoardsJob>();
  job->spec.rows = rows;
  job->spec.cols = cols;
  job->spec.stones = std::move(stones);
  job->count = count;
  job->seed = seed;
  job->first_position = first_position;
  job->items = count;
  const size_t n = static_cast<size_t>(count) * job->spec.stones.size() *
                   static_cast<size_t>(kernels::BoardWords64(job->spec));
  auto out = std::make_shared<std::vector<uint64_t>>(n, ~uint64_t{0});
  job->out = absl::MakeSpan(*out);
  std::vector<uint64_t> expected(n, ~uint64_t{0});
  const absl::Status s = kernels::SampleBoardsCpu(
      job->spec, seed, first_position, count, absl::MakeSpan(expected));
  EXPECT_TRUE(s.ok()) << s;
  checks.push_back(CompareLater(out, std::move(expected),
                                "boards seed " + std::to_string(seed)));
  return job;
}

TEST(CpuBackendTest, BoardsMatchKernel) {
  auto backend = MakeBackend(4);
  std::vector<Check> checks;
  Batch<BoardsJob> batch;
  batch.jobs.push_back(Boards(9, 9, {10, 10}, 100, 31, 0, checks));
  batch.jobs.push_back(Boards(128, 128, {100, 200, 300}, 50, 33, 9, checks));
  batch.jobs.push_back(Boards(8, 8, {64}, 10, 34, 0, checks));
  batch.jobs.push_back(Boards(3, 5, {0, 2}, 7, 35, 0, checks));
  batch.jobs.push_back(Boards(4, 4, {1, 1}, 0, 36, 0, checks));
  // Large: positions cut across threads.
  batch.jobs.push_back(Boards(19, 19, {60, 59}, 3000, 32, 1000, checks));
  auto jobs = batch.jobs;
  RunBatch(*backend, std::move(batch));
  for (const auto& job : jobs) EXPECT_TRUE(job->status.ok()) << job->status;
  for (const Check& c : checks) c();
}

// ------------------------------------------------------------- enumerate ----

template <typename T>
std::shared_ptr<EnumerateJob> Enumerate(int problems, int max_terms,
                                        int max_len, kernels::ProbSpace in,
                                        kernels::ProbSpace out_space,
                                        uint64_t seed,
                                        std::vector<Check>& checks) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> terms_dist(1, max_terms);
  std::uniform_int_distribution<int> len_dist(1, max_len);
  std::uniform_int_distribution<int64_t> offset_dist(-1000, 1000);
  std::uniform_real_distribution<double> p_dist(0, 1);
  auto job = std::make_shared<EnumerateJob>();
  EnumerateWork<T> w;
  w.input_space = in;
  w.output_space = out_space;
  w.problems.resize(static_cast<size_t>(problems));
  auto offsets = std::make_shared<std::vector<int64_t>>(problems, -7);
  for (int p = 0; p < problems; ++p) {
    EnumerateProblem<T>& prob = w.problems[static_cast<size_t>(p)];
    const int terms = terms_dist(rng);
    int64_t len_sum = 0;
    std::vector<size_t> lengths;
    for (int t = 0; t < terms; ++t) {
      prob.offsets.push_back(offset_dist(rng));
      std::vector<T> values(static_cast<size_t>(len_dist(rng)));
      double total = 0;
      for (T& v : values) total += (v = static_cast<T>(p_dist(rng)));
      for (T& v : values) {
        v = static_cast<T>(v / total);
        if (in == kernels::ProbSpace::kLog) v = std::log(v);
      }
      len_sum += static_cast<int64_t>(values.size());
      lengths.push_back(values.size());
      prob.values.insert(prob.values.end(), values.begin(), values.end());
    }
    // The terms view the problem's values, as parsing leaves them.
    size_t start = 0;
    for (size_t len : lengths) {
      prob.terms.push_back(
          absl::MakeConstSpan(prob.values).subspan(start, len));
      start += len;
    }
    prob.out_offset = &(*offsets)[static_cast<size_t>(p)];
    (void)len_sum;
  }
  // One output buffer for all problems, like a response's repeated field.
  std::vector<size_t> sizes;
  size_t total = 0;
  std::vector<T> expected;
  std::vector<int64_t> expected_offsets;
  for (EnumerateProblem<T>& prob : w.problems) {
    std::vector<kernels::PmfTerm<T>> terms;
    for (size_t t = 0; t < prob.terms.size(); ++t) {
      terms.push_back({prob.offsets[t], prob.terms[t]});
    }
    absl::StatusOr<kernels::Pmf<T>> pmf =
        kernels::EnumerateCpu<T>(terms, in, out_space);
    EXPECT_TRUE(pmf.ok()) << pmf.status();
    sizes.push_back(pmf->values.size());
    total += pmf->values.size();
    expected.insert(expected.end(), pmf->values.begin(), pmf->values.end());
    expected_offsets.push_back(pmf->offset);
  }
  auto out = std::make_shared<std::vector<T>>(total, Poison<T>());
  size_t at = 0;
  for (size_t p = 0; p < w.problems.size(); ++p) {
    w.problems[p].out = absl::MakeSpan(*out).subspan(at, sizes[p]);
    at += sizes[p];
  }
  checks.push_back(CompareLater(out, std::move(expected),
                                "enumerate seed " + std::to_string(seed)));
  checks.push_back(CompareLater(offsets, std::move(expected_offsets),
                                "enumerate offsets " + std::to_string(seed)));
  job->seed = seed;
  job->items = static_cast<int64_t>(total);
  job->work = std::move(w);
  return job;
}

TEST(CpuBackendTest, EnumerateMatchesKernel) {
  using kernels::ProbSpace;
  auto backend = MakeBackend(4);
  std::vector<Check> checks;
  Batch<EnumerateJob> batch;
  batch.jobs.push_back(Enumerate<float>(3, 4, 20, ProbSpace::kLinear,
                                        ProbSpace::kLinear, 41, checks));
  batch.jobs.push_back(Enumerate<double>(5, 6, 50, ProbSpace::kLog,
                                         ProbSpace::kLog, 42, checks));
  batch.jobs.push_back(Enumerate<double>(1, 10, 300, ProbSpace::kLinear,
                                         ProbSpace::kLog, 43, checks));
  batch.jobs.push_back(Enumerate<float>(40, 8, 400, ProbSpace::kLog,
                                        ProbSpace::kLinear, 44, checks));
  batch.jobs.push_back(Enumerate<double>(200, 3, 2000, ProbSpace::kLinear,
                                         ProbSpace::kLinear, 45, checks));
  auto jobs = batch.jobs;
  RunBatch(*backend, std::move(batch));
  for (const auto& job : jobs) EXPECT_TRUE(job->status.ok()) << job->status;
  for (const Check& c : checks) c();
}

// ---------------------------------------------------------------- errors ----

TEST(CpuBackendTest, PerJobErrorsGoToJobStatus) {
  auto backend = MakeBackend(3);
  std::vector<Check> checks;
  Batch<GammaJob> batch;
  batch.jobs.push_back(GammaPerElement<float>(100, true, false, 1, 0, checks));
  std::vector<Check> ignored;
  auto bad = GammaPerElement<double>(50, true, false, 2, 0, ignored);
  std::get<GammaWork<double>>(bad->work).shape[17] = -1;
  batch.jobs.push_back(bad);
  // A large job cut into pieces with one bad shape in the middle.
  auto bad_big = GammaPerElement<float>(500000, false, false, 3, 0, ignored);
  std::get<GammaWork<float>>(bad_big->work).shape[312345] = 0;
  batch.jobs.push_back(bad_big);
  batch.jobs.push_back(
      GammaPerElement<double>(2000, false, true, 4, 0, checks));
  auto jobs = batch.jobs;
  RunBatch(*backend, std::move(batch));
  EXPECT_TRUE(jobs[0]->status.ok());
  EXPECT_EQ(jobs[1]->status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(jobs[2]->status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(jobs[2]->status.message().find("samples ["), std::string::npos)
      << jobs[2]->status;
  EXPECT_TRUE(jobs[3]->status.ok());
  for (const Check& c : checks) c();  // neighbours are unaffected
}

TEST(CpuBackendTest, InconsistentSizesAreErrorsNotCrashes) {
  auto backend = MakeBackend(2);
  std::vector<Check> checks, ignored;

  Batch<CategoricalJob> cat;
  auto c = Categorical<float>(100, 10, 2, kernels::WeightKind::kWeights, 1, 0,
                              ignored);
  c->shape.rows = 1000;  // values and out are for 100 rows
  cat.jobs.push_back(c);
  cat.jobs.push_back(Categorical<float>(
      100, 10, 2, kernels::WeightKind::kWeights, 2, 0, checks));
  RunBatch(*backend, std::move(cat));
  EXPECT_EQ(c->status.code(), absl::StatusCode::kInvalidArgument);

  Batch<DirichletJob> dir;
  auto d = Dirichlet<double>(10, 4, 0.5, 2, false, 3, ignored);
  std::get<DirichletWork<double>>(d->work).row_offsets.back() += 5;
  dir.jobs.push_back(d);
  RunBatch(*backend, std::move(dir));
  EXPECT_EQ(d->status.code(), absl::StatusCode::kInvalidArgument);

  Batch<BoardsJob> boards;
  auto b = Boards(9, 9, {10, 10}, 100, 4, 0, ignored);
  b->count = 101;
  boards.jobs.push_back(b);
  RunBatch(*backend, std::move(boards));
  EXPECT_EQ(b->status.code(), absl::StatusCode::kInvalidArgument);

  Batch<GammaJob> gamma;
  auto g = GammaPerElement<float>(100, false, false, 5, 0, ignored);
  std::get<GammaWork<float>>(g->work).shape.pop_back();
  gamma.jobs.push_back(g);
  RunBatch(*backend, std::move(gamma));
  EXPECT_FALSE(g->status.ok());

  Batch<EnumerateJob> en;
  auto e1 = Enumerate<double>(3, 3, 10, kernels::ProbSpace::kLinear,
                              kernels::ProbSpace::kLinear, 6, ignored);
  auto& w1 = std::get<EnumerateWork<double>>(e1->work);
  w1.problems[1].out = w1.problems[1].out.subspan(1);  // one too short
  auto e2 = Enumerate<double>(3, 3, 10, kernels::ProbSpace::kLinear,
                              kernels::ProbSpace::kLinear, 7, ignored);
  std::get<EnumerateWork<double>>(e2->work).problems[2].terms.clear();
  std::get<EnumerateWork<double>>(e2->work).problems[2].offsets.clear();
  en.jobs.push_back(e1);
  en.jobs.push_back(e2);
  en.jobs.push_back(Enumerate<double>(3, 3, 10, kernels::ProbSpace::kLinear,
                                      kernels::ProbSpace::kLinear, 8, checks));
  RunBatch(*backend, std::move(en));
  EXPECT_EQ(e1->status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(e1->status.message().find("problems[1]"), std::string::npos)
      << e1->status;
  EXPECT_EQ(e2->status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(e2->status.message().find("problems[2]"), std::string::npos)
      << e2->status;
  for (const Check& check : checks) check();
}

// ------------------------------------------------------------ the pool ----

TEST(CpuBackendTest, CreateAndInfo) {
  EXPECT_EQ(CpuBackend::Create(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CpuBackend::Create(-3).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto backend = MakeBackend(3);
  EXPECT_EQ(backend->Capacity(), 3);
  const BackendInfo info = backend->Info();
  EXPECT_EQ(info.name, "cpu");
  EXPECT_TRUE(info.devices.empty());
  EXPECT_EQ(info.reason, "cpu");
  EXPECT_TRUE(backend->PoolUsage().empty());
  absl::StatusOr<std::unique_ptr<CpuBackend>> with_reason =
      CpuBackend::Create(1, "no GPU found");
  ASSERT_TRUE(with_reason.ok());
  EXPECT_EQ((*with_reason)->Info().reason, "no GPU found");
}

TEST(CpuBackendTest, EmptyBatchCompletesFromPool) {
  auto backend = MakeBackend(2);
  RunBatch(*backend, Batch<GammaJob>{});
  RunBatch(*backend, Batch<EnumerateJob>{});
}

TEST(CpuBackendTest, ConcurrentRunsFromManyThreads) {
  auto backend = MakeBackend(3);
  constexpr int kSubmitters = 4;
  constexpr int kBatchesEach = 60;
  std::atomic<int> done_calls{0};
  std::vector<std::vector<Check>> checks(kSubmitters);
  std::vector<std::vector<std::shared_ptr<Job>>> all_jobs(kSubmitters);
  std::vector<std::thread> submitters;
  for (int t = 0; t < kSubmitters; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kBatchesEach; ++i) {
        const uint64_t seed = static_cast<uint64_t>(t * 1000 + i);
        auto done = [&done_calls](BatchResult r) {
          EXPECT_TRUE(r.status.ok());
          done_calls.fetch_add(1);
        };
        switch (i % 5) {
          case 0: {
            Batch<GammaJob> b;
            b.jobs.push_back(GammaPerElement<float>(
                500 + i * 37, i % 2, i % 3 == 0, seed, i, checks[t]));
            b.jobs.push_back(GammaGrouped<double>(
                RandomGroups<double>(5, seed), false, seed + 1, 0, checks[t]));
            for (auto& j : b.jobs) all_jobs[t].push_back(j);
            backend->Run(std::move(b), done);
            break;
          }
          case 1: {
            Batch<CategoricalJob> b;
            b.jobs.push_back(Categorical<double>(20 + i, 9, 2,
                                                 kernels::WeightKind::kWeights,
                                                 seed, i, checks[t]));
            for (auto& j : b.jobs) all_jobs[t].push_back(j);
            backend->Run(std::move(b), done);
            break;
          }
          case 2: {
            Batch<DirichletJob> b;
            b.jobs.push_back(
                Dirichlet<float>(30, 6, 0.1, 3, i % 2, seed, checks[t]));
            for (auto& j : b.jobs) all_jobs[t].push_back(j);
            backend->Run(std::move(b), done);
            break;
          }
          case 3: {
            Batch<BoardsJob> b;
            b.jobs.push_back(Boards(5, 7, {3, 4}, 40, seed, i, checks[t]));
            for (auto& j : b.jobs) all_jobs[t].push_back(j);
            backend->Run(std::move(b), done);
            break;
          }
          default: {
            Batch<EnumerateJob> b;
            b.jobs.push_back(
                Enumerate<float>(2, 3, 8, kernels::ProbSpace::kLinear,
                                 kernels::ProbSpace::kLinear, seed, checks[t]));
            for (auto& j : b.jobs) all_jobs[t].push_back(j);
            backend->Run(std::move(b), done);
            break;
          }
        }
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  // Destruction finishes everything queued.
  backend.reset();
  EXPECT_EQ(done_calls.load(), kSubmitters * kBatchesEach);
  for (const auto& jobs : all_jobs) {
    for (const auto& job : jobs) EXPECT_TRUE(job->status.ok()) << job->status;
  }
  for (const auto& cs : checks) {
    for (const Check& c : cs) c();
  }
}

TEST(CpuBackendTest, DestructionCompletesQueuedWork) {
  auto backend = MakeBackend(1);
  std::atomic<int> done_calls{0};
  std::vector<Check> checks;
  for (int i = 0; i < 30; ++i) {
    Batch<GammaJob> b;
    b.jobs.push_back(
        GammaPerElement<double>(20000, true, false, 500 + i, 0, checks));
    backend->Run(std::move(b), [&done_calls](BatchResult r) {
      EXPECT_TRUE(r.status.ok());
      done_calls.fetch_add(1);
    });
  }
  backend.reset();
  EXPECT_EQ(done_calls.load(), 30);
  for (const Check& c : checks) c();
}

// Issue 13: a batch of one task's work (under about 0.1 ms) runs on the
// calling thread, done included, with the same bits; a larger one, or one
// submitted from such a run's done, is declined and stays the caller's.
TEST(CpuBackendTest, RunHereRunsOneTasksWorkOnTheCallingThread) {
  auto backend = MakeBackend(3);
  EXPECT_EQ(backend->EagerBatches(), 3);
  std::vector<Check> checks;
  Batch<GammaJob> small;
  small.jobs.push_back(
      GammaPerElement<float>(256, false, false, 11, 0, checks));
  small.jobs.push_back(GammaPerElement<double>(64, true, true, 12, 5, checks));
  small.items = 320;
  AnyBatch any(std::move(small));
  int calls = 0;
  std::thread::id thread;
  bool nested_declined = false;
  BatchDone done = [&](BatchResult r) {
    EXPECT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.device, "cpu");
    ++calls;
    thread = std::this_thread::get_id();
    // Runs do not nest: a batch submitted from here goes to the pool.
    Batch<GammaJob> next;
    std::vector<Check> never_run;
    next.jobs.push_back(
        GammaPerElement<float>(8, false, false, 13, 0, never_run));
    AnyBatch next_any(std::move(next));
    BatchDone next_done = [](BatchResult) {};
    nested_declined = !backend->RunHere(next_any, next_done);
  };
  ASSERT_TRUE(backend->RunHere(any, done));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(thread, std::this_thread::get_id());
  EXPECT_TRUE(nested_declined);

  Batch<GammaJob> large;
  large.jobs.push_back(
      GammaPerElement<float>(100000, false, false, 14, 0, checks));
  large.items = 100000;
  AnyBatch large_any(std::move(large));
  DoneWaiter waiter;
  BatchDone large_done = waiter.Callback();
  EXPECT_FALSE(backend->RunHere(large_any, large_done));
  ASSERT_TRUE(large_done);
  ASSERT_EQ(std::get<Batch<GammaJob>>(large_any).jobs.size(), 1u);
  backend->Run(std::move(large_any), std::move(large_done));
  EXPECT_TRUE(waiter.Wait().status.ok());
  EXPECT_NE(waiter.thread(), std::this_thread::get_id());
  for (const Check& c : checks) c();
}

TEST(CpuBackendTest, DoneMayRunTheNextBatch) {
  // A batcher submits its next batch from the previous one's done callback;
  // that must neither deadlock nor be lost, even while shutting down.
  auto backend = MakeBackend(2);
  std::atomic<int> done_calls{0};
  std::vector<Check> checks;
  std::vector<std::shared_ptr<GammaJob>> jobs;
  for (int i = 0; i < 20; ++i) {
    jobs.push_back(
        GammaPerElement<float>(3000, true, false, 700 + i, 0, checks));
  }
  // Callbacks reach the backend through a plain pointer: unique_ptr::reset
  // clears its own before the destructor runs.
  CpuBackend* raw = backend.get();
  std::function<void(int)> submit = [&](int i) {
    Batch<GammaJob> b;
    b.jobs.push_back(jobs[static_cast<size_t>(i)]);
    raw->Run(std::move(b), [&, i](BatchResult) {
      done_calls.fetch_add(1);
      if (i + 1 < static_cast<int>(jobs.size())) submit(i + 1);
    });
  };
  submit(0);
  // Give the chain a head start, then destroy while it is still going.
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  backend.reset();
  EXPECT_EQ(done_calls.load(), 20);
  for (const Check& c : checks) c();
}

}  // namespace
}  // namespace sampler::server
