// GPU power program (issue 10, item 4): draws N samples per configuration
// (default 10^9) through the kernels' CUDA launchers and the staging
// pipeline (staging.h), reduces them on the device, and applies the tests of
// tests/stat/power_test.cc at the sensitivity that N gives (about 0.1% at
// 10^9): gamma over shapes 1e-6 .. 1e10 in both precisions (log output for tiny
// shapes), categorical up to K = 2^24 with equal, random, spanning (1e-30 ..
// 1), zero and subnormal weights, Dirichlet down to alpha 1e-4 with 1000
// components, boards by site marginals and adjacent-pair statistics.
// Enumeration is exact arithmetic and is tested exactly by the CI suite; it is
// not sampled here.
//
// It reports, it does not hide: a configuration that fails is listed as
// FAIL with its worst check (today float32 large-K categorical and float32
// large-shape gamma are expected to fail until their fixes land). Writes
// stat_power.md and stat_power.json (date, device, every configuration,
// the smallest bias each detects with probability 0.99) into --out.
//
//   stat_power [--samples N] [--out DIR] [--only gamma|categorical|
//              dirichlet|boards] [--max_k K]
//
// Not a CTest test: it needs a GPU and minutes of it.
#include <cuda_runtime.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/gamma.hpp>
#include <boost/math/special_functions/polygamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/stat_power/reduce.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/cuda/boards.h"
#include "sampler/kernels/cuda/categorical.h"
#include "sampler/kernels/cuda/dirichlet.h"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/status_macros.h"
#include "tests/stat/power_util.h"

