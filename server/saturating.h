// Sums and products of non-negative counts that saturate at a cap instead of
// wrapping around, so that absurd requests (a group count of 2^62, ...)
// compare as "too large" and costs stay bounded. Validation (caps at
// INT64_MAX) and the CPU backend's cost model (caps at its own maximum) use
// the same two functions.
#ifndef SAMPLER_SERVER_SATURATING_H_
#define SAMPLER_SERVER_SATURATING_H_

#include <cstdint>
#include <limits>

namespace sampler::server {

inline constexpr int64_t kNoCap = std::numeric_limits<int64_t>::max();

// a + b, or `cap` if that is larger; a and b in [0, cap].
inline int64_t SatAdd(int64_t a, int64_t b, int64_t cap = kNoCap) {
  return a > cap - b ? cap : a + b;
}

// a * b, or `cap` if that is larger; 0 if either is <= 0.
inline int64_t SatMul(int64_t a, int64_t b, int64_t cap = kNoCap) {
  if (a <= 0 || b <= 0) return 0;
  return a > cap / b ? cap : a * b;
}

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_SATURATING_H_
