// Helpers for sampler.v1.Reals, which carries float32 or float64 values
// depending on the precision of the request.
#ifndef SAMPLER_CLIENT_COMMON_REALS_H_
#define SAMPLER_CLIENT_COMMON_REALS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "sampler/v1/sampler.pb.h"

namespace sampler::client {

// Number of values, whichever representation is set (0 when none is).
int64_t RealsSize(const sampler::v1::Reals& reals);

// Whether the values are float32 (a float32 answer).
inline bool RealsAreF32(const sampler::v1::Reals& reals) {
  return reals.has_f32();
}

// Replaces `out` with the values as doubles (float32 converts exactly).
void RealsToDoubles(const sampler::v1::Reals& reals, std::vector<double>* out);

// The same for values [begin, begin + count) only (clamped to the size), so
// that a large answer can be read in slices without a second full copy.
void RealsToDoubles(const sampler::v1::Reals& reals, int64_t begin,
                    int64_t count, std::vector<double>* out);

// Sets `reals` to `values` in the representation a request of `precision`
// answers in: f32 for PRECISION_FLOAT32, f64 otherwise. Sending float32
// values for a float32 request halves the message and is what the server
// would round them to anyway.
void SetReals(absl::Span<const double> values, sampler::v1::Precision precision,
              sampler::v1::Reals* reals);

// Appends the values of `chunk` to `total`; `total` takes the representation
// of the first non-empty chunk (values of the other one are converted).
void AppendReals(const sampler::v1::Reals& chunk, sampler::v1::Reals* total);

// The shortest decimal text that reads back as the same value: as a float
// when `single_precision` (so 0.1f prints as 0.1, not 0.100000001490116).
std::string FormatReal(double value, bool single_precision);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_COMMON_REALS_H_
