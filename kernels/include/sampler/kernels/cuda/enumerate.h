// CUDA enumeration: the PMF of a sum of independent discrete random
// variables for a segmented batch of problems in one go, checked against
// EnumerateCpu (enumerate.h), which stays the contract.
//
// A batch holds many problems ("segments"), each with its own terms (any
// number >= 1, any lengths, any support offsets), its own input and output
// probability spaces and its own slice of the output. The host-side builder
// validates the problems as the CPU backend does, plans the launches and
// packs everything the kernels read (term values, per-step problem
// descriptors, task lists) into one arena that travels in one copy:
//
//   EnumerateBatchBuilder<float> b(options);
//   b.Add(terms, ProbSpace::kLinear, ProbSpace::kLinear);   // per request
//   ...
//   b.Finish();
//   stager.Run(b.Staging(), [&](char* in) { b.PackInto(in); },
//              [&](const DeviceRegions& d, cudaStream_t s) {
//                return LaunchEnumerate(b.View(d), s, fft_plans_or_null);
//              },
//              [&](const char* out) {
//                ... b.OutLayout().Values(out), b.OutLayout().StatusWords(out)
//              });
//
// (staging.h: the arena is the in region; the out region holds the outputs,
// then one status word per problem; the scratch region is the scratch.)
// Problem p's result is out[problems()[p].out_begin, + out_length), for the
// support starting at problems()[p].support_offset (the sum of the terms'
// offsets). The launcher takes the stream and caller-provided device memory
// (arena, output, status words, scratch) and never allocates; ScratchBytes()
// says how much scratch the batch needs (0 when no problem has more than two
// terms and none goes to the FFT path).
//
// Kernels (enumerate.cu says more): the direct convolution is warp
// cooperative. A warp owns a tile of consecutive outputs; its lanes form
// groups of G members, each group R consecutive outputs held in registers,
// the members of a group taking interleaved j, so that at every step the
// lanes of a group sit on the skew diagonals x + y = k of the outer product
// (the blog's skew-diagonal tile) and, at the end, sum them with a
// __shfl_xor_sync butterfly (lecture version 3); x and a window of y are
// staged through shared memory. Two-term linear problems whose terms have at
// most 32 values take the pair kernel instead (enumerate_pair.cu): a warp
// per problem, two outputs a lane. Linear space accumulates in double (float
// products in short float chains folded into double); the log path (log
// input or output) runs the CPU's extended-range scheme (m * 2^e nodes,
// tilted tiles of plain doubles: enumerate_cpu_convolve.h) and converts to
// log once at the root; only log inputs beyond 2^32 in magnitude use an
// online log-sum-exp in double, as the CPU does. Every sum has a fixed order:
// the same input gives the same bits on every run, and a problem's bits do not
// depend on the rest of its batch (its kernel is chosen from its own sizes). An
// optional cuFFT path for long linear problems trades the relative error of the
// direct path for an absolute one; it is off unless asked for.
//
// Some configurations run sub-warps, each its own tile of a smaller problem,
// or split a tile's j range over the warps of a block, the parts added in a
// fixed order (a function of the tile only). The tensor-core configurations
// (tensor_tiles > 0, enumerate_tensor.cu) run a tile as small Toeplitz
// matrix products on the FP64 tensor cores (mma.sync), every product in
// double for float and double problems alike; kAuto takes them where they
// were measured faster (AutoLinearConfig, enumerate_plan.h), their mma's
// order fixed by the chip (the same bits on a given GPU model).
//
// Accuracy against the long double reference, per element where the
// reference is not zero (the tests check these): linear space, float:
// relative <= 1e-6 (the proof in enumerate.cu gives 16 float roundings,
// 9.5e-7); double: relative <= 1e-12 for problems whose tree has at most 8
// levels of at most 16384 pairs per output. Log path, extended range: a
// relative error in probability of at most (32 + J / (32 G) + log2 G + 8)
// double roundings per tree level (J the output's pairs, G = 1 or 4 the
// members per output), plus the final rounding of the log value (half an
// ulp of |log p|), whatever p's magnitude; the CPU's bound is (136 + J /
// 4096) roundings per level, so the two agree within the sum plus an ulp of
// |log p|. Log inputs beyond 2^32: an absolute error in the log value of a
// few ulps of the log values' magnitude per tree level. Exact zeros (-inf)
// where no pair has non-zero probability, as on the CPU.
//
// Results that do not fit: a problem whose linear result has a non-finite
// element, or whose log result has +inf, gets kEnumerateStatusNonFinite in
// its status word; the CPU backend's answer for it is EnumerateCpu's (which
// retries overflowing linear partial sums in log space or reports the
// overflow), so the caller recomputes flagged problems there.
#ifndef SAMPLER_KERNELS_CUDA_ENUMERATE_H_
#define SAMPLER_KERNELS_CUDA_ENUMERATE_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels::cuda {

