// Fuzz target for SampleGamma: the request from arbitrary bytes, validated
// (ParseGamma), bound and executed on the CPU backend (with a twin: see
// RunWithTwin). Rejections are INVALID_ARGUMENT or OUT_OF_RANGE; an accepted
// request succeeds with one sample per element or group member (linear: >= 0,
// not NaN, finite unless shape x scale nears overflow; log: not NaN, below
// +inf), bit for bit what the kernel's CPU function gives on the whole request,
// in a response that fits max_message_bytes.
#include <variant>
#include <vector>

#include "tests/fuzz/fuzz_checks.h"
#include "tests/fuzz/fuzz_target.h"

SAMPLER_FUZZ_TARGET(gamma) {
  using namespace sampler::fuzz;  // NOLINT
  v1::SampleGammaRequest request;
  if (!ParseInput(data, size, &request)) return 0;
  auto parsed =
      server::ParseGamma(request, Limits(), Seeds(), /*streamed=*/false);
  if (!parsed.ok()) {
    CheckRejection(parsed.status(), /*streamed=*/false);
    return 0;
  }
  server::GammaJob& job = **parsed;
  FUZZ_CHECK(job.items >= 1 && job.items <= Limits().max_items_per_request);
  FUZZ_CHECK(job.seed == ExpectedSeed(request));
  FUZZ_CHECK(job.log_output == request.log_output());
  v1::SampleGammaResponse response;
  server::BindGamma(job, &response);
  FUZZ_CHECK(response.seed() == job.seed);
  auto twin =
      server::ParseGamma(request, Limits(), Seeds(), /*streamed=*/false);
  FUZZ_CHECK(twin.ok(), twin.status().ToString());
  v1::SampleGammaResponse twin_response;
  server::BindGamma(**twin, &twin_response);
  RunWithTwin(*parsed, response, *twin, twin_response);
  FUZZ_CHECK(job.status.ok(), job.status.ToString());
  std::visit(
      [&](const auto& work) {
        using T = typename decltype(work.out)::value_type;
        const absl::Span<const T> samples = Values<T>(response.samples());
        CheckGamma(job, work, samples);
        absl::Status direct_status;
        const std::vector<T> direct = DirectGamma(job, work, &direct_status);
        FUZZ_CHECK(direct_status.ok(), direct_status.ToString());
        FUZZ_CHECK(SameBits<T>(samples, direct),
                   FirstDifference<T>(samples, direct));
      },
      job.work);
  CheckFits(response);
  return 0;
}
