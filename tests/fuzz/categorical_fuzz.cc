// Fuzz target for SampleCategorical: the request from arbitrary bytes,
// validated (ParseCategorical), bound and executed on the CPU backend (with a
// twin: see RunWithTwin). Rejections are INVALID_ARGUMENT or OUT_OF_RANGE; an
// accepted request succeeds with rows x draws indices in [0, K), each on a
// category of non-zero weight, bit for bit what kernels::SampleCategoricalCpu
// gives on the whole request, in a response that fits max_message_bytes.
#include <variant>
#include <vector>

#include "tests/fuzz/fuzz_checks.h"
#include "tests/fuzz/fuzz_target.h"

SAMPLER_FUZZ_TARGET(categorical) {
  using namespace sampler::fuzz;  // NOLINT
  v1::SampleCategoricalRequest request;
  if (!ParseInput(data, size, &request)) return 0;
  auto parsed = server::ParseCategorical(request, Limits(), Seeds(),
                                         /*streamed=*/false);
  if (!parsed.ok()) {
    CheckRejection(parsed.status(), /*streamed=*/false);
    return 0;
  }
  server::CategoricalJob& job = **parsed;
  FUZZ_CHECK(job.items >= 1 && job.items <= Limits().max_items_per_request);
  FUZZ_CHECK(job.seed == ExpectedSeed(request));
  v1::SampleCategoricalResponse response;
  server::BindCategorical(job, &response);
  FUZZ_CHECK(response.rows() == job.shape.rows &&
             response.draws() == job.shape.draws &&
             response.seed() == job.seed);
  auto twin =
      server::ParseCategorical(request, Limits(), Seeds(), /*streamed=*/false);
  FUZZ_CHECK(twin.ok(), twin.status().ToString());
  v1::SampleCategoricalResponse twin_response;
  server::BindCategorical(**twin, &twin_response);
  RunWithTwin(*parsed, response, *twin, twin_response);
  FUZZ_CHECK(job.status.ok(), job.status.ToString());
  const absl::Span<const int32_t> indices(response.indices().data(),
                                          response.indices_size());
  std::visit(
      [&](const auto& work) {
        CheckCategorical(job, work, indices);
        absl::Status direct_status;
        const std::vector<int32_t> direct =
            DirectCategorical(job, work, &direct_status);
        FUZZ_CHECK(direct_status.ok(), direct_status.ToString());
        FUZZ_CHECK(SameBits<int32_t>(indices, direct),
                   FirstDifference<int32_t>(indices, direct));
      },
      job.work);
  CheckFits(response);
  return 0;
}
