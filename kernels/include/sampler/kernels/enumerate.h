// Enumeration: the PMF of a sum of independent discrete random variables.
//
// Each term is a PMF on a contiguous range of integers that may start
// anywhere: offset, offset + 1, ..., offset + len - 1. The sum's support
// starts at the sum of the terms' offsets and has length sum(len - 1) + 1;
// its probabilities are the convolution of the terms' probabilities,
// r_k = sum_j p_j q_{k-j}, folded left to right: ((t0 * t1) * t2) * ...
//
// PMFs need not be normalised: the result's total is the product of the
// terms' totals (so normalised terms give a normalised sum).
//
// The CPU implementation here is the no-GPU backend and the reference that
// the CUDA kernels are checked against (they agree within a floating-point
// tolerance, not bit for bit). It is a direct O(m n) convolution per fold
// step; EnumeratePairCount() gives that cost so that callers can bound it.
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
// time: the direct convolution costs EnumeratePairCount() multiply-adds.
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
// Arithmetic (deterministic: fixed summation order, no threads, so the same
// input always gives the same bits):
//   - linear in and out: direct convolution in double, each output element
//     accumulated in ascending j with compensated (Neumaier) summation;
//     intermediates stay double; float results are rounded once at the end.
//     All terms are non-negative, so every step is well conditioned and the
//     relative error per element is a few ulps of double per fold step.
//     Should a partial sum leave double's range (unnormalised terms with
//     huge values), the whole problem is recomputed in log space below and
//     exponentiated at the end, so only a result that itself overflows fails.
//   - otherwise (log in or out, or both): log-space convolution in double,
//     out_k = m_k + log1p(sum_{j != j*} exp(a_j + b_{k-j} - m_k)) where
//     m_k = a_{j*} + b_{k-j*} is the largest pair (first in j on ties) and
//     the exp-sum is compensated. Linear inputs are converted with log
//     (zeros become -inf); a log result wanted in linear space is
//     exponentiated at the end. An element with no pair of non-zero
//     probability is exactly -inf (log) or exactly 0 (linear). Each fold
//     step costs an absolute error of a few ulps of the magnitude of the log
//     values involved (a relative error of that size in probability); a log
//     result rounded to float adds half an ulp of its own magnitude.
//
// Exact zeros: an output element whose every pair has a zero factor is
// exactly zero (-inf in log space), e.g. supports {0, 2} + {0, 2} give
// exactly zero at the odd sums.
//
// A result that does not fit in T is InvalidArgument rather than inf or NaN:
// a linear-space element that overflows T (ask for log-space output
// instead), or a log-space element that overflows to +inf. Elements too
// small for T are 0 in linear space (-inf in log space only for a log value
// below -max(T)).
template <typename T>
absl::StatusOr<Pmf<T>> EnumerateCpu(absl::Span<const PmfTerm<T>> terms,
                                    ProbSpace in, ProbSpace out);

// The number of pair products of the left fold, sum over steps of
// len(partial sum) * len(term), saturating at INT64_MAX: the work of the
// direct convolution, for callers that limit CPU time. Meaningful for terms
// that pass ValidateEnumerate.
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
