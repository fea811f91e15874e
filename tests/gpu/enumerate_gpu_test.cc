// GPU enumeration (kernels/enumerate.cu) against its CPU twin EnumerateCpu
// and a long double reference, on fresh random segmented batches (the seed
// is printed with every failure): lengths 1 to 2048 (multiples of 32 and
// not), 1 to 8 terms (and long problems of up to 4000), offsets of both
// signs, linear and log input and output,
// float and double, every direct-kernel configuration, the FFT path.
// Outputs are poisoned before each launch (NaN bytes, plus guard elements
// past the batch's end), so unwritten or stray elements show up; runs are
// repeated to check that the bits do not change.
//
// Tolerances (per element, relative, where the reference is not zero;
// exactly zero or -inf where it is):
//   linear path: float 1e-6, double 1e-12 (enumerate.cu proves 9.5e-7 for
//     float; double stays near 1e-14 for these sizes);
//   log path: the CPU test's bound for its double internals, with the GPU's
//     plain (uncompensated) sum of up to J exps per output added: 8 * terms *
//     (L + 4 + J) * 2^-53, L the sum of the terms' log magnitudes, plus the
//     rounding to T of the result;
//   FFT path: absolute, 1e-13 of the result's total plus the rounding to T.
// The log path's extended-range tree is also held to its own, much tighter
// bound against the CPU and against exact tails (ExtendedTreeMatchesCpu-
// AndExactTails, up to 10^4 terms).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/enumerate_small.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/status_macros.h"
#include "tests/gpu/gpu_test_util.h"

namespace sampler::kernels::cuda {
namespace {

using LD = long double;
constexpr LD kLdInf = std::numeric_limits<LD>::infinity();
constexpr int kGuard = 64;  // poisoned elements past the batch's output

template <typename T>
struct TermData {
  int64_t offset = 0;
  std::vector<T> values;
};

template <typename T>
struct Problem {
  std::vector<TermData<T>> terms;
  ProbSpace in = ProbSpace::kLinear;
  ProbSpace out = ProbSpace::kLinear;
};

template <typename T>
std::vector<PmfTerm<T>> Terms(const Problem<T>& p) {
  std::vector<PmfTerm<T>> terms;
  for (const TermData<T>& d : p.terms) terms.push_back({d.offset, d.values});
  return terms;
}

template <typename T>
std::string Describe(const Problem<T>& p) {
  std::string s =
      absl::StrCat("in ", p.in == ProbSpace::kLog ? "log" : "lin", " out ",
                   p.out == ProbSpace::kLog ? "log" : "lin", " lengths");
  for (const TermData<T>& t : p.terms)
    absl::StrAppend(&s, " ", t.values.size());
  return s;
}

template <typename T>
int64_t PairCount(const Problem<T>& p) {
  const std::vector<PmfTerm<T>> terms = Terms(p);
  return EnumeratePairCount<T>(terms);
}

// ------------------------------------------------------ references ----

struct RefPmf {
  int64_t offset = 0;
  std::vector<LD> values;  // linear probabilities
};

template <typename T>
std::vector<LD> LdProbs(const TermData<T>& t, ProbSpace in) {
  std::vector<LD> v;
  for (T x : t.values) {
    v.push_back(in == ProbSpace::kLog ? std::exp(static_cast<LD>(x))
                                      : static_cast<LD>(x));
  }
  return v;
}

// r[i + j] += a[i] * b[j], folded left to right, in long double.
template <typename T>
RefPmf ReferenceLinear(const Problem<T>& p) {
  RefPmf r{p.terms[0].offset, LdProbs(p.terms[0], p.in)};
  for (size_t t = 1; t < p.terms.size(); ++t) {
    const std::vector<LD> b = LdProbs(p.terms[t], p.in);
    std::vector<LD> next(r.values.size() + b.size() - 1, 0.0L);
    for (size_t i = 0; i < r.values.size(); ++i) {
      const LD a = r.values[i];
      if (a == 0) continue;
      for (size_t j = 0; j < b.size(); ++j) next[i + j] += a * b[j];
    }
    r.values = std::move(next);
    r.offset += p.terms[t].offset;
  }
  return r;
}

// Log-space reference (values are log-probabilities, result too).
template <typename T>
RefPmf ReferenceLog(const Problem<T>& p) {
  auto to_ld = [](const std::vector<T>& v) {
    return std::vector<LD>(v.begin(), v.end());
  };
  RefPmf r{p.terms[0].offset, to_ld(p.terms[0].values)};
  for (size_t t = 1; t < p.terms.size(); ++t) {
    const std::vector<LD> b = to_ld(p.terms[t].values);
    const size_t m = r.values.size(), n = b.size();
    std::vector<LD> next(m + n - 1);
    for (size_t k = 0; k < m + n - 1; ++k) {
      LD max = -kLdInf;
      for (size_t i = 0; i < m; ++i) {
        if (k >= i && k - i < n) max = std::max(max, r.values[i] + b[k - i]);
      }
      if (max == -kLdInf) {
        next[k] = -kLdInf;
        continue;
      }
      LD sum = 0;
      for (size_t i = 0; i < m; ++i) {
        if (k >= i && k - i < n) sum += std::exp(r.values[i] + b[k - i] - max);
      }
      next[k] = max + std::log(sum);
    }
    r.values = std::move(next);
    r.offset += p.terms[t].offset;
  }
  return r;
}

template <typename T>
constexpr double Eps() {
  return std::numeric_limits<T>::epsilon();
}

template <typename T>
constexpr double LinearTolerance() {
  return sizeof(T) == sizeof(float) ? 1e-6 : 1e-12;
}

// Sum of the terms' largest |log value| plus log of their lengths.
template <typename T>
double LogMagnitudeBound(const Problem<T>& p) {
  double s = 0;
  for (const TermData<T>& t : p.terms) {
    double m = 0;
    for (T x : t.values) {
      const double l = p.in == ProbSpace::kLog
                           ? static_cast<double>(x)
                           : std::log(static_cast<double>(x));
      if (std::isfinite(l)) m = std::max(m, std::abs(l));
    }
    s += m + std::log(static_cast<double>(t.values.size()));
  }
  return s;
}

template <typename T>
bool LogPath(const Problem<T>& p) {
  return p.in == ProbSpace::kLog || p.out == ProbSpace::kLog;
}

// The tolerance of element k of the direct path (relative, in probability).
template <typename T>
double DirectTolerance(const Problem<T>& p, LD ref) {
  if (!LogPath(p)) return LinearTolerance<T>();
  size_t longest = 0;
  for (const TermData<T>& t : p.terms) {
    longest = std::max(longest, t.values.size());
  }
  const double internal =
      8.0 * p.terms.size() * (LogMagnitudeBound(p) + 4 + longest) * 0x1p-53;
  const double rounding =
      p.out == ProbSpace::kLog
          ? Eps<T>() * (1 + std::abs(std::log(static_cast<double>(ref))))
          : Eps<T>();
  return internal + rounding;
}

// Compares a result (converted to linear long double) with the reference:
// exact zeros where the reference is zero, otherwise |g - r| <= tol(k, r).
// Returns the worst ratio error / tolerance.
template <typename T, typename Tol>
double CheckClose(absl::Span<const T> got, ProbSpace out, const RefPmf& ref,
                  Tol tol, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.size(), ref.values.size());
  if (got.size() != ref.values.size()) return 1e300;
  double worst = 0;
  size_t worst_k = 0;
  int zero_mismatches = 0;
  for (size_t k = 0; k < ref.values.size(); ++k) {
    const LD g = out == ProbSpace::kLog ? std::exp(static_cast<LD>(got[k]))
                                        : static_cast<LD>(got[k]);
    const LD r = ref.values[k];
    if (r == 0) {
      const bool exact = out == ProbSpace::kLog
                             ? got[k] == -std::numeric_limits<T>::infinity()
                             : got[k] == T{0} && !std::signbit(got[k]);
      if (!exact) ++zero_mismatches;
      continue;
    }
    const double ratio = static_cast<double>(std::abs(g - r)) / tol(k, r);
    if (!(ratio <= worst)) {  // NaN counts as worst
      worst = ratio;
      worst_k = k;
    }
  }
  EXPECT_EQ(zero_mismatches, 0) << "not exactly zero where the reference is";
  EXPECT_LE(worst, 1.0) << "element " << worst_k << " of " << got.size()
                        << ": got " << got[worst_k] << ", reference "
                        << static_cast<double>(ref.values[worst_k])
                        << ", tolerance " << tol(worst_k, ref.values[worst_k]);
  return worst;
}

// ------------------------------------------------------- running ----

template <typename T>
struct GpuResult {
  std::vector<std::vector<T>> values;  // per problem
  std::vector<int64_t> offsets;
  std::vector<uint32_t> status;
  std::vector<T> raw;  // the whole output with guards, as copied back
  std::string launches;
};

// Builds, uploads, launches and copies back one batch; checks that every
// output element was written and the guards were not.
template <typename T>
absl::StatusOr<GpuResult<T>> RunOnGpu(const std::vector<Problem<T>>& batch,
                                      const EnumerateOptions& options,
                                      EnumerateFftPlans* fft = nullptr,
                                      int repeats = 1) {
  EnumerateBatchBuilder<T> b(options);
  for (const Problem<T>& p : batch) {
    const std::vector<PmfTerm<T>> terms = Terms(p);
    absl::StatusOr<int> added = b.Add(terms, p.in, p.out);
    if (!added.ok()) return added.status();
  }
  if (absl::Status s = b.Finish(); !s.ok()) return s;
  SAMPLER_ASSIGN_OR_RETURN(const std::unique_ptr<Stager> stager,
                           Stager::Create());
  // The builder's out layout with kGuard elements past the outputs (before
  // the status words), uploaded once and launched `repeats` times.
  const size_t out_count = static_cast<size_t>(b.total_out()) + kGuard;
  const ValuesAndStatusWords<T> layout{static_cast<int64_t>(out_count),
                                       batch.size()};
  const StagingPlan plan{b.ArenaBytes(), layout.bytes(), b.ScratchBytes()};
  SAMPLER_ASSIGN_OR_RETURN(
      const StagedBatch staged,
      stager->Upload(plan, [&](char* in) { b.PackInto(in); }));
  const DeviceRegions& device = staged.regions;
  const EnumerateBatch<T> view =
      b.View(device.in, layout.Values(device.out),
             layout.StatusWords(device.out), device.scratch, b.ScratchBytes());
  const cudaStream_t stream = stager->stream.get();
  if (fft != nullptr) {
    if (absl::Status s = fft->Prepare(view); !s.ok()) return s;
  }
  GpuResult<T> r;
  r.launches = b.DescribeLaunches();
  for (int rep = 0; rep < repeats; ++rep) {
    // Poison: NaN bytes everywhere (outputs, guards, status words), also in
    // scratch.
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(device.out, 0xFF, plan.out_bytes, stream));
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(device.scratch, 0xFF, plan.scratch_bytes, stream));
    SAMPLER_RETURN_IF_ERROR(LaunchEnumerate(view, stream, fft));
    std::vector<T> raw(out_count);
    r.status.assign(batch.size(), 0);
    SAMPLER_RETURN_IF_ERROR(stager->Download(staged, [&](const char* out) {
      std::memcpy(raw.data(), layout.Values(out), out_count * sizeof(T));
      std::memcpy(r.status.data(), layout.StatusWords(out),
                  batch.size() * sizeof(uint32_t));
    }));
    if (rep > 0 &&
        std::memcmp(raw.data(), r.raw.data(), out_count * sizeof(T)) != 0) {
      return absl::InternalError(
          absl::StrCat("run ", rep, " gave different bits from run 0"));
    }
    r.raw = std::move(raw);
  }
  // Guards untouched (still the poison's bytes).
  for (int g = 0; g < kGuard; ++g) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &r.raw[b.total_out() + g], sizeof(T));
    for (unsigned char c : bytes) {
      if (c != 0xFF) return absl::InternalError("a guard element was written");
    }
  }
  for (size_t p = 0; p < batch.size(); ++p) {
    const EnumerateProblem& prob = b.problems()[p];
    r.values.emplace_back(r.raw.begin() + prob.out_begin,
                          r.raw.begin() + prob.out_begin + prob.out_length);
    r.offsets.push_back(prob.support_offset);
  }
  return r;
}

