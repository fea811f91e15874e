// Tests of sampler-loadgen's pure parts: request building, the JSON writer
// and reports. No server needed.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "client/common/json_io.h"
#include "client/common/reals.h"
#include "client/loadgen/json_writer.h"
#include "client/loadgen/loadgen_report.h"
#include "client/loadgen/loadgen_requests.h"
#include "google/protobuf/struct.pb.h"
#include "gtest/gtest.h"

namespace sampler::client {
namespace {

// ---------------------------------------------------- loadgen requests --

TEST(LoadRequestsTest, ItemCountsFollowTheShape) {
  LoadShape shape;
  shape.problems = 3;
  shape.terms = 4;
  shape.pmf_len = 10;
  absl::StatusOr<sampler::v1::EnumerateRequest> enumerate =
      MakeEnumerateLoad(shape);
  ASSERT_TRUE(enumerate.ok()) << enumerate.status();
  EXPECT_EQ(ItemCount(*enumerate), 3 * (4 * 10 - 3));

  shape.categorical_rows = 5;
  shape.categories = 7;
  shape.draws = 3;
  absl::StatusOr<sampler::v1::SampleCategoricalRequest> categorical =
      MakeCategoricalLoad(shape);
  ASSERT_TRUE(categorical.ok()) << categorical.status();
  EXPECT_EQ(RealsSize(categorical->values()), 35);
  EXPECT_EQ(ItemCount(*categorical), 15);

  shape.gamma_samples = 100;
  EXPECT_EQ(ItemCount(*MakeGammaLoad(shape)), 100);
  shape.gamma_per_element = true;
  absl::StatusOr<sampler::v1::SampleGammaRequest> gamma = MakeGammaLoad(shape);
  ASSERT_TRUE(gamma.ok()) << gamma.status();
  EXPECT_EQ(ItemCount(*gamma), 100);

  shape.dirichlet_rows = 6;
  shape.dirichlet_dim = 4;
  EXPECT_EQ(ItemCount(*MakeDirichletLoad(shape)), 24);

  shape.board_count = 12;
  EXPECT_EQ(ItemCount(*MakeBoardsLoad(shape)), 12);
}

// The packed form and repeats carry the same problems as the explicit one.
TEST(LoadRequestsTest, PackedAndRepeatedEnumerateLoads) {
  LoadShape shape;
  shape.problems = 3;
  shape.terms = 4;
  shape.pmf_len = 10;
  const sampler::v1::EnumerateRequest explicit_form = *MakeEnumerateLoad(shape);
  shape.enumerate_packed = true;
  const sampler::v1::EnumerateRequest packed = *MakeEnumerateLoad(shape);
  ASSERT_EQ(packed.problems_size(), 3);
  for (int p = 0; p < 3; ++p) {
    const sampler::v1::EnumerateProblem& problem = packed.problems(p);
    EXPECT_EQ(problem.terms_size(), 0);
    EXPECT_EQ(problem.term_length(), 10);
    ASSERT_EQ(problem.offsets_size(), 4);
    std::vector<double> values, expected;
    RealsToDoubles(problem.values(), &values);
    for (int t = 0; t < 4; ++t) {
      const sampler::v1::Pmf& term = explicit_form.problems(p).terms(t);
      EXPECT_EQ(problem.offsets(t), term.offset());
      std::vector<double> term_values;
      RealsToDoubles(term.probabilities(), &term_values);
      expected.insert(expected.end(), term_values.begin(), term_values.end());
    }
    EXPECT_EQ(values, expected);
  }
  EXPECT_EQ(ItemCount(packed), ItemCount(explicit_form));
  shape.enumerate_repeat = 5;
  const sampler::v1::EnumerateRequest repeated = *MakeEnumerateLoad(shape);
  EXPECT_EQ(repeated.problems(0).repeats_size(), 4);
  EXPECT_EQ(ItemCount(repeated), 3 * (5 * 4 * 9 + 1));
}

// bench/service/poisson_binomial_ref.py rebuilds these p_i (the values
// below are its output): the two must agree bit for bit.
TEST(LoadRequestsTest, PoissonBinomialLoad) {
  EXPECT_EQ(PoissonBinomialP(0), 0x1.0eb7260f57eabp-1);
  EXPECT_EQ(PoissonBinomialP(1), 0x1.8f702eef77503p-1);
  EXPECT_EQ(PoissonBinomialP(99999), 0x1.ec4558130b01dp-1);
  LoadShape shape;
  shape.poisson_binomial = 1000;
  shape.enumerate_packed = true;
  shape.output_space = sampler::v1::PROBABILITY_SPACE_LOG;
  shape.precision = sampler::v1::PRECISION_FLOAT64;
  const sampler::v1::EnumerateRequest request = *MakeEnumerateLoad(shape);
  ASSERT_EQ(request.problems_size(), 1);
  EXPECT_EQ(request.output_space(), sampler::v1::PROBABILITY_SPACE_LOG);
  EXPECT_EQ(request.problems(0).term_length(), 2);
  const auto& values = request.problems(0).values().f64().values();
  ASSERT_EQ(values.size(), 2000);
  EXPECT_EQ(values[3], PoissonBinomialP(1));
  EXPECT_EQ(values[2], 1 - PoissonBinomialP(1));
  EXPECT_EQ(ItemCount(request), 1001);
}

TEST(LoadRequestsTest, RejectsNonPositiveSizesNamingTheFlag) {
  LoadShape shape;
  shape.categories = 0;
  absl::StatusOr<sampler::v1::SampleCategoricalRequest> request =
      MakeCategoricalLoad(shape);
  ASSERT_FALSE(request.ok());
  EXPECT_NE(request.status().message().find("--categories"), std::string::npos);
}

TEST(LoadRequestsTest, SameInputsEveryRun) {
  const LoadShape shape;
  EXPECT_EQ(MakeCategoricalLoad(shape)->SerializeAsString(),
            MakeCategoricalLoad(shape)->SerializeAsString());
}

TEST(LoadRequestsTest, ParsesRpcKinds) {
  EXPECT_EQ(*ParseRpcKind("boards"), RpcKind::kBoards);
  EXPECT_EQ(RpcKindName(*ParseRpcKind("gamma")), "gamma");
  EXPECT_FALSE(ParseRpcKind("bogus").ok());
}

// --------------------------------------------------------- JSON writer --

TEST(JsonObjectTest, KeepsKeyOrderAndEscapes) {
  JsonObject inner;
  inner.Number("n", 3);
  JsonObject object;
  object.String("z", "a\"b\\c\n\x01")
      .Number("a", 0.25)
      .Number("big", 1e300)
      .Number("nan", NAN)
      .Null("none")
      .Object("inner", std::move(inner))
      .Object("empty", JsonObject());
  EXPECT_EQ(object.Render(),
            "{\n"
            "  \"z\": \"a\\\"b\\\\c\\n\\u0001\",\n"
            "  \"a\": 0.25,\n"
            "  \"big\": 1e+300,\n"
            "  \"nan\": null,\n"
            "  \"none\": null,\n"
            "  \"inner\": {\n"
            "    \"n\": 3\n"
            "  },\n"
            "  \"empty\": {}\n"
            "}");
}

// ------------------------------------------------------ loadgen report --

TEST(LoadReportTest, JsonHoldsThroughputErrorsAndPercentiles) {
  LoadConfig config;
  config.target = "localhost:1";
  config.rpc = "gamma";
  config.mode = "concurrency";
  config.concurrency = 8;
  config.items_per_request = 256;
  config.item_unit = "samples";
  config.parameters = {{"gamma_samples", "256"}};
  LoadResult result;
  result.elapsed_s = 2.0;
  result.sent = 12;
  result.ok = 10;
  result.errors["DEADLINE_EXCEEDED"] = 2;
  result.first_error_message["DEADLINE_EXCEEDED"] = "late \"quoted\"";
  for (int64_t i = 1; i <= 10; ++i)
    result.latencies_ns.push_back(i * 1'000'000);

  const std::string json = FormatLoadReportJson(config, result);
  google::protobuf::Struct report;
  ASSERT_TRUE(JsonToMessage(json, &report).ok()) << json;
  // Keys in a fixed order, so that committed reports diff well.
  EXPECT_LT(json.find("\"rpc\""), json.find("\"latency_ms\""));
  const auto& fields = report.fields();
  EXPECT_EQ(fields.at("rpc").string_value(), "gamma");
  EXPECT_EQ(fields.at("requests_ok").number_value(), 10);
  EXPECT_EQ(fields.at("requests_failed").number_value(), 2);
  EXPECT_EQ(fields.at("requests_per_s").number_value(), 5);
  EXPECT_EQ(fields.at("items_per_s").number_value(), 5 * 256);
  EXPECT_EQ(fields.at("errors")
                .struct_value()
                .fields()
                .at("DEADLINE_EXCEEDED")
                .number_value(),
            2);
  const auto& latency = fields.at("latency_ms").struct_value().fields();
  EXPECT_EQ(latency.at("p50").number_value(), 5);
  EXPECT_EQ(latency.at("p90").number_value(), 9);
  EXPECT_EQ(latency.at("p99").number_value(), 10);
  EXPECT_EQ(latency.at("p99_9").number_value(), 10);
  EXPECT_EQ(latency.at("max").number_value(), 10);

  const std::string text = FormatLoadReport(config, result);
  EXPECT_NE(text.find("DEADLINE_EXCEEDED: 2"), std::string::npos) << text;
  EXPECT_NE(text.find("5.0 requests/s"), std::string::npos) << text;
}

}  // namespace
}  // namespace sampler::client
