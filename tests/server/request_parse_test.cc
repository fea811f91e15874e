// Request parsing: request protos -> typed jobs, their limits, and the
// outputs bound to responses. Requests are written in text format so that
// each case reads like what a client sends.
#include "server/request_parse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/gamma.h"
#include "server/request_limits.h"
#include "server/response_bind.h"
#include "tests/server/request_test_util.h"

namespace sampler::server {
namespace {

// A seed source that counts its calls.
struct CountingSeeds {
  int calls = 0;
  SeedSource source() {
    return [this] {
      ++calls;
      return uint64_t{0xfeedbeef};
    };
  }
};

// ------------------------------------------------------- error table ----

TEST(ValidateEnumerate, BadRequestsNameFieldIndexAndValue) {
  const std::string ok_term =
      "terms { probabilities { f64 { values: [0.5, 0.5] } } }";
  const std::vector<BadCase> cases = {
      {"", kInvalid, {"problems: at least one problem is required"}},
      {"problems {}", kInvalid, {"problems[0].terms", "at least one term"}},
      {"problems { terms { offset: 1 } }",
       kInvalid,
       {"problems[0].terms[0].probabilities: missing"}},
      {"problems { " + ok_term +
           " } problems { terms { probabilities { f64 { values: [0.1, 0.2, "
           "0.3, 0.4, -0.2] } } } }",
       kInvalid,
       {"problems[1].terms[0].probabilities[4] = -0.2",
        "must be finite and >= 0"}},
      {"problems { terms { probabilities { f64 { values: [nan] } } } }",
       kInvalid,
       {"problems[0].terms[0].probabilities[0] = nan"}},
      {"problems { " + ok_term + " terms { probabilities { f32 { } } } }",
       kInvalid,
       {"problems[0].terms[1]", "empty"}},
      {"precision: 7 problems { " + ok_term + " }",
       kInvalid,
       {"precision = 7", "unknown"}},
      {"input_space: 9 problems { " + ok_term + " }",
       kInvalid,
       {"input_space = 9", "unknown"}},
      {"output_space: -1 problems { " + ok_term + " }",
       kInvalid,
       {"output_space = -1", "unknown"}},
      {"input_space: PROBABILITY_SPACE_LOG problems { terms { probabilities "
       "{ f64 { values: [0, inf] } } } }",
       kInvalid,
       {"problems[0].terms[0].probabilities[1] = inf"}},
      {"precision: PRECISION_FLOAT32 problems { terms { probabilities { f64 "
       "{ values: [1e300] } } } }",
       kInvalid,
       {"problems[0].terms[0].probabilities[0] = 1e+300", "overflows float32"}},
      {"problems { terms { offset: 9223372036854775807 probabilities { f64 { "
       "values: [0.5, 0.5] } } } }",
       kInvalid,
       {"problems[0].terms[0].offset = 9223372036854775807"}},
  };
  for (const BadCase& c : cases) {
    ExpectError(
        ParseEnumerate(Text<v1::EnumerateRequest>(c.text), RequestLimits())
            .status(),
        c);
  }
}

TEST(ValidateCategorical, BadRequestsNameFieldIndexAndValue) {
  std::string nan_at_2_5 = "categories: 6 values { f64 { values: [";
  for (int i = 0; i < 18; ++i) {
    absl::StrAppend(&nan_at_2_5, i ? ", " : "", i == 17 ? "nan" : "1");
  }
  nan_at_2_5 += "] } }";
  const std::string ok_values = "values { f64 { values: [1, 2] } }";
  const std::vector<BadCase> cases = {
      {"categories: 0 " + ok_values,
       kInvalid,
       {"categories = 0: must be >= 1"}},
      {"categories: 2147483648 " + ok_values,
       kInvalid,
       {"categories = 2147483648", "int32"}},
      {"categories: 3 values { f32 { values: [1,1,1,1,1,1,1,1,1,1] } }",
       kInvalid,
       {"values: 10 values do not form rows of categories = 3"}},
      {"categories: 2", kInvalid, {"values: missing"}},
      {"categories: 2 values { f32 {} }", kInvalid, {"values: empty"}},
      {nan_at_2_5,
       kInvalid,
       {"values[2][5] = nan: weights must be finite and >= 0"}},
      {"categories: 2 values { f32 { values: [1, -1] } }",
       kInvalid,
       {"values[0][1] = -1", "weights must be finite and >= 0"}},
      {"categories: 2 values { f32 { values: [1, 1, 0, 0] } }",
       kInvalid,
       {"values[1]: all weights are zero"}},
      {"categories: 2 input: CATEGORICAL_INPUT_LOGITS values { f64 { values: "
       "[0, inf] } }",
       kInvalid,
       {"values[0][1] = inf: logits must not be NaN or +inf"}},
      {"categories: 2 input: CATEGORICAL_INPUT_LOGITS values { f64 { values: "
       "[-inf, -inf] } }",
       kInvalid,
       {"values[0]: all logits are -inf"}},
      {"categories: 2 draws: -1 " + ok_values,
       kInvalid,
       {"draws = -1: must be >= 0"}},
      {"categories: 2 draws: 1048577 " + ok_values,
       kInvalid,
       {"draws = 1048577: must be at most 1048576"}},
      {"categories: 2 input: 5 " + ok_values,
       kInvalid,
       {"input = 5", "unknown"}},
      {"categories: 2 precision: 7 " + ok_values,
       kInvalid,
       {"precision = 7", "unknown"}},
      {"categories: 2 precision: PRECISION_FLOAT32 values { f64 { values: "
       "[1, 1e39] } }",
       kInvalid,
       {"values[0][1] = 1e+39", "overflows float32"}},
  };
  for (const BadCase& c : cases) {
    ExpectError(ParseCategorical(Text<v1::SampleCategoricalRequest>(c.text),
                                 RequestLimits(), kSeeds, false)
                    .status(),
                c);
  }
  // Streamed: the path starts at the stream request.
  ExpectError(ParseCategorical(Text<v1::SampleCategoricalRequest>(
                                   "categories: 2 values { f32 { values: [1, "
                                   "nan] } }"),
                               RequestLimits(), kSeeds, true)
                  .status(),
              {"", kInvalid, {"request.values[0][1] = nan"}});
}

// Issue 9 item 9: scale 1e308 answered +inf samples with OK. The rule
// (request_parse.cc, CheckGammaOverflow): scale * (shape + 10 sqrt(shape) + 50)
// must be finite in the request's precision, unless log_output is asked for.
TEST(ValidateGamma, ParametersWhoseSamplesOverflowAreRefused) {
  const std::vector<BadCase> cases = {
      {"groups { groups { shape: 1 count: 2 } groups { shape: 2 scale: "
       "1e308 count: 3 } }",
       kInvalid,
       {"groups.groups[1]", "scale 1e+308", "overflow float64"}},
      {"precision: PRECISION_FLOAT32 groups { groups { shape: 1 scale: 1e37 "
       "count: 1 } }",
       kInvalid,
       {"groups.groups[0]", "overflow float32", "PRECISION_FLOAT64"}},
      {"elements { shape { f64 { values: [1, 1e300] } } scale { f64 { "
       "values: [1, 1e10] } } }",
       kInvalid,
       {"elements.scale[1]", "overflow float64"}},
      {"elements { shape { f64 { values: [1, 1e308] } } scale { f64 { "
       "values: [1, 2] } } }",
       kInvalid,
       {"elements.scale[1]", "shape 1e+308 with scale 2"}},
  };
  for (const BadCase& c : cases) {
    ExpectError(ParseGamma(Text<v1::SampleGammaRequest>(c.text),
                           RequestLimits(), kSeeds, false)
                    .status(),
                c);
  }
  // Just below: the bound is finite, so the request is taken (its mean is
  // 1e300-ish, far from float64's 1.8e308).
  for (const char* ok :
       {"groups { groups { shape: 2 scale: 1e300 count: 3 } }",
        "precision: PRECISION_FLOAT32 groups { groups { shape: 1 scale: 1e36 "
        "count: 1 } }",
        "elements { shape { f64 { values: [1e300] } } }",
        // Log output cannot overflow: log(scale) + log(G).
        "log_output: true groups { groups { shape: 2 scale: 1e308 count: 3 "
        "} }"}) {
    EXPECT_TRUE(ParseGamma(Text<v1::SampleGammaRequest>(ok), RequestLimits(),
                           kSeeds, false)
                    .ok())
        << ok;
  }
  // Streams too, with the stream's path.
  ExpectError(ParseGamma(Text<v1::SampleGammaRequest>(
                             "groups { groups { shape: 2 scale: 1e308 count: "
                             "3 } }"),
                         RequestLimits(), kSeeds, true)
                  .status(),
              {"", kInvalid, {"request.groups.groups[0]", "overflow"}});
}

TEST(ValidateGamma, BadRequestsNameFieldIndexAndValue) {
  const std::vector<BadCase> cases = {
      {"", kInvalid, {"parameters: missing"}},
      {"elements {}", kInvalid, {"elements.shape: missing"}},
      {"elements { shape { f64 { values: [1, 2, 3, -1] } } }",
       kInvalid,
       {"elements.shape[3] = -1: must be finite, > 0"}},
      {"elements { shape { f32 { values: [nan] } } }",
       kInvalid,
       {"elements.shape[0] = nan"}},
      {"elements { shape { f64 { values: [1e-310] } } }",
       kInvalid,
       {"elements.shape[0] = 1e-310", "subnormal"}},
      {"elements { shape { f64 { values: [1, 1] } } scale { f64 { values: "
       "[1, 0] } } }",
       kInvalid,
       {"elements.scale[1] = 0"}},
      {"elements { shape { f64 { values: [1, 1] } } scale { f64 { values: "
       "[1] } } }",
       kInvalid,
       {"elements.scale: 1 values but elements.shape has 2"}},
      {"elements { shape { f32 {} } }", kInvalid, {"elements.shape: empty"}},
      {"groups { groups { shape: 1 count: -1 } }",
       kInvalid,
       {"groups.groups[0].count = -1: must be >= 0"}},
      {"groups { groups { shape: 0 count: 3 } }",
       kInvalid,
       {"groups.groups[0].shape = 0"}},
      {"groups { groups { shape: 1 count: 3 } groups { shape: 1 scale: -2 "
       "count: 1 } }",
       kInvalid,
       {"groups.groups[1].scale = -2"}},
      {"groups {}", kInvalid, {"groups.groups", "add up to 0"}},
      {"groups { groups { shape: 1 count: 0 } }",
       kInvalid,
       {"groups.groups", "add up to 0"}},
      {"precision: PRECISION_FLOAT32 groups { groups { shape: 1e300 count: "
       "1 } }",
       kInvalid,
       {"groups.groups[0].shape = 1e+300", "overflows float32"}},
      {"precision: PRECISION_FLOAT32 elements { shape { f64 { values: [1, "
       "1e-50] } } }",
       kInvalid,
       {"elements.shape[1] = 1e-50", "underflows float32"}},
      {"precision: 7 elements { shape { f64 { values: [1] } } }",
       kInvalid,
       {"precision = 7"}},
      // Absurd counts are refused without overflow, before any allocation.
      {"groups { groups { shape: 1 count: 4611686018427387904 } }",
       kRange,
       {"4611686018427387904 samples", "max_items_per_request"}},
      {"groups { groups { shape: 1 count: 4611686018427387904 } groups { "
       "shape: 1 count: 4611686018427387904 } }",
       kRange,
       {"more than 2^63 - 1 samples"}},
  };
  for (const BadCase& c : cases) {
    ExpectError(ParseGamma(Text<v1::SampleGammaRequest>(c.text),
                           RequestLimits(), kSeeds, false)
                    .status(),
                c);
  }
  ExpectError(ParseGamma(Text<v1::SampleGammaRequest>(
                             "groups { groups { shape: 1 count: "
                             "4611686018427387904 } }"),
                         RequestLimits(), kSeeds, true)
                  .status(),
              {"", kRange, {"max_items_per_stream"}});
  ExpectError(ParseGamma(Text<v1::SampleGammaRequest>(
                             "elements { shape { f64 { values: [1, -1] } } }"),
                         RequestLimits(), kSeeds, true)
                  .status(),
              {"", kInvalid, {"request.elements.shape[1] = -1"}});
}

TEST(ValidateDirichlet, BadRequestsNameFieldIndexAndValue) {
  const std::string ok = "concentrations { f64 { values: [1, 2, 3, 4] } }";
  const std::vector<BadCase> cases = {
      {"dimension: 2", kInvalid, {"concentrations: missing"}},
      {"dimension: 2 concentrations { f32 {} }",
       kInvalid,
       {"concentrations: empty"}},
      {ok, kInvalid, {"dimension = 0 and row_lengths is empty", "exactly one"}},
      {ok + " dimension: 2 row_lengths: [2, 2]",
       kInvalid,
       {"dimension = 2 and row_lengths", "exactly one"}},
      {ok + " dimension: -1", kInvalid, {"dimension = -1: must be >= 1"}},
      {ok + " dimension: 3",
       kInvalid,
       {"concentrations: 4 values do not form rows of dimension = 3"}},
      {ok + " row_lengths: [2, 0, 2]",
       kInvalid,
       {"row_lengths[1] = 0: must be >= 1"}},
      {ok + " row_lengths: [2, 3]",
       kInvalid,
       {"row_lengths: add up to 5 but concentrations has 4 values"}},
      {"dimension: 2 concentrations { f64 { values: [1, 2, 0, 4] } }",
       kInvalid,
       {"concentrations[2] = 0: must be finite, > 0"}},
      {ok + " dimension: 2 precision: 7", kInvalid, {"precision = 7"}},
      {"dimension: 1 precision: PRECISION_FLOAT32 concentrations { f64 { "
       "values: [1e-50] } }",
       kInvalid,
       {"concentrations[0] = 1e-50", "underflows float32"}},
  };
  for (const BadCase& c : cases) {
    ExpectError(ParseDirichlet(Text<v1::SampleDirichletRequest>(c.text),
                               RequestLimits(), kSeeds)
                    .status(),
                c);
  }
}

TEST(ValidateBoards, BadRequestsNameFieldIndexAndValue) {
  const std::vector<BadCase> cases = {
      {"rows: 0 cols: 3 stones: [1] count: 1", kInvalid, {"rows = 0"}},
      {"rows: 3 cols: -3 stones: [1] count: 1", kInvalid, {"cols = -3"}},
      {"rows: 200 cols: 200 stones: [1] count: 1",
       kInvalid,
       {"rows x cols = 200x200"}},
      {"rows: 3 cols: 3 count: 1", kInvalid, {"stones: must give at least"}},
      {"rows: 3 cols: 3 stones: [1, -2] count: 1",
       kInvalid,
       {"stones[1] = -2: must be >= 0"}},
      {"rows: 3 cols: 3 stones: [5, 5] count: 1",
       kInvalid,
       {"stones: total 10 exceeds the 9 sites"}},
      {"rows: 9 cols: 9 stones: [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] count: "
       "1",
       kInvalid,
       {"stones: 17 colours"}},
      {"rows: 3 cols: 3 stones: [1] count: 0",
       kInvalid,
       {"count = 0: must be >= 1"}},
      {"rows: 3 cols: 3 stones: [1] count: -5", kInvalid, {"count = -5"}},
  };
  for (const BadCase& c : cases) {
    ExpectError(ParseBoards(Text<v1::SampleBoardsRequest>(c.text),
                            RequestLimits(), kSeeds, false)
                    .status(),
                c);
  }
  ExpectError(ParseBoards(Text<v1::SampleBoardsRequest>(
                              "rows: 3 cols: 3 stones: [1, -2] count: 1"),
                          RequestLimits(), kSeeds, true)
                  .status(),
              {"", kInvalid, {"request.stones[1] = -2"}});
}

// ------------------------------------------------------------- limits ----

TEST(ValidateLimits, UnaryTooManyItemsNamesTheStreamRpc) {
  RequestLimits limits;
  limits.max_items_per_request = 10;
  const auto gamma =
      Text<v1::SampleGammaRequest>("groups { groups { shape: 1 count: 11 } }");
  ExpectError(
      ParseGamma(gamma, limits, kSeeds, false).status(),
      {"",
       kRange,
       {"11 samples", "max_items_per_request = 10", "SampleGammaStream"}});
  // The stream takes it.
  EXPECT_TRUE(ParseGamma(gamma, limits, kSeeds, true).ok());

  limits.max_items_per_request = 5;
  ExpectError(ParseCategorical(Text<v1::SampleCategoricalRequest>(
                                   "categories: 1 draws: 2 values { f32 { "
                                   "values: [1, 1, 1] } }"),
                               limits, kSeeds, false)
                  .status(),
              {"", kRange, {"6 draws", "SampleCategoricalStream"}});
  ExpectError(ParseBoards(Text<v1::SampleBoardsRequest>(
                              "rows: 3 cols: 3 stones: [1] count: 6"),
                          limits, kSeeds, false)
                  .status(),
              {"", kRange, {"6 positions", "SampleBoardsStream"}});

  // No stream for these: the advice is to split.
  limits.max_items_per_request = 3;
  const absl::Status dirichlet =
      ParseDirichlet(Text<v1::SampleDirichletRequest>(
                         "dimension: 2 concentrations { f32 { values: [1, 1, "
                         "1, 1] } }"),
                     limits, kSeeds)
          .status();
  ExpectError(dirichlet, {"", kRange, {"4 output elements", "split"}});
  EXPECT_EQ(std::string(dirichlet.message()).find("Stream"), std::string::npos);
  ExpectError(ParseEnumerate(Text<v1::EnumerateRequest>(
                                 "problems { terms { probabilities { f32 { "
                                 "values: [1, 1, 1, 1] } } } }"),
                             limits)
                  .status(),
              {"", kRange, {"4 output elements", "split"}});
}

TEST(ValidateLimits, UnaryTooLargeForOneMessageNamesTheStreamRpc) {
  // 2 colours of a 128 x 128 board are 4 KiB a position: a million of them
  // are 4 GiB, refused before anything is allocated.
  ExpectError(ParseBoards(Text<v1::SampleBoardsRequest>(
                              "rows: 128 cols: 128 stones: [10, 10] count: "
                              "1000000"),
                          RequestLimits(), kSeeds, false)
                  .status(),
              {"", kRange, {"max_message_bytes", "SampleBoardsStream"}});
  RequestLimits limits;
  limits.max_message_bytes = 1000;
  ExpectError(ParseGamma(Text<v1::SampleGammaRequest>(
                             "groups { groups { shape: 1 count: 1000 } }"),
                         limits, kSeeds, false)
                  .status(),
              {"", kRange, {"max_message_bytes = 1000", "SampleGammaStream"}});
  // A stream is not bound by the message size: its chunks are.
  EXPECT_TRUE(ParseGamma(Text<v1::SampleGammaRequest>(
                             "groups { groups { shape: 1 count: 1000 } }"),
                         limits, kSeeds, true)
                  .ok());
}

TEST(ValidateLimits, StreamItemLimit) {
  RequestLimits limits;
  limits.max_items_per_stream = 100;
  ExpectError(ParseBoards(Text<v1::SampleBoardsRequest>(
                              "rows: 3 cols: 3 stones: [1] count: 101"),
                          limits, kSeeds, true)
                  .status(),
              {"", kRange, {"101 positions", "max_items_per_stream = 100"}});
  EXPECT_TRUE(ParseBoards(Text<v1::SampleBoardsRequest>(
                              "rows: 3 cols: 3 stones: [1] count: 100"),
                          limits, kSeeds, true)
                  .ok());
}

TEST(ValidateLimits, EnumeratePairs) {
  RequestLimits limits;
  limits.max_enumerate_pairs = 15;
  // Two terms of 4: 16 multiply-adds.
  const auto request = Text<v1::EnumerateRequest>(
      "problems { terms { probabilities { f32 { values: [1, 1, 1, 1] } } } "
      "terms { probabilities { f32 { values: [1, 1, 1, 1] } } } }");
  ExpectError(ParseEnumerate(request, limits).status(),
              {"", kRange, {"16 multiply-adds", "max_enumerate_pairs = 15"}});
  limits.max_enumerate_pairs = 16;
  EXPECT_TRUE(ParseEnumerate(request, limits).ok());
}

// The size estimate is conservative: a response of S bytes (filled with
// its largest encodings) is refused when the limit is S - 1, and accepted
// when the limit leaves the estimate a little slack.
template <typename Response>
void ExpectConservative(
    const std::function<absl::Status(const RequestLimits&, Response*)>& run) {
  Response response;
  ASSERT_TRUE(run(RequestLimits(), &response).ok());
  const int64_t size = static_cast<int64_t>(response.ByteSizeLong());
  RequestLimits limits;
  limits.max_message_bytes = size - 1;
  Response unused;
  EXPECT_EQ(run(limits, &unused).code(), kRange) << size;
  limits.max_message_bytes = size + 4096;
  EXPECT_TRUE(run(limits, &unused).ok()) << size;
}

TEST(ValidateLimits, SizeEstimateIsConservative) {
  const SeedSource big_seed = [] { return ~uint64_t{0}; };
  ExpectConservative<v1::SampleCategoricalResponse>(
      [&](const RequestLimits& limits, v1::SampleCategoricalResponse* r) {
        std::string text = "categories: 300 draws: 7 values { f32 { values: [";
        for (int i = 0; i < 3000; ++i) absl::StrAppend(&text, i ? "," : "", 1);
        text += "] } }";
        auto job = ParseCategorical(Text<v1::SampleCategoricalRequest>(text),
                                    limits, big_seed, false);
        if (!job.ok()) return job.status();
        BindCategorical(**job, r);
        for (int& i : *r->mutable_indices()) i = 299;  // the widest varint
        return absl::OkStatus();
      });
  ExpectConservative<v1::SampleGammaResponse>(
      [&](const RequestLimits& limits, v1::SampleGammaResponse* r) {
        auto job = ParseGamma(Text<v1::SampleGammaRequest>(
                                  "groups { groups { shape: 1 count: 5000 } }"),
                              limits, big_seed, false);
        if (!job.ok()) return job.status();
        BindGamma(**job, r);
        return absl::OkStatus();
      });
  ExpectConservative<v1::SampleBoardsResponse>(
      [&](const RequestLimits& limits, v1::SampleBoardsResponse* r) {
        auto job = ParseBoards(
            Text<v1::SampleBoardsRequest>("rows: 19 cols: 19 stones: [3, 4, 5] "
                                          "count: 100"),
            limits, big_seed, false);
        if (!job.ok()) return job.status();
        BindBoards(**job, r);
        return absl::OkStatus();
      });
  ExpectConservative<v1::SampleDirichletResponse>(
      [&](const RequestLimits& limits, v1::SampleDirichletResponse* r) {
        auto job = ParseDirichlet(
            Text<v1::SampleDirichletRequest>(
                "dimension: 3 concentrations { f32 { values: [1, 2, 3, 4, 5, "
                "6] } }"),
            limits, big_seed);
        if (!job.ok()) return job.status();
        BindDirichlet(**job, r);
        return absl::OkStatus();
      });
  ExpectConservative<v1::EnumerateResponse>(
      [&](const RequestLimits& limits, v1::EnumerateResponse* r) {
        std::string text;
        for (int p = 0; p < 50; ++p) {
          absl::StrAppend(&text,
                          "problems { terms { offset: -9000000000000000000 "
                          "probabilities { f32 { values: [1, 2, 3] } } } terms "
                          "{ offset: -100000000000000000 probabilities { f32 "
                          "{ values: [1, 2] } } } }");
        }
        auto job = ParseEnumerate(Text<v1::EnumerateRequest>(text), limits);
        if (!job.ok()) return job.status();
        BindEnumerate(**job, r);
        return absl::OkStatus();
      });
}

// ----------------------------------------------- defaults, seeds, Bind ----

TEST(ValidateEnumerate, DefaultsItemsAndBind) {
  auto job = ParseEnumerate(
      Text<v1::EnumerateRequest>(
          "problems { terms { offset: -2 probabilities { f32 { values: [1, "
          "2, 3] } } } terms { offset: 5 probabilities { f64 { values: [0.5, "
          "0.5] } } } } problems { terms { offset: 7 probabilities { f64 { "
          "values: [1] } } } }"),
      RequestLimits());
  ASSERT_TRUE(job.ok()) << job.status();
  // Float64, linear in and out.
  auto* work = std::get_if<EnumerateWork<double>>(&(*job)->work);
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->input_space, kernels::ProbSpace::kLinear);
  EXPECT_EQ(work->output_space, kernels::ProbSpace::kLinear);
  ASSERT_EQ(work->problems.size(), 2u);
  EXPECT_EQ(work->problems[0].offsets, (std::vector<int64_t>{-2, 5}));
  EXPECT_EQ(work->problems[0].terms[1], (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ((*job)->items, 4 + 1);

  v1::EnumerateResponse response;
  BindEnumerate(**job, &response);
  ASSERT_EQ(response.results_size(), 2);
  EXPECT_EQ(response.results(0).offset(), 3);
  EXPECT_EQ(response.results(1).offset(), 7);
  for (int p = 0; p < 2; ++p) {
    const auto& values = response.results(p).probabilities().f64().values();
    EXPECT_EQ(values.size(), p == 0 ? 4 : 1);
    EXPECT_EQ(work->problems[p].out.data(), values.data());
    EXPECT_EQ(work->problems[p].out.size(), static_cast<size_t>(values.size()));
    // A backend may write out_offset: it must point somewhere valid.
    ASSERT_NE(work->problems[p].out_offset, nullptr);
    *work->problems[p].out_offset = response.results(p).offset();
  }
}

TEST(ValidateEnumerate, Float32RoundsF64InputAndKeepsSpaces) {
  auto job = ParseEnumerate(
      Text<v1::EnumerateRequest>(
          "precision: PRECISION_FLOAT32 input_space: PROBABILITY_SPACE_LOG "
          "output_space: PROBABILITY_SPACE_LOG problems { terms { "
          "probabilities { f64 { values: [0.1, -inf] } } } }"),
      RequestLimits());
  ASSERT_TRUE(job.ok()) << job.status();
  auto* work = std::get_if<EnumerateWork<float>>(&(*job)->work);
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->input_space, kernels::ProbSpace::kLog);
  EXPECT_EQ(work->output_space, kernels::ProbSpace::kLog);
  EXPECT_EQ(work->problems[0].terms[0][0], 0.1f);
  EXPECT_EQ(work->problems[0].terms[0][1],
            -std::numeric_limits<float>::infinity());
  v1::EnumerateResponse response;
  BindEnumerate(**job, &response);
  EXPECT_TRUE(response.results(0).probabilities().has_f32());
  EXPECT_EQ(response.results(0).probabilities().f32().values_size(), 2);
}

TEST(ValidateCategorical, DefaultsSeedsAndBind) {
  CountingSeeds seeds;
  auto job = ParseCategorical(
      Text<v1::SampleCategoricalRequest>(
          "categories: 3 values { f32 { values: [1, 2, 3, 0, 0, 1] } }"),
      RequestLimits(), seeds.source(), false);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(seeds.calls, 1);
  EXPECT_EQ((*job)->seed, 0xfeedbeefu);
  EXPECT_EQ((*job)->weight_kind, kernels::WeightKind::kWeights);
  EXPECT_EQ((*job)->shape.rows, 2);
  EXPECT_EQ((*job)->shape.categories, 3);
  EXPECT_EQ((*job)->shape.draws, 1);  // 0 means 1
  EXPECT_EQ((*job)->items, 2);
  EXPECT_EQ((*job)->first_row, 0u);
  auto* work = std::get_if<CategoricalWork<double>>(&(*job)->work);
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->values, (std::vector<double>{1, 2, 3, 0, 0, 1}));