// The small-problems path (enumerate_small.h) on one batch of linear
// problems that all fit it, run `repeats` times (same bits each time), with
// poisoned outputs and guards as RunOnGpu.
template <typename T>
absl::StatusOr<GpuResult<T>> RunSmallOnGpu(const std::vector<Problem<T>>& batch,
                                           int repeats = 1) {
  std::vector<std::vector<absl::Span<const T>>> spans(batch.size());
  std::vector<std::vector<int64_t>> offsets(batch.size());
  EnumerateSmallBatch<T> small;
  small.Reset(ProbSpace::kLinear, ProbSpace::kLinear);
  for (size_t p = 0; p < batch.size(); ++p) {
    for (const TermData<T>& t : batch[p].terms) {
      spans[p].push_back(t.values);
      offsets[p].push_back(t.offset);
    }
    if (!small.Add(spans[p], offsets[p])) {
      return absl::InvalidArgumentError(
          absl::StrCat("problem ", p, " does not fit the small path"));
    }
  }
  SAMPLER_ASSIGN_OR_RETURN(const std::unique_ptr<Stager> stager,
                           Stager::Create());
  const int64_t total = small.OutLayout().values;
  const ValuesAndStatusWords<T> layout{total + kGuard, batch.size()};
  SAMPLER_ASSIGN_OR_RETURN(
      const StagedBatch staged,
      stager->Upload({small.ArenaBytes(), layout.bytes(), 0},
                     [&](char* in) { small.PackInto(in); }));
  // The small batch's view, its outputs moved to the guarded layout.
  EnumerateSmallDeviceBatch<T> view = small.View(staged.regions);
  view.out = layout.Values(staged.regions.out);
  view.status = layout.StatusWords(staged.regions.out);
  GpuResult<T> r;
  for (int rep = 0; rep < repeats; ++rep) {
    SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
        staged.regions.out, 0xFF, layout.bytes(), stager->stream.get()));
    SAMPLER_RETURN_IF_ERROR(LaunchEnumerateSmall(view, stager->stream.get()));
    std::vector<T> raw(static_cast<size_t>(layout.values));
    r.status.assign(batch.size(), 0);
    SAMPLER_RETURN_IF_ERROR(stager->Download(staged, [&](const char* out) {
      std::memcpy(raw.data(), layout.Values(out), raw.size() * sizeof(T));
      std::memcpy(r.status.data(), layout.StatusWords(out),
                  batch.size() * sizeof(uint32_t));
    }));
    if (rep > 0 &&
        std::memcmp(raw.data(), r.raw.data(), raw.size() * sizeof(T)) != 0) {
      return absl::InternalError(
          absl::StrCat("small path: run ", rep, " gave other bits"));
    }
    r.raw = std::move(raw);
  }
  for (int64_t g = total; g < layout.values; ++g) {
    if (!std::isnan(r.raw[g])) {
      return absl::InternalError("small path: a guard element was written");
    }
  }
  for (size_t p = 0; p < batch.size(); ++p) {
    const int64_t begin = small.out_begin(static_cast<int32_t>(p));
    const int64_t end = p + 1 < batch.size()
                            ? small.out_begin(static_cast<int32_t>(p + 1))
                            : total;
    r.values.emplace_back(r.raw.begin() + begin, r.raw.begin() + end);
    r.offsets.push_back(small.support_offset(static_cast<int32_t>(p)));
  }
  return r;
}

// ------------------------------------------------------- inputs ----

double Uniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1p-53;
}
int64_t UniformInt(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

// Probabilities in [0.05, 1), normalised or times `scale`: bounded away from
// zero so that no result comes near float's subnormals.
template <typename T>
TermData<T> RandomTerm(std::mt19937_64& rng, int len, bool normalise,
                       double scale, ProbSpace in) {
  TermData<T> t;
  t.offset = UniformInt(rng, -100000, 100000);
  std::vector<double> v(len);
  double total = 0;
  for (double& x : v) {
    x = 0.05 + 0.95 * Uniform(rng);
    total += x;
  }
  for (double x : v) {
    const T p = static_cast<T>(normalise ? x / total : x * scale);
    t.values.push_back(in == ProbSpace::kLog ? std::log(p) : p);
  }
  return t;
}

// Interesting lengths: around multiples of 32 and of the tiles.
constexpr int kLengths[] = {
    1,   2,   3,   5,   31,  32,  33,  63,  64,  65,   96,   97,   100,  127,
    240, 255, 256, 257, 480, 511, 512, 513, 999, 1023, 1024, 1025, 2047, 2048};

int RandomLength(std::mt19937_64& rng) {
  if (rng() % 3 == 0) return static_cast<int>(UniformInt(rng, 1, 2048));
  return kLengths[rng() % (sizeof(kLengths) / sizeof(kLengths[0]))];
}

// A random problem of 1 to max_terms terms within `budget` pairs (the CPU
// references are what costs).
template <typename T>
Problem<T> RandomProblem(std::mt19937_64& rng, int max_terms, int64_t budget,
                         ProbSpace in, ProbSpace out) {
  Problem<T> p;
  p.in = in;
  p.out = out;
  const int nterms = static_cast<int>(UniformInt(rng, 1, max_terms));
  const bool normalise = rng() % 2 == 0;
  for (int t = 0; t < nterms; ++t) {
    int len = RandomLength(rng);
    p.terms.push_back(
        RandomTerm<T>(rng, len, normalise, 0.5 + 1.5 * Uniform(rng), in));
    while (p.terms.size() > 1 && PairCount(p) > budget && len > 1) {
      len = std::max(1, len / 2);
      p.terms.back() =
          RandomTerm<T>(rng, len, normalise, 0.5 + 1.5 * Uniform(rng), in);
    }
  }
  return p;
}

// A Bernoulli term: (1 - q, q), as linear or log values.
template <typename T>
TermData<T> BernoulliTerm(double q, ProbSpace in) {
  TermData<T> term;
  term.values = in == ProbSpace::kLog
                    ? std::vector<T>{static_cast<T>(std::log1p(-q)),
                                     static_cast<T>(std::log(q))}
                    : std::vector<T>{static_cast<T>(1 - q), static_cast<T>(q)};
  return term;
}

// A long problem's name in failures.
template <typename T>
std::string LongName(const Problem<T>& prob, size_t p,
                     const std::string& trace) {
  return absl::StrCat("problem ", p, " (", prob.terms.size(), " terms, in ",
                      prob.in == ProbSpace::kLog ? "log" : "lin", " out ",
                      prob.out == ProbSpace::kLog ? "log" : "lin", ") ", trace);
}

// log P(S = 0) (side 0) or log P(S = n) (side 1) of a Poisson binomial of
// Bernoulli terms: the sum of the terms' logs at that side, compensated
// (Neumaier) in long double.
template <typename T>
double ExactEndLog(const Problem<T>& prob, int side) {
  LD sum = 0, compensation = 0;
  for (const TermData<T>& t : prob.terms) {
    const LD v = prob.in == ProbSpace::kLog
                     ? static_cast<LD>(t.values[side])
                     : std::log(static_cast<LD>(t.values[side]));
    const LD s = sum + v;
    compensation +=
        std::abs(sum) >= std::abs(v) ? (sum - s) + v : (v - s) + sum;
    sum = s;
  }
  return static_cast<double>(sum + compensation);
}

// Levels of the pairwise tree of n terms.
int TreeLevels(size_t n) {
  int levels = 0;
  while ((size_t{1} << levels) < n) ++levels;
  return levels;
}

// --------------------------------------------------------- tests ----

template <typename T>
class EnumerateGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }
  std::string Trace() const {
    return absl::StrCat("test seed ", seed_,
                        " (std::random_device; rerun with it to reproduce)");
  }

  // Checks every problem of a batch against the long double reference (with
  // the direct path's tolerances) and against EnumerateCpu (within the sum
  // of both sides' tolerances); returns the worst ratio to the tolerance.
  double CheckBatch(const std::vector<Problem<T>>& batch,
                    const GpuResult<T>& got, const std::string& what) {
    double worst = 0;
    for (size_t p = 0; p < batch.size(); ++p) {
      const Problem<T>& prob = batch[p];
      const std::string name = absl::StrCat(what, " problem ", p, " (",
                                            Describe(prob), ") ", Trace());
      EXPECT_EQ(got.status[p], 0u) << name;
      const RefPmf ref = ReferenceLinear(prob);
      EXPECT_EQ(got.offsets[p], ref.offset) << name;
      worst = std::max(worst, CheckClose<T>(
                                  got.values[p], prob.out, ref,
                                  [&](size_t, LD r) {
                                    return DirectTolerance(prob, r) *
                                           static_cast<double>(r);
                                  },
                                  name + " vs long double"));
      const std::vector<PmfTerm<T>> terms = Terms(prob);
      absl::StatusOr<Pmf<T>> cpu = EnumerateCpu<T>(terms, prob.in, prob.out);
      EXPECT_TRUE(cpu.ok()) << cpu.status();
      if (!cpu.ok()) continue;
      EXPECT_EQ(cpu->offset, got.offsets[p]) << name;
      RefPmf cpu_ref{cpu->offset, {}};
      for (T v : cpu->values) {
        cpu_ref.values.push_back(prob.out == ProbSpace::kLog
                                     ? std::exp(static_cast<LD>(v))
                                     : static_cast<LD>(v));
      }
      CheckClose<T>(
          got.values[p], prob.out, cpu_ref,
          [&](size_t, LD r) {
            return 2 * DirectTolerance(prob, r) * static_cast<double>(r);
          },
          name + " vs EnumerateCpu");
    }
    return worst;
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(EnumerateGpuTest, Types);

// Linear in and out, the automatic kernel choice: segmented batches mixing
// 1 to 8 terms and lengths 1 to 2048.
TYPED_TEST(EnumerateGpuTest, LinearMixedBatchesMatchReference) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  double worst = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<Problem<T>> batch;
    int64_t pairs = 0;
    while (pairs < 12'000'000) {
      batch.push_back(RandomProblem<T>(this->rng_, 8, 3'000'000,
                                       ProbSpace::kLinear, ProbSpace::kLinear));
      pairs += PairCount(batch.back()) + 1;
    }
    absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, {}, nullptr, 2);
    ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
    worst = std::max(
        worst, this->CheckBatch(batch, *got, absl::StrCat("round ", round)));
  }
  std::cout << "worst error / tolerance (linear, auto): " << worst << "\n";
}

// A small batch of everything (all configurations, both spaces, one to
// four terms): quick enough for compute-sanitizer's memcheck and racecheck.
TYPED_TEST(EnumerateGpuTest, SanitizerSmoke) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const ProbSpace kSpaces[] = {ProbSpace::kLinear, ProbSpace::kLog};
  std::vector<Problem<T>> batch;
  for (int i = 0; i < 10; ++i) {
    Problem<T> p;
    p.in = kSpaces[this->rng_() % 2];
    p.out = kSpaces[this->rng_() % 2];
    // The last three: trees of 5 to 11 short terms (levels that pass a
    // node up, the third scratch buffer) under the sanitizers too.
    const bool tree = i >= 7;
    const int nterms =
        static_cast<int>(UniformInt(this->rng_, tree ? 5 : 1, tree ? 11 : 4));
    for (int t = 0; t < nterms; ++t) {
      p.terms.push_back(RandomTerm<T>(
          this->rng_,
          static_cast<int>(UniformInt(this->rng_, 1, tree ? 40 : 300)), true, 1,
          p.in));
    }
    batch.push_back(std::move(p));
  }
  const int configs = static_cast<int>(EnumerateDirectConfigs().size());
  for (int c = -1; c < configs; ++c) {
    EnumerateOptions options;
    if (c >= 0) {
      options.method = EnumerateMethod::kDirect;
      options.direct_config = c;
    }
    absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, options);
    ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
    this->CheckBatch(batch, *got, absl::StrCat("smoke config ", c));
  }
}

// Every direct configuration, forced, on a mixed batch (small problems,
// tiles of every size, partial tiles, several chunks per tile).
TYPED_TEST(EnumerateGpuTest, EveryDirectConfigMatchesReference) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const auto configs = EnumerateDirectConfigs();
  for (size_t c = 0; c < configs.size(); ++c) {
    std::vector<Problem<T>> batch;
    int64_t pairs = 0;
    while (pairs < 3'000'000) {
      batch.push_back(RandomProblem<T>(this->rng_, 4, 1'500'000,
                                       ProbSpace::kLinear, ProbSpace::kLinear));
      pairs += PairCount(batch.back()) + 1;
    }
    // Always some long ones: several chunks per tile.
    Problem<T> longp;
    longp.terms = {
        RandomTerm<T>(this->rng_, 2048, true, 1, ProbSpace::kLinear),
        RandomTerm<T>(this->rng_, 1500, true, 1, ProbSpace::kLinear)};
    batch.push_back(longp);
    EnumerateOptions options;
    options.method = EnumerateMethod::kDirect;
    options.direct_config = static_cast<int>(c);
    absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, options, nullptr, 2);
    ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
    const double worst =
        this->CheckBatch(batch, *got, absl::StrCat("config ", configs[c].name));
    std::cout << "config " << configs[c].name << ": worst error / tolerance "
              << worst << "\n";
  }
}

