// Tests of the helpers both client tools share: argument parsing, statistics
// and reals. No server needed.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "client/common/args.h"
#include "client/common/parse.h"
#include "client/common/reals.h"
#include "client/common/stats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, test_terms, "", "joined by PrepareArgs in the tests");
ABSL_FLAG(int64_t, test_count, 0, "an integer flag for the tests");
ABSL_FLAG(bool, test_switch, false, "a boolean flag for the tests");

namespace sampler::client {
namespace {

using ::testing::ElementsAre;

// ------------------------------------------------------------- parsing --

TEST(ParseDoubleListTest, ReadsValuesWithSpacesAndInfinities) {
  absl::StatusOr<std::vector<double>> values =
      ParseDoubleList(" 0.5, 1e-3 ,-inf,2");
  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->size(), 4u);
  EXPECT_EQ((*values)[0], 0.5);
  EXPECT_EQ((*values)[1], 1e-3);
  EXPECT_TRUE(std::isinf((*values)[2]) && (*values)[2] < 0);
  EXPECT_EQ((*values)[3], 2.0);
}

TEST(ParseDoubleListTest, NamesTheBadElement) {
  absl::StatusOr<std::vector<double>> values = ParseDoubleList("1,x,3");
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(values.status().message().find("element 1"), std::string::npos)
      << values.status();
  EXPECT_FALSE(ParseDoubleList("1,,3").ok());
  EXPECT_FALSE(ParseDoubleList("").ok());
  EXPECT_FALSE(ParseDoubleList("  ").ok());
}

TEST(ParseInt64ListTest, ReadsIntegersAndRejectsFractions) {
  absl::StatusOr<std::vector<int64_t>> values = ParseInt64List("10, 0,-3");
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, (std::vector<int64_t>{10, 0, -3}));
  EXPECT_FALSE(ParseInt64List("1.5").ok());
}

TEST(ParsePmfTermTest, ReadsOffsetAndProbabilities) {
  absl::StatusOr<PmfTerm> term = ParsePmfTerm("-2:0.25,0.75");
  ASSERT_TRUE(term.ok()) << term.status();
  EXPECT_EQ(term->offset, -2);
  EXPECT_EQ(term->probabilities, (std::vector<double>{0.25, 0.75}));
}

TEST(ParsePmfTermTest, OffsetDefaultsToZero) {
  absl::StatusOr<PmfTerm> term = ParsePmfTerm("0.5,0.5");
  ASSERT_TRUE(term.ok()) << term.status();
  EXPECT_EQ(term->offset, 0);
  EXPECT_EQ(term->probabilities.size(), 2u);
}

TEST(ParsePmfTermTest, RejectsBadOffsetAndValues) {
  EXPECT_FALSE(ParsePmfTerm("a:0.5").ok());
  EXPECT_FALSE(ParsePmfTerm("1.5:0.5").ok());
  EXPECT_FALSE(ParsePmfTerm("1:").ok());
  EXPECT_FALSE(ParsePmfTerm("1:0.5,z").ok());
}

TEST(ParsePmfTermsTest, SplitsTermsOnSemicolons) {
  absl::StatusOr<std::vector<PmfTerm>> terms =
      ParsePmfTerms("0:0.5,0.5;3:1; -1:0.1,0.2,0.7");
  ASSERT_TRUE(terms.ok()) << terms.status();
  ASSERT_EQ(terms->size(), 3u);
  EXPECT_EQ((*terms)[1].offset, 3);
  EXPECT_EQ((*terms)[1].probabilities, (std::vector<double>{1.0}));
  EXPECT_EQ((*terms)[2].offset, -1);
  EXPECT_EQ((*terms)[2].probabilities.size(), 3u);
}

TEST(ParseMatrixTest, ReadsRowsOfEqualLength) {
  absl::StatusOr<std::vector<std::vector<double>>> rows =
      ParseMatrix("1,2,3; 4,5,6");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1], (std::vector<double>{4, 5, 6}));
}

TEST(ParseMatrixTest, RejectsRaggedRows) {
  absl::StatusOr<std::vector<std::vector<double>>> rows =
      ParseMatrix("1,2,3;4,5");
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("row 1"), std::string::npos);
}