  v1::SampleCategoricalResponse response;
  BindCategorical(**job, &response);
  EXPECT_EQ(response.indices_size(), 2);
  EXPECT_EQ(work->out.data(), response.indices().data());
  EXPECT_EQ(response.rows(), 2);
  EXPECT_EQ(response.draws(), 1);
  EXPECT_EQ(response.seed(), 0xfeedbeefu);

  // A given seed (0 included: presence counts) is used and echoed.
  for (uint64_t seed : {uint64_t{0}, uint64_t{99}}) {
    auto seeded = ParseCategorical(
        Text<v1::SampleCategoricalRequest>(absl::StrCat(
            "seed: ", seed,
            " categories: 2 draws: 5 input: CATEGORICAL_INPUT_LOGITS "
            "precision: PRECISION_FLOAT32 values { f64 { values: [0.1, "
            "-inf] } }")),
        RequestLimits(), seeds.source(), false);
    ASSERT_TRUE(seeded.ok()) << seeded.status();
    EXPECT_EQ(seeds.calls, 1);
    EXPECT_EQ((*seeded)->seed, seed);
    EXPECT_EQ((*seeded)->weight_kind, kernels::WeightKind::kLogits);
    EXPECT_EQ((*seeded)->items, 5);
    auto* f = std::get_if<CategoricalWork<float>>(&(*seeded)->work);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->values[0], 0.1f);
    v1::SampleCategoricalResponse r;
    BindCategorical(**seeded, &r);
    EXPECT_EQ(r.seed(), seed);
    EXPECT_EQ(r.indices_size(), 5);
    EXPECT_EQ(r.draws(), 5);
  }
}