// Log input, output or both, mixed with linear problems in one batch.
TYPED_TEST(EnumerateGpuTest, LogSpaceMixedBatchesMatchReference) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const ProbSpace kSpaces[] = {ProbSpace::kLinear, ProbSpace::kLog};
  std::vector<Problem<T>> batch;
  int64_t pairs = 0;
  while (pairs < 4'000'000) {
    const ProbSpace in = kSpaces[this->rng_() % 2];
    const ProbSpace out = kSpaces[this->rng_() % 2];
    batch.push_back(RandomProblem<T>(this->rng_, 8, 600'000, in, out));
    pairs += PairCount(batch.back()) + 1;
  }
  absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, {}, nullptr, 2);
  ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
  const double worst = this->CheckBatch(batch, *got, "log mix");
  std::cout << "worst error / tolerance (log mix): " << worst << "\n";
}

// Log-probabilities around -200 with interior -inf: the result (near
// exp(-1600)) underflows every linear type; the log result matches a long
// double log-space reference.
TYPED_TEST(EnumerateGpuTest, LogSpaceWhereLinearUnderflows) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  std::vector<Problem<T>> batch;
  for (int rep = 0; rep < 6; ++rep) {
    Problem<T> p;
    p.in = ProbSpace::kLog;
    p.out = ProbSpace::kLog;
    for (int len : {33, 1, 2, 31, 32, 100, 7, 64}) {
      TermData<T> t;
      t.offset = UniformInt(this->rng_, -50, 50);
      for (int i = 0; i < len; ++i) {
        const bool zero = len > 2 && i % 5 == 3 && i != len - 1;
        t.values.push_back(
            zero ? -std::numeric_limits<T>::infinity()
                 : static_cast<T>(-200 + 10 * Uniform(this->rng_) - 5));
      }
      p.terms.push_back(std::move(t));
    }
    batch.push_back(std::move(p));
  }
  absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, {}, nullptr, 2);
  ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
  for (size_t p = 0; p < batch.size(); ++p) {
    const RefPmf ref = ReferenceLog(batch[p]);
    ASSERT_EQ(got->values[p].size(), ref.values.size());
    const double bound = LogMagnitudeBound(batch[p]);
    for (size_t k = 0; k < ref.values.size(); ++k) {
      const LD r = ref.values[k];
      ASSERT_TRUE(std::isfinite(static_cast<double>(r)));
      const double tol = 8.0 * 8 * (bound + 4 + 100) * 0x1p-53 +
                         Eps<T>() * (1 + std::abs(static_cast<double>(r)));
      EXPECT_NEAR(static_cast<double>(got->values[p][k]),
                  static_cast<double>(r), tol)
          << "problem " << p << " element " << k << " " << this->Trace();
    }
  }
}

// Long problems: the tree of up to 4000 terms, every level of every problem
// in one launch per configuration. Poisson-binomials of 100 to 4000 terms
// (tails near 1e-2900) and random problems of up to 400 terms, every space
// combination, against EnumerateCpu (the same tree in extended range, far
// more accurate than these bounds). Linear path: 1e-6 / 1e-12 relative where
// the value is well inside T's range (double partial sums underflow in the
// tails: elsewhere an absolute 1e-300 / 1e-37); log path: 8 * levels * (L +
// 4 + J) * 2^-53 in the log value (relative in probability), L the terms'
// log magnitudes summed, J the result's length, plus the rounding to T.
TYPED_TEST(EnumerateGpuTest, LongProblemsMatchCpuTree) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const ProbSpace kSpaces[] = {ProbSpace::kLinear, ProbSpace::kLog};
  std::vector<Problem<T>> batch;
  for (const int n : {100, 1000, 4000}) {
    for (const ProbSpace in : kSpaces) {
      for (const ProbSpace out : kSpaces) {
        Problem<T> p;
        p.in = in;
        p.out = out;
        for (int t = 0; t < n; ++t) {
          const double q =
              (static_cast<double>(this->rng_() >> 11) + 0.5) * 0x1p-53;
          p.terms.push_back(BernoulliTerm<T>(q, in));
        }
        batch.push_back(std::move(p));
      }
    }
  }
  for (int r = 0; r < 8; ++r) {
    Problem<T> p;
    p.in = kSpaces[r % 2];
    p.out = kSpaces[(r / 2) % 2];
    const int n = static_cast<int>(UniformInt(this->rng_, 50, 400));
    for (int t = 0; t < n; ++t) {
      p.terms.push_back(RandomTerm<T>(
          this->rng_, static_cast<int>(UniformInt(this->rng_, 1, 8)), true, 1,
          p.in));
    }
    batch.push_back(std::move(p));
  }
  absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, {}, nullptr, 2);
  ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
  for (size_t p = 0; p < batch.size(); ++p) {
    const Problem<T>& prob = batch[p];
    const std::string name = LongName(prob, p, this->Trace());
    EXPECT_EQ(got->status[p], 0u) << name;
    absl::StatusOr<Pmf<T>> cpu =
        EnumerateCpu<T>(Terms(prob), prob.in, prob.out);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    ASSERT_EQ(got->values[p].size(), cpu->values.size()) << name;
    const int levels = TreeLevels(prob.terms.size());
    // Pairs per output: at most the result's length.
    size_t pairs = 1;
    for (const TermData<T>& t : prob.terms) pairs += t.values.size() - 1;
    const double log_tol =
        8.0 * levels * (LogMagnitudeBound(prob) + 4 + pairs) * 0x1p-53;
    const bool linear_path =
        prob.in == ProbSpace::kLinear && prob.out == ProbSpace::kLinear;
    const double tiny = std::is_same_v<T, float> ? 1e-30 : 1e-280;
    int failures = 0;
    for (size_t k = 0; k < cpu->values.size() && failures < 5; ++k) {
      const double g = static_cast<double>(got->values[p][k]);
      const double c = static_cast<double>(cpu->values[k]);
      const double tol =
          linear_path ? LinearTolerance<T>() : log_tol + Eps<T>();
      bool ok;
      if (prob.out == ProbSpace::kLog) {
        ok = std::abs(g - c) <= log_tol + Eps<T>() * (1 + std::abs(c));
      } else if (c < tiny) {
        // Near the bottom of T's range: an absolute bound where partial sums
        // may have underflowed, and the relative bound wherever they did not.
        ok = std::abs(g - c) <=
             std::max(std::is_same_v<T, float> ? 1e-37 : 1e-300, tol * c);
      } else {
        ok = std::abs(g - c) <= tol * c;
      }
      if (!ok) {
        ++failures;
        ADD_FAILURE() << name << " element " << k << ": gpu " << g << ", cpu "
                      << c << " (log tolerance " << log_tol << ")";
      }
    }
  }
}