namespace sampler::bench {
namespace {

using kernels::cuda::DeviceRegions;
using kernels::cuda::StagedBatch;
using kernels::cuda::Stager;
using kernels::cuda::StagingPlan;
using testing::Check;
using testing::CriticalZ;
using testing::MinDetectable;
using testing::StdSums;
using testing::Verdict;

#define SP_CHECK(expr)                                        \
  do {                                                        \
    const absl::Status sp_status_ = (expr);                   \
    if (!sp_status_.ok()) {                                   \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, \
                   sp_status_.ToString().c_str());            \
      std::exit(2);                                           \
    }                                                         \
  } while (false)
#define SP_CUDA(call) \
  SP_CHECK(kernels::cuda::ToStatus((call), #call, __FILE__, __LINE__))

template <typename T>
const char* PrecisionName() {
  return std::is_same_v<T, float> ? "float32" : "float64";
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
double Uniform01(uint64_t& h) {
  h = SplitMix64(h);
  return (static_cast<double>(h >> 11) + 0.5) * 0x1p-53;
}

struct Result {
  std::string kind, precision, config;
  double n = 0;  // samples
  Verdict verdict;
  std::vector<std::pair<std::string, double>> detects;  // relative biases
  double seconds = 0;
  std::string error;  // a status that was not OK
};

struct Ctx {
  // Every chunk goes through the staging pipeline (staging.h): its batch
  // in, its samples in scratch (reduced on the device, never copied back),
  // the status word and the reductions out.
  std::unique_ptr<Stager> stager;
  std::vector<Result> results;
};

// Device counters that many chunks add to: the out region of a staged
// batch of nothing else, zeroed once and downloaded at the end.
StagedBatch Counters(Ctx& ctx, size_t bytes) {
  absl::StatusOr<StagedBatch> staged =
      ctx.stager->Upload({0, bytes, 0}, [](char*) {});
  SP_CHECK(staged.status());
  SP_CUDA(
      cudaMemsetAsync(staged->regions.out, 0, bytes, ctx.stager->stream.get()));
  return *std::move(staged);
}

std::vector<unsigned long long> Download(Ctx& ctx, const StagedBatch& staged) {
  std::vector<unsigned long long> host(staged.plan.out_bytes / 8);
  SP_CHECK(ctx.stager->Download(staged, [&](const char* out) {
    std::memcpy(host.data(), out, host.size() * 8);
  }));
  return host;
}

// One gamma or Dirichlet chunk: the builder's arena and then `params` go
// in; the builder's `outputs` samples land in scratch, where `reduce(x,
// device_params, device_partials, stream)` sums them into
// partials->size() doubles; the segment's status word and the partials come
// back. Returns the segment's status.
template <typename T, typename Builder, typename Launch, typename Reduce>
absl::Status RunReducedChunk(Ctx& ctx, const Builder& b, int64_t outputs,
                             const std::vector<double>& params, Launch launch,
                             Reduce reduce, std::vector<double>* partials) {
  const size_t params_at = (b.ArenaBytes() + 7) / 8 * 8;
  constexpr size_t kPartialsAt = 8;  // after the status word
  const StagingPlan plan{params_at + params.size() * sizeof(double),
                         kPartialsAt + partials->size() * sizeof(double),
                         static_cast<size_t>(outputs) * sizeof(T)};
  uint32_t word = 0;
  SP_CHECK(ctx.stager
               ->Run(
                   plan,
                   [&](char* in) {
                     b.PackInto(in);
                     if (!params.empty()) {
                       std::memcpy(in + params_at, params.data(),
                                   params.size() * sizeof(double));
                     }
                   },
                   [&](const DeviceRegions& d, cudaStream_t s) -> absl::Status {
                     T* x = static_cast<T*>(d.scratch);
                     char* in = static_cast<char*>(d.in);
                     char* out = static_cast<char*>(d.out);
                     SAMPLER_RETURN_IF_ERROR(launch(
                         b.View(d.in, x, reinterpret_cast<uint32_t*>(out)), s));
                     reduce(x, reinterpret_cast<const double*>(in + params_at),
                            reinterpret_cast<double*>(out + kPartialsAt), s);
                     SAMPLER_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError());
                     return absl::OkStatus();
                   },
                   [&](const char* out) {
                     std::memcpy(&word, out, sizeof(word));
                     std::memcpy(partials->data(), out + kPartialsAt,
                                 partials->size() * sizeof(double));
                   })
               .status());
  return kernels::cuda::SegmentStatus(word, 0);
}

void Print(const Result& r) {
  std::printf("%-11s %-7s %-40s n = %.3g  %s", r.kind.c_str(),
              r.precision.c_str(), r.config.c_str(), r.n,
              r.error.empty() ? r.verdict.Summary().c_str() : r.error.c_str());
  for (const auto& [k, v] : r.detects)
    std::printf("  [%s %.3f%%]", k.c_str(), 100 * v);
  std::printf("  (%.1f s)\n", r.seconds);
  std::fflush(stdout);
}

// Two-sided z of an observed count against expected count e (cell
// probability p): normal with binomial variance when e >= 1000, otherwise
// the Poisson tail (a category that should almost never be drawn and is,
// gets the z of that tail).
double TailZ(long double observed, long double e, long double p) {
  // A cell that holds all the probability (one decade of shares, say, whose
  // shares sum to 1 up to rounding) carries no information.
  if (p >= 1 - 1e-12L) return 0;
  if (e >= 1000) {
    return static_cast<double>((observed - e) / std::sqrt(e * (1 - p)));
  }
  if (e <= 0) return observed > 0 ? INFINITY : 0;
  const double o = static_cast<double>(observed), ed = static_cast<double>(e);
  // Boost reports a tail beyond its range by throwing (this is a report,
  // not the request path): such a tail is 0 for our purposes.
  double tail;
  if (o >= ed) {
    try {
      tail = o == 0 ? 1 : boost::math::gamma_p(o, ed);  // P(X >= o)
    } catch (const std::exception&) {
      tail = 0;
    }
    if (tail <= 0) return INFINITY;
    return tail >= 0.5 ? 0 : testing::NormalUpper(tail);
  }
  try {
    tail = boost::math::gamma_q(o + 1, ed);  // P(X <= o)
  } catch (const std::exception&) {
    tail = 0;
  }
  if (tail <= 0) return -INFINITY;
  return tail >= 0.5 ? 0 : -testing::NormalUpper(tail);
}

// Bonferroni family of cells.
void AddCells(const std::string& prefix, const std::vector<std::string>& names,
              const std::vector<long double>& observed,
              const std::vector<long double>& probs, long double n,
              Verdict& v) {
  const double crit = CriticalZ(static_cast<int64_t>(names.size()));
  for (size_t i = 0; i < names.size(); ++i)
    v.checks.push_back(
        {prefix + names[i], TailZ(observed[i], probs[i] * n, probs[i]), crit});
}

// ============================================================= gamma ====

struct Stat {
  double mean, sd, var_s2;
};
Stat LinearStat(double k) { return {k, std::sqrt(k), 2 + 6 / k}; }
Stat LogStat(double k) {
  const double psi1 = boost::math::trigamma(k);
  const double psi3 = boost::math::polygamma(3, k);
  return {boost::math::digamma(k), std::sqrt(psi1), 2 + psi3 / (psi1 * psi1)};
}

template <typename T>
void RunGamma(Ctx& ctx, double shape_in, bool log_output, int64_t n,
              uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r;
  r.kind = "gamma";
  r.precision = PrecisionName<T>();
  const T shape = static_cast<T>(shape_in);
  const double k = static_cast<double>(shape);
  char buf[96];
  std::snprintf(buf, sizeof buf, "shape %g%s", shape_in,
                log_output ? " (log output)" : "");
  r.config = buf;
  r.n = static_cast<double>(n);
  const Stat lin = LinearStat(k), lg = LogStat(k);
  const int64_t chunk = int64_t{1} << 27;
  long double sums[4] = {0, 0, 0, 0};
  std::vector<double> host_partials(4 * kMomentBlocks);
  for (int64_t first = 0; first < n; first += chunk) {
    const int64_t len = std::min(chunk, n - first);
    kernels::cuda::GammaBatchBuilder<T> b;
    const kernels::GammaGroup<T> g{shape, T(1), len};
    SP_CHECK(
        b.AddGroups({&g, 1}, log_output, seed, static_cast<uint64_t>(first))
            .status());
    const absl::Status s = RunReducedChunk<T>(
        ctx, b, len, {},
        [](const kernels::cuda::GammaBatch<T>& view, cudaStream_t stream) {
          return kernels::cuda::LaunchGamma<T>(view, stream);
        },
        [&](const T* x, const double*, double* partials, cudaStream_t stream) {
          LaunchMomentSums<T>(x, len, log_output, lin.mean, lin.sd, lg.mean,
                              lg.sd, partials, stream);
        },
        &host_partials);
    if (!s.ok()) r.error = s.ToString();
    for (int i = 0; i < kMomentBlocks; ++i)
      for (int j = 0; j < 4; ++j) sums[j] += host_partials[4 * i + j];
  }
  const long double nn = static_cast<long double>(n);
  const int m = log_output ? 2 : 3;
  const double crit = CriticalZ(m);
  if (!log_output) {
    r.verdict.checks.push_back(
        {"mean", static_cast<double>(sums[0] / std::sqrt(nn)), crit});
    r.verdict.checks.push_back(
        {"variance", static_cast<double>(sums[1] / std::sqrt(nn * lin.var_s2)),
         crit});
    r.detects.push_back({"mean", MinDetectable(lin.sd, r.n, m) / lin.mean});
    r.detects.push_back(
        {"variance", MinDetectable(std::sqrt(lin.var_s2), r.n, m)});
  }
  r.verdict.checks.push_back(
      {"mean log", static_cast<double>(sums[2] / std::sqrt(nn)), crit});
  if (log_output) {
    r.verdict.checks.push_back(
        {"variance log",
         static_cast<double>(sums[3] / std::sqrt(nn * lg.var_s2)), crit});
    r.detects.push_back(
        {"variance log", MinDetectable(std::sqrt(lg.var_s2), r.n, m)});
  }
  r.detects.push_back({"shape", MinDetectable(1, r.n, m) / lg.sd / k});
  r.seconds = Seconds(t0);
  Print(r);
  ctx.results.push_back(std::move(r));
}

// ======================================================= categorical ====

template <typename T>
void RunCategorical(Ctx& ctx, const std::string& name, const std::vector<T>& w,
                    int64_t n_wanted, uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r;
  r.kind = "categorical";
  r.precision = PrecisionName<T>();
  const int64_t k = static_cast<int64_t>(w.size());
  r.config = name + ", K = " + std::to_string(k);
  // 32 copies of the row (one warp); every segment reads them with its own
  // first_row, so rows differ only in their random streams. Each row costs
  // a pass over its K values, each draw a search of log2 K dependent loads:
  // large K gets 2^18 draws per row (K / 2^18 reads per draw), small K 4096
  // (more warps). Every segment is one warp; a launch takes as many as its
  // output (2^30 indices, 4 GiB) and the butterfly's workspace (K elements
  // per segment for K >= 64, kept under 16 GiB) allow. The trial (10^7
  // draws, 20 segments of 2^14 draws at K = 2^24) took 3.5 s (float) and
  // 7 s (double) per configuration on an H200, bound by too few warps.
  const int32_t draws = k >= (1 << 16) ? (1 << 18) : 4096;
  const int64_t per_seg = 32 * static_cast<int64_t>(draws);
  const int64_t segs_total =
      std::max<int64_t>(1, (n_wanted + per_seg - 1) / per_seg);
  const int64_t n = segs_total * per_seg;
  r.n = static_cast<double>(n);
  const int64_t segs_per_launch = std::max<int64_t>(
      1, std::min((int64_t{1} << 30) / per_seg,
                  (int64_t{1} << 34) / (k * static_cast<int64_t>(sizeof(T)))));
  std::vector<T> values(32 * w.size());
  for (int i = 0; i < 32; ++i)
    std::copy(w.begin(), w.end(), values.begin() + i * k);
  {
    kernels::CategoricalShape shape;
    shape.rows = 32;
    shape.categories = k;
    shape.draws = draws;
    const absl::Status s = kernels::ValidateCategorical<T>(
        values, shape, kernels::WeightKind::kWeights);
    if (!s.ok()) {
      r.error = s.ToString();
      r.seconds = Seconds(t0);
      Print(r);
      ctx.results.push_back(std::move(r));
      return;
    }
  }
  // Every segment reads the same 32 rows, so the batch is laid out here
  // rather than by CategoricalBatchBuilder (which places each segment's
  // values apart): in, the segments and then the rows (8-byte aligned); in
  // scratch, the indices (reduced to counts on the device) and then the
  // workspace.
  const StagedBatch counts =
      Counters(ctx, (k + 1) * sizeof(unsigned long long));
  for (int64_t s0 = 0; s0 < segs_total; s0 += segs_per_launch) {
    const int64_t segs = std::min(segs_per_launch, segs_total - s0);
    std::vector<kernels::cuda::CategoricalSegment> seg(segs);
    for (int64_t s = 0; s < segs; ++s) {
      seg[s].values_offset = 0;
      seg[s].out_offset = s * per_seg;
      seg[s].seed = seed;
      seg[s].first_row = static_cast<uint64_t>((s0 + s) * 32);
      seg[s].rows = 32;
      seg[s].categories = k;
      seg[s].draws = draws;
      seg[s].kind = kernels::WeightKind::kWeights;
    }
    absl::StatusOr<kernels::cuda::CategoricalPlan> plan =
        kernels::cuda::PrepareCategoricalSegments(
            absl::MakeSpan(seg),
            std::is_same_v<T, float> ? kernels::Precision::kFloat32
                                     : kernels::Precision::kFloat64,
            values.size(), static_cast<uint64_t>(segs * per_seg));
    SP_CHECK(plan.status());
    const size_t seg_bytes = seg.size() * sizeof(seg[0]);
    const size_t values_at = (seg_bytes + 7) / 8 * 8;
    const size_t idx_bytes =
        static_cast<size_t>(segs * per_seg) * sizeof(int32_t);
    const size_t workspace_at = (idx_bytes + 255) / 256 * 256;
    SP_CHECK(ctx.stager
                 ->Run(
                     {values_at + values.size() * sizeof(T), 0,
                      workspace_at + plan->workspace_bytes},
                     [&](char* in) {
                       std::memcpy(in, seg.data(), seg_bytes);
                       std::memcpy(in + values_at, values.data(),
                                   values.size() * sizeof(T));
                     },
                     [&](const DeviceRegions& d,
                         cudaStream_t stream) -> absl::Status {
                       const char* in = static_cast<const char*>(d.in);
                       char* scratch = static_cast<char*>(d.scratch);
                       int32_t* idx = reinterpret_cast<int32_t*>(scratch);
                       kernels::cuda::CategoricalBatch<T> batch;
                       batch.plan = *plan;
                       batch.segments = reinterpret_cast<
                           const kernels::cuda::CategoricalSegment*>(in);
                       batch.values =
                           reinterpret_cast<const T*>(in + values_at);
                       batch.out = idx;
                       batch.workspace = plan->workspace_bytes > 0
                                             ? scratch + workspace_at
                                             : nullptr;
                       batch.workspace_bytes = plan->workspace_bytes;
                       SAMPLER_RETURN_IF_ERROR(
                           kernels::cuda::LaunchCategorical(batch, stream));
                       LaunchHistogram(
                           idx, segs * per_seg, k,
                           static_cast<unsigned long long*>(counts.regions.out),
                           stream);
                       SAMPLER_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError());
                       return absl::OkStatus();
                     },
                     [](const char*) {})
                 .status());
  }
  const std::vector<unsigned long long> host = Download(ctx, counts);

  // Exact shares (long double: the weights are exact, the sum's error is
  // ~1e-19 relative times log K).
  long double total = 0;
  for (T x : w) total += static_cast<long double>(x);
  std::vector<long double> p(k);
  for (int64_t i = 0; i < k; ++i) p[i] = static_cast<long double>(w[i]) / total;
  const long double nn = static_cast<long double>(n);

  // Family 1: every category expected >= 1000 times, by itself.
  std::vector<std::string> names;
  std::vector<long double> obs, probs;
  for (int64_t i = 0; i < k; ++i) {
    if (p[i] * nn < 1000) continue;
    names.push_back("category " + std::to_string(i));
    obs.push_back(host[i]);
    probs.push_back(p[i]);
  }
  if (!names.empty()) AddCells("", names, obs, probs, nn, r.verdict);
  // Family 2: categories pooled by decade of share (and share 0), so that
  // rare categories drawn too often (or never) show.
  {
    std::vector<long double> bin_obs(700, 0), bin_p(700, 0);
    long double zero_obs = 0;
    for (int64_t i = 0; i < k; ++i) {
      if (p[i] == 0) {
        zero_obs += host[i];
        continue;
      }
      const int b = std::clamp(
          static_cast<int>(-std::floor(std::log10(static_cast<double>(p[i])))),
          0, 699);
      bin_obs[b] += host[i];
      bin_p[b] += p[i];
    }
    names.clear(), obs.clear(), probs.clear();
    for (int b = 0; b < 700; ++b) {
      if (bin_p[b] == 0) continue;
      names.push_back("shares in [1e-" + std::to_string(b + 1) + ", 1e-" +
                      std::to_string(b) + ")");
      obs.push_back(bin_obs[b]);
      probs.push_back(bin_p[b]);
    }
    AddCells("", names, obs, probs, nn, r.verdict);
    if (zero_obs > 0)
      r.verdict.checks.push_back({"zero-weight categories drawn", INFINITY, 1});
    if (host[k] > 0)
      r.verdict.checks.push_back({"index out of range", INFINITY, 1});
  }
  // Family 3: chi-square over the categories expected >= 5 times (the rest
  // pooled), as z = (X^2 - df) / sqrt(2 df): many small per-category errors
  // (float32 prefix sums) add up here.
  {
    long double x2 = 0, pooled_o = 0, pooled_e = 0;
    int64_t cells = 0;
    for (int64_t i = 0; i < k; ++i) {
      const long double e = p[i] * nn;
      if (e < 5) {
        pooled_o += host[i];
        pooled_e += e;
        continue;
      }
      x2 += (host[i] - e) * (host[i] - e) / e;
      ++cells;
    }
    if (pooled_e >= 5) {
      x2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
      ++cells;
    }
    if (cells >= 2) {
      const long double df = cells - 1;
      r.verdict.checks.push_back(
          {"chi-square (z)", static_cast<double>((x2 - df) / std::sqrt(2 * df)),
           testing::NormalUpper(testing::kFamilyAlpha)});
    }
  }
  // The smallest 1% bias per category it sees: that of the largest share.
  long double p_max = 0;
  for (long double x : p) p_max = std::max(p_max, x);
  const double pm = static_cast<double>(p_max);
  r.detects.push_back(
      {"largest share", MinDetectable(std::sqrt((1 - pm) / pm), r.n, k)});
  r.seconds = Seconds(t0);
  Print(r);
  ctx.results.push_back(std::move(r));
}

template <typename T>
std::vector<T> Weights(const std::string& kind, int64_t k, uint64_t seed) {
  std::vector<T> w(k);
  uint64_t h = seed;
  for (int64_t i = 0; i < k; ++i) {
    if (kind == "equal") {
      w[i] = T(1);
    } else if (kind == "random") {
      w[i] = static_cast<T>(Uniform01(h));
    } else if (kind == "spanning") {
      w[i] = static_cast<T>(std::pow(10.0, -30.0 * Uniform01(h)));
    } else if (kind == "zero") {
      w[i] = i % 3 == 1 ? T(0) : static_cast<T>(Uniform01(h));
    } else {  // subnormal: small multiples of the smallest subnormal
      w[i] = std::numeric_limits<T>::denorm_min() *
             static_cast<T>(1 + static_cast<int>(Uniform01(h) * 8));
    }
  }
  return w;
}

// ========================================================= Dirichlet ====

Stat BetaStat(double a, double a0) {
  double raw[5] = {1, 0, 0, 0, 0};
  for (int n = 1; n <= 4; ++n) raw[n] = raw[n - 1] * (a + n - 1) / (a0 + n - 1);
  const double mu = raw[1];
  const double m2 = raw[2] - mu * mu;
  const double m4 =
      raw[4] - 4 * mu * raw[3] + 6 * mu * mu * raw[2] - 3 * mu * mu * mu * mu;
  return {mu, std::sqrt(m2), m4 / (m2 * m2) - 1};
}
Stat LogComponentStat(double a, double a0) {
  const double k2 = boost::math::trigamma(a) - boost::math::trigamma(a0);
  const double k4 =
      boost::math::polygamma(3, a) - boost::math::polygamma(3, a0);
  return {boost::math::digamma(a) - boost::math::digamma(a0), std::sqrt(k2),
          2 + k4 / (k2 * k2)};
}

template <typename T>
void RunDirichlet(Ctx& ctx, const std::string& name,
                  const std::vector<double>& alpha_in, int64_t n_wanted,
                  uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r;
  r.kind = "dirichlet";
  r.precision = PrecisionName<T>();
  const int k = static_cast<int>(alpha_in.size());
  r.config = name + ", K = " + std::to_string(k);
  std::vector<T> alpha(alpha_in.begin(), alpha_in.end());
  double a0 = 0;
  for (T a : alpha) a0 += static_cast<double>(a);
  const int64_t rows = std::max<int64_t>(1, n_wanted / k);
  r.n = static_cast<double>(rows) * k;
  std::vector<double> params(4 * k);
  std::vector<Stat> lin(k), lg(k);
  for (int i = 0; i < k; ++i) {
    lin[i] = BetaStat(static_cast<double>(alpha[i]), a0);
    lg[i] = LogComponentStat(static_cast<double>(alpha[i]), a0);
    params[4 * i] = lin[i].mean;
    params[4 * i + 1] = lin[i].sd;
    params[4 * i + 2] = lg[i].mean;
    params[4 * i + 3] = lg[i].sd;
  }
  const int64_t chunk_rows = std::max<int64_t>(1, (int64_t{1} << 26) / k);
  const size_t part_len = static_cast<size_t>(kRowChunks) * k * 4;
  std::vector<double> host_part(part_len);
  std::vector<long double> sums(4 * k, 0);
  std::vector<T> a_rep;
  std::vector<int64_t> offsets;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t len = std::min(chunk_rows, rows - r0);
    if (static_cast<int64_t>(offsets.size()) != len + 1) {
      a_rep.resize(len * k);
      offsets.resize(len + 1);
      for (int64_t j = 0; j < len; ++j) {
        std::copy(alpha.begin(), alpha.end(), a_rep.begin() + j * k);
        offsets[j] = j * k;
      }
      offsets[len] = len * k;
    }
    kernels::cuda::DirichletBatchBuilder<T> b;
    SP_CHECK(b.AddRows(a_rep, offsets, /*log_output=*/true, seed,
                       static_cast<uint64_t>(r0 * k))
                 .status());
    const absl::Status s = RunReducedChunk<T>(
        ctx, b, len * k, params,
        [](const kernels::cuda::DirichletBatch<T>& view, cudaStream_t stream) {
          return kernels::cuda::LaunchDirichlet<T>(view, stream);
        },
        [&](const T* y, const double* dev_params, double* partials,
            cudaStream_t stream) {
          LaunchComponentSums<T>(y, len, k, dev_params, partials, stream);
        },
        &host_part);
    if (!s.ok()) r.error = s.ToString();
    for (int c = 0; c < kRowChunks; ++c)
      for (int i = 0; i < 4 * k; ++i) sums[i] += host_part[c * 4 * k + i];
  }
  const long double nn = static_cast<long double>(rows);
  const int64_t m = 4 * static_cast<int64_t>(k);
  const double crit = CriticalZ(m);
  double worst_mean = 0, worst_var = 0, worst_var_log = 0;
  int64_t linear_skipped = 0;
  for (int i = 0; i < k; ++i) {
    const std::string c = "[" + std::to_string(i) + "]";
    // X_i of a tiny concentration is 0 nearly always and near 1 rarely: its
    // moments' sums are far from normal until rows >> Var(s^2) (the trial
    // run saw z = 6.9 at alpha 3e-4 with 10^4 rows), so its linear checks
    // run only where rows >= 1000 Var(s^2); log X_i is well behaved and
    // always checked.
    if (lin[i].var_s2 * 1000 <= static_cast<double>(rows)) {
      r.verdict.checks.push_back(
          {"mean" + c, static_cast<double>(sums[4 * i] / std::sqrt(nn)), crit});
      r.verdict.checks.push_back(
          {"variance" + c,
           static_cast<double>(sums[4 * i + 1] / std::sqrt(nn * lin[i].var_s2)),
           crit});
      worst_mean = std::max(worst_mean, lin[i].sd / lin[i].mean);
      worst_var = std::max(worst_var, lin[i].var_s2);
    } else {
      ++linear_skipped;
    }
    r.verdict.checks.push_back(
        {"mean log" + c, static_cast<double>(sums[4 * i + 2] / std::sqrt(nn)),
         crit});
    r.verdict.checks.push_back(
        {"variance log" + c,
         static_cast<double>(sums[4 * i + 3] / std::sqrt(nn * lg[i].var_s2)),
         crit});
    worst_var_log = std::max(worst_var_log, lg[i].var_s2);
  }
  if (linear_skipped > 0)
    r.config += " (linear checks on " + std::to_string(k - linear_skipped) +
                " components)";
  const double rn = static_cast<double>(rows);
  r.detects.push_back({"mean log (of sd)", MinDetectable(1, rn, m)});
  r.detects.push_back(
      {"variance log", MinDetectable(std::sqrt(worst_var_log), rn, m)});
  if (worst_mean > 0) {
    r.detects.push_back({"mean", MinDetectable(worst_mean, rn, m)});
    r.detects.push_back(
        {"variance", MinDetectable(std::sqrt(worst_var), rn, m)});
  }
  r.seconds = Seconds(t0);
  Print(r);
  ctx.results.push_back(std::move(r));
}

// ============================================================ boards ====

void RunBoards(Ctx& ctx, const kernels::BoardSpec& spec, int64_t n_sites,
               uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r;
  r.kind = "boards";
  r.precision = "-";
  const int sites = spec.rows * spec.cols;
  const int colours = static_cast<int>(spec.stones.size());
  const int words = kernels::BoardWords64(spec);
  r.config =
      std::to_string(spec.rows) + "x" + std::to_string(spec.cols) + " stones";
  for (int32_t s : spec.stones) r.config += " " + std::to_string(s);
  // Positions: samples / 16 up to 19 x 19 (6e7 at 10^9: a 0.1% bias of a
  // marginal near 1/2), samples / sites beyond (whose outputs are large).
  const int64_t n =
      std::max<int64_t>(1, sites <= 361 ? n_sites / 16 : n_sites / sites);
  r.n = static_cast<double>(n);
  const int pairs = spec.rows * (spec.cols - 1) + (spec.rows - 1) * spec.cols;
  const size_t n_marg = static_cast<size_t>(sites) * colours;
  const size_t n_pairs = static_cast<size_t>(pairs) * colours * colours;
  const StagedBatch counters = Counters(ctx, (n_marg + n_pairs + 1) * 8);
  auto* const dev_counters =
      static_cast<unsigned long long*>(counters.regions.out);
  const int64_t per_position = static_cast<int64_t>(words) * colours;
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 27) / per_position);
  for (int64_t first = 0; first < n; first += chunk) {
    const int64_t len = std::min(chunk, n - first);
    kernels::cuda::BoardsBatchBuilder b;
    SP_CHECK(b.Add(spec, seed, first, len).status());
    SP_CHECK(b.Finish());
    // The boards stay on the device (reduced there): the builder's out
    // region is scratch here, and nothing comes back.
    StagingPlan plan = b.Staging();
    plan.scratch_bytes = plan.out_bytes;
    plan.out_bytes = 0;
    SP_CHECK(ctx.stager
                 ->Run(
                     plan, [&](char* in) { b.PackInto(in); },
                     [&](const DeviceRegions& d,
                         cudaStream_t stream) -> absl::Status {
                       const kernels::cuda::BoardsBatch batch =
                           b.View({d.in, d.scratch, nullptr});
                       SAMPLER_RETURN_IF_ERROR(
                           kernels::cuda::LaunchBoards(batch, stream));
                       LaunchBoardStats(
                           batch.out, len, spec.rows, spec.cols, colours, words,
                           dev_counters, dev_counters + n_marg,
                           dev_counters + n_marg + n_pairs, stream);
                       SAMPLER_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError());
                       return absl::OkStatus();
                     },
                     [](const char*) {})
                 .status());
  }
  const std::vector<unsigned long long> host = Download(ctx, counters);
  const long double s_all = sites, nn = static_cast<long double>(n);
  std::vector<std::string> names;
  std::vector<long double> obs, probs;
  for (int c = 0; c < colours; ++c)
    for (int s = 0; s < sites; ++s) {
      names.push_back("colour " + std::to_string(c) + " site " +
                      std::to_string(s));
      obs.push_back(host[c * sites + s]);
      probs.push_back(spec.stones[c] / s_all);
    }
  AddCells("", names, obs, probs, nn, r.verdict);
  names.clear(), obs.clear(), probs.clear();
  for (int p = 0; p < pairs; ++p)
    for (int a = 0; a < colours; ++a)
      for (int b = 0; b < colours; ++b) {
        names.push_back("pair " + std::to_string(p) + " colours " +
                        std::to_string(a) + std::to_string(b));
        obs.push_back(host[n_marg + (p * colours + a) * colours + b]);
        probs.push_back(static_cast<long double>(spec.stones[a]) *
                        (spec.stones[b] - (a == b)) / (s_all * (s_all - 1)));
      }
  AddCells("", names, obs, probs, nn, r.verdict);
  if (host.back() > 0)
    r.verdict.checks.push_back({"sites with two colours", INFINITY, 1});
  const double p0 = spec.stones[0] / static_cast<double>(sites);
  r.detects.push_back(
      {"colour-0 marginal", MinDetectable(std::sqrt((1 - p0) / p0), r.n,
                                          static_cast<int64_t>(n_marg))});
  r.seconds = Seconds(t0);
  Print(r);
  ctx.results.push_back(std::move(r));
}

