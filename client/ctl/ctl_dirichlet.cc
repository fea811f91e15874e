// samplerctl dirichlet: Dirichlet vectors and their component means.
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/common/grpc_util.h"
#include "client/common/parse.h"
#include "client/common/reals.h"
#include "client/ctl/ctl_commands.h"
#include "client/ctl/ctl_output.h"
#include "sampler/kernels/status_macros.h"
#include "sampler/v1/sampler.grpc.pb.h"

ABSL_FLAG(std::string, alpha, "",
          "dirichlet: the concentration vector \"a,b,c\" shared by all --rows "
          "vectors");

namespace sampler::client {
namespace {

using sampler::v1::SampleDirichletRequest;
using sampler::v1::SampleDirichletResponse;

constexpr int64_t kDefaultRows = 5;

absl::StatusOr<SampleDirichletRequest> BuildRequest(const CtlOptions& options) {
  SampleDirichletRequest request;
  if (!options.request_json.empty()) {
    SAMPLER_ASSIGN_OR_RETURN(const std::string json,
                             ReadFile(options.request_json));
    SAMPLER_RETURN_IF_ERROR(JsonToMessage(json, &request));
  } else {
    const std::string alpha_text = absl::GetFlag(FLAGS_alpha);
    if (alpha_text.empty()) {
      return absl::InvalidArgumentError(
          "dirichlet needs --alpha (e.g. --alpha 0.5,1,2)");
    }
    SAMPLER_ASSIGN_OR_RETURN(const std::vector<double> alpha,
                             ParseDoubleList(alpha_text));
    const int64_t rows = options.rows > 0 ? options.rows : kDefaultRows;
    std::vector<double> concentrations;
    concentrations.reserve(rows * alpha.size());
    for (int64_t r = 0; r < rows; ++r) {
      concentrations.insert(concentrations.end(), alpha.begin(), alpha.end());
    }
    SetReals(concentrations, options.precision,
             request.mutable_concentrations());
    request.set_dimension(alpha.size());
    request.set_precision(options.precision);
    request.set_log_output(options.log_output);
  }
  if (options.seed.has_value()) request.set_seed(*options.seed);
  return request;
}

// Row lengths of the request: equal (dimension) or ragged (row_lengths).
std::vector<int64_t> RowLengths(const SampleDirichletRequest& request) {
  if (request.row_lengths_size() > 0) {
    return {request.row_lengths().begin(), request.row_lengths().end()};
  }
  if (request.dimension() <= 0) return {};
  return std::vector<int64_t>(
      RealsSize(request.concentrations()) / request.dimension(),
      request.dimension());
}

absl::Status PrintReport(const SampleDirichletRequest& request,
                         const SampleDirichletResponse& response,
                         const CtlOptions& options) {
  std::vector<double> samples, alpha;
  RealsToDoubles(response.samples(), &samples);
  RealsToDoubles(request.concentrations(), &alpha);
  const std::vector<int64_t> lengths = RowLengths(request);
  if (samples.size() != alpha.size()) {
    return absl::DataLossError(absl::StrCat("asked for ", alpha.size(),
                                            " values, got ", samples.size()));
  }
  int64_t total_length = 0;
  for (int64_t length : lengths) total_length += length;
  if (total_length != static_cast<int64_t>(samples.size())) {
    return absl::DataLossError(absl::StrCat("rows of the request cover ",
                                            total_length, " values, got ",
                                            samples.size()));
  }
  const bool log_output = request.log_output();
  std::cout << absl::StreamFormat(
      "%d vectors, %s, seed %d\n", lengths.size(),
      log_output ? "log-probabilities" : "probabilities", response.seed());

  const bool equal_rows = request.row_lengths_size() == 0;
  const int64_t dimension = equal_rows ? request.dimension() : 0;
  std::vector<double> means(dimension, 0.0);
  int64_t start = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    if (ShouldPrint(options, r)) {
      std::string line = absl::StrFormat("  row %d:", r);
      for (int64_t i = 0; i < lengths[r]; ++i) {
        absl::StrAppend(&line, absl::StrFormat(" %.6g", samples[start + i]));
      }
      std::cout << line << "\n";
    } else if (static_cast<int64_t>(r) == options.max_print) {
      std::cout << absl::StreamFormat(
          "  ... %d more vectors (--max_print=0 shows all)\n",
          lengths.size() - r);
    }
    for (int64_t i = 0; i < dimension; ++i) {
      const double value = samples[start + i];
      means[i] += (log_output ? std::exp(value) : value) / lengths.size();
    }
    start += lengths[r];
  }
  if (dimension == 0 || lengths.empty()) return absl::OkStatus();

  // With one shared alpha the mean of component i tends to alpha_i / sum.
  double alpha_total = 0;
  for (int64_t i = 0; i < dimension; ++i) alpha_total += alpha[i];
  bool shared_alpha = true;
  for (size_t j = 0; j < alpha.size(); ++j) {
    shared_alpha = shared_alpha && alpha[j] == alpha[j % dimension];
  }
  std::cout << "component means (of the probabilities):\n";
  for (int64_t i = 0; i < dimension; ++i) {
    std::string line = absl::StrFormat("  %d: %.6g", i, means[i]);
    if (shared_alpha) {
      absl::StrAppend(
          &line, absl::StrFormat("  (expected %.6g)", alpha[i] / alpha_total));
    }
    std::cout << line << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

int RunDirichlet(const CtlOptions& options) {
  absl::StatusOr<SampleDirichletRequest> request = BuildRequest(options);
  if (!request.ok()) return UsageError(request.status());
  auto stub = sampler::v1::SamplerService::NewStub(options.channel);
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  SampleDirichletResponse response;
  absl::Status status =
      ToAbslStatus(stub->SampleDirichlet(&context, *request, &response));
  if (status.ok()) {
    status = options.json ? PrintJson(response)
                          : PrintReport(*request, response, options);
  }
  if (!status.ok()) return RpcError(status);
  return kExitOk;
}

}  // namespace sampler::client
