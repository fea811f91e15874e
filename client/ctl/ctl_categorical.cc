// samplerctl categorical: draws from categorical distributions, one per row.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "client/common/grpc_util.h"
#include "client/common/parse.h"
#include "client/common/reals.h"
#include "client/ctl/ctl_commands.h"
#include "client/ctl/ctl_output.h"
#include "sampler/kernels/status_macros.h"
#include "sampler/v1/sampler.grpc.pb.h"

ABSL_FLAG(std::string, weights, "",
          "categorical: non-negative weights, one row per distribution: "
          "\"w,w,w;w,w,w\"");
ABSL_FLAG(std::string, logits, "",
          "categorical: logits instead of weights (-inf for weight 0), same "
          "layout as --weights");
ABSL_FLAG(int32_t, draws, 1, "categorical: draws per row");

namespace sampler::client {
namespace {

using sampler::v1::SampleCategoricalRequest;
using sampler::v1::SampleCategoricalResponse;
using sampler::v1::SampleCategoricalStreamRequest;
using sampler::v1::SampleCategoricalStreamResponse;

// Draws and category counts shown per row before eliding the rest.
constexpr int kDrawsShown = 32;
constexpr int kCountsShown = 32;

absl::StatusOr<SampleCategoricalStreamRequest> BuildRequest(
    const CtlOptions& options) {
  SampleCategoricalStreamRequest stream_request;
  SampleCategoricalRequest& request = *stream_request.mutable_request();
  if (!options.request_json.empty()) {
    SAMPLER_RETURN_IF_ERROR(
        ReadStreamRequestJson(options.request_json, &stream_request));
  } else {
    const std::string weights = absl::GetFlag(FLAGS_weights);
    const std::string logits = absl::GetFlag(FLAGS_logits);
    if (weights.empty() == logits.empty()) {
      return absl::InvalidArgumentError(
          "categorical needs exactly one of --weights and --logits");
    }
    SAMPLER_ASSIGN_OR_RETURN(std::vector<std::vector<double>> rows,
                             ParseMatrix(weights.empty() ? logits : weights));
    std::vector<double> flat;
    for (const std::vector<double>& row : rows) {
      flat.insert(flat.end(), row.begin(), row.end());
    }
    request.set_categories(rows.front().size());
    SetReals(flat, options.precision, request.mutable_values());
    request.set_input(weights.empty() ? sampler::v1::CATEGORICAL_INPUT_LOGITS
                                      : sampler::v1::CATEGORICAL_INPUT_WEIGHTS);
    request.set_draws(absl::GetFlag(FLAGS_draws));
    request.set_precision(options.precision);
  }
  if (options.seed.has_value()) request.set_seed(*options.seed);
  if (options.chunk > 0) stream_request.set_max_rows_per_chunk(options.chunk);
  if (request.categories() <= 0) {
    return absl::InvalidArgumentError("categories must be positive");
  }
  return stream_request;
}

// Normalised probabilities of one row of the request, for the "expected"
// column; empty when the row has no positive weight.
std::vector<double> RowProbabilities(absl::Span<const double> row,
                                     bool logits) {
  std::vector<double> probabilities(row.begin(), row.end());
  if (logits) {
    const double largest = *std::max_element(row.begin(), row.end());
    if (!std::isfinite(largest)) return {};
    for (double& p : probabilities) p = std::exp(p - largest);
  }
  double total = 0;
  for (double p : probabilities) total += p;
  if (!(total > 0) || !std::isfinite(total)) return {};
  for (double& p : probabilities) p /= total;
  return probabilities;
}

// Prints rows as they arrive and counts categories over all rows, so that a
// streamed answer of any size needs O(categories) memory.
class CategoricalReport {
 public:
  CategoricalReport(const SampleCategoricalRequest& request,
                    const CtlOptions& options)
      : request_(request),
        options_(options),
        categories_(request.categories()),
        totals_(categories_, 0) {}

  absl::Status AddRows(int64_t first_row, int64_t rows, int32_t draws,
                       absl::Span<const int32_t> indices) {
    if (first_row != rows_seen_) {
      return absl::DataLossError(absl::StrCat("chunk starts at row ", first_row,
                                              ", expected ", rows_seen_));
    }
    if (draws <= 0 || indices.size() != static_cast<size_t>(rows * draws)) {
      return absl::DataLossError(absl::StrCat("chunk of ", rows, " rows x ",
                                              draws, " draws holds ",
                                              indices.size(), " indices"));
    }
    if (draws_ == 0) draws_ = draws;
    if (draws != draws_) {
      return absl::DataLossError(
          absl::StrCat("draws changed from ", draws_, " to ", draws));
    }
    std::vector<int64_t> row_counts;
    for (int64_t r = 0; r < rows; ++r) {
      const absl::Span<const int32_t> row = indices.subspan(r * draws, draws);
      for (int32_t index : row) {
        if (index < 0 || index >= categories_) {
          return absl::DataLossError(
              absl::StrCat("row ", first_row + r, ": category ", index,
                           " out of range [0, ", categories_, ")"));
        }
        ++totals_[index];
      }
      if (ShouldPrint(options_, first_row + r)) {
        PrintRow(first_row + r, row, &row_counts);
      }
    }
    rows_seen_ += rows;
    return absl::OkStatus();
  }