// ============================================================ report ====

std::string JsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

std::string Num(double x) {
  if (std::isinf(x)) return x > 0 ? "\"inf\"" : "\"-inf\"";
  if (std::isnan(x)) return "\"nan\"";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}

void WriteReports(const Ctx& ctx, const std::string& dir, double samples,
                  const std::string& date, const std::string& device) {
  int failed = 0;
  for (const Result& r : ctx.results)
    failed += (!r.error.empty() || !r.verdict.pass()) ? 1 : 0;
  FILE* j = std::fopen((dir + "/stat_power.json").c_str(), "w");
  FILE* m = std::fopen((dir + "/stat_power.md").c_str(), "w");
  if (j == nullptr || m == nullptr) {
    std::fprintf(stderr, "cannot write into %s\n", dir.c_str());
    std::exit(2);
  }
  std::fprintf(
      j,
      "{\n  \"date\": \"%s\",\n  \"device\": \"%s\",\n  "
      "\"samples_per_configuration\": %s,\n  \"family_alpha\": %s,\n"
      "  \"power\": %s,\n  \"configurations\": %zu,\n  \"failed\": %d,\n"
      "  \"results\": [\n",
      date.c_str(), JsonEscape(device).c_str(), Num(samples).c_str(),
      Num(testing::kFamilyAlpha).c_str(), Num(testing::kPower).c_str(),
      ctx.results.size(), failed);
  std::fprintf(
      m,
      "# Statistical power run on the GPU\n\n"
      "Date: %s. Device: %s. Samples per configuration: %.3g "
      "(boards: positions = samples / 16 up to 19x19, samples / sites beyond; "
      "categorical: rounded up to whole segments).\n\n"
      "Each configuration is a few families of two-sided z-checks "
      "(Bonferroni within a family, false-alarm rate %.0e per "
      "family); \"detects\" is the smallest relative bias seen with "
      "probability %.2f at this sample size "
      "(tests/stat/power_util.h). Produced by bench/stat_power "
      "(stat_power --samples N --out DIR).\n\n"
      "%zu configurations, %d failed.\n\n"
      "| kind | precision | configuration | n | result | worst check "
      "| z | crit | detects | seconds |\n|---|---|---|---|---|---|---|---|"
      "---|---|\n",
      date.c_str(), device.c_str(), samples, testing::kFamilyAlpha,
      testing::kPower, ctx.results.size(), failed);
  for (size_t i = 0; i < ctx.results.size(); ++i) {
    const Result& r = ctx.results[i];
    const bool pass = r.error.empty() && r.verdict.pass();
    const Check* w = r.verdict.Worst();
    std::string det, detj;
    for (const auto& [k, v] : r.detects) {
      char b[96];
      std::snprintf(b, sizeof b, "%s%s %.3f%%", det.empty() ? "" : ", ",
                    k.c_str(), 100 * v);
      det += b;
      detj +=
          (detj.empty() ? "" : ", ") + std::string("\"") + k + "\": " + Num(v);
    }
    std::fprintf(
        j,
        "    {\"kind\": \"%s\", \"precision\": \"%s\", \"config\": \"%s\", "
        "\"n\": %s, \"pass\": %s, \"error\": \"%s\", \"checks\": %zu, "
        "\"worst\": \"%s\", \"worst_z\": %s, \"worst_crit\": %s, "
        "\"detects\": {%s}, \"seconds\": %s}%s\n",
        r.kind.c_str(), r.precision.c_str(), JsonEscape(r.config).c_str(),
        Num(r.n).c_str(), pass ? "true" : "false", JsonEscape(r.error).c_str(),
        r.verdict.checks.size(), w ? JsonEscape(w->name).c_str() : "",
        Num(w ? w->z : 0).c_str(), Num(w ? w->crit : 0).c_str(), detj.c_str(),
        Num(r.seconds).c_str(), i + 1 < ctx.results.size() ? "," : "");
    std::fprintf(
        m, "| %s | %s | %s | %.3g | %s | %s | %s | %.2f | %s | %.1f |\n",
        r.kind.c_str(), r.precision.c_str(), r.config.c_str(), r.n,
        pass ? "pass" : (r.error.empty() ? "**FAIL**" : "**ERROR**"),
        r.error.empty() ? (w ? w->name.c_str() : "") : r.error.c_str(),
        Num(w ? w->z : 0).c_str(), w ? w->crit : 0, det.c_str(), r.seconds);
  }
  std::fprintf(j, "  ]\n}\n");
  std::fclose(j);
  std::fclose(m);
  std::printf("%zu configurations, %d failed; wrote %s/stat_power.{md,json}\n",
              ctx.results.size(), failed, dir.c_str());
}