// The log path's extended-range tree (ExtendedKernel) against the CPU's (the
// same scheme, enumerate_cpu_convolve.h) and against exact tails, at up to
// 10^4 terms: Poisson-binomials with probabilities down to 1e-300, so the
// tails reach e^-10^6 and beyond, linear and log input, log output (and
// one linear output). Each side's relative error in probability is at most
// levels * (its roundings per output and level) * 2^-53 (the GPU's:
// 32 + J / (32 G) + log2 G + 8, J <= the result's length; the CPU's:
// 136 + J / 4096; both with six for the fractional tilt), plus, for log input,
// 2 ulps of each term's conversion; so a log result is within that sum plus an
// ulp of |log p| of the CPU's value (the conversion to log, once, at the root),
// plus T's rounding. The two extreme points, P(S = 0) = prod (1 - q_i) and P(S
// = n) = prod q_i, are exact sums of the terms' logs (compensated, in long
// double).
TYPED_TEST(EnumerateGpuTest, ExtendedTreeMatchesCpuAndExactTails) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  std::vector<Problem<T>> batch;
  for (const int n : {2, 3, 1000, 4000, 10000}) {
    for (const ProbSpace in : {ProbSpace::kLinear, ProbSpace::kLog}) {
      Problem<T> p;
      p.in = in;
      p.out = ProbSpace::kLog;
      for (int t = 0; t < n; ++t) {
        // log10 q uniform in [-300, 0) for a third of the terms (deep tails),
        // q uniform in (0, 1) for the rest.
        const double u =
            (static_cast<double>(this->rng_() >> 11) + 0.5) * 0x1p-53;
        const double q = t % 3 == 0 ? std::pow(10.0, -300 * u) : u;
        const double lo = std::is_same_v<T, float> ? 1e-37 : 1e-300;
        p.terms.push_back(BernoulliTerm<T>(std::max(q, lo), in));
      }
      batch.push_back(std::move(p));
    }
  }
  {
    Problem<T> p = batch[batch.size() - 2];  // 10^4 terms, linear in
    p.out = ProbSpace::kLinear;
    batch.push_back(std::move(p));
  }
  absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, {}, nullptr, 2);
  ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
  double worst = 0;
  for (size_t p = 0; p < batch.size(); ++p) {
    const Problem<T>& prob = batch[p];
    absl::StatusOr<Pmf<T>> cpu =
        EnumerateCpu<T>(Terms(prob), prob.in, prob.out);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    const size_t n = prob.terms.size();
    const int levels = TreeLevels(n);
    const std::string name = LongName(prob, p, this->Trace());
    EXPECT_EQ(got->status[p], 0u) << name;
    ASSERT_EQ(got->values[p].size(), cpu->values.size()) << name;
    const double J = static_cast<double>(n + 1);
    const double relative = (levels * ((32 + J / 32 + 10) + (136 + J / 4096)) +
                             (prob.in == ProbSpace::kLog ? 4.0 * n : 0.0)) *
                            0x1p-53;
    auto ulp = [](double x) {
      x = std::abs(x);
      return std::nextafter(x, std::numeric_limits<double>::infinity()) - x;
    };
    // Against the CPU at every point.
    int failures = 0;
    for (size_t k = 0; k < cpu->values.size() && failures < 5; ++k) {
      const double g = static_cast<double>(got->values[p][k]);
      const double c = static_cast<double>(cpu->values[k]);
      double tol, err;
      if (prob.out == ProbSpace::kLog) {
        tol = relative + 2 * ulp(c) + Eps<T>() * (1 + std::abs(c));
        err = std::abs(g - c);
      } else {
        // Linear output: relative where T represents the value.
        if (c < (std::is_same_v<T, float> ? 1e-30 : 1e-290)) continue;
        tol = (relative + Eps<T>()) * c;
        err = std::abs(g - c);
      }
      worst = std::max(worst, err / tol);
      if (!(err <= tol)) {
        ++failures;
        ADD_FAILURE() << name << " element " << k << ": gpu " << g << ", cpu "
                      << c << " (tolerance " << tol << ")";
      }
    }
    if (prob.out != ProbSpace::kLog) continue;
    // The exact extreme points.
    for (const int side : {0, 1}) {
      const double exact = ExactEndLog(prob, side);
      const double g = static_cast<double>(
          got->values[p][side == 0 ? 0 : got->values[p].size() - 1]);
      const double tol = relative + 136.0 * levels * 0x1p-53 + ulp(exact) +
                         Eps<T>() * (1 + std::abs(exact));
      EXPECT_LE(std::abs(g - exact), tol)
          << name << (side == 0 ? " P(S = 0)" : " P(S = n)") << ": gpu " << g
          << ", exact " << exact;
    }
  }
  std::cout << "worst error / tolerance (extended tree vs CPU): " << worst
            << "\n";
}

// Where a whole-bit tilt leaves the tiles' outputs far below their scale
// (enumerate_tilt.h), no output of the extended kernel falls back to its
// per-output recomputation (EnumerateExtendedFallbacks stays 0, counted
// problem by problem): two geometric terms of 3000 values with log2 slope
// -1/2 (a whole-bit tilt leaves gaps of up to half a window, 1,500 bits; the
// exact result is count_k 2^(-k / 2)), and a Poisson binomial of 10^5 terms
// with q uniform in (0, 1) (gaps of up to V ln 2 / 8 = 1,440 bits at its top
// levels with a whole-bit tilt: the CPU's scheme with the GPU's 40-output
// tiles has 9,707 fallbacks there with it, none with the fraction), whose
// end points are exact sums of logs. (Terms with q down to 1e-300, as in
// ExtendedTreeMatchesCpuAndExactTails, still fall back in the middle
// levels, legitimately: there a node's log-PMF bends by more than the 900
// bits a tile resolves within one tile, which no linear tilt can follow.)
TYPED_TEST(EnumerateGpuTest, ExtendedTreeNeedsNoFallback) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  constexpr int kGeometric = 3000;
  constexpr int kBernoulli = 100000;
  std::vector<Problem<T>> batch(2);
  batch[0].in = ProbSpace::kLog;
  batch[0].out = ProbSpace::kLog;
  for (int t = 0; t < 2; ++t) {
    TermData<T> term;
    for (int j = 0; j < kGeometric; ++j) {
      term.values.push_back(static_cast<T>(-0.5 * j * std::log(2.0)));
    }
    batch[0].terms.push_back(std::move(term));
  }
  batch[1].out = ProbSpace::kLog;
  for (int t = 0; t < kBernoulli; ++t) {
    const double q = (static_cast<double>(this->rng_() >> 11) + 0.5) * 0x1p-53;
    batch[1].terms.push_back(BernoulliTerm<T>(q, ProbSpace::kLinear));
  }
  GpuResult<T> got;
  for (size_t p = 0; p < batch.size(); ++p) {
    ASSERT_TRUE(ResetEnumerateExtendedFallbacks().ok());
    absl::StatusOr<GpuResult<T>> one =
        RunOnGpu(std::vector<Problem<T>>{batch[p]}, EnumerateOptions{});
    ASSERT_TRUE(one.ok()) << one.status() << " " << this->Trace();
    absl::StatusOr<uint64_t> fallbacks = EnumerateExtendedFallbacks();
    ASSERT_TRUE(fallbacks.ok()) << fallbacks.status();
    EXPECT_EQ(*fallbacks, 0u) << "problem " << p << ": " << one->launches;
    EXPECT_EQ(one->status[0], 0u) << "problem " << p;
    got.values.push_back(std::move(one->values[0]));
  }
  // The geometric pair against its exact values: the inputs' own rounding
  // to T (|log x_j| < 1040, so an ulp of it, twice) and the tree's few
  // roundings, as a log value's absolute error.
  const std::vector<T>& geometric = got.values[0];
  ASSERT_EQ(geometric.size(), static_cast<size_t>(2 * kGeometric - 1));
  int failures = 0;
  for (int k = 0; k < 2 * kGeometric - 1 && failures < 5; ++k) {
    const int count = k < kGeometric ? k + 1 : 2 * kGeometric - 1 - k;
    const double exact =
        std::log(static_cast<double>(count)) - 0.5 * k * std::log(2.0);
    const double tol = 4 * 1040.0 * Eps<T>() + 1e-12 * (1 + std::abs(exact));
    if (!(std::abs(static_cast<double>(geometric[k]) - exact) <= tol)) {
      ++failures;
      ADD_FAILURE() << "geometric element " << k << ": gpu " << geometric[k]
                    << ", exact " << exact;
    }
  }
  // The Poisson binomial's end points: exact sums of the terms' logs.
  const Problem<T>& pb = batch[1];
  const int levels = TreeLevels(kBernoulli);
  for (const int side : {0, 1}) {
    const double exact = ExactEndLog(pb, side);
    const double g = static_cast<double>(
        got.values[1][side == 0 ? 0 : got.values[1].size() - 1]);
    const double tol = levels * (32 + 10 + 136) * 0x1p-53 +
                       2 * std::abs(exact) * 0x1p-52 +
                       Eps<T>() * (1 + std::abs(exact));
    EXPECT_LE(std::abs(g - exact), tol) << (side == 0 ? "P(S = 0)" : "P(S = n)")
                                        << ": gpu " << g << ", exact " << exact;
  }
}

