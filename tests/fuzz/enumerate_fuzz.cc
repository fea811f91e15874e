// Fuzz target for Enumerate: the request from arbitrary bytes, validated
// (ParseEnumerate), bound and executed on the CPU backend, in one batch with
// its twin (the same request parsed again, which must end alike). Rejections
// are INVALID_ARGUMENT or OUT_OF_RANGE; an accepted request either fails at
// execution with INVALID_ARGUMENT (a result that overflows its precision)
// or gives per problem the sum's offset, its support length, values that are
// probabilities (linear: finite, >= 0; log: not NaN, below +inf) and bit for
// bit what kernels::EnumerateCpu gives on the problem directly.
#include <cmath>
#include <limits>
#include <variant>
#include <vector>

#include "tests/fuzz/fuzz_checks.h"
#include "tests/fuzz/fuzz_target.h"

namespace sampler::fuzz {
namespace {

template <typename T>
void Check(const server::EnumerateJob& job,
           const server::EnumerateWork<T>& work,
           const v1::EnumerateResponse& response) {
  // The kernel, problem by problem; the job fails with the first failure.
  absl::Status direct_status;
  std::vector<kernels::Pmf<T>> direct(work.problems.size());
  for (size_t p = 0; p < work.problems.size() && direct_status.ok(); ++p) {
    const server::EnumerateProblem<T>& problem = work.problems[p];
    std::vector<kernels::PmfTerm<T>> terms(problem.terms.size());
    for (size_t t = 0; t < terms.size(); ++t) {
      terms[t].offset = problem.offsets[t];
      terms[t].values = problem.terms[t];
    }
    auto pmf =
        kernels::EnumerateCpu<T>(terms, work.input_space, work.output_space);
    if (!pmf.ok()) {
      direct_status = pmf.status();
    } else {
      direct[p] = *std::move(pmf);
    }
  }
  FUZZ_CHECK(job.status.code() == direct_status.code(), "backend ",
             job.status.ToString(), " but direct ", direct_status.ToString());
  if (!job.status.ok()) {
    FUZZ_CHECK(job.status.code() == absl::StatusCode::kInvalidArgument,
               job.status.ToString());
    FUZZ_CHECK(absl::StartsWith(job.status.message(), "problems["),
               job.status.ToString());
    return;
  }
  FUZZ_CHECK(response.results_size() == static_cast<int>(work.problems.size()));
  const bool log_out = work.output_space == kernels::ProbSpace::kLog;
  for (size_t p = 0; p < work.problems.size(); ++p) {
    const server::EnumerateProblem<T>& problem = work.problems[p];
    const v1::Pmf& result = response.results(static_cast<int>(p));
    int64_t length = 1;
    for (const auto& term : problem.terms) {
      length += static_cast<int64_t>(term.size()) - 1;
    }
    FUZZ_CHECK(result.offset() == direct[p].offset, "problem ", p, " offset ",
               result.offset(), " vs ", direct[p].offset);
    const absl::Span<const T> values = Values<T>(result.probabilities());
    FUZZ_CHECK(static_cast<int64_t>(values.size()) == length, "problem ", p,
               " has ", values.size(), " values, wanted ", length);
    FUZZ_CHECK(SameBits<T>(values, direct[p].values), "problem ", p, ": ",
               FirstDifference<T>(values, direct[p].values));
    for (size_t i = 0; i < values.size(); ++i) {
      const T v = values[i];
      if (log_out) {
        FUZZ_CHECK(!std::isnan(v) && v < std::numeric_limits<T>::infinity(),
                   "problem ", p, " log value ", i, " = ", v);
      } else {
        FUZZ_CHECK(std::isfinite(v) && v >= T(0), "problem ", p, " value ", i,
                   " = ", v);
      }
    }
  }
}

}  // namespace
}  // namespace sampler::fuzz

SAMPLER_FUZZ_TARGET(enumerate) {
  using namespace sampler::fuzz;  // NOLINT
  v1::EnumerateRequest request;
  if (!ParseInput(data, size, &request)) return 0;
  auto job = server::ParseEnumerate(request, Limits());
  if (!job.ok()) {
    CheckRejection(job.status(), /*streamed=*/false);
    return 0;
  }
  FUZZ_CHECK((*job)->items >= 1 &&
             (*job)->items <= Limits().max_items_per_request);
  v1::EnumerateResponse response;
  server::BindEnumerate(**job, &response);
  auto twin = server::ParseEnumerate(request, Limits());
  FUZZ_CHECK(twin.ok(), twin.status().ToString());
  v1::EnumerateResponse twin_response;
  server::BindEnumerate(**twin, &twin_response);
  RunWithTwin(*job, response, *twin, twin_response);
  std::visit([&](const auto& work) { Check(**job, work, response); },
             (*job)->work);
  if ((*job)->status.ok()) CheckFits(response);
  return 0;
}
