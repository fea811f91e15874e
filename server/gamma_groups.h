// Gamma groups (kernels::GammaGroup: `count` samples sharing one shape and
// scale, laid end to end in the output) cut to a range of their samples:
// what a piece of a split job (cpu_executor.cc) and a chunk of a streamed
// request sample.
#ifndef SAMPLER_SERVER_GAMMA_GROUPS_H_
#define SAMPLER_SERVER_GAMMA_GROUPS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "sampler/kernels/gamma.h"

namespace sampler::server {

// Where ClipGammaGroups starts looking: group `index`, whose first sample is
// `first_sample`. The default, the first group, is always right; a caller
// that knows where each group ends (a binary search over the ends) may skip
// the groups that end at or before the range.
struct GammaGroupStart {
  size_t index = 0;
  int64_t first_sample = 0;
};

// Samples [begin, end) of `groups` as groups of their own: every group that
// overlaps the range, in order, with its count cut to the overlap (groups
// with no sample in the range are left out). Samples are numbered by their
// position in the output, so sampling the result from sample `begin` on
// gives the same bits as those samples of the whole. The counts add up to
// end - begin when the groups cover the range (fewer when they end first).
template <typename T>
std::vector<kernels::GammaGroup<T>> ClipGammaGroups(
    absl::Span<const kernels::GammaGroup<T>> groups, int64_t begin, int64_t end,
    GammaGroupStart start = {});

extern template std::vector<kernels::GammaGroup<float>> ClipGammaGroups(
    absl::Span<const kernels::GammaGroup<float>>, int64_t, int64_t,
    GammaGroupStart);
extern template std::vector<kernels::GammaGroup<double>> ClipGammaGroups(
    absl::Span<const kernels::GammaGroup<double>>, int64_t, int64_t,
    GammaGroupStart);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_GAMMA_GROUPS_H_
