#include "client/common/parse.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::client {
namespace {

// Splits on `separator` and strips whitespace; an empty or all-blank text is
// an error rather than a list of one empty element.
absl::StatusOr<std::vector<absl::string_view>> SplitNonEmpty(
    absl::string_view text, char separator, absl::string_view what) {
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("empty ", what));
  }
  std::vector<absl::string_view> parts = absl::StrSplit(text, separator);
  for (absl::string_view& part : parts) part = absl::StripAsciiWhitespace(part);
  return parts;
}

}  // namespace

absl::StatusOr<std::vector<double>> ParseDoubleList(absl::string_view text) {
  SAMPLER_ASSIGN_OR_RETURN(std::vector<absl::string_view> parts,
                           SplitNonEmpty(text, ',', "list of numbers"));
  std::vector<double> values;
  values.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    double value;
    if (!absl::SimpleAtod(parts[i], &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("element ", i, " of \"", text, "\" is not a number: \"",
                       parts[i], "\""));
    }
    values.push_back(value);
  }
  return values;
}

absl::StatusOr<std::vector<int64_t>> ParseInt64List(absl::string_view text) {
  SAMPLER_ASSIGN_OR_RETURN(std::vector<absl::string_view> parts,
                           SplitNonEmpty(text, ',', "list of integers"));
  std::vector<int64_t> values;
  values.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    int64_t value;
    if (!absl::SimpleAtoi(parts[i], &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("element ", i, " of \"", text,
                       "\" is not an integer: \"", parts[i], "\""));
    }
    values.push_back(value);
  }
  return values;
}

absl::StatusOr<PmfTerm> ParsePmfTerm(absl::string_view text) {
  PmfTerm term;
  absl::string_view probabilities = text;
  const size_t colon = text.find(':');
  if (colon != absl::string_view::npos) {
    const absl::string_view offset =
        absl::StripAsciiWhitespace(text.substr(0, colon));
    if (!absl::SimpleAtoi(offset, &term.offset)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PMF \"", text, "\": offset \"", offset, "\" is not an integer"));
    }
    probabilities = text.substr(colon + 1);
  }
  absl::StatusOr<std::vector<double>> values = ParseDoubleList(probabilities);
  if (!values.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PMF \"", text, "\": ", values.status().message()));
  }
  term.probabilities = *std::move(values);
  return term;
}

absl::StatusOr<std::vector<PmfTerm>> ParsePmfTerms(absl::string_view text) {
  SAMPLER_ASSIGN_OR_RETURN(std::vector<absl::string_view> parts,
                           SplitNonEmpty(text, ';', "PMF list"));
  std::vector<PmfTerm> terms;
  for (absl::string_view part : parts) {
    SAMPLER_ASSIGN_OR_RETURN(PmfTerm term, ParsePmfTerm(part));
    terms.push_back(std::move(term));
  }
  return terms;
}

absl::StatusOr<std::vector<std::vector<double>>> ParseMatrix(
    absl::string_view text) {
  SAMPLER_ASSIGN_OR_RETURN(std::vector<absl::string_view> parts,
                           SplitNonEmpty(text, ';', "matrix"));
  std::vector<std::vector<double>> rows;
  for (size_t r = 0; r < parts.size(); ++r) {
    absl::StatusOr<std::vector<double>> row = ParseDoubleList(parts[r]);
    if (!row.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("row ", r, ": ", row.status().message()));
    }
    if (!rows.empty() && row->size() != rows.front().size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("row ", r, " has ", row->size(), " values, row 0 has ",
                       rows.front().size(), "; all rows need the same number"));
    }
    rows.push_back(*std::move(row));
  }
  return rows;
}

absl::StatusOr<sampler::v1::Precision> ParsePrecision(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower.empty()) return sampler::v1::PRECISION_UNSPECIFIED;
  if (lower == "f32" || lower == "float32") {
    return sampler::v1::PRECISION_FLOAT32;
  }
  if (lower == "f64" || lower == "float64") {
    return sampler::v1::PRECISION_FLOAT64;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("precision \"", text, "\": expected f32 or f64"));
}

}  // namespace sampler::client