// Zero probabilities give exactly zero (or -inf) where no pair has non-zero
// probability, in all four space combinations and across configurations.
TYPED_TEST(EnumerateGpuTest, ExactZeros) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const ProbSpace kSpaces[] = {ProbSpace::kLinear, ProbSpace::kLog};
  std::vector<Problem<T>> batch;
  for (ProbSpace in : kSpaces) {
    for (ProbSpace out : kSpaces) {
      for (int lens : {0, 1, 2}) {
        Problem<T> p;
        p.in = in;
        p.out = out;
        const std::vector<int> lengths =
            lens == 0   ? std::vector<int>{31, 64, 100, 7}
            : lens == 1 ? std::vector<int>{700, 1300}
                        : std::vector<int>{3, 2048, 5};
        for (int len : lengths) {
          TermData<T> t =
              RandomTerm<T>(this->rng_, len, true, 1, ProbSpace::kLinear);
          for (int i = 0; i < len; ++i) {
            if (i % 3 != 0) t.values[i] = 0;
            if (in == ProbSpace::kLog) t.values[i] = std::log(t.values[i]);
          }
          p.terms.push_back(std::move(t));
        }
        batch.push_back(std::move(p));
      }
      // A term with no mass at all.
      Problem<T> none;
      none.in = in;
      none.out = out;
      none.terms = {
          RandomTerm<T>(this->rng_, 33, true, 1, in),
          {7, std::vector<T>(3, in == ProbSpace::kLog
                                    ? -std::numeric_limits<T>::infinity()
                                    : T{0})}};
      batch.push_back(std::move(none));
    }
  }
  for (int c : {-1, 0, 2, 5, 9, 12, 14, 16}) {
    EnumerateOptions options;
    if (c >= 0) {
      options.method = EnumerateMethod::kDirect;
      options.direct_config = c;
    }
    absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, options);
    ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
    this->CheckBatch(batch, *got, absl::StrCat("zeros config ", c));
  }
}

// Hand-checked: offsets add, values exact in binary, one-term problems copy
// (and convert between spaces).
TYPED_TEST(EnumerateGpuTest, SmallExactCasesWithOffsets) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  std::vector<Problem<T>> batch(3);
  batch[0].terms = {{-3, {0.5, 0.5}}, {10, {0.25, 0.75}}, {-100, {1}}};
  batch[1].terms = {{42, {0.125, 0.0, 0.875}}};
  batch[2].terms = {{-7, {0.5, 0.25}}};
  batch[2].out = ProbSpace::kLog;
  absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, {});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->offsets[0], -93);
  EXPECT_EQ(got->values[0], (std::vector<T>{0.125, 0.5, 0.375}));
  EXPECT_EQ(got->offsets[1], 42);
  EXPECT_EQ(got->values[1], (std::vector<T>{0.125, 0.0, 0.875}));
  EXPECT_EQ(got->offsets[2], -7);
  // log on the GPU and on the host may differ in the last bit of double.
  ASSERT_EQ(got->values[2].size(), 2u);
  EXPECT_NEAR(got->values[2][0], std::log(0.5), 2 * Eps<T>());
  EXPECT_NEAR(got->values[2][1], std::log(0.25), 4 * Eps<T>());
}

// Identical input, identical bits: all spaces, multi-term, every launch
// kind, across separate builds and launches of the same batch.
TYPED_TEST(EnumerateGpuTest, DeterministicAcrossRuns) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const ProbSpace kSpaces[] = {ProbSpace::kLinear, ProbSpace::kLog};
  std::vector<Problem<T>> batch;
  for (int i = 0; i < 40; ++i) {
    batch.push_back(RandomProblem<T>(this->rng_, 6, 2'000'000,
                                     kSpaces[this->rng_() % 2],
                                     kSpaces[this->rng_() % 2]));
  }
  absl::StatusOr<GpuResult<T>> a = RunOnGpu(batch, {}, nullptr, 3);
  ASSERT_TRUE(a.ok()) << a.status() << " " << this->Trace();
  absl::StatusOr<GpuResult<T>> b = RunOnGpu(batch, {}, nullptr, 1);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->raw.size(), b->raw.size());
  EXPECT_EQ(
      std::memcmp(a->raw.data(), b->raw.data(), a->raw.size() * sizeof(T)), 0)
      << this->Trace();
  // A problem's bits do not depend on the rest of its batch.
  std::vector<Problem<T>> alone = {batch[7]};
  absl::StatusOr<GpuResult<T>> c = RunOnGpu(alone, {}, nullptr, 1);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->values[0].size(), a->values[7].size());
  EXPECT_EQ(std::memcmp(c->values[0].data(), a->values[7].data(),
                        c->values[0].size() * sizeof(T)),
            0)
      << this->Trace();
}

// Results that do not fit are flagged (the caller recomputes them on the
// CPU, whose answer is then EnumerateCpu's); the rest of the batch is fine.
TYPED_TEST(EnumerateGpuTest, NonFiniteResultsAreFlagged) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const T big = std::numeric_limits<T>::max() / 4;
  const T huge = std::numeric_limits<T>::max() * T{0.75};
  std::vector<Problem<T>> batch(4);
  batch[0].terms = {{0, {big, 1}}, {0, {big}}};  // overflows T
  batch[1].terms = {{0, {0.5, 0.5}}, {0, {0.25, 0.75}}};
  batch[2].terms = {{0, {huge}}, {0, {huge}}};  // log result overflows
  batch[2].in = ProbSpace::kLog;
  batch[2].out = ProbSpace::kLog;
  batch[3].terms = {{0, {big, 1}}, {0, {big}}};  // fine in log space
  batch[3].out = ProbSpace::kLog;
  absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, {});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status[0], kEnumerateStatusNonFinite);
  EXPECT_EQ(got->status[1], 0u);
  EXPECT_EQ(got->status[2], kEnumerateStatusNonFinite);
  EXPECT_EQ(got->status[3], 0u);
  EXPECT_NEAR(got->values[3][0], 2 * std::log(static_cast<double>(big)),
              1e-6 * got->values[3][0]);
  // The CPU backend's answer for the flagged ones is an error.
  for (int p : {0, 2}) {
    const std::vector<PmfTerm<T>> terms = Terms(batch[p]);
    EXPECT_FALSE(EnumerateCpu<T>(terms, batch[p].in, batch[p].out).ok());
  }
}

// The FFT path: linear problems, absolute error against the reference.
TYPED_TEST(EnumerateGpuTest, FftPathMatchesReferenceAbsolutely) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  absl::StatusOr<std::unique_ptr<EnumerateFftPlans>> plans =
      EnumerateFftPlans::Create();
  if (!plans.ok()) GTEST_SKIP() << plans.status();
  std::vector<Problem<T>> batch;
  for (int i = 0; i < 12; ++i) {
    Problem<T> p;
    const int nterms = static_cast<int>(UniformInt(this->rng_, 2, 3));
    for (int t = 0; t < nterms; ++t) {
      p.terms.push_back(RandomTerm<T>(this->rng_, RandomLength(this->rng_),
                                      true, 1, ProbSpace::kLinear));
    }
    batch.push_back(std::move(p));
  }
  // One log problem in the batch still goes to the direct kernel.
  batch.push_back(RandomProblem<T>(this->rng_, 3, 100'000, ProbSpace::kLog,
                                   ProbSpace::kLog));
  EnumerateOptions options;
  options.method = EnumerateMethod::kFft;
  absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, options, plans->get(), 2);
  ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
  double worst_abs = 0, worst_rel_large = 0;
  for (size_t p = 0; p + 1 < batch.size(); ++p) {
    const RefPmf ref = ReferenceLinear(batch[p]);
    LD total = 0, top = 0;
    for (LD v : ref.values) {
      total += v;
      top = std::max(top, v);
    }
    ASSERT_EQ(got->values[p].size(), ref.values.size());
    for (size_t k = 0; k < ref.values.size(); ++k) {
      const double err = static_cast<double>(
          std::abs(static_cast<LD>(got->values[p][k]) - ref.values[k]));
      const double tol = 1e-13 * static_cast<double>(total) +
                         Eps<T>() * static_cast<double>(ref.values[k]);
      EXPECT_LE(err, tol) << "problem " << p << " (" << Describe(batch[p])
                          << ") element " << k << " " << this->Trace();
      worst_abs = std::max(worst_abs, err / static_cast<double>(total));
      if (ref.values[k] >= 1e-3L * top) {
        worst_rel_large =
            std::max(worst_rel_large, err / static_cast<double>(ref.values[k]));
      }
    }
  }
  const size_t last = batch.size() - 1;
  GpuResult<T> log_part;
  log_part.values = {got->values[last]};
  log_part.offsets = {got->offsets[last]};
  log_part.status = {got->status[last]};
  this->CheckBatch({batch[last]}, log_part, "log problem beside FFT");
  std::cout << "FFT: worst |error| / total " << worst_abs
            << ", worst relative error of elements >= 1e-3 max "
            << worst_rel_large << "\n";
}

