// Fuzz target for SampleDirichlet: the request from arbitrary bytes, validated
// (ParseDirichlet), bound and executed on the CPU backend (with a twin: see
// RunWithTwin). Rejections are INVALID_ARGUMENT or OUT_OF_RANGE; an accepted
// request either fails at execution with OUT_OF_RANGE (a row whose every log-
// gamma variate underflowed) or gives rows that are probability vectors (sum
// ~1; log output: log-sum-exp ~0), bit for bit what kernels::SampleDirichletCpu
// gives on the whole request, in a response that fits max_message_bytes.
#include <variant>
#include <vector>

#include "tests/fuzz/fuzz_checks.h"
#include "tests/fuzz/fuzz_target.h"

SAMPLER_FUZZ_TARGET(dirichlet) {
  using namespace sampler::fuzz;  // NOLINT
  v1::SampleDirichletRequest request;
  if (!ParseInput(data, size, &request)) return 0;
  auto parsed = server::ParseDirichlet(request, Limits(), Seeds());
  if (!parsed.ok()) {
    CheckRejection(parsed.status(), /*streamed=*/false);
    return 0;
  }
  server::DirichletJob& job = **parsed;
  FUZZ_CHECK(job.items >= 1 && job.items <= Limits().max_items_per_request);
  FUZZ_CHECK(job.seed == ExpectedSeed(request));
  v1::SampleDirichletResponse response;
  server::BindDirichlet(job, &response);
  FUZZ_CHECK(response.seed() == job.seed);
  auto twin = server::ParseDirichlet(request, Limits(), Seeds());
  FUZZ_CHECK(twin.ok(), twin.status().ToString());
  v1::SampleDirichletResponse twin_response;
  server::BindDirichlet(**twin, &twin_response);
  RunWithTwin(*parsed, response, *twin, twin_response);
  std::visit(
      [&](const auto& work) {
        using T = typename decltype(work.out)::value_type;
        absl::Status direct_status;
        const std::vector<T> direct =
            DirectDirichlet(job, work, &direct_status);
        FUZZ_CHECK(job.status.code() == direct_status.code(), "backend ",
                   job.status.ToString(), " but direct ",
                   direct_status.ToString());
        if (!job.status.ok()) {
          FUZZ_CHECK(job.status.code() == absl::StatusCode::kOutOfRange,
                     job.status.ToString());
          return;
        }
        const absl::Span<const T> samples = Values<T>(response.samples());
        CheckDirichlet(job, work, samples);
        FUZZ_CHECK(SameBits<T>(samples, direct),
                   FirstDifference<T>(samples, direct));
      },
      job.work);
  if (job.status.ok()) CheckFits(response);
  return 0;
}
