// Host planning of the CUDA enumeration (issue 15): EnumerateBatchBuilder's
// Add (every problem), Finish (the plan) and PackInto (the arena into a host
// buffer, as the staging pipeline does) timed on the host, no GPU needed,
// for the two cases:
//   small: 16,384 problems of 8 terms of 4 points, float32, linear;
//   pb:    one Poisson binomial of n = 4,000 two-point terms, float64,
//          linear in, log out.
// Medians of --runs runs, in ms per stage, three ways: a fresh builder
// without Reserve(), a fresh builder with Reserve(), and one builder
// Reset() and Reserve()d every run (the server keeps one per thread).
//
// --fingerprint prints a hash of everything the builder hands the device
// (arena bytes, launches, problems, sizes) for a spread of random batches
// and options, so a change to the planner can show that it changes none of
// it (same output before and after). With --reuse the hashes come from one
// builder per type, Reset() between batches: the same output shows that a
// reused builder plans as a fresh one does.
//
//   enumerate_plan_bench [--runs=20] [--fingerprint [--reuse]]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/types/span.h"
#include "bench/host_timing.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels::cuda {
namespace {

using ::sampler::bench::Clock;
using ::sampler::bench::Median;
using ::sampler::bench::Ms;

// A batch's problems: each problem's term values, owned.
template <typename T>
struct Problems {
  std::vector<std::vector<std::vector<T>>> values;  // problem, term, value
  std::vector<std::vector<PmfTerm<T>>> terms;       // views of values
  std::vector<ProbSpace> in, out;

  void Finalize() {
    terms.resize(values.size());
    for (size_t p = 0; p < values.size(); ++p) {
      terms[p].clear();
      for (const std::vector<T>& v : values[p]) {
        terms[p].push_back({0, absl::MakeConstSpan(v)});
      }
    }
  }
};

template <typename T>
Problems<T> SmallProblems(int problems, int terms, int points) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(0.01, 1.0);
  Problems<T> ps;
  for (int p = 0; p < problems; ++p) {
    std::vector<std::vector<T>> pv(terms);
    for (std::vector<T>& v : pv) {
      double sum = 0;
      std::vector<double> d(points);
      for (double& x : d) sum += (x = u(rng));
      for (double x : d) v.push_back(static_cast<T>(x / sum));
    }
    ps.values.push_back(std::move(pv));
    ps.in.push_back(ProbSpace::kLinear);
    ps.out.push_back(ProbSpace::kLinear);
  }
  ps.Finalize();
  return ps;
}

Problems<double> PoissonBinomial(int n) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Problems<double> ps;
  std::vector<std::vector<double>> pv(n);
  for (std::vector<double>& v : pv) {
    const double p = u(rng);
    v = {1 - p, p};
  }
  ps.values.push_back(std::move(pv));
  ps.in.push_back(ProbSpace::kLinear);
  ps.out.push_back(ProbSpace::kLog);
  ps.Finalize();
  return ps;
}

// How a run gets its builder.
enum class BuilderUse { kFresh, kFreshReserved, kReusedReserved };

