// CPU backend of SampleDirichlet: gamma log-variates from gamma_core.h (with
// the Dirichlet kind tag), then a log-sum-exp normalisation per row in
// component order, exactly as docs/randomness.md lays it out.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/format_value.h"
#include "sampler/kernels/gamma_core.h"
#include "sampler/kernels/philox.h"

namespace sampler::kernels {

template <typename T>
absl::Status ValidateDirichletParams(absl::Span<const T> alpha,
                                     absl::Span<const int64_t> row_offsets) {
  if (row_offsets.empty()) {
    return absl::InvalidArgumentError(
        "row_offsets must have rows + 1 entries; it is empty");
  }
  if (row_offsets[0] != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("row_offsets[0] = ", row_offsets[0], ": must be 0"));
  }
  for (size_t r = 1; r < row_offsets.size(); ++r) {
    if (row_offsets[r] <= row_offsets[r - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "row_offsets[", r, "] = ", row_offsets[r], ": must be > row_offsets[",
          r - 1, "] = ", row_offsets[r - 1],
          " (every row needs at least one component)"));
    }
  }
  // Non-negative after the checks above, so the comparison is unsigned-safe.
  if (static_cast<uint64_t>(row_offsets.back()) != alpha.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "row_offsets[", row_offsets.size() - 1, "] = ", row_offsets.back(),
        ": must equal the number of concentrations, ", alpha.size()));
  }
  for (size_t j = 0; j < alpha.size(); ++j) {
    if (!(alpha[j] > T(0) && std::isnormal(alpha[j]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("alpha[", j, "] = ", FormatValue(alpha[j]),
                       ": must be finite, > 0 and not subnormal"));
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status SampleDirichletCpu(absl::Span<const T> alpha,
                                absl::Span<const int64_t> row_offsets,
                                bool log_output, uint64_t seed,
                                uint64_t first_item, absl::Span<T> out) {
  if (absl::Status s = ValidateDirichletParams(alpha, row_offsets); !s.ok()) {
    return s;
  }
  if (out.size() != alpha.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "out has ", out.size(), " elements but alpha has ", alpha.size()));
  }
  for (size_t r = 0; r + 1 < row_offsets.size(); ++r) {
    const size_t begin = static_cast<size_t>(row_offsets[r]);
    const size_t end = static_cast<size_t>(row_offsets[r + 1]);
    // out holds the row's log-gamma variates until the row is normalised.
    T m = -std::numeric_limits<T>::infinity();
    for (size_t j = begin; j < end; ++j) {
      const uint64_t item = first_item + j;
      const GammaShape<T> g = GammaPrepare(alpha[j]);
      const GammaDraw<T> x = GammaDrawItem(KindTag::kDirichlet, seed, item, g);
      if (std::isnan(x.dv)) {
        return absl::InternalError(absl::StrCat(
            "Dirichlet item ", item, " (alpha ", FormatValue(alpha[j]),
            ") exceeded ", kGammaMaxAttempts, " rejection attempts"));
      }
      out[j] = GammaLogUnscaled(g, x);
      if (out[j] > m) m = out[j];
    }
    // Every log-variate is -inf only when all concentrations of the row are
    // within a few powers of two of the smallest normal number; the
    // normalisation would be -inf - -inf there. The request was valid but its
    // answer is not representable: OutOfRange, not an internal error.
    if (m == -std::numeric_limits<T>::infinity()) {
      return absl::OutOfRangeError(absl::StrCat(
          "Dirichlet row ", r,
          ": every component's log-gamma variate underflowed to -inf "
          "(concentrations too close to the smallest normal number)"));
    }
    T sum = T(0);
    for (size_t j = begin; j < end; ++j) sum += DirichletTerm(out[j], m);
    const T log_sum = DirichletLogSum(sum);
    for (size_t j = begin; j < end; ++j) {
      out[j] = DirichletOutput(out[j], m, log_sum, log_output);
    }
  }
  return absl::OkStatus();
}

template absl::Status ValidateDirichletParams<float>(absl::Span<const float>,
                                                     absl::Span<const int64_t>);
template absl::Status ValidateDirichletParams<double>(
    absl::Span<const double>, absl::Span<const int64_t>);
template absl::Status SampleDirichletCpu<float>(absl::Span<const float>,
                                                absl::Span<const int64_t>, bool,
                                                uint64_t, uint64_t,
                                                absl::Span<float>);
template absl::Status SampleDirichletCpu<double>(absl::Span<const double>,
                                                 absl::Span<const int64_t>,
                                                 bool, uint64_t, uint64_t,
                                                 absl::Span<double>);

}  // namespace sampler::kernels