// Rows whose total is subnormal are accepted as sent (not flushed, not
// refused): the categorical contract rescales them exactly.
TEST(ValidateCategorical, AcceptsSubnormalTotals) {
  auto f32 = ParseCategorical(
      Text<v1::SampleCategoricalRequest>(
          "categories: 2 precision: PRECISION_FLOAT32 values { f32 { values: "
          "[1e-44, 1e-44, 1.4e-45, 1.4e-45] } }"),
      RequestLimits(), kSeeds, false);
  ASSERT_TRUE(f32.ok()) << f32.status();
  auto* f = std::get_if<CategoricalWork<float>>(&(*f32)->work);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->values,
            (std::vector<float>{1e-44f, 1e-44f, 1.4e-45f, 1.4e-45f}));
  auto f64 = ParseCategorical(
      Text<v1::SampleCategoricalRequest>(
          "categories: 2 precision: PRECISION_FLOAT64 values { f64 { values: "
          "[5e-324, 5e-324] } }"),
      RequestLimits(), kSeeds, false);
  ASSERT_TRUE(f64.ok()) << f64.status();
  auto* d = std::get_if<CategoricalWork<double>>(&(*f64)->work);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->values, (std::vector<double>{5e-324, 5e-324}));
}

// Issue 13 item 3: given shared ownership of the request, the job reads
// values of the request's precision where protobuf parsed them, keeping the
// request alive; values of the other representation are converted into a
// copy of the job's own, and so are values of a request it does not own.
TEST(ValidateCategorical, ReadsSharedRequestsValuesInPlace) {
  auto request = std::make_shared<v1::SampleCategoricalRequest>(
      Text<v1::SampleCategoricalRequest>(
          "categories: 2 precision: PRECISION_FLOAT32 values { f32 { values: "
          "[1, 2, 3, 4] } }"));
  const float* parsed = request->values().f32().values().data();
  std::weak_ptr<v1::SampleCategoricalRequest> alive = request;
  auto job = ParseCategorical(
      std::shared_ptr<const v1::SampleCategoricalRequest>(request),
      RequestLimits(), kSeeds, false);
  ASSERT_TRUE(job.ok()) << job.status();
  auto* f = std::get_if<CategoricalWork<float>>(&(*job)->work);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->values.data(), parsed);
  EXPECT_EQ(f->values.size(), 4u);
  request.reset();
  EXPECT_FALSE(alive.expired());  // the job keeps it
  EXPECT_EQ(f->values, (std::vector<float>{1, 2, 3, 4}));
  job->reset();
  EXPECT_TRUE(alive.expired());

  // Float64 values for a float32 request: rounded into the job's copy.
  auto widened = std::make_shared<const v1::SampleCategoricalRequest>(
      Text<v1::SampleCategoricalRequest>(
          "categories: 2 precision: PRECISION_FLOAT32 values { f64 { values: "
          "[0.1, 2] } }"));
  auto converted = ParseCategorical(widened, RequestLimits(), kSeeds, false);
  ASSERT_TRUE(converted.ok()) << converted.status();
  auto* c = std::get_if<CategoricalWork<float>>(&(*converted)->work);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->values, (std::vector<float>{0.1f, 2.0f}));
  EXPECT_NE((*converted)->values_owner, nullptr);
  EXPECT_NE((*converted)->values_owner.get(),
            static_cast<const void*>(widened.get()));

  // The overload taking a reference copies.
  auto copied = ParseCategorical(*widened, RequestLimits(), kSeeds, false);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(std::get<CategoricalWork<float>>((*copied)->work).values,
            (std::vector<float>{0.1f, 2.0f}));
}

