// Tests of the categorical sampler's CPU backend: the butterfly search of
// docs/randomness.md ("Categorical") and the sequential reference. Covers the
// distribution (chi-square), zero weights, agreement of the two methods, an
// independent re-implementation of the butterfly arithmetic, the Philox
// layout, chunking, and validation. Every input comes from fixed seeds.
#include "sampler/kernels/categorical.h"

#include <Random123/philox.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/categorical_core.h"
#include "tests/stat/stat_util.h"

namespace sampler::kernels {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ------------------------------------------------------------- helpers ----

// Test inputs from a fixed-seed engine, converted by hand so that they do not
// depend on the standard library's distributions.
class InputRng {
 public:
  explicit InputRng(uint64_t seed) : engine_(seed) {}
  double Unit() {  // [0, 1)
    return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  }
  int64_t Below(int64_t n) {
    return static_cast<int64_t>(Unit() * static_cast<double>(n));
  }
  uint64_t Bits() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

enum class Pattern {
  kUniform,     // weights in (0, 1]
  kLogUniform,  // weights 10^(-30 U): 1e-30 to 1
};

// Weights as doubles; callers round them to T and compute the expected
// probabilities from the rounded values. Categories with j % 7 == 3 get
// weight zero when `zeros` and K >= 7.
std::vector<double> MakeWeights(int64_t k, Pattern pattern, bool zeros,
                                uint64_t seed) {
  InputRng rng(seed);
  std::vector<double> w(k);
  for (int64_t j = 0; j < k; ++j) {
    const double u = rng.Unit();
    w[j] = pattern == Pattern::kUniform ? 1.0 - u : std::pow(10.0, -30.0 * u);
    if (zeros && k >= 7 && j % 7 == 3) w[j] = 0;
  }
  return w;
}

// Values of T for `kind` from double weights: the weights themselves, or
// their logarithms (-inf for zero).
template <typename T>
std::vector<T> ToValues(const std::vector<double>& w, WeightKind kind) {
  std::vector<T> v(w.size());
  for (size_t j = 0; j < w.size(); ++j) {
    v[j] = kind == WeightKind::kWeights ? static_cast<T>(w[j])
                                        : static_cast<T>(std::log(w[j]));
  }
  return v;
}

// The probabilities that `values` (one row) stand for, in double.
template <typename T>
std::vector<double> Probabilities(const std::vector<T>& values,
                                  WeightKind kind) {
  std::vector<double> p(values.size());
  double m = -kInf;
  for (T v : values) m = std::max(m, static_cast<double>(v));
  double total = 0;
  for (size_t j = 0; j < values.size(); ++j) {
    p[j] = kind == WeightKind::kWeights
               ? static_cast<double>(values[j])
               : std::exp(static_cast<double>(values[j]) - m);
    total += p[j];
  }
  for (double& x : p) x /= total;
  return p;
}

// `row` repeated `rows` times.
template <typename T>
std::vector<T> Repeat(const std::vector<T>& row, int64_t rows) {
  std::vector<T> v;
  v.reserve(row.size() * rows);
  for (int64_t r = 0; r < rows; ++r) v.insert(v.end(), row.begin(), row.end());
  return v;
}

enum class Method { kButterfly, kReference };

template <typename T>
std::vector<int32_t> SampleRows(Method method, const std::vector<T>& values,
                                int64_t rows, int32_t draws, WeightKind kind,
                                uint64_t seed, uint64_t first_row = 0) {
  const CategoricalShape shape{rows, static_cast<int64_t>(values.size()) / rows,
                               draws};
  std::vector<int32_t> out(rows * draws, -1);
  const absl::Status s =
      method == Method::kButterfly
          ? SampleCategoricalCpu<T>(values, shape, kind, seed, first_row,
                                    absl::MakeSpan(out))
          : SampleCategoricalReferenceCpu<T>(values, shape, kind, seed,
                                             first_row, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

std::vector<int64_t> Counts(const std::vector<int32_t>& samples, int64_t k) {
  std::vector<int64_t> c(k, 0);
  for (int32_t s : samples) {
    EXPECT_TRUE(s >= 0 && s < k) << s;
    if (s >= 0 && s < k) ++c[s];
  }
  return c;
}

const char* Name(Method m) {
  return m == Method::kButterfly ? "butterfly" : "reference";
}
const char* Name(WeightKind k) {
  return k == WeightKind::kWeights ? "weights" : "logits";
}

template <typename T>
class CategoricalTest : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CategoricalTest, Precisions);

// ----------------------------------------------------------- chi-square ----

// 32 identical rows (one per lane, so every add/subtract pattern of the
// butterfly contributes) with 4096 draws each, against the weights.
TYPED_TEST(CategoricalTest, ChiSquareMatchesWeights) {
  using T = TypeParam;
  constexpr int64_t kRows = 32;
  constexpr int32_t kDraws = 4096;
  uint64_t seed = 1000;
  for (int64_t k : {1, 2, 7, 32, 33, 1000}) {
    for (Pattern pattern : {Pattern::kUniform, Pattern::kLogUniform}) {
      const std::vector<double> w = MakeWeights(k, pattern, true, 77 + k);
      for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
        const std::vector<T> row = ToValues<T>(w, kind);
        const std::vector<double> p = Probabilities(row, kind);
        for (Method method : {Method::kButterfly, Method::kReference}) {
          SCOPED_TRACE(::testing::Message()
                       << "K=" << k << " pattern=" << static_cast<int>(pattern)
                       << " " << Name(kind) << " " << Name(method));
          const std::vector<int32_t> samples = SampleRows<T>(
              method, Repeat(row, kRows), kRows, kDraws, kind, ++seed, 64);
          const std::vector<int64_t> counts = Counts(samples, k);
          std::vector<double> expected(k);
          for (int64_t j = 0; j < k; ++j) {
            expected[j] = p[j] * static_cast<double>(kRows * kDraws);
          }
          const testing::ChiSquareResult r =
              testing::ChiSquareTest(counts, expected);
          EXPECT_GT(r.p_value, 1e-4)
              << "chi2=" << r.statistic << " df=" << r.degrees_of_freedom;
          if (pattern == Pattern::kUniform && k >= 2) {
            EXPECT_GE(r.degrees_of_freedom, 1);  // the test is not vacuous
          }
          if (k == 1) {
            EXPECT_EQ(counts[0], kRows * kDraws);
          }
        }
      }
    }
  }
}

// The chi-square check has power: the same samples fail against
// probabilities with one weight changed by 10%.
TYPED_TEST(CategoricalTest, ChiSquareDetectsWrongWeights) {
  using T = TypeParam;
  const std::vector<double> w = MakeWeights(7, Pattern::kUniform, false, 5);
  const std::vector<T> row = ToValues<T>(w, WeightKind::kWeights);
  const std::vector<int32_t> samples = SampleRows<T>(
      Method::kButterfly, Repeat(row, 32), 32, 4096, WeightKind::kWeights, 9);
  std::vector<double> wrong(w.begin(), w.end());
  wrong[2] *= 1.1;
  const std::vector<double> p = Probabilities(wrong, WeightKind::kWeights);
  std::vector<double> expected(7);
  for (int j = 0; j < 7; ++j) expected[j] = p[j] * 32 * 4096;
  EXPECT_LT(testing::ChiSquareTest(Counts(samples, 7), expected).p_value, 1e-4);
}

// ---------------------------------------------------------- zero weights ----

struct ZeroCase {
  int64_t k;
  std::vector<int64_t> zeros;  // categories with weight zero
};

std::vector<ZeroCase> ZeroCases() {
  std::vector<ZeroCase> cases = {
      {2, {0}},
      {2, {1}},
      {7, {0, 3, 6}},  // first, middle, last (no blocks)
      {32, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},  // half
      {32, {16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}},
      {33, {0, 32}},          // the whole remnant; last category
      {64, {0, 31, 32, 63}},  // block edges, no remnant
  };
  // K = 1000: R = 8, 31 blocks. First category and more of the remnant, the
  // last category, the left half of block 5, all of block 10, every other
  // category of block 20, the right half of the last block.
  ZeroCase big{1000, {0, 1, 5, 7, 999}};
  for (int64_t i = 0; i < 16; ++i) big.zeros.push_back(8 + 32 * 5 + i);
  for (int64_t i = 0; i < 32; ++i) big.zeros.push_back(8 + 32 * 10 + i);
  for (int64_t i = 0; i < 32; i += 2) big.zeros.push_back(8 + 32 * 20 + i);
  for (int64_t i = 16; i < 31; ++i) big.zeros.push_back(8 + 32 * 30 + i);
  cases.push_back(big);
  return cases;
}

// Zero-weight categories (and -inf logits) are never drawn, with weights of
// every magnitude around them, by either method; all others with enough
// expected draws are drawn (so the check is not vacuous).
TYPED_TEST(CategoricalTest, ZeroWeightsNeverDrawn) {
  using T = TypeParam;
  uint64_t seed = 2000;
  for (const ZeroCase& c : ZeroCases()) {
    for (Pattern pattern : {Pattern::kUniform, Pattern::kLogUniform}) {
      std::vector<double> w = MakeWeights(c.k, pattern, false, 3 * c.k);
      for (int64_t z : c.zeros) w[z] = 0;
      for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
        const std::vector<T> row = ToValues<T>(w, kind);
        const std::vector<double> p = Probabilities(row, kind);
        for (Method method : {Method::kButterfly, Method::kReference}) {
          SCOPED_TRACE(::testing::Message()
                       << "K=" << c.k
                       << " pattern=" << static_cast<int>(pattern) << " "
                       << Name(kind) << " " << Name(method));
          constexpr int32_t kDraws = 2048;
          const std::vector<int64_t> counts =
              Counts(SampleRows<T>(method, Repeat(row, 32), 32, kDraws, kind,
                                   ++seed, 7),
                     c.k);
          for (int64_t j = 0; j < c.k; ++j) {
            if (w[j] == 0) {
              EXPECT_EQ(counts[j], 0) << "category " << j;
            } else if (p[j] * 32 * kDraws > 20) {
              EXPECT_GT(counts[j], 0) << "category " << j;
            }
          }
        }
      }
    }
  }
}

// -0.0 is a weight of zero (validation accepts it: -0.0 >= 0). Its sign bit
// used to reach QuantizeWeight's exponent and make it a large weight, drawn
// where it must never be (found by fuzz_categorical on 2026-11-23: float32,
// "category 8 of weight -0 drawn"). Every scale, and rows whose other
// weights are tiny, ordinary or huge, so that the scale spans its range.
TYPED_TEST(CategoricalTest, NegativeZeroWeightsAreZero) {
  using T = TypeParam;
  for (int scale = -1100; scale <= 1200; ++scale) {
    ASSERT_EQ(categorical::QuantizeWeight(T(-0.0), scale), 0u)
        << "scale " << scale;
  }
  uint64_t seed = 2500;
  for (double other : {1e-300, 1e-40, 1e-30, 1.0, 1e30, 1e300}) {
    const T x = static_cast<T>(other);
    if (!(x > 0) || !std::isfinite(x)) continue;  // outside float's range
    const std::vector<T> row = {T(-0.0), x, T(-0.0), T(-0.0), x, T(-0.0)};
    for (Method method : {Method::kButterfly, Method::kReference}) {
      SCOPED_TRACE(::testing::Message()
                   << "other weights " << other << " " << Name(method));
      const std::vector<int64_t> counts =
          Counts(SampleRows<T>(method, Repeat(row, 32), 32, 256,
                               WeightKind::kWeights, ++seed, 7),
                 6);
      for (int64_t j : {0, 2, 3, 5})
        EXPECT_EQ(counts[j], 0) << "category " << j;
      EXPECT_EQ(counts[1] + counts[4], 32 * 256);
    }
  }
}

// Rows whose total is subnormal (or whose weights all are) are rescaled
// exactly: a lone subnormal weight among zeros is the only category drawn,
// and two equal subnormal weights are drawn half and half. (Under CAT1,
// S * u rounded in T gave 0.464 / 0.536 for float (1e-44, 1e-44) and
// 0.25 / 0.75 for float (1.4e-45, 1.4e-45) and double (5e-324, 5e-324).)
TYPED_TEST(CategoricalTest, SubnormalTotalsAreRescaled) {
  using T = TypeParam;
  const T tiny = std::numeric_limits<T>::denorm_min();
  for (int64_t k : {3, 64, 70}) {
    for (int64_t nonzero : {int64_t{0}, int64_t{1}}) {
      SCOPED_TRACE(::testing::Message() << "K=" << k << " at " << nonzero);
      std::vector<T> row(k, T(0));
      row[nonzero] = tiny;
      for (Method method : {Method::kButterfly, Method::kReference}) {
        for (int32_t s : SampleRows<T>(method, Repeat(row, 32), 32, 64,
                                       WeightKind::kWeights, 4)) {
          ASSERT_EQ(s, nonzero) << Name(method);
        }
      }
    }
  }
  const std::vector<T> pairs = {tiny, T(7) * tiny};  // 1.4e-45 / 5e-324, 1e-44
  for (T x : pairs) {
    const std::vector<T> row = {x, x};
    constexpr int32_t kDraws = 1 << 16;
    for (Method method : {Method::kButterfly, Method::kReference}) {
      const std::vector<int64_t> c = Counts(
          SampleRows<T>(method, row, 1, kDraws, WeightKind::kWeights, 8), 2);
      // 0.5 +- 5 sigma (sigma = 0.5 / 256 at 2^16 draws).
      EXPECT_NEAR(static_cast<double>(c[0]) / kDraws, 0.5, 5 * 0.5 / 256)
          << Name(method) << " x=" << x;
    }
  }
}

// ------------------------------------------ butterfly versus reference ----

// On random rows of K = 1 .. 1100 (all lanes), the butterfly and the
// sequential reference choose the same category for every draw: both search
// the same exact integer boundaries, only in a different order.
TYPED_TEST(CategoricalTest, ButterflyAgreesWithReference) {
  using T = TypeParam;
  InputRng rng(31);
  std::vector<int64_t> ks = {1, 2, 31, 32, 33, 63, 64, 65, 1055, 1100};
  while (ks.size() < 160) ks.push_back(1 + rng.Below(1100));
  int64_t total = 0, mismatches = 0;
  for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
    for (int64_t k : ks) {
      std::vector<double> w(k);
      for (int64_t j = 0; j < k; ++j) {
        w[j] = rng.Unit() < 0.1 ? 0 : 0.01 + 0.99 * rng.Unit();
      }
      w[rng.Below(k)] = 1;  // at least one non-zero
      const std::vector<T> row = ToValues<T>(w, kind);
      const std::vector<T> values = Repeat(row, 32);
      const uint64_t seed = rng.Bits();
      const uint64_t first_row = rng.Below(1000);
      constexpr int32_t kDraws = 64;
      const std::vector<int32_t> a = SampleRows<T>(
          Method::kButterfly, values, 32, kDraws, kind, seed, first_row);
      const std::vector<int32_t> b = SampleRows<T>(
          Method::kReference, values, 32, kDraws, kind, seed, first_row);
      for (size_t i = 0; i < a.size(); ++i) {
        ++total;
        if (a[i] == b[i]) continue;
        ++mismatches;
        const int32_t lo = std::min(a[i], b[i]), hi = std::max(a[i], b[i]);
        for (int32_t j = lo + 1; j < hi; ++j) {
          EXPECT_EQ(w[j], 0)
              << "K=" << k << ": butterfly " << a[i] << ", reference " << b[i];
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << mismatches << " of " << total;
  std::printf("butterfly vs reference (%s): %lld mismatches in %lld draws\n",
              sizeof(T) == 4 ? "float" : "double",
              static_cast<long long>(mismatches),
              static_cast<long long>(total));
}

// ------------------------------- an independent exact implementation ----

// Words of the categorical stream straight from Random123, under the
// counter layout of docs/randomness.md (tag "CAT2"), independently of
// philox.h and categorical_core.h.
r123::Philox4x32::ctr_type RawBlock(uint64_t seed, uint64_t item,
                                    uint32_t draw) {
  const r123::Philox4x32::key_type key = {
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  const r123::Philox4x32::ctr_type ctr = {{draw, static_cast<uint32_t>(item),
                                           static_cast<uint32_t>(item >> 32),
                                           0x43415432u}};
  return r123::Philox4x32()(ctr, key);
}

// Draw d's 64-bit uniform: words 2 (d mod 2) (low) and 2 (d mod 2) + 1
// (high) of block d / 2.
uint64_t RawBits(uint64_t seed, uint64_t item, int32_t d) {
  const auto block = RawBlock(seed, item, d / 2);
  return (static_cast<uint64_t>(block.v[2 * (d % 2) + 1]) << 32) |
         block.v[2 * (d % 2)];
}

// Step 1 of the contract: weights from logits with the deterministic exp.
template <typename T>
std::vector<T> WeightsOf(const std::vector<T>& row, WeightKind kind) {
  if (kind == WeightKind::kWeights) return row;
  T m = -std::numeric_limits<T>::infinity();
  for (T l : row) m = std::max(m, l);
  std::vector<T> w;
  for (T l : row) w.push_back(detmath::Exp(l - m));
  return w;
}

using U128 = unsigned __int128;

// The contract re-derived another way: the double sum by recursion over
// the columns' aligned ranges, floor(log2) by frexp, the quantization by
// ldexp and floor in long double (exact: a power-of-two scaling whose
// result is an integer of at most 62 bits), the category by a binary search
// of the sequential interval ends, the realized counts in 128 bits.
template <typename T>
class SlowExact {
 public:
  // `w`: the row's weights (already converted from logits).
  explicit SlowExact(const std::vector<T>& w) : k_(w.size()) {
    const int64_t remnant = k_ % 32, blocks = k_ / 32;
    double rem = 0;
    for (int64_t j = 0; j < remnant; ++j) rem += static_cast<double>(w[j]);
    std::vector<double> columns(32, 0.0);
    for (int64_t b = 0; b < blocks; ++b) {
      for (int l = 0; l < 32; ++l) {
        columns[l] += static_cast<double>(w[remnant + 32 * b + l]);
      }
    }
    const double sum = blocks > 0 ? rem + Tree(columns, 0, 32) : rem;
    int e = 0;
    std::frexp(sum, &e);  // sum = m 2^e, m in [0.5, 1)
    scale_ = 60 - (e - 1);
    q_.resize(k_);
    end_.resize(k_);
    uint64_t c = 0;
    for (int64_t j = 0; j < k_; ++j) {
      q_[j] = static_cast<uint64_t>(
          std::floor(std::ldexp(static_cast<long double>(w[j]), scale_)));
      end_[j] = c += q_[j];
    }
    total_ = c;
  }
  uint64_t total() const { return total_; }
  int scale() const { return scale_; }
  const std::vector<uint64_t>& q() const { return q_; }
  const std::vector<uint64_t>& ends() const { return end_; }

  // The category of X in [0, Q): the one whose interval [end - q, end)
  // holds it.
  int64_t Find(uint64_t x) const {
    return std::upper_bound(end_.begin(), end_.end(), x) - end_.begin();
  }
  // The category for the 64-bit uniform r.
  int64_t Choose(uint64_t r) const {
    return Find(static_cast<uint64_t>((static_cast<U128>(r) * total_) >> 64));
  }
  // How many of the 2^64 values of r choose category j:
  // #{r : X < c} = ceil(c 2^64 / Q), between the interval's two ends.
  U128 Realized(int64_t j) const {
    return Below(end_[j]) - Below(end_[j] - q_[j]);
  }

 private:
  static double Tree(const std::vector<double>& v, int first, int size) {
    if (size == 1) return v[first];
    return Tree(v, first, size / 2) + Tree(v, first + size / 2, size / 2);
  }
  U128 Below(uint64_t c) const {
    const U128 scaled = static_cast<U128>(c) << 64;
    return scaled / total_ + (scaled % total_ != 0 ? 1 : 0);
  }

  int64_t k_;
  int scale_ = 0;
  std::vector<uint64_t> q_, end_;
  uint64_t total_ = 0;
};

// Rows with wild dynamic range (1e-30 to 1, 15% zeros) and plain ones,
// sampled through the public API on rows that cross a warp boundary, equal
// the slow re-implementation fed with raw Philox words.
TYPED_TEST(CategoricalTest, MatchesIndependentImplementation) {
  using T = TypeParam;
  InputRng rng(41);
  int64_t checked = 0;
  for (int64_t k : {1, 2, 5, 31, 32, 33, 63, 64, 65, 100, 333, 1000, 1100}) {
    for (Pattern pattern : {Pattern::kUniform, Pattern::kLogUniform}) {
      for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
        SCOPED_TRACE(::testing::Message()
                     << "K=" << k << " pattern=" << static_cast<int>(pattern)
                     << " " << Name(kind));
        constexpr int64_t kRows = 40;
        constexpr int32_t kDraws = 9;
        constexpr uint64_t kFirstRow = 29;  // lanes 29, 30, 31, 0, 1, ...
        std::vector<T> values;
        std::vector<std::vector<T>> rows;
        for (int64_t r = 0; r < kRows; ++r) {
          std::vector<double> w = MakeWeights(k, pattern, false, rng.Bits());
          for (double& x : w) {
            if (rng.Unit() < 0.15) x = 0;
          }
          w[rng.Below(k)] = 0.5;
          rows.push_back(ToValues<T>(w, kind));
          values.insert(values.end(), rows.back().begin(), rows.back().end());
        }
        const uint64_t seed = rng.Bits();
        for (Method method : {Method::kButterfly, Method::kReference}) {
          const std::vector<int32_t> out = SampleRows<T>(
              method, values, kRows, kDraws, kind, seed, kFirstRow);
          for (int64_t r = 0; r < kRows; ++r) {
            const SlowExact<T> slow(WeightsOf(rows[r], kind));
            const uint64_t item = kFirstRow + r;
            for (int32_t d = 0; d < kDraws; ++d) {
              ASSERT_EQ(out[r * kDraws + d],
                        slow.Choose(RawBits(seed, item, d)))
                  << Name(method) << " row " << r << " draw " << d;
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 13 * 2 * 2 * 40 * 9);
}

// The shared quantization and butterfly search against the slow version at
// every interval boundary: X = end - 2 .. end + 1 of every category, on all
// 32 lanes, on rows with zeros, subnormals and wide dynamic range. The
// integer search has no lane-dependent rounding left: every lane agrees.
TYPED_TEST(CategoricalTest, SearchMatchesIndependentAtBoundaries) {
  using T = TypeParam;
  InputRng rng(43);
  const T tiny = std::numeric_limits<T>::denorm_min();
  for (int64_t k : {1, 7, 31, 32, 33, 64, 65, 100, 200}) {
    for (int variant = 0; variant < 3; ++variant) {
      SCOPED_TRACE(::testing::Message() << "K=" << k << " variant=" << variant);
      std::vector<double> wd = MakeWeights(
          k, variant == 0 ? Pattern::kUniform : Pattern::kLogUniform, true,
          rng.Bits());
      wd[rng.Below(k)] = 1;
      std::vector<T> w = ToValues<T>(wd, WeightKind::kWeights);
      if (variant == 2) {  // a subnormal row: weights 1..64 times denorm_min
        for (T& x : w) x = x == 0 ? T(0) : tiny * T(1 + rng.Below(64));
      }
      const SlowExact<T> slow(w);
      const int scale =
          categorical::RowScale(categorical::RowScaleSum(w.data(), k));
      ASSERT_EQ(scale, slow.scale());
      std::vector<uint64_t> q(k), table(k);
      for (int64_t j = 0; j < k; ++j) {
        q[j] = categorical::QuantizeWeight(w[j], scale);
        ASSERT_EQ(q[j], slow.q()[j]) << "category " << j;
        if (w[j] == 0) ASSERT_EQ(q[j], 0u) << "category " << j;
      }
      const uint64_t total =
          categorical::BuildRowTable(q.data(), k, table.data());
      ASSERT_EQ(total, slow.total());
      ASSERT_GE(total, (uint64_t{1} << 60) - (uint64_t{1} << 38) -
                           static_cast<uint64_t>(k));
      ASSERT_LE(total, uint64_t{1} << 61);
      for (uint64_t end : slow.ends()) {
        for (uint64_t x = end >= 2 ? end - 2 : 0; x <= end + 1 && x < total;
             ++x) {
          for (int lane = 0; lane < 32; ++lane) {
            ASSERT_EQ(categorical::ButterflySearchRow(q.data(), table.data(), k,
                                                      x, lane),
                      slow.Find(x))
                << "X=" << x << " lane=" << lane;
          }
        }
      }
    }
  }
}

// ------------------------------------------ exact realized distribution ----

// The exact realized distribution of a row under the contract: category j
// is drawn with probability Realized(j) / 2^64 (the CPU twin maps each of
// the 2^64 uniforms to a category deterministically, so this is the
// distribution, not an estimate). It is compared with the exact shares
// w_j / sum w (the inputs taken as exact numbers; the sum in long double,
// within K 2^-64 of exact), and the worst relative error over shares of
// 2^-32 or more is returned. Shares below 2^-60 must be drawn with
// probability at most 2^-58, zero weights never. A sample of the CPU twin's
// draws is checked against the same boundaries.
struct ExactReport {
  double worst_relative = 0;  // over shares >= 2^-32
  int64_t checked = 0;        // categories with shares >= 2^-32
};

template <typename T>
ExactReport CheckExact(const std::vector<T>& w, const std::vector<T>& values,
                       WeightKind kind, const std::vector<long double>& ref) {
  const int64_t k = static_cast<int64_t>(w.size());
  const SlowExact<T> slow(w);
  // The CPU twin's boundaries are these: its scale and a sample of draws.
  EXPECT_EQ(categorical::RowScale(categorical::RowScaleSum(w.data(), k)),
            slow.scale());
  constexpr int32_t kDraws = 2048;
  const std::vector<int32_t> out =
      SampleRows<T>(Method::kButterfly, values, 1, kDraws, kind, 77, 5);
  for (int32_t d = 0; d < kDraws; ++d) {
    EXPECT_EQ(out[d], slow.Choose(RawBits(77, 5, d))) << "draw " << d;
  }
  long double sum = 0;
  for (long double x : ref) sum += x;
  ExactReport report;
  const long double two64 = 0x1p64L;
  for (int64_t j = 0; j < k; ++j) {
    const long double share = ref[j] / sum;
    const long double p = static_cast<long double>(slow.Realized(j)) / two64;
    if (ref[j] == 0) {
      EXPECT_EQ(slow.Realized(j), 0u) << "category " << j;
    } else if (share >= 0x1p-32L) {
      const double rel = static_cast<double>(std::fabs(p - share) / share);
      report.worst_relative = std::max(report.worst_relative, rel);
      ++report.checked;
      if (rel > 1e-6) {
        ADD_FAILURE() << "category " << j << ": share " << (double)share
                      << " drawn with probability " << (double)p
                      << " (relative error " << rel << ")";
        break;
      }
    } else if (share < 0x1p-60L) {
      EXPECT_LE(p, 0x1p-58L) << "category " << j;
    }
  }
  return report;
}

template <typename T>
ExactReport CheckExactWeights(const std::vector<T>& w) {
  return CheckExact<T>(w, w, WeightKind::kWeights,
                       std::vector<long double>(w.begin(), w.end()));
}

template <typename T>
std::vector<T> RandomRow(int64_t k, Pattern pattern, bool zeros,
                         uint64_t seed) {
  return ToValues<T>(MakeWeights(k, pattern, zeros, seed),
                     WeightKind::kWeights);
}

// The findings of issue 10, each exact: K = 10^6 equal float32 weights
// (CAT1: 22% of the categories 4.6% too rare), random weights (CAT1: ~3%
// RMS per category), weights spanning 1e-30..1 (CAT1: shares below 1e-12
// drawn 2.6e4 times too often), zeros, in both precisions.
TYPED_TEST(CategoricalTest, ExactRealizedDistribution) {
  using T = TypeParam;
  struct Case {
    const char* name;
    std::vector<T> w;
  };
  std::vector<Case> cases;
  cases.push_back({"equal K=1e6", std::vector<T>(1000000, T(1))});
  cases.push_back({"equal K=1e6 of 1e-30", std::vector<T>(1000000, T(1e-30))});
  cases.push_back(
      {"random K=1e5", RandomRow<T>(100000, Pattern::kUniform, false, 3)});
  cases.push_back(
      {"random K=1e5 zeros", RandomRow<T>(100000, Pattern::kUniform, true, 4)});
  cases.push_back({"spanning 1e-30..1 K=1e5",
                   RandomRow<T>(100000, Pattern::kLogUniform, false, 5)});
  cases.push_back({"spanning 1e-30..1 K=1e6 zeros",
                   RandomRow<T>(1000000, Pattern::kLogUniform, true, 6)});
  std::vector<T> one_big(100000, T(1e-12));
  one_big[777] = T(1);
  cases.push_back({"one dominant, K=1e5 at 1e-12", one_big});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ExactReport r = CheckExactWeights(c.w);
    std::printf("%s %s: worst relative error %.3g over %lld shares >= 2^-32\n",
                sizeof(T) == 4 ? "float" : "double", c.name, r.worst_relative,
                static_cast<long long>(r.checked));
    EXPECT_GT(r.checked, 0);
  }
}

// Logits: exact relative to the deterministic weights exp(l - max l), the
// quantities the contract samples from.
TYPED_TEST(CategoricalTest, ExactRealizedDistributionLogits) {
  using T = TypeParam;
  InputRng rng(9);
  std::vector<T> logits(100000);
  for (T& l : logits) {
    l = rng.Unit() < 0.05 ? -std::numeric_limits<T>::infinity()
                          : static_cast<T>(-69.0 * rng.Unit());
  }
  const std::vector<T> w = WeightsOf(logits, WeightKind::kLogits);
  const ExactReport r =
      CheckExact<T>(w, logits, WeightKind::kLogits,
                    std::vector<long double>(w.begin(), w.end()));
  EXPECT_GT(r.checked, 1000);
}

// Subnormal rows: exactly 0.5 / 0.5 (CAT1: 0.464 / 0.536 for float
// (1e-44, 1e-44), 0.25 / 0.75 for float (1.4e-45, 1.4e-45) and double
// (5e-324, 5e-324)), and a subnormal row with structure.
TYPED_TEST(CategoricalTest, ExactRealizedDistributionSubnormal) {
  using T = TypeParam;
  const T tiny = std::numeric_limits<T>::denorm_min();
  std::vector<std::vector<T>> rows = {
      {tiny, tiny}, {T(7) * tiny, T(7) * tiny}, {tiny, T(0), tiny}};
  if constexpr (sizeof(T) == 4) {
    rows.push_back({1e-44f, 1e-44f});
    rows.push_back({1.4e-45f, 1.4e-45f});
  } else {
    rows.push_back({5e-324, 5e-324});
  }
  for (const std::vector<T>& row : rows) {
    SCOPED_TRACE(::testing::Message() << row[0]);
    const SlowExact<T> slow(row);
    EXPECT_EQ(slow.Realized(0), static_cast<U128>(1) << 63);
    CheckExactWeights(row);
  }
  std::vector<T> spread(1000);
  InputRng rng(12);
  for (T& x : spread) x = tiny * T(rng.Below(1000));
  const ExactReport r = CheckExactWeights(spread);
  EXPECT_GT(r.checked, 900);
}

// The largest K a default-sized message carries (float32: 2^24), equal
// weights: every category is drawn with probability 2^-24 (CAT1 could draw
// a category only through its 24-bit uniform grid).
TEST(CategoricalExactTest, LargestKFloat) {
  const std::vector<float> w(1 << 24, 1.0f);
  const ExactReport r = CheckExactWeights(w);
  EXPECT_EQ(r.checked, 1 << 24);
  EXPECT_LT(r.worst_relative, 1e-12);
}

// The check has power: the same realized distribution against shares with
// one weight changed by 2e-6 of itself fails it.
TEST(CategoricalExactTest, DetectsOneWeightOffBy2e6) {
  const std::vector<float> w =
      RandomRow<float>(1000, Pattern::kUniform, false, 3);
  std::vector<long double> ref(w.begin(), w.end());
  ref[500] *= 1.000002L;
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::
            INTERCEPT_ONLY_CURRENT_THREAD,
        &failures);
    CheckExact<float>(w, w, WeightKind::kWeights, ref);
  }
  EXPECT_GE(failures.size(), 1);
}

// Weights come from logits minus their maximum, so adding a constant to a
// row changes nothing. Logits on a 2^-10 grid within [-64, 0] shift by +-1024
// exactly in float and double, so the output must be identical to the bit;
// without the maximum, exp would overflow (+1024) or underflow (-1024).
TYPED_TEST(CategoricalTest, LogitsAreShiftInvariant) {
  using T = TypeParam;
  InputRng rng(71);
  for (int64_t k : {5, 32, 100, 1000}) {
    std::vector<T> row(k);
    for (T& l : row) {
      l = rng.Unit() < 0.1 ? -std::numeric_limits<T>::infinity()
                           : static_cast<T>(-rng.Below(64 * 1024) / 1024.0);
    }
    row[rng.Below(k)] = T(-1.5);
    const std::vector<T> values = Repeat(row, 32);
    const std::vector<int32_t> base = SampleRows<T>(
        Method::kButterfly, values, 32, 64, WeightKind::kLogits, 5, 3);
    for (T shift : {T(1024), T(-1024)}) {
      std::vector<T> shifted = values;
      for (T& l : shifted) l += shift;
      EXPECT_EQ(base, SampleRows<T>(Method::kButterfly, shifted, 32, 64,
                                    WeightKind::kLogits, 5, 3))
          << "K=" << k << " shift " << shift;
    }
  }
}

// ------------------------------------------------------ layout, chunking ----

// With K = 1024 equal weights S_d = 1024, the scale is 2^50, q_i = 2^50 and
// Q = 2^60, so X = r >> 4 and the category is r >> 54: the top 10 bits of
// draw d's high Philox word, for float and double alike. Checks the draw ->
// block/word layout and the item index directly against Random123 for D not a
// multiple of the words per block.
TYPED_TEST(CategoricalTest, DrawsFollowPhiloxLayout) {
  using T = TypeParam;
  constexpr int64_t kRows = 5;
  constexpr int32_t kDraws = 13;
  constexpr uint64_t kFirstRow = 1000;
  constexpr uint64_t kSeed = 0x0123456789abcdefull;
  for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
    const T one = kind == WeightKind::kWeights ? T(1) : T(0);
    const std::vector<T> values(kRows * 1024, one);
    for (Method method : {Method::kButterfly, Method::kReference}) {
      const std::vector<int32_t> out =
          SampleRows<T>(method, values, kRows, kDraws, kind, kSeed, kFirstRow);
      for (int64_t r = 0; r < kRows; ++r) {
        for (int32_t d = 0; d < kDraws; ++d) {
          const uint64_t item = kFirstRow + r;
          const uint32_t word = RawBlock(kSeed, item, d / 2).v[2 * (d % 2) + 1];
          EXPECT_EQ(out[r * kDraws + d], static_cast<int32_t>(word >> 22))
              << Name(kind) << " " << Name(method) << " row " << r << " draw "
              << d;
        }
      }
    }
  }
}

// A request sampled in one call equals the same rows sampled in chunks of
// any size (not aligned to 32) with first_row set; the seed decides the
// output.
TYPED_TEST(CategoricalTest, ChunksSeedsAndDeterminism) {
  using T = TypeParam;
  constexpr int64_t kRows = 100, kK = 77;
  constexpr int32_t kDraws = 5;
  InputRng rng(53);
  std::vector<T> values(kRows * kK);
  for (T& v : values) v = static_cast<T>(rng.Unit() < 0.1 ? 0 : rng.Unit());
  for (int64_t r = 0; r < kRows; ++r) values[r * kK + r % kK] = 1;
  for (Method method : {Method::kButterfly, Method::kReference}) {
    SCOPED_TRACE(Name(method));
    const std::vector<int32_t> whole =
        SampleRows<T>(method, values, kRows, kDraws, WeightKind::kWeights, 99);
    EXPECT_EQ(whole, SampleRows<T>(method, values, kRows, kDraws,
                                   WeightKind::kWeights, 99));
    std::vector<int32_t> chunked;
    const int64_t cuts[] = {0, 13, 45, 46, 100};
    for (int i = 0; i + 1 < 5; ++i) {
      const std::vector<T> part(values.begin() + cuts[i] * kK,
                                values.begin() + cuts[i + 1] * kK);
      const std::vector<int32_t> out =
          SampleRows<T>(method, part, cuts[i + 1] - cuts[i], kDraws,
                        WeightKind::kWeights, 99, cuts[i]);
      chunked.insert(chunked.end(), out.begin(), out.end());
    }
    EXPECT_EQ(whole, chunked);
    const std::vector<int32_t> other =
        SampleRows<T>(method, values, kRows, kDraws, WeightKind::kWeights, 100);
    int64_t differ = 0;
    for (size_t i = 0; i < whole.size(); ++i) differ += whole[i] != other[i];
    // Two independent draws from ~70 categories rarely coincide.
    EXPECT_GT(differ, static_cast<int64_t>(whole.size()) * 8 / 10);
  }
}

// ------------------------------------------------------------ validation ----

struct BadCase {
  std::string what;
  CategoricalShape shape;
  WeightKind kind;
  std::vector<double> values;
  std::string message;  // must appear in the status message
};

std::vector<BadCase> BadCases(double big) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const WeightKind w = WeightKind::kWeights, l = WeightKind::kLogits;
  return {
      {"rows 0", {0, 3, 1}, w, {}, "rows = 0"},
      {"rows < 0", {-2, 3, 1}, w, {}, "rows = -2"},
      {"K 0", {1, 0, 1}, w, {}, "categories = 0"},
      {"K < 0", {1, -1, 1}, w, {}, "categories = -1"},
      {"K too big",
       {1, int64_t{1} << 31, 1},
       w,
       {1},
       "categories = 2147483648"},
      {"draws 0", {1, 2, 0}, w, {1, 1}, "draws = 0"},
      {"draws < 0", {1, 2, -1}, w, {1, 1}, "draws = -1"},
      {"draws too many",
       {1, 2, kMaxCategoricalDraws + 1},
       w,
       {1, 1},
       "draws = 1048577"},
      {"size", {2, 3, 1}, w, {1, 1, 1, 1, 1}, "weights.size() = 5"},
      {"size logits", {2, 3, 1}, l, {1, 1, 1, 1, 1, 1, 1}, "logits.size() = 7"},
      {"size overflow",
       {int64_t{1} << 40, int64_t{1} << 30, 1},
       w,
       {1},
       "weights.size() = 1"},
      {"negative",
       {2, 3, 1},
       w,
       {1, 1, 1, 1, 1, -0.5},
       "weights[1][2] = -0.5: must be finite and >= 0"},
      {"nan weight", {1, 3, 1}, w, {1, nan, 1}, "weights[0][1] = nan"},
      {"inf weight", {1, 3, 1}, w, {kInf, 1, 1}, "weights[0][0] = inf"},
      {"-inf weight", {1, 3, 1}, w, {1, 1, -kInf}, "weights[0][2] = -inf"},
      {"all zero",
       {3, 2, 1},
       w,
       {1, 0, 0, 1, 0, -0.0},
       "weights[2]: all weights are zero"},
      {"total overflows", {1, 3, 1}, w, {big, big, 0}, "weights[0]: row total"},
      {"nan logit", {3, 1, 1}, l, {0, 0, nan}, "logits[2][0] = nan"},
      {"+inf logit", {1, 3, 1}, l, {0, kInf, 0}, "logits[0][1] = inf"},
      {"all -inf logits",
       {2, 2, 1},
       l,
       {0, -kInf, -kInf, -kInf},
       "logits[1]: all logits are -inf"},
  };
}

// Every bad parameter is refused with InvalidArgument naming the field, by
// the validator and both samplers, before anything is written.
TYPED_TEST(CategoricalTest, RejectsBadInput) {
  using T = TypeParam;
  // Three-quarters of T's largest value: two of them overflow half of it.
  const double big = 0.75 * static_cast<double>(std::numeric_limits<T>::max());
  for (const BadCase& c : BadCases(big)) {
    SCOPED_TRACE(c.what);
    std::vector<T> values(c.values.begin(), c.values.end());
    const absl::Status v = ValidateCategorical<T>(values, c.shape, c.kind);
    EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument) << v;
    EXPECT_NE(v.message().find(c.message), std::string::npos) << v;
    std::vector<int32_t> out(16, -7);
    for (Method m : {Method::kButterfly, Method::kReference}) {
      const absl::Status s =
          m == Method::kButterfly
              ? SampleCategoricalCpu<T>(values, c.shape, c.kind, 1, 0,
                                        absl::MakeSpan(out))
              : SampleCategoricalReferenceCpu<T>(values, c.shape, c.kind, 1, 0,
                                                 absl::MakeSpan(out));
      EXPECT_EQ(s, v) << Name(m);
      EXPECT_EQ(out, std::vector<int32_t>(16, -7)) << Name(m);
    }
  }
}

// Long rows go through the validator's one-pass screen (eight lanes, then a
// tail): a bad value in any lane or in the tail is still refused, named by
// its position; -0 and denormals are accepted; and a row total near the
// limit is judged by the exact rule (total <= half the largest T).
TYPED_TEST(CategoricalTest, ValidatesLongRowsInEveryLane) {
  using T = TypeParam;
  constexpr T kInf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T denormal = std::numeric_limits<T>::denorm_min();
  const WeightKind w = WeightKind::kWeights;
  for (int64_t k : {int64_t{8}, int64_t{37}, int64_t{1024}}) {
    for (int64_t at : {int64_t{0}, int64_t{3}, k / 2, k - 1}) {
      for (T bad : {nan, kInf, -kInf, T(-0.5), -denormal}) {
        std::vector<T> values(static_cast<size_t>(2 * k), T(1));
        values[static_cast<size_t>(k + at)] = bad;
        const absl::Status s = ValidateCategorical<T>(values, {2, k, 1}, w);
        SCOPED_TRACE(absl::StrCat("K ", k, " at ", at, " value ", bad));
        EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
        EXPECT_NE(s.message().find(absl::StrCat("weights[1][", at, "] = ")),
                  std::string::npos)
            << s;
      }
      std::vector<T> zeros_and_one(static_cast<size_t>(k), T(-0.0));
      zeros_and_one[static_cast<size_t>(at)] = denormal;
      EXPECT_TRUE(ValidateCategorical<T>(zeros_and_one, {1, k, 1}, w).ok());
      zeros_and_one[static_cast<size_t>(at)] = T(0);
      EXPECT_NE(ValidateCategorical<T>(zeros_and_one, {1, k, 1}, w)
                    .message()
                    .find("all weights are zero"),
                std::string::npos);
    }
    // Totals at the limit: k equal values summing to exactly half the
    // largest T are accepted; nudged up by one part in 2^20, refused.
    const double limit = static_cast<double>(std::numeric_limits<T>::max()) / 2;
    const int64_t pow2 = k == 37 ? 32 : k;  // k values of limit / pow2 each
    std::vector<T> at_limit(static_cast<size_t>(pow2),
                            static_cast<T>(limit / static_cast<double>(pow2)));
    EXPECT_TRUE(ValidateCategorical<T>(at_limit, {1, pow2, 1}, w).ok());
    at_limit[0] = static_cast<T>(static_cast<double>(at_limit[0]) *
                                 (1 + std::ldexp(1.0, -20)));
    EXPECT_NE(ValidateCategorical<T>(at_limit, {1, pow2, 1}, w)
                  .message()
                  .find("row total"),
              std::string::npos);
  }
}

TYPED_TEST(CategoricalTest, RejectsWrongOutputSize) {
  using T = TypeParam;
  const std::vector<T> values = {1, 2, 3, 4, 5, 6};
  const CategoricalShape shape{2, 3, 4};
  EXPECT_TRUE(ValidateCategorical<T>(values, shape, WeightKind::kWeights).ok());
  for (size_t size : {0, 7, 9}) {
    std::vector<int32_t> out(size, -7);
    const absl::Status s = SampleCategoricalCpu<T>(
        values, shape, WeightKind::kWeights, 1, 0, absl::MakeSpan(out));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("out.size()"), std::string::npos) << s;
    EXPECT_EQ(
        SampleCategoricalReferenceCpu<T>(values, shape, WeightKind::kWeights, 1,
                                         0, absl::MakeSpan(out)),
        s);
    EXPECT_EQ(out, std::vector<int32_t>(size, -7));
  }
  // Accepted edge values: -0.0 weights, -inf logits beside finite ones, a
  // single category, the largest draw count.
  EXPECT_TRUE(ValidateCategorical<T>(std::vector<T>{T(-0.0), 1}, {1, 2, 1},
                                     WeightKind::kWeights)
                  .ok());
  EXPECT_TRUE(ValidateCategorical<T>(
                  std::vector<T>{-std::numeric_limits<T>::infinity(), -5},
                  {1, 2, kMaxCategoricalDraws}, WeightKind::kLogits)
                  .ok());
}

// The entry point for values validated once before (the server's pieces):
// the same bits as SampleCategoricalCpu on valid values, and the shape and
// output size still checked.
TYPED_TEST(CategoricalTest, ValidatedEntryPointGivesTheSameBits) {
  using T = TypeParam;
  std::vector<T> weights;
  for (int i = 0; i < 7 * 40; ++i) weights.push_back(T((i * 13) % 9));
  for (WeightKind kind : {WeightKind::kWeights, WeightKind::kLogits}) {
    const CategoricalShape shape{7, 40, 5};
    std::vector<int32_t> checked(35, -1);
    std::vector<int32_t> validated(35, -2);
    ASSERT_TRUE(SampleCategoricalCpu<T>(weights, shape, kind, 3, 29,
                                        absl::MakeSpan(checked))
                    .ok());
    ASSERT_TRUE(SampleCategoricalCpu<T>(weights, shape, kind, 3, 29,
                                        absl::MakeSpan(validated),
                                        CategoricalValues::kValidated)
                    .ok());
    EXPECT_EQ(validated, checked);
  }
  std::vector<int32_t> out(35, -7);
  const absl::Status size = SampleCategoricalCpu<T>(
      weights, {8, 40, 5}, WeightKind::kWeights, 3, 0, absl::MakeSpan(out),
      CategoricalValues::kValidated);
  EXPECT_EQ(size.code(), absl::StatusCode::kInvalidArgument) << size;
  EXPECT_NE(size.message().find("weights.size()"), std::string::npos) << size;
  const absl::Status draws = SampleCategoricalCpu<T>(
      weights, {7, 40, 4}, WeightKind::kWeights, 3, 0, absl::MakeSpan(out),
      CategoricalValues::kValidated);
  EXPECT_NE(draws.message().find("out.size()"), std::string::npos) << draws;
  EXPECT_EQ(out, std::vector<int32_t>(35, -7));
}

}  // namespace
}  // namespace sampler::kernels
