// CPU enumeration: validation, the pairwise tree and the conversions in and
// out of the spaces; the pair convolutions are enumerate_cpu_convolve.cc.
// See enumerate.h for the contract and the accuracy design.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "enumerate_cpu_convolve.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels {
namespace {

// The name of a term's values in error messages; the server prefixes the
// path of the problem.
constexpr char kValuesField[] = "probabilities";

template <typename T>
constexpr const char* TypeName() {
  return sizeof(T) == sizeof(float) ? "float" : "double";
}

// a + b without signed overflow (which would be undefined behaviour).
bool AddOverflows(int64_t a, int64_t b, int64_t* sum) {
  if ((b > 0 && a > std::numeric_limits<int64_t>::max() - b) ||
      (b < 0 && a < std::numeric_limits<int64_t>::min() - b)) {
    return true;
  }
  *sum = a + b;
  return false;
}

// The pairwise tree over nodes (the terms, in order): each level combines
// nodes 0 and 1, 2 and 3, ... and passes an odd last node up unchanged,
// until one is left. `convolve(a, b, &r)` returns false when r is not
// representable; so does the tree.
template <typename Node, typename Convolve>
bool ReduceTree(std::vector<Node>* nodes, Convolve convolve) {
  while (nodes->size() > 1) {
    const size_t n = nodes->size();
    for (size_t i = 0; i + 1 < n; i += 2) {
      Node r;
      if (!convolve((*nodes)[i], (*nodes)[i + 1], &r)) return false;
      (*nodes)[i / 2] = std::move(r);
    }
    if (n % 2 == 1) (*nodes)[n / 2] = std::move((*nodes)[n - 1]);
    nodes->resize((n + 1) / 2);
  }
  return true;
}

// Whether a log-space problem has a value too large for the extended form.
template <typename T>
bool BeyondExtended(absl::Span<const PmfTerm<T>> terms) {
  for (const PmfTerm<T>& term : terms) {
    for (const T v : term.values) {
      if (std::isfinite(v) && std::abs(static_cast<double>(v)) >
                                  enumerate_internal::kMaxExtendedLog) {
        return true;
      }
    }
  }
  return false;
}

// The sum's values in double, in space `out`, by the extended-range tree.
template <typename T>
std::vector<double> EnumerateExtended(absl::Span<const PmfTerm<T>> terms,
                                      ProbSpace in, ProbSpace out) {
  using enumerate_internal::ExtendedPmf;
  std::vector<ExtendedPmf> nodes(terms.size());
  for (size_t t = 0; t < terms.size(); ++t) {
    const absl::Span<const T> values = terms[t].values;
    ExtendedPmf& node = nodes[t];
    node.mantissa.resize(values.size());
    node.exponent.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      const double v = static_cast<double>(values[i]);
      if (in == ProbSpace::kLog) {
        enumerate_internal::FromLog(v, &node.mantissa[i], &node.exponent[i]);
      } else {
        enumerate_internal::FromLinear(v, &node.mantissa[i], &node.exponent[i]);
      }
    }
  }
  ReduceTree(&nodes,
             [](const ExtendedPmf& a, const ExtendedPmf& b, ExtendedPmf* r) {
               enumerate_internal::ConvolveExtended(a, b, r);
               return true;
             });
  const ExtendedPmf& sum = nodes[0];
  std::vector<double> result(sum.size());
  for (size_t k = 0; k < sum.size(); ++k) {
    result[k] =
        out == ProbSpace::kLog
            ? enumerate_internal::ToLog(sum.mantissa[k], sum.exponent[k])
            : enumerate_internal::ToLinear(sum.mantissa[k], sum.exponent[k]);
  }
  return result;
}

// The same for log inputs beyond the extended form, in log space in double;
// false if a partial sum overflows (+inf).
template <typename T>
bool EnumerateLogDouble(absl::Span<const PmfTerm<T>> terms, ProbSpace out,
                        std::vector<double>* result) {
  std::vector<std::vector<double>> nodes(terms.size());
  for (size_t t = 0; t < terms.size(); ++t) {
    // -0.0 + 0.0 is +0.0, so a negative zero never reaches the output.
    for (const T v : terms[t].values) {
      nodes[t].push_back(static_cast<double>(v) + 0.0);
    }
  }
  if (!ReduceTree(&nodes, enumerate_internal::ConvolveLog)) return false;
  *result = std::move(nodes[0]);
  if (out == ProbSpace::kLinear) {
    for (double& v : *result) v = std::exp(v);
  }
  return true;
}

absl::Status SpaceIsKnown(ProbSpace space, const char* name) {
  if (space == ProbSpace::kLinear || space == ProbSpace::kLog) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      name, " = ", static_cast<int>(space), ": unknown probability space"));
}

}  // namespace

