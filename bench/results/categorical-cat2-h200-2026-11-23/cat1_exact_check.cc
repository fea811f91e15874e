// The CAT1 check of the report (run on the host, not the GPU): the exact
// realized distribution of the retired float32 mapping, by mapping every one
// of the 2^24 float uniforms. Builds against the CAT1 headers (commit 22c14d8):
//   for f in categorical_core.h common.h detmath.h philox.h; do git show
//   22c14d8:kernels/include/sampler/kernels/$f > cat1/sampler/kernels/$f; done
//   g++ -O2 -std=c++17 -ffp-contract=off -Icat1 cat1_exact_check.cc
// Exact realized distribution of the OLD (CAT1) float32 categorical mapping:
// every one of the 2^24 float uniforms is mapped through ButterflyDraw, so
// the counts are exact. Compares with w_i / sum (long double).
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "sampler/kernels/categorical_core.h"
using namespace sampler::kernels;
template <typename T>
void Check(const char* name, std::vector<T> w, int lane = 0) {
  const int64_t k = w.size();
  std::vector<T> table(k);
  T total = categorical::BuildRowTable(w.data(), k, table.data());
  std::vector<long long> cnt(k, 0);
  const int64_t n = 1 << 24;
  for (int64_t x = 0; x < n; ++x) {
    T u;
    if (sizeof(T) == 4)
      u = UniformFloat(static_cast<uint32_t>(x << 8));
    else
      u = static_cast<T>(x) * 0x1.0p-24;  // top 24 of 53 bits (grid)
    ++cnt[categorical::ButterflyDraw(w.data(), table.data(), k, total, u,
                                     lane)];
  }
  long double s = 0;
  for (T v : w) s += v;
  double worst = 0;
  int64_t worst_i = -1, bad = 0;
  for (int64_t i = 0; i < k; ++i) {
    long double share = w[i] / s;
    if (share < 0x1p-32L) continue;
    long double p = (long double)cnt[i] / n;
    double rel = std::fabs((double)((p - share) / share));
    if (rel > 1e-6) ++bad;
    if (rel > worst) {
      worst = rel;
      worst_i = i;
    }
  }
  std::printf(
      "%s: K=%lld worst relative error %.4g (category %lld), %lld categories "
      "beyond 1e-6; p0=%.6f p1=%.6f\n",
      name, (long long)k, worst, (long long)worst_i, (long long)bad,
      (double)cnt[0] / n, k > 1 ? (double)cnt[1] / n : 0.0);
}
int main() {
  Check<float>("float32 equal", std::vector<float>(1000000, 1.0f));
  Check<float>("float32 (1e-44,1e-44)", std::vector<float>{1e-44f, 1e-44f});
  Check<float>("float32 (1.4e-45,1.4e-45)",
               std::vector<float>{1.4e-45f, 1.4e-45f});
  Check<double>("float64 (5e-324,5e-324) [2^24-grid of uniforms]",
                std::vector<double>{5e-324, 5e-324});
  std::mt19937_64 g(1);
  std::vector<float> r(100000);
  for (auto& v : r) v = float(1.0 - (g() >> 11) * 0x1p-53);
  Check<float>("float32 random K=1e5", r);
  std::vector<float> sp(100000), z(100000);
  for (size_t i = 0; i < sp.size(); ++i) {
    const double u = (g() >> 11) * 0x1p-53;
    sp[i] = float(std::pow(10.0, -30.0 * u));
    z[i] = i % 7 == 3 ? 0.0f : float(1.0 - (g() >> 11) * 0x1p-53);
  }
  Check<float>("float32 spanning 1e-30..1 K=1e5", sp);
  Check<float>("float32 random with zeros K=1e5", z);
}
