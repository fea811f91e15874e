// Device-side lookup of a categorical batch's segments, shared by the
// kernels of categorical.cu, categorical_row_split.cu and
// categorical_lanes.cu, and the parameters their launches share.
#ifndef SAMPLER_KERNELS_CATEGORICAL_SEGMENTS_CUH_
#define SAMPLER_KERNELS_CATEGORICAL_SEGMENTS_CUH_

#include <cstdint>

#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {

// What every launch of a segmented batch passes its kernel: the segments
// (device copy), the batch's values and outputs.
template <typename T>
struct SegmentedParams {
  const CategoricalSegment* segments;
  int32_t num_segments;
  const T* values;
  int32_t* out;
};

// The shared parameters of a launch (host side).
template <typename T>
SegmentedParams<T> SegmentedParamsOf(const CategoricalPlan& plan,
                                     const CategoricalSegment* segments,
                                     const T* values, int32_t* out) {
  SegmentedParams<T> params{};
  params.segments = segments;
  params.num_segments = plan.num_segments;
  params.values = values;
  params.out = out;
  return params;
}

// The segment that owns `task`: the last one whose task_begin <= task.
__device__ __forceinline__ const CategoricalSegment& FindSegment(
    const CategoricalSegment* segments, int32_t n, int64_t task) {
  int32_t lo = 0;
  int32_t hi = n - 1;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    if (segments[mid].task_begin <= task) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return segments[lo];
}

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CATEGORICAL_SEGMENTS_CUH_
