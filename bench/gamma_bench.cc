// Benchmark of the CUDA gamma kernel (kernels/gamma.cu): throughput of
// scalar shapes 0.3, 1, 2.5, 10 (one group) and per-element shapes
// U(0.1, 10), float32 and float64, with and without warp-aware pre-caching,
// in each of the kernel's tunings (kTunings, same bits);
// and the warp efficiency of the rejection loop, measured by the kernel's
// instrumented variant against the model of gamma-rejection-on-gpus.txt.
//
// Timings are medians of CUDA-event times of whole launches on outputs far
// larger than the L2 cache. The benchmark reports; it asserts nothing.
//
//   gamma_bench [--n=134217728] [--reps=20] [--json=PATH] [--ncu]
//
// --ncu: one launch of each of a few configurations on 2^22 outputs (the
// service's pre-caching choice, every tuning), for profiling under Nsight
// Compute (no timing, no model).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/gamma.h"

namespace sampler::bench {
namespace {

using kernels::GammaGroup;
using kernels::cuda::DeviceBuffer;
using kernels::cuda::Event;
using kernels::cuda::GammaBatch;
using kernels::cuda::GammaBatchBuilder;
using kernels::cuda::GammaCounters;
using kernels::cuda::GammaLaunchOptions;
using kernels::cuda::StagedBatch;
using kernels::cuda::Stager;
using kernels::cuda::StagingPlan;

constexpr int kWarp = 32;

#define BENCH_CHECK(expr)                                     \
  do {                                                        \
    const absl::Status bench_status_ = (expr);                \
    if (!bench_status_.ok()) {                                \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, \
                   bench_status_.ToString().c_str());         \
      std::exit(1);                                           \
    }                                                         \
  } while (false)
#define BENCH_CUDA(call) \
  BENCH_CHECK(kernels::cuda::ToStatus((call), #call, __FILE__, __LINE__))

// ------------------------------------------------------------- model ----

// Probability that one Marsaglia-Tsang attempt is accepted, for the shape
// the attempt uses (shape, or shape + 1 below 1). With v = (1 + c z)^3 the
// attempt is kept with probability exp(z^2/2 + d - d v + d log v) (the
// squeeze only decides some of these early), so
//   p = (2 pi)^-1/2 * integral over z > -1/c of exp(d (1 - v + log v)) dz.
// Simpson's rule on a fine grid; the integrand is smooth and vanishes at
// both ends.
double AcceptProbability(double shape) {
  const double alpha = shape < 1 ? shape + 1 : shape;
  const double d = alpha - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  const double lo = -1.0 / c, hi = 60.0;
  const int n = 40000;  // even
  const double h = (hi - lo) / n;
  auto f = [&](double z) {
    const double v = std::pow(1.0 + c * z, 3);
    if (v <= 0) return 0.0;
    return std::exp(d * (1.0 - v + std::log(v)));
  };
  double sum = f(lo) + f(hi);
  for (int i = 1; i < n; ++i) sum += f(lo + i * h) * (i % 2 == 1 ? 4 : 2);
  return sum * h / 3.0 / std::sqrt(2.0 * M_PI);
}

// Expected warp iterations per call without pre-caching: the expected
// maximum of K geometric(p) variables, sum over n >= 0 of 1 - (1 - q^n)^K.
double UncachedIterations(double p, int k) {
  const double q = 1.0 - p;
  double e = 0, qn = 1;
  for (int n = 0; n < 10000; ++n) {
    const double term = 1.0 - std::pow(1.0 - qn, k);
    e += term;
    if (term < 1e-16) break;
    qn *= q;
  }
  return e;
}

// Expected warp iterations per call with pre-caching of one variate, in the
// steady state: the Markov chain of gamma-rejection-on-gpus.txt, written for
// this kernel. During a call a lane is in state A (current item not yet
// accepted: it attempts that item), B (current accepted, next not: it
// attempts its next item) or C (both accepted: idle). One iteration moves
// every A lane to B and every B lane to C with probability p each, and runs
// while any lane is in A. A call that starts with c0 lanes holding a
// pre-cached acceptance starts with K - c0 lanes in A and none in C, and
// ends with some number c of lanes in C: the next call's c0. The model
// returns sum over c0 of pi(c0) E[iterations | c0], pi the stationary law
// of c0.
double CachedIterations(double p, int k) {
  std::vector<std::vector<double>> binom(k + 1, std::vector<double>(k + 1));
  for (int n = 0; n <= k; ++n) {
    for (int s = 0; s <= n; ++s) {
      binom[n][s] = std::exp(std::lgamma(n + 1.0) - std::lgamma(s + 1.0) -
                             std::lgamma(n - s + 1.0) + s * std::log(p) +
                             (n - s) * std::log1p(-p));
    }
  }
  std::vector<std::vector<double>> trans(k + 1, std::vector<double>(k + 1));
  std::vector<double> iters(k + 1);
  for (int c0 = 0; c0 <= k; ++c0) {
    // prob[r][c]: r lanes in A, c in C.
    std::vector<std::vector<double>> prob(k + 1, std::vector<double>(k + 1));
    prob[k - c0][0] = 1;
    double expected = 0;
    for (int it = 0; it < 100000; ++it) {
      double running = 0;
      for (int r = 1; r <= k; ++r) {
        for (int c = 0; c + r <= k; ++c) running += prob[r][c];
      }
      if (running < 1e-15) break;
      expected += running;
      std::vector<std::vector<double>> next(k + 1, std::vector<double>(k + 1));
      for (int c = 0; c <= k; ++c) next[0][c] = prob[0][c];
      for (int r = 1; r <= k; ++r) {
        for (int c = 0; c + r <= k; ++c) {
          const double w = prob[r][c];
          if (w == 0) continue;
          const int b = k - r - c;
          for (int s = 0; s <= r; ++s) {
            const double ws = w * binom[r][s];
            for (int t = 0; t <= b; ++t) next[r - s][c + t] += ws * binom[b][t];
          }
        }
      }
      prob.swap(next);
    }
    iters[c0] = expected;
    for (int c = 0; c <= k; ++c) trans[c0][c] = prob[0][c];
  }
  std::vector<double> pi(k + 1, 0.0);
  pi[0] = 1;
  for (int it = 0; it < 10000; ++it) {
    std::vector<double> next(k + 1, 0.0);
    for (int a = 0; a <= k; ++a) {
      for (int b = 0; b <= k; ++b) next[b] += pi[a] * trans[a][b];
    }
    double diff = 0;
    for (int a = 0; a <= k; ++a) diff += std::fabs(next[a] - pi[a]);
    pi.swap(next);
    if (diff < 1e-14) break;
  }
  double e = 0;
  for (int c0 = 0; c0 <= k; ++c0) e += pi[c0] * iters[c0];
  return e;
}

// Monte Carlo of the same loop for lanes whose items have different
// acceptance probabilities (per-element shapes): iterations per call and
// efficiency (attempts / (32 x iterations)), with or without pre-caching.
struct SimResult {
  double iterations_per_call;
  double efficiency;
};
SimResult SimulateWarps(const std::vector<double>& p_table, bool pre_cache,
                        uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::uniform_int_distribution<size_t> pick(0, p_table.size() - 1);
  constexpr int kWarps = 1000, kCalls = 256;
  double iterations = 0, attempts = 0;
  for (int w = 0; w < kWarps; ++w) {
    double p_cur[kWarp], p_nxt[kWarp];
    bool cur_done[kWarp], nxt_done[kWarp];
    for (int l = 0; l < kWarp; ++l) {
      p_cur[l] = p_table[pick(rng)];
      p_nxt[l] = p_table[pick(rng)];
      cur_done[l] = nxt_done[l] = false;
    }
    for (int call = 0; call < kCalls; ++call) {
      for (;;) {
        bool any = false;
        for (int l = 0; l < kWarp; ++l) any |= !cur_done[l];
        if (!any) break;
        ++iterations;
        for (int l = 0; l < kWarp; ++l) {
          if (!cur_done[l]) {
            cur_done[l] = u01(rng) < p_cur[l];
            ++attempts;
          } else if (pre_cache && !nxt_done[l]) {
            nxt_done[l] = u01(rng) < p_nxt[l];
            ++attempts;
          }
        }
      }
      for (int l = 0; l < kWarp; ++l) {
        if (pre_cache) {
          p_cur[l] = p_nxt[l];
          cur_done[l] = nxt_done[l];
        } else {
          p_cur[l] = p_table[pick(rng)];
          cur_done[l] = false;
        }
        p_nxt[l] = p_table[pick(rng)];
        nxt_done[l] = false;
      }
    }
  }
  return SimResult{iterations / (kWarps * kCalls),
                   attempts / (kWarp * iterations)};
}

// ------------------------------------------------------------ inputs ----

uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Shapes U(0.1, 10), as the peers' per-element benchmark.
template <typename T>
std::vector<T> UniformShapes(int64_t n, uint64_t seed) {
  std::vector<T> a(n);
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(SplitMix(seed) >> 11) * 0x1.0p-53;
    a[i] = static_cast<T>(0.1 + 9.9 * u);
  }
  return a;
}

struct Config {
  std::string name;
  double shape;  // < 0: per-element U(0.1, 10)
};

// The kernel's tunings (GammaLaunchOptions: seed_keys_in_params,
// defer_slow_outputs, more_warps), same bits in every one: "v2" is the
// kernel before them; the others are those the service may launch
// (GammaBatchBuilder::ServiceOptions). more_warps applies to float without
// pre-caching only; its rows are timed there only. (Session 11 also timed
// "defer" without keys and two items a lane in flight, "pairs": both lost,
// gamma-kernel.md.)
struct Tuning {
  const char* name;
  bool keys, defer, more_warps;
};
constexpr Tuning kTunings[] = {
    {"v2", false, false, false},
    {"keys", true, false, false},
    {"keys+defer", true, true, false},
    {"keys+warps", true, false, true},
    {"keys+defer+warps", true, true, true},
};

bool Applies(const Tuning& t, bool pre_cache, bool is_float) {
  return !t.more_warps || (is_float && !pre_cache);
}

GammaLaunchOptions OptionsFor(bool pre_cache, const Tuning& t) {
  GammaLaunchOptions options;
  options.pre_cache = pre_cache;
  options.seed_keys_in_params = t.keys;
  options.defer_slow_outputs = t.defer;
  options.more_warps = t.more_warps;
  return options;
}

// Whether `o` is what the service launches (GammaBatchBuilder::
// ServiceOptions).
bool IsService(const GammaLaunchOptions& o, const GammaLaunchOptions& service) {
  return o.pre_cache == service.pre_cache &&
         o.seed_keys_in_params == service.seed_keys_in_params &&
         o.defer_slow_outputs == service.defer_slow_outputs &&
         o.more_warps == service.more_warps;
}

struct Row {
  std::string precision, config, tuning;
  bool pre_cache;
  bool service;  // the variant the service launches (ServiceOptions)
  double ms, gsps;
  GammaCounters counters;
  double p_model, iters_model, eff_model;
};

// A batch staged on the device (staging.h), with the instrumented
// kernel's counters after the builder's out region (8-byte aligned).
template <typename T>
struct DeviceBatch {
  StagedBatch staged;
  GammaBatch<T> view;
  size_t counters_at = 0;
};

template <typename T>
DeviceBatch<T> Upload(const GammaBatchBuilder<T>& b, Stager& stager) {
  StagingPlan plan = b.Staging();
  DeviceBatch<T> d;
  d.counters_at = (plan.out_bytes + 7) / 8 * 8;
  plan.out_bytes = d.counters_at + sizeof(GammaCounters);
  absl::StatusOr<StagedBatch> staged =
      stager.Upload(plan, [&](char* in) { b.PackInto(in); });
  BENCH_CHECK(staged.status());
  d.staged = *std::move(staged);
  // Poisoned, so that a run that wrote nothing cannot pass for a fast one.
  BENCH_CUDA(cudaMemsetAsync(d.staged.regions.out, 0xff, d.counters_at,
                             stager.stream.get()));
  BENCH_CUDA(cudaStreamSynchronize(stager.stream.get()));
  d.view = b.View(d.staged.regions);
  return d;
}

template <typename T>
GammaBatchBuilder<T> MakeBuilder(const Config& cfg, int64_t n) {
  GammaBatchBuilder<T> b;
  if (cfg.shape > 0) {
    const std::vector<GammaGroup<T>> g = {{static_cast<T>(cfg.shape), T(1), n}};
    BENCH_CHECK(b.AddGroups(g, false, 0x5eedull, 0).status());
  } else {
    const std::vector<T> shape = UniformShapes<T>(n, 12345);
    BENCH_CHECK(b.AddElements(shape, {}, false, 0x5eedull, 0).status());
  }
  return b;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <typename T>
void RunConfig(const Config& cfg, int64_t n, int reps, Stager& stager,
               const std::vector<double>& p_table, std::vector<Row>* rows) {
  const GammaBatchBuilder<T> builder = MakeBuilder<T>(cfg, n);
  const DeviceBatch<T> dev = Upload(builder, stager);
  const GammaBatch<T>& batch = dev.view;
  const cudaStream_t s = stager.stream.get();
  const Event& start = stager.start;
  const Event& stop = stager.stop;
  const char* precision = sizeof(T) == 4 ? "float32" : "float64";

  double p_model = 0;
  if (cfg.shape > 0) p_model = AcceptProbability(cfg.shape);

  for (bool pre_cache : {true, false}) {
    // The per-element model of the plain loop, once per pre-caching choice:
    // the counted launch runs that loop whatever the tuning.
    const SimResult sim =
        cfg.shape > 0 ? SimResult{0, 0} : SimulateWarps(p_table, pre_cache, 99);
    for (const Tuning& tuning : kTunings) {
      if (!Applies(tuning, pre_cache, sizeof(T) == 4)) continue;
      const GammaLaunchOptions options = OptionsFor(pre_cache, tuning);
      for (int i = 0; i < 3; ++i) BENCH_CHECK(LaunchGamma(batch, s, options));
      std::vector<double> times;
      for (int i = 0; i < reps; ++i) {
        BENCH_CUDA(cudaEventRecord(start.get(), s));
        BENCH_CHECK(LaunchGamma(batch, s, options));
        BENCH_CUDA(cudaEventRecord(stop.get(), s));
        BENCH_CUDA(cudaEventSynchronize(stop.get()));
        float ms = 0;
        BENCH_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        times.push_back(ms);
      }
      // Every output written and finite or zero (a poisoned NaN would show),
      // in a sample of them.
      std::vector<T> sample(std::min<int64_t>(n, 1 << 20));
      uint32_t status = 0;
      BENCH_CHECK(stager.Download(dev.staged, [&](const char* out) {
        std::memcpy(sample.data(), builder.OutLayout().Values(out),
                    sizeof(T) * sample.size());
        status = builder.OutLayout().StatusWords(out)[0];
      }));
      for (T x : sample) {
        if (!(x >= T(0)) || !std::isfinite(x)) {
          std::fprintf(stderr, "bad output %g\n", static_cast<double>(x));
          std::exit(1);
        }
      }
      if (status != 0) {
        std::fprintf(stderr, "segment status %u\n", status);
        std::exit(1);
      }

      // The instrumented variant on the same inputs.
      char* counters =
          static_cast<char*>(dev.staged.regions.out) + dev.counters_at;
      GammaLaunchOptions counted = options;
      counted.counters = reinterpret_cast<GammaCounters*>(counters);
      BENCH_CUDA(cudaMemsetAsync(counters, 0, sizeof(GammaCounters), s));
      BENCH_CHECK(LaunchGamma(batch, s, counted));
      Row row;
      BENCH_CHECK(stager.Download(dev.staged, [&](const char* out) {
        std::memcpy(&row.counters, out + dev.counters_at,
                    sizeof(GammaCounters));
      }));

      row.precision = precision;
      row.config = cfg.name;
      row.tuning = tuning.name;
      row.pre_cache = pre_cache;
      row.service = IsService(options, builder.ServiceOptions());
      row.ms = Median(times);
      row.gsps = n / (row.ms * 1e-3) / 1e9;
      if (cfg.shape > 0) {
        row.p_model = p_model;
        row.iters_model = pre_cache ? CachedIterations(p_model, kWarp)
                                    : UncachedIterations(p_model, kWarp);
        row.eff_model = 1.0 / (p_model * row.iters_model);
      } else {
        double mean_p = 0;
        for (double p : p_table) mean_p += 1.0 / p;
        row.p_model = p_table.size() / mean_p;  // items per attempt
        row.iters_model = sim.iterations_per_call;
        row.eff_model = sim.efficiency;
      }
      rows->push_back(row);
      const GammaCounters& c = row.counters;
      std::printf(
          "%-8s %-14s pre=%d%s %8.3f ms  %7.2f Gsamples/s | p %.4f (model "
          "%.4f)  iters/call %.3f (model %.3f)  efficiency %.3f (model %.3f)  "
          "log-test warps %.3f  exact-log warps %.4f lanes %.2e  tuning=%s\n",
          precision, cfg.name.c_str(), pre_cache ? 1 : 0,
          row.service ? "*" : " ", row.ms, row.gsps,
          static_cast<double>(c.lane_items) / c.lane_attempts, row.p_model,
          static_cast<double>(c.warp_iterations) / c.warp_calls,
          row.iters_model,
          static_cast<double>(c.lane_attempts) / (32.0 * c.warp_iterations),
          row.eff_model,
          static_cast<double>(c.warp_full_tests) / c.warp_iterations,
          static_cast<double>(c.warp_exact_tests) / c.warp_iterations,
          static_cast<double>(c.lane_exact_tests) / c.lane_attempts,
          tuning.name);
      std::fflush(stdout);
    }
  }
}

// Device-to-device copy of `bytes`, counting bytes read plus written: the
// memory ceiling of the day.
double CopyRate(size_t bytes, Stager& stager) {
  const cudaStream_t s = stager.stream.get();
  absl::StatusOr<DeviceBuffer> a = stager.Allocate(bytes);
  absl::StatusOr<DeviceBuffer> b = stager.Allocate(bytes);
  BENCH_CHECK(a.status());
  BENCH_CHECK(b.status());
  const Event& start = stager.start;
  const Event& stop = stager.stop;
  BENCH_CUDA(cudaMemsetAsync(a->data(), 1, bytes, s));
  std::vector<double> times;
  for (int i = 0; i < 12; ++i) {
    BENCH_CUDA(cudaEventRecord(start.get(), s));
    BENCH_CUDA(cudaMemcpyAsync(b->data(), a->data(), bytes,
                               cudaMemcpyDeviceToDevice, s));
    BENCH_CUDA(cudaEventRecord(stop.get(), s));
    BENCH_CUDA(cudaEventSynchronize(stop.get()));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    if (i >= 2) times.push_back(ms);
  }
  return 2.0 * bytes / (Median(times) * 1e-3) / 1e12;
}

template <typename T>
void NcuLaunches(Stager& stager) {
  const cudaStream_t s = stager.stream.get();
  const int64_t n = int64_t{1} << 22;
  for (const Config& cfg : {Config{"shape=0.3", 0.3}, Config{"shape=10", 10.0},
                            Config{"U(0.1,10)", -1.0}}) {
    const GammaBatchBuilder<T> builder = MakeBuilder<T>(cfg, n);
    const DeviceBatch<T> dev = Upload(builder, stager);
    const GammaBatch<T>& batch = dev.view;
    // The service's pre-caching choice, the kernel before the tunings and
    // with each.
    const bool pre_cache = builder.PreCachePays();
    for (const Tuning& tuning : kTunings) {
      if (!Applies(tuning, pre_cache, sizeof(T) == 4)) continue;
      BENCH_CHECK(LaunchGamma(batch, s, OptionsFor(pre_cache, tuning)));
      BENCH_CUDA(cudaStreamSynchronize(s));
      std::printf("ncu launch: %s %s pre=%d tuning=%s\n",
                  sizeof(T) == 4 ? "float32" : "float64", cfg.name.c_str(),
                  pre_cache ? 1 : 0, tuning.name);
    }
  }
}

int Main(int argc, char** argv) {
  int64_t n = int64_t{1} << 27;
  int reps = 20;
  std::string json;
  bool ncu = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--n=", 0) == 0) {
      n = std::atoll(a.c_str() + 4);
    } else if (a.rfind("--reps=", 0) == 0) {
      reps = std::atoi(a.c_str() + 7);
    } else if (a.rfind("--json=", 0) == 0) {
      json = a.substr(7);
    } else if (a == "--ncu") {
      ncu = true;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  absl::StatusOr<std::unique_ptr<Stager>> stager = Stager::Create();
  BENCH_CHECK(stager.status());
  if (ncu) {
    NcuLaunches<float>(**stager);
    NcuLaunches<double>(**stager);
    return 0;
  }

  int device = 0;
  BENCH_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop;
  BENCH_CUDA(cudaGetDeviceProperties(&prop, device));
  int clock_khz = 0;
  BENCH_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  std::printf("device: %s, %d SMs, L2 %d MB, max SM clock %d MHz\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20,
              clock_khz / 1000);
  const double copy_tbs = CopyRate(size_t{1} << 30, **stager);
  std::printf("d2d copy: %.3f TB/s (read + write)\n", copy_tbs);
  std::printf("outputs per launch: %lld, medians of %d launches\n",
              static_cast<long long>(n), reps);

  // Acceptance probabilities of U(0.1, 10) shapes, for the per-element
  // model (a fine table; the shapes are uniform).
  std::vector<double> p_table;
  for (int i = 0; i < 400; ++i) {
    p_table.push_back(AcceptProbability(0.1 + 9.9 * (i + 0.5) / 400));
  }

  const std::vector<Config> configs = {{"shape=0.3", 0.3},
                                       {"shape=1", 1.0},
                                       {"shape=2.5", 2.5},
                                       {"shape=10", 10.0},
                                       {"U(0.1,10)", -1.0}};
  std::vector<Row> rows;
  for (const Config& cfg : configs) {
    RunConfig<float>(cfg, n, reps, **stager, p_table, &rows);
  }
  for (const Config& cfg : configs) {
    RunConfig<double>(cfg, n, reps, **stager, p_table, &rows);
  }

  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (f == nullptr) {
      std::perror(json.c_str());
      return 1;
    }
    std::fprintf(f,
                 "{\n \"device\": \"%s\",\n \"sms\": %d,\n \"n\": %lld,\n "
                 "\"reps\": %d,\n \"copy_tbs\": %.4f,\n \"rows\": [\n",
                 prop.name, prop.multiProcessorCount, static_cast<long long>(n),
                 reps, copy_tbs);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const GammaCounters& c = r.counters;
      std::fprintf(
          f,
          "  {\"precision\": \"%s\", \"config\": \"%s\", \"tuning\": \"%s\", "
          "\"pre_cache\": %s, "
          "\"service\": %s, \"ms\": %.5f, \"gsps\": %.4f, \"warp_calls\": "
          "%llu, "
          "\"warp_iterations\": %llu, \"lane_attempts\": %llu, "
          "\"lane_items\": %llu, \"warp_full_tests\": %llu, "
          "\"lane_full_tests\": %llu, \"warp_exact_tests\": %llu, "
          "\"lane_exact_tests\": %llu, \"p_model\": %.6f, "
          "\"iters_model\": %.5f, \"eff_model\": %.5f}%s\n",
          r.precision.c_str(), r.config.c_str(), r.tuning.c_str(),
          r.pre_cache ? "true" : "false", r.service ? "true" : "false", r.ms,
          r.gsps, c.warp_calls, c.warp_iterations, c.lane_attempts,
          c.lane_items, c.warp_full_tests, c.lane_full_tests,
          c.warp_exact_tests, c.lane_exact_tests, r.p_model, r.iters_model,
          r.eff_model, i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, " ]\n}\n");
    std::fclose(f);
  }
  return 0;
}

}  // namespace
}  // namespace sampler::bench

int main(int argc, char** argv) { return sampler::bench::Main(argc, argv); }
