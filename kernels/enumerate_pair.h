// The pair kernel of the CUDA enumeration (LaunchKind::kPair, in
// enumerate_pair.cu): one warp per two-term linear problem whose terms fit
// the warp (PairKernelFits, enumerate_plan.h), without the direct kernel's
// tiles, task lists or staging loops. Private to the enumeration's CUDA
// library; enumerate_plan.cc routes to it and enumerate.cu launches it.
#ifndef SAMPLER_KERNELS_ENUMERATE_PAIR_H_
#define SAMPLER_KERNELS_ENUMERATE_PAIR_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "sampler/kernels/cuda/enumerate.h"

namespace sampler::kernels::cuda::enumerate_internal {

// Queues the kernel's variant (kPairVariants, enumerate_plan.h: 0 a warp
// per problem, 1 two problems a warp; the same bits) over `count` step
// problems (each the root pair of its problem: both operands terms in
// `values`, the result in `out`) on `stream`. Writes their problems' status
// words (0, or kEnumerateStatusNonFinite), so that a batch of pair problems
// only needs no zeroing of them (EnumerateBatch::zero_status). Errors are
// launch errors.
template <typename T>
absl::Status LaunchPairKernel(int variant, const StepProblem* steps,
                              int64_t count, const T* values, T* out,
                              uint32_t* status, cudaStream_t stream);

extern template absl::Status LaunchPairKernel<float>(int, const StepProblem*,
                                                     int64_t, const float*,
                                                     float*, uint32_t*,
                                                     cudaStream_t);
extern template absl::Status LaunchPairKernel<double>(int, const StepProblem*,
                                                      int64_t, const double*,
                                                      double*, uint32_t*,
                                                      cudaStream_t);

}  // namespace sampler::kernels::cuda::enumerate_internal

#endif  // SAMPLER_KERNELS_ENUMERATE_PAIR_H_