TEST(ValidateGamma, DefaultsAndBind) {
  // Elements without scale: the job's scale stays empty (means 1), f32
  // input to a float64 request is exact.
  auto job = ParseGamma(Text<v1::SampleGammaRequest>(
                            "seed: 7 log_output: true elements { shape { f32 "
                            "{ values: [0.1, 2.5] } } scale { f32 {} } }"),
                        RequestLimits(), kSeeds, false);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->seed, 7u);
  EXPECT_TRUE((*job)->log_output);
  EXPECT_EQ((*job)->items, 2);
  auto* work = std::get_if<GammaWork<double>>(&(*job)->work);
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->shape, (std::vector<double>{double{0.1f}, 2.5}));
  EXPECT_TRUE(work->scale.empty());
  EXPECT_TRUE(work->groups.empty());
  v1::SampleGammaResponse response;
  BindGamma(**job, &response);
  ASSERT_TRUE(response.samples().has_f64());
  EXPECT_EQ(response.samples().f64().values_size(), 2);
  EXPECT_EQ(work->out.data(), response.samples().f64().values().data());
  EXPECT_EQ(response.seed(), 7u);

  // Groups, float32: scale 0 means 1; f64 parameters are rounded.
  job = ParseGamma(Text<v1::SampleGammaRequest>(
                       "precision: PRECISION_FLOAT32 groups { groups { shape: "
                       "0.1 count: 3 } groups { shape: 2 scale: 0.3 count: 0 "
                       "} groups { shape: 4 scale: 2 count: 2 } }"),
                   RequestLimits(), kSeeds, false);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->seed, 12345u);
  EXPECT_EQ((*job)->items, 5);
  auto* groups = std::get_if<GammaWork<float>>(&(*job)->work);
  ASSERT_NE(groups, nullptr);
  ASSERT_EQ(groups->groups.size(), 3u);
  EXPECT_EQ(groups->groups[0].shape, 0.1f);
  EXPECT_EQ(groups->groups[0].scale, 1.0f);
  EXPECT_EQ(groups->groups[1].scale, 0.3f);
  EXPECT_EQ(groups->groups[2].count, 2);
  BindGamma(**job, &response);  // rebinding switches representation
  ASSERT_TRUE(response.samples().has_f32());
  EXPECT_EQ(response.samples().f32().values_size(), 5);
  EXPECT_EQ(groups->out.data(), response.samples().f32().values().data());
  EXPECT_EQ(response.seed(), 12345u);
}

