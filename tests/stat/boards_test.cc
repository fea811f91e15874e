// Tests of the CPU board sampler: uniformity over every position of small
// boards, per-site marginals, exact counts, chunking, the bit-level contract
// of docs/randomness.md ("Boards") and validation. Seeds are fixed, so every
// run sees the same bits.
#include "sampler/kernels/boards.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "sampler/kernels/philox.h"
#include "tests/stat/stat_util.h"

namespace sampler::kernels {
namespace {

// Whether `status` is InvalidArgument and its message contains `part`.
::testing::AssertionResult InvalidArgumentWith(const absl::Status& status,
                                               const std::string& part) {
  if (status.code() != absl::StatusCode::kInvalidArgument ||
      std::string(status.message()).find(part) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "got " << status << ", want InvalidArgument containing \"" << part
           << "\"";
  }
  return ::testing::AssertionSuccess();
}

int Sites(const BoardSpec& spec) { return spec.rows * spec.cols; }

int Colours(const BoardSpec& spec) {
  return static_cast<int>(spec.stones.size());
}

// Words of one position in SampleBoardsCpu's output.
size_t WordsPerPosition(const BoardSpec& spec) {
  return static_cast<size_t>(Colours(spec)) * BoardWords64(spec);
}

std::vector<uint64_t> Sample(const BoardSpec& spec, uint64_t seed,
                             uint64_t first_position, int64_t count) {
  std::vector<uint64_t> out(count * WordsPerPosition(spec));
  const absl::Status status =
      SampleBoardsCpu(spec, seed, first_position, count, absl::MakeSpan(out));
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

bool Bit(const uint64_t* words, int site) {
  return (words[site / 64] >> (site % 64)) & 1;
}

// One character per site: '.' empty, 'a' + c for colour c, '!' for a site
// claimed by two colours (which no enumerated position contains).
std::string PositionString(const BoardSpec& spec, const uint64_t* position) {
  const int words64 = BoardWords64(spec);
  std::string s(Sites(spec), '.');
  for (int c = 0; c < Colours(spec); ++c) {
    for (int site = 0; site < Sites(spec); ++site) {
      if (!Bit(position + c * words64, site)) continue;
      s[site] = s[site] == '.' ? static_cast<char>('a' + c) : '!';
    }
  }
  return s;
}

// Every arrangement of `left[c]` stones of each colour on the sites not yet
// in `prefix`, appended to `all`.
void EnumeratePositions(int sites, std::vector<int32_t>& left,
                        std::string& prefix, std::vector<std::string>& all) {
  const int remaining_sites = sites - static_cast<int>(prefix.size());
  int remaining_stones = 0;
  for (int32_t k : left) remaining_stones += k;
  if (remaining_stones > remaining_sites) return;
  if (remaining_sites == 0) {
    all.push_back(prefix);
    return;
  }
  prefix.push_back('.');
  EnumeratePositions(sites, left, prefix, all);
  prefix.pop_back();
  for (size_t c = 0; c < left.size(); ++c) {
    if (left[c] == 0) continue;
    --left[c];
    prefix.push_back(static_cast<char>('a' + c));
    EnumeratePositions(sites, left, prefix, all);
    prefix.pop_back();
    ++left[c];
  }
}

// Chi-square of the frequency of every possible position against uniform.
void ExpectUniformOverPositions(const BoardSpec& spec, uint64_t seed,
                                int64_t expected_outcomes, int per_cell) {
  std::vector<std::string> outcomes;
  std::vector<int32_t> left = spec.stones;
  std::string prefix;
  EnumeratePositions(Sites(spec), left, prefix, outcomes);
  ASSERT_EQ(static_cast<int64_t>(outcomes.size()), expected_outcomes);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < outcomes.size(); ++i) index[outcomes[i]] = i;

  const int64_t n = expected_outcomes * per_cell;
  const std::vector<uint64_t> out = Sample(spec, seed, 0, n);
  std::vector<int64_t> observed(outcomes.size(), 0);
  int64_t impossible = 0;
  for (int64_t p = 0; p < n; ++p) {
    const auto it =
        index.find(PositionString(spec, &out[p * WordsPerPosition(spec)]));
    if (it == index.end()) {
      ++impossible;
    } else {
      ++observed[it->second];
    }
  }
  EXPECT_EQ(impossible, 0);
  const std::vector<double> expected(outcomes.size(),
                                     static_cast<double>(per_cell));
  const testing::ChiSquareResult r = testing::ChiSquareTest(observed, expected);
  EXPECT_EQ(r.degrees_of_freedom, expected_outcomes - 1);
  EXPECT_GT(r.p_value, 1e-4)
      << "chi2 = " << r.statistic << " on " << r.degrees_of_freedom << " dof";
}

TEST(BoardsUniformity, TwoByFourThreeStones) {
  ExpectUniformOverPositions({2, 4, {3}}, 11, 56, 200);
}

TEST(BoardsUniformity, ThreeByThreeTwoBlackTwoWhite) {
  ExpectUniformOverPositions({3, 3, {2, 2}}, 12, 756, 120);
}

TEST(BoardsUniformity, TwoByTwoThreeColours) {
  ExpectUniformOverPositions({2, 2, {1, 1, 1}}, 13, 24, 400);
}

// 34 sites span two selection words: the step's decision must use the sum
// of both words' popcounts.
TEST(BoardsUniformity, OneByThirtyFourAcrossWordBoundary) {
  ExpectUniformOverPositions({1, 34, {1, 1}}, 14, 34 * 33, 100);
}

// Each colour's stones form a uniform k-subset, so every site holds colour c
// with probability k_c / N. Per-site counts over n positions are a sum of
// hypergeometric indicators: the plain chi-square statistic against n k / N
// is (1 - k/N) N / (N - 1) times a chi-square on N - 1 degrees of freedom
// (stones within a position are drawn without replacement), so it is scaled
// back before taking the p-value.
TEST(BoardsMarginals, NineteenByNineteenPerSite) {
  const BoardSpec spec{19, 19, {100, 80}};
  const int sites = Sites(spec);
  const int64_t n = 20000;
  const std::vector<uint64_t> out = Sample(spec, 21, 0, n);

  // Bonferroni over every (colour, site) pair: the family-wise chance that
  // any |z| exceeds the bound is at most 1e-4 under the null.
  const double family_alpha = 1e-4;
  const double z_bound = boost::math::quantile(boost::math::complement(
      boost::math::normal(0, 1), family_alpha / (2.0 * sites * Colours(spec))));

  for (int c = 0; c < Colours(spec); ++c) {
    std::vector<int64_t> observed(sites, 0);
    for (int64_t pos = 0; pos < n; ++pos) {
      const uint64_t* words =
          &out[pos * WordsPerPosition(spec) + c * BoardWords64(spec)];
      for (int s = 0; s < sites; ++s) observed[s] += Bit(words, s);
    }
    const double p = static_cast<double>(spec.stones[c]) / sites;
    const std::vector<double> expected(sites, n * p);
    const testing::ChiSquareResult raw =
        testing::ChiSquareTest(observed, expected);
    ASSERT_EQ(raw.degrees_of_freedom, sites - 1);
    const double scale = (1 - p) * sites / (sites - 1.0);
    const double p_value = boost::math::cdf(boost::math::complement(
        boost::math::chi_squared(sites - 1), raw.statistic / scale));
    EXPECT_GT(p_value, 1e-4)
        << "colour " << c << ": chi2 = " << raw.statistic / scale;

    double max_abs_z = 0;
    for (int s = 0; s < sites; ++s) {
      const double z = (observed[s] - n * p) / std::sqrt(n * p * (1 - p));
      max_abs_z = std::max(max_abs_z, std::abs(z));
    }
    EXPECT_LT(max_abs_z, z_bound) << "colour " << c;
  }
}

// Exact counts, disjoint colours and a clean tail hold for every position,
// not just on average.
TEST(BoardsInvariants, ExactCountsDisjointColoursNoBitsPastBoard) {
  const std::vector<BoardSpec> specs = {
      {1, 1, {0}},
      {1, 1, {1}},
      {1, 1, {0, 1}},
      {1, 1, {1, 0}},
      {1, 64, {0}},
      {1, 64, {1}},
      {1, 64, {63}},
      {1, 64, {64}},
      {1, 64, {32, 32}},
      {64, 1, {1}},
      {64, 1, {63}},
      {64, 1, {64}},
      {64, 1, {20, 0, 44}},
      {1, 65, {0, 1, 64}},
      {1, 65, {65}},
      {1, 65, {64}},
      {1, 65, {30, 35}},
      {7, 9, {1}},
      {7, 9, {62}},
      {7, 9, {63}},
      {7, 9, {20, 20, 23}},
      {19, 19, {1}},
      {19, 19, {360}},
      {19, 19, {361}},
      {19, 19, {181, 180}},
      {19, 19, {100, 80}},
      {32, 32, {1}},
      {32, 32, {1023}},
      {32, 32, {1024}},
      {32, 32, {256, 256, 256, 256}},
      {128, 128, {0}},
      {128, 128, {1}},
      {128, 128, {16383}},
      {128, 128, {16384}},
      {128, 128, {8192, 8192}},
      {128, 128, std::vector<int32_t>(16, 1024)},
  };
  for (const BoardSpec& spec : specs) {
    const int sites = Sites(spec);
    const int words64 = BoardWords64(spec);
    int64_t total = 0;
    for (int32_t k : spec.stones) total += k;
    const int64_t n = sites > 4096 ? 8 : 200;
    const std::vector<uint64_t> out = Sample(spec, 31, 1000, n);
    for (int64_t pos = 0; pos < n; ++pos) {
      SCOPED_TRACE(::testing::Message()
                   << spec.rows << "x" << spec.cols << " position " << pos);
      std::vector<uint64_t> all(words64, 0);
      for (int c = 0; c < Colours(spec); ++c) {
        const uint64_t* words =
            &out[pos * WordsPerPosition(spec) + c * words64];
        int count = 0;
        for (int w = 0; w < words64; ++w) {
          count += __builtin_popcountll(words[w]);
          EXPECT_EQ(all[w] & words[w], 0u) << "colour " << c << " word " << w;
          all[w] |= words[w];
        }
        EXPECT_EQ(count, spec.stones[c]) << "colour " << c;
      }
      // Bits past the board in the last word must be clear.
      const int used = sites - 64 * (words64 - 1);
      if (used < 64) {
        EXPECT_EQ(all[words64 - 1] >> used, 0u);
      }
      if (total == sites) {
        for (int w = 0; w + 1 < words64; ++w) EXPECT_EQ(all[w], ~uint64_t{0});
      }
    }
  }
}

TEST(BoardsReproducibility, ChunksEqualOneCall) {
  const BoardSpec spec{7, 9, {20, 20, 23}};
  const size_t per = WordsPerPosition(spec);
  const std::vector<uint64_t> whole = Sample(spec, 41, 0, 100);
  std::vector<uint64_t> pieces;
  const std::vector<std::pair<uint64_t, int64_t>> chunks = {
      {0, 13}, {13, 0}, {13, 51}, {64, 1}, {65, 35}};
  for (const auto& [first, count] : chunks) {
    const std::vector<uint64_t> piece = Sample(spec, 41, first, count);
    pieces.insert(pieces.end(), piece.begin(), piece.end());
  }
  EXPECT_EQ(pieces, whole);
  EXPECT_EQ(Sample(spec, 41, 0, 100), whole);
  EXPECT_NE(Sample(spec, 42, 0, 100), whole);
  // A single position taken alone equals its slice of the long call.
  const std::vector<uint64_t> one = Sample(spec, 41, 77, 1);
  EXPECT_TRUE(std::equal(one.begin(), one.end(), whole.begin() + 77 * per));
}

// Position indices fill both counter words: chunks across 2^32 agree too,
// and positions 2^32 + i differ from positions i.
TEST(BoardsReproducibility, ChunksAcrossHighCounterWord) {
  const BoardSpec spec{12, 12, {30, 40}};
  const uint64_t base = (uint64_t{1} << 32) - 5;
  const std::vector<uint64_t> whole = Sample(spec, 43, base, 10);
  std::vector<uint64_t> pieces = Sample(spec, 43, base, 5);
  const std::vector<uint64_t> rest = Sample(spec, 43, base + 5, 5);
  pieces.insert(pieces.end(), rest.begin(), rest.end());
  EXPECT_EQ(pieces, whole);
  EXPECT_NE(Sample(spec, 43, 0, 5), rest);
}

// docs/randomness.md, "Boards", re-implemented step by step with one bool per
// site (the production code works on packed words and shares nothing with
// this beyond the Philox wrapper).
std::vector<uint64_t> ReferencePosition(const BoardSpec& spec, uint64_t seed,
                                        uint64_t item) {
  const int sites = spec.rows * spec.cols;
  const int words32 = (sites + 31) / 32;      // W
  const uint32_t blocks = (words32 + 3) / 4;  // B
  const int words64 = (sites + 63) / 64;
  std::vector<uint64_t> out(spec.stones.size() * words64, 0);
  std::vector<bool> taken(sites, false);
  uint32_t t = 0;  // One step counter for the whole position.
  for (size_t c = 0; c < spec.stones.size(); ++c) {
    const int k = spec.stones[c];
    std::vector<bool> candidate(sites), chosen(sites, false);
    for (int s = 0; s < sites; ++s) candidate[s] = !taken[s];
    int n = 0;
    while (n != k) {
      std::vector<bool> selected(sites, false);
      int m = 0;
      for (int s = 0; s < sites; ++s) {
        const int j = s / 32;  // Selection word of site s, bit s mod 32.
        const PhiloxBlock block =
            Philox(seed, KindTag::kBoards, item, t * blocks + j / 4);
        const bool random_bit = (block.v[j % 4] >> (s % 32)) & 1u;
        selected[s] = candidate[s] && random_bit;
        m += selected[s] ? 1 : 0;
      }
      if (n + m <= k) {
        for (int s = 0; s < sites; ++s) {
          if (selected[s]) {
            chosen[s] = true;
            candidate[s] = false;
          }
        }
        n += m;
      } else {
        candidate = selected;
      }
      ++t;
    }
    for (int s = 0; s < sites; ++s) {
      if (!chosen[s]) continue;
      taken[s] = true;
      out[c * words64 + s / 64] |= uint64_t{1} << (s % 64);
    }
  }
  return out;
}

void ExpectMatchesReference(const BoardSpec& spec, uint64_t seed,
                            uint64_t first_position, int64_t count) {
  const std::vector<uint64_t> out = Sample(spec, seed, first_position, count);
  const size_t per = WordsPerPosition(spec);
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<uint64_t> expected =
        ReferencePosition(spec, seed, first_position + i);
    const std::vector<uint64_t> got(out.begin() + i * per,
                                    out.begin() + (i + 1) * per);
    ASSERT_EQ(got, expected)
        << spec.rows << "x" << spec.cols << " position " << first_position + i;
  }
}

TEST(BoardsContract, OneByFiveTwoStones) {
  ExpectMatchesReference({1, 5, {2}}, 51, 0, 300);
}

// W = 5 selection words, so B = 2 blocks per step, the second block only
// partly used; two colours share the step counter.
TEST(BoardsContract, TwelveByTwelveTwoColours) {
  ExpectMatchesReference({12, 12, {30, 40}}, 52, 0, 300);
}

TEST(BoardsContract, NineteenByNineteenThreeColoursHighItems) {
  ExpectMatchesReference({19, 19, {100, 80, 0, 1}}, 0xfedcba9876543210ull,
                         (uint64_t{7} << 40) + 3, 100);
}

TEST(BoardsContract, LargestBoard) {
  ExpectMatchesReference({128, 128, {5000, 1, 11383}}, 54, 0, 3);
}

TEST(BoardsWords, Sizes) {
  EXPECT_EQ(BoardWords64({1, 1, {0}}), 1);
  EXPECT_EQ(BoardWords64({1, 64, {0}}), 1);
  EXPECT_EQ(BoardWords64({1, 65, {0}}), 2);
  EXPECT_EQ(BoardWords64({19, 19, {0}}), 6);
  EXPECT_EQ(BoardWords64({128, 128, {0}}), 256);
  EXPECT_EQ(BoardWords64({0, 5, {0}}), 0);
  EXPECT_EQ(BoardWords64({200, 100, {0}}), 0);
}

TEST(BoardsValidation, BadSpecsNameTheField) {
  const int32_t max32 = std::numeric_limits<int32_t>::max();
  struct Case {
    BoardSpec spec;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{0, 5, {1}}, "rows = 0: must be between 1 and 16384"},
      {{-3, 5, {1}}, "rows = -3"},
      {{16385, 1, {1}}, "rows = 16385"},
      {{5, 0, {1}}, "cols = 0: must be between 1 and 16384"},
      {{5, -1, {1}}, "cols = -1"},
      {{max32, max32, {1}}, "rows = 2147483647"},
      {{1, max32, {1}}, "cols = 2147483647"},
      {{200, 100, {1}}, "rows x cols = 200x100 = 20000 sites"},
      {{129, 128, {1}}, "rows x cols"},
      {{3, 3, {}}, "stones: must give at least one colour"},
      {{3, 3, std::vector<int32_t>(17, 0)}, "stones: 17 colours"},
      {{3, 3, {1, -2}}, "stones[1] = -2: must be >= 0"},
      {{3, 3, {-1}}, "stones[0] = -1"},
      {{3, 3, {5, 5}}, "stones: total 10 exceeds the 9 sites of a 3x3 board"},
      {{1, 1, {1, 1}}, "stones: total 2"},
      {{128, 128, std::vector<int32_t>(16, max32)},
       "stones: total 34359738352"},
  };
  for (const Case& c : cases) {
    const absl::Status status = ValidateBoardSpec(c.spec);
    EXPECT_TRUE(InvalidArgumentWith(status, c.message));
    // The sampler rejects it the same way, even with no room to write.
    std::vector<uint64_t> out(4, 0);
    const absl::Status sample_status =
        SampleBoardsCpu(c.spec, 1, 0, 1, absl::MakeSpan(out));
    EXPECT_EQ(sample_status, status);
    EXPECT_EQ(out, std::vector<uint64_t>(4, 0));
  }
  EXPECT_TRUE(ValidateBoardSpec({1, 1, {0}}).ok());
  EXPECT_TRUE(ValidateBoardSpec({128, 128, {16384}}).ok());
  EXPECT_TRUE(ValidateBoardSpec({16384, 1, {1}}).ok());
  EXPECT_TRUE(
      ValidateBoardSpec({1, 16384, std::vector<int32_t>(16, 1024)}).ok());
}

