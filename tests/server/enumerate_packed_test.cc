// The packed form of an Enumerate problem and repeated terms
// (sampler.proto, EnumerateProblem): a packed problem parses to the same job
// as its explicit twin, a term repeated k times to the same job as k equal
// terms (viewing one copy of the values), malformed packed fields and
// repeat counts are refused naming the field and index, and repeats count
// in full against the limits, so that a tiny request cannot ask for
// unbounded work or memory.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sampler/kernels/enumerate.h"
#include "server/jobs.h"
#include "server/request_limits.h"
#include "server/request_parse.h"
#include "server/response_bind.h"
#include "tests/server/request_test_util.h"

namespace sampler::server {
namespace {

struct Term {
  int64_t offset = 0;
  std::vector<double> values;
};

void SetValues(const std::vector<double>& values, bool f32, v1::Reals* reals) {
  for (double v : values) {
    if (f32) {
      reals->mutable_f32()->add_values(static_cast<float>(v));
    } else {
      reals->mutable_f64()->add_values(v);
    }
  }
}

// The explicit form of `terms`, each repeated `repeats[t]` times by sending
// it that many times.
v1::EnumerateProblem Explicit(const std::vector<Term>& terms,
                              const std::vector<int64_t>& repeats, bool f32) {
  v1::EnumerateProblem problem;
  for (size_t t = 0; t < terms.size(); ++t) {
    const int64_t k = repeats.empty() ? 1 : repeats[t];
    for (int64_t i = 0; i < k; ++i) {
      v1::Pmf* pmf = problem.add_terms();
      pmf->set_offset(terms[t].offset);
      SetValues(terms[t].values, f32, pmf->mutable_probabilities());
    }
  }
  return problem;
}

// The packed form, by lengths or (when all are equally long and
// `term_length`) by term_length, with the repeats field.
v1::EnumerateProblem Packed(const std::vector<Term>& terms,
                            const std::vector<int64_t>& repeats, bool f32,
                            bool term_length) {
  v1::EnumerateProblem problem;
  std::vector<double> values;
  for (const Term& term : terms) {
    values.insert(values.end(), term.values.begin(), term.values.end());
    if (!term_length) problem.add_lengths(term.values.size());
    problem.add_offsets(term.offset);
  }
  if (term_length) problem.set_term_length(terms[0].values.size());
  SetValues(values, f32, problem.mutable_values());
  for (int64_t k : repeats) problem.add_repeats(k);
  return problem;
}

std::vector<Term> RandomTerms(std::mt19937_64& rng, int count, bool equal) {
  std::uniform_int_distribution<int> length(1, 9);
  std::uniform_int_distribution<int64_t> offset(-5, 5);
  std::uniform_real_distribution<double> value(0.0, 1.0);
  const int fixed = length(rng);
  std::vector<Term> terms(count);
  for (Term& term : terms) {
    term.offset = offset(rng);
    term.values.resize(equal ? fixed : length(rng));
    for (double& v : term.values) v = value(rng);
  }
  return terms;
}

v1::EnumerateRequest Request(std::vector<v1::EnumerateProblem> problems,
                             bool f32, bool log_in) {
  v1::EnumerateRequest request;
  request.set_precision(f32 ? v1::PRECISION_FLOAT32 : v1::PRECISION_FLOAT64);
  if (log_in) request.set_input_space(v1::PROBABILITY_SPACE_LOG);
  for (auto& p : problems) *request.add_problems() = std::move(p);
  return request;
}

// The job's problems as plain terms: offsets and values.
template <typename T>
std::vector<std::vector<std::pair<int64_t, std::vector<T>>>> Flatten(
    const EnumerateJob& job) {
  std::vector<std::vector<std::pair<int64_t, std::vector<T>>>> out;
  for (const EnumerateProblem<T>& p :
       std::get<EnumerateWork<T>>(job.work).problems) {
    auto& terms = out.emplace_back();
    EXPECT_EQ(p.offsets.size(), p.terms.size());
    for (size_t t = 0; t < p.terms.size(); ++t) {
      terms.emplace_back(p.offsets[t],
                         std::vector<T>(p.terms[t].begin(), p.terms[t].end()));
    }
  }
  return out;
}

template <typename T>
void ExpectSameJobs(const v1::EnumerateRequest& a,
                    const v1::EnumerateRequest& b) {
  auto job_a = ParseEnumerate(a, RequestLimits());
  auto job_b = ParseEnumerate(b, RequestLimits());
  ASSERT_TRUE(job_a.ok()) << job_a.status();
  ASSERT_TRUE(job_b.ok()) << job_b.status();
  EXPECT_EQ((*job_a)->items, (*job_b)->items);
  EXPECT_EQ(Flatten<T>(**job_a), Flatten<T>(**job_b));
  // And the same answers: the same result shapes, and the kernel's sums.
  v1::EnumerateResponse response_a, response_b;
  BindEnumerate(**job_a, &response_a);
  BindEnumerate(**job_b, &response_b);
  ASSERT_EQ(response_a.results_size(), response_b.results_size());
  const auto& work_a = std::get<EnumerateWork<T>>((*job_a)->work);
  const auto& work_b = std::get<EnumerateWork<T>>((*job_b)->work);
  for (int p = 0; p < response_a.results_size(); ++p) {
    EXPECT_EQ(response_a.results(p).offset(), response_b.results(p).offset());
    auto views = [](const EnumerateProblem<T>& problem) {
      std::vector<kernels::PmfTerm<T>> terms;
      for (size_t t = 0; t < problem.terms.size(); ++t) {
        terms.push_back({problem.offsets[t], problem.terms[t]});
      }
      return terms;
    };
    auto pmf_a =
        kernels::EnumerateCpu<T>(views(work_a.problems[p]), work_a.input_space,
                                 kernels::ProbSpace::kLinear);
    auto pmf_b =
        kernels::EnumerateCpu<T>(views(work_b.problems[p]), work_b.input_space,
                                 kernels::ProbSpace::kLinear);
    ASSERT_TRUE(pmf_a.ok() && pmf_b.ok());
    EXPECT_EQ(pmf_a->values, pmf_b->values);
    EXPECT_EQ(pmf_a->values.size(), work_a.problems[p].out.size());
  }
}

TEST(EnumeratePacked, PackedParsesLikeExplicit) {
  std::mt19937_64 rng(15);
  for (int trial = 0; trial < 40; ++trial) {
    const bool f32 = trial % 2 == 1;
    const bool log_in = trial % 4 >= 2;
    const bool equal = trial % 8 >= 4;
    std::vector<v1::EnumerateProblem> explicit_problems, packed_problems;
    for (int p = 0; p < 3; ++p) {
      std::vector<Term> terms = RandomTerms(rng, 1 + trial % 7, equal);
      if (log_in) {
        for (Term& term : terms) {
          for (double& v : term.values) v = std::log(v);
        }
      }
      explicit_problems.push_back(Explicit(terms, {}, f32));
      packed_problems.push_back(Packed(terms, {}, f32, equal));
    }
    SCOPED_TRACE(trial);
    const auto a = Request(explicit_problems, f32, log_in);
    const auto b = Request(packed_problems, f32, log_in);
    f32 ? ExpectSameJobs<float>(a, b) : ExpectSameJobs<double>(a, b);
  }
}

TEST(EnumeratePacked, RepeatsParseLikeCopiesAndShareValues) {
  std::mt19937_64 rng(16);
  const std::vector<Term> terms = RandomTerms(rng, 3, /*equal=*/false);
  const std::vector<int64_t> repeats = {3, 1, 2};
  // Explicit copies; explicit terms with repeats; packed with repeats.
  const auto copies = Request({Explicit(terms, repeats, false)}, false, false);
  v1::EnumerateProblem explicit_repeated = Explicit(terms, {}, false);
  for (int64_t k : repeats) explicit_repeated.add_repeats(k);
  const auto with_repeats = Request({explicit_repeated}, false, false);
  const auto packed =
      Request({Packed(terms, repeats, false, false)}, false, false);
  ExpectSameJobs<double>(copies, with_repeats);
  ExpectSameJobs<double>(copies, packed);

  // The six terms view three copies of the values, not six.
  auto job = ParseEnumerate(packed, RequestLimits());
  ASSERT_TRUE(job.ok()) << job.status();
  const auto& problem =
      std::get<EnumerateWork<double>>((*job)->work).problems[0];
  ASSERT_EQ(problem.terms.size(), 6u);
  size_t values = 0;
  for (const Term& term : terms) values += term.values.size();
  EXPECT_EQ(problem.values.size(), values);
  EXPECT_EQ(problem.terms[0].data(), problem.terms[2].data());
  EXPECT_EQ(problem.terms[4].data(), problem.terms[5].data());
  EXPECT_NE(problem.terms[3].data(), problem.terms[4].data());
}

TEST(EnumeratePacked, BadPackedProblemsNameFieldAndIndex) {
  const std::string values =
      "values { f64 { values: [0.5, 0.5, 0.25, 0.75] } }";
  const std::string term =
      "terms { probabilities { f64 { values: [0.5, 0.5] } } }";
  const std::vector<BadCase> cases = {
      {"problems { " + term + " " + values + " term_length: 2 }",
       kInvalid,
       {"problems[0]: give terms or the packed form", "not both"}},
      {"problems { " + term + " offsets: [1] }",
       kInvalid,
       {"problems[0]: give terms or the packed form"}},
      {"problems { term_length: 2 }",
       kInvalid,
       {"problems[0].values: missing"}},
      {"problems { values { f64 {} } term_length: 1 }",
       kInvalid,
       {"problems[0].values: at least one value is required"}},
      {"problems { " + values + " }",
       kInvalid,
       {"problems[0].term_length = 0: must be > 0 (or give lengths)"}},
      {"problems { " + values + " term_length: 2 lengths: [2, 2] }",
       kInvalid,
       {"problems[0].term_length = 2: give term_length or lengths, not both"}},
      {"problems { " + values + " term_length: 3 }",
       kInvalid,
       {"problems[0].term_length = 3: does not divide the 4 values"}},
      {"problems { " + values + " term_length: -2 }",
       kInvalid,
       {"problems[0].term_length = -2: must be > 0"}},
      {"problems { " + values + " lengths: [2, 0, 2] }",
       kInvalid,
       {"problems[0].lengths[1] = 0: must be > 0"}},
      {"problems { " + values + " lengths: [1, 2] }",
       kInvalid,
       {"problems[0].lengths: sum to 3 but values has 4 values"}},
      {"problems { " + values + " lengths: [4, 9223372036854775807] }",
       kInvalid,
       {"problems[0].lengths: sum to more than 2^63 - 1"}},
      {"problems { " + values + " term_length: 2 offsets: [1] }",
       kInvalid,
       {"problems[0].offsets: 1 offsets for 2 terms"}},
      {"problems { values { f64 { values: [0.5, 0.5, -1, 0.75] } } "
       "term_length: 2 }",
       kInvalid,
       {"problems[0].values[2] = -1: must be finite and >= 0"}},
      {"problems { values { f64 { values: [0.5, 0.5, 0.2, nan] } } "
       "lengths: [1, 1, 2] }",
       kInvalid,
       {"problems[0].values[3] = nan"}},
      {"problems { " + values +
           " term_length: 2 offsets: [9223372036854775807, 0] }",
       kInvalid,
       {"problems[0].offsets[0] = 9223372036854775807", "overflows int64"}},
      {"precision: PRECISION_FLOAT32 problems { values { f64 { values: [1, "
       "1e300] } } term_length: 2 }",
       kInvalid,
       {"problems[0].values[1] = 1e+300", "overflows float32"}},
      {"problems { " + values + " term_length: 2 repeats: [1] }",
       kInvalid,
       {"problems[0].repeats: 1 counts for 2 terms"}},
      {"problems { " + values + " term_length: 2 repeats: [1, 0] }",
       kInvalid,
       {"problems[0].repeats[1] = 0: must be >= 1"}},
      {"problems { " + term + " repeats: [-3] }",
       kInvalid,
       {"problems[0].repeats[0] = -3: must be >= 1"}},
      // 2^24 repeats of a two-point term: a support of 2^24 + 1 points.
      {"problems { " + term + " repeats: [16777216] }",
       kInvalid,
       {"problems[0].repeats[0] = 16777216",
        "support length reaches 16777217"}},
      {"problems { " + term + " repeats: [9223372036854775807] }",
       kInvalid,
       {"problems[0].repeats[0] = 9223372036854775807", "more than 2^63 - 1"}},
      // Offsets that only overflow once repeated.
      {"problems { terms { offset: 4611686018427387904 probabilities { f64 { "
       "values: [1] } } } repeats: [2] }",
       kInvalid,
       {"problems[0].repeats (expanded): ", "overflows int64"}},
  };
  for (const BadCase& c : cases) {
    ExpectError(
        ParseEnumerate(Text<v1::EnumerateRequest>(c.text), RequestLimits())
            .status(),
        c);
  }
}

// A one-point term repeated 2^62 times adds nothing to the result's support:
// only max_enumerate_terms stops it, before anything is expanded.
TEST(EnumeratePacked, RepeatsCountAgainstTheTermLimit) {
  const auto hostile = Text<v1::EnumerateRequest>(
      "problems { values { f32 { values: [1] } } term_length: 1 repeats: "
      "[4611686018427387904] }");
  const auto start = std::chrono::steady_clock::now();
  ExpectError(
      ParseEnumerate(hostile, RequestLimits()).status(),
      {"",
       kRange,
       {"4611686018427387904 or more terms", "max_enumerate_terms = 4194304"}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

  // Exact: the limit itself is taken, across problems.
  RequestLimits limits;
  limits.max_enumerate_terms = 10;
  const std::string problem =
      "problems { values { f32 { values: [1, 1] } } term_length: 1 repeats: "
      "[2, 3] } ";
  const auto ten = Text<v1::EnumerateRequest>(problem + problem);
  EXPECT_TRUE(ParseEnumerate(ten, limits).ok());
  limits.max_enumerate_terms = 9;
  ExpectError(ParseEnumerate(ten, limits).status(),
              {"", kRange, {"10 or more terms", "max_enumerate_terms = 9"}});
}

TEST(EnumeratePacked, RepeatsCountAgainstTheWorkLimits) {
  RequestLimits limits;
  limits.max_enumerate_pairs = 15;
  // One term of 4 repeated twice: 16 multiply-adds.
  const auto request = Text<v1::EnumerateRequest>(
      "problems { values { f32 { values: [1, 1, 1, 1] } } term_length: 4 "
      "repeats: [2] }");
  ExpectError(ParseEnumerate(request, limits).status(),
              {"", kRange, {"16 multiply-adds", "max_enumerate_pairs = 15"}});
  limits.max_enumerate_pairs = 16;
  auto job = ParseEnumerate(request, limits);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->items, 7);
  // Output elements count the repeats too.
  limits.max_items_per_request = 6;
  ExpectError(ParseEnumerate(request, limits).status(),
              {"", kRange, {"7 output elements", "max_items_per_request = 6"}});
}

// Issue 15: 10^5 two-point terms parse in well under a millisecond packed.
// Timed, not asserted (machines differ), from the wire bytes (what the
// server receives) to the job, packed and explicit; the bound only catches
// a quadratic slip.
TEST(EnumeratePacked, ManyTwoPointTermsParseQuickly) {
  constexpr int kTerms = 100'000;
  std::vector<Term> terms(kTerms);
  for (int i = 0; i < kTerms; ++i) {
    const double p = (i + 0.5) / kTerms;
    terms[i].values = {1 - p, p};
  }
  // About n^2 / 2 = 5e9 multiply-adds: over the default work limit.
  RequestLimits limits;
  limits.max_enumerate_pairs = int64_t{1} << 34;
  for (const bool packed : {true, false}) {
    const std::string wire = Request({packed ? Packed(terms, {}, false, true)
                                             : Explicit(terms, {}, false)},
                                     false, false)
                                 .SerializeAsString();
    double best_parse = 1e9, best_total = 1e9;
    for (int rep = 0; rep < 5; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      v1::EnumerateRequest request;
      ASSERT_TRUE(request.ParseFromString(wire));
      const auto decoded = std::chrono::steady_clock::now();
      auto job = ParseEnumerate(request, limits);
      const auto end = std::chrono::steady_clock::now();
      ASSERT_TRUE(job.ok()) << job.status();
      EXPECT_EQ((*job)->items, kTerms + 1);
      best_parse = std::min(
          best_parse, std::chrono::duration<double>(end - decoded).count());
      best_total = std::min(best_total,
                            std::chrono::duration<double>(end - start).count());
    }
    std::cout << kTerms << " two-point terms, "
              << (packed ? "packed" : "explicit") << ": ParseEnumerate "
              << best_parse * 1e3 << " ms, with protobuf decoding "
              << best_total * 1e3 << " ms (best of 5)\n";
    EXPECT_LT(best_parse, 0.5);
  }
}

}  // namespace
}  // namespace sampler::server