// The product of each term's least non-zero point (linear values).
template <typename T>
double LeastNonZeroProduct(const Problem<T>& p) {
  double product = 1;
  for (const TermData<T>& t : p.terms) {
    double least = 1e300;
    for (T x : t.values) {
      if (x > 0) least = std::min(least, static_cast<double>(x));
    }
    if (least < 1e300) product *= least;
  }
  return product;
}

// The small-problems path against the long double reference and EnumerateCpu
// (CheckBatch): random problems of 1 to kSmallMaxTerms terms of lengths
// 1..N within kSmallMaxValues values, normalised or scaled, some with zero
// points and terms of a single point; repeated runs give the same bits, and
// a problem alone the same bits as in its batch. (Log-space problems do not
// take this path: EnumerateSmallTest.RoutingBounds.)
TYPED_TEST(EnumerateGpuTest, SmallPathMatchesReferenceAndCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const double kFloor = sizeof(T) == sizeof(float) ? 1e-30 : 1e-290;
  std::vector<Problem<T>> batch;
  for (int i = 0; i < 3000; ++i) {
    Problem<T> p;
    const int nterms =
        i < 40 ? 1 + i % kSmallMaxTerms
               : static_cast<int>(UniformInt(this->rng_, 1, kSmallMaxTerms));
    int budget = kSmallMaxValues;
    const int max_len =
        static_cast<int>(UniformInt(this->rng_, 1, kSmallMaxValues / nterms));
    const bool normalise = this->rng_() % 2 == 0;
    for (int t = 0; t < nterms; ++t) {
      const int len =
          std::min<int>(static_cast<int>(UniformInt(this->rng_, 1, max_len)),
                        budget - (nterms - 1 - t));
      budget -= len;
      TermData<T> term =
          RandomTerm<T>(this->rng_, len, normalise,
                        0.5 + 1.5 * Uniform(this->rng_), ProbSpace::kLinear);
      if (i % 5 == 0) {  // zero-probability points
        for (int k = 0; k < len; ++k) {
          if (this->rng_() % 3 == 0) term.values[k] = 0;
        }
      }
      p.terms.push_back(std::move(term));
    }
    // Every non-zero result above T's normal range (the product of the
    // terms' least non-zero points bounds it), so that no element loses
    // its relative accuracy to underflow, on either side.
    while (p.terms.size() > 1 && LeastNonZeroProduct(p) < kFloor) {
      p.terms.pop_back();
    }
    batch.push_back(std::move(p));
  }
  // Edge cases: one point; a term with no mass; the bounds exactly.
  batch.push_back({{{5, {T{0.75}}}}});
  batch.push_back({{{0, {0.5, 0.5}}, {-2, {0, 0, 0}}, {1, {0.25, 0.75}}}});
  Problem<T> widest;
  for (int t = 0; t < kSmallMaxTerms; ++t) {  // points in [0.2, 0.3)
    TermData<T> term;
    for (int k = 0; k < kSmallMaxValues / kSmallMaxTerms; ++k) {
      term.values.push_back(static_cast<T>(0.2 + 0.1 * Uniform(this->rng_)));
    }
    widest.terms.push_back(std::move(term));
  }
  batch.push_back(widest);
  absl::StatusOr<GpuResult<T>> got = RunSmallOnGpu(batch, 3);
  ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
  const double worst = this->CheckBatch(batch, *got, "small path");
  std::cout << "small path: worst error / tolerance " << worst << "\n";
  for (size_t p : {size_t{0}, size_t{17}, batch.size() - 1}) {
    absl::StatusOr<GpuResult<T>> alone = RunSmallOnGpu<T>({batch[p]});
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(alone->values[0], got->values[p]) << "problem " << p;
  }
}

// The small path flags results that do not fit T, as the planned path.
TYPED_TEST(EnumerateGpuTest, SmallPathFlagsNonFinite) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const T big = std::numeric_limits<T>::max() / 4;
  std::vector<Problem<T>> batch(2);
  batch[0].terms = {{0, {big, 1}}, {0, {big}}};  // overflows T
  batch[1].terms = {{0, {0.5, 0.5}}, {0, {0.25, 0.75}}};
  absl::StatusOr<GpuResult<T>> got = RunSmallOnGpu(batch);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status[0], kEnumerateStatusNonFinite);
  EXPECT_EQ(got->status[1], 0u);
  EXPECT_EQ(got->values[1], (std::vector<T>{0.125, 0.5, 0.375}));
}

// The pair kernel (enumerate_pair.cu: a warp per two-term linear problem of
// at most 32 values a term), which kAuto takes for those problems: every
// pair of lengths 1..32 (several times, in both orders), normalised or
// scaled, some with zero points or a term of zeros, against the long double
// reference and EnumerateCpu (CheckBatch); every status word written (the
// launch skips their zeroing for a batch of pair problems only: RunOnGpu
// poisons them); the same bits on repeated runs, forced (kPair) as chosen
// (kAuto), and for a problem alone as in its batch, or in a batch mixed with
// problems of other kernels.
TYPED_TEST(EnumerateGpuTest, PairKernelMatchesReferenceAndCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  std::vector<Problem<T>> batch;
  for (int round = 0; round < 3; ++round) {
    for (int lx = 1; lx <= 32; ++lx) {
      for (int ly = 1; ly <= 32; ++ly) {
        Problem<T> p;
        const bool normalise = this->rng_() % 2 == 0;
        for (int len : {lx, ly}) {
          TermData<T> term = RandomTerm<T>(this->rng_, len, normalise,
                                           0.5 + 1.5 * Uniform(this->rng_),
                                           ProbSpace::kLinear);
          if (this->rng_() % 7 == 0) {  // zero-probability points
            for (T& v : term.values) {
              if (this->rng_() % 3 == 0) v = 0;
            }
          }
          p.terms.push_back(std::move(term));
        }
        batch.push_back(std::move(p));
      }
    }
  }
  // A term with no mass; exact values.
  batch.push_back({{{3, {T{0.5}, T{0.25}, T{0.25}}}, {-9, {0, 0, 0, 0}}}});
  batch.push_back({{{-3, {0.5, 0.5}}, {10, {0.25, 0.75}}}});
  absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, {}, nullptr, 2);
  ASSERT_TRUE(got.ok()) << got.status() << " " << this->Trace();
  // kAuto runs variant 1 (kAutoPairVariant): two problems a warp.
  EXPECT_EQ(got->launches,
            absl::StrCat("level 1 pair (two problems a warp) problems ",
                         batch.size(), "; "));
  const double worst = this->CheckBatch(batch, *got, "pair kernel");
  std::cout << "pair kernel: worst error / tolerance " << worst << "\n";
  EXPECT_EQ(got->values.back(), (std::vector<T>{0.125, 0.5, 0.375}));
  EXPECT_EQ(got->offsets.back(), 7);

  EnumerateOptions forced;
  forced.method = EnumerateMethod::kPair;
  absl::StatusOr<GpuResult<T>> again = RunOnGpu(batch, forced);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->raw.size(), got->raw.size());
  EXPECT_EQ(std::memcmp(again->raw.data(), got->raw.data(),
                        got->raw.size() * sizeof(T)),
            0);
  // Variant 0 (a warp per problem): the same bits.
  forced.direct_config = 0;
  absl::StatusOr<GpuResult<T>> one = RunOnGpu(batch, forced);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->launches,
            absl::StrCat("level 1 pair (warp per problem) problems ",
                         batch.size(), "; "));
  ASSERT_EQ(one->raw.size(), got->raw.size());
  EXPECT_EQ(std::memcmp(one->raw.data(), got->raw.data(),
                        got->raw.size() * sizeof(T)),
            0);
  EXPECT_EQ(one->status, std::vector<uint32_t>(batch.size(), 0u));
  // Variant 1 with an odd number of problems (the last warp's second half
  // without one).
  forced.direct_config = 1;
  const std::vector<Problem<T>> odd(batch.begin() + 100, batch.begin() + 1101);
  absl::StatusOr<GpuResult<T>> two_odd = RunOnGpu(odd, forced);
  ASSERT_TRUE(two_odd.ok()) << two_odd.status();
  for (size_t p = 0; p < odd.size(); ++p) {
    EXPECT_EQ(two_odd->values[p], got->values[100 + p]) << "problem " << p;
    EXPECT_EQ(two_odd->status[p], 0u) << "problem " << p;
  }
  for (size_t p : {size_t{0}, size_t{31}, size_t{1023}, batch.size() - 3}) {
    absl::StatusOr<GpuResult<T>> alone = RunOnGpu<T>({batch[p]}, {});
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(alone->values[0], got->values[p]) << "problem " << p;
  }
  // Mixed with problems of other kernels (their status words zeroed by the
  // launch, the pair problems' written by the pair kernel).
  std::vector<Problem<T>> mixed = {batch[5], batch[2000]};
  mixed.push_back(RandomProblem<T>(this->rng_, 5, 100'000, ProbSpace::kLinear,
                                   ProbSpace::kLinear));
  mixed.push_back(RandomProblem<T>(this->rng_, 3, 100'000, ProbSpace::kLinear,
                                   ProbSpace::kLog));
  mixed.push_back(batch[3000]);
  absl::StatusOr<GpuResult<T>> with_others = RunOnGpu(mixed, {});
  ASSERT_TRUE(with_others.ok()) << with_others.status();
  this->CheckBatch(mixed, *with_others, "pair kernel, mixed batch");
  EXPECT_EQ(with_others->values[0], got->values[5]);
  EXPECT_EQ(with_others->values[1], got->values[2000]);
  EXPECT_EQ(with_others->values[4], got->values[3000]);
}

