// CPU backend of SampleCategorical: the shared per-row arithmetic of
// categorical_core.h (exact integer weights, butterfly table and search)
// run over the rows one after another, plus the textbook sequential-prefix
// sampler on the same integers that tests compare it with.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/categorical_core.h"
#include "sampler/kernels/philox.h"

namespace sampler::kernels {
namespace {

const char* FieldName(WeightKind kind) {
  return kind == WeightKind::kLogits ? "logits" : "weights";
}

// The bit patterns of T that are finite and >= 0: +0 up to the largest
// finite value, and -0.
template <typename T>
struct WeightBits;
template <>
struct WeightBits<float> {
  using U = uint32_t;
  static constexpr U kLargestFinite = 0x7F7FFFFFu;
  static constexpr U kMinusZero = 0x80000000u;
};
template <>
struct WeightBits<double> {
  using U = uint64_t;
  static constexpr U kLargestFinite = 0x7FEFFFFFFFFFFFFFu;
  static constexpr U kMinusZero = 0x8000000000000000u;
};

// One pass over a weights row without a branch per value: the row's sum in
// eight running sums (so that the additions overlap instead of waiting for
// each other) and its least value, in eight running minima. A 16 MB upload
// spent most of its validation in the sequential sum's dependency chain
// (issue 13). The caller decides by the sum (in range, so no value was NaN
// or infinite: either makes the sum NaN or infinite for good) and the
// minimum (>= 0, so no value was negative; -0 counts as 0, as the checks
// below count it): the decisions a check of every value's bits made, with
// no bit logic in the loop (that logic kept the sums in memory: 7.2
// instructions a weight, callgrind, 16 MB upload).
template <typename T>
void ScreenWeightsRow(const T* row, int64_t categories, double* total,
                      T* least) {
  constexpr int kLanes = 8;
  double sums[kLanes] = {};
  T mins[kLanes];
  for (T& m : mins) m = std::numeric_limits<T>::infinity();
  int64_t j = 0;
  for (; j + kLanes <= categories; j += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) {
      const T w = row[j + lane];
      sums[lane] += static_cast<double>(w);
      mins[lane] = w < mins[lane] ? w : mins[lane];
    }
  }
  for (; j < categories; ++j) {
    sums[0] += static_cast<double>(row[j]);
    mins[0] = row[j] < mins[0] ? row[j] : mins[0];
  }
  *total = ((sums[0] + sums[1]) + (sums[2] + sums[3])) +
           ((sums[4] + sums[5]) + (sums[6] + sums[7]));
  *least = mins[0];
  for (int lane = 1; lane < kLanes; ++lane) {
    *least = mins[lane] < *least ? mins[lane] : *least;
  }
}

template <typename T>
absl::Status ValidateWeightsRow(const T* row, int64_t r, int64_t categories) {
  // Every partial sum the butterfly or the reference forms is at most the
  // total plus rounding, so half the largest T leaves room for both orders.
  const double limit = static_cast<double>(std::numeric_limits<T>::max()) / 2;
  // The common case, a valid row, decided by the screen alone. Its sum is
  // rounded in another order than the loop below, so it decides only where
  // the order cannot change the answer: a sum of values >= 0 is > 0 in any
  // order exactly when one value is, and the two sums differ by far less
  // than a relative 1e-6 (n * 2^-53 for n values), so a screened sum below
  // limit * (1 - 1e-6) is below the limit in the loop's order too. Every
  // other row is judged, and its message written, by the loop.
  double screened = 0;
  T least = 0;
  ScreenWeightsRow(row, categories, &screened, &least);
  if (least >= T(0) && screened > 0 && screened < limit * (1 - 1e-6)) {
    return absl::OkStatus();
  }
  double total = 0;
  for (int64_t j = 0; j < categories; ++j) {
    const T w = row[j];
    if (!std::isfinite(w) || !(w >= T(0))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "weights[", r, "][", j, "] = ", w, ": must be finite and >= 0"));
    }
    total += static_cast<double>(w);
  }
  if (!(total > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights[", r, "]: all weights are zero"));
  }
  if (!(total <= limit)) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights[", r, "]: row total ", total, " must be at most ",
                     limit, " (half the largest value)"));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status ValidateLogitsRow(const T* row, int64_t r, int64_t categories) {
  bool any_finite = false;
  for (int64_t j = 0; j < categories; ++j) {
    const T l = row[j];
    if (std::isnan(l) || l == std::numeric_limits<T>::infinity()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "logits[", r, "][", j, "] = ", l, ": must not be NaN or +inf"));
    }
    any_finite = any_finite || std::isfinite(l);
  }
  if (!any_finite) {
    return absl::InvalidArgumentError(
        absl::StrCat("logits[", r, "]: all logits are -inf"));
  }
  return absl::OkStatus();
}

