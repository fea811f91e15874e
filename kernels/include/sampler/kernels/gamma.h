// Gamma variates: host entry points (validation and the CPU backend).
//
// The CPU backend is the reference the CUDA kernel is checked against and
// the backend that serves when no GPU is present. Its per-item arithmetic is
// gamma_core.h, shared with the kernel; the layout of random words is
// docs/randomness.md, "Gamma".
#ifndef SAMPLER_KERNELS_GAMMA_H_
#define SAMPLER_KERNELS_GAMMA_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace sampler::kernels {

// `count` samples sharing one shape and scale. Groups are laid end to end in
// the output: the first sample of group g is item (sum of earlier counts).
template <typename T>
struct GammaGroup {
  T shape;
  T scale;
  int64_t count;
};

// InvalidArgument (naming field, index and value) unless shape and scale
// have equal sizes and every shape and scale is finite, > 0 and normal.
// Subnormal parameters are refused because 1/shape and log(scale) lose their
// meaning there (and device code may flush them to zero).
template <typename T>
absl::Status ValidateGammaParams(absl::Span<const T> shape,
                                 absl::Span<const T> scale);

// InvalidArgument unless every group's shape and scale pass the checks of
// ValidateGammaParams, every count is >= 0 and the counts sum to
// `total_items`.
template <typename T>
absl::Status ValidateGammaGroups(absl::Span<const GammaGroup<T>> groups,
                                 uint64_t total_items);

// Per-element parameters: out[i] is the variate of item first_item + i with
// shape[i] and scale[i]; its logarithm when `log_output` (the only form that
// does not underflow for tiny shapes). shape, scale and out must have equal
// sizes. InternalError only if an item exhausts kGammaMaxAttempts (never
// expected). `first_item` lets a request be computed in chunks with the
// same bits as one call.
template <typename T>
absl::Status SampleGammaCpu(absl::Span<const T> shape,
                            absl::Span<const T> scale, bool log_output,
                            uint64_t seed, uint64_t first_item,
                            absl::Span<T> out);

// Grouped parameters: the counts must sum to out.size(); out[i] is item
// first_item + i. Bit for bit what SampleGammaCpu gives with each group's
// parameters repeated `count` times.
template <typename T>
absl::Status SampleGammaGroupedCpu(absl::Span<const GammaGroup<T>> groups,
                                   bool log_output, uint64_t seed,
                                   uint64_t first_item, absl::Span<T> out);

extern template absl::Status ValidateGammaParams<float>(
    absl::Span<const float>, absl::Span<const float>);
extern template absl::Status ValidateGammaParams<double>(
    absl::Span<const double>, absl::Span<const double>);
extern template absl::Status ValidateGammaGroups<float>(
    absl::Span<const GammaGroup<float>>, uint64_t);
extern template absl::Status ValidateGammaGroups<double>(
    absl::Span<const GammaGroup<double>>, uint64_t);
extern template absl::Status SampleGammaCpu<float>(absl::Span<const float>,
                                                   absl::Span<const float>,
                                                   bool, uint64_t, uint64_t,
                                                   absl::Span<float>);
extern template absl::Status SampleGammaCpu<double>(absl::Span<const double>,
                                                    absl::Span<const double>,
                                                    bool, uint64_t, uint64_t,
                                                    absl::Span<double>);
extern template absl::Status SampleGammaGroupedCpu<float>(
    absl::Span<const GammaGroup<float>>, bool, uint64_t, uint64_t,
    absl::Span<float>);
extern template absl::Status SampleGammaGroupedCpu<double>(
    absl::Span<const GammaGroup<double>>, bool, uint64_t, uint64_t,
    absl::Span<double>);

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_GAMMA_H_
