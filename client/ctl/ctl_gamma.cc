// samplerctl gamma: gamma variates, summarised (or all printed).
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
#include "client/common/stats.h"
#include "client/ctl/ctl_commands.h"
#include "client/ctl/ctl_output.h"
#include "sampler/kernels/status_macros.h"
#include "sampler/v1/sampler.grpc.pb.h"

ABSL_FLAG(double, shape, 1.0, "gamma: shape of the group (with --count)");
ABSL_FLAG(double, scale, 1.0, "gamma: scale of the group");
ABSL_FLAG(std::string, shapes, "",
          "gamma: per-element shapes \"a,b,c\" (one sample each) instead of a "
          "group");
ABSL_FLAG(std::string, scales, "",
          "gamma: per-element scales for --shapes (default: all 1)");
ABSL_FLAG(bool, print, false,
          "gamma: print every sample, one per line (shortest text that reads "
          "back exactly), and no summary");
ABSL_FLAG(int64_t, quantile_reservoir, int64_t{1} << 20,
          "gamma: quantiles are exact up to this many samples, and beyond it "
          "estimated from a uniform random subset of this size");

namespace sampler::client {
namespace {

using sampler::v1::SampleGammaRequest;
using sampler::v1::SampleGammaResponse;
using sampler::v1::SampleGammaStreamRequest;
using sampler::v1::SampleGammaStreamResponse;

constexpr int64_t kDefaultCount = 1000;
// Samples converted to double at a time.
constexpr int64_t kSliceValues = int64_t{1} << 16;

absl::StatusOr<SampleGammaStreamRequest> BuildRequest(
    const CtlOptions& options) {
  SampleGammaStreamRequest stream_request;
  SampleGammaRequest& request = *stream_request.mutable_request();
  if (!options.request_json.empty()) {
    SAMPLER_RETURN_IF_ERROR(
        ReadStreamRequestJson(options.request_json, &stream_request));
  } else if (const std::string shapes = absl::GetFlag(FLAGS_shapes);
             !shapes.empty()) {
    SAMPLER_ASSIGN_OR_RETURN(std::vector<double> shape_values,
                             ParseDoubleList(shapes));
    SetReals(shape_values, options.precision,
             request.mutable_elements()->mutable_shape());
    if (const std::string scales = absl::GetFlag(FLAGS_scales);
        !scales.empty()) {
      SAMPLER_ASSIGN_OR_RETURN(std::vector<double> scale_values,
                               ParseDoubleList(scales));
      if (scale_values.size() != shape_values.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--scales has ", scale_values.size(),
                         " values, --shapes ", shape_values.size()));
      }
      SetReals(scale_values, options.precision,
               request.mutable_elements()->mutable_scale());
    }
  } else {
    sampler::v1::GammaGroup* group = request.mutable_groups()->add_groups();
    group->set_shape(absl::GetFlag(FLAGS_shape));
    group->set_scale(absl::GetFlag(FLAGS_scale));
    group->set_count(options.count > 0 ? options.count : kDefaultCount);
  }
  if (options.request_json.empty()) {
    request.set_precision(options.precision);
    request.set_log_output(options.log_output);
  }
  if (options.seed.has_value()) request.set_seed(*options.seed);
  if (options.chunk > 0) {
    stream_request.set_max_samples_per_chunk(options.chunk);
  }
  return stream_request;
}

// What the request asks for, and what it implies: the number of samples and
// their expected mean and standard deviation where these are simple.
struct GammaExpectation {
  std::string description;
  int64_t samples = 0;
  double mean = NAN;
  double stddev = NAN;
};

GammaExpectation Expect(const SampleGammaRequest& request) {
  GammaExpectation expectation;
  if (request.has_groups()) {
    const auto& groups = request.groups().groups();
    double weighted_mean = 0;
    for (const sampler::v1::GammaGroup& group : groups) {
      const double scale = group.scale() == 0 ? 1.0 : group.scale();
      expectation.samples += group.count();
      weighted_mean +=
          static_cast<double>(group.count()) * group.shape() * scale;
    }
    if (groups.size() == 1) {
      const double scale = groups[0].scale() == 0 ? 1.0 : groups[0].scale();
      expectation.description = absl::StrFormat("gamma(shape %g, scale %g)",
                                                groups[0].shape(), scale);
      expectation.stddev = std::sqrt(groups[0].shape()) * scale;
    } else {
      expectation.description = absl::StrCat(groups.size(), " groups");
    }
    if (expectation.samples > 0) {
      expectation.mean = weighted_mean / expectation.samples;
    }
  } else {
    std::vector<double> shapes, scales;
    RealsToDoubles(request.elements().shape(), &shapes);
    RealsToDoubles(request.elements().scale(), &scales);
    expectation.samples = shapes.size();
    expectation.description = "per-element parameters";
    double mean = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      mean += shapes[i] * (i < scales.size() ? scales[i] : 1.0);
    }
    if (!shapes.empty()) expectation.mean = mean / shapes.size();
  }
  return expectation;
}

// Takes samples chunk by chunk and either prints them or folds them into a
// bounded-memory summary, so that 1e8 streamed samples are never all held.
class GammaReport {
 public:
  GammaReport(const SampleGammaRequest& request, bool print_all,
              int64_t reservoir)
      : request_(request), print_all_(print_all), summary_(reservoir) {}

