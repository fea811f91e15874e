// Fuzz target for SampleBoards: the request from arbitrary bytes, validated
// (ParseBoards), bound and executed on the CPU backend (with a twin: see
// RunWithTwin). Rejections are INVALID_ARGUMENT or OUT_OF_RANGE; an accepted
// request succeeds with positions whose colours have exactly their stone counts
// on disjoint sites of the board, bit for bit what kernels::SampleBoardsCpu
// gives on the whole request, in a response that fits max_message_bytes.
#include <vector>

#include "tests/fuzz/fuzz_checks.h"
#include "tests/fuzz/fuzz_target.h"

SAMPLER_FUZZ_TARGET(boards) {
  using namespace sampler::fuzz;  // NOLINT
  v1::SampleBoardsRequest request;
  if (!ParseInput(data, size, &request)) return 0;
  auto parsed =
      server::ParseBoards(request, Limits(), Seeds(), /*streamed=*/false);
  if (!parsed.ok()) {
    CheckRejection(parsed.status(), /*streamed=*/false);
    return 0;
  }
  server::BoardsJob& job = **parsed;
  FUZZ_CHECK(job.items >= 1 && job.items <= Limits().max_items_per_request);
  FUZZ_CHECK(job.seed == ExpectedSeed(request));
  v1::SampleBoardsResponse response;
  server::BindBoards(job, &response);
  FUZZ_CHECK(response.count() == job.count && response.seed() == job.seed &&
             response.colours() == request.stones_size() &&
             response.words_per_board() == kernels::BoardWords64(job.spec));
  auto twin =
      server::ParseBoards(request, Limits(), Seeds(), /*streamed=*/false);
  FUZZ_CHECK(twin.ok(), twin.status().ToString());
  v1::SampleBoardsResponse twin_response;
  server::BindBoards(**twin, &twin_response);
  RunWithTwin(*parsed, response, *twin, twin_response);
  FUZZ_CHECK(job.status.ok(), job.status.ToString());
  const absl::Span<const uint64_t> words(response.bitboards().data(),
                                         response.bitboards_size());
  CheckBoards(job, words);
  absl::Status direct_status;
  const std::vector<uint64_t> direct = DirectBoards(job, &direct_status);
  FUZZ_CHECK(direct_status.ok(), direct_status.ToString());
  FUZZ_CHECK(SameBits<uint64_t>(words, direct),
             FirstDifference<uint64_t>(words, direct));
  CheckFits(response);
  return 0;
}
