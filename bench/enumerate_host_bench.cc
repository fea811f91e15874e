// The host steps of one Enumerate request on the server (issue 15), timed
// without a GPU, for the requests: 16,384 problems of 8 terms of 4
// points, float32, linear, in the packed and the explicit form; and Poisson
// binomials of n = 4,000 and 30,000 terms (packed, float64, log out).
// Each step is what the server runs for the request, in its order:
//   decode    the request body into the proto (before the server's clock);
//   parse     ParseEnumerate: the typed job, validation (before the clock);
//   bind      BindEnumerate: the response's results, the outputs' memory;
//   plan      the CUDA backend's planned tree (cuda_exec_enumerate.cc):
//             Reserve, Add every problem, Finish, PackInto the upload;
//   small     the small-problems path instead (enumerate_small.h): the
//             problems' descriptors and values packed into the upload
//             (0 where the problems do not fit it: the Poisson binomials);
//   unpack    the CUDA backend's copy of the results into the outputs;
//   cpu       the CPU backend's work (EnumerateCpu per problem, copied into
//             its output), one thread: divide by the server's cores;
//   wire      AnswerToWire: the answer's wire buffer.
// The server's time (sampler_request_duration_seconds) starts after parse;
// the GPU's own time (copies, kernels) is not here.
// Medians of --runs runs, in ms.
//
//   enumerate_host_bench [--runs=15] [--problems=16384]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "bench/host_timing.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/enumerate_small.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/v1/sampler.pb.h"
#include "server/jobs.h"
#include "server/request_limits.h"
#include "server/request_parse.h"
#include "server/response_bind.h"
#include "server/wire_answer.h"

namespace sampler::server {
namespace {

namespace kc = kernels::cuda;
using ::sampler::bench::Clock;
using ::sampler::bench::Median;
using ::sampler::bench::Ms;

// The request, as sampler-loadgen sends it (normalised random
// points, every term at offset 0).
v1::EnumerateRequest SmallRequest(int problems, int terms, int points,
                                  bool packed) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(0.01, 1.0);
  v1::EnumerateRequest request;
  request.set_precision(v1::PRECISION_FLOAT32);
  for (int p = 0; p < problems; ++p) {
    v1::EnumerateProblem* problem = request.add_problems();
    if (packed) problem->set_term_length(points);
    for (int t = 0; t < terms; ++t) {
      std::vector<double> d(points);
      double sum = 0;
      for (double& x : d) sum += (x = u(rng));
      auto* values =
          packed ? problem->mutable_values()->mutable_f32()->mutable_values()
                 : problem->add_terms()
                       ->mutable_probabilities()
                       ->mutable_f32()
                       ->mutable_values();
      for (double x : d) values->Add(static_cast<float>(x / sum));
    }
  }
  return request;
}

// A Poisson binomial of n terms (1 - p, p) as poisson_binomial.sh sends it:
// packed, term_length 2, float64, log-space output.
v1::EnumerateRequest PoissonBinomialRequest(int n) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  v1::EnumerateRequest request;
  request.set_precision(v1::PRECISION_FLOAT64);
  request.set_output_space(v1::PROBABILITY_SPACE_LOG);
  v1::EnumerateProblem* problem = request.add_problems();
  problem->set_term_length(2);
  auto* values = problem->mutable_values()->mutable_f64()->mutable_values();
  for (int t = 0; t < n; ++t) {
    const double p = u(rng);
    values->Add(1 - p);
    values->Add(p);
  }
  return request;
}

struct Steps {
  std::vector<double> decode, parse, bind, plan, small, unpack, cpu, wire;
};

template <typename T>
void PlanAsCudaBackend(EnumerateWork<T>& work, kc::EnumerateBatchBuilder<T>& b,
                       std::vector<unsigned char>& arena) {
  b.Reset();
  size_t terms = 0, values = 0;
  for (const EnumerateProblem<T>& problem : work.problems) {
    terms += problem.terms.size();
    for (const auto& term : problem.terms) values += term.size();
  }
  b.Reserve(work.problems.size(), terms, values);
  std::vector<kernels::PmfTerm<T>> list;
  for (const EnumerateProblem<T>& problem : work.problems) {
    list.resize(problem.terms.size());
    for (size_t t = 0; t < list.size(); ++t) {
      list[t] = {problem.offsets[t], problem.terms[t]};
    }
    if (!b.Add(list, work.input_space, work.output_space).ok()) std::abort();
  }
  if (!b.Finish().ok()) std::abort();
  if (arena.size() < b.ArenaBytes()) arena.resize(b.ArenaBytes());
  b.PackInto(arena.data());
}

template <typename T>
void PackSmall(const EnumerateWork<T>& work, kc::EnumerateSmallBatch<T>& small,
               std::vector<unsigned char>& arena) {
  small.Reset(work.input_space, work.output_space);
  for (const EnumerateProblem<T>& problem : work.problems) {
    small.Add(problem.terms, problem.offsets);  // false: the planned path
  }
  if (small.num_problems() == 0) return;
  if (arena.size() < small.ArenaBytes()) arena.resize(small.ArenaBytes());
  small.PackInto(arena.data());
}