// ValidateCategorical's checks but for the values themselves (below).
absl::Status ValidateShape(size_t values_size, const CategoricalShape& shape,
                           WeightKind kind);

absl::Status ValidateOutput(const CategoricalShape& shape, size_t out_size) {
  // Validated shape: rows >= 1 and 1 <= draws <= 2^20.
  if (shape.rows > std::numeric_limits<int64_t>::max() / shape.draws ||
      out_size != static_cast<uint64_t>(shape.rows * shape.draws)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "out.size() = ", out_size, ": must equal rows * draws = ", shape.rows,
        " * ", shape.draws));
  }
  return absl::OkStatus();
}

// The butterfly of the contract: per row one integer table
// (categorical_core.h).
struct ButterflyMethod {
  static uint64_t Prepare(const uint64_t* q, int64_t categories,
                          uint64_t* table) {
    return categorical::BuildRowTable(q, categories, table);
  }
  static int64_t Draw(const uint64_t* q, const uint64_t* table,
                      int64_t categories, uint64_t total, uint64_t r,
                      int lane) {
    return categorical::ButterflyDraw(q, table, categories, total, r, lane);
  }
};

// The textbook method on the same integers: a full sequential prefix sum
// and a binary search (the paper's Algorithm 3); it ignores the lane. Since
// every sum is exact, it must agree with the butterfly on every draw.
struct ReferenceMethod {
  static uint64_t Prepare(const uint64_t* q, int64_t categories,
                          uint64_t* prefix) {
    uint64_t sum = 0;
    for (int64_t j = 0; j < categories; ++j) {
      sum = sum + q[j];
      prefix[j] = sum;
    }
    return sum;
  }
  static int64_t Draw(const uint64_t* /*q*/, const uint64_t* prefix,
                      int64_t categories, uint64_t total, uint64_t r,
                      int /*lane*/) {
    const uint64_t x = categorical::MulHi64(r, total);
    return categorical::SearchBlockEnds(prefix, int64_t{1}, categories, x);
  }
};

