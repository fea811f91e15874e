// Ceilings for bench/boards_bench.cc: how many Philox4x32-10 blocks per
// second the GPU computes when it does nothing else. Board sampling spends
// most of its integer instructions in Philox, so this rate over the Philox
// blocks a position needs is the compute roofline of the board kernels.
//
// Two formulations of the same bits: Random123's (philox.h: __umulhi plus a
// 32-bit multiply per product, the key bumped every round) and the board
// kernels' (kernels/boards.cu: one 64-bit multiply per product, round keys
// computed once and shared by a thread's blocks).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/raii.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/philox.h"

namespace sampler::bench {
namespace {

constexpr int kThreads = 256;
// Independent blocks in flight per thread, as in a threadwise 32x32 step.
constexpr int kUnroll = 8;

// The board kernels' formulation (a copy of BoardPhilox in
// kernels/boards.cu, which is internal to that file).
__device__ __forceinline__ kernels::PhiloxBlock WidePhilox(
    const uint32_t (&k0)[10], const uint32_t (&k1)[10], uint32_t c0,
    uint32_t c1, uint32_t c2, uint32_t c3) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0;
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c2;
    c0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0[r];
    c1 = static_cast<uint32_t>(p1);
    c2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1[r];
    c3 = static_cast<uint32_t>(p0);
  }
  return kernels::PhiloxBlock{{c0, c1, c2, c3}};
}

// Each thread draws `rounds * kUnroll` blocks of its own item, with the
// counter layout of the board kernels, and folds them into one word so that
// nothing is optimised away and almost nothing is written.
template <bool kWide>
__global__ void __launch_bounds__(kThreads)
    PhiloxKernel(uint64_t seed, int rounds, uint32_t* out) {
  const uint64_t item =
      static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  uint32_t k0[10];
  uint32_t k1[10];
#pragma unroll
  for (uint32_t r = 0; r < 10; ++r) {
    k0[r] = static_cast<uint32_t>(seed) + r * 0x9E3779B9u;
    k1[r] = static_cast<uint32_t>(seed >> 32) + r * 0xBB67AE85u;
  }
  uint32_t acc = 0;
  for (int r = 0; r < rounds; ++r) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint32_t draw = static_cast<uint32_t>(r * kUnroll + u);
      const kernels::PhiloxBlock b =
          kWide ? WidePhilox(k0, k1, draw, static_cast<uint32_t>(item),
                             static_cast<uint32_t>(item >> 32),
                             static_cast<uint32_t>(kernels::KindTag::kBoards))
                : kernels::Philox(seed, kernels::KindTag::kBoards, item, draw);
      acc ^= b.v[0] ^ b.v[1] ^ b.v[2] ^ b.v[3];
    }
  }
  out[item] = acc;
}

}  // namespace

// Philox blocks per second, the median of `reps` timed launches; `wide`
// picks the board kernels' formulation over Random123's.
absl::StatusOr<double> PhiloxBlocksPerSecond(cudaStream_t stream, int reps,
                                             bool wide) {
  int device = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  int sms = 0;
  SAMPLER_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int blocks = sms * 64;  // Many waves' worth of threads.
  const int rounds = 64;
  absl::StatusOr<kernels::cuda::DeviceBuffer> out =
      kernels::cuda::DeviceBuffer::Create(sizeof(uint32_t) * blocks * kThreads,
                                          stream);
  if (!out.ok()) return out.status();
  absl::StatusOr<kernels::cuda::Event> start =
      kernels::cuda::Event::Create(true);
  if (!start.ok()) return start.status();
  absl::StatusOr<kernels::cuda::Event> stop =
      kernels::cuda::Event::Create(true);
  if (!stop.ok()) return stop.status();
  std::vector<float> ms;
  for (int i = 0; i <= reps; ++i) {
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(start->get(), stream));
    if (wide) {
      PhiloxKernel<true><<<blocks, kThreads, 0, stream>>>(0x1234567 + i, rounds,
                                                          out->as<uint32_t>());
    } else {
      PhiloxKernel<false><<<blocks, kThreads, 0, stream>>>(
          0x1234567 + i, rounds, out->as<uint32_t>());
    }
    SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop->get(), stream));
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop->get()));
    float t = 0;
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaEventElapsedTime(&t, start->get(), stop->get()));
    if (i > 0) ms.push_back(t);  // The first launch warms up.
  }
  std::sort(ms.begin(), ms.end());
  const double median_s = ms[ms.size() / 2] * 1e-3;
  return static_cast<double>(blocks) * kThreads * rounds * kUnroll / median_s;
}

}  // namespace sampler::bench
