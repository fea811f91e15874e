// The terms of an Enumerate problem in either of its forms (sampler.proto,
// EnumerateProblem): building a problem from terms, explicit or packed, and
// reading back how many terms it has and how long its result is.
#ifndef SAMPLER_CLIENT_COMMON_ENUMERATE_TERMS_H_
#define SAMPLER_CLIENT_COMMON_ENUMERATE_TERMS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "client/common/parse.h"
#include "sampler/v1/sampler.pb.h"

namespace sampler::client {

// Adds `terms` to `problem`: one Pmf each (explicit), or all values end to
// end with term_length (all equally long) or lengths, and offsets only when
// one is nonzero (packed). `repeats` is empty or one count per term.
void AddTerms(absl::Span<const PmfTerm> terms,
              absl::Span<const int64_t> repeats, bool packed,
              sampler::v1::Precision precision,
              sampler::v1::EnumerateProblem* problem);

// Each term's length and repeat count, whichever form the problem uses (as
// the server reads it; a malformed packed problem gives what can be read).
struct TermShape {
  int64_t length = 0;
  int64_t repeats = 1;
};
std::vector<TermShape> ProblemTerms(
    const sampler::v1::EnumerateProblem& problem);

// Terms with repeats counted.
int64_t TermCount(const sampler::v1::EnumerateProblem& problem);

// Points of the problem's result: 1 + sum of repeats x (length - 1); 0 for a
// problem without terms.
int64_t ResultLength(const sampler::v1::EnumerateProblem& problem);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_COMMON_ENUMERATE_TERMS_H_
