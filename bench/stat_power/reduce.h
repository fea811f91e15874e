// Device-side reductions of the GPU power program (stat_power.cc): the
// samples stay on the GPU, only sums and counts come back. Sums of
// standardised statistics are per-block partials in double, summed on the
// host in a fixed order; counts are integer atomics. Either way the result
// does not depend on scheduling.
#ifndef SAMPLER_BENCH_STAT_POWER_REDUCE_H_
#define SAMPLER_BENCH_STAT_POWER_REDUCE_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sampler::bench {

// Blocks that LaunchMomentSums uses (partials holds 4 doubles per block).
inline constexpr int kMomentBlocks = 1024;

// For each x of x[0, n): s = (x - mu_lin) / sd_lin and t = (log x - mu_log)
// / sd_log when !log_output; t = (x - mu_log) / sd_log when log_output.
// partials[4 b + j] for block b: sum s, sum (s^2 - 1), sum t, sum (t^2 - 1)
// (s terms 0 for log output).
template <typename T>
void LaunchMomentSums(const T* x, int64_t n, bool log_output, double mu_lin,
                      double sd_lin, double mu_log, double sd_log,
                      double* partials, cudaStream_t stream);

// Rows of k components, y = log X (Dirichlet log output): per component i
// the same four sums with s from exp(y), over rows [0, rows). `params`
// holds 4 k doubles: mu_lin, sd_lin, mu_log, sd_log for each component.
// partials: row_chunks x k x 4 doubles.
inline constexpr int kRowChunks = 64;
template <typename T>
void LaunchComponentSums(const T* y, int64_t rows, int k, const double* params,
                         double* partials, cudaStream_t stream);

// counts[idx[i]] += 1 for i in [0, n); indices outside [0, k) go to
// counts[k] (so counts holds k + 1 words).
void LaunchHistogram(const int32_t* idx, int64_t n, int64_t k,
                     unsigned long long* counts, cudaStream_t stream);

// Boards laid out as SampleBoardsCpu's output (count positions, colours x
// words per position). marg[c * S + s] += 1 when colour c holds site s;
// pairs[((p * C) + a) * C + b] += 1 when adjacent pair p (right neighbours
// first, row-major, then down neighbours) holds colours a, b; bad[0] += 1
// for a site with two colours.
void LaunchBoardStats(const uint64_t* boards, int64_t count, int rows, int cols,
                      int colours, int words, unsigned long long* marg,
                      unsigned long long* pairs, unsigned long long* bad,
                      cudaStream_t stream);

}  // namespace sampler::bench

#endif  // SAMPLER_BENCH_STAT_POWER_REDUCE_H_