// ------------------------------------------------------------ options ----

// Which algorithm the builder routes a problem to.
enum class EnumerateMethod : int32_t {
  // The service's choice: the direct kernel, with the configuration picked
  // from the problem's sizes; the FFT for long linear problems only when
  // allow_fft is set.
  kAuto = 0,
  // The direct kernel with one forced configuration (direct_config, an index
  // of EnumerateDirectConfigs()): for tests and benchmarks.
  kDirect = 1,
  // cuFFT convolution for every linear-space problem (log-space problems
  // still take the direct kernel): for tests and benchmarks.
  kFft = 2,
  // The pair kernel (a warp per problem) for every problem it takes
  // (two-term linear problems whose terms fit a warp: PairKernelFits in
  // enumerate_plan.h), the rest as kAuto: for tests and benchmarks. kAuto
  // routes to it where it is the faster (PairKernelAuto). direct_config
  // picks its variant (kPairVariants: 0, kAuto's, a warp per problem; 1 two
  // problems a warp; the same bits).
  kPair = 3,
};

struct EnumerateOptions {
  EnumerateMethod method = EnumerateMethod::kAuto;
  int direct_config = -1;  // kDirect: index into EnumerateDirectConfigs();
                           // kPair: the pair kernel's variant
  // kAuto may send a linear-space problem whose result is at least
  // fft_min_length long to the FFT path. Its error is absolute, about
  // 1e-15 of the sum of the result (double transforms for both types), so
  // elements far below the largest lose their relative accuracy, and exact
  // zeros become tiny values (negative results are clamped to 0).
  bool allow_fft = false;
  int64_t fft_min_length = 1024;
};

// One configuration of the direct kernel (the template parameters of one
// instantiation): G lanes per output group, R outputs per group, S
// independent sub-warps per warp, so a task's tile is 32 / (S G) * R
// outputs; G = 1 needs no butterfly. Q tasks per sub-warp have their first
// chunks loaded together (more loads in flight for small problems). P > 1
// warps share a tile, each a part of its j range, added in part order.
// x_chunk: the staged chunk of x, in float elements (0: the default).
// tensor_tiles > 0: the tensor-core kernel instead (FP64 mma.sync, every
// product in double), tiles of 64 tensor_tiles outputs; G, R, S, Q and P are
// 1 for it.
struct EnumerateDirectConfig {
  int group_lanes;  // G
  int outputs;      // R
  int subwarps;     // S
  int tasks;        // Q
  const char* name;
  int split_warps;  // P
  int x_chunk;
  int tensor_tiles;
};
absl::Span<const EnumerateDirectConfig> EnumerateDirectConfigs();

// --------------------------------------------------- status words ----

inline constexpr uint32_t kEnumerateStatusNonFinite = 1u;

// ----------------------------------------------------- descriptors ----

// What the host keeps of one problem.
struct EnumerateProblem {
  int64_t support_offset = 0;  // sum of the terms' offsets
  int64_t out_begin = 0;       // first element of its result in `out`
  int64_t out_length = 0;      // sum(len - 1) + 1
  int32_t num_terms = 0;
  ProbSpace in = ProbSpace::kLinear;
  ProbSpace out = ProbSpace::kLinear;
  bool fft = false;  // routed to the FFT path
  // Log path only: a log value beyond the extended-range form's bound
  // (kMaxExtendedLog), so its tree runs in log space (kLog), as on the CPU.
  bool beyond_extended = false;
};

