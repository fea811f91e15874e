// Parsing of the list-valued command-line arguments of the client tools
// ("0.5,0.25", "OFFSET:p0,p1", "w,w;w,w", "f32"). Pure: no gRPC, no flags.
#ifndef SAMPLER_CLIENT_COMMON_PARSE_H_
#define SAMPLER_CLIENT_COMMON_PARSE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sampler/v1/sampler.pb.h"

namespace sampler::client {

// Comma-separated reals; whitespace around each is ignored and "inf",
// "-inf" are accepted (logits). Errors name the offending element.
absl::StatusOr<std::vector<double>> ParseDoubleList(absl::string_view text);

// Comma-separated integers.
absl::StatusOr<std::vector<int64_t>> ParseInt64List(absl::string_view text);

// One term of an enumeration problem: "OFFSET:p0,p1,..." (the offset may be
// negative) or "p0,p1,..." for offset 0.
struct PmfTerm {
  int64_t offset = 0;
  std::vector<double> probabilities;
};
absl::StatusOr<PmfTerm> ParsePmfTerm(absl::string_view text);

// Terms separated by ';' (how repeated --pmf flags arrive, see args.h).
absl::StatusOr<std::vector<PmfTerm>> ParsePmfTerms(absl::string_view text);

// Rows separated by ';', values by ','; every row must have the same
// length, since a categorical request has one K for all rows.
absl::StatusOr<std::vector<std::vector<double>>> ParseMatrix(
    absl::string_view text);

// "f32"/"float32", "f64"/"float64", or "" for PRECISION_UNSPECIFIED (the
// server's default, float64).
absl::StatusOr<sampler::v1::Precision> ParsePrecision(absl::string_view text);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_COMMON_PARSE_H_