TEST(ValidateDirichlet, RowsFromDimensionOrLengthsAndBind) {
  auto job = ParseDirichlet(
      Text<v1::SampleDirichletRequest>(
          "dimension: 2 concentrations { f64 { values: [1, 2, 3, 4, 5, 6] } "
          "}"),
      RequestLimits(), kSeeds);
  ASSERT_TRUE(job.ok()) << job.status();
  auto* work = std::get_if<DirichletWork<double>>(&(*job)->work);
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->row_offsets, (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ((*job)->items, 6);

  job = ParseDirichlet(
      Text<v1::SampleDirichletRequest>(
          "seed: 3 log_output: true row_lengths: [1, 3, 2] precision: "
          "PRECISION_FLOAT32 concentrations { f64 { values: [1e-3, 2, 3, 4, "
          "5, 6] } }"),
      RequestLimits(), kSeeds);
  ASSERT_TRUE(job.ok()) << job.status();
  auto* f = std::get_if<DirichletWork<float>>(&(*job)->work);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->row_offsets, (std::vector<int64_t>{0, 1, 4, 6}));
  EXPECT_EQ(f->alpha[0], 1e-3f);
  EXPECT_TRUE((*job)->log_output);
  v1::SampleDirichletResponse response;
  BindDirichlet(**job, &response);
  EXPECT_EQ(response.samples().f32().values_size(), 6);
  EXPECT_EQ(f->out.data(), response.samples().f32().values().data());
  EXPECT_EQ(response.seed(), 3u);
}