// Device-side records (POD, laid out by the builder in the arena).
namespace enumerate_internal {

// Bits of StepProblem::bits.
inline constexpr uint32_t kAInScratch = 1u;   // left operand: scratch (double)
inline constexpr uint32_t kDstScratch = 2u;   // result: scratch (double)
inline constexpr uint32_t kInLog = 4u;        // term values are log-probs
inline constexpr uint32_t kOutLog = 8u;       // final result in log space
inline constexpr uint32_t kBInScratch = 16u;  // right operand: scratch (double)

// A kExtended step's scratch operands and result hold extended-range values
// (enumerate_cpu_convolve.h's form, m * 2^e): element i of a node at scratch
// index `at` is m = scratch[at + 2 i] and e = the int64 bits of
// scratch[at + 2 i + 1].
inline constexpr int kExtendedDoubles = 2;

// One pair convolution of a level of one problem's tree: dst = a (*) b,
// each operand a term (in values) or a node of an earlier level (scratch).
struct StepProblem {
  int64_t a;    // first element of a: in values, or in scratch
  int64_t b;    // first element of b: in values, or in scratch
  int64_t dst;  // first element of the result: in out, or in scratch
  int32_t a_len;
  int32_t b_len;
  int32_t problem;
  uint32_t bits;
};

// An allocator whose value-less construction default-initialises: a list of
// PODs grown by resize() is left unwritten instead of zeroed, for a list
// whose every element is written next (the builder's step list, 40 bytes a
// pair: zeroing it was a tenth of a many-problem batch's planning).
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// One warp's work: a tile of consecutive outputs of one step problem.
struct Task {
  int32_t step_problem;  // index in the launch's StepProblem range
  int32_t tile;
};

// kLog: log space in double (log inputs beyond the extended range);
// kExtended: every other log-path problem, in extended-range arithmetic;
// kPair: two-term linear problems that fit a warp, a warp each
// (enumerate_pair.cu).
enum class LaunchKind : int32_t {
  kCopy,
  kLinear,
  kLog,
  kFft,
  kExtended,
  kPair
};

// One kernel launch (host side), over a contiguous range of step problems
// (pair convolutions of one tree level)
// and (for kLinear / kLog / kExtended with several tiles per problem) of
// tasks.
struct Launch {
  LaunchKind kind = LaunchKind::kLinear;
  int config = 0;        // kLinear: direct config; kLog, kExtended: log config
  bool f32 = false;      // kLinear: float products (both operands float)
  int level = 0;         // of the tree (0: the copies)
  int64_t sp_begin = 0;  // in the arena's StepProblem array
  int64_t sp_count = 0;
  int64_t task_begin = 0;  // in the arena's Task array; -1: task = sp
  int64_t task_count = 0;
  // kFft: a group of problems sharing the transform length.
  int64_t fft_length = 0;
  int64_t fft_signals = 0;        // terms in the group (forward transforms)
  int64_t fft_problems = 0;       // problems in the group (inverse transforms)
  int64_t fft_real = 0;           // scratch doubles: signals, then results
  int64_t fft_spectra = 0;        // scratch doubles: the signals' spectra
  int64_t fft_product = 0;        // scratch doubles: the problems' spectra
  int64_t fft_signal_begin = 0;   // in the arena's FftSignal array
  int64_t fft_problem_begin = 0;  // in the arena's FftProblem array
};

// FFT path: one forward transform per term (signal) of a group's problems.
struct FftSignal {
  int64_t values;  // first value in values
  int32_t length;
  int32_t pad;
};

// FFT path: one problem of a group; its signals are consecutive.
struct FftProblem {
  int64_t dst;        // first element of its result in out
  int32_t sig_begin;  // its first signal within the group
  int32_t num_terms;
  int32_t out_length;
  int32_t problem;
};

}  // namespace enumerate_internal

