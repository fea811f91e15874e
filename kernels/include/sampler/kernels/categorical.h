// Draws from many discrete distributions (SampleCategorical): each row of
// `categories` non-negative weights (or logits) is one distribution, and each
// row gets `draws` independent draws. The bits follow docs/randomness.md,
// section "Categorical" (tag CAT2): weights quantized exactly to 64-bit
// integers, then the butterfly search of Steele & Tristan
// (categorical-butterfly-partial-sums.txt, Algorithms 8 to 10) over a
// remnant-first layout with a 64-bit uniform per draw, emulated here
// operation for operation so that the CPU backend and the CUDA kernel
// return identical indices. Every share of 2^-32 or more is realized
// within 6e-9 of itself, in float32 as in float64.
// categorical_core.h holds the arithmetic that both share.
#ifndef SAMPLER_KERNELS_CATEGORICAL_H_
#define SAMPLER_KERNELS_CATEGORICAL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace sampler::kernels {

enum class WeightKind {
  kWeights,  // Relative probabilities: finite, >= 0, not all zero.
  kLogits,   // Log relative probabilities: finite or -inf, not all -inf.
};

struct CategoricalShape {
  int64_t rows = 0;
  int64_t categories = 0;  // K, at most INT32_MAX (indices are int32).
  int32_t draws = 1;       // Draws per row.
};

// Bounds the work and the Philox draw counter of one row.
inline constexpr int32_t kMaxCategoricalDraws = 1 << 20;

// OK, or InvalidArgument naming the field, the index and the value, unless:
// rows >= 1; 1 <= categories <= INT32_MAX; 1 <= draws <= kMaxCategoricalDraws;
// values.size() == rows * categories; and per row, for weights: each finite
// and >= 0, the total > 0 (subnormal totals included: they are rescaled
// exactly) and (summed in double) at most numeric_limits<T>::max() / 2, so
// that no block total in T can overflow;
// for logits: no NaN, no +inf, at least one finite value.
// Instantiated for T = float and T = double.
template <typename T>
absl::Status ValidateCategorical(absl::Span<const T> values,
                                 const CategoricalShape& shape,
                                 WeightKind kind);

// The contract: the butterfly search of docs/randomness.md on the exact
// integer weights of a row in precision T.
// `values` holds rows first_row .. first_row + rows - 1 of a request, row
// after row; row r is item first_row + r of the request (its Philox stream)
// and runs on lane (first_row + r) mod 32, exactly as the CUDA kernel would,
// so a request may be sampled in chunks of any size with the same result.
// Writes draw d of row r to out[r * draws + d]. Validates everything
// (ValidateCategorical, and out.size() == rows * draws) before writing,
// unless `values_are` says that ValidateCategorical has already accepted
// the values for the same kind, whole or as rows of a larger set (the
// server validates a request once, when it parses it, and samples it in
// pieces): the shape and out.size() are checked then, but the values are
// not read a second time. Values never validated must not be passed so.
enum class CategoricalValues { kUnchecked, kValidated };
template <typename T>
absl::Status SampleCategoricalCpu(
    absl::Span<const T> values, const CategoricalShape& shape, WeightKind kind,
    uint64_t seed, uint64_t first_row, absl::Span<int32_t> out,
    CategoricalValues values_are = CategoricalValues::kUnchecked);

// The textbook method for comparison in tests: the same integer weights
// and uniforms as SampleCategoricalCpu, a full sequential prefix sum p_j and
// a binary search for the smallest j with X < p_j. Every sum being exact, it
// returns exactly what the butterfly returns.
template <typename T>
absl::Status SampleCategoricalReferenceCpu(absl::Span<const T> values,
                                           const CategoricalShape& shape,
                                           WeightKind kind, uint64_t seed,
                                           uint64_t first_row,
                                           absl::Span<int32_t> out);

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_CATEGORICAL_H_
