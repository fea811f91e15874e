// CPU enumeration benchmark: the Poisson-binomial (n two-point terms
// {1 - p, p}, p uniform in (0, 1)) through EnumerateCpu, the service's CPU
// backend, for a sweep of n, float64, each space pair. Wall-clock medians of
// a few runs on one thread (and the process CPU time of the fastest, which
// a shared machine disturbs less), and the mean and variance of the result
// against sum(p) and sum(p (1 - p)) as a sanity check.
//
//   enumerate_cpu_bench [--n=4000,30000] [--runs=3] [--log-only]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels {
namespace {

struct Args {
  std::vector<int> sizes = {4000, 30000};
  int runs = 3;
  bool log_only = false;
};

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--n=", 0) == 0) {
      a.sizes.clear();
      for (absl::string_view s : absl::StrSplit(arg.substr(4), ',')) {
        int n = 0;
        if (!absl::SimpleAtoi(s, &n) || n < 1) {
          std::fprintf(stderr, "bad --n: %s\n", arg.c_str());
          std::exit(2);
        }
        a.sizes.push_back(n);
      }
    } else if (arg.rfind("--runs=", 0) == 0) {
      if (!absl::SimpleAtoi(arg.substr(7), &a.runs) || a.runs < 1) {
        std::fprintf(stderr, "bad --runs: %s\n", arg.c_str());
        std::exit(2);
      }
    } else if (arg == "--log-only") {
      a.log_only = true;
    } else {
      std::fprintf(stderr,
                   "usage: enumerate_cpu_bench [--n=4000,30000] [--runs=3] "
                   "[--log-only]\n");
      std::exit(2);
    }
  }
  return a;
}

void Bench(int n, ProbSpace in, ProbSpace out, int runs) {
  std::mt19937_64 rng(n);
  std::vector<double> p(n);
  std::vector<std::vector<double>> values(n);
  std::vector<PmfTerm<double>> terms(n);
  double mean = 0, var = 0;
  for (int i = 0; i < n; ++i) {
    p[i] = (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53;
    mean += p[i];
    var += p[i] * (1 - p[i]);
    values[i] = {1 - p[i], p[i]};
    if (in == ProbSpace::kLog) {
      values[i] = {std::log1p(-p[i]), std::log(p[i])};
    }
    terms[i] = {0, values[i]};
  }
  std::vector<double> seconds;
  double cpu_seconds = 0;
  Pmf<double> result;
  for (int r = 0; r < runs; ++r) {
    const std::clock_t c0 = std::clock();
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<Pmf<double>> got =
        EnumerateCpu<double>(absl::MakeConstSpan(terms), in, out);
    const auto t1 = std::chrono::steady_clock::now();
    if (!got.ok()) {
      std::fprintf(stderr, "%s\n", got.status().ToString().c_str());
      std::exit(1);
    }
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    if (r == 0 ||
        seconds.back() <= *std::min_element(seconds.begin(), seconds.end())) {
      cpu_seconds = cpu;
    }
    result = *std::move(got);
  }
  std::sort(seconds.begin(), seconds.end());
  // Moments of the result (linear probabilities).
  double m0 = 0, m1 = 0;
  std::vector<double> prob(result.values.size());
  for (size_t k = 0; k < prob.size(); ++k) {
    prob[k] =
        out == ProbSpace::kLog ? std::exp(result.values[k]) : result.values[k];
    m0 += prob[k];
    m1 += prob[k] * static_cast<double>(k);
  }
  double m2 = 0;
  for (size_t k = 0; k < prob.size(); ++k) {
    const double d = static_cast<double>(k) - m1 / m0;
    m2 += prob[k] * d * d;
  }
  std::printf(
      "n=%6d %s->%s  median %9.4f s  min %9.4f s (cpu %9.4f s)  (%d runs)  "
      "mean rel err %.1e  var rel err %.1e\n",
      n, in == ProbSpace::kLog ? "log" : "lin",
      out == ProbSpace::kLog ? "log" : "lin", seconds[seconds.size() / 2],
      seconds[0], cpu_seconds, runs, std::abs(m1 / m0 - mean) / mean,
      std::abs(m2 / m0 - var) / var);
  std::fflush(stdout);
}

}  // namespace
}  // namespace sampler::kernels

int main(int argc, char** argv) {
  using sampler::kernels::ProbSpace;
  const sampler::kernels::Args args = sampler::kernels::ParseArgs(argc, argv);
  for (int n : args.sizes) {
    sampler::kernels::Bench(n, ProbSpace::kLog, ProbSpace::kLog, args.runs);
    if (args.log_only) continue;
    sampler::kernels::Bench(n, ProbSpace::kLinear, ProbSpace::kLog, args.runs);
    sampler::kernels::Bench(n, ProbSpace::kLinear, ProbSpace::kLinear,
                            args.runs);
  }
  return 0;
}
