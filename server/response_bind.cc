// Outputs bound into response memory; see response_bind.h.
#include "server/response_bind.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <variant>

#include "absl/types/span.h"
#include "sampler/kernels/boards.h"

namespace sampler::server {
namespace {

// SetFreshOutputFillForTesting's byte, or -1 (no fill).
std::atomic<int> fresh_output_fill{-1};

// Outputs of at least this many bytes ask for transparent huge pages
// before anything touches them (issue 13). glibc maps large allocations
// afresh (always above 32 MiB, its largest mmap threshold), so every 4 KiB
// page of a fresh answer costs a page fault when first written: 10,000 for
// a 40 MB answer, most of the cost of binding and writing it (wire_bench on
// a 2-core VM: 119 ms, against 3 ms into memory already touched; with 2 MiB
// pages 29-32 ms against 232-237 ms in one loaded run). The zero fill that
// Resize did was mostly these faults too. Only a hint: with THP off
// ("never") nothing changes, and memory reused from the heap keeps the
// pages it has.
constexpr size_t kHugePageHintBytes = size_t{4} << 20;
constexpr uintptr_t kHugePageBytes = uintptr_t{2} << 20;

void AdviseHugePages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (bytes < kHugePageHintBytes) return;
  // The whole huge pages inside [data, data + bytes): madvise takes
  // page-aligned ranges, and memory outside the output is not ours.
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const uintptr_t end = (start + bytes) & ~(kHugePageBytes - 1);
  if (end > begin) {
    (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  }
#else
  (void)data;
  (void)bytes;
#endif
}

// n values added to the emptied `values` uninitialised (response_bind.h):
// Reserve allocates without filling, and AddNAlreadyReserved leaves the
// elements of a plain type as they are (protobuf documents both).
template <typename T>
absl::Span<T> FreshValues(int64_t n,
                          google::protobuf::RepeatedField<T>* values) {
  static_assert(std::is_trivial_v<T>, "added elements stay uninitialised");
  const int size = static_cast<int>(n);
  values->Clear();
  values->Reserve(size);
  T* data = values->AddNAlreadyReserved(size);
  AdviseHugePages(data, static_cast<size_t>(size) * sizeof(T));
  if (const int fill = fresh_output_fill.load(std::memory_order_relaxed);
      fill >= 0 && size > 0) {
    std::memset(data, fill, static_cast<size_t>(size) * sizeof(T));
  }
  return absl::Span<T>(data, static_cast<size_t>(size));
}

}  // namespace

template <typename T>
absl::Span<T> BindReals(int64_t n, v1::Reals* reals) {
  if constexpr (std::is_same_v<T, float>) {
    return FreshValues(n, reals->mutable_f32()->mutable_values());
  } else {
    return FreshValues(n, reals->mutable_f64()->mutable_values());
  }
}
template absl::Span<float> BindReals<float>(int64_t n, v1::Reals* reals);
template absl::Span<double> BindReals<double>(int64_t n, v1::Reals* reals);

namespace {

template <typename T>
void BindEnumerateWork(EnumerateWork<T>& work,
                       v1::EnumerateResponse* response) {
  auto* results = response->mutable_results();
  results->Clear();
  results->Reserve(static_cast<int>(work.problems.size()));
  // All results exist before any memory is bound: the repeated field holds
  // pointers, so adding results does not move earlier ones.
  for (size_t p = 0; p < work.problems.size(); ++p) results->Add();
  for (size_t p = 0; p < work.problems.size(); ++p) {
    EnumerateProblem<T>& problem = work.problems[p];
    v1::Pmf* pmf = results->Mutable(static_cast<int>(p));
    // Unsigned: validated jobs cannot overflow, and others must not be UB.
    uint64_t offset = 0;
    int64_t length = 1;
    for (size_t t = 0; t < problem.terms.size(); ++t) {
      offset += static_cast<uint64_t>(problem.offsets[t]);
      length += static_cast<int64_t>(problem.terms[t].size()) - 1;
    }
    pmf->set_offset(static_cast<int64_t>(offset));
    problem.out = BindReals<T>(length, pmf->mutable_probabilities());
  }
}

}  // namespace

absl::Span<int32_t> BindIndices(
    int64_t n, google::protobuf::RepeatedField<int32_t>* indices) {
  return FreshValues(n, indices);
}

absl::Span<uint64_t> BindWords(
    int64_t n, google::protobuf::RepeatedField<uint64_t>* words) {
  return FreshValues(n, words);
}

void SetFreshOutputFillForTesting(std::optional<uint8_t> byte) {
  fresh_output_fill.store(byte.has_value() ? int{*byte} : -1,
                          std::memory_order_relaxed);
}

int64_t PositionWords(const kernels::BoardSpec& spec) {
  return static_cast<int64_t>(spec.stones.size()) * kernels::BoardWords64(spec);
}

void BindEnumerate(EnumerateJob& job, v1::EnumerateResponse* response) {
  std::visit([&](auto& work) { BindEnumerateWork(work, response); }, job.work);
}

void BindCategorical(CategoricalJob& job,
                     v1::SampleCategoricalResponse* response) {
  const int64_t n = job.shape.rows * job.shape.draws;
  std::visit(
      [&](auto& work) {
        work.out = BindIndices(n, response->mutable_indices());
      },
      job.work);
  response->set_rows(job.shape.rows);
  response->set_draws(job.shape.draws);
  response->set_seed(job.seed);
}

void BindGamma(GammaJob& job, v1::SampleGammaResponse* response) {
  std::visit(
      [&](auto& work) {
        using T = typename decltype(work.out)::value_type;
        work.out = BindReals<T>(job.items, response->mutable_samples());
      },
      job.work);
  response->set_seed(job.seed);
}

void BindDirichlet(DirichletJob& job, v1::SampleDirichletResponse* response) {
  std::visit(
      [&](auto& work) {
        using T = typename decltype(work.out)::value_type;
        work.out = BindReals<T>(static_cast<int64_t>(work.alpha.size()),
                                response->mutable_samples());
      },
      job.work);
  response->set_seed(job.seed);
}

void BindBoards(BoardsJob& job, v1::SampleBoardsResponse* response) {
  job.out = BindWords(job.count * PositionWords(job.spec),
                      response->mutable_bitboards());
  response->set_words_per_board(kernels::BoardWords64(job.spec));
  response->set_colours(static_cast<int32_t>(job.spec.stones.size()));
  response->set_count(job.count);
  response->set_seed(job.seed);
}

}  // namespace sampler::server
