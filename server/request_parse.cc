// Request protos -> typed jobs. See request_parse.h for the conventions.
#include "server/request_parse.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/repeated_field.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/format_value.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/status_macros.h"
#include "server/request_limits.h"
#include "server/rpc_names.h"
#include "server/saturating.h"

namespace sampler::server {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// ------------------------------------------------------------- messages --

using kernels::FormatValue;

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

// "[i]", or "[row][column]" for values laid out in rows of `row_length`.
std::string IndexText(size_t i, int64_t row_length) {
  if (row_length <= 0) return absl::StrCat("[", i, "]");
  const uint64_t len = static_cast<uint64_t>(row_length);
  return absl::StrCat("[", i / len, "][", i % len, "]");
}

// A count that may have saturated.
std::string CountText(int64_t n) {
  return n == kInt64Max ? "more than 2^63 - 1" : absl::StrCat(n);
}

// Kernel validators name their own parameters ("shape[3]", "terms[0]...");
// the client knows the request's field paths. Puts `prefix` in front.
absl::Status Prefixed(const absl::Status& s, absl::string_view prefix) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

// Replaces the kernel's leading field name `from` by the proto's `to`
// ("weights[2][5] = nan: must ..." -> "values[2][5] = nan: must ..."), and
// puts `what` before a bare "must ..." so that the rule still says what it
// is about ("values[2][5] = nan: weights must ..."). A message that does not
// start with `from` gets "to: " in front, so that it still names the field.
absl::Status Renamed(const absl::Status& s, absl::string_view from,
                     absl::string_view to, absl::string_view what = "") {
  if (s.ok()) return s;
  const absl::string_view msg = s.message();
  if (absl::StartsWith(msg, to)) return s;  // the kernel already says `to`
  const bool starts = absl::StartsWith(msg, from) &&
                      (msg.size() == from.size() ||
                       absl::string_view("[. :").find(msg[from.size()]) !=
                           absl::string_view::npos);
  if (!starts) return absl::Status(s.code(), absl::StrCat(to, ": ", msg));
  const absl::string_view rest = msg.substr(from.size());
  const size_t colon = rest.find(": ");
  if (!what.empty() && colon != absl::string_view::npos &&
      absl::StartsWith(rest.substr(colon + 2), "must ")) {
    return absl::Status(s.code(),
                        absl::StrCat(to, rest.substr(0, colon + 2), what, " ",
                                     rest.substr(colon + 2)));
  }
  return absl::Status(s.code(), absl::StrCat(to, rest));
}

// For streamed requests the fields live under the stream request's
// `request` field.
absl::Status InRequest(const absl::Status& s, bool streamed) {
  if (!streamed || s.code() != absl::StatusCode::kInvalidArgument) return s;
  return Prefixed(s, "request.");
}

// ----------------------------------------------------------------- enums --

// True for float32. UNSPECIFIED means float64 (proto comment).
absl::StatusOr<bool> ParsePrecision(v1::Precision p) {
  if (p == v1::PRECISION_FLOAT32) return true;
  if (p == v1::PRECISION_FLOAT64 || p == v1::PRECISION_UNSPECIFIED) {
    return false;
  }
  return Invalid("precision = ", static_cast<int>(p),
                 ": unknown Precision value (PRECISION_FLOAT32 = 1, "
                 "PRECISION_FLOAT64 = 2)");
}

// UNSPECIFIED means linear (proto comment).
absl::StatusOr<kernels::ProbSpace> ParseSpace(v1::ProbabilitySpace s,
                                              absl::string_view field) {
  if (s == v1::PROBABILITY_SPACE_LOG) return kernels::ProbSpace::kLog;
  if (s == v1::PROBABILITY_SPACE_LINEAR ||
      s == v1::PROBABILITY_SPACE_UNSPECIFIED) {
    return kernels::ProbSpace::kLinear;
  }
  return Invalid(field, " = ", static_cast<int>(s),
                 ": unknown ProbabilitySpace value (PROBABILITY_SPACE_LINEAR "
                 "= 1, PROBABILITY_SPACE_LOG = 2)");
}

// UNSPECIFIED means weights (proto comment).
absl::StatusOr<kernels::WeightKind> ParseInput(v1::CategoricalInput input) {
  if (input == v1::CATEGORICAL_INPUT_LOGITS) {
    return kernels::WeightKind::kLogits;
  }
  if (input == v1::CATEGORICAL_INPUT_WEIGHTS ||
      input == v1::CATEGORICAL_INPUT_UNSPECIFIED) {
    return kernels::WeightKind::kWeights;
  }
  return Invalid("input = ", static_cast<int>(input),
                 ": unknown CategoricalInput value (CATEGORICAL_INPUT_WEIGHTS "
                 "= 1, CATEGORICAL_INPUT_LOGITS = 2)");
}

// ----------------------------------------------------------------- reals --

// Whether a nonzero value that becomes zero or subnormal in float32 is
// refused: gamma and Dirichlet parameters must be normal (the kernels
// refuse subnormals), and the client should hear about the value it sent,
// not the rounded one. Probabilities and weights may underflow to 0.
enum class Tiny { kAllowed, kRefused };

// Number of values of a Reals, or -1 when neither representation is set.
int64_t RealsSize(const v1::Reals& reals) {
  switch (reals.values_case()) {
    case v1::Reals::kF32:
      return reals.f32().values_size();
    case v1::Reals::kF64:
      return reals.f64().values_size();
    case v1::Reals::VALUES_NOT_SET:
      break;
  }
  return -1;
}

absl::Status Missing(absl::string_view path) {
  return Invalid(path, ": missing (set its f32 or f64 values)");
}

// One double of the request to T (float rounds; see Parse in
// request_parse.h). `what` names the value in messages, e.g.
// "groups.groups[2].shape".
template <typename T>
absl::Status ToPrecision(double d, Tiny tiny, T* out,
                         absl::FunctionRef<std::string()> what) {
  const T v = static_cast<T>(d);
  if constexpr (std::is_same_v<T, float>) {
    if (std::isfinite(d) && !std::isfinite(v)) {
      return Invalid(what(), " = ", FormatValue(d),
                     ": overflows float32 (the request's precision); use "
                     "PRECISION_FLOAT64");
    }
    if (tiny == Tiny::kRefused && std::isfinite(d) && d != 0 &&
        !std::isnormal(v)) {
      return Invalid(what(), " = ", FormatValue(d),
                     ": underflows float32 (the request's precision); use "
                     "PRECISION_FLOAT64");
    }
  }
  *out = v;
  return absl::OkStatus();
}

// Reals (either representation) -> values of T, appended to `out`.
// `path()` names the field in messages (built only for one: many short
// terms should not pay for strings); `row_length` > 0 makes messages index
// by [row][column]; indices count from the first appended value.
template <typename T>
absl::Status AppendReals(const v1::Reals& reals,
                         absl::FunctionRef<std::string()> path, Tiny tiny,
                         std::vector<T>* out, int64_t row_length = 0) {
  if (reals.has_f32()) {
    // float -> T is exact.
    const auto& v = reals.f32().values();
    out->insert(out->end(), v.begin(), v.end());
    return absl::OkStatus();
  }
  if (!reals.has_f64()) return Missing(path());
  const auto& v = reals.f64().values();
  if constexpr (std::is_same_v<T, double>) {
    out->insert(out->end(), v.begin(), v.end());
  } else {
    const size_t base = out->size();
    out->resize(base + static_cast<size_t>(v.size()));
    for (int i = 0; i < v.size(); ++i) {
      SAMPLER_RETURN_IF_ERROR(ToPrecision<T>(
          v[i], tiny, &(*out)[base + i],
          [&] { return absl::StrCat(path(), IndexText(i, row_length)); }));
    }
  }
  return absl::OkStatus();
}

// Reals (either representation) -> values of T, replacing `out`.
template <typename T>
absl::Status ReadReals(const v1::Reals& reals, absl::string_view path,
                       Tiny tiny, std::vector<T>* out, int64_t row_length = 0) {
  out->clear();
  return AppendReals(
      reals, [path] { return std::string(path); }, tiny, out, row_length);
}

// ---------------------------------------------------------------- limits --

struct Size {
  int64_t items = 0;
  int64_t bytes = 0;  // estimated unary response, >= the real size
};

// The *Stream RPC of a kind, or nullptr.
const char* StreamMethod(Kind kind) {
  switch (kind) {
    case Kind::kCategorical:
      return rpc::kSampleCategoricalStream;
    case Kind::kGamma:
      return rpc::kSampleGammaStream;
    case Kind::kBoards:
      return rpc::kSampleBoardsStream;
    case Kind::kEnumerate:
    case Kind::kDirichlet:
      break;
  }
  return nullptr;
}

// What a kind's items are, for messages.
const char* ItemsName(Kind kind) {
  switch (kind) {
    case Kind::kEnumerate:
      return "output elements";
    case Kind::kCategorical:
      return "draws (rows x draws)";
    case Kind::kGamma:
      return "samples";
    case Kind::kDirichlet:
      return "output elements";
    case Kind::kBoards:
      return "positions";
  }
  return "items";
}

// The words of a refusal are built only when the request is refused: this
// runs for every call, and a small call's parse is a few thousand
// instructions (issue 13).
absl::Status CheckLimits(Kind kind, bool streamed, const Size& size,
                         const RequestLimits& limits) {
  const char* stream = StreamMethod(kind);
  const auto items = [&] {
    return absl::StrCat(CountText(size.items), " ", ItemsName(kind));
  };
  if (streamed) {
    if (size.items > limits.max_items_per_stream) {
      return absl::OutOfRangeError(absl::StrCat(
          items(), " exceed the server's max_items_per_stream = ",
          limits.max_items_per_stream, ": split the request into several"));
    }
    return absl::OkStatus();
  }
  // What to do instead: the stream when it would take the request.
  const auto advice = [&]() -> std::string {
    return stream != nullptr && size.items <= limits.max_items_per_stream
               ? absl::StrCat(": use ", stream, " (up to ",
                              limits.max_items_per_stream,
                              " items, in chunks) or split the request")
               : ": split the request into several";
  };
  if (size.items > MaxUnaryItems(limits)) {
    return absl::OutOfRangeError(
        absl::StrCat(items(), " exceed the server's max_items_per_request = ",
                     MaxUnaryItems(limits), advice()));
  }
  if (size.bytes > MaxMessageBytes(limits)) {
    return absl::OutOfRangeError(absl::StrCat(
        "the response (", items(), ") would take up to ", CountText(size.bytes),
        " bytes, more than the server's max_message_bytes = ",
        MaxMessageBytes(limits), advice()));
  }
  return absl::OkStatus();
}

// A stream sends at least one unit (a categorical row, a board position)
// per chunk, so a streamed request whose single unit cannot fit in one
// message could never be sent, however it is cut: refuse it up front.
// `unit_bytes` is the unit's estimated size in a chunk (as stream_chunk.cc
// estimates it).
absl::Status CheckStreamUnit(absl::string_view unit, int64_t unit_bytes,
                             absl::string_view advice,
                             const RequestLimits& limits) {
  const int64_t bytes = SatAdd(kMessageOverhead, unit_bytes);
  if (bytes <= MaxMessageBytes(limits)) return absl::OkStatus();
  return absl::OutOfRangeError(absl::StrCat(
      "one ", unit, " would take up to ", CountText(bytes),
      " bytes in a chunk, more than the server's max_message_bytes = ",
      MaxMessageBytes(limits), ": ", advice));
}

uint64_t PickSeed(bool has_seed, uint64_t seed, const SeedSource& seeds) {
  return has_seed ? seed : seeds();
}

// ------------------------------------------------------------- enumerate --

// The result offsets are known at parse time and Bind writes them into the
// response; out_offset (jobs.h) points here so that a backend that writes
// it has somewhere harmless to write.
struct ParsedEnumerateJob : EnumerateJob {
  std::vector<int64_t> offset_sink;
};

bool IsPacked(const v1::EnumerateProblem& problem) {
  return problem.has_values() || problem.term_length() != 0 ||
         problem.lengths_size() > 0 || problem.offsets_size() > 0;
}

// The explicit form: one Pmf per term, their values laid end to end in
// `values` (reserved up front, so that the views stay valid) and viewed by
// `terms`.
template <typename T>
absl::Status ReadExplicitTerms(const v1::EnumerateProblem& problem,
                               const std::string& path, std::vector<T>* values,
                               std::vector<kernels::PmfTerm<T>>* terms) {
  int64_t total = 0;
  for (const v1::Pmf& term : problem.terms()) {
    total += std::max<int64_t>(RealsSize(term.probabilities()), 0);
  }
  values->reserve(static_cast<size_t>(total));
  terms->reserve(problem.terms_size());
  for (int t = 0; t < problem.terms_size(); ++t) {
    const v1::Pmf& term = problem.terms(t);
    const size_t start = values->size();
    SAMPLER_RETURN_IF_ERROR(AppendReals(
        term.probabilities(),
        [&] { return absl::StrCat(path, ".terms[", t, "].probabilities"); },
        Tiny::kAllowed, values));
    terms->push_back(
        {term.offset(),
         absl::MakeConstSpan(values->data() + start, values->size() - start)});
  }
  return absl::OkStatus();
}

// The packed form: values cut by term_length or lengths, offsets per term.
template <typename T>
absl::Status ReadPackedTerms(const v1::EnumerateProblem& problem,
                             const std::string& path, std::vector<T>* values,
                             std::vector<kernels::PmfTerm<T>>* terms) {
  const bool by_lengths = problem.lengths_size() > 0;
  if (!problem.has_values()) return Missing(path + ".values");
  SAMPLER_RETURN_IF_ERROR(AppendReals(
      problem.values(), [&] { return path + ".values"; }, Tiny::kAllowed,
      values));
  const int64_t n = static_cast<int64_t>(values->size());
  if (n == 0) return Invalid(path, ".values: at least one value is required");
  const int64_t step = problem.term_length();
  if (step != 0 && by_lengths) {
    return Invalid(path, ".term_length = ", step,
                   ": give term_length or lengths, not both");
  }
  const absl::Span<const T> all = absl::MakeConstSpan(*values);
  if (by_lengths) {
    int64_t sum = 0;
    for (int t = 0; t < problem.lengths_size(); ++t) {
      const int64_t len = problem.lengths(t);
      if (len <= 0) {
        return Invalid(path, ".lengths[", t, "] = ", len, ": must be > 0");
      }
      sum = SatAdd(sum, len);
    }
    if (sum != n) {
      return Invalid(path, ".lengths: sum to ", CountText(sum),
                     " but values has ", n, " values");
    }
  } else {
    if (step <= 0) {
      return Invalid(path, ".term_length = ", step,
                     ": must be > 0 (or give lengths)");
    }
    if (n % step != 0) {
      return Invalid(path, ".term_length = ", step, ": does not divide the ", n,
                     " values");
    }
  }
  const int64_t count = by_lengths ? problem.lengths_size() : n / step;
  const bool offsets = problem.offsets_size() > 0;
  if (offsets && problem.offsets_size() != count) {
    return Invalid(path, ".offsets: ", problem.offsets_size(), " offsets for ",
                   count, " terms (give none, or one per term)");
  }
  terms->resize(static_cast<size_t>(count));
  kernels::PmfTerm<T>* out = terms->data();
  size_t start = 0;
  for (int64_t t = 0; t < count; ++t) {
    const size_t len = static_cast<size_t>(
        by_lengths ? problem.lengths(static_cast<int>(t)) : step);
    out[t].offset = offsets ? problem.offsets(static_cast<int>(t)) : 0;
    out[t].values = absl::MakeConstSpan(all.data() + start, len);
    start += len;
  }
  return absl::OkStatus();
}

// ValidateEnumerate names a term's fields as the explicit form's
// ("terms[3].probabilities[1] = ...", "terms[3].offset = ...", "terms[3]:
// ..."); a packed problem's client knows values, offsets and lengths (or
// term_length). `values` is what the terms view.
template <typename T>
absl::Status InPackedFields(const absl::Status& s,
                            const v1::EnumerateProblem& problem,
                            absl::Span<const T> values,
                            absl::Span<const kernels::PmfTerm<T>> terms) {
  if (s.ok() || !IsPacked(problem)) return s;
  const absl::string_view msg = s.message();
  constexpr absl::string_view kTerms = "terms[";
  const size_t close = msg.find(']');
  size_t t = 0;
  if (!absl::StartsWith(msg, kTerms) || close == absl::string_view::npos ||
      !absl::SimpleAtoi(msg.substr(kTerms.size(), close - kTerms.size()), &t) ||
      t >= terms.size()) {
    return s;
  }
  const absl::string_view rest = msg.substr(close + 1);
  constexpr absl::string_view kValues = ".probabilities[";
  constexpr absl::string_view kOffset = ".offset";
  const size_t value_close = rest.find(']');
  size_t i = 0;
  std::string text;
  if (absl::StartsWith(rest, kValues) &&
      value_close != absl::string_view::npos &&
      absl::SimpleAtoi(
          rest.substr(kValues.size(), value_close - kValues.size()), &i)) {
    const size_t start =
        static_cast<size_t>(terms[t].values.data() - values.data());
    text =
        absl::StrCat("values[", start + i, "]", rest.substr(value_close + 1));
  } else if (absl::StartsWith(rest, kOffset)) {
    text = absl::StrCat("offsets[", t, "]", rest.substr(kOffset.size()));
  } else if (problem.lengths_size() > 0) {
    text = absl::StrCat("lengths[", t, "]", rest);
  } else {
    text = absl::StrCat("term_length (term ", t, ")", rest);
  }
  return absl::Status(s.code(), text);
}

// Reads problem `p` into `job_problem`: its values once, and its terms,
// each repeated as often as `repeats` says. Adds its expanded term count to
// `term_count` (refused past limits.max_enumerate_terms before anything is
// expanded), its output to `size` and its multiply-adds to `pairs`.
// `term_views` is scratch, reused from problem to problem (a list of its
// own per problem was a heap allocation each: 16,384 for issue 15's
// many-problem request).
template <typename T>
absl::Status BuildEnumerateProblem(
    const v1::EnumerateProblem& problem, int p, kernels::ProbSpace in,
    const RequestLimits& limits, EnumerateProblem<T>* job_problem,
    int64_t* term_count, Size* size, int64_t* pairs,
    std::vector<kernels::PmfTerm<T>>* term_views) {
  const std::string path = absl::StrCat("problems[", p, "]");
  std::vector<T>& values = job_problem->values;
  std::vector<kernels::PmfTerm<T>>& views = *term_views;
  views.clear();
  if (IsPacked(problem)) {
    if (problem.terms_size() > 0) {
      return Invalid(path,
                     ": give terms or the packed form (values, term_length, "
                     "lengths, offsets), not both");
    }
    SAMPLER_RETURN_IF_ERROR(ReadPackedTerms(problem, path, &values, &views));
  } else {
    SAMPLER_RETURN_IF_ERROR(ReadExplicitTerms(problem, path, &values, &views));
  }
  SAMPLER_RETURN_IF_ERROR(
      Prefixed(InPackedFields<T>(kernels::ValidateEnumerate<T>(views, in),
                                 problem, values, views),
               path + "."));
  const size_t distinct = views.size();

  // Repeats: counted and bounded before anything is expanded, so that a
  // small request cannot ask for unbounded memory or work.
  const int repeats = problem.repeats_size();
  if (repeats > 0 && static_cast<size_t>(repeats) != distinct) {
    return Invalid(path, ".repeats: ", repeats, " counts for ", distinct,
                   " terms (give none, or one per term)");
  }
  int64_t expanded = 0;
  int64_t length = 1;  // of the result
  for (size_t t = 0; t < distinct; ++t) {
    const int64_t k = repeats > 0 ? problem.repeats(static_cast<int>(t)) : 1;
    if (k < 1) {
      return Invalid(path, ".repeats[", t, "] = ", k, ": must be >= 1");
    }
    expanded = SatAdd(expanded, k);
    length = SatAdd(
        length, SatMul(k, static_cast<int64_t>(views[t].values.size()) - 1));
    if (length > kernels::kMaxEnumerateSupport) {
      return Invalid(path, ".repeats[", t, "] = ", k,
                     ": the sum's support length reaches ", CountText(length),
                     ", more than the maximum ", kernels::kMaxEnumerateSupport);
    }
  }
  *term_count = SatAdd(*term_count, expanded);
  if (*term_count > limits.max_enumerate_terms) {
    return absl::OutOfRangeError(absl::StrCat(
        "the problems have ", CountText(*term_count),
        " or more terms (repeats counted), more than the server's "
        "max_enumerate_terms = ",
        limits.max_enumerate_terms, ": split the problems across requests"));
  }
  if (expanded != static_cast<int64_t>(distinct)) {
    std::vector<kernels::PmfTerm<T>> copies;
    copies.reserve(static_cast<size_t>(expanded));
    for (size_t t = 0; t < distinct; ++t) {
      copies.insert(copies.end(),
                    static_cast<size_t>(problem.repeats(static_cast<int>(t))),
                    views[t]);
    }
    views = std::move(copies);
    // The terms were checked one by one; their sum's offsets only now.
    SAMPLER_RETURN_IF_ERROR(Prefixed(kernels::ValidateEnumerate<T>(views, in),
                                     path + ".repeats (expanded): "));
  }
  job_problem->offsets.resize(views.size());
  job_problem->terms.resize(views.size());
  int64_t* offsets = job_problem->offsets.data();
  absl::Span<const T>* terms = job_problem->terms.data();
  for (size_t t = 0; t < views.size(); ++t) {
    offsets[t] = views[t].offset;
    terms[t] = views[t].values;
  }
  size->items = SatAdd(size->items, length);
  size->bytes = SatAdd(
      size->bytes,
      SatAdd(kPmfOverhead, SatMul(length, static_cast<int64_t>(sizeof(T)))));
  *pairs = SatAdd(*pairs, kernels::EnumeratePairCount<T>(views));
  return absl::OkStatus();
}

template <typename T>
absl::Status BuildEnumerate(const v1::EnumerateRequest& request,
                            const RequestLimits& limits, EnumerateWork<T>* work,
                            Size* size, int64_t* pairs) {
  work->problems.resize(request.problems_size());
  int64_t term_count = 0;
  std::vector<kernels::PmfTerm<T>> term_views;
  for (int p = 0; p < request.problems_size(); ++p) {
    SAMPLER_RETURN_IF_ERROR(BuildEnumerateProblem(
        request.problems(p), p, work->input_space, limits, &work->problems[p],
        &term_count, size, pairs, &term_views));
  }
  return absl::OkStatus();
}

// -------------------------------------------------------------- gamma --

// Samples that overflow. Gamma(shape, scale) = scale * G with G ~
// Gamma(shape, 1), and P(G > shape + 10 sqrt(shape) + 50) < 2^-64 for every
// shape > 0 (Chernoff: P(G >= x) <= (e x / shape)^shape e^-x; at shape 1 the
// bound is e^-61, at 10 e^-59, at 100 e^-58, and the normal tail at large
// shapes is 10 standard deviations). The rule: scale times that bound must
// be finite in the request's precision, else INVALID_ARGUMENT naming the
// parameter, since +inf samples answered with OK are wrong answers. Log
// output (log scale + log G) cannot overflow and is not checked.
double GammaHighQuantileBound(double shape) {
  return shape + 10 * std::sqrt(shape) + 50;
}

template <typename T>
absl::Status CheckGammaOverflow(T shape, T scale,
                                absl::FunctionRef<std::string()> what) {
  // In long double: the product of two doubles near their maximum stays
  // finite there, and is compared against T's largest value exactly.
  const long double top =
      static_cast<long double>(scale) *
      static_cast<long double>(GammaHighQuantileBound(shape));
  if (top <= static_cast<long double>(std::numeric_limits<T>::max())) {
    return absl::OkStatus();
  }
  return Invalid(what(), ": shape ", FormatValue(shape), " with scale ",
                 FormatValue(scale), " gives samples that overflow ",
                 std::is_same_v<T, float> ? "float32" : "float64",
                 " (the request's precision) with non-negligible probability "
                 "(rule: scale * (shape + 10 sqrt(shape) + 50) must be finite)"
                 "; use a smaller scale, ",
                 std::is_same_v<T, float> ? "PRECISION_FLOAT64 or " : "",
                 "log_output");
}

template <typename T>
absl::Status BuildGammaElements(const v1::GammaElements& elements,
                                bool log_output, GammaWork<T>* work,
                                Size* size) {
  const int64_t n = RealsSize(elements.shape());
  if (n < 0) return Missing("elements.shape");
  if (n == 0) {
    return Invalid("elements.shape: empty: at least one sample is required");
  }
  // No scale, or an empty one, means scale 1 for all (an empty `scale` in
  // the job means the same).
  const int64_t scales = std::max<int64_t>(RealsSize(elements.scale()), 0);
  if (scales != 0 && scales != n) {
    return Invalid("elements.scale: ", scales,
                   " values but elements.shape has ", n,
                   ": give one scale per shape, or none for scale 1");
  }
  SAMPLER_RETURN_IF_ERROR(ReadReals(elements.shape(), "elements.shape",
                                    Tiny::kRefused, &work->shape));
  if (scales != 0) {
    SAMPLER_RETURN_IF_ERROR(ReadReals(elements.scale(), "elements.scale",
                                      Tiny::kRefused, &work->scale));
  }
  // The kernel's check wants a scale per shape.
  const std::vector<T> ones(scales == 0 ? work->shape.size() : 0, T(1));
  SAMPLER_RETURN_IF_ERROR(
      Prefixed(kernels::ValidateGammaParams<T>(
                   work->shape, scales == 0 ? ones : work->scale),
               "elements."));
  if (!log_output) {
    for (int64_t i = 0; i < n; ++i) {
      SAMPLER_RETURN_IF_ERROR(CheckGammaOverflow<T>(
          work->shape[i], scales == 0 ? T(1) : work->scale[i], [&] {
            return absl::StrCat(
                scales == 0 ? "elements.shape[" : "elements.scale[", i, "]");
          }));
    }
  }
  size->items = n;
  return absl::OkStatus();
}

// Returns the exact total in size->items, or kInt64Max when it overflowed
// (an OUT_OF_RANGE for any limit).
template <typename T>
absl::Status BuildGammaGroups(const v1::GammaGroups& groups, bool log_output,
                              GammaWork<T>* work, Size* size) {
  int64_t total = 0;
  work->groups.resize(groups.groups_size());
  for (int g = 0; g < groups.groups_size(); ++g) {
    const v1::GammaGroup& group = groups.groups(g);
    kernels::GammaGroup<T>& job_group = work->groups[g];
    if (group.count() < 0) {
      return Invalid("groups.groups[", g, "].count = ", group.count(),
                     ": must be >= 0");
    }
    total = SatAdd(total, group.count());
    job_group.count = group.count();
    SAMPLER_RETURN_IF_ERROR(ToPrecision<T>(
        group.shape(), Tiny::kRefused, &job_group.shape,
        [&] { return absl::StrCat("groups.groups[", g, "].shape"); }));
    // Scale 0 means 1 (proto comment).
    const double scale = group.scale() == 0 ? 1.0 : group.scale();
    SAMPLER_RETURN_IF_ERROR(ToPrecision<T>(
        scale, Tiny::kRefused, &job_group.scale,
        [&] { return absl::StrCat("groups.groups[", g, "].scale"); }));
  }
  if (total == 0) {
    return Invalid("groups.groups: the counts of the ", groups.groups_size(),
                   " groups add up to 0: at least one sample is required");
  }
  size->items = total;
  if (total == kInt64Max) return absl::OkStatus();  // the limits refuse it
  SAMPLER_RETURN_IF_ERROR(
      Prefixed(kernels::ValidateGammaGroups<T>(work->groups,
                                               static_cast<uint64_t>(total)),
               "groups."));
  if (log_output) return absl::OkStatus();
  for (int g = 0; g < groups.groups_size(); ++g) {
    SAMPLER_RETURN_IF_ERROR(CheckGammaOverflow<T>(
        work->groups[g].shape, work->groups[g].scale,
        [&] { return absl::StrCat("groups.groups[", g, "]"); }));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status BuildGamma(const v1::SampleGammaRequest& request,
                        GammaWork<T>* work, Size* size) {
  switch (request.parameters_case()) {
    case v1::SampleGammaRequest::kElements:
      SAMPLER_RETURN_IF_ERROR(BuildGammaElements(
          request.elements(), request.log_output(), work, size));
      break;
    case v1::SampleGammaRequest::kGroups:
      SAMPLER_RETURN_IF_ERROR(
          BuildGammaGroups(request.groups(), request.log_output(), work, size));
      break;
    case v1::SampleGammaRequest::PARAMETERS_NOT_SET:
      return Invalid("parameters: missing (set elements or groups)");
  }
  size->bytes = SatAdd(kMessageOverhead,
                       SatMul(size->items, static_cast<int64_t>(sizeof(T))));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<GammaJob>> ParseGammaImpl(
    const v1::SampleGammaRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed) {
  SAMPLER_ASSIGN_OR_RETURN(const bool is_float,
                           ParsePrecision(request.precision()));
  auto job = std::make_shared<GammaJob>();
  Size size;
  SAMPLER_RETURN_IF_ERROR(
      is_float
          ? BuildGamma(request, &job->work.emplace<GammaWork<float>>(), &size)
          : BuildGamma(request, &job->work.emplace<GammaWork<double>>(),
                       &size));
  SAMPLER_RETURN_IF_ERROR(CheckLimits(Kind::kGamma, streamed, size, limits));
  // Streamed groups get their ends (for slicing); all else none.
  if (streamed &&
      request.parameters_case() == v1::SampleGammaRequest::kGroups) {
    std::visit(
        [&](const auto& work) {
          int64_t end = 0;
          job->group_ends.reserve(work.groups.size());
          for (const auto& group : work.groups) {
            end += group.count;
            job->group_ends.push_back(end);
          }
        },
        job->work);
  }
  job->items = size.items;
  job->log_output = request.log_output();
  job->seed = PickSeed(request.has_seed(), request.seed(), seeds);
  return job;
}

// ----------------------------------------------------------- categorical --

// The request's values of T, or null when they come in the other
// representation (or none).
template <typename T>
const google::protobuf::RepeatedField<T>* ValuesOfType(const v1::Reals& reals) {
  if constexpr (std::is_same_v<T, float>) {
    return reals.has_f32() ? &reals.f32().values() : nullptr;
  } else {
    return reals.has_f64() ? &reals.f64().values() : nullptr;
  }
}

// The job's values: read where they lie in the request when
// `request_owner` keeps it alive and they come in the request's precision
// (the job then shares that ownership); otherwise a copy of the job's own,
// which values of the other representation need anyway (float32 values
// widened for a float64 request, float64 values rounded for a float32 one).
// Validated once, here: every backend reads them as they are then.
template <typename T>
absl::Status BuildCategorical(const v1::SampleCategoricalRequest& request,
                              std::shared_ptr<const void> request_owner,
                              CategoricalJob* job) {
  auto& work = job->work.emplace<CategoricalWork<T>>();
  const google::protobuf::RepeatedField<T>* in_place =
      ValuesOfType<T>(request.values());
  if (request_owner != nullptr && in_place != nullptr) {
    work.values = absl::MakeConstSpan(in_place->data(), in_place->size());
    job->values_owner = std::move(request_owner);
  } else {
    auto copy = std::make_shared<std::vector<T>>();
    SAMPLER_RETURN_IF_ERROR(ReadReals(request.values(), "values",
                                      Tiny::kAllowed, copy.get(),
                                      job->shape.categories));
    work.values = absl::MakeConstSpan(*copy);
    job->values_owner = std::move(copy);
  }
  const kernels::WeightKind kind = job->weight_kind;
  const char* kernel_field =
      kind == kernels::WeightKind::kLogits ? "logits" : "weights";
  return Renamed(kernels::ValidateCategorical<T>(work.values, job->shape, kind),
                 kernel_field, "values", kernel_field);
}

absl::StatusOr<std::shared_ptr<CategoricalJob>> ParseCategoricalImpl(
    const v1::SampleCategoricalRequest& request,
    std::shared_ptr<const void> request_owner, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed) {
  SAMPLER_ASSIGN_OR_RETURN(const bool is_float,
                           ParsePrecision(request.precision()));
  SAMPLER_ASSIGN_OR_RETURN(const kernels::WeightKind kind,
                           ParseInput(request.input()));
  const int64_t categories = request.categories();
  if (categories < 1) {
    return Invalid("categories = ", categories, ": must be >= 1");
  }
  if (categories > std::numeric_limits<int32_t>::max()) {
    return Invalid("categories = ", categories, ": must be at most ",
                   std::numeric_limits<int32_t>::max(), " (indices are int32)");
  }
  if (request.draws() < 0) {
    return Invalid("draws = ", request.draws(), ": must be >= 0 (0 means 1)");
  }
  if (request.draws() > kernels::kMaxCategoricalDraws) {
    return Invalid("draws = ", request.draws(), ": must be at most ",
                   kernels::kMaxCategoricalDraws);
  }
  const int32_t draws = request.draws() == 0 ? 1 : request.draws();
  const int64_t n = RealsSize(request.values());
  if (n < 0) return Missing("values");
  if (n == 0) {
    return Invalid("values: empty: at least one row of categories = ",
                   categories, " values is required");
  }
  if (n % categories != 0) {
    return Invalid("values: ", n,
                   " values do not form rows of categories = ", categories);
  }
  auto job = std::make_shared<CategoricalJob>();
  job->shape.rows = n / categories;
  job->shape.categories = categories;
  job->shape.draws = draws;
  job->weight_kind = kind;
  SAMPLER_RETURN_IF_ERROR(
      is_float ? BuildCategorical<float>(request, std::move(request_owner),
                                         job.get())
               : BuildCategorical<double>(request, std::move(request_owner),
                                          job.get()));
  Size size;
  size.items = SatMul(job->shape.rows, draws);
  size.bytes = SatAdd(
      kMessageOverhead,
      SatMul(size.items, VarintBytes(static_cast<uint64_t>(categories - 1))));
  SAMPLER_RETURN_IF_ERROR(
      CheckLimits(Kind::kCategorical, streamed, size, limits));
  if (streamed) {
    SAMPLER_RETURN_IF_ERROR(CheckStreamUnit(
        absl::StrCat("row (", draws, " draws)"),
        SatMul(draws, VarintBytes(static_cast<uint64_t>(categories - 1))),
        "ask for fewer draws per row", limits));
  }
  job->items = size.items;
  job->seed = PickSeed(request.has_seed(), request.seed(), seeds);
  return job;
}

// -------------------------------------------------------------- Dirichlet --

// Row offsets from exactly one of dimension and row_lengths.
absl::Status DirichletRows(const v1::SampleDirichletRequest& request, int64_t n,
                           std::vector<int64_t>* offsets) {
  const int64_t dimension = request.dimension();
  const int ragged = request.row_lengths_size();
  if (dimension != 0 && ragged != 0) {
    return Invalid("dimension = ", dimension, " and row_lengths (", ragged,
                   " entries) are both given: give exactly one");
  }
  if (dimension == 0 && ragged == 0) {
    return Invalid(
        "dimension = 0 and row_lengths is empty: give exactly one (dimension "
        "for rows of equal length, row_lengths for ragged rows)");
  }
  if (dimension != 0) {
    if (dimension < 0) {
      return Invalid("dimension = ", dimension, ": must be >= 1");
    }
    if (n % dimension != 0) {
      return Invalid("concentrations: ", n,
                     " values do not form rows of dimension = ", dimension);
    }
    offsets->resize(n / dimension + 1);
    for (size_t r = 0; r < offsets->size(); ++r) {
      (*offsets)[r] = static_cast<int64_t>(r) * dimension;
    }
    return absl::OkStatus();
  }
  offsets->resize(ragged + 1);
  (*offsets)[0] = 0;
  int64_t total = 0;
  for (int r = 0; r < ragged; ++r) {
    const int64_t length = request.row_lengths(r);
    if (length < 1) {
      return Invalid("row_lengths[", r, "] = ", length, ": must be >= 1");
    }
    total = SatAdd(total, length);
    (*offsets)[r + 1] = total;
  }
  if (total != n) {
    return Invalid("row_lengths: add up to ", CountText(total),
                   " but concentrations has ", n, " values");
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status BuildDirichlet(const v1::SampleDirichletRequest& request,
                            int64_t n, DirichletWork<T>* work) {
  SAMPLER_RETURN_IF_ERROR(DirichletRows(request, n, &work->row_offsets));
  SAMPLER_RETURN_IF_ERROR(ReadReals(request.concentrations(), "concentrations",
                                    Tiny::kRefused, &work->alpha));
  return Renamed(
      kernels::ValidateDirichletParams<T>(work->alpha, work->row_offsets),
      "alpha", "concentrations");
}

}  // namespace

// =============================================================== Parse ====

absl::StatusOr<std::shared_ptr<EnumerateJob>> ParseEnumerate(
    const v1::EnumerateRequest& request, const RequestLimits& limits) {
  SAMPLER_ASSIGN_OR_RETURN(const bool is_float,
                           ParsePrecision(request.precision()));
  SAMPLER_ASSIGN_OR_RETURN(const kernels::ProbSpace in,
                           ParseSpace(request.input_space(), "input_space"));
  SAMPLER_ASSIGN_OR_RETURN(const kernels::ProbSpace out,
                           ParseSpace(request.output_space(), "output_space"));
  if (request.problems_size() == 0) {
    return Invalid("problems: at least one problem is required");
  }
  auto job = std::make_shared<ParsedEnumerateJob>();
  Size size;
  size.bytes = kMessageOverhead;
  int64_t pairs = 0;
  auto build = [&](auto& work) {
    work.input_space = in;
    work.output_space = out;
    return BuildEnumerate(request, limits, &work, &size, &pairs);
  };
  SAMPLER_RETURN_IF_ERROR(
      is_float ? build(job->work.emplace<EnumerateWork<float>>())
               : build(job->work.emplace<EnumerateWork<double>>()));
  SAMPLER_RETURN_IF_ERROR(
      CheckLimits(Kind::kEnumerate, /*streamed=*/false, size, limits));
  if (pairs > limits.max_enumerate_pairs) {
    return absl::OutOfRangeError(absl::StrCat(
        "the problems need ", CountText(pairs),
        " multiply-adds, more than the server's max_enumerate_pairs = ",
        limits.max_enumerate_pairs,
        ": split the problems across requests or use shorter PMFs"));
  }
  job->items = size.items;
  std::visit(
      [&](auto& work) {
        job->offset_sink.resize(work.problems.size());
        for (size_t p = 0; p < work.problems.size(); ++p) {
          work.problems[p].out_offset = &job->offset_sink[p];
        }
      },
      job->work);
  return std::shared_ptr<EnumerateJob>(std::move(job));
}

absl::StatusOr<std::shared_ptr<CategoricalJob>> ParseCategorical(
    const v1::SampleCategoricalRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed) {
  auto job = ParseCategoricalImpl(request, /*request_owner=*/nullptr, limits,
                                  seeds, streamed);
  if (!job.ok()) return InRequest(job.status(), streamed);
  return job;
}

absl::StatusOr<std::shared_ptr<CategoricalJob>> ParseCategorical(
    std::shared_ptr<const v1::SampleCategoricalRequest> request,
    const RequestLimits& limits, const SeedSource& seeds, bool streamed) {
  const v1::SampleCategoricalRequest& r = *request;
  auto job =
      ParseCategoricalImpl(r, std::move(request), limits, seeds, streamed);
  if (!job.ok()) return InRequest(job.status(), streamed);
  return job;
}

absl::StatusOr<std::shared_ptr<GammaJob>> ParseGamma(
    const v1::SampleGammaRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed) {
  auto job = ParseGammaImpl(request, limits, seeds, streamed);
  if (!job.ok()) return InRequest(job.status(), streamed);
  return job;
}

absl::StatusOr<std::shared_ptr<DirichletJob>> ParseDirichlet(
    const v1::SampleDirichletRequest& request, const RequestLimits& limits,
    const SeedSource& seeds) {
  SAMPLER_ASSIGN_OR_RETURN(const bool is_float,
                           ParsePrecision(request.precision()));
  const int64_t n = RealsSize(request.concentrations());
  if (n < 0) return Missing("concentrations");
  if (n == 0) {
    return Invalid("concentrations: empty: at least one row is required");
  }
  auto job = std::make_shared<DirichletJob>();
  SAMPLER_RETURN_IF_ERROR(
      is_float ? BuildDirichlet(request, n,
                                &job->work.emplace<DirichletWork<float>>())
               : BuildDirichlet(request, n,
                                &job->work.emplace<DirichletWork<double>>()));
  Size size;
  size.items = n;
  size.bytes = SatAdd(kMessageOverhead, SatMul(n, is_float ? 4 : 8));
  SAMPLER_RETURN_IF_ERROR(
      CheckLimits(Kind::kDirichlet, /*streamed=*/false, size, limits));
  job->items = n;
  job->log_output = request.log_output();
  job->seed = PickSeed(request.has_seed(), request.seed(), seeds);
  return job;
}

absl::StatusOr<std::shared_ptr<BoardsJob>> ParseBoards(
    const v1::SampleBoardsRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed) {
  auto job = std::make_shared<BoardsJob>();
  job->spec.rows = request.rows();
  job->spec.cols = request.cols();
  // The kernel bounds the colours, but only after a copy: refuse absurd
  // lists before copying them.
  if (request.stones_size() > kernels::kMaxBoardColours) {
    return InRequest(
        Invalid("stones: ", request.stones_size(), " colours: must be at most ",
                kernels::kMaxBoardColours),
        streamed);
  }
  job->spec.stones.assign(request.stones().begin(), request.stones().end());
  // The kernel's messages already use the proto's names (rows, cols,
  // stones[i]).
  if (absl::Status s = kernels::ValidateBoardSpec(job->spec); !s.ok()) {
    return InRequest(s, streamed);
  }
  if (request.count() < 1) {
    return InRequest(Invalid("count = ", request.count(), ": must be >= 1"),
                     streamed);
  }
  Size size;
  size.items = request.count();
  size.bytes =
      SatAdd(kMessageOverhead,
             SatMul(size.items, static_cast<int64_t>(job->spec.stones.size()) *
                                    8 * kernels::BoardWords64(job->spec)));
  SAMPLER_RETURN_IF_ERROR(CheckLimits(Kind::kBoards, streamed, size, limits));
  if (streamed) {
    SAMPLER_RETURN_IF_ERROR(CheckStreamUnit(
        absl::StrCat("position (", job->spec.stones.size(), " colours of ",
                     kernels::BoardWords64(job->spec), " words)"),
        static_cast<int64_t>(job->spec.stones.size()) * 8 *
            kernels::BoardWords64(job->spec),
        "use fewer colours or a smaller board", limits));
  }
  job->count = request.count();
  job->items = request.count();
  job->seed = PickSeed(request.has_seed(), request.seed(), seeds);
  return job;
}

}  // namespace sampler::server