TEST(BoardsValidation, BadCountsAndSizes) {
  const BoardSpec spec{3, 3, {2, 2}};  // 2 colours x 1 word per position.
  const uint64_t poison = 0x5a5a5a5a5a5a5a5aull;
  std::vector<uint64_t> out(10, poison);

  absl::Status status = SampleBoardsCpu(spec, 1, 0, -1, absl::MakeSpan(out));
  EXPECT_TRUE(InvalidArgumentWith(status, "count = -1"));

  for (int64_t count : {4, 6, 0}) {
    status = SampleBoardsCpu(spec, 1, 0, count, absl::MakeSpan(out));
    EXPECT_TRUE(InvalidArgumentWith(status, "out: size 10")) << count;
  }
  // Odd size: not a whole number of positions.
  status = SampleBoardsCpu(spec, 1, 0, 4, absl::MakeSpan(out).subspan(0, 9));
  EXPECT_TRUE(InvalidArgumentWith(status, "out: size 9"));
  // A count whose output size would overflow 64 bits.
  status = SampleBoardsCpu(spec, 1, 0, std::numeric_limits<int64_t>::max(),
                           absl::MakeSpan(out));
  EXPECT_TRUE(InvalidArgumentWith(status, "out: size"));
  // Position indices past 2^64 - 1.
  status = SampleBoardsCpu(spec, 1, std::numeric_limits<uint64_t>::max() - 3, 5,
                           absl::MakeSpan(out));
  EXPECT_TRUE(InvalidArgumentWith(status, "first_position"));
  EXPECT_EQ(out, std::vector<uint64_t>(10, poison));

  // The boundary cases are fine: the last index 2^64 - 1, and nothing at all.
  EXPECT_TRUE(SampleBoardsCpu(spec, 1, std::numeric_limits<uint64_t>::max() - 4,
                              5, absl::MakeSpan(out))
                  .ok());
  EXPECT_TRUE(SampleBoardsCpu(spec, 1, 0, 0, absl::Span<uint64_t>()).ok());
}

}  // namespace
}  // namespace sampler::kernels