  void Finish(uint64_t seed) {
    if (options_.max_print > 0 && rows_seen_ > options_.max_print) {
      std::cout << absl::StreamFormat(
          "... %d more rows (--max_print=0 shows all)\n",
          rows_seen_ - options_.max_print);
    }
    const std::vector<double> expected = ExpectedFractions();
    const int64_t all_draws = rows_seen_ * draws_;
    std::cout << absl::StreamFormat(
        "\n%d rows x %d draws, %d categories, seed %d\n", rows_seen_, draws_,
        categories_, seed);
    std::cout << absl::StreamFormat("  %8s  %12s  %9s  %9s\n", "category",
                                    "count", "fraction", "expected");
    for (int64_t k = 0; k < categories_; ++k) {
      if (!ShouldPrint(options_, k)) {
        std::cout << absl::StreamFormat(
            "  ... %d more categories (--max_print=0 shows all)\n",
            categories_ - k);
        break;
      }
      const double fraction =
          all_draws > 0 ? static_cast<double>(totals_[k]) / all_draws : 0.0;
      std::cout << absl::StreamFormat("  %8d  %12d  %9.6f  %9.6f\n", k,
                                      totals_[k], fraction, expected[k]);
    }
  }

 private:
  void PrintRow(int64_t row_index, absl::Span<const int32_t> row,
                std::vector<int64_t>* row_counts) const {
    std::string line = absl::StrCat("row ", row_index, ":");
    for (size_t d = 0; d < row.size() && d < kDrawsShown; ++d) {
      absl::StrAppend(&line, " ", row[d]);
    }
    if (row.size() > kDrawsShown) {
      absl::StrAppend(&line, " ... (", row.size() - kDrawsShown, " more)");
    }
    if (row.size() > 1) {
      row_counts->assign(categories_, 0);
      for (int32_t index : row) ++(*row_counts)[index];
      absl::StrAppend(&line, "  counts");
      int shown = 0;
      for (int64_t k = 0; k < categories_; ++k) {
        if ((*row_counts)[k] == 0) continue;
        if (++shown > kCountsShown) {
          absl::StrAppend(&line, " ...");
          break;
        }
        absl::StrAppend(&line, " ", k, ":", (*row_counts)[k]);
      }
    }
    std::cout << line << "\n";
  }

  // Mean over rows of each category's probability: the fraction of all
  // draws each category should get.
  std::vector<double> ExpectedFractions() const {
    std::vector<double> expected(categories_, 0.0);
    std::vector<double> values;
    RealsToDoubles(request_.values(), &values);
    const int64_t rows = values.size() / categories_;
    if (rows == 0) return expected;
    const bool logits =
        request_.input() == sampler::v1::CATEGORICAL_INPUT_LOGITS;
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<double> p = RowProbabilities(
          absl::MakeConstSpan(values).subspan(r * categories_, categories_),
          logits);
      for (size_t k = 0; k < p.size(); ++k) expected[k] += p[k] / rows;
    }
    return expected;
  }

  const SampleCategoricalRequest& request_;
  const CtlOptions& options_;
  const int64_t categories_;
  int64_t rows_seen_ = 0;
  int32_t draws_ = 0;
  std::vector<int64_t> totals_;
};

absl::Status CallUnary(sampler::v1::SamplerService::Stub& stub,
                       const SampleCategoricalRequest& request,
                       const CtlOptions& options) {
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  SampleCategoricalResponse response;
  SAMPLER_RETURN_IF_ERROR(
      ToAbslStatus(stub.SampleCategorical(&context, request, &response)));
  if (options.json) return PrintJson(response);
  CategoricalReport report(request, options);
  SAMPLER_RETURN_IF_ERROR(
      report.AddRows(0, response.rows(), response.draws(), response.indices()));
  report.Finish(response.seed());
  return absl::OkStatus();
}

absl::Status CallStream(sampler::v1::SamplerService::Stub& stub,
                        const SampleCategoricalStreamRequest& request,
                        const CtlOptions& options) {
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  CategoricalReport report(request.request(), options);
  SampleCategoricalResponse assembled;
  std::unique_ptr<grpc::ClientReader<SampleCategoricalStreamResponse>> reader =
      stub.SampleCategoricalStream(&context, request);
  const absl::Status status = ReadStream<SampleCategoricalStreamResponse>(
      &context, reader.get(),
      [&](const SampleCategoricalStreamResponse& chunk) -> absl::Status {
        assembled.set_seed(chunk.seed());
        assembled.set_draws(chunk.draws());
        if (!options.json) {
          return report.AddRows(chunk.first_row(), chunk.rows(), chunk.draws(),
                                chunk.indices());
        }
        if (chunk.first_row() != assembled.rows()) {
          return absl::DataLossError(
              absl::StrCat("chunk starts at row ", chunk.first_row(),
                           ", expected ", assembled.rows()));
        }
        assembled.mutable_indices()->MergeFrom(chunk.indices());
        assembled.set_rows(assembled.rows() + chunk.rows());
        return absl::OkStatus();
      });
  SAMPLER_RETURN_IF_ERROR(status);
  if (options.json) return PrintJson(assembled);
  report.Finish(assembled.seed());
  return absl::OkStatus();
}

}  // namespace

int RunCategorical(const CtlOptions& options) {
  absl::StatusOr<SampleCategoricalStreamRequest> request =
      BuildRequest(options);
  if (!request.ok()) return UsageError(request.status());
  auto stub = sampler::v1::SamplerService::NewStub(options.channel);
  const absl::Status status =
      options.stream ? CallStream(*stub, *request, options)
                     : CallUnary(*stub, request->request(), options);
  if (!status.ok()) return RpcError(status);
  return kExitOk;
}

}  // namespace sampler::client
