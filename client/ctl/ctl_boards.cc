// samplerctl boards: random board positions drawn as character grids.
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "client/common/grpc_util.h"
#include "client/common/parse.h"
#include "client/ctl/board_render.h"
#include "client/ctl/ctl_commands.h"
#include "client/ctl/ctl_output.h"
#include "sampler/kernels/status_macros.h"
#include "sampler/v1/sampler.grpc.pb.h"

ABSL_FLAG(int32_t, cols, 9, "boards: columns of the grid");
ABSL_FLAG(std::string, stones, "",
          "boards: stones of each colour, \"k0,k1,...\" (colour 0 is drawn X, "
          "colour 1 O, then A, B, ...)");

namespace sampler::client {
namespace {

using sampler::v1::SampleBoardsRequest;
using sampler::v1::SampleBoardsResponse;
using sampler::v1::SampleBoardsStreamRequest;
using sampler::v1::SampleBoardsStreamResponse;

constexpr int32_t kDefaultRows = 9;
constexpr int64_t kDefaultCount = 3;

absl::StatusOr<SampleBoardsStreamRequest> BuildRequest(
    const CtlOptions& options) {
  SampleBoardsStreamRequest stream_request;
  SampleBoardsRequest& request = *stream_request.mutable_request();
  if (!options.request_json.empty()) {
    SAMPLER_RETURN_IF_ERROR(
        ReadStreamRequestJson(options.request_json, &stream_request));
  } else {
    const std::string stones_text = absl::GetFlag(FLAGS_stones);
    if (stones_text.empty()) {
      return absl::InvalidArgumentError(
          "boards needs --stones (e.g. --stones 10,10)");
    }
    SAMPLER_ASSIGN_OR_RETURN(std::vector<int64_t> stones,
                             ParseInt64List(stones_text));
    if (options.rows > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError("--rows is too large for a board");
    }
    request.set_rows(options.rows > 0 ? static_cast<int32_t>(options.rows)
                                      : kDefaultRows);
    request.set_cols(absl::GetFlag(FLAGS_cols));
    for (int64_t k : stones) {
      if (k < 0 || k > std::numeric_limits<int32_t>::max()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--stones: ", k, " is not a stone count"));
      }
      request.add_stones(static_cast<int32_t>(k));
    }
    request.set_count(options.count > 0 ? options.count : kDefaultCount);
  }
  if (options.seed.has_value()) request.set_seed(*options.seed);
  if (options.chunk > 0) {
    stream_request.set_max_positions_per_chunk(options.chunk);
  }
  return stream_request;
}

// Draws positions as they arrive (up to --max_print) and checks every
// position's stone counts against the request.
class BoardsReport {
 public:
  BoardsReport(const SampleBoardsRequest& request, const CtlOptions& options)
      : request_(request), options_(options) {}

  absl::Status Add(int64_t first_position, int64_t count, int32_t colours,
                   int32_t words_per_board,
                   absl::Span<const uint64_t> bitboards) {
    if (first_position != received_) {
      return absl::DataLossError(absl::StrCat("chunk starts at position ",
                                              first_position, ", expected ",
                                              received_));
    }
    if (colours != request_.stones_size()) {
      return absl::DataLossError(absl::StrCat("answer has ", colours,
                                              " colours, request ",
                                              request_.stones_size()));
    }
    const int64_t words_per_position = int64_t{colours} * words_per_board;
    if (words_per_position <= 0 ||
        bitboards.size() != static_cast<size_t>(count * words_per_position)) {
      return absl::DataLossError(absl::StrCat(
          count, " positions x ", colours, " colours x ", words_per_board,
          " words do not match ", bitboards.size(), " words"));
    }
    for (int64_t p = 0; p < count; ++p) {
      const absl::Span<const uint64_t> position =
          bitboards.subspan(p * words_per_position, words_per_position);
      const int64_t index = first_position + p;
      SAMPLER_RETURN_IF_ERROR(CheckStones(index, position, words_per_board));
      if (!ShouldPrint(options_, index)) continue;
      SAMPLER_ASSIGN_OR_RETURN(
          std::vector<std::string> lines,
          RenderBoard(position, request_.rows(), request_.cols(), colours,
                      words_per_board));
      std::cout << "position " << index << ":\n  "
                << absl::StrJoin(lines, "\n  ") << "\n\n";
    }
    received_ += count;
    return absl::OkStatus();
  }

