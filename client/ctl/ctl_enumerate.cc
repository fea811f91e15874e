// samplerctl enumerate: the PMF of a sum of independent terms.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/common/enumerate_terms.h"
#include "client/common/grpc_util.h"
#include "client/common/parse.h"
#include "client/common/reals.h"
#include "client/ctl/ctl_commands.h"
#include "client/ctl/ctl_output.h"
#include "sampler/kernels/status_macros.h"
#include "sampler/v1/sampler.grpc.pb.h"

ABSL_FLAG(std::string, pmf, "",
          "enumerate: one term of the sum, \"OFFSET:p0,p1,...\" (or "
          "\"p0,p1,...\" for offset 0); repeat the flag (or separate terms "
          "by ';') for more terms of the same problem");
ABSL_FLAG(bool, packed, false,
          "enumerate: send the terms in the packed form (all values end to "
          "end) instead of one Pmf message per term; the answer is the same");
ABSL_FLAG(std::string, repeats, "",
          "enumerate: how many times each term counts, one count per --pmf "
          "term (\"3,1\") or one for all (\"3\"); empty: once each");
ABSL_FLAG(bool, log_input, false,
          "enumerate: the --pmf values are natural logarithms of "
          "probabilities");

namespace sampler::client {
namespace {

using sampler::v1::EnumerateRequest;
using sampler::v1::EnumerateResponse;

absl::StatusOr<EnumerateRequest> BuildRequest(const CtlOptions& options) {
  EnumerateRequest request;
  if (!options.request_json.empty()) {
    SAMPLER_ASSIGN_OR_RETURN(const std::string json,
                             ReadFile(options.request_json));
    SAMPLER_RETURN_IF_ERROR(JsonToMessage(json, &request));
    return request;
  }
  const std::string pmf = absl::GetFlag(FLAGS_pmf);
  if (pmf.empty()) {
    return absl::InvalidArgumentError(
        "enumerate needs --pmf (e.g. --pmf 0:0.5,0.5 --pmf 1:0.2,0.8)");
  }
  SAMPLER_ASSIGN_OR_RETURN(const std::vector<PmfTerm> terms,
                           ParsePmfTerms(pmf));
  std::vector<int64_t> repeats;
  if (const std::string text = absl::GetFlag(FLAGS_repeats); !text.empty()) {
    SAMPLER_ASSIGN_OR_RETURN(repeats, ParseInt64List(text));
    if (repeats.size() == 1) repeats.assign(terms.size(), repeats[0]);
    if (repeats.size() != terms.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--repeats has ", repeats.size(), " counts for ",
                       terms.size(), " terms (give one, or one per term)"));
    }
  }
  AddTerms(terms, repeats, absl::GetFlag(FLAGS_packed), options.precision,
           request.add_problems());
  request.set_precision(options.precision);
  request.set_input_space(absl::GetFlag(FLAGS_log_input)
                              ? sampler::v1::PROBABILITY_SPACE_LOG
                              : sampler::v1::PROBABILITY_SPACE_LINEAR);
  request.set_output_space(options.log_output
                               ? sampler::v1::PROBABILITY_SPACE_LOG
                               : sampler::v1::PROBABILITY_SPACE_LINEAR);
  return request;
}

// Total probability of a PMF, from log-probabilities by log-sum-exp.
double TotalProbability(const std::vector<double>& values, bool log_space) {
  if (!log_space) {
    double total = 0;
    for (double value : values) total += value;
    return total;
  }
  double largest = -INFINITY;
  for (double value : values) largest = std::max(largest, value);
  if (!std::isfinite(largest)) return largest;
  double scaled = 0;
  for (double value : values) scaled += std::exp(value - largest);
  return std::exp(largest) * scaled;
}

void PrintResults(const EnumerateRequest& request,
                  const EnumerateResponse& response,
                  const CtlOptions& options) {
  const bool log_space =
      request.output_space() == sampler::v1::PROBABILITY_SPACE_LOG;
  std::vector<double> values;
  for (int p = 0; p < response.results_size(); ++p) {
    const sampler::v1::Pmf& result = response.results(p);
    RealsToDoubles(result.probabilities(), &values);
    const int64_t length = values.size();
    const int64_t terms =
        p < request.problems_size() ? TermCount(request.problems(p)) : 0;
    std::cout << absl::StreamFormat(
        "problem %d: %d term%s, support %d..%d (%d points), total "
        "probability %.9g\n",
        p, terms, terms == 1 ? "" : "s", result.offset(),
        result.offset() + length - 1, length,
        TotalProbability(values, log_space));
    const std::string value_header = "value";
    const int width = std::max<int>(
        value_header.size(),
        std::max(absl::StrFormat("%d", result.offset()).size(),
                 absl::StrFormat("%d", result.offset() + length - 1).size()));
    std::cout << absl::StreamFormat(
        "  %*s  %s\n", width, value_header,
        log_space ? "log-probability" : "probability");
    for (int64_t i = 0; i < length; ++i) {
      if (!ShouldPrint(options, i)) {
        std::cout << absl::StreamFormat(
            "  ... %d more points (--max_print=0 shows all)\n", length - i);
        break;
      }
      std::cout << absl::StreamFormat("  %*d  %.9g\n", width,
                                      result.offset() + i, values[i]);
    }
  }
}

}  // namespace

int RunEnumerate(const CtlOptions& options) {
  absl::StatusOr<EnumerateRequest> request = BuildRequest(options);
  if (!request.ok()) return UsageError(request.status());

  auto stub = sampler::v1::SamplerService::NewStub(options.channel);
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  EnumerateResponse response;
  absl::Status status =
      ToAbslStatus(stub->Enumerate(&context, *request, &response));
  if (status.ok() && options.json) status = PrintJson(response);
  if (!status.ok()) return RpcError(status);
  if (!options.json) PrintResults(*request, response, options);
  return kExitOk;
}

}  // namespace sampler::client
