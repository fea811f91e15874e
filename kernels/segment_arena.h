// Host helpers of the gamma and Dirichlet batch builders (gamma.cu,
// dirichlet.cu): the alignment of an arena's sections (also the staging
// pipeline's regions, staging.cc), laying out and packing its arrays, and
// the limits of one batch.
#ifndef SAMPLER_KERNELS_SEGMENT_ARENA_H_
#define SAMPLER_KERNELS_SEGMENT_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/status.h"

namespace sampler::kernels::cuda::segment_arena {

inline size_t AlignUp(size_t x) {
  constexpr size_t kAlign = 256;  // cudaMalloc's alignment
  return (x + kAlign - 1) / kAlign * kAlign;
}

// Where the section after `v` starts when `v` starts at `at`: the arena's
// sections are laid end to end, each aligned.
template <typename V>
size_t After(size_t at, const std::vector<V>& v) {
  return AlignUp(at + sizeof(V) * v.size());
}

// Copies `v` into the host arena at `at` (nothing for an empty vector).
template <typename V>
void CopyInto(char* base, size_t at, const std::vector<V>& v) {
  if (!v.empty()) std::memcpy(base + at, v.data(), sizeof(V) * v.size());
}

// RESOURCE_EXHAUSTED when a batch of `segments` segments and `total` outputs
// cannot take one more segment of `more` outputs.
inline absl::Status CheckRoom(size_t segments, int64_t total, size_t more) {
  if (segments >= static_cast<size_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError("too many segments in one batch");
  }
  if (more > static_cast<uint64_t>(INT64_MAX - total)) {
    return absl::ResourceExhaustedError("too many outputs in one batch");
  }
  return absl::OkStatus();
}

}  // namespace sampler::kernels::cuda::segment_arena

#endif  // SAMPLER_KERNELS_SEGMENT_ARENA_H_
