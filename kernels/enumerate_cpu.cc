// CPU enumeration: direct convolution, linear or log space, folded left to
// right. See enumerate.h for the contract and the accuracy design.
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
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels {
namespace {

// The name of a term's values in error messages; the server prefixes the
// path of the problem.
constexpr char kValuesField[] = "probabilities";

constexpr double kInf = std::numeric_limits<double>::infinity();

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

// Compensated (Neumaier) summation: the running sum plus the rounding errors
// it has dropped, so that a sum of n non-negative terms is accurate to a few
// ulps whatever n is (plain summation loses up to n ulps).
struct NeumaierSum {
  double sum = 0;
  double compensation = 0;

  void Add(double x) {
    const double t = sum + x;
    // The larger operand's low bits survive in t; recover the smaller's.
    if (std::abs(sum) >= std::abs(x)) {
      compensation += (sum - t) + x;
    } else {
      compensation += (x - t) + sum;
    }
    sum = t;
  }
  double Total() const { return sum + compensation; }
};

// Index range of a in r_k = sum_j a_j b_{k-j}: max(0, k-n+1) .. min(m-1, k).
struct PairRange {
  size_t lo;
  size_t hi;  // inclusive
};
PairRange Pairs(size_t k, size_t m, size_t n) {
  return {k >= n - 1 ? k - (n - 1) : 0, std::min(m - 1, k)};
}

// One linear fold step, r = a * b. Summation in ascending j fixes the order.
void ConvolveLinear(const std::vector<double>& a, const std::vector<double>& b,
                    std::vector<double>* r) {
  const size_t m = a.size(), n = b.size();
  r->resize(m + n - 1);
  for (size_t k = 0; k < m + n - 1; ++k) {
    const PairRange range = Pairs(k, m, n);
    NeumaierSum s;
    for (size_t j = range.lo; j <= range.hi; ++j) s.Add(a[j] * b[k - j]);
    (*r)[k] = s.Total();
  }
}

// One log-space fold step, r = logsumexp-convolution of a and b. Inputs are
// finite or -inf. Subtracting the largest pair m_k first keeps every exp in
// (0, 1], so nothing overflows and the largest pair is never lost to
// underflow; the largest pair's own term (exactly 1) is left out of the sum
// and added back by log1p, which keeps the small remainder's precision.
// An element whose pairs are all -inf (zero probability) stays exactly -inf;
// one whose largest pair overflows is +inf, which the caller rejects.
void ConvolveLog(const std::vector<double>& a, const std::vector<double>& b,
                 std::vector<double>* r) {
  const size_t m = a.size(), n = b.size();
  r->resize(m + n - 1);
  for (size_t k = 0; k < m + n - 1; ++k) {
    const PairRange range = Pairs(k, m, n);
    double max = -kInf;
    size_t arg_max = range.lo;
    for (size_t j = range.lo; j <= range.hi; ++j) {
      const double v = a[j] + b[k - j];
      if (v > max) {
        max = v;
        arg_max = j;
      }
    }
    if (!std::isfinite(max)) {
      (*r)[k] = max;
      continue;
    }
    NeumaierSum s;
    for (size_t j = range.lo; j <= range.hi; ++j) {
      if (j == arg_max) continue;
      // exp(-inf) = 0 for the zero-probability pairs.
      s.Add(std::exp((a[j] + b[k - j]) - max));
    }
    (*r)[k] = max + std::log1p(s.Total());
  }
}

// A term's values in double, in the space the fold computes in. -0.0 + 0.0
// is +0.0, so a negative zero never reaches the output.
template <typename T>
void ToDouble(absl::Span<const T> values, ProbSpace in, bool log_path,
              std::vector<double>* out) {
  out->resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = static_cast<double>(values[i]);
    if (in == ProbSpace::kLinear && log_path) {
      (*out)[i] = v == 0 ? -kInf : std::log(v);
    } else {
      (*out)[i] = v + 0.0;
    }
  }
}

// The fold ((t0 * t1) * t2) ... in double, in linear or log space. Returns
// false, leaving `acc` undefined, as soon as a partial sum has an element
// that is not representable: +inf (or NaN from inf * 0) in linear space, +inf
// in log space.
template <typename T>
bool Fold(absl::Span<const PmfTerm<T>> terms, ProbSpace in, bool log_path,
          std::vector<double>* acc) {
  std::vector<double> term, next;
  ToDouble(terms[0].values, in, log_path, acc);
  for (size_t t = 1; t < terms.size(); ++t) {
    ToDouble(terms[t].values, in, log_path, &term);
    if (log_path) {
      ConvolveLog(*acc, term, &next);
    } else {
      ConvolveLinear(*acc, term, &next);
    }
    std::swap(*acc, next);
    for (const double v : *acc) {
      if (log_path ? v == kInf : !std::isfinite(v)) return false;
    }
  }
  // A lone term needs no check: validation admits only finite linear values
  // and log values below +inf.
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

  // Linear in and out stays linear: the most accurate path for values that
  // do not underflow. Log space whenever either side is log.
  bool log_path = in == ProbSpace::kLog || out == ProbSpace::kLog;
  std::vector<double> acc;
  if (!Fold(terms, in, log_path, &acc)) {
    if (log_path) {
      return absl::InvalidArgumentError(absl::StrCat(
          "terms: a log-probability of a partial sum overflows double"));
    }
    // A linear partial sum left double's range (an unnormalised term with
    // huge values, perhaps cancelled by a later term with tiny ones). Log
    // space has no such limit; whether the answer fits is checked below.
    log_path = true;
    if (!Fold(terms, in, log_path, &acc)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "terms: a log-probability of a partial sum overflows double"));
    }
  }

  result.values.resize(acc.size());
  for (size_t k = 0; k < acc.size(); ++k) {
    double v = acc[k];
    if (log_path && out == ProbSpace::kLinear) v = std::exp(v);
    // The one rounding to T for float.
    const T rounded = static_cast<T>(v);
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
