// Tests of the categorical sampler's CPU backend: the butterfly search of
// docs/randomness.md ("Categorical") and the sequential reference. Covers the
// distribution (chi-square), zero weights, agreement of the two methods, an
// independent re-implementation of the butterfly arithmetic, the Philox
// layout, chunking, and validation. Every input comes from fixed seeds.
#include "sampler/kernels/categorical.h"

#include <Random123/philox.h>
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

// A row total in the subnormal range makes S * u round up to S itself for
// half the uniforms, so no prefix exceeds it: the search then falls off the
// end, onto a zero-weight last category, which the fix-up must replace by
// the last non-zero category below it.
TYPED_TEST(CategoricalTest, SubnormalTotalNeverDrawsZero) {
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
}

// The rounding case the fix-up exists for, constructed exactly. Row (K = 33,
// R = 1): w_0 = 3, then block 0 holds zeros except w_17 = 2^p (p = 24 for
// float, 53 for double). Then E_0 = fl(3 + 2^p) = 2^p + 4 (a tie, rounded to
// even), and a lane whose bit 16 is set compares u' with E_0 - 2^p = 4, not
// 3: every u' in [3, 4) descends into the all-zero left half.
TYPED_TEST(CategoricalTest, RoundingIntoZeroHalfIsFixedUp) {
  using T = TypeParam;
  const int p = std::numeric_limits<T>::digits;
  std::vector<T> w(33, T(0));
  w[0] = 3;
  w[17] = std::ldexp(T(1), p);
  std::vector<T> table(33);
  const T total = categorical::BuildRowTable(w.data(), 33, table.data());
  ASSERT_EQ(total, std::ldexp(T(1), p) + 4);
  int landed_on_zero = 0;
  for (T u : {T(3), T(3.5), std::nextafter(T(4), T(0))}) {
    for (int lane = 0; lane < 32; ++lane) {
      const int64_t raw =
          categorical::ButterflySearchRow(w.data(), table.data(), 33, u, lane);
      if (w[raw] == 0) ++landed_on_zero;
      EXPECT_EQ(categorical::SkipZeroWeight(w.data(), 33, raw), 17)
          << "u=" << u << " lane=" << lane;
    }
  }
  EXPECT_GT(landed_on_zero, 0);  // the raw search does hit zero weights
  // The fix-up's fallback: nothing non-zero above, so the last below.
  const std::vector<T> tail = {0, 2, 0, 0};
  EXPECT_EQ(categorical::SkipZeroWeight(tail.data(), 4, 3), 1);
  EXPECT_EQ(categorical::SkipZeroWeight(tail.data(), 4, 0), 1);
  EXPECT_EQ(categorical::SkipZeroWeight(tail.data(), 4, 1), 1);
}

// ------------------------------------------ butterfly versus reference ----

// On random rows of K = 1 .. 1100 (all lanes), the butterfly and the
// sequential reference choose the same category for the same uniform except
// where their different summation orders round a boundary apart: rare, and
// then to the neighbouring non-zero category. Weights stay within a factor
// 100 of each other (or are zero), so that no non-zero category is narrower
// than the rounding differences and could be stepped over.
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
  EXPECT_LT(static_cast<double>(mismatches), 1e-4 * static_cast<double>(total))
      << mismatches << " of " << total;
  std::printf("butterfly vs reference (%s): %lld mismatches in %lld draws\n",
              sizeof(T) == 4 ? "float" : "double",
              static_cast<long long>(mismatches),
              static_cast<long long>(total));
}

// ------------------------------ an independent butterfly implementation ----

// Step 5 of the contract re-derived another way: tree sums by recursion over
// aligned ranges instead of a stored table, the block found by a linear scan
// instead of a binary search, and the descent as a recursion on the interval.
template <typename T>
class SlowButterfly {
 public:
  // `w`: the row's weights (already converted from logits).
  explicit SlowButterfly(std::vector<T> w)
      : w_(std::move(w)), k_(static_cast<int64_t>(w_.size())) {
    remnant_ = k_ % 32;
    T sum = 0;
    for (int64_t j = 0; j < remnant_; ++j) prefix_.push_back(sum = sum + w_[j]);
    for (int64_t base = remnant_; base < k_; base += 32) {
      block_end_.push_back(sum = sum + Sum(base, 32));
    }
    total_ = sum;
  }
  T total() const { return total_; }

  // The category for scaled uniform u on lane `lane`, after the fix-up.
  int64_t Choose(T u, int lane) const { return FixUp(Search(u, lane)); }

 private:
  T Sum(int64_t first, int64_t size) const {
    if (size == 1) return w_[first];
    return Sum(first, size / 2) + Sum(first + size / 2, size / 2);
  }