TEST(ValidateBoards, ItemsAndBind) {
  auto job = ParseBoards(Text<v1::SampleBoardsRequest>(
                             "rows: 9 cols: 9 stones: [3, 2, 1] count: 4"),
                         RequestLimits(), kSeeds, false);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->items, 4);
  EXPECT_EQ((*job)->count, 4);
  EXPECT_EQ((*job)->spec.stones, (std::vector<int32_t>{3, 2, 1}));
  v1::SampleBoardsResponse response;
  BindBoards(**job, &response);
  EXPECT_EQ(response.words_per_board(), 2);  // 81 sites
  EXPECT_EQ(response.colours(), 3);
  EXPECT_EQ(response.count(), 4);
  EXPECT_EQ(response.seed(), 12345u);
  EXPECT_EQ(response.bitboards_size(), 4 * 3 * 2);
  EXPECT_EQ((*job)->out.data(), response.bitboards().data());
}

// ------------------------------------------------- limits that are true --
// Issue 9 item 7: every limit GetServerInfo reports is reachable. For each:
// a request at the limit is accepted, one above it is refused (OUT_OF_RANGE
// for the configurable limits, INVALID_ARGUMENT for the algorithms' own).

v1::SampleDirichletRequest DirichletElements(int64_t rows, int64_t dim,
                                             bool f32) {
  v1::SampleDirichletRequest r;
  r.set_precision(f32 ? v1::PRECISION_FLOAT32 : v1::PRECISION_FLOAT64);
  r.set_dimension(dim);
  for (int64_t i = 0; i < rows * dim; ++i) {
    r.mutable_concentrations()->mutable_f64()->add_values(0.5);
  }
  return r;
}