// A batch in device memory, as View() gives it. Plain pointers plus the
// builder's host-side launch list (the builder must outlive the Launch call,
// not the kernels).
template <typename T>
struct EnumerateBatch {
  const void* arena = nullptr;
  T* out = nullptr;
  uint32_t* status = nullptr;  // one word per problem, zeroed by the launch
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
  int32_t num_problems = 0;
  // Offsets of the arena's sections (bytes).
  size_t values_at = 0, steps_at = 0, tasks_at = 0, fft_signals_at = 0,
         fft_problems_at = 0;
  size_t scratch_needed = 0;
  size_t fft_work_at = 0;  // scratch offset (bytes) of cuFFT's work area
  // False where the kernels write every status word themselves (a batch
  // of pair-kernel problems only): the launch then skips their zeroing.
  bool zero_status = true;
  const std::vector<enumerate_internal::Launch>* launches = nullptr;
};

// ----------------------------------------------------- FFT plans ----

// cuFFT plans for the FFT path (double precision for both value types).
// Creating plans allocates (host and device memory for cuFFT's own tables),
// so it is done by Prepare, outside the launcher; the launcher finds the
// plans it needs here or fails with FAILED_PRECONDITION. Work areas come
// from the batch's scratch (auto-allocation is off). Not thread-safe: one
// object per stream.
class EnumerateFftPlans {
 public:
  static absl::StatusOr<std::unique_ptr<EnumerateFftPlans>> Create();
  ~EnumerateFftPlans();
  EnumerateFftPlans(const EnumerateFftPlans&) = delete;
  EnumerateFftPlans& operator=(const EnumerateFftPlans&) = delete;

  // Creates the plans the batch's FFT launches use (no-op for none).
  template <typename T>
  absl::Status Prepare(const EnumerateBatch<T>& batch);

  // Internal: executes forward (real to complex) or inverse transforms of
  // `count` signals of length n, chained over power-of-two sub-batches.
  absl::Status Forward(int64_t n, int64_t count, double* real, void* complex,
                       void* work, cudaStream_t stream);
  absl::Status Inverse(int64_t n, int64_t count, void* complex, double* real,
                       void* work, cudaStream_t stream);

  // Upper bound of cuFFT's work area for `count` transforms of length n
  // (either direction), in bytes.
  static absl::StatusOr<size_t> WorkBytes(int64_t n, int64_t count);

 private:
  EnumerateFftPlans() = default;
  absl::Status Ensure(int64_t n, int64_t count, bool inverse);
  // (n, batch, inverse) -> cufftHandle
  std::map<std::tuple<int64_t, int64_t, bool>, int> plans_;
};

// ---------------------------------------------------------- launch ----

// Enqueues the batch on `stream`: zeroes the status words, then the tree
// levels' kernels bottom up (and the FFT path's transforms). `fft` is needed
// only when the batch has FFT problems (Prepare()d for it). Errors are
// launch errors and missing or short scratch; per-problem results arrive in
// the status words.
template <typename T>
absl::Status LaunchEnumerate(const EnumerateBatch<T>& batch,
                             cudaStream_t stream,
                             EnumerateFftPlans* fft = nullptr);

// A diagnostic of the log path's extended kernel: how many outputs it has
// recomputed on their own (one warp each, two passes over the output's
// pairs: the safety net for an output the tile's scale cannot hold) on the
// current device since the process started or the last reset. Counted with
// an atomic add in that path only, so it costs nothing otherwise. Both wait
// for the device (cudaDeviceSynchronize first); for tests and benchmarks.
absl::StatusOr<uint64_t> EnumerateExtendedFallbacks();
absl::Status ResetEnumerateExtendedFallbacks();

// ---------------------------------------------------------- packing ----

template <typename T>
class EnumerateBatchBuilder {
 public:
  explicit EnumerateBatchBuilder(const EnumerateOptions& options = {})
      : options_(options) {}

  // Empties the builder for a new batch under `options`, keeping the memory
  // of its lists: a builder reused from batch to batch plans into warm
  // memory, where a fresh one's page faults are most of a large batch's
  // planning (bench/results/enumerate-plan-host-2026-11-25.md). The plan
  // is the same as a fresh builder's.
  void Reset(const EnumerateOptions& options = {});
  // The bytes its lists hold (capacity), for a caller that keeps a builder
  // and drops one grown too large.
  size_t MemoryBytes() const;

  // Optional, before Add(): room for this many more problems, terms and
  // term values in all, so that adding them moves nothing.
  void Reserve(size_t problems, size_t terms, size_t values);