  int64_t Descend(int64_t first, int64_t size, T low, T high, T u,
                  int lane) const {
    if (size == 1) return first;
    const int64_t half = size / 2;
    const T mid =
        (lane & half) ? high - Sum(first + half, half) : low + Sum(first, half);
    return u < mid ? Descend(first, half, low, mid, u, lane)
                   : Descend(first + half, half, mid, high, u, lane);
  }

  int64_t InRemnant(T u) const {
    for (int64_t j = 0; j < remnant_; ++j) {
      if (u < prefix_[j]) return j;
    }
    return remnant_ - 1;
  }

  int64_t Search(T u, int lane) const {
    const int64_t blocks = static_cast<int64_t>(block_end_.size());
    if (blocks == 0) return InRemnant(u);
    int64_t b = 0;
    while (b < blocks - 1 && !(u < block_end_[b])) ++b;
    const T before_blocks = remnant_ > 0 ? prefix_[remnant_ - 1] : T(0);
    if (b == 0 && remnant_ > 0 && u < before_blocks) return InRemnant(u);
    const T low = b == 0 ? before_blocks : block_end_[b - 1];
    return Descend(remnant_ + 32 * b, 32, low, block_end_[b], u, lane);
  }

  int64_t FixUp(int64_t j) const {
    if (w_[j] != 0) return j;
    int64_t up = j;
    while (up < k_ && w_[up] == 0) ++up;
    if (up < k_) return up;
    int64_t down = j;
    while (down >= 0 && w_[down] == 0) --down;
    return down;
  }

  std::vector<T> w_;
  int64_t k_;
  int64_t remnant_ = 0;
  std::vector<T> prefix_, block_end_;
  T total_ = 0;
};

