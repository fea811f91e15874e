// CPU backend of SampleGamma: validation and a loop over items around the
// shared per-item arithmetic of gamma_core.h.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/format_value.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/gamma_core.h"
#include "sampler/kernels/philox.h"

namespace sampler::kernels {
namespace {

// Finite, > 0 and normal: zero, negatives, NaN, infinities and subnormals
// all fail.
template <typename T>
bool IsPositiveNormal(T x) {
  return x > T(0) && std::isnormal(x);
}

template <typename T>
absl::Status CheckPositiveNormal(absl::string_view field, T x) {
  if (IsPositiveNormal(x)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, " = ", FormatValue(x), ": must be finite, > 0 and not subnormal"));
}

template <typename T>
absl::Status CapReached(uint64_t item, T shape) {
  return absl::InternalError(
      absl::StrCat("gamma item ", item, " (shape ", FormatValue(shape),
                   ") exceeded ", kGammaMaxAttempts, " rejection attempts"));
}

// The per-item loops, apart from validation and error words so that they
// can be flattened into their FMA clone (SAMPLER_HOST_FMA_CLONES). Each
// returns the index of the first item that reached the rejection cap, or
// the item count when none did.
template <typename T>
SAMPLER_HOST_FMA_CLONES size_t SampleItems(absl::Span<const T> shape,
                                           absl::Span<const T> scale,
                                           bool log_output, uint64_t seed,
                                           uint64_t first_item,
                                           absl::Span<T> out) {
  for (size_t i = 0; i < shape.size(); ++i) {
    const uint64_t item = first_item + i;
    const GammaShape<T> g = GammaPrepare(shape[i]);
    const T log_scale = log_output ? detmath::Log(scale[i]) : T(0);
    const T x = GammaSampleItem(KindTag::kGamma, seed, item, g, scale[i],
                                log_scale, log_output);
    if (std::isnan(x)) return i;
    out[i] = x;
  }
  return shape.size();
}

// `failed_shape`: the shape of the item that reached the cap, if one did.
template <typename T>
SAMPLER_HOST_FMA_CLONES size_t SampleGroupItems(
    absl::Span<const GammaGroup<T>> groups, bool log_output, uint64_t seed,
    uint64_t first_item, absl::Span<T> out, T* failed_shape) {
  size_t i = 0;
  for (const GammaGroup<T>& group : groups) {
    // Per-group constants: pure functions of the parameters, so computing
    // them once gives the same bits as the per-element path.
    const GammaShape<T> g = GammaPrepare(group.shape);
    const T log_scale = log_output ? detmath::Log(group.scale) : T(0);
    for (int64_t k = 0; k < group.count; ++k, ++i) {
      const uint64_t item = first_item + i;
      const T x = GammaSampleItem(KindTag::kGamma, seed, item, g, group.scale,
                                  log_scale, log_output);
      if (std::isnan(x)) {
        *failed_shape = group.shape;
        return i;
      }
      out[i] = x;
    }
  }
  return out.size();
}

}  // namespace

template <typename T>
absl::Status ValidateGammaParams(absl::Span<const T> shape,
                                 absl::Span<const T> scale) {
  if (shape.size() != scale.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape and scale must have the same size: shape has ",
                     shape.size(), " elements, scale ", scale.size()));
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    absl::Status s =
        CheckPositiveNormal(absl::StrCat("shape[", i, "]"), shape[i]);
    if (!s.ok()) return s;
    s = CheckPositiveNormal(absl::StrCat("scale[", i, "]"), scale[i]);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status ValidateGammaGroups(absl::Span<const GammaGroup<T>> groups,
                                 uint64_t total_items) {
  uint64_t sum = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    absl::Status s = CheckPositiveNormal(absl::StrCat("groups[", g, "].shape"),
                                         groups[g].shape);
    if (!s.ok()) return s;
    s = CheckPositiveNormal(absl::StrCat("groups[", g, "].scale"),
                            groups[g].scale);
    if (!s.ok()) return s;
    const int64_t count = groups[g].count;
    if (count < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("groups[", g, "].count = ", count, ": must be >= 0"));
    }
    // Compared before adding, so that huge counts cannot wrap the sum.
    if (static_cast<uint64_t>(count) > total_items - sum) {
      return absl::InvalidArgumentError(
          absl::StrCat("groups[", g, "].count = ", count,
                       ": the group counts add up to more than the ",
                       total_items, " outputs"));
    }
    sum += static_cast<uint64_t>(count);
  }
  if (sum != total_items) {
    return absl::InvalidArgumentError(
        absl::StrCat("groups: the counts add up to ", sum, " but there are ",
                     total_items, " outputs"));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status SampleGammaCpu(absl::Span<const T> shape,
                            absl::Span<const T> scale, bool log_output,
                            uint64_t seed, uint64_t first_item,
                            absl::Span<T> out) {
  if (absl::Status s = ValidateGammaParams(shape, scale); !s.ok()) return s;
  if (out.size() != shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "out has ", out.size(), " elements but shape has ", shape.size()));
  }
  const size_t failed =
      SampleItems(shape, scale, log_output, seed, first_item, out);
  if (failed < shape.size()) {
    return CapReached(first_item + failed, shape[failed]);
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status SampleGammaGroupedCpu(absl::Span<const GammaGroup<T>> groups,
                                   bool log_output, uint64_t seed,
                                   uint64_t first_item, absl::Span<T> out) {
  if (absl::Status s = ValidateGammaGroups(groups, out.size()); !s.ok()) {
    return s;
  }
  T failed_shape = T(0);
  const size_t failed = SampleGroupItems(groups, log_output, seed, first_item,
                                         out, &failed_shape);
  if (failed < out.size()) {
    return CapReached(first_item + failed, failed_shape);
  }
  return absl::OkStatus();
}

template absl::Status ValidateGammaParams<float>(absl::Span<const float>,
                                                 absl::Span<const float>);
template absl::Status ValidateGammaParams<double>(absl::Span<const double>,
                                                  absl::Span<const double>);
template absl::Status ValidateGammaGroups<float>(
    absl::Span<const GammaGroup<float>>, uint64_t);
template absl::Status ValidateGammaGroups<double>(
    absl::Span<const GammaGroup<double>>, uint64_t);
template absl::Status SampleGammaCpu<float>(absl::Span<const float>,
                                            absl::Span<const float>, bool,
                                            uint64_t, uint64_t,
                                            absl::Span<float>);
template absl::Status SampleGammaCpu<double>(absl::Span<const double>,
                                             absl::Span<const double>, bool,
                                             uint64_t, uint64_t,
                                             absl::Span<double>);
template absl::Status SampleGammaGroupedCpu<float>(
    absl::Span<const GammaGroup<float>>, bool, uint64_t, uint64_t,
    absl::Span<float>);
template absl::Status SampleGammaGroupedCpu<double>(
    absl::Span<const GammaGroup<double>>, bool, uint64_t, uint64_t,
    absl::Span<double>);

}  // namespace sampler::kernels