template <typename T>
void RunCpu(EnumerateWork<T>& work) {
  std::vector<kernels::PmfTerm<T>> list;
  for (EnumerateProblem<T>& problem : work.problems) {
    list.resize(problem.terms.size());
    for (size_t t = 0; t < list.size(); ++t) {
      list[t] = {problem.offsets[t], problem.terms[t]};
    }
    absl::StatusOr<kernels::Pmf<T>> pmf =
        kernels::EnumerateCpu<T>(list, work.input_space, work.output_space);
    if (!pmf.ok()) std::abort();
    std::copy(pmf->values.begin(), pmf->values.end(), problem.out.begin());
  }
}

template <typename T>
void Time(const char* name, const v1::EnumerateRequest& request, int runs,
          bool print) {
  const std::string body = request.SerializeAsString();
  RequestLimits limits;
  limits.max_enumerate_pairs = int64_t{1} << 40;  // as poisson_binomial.sh
  kc::EnumerateBatchBuilder<T> builder;
  kc::EnumerateSmallBatch<T> small;
  std::vector<unsigned char> arena, small_arena;
  std::vector<T> device_out;  // stands for the downloaded results
  Steps s;
  for (int r = 0; r < runs; ++r) {
    const Clock::time_point t0 = Clock::now();
    auto decoded = std::make_shared<v1::EnumerateRequest>();
    if (!decoded->ParseFromString(body)) std::abort();
    const Clock::time_point t1 = Clock::now();
    absl::StatusOr<std::shared_ptr<EnumerateJob>> job =
        ParseEnumerate(*decoded, limits);
    if (!job.ok()) std::abort();
    const Clock::time_point t2 = Clock::now();
    auto answer = std::make_shared<v1::EnumerateResponse>();
    BindEnumerate(**job, answer.get());
    const Clock::time_point t3 = Clock::now();
    auto& work = std::get<EnumerateWork<T>>((*job)->work);
    PlanAsCudaBackend(work, builder, arena);
    const Clock::time_point t4 = Clock::now();
    PackSmall(work, small, small_arena);
    const Clock::time_point t5 = Clock::now();
    if (device_out.size() < static_cast<size_t>(builder.total_out())) {
      device_out.assign(builder.total_out(), T{0.25});
    }
    for (size_t p = 0; p < work.problems.size(); ++p) {
      const EnumerateProblem<T>& problem = work.problems[p];
      std::memcpy(problem.out.data(),
                  device_out.data() + builder.problems()[p].out_begin,
                  problem.out.size() * sizeof(T));
    }
    const Clock::time_point t6 = Clock::now();
    RunCpu(work);
    const Clock::time_point t7 = Clock::now();
    grpc::ByteBuffer wire = AnswerToWire(answer);
    const Clock::time_point t8 = Clock::now();
    s.decode.push_back(Ms(t1 - t0));
    s.parse.push_back(Ms(t2 - t1));
    s.bind.push_back(Ms(t3 - t2));
    s.plan.push_back(Ms(t4 - t3));
    s.small.push_back(Ms(t5 - t4));
    s.unpack.push_back(Ms(t6 - t5));
    s.cpu.push_back(Ms(t7 - t6));
    s.wire.push_back(Ms(t8 - t7));
  }
  if (!print) return;
  std::printf(
      "%s (%zu request bytes): median of %d runs, ms: decode %.3f  parse "
      "%.3f  bind %.3f  plan %.3f  small %.3f  unpack %.3f  cpu(1 thread) "
      "%.3f  wire %.3f\n",
      name, body.size(), runs, Median(s.decode), Median(s.parse),
      Median(s.bind), Median(s.plan), Median(s.small), Median(s.unpack),
      Median(s.cpu), Median(s.wire));
}

int Flag(int argc, char** argv, absl::string_view name, int fallback) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    int v = 0;
    if (absl::ConsumePrefix(&a, "--") && absl::ConsumePrefix(&a, name) &&
        absl::ConsumePrefix(&a, "=") && absl::SimpleAtoi(a, &v)) {
      return v;
    }
  }
  return fallback;
}

}  // namespace
}  // namespace sampler::server

int main(int argc, char** argv) {
  using sampler::server::Flag;
  const int runs = std::max(1, Flag(argc, argv, "runs", 15));
  const int problems = std::max(1, Flag(argc, argv, "problems", 16384));
  // A first pass untimed: a fresh process's first requests pay for memory
  // it has not touched yet (20 ms more in wire, measured), a server's not.
  for (int pass = 0; pass < 2; ++pass) {
    for (bool packed : {true, false}) {
      const sampler::v1::EnumerateRequest request =
          sampler::server::SmallRequest(problems, 8, 4, packed);
      sampler::server::Time<float>(
          packed ? "small 8x4 f32 packed" : "small 8x4 f32 explicit", request,
          pass == 0 ? 2 : runs, /*print=*/pass == 1);
    }
    for (int n : {4000, 30000}) {
      const sampler::v1::EnumerateRequest request =
          sampler::server::PoissonBinomialRequest(n);
      sampler::server::Time<double>(
          n == 4000 ? "pb n=4000 f64 log out" : "pb n=30000 f64 log out",
          request, pass == 0 ? 2 : runs, /*print=*/pass == 1);
    }
  }
  return 0;
}