template <typename T>
void Time(const char* name, const Problems<T>& ps, int runs, BuilderUse use) {
  std::vector<double> add, finish, pack, total;
  std::vector<unsigned char> arena;
  const bool reserve = use != BuilderUse::kFresh;
  EnumerateBatchBuilder<T> kept;
  for (int r = 0; r < runs; ++r) {
    const Clock::time_point t0 = Clock::now();
    EnumerateBatchBuilder<T> fresh;
    EnumerateBatchBuilder<T>& b =
        use == BuilderUse::kReusedReserved ? kept : fresh;
    b.Reset();
    if (reserve) {  // as the server does
      size_t terms = 0, values = 0;
      for (const std::vector<PmfTerm<T>>& problem : ps.terms) {
        terms += problem.size();
        for (const PmfTerm<T>& t : problem) values += t.values.size();
      }
      b.Reserve(ps.terms.size(), terms, values);
    }
    for (size_t p = 0; p < ps.terms.size(); ++p) {
      if (!b.Add(ps.terms[p], ps.in[p], ps.out[p]).ok()) std::abort();
    }
    const Clock::time_point t1 = Clock::now();
    if (!b.Finish().ok()) std::abort();
    const Clock::time_point t2 = Clock::now();
    if (arena.size() < b.ArenaBytes()) arena.resize(b.ArenaBytes());  // warm
    const Clock::time_point t3 = Clock::now();
    b.PackInto(arena.data());
    const Clock::time_point t4 = Clock::now();
    add.push_back(Ms(t1 - t0));
    finish.push_back(Ms(t2 - t1));
    pack.push_back(Ms(t4 - t3));
    total.push_back(Ms(t2 - t0) + Ms(t4 - t3));
    if (r == 0 && !reserve) {
      std::printf("%s: arena %zu bytes, scratch %zu, launches: %.200s\n", name,
                  b.ArenaBytes(), b.ScratchBytes(),
                  b.DescribeLaunches().c_str());
    }
  }
  std::printf(
      "%s: median of %d runs, ms: Add %.3f  Finish %.3f  PackInto %.3f  "
      "total %.3f\n",
      name, runs, Median(add), Median(finish), Median(pack), Median(total));
}

// FNV-1a over bytes.
struct Hash {
  uint64_t h = 1469598103934665603ull;
  void Bytes(const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  }
  template <typename V>
  void Value(const V& v) {
    Bytes(&v, sizeof(v));
  }
};

template <typename T>
Problems<T> RandomProblems(std::mt19937_64& rng, int count) {
  std::uniform_real_distribution<double> u(0.01, 1.0);
  Problems<T> ps;
  for (int p = 0; p < count; ++p) {
    const int terms = rng() % 8 == 0 ? 1 + rng() % 300 : 1 + rng() % 12;
    const int max_len = rng() % 10 == 0 ? 3000 : rng() % 3 == 0 ? 100 : 6;
    std::vector<std::vector<T>> pv(terms);
    for (std::vector<T>& v : pv) {
      v.resize(1 + rng() % max_len);
      for (T& x : v) x = static_cast<T>(u(rng));
    }
    ps.values.push_back(std::move(pv));
    const bool in_log = rng() % 4 == 0, out_log = rng() % 4 == 0;
    if (in_log) {
      for (std::vector<T>& v : ps.values.back()) {
        for (T& x : v) x = -x;
      }
    }
    ps.in.push_back(in_log ? ProbSpace::kLog : ProbSpace::kLinear);
    ps.out.push_back(out_log ? ProbSpace::kLog : ProbSpace::kLinear);
  }
  ps.Finalize();
  return ps;
}

// `reused`: a builder to Reset() and plan in (null: a fresh one).
template <typename T>
uint64_t Fingerprint(const Problems<T>& ps, const EnumerateOptions& options,
                     EnumerateBatchBuilder<T>* reused = nullptr) {
  EnumerateBatchBuilder<T> fresh(options);
  EnumerateBatchBuilder<T>& b = reused != nullptr ? *reused : fresh;
  b.Reset(options);
  for (size_t p = 0; p < ps.terms.size(); ++p) {
    if (!b.Add(ps.terms[p], ps.in[p], ps.out[p]).ok()) std::abort();
  }
  if (!b.Finish().ok()) std::abort();
  std::vector<unsigned char> arena(b.ArenaBytes(), 0xa5);
  b.PackInto(arena.data());
  Hash h;
  h.Bytes(arena.data(), arena.size());
  h.Value(b.ScratchBytes());
  h.Value(b.total_out());
  h.Value(b.pair_count());
  for (const EnumerateProblem& p : b.problems()) {
    h.Value(p.support_offset);
    h.Value(p.out_begin);
    h.Value(p.out_length);
    h.Value(p.num_terms);
    h.Value(p.fft);
  }
  const EnumerateBatch<T> v = b.View(nullptr, nullptr, nullptr, nullptr, 0);
  for (size_t at : {v.values_at, v.steps_at, v.tasks_at, v.fft_signals_at,
                    v.fft_problems_at, v.scratch_needed, v.fft_work_at}) {
    h.Value(at);
  }
  for (const enumerate_internal::Launch& l : *v.launches) {
    for (int64_t x :
         {int64_t(l.kind), int64_t(l.config), int64_t(l.f32), int64_t(l.level),
          l.sp_begin, l.sp_count, l.task_begin, l.task_count, l.fft_length,
          l.fft_signals, l.fft_problems, l.fft_real, l.fft_spectra,
          l.fft_product, l.fft_signal_begin, l.fft_problem_begin}) {
      h.Value(x);
    }
  }
  return h.h;
}

