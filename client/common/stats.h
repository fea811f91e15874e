// Summaries of numbers: a streaming summary of samples (exact moments and
// extremes, quantiles from a bounded reservoir) and exact nearest-rank
// percentiles of latencies. Pure: no gRPC.
#ifndef SAMPLER_CLIENT_COMMON_STATS_H_
#define SAMPLER_CLIENT_COMMON_STATS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/types/span.h"

namespace sampler::client {

// Summarises a stream of any length in bounded memory. Count, mean, standard
// deviation, min and max are exact (Welford's update, stable for 1e8+
// values). Quantiles come from a uniform reservoir sample of at most
// `reservoir_capacity` values (Vitter's algorithm R), and so are exact while
// count() <= reservoir_capacity. Non-finite values are counted apart and
// otherwise left out, so that one -inf does not hide the rest.
class SampleSummary {
 public:
  // `reservoir_seed` makes the estimated quantiles reproducible run to run.
  explicit SampleSummary(int64_t reservoir_capacity,
                         uint64_t reservoir_seed = 1);

  void Add(double value);
  void Add(absl::Span<const double> values) {
    for (double value : values) Add(value);
  }

  int64_t count() const { return count_; }
  int64_t non_finite() const { return non_finite_; }
  double mean() const { return mean_; }
  // Sample standard deviation (divisor count - 1); 0 below two values.
  double stddev() const;
  double min() const { return min_; }
  double max() const { return max_; }
  bool quantiles_exact() const { return count_ <= capacity_; }
  int64_t reservoir_size() const { return reservoir_.size(); }

  // The q-quantiles (q in [0, 1]) of the reservoir, linearly interpolated
  // between order statistics (the "type 7" rule of R and NumPy). NaN when
  // nothing was added.
  std::vector<double> Quantiles(absl::Span<const double> qs) const;

 private:
  int64_t capacity_;
  int64_t count_ = 0;
  int64_t non_finite_ = 0;
  double mean_ = 0;
  double sum_squared_deviations_ = 0;
  double min_ = 0;
  double max_ = 0;
  std::vector<double> reservoir_;
  std::mt19937_64 rng_;
};

// The q-quantile of sorted values, interpolated as in SampleSummary.
double InterpolatedQuantile(absl::Span<const double> sorted, double q);

// Index into n sorted values of the nearest-rank percentile: the smallest
// value with at least `percent`% of the values at or below it. Exact in
// integer arithmetic for percents with up to three decimals (99.9 gives
// index 998 of 1000, not 999 from rounding error). Requires n > 0.
int64_t NearestRankIndex(int64_t n, double percent);

// Exact latency percentiles from all recorded latencies.
struct LatencyPercentiles {
  int64_t count = 0;
  double mean_ns = 0;
  int64_t p50_ns = 0;
  int64_t p90_ns = 0;
  int64_t p99_ns = 0;
  int64_t p999_ns = 0;
  int64_t max_ns = 0;
};
// All zeros when `latencies_ns` is empty. Takes the values by value since it
// sorts them: move them in when they are not needed after.
LatencyPercentiles ComputeLatencyPercentiles(std::vector<int64_t> latencies_ns);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_COMMON_STATS_H_
