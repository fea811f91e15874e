// Wall-clock helpers of the host benchmarks (enumerate_plan_bench,
// enumerate_host_bench): milliseconds of a steady_clock duration, and the
// median of repeated runs.
#ifndef SAMPLER_BENCH_HOST_TIMING_H_
#define SAMPLER_BENCH_HOST_TIMING_H_

#include <algorithm>
#include <chrono>
#include <vector>

namespace sampler::bench {

using Clock = std::chrono::steady_clock;

inline double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace sampler::bench

#endif  // SAMPLER_BENCH_HOST_TIMING_H_
