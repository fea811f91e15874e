// Dirichlet vectors: host entry points (validation and the CPU backend).
//
// Each component is a gamma log-variate (gamma_core.h, KindTag::kDirichlet)
// and each row is normalised by a log-sum-exp, so concentrations far below 1
// (whose gamma variates underflow in linear space) still give proper
// vectors. Layout of random words: docs/randomness.md, "Dirichlet".
#ifndef SAMPLER_KERNELS_DIRICHLET_H_
#define SAMPLER_KERNELS_DIRICHLET_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace sampler::kernels {

// InvalidArgument (naming field, index and value) unless row_offsets has
// rows + 1 entries starting at 0, strictly increasing (every row has at
// least one component) and ending at alpha.size(), and every alpha is
// finite, > 0 and normal.
template <typename T>
absl::Status ValidateDirichletParams(absl::Span<const T> alpha,
                                     absl::Span<const int64_t> row_offsets);

// Rows are concentration vectors laid end to end: row r is
// alpha[row_offsets[r] .. row_offsets[r + 1]). out[j] is component j of the
// flat layout, drawn as item first_item + j; its logarithm when
// `log_output`. out.size() must equal alpha.size(). InternalError only if an
// item exhausts kGammaMaxAttempts (never expected); OutOfRange if every
// component of a row underflows to a log-variate of -inf, which is possible
// only when all its concentrations are within a few powers of two of the
// smallest normal number (below about 5e-38 in float, 2e-307 in double).
template <typename T>
absl::Status SampleDirichletCpu(absl::Span<const T> alpha,
                                absl::Span<const int64_t> row_offsets,
                                bool log_output, uint64_t seed,
                                uint64_t first_item, absl::Span<T> out);

extern template absl::Status ValidateDirichletParams<float>(
    absl::Span<const float>, absl::Span<const int64_t>);
extern template absl::Status ValidateDirichletParams<double>(
    absl::Span<const double>, absl::Span<const int64_t>);
extern template absl::Status SampleDirichletCpu<float>(
    absl::Span<const float>, absl::Span<const int64_t>, bool, uint64_t,
    uint64_t, absl::Span<float>);
extern template absl::Status SampleDirichletCpu<double>(
    absl::Span<const double>, absl::Span<const int64_t>, bool, uint64_t,
    uint64_t, absl::Span<double>);

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_DIRICHLET_H_