  absl::Status Add(int64_t first_sample, const sampler::v1::Reals& samples) {
    if (first_sample != received_) {
      return absl::DataLossError(absl::StrCat(
          "chunk starts at sample ", first_sample, ", expected ", received_));
    }
    single_precision_ = RealsAreF32(samples);
    // Slices keep the converted copy small however large the answer is.
    const int64_t size = RealsSize(samples);
    for (int64_t begin = 0; begin < size; begin += kSliceValues) {
      RealsToDoubles(samples, begin, kSliceValues, &buffer_);
      if (print_all_) {
        std::string text;
        for (double value : buffer_) {
          absl::StrAppend(&text, FormatReal(value, single_precision_), "\n");
        }
        std::cout << text;
      } else {
        summary_.Add(buffer_);
      }
    }
    received_ += size;
    return absl::OkStatus();
  }

  absl::Status Finish(uint64_t seed) {
    const GammaExpectation expected = Expect(request_);
    if (received_ != expected.samples) {
      return absl::DataLossError(absl::StrCat("asked for ", expected.samples,
                                              " samples, got ", received_));
    }
    if (print_all_) return absl::OkStatus();

    const bool log_output = request_.log_output();
    std::cout << absl::StreamFormat(
        "%d %s of %s, %s, seed %d\n", received_,
        log_output ? "log-samples" : "samples", expected.description,
        single_precision_ ? "float32" : "float64", seed);
    auto line = [](absl::string_view name, double value,
                   double expected_value) {
      std::string text = absl::StrFormat("  %-6s %.9g", name, value);
      if (std::isfinite(expected_value)) {
        absl::StrAppend(&text,
                        absl::StrFormat("  (expected %.9g)", expected_value));
      }
      std::cout << text << "\n";
    };
    // Moments of log-samples have no simple closed form worth printing.
    line("mean", summary_.mean(), log_output ? NAN : expected.mean);
    line("sd", summary_.stddev(), log_output ? NAN : expected.stddev);
    line("min", summary_.min(), NAN);
    static constexpr double kQuantiles[] = {0.01, 0.25, 0.5, 0.75, 0.99};
    static constexpr absl::string_view kNames[] = {"1%", "25%", "50%", "75%",
                                                   "99%"};
    const std::vector<double> quantiles = summary_.Quantiles(kQuantiles);
    for (size_t q = 0; q < quantiles.size(); ++q) {
      line(kNames[q], quantiles[q], NAN);
    }
    line("max", summary_.max(), NAN);
    if (summary_.non_finite() > 0) {
      std::cout << absl::StreamFormat(
          "  %d non-finite values, left out of the above\n",
          summary_.non_finite());
    }
    if (summary_.quantiles_exact()) {
      std::cout << "quantiles: exact, from all samples\n";
    } else {
      std::cout << absl::StreamFormat(
          "quantiles: estimated from a uniform random subset of %d of the %d "
          "samples (--quantile_reservoir); the other rows are exact\n",
          summary_.reservoir_size(), summary_.count());
    }
    return absl::OkStatus();
  }

 private:
  const SampleGammaRequest& request_;
  const bool print_all_;
  SampleSummary summary_;
  int64_t received_ = 0;
  bool single_precision_ = false;
  std::vector<double> buffer_;
};

absl::Status CallUnary(sampler::v1::SamplerService::Stub& stub,
                       const SampleGammaRequest& request,
                       const CtlOptions& options, GammaReport* report) {
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  SampleGammaResponse response;
  SAMPLER_RETURN_IF_ERROR(
      ToAbslStatus(stub.SampleGamma(&context, request, &response)));
  if (options.json) return PrintJson(response);
  SAMPLER_RETURN_IF_ERROR(report->Add(0, response.samples()));
  return report->Finish(response.seed());
}

absl::Status CallStream(sampler::v1::SamplerService::Stub& stub,
                        const SampleGammaStreamRequest& request,
                        const CtlOptions& options, GammaReport* report) {
  grpc::ClientContext context;
  SetTimeout(options.timeout, &context);
  // With --json the chunks are assembled into one SampleGammaResponse, so
  // that the output is the same as without --stream.
  SampleGammaResponse assembled;
  int64_t assembled_size = 0;
  std::unique_ptr<grpc::ClientReader<SampleGammaStreamResponse>> reader =
      stub.SampleGammaStream(&context, request);
  const absl::Status status = ReadStream<SampleGammaStreamResponse>(
      &context, reader.get(),
      [&](const SampleGammaStreamResponse& chunk) -> absl::Status {
        assembled.set_seed(chunk.seed());
        if (!options.json)
          return report->Add(chunk.first_sample(), chunk.samples());
        if (chunk.first_sample() != assembled_size) {
          return absl::DataLossError(
              absl::StrCat("chunk starts at sample ", chunk.first_sample(),
                           ", expected ", assembled_size));
        }
        AppendReals(chunk.samples(), assembled.mutable_samples());
        assembled_size += RealsSize(chunk.samples());
        return absl::OkStatus();
      });
  SAMPLER_RETURN_IF_ERROR(status);
  if (options.json) return PrintJson(assembled);
  return report->Finish(assembled.seed());
}

}  // namespace

int RunGamma(const CtlOptions& options) {
  absl::StatusOr<SampleGammaStreamRequest> request = BuildRequest(options);
  if (!request.ok()) return UsageError(request.status());
  const int64_t reservoir = absl::GetFlag(FLAGS_quantile_reservoir);
  if (reservoir <= 0) {
    return UsageError(
        absl::InvalidArgumentError("--quantile_reservoir must be positive"));
  }
  GammaReport report(request->request(), absl::GetFlag(FLAGS_print), reservoir);
  auto stub = sampler::v1::SamplerService::NewStub(options.channel);
  const absl::Status status =
      options.stream ? CallStream(*stub, *request, options, &report)
                     : CallUnary(*stub, request->request(), options, &report);
  if (!status.ok()) return RpcError(status);
  return kExitOk;
}

}  // namespace sampler::client
