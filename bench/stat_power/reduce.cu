#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "bench/stat_power/reduce.h"

namespace sampler::bench {
namespace {

constexpr int kThreads = 256;

__device__ double BlockSum(double v, double* smem) {
  smem[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
    __syncthreads();
  }
  const double r = smem[0];
  __syncthreads();
  return r;
}

template <typename T>
__global__ void MomentSumsKernel(const T* x, int64_t n, bool log_output,
                                 double mu_lin, double sd_lin, double mu_log,
                                 double sd_log, double* partials) {
  __shared__ double smem[kThreads];
  double a = 0, b = 0, c = 0, d = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n;
       i += stride) {
    const double v = static_cast<double>(x[i]);
    double t;
    if (log_output) {
      t = (v - mu_log) / sd_log;
    } else {
      const double s = (v - mu_lin) / sd_lin;
      a += s;
      b += s * s - 1;
      t = (log(v) - mu_log) / sd_log;
    }
    c += t;
    d += t * t - 1;
  }
  a = BlockSum(a, smem);
  b = BlockSum(b, smem);
  c = BlockSum(c, smem);
  d = BlockSum(d, smem);
  if (threadIdx.x == 0) {
    partials[4 * blockIdx.x + 0] = a;
    partials[4 * blockIdx.x + 1] = b;
    partials[4 * blockIdx.x + 2] = c;
    partials[4 * blockIdx.x + 3] = d;
  }
}

// Grid: (ceil(k / kThreads), kRowChunks). Thread = one component, looping
// over its chunk of rows (consecutive threads read consecutive components).
template <typename T>
__global__ void ComponentSumsKernel(const T* y, int64_t rows, int k,
                                    const double* params, double* partials) {
  const int i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= k) return;
  const double mu_lin = params[4 * i], sd_lin = params[4 * i + 1];
  const double mu_log = params[4 * i + 2], sd_log = params[4 * i + 3];
  const int64_t per = (rows + kRowChunks - 1) / kRowChunks;
  const int64_t r0 = blockIdx.y * per;
  const int64_t r1 = r0 + per < rows ? r0 + per : rows;
  double a = 0, b = 0, c = 0, d = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const double v = static_cast<double>(y[r * k + i]);
    const double s = (exp(v) - mu_lin) / sd_lin;
    const double t = (v - mu_log) / sd_log;
    a += s;
    b += s * s - 1;
    c += t;
    d += t * t - 1;
  }
  double* p = partials + (static_cast<int64_t>(blockIdx.y) * k + i) * 4;
  p[0] = a;
  p[1] = b;
  p[2] = c;
  p[3] = d;
}

constexpr int kSharedBins = 8192;

__global__ void HistogramSharedKernel(const int32_t* idx, int64_t n, int k,
                                      unsigned long long* counts) {
  __shared__ unsigned int h[kSharedBins + 1];
  for (int j = threadIdx.x; j <= k; j += kThreads) h[j] = 0;
  __syncthreads();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n;
       i += stride) {
    const int32_t v = idx[i];
    atomicAdd(&h[(v >= 0 && v < k) ? v : k], 1u);
  }
  __syncthreads();
  for (int j = threadIdx.x; j <= k; j += kThreads)
    if (h[j] != 0) atomicAdd(&counts[j], static_cast<unsigned long long>(h[j]));
}

__global__ void HistogramGlobalKernel(const int32_t* idx, int64_t n, int64_t k,
                                      unsigned long long* counts) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n;
       i += stride) {
    const int32_t v = idx[i];
    atomicAdd(&counts[(v >= 0 && v < k) ? v : k], 1ull);
  }
}

__device__ int ColourAt(const uint64_t* pos, int colours, int words, int s) {
  int c = -1;
  for (int j = 0; j < colours; ++j)
    if ((pos[j * words + s / 64] >> (s % 64)) & 1) c = j;
  return c;
}

// One thread per position; counters in global memory (integer atomics).
__global__ void BoardStatsKernel(const uint64_t* boards, int64_t count,
                                 int rows, int cols, int colours, int words,
                                 unsigned long long* marg,
                                 unsigned long long* pairs,
                                 unsigned long long* bad) {
  const int sites = rows * cols;
  const int right_pairs = rows * (cols - 1);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = blockIdx.x * int64_t{kThreads} + threadIdx.x; p < count;
       p += stride) {
    const uint64_t* pos = boards + p * colours * words;
    for (int s = 0; s < sites; ++s) {
      int c = -1, held = 0;
      for (int j = 0; j < colours; ++j)
        if ((pos[j * words + s / 64] >> (s % 64)) & 1) c = j, ++held;
      if (held > 1) atomicAdd(bad, 1ull);
      if (c < 0) continue;
      atomicAdd(&marg[c * sites + s], 1ull);
      const int r = s / cols, col = s % cols;
      if (col + 1 < cols) {
        const int b = ColourAt(pos, colours, words, s + 1);
        if (b >= 0) {
          const int pair = r * (cols - 1) + col;
          atomicAdd(&pairs[(pair * colours + c) * colours + b], 1ull);
        }
      }
      if (r + 1 < rows) {
        const int b = ColourAt(pos, colours, words, s + cols);
        if (b >= 0) {
          const int pair = right_pairs + r * cols + col;
          atomicAdd(&pairs[(pair * colours + c) * colours + b], 1ull);
        }
      }
    }
  }
}

}  // namespace

template <typename T>
void LaunchMomentSums(const T* x, int64_t n, bool log_output, double mu_lin,
                      double sd_lin, double mu_log, double sd_log,
                      double* partials, cudaStream_t stream) {
  MomentSumsKernel<T><<<kMomentBlocks, kThreads, 0, stream>>>(
      x, n, log_output, mu_lin, sd_lin, mu_log, sd_log, partials);
}

template <typename T>
void LaunchComponentSums(const T* y, int64_t rows, int k, const double* params,
                         double* partials, cudaStream_t stream) {
  const dim3 grid((k + kThreads - 1) / kThreads, kRowChunks);
  ComponentSumsKernel<T>
      <<<grid, kThreads, 0, stream>>>(y, rows, k, params, partials);
}

void LaunchHistogram(const int32_t* idx, int64_t n, int64_t k,
                     unsigned long long* counts, cudaStream_t stream) {
  if (k <= kSharedBins) {
    HistogramSharedKernel<<<1024, kThreads, 0, stream>>>(
        idx, n, static_cast<int>(k), counts);
  } else {
    HistogramGlobalKernel<<<4096, kThreads, 0, stream>>>(idx, n, k, counts);
  }
}

void LaunchBoardStats(const uint64_t* boards, int64_t count, int rows, int cols,
                      int colours, int words, unsigned long long* marg,
                      unsigned long long* pairs, unsigned long long* bad,
                      cudaStream_t stream) {
  const int grid = static_cast<int>(
      std::min<int64_t>((count + kThreads - 1) / kThreads, 4096));
  BoardStatsKernel<<<grid, kThreads, 0, stream>>>(
      boards, count, rows, cols, colours, words, marg, pairs, bad);
}

template void LaunchMomentSums<float>(const float*, int64_t, bool, double,
                                      double, double, double, double*,
                                      cudaStream_t);
template void LaunchMomentSums<double>(const double*, int64_t, bool, double,
                                       double, double, double, double*,
                                       cudaStream_t);
template void LaunchComponentSums<float>(const float*, int64_t, int,
                                         const double*, double*, cudaStream_t);
template void LaunchComponentSums<double>(const double*, int64_t, int,
                                          const double*, double*, cudaStream_t);

}  // namespace sampler::bench