int Main(int argc, char** argv) {
  double samples = 1e9;
  std::string dir = ".", only;
  int64_t max_k = int64_t{1} << 24;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--samples" && i + 1 < argc) {
      samples = std::atof(argv[++i]);
    } else if (a == "--out" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--max_k" && i + 1 < argc) {
      max_k = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: stat_power [--samples N] [--out DIR] [--only KIND] "
                   "[--max_k K]\n");
      return 2;
    }
  }
  const int64_t n = static_cast<int64_t>(samples);
  cudaDeviceProp prop;
  SP_CUDA(cudaGetDeviceProperties(&prop, 0));
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::printf("stat_power: %s, %s, %.3g samples per configuration\n", date,
              prop.name, samples);
  // The device's default pool keeps what chunks free (a chunk's samples
  // are gigabytes) instead of giving it back at every wait.
  cudaMemPool_t pool = nullptr;
  SP_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t keep = std::numeric_limits<uint64_t>::max();
  SP_CUDA(
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  Ctx ctx;
  absl::StatusOr<std::unique_ptr<Stager>> stager = Stager::Create(pool);
  SP_CHECK(stager.status());
  ctx.stager = *std::move(stager);
  uint64_t seed = 0x57a7'0000;

  if (only.empty() || only == "gamma") {
    const double tiny[] = {1e-6, 1e-4, 1e-2};
    const double shapes[] = {0.3, 1, 2.5, 10, 1e3, 1e5, 1e6, 1e8, 1e10};
    for (double s : tiny) RunGamma<float>(ctx, s, true, n, ++seed);
    for (double s : shapes) RunGamma<float>(ctx, s, false, n, ++seed);
    for (double s : tiny) RunGamma<double>(ctx, s, true, n, ++seed);
    for (double s : shapes) RunGamma<double>(ctx, s, false, n, ++seed);
  }
  if (only.empty() || only == "categorical") {
    const int64_t ks[] = {5, 1024, 1000000, int64_t{1} << 20, int64_t{1} << 24};
    for (const char* kind : {"equal", "random", "spanning", "zero"}) {
      for (int64_t k : ks) {
        if (k > max_k) continue;
        ++seed;
        RunCategorical<float>(ctx, kind, Weights<float>(kind, k, seed), n,
                              seed);
        RunCategorical<double>(ctx, kind, Weights<double>(kind, k, seed), n,
                               seed);
      }
    }
    for (int64_t k : {int64_t{2}, int64_t{1000}}) {
      ++seed;
      RunCategorical<float>(ctx, "subnormal",
                            Weights<float>("subnormal", k, seed), n, seed);
      RunCategorical<double>(ctx, "subnormal",
                             Weights<double>("subnormal", k, seed), n, seed);
    }
  }
  if (only.empty() || only == "dirichlet") {
    std::vector<double> tiny(1000, 1e-4), spread(1000);
    for (int i = 0; i < 1000; ++i)
      spread[i] = std::pow(10.0, -4 + 5.0 * i / 999);
    RunDirichlet<float>(ctx, "alpha 1e-4 each", tiny, n, ++seed);
    RunDirichlet<double>(ctx, "alpha 1e-4 each", tiny, n, ++seed);
    RunDirichlet<float>(ctx, "alpha 1e-4 .. 10", spread, n, ++seed);
    RunDirichlet<double>(ctx, "alpha 1e-4 .. 10", spread, n, ++seed);
    RunDirichlet<float>(ctx, "alpha 1, 2, 3, 4", {1, 2, 3, 4}, n, ++seed);
    RunDirichlet<double>(ctx, "alpha 1, 2, 3, 4", {1, 2, 3, 4}, n, ++seed);
  }
  if (only.empty() || only == "boards") {
    kernels::BoardSpec a{9, 9, {40, 20}}, b{19, 19, {180}}, c{19, 19, {90, 90}},
        d{128, 128, {4096, 4096}}, e{8, 8, {1}};
    for (const auto& spec : {a, b, c, d, e}) RunBoards(ctx, spec, n, ++seed);
  }
  WriteReports(ctx, dir, samples, date, prop.name);
  return 0;
}

}  // namespace
}  // namespace sampler::bench

int main(int argc, char** argv) { return sampler::bench::Main(argc, argv); }