// Session 9's configurations (sub-warps with long chunks; split tiles, a
// block's warps summing parts of a tile's j range), forced and as kAuto
// picks them, on problems around m = 256 and 1024 (tiles at every position,
// parts of every length, empty parts at the ends, a three-term problem whose
// root pairs a double node): within tolerance of the reference and of
// EnumerateCpu, the same bits on every run, and a problem alone gets the
// bits it gets in its batch.
TYPED_TEST(EnumerateGpuTest, SplitAndLongSubwarpConfigsAreExactAndStable) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::pair<int, int> kSizes[] = {{256, 256},  {1024, 1024}, {65, 65},
                                        {100, 300},  {512, 512},   {513, 2048},
                                        {700, 1100}, {200, 5000},  {2048, 2048},
                                        {1, 1024},   {3, 7},       {33, 257}};
  std::vector<Problem<T>> batch;
  for (int round = 0; round < 2; ++round) {
    for (const auto& [lx, ly] : kSizes) {
      Problem<T> p;
      for (int len : {lx, ly}) {
        p.terms.push_back(
            RandomTerm<T>(this->rng_, len, true, 1, ProbSpace::kLinear));
      }
      batch.push_back(std::move(p));
    }
  }
  Problem<T> three;
  for (int len : {300, 400, 500}) {
    three.terms.push_back(
        RandomTerm<T>(this->rng_, len, true, 1, ProbSpace::kLinear));
  }
  batch.push_back(std::move(three));
  const auto configs = EnumerateDirectConfigs();
  for (int c = -1; c < static_cast<int>(configs.size()); ++c) {
    if (c >= 0 && configs[c].split_warps == 1 && configs[c].x_chunk == 0) {
      continue;
    }
    EnumerateOptions options;
    if (c >= 0) {
      options.method = EnumerateMethod::kDirect;
      options.direct_config = c;
    }
    const std::string what = c < 0 ? "auto" : configs[c].name;
    absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, options, nullptr, 2);
    ASSERT_TRUE(got.ok()) << got.status() << " " << what;
    const double worst = this->CheckBatch(batch, *got, what);
    std::cout << what << ": worst error / tolerance " << worst << "\n";
    absl::StatusOr<GpuResult<T>> again = RunOnGpu(batch, options);
    ASSERT_TRUE(again.ok()) << again.status();
    ASSERT_EQ(again->raw.size(), got->raw.size());
    EXPECT_EQ(std::memcmp(again->raw.data(), got->raw.data(),
                          got->raw.size() * sizeof(T)),
              0)
        << what;
    for (size_t p : {size_t{0}, size_t{1}, size_t{5}, batch.size() - 1}) {
      absl::StatusOr<GpuResult<T>> alone = RunOnGpu<T>({batch[p]}, options);
      ASSERT_TRUE(alone.ok()) << alone.status();
      EXPECT_EQ(alone->values[0], got->values[p]) << what << " problem " << p;
    }
  }
}

// The tensor-core configurations (enumerate_tensor.cu: FP64 mma.sync, every
// product in double), forced: m != n both ways, odd lengths and lengths
// around the tiles (64, 128 and 256 outputs) and the chunks, tiny
// probabilities (down to 1e-12 of a term's largest: products down to 1e-24,
// normal in float), scattered zeros and supports with exact-zero sums, and
// a four-term tree (double nodes): within tolerance of the long double
// reference and of EnumerateCpu, the same bits on every run, and every
// problem the same bits in a batch of another composition (reversed, with
// other problems between them), as the mma's order is fixed on a given chip
// and a tile's steps depend on its problem's sizes only.
TYPED_TEST(EnumerateGpuTest, TensorConfigsMatchCpuAndAreBatchIndependent) {
  SAMPLER_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::pair<int, int> kSizes[] = {
      {256, 256},  {1024, 1024}, {1, 1},       {1, 5},       {2, 8},
      {63, 65},    {64, 64},     {65, 129},    {127, 128},   {257, 255},
      {300, 1000}, {1000, 300},  {2047, 2049}, {4100, 4100}, {33, 3000}};
  std::vector<Problem<T>> batch;
  for (const auto& [lx, ly] : kSizes) {
    for (int kind = 0; kind < 3; ++kind) {
      Problem<T> p;
      for (int len : {lx, ly}) {
        TermData<T> t =
            RandomTerm<T>(this->rng_, len, true, 1, ProbSpace::kLinear);
        for (int i = 0; i < len; ++i) {
          if (kind == 1) {
            // Tiny probabilities, and runs of zeros.
            if (this->rng_() % 3 == 0) {
              t.values[i] *=
                  static_cast<T>(std::pow(10.0, -12 * Uniform(this->rng_)));
            }
            if ((i / 5) % 7 == 3) t.values[i] = 0;
          } else if (kind == 2 && i % 2 == 1) {
            t.values[i] = 0;  // the odd sums are exactly zero
          }
        }
        p.terms.push_back(std::move(t));
      }
      batch.push_back(std::move(p));
    }
  }
  Problem<T> tree;
  for (int len : {300, 700, 129, 1000}) {
    tree.terms.push_back(
        RandomTerm<T>(this->rng_, len, true, 1, ProbSpace::kLinear));
  }
  batch.push_back(std::move(tree));
  // Another composition: reversed, each problem followed by a random one.
  std::vector<Problem<T>> mixed;
  std::vector<size_t> where(batch.size());
  for (size_t p = batch.size(); p-- > 0;) {
    where[p] = mixed.size();
    mixed.push_back(batch[p]);
    mixed.push_back(RandomProblem<T>(this->rng_, 3, 400'000, ProbSpace::kLinear,
                                     ProbSpace::kLinear));
  }
  const auto configs = EnumerateDirectConfigs();
  int tested = 0;
  for (int c = 0; c < static_cast<int>(configs.size()); ++c) {
    if (configs[c].tensor_tiles == 0) continue;
    ++tested;
    EnumerateOptions options;
    options.method = EnumerateMethod::kDirect;
    options.direct_config = c;
    const std::string what = configs[c].name;
    absl::StatusOr<GpuResult<T>> got = RunOnGpu(batch, options, nullptr, 2);
    ASSERT_TRUE(got.ok()) << got.status() << " " << what;
    const double worst = this->CheckBatch(batch, *got, what);
    std::cout << what << ": worst error / tolerance " << worst << "\n";
    absl::StatusOr<GpuResult<T>> other = RunOnGpu(mixed, options);
    ASSERT_TRUE(other.ok()) << other.status() << " " << what;
    for (size_t p = 0; p < batch.size(); ++p) {
      const std::vector<T>& a = got->values[p];
      const std::vector<T>& b = other->values[where[p]];
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(T)), 0)
          << what << " problem " << p << " (" << Describe(batch[p])
          << "): other bits in another batch";
    }
  }
  EXPECT_GE(tested, 1);
}

}  // namespace
}  // namespace sampler::kernels::cuda
