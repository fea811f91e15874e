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

// SAMPLER_HOST_FMA_CLONES marks a host loop over the shared arithmetic
// that is compiled twice, for x86-64 CPUs with FMA and for any, the one to
// run chosen when the program loads (GCC's target_clones, an ifunc), and
// flattened: what it calls is inlined into it, so that in the FMA clone
// every detmath fma is one instruction. Without it each std::fma is a call
// into libm (x86-64's baseline has no FMA): a third of the instructions of
// a 256-sample gamma call (issue 13, bench/results/
// small-request-profile-2core-2026-11-26.md). fma is correctly rounded
// either way and the build forbids contraction (-ffp-contract=off), so
// both clones give the same bits (tests/golden). Not in sanitizer builds:
// a ThreadSanitizer program whose code has an ifunc crashes at load (GCC
// 12), and they measure correctness, not speed.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__CUDACC__) && !defined(__SANITIZE_THREAD__) &&           \
    !defined(__SANITIZE_ADDRESS__)
#define SAMPLER_HOST_FMA_CLONES \
  __attribute__((target_clones("fma", "default"), flatten))
#else
#define SAMPLER_HOST_FMA_CLONES
#endif

namespace sampler::kernels {

// The warp width is a compile-time constant: the board seed measured a 2x
// loss from loops bounded by the run-time `warpSize`. The CPU twins emulate
// warps of this width so that their arithmetic order matches the GPU's.
inline constexpr int kWarpSize = 32;

enum class Precision { kFloat32, kFloat64 };

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_COMMON_H_