template <typename T>
absl::Status ValidateEnumerate(absl::Span<const PmfTerm<T>> terms,
                               ProbSpace in) {
  if (absl::Status s = SpaceIsKnown(in, "input space"); !s.ok()) return s;
  if (terms.empty()) {
    return absl::InvalidArgumentError("terms: at least one term is required");
  }
  int64_t offset_sum = 0;
  int64_t result_len = 1;
  for (size_t t = 0; t < terms.size(); ++t) {
    const PmfTerm<T>& term = terms[t];
    const int64_t len = static_cast<int64_t>(term.values.size());
    if (len == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("terms[", t, "]: empty PMF"));
    }
    if (len > kMaxEnumerateSupport) {
      return absl::InvalidArgumentError(
          absl::StrCat("terms[", t, "]: length ", len, " exceeds the maximum ",
                       kMaxEnumerateSupport));
    }
    // Clients compute support points as offset + i: every one must exist.
    int64_t last;
    if (AddOverflows(term.offset, len - 1, &last)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "terms[", t, "].offset = ", term.offset,
          ": the support's last point offset + ", len - 1, " overflows int64"));
    }
    if (AddOverflows(offset_sum, term.offset, &offset_sum)) {
      return absl::InvalidArgumentError(
          absl::StrCat("terms[", t, "].offset = ", term.offset,
                       ": the sum of the offsets overflows int64"));
    }
    // Both are at most 2^24 here, so this cannot overflow.
    result_len += len - 1;
    if (result_len > kMaxEnumerateSupport) {
      return absl::InvalidArgumentError(absl::StrCat(
          "terms[", t, "]: the sum's support length reaches ", result_len,
          ", more than the maximum ", kMaxEnumerateSupport));
    }
    int64_t result_last;
    if (AddOverflows(offset_sum, result_len - 1, &result_last)) {
      return absl::InvalidArgumentError(
          absl::StrCat("terms[", t, "].offset = ", term.offset,
                       ": the sum's last support point overflows int64"));
    }
    for (size_t i = 0; i < term.values.size(); ++i) {
      const T v = term.values[i];
      if (in == ProbSpace::kLinear) {
        if (!(std::isfinite(v) && v >= 0)) {
          return absl::InvalidArgumentError(
              absl::StrCat("terms[", t, "].", kValuesField, "[", i, "] = ", v,
                           ": must be finite and >= 0"));
        }
      } else if (std::isnan(v) || v == std::numeric_limits<T>::infinity()) {
        return absl::InvalidArgumentError(
            absl::StrCat("terms[", t, "].", kValuesField, "[", i, "] = ", v,
                         ": a log-probability must not be NaN or +inf"));
      }
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<Pmf<T>> EnumerateCpu(absl::Span<const PmfTerm<T>> terms,
                                    ProbSpace in, ProbSpace out) {
  if (absl::Status s = SpaceIsKnown(out, "output space"); !s.ok()) return s;
  if (absl::Status s = ValidateEnumerate(terms, in); !s.ok()) return s;

  Pmf<T> result;
  for (const PmfTerm<T>& term : terms) result.offset += term.offset;

  std::vector<double> acc;
  if (in == ProbSpace::kLog && BeyondExtended(terms)) {
    if (!EnumerateLogDouble(terms, out, &acc)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "terms: a log-probability of a partial sum overflows double"));
    }
  } else {
    acc = EnumerateExtended(terms, in, out);
  }

  result.values.resize(acc.size());
  for (size_t k = 0; k < acc.size(); ++k) {
    // The one rounding to T for float.
    const T rounded = static_cast<T>(acc[k]);
    const bool representable =
        out == ProbSpace::kLinear
            ? std::isfinite(rounded)
            : rounded != std::numeric_limits<T>::infinity();
    if (!representable) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the sum's ",
          out == ProbSpace::kLinear ? "probability" : "log-probability", " at ",
          result.offset + static_cast<int64_t>(k), " overflows ", TypeName<T>(),
          out == ProbSpace::kLinear ? ": ask for log-space output" : ""));
    }
    result.values[k] = rounded;
  }
  return result;
}

template absl::Status ValidateEnumerate<float>(
    absl::Span<const PmfTerm<float>> terms, ProbSpace in);
template absl::Status ValidateEnumerate<double>(
    absl::Span<const PmfTerm<double>> terms, ProbSpace in);
template absl::StatusOr<Pmf<float>> EnumerateCpu<float>(
    absl::Span<const PmfTerm<float>> terms, ProbSpace in, ProbSpace out);
template absl::StatusOr<Pmf<double>> EnumerateCpu<double>(
    absl::Span<const PmfTerm<double>> terms, ProbSpace in, ProbSpace out);

}  // namespace sampler::kernels
