#include "server/gamma_groups.h"

#include <algorithm>

namespace sampler::server {

template <typename T>
std::vector<kernels::GammaGroup<T>> ClipGammaGroups(
    absl::Span<const kernels::GammaGroup<T>> groups, int64_t begin, int64_t end,
    GammaGroupStart start) {
  std::vector<kernels::GammaGroup<T>> clipped;
  int64_t first = start.first_sample;  // of group g
  for (size_t g = start.index; g < groups.size() && first < end; ++g) {
    const kernels::GammaGroup<T>& group = groups[g];
    const int64_t from = std::max(first, begin);
    const int64_t to = std::min(first + group.count, end);
    if (to > from) clipped.push_back({group.shape, group.scale, to - from});
    first += group.count;
  }
  return clipped;
}

template std::vector<kernels::GammaGroup<float>> ClipGammaGroups(
    absl::Span<const kernels::GammaGroup<float>>, int64_t, int64_t,
    GammaGroupStart);
template std::vector<kernels::GammaGroup<double>> ClipGammaGroups(
    absl::Span<const kernels::GammaGroup<double>>, int64_t, int64_t,
    GammaGroupStart);

}  // namespace sampler::server