template <typename T, typename Method>
absl::Status Sample(
    absl::Span<const T> values, const CategoricalShape& shape, WeightKind kind,
    uint64_t seed, uint64_t first_row, absl::Span<int32_t> out,
    CategoricalValues values_are = CategoricalValues::kUnchecked) {
  if (absl::Status s = values_are == CategoricalValues::kUnchecked
                           ? ValidateCategorical(values, shape, kind)
                           : ValidateShape(values.size(), shape, kind);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateOutput(shape, out.size()); !s.ok()) return s;

  const int64_t categories = shape.categories;
  const int32_t draws = shape.draws;
  // Scratch reused by every row: the weights made from logits, the
  // quantized weights and the row table. Each is K values, whatever the
  // number of rows.
  std::vector<T> weights(kind == WeightKind::kLogits ? categories : 0);
  std::vector<uint64_t> q(categories);
  std::vector<uint64_t> table(categories);

  for (int64_t r = 0; r < shape.rows; ++r) {
    const T* row = values.data() + r * categories;
    const T* w = row;
    if (kind == WeightKind::kLogits) {
      categorical::LogitsToWeights(row, categories, weights.data());
      w = weights.data();
    }
    const int scale =
        categorical::RowScale(categorical::RowScaleSum(w, categories));
    for (int64_t j = 0; j < categories; ++j) {
      q[j] = categorical::QuantizeWeight(w[j], scale);
    }
    const uint64_t total = Method::Prepare(q.data(), categories, table.data());
    const uint64_t item = first_row + static_cast<uint64_t>(r);
    const int lane = categorical::LaneOf(item);
    int32_t* row_out = out.data() + r * draws;
    PhiloxBlock block{};
    for (int32_t d = 0; d < draws; ++d) {
      if (d % categorical::kDrawsPerBlock == 0) {
        block = categorical::DrawBlock(seed, item, d);
      }
      row_out[d] = static_cast<int32_t>(
          Method::Draw(q.data(), table.data(), categories, total,
                       categorical::DrawBits(block, d), lane));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateShape(size_t values_size, const CategoricalShape& shape,
                           WeightKind kind) {
  if (shape.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows = ", shape.rows, ": must be >= 1"));
  }
  if (shape.categories < 1 ||
      shape.categories > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("categories = ", shape.categories, ": must be in [1, ",
                     std::numeric_limits<int32_t>::max(), "]"));
  }
  if (shape.draws < 1 || shape.draws > kMaxCategoricalDraws) {
    return absl::InvalidArgumentError(absl::StrCat("draws = ", shape.draws,
                                                   ": must be in [1, ",
                                                   kMaxCategoricalDraws, "]"));
  }
  if (shape.rows > std::numeric_limits<int64_t>::max() / shape.categories ||
      values_size != static_cast<uint64_t>(shape.rows * shape.categories)) {
    return absl::InvalidArgumentError(
        absl::StrCat(FieldName(kind), ".size() = ", values_size,
                     ": must equal rows * categories = ", shape.rows, " * ",
                     shape.categories));
  }
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::Status ValidateCategorical(absl::Span<const T> values,
                                 const CategoricalShape& shape,
                                 WeightKind kind) {
  if (absl::Status s = ValidateShape(values.size(), shape, kind); !s.ok()) {
    return s;
  }
  for (int64_t r = 0; r < shape.rows; ++r) {
    const T* row = values.data() + r * shape.categories;
    absl::Status s = kind == WeightKind::kLogits
                         ? ValidateLogitsRow(row, r, shape.categories)
                         : ValidateWeightsRow(row, r, shape.categories);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status SampleCategoricalCpu(absl::Span<const T> values,
                                  const CategoricalShape& shape,
                                  WeightKind kind, uint64_t seed,
                                  uint64_t first_row, absl::Span<int32_t> out,
                                  CategoricalValues values_are) {
  return Sample<T, ButterflyMethod>(values, shape, kind, seed, first_row, out,
                                    values_are);
}

template <typename T>
absl::Status SampleCategoricalReferenceCpu(absl::Span<const T> values,
                                           const CategoricalShape& shape,
                                           WeightKind kind, uint64_t seed,
                                           uint64_t first_row,
                                           absl::Span<int32_t> out) {
  return Sample<T, ReferenceMethod>(values, shape, kind, seed, first_row, out);
}

template absl::Status ValidateCategorical<float>(absl::Span<const float>,
                                                 const CategoricalShape&,
                                                 WeightKind);
template absl::Status ValidateCategorical<double>(absl::Span<const double>,
                                                  const CategoricalShape&,
                                                  WeightKind);
template absl::Status SampleCategoricalCpu<float>(absl::Span<const float>,
                                                  const CategoricalShape&,
                                                  WeightKind, uint64_t,
                                                  uint64_t, absl::Span<int32_t>,
                                                  CategoricalValues);
template absl::Status SampleCategoricalCpu<double>(
    absl::Span<const double>, const CategoricalShape&, WeightKind, uint64_t,
    uint64_t, absl::Span<int32_t>, CategoricalValues);
template absl::Status SampleCategoricalReferenceCpu<float>(
    absl::Span<const float>, const CategoricalShape&, WeightKind, uint64_t,
    uint64_t, absl::Span<int32_t>);
template absl::Status SampleCategoricalReferenceCpu<double>(
    absl::Span<const double>, const CategoricalShape&, WeightKind, uint64_t,
    uint64_t, absl::Span<int32_t>);

}  // namespace sampler::kernels