  // Validates the problem as EnumerateCpu does (InvalidArgument naming the
  // field) and adds it; returns its index in the batch.
  absl::StatusOr<int> Add(absl::Span<const PmfTerm<T>> terms, ProbSpace in,
                          ProbSpace out);

  // Plans the launches. Add() is refused afterwards. A batch of 4,096
  // problems or more walks its trees on up to 16 threads (one per 2,048
  // problems, at most the hardware's, where it has 4 or more), joined
  // before it returns; the plan is the same bits whatever the number.
  absl::Status Finish();

  const std::vector<EnumerateProblem>& problems() const { return problems_; }
  int64_t total_out() const { return total_out_; }
  // The direct-kernel pairs (products) of the batch: its arithmetic work.
  int64_t pair_count() const { return pairs_; }

  // After Finish():
  size_t ArenaBytes() const { return layout_.end; }
  void PackInto(void* host_arena) const;
  // Device scratch the launch needs, in bytes (a multiple of 256).
  size_t ScratchBytes() const { return scratch_bytes_; }
  EnumerateBatch<T> View(const void* device_arena, T* out, uint32_t* status,
                         void* scratch, size_t scratch_bytes) const;
  // The same for the staging pipeline (staging.h).
  ValuesAndStatusWords<T> OutLayout() const {
    return {total_out_, problems_.size()};
  }
  StagingPlan Staging() const {
    return {ArenaBytes(), OutLayout().bytes(), ScratchBytes()};
  }
  EnumerateBatch<T> View(const DeviceRegions& device) const {
    const ValuesAndStatusWords<T> out = OutLayout();
    return View(device.in, out.Values(device.out), out.StatusWords(device.out),
                device.scratch, ScratchBytes());
  }

  // Human-readable launch list (for benchmarks' logs).
  std::string DescribeLaunches() const;

 private:
  struct Layout {
    size_t values = 0, steps = 0, tasks = 0, fft_signals = 0, fft_problems = 0,
           end = 0;
  };
  struct Term {
    int64_t values;
    int32_t length;
  };
  struct Pending {
    int32_t first_term;
    int32_t num_terms;
  };

  absl::Status PlanFft(int64_t* scratch_doubles);
  void PlanDirect(int64_t* scratch_doubles);
  // Walks the direct path's trees (of problems [p_begin, p_end) not routed
  // to the FFT), calling visit(group, step_problem) for each pair
  // convolution (and one-term copy), group the index of its launch; the
  // trees' scratch starts at scratch_doubles. Returns the end of their
  // scratch.
  template <typename Visit>
  int64_t WalkDirect(size_t p_begin, size_t p_end, int64_t scratch_doubles,
                     Visit&& visit) const;

  EnumerateOptions options_;
  bool finished_ = false;
  std::vector<EnumerateProblem> problems_;
  std::vector<Pending> pending_;
  std::vector<Term> terms_;
  std::vector<T> values_;
  std::vector<
      enumerate_internal::StepProblem,
      enumerate_internal::DefaultInitAllocator<enumerate_internal::StepProblem>>
      steps_;
  std::vector<enumerate_internal::Task> tasks_;
  std::vector<enumerate_internal::FftSignal> fft_signals_;
  std::vector<enumerate_internal::FftProblem> fft_problems_;
  std::vector<enumerate_internal::Launch> launches_;
  Layout layout_;
  size_t scratch_bytes_ = 0;
  size_t fft_work_at_ = 0;
  int64_t total_out_ = 0;
  int64_t pairs_ = 0;
  int64_t pair_problems_ = 0;  // in kPair launches
};

extern template class EnumerateBatchBuilder<float>;
extern template class EnumerateBatchBuilder<double>;
extern template absl::Status LaunchEnumerate<float>(
    const EnumerateBatch<float>&, cudaStream_t, EnumerateFftPlans*);
extern template absl::Status LaunchEnumerate<double>(
    const EnumerateBatch<double>&, cudaStream_t, EnumerateFftPlans*);
extern template absl::Status EnumerateFftPlans::Prepare<float>(
    const EnumerateBatch<float>&);
extern template absl::Status EnumerateFftPlans::Prepare<double>(
    const EnumerateBatch<double>&);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_ENUMERATE_H_
