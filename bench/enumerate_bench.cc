// Enumeration kernel benchmark: batches of many two-term problems (m = n),
// every direct-kernel configuration, the pair kernel (m <= 32: a warp per
// problem, enumerate_pair.cu), the small-problems path (m <= 64, as the
// server runs these problems), the automatic choice and the FFT path, float
// and double. Medians of CUDA-event timings of LaunchEnumerate alone
// (like the peers, which time the convolution on device-resident inputs),
// input sets rotated so that consecutive timings read at least ~128 MB of
// arena between them (twice the 50-60 MB L2) and never the set just read. Each
// variant's first problems are checked against EnumerateCpu before timing.
//
//   enumerate_bench [--quick] [--json=PATH] [--only=TYPE:M:B:VARIANT,...]
//   enumerate_bench --pb=N[,N...]
//
// --pb: issue 15's single large problem instead, a Poisson binomial of N
// Bernoulli terms (float64, linear in, log out, as in
// bench/service/poisson_binomial.sh), LaunchEnumerate alone (the device
// part of the server's time), with the extended kernel's fallback count
// (EnumerateExtendedFallbacks) per run.
//
// Columns: Mpairs/s (problems per second), useful GFMA/s (m * n products per
// problem), GB/s of the ideal traffic (inputs read once, outputs written
// once, plus the per-problem descriptor), and the two roofline floors: the
// time the ideal bytes take at the measured copy bandwidth, and the time the
// products take at the datasheet FMA rate (H200: 33.5 T FFMA/s, 16.7 T
// DFMA/s); "bound" is measured time over the larger floor.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/enumerate_small.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels::cuda {
namespace {

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
  BENCH_CHECK(           \
      ::sampler::kernels::cuda::ToStatus((call), #call, __FILE__, __LINE__))

struct Case {
  int m;  // = n
  int64_t batch;
  // Run only when --only names it (the tensor kernel's routing sizes).
  bool only_when_named = false;
};

struct Variant {
  std::string name;
  EnumerateOptions options;
};

struct Row {
  std::string type, variant;
  int m;
  int64_t batch;
  double seconds;  // median
  double spread;   // (max - min) / median of the timed runs
  double max_rel_error;
};

// Probabilities in [0.05, 1), normalised: the peers' inputs are uniform.
template <typename T>
std::vector<T> RandomPmf(std::mt19937_64& rng, int len) {
  std::vector<double> v(len);
  double total = 0;
  for (double& x : v) {
    x = 0.05 + 0.95 * static_cast<double>(rng() >> 11) * 0x1p-53;
    total += x;
  }
  std::vector<T> out(len);
  for (int i = 0; i < len; ++i) out[i] = static_cast<T>(v[i] / total);
  return out;
}

// One input set: a built batch, staged on the device (staging.h).
template <typename T>
struct Set {
  std::unique_ptr<EnumerateBatchBuilder<T>> builder;
  StagedBatch staged;
  EnumerateBatch<T> view;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Device-to-device copy bandwidth (bytes read + written per second).
double CopyBandwidth(Stager& stager) {
  const cudaStream_t stream = stager.stream.get();
  const size_t bytes = size_t{1} << 30;
  absl::StatusOr<DeviceBuffer> a = stager.Allocate(bytes);
  absl::StatusOr<DeviceBuffer> b = stager.Allocate(bytes);
  BENCH_CHECK(a.status());
  BENCH_CHECK(b.status());
  BENCH_CUDA(cudaMemsetAsync(a->data(), 1, bytes, stream));
  std::vector<double> times;
  for (int rep = 0; rep < 8; ++rep) {
    BENCH_CUDA(cudaEventRecord(stager.start.get(), stream));
    BENCH_CUDA(cudaMemcpyAsync(b->data(), a->data(), bytes,
                               cudaMemcpyDeviceToDevice, stream));
    BENCH_CUDA(cudaEventRecord(stager.stop.get(), stream));
    BENCH_CUDA(cudaEventSynchronize(stager.stop.get()));
    float ms = 0;
    BENCH_CUDA(
        cudaEventElapsedTime(&ms, stager.start.get(), stager.stop.get()));
    if (rep >= 2) times.push_back(ms * 1e-3);
  }
  return 2.0 * bytes / Median(times);
}

template <typename T>
const char* TypeName() {
  return sizeof(T) == 4 ? "float" : "double";
}

// The max relative error of set 0's first problems (`got`, out_per values
// each) against EnumerateCpu; exits if any status word is set.
template <typename T>
double CheckAgainstCpu(const std::vector<std::vector<T>>& inputs,
                       const std::vector<T>& got,
                       const std::vector<uint32_t>& status, int64_t out_per) {
  double max_rel = 0;
  for (int64_t p = 0; p < static_cast<int64_t>(got.size()) / out_per; ++p) {
    const PmfTerm<T> terms[2] = {{0, inputs[2 * p]}, {0, inputs[2 * p + 1]}};
    absl::StatusOr<Pmf<T>> cpu = EnumerateCpu<T>(
        absl::MakeConstSpan(terms, 2), ProbSpace::kLinear, ProbSpace::kLinear);
    BENCH_CHECK(cpu.status());
    for (int64_t k = 0; k < out_per; ++k) {
      const double r = cpu->values[k];
      const double g = got[p * out_per + k];
      max_rel = std::max(max_rel, std::abs(g - r) / r);
    }
  }
  for (uint32_t w : status) {
    if (w != 0) {
      std::fprintf(stderr, "status word set\n");
      std::exit(1);
    }
  }
  return max_rel;
}

// Downloads set 0's first problems' outputs (contiguous from the start of
// the out region) and every status word; returns CheckAgainstCpu's error.
template <typename T>
double DownloadAndCheck(Stager& stager, const StagedBatch& staged,
                        const ValuesAndStatusWords<T>& layout,
                        const std::vector<std::vector<T>>& inputs, int64_t B,
                        int64_t out_per) {
  std::vector<T> got(static_cast<size_t>(std::min<int64_t>(B, 3) * out_per));
  std::vector<uint32_t> st(B);
  BENCH_CHECK(stager.Download(staged, [&](const char* out) {
    std::memcpy(got.data(), layout.Values(out), got.size() * sizeof(T));
    std::memcpy(st.data(), layout.StatusWords(out), B * sizeof(uint32_t));
  }));
  return CheckAgainstCpu(inputs, got, st, out_per);
}

// Warms up on every set, then times `launch(set)` in rounds over the
// rotating sets; adds the row and prints it.
template <typename T, typename Launch>
void TimeAndReport(Stager& stager, int sets, bool quick,
                   const std::string& name, int m, int64_t B, double max_rel,
                   const std::string& launches, Launch launch,
                   std::vector<Row>* rows) {
  const cudaStream_t stream = stager.stream.get();
  for (int s = 0; s < sets; ++s) launch(s);
  const int reps = quick ? std::max(3, sets) : std::max(15, 2 * sets);
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    BENCH_CUDA(cudaEventRecord(stager.start.get(), stream));
    launch(r % sets);
    BENCH_CUDA(cudaEventRecord(stager.stop.get(), stream));
    BENCH_CUDA(cudaEventSynchronize(stager.stop.get()));
    float ms = 0;
    BENCH_CUDA(
        cudaEventElapsedTime(&ms, stager.start.get(), stager.stop.get()));
    times.push_back(ms * 1e-3);
  }
  const double med = Median(times);
  const double spread = (*std::max_element(times.begin(), times.end()) -
                         *std::min_element(times.begin(), times.end())) /
                        med;
  rows->push_back({TypeName<T>(), name, m, B, med, spread, max_rel});
  std::printf(
      "%-6s m=%-6d B=%-7lld %-22s %10.3f us  %10.2f Mpairs/s  "
      "err %.2e  [%s]\n",
      TypeName<T>(), m, static_cast<long long>(B), name.c_str(), med * 1e6,
      B / med / 1e6, max_rel, launches.c_str());
  std::fflush(stdout);
}

// The session-7 small-problems path (enumerate_small.h: a warp per problem,
// its tree in shared memory, every product in double) on the same inputs,
// which the server's CUDA backend takes for these problems (issue 11: can it
// serve them as well as the pair kernel?).
template <typename T>
void RunSmallPath(const std::vector<std::vector<std::vector<T>>>& inputs, int m,
                  int64_t B, Stager& stager, bool quick,
                  std::vector<Row>* rows) {
  const int sets = static_cast<int>(inputs.size());
  const int64_t zeros[2] = {0, 0};
  std::vector<std::vector<std::array<absl::Span<const T>, 2>>> spans(sets);
  std::vector<EnumerateSmallBatch<T>> small(sets);
  std::vector<StagedBatch> staged(sets);
  std::vector<EnumerateSmallDeviceBatch<T>> views(sets);
  for (int s = 0; s < sets; ++s) {
    small[s].Reset(ProbSpace::kLinear, ProbSpace::kLinear);
    spans[s].resize(B);
    for (int64_t p = 0; p < B; ++p) {
      spans[s][p] = {inputs[s][2 * p], inputs[s][2 * p + 1]};
      if (!small[s].Add(spans[s][p], zeros)) {
        std::fprintf(stderr, "m = %d does not fit the small path\n", m);
        std::exit(1);
      }
    }
    absl::StatusOr<StagedBatch> up = stager.Upload(
        small[s].Staging(), [&](char* in) { small[s].PackInto(in); });
    BENCH_CHECK(up.status());
    staged[s] = *std::move(up);
    views[s] = small[s].View(staged[s].regions);
  }
  const cudaStream_t stream = stager.stream.get();
  BENCH_CHECK(LaunchEnumerateSmall(views[0], stream));
  const double max_rel = DownloadAndCheck(
      stager, staged[0], small[0].OutLayout(), inputs[0], B, 2 * m - 1);
  TimeAndReport<T>(
      stager, sets, quick, "small path (session 7)", m, B, max_rel,
      "enumerate_small.cu",
      [&](int s) { BENCH_CHECK(LaunchEnumerateSmall(views[s], stream)); },
      rows);
}

template <typename T>
void RunCase(const Case& c, const std::vector<Variant>& variants,
             Stager& stager, EnumerateFftPlans* fft, bool quick,
             bool small_path, std::vector<Row>* rows) {
  const cudaStream_t stream = stager.stream.get();
  const int m = c.m;
  const int64_t B = c.batch;
  const int64_t out_per = 2 * m - 1;
  const double arena_bytes = static_cast<double>(B) * (2 * m * sizeof(T) + 48);
  // Enough sets that a timed round reads well past L2, at most 16.
  const int sets = static_cast<int>(
      std::clamp(std::ceil((quick ? 64e6 : 128e6) / arena_bytes), 1.0, 16.0));
  std::mt19937_64 rng(12345 + m);
  // Inputs, shared by the variants.
  std::vector<std::vector<std::vector<T>>> inputs(sets);
  for (int s = 0; s < sets; ++s) {
    inputs[s].resize(2 * B);
    for (auto& v : inputs[s]) v = RandomPmf<T>(rng, m);
  }
  for (const Variant& variant : variants) {
    std::vector<Set<T>> built(sets);
    for (int s = 0; s < sets; ++s) {
      built[s].builder =
          std::make_unique<EnumerateBatchBuilder<T>>(variant.options);
      EnumerateBatchBuilder<T>& b = *built[s].builder;
      for (int64_t p = 0; p < B; ++p) {
        const PmfTerm<T> terms[2] = {{0, inputs[s][2 * p]},
                                     {0, inputs[s][2 * p + 1]}};
        BENCH_CHECK(b.Add(absl::MakeConstSpan(terms, 2), ProbSpace::kLinear,
                          ProbSpace::kLinear)
                        .status());
      }
      BENCH_CHECK(b.Finish());
      absl::StatusOr<StagedBatch> staged =
          stager.Upload(b.Staging(), [&](char* in) { b.PackInto(in); });
      BENCH_CHECK(staged.status());
      built[s].staged = *std::move(staged);
      built[s].view = b.View(built[s].staged.regions);
      if (fft != nullptr) BENCH_CHECK(fft->Prepare(built[s].view));
    }
    // Check set 0's first problems against the CPU.
    BENCH_CHECK(LaunchEnumerate(built[0].view, stream, fft));
    const double max_rel =
        DownloadAndCheck(stager, built[0].staged, built[0].builder->OutLayout(),
                         inputs[0], B, out_per);
    TimeAndReport<T>(
        stager, sets, quick, variant.name, m, B, max_rel,
        built[0].builder->DescribeLaunches(),
        [&](int s) {
          BENCH_CHECK(LaunchEnumerate(built[s].view, stream, fft));
        },
        rows);
  }
  if (small_path) RunSmallPath(inputs, m, B, stager, quick, rows);
}

// The configurations timed for a size: those that can be competitive there,
// plus the lecture's one-output-per-warp kernel as the baseline up to m =
// 1024 at the peers' batch sizes.
// named: the case was named by --only (every tensor configuration is
// worth a row there; in the full run, k8 t4 and k8 t4p, which kAuto takes,
// at the m = 256 and 1024 only).
bool Worth(const EnumerateDirectConfig& c, int m, int64_t batch, bool named) {
  const int g = c.group_lanes, r = c.outputs;
  const bool peers_batch =
      (m == 32) || (m == 256 && batch == 4096) || (m == 1024 && batch == 256);
  // The tensor-core kernel from m = 32 on (its routing thresholds).
  if (c.tensor_tiles > 0) {
    const std::string name = c.name;
    return m >= 32 && (named || (peers_batch && m >= 256 &&
                                 (name.rfind("dmma k8 t4 (", 0) == 0 ||
                                  name.rfind("dmma k8 t4p", 0) == 0)));
  }
  if (g == 32) return m <= 1024 && peers_batch;
  // Session 9's: split tiles for m = 1024's few tiles, sub-warps with long
  // chunks for m = 256's tile waste.
  if (c.split_warps > 1) return m >= 512 && m <= 4096;
  if (c.subwarps > 1 && c.x_chunk > 0) return m >= 64 && m <= 512;
  // Below the peers' m = 32: the sub-warps, the direct kernel's choice there.
  if (m < 32) return g == 1 && r == 5 && c.subwarps == 2 && c.tasks == 1;
  if (m <= 32) return g == 1 && r <= 5;
  if (c.subwarps > 1 || c.tasks > 1) return false;
  if (m <= 256) return g <= 4 && !(g == 1 && r == 15);
  if (m <= 1024) return g <= 4 && r >= 5;
  return r >= 9 && g <= 4;
}

// --pb: one Poisson binomial of n terms (q as in the GPU test: log10 q
// uniform in [-300, 0) for a third of the terms, uniform in (0, 1) for the
// rest), median of 15 timed launches after one warm-up.
void RunPoissonBinomial(int n, Stager& stager) {
  const cudaStream_t stream = stager.stream.get();
  std::mt19937_64 rng(15 + n);
  std::vector<std::vector<double>> values(n);
  std::vector<PmfTerm<double>> terms;
  for (int t = 0; t < n; ++t) {
    const double u = (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53;
    const double q =
        std::max(t % 3 == 0 ? std::pow(10.0, -300 * u) : u, 1e-300);
    values[t] = {1 - q, q};
    terms.push_back({0, values[t]});
  }
  EnumerateBatchBuilder<double> b;
  BENCH_CHECK(b.Add(terms, ProbSpace::kLinear, ProbSpace::kLog).status());
  BENCH_CHECK(b.Finish());
  absl::StatusOr<StagedBatch> staged =
      stager.Upload(b.Staging(), [&](char* in) { b.PackInto(in); });
  BENCH_CHECK(staged.status());
  const EnumerateBatch<double> view = b.View(staged->regions);
  BENCH_CHECK(ResetEnumerateExtendedFallbacks());
  BENCH_CHECK(LaunchEnumerate(view, stream));
  absl::StatusOr<uint64_t> fallbacks = EnumerateExtendedFallbacks();
  BENCH_CHECK(fallbacks.status());
  std::vector<double> times;
  for (int r = 0; r < 15; ++r) {
    BENCH_CUDA(cudaEventRecord(stager.start.get(), stream));
    BENCH_CHECK(LaunchEnumerate(view, stream));
    BENCH_CUDA(cudaEventRecord(stager.stop.get(), stream));
    BENCH_CUDA(cudaEventSynchronize(stager.stop.get()));
    float ms = 0;
    BENCH_CUDA(
        cudaEventElapsedTime(&ms, stager.start.get(), stager.stop.get()));
    times.push_back(ms);
  }
  std::printf(
      "pb n=%-7d device %9.3f ms (median of 15; min %.3f, max %.3f)  "
      "fallbacks per run %llu  [%s]\n",
      n, Median(times), *std::min_element(times.begin(), times.end()),
      *std::max_element(times.begin(), times.end()),
      static_cast<unsigned long long>(*fallbacks),
      b.DescribeLaunches().c_str());
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  bool quick = false;
  std::string json;
  std::vector<std::string> only;
  std::vector<int> pb;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    if (a.rfind("--json=", 0) == 0) json = a.substr(7);
    // --only=TYPE:M:B:VARIANT[,TYPE:M:B:VARIANT...] (variant name
    // prefixes): those cases and variants only (one, for ncu).
    if (a.rfind("--only=", 0) == 0) {
      only = absl::StrSplit(a.substr(7), ',', absl::SkipEmpty());
    }
    if (a.rfind("--pb=", 0) == 0) {
      for (const absl::string_view n : absl::StrSplit(a.substr(5), ',')) {
        pb.push_back(std::stoi(std::string(n)));
      }
    }
  }
  cudaDeviceProp prop;
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  absl::StatusOr<std::unique_ptr<Stager>> stager = Stager::Create();
  BENCH_CHECK(stager.status());
  if (!pb.empty()) {
    std::printf("device %s\n", prop.name);
    for (const int n : pb) RunPoissonBinomial(n, **stager);
    return 0;
  }
  const double copy_bw = CopyBandwidth(**stager);
  std::printf("device %s, %d SMs, L2 %d MB, copy %.3f TB/s (read+write)\n",
              prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20,
              copy_bw / 1e12);
  absl::StatusOr<std::unique_ptr<EnumerateFftPlans>> fft =
      EnumerateFftPlans::Create();
  if (!fft.ok())
    std::printf("FFT path off: %s\n", fft.status().ToString().c_str());

  // The peers' batch sizes (peers-h200-2026-11-21.json) and larger ones;
  // m = 16 for the pair kernel below the peers' size; with --only, the sizes
  // between them (batches of about m = 256's 2^28 products) for the tensor
  // kernel's routing thresholds.
  const std::vector<Case> cases = {
      {32, 262144},       {16, 262144},      {256, 4096},
      {256, 16384},       {1024, 256},       {1024, 2048},
      {4096, 128},        {16384, 16},       {64, 65536, true},
      {128, 16384, true}, {512, 1024, true}, {2048, 64, true},
      {48, 131072, true},
  };
  // The --only specs naming a case and type (all when there are none), and
  // whether one of them keeps a variant (its name prefix).
  auto specs_for = [&](const std::string& prefix) {
    std::vector<std::string> wants;
    for (const std::string& o : only) {
      if (o.rfind(prefix, 0) == 0) wants.push_back(o.substr(prefix.size()));
    }
    return wants;
  };
  auto wanted = [](const std::vector<std::string>& wants,
                   const std::string& name) {
    for (const std::string& w : wants) {
      if (name.rfind(w, 0) == 0) return true;
    }
    return false;
  };
  std::vector<Row> rows;
  for (const Case& c : cases) {
    for (int type = 0; type < 2; ++type) {
      const std::string prefix = absl::StrCat(type == 0 ? "float" : "double",
                                              ":", c.m, ":", c.batch, ":");
      const std::vector<std::string> wants = specs_for(prefix);
      if (only.empty() ? c.only_when_named : wants.empty()) continue;
      std::vector<Variant> variants;
      variants.push_back({"auto", {}});
      const auto configs = EnumerateDirectConfigs();
      for (size_t k = 0; k < configs.size(); ++k) {
        if (!Worth(configs[k], c.m, c.batch, !only.empty())) continue;
        EnumerateOptions o;
        o.method = EnumerateMethod::kDirect;
        o.direct_config = static_cast<int>(k);
        variants.push_back({configs[k].name, o});
      }
      if (c.m <= 32) {
        EnumerateOptions o;
        o.method = EnumerateMethod::kPair;
        o.direct_config = 0;
        variants.push_back({"pair (warp per problem)", o});
        o.direct_config = 1;
        variants.push_back({"pair x2 (two a warp)", o});
      }
      if (fft.ok() && c.m >= 256) {
        EnumerateOptions o;
        o.method = EnumerateMethod::kFft;
        variants.push_back({"fft (double cuFFT)", o});
      }
      if (!only.empty()) {
        std::vector<Variant> kept;
        for (Variant& v : variants) {
          if (wanted(wants, v.name)) kept.push_back(std::move(v));
        }
        variants = std::move(kept);
      }
      // The small-problems path where it fits (2m values), unless --only
      // names other variants only.
      const bool small_path = 2 * c.m <= kSmallMaxValues &&
                              (only.empty() || wanted(wants, "small path"));
      if (type == 0) {
        RunCase<float>(c, variants, **stager, fft.ok() ? fft->get() : nullptr,
                       quick, small_path, &rows);
      } else {
        RunCase<double>(c, variants, **stager, fft.ok() ? fft->get() : nullptr,
                        quick, small_path, &rows);
      }
    }
  }

  // Summary with rooflines.
  std::printf("\n%-6s %-6s %-8s %-22s %10s %10s %9s %9s %8s %8s %7s\n", "type",
              "m=n", "B", "variant", "Mpairs/s", "GFMA/s", "GB/s", "floor_us",
              "bound", "spread", "err");
  std::string js = "[\n";
  for (const Row& r : rows) {
    const double sz = r.type == "float" ? 4 : 8;
    const double fma = static_cast<double>(r.m) * r.m * r.batch;
    const double bytes = r.batch * ((4.0 * r.m - 1) * sz + 48);
    const double t_mem = bytes / copy_bw;
    const double t_fma = fma / (r.type == "float" ? 33.5e12 : 16.7e12);
    const double floor = std::max(t_mem, t_fma);
    std::printf(
        "%-6s %-6d %-8lld %-22s %10.2f %10.1f %9.1f %9.2f %8.2f %8.2f "
        "%7.1e\n",
        r.type.c_str(), r.m, static_cast<long long>(r.batch), r.variant.c_str(),
        r.batch / r.seconds / 1e6, fma / r.seconds / 1e9,
        bytes / r.seconds / 1e9, floor * 1e6, r.seconds / floor, r.spread,
        r.max_rel_error);
    absl::StrAppend(&js, "  {\"type\": \"", r.type, "\", \"m\": ", r.m,
                    ", \"batch\": ", r.batch, ", \"variant\": \"", r.variant,
                    "\", \"seconds\": ", r.seconds,
                    ", \"mpairs_per_s\": ", r.batch / r.seconds / 1e6,
                    ", \"max_rel_error\": ", r.max_rel_error, "},\n");
  }
  if (js.size() > 2) js.erase(js.size() - 2, 1);
  js += "]\n";
  if (!json.empty()) std::ofstream(json) << js;
  return 0;
}

}  // namespace
}  // namespace sampler::kernels::cuda

int main(int argc, char** argv) {
  return sampler::kernels::cuda::Main(argc, argv);
}
