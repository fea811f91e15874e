#include "client/common/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sampler::client {

SampleSummary::SampleSummary(int64_t reservoir_capacity,
                             uint64_t reservoir_seed)
    : capacity_(std::max<int64_t>(reservoir_capacity, 1)),
      rng_(reservoir_seed) {}

void SampleSummary::Add(double value) {
  if (!std::isfinite(value)) {
    ++non_finite_;
    return;
  }
  ++count_;
  if (count_ == 1) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  const double delta = value - mean_;
  mean_ += delta / static_cast<double>(count_);
  sum_squared_deviations_ += delta * (value - mean_);

  if (count_ <= capacity_) {
    reservoir_.push_back(value);
    return;
  }
  // Keeps each of the count_ values seen so far with equal probability.
  std::uniform_int_distribution<int64_t> slot(0, count_ - 1);
  const int64_t chosen = slot(rng_);
  if (chosen < capacity_) reservoir_[chosen] = value;
}

double SampleSummary::stddev() const {
  if (count_ < 2) return 0;
  return std::sqrt(sum_squared_deviations_ / static_cast<double>(count_ - 1));
}

std::vector<double> SampleSummary::Quantiles(
    absl::Span<const double> qs) const {
  std::vector<double> sorted = reservoir_;
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> result;
  result.reserve(qs.size());
  for (double q : qs) result.push_back(InterpolatedQuantile(sorted, q));
  return result;
}

double InterpolatedQuantile(absl::Span<const double> sorted, double q) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  if (below + 1 >= sorted.size()) return sorted.back();
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[below + 1] - sorted[below]);
}

int64_t NearestRankIndex(int64_t n, double percent) {
  // Percent in thousandths of a percent: rank = ceil(percent * n / 100).
  constexpr int64_t kScale = 100'000;
  const int64_t milli_percent = std::llround(percent * 1000);
  const int64_t rank = (milli_percent * n + kScale - 1) / kScale;
  return std::clamp<int64_t>(rank - 1, 0, n - 1);
}

LatencyPercentiles ComputeLatencyPercentiles(
    std::vector<int64_t> latencies_ns) {
  LatencyPercentiles result;
  if (latencies_ns.empty()) return result;
  std::sort(latencies_ns.begin(), latencies_ns.end());
  const int64_t n = latencies_ns.size();
  double sum = 0;
  for (int64_t latency : latencies_ns) sum += static_cast<double>(latency);
  result.count = n;
  result.mean_ns = sum / static_cast<double>(n);
  result.p50_ns = latencies_ns[NearestRankIndex(n, 50)];
  result.p90_ns = latencies_ns[NearestRankIndex(n, 90)];
  result.p99_ns = latencies_ns[NearestRankIndex(n, 99)];
  result.p999_ns = latencies_ns[NearestRankIndex(n, 99.9)];
  result.max_ns = latencies_ns.back();
  return result;
}

}  // namespace sampler::client