  absl::Status Finish(uint64_t seed) {
    if (received_ != request_.count()) {
      return absl::DataLossError(absl::StrCat("asked for ", request_.count(),
                                              " positions, got ", received_));
    }
    if (options_.max_print > 0 && received_ > options_.max_print) {
      std::cout << absl::StreamFormat(
          "... %d more positions (--max_print=0 shows all)\n",
          received_ - options_.max_print);
    }
    std::cout << absl::StreamFormat(
        "%d positions of %d x %d, stones %s, seed %d; every position has the "
        "requested stone counts\n",
        received_, request_.rows(), request_.cols(),
        absl::StrJoin(request_.stones(), ","), seed);
    return absl::OkStatus();
  }

 private:
  absl::Status CheckStones(int64_t index, absl::Span<const uint64_t> position,
                           int32_t words_per_board) const {
    for (int colour = 0; colour < request_.stones_size(); ++colour) {
      int64_t stones = 0;
      for (uint64_t word : position.subspan(int64_t{colour} * words_per_board,
                                            words_per_board)) {
        stones += __builtin_popcountll(word);
      }
      if (stones != request_.stones(colour)) {
        return absl::DataLossError(absl::StrCat(
            "position ", index, " has ", stones, " stones of colour ", colour,
            ", asked for ", request_.stones(colour)));
      }
    }
    return absl::OkStatus();
  }

  const SampleBoardsRequest& request_;
  const CtlOptions& options_;
  int64_t received_ = 0;
};

absl::Status CallUnary(sampler::v1::SamplerService::Stub& stub,
                       const SampleBoardsRequest& request,
                       const CtlOptions& options) {
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  SampleBoardsResponse response;
  SAMPLER_RETURN_IF_ERROR(
      ToAbslStatus(stub.SampleBoards(&context, request, &response)));
  if (options.json) return PrintJson(response);
  BoardsReport report(request, options);
  SAMPLER_RETURN_IF_ERROR(report.Add(0, response.count(), response.colours(),
                                     response.words_per_board(),
                                     response.bitboards()));
  return report.Finish(response.seed());
}

absl::Status CallStream(sampler::v1::SamplerService::Stub& stub,
                        const SampleBoardsStreamRequest& request,
                        const CtlOptions& options) {
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  BoardsReport report(request.request(), options);
  SampleBoardsResponse assembled;
  std::unique_ptr<grpc::ClientReader<SampleBoardsStreamResponse>> reader =
      stub.SampleBoardsStream(&context, request);
  const absl::Status status = ReadStream<SampleBoardsStreamResponse>(
      &context, reader.get(),
      [&](const SampleBoardsStreamResponse& chunk) -> absl::Status {
        assembled.set_seed(chunk.seed());
        assembled.set_colours(chunk.colours());
        assembled.set_words_per_board(chunk.words_per_board());
        if (!options.json) {
          return report.Add(chunk.first_position(), chunk.count(),
                            chunk.colours(), chunk.words_per_board(),
                            chunk.bitboards());
        }
        if (chunk.first_position() != assembled.count()) {
          return absl::DataLossError(
              absl::StrCat("chunk starts at position ", chunk.first_position(),
                           ", expected ", assembled.count()));
        }
        assembled.mutable_bitboards()->MergeFrom(chunk.bitboards());
        assembled.set_count(assembled.count() + chunk.count());
        return absl::OkStatus();
      });
  SAMPLER_RETURN_IF_ERROR(status);
  if (options.json) return PrintJson(assembled);
  return report.Finish(assembled.seed());
}

}  // namespace

int RunBoards(const CtlOptions& options) {
  absl::StatusOr<SampleBoardsStreamRequest> request = BuildRequest(options);
  if (!request.ok()) return UsageError(request.status());
  auto stub = sampler::v1::SamplerService::NewStub(options.channel);
  const absl::Status status =
      options.stream ? CallStream(*stub, *request, options)
                     : CallUnary(*stub, request->request(), options);
  if (!status.ok()) return RpcError(status);
  return kExitOk;
}

}  // namespace sampler::client
