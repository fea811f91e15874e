// Enumeration: the PMF of a sum of independent discrete random variables.
//
// Each term is a PMF on a contiguous range of integers that may start
// anywhere: offset, offset + 1, ..., offset + len - 1. The sum's support
// starts at the sum of the terms' offsets and has length sum(len - 1) + 1;
// its probabilities are the convolution of the terms' probabilities,
// r_k = sum_j p_j q_{k-j}.
//
// The terms combine in a balanced pairwise tree, in a fixed order: the
// first level convolves terms 0 and 1, 2 and 3, ..., an odd last term
// passing up unchanged; every further level does the same to the previous
// level's results, until one is left. (For terms t0..t4: ((t0 * t1) *
// (t2 * t3)) * t4.) A sum of n terms is ceil(log2 n) levels of independent
// pair convolutions, of about a left fold's total work (for n equal terms
// about half of it). The CUDA backend (cuda/enumerate.h) runs the same
// tree, a level of every problem of a batch at a time.
//
// PMFs need not be normalised: the result's total is the product of the
// terms' totals (so normalised terms give a normalised sum).
//
// The CPU implementation here is the no-GPU backend and the reference that
// the CUDA kernels are checked against (they agree within a floating-point
// tolerance, not bit for bit). Every pair convolution is direct, O(m n);
// EnumeratePairCount() gives the left fold's count, the measure callers
// bound the cost by.
#ifndef SAMPLER_KERNELS_ENUMERATE_H_
#define SAMPLER_KERNELS_ENUMERATE_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sampler::kernels {

// Whether values are probabilities or their natural logarithms. Log space
// keeps sums whose probabilities underflow (long sums of small
// probabilities) representable.
enum class ProbSpace { kLinear, kLog };

// One term of a sum: values[i] is the probability (or log-probability) of
// offset + i. The values are borrowed, not owned.
template <typename T>
struct PmfTerm {
  int64_t offset = 0;
  absl::Span<const T> values;
};

// An owned PMF: values[i] belongs to offset + i.
template <typename T>
struct Pmf {
  int64_t offset = 0;
  std::vector<T> values;
};

// Cap on the length of every term and of the result. It bounds memory, not
// time: the direct convolutions cost about EnumeratePairCount()
// multiply-adds.
inline constexpr int64_t kMaxEnumerateSupport = int64_t{1} << 24;

// Checks a problem before any work is done. InvalidArgument, naming the
// field, its index and the offending value, unless:
//   - there is at least one term;
//   - every term is non-empty and at most kMaxEnumerateSupport long;
//   - linear values are finite and >= 0; log values are neither NaN nor +inf
//     (-inf, a zero probability, is allowed);
//   - the result length sum(len - 1) + 1 is at most kMaxEnumerateSupport;
//   - the offsets' sum, and the last point of every support (each term's
//     and the sum's), fit in int64.
// `in` must be kLinear or kLog.
template <typename T>
absl::Status ValidateEnumerate(absl::Span<const PmfTerm<T>> terms,
                               ProbSpace in);

// The PMF of the sum of the terms, in space `out`, for input values in space
// `in` (each kLinear or kLog). Validates with ValidateEnumerate first.
//
// Arithmetic (deterministic: a fixed tree, fixed summation orders, no
// threads, so the same input always gives the same bits):
//   - Values are carried in extended-range linear form, m * 2^e with m a
//     double in [0.5, 1) and e an int64 (linear inputs convert exactly, log
//     inputs by exp after an exact reduction by ln 2), so no partial sum
//     under- or overflows, however small (1e-300 and far below) or large its
//     values. Each pair convolution runs in tiles of 512 outputs converted
//     (by exact powers of two and an exponential tilt: in whole bits,
//     exact, or where needed in 1/32 bits, enumerate_tilt.h) into plain
//     doubles, a vectorised multiply-add with blocked sums; an output the
//     tile's scale cannot hold accurately is recomputed on its own. Each
//     tree level costs every output a relative error of at most
//     (136 + J / 4096) double roundings, J its pairs, whatever its
//     magnitude (about 3e-14 for J = 15,000; the tree has ceil(log2 n)
//     levels). The result is converted to `out` at the end: a log value
//     adds the rounding of the log value itself (half an ulp of its
//     magnitude: beyond 1e-12 relative only for |log| > 8192), a linear
//     value is rounded once (0 below T's range). Float results are rounded
//     once from double at the end.
//   - Log inputs beyond +-2^32 (whose own ulp is 5e-7) do not fit the
//     extended form; such a problem is computed in log space in double,
//     out_k = m_k + log1p(sum_{j != j*} exp(a_j + b_{k-j} - m_k)) where m_k =
//     a_{j*} + b_{k-j*} is the largest pair (first in j on ties) and the
//     exp-sum is compensated, over the same tree; each level costs an
//     absolute error of a few ulps of the log values' magnitude.
//   An element with no pair of non-zero probability is exactly -inf (log)
//   or exactly 0 (linear).
//
// Exact zeros: an output element whose every pair has a zero factor is
// exactly zero (-inf in log space), e.g. supports {0, 2} + {0, 2} give
// exactly zero at the odd sums.
//
// A result that does not fit in T is InvalidArgument rather than inf or NaN:
// a linear-space element that overflows T (ask for log-space output
// instead), or a log-space element that overflows to +inf (or, for log
// inputs beyond +-2^32, a partial sum that does). Elements too small for T
// are 0 in linear space (-inf in log space only for a log value below
// -max(T)).
template <typename T>
absl::StatusOr<Pmf<T>> EnumerateCpu(absl::Span<const PmfTerm<T>> terms,
                                    ProbSpace in, ProbSpace out);

// The number of pair products of a left fold, sum over steps of
// len(partial sum) * len(term), saturating at INT64_MAX: the measure of the
// work that callers limiting CPU time use (the tree's own count is of the
// same order: about half of it for many equal terms). Meaningful for
// terms that pass ValidateEnumerate.
template <typename T>
int64_t EnumeratePairCount(absl::Span<const PmfTerm<T>> terms) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (terms.empty()) return 0;
  int64_t acc_len = static_cast<int64_t>(terms[0].values.size());
  int64_t pairs = 0;
  for (size_t t = 1; t < terms.size(); ++t) {
    const int64_t len = static_cast<int64_t>(terms[t].values.size());
    if (len != 0 && acc_len > kMax / len) return kMax;
    const int64_t step = acc_len * len;
    if (pairs > kMax - step) return kMax;
    pairs += step;
    acc_len += len - 1;
  }
  return pairs;
}

extern template absl::Status ValidateEnumerate<float>(
    absl::Span<const PmfTerm<float>> terms, ProbSpace in);
extern template absl::Status ValidateEnumerate<double>(
    absl::Span<const PmfTerm<double>> terms, ProbSpace in);
extern template absl::StatusOr<Pmf<float>> EnumerateCpu<float>(
    absl::Span<const PmfTerm<float>> terms, ProbSpace in, ProbSpace out);
extern template absl::StatusOr<Pmf<double>> EnumerateCpu<double>(
    absl::Span<const PmfTerm<double>> terms, ProbSpace in, ProbSpace out);

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_ENUMERATE_H_