// Words of the categorical stream straight from Random123, under the
// counter layout of docs/randomness.md, independently of philox.h and
// categorical_core.h.
r123::Philox4x32::ctr_type RawBlock(uint64_t seed, uint64_t item,
                                    uint32_t draw) {
  const r123::Philox4x32::key_type key = {
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  const r123::Philox4x32::ctr_type ctr = {{draw, static_cast<uint32_t>(item),
                                           static_cast<uint32_t>(item >> 32),
                                           0x43415431u}};
  return r123::Philox4x32()(ctr, key);
}

// Draw d's uniform: float from word d mod 4 of block d / 4; double from the
// word pair 2 (d mod 2), 2 (d mod 2) + 1 of block d / 2.
template <typename T>
T RawUniform(uint64_t seed, uint64_t item, int32_t d) {
  if constexpr (sizeof(T) == 4) {
    const uint32_t word = RawBlock(seed, item, d / 4).v[d % 4];
    return std::ldexp(static_cast<T>(word >> 8), -24);
  } else {
    const auto block = RawBlock(seed, item, d / 2);
    const uint64_t bits =
        (static_cast<uint64_t>(block.v[2 * (d % 2) + 1]) << 32) |
        block.v[2 * (d % 2)];
    return std::ldexp(static_cast<T>(bits >> 11), -53);
  }
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

// Rows with wild dynamic range (1e-30 to 1, 15% zeros) and plain ones,
// sampled through the public API on rows that cross a warp boundary, equal
// the slow re-implementation fed with uniforms made from raw Philox words.
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
        const std::vector<int32_t> out = SampleRows<T>(
            Method::kButterfly, values, kRows, kDraws, kind, seed, kFirstRow);
        for (int64_t r = 0; r < kRows; ++r) {
          const SlowButterfly<T> slow(WeightsOf(rows[r], kind));
          const uint64_t item = kFirstRow + r;
          for (int32_t d = 0; d < kDraws; ++d) {
            const T u = slow.total() * RawUniform<T>(seed, item, d);
            ASSERT_EQ(out[r * kDraws + d], slow.Choose(u, item % 32))
                << "row " << r << " draw " << d;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 13 * 2 * 2 * 40 * 9);
}

// Random uniforms rarely land where the lanes' add/subtract arithmetic
// matters, so this feeds the shared search scaled uniforms swept ulp by ulp
// across every prefix boundary, on all 32 lanes, and requires the slow
// re-implementation's answer each time. It also counts the uniforms whose
// answer depends on the lane, to show the sweep reaches those cases.
TYPED_TEST(CategoricalTest, SearchMatchesIndependentAtBoundaries) {
  using T = TypeParam;
  InputRng rng(43);
  int64_t lane_dependent = 0;
  for (int64_t k : {1, 7, 31, 32, 33, 64, 65, 100, 200}) {
    for (Pattern pattern : {Pattern::kUniform, Pattern::kLogUniform}) {
      SCOPED_TRACE(::testing::Message()
                   << "K=" << k << " pattern=" << static_cast<int>(pattern));
      std::vector<double> wd = MakeWeights(k, pattern, true, rng.Bits());
      wd[rng.Below(k)] = 1;
      const std::vector<T> w = ToValues<T>(wd, WeightKind::kWeights);
      std::vector<T> table(k);
      const T total = categorical::BuildRowTable(w.data(), k, table.data());
      const SlowButterfly<T> slow(w);
      ASSERT_EQ(total, slow.total());
      // Boundaries: every sequential prefix and every table entry.
      std::vector<T> centres = {T(0), total};
      T sum = 0;
      for (T x : w) centres.push_back(sum = sum + x);
      centres.insert(centres.end(), table.begin(), table.end());
      for (T centre : centres) {
        T u = centre;
        for (int i = 0; i < 6; ++i) u = std::nextafter(u, T(0));
        for (int i = 0; i < 13; ++i, u = std::nextafter(u, total)) {
          if (u > total) break;
          int64_t first_answer = -1;
          bool differs = false;
          for (int lane = 0; lane < 32; ++lane) {
            const int64_t got = categorical::SkipZeroWeight(
                w.data(), k,
                categorical::ButterflySearchRow(w.data(), table.data(), k, u,
                                                lane));
            ASSERT_EQ(got, slow.Choose(u, lane))
                << "u=" << u << " lane=" << lane;
            if (lane == 0) first_answer = got;
            differs = differs || got != first_answer;
          }
          lane_dependent += differs;
        }
      }
    }
  }
  EXPECT_GT(lane_dependent, 0);
  std::printf("%s: %lld swept uniforms with lane-dependent answers\n",
              sizeof(T) == 4 ? "float" : "double",
              static_cast<long long>(lane_dependent));
}

// The lane of a row is its item index mod 32, whatever chunk it travels in.
// Whether a lane adds or subtracts changes the answer only within rounding
// distance of a boundary, about K * 2^-24 of the draws in float (never
// observably in double), so this uses float rows of K = 16384, where about
// one draw in 1500 depends on the lane, and checks every draw of rows that
// cross a warp boundary against the shared search run on the right lane.
TEST(CategoricalLaneTest, LaneIsItemIndexModWarp) {
  constexpr int64_t kK = 16384, kRows = 32;
  constexpr int32_t kDraws = 4096;
  constexpr uint64_t kFirstRow = 45, kSeed = 17;
  InputRng rng(61);
  std::vector<float> row(kK);
  for (float& x : row) x = static_cast<float>(1.0 - rng.Unit());
  const std::vector<int32_t> out =
      SampleRows<float>(Method::kButterfly, Repeat(row, kRows), kRows, kDraws,
                        WeightKind::kWeights, kSeed, kFirstRow);
  std::vector<float> table(kK);
  const float total = categorical::BuildRowTable(row.data(), kK, table.data());
  int64_t lane_dependent = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    const uint64_t item = kFirstRow + r;
    for (int32_t d = 0; d < kDraws; ++d) {
      const float u = total * RawUniform<float>(kSeed, item, d);
      const int64_t want = categorical::ButterflySearchRow(
          row.data(), table.data(), kK, u, static_cast<int>(item % 32));
      ASSERT_EQ(out[r * kDraws + d], want) << "row " << r << " draw " << d;
      lane_dependent += want != categorical::ButterflySearchRow(
                                    row.data(), table.data(), kK, u,
                                    static_cast<int>(item % 32) ^ 31);
    }
    // The same row alone, as its own chunk.
    const std::vector<int32_t> alone = SampleRows<float>(
        Method::kButterfly, row, 1, kDraws, WeightKind::kWeights, kSeed, item);
    ASSERT_TRUE(
        std::equal(alone.begin(), alone.end(), out.begin() + r * kDraws))
        << "row " << r;
  }
  EXPECT_GT(lane_dependent, 10);  // the lane did matter
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

// With K = 1024 equal weights every sum and midpoint is an exact integer, so
// the butterfly must return floor(1024 u): the top 10 bits of draw d's
// (high) Philox word. Checks the draw -> block/word layout and the item index
// directly against Random123 for D not a multiple of the words per block.
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
          const uint32_t word =
              sizeof(T) == 4 ? RawBlock(kSeed, item, d / 4).v[d % 4]
                             : RawBlock(kSeed, item, d / 2).v[2 * (d % 2) + 1];
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

}  // namespace
}  // namespace sampler::kernels
