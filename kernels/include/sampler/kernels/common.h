// Shared definitions for host and device code of the sampling kernels.
#ifndef SAMPLER_KERNELS_COMMON_H_
#define SAMPLER_KERNELS_COMMON_H_

#include <cstdint>

// SAMPLER_HD marks functions compiled for both the host and the device, so
// that the CPU implementation and the CUDA kernels share one definition of
// every piece of arithmetic whose bits the randomness contract pins.
#if defined(__CUDACC__)
#define SAMPLER_HD __host__ __device__ __forceinline__
#else
#define SAMPLER_HD inline
#endif

namespace sampler::kernels {

// The warp width is a compile-time constant: the board seed measured a 2x
// loss from loops bounded by the run-time `warpSize`. The CPU twins emulate
// warps of this width so that their arithmetic order matches the GPU's.
inline constexpr int kWarpSize = 32;

enum class Precision { kFloat32, kFloat64 };

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_COMMON_H_