// One problem of two terms whose result has `length` points.
v1::EnumerateRequest EnumerateLength(int64_t length, bool f32) {
  v1::EnumerateRequest r;
  r.set_precision(f32 ? v1::PRECISION_FLOAT32 : v1::PRECISION_FLOAT64);
  v1::EnumerateProblem* p = r.add_problems();
  const int64_t first = length / 2 + 1;
  for (int64_t len : {first, length - first + 1}) {
    v1::Pmf* term = p->add_terms();
    for (int64_t i = 0; i < len; ++i) {
      term->mutable_probabilities()->mutable_f64()->add_values(1.0 / len);
    }
  }
  return r;
}
v1::SampleBoardsRequest Boards(int64_t count, int colours) {
  v1::SampleBoardsRequest r;
  r.set_rows(9);
  r.set_cols(9);  // 81 sites: 2 words of 64 bits per colour
  for (int c = 0; c < colours; ++c) r.add_stones(1);
  r.set_count(count);
  return r;
}

// A small message size so that the limits are reached with small requests:
// 256 + 8 * 4 * 100 bytes leaves room for 400 board words.
RequestLimits SmallLimits() {
  RequestLimits limits;
  limits.max_message_bytes = 256 + 8 * 4 * 100;
  limits.max_items_per_request = 1 << 20;
  limits.max_items_per_stream = 5000;
  limits.max_queued_items = 1000;
  return limits;
}

