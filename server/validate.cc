// Request protos -> typed jobs; binding of outputs to responses; chunks of
// streamed requests. See validate.h for the conventions.
#include "server/validate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/format_value.h"
#include "sampler/kernels/gamma.h"
#include "server/rpc_names.h"
#include "server/saturating.h"

namespace sampler::server {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Serialized-size estimates. Every length-delimited field costs at most a
// 2-byte tag and a 10-byte length; scalars at most 11 bytes. These bounds
// cover a message's fields and wrappers (Reals -> FloatList -> values) with
// room to spare, so an estimate is never below the real size.
constexpr int64_t kMessageOverhead = 256;
// One Pmf of an EnumerateResponse: its entry, offset, Reals and list.
constexpr int64_t kPmfOverhead = 64;

// ------------------------------------------------------------ arithmetic --

// Bytes of a varint holding v.
int64_t VarintBytes(uint64_t v) {
  int64_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

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

// One double of the request to T (float rounds; see Parse in validate.h).
// `what` names the value in messages, e.g. "groups.groups[2].shape".
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

// Reals (either representation) -> values of T. `row_length` > 0 makes
// messages index by [row][column].
template <typename T>
absl::Status ReadReals(const v1::Reals& reals, absl::string_view path,
                       Tiny tiny, std::vector<T>* out, int64_t row_length = 0) {
  if (reals.has_f32()) {
    // float -> T is exact.
    const auto& v = reals.f32().values();
    out->assign(v.begin(), v.end());
    return absl::OkStatus();
  }
  if (!reals.has_f64()) return Missing(path);
  const auto& v = reals.f64().values();
  if constexpr (std::is_same_v<T, double>) {
    out->assign(v.begin(), v.end());
  } else {
    out->resize(v.size());
    for (int i = 0; i < v.size(); ++i) {
      absl::Status s = ToPrecision<T>(v[i], tiny, &(*out)[i], [&] {
        return absl::StrCat(path, IndexText(i, row_length));
      });
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
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

// Protobuf can neither serialize a message of 2 GiB or more nor hold a
// repeated field of more than INT_MAX elements, whatever the flags say.
constexpr int64_t kProtoMaxBytes = std::numeric_limits<int32_t>::max();

int64_t MaxMessageBytes(const RequestLimits& limits) {
  return std::min(limits.max_message_bytes, kProtoMaxBytes);
}
int64_t MaxUnaryItems(const RequestLimits& limits) {
  return std::min(limits.max_items_per_request, kProtoMaxBytes);
}
// Items in one chunk of a stream: one unary request's worth, and at most
// half the queues (a chunk larger than the queues could never be admitted,
// and one that takes them all would almost always be refused).
int64_t MaxStreamChunkItems(const RequestLimits& limits) {
  return std::max<int64_t>(
      std::min(MaxUnaryItems(limits), limits.max_queued_items / 2), 1);
}
// Most items of `item_bytes` each that a unary response of `overhead` plus
// those items can hold (the size estimates of the Build functions below).
int64_t MaxItemsInMessage(const RequestLimits& limits, int64_t overhead,
                          int64_t item_bytes) {
  const int64_t room = MaxMessageBytes(limits) - overhead;
  return std::max<int64_t>(
      std::min(MaxUnaryItems(limits), room < 0 ? 0 : room / item_bytes), 0);
}

absl::Status CheckLimits(Kind kind, bool streamed, const Size& size,
                         const RequestLimits& limits) {
  const char* stream = StreamMethod(kind);
  const std::string items =
      absl::StrCat(CountText(size.items), " ", ItemsName(kind));
  if (streamed) {
    if (size.items > limits.max_items_per_stream) {
      return absl::OutOfRangeError(absl::StrCat(
          items, " exceed the server's max_items_per_stream = ",
          limits.max_items_per_stream, ": split the request into several"));
    }
    return absl::OkStatus();
  }
  // What to do instead: the stream when it would take the request.
  const std::string advice =
      stream != nullptr && size.items <= limits.max_items_per_stream
          ? absl::StrCat(": use ", stream, " (up to ",
                         limits.max_items_per_stream,
                         " items, in chunks) or split the request")
          : ": split the request into several";
  if (size.items > MaxUnaryItems(limits)) {
    return absl::OutOfRangeError(
        absl::StrCat(items, " exceed the server's max_items_per_request = ",
                     MaxUnaryItems(limits), advice));
  }
  if (size.bytes > MaxMessageBytes(limits)) {
    return absl::OutOfRangeError(absl::StrCat(
        "the response (", items, ") would take up to ", CountText(size.bytes),
        " bytes, more than the server's max_message_bytes = ",
        MaxMessageBytes(limits), advice));
  }
  return absl::OkStatus();
}

// A stream sends at least one unit (a categorical row, a board position)
// per chunk, so a streamed request whose single unit cannot fit in one
// message could never be sent, however it is cut: refuse it up front.
// `unit_bytes` is the unit's estimated size in a chunk (UnitBytes below).
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

// Sizes the representation of T in `reals` to n values and returns its
// memory, for the backend to write in place.
template <typename T>
absl::Span<T> BindReals(int64_t n, v1::Reals* reals) {
  if constexpr (std::is_same_v<T, float>) {
    auto* values = reals->mutable_f32()->mutable_values();
    values->Resize(static_cast<int>(n), 0.0f);
    return absl::Span<T>(values->mutable_data(), values->size());
  } else {
    auto* values = reals->mutable_f64()->mutable_values();
    values->Resize(static_cast<int>(n), 0.0);
    return absl::Span<T>(values->mutable_data(), values->size());
  }
}

// ------------------------------------------------------------- enumerate --

// The result offsets are known at parse time and Bind writes them into the
// response; out_offset (jobs.h) points here so that a backend that writes
// it has somewhere harmless to write.
struct ParsedEnumerateJob : EnumerateJob {
  std::vector<int64_t> offset_sink;
};

template <typename T>
absl::Status BuildEnumerate(const v1::EnumerateRequest& request,
                            EnumerateWork<T>* work, Size* size,
                            int64_t* pairs) {
  work->problems.resize(request.problems_size());
  for (int p = 0; p < request.problems_size(); ++p) {
    const v1::EnumerateProblem& problem = request.problems(p);
    EnumerateProblem<T>& job_problem = work->problems[p];
    const std::string path = absl::StrCat("problems[", p, "]");
    const int terms = problem.terms_size();
    job_problem.offsets.resize(terms);
    job_problem.terms.resize(terms);
    std::vector<kernels::PmfTerm<T>> views(terms);
    for (int t = 0; t < terms; ++t) {
      const v1::Pmf& term = problem.terms(t);
      absl::Status s =
          ReadReals(term.probabilities(),
                    absl::StrCat(path, ".terms[", t, "].probabilities"),
                    Tiny::kAllowed, &job_problem.terms[t]);
      if (!s.ok()) return s;
      job_problem.offsets[t] = term.offset();
      views[t].offset = term.offset();
      views[t].values = job_problem.terms[t];
    }
    absl::Status s = Prefixed(
        kernels::ValidateEnumerate<T>(views, work->input_space), path + ".");
    if (!s.ok()) return s;
    // Validated: every length and the result's are at most 2^24.
    int64_t length = 1;
    for (const auto& values : job_problem.terms) {
      length += static_cast<int64_t>(values.size()) - 1;
    }
    size->items = SatAdd(size->items, length);
    size->bytes = SatAdd(
        size->bytes,
        SatAdd(kPmfOverhead, SatMul(length, static_cast<int64_t>(sizeof(T)))));
    *pairs = SatAdd(*pairs, kernels::EnumeratePairCount<T>(views));
  }
  return absl::OkStatus();
}

// -------------------------------------------------------------- gamma --

// A whole streamed gamma request with groups: the end of each group in
// samples, so that each chunk finds its first group by binary search rather
// than a walk over all groups (a stream may have millions of groups and
// thousands of chunks).
struct StreamedGammaJob : GammaJob {
  std::vector<int64_t> group_ends;
};

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
  absl::Status s = ReadReals(elements.shape(), "elements.shape", Tiny::kRefused,
                             &work->shape);
  if (!s.ok()) return s;
  if (scales != 0) {
    s = ReadReals(elements.scale(), "elements.scale", Tiny::kRefused,
                  &work->scale);
    if (!s.ok()) return s;
  }
  // The kernel's check wants a scale per shape.
  const std::vector<T> ones(scales == 0 ? work->shape.size() : 0, T(1));
  s = Prefixed(kernels::ValidateGammaParams<T>(
                   work->shape, scales == 0 ? ones : work->scale),
               "elements.");
  if (!s.ok()) return s;
  if (!log_output) {
    for (int64_t i = 0; i < n; ++i) {
      s = CheckGammaOverflow<T>(
          work->shape[i], scales == 0 ? T(1) : work->scale[i], [&] {
            return absl::StrCat(
                scales == 0 ? "elements.shape[" : "elements.scale[", i, "]");
          });
      if (!s.ok()) return s;
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
    absl::Status s = ToPrecision<T>(
        group.shape(), Tiny::kRefused, &job_group.shape,
        [&] { return absl::StrCat("groups.groups[", g, "].shape"); });
    if (!s.ok()) return s;
    // Scale 0 means 1 (proto comment).
    const double scale = group.scale() == 0 ? 1.0 : group.scale();
    s = ToPrecision<T>(scale, Tiny::kRefused, &job_group.scale, [&] {
      return absl::StrCat("groups.groups[", g, "].scale");
    });
    if (!s.ok()) return s;
  }
  if (total == 0) {
    return Invalid("groups.groups: the counts of the ", groups.groups_size(),
                   " groups add up to 0: at least one sample is required");
  }
  size->items = total;
  if (total == kInt64Max) return absl::OkStatus();  // the limits refuse it
  absl::Status s = Prefixed(kernels::ValidateGammaGroups<T>(
                                work->groups, static_cast<uint64_t>(total)),
                            "groups.");
  if (!s.ok() || log_output) return s;
  for (int g = 0; g < groups.groups_size(); ++g) {
    s = CheckGammaOverflow<T>(
        work->groups[g].shape, work->groups[g].scale,
        [&] { return absl::StrCat("groups.groups[", g, "]"); });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status BuildGamma(const v1::SampleGammaRequest& request,
                        GammaWork<T>* work, Size* size) {
  absl::Status s;
  switch (request.parameters_case()) {
    case v1::SampleGammaRequest::kElements:
      s = BuildGammaElements(request.elements(), request.log_output(), work,
                             size);
      break;
    case v1::SampleGammaRequest::kGroups:
      s = BuildGammaGroups(request.groups(), request.log_output(), work, size);
      break;
    case v1::SampleGammaRequest::PARAMETERS_NOT_SET:
      return Invalid("parameters: missing (set elements or groups)");
  }
  if (!s.ok()) return s;
  size->bytes = SatAdd(kMessageOverhead,
                       SatMul(size->items, static_cast<int64_t>(sizeof(T))));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<GammaJob>> ParseGammaImpl(
    const v1::SampleGammaRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed) {
  absl::StatusOr<bool> is_float = ParsePrecision(request.precision());
  if (!is_float.ok()) return is_float.status();
  // Streamed groups get their ends (for slicing); all else a plain job.
  const bool with_ends =
      streamed && request.parameters_case() == v1::SampleGammaRequest::kGroups;
  std::shared_ptr<GammaJob> job;
  std::shared_ptr<StreamedGammaJob> streamed_job;
  if (with_ends) {
    streamed_job = std::make_shared<StreamedGammaJob>();
    job = streamed_job;
  } else {
    job = std::make_shared<GammaJob>();
  }
  Size size;
  absl::Status s;
  if (*is_float) {
    s = BuildGamma(request, &job->work.emplace<GammaWork<float>>(), &size);
  } else {
    s = BuildGamma(request, &job->work.emplace<GammaWork<double>>(), &size);
  }
  if (!s.ok()) return s;
  s = CheckLimits(Kind::kGamma, streamed, size, limits);
  if (!s.ok()) return s;
  if (with_ends) {
    std::visit(
        [&](const auto& work) {
          int64_t end = 0;
          streamed_job->group_ends.reserve(work.groups.size());
          for (const auto& group : work.groups) {
            end += group.count;
            streamed_job->group_ends.push_back(end);
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

template <typename T>
absl::Status BuildCategorical(const v1::SampleCategoricalRequest& request,
                              const kernels::CategoricalShape& shape,
                              kernels::WeightKind kind,
                              CategoricalWork<T>* work) {
  absl::Status s = ReadReals(request.values(), "values", Tiny::kAllowed,
                             &work->values, shape.categories);
  if (!s.ok()) return s;
  const char* kernel_field =
      kind == kernels::WeightKind::kLogits ? "logits" : "weights";
  return Renamed(kernels::ValidateCategorical<T>(work->values, shape, kind),
                 kernel_field, "values", kernel_field);
}

absl::StatusOr<std::shared_ptr<CategoricalJob>> ParseCategoricalImpl(
    const v1::SampleCategoricalRequest& request, const RequestLimits& limits,
    const SeedSource& seeds, bool streamed) {
  absl::StatusOr<bool> is_float = ParsePrecision(request.precision());
  if (!is_float.ok()) return is_float.status();
  absl::StatusOr<kernels::WeightKind> kind = ParseInput(request.input());
  if (!kind.ok()) return kind.status();
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
  job->weight_kind = *kind;
  absl::Status s =
      *is_float
          ? BuildCategorical(request, job->shape, *kind,
                             &job->work.emplace<CategoricalWork<float>>())
          : BuildCategorical(request, job->shape, *kind,
                             &job->work.emplace<CategoricalWork<double>>());
  if (!s.ok()) return s;
  Size size;
  size.items = SatMul(job->shape.rows, draws);
  size.bytes = SatAdd(
      kMessageOverhead,
      SatMul(size.items, VarintBytes(static_cast<uint64_t>(categories - 1))));
  s = CheckLimits(Kind::kCategorical, streamed, size, limits);
  if (!s.ok()) return s;
  if (streamed) {
    s = CheckStreamUnit(
        absl::StrCat("row (", draws, " draws)"),
        SatMul(draws, VarintBytes(static_cast<uint64_t>(categories - 1))),
        "ask for fewer draws per row", limits);
    if (!s.ok()) return s;
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
  absl::Status s = DirichletRows(request, n, &work->row_offsets);
  if (!s.ok()) return s;
  s = ReadReals(request.concentrations(), "concentrations", Tiny::kRefused,
                &work->alpha);
  if (!s.ok()) return s;
  return Renamed(
      kernels::ValidateDirichletParams<T>(work->alpha, work->row_offsets),
      "alpha", "concentrations");
}

// -------------------------------------------------------------- chunks --

// Bytes per stream unit in a chunk message, and items per unit.
int64_t UnitBytes(Kind kind, const Job& whole) {
  switch (kind) {
    case Kind::kCategorical:
      if (auto* job = dynamic_cast<const CategoricalJob*>(&whole)) {
        return SatMul(job->shape.draws,
                      VarintBytes(static_cast<uint64_t>(
                          std::max<int64_t>(job->shape.categories - 1, 0))));
      }
      break;
    case Kind::kGamma:
      if (auto* job = dynamic_cast<const GammaJob*>(&whole)) {
        return std::holds_alternative<GammaWork<float>>(job->work) ? 4 : 8;
      }
      break;
    case Kind::kBoards:
      if (auto* job = dynamic_cast<const BoardsJob*>(&whole)) {
        return SatMul(static_cast<int64_t>(job->spec.stones.size()) * 8,
                      kernels::BoardWords64(job->spec));
      }
      break;
    case Kind::kEnumerate:
    case Kind::kDirichlet:
      break;
  }
  return 8;
}

int64_t UnitItems(Kind kind, const Job& whole) {
  if (kind == Kind::kCategorical) {
    if (auto* job = dynamic_cast<const CategoricalJob*>(&whole)) {
      return std::max<int64_t>(job->shape.draws, 1);
    }
  }
  return 1;
}

// Copies what a chunk shares with its whole request.
void CopyCommon(const Job& whole, Job* chunk) {
  chunk->client = whole.client;
  chunk->seed = whole.seed;
  chunk->deadline = whole.deadline;
  chunk->cancelled = whole.cancelled;
}

bool ValidRange(int64_t first, int64_t count, int64_t total) {
  return first >= 0 && count >= 1 && first <= total && count <= total - first;
}

}  // namespace

// =============================================================== Limits ===

DerivedLimits DeriveLimits(const RequestLimits& limits) {
  DerivedLimits d;
  d.max_gamma_samples_float32 = MaxItemsInMessage(limits, kMessageOverhead, 4);
  d.max_gamma_samples_float64 = MaxItemsInMessage(limits, kMessageOverhead, 8);
  d.max_dirichlet_elements_float32 = d.max_gamma_samples_float32;
  d.max_dirichlet_elements_float64 = d.max_gamma_samples_float64;
  d.max_enumerate_elements_float32 =
      std::min(kernels::kMaxEnumerateSupport,
               MaxItemsInMessage(limits, kMessageOverhead + kPmfOverhead, 4));
  d.max_enumerate_elements_float64 =
      std::min(kernels::kMaxEnumerateSupport,
               MaxItemsInMessage(limits, kMessageOverhead + kPmfOverhead, 8));
  d.max_categorical_items = MaxItemsInMessage(limits, kMessageOverhead, 1);
  // Words, not positions: one position is at least one word per colour.
  d.max_board_words =
      std::max<int64_t>((MaxMessageBytes(limits) - kMessageOverhead) / 8, 0);
  d.max_stream_chunk_items = MaxStreamChunkItems(limits);
  return d;
}

// =============================================================== Parse ====

absl::StatusOr<std::shared_ptr<EnumerateJob>> ParseEnumerate(
    const v1::EnumerateRequest& request, const RequestLimits& limits) {
  absl::StatusOr<bool> is_float = ParsePrecision(request.precision());
  if (!is_float.ok()) return is_float.status();
  absl::StatusOr<kernels::ProbSpace> in =
      ParseSpace(request.input_space(), "input_space");
  if (!in.ok()) return in.status();
  absl::StatusOr<kernels::ProbSpace> out =
      ParseSpace(request.output_space(), "output_space");
  if (!out.ok()) return out.status();
  if (request.problems_size() == 0) {
    return Invalid("problems: at least one problem is required");
  }
  auto job = std::make_shared<ParsedEnumerateJob>();
  Size size;
  size.bytes = kMessageOverhead;
  int64_t pairs = 0;
  absl::Status s;
  if (*is_float) {
    auto& work = job->work.emplace<EnumerateWork<float>>();
    work.input_space = *in;
    work.output_space = *out;
    s = BuildEnumerate(request, &work, &size, &pairs);
  } else {
    auto& work = job->work.emplace<EnumerateWork<double>>();
    work.input_space = *in;
    work.output_space = *out;
    s = BuildEnumerate(request, &work, &size, &pairs);
  }
  if (!s.ok()) return s;
  s = CheckLimits(Kind::kEnumerate, /*streamed=*/false, size, limits);
  if (!s.ok()) return s;
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
  auto job = ParseCategoricalImpl(request, limits, seeds, streamed);
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
  absl::StatusOr<bool> is_float = ParsePrecision(request.precision());
  if (!is_float.ok()) return is_float.status();
  const int64_t n = RealsSize(request.concentrations());
  if (n < 0) return Missing("concentrations");
  if (n == 0) {
    return Invalid("concentrations: empty: at least one row is required");
  }
  auto job = std::make_shared<DirichletJob>();
  absl::Status s =
      *is_float ? BuildDirichlet(request, n,
                                 &job->work.emplace<DirichletWork<float>>())
                : BuildDirichlet(request, n,
                                 &job->work.emplace<DirichletWork<double>>());
  if (!s.ok()) return s;
  Size size;
  size.items = n;
  size.bytes = SatAdd(kMessageOverhead, SatMul(n, *is_float ? 4 : 8));
  s = CheckLimits(Kind::kDirichlet, /*streamed=*/false, size, limits);
  if (!s.ok()) return s;
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
  absl::Status s = kernels::ValidateBoardSpec(job->spec);
  if (!s.ok()) return InRequest(s, streamed);
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
  s = CheckLimits(Kind::kBoards, streamed, size, limits);
  if (!s.ok()) return s;
  if (streamed) {
    s = CheckStreamUnit(
        absl::StrCat("position (", job->spec.stones.size(), " colours of ",
                     kernels::BoardWords64(job->spec), " words)"),
        static_cast<int64_t>(job->spec.stones.size()) * 8 *
            kernels::BoardWords64(job->spec),
        "use fewer colours or a smaller board", limits);
    if (!s.ok()) return s;
  }
  job->count = request.count();
  job->items = request.count();
  job->seed = PickSeed(request.has_seed(), request.seed(), seeds);
  return job;
}

// ================================================================ Bind ====

namespace {

template <typename T>
void BindEnumerateWork(EnumerateWork<T>& work,
                       v1::EnumerateResponse* response) {
  auto* results = response->mutable_results();
  results->Clear();
  results->Reserve(static_cast<int>(work.problems.size()));
  // All results exist before any memory is bound: the repeated field holds
  // pointers, so adding results does not move earlier ones.
  for (size_t p = 0; p < work.problems.size(); ++p) results->Add();
  for (size_t p = 0; p < work.problems.size(); ++p) {
    EnumerateProblem<T>& problem = work.problems[p];
    v1::Pmf* pmf = results->Mutable(static_cast<int>(p));
    // Unsigned: validated jobs cannot overflow, and others must not be UB.
    uint64_t offset = 0;
    int64_t length = 1;
    for (size_t t = 0; t < problem.terms.size(); ++t) {
      offset += static_cast<uint64_t>(problem.offsets[t]);
      length += static_cast<int64_t>(problem.terms[t].size()) - 1;
    }
    pmf->set_offset(static_cast<int64_t>(offset));
    problem.out = BindReals<T>(length, pmf->mutable_probabilities());
  }
}

absl::Span<int32_t> BindIndices(
    int64_t n, google::protobuf::RepeatedField<int32_t>* indices) {
  indices->Resize(static_cast<int>(n), 0);
  return absl::Span<int32_t>(indices->mutable_data(), indices->size());
}

absl::Span<uint64_t> BindWords(
    int64_t n, google::protobuf::RepeatedField<uint64_t>* words) {
  words->Resize(static_cast<int>(n), 0);
  return absl::Span<uint64_t>(words->mutable_data(), words->size());
}

// Words of one position: colours x words per colour.
int64_t PositionWords(const kernels::BoardSpec& spec) {
  return static_cast<int64_t>(spec.stones.size()) * kernels::BoardWords64(spec);
}

}  // namespace

void BindEnumerate(EnumerateJob& job, v1::EnumerateResponse* response) {
  std::visit([&](auto& work) { BindEnumerateWork(work, response); }, job.work);
}

void BindCategorical(CategoricalJob& job,
                     v1::SampleCategoricalResponse* response) {
  const int64_t n = job.shape.rows * job.shape.draws;
  std::visit(
      [&](auto& work) {
        work.out = BindIndices(n, response->mutable_indices());
      },
      job.work);
  response->set_rows(job.shape.rows);
  response->set_draws(job.shape.draws);
  response->set_seed(job.seed);
}

void BindGamma(GammaJob& job, v1::SampleGammaResponse* response) {
  std::visit(
      [&](auto& work) {
        using T = typename decltype(work.out)::value_type;
        work.out = BindReals<T>(job.items, response->mutable_samples());
      },
      job.work);
  response->set_seed(job.seed);
}

void BindDirichlet(DirichletJob& job, v1::SampleDirichletResponse* response) {
  std::visit(
      [&](auto& work) {
        using T = typename decltype(work.out)::value_type;
        work.out = BindReals<T>(static_cast<int64_t>(work.alpha.size()),
                                response->mutable_samples());
      },
      job.work);
  response->set_seed(job.seed);
}

void BindBoards(BoardsJob& job, v1::SampleBoardsResponse* response) {
  job.out = BindWords(job.count * PositionWords(job.spec),
                      response->mutable_bitboards());
  response->set_words_per_board(kernels::BoardWords64(job.spec));
  response->set_colours(static_cast<int32_t>(job.spec.stones.size()));
  response->set_count(job.count);
  response->set_seed(job.seed);
}

// =============================================================== Stream ===

int64_t StreamUnits(Kind kind, const Job& whole) {
  switch (kind) {
    case Kind::kCategorical:
      if (auto* job = dynamic_cast<const CategoricalJob*>(&whole)) {
        return job->shape.rows;
      }
      break;
    case Kind::kGamma:
      if (auto* job = dynamic_cast<const GammaJob*>(&whole)) return job->items;
      break;
    case Kind::kBoards:
      if (auto* job = dynamic_cast<const BoardsJob*>(&whole)) {
        return job->count;
      }
      break;
    case Kind::kEnumerate:
    case Kind::kDirichlet:
      break;
  }
  return 0;
}

int64_t ChunkSize(Kind kind, const Job& whole, int64_t client_max_per_chunk,
                  const RequestLimits& limits) {
  const int64_t budget = std::max<int64_t>(
      std::min(limits.target_chunk_bytes, MaxMessageBytes(limits) / 2) -
          kMessageOverhead,
      1);
  int64_t units = std::max<int64_t>(
      budget / std::max<int64_t>(UnitBytes(kind, whole), 1), 1);
  const int64_t max_units = std::max<int64_t>(
      MaxStreamChunkItems(limits) / UnitItems(kind, whole), 1);
  units = std::min(units, max_units);
  // Whole warps: categorical rows run on lane (first_row + r) mod 32, and
  // chunks that start at multiples of 32 keep every warp of a chunk full.
  if (units >= 64) units -= units % 32;
  if (client_max_per_chunk > 0) units = std::min(units, client_max_per_chunk);
  return std::max<int64_t>(std::min(units, StreamUnits(kind, whole)), 1);
}

StreamPlan PlanStream(Kind kind, const Job& whole, int64_t client_max_per_chunk,
                      const RequestLimits& limits, int64_t max_piece_items) {
  StreamPlan plan;
  plan.piece = ChunkSize(kind, whole, /*client_max_per_chunk=*/0, limits);
  if (max_piece_items > 0) {
    plan.piece = std::max<int64_t>(
        std::min(plan.piece, max_piece_items / UnitItems(kind, whole)), 1);
  }
  plan.message = std::min(ChunkSize(kind, whole, client_max_per_chunk, limits),
                          plan.piece);
  // Whole messages per piece, and whole warps where that still leaves one
  // (categorical rows run on lane (first_row + r) mod 32). message <= piece
  // <= 2^31, so the lcm cannot overflow.
  const int64_t warps = std::lcm(plan.message, int64_t{32});
  const int64_t step = plan.piece >= warps ? warps : plan.message;
  plan.piece -= plan.piece % step;
  return plan;
}

absl::Status ValidateChunkMax(absl::string_view field, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return Invalid(field, " = ", value,
                 ": must be >= 0 (0 lets the server choose)");
}

std::shared_ptr<CategoricalJob> SliceCategorical(
    const CategoricalJob& whole, int64_t first_row, int64_t rows,
    v1::SampleCategoricalStreamResponse* chunk) {
  if (!ValidRange(first_row, rows, whole.shape.rows)) return nullptr;
  auto job = std::make_shared<CategoricalJob>();
  CopyCommon(whole, job.get());
  job->shape = whole.shape;
  job->shape.rows = rows;
  job->weight_kind = whole.weight_kind;
  job->first_row = whole.first_row + static_cast<uint64_t>(first_row);
  job->items = rows * whole.shape.draws;
  const size_t begin = static_cast<size_t>(first_row * whole.shape.categories);
  const size_t end = begin + static_cast<size_t>(rows * whole.shape.categories);
  bool fits = true;
  std::visit(
      [&](const auto& work) {
        using W = std::decay_t<decltype(work)>;
        W& part = job->work.template emplace<W>();
        if (end > work.values.size()) {
          fits = false;
          return;
        }
        part.values.assign(work.values.begin() + begin,
                           work.values.begin() + end);
        part.out = BindIndices(job->items, chunk->mutable_indices());
      },
      whole.work);
  if (!fits) return nullptr;
  chunk->set_first_row(static_cast<int64_t>(job->first_row));
  chunk->set_rows(rows);
  chunk->set_draws(job->shape.draws);
  chunk->set_seed(job->seed);
  return job;
}

std::shared_ptr<GammaJob> SliceGamma(const GammaJob& whole,
                                     int64_t first_sample, int64_t samples,
                                     v1::SampleGammaStreamResponse* chunk) {
  if (!ValidRange(first_sample, samples, whole.items)) return nullptr;
  auto job = std::make_shared<GammaJob>();
  CopyCommon(whole, job.get());
  job->log_output = whole.log_output;
  job->first_sample = whole.first_sample + static_cast<uint64_t>(first_sample);
  job->items = samples;
  const int64_t last = first_sample + samples;  // one past
  const auto* ends = dynamic_cast<const StreamedGammaJob*>(&whole);
  bool fits = true;
  std::visit(
      [&](const auto& work) {
        using W = std::decay_t<decltype(work)>;
        using T = typename decltype(work.out)::value_type;
        W& part = job->work.template emplace<W>();
        if (work.groups.empty()) {
          const size_t begin = static_cast<size_t>(first_sample);
          const size_t end = static_cast<size_t>(last);
          if (end > work.shape.size() ||
              (!work.scale.empty() && end > work.scale.size())) {
            fits = false;
            return;
          }
          part.shape.assign(work.shape.begin() + begin,
                            work.shape.begin() + end);
          if (!work.scale.empty()) {
            part.scale.assign(work.scale.begin() + begin,
                              work.scale.begin() + end);
          }
        } else {
          // The first group that ends after first_sample, and its start.
          size_t g = 0;
          int64_t start = 0;
          if (ends != nullptr &&
              ends->group_ends.size() == work.groups.size()) {
            g = static_cast<size_t>(std::upper_bound(ends->group_ends.begin(),
                                                     ends->group_ends.end(),
                                                     first_sample) -
                                    ends->group_ends.begin());
            if (g < work.groups.size()) {
              start = ends->group_ends[g] - work.groups[g].count;
            }
          } else {
            while (g < work.groups.size() &&
                   start + work.groups[g].count <= first_sample) {
              start += work.groups[g].count;
              ++g;
            }
          }
          int64_t covered = 0;
          for (; g < work.groups.size() && start < last; ++g) {
            const kernels::GammaGroup<T>& group = work.groups[g];
            const int64_t from = std::max(start, first_sample);
            const int64_t to = std::min(start + group.count, last);
            if (to > from) {
              part.groups.push_back({group.shape, group.scale, to - from});
              covered += to - from;
            }
            start += group.count;
          }
          if (covered != samples) {
            fits = false;
            return;
          }
        }
        part.out = BindReals<T>(samples, chunk->mutable_samples());
      },
      whole.work);
  if (!fits) return nullptr;
  chunk->set_first_sample(static_cast<int64_t>(job->first_sample));
  chunk->set_seed(job->seed);
  return job;
}

std::shared_ptr<BoardsJob> SliceBoards(const BoardsJob& whole,
                                       int64_t first_position,
                                       int64_t positions,
                                       v1::SampleBoardsStreamResponse* chunk) {
  if (!ValidRange(first_position, positions, whole.count)) return nullptr;
  auto job = std::make_shared<BoardsJob>();
  CopyCommon(whole, job.get());
  job->spec = whole.spec;
  job->count = positions;
  job->items = positions;
  job->first_position =
      whole.first_position + static_cast<uint64_t>(first_position);
  job->out = BindWords(positions * PositionWords(job->spec),
                       chunk->mutable_bitboards());
  chunk->set_first_position(static_cast<int64_t>(job->first_position));
  chunk->set_words_per_board(kernels::BoardWords64(job->spec));
  chunk->set_colours(static_cast<int32_t>(job->spec.stones.size()));
  chunk->set_count(positions);
  chunk->set_seed(job->seed);
  return job;
}

bool CutCategoricalMessage(const v1::SampleCategoricalStreamResponse& piece,
                           int64_t first, int64_t count,
                           v1::SampleCategoricalStreamResponse* message) {
  const int64_t draws = piece.draws();
  if (!ValidRange(first, count, piece.rows()) ||
      SatMul(piece.rows(), draws) != piece.indices_size()) {
    return false;
  }
  const auto begin = piece.indices().begin() + first * draws;
  message->mutable_indices()->Assign(begin, begin + count * draws);
  message->set_first_row(piece.first_row() + first);
  message->set_rows(count);
  message->set_draws(piece.draws());
  message->set_seed(piece.seed());
  return true;
}

bool CutGammaMessage(const v1::SampleGammaStreamResponse& piece, int64_t first,
                     int64_t count, v1::SampleGammaStreamResponse* message) {
  const v1::Reals& samples = piece.samples();
  auto cut = [&](const auto& values, auto* out) {
    if (!ValidRange(first, count, values.size())) return false;
    out->Assign(values.begin() + first, values.begin() + first + count);
    return true;
  };
  bool ok = false;
  if (samples.has_f32()) {
    ok = cut(samples.f32().values(),
             message->mutable_samples()->mutable_f32()->mutable_values());
  } else if (samples.has_f64()) {
    ok = cut(samples.f64().values(),
             message->mutable_samples()->mutable_f64()->mutable_values());
  }
  if (!ok) return false;
  message->set_first_sample(piece.first_sample() + first);
  message->set_seed(piece.seed());
  return true;
}

bool CutBoardsMessage(const v1::SampleBoardsStreamResponse& piece,
                      int64_t first, int64_t count,
                      v1::SampleBoardsStreamResponse* message) {
  const int64_t words =
      SatMul(int64_t{piece.colours()}, int64_t{piece.words_per_board()});
  if (!ValidRange(first, count, piece.count()) || words <= 0 ||
      SatMul(piece.count(), words) != piece.bitboards_size()) {
    return false;
  }
  const auto begin = piece.bitboards().begin() + first * words;
  message->mutable_bitboards()->Assign(begin, begin + count * words);
  message->set_first_position(piece.first_position() + first);
  message->set_words_per_board(piece.words_per_board());
  message->set_colours(piece.colours());
  message->set_count(count);
  message->set_seed(piece.seed());
  return true;
}

}  // namespace sampler::server
