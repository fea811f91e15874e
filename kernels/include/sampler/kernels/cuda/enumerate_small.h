// The small-problems path of the CUDA enumeration (issue 15): a batch of
// many small linear-space problems (16,384 problems of 8 terms of 4 points)
// is mostly host planning on the planned path (enumerate.h's builder: a
// step descriptor per pair, a task per tile, a launch per tree level). A
// small problem needs none of it: one warp runs its whole balanced tree in
// shared memory, so the upload is the problems' term values as they arrive,
// one descriptor per problem and one length per term, packed in one pass.
//
//   EnumerateSmallBatch<float> b;
//   b.Reset(ProbSpace::kLinear, ProbSpace::kLinear);
//   if (EnumerateSmallFits(...)) b.Add(terms, offsets);  // per problem
//   stager.RunBatch(b, LaunchEnumerateSmall<float>, unpack);
//
// The tree is enumerate.h's (terms paired left to right, level by level, an
// odd last node passed up), every product and sum in double, the root
// rounded to T once; the sums of a level run in a fixed order, so the same
// input gives the same bits on every run, whatever its batch. Accuracy
// against the long double reference: every value a sum of non-negative
// products, so the relative error per element is at most (operand length +
// 1) double roundings per level (under 6e-14 within the bounds below) plus
// T's final rounding: float32 within 1e-6, float64 within 1e-12, as the
// planned path and the CPU twin. A problem whose double result has a non-finite
// element, or whose T result overflows, gets kEnumerateStatusNonFinite in its
// status word, and the caller recomputes it on the CPU (enumerate.h).
#ifndef SAMPLER_KERNELS_CUDA_ENUMERATE_SMALL_H_
#define SAMPLER_KERNELS_CUDA_ENUMERATE_SMALL_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels::cuda {

// The bounds of a small problem: its terms and its values (all terms'
// lengths together), which a warp's shared memory holds twice (a tree
// level's operands and its results never exceed the values).
inline constexpr int kSmallMaxTerms = 32;
inline constexpr int kSmallMaxValues = 128;

// Whether a problem takes the small path: linear in and out (the log path's
// extended-range scheme stays on the planned path), 1..kSmallMaxTerms terms
// whose lengths add up to at most kSmallMaxValues.
inline bool EnumerateSmallFits(int64_t num_terms, int64_t num_values,
                               ProbSpace in, ProbSpace out) {
  return in == ProbSpace::kLinear && out == ProbSpace::kLinear &&
         num_terms >= 1 && num_terms <= kSmallMaxTerms &&
         num_values <= kSmallMaxValues;
}

namespace enumerate_small_internal {

// One problem in the arena: its values (all terms end to end), its term
// lengths, its result's slice of the output.
struct SmallProblem {
  int64_t values;   // first value in the arena's values
  int64_t out;      // first element of its result in out
  int32_t lengths;  // first term length in the arena's lengths
  int16_t num_terms;
  int16_t num_values;
};

}  // namespace enumerate_small_internal

// A small-problems batch in device memory (View()).
template <typename T>
struct EnumerateSmallDeviceBatch {
  const enumerate_small_internal::SmallProblem* problems = nullptr;
  const int16_t* lengths = nullptr;
  const T* values = nullptr;
  T* out = nullptr;
  uint32_t* status = nullptr;  // one word per problem, written by the kernel
  int32_t num_problems = 0;
};

// The host side: problems added by reference (their values must outlive
// PackInto), packed into the upload in one pass.
template <typename T>
class EnumerateSmallBatch {
 public:
  // Empties the batch (keeping its memory) for problems of these spaces.
  void Reset(ProbSpace in, ProbSpace out);
  // The bytes its lists hold (capacity), for a caller that keeps a batch
  // and drops one grown too large.
  size_t MemoryBytes() const;
  // Adds a problem (index num_problems() - 1) if it EnumerateSmallFits
  // (false, and nothing added, otherwise): `terms` viewing its values,
  // `offsets` one per term. The spans are kept, not copied, until PackInto,
  // so the span list and the values must outlive it.
  bool Add(absl::Span<const absl::Span<const T>> terms,
           absl::Span<const int64_t> offsets);

  ProbSpace input_space() const { return in_; }
  ProbSpace output_space() const { return out_; }
  int32_t num_problems() const {
    return static_cast<int32_t>(problems_.size());
  }
  // Problem p's result: out[out_begin(p), + out_length(p)), its support
  // starting at support_offset(p).
  int64_t out_begin(int32_t p) const { return problems_[p].out; }
  int64_t support_offset(int32_t p) const { return offsets_[p]; }

  size_t ArenaBytes() const { return layout_.end; }
  void PackInto(void* host_arena) const;
  ValuesAndStatusWords<T> OutLayout() const {
    return {total_out_, problems_.size()};
  }
  StagingPlan Staging() const { return {ArenaBytes(), OutLayout().bytes(), 0}; }
  EnumerateSmallDeviceBatch<T> View(const DeviceRegions& device) const;

 private:
  struct Layout {
    size_t problems = 0, lengths = 0, values = 0, end = 0;
  };
  void Lay();

  ProbSpace in_ = ProbSpace::kLinear, out_ = ProbSpace::kLinear;
  std::vector<enumerate_small_internal::SmallProblem> problems_;
  std::vector<const absl::Span<const T>*> terms_;  // per problem, its first
  std::vector<int64_t> offsets_;                   // per problem, the sum
  int64_t total_terms_ = 0, total_values_ = 0, total_out_ = 0;
  Layout layout_;
};

// Enqueues the batch's kernel on `stream` (one warp per problem); nothing
// for an empty batch. Errors are launch errors.
template <typename T>
absl::Status LaunchEnumerateSmall(const EnumerateSmallDeviceBatch<T>& batch,
                                  cudaStream_t stream);

extern template class EnumerateSmallBatch<float>;
extern template class EnumerateSmallBatch<double>;
extern template absl::Status LaunchEnumerateSmall<float>(
    const EnumerateSmallDeviceBatch<float>&, cudaStream_t);
extern template absl::Status LaunchEnumerateSmall<double>(
    const EnumerateSmallDeviceBatch<double>&, cudaStream_t);

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_ENUMERATE_SMALL_H_