template <typename T>
void PrintFingerprints(const char* type, EnumerateBatchBuilder<T>* reused) {
  std::mt19937_64 rng(3);
  for (int batch = 0; batch < 12; ++batch) {
    const Problems<T> ps = RandomProblems<T>(rng, 1 + batch * batch * 5);
    std::vector<EnumerateOptions> options(1);
    for (int c = 0; c < static_cast<int>(EnumerateDirectConfigs().size());
         c += 4) {
      options.push_back({EnumerateMethod::kDirect, c});
    }
    for (const EnumerateOptions& o : options) {
      std::printf("%s batch %d method %d config %d: %016llx\n", type, batch,
                  static_cast<int>(o.method), o.direct_config,
                  static_cast<unsigned long long>(Fingerprint(ps, o, reused)));
    }
  }
  std::printf("%s small: %016llx\n", type,
              static_cast<unsigned long long>(
                  Fingerprint(SmallProblems<T>(2000, 8, 4), {}, reused)));
  // Enough problems for the planner's threads (kProblemsPerThread).
  std::printf("%s small 16384: %016llx\n", type,
              static_cast<unsigned long long>(
                  Fingerprint(SmallProblems<T>(16384, 8, 4), {}, reused)));
}

int Main(int argc, char** argv) {
  int runs = 20;
  bool fingerprint = false, reuse = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--runs=", 0) == 0 &&
        absl::SimpleAtoi(arg.substr(7), &runs) && runs >= 1) {
      continue;
    }
    if (arg == "--fingerprint") {
      fingerprint = true;
      continue;
    }
    if (arg == "--reuse") {
      reuse = true;
      continue;
    }
    std::fprintf(stderr,
                 "usage: enumerate_plan_bench [--runs=20] [--fingerprint "
                 "[--reuse]]\n");
    return 2;
  }
  if (fingerprint) {
    EnumerateBatchBuilder<float> float_builder;
    EnumerateBatchBuilder<double> double_builder;
    PrintFingerprints<float>("float", reuse ? &float_builder : nullptr);
    PrintFingerprints<double>("double", reuse ? &double_builder : nullptr);
    std::printf(
        "double pb: %016llx\n",
        static_cast<unsigned long long>(Fingerprint(
            PoissonBinomial(4000), {}, reuse ? &double_builder : nullptr)));
    return 0;
  }
  const Problems<float> small = SmallProblems<float>(16384, 8, 4);
  const Problems<double> pb = PoissonBinomial(4000);
  for (const BuilderUse use : {BuilderUse::kFresh, BuilderUse::kFreshReserved,
                               BuilderUse::kReusedReserved}) {
    std::printf("-- %s\n",
                use == BuilderUse::kFresh ? "no Reserve()"
                : use == BuilderUse::kFreshReserved
                    ? "Reserve() first"
                    : "one builder, Reset() and Reserve() every run");
    Time("small 16384x8x4 f32", small, runs, use);
    Time("pb n=4000 f64 log", pb, runs, use);
  }
  return 0;
}

}  // namespace
}  // namespace sampler::kernels::cuda

int main(int argc, char** argv) {
  return sampler::kernels::cuda::Main(argc, argv);
}