TEST(ParsePrecisionTest, KnowsBothSpellings) {
  EXPECT_EQ(*ParsePrecision("f32"), sampler::v1::PRECISION_FLOAT32);
  EXPECT_EQ(*ParsePrecision("float32"), sampler::v1::PRECISION_FLOAT32);
  EXPECT_EQ(*ParsePrecision("F64"), sampler::v1::PRECISION_FLOAT64);
  EXPECT_EQ(*ParsePrecision(""), sampler::v1::PRECISION_UNSPECIFIED);
  EXPECT_FALSE(ParsePrecision("f16").ok());
}

// --------------------------------------------------------- PrepareArgs --

constexpr absl::string_view kJoined[] = {"test_terms"};

absl::StatusOr<std::vector<std::string>> Prepare(
    std::vector<std::string> args) {
  return PrepareArgs(args, kJoined, ';');
}

TEST(PrepareArgsTest, JoinsRepeatedFlagsAtTheFirstPlace) {
  absl::StatusOr<std::vector<std::string>> args =
      Prepare({"prog", "cmd", "--test_terms", "0:1", "--test_count=3",
               "--test_terms=-1:0.5,0.5"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(*args, (std::vector<std::string>{"prog", "cmd",
                                             "--test_terms=0:1;-1:0.5,0.5",
                                             "--test_count=3"}));
}

TEST(PrepareArgsTest, TakesValuesStartingWithADashFromTheNextArgument) {
  absl::StatusOr<std::vector<std::string>> args = Prepare(
      {"prog", "--test_count", "-5", "-test_switch", "--notest_switch"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(*args,
            (std::vector<std::string>{"prog", "--test_count=-5", "-test_switch",
                                      "--notest_switch"}));
}

TEST(PrepareArgsTest, ReportsUnknownFlagsAndBadValues) {
  absl::StatusOr<std::vector<std::string>> unknown =
      Prepare({"prog", "--no_such_flag=1"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no_such_flag"), std::string::npos);
  EXPECT_FALSE(Prepare({"prog", "--test_count=abc"}).ok());
  EXPECT_FALSE(Prepare({"prog", "--test_count"}).ok());
  EXPECT_FALSE(Prepare({"prog", "--notest_switch=1"}).ok());
}

TEST(PrepareArgsTest, PassesHelpAndPositionalsAfterDoubleDash) {
  absl::StatusOr<std::vector<std::string>> args =
      Prepare({"prog", "--help", "--", "--not_a_flag"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(*args,
            (std::vector<std::string>{"prog", "--help", "--", "--not_a_flag"}));
}

// ---------------------------------------------------------- statistics --

TEST(NearestRankIndexTest, IsExactAtTheBoundaries) {
  EXPECT_EQ(NearestRankIndex(1000, 99.9), 998);
  EXPECT_EQ(NearestRankIndex(1000, 99), 989);
  EXPECT_EQ(NearestRankIndex(1000, 50), 499);
  EXPECT_EQ(NearestRankIndex(10, 90), 8);
  EXPECT_EQ(NearestRankIndex(10, 91), 9);
  EXPECT_EQ(NearestRankIndex(1, 50), 0);
  EXPECT_EQ(NearestRankIndex(7, 100), 6);
  EXPECT_EQ(NearestRankIndex(7, 0), 0);
}

TEST(LatencyPercentilesTest, ComputesExactPercentilesOfAllValues) {
  std::vector<int64_t> latencies;
  for (int64_t i = 1000; i >= 1; --i) latencies.push_back(i);  // unsorted
  const LatencyPercentiles p = ComputeLatencyPercentiles(latencies);
  EXPECT_EQ(p.count, 1000);
  EXPECT_DOUBLE_EQ(p.mean_ns, 500.5);
  EXPECT_EQ(p.p50_ns, 500);
  EXPECT_EQ(p.p90_ns, 900);
  EXPECT_EQ(p.p99_ns, 990);
  EXPECT_EQ(p.p999_ns, 999);
  EXPECT_EQ(p.max_ns, 1000);
}

TEST(LatencyPercentilesTest, EmptyGivesZeros) {
  const LatencyPercentiles p = ComputeLatencyPercentiles({});
  EXPECT_EQ(p.count, 0);
  EXPECT_EQ(p.max_ns, 0);
}

TEST(InterpolatedQuantileTest, InterpolatesBetweenOrderStatistics) {
  const std::vector<double> sorted = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(InterpolatedQuantile(sorted, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(InterpolatedQuantile(sorted, 0), 1);
  EXPECT_DOUBLE_EQ(InterpolatedQuantile(sorted, 1), 4);
  EXPECT_DOUBLE_EQ(InterpolatedQuantile(sorted, 0.25), 1.75);
  EXPECT_TRUE(std::isnan(InterpolatedQuantile({}, 0.5)));
}

TEST(SampleSummaryTest, ExactWhileTheReservoirHoldsEverything) {
  SampleSummary summary(/*reservoir_capacity=*/10);
  for (double value : {4.0, 1.0, 3.0, 2.0, 5.0}) summary.Add(value);
  summary.Add(INFINITY);
  EXPECT_EQ(summary.count(), 5);
  EXPECT_EQ(summary.non_finite(), 1);
  EXPECT_DOUBLE_EQ(summary.mean(), 3.0);
  EXPECT_DOUBLE_EQ(summary.stddev(), std::sqrt(2.5));
  EXPECT_EQ(summary.min(), 1.0);
  EXPECT_EQ(summary.max(), 5.0);
  EXPECT_TRUE(summary.quantiles_exact());
  EXPECT_THAT(summary.Quantiles({0.0, 0.5, 1.0}), ElementsAre(1.0, 3.0, 5.0));
}

TEST(SampleSummaryTest, BoundedMemoryBeyondTheReservoir) {
  constexpr int64_t kValues = 200'000;
  SampleSummary summary(/*reservoir_capacity=*/4096);
  for (int64_t i = 0; i < kValues; ++i) summary.Add(static_cast<double>(i));
  EXPECT_EQ(summary.count(), kValues);
  EXPECT_EQ(summary.reservoir_size(), 4096);
  EXPECT_FALSE(summary.quantiles_exact());
  // Moments and extremes stay exact.
  EXPECT_DOUBLE_EQ(summary.mean(), (kValues - 1) / 2.0);
  EXPECT_EQ(summary.min(), 0);
  EXPECT_EQ(summary.max(), kValues - 1);
  // A uniform subset of 4096 puts the median within a few percent (the
  // standard error is about 0.8% of the range; this allows 5%).
  const double median = summary.Quantiles({0.5})[0];
  EXPECT_NEAR(median, kValues / 2.0, 0.05 * kValues);
}

// --------------------------------------------------------------- reals --

TEST(RealsTest, SetsTheRepresentationOfThePrecision) {
  sampler::v1::Reals reals;
  SetReals({0.1, 2}, sampler::v1::PRECISION_FLOAT32, &reals);
  ASSERT_TRUE(reals.has_f32());
  EXPECT_EQ(reals.f32().values(0), 0.1f);
  SetReals({0.1, 2, 3}, sampler::v1::PRECISION_UNSPECIFIED, &reals);
  ASSERT_TRUE(reals.has_f64());
  EXPECT_EQ(RealsSize(reals), 3);
}

TEST(RealsTest, AppendKeepsTheFirstRepresentation) {
  sampler::v1::Reals total, f32_chunk, f64_chunk;
  SetReals({1, 2}, sampler::v1::PRECISION_FLOAT32, &f32_chunk);
  SetReals({3}, sampler::v1::PRECISION_FLOAT64, &f64_chunk);
  AppendReals(f32_chunk, &total);
  AppendReals(f64_chunk, &total);
  ASSERT_TRUE(total.has_f32());
  std::vector<double> values;
  RealsToDoubles(total, &values);
  EXPECT_EQ(values, (std::vector<double>{1, 2, 3}));
}

TEST(RealsTest, FormatsTheShortestTextThatReadsBack) {
  EXPECT_EQ(FormatReal(0.1f, /*single_precision=*/true), "0.1");
  EXPECT_EQ(FormatReal(0.1, /*single_precision=*/false), "0.1");
  EXPECT_EQ(FormatReal(1.0 / 3, false), "0.3333333333333333");
}

}  // namespace
}  // namespace sampler::client