TEST(Limits, DerivedFromTheMessageSizePerPrecision) {
  // The case: 16M items per request, but a float64 gamma answer of
  // 16M samples is 128 MiB, over the 64 MiB messages.
  const DerivedLimits d = DeriveLimits(RequestLimits());
  EXPECT_EQ(d.max_gamma_samples_float64, ((int64_t{64} << 20) - 256) / 8);
  EXPECT_EQ(d.max_gamma_samples_float32, ((int64_t{64} << 20) - 256) / 4);
  // Categorical (one byte per draw) reaches max_items_per_request itself.
  EXPECT_EQ(d.max_categorical_items, RequestLimits().max_items_per_request);
  for (bool f32 : {true, false}) {
    SCOPED_TRACE(f32 ? "float32" : "float64");
    const int64_t max =
        f32 ? d.max_gamma_samples_float32 : d.max_gamma_samples_float64;
    EXPECT_TRUE(
        ParseGamma(GammaCount(max, f32), RequestLimits(), kSeeds, false).ok());
    EXPECT_EQ(
        ParseGamma(GammaCount(max + 1, f32), RequestLimits(), kSeeds, false)
            .status()
            .code(),
        kRange);
  }
}

TEST(Limits, EveryReportedLimitIsReachable) {
  const RequestLimits limits = SmallLimits();
  const DerivedLimits d = DeriveLimits(limits);
  for (bool f32 : {true, false}) {
    SCOPED_TRACE(f32 ? "float32" : "float64");
    const int64_t gamma =
        f32 ? d.max_gamma_samples_float32 : d.max_gamma_samples_float64;
    EXPECT_TRUE(ParseGamma(GammaCount(gamma, f32), limits, kSeeds, false).ok());
    EXPECT_EQ(ParseGamma(GammaCount(gamma + 1, f32), limits, kSeeds, false)
                  .status()
                  .code(),
              kRange);
    const int64_t dirichlet = f32 ? d.max_dirichlet_elements_float32
                                  : d.max_dirichlet_elements_float64;
    EXPECT_TRUE(
        ParseDirichlet(DirichletElements(dirichlet, 1, f32), limits, kSeeds)
            .ok());
    EXPECT_EQ(
        ParseDirichlet(DirichletElements(dirichlet + 1, 1, f32), limits, kSeeds)
            .status()
            .code(),
        kRange);
    const int64_t enumerate = f32 ? d.max_enumerate_elements_float32
                                  : d.max_enumerate_elements_float64;
    EXPECT_TRUE(ParseEnumerate(EnumerateLength(enumerate, f32), limits).ok());
    EXPECT_EQ(ParseEnumerate(EnumerateLength(enumerate + 1, f32), limits)
                  .status()
                  .code(),
              kRange);
  }
  // Categorical: rows x draws, up to 128 categories.
  const int64_t cat = d.max_categorical_items;
  ASSERT_EQ(cat % 4, 0);
  EXPECT_TRUE(
      ParseCategorical(CategoricalDraws(4, cat / 4, 128), limits, kSeeds, false)
          .ok());
  EXPECT_EQ(
      ParseCategorical(CategoricalDraws(1, cat + 1, 2), limits, kSeeds, false)
          .status()
          .code(),
      kRange);
  // Boards: 2 colours x 2 words per position on a 9 x 9 board.
  ASSERT_EQ(d.max_board_words, 400);
  EXPECT_TRUE(ParseBoards(Boards(100, 2), limits, kSeeds, false).ok());
  EXPECT_EQ(ParseBoards(Boards(101, 2), limits, kSeeds, false).status().code(),
            kRange);
  // Streams: all chunks together.
  EXPECT_TRUE(ParseGamma(GammaCount(limits.max_items_per_stream, false), limits,
                         kSeeds, true)
                  .ok());
  EXPECT_EQ(ParseGamma(GammaCount(limits.max_items_per_stream + 1, false),
                       limits, kSeeds, true)
                .status()
                .code(),
            kRange);
  // Enumeration work: exactly max_enumerate_pairs is taken.
  {
    RequestLimits pairs = RequestLimits();
    const v1::EnumerateRequest request = EnumerateLength(1001, false);
    auto job = ParseEnumerate(request, pairs);
    ASSERT_TRUE(job.ok()) << job.status();
    // Find the request's pair count: the least limit that takes it.
    int64_t lo = 1, hi = 10'000'000;
    while (lo < hi) {
      pairs.max_enumerate_pairs = lo + (hi - lo) / 2;
      if (ParseEnumerate(request, pairs).ok()) {
        hi = pairs.max_enumerate_pairs;
      } else {
        lo = pairs.max_enumerate_pairs + 1;
      }
    }
    pairs.max_enumerate_pairs = lo;
    EXPECT_TRUE(ParseEnumerate(request, pairs).ok());
    pairs.max_enumerate_pairs = lo - 1;
    EXPECT_EQ(ParseEnumerate(request, pairs).status().code(), kRange);
  }
  // The algorithms' own limits: draws per row and colours per board.
  EXPECT_TRUE(
      ParseCategorical(CategoricalDraws(1, kernels::kMaxCategoricalDraws, 2),
                       RequestLimits(), kSeeds, false)
          .ok());
  EXPECT_FALSE(ParseCategorical(
                   CategoricalDraws(1, kernels::kMaxCategoricalDraws + 1, 2),
                   RequestLimits(), kSeeds, false)
                   .ok());
  EXPECT_TRUE(ParseBoards(Boards(1, kernels::kMaxBoardColours), RequestLimits(),
                          kSeeds, false)
                  .ok());
  EXPECT_FALSE(ParseBoards(Boards(1, kernels::kMaxBoardColours + 1),
                           RequestLimits(), kSeeds, false)
                   .ok());
}

}  // namespace
}  // namespace sampler::server
