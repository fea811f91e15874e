// Enumerate batches on a GPU: every problem of every job in one segmented
// batch per precision (direct warp-tiled convolution; the FFT path stays off,
// since its error is absolute rather than relative). Small linear problems
// (enumerate_small.h's bounds) skip the planning: they go to the
// small-problems batch, a warp per problem, and the rest to the planned one. A
// problem whose result left the precision's range on the GPU is recomputed by
// the CPU function, which either succeeds (the log-space fallback) or names the
// overflow.
#include <cstring>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/enumerate_small.h"
#include "sampler/kernels/enumerate.h"
#include "server/cuda_exec.h"

namespace sampler::server {
namespace {

namespace kc = kernels::cuda;

template <typename T>
struct PlacedProblem {
  EnumerateJob* job;
  int problem;  // within the job
  int index;    // within the builder
};

// The problem's terms as the kernels take them, in `terms` (reused from
// problem to problem, so that a batch of many small problems does not
// allocate one list each).
template <typename T>
void FillTerms(const EnumerateProblem<T>& problem,
               std::vector<kernels::PmfTerm<T>>* terms) {
  terms->resize(problem.terms.size());
  for (size_t t = 0; t < terms->size(); ++t) {
    (*terms)[t].offset = problem.offsets[t];
    (*terms)[t].values = problem.terms[t];
  }
}

template <typename T>
std::vector<kernels::PmfTerm<T>> Terms(const EnumerateProblem<T>& problem) {
  std::vector<kernels::PmfTerm<T>> terms;
  FillTerms(problem, &terms);
  return terms;
}

// The CPU's answer for a problem the GPU could not represent.
template <typename T>
absl::Status RecomputeOnCpu(const EnumerateWork<T>& work, int p) {
  const EnumerateProblem<T>& problem = work.problems[p];
  const std::vector<kernels::PmfTerm<T>> terms = Terms(problem);
  absl::StatusOr<kernels::Pmf<T>> pmf =
      kernels::EnumerateCpu<T>(terms, work.input_space, work.output_space);
  if (!pmf.ok()) {
    return absl::Status(
        pmf.status().code(),
        absl::StrCat("problems[", p, "]: ", pmf.status().message()));
  }
  std::memcpy(problem.out.data(), pmf->values.data(),
              problem.out.size() * sizeof(T));
  return absl::OkStatus();
}

// A kept builder grown beyond this is dropped before the next batch, so that
// one huge batch does not pin its memory for the thread's life.
constexpr size_t kKeptBuilderBytes = size_t{64} << 20;

// The batch's builder: one per thread and precision, Reset() for each batch
// and kept between them, so that planning writes into warm memory (a fresh
// builder's page faults were most of a many-problem batch's planning:
// bench/results/enumerate-plan-host-2026-11-25.md). RunBatch is
// synchronous, so a thread's builder serves one batch at a time.
template <typename T>
kc::EnumerateBatchBuilder<T>& ThreadBuilder() {
  thread_local kc::EnumerateBatchBuilder<T> builder;
  if (builder.MemoryBytes() > kKeptBuilderBytes) {
    builder = kc::EnumerateBatchBuilder<T>();
  }
  builder.Reset();
  return builder;
}

// The batch's small-problems batch: one per thread and precision, kept
// between batches (and dropped when grown large) as ThreadBuilder's.
template <typename T>
kc::EnumerateSmallBatch<T>& ThreadSmallBatch() {
  thread_local kc::EnumerateSmallBatch<T> small;
  if (small.MemoryBytes() > kKeptBuilderBytes) {
    small = kc::EnumerateSmallBatch<T>();
  }
  return small;
}

// Copies each placed problem's result from the downloaded out region, or
// recomputes it on the CPU where its status word says the GPU could not
// represent it. `out_begin(index)` gives a result's first element.
template <typename T, typename OutBegin>
void UnpackResults(const std::vector<PlacedProblem<T>>& placed,
                   const kc::ValuesAndStatusWords<T>& layout,
                   const char* staged, OutBegin out_begin) {
  const T* values = layout.Values(staged);
  const uint32_t* words = layout.StatusWords(staged);
  for (const PlacedProblem<T>& p : placed) {
    const auto& work = std::get<EnumerateWork<T>>(p.job->work);
    const EnumerateProblem<T>& problem = work.problems[p.problem];
    if (words[p.index] != 0) {
      if (absl::Status s = RecomputeOnCpu(work, p.problem);
          !s.ok() && p.job->status.ok()) {
        p.job->status = s;
      }
      continue;
    }
    std::memcpy(problem.out.data(), values + out_begin(p.index),
                problem.out.size() * sizeof(T));
  }
}

// The small problems of the batch's jobs (those EnumerateSmallFits), run in
// one launch; the others are left to RunPlanned (`planned` says which).
template <typename T>
absl::StatusOr<double> RunSmall(Batch<EnumerateJob>& batch, CudaSlot& slot,
                                std::vector<PlacedProblem<T>>* planned) {
  kc::EnumerateSmallBatch<T>& small = ThreadSmallBatch<T>();
  // The small path is linear only (EnumerateSmallFits): a problem's route
  // depends on its own job and sizes, never on the rest of the batch.
  small.Reset(kernels::ProbSpace::kLinear, kernels::ProbSpace::kLinear);
  size_t problems = 0;
  for (auto& job : batch.jobs) {
    auto* work = std::get_if<EnumerateWork<T>>(&job->work);
    if (work == nullptr) continue;  // the other precision's launch
    problems += work->problems.size();
  }
  std::vector<PlacedProblem<T>> placed;
  placed.reserve(problems);
  for (auto& job : batch.jobs) {
    auto* work = std::get_if<EnumerateWork<T>>(&job->work);
    if (work == nullptr) continue;
    for (size_t p = 0; p < work->problems.size(); ++p) {
      const EnumerateProblem<T>& problem = work->problems[p];
      // Log-path jobs and problems beyond the bounds: the planned tree.
      const bool same_spaces = work->input_space == small.input_space() &&
                               work->output_space == small.output_space();
      if (same_spaces && small.Add(problem.terms, problem.offsets)) {
        placed.push_back(
            {job.get(), static_cast<int>(p), small.num_problems() - 1});
      } else {
        planned->push_back({job.get(), static_cast<int>(p), -1});
      }
    }
  }
  if (placed.empty()) return 0.0;
  return slot.RunBatch(
      small, kc::LaunchEnumerateSmall<T>, [&](const char* staged) {
        UnpackResults(placed, small.OutLayout(), staged,
                      [&](int i) { return small.out_begin(i); });
      });
}

// The planned tree (enumerate.h's builder) for the problems in `to_plan`.
template <typename T>
absl::StatusOr<double> RunPlanned(const std::vector<PlacedProblem<T>>& to_plan,
                                  CudaSlot& slot) {
  if (to_plan.empty()) return 0.0;
  kc::EnumerateBatchBuilder<T>& builder = ThreadBuilder<T>();
  // Room for every problem first: the builder's lists then never move.
  size_t terms_in_all = 0, values = 0;
  for (const PlacedProblem<T>& p : to_plan) {
    const auto& work = std::get<EnumerateWork<T>>(p.job->work);
    const EnumerateProblem<T>& problem = work.problems[p.problem];
    terms_in_all += problem.terms.size();
    for (const auto& term : problem.terms) values += term.size();
  }
  builder.Reserve(to_plan.size(), terms_in_all, values);
  std::vector<PlacedProblem<T>> placed;
  placed.reserve(to_plan.size());
  std::vector<kernels::PmfTerm<T>> terms;
  for (const PlacedProblem<T>& p : to_plan) {
    const auto& work = std::get<EnumerateWork<T>>(p.job->work);
    FillTerms(work.problems[p.problem], &terms);
    absl::StatusOr<int> index =
        builder.Add(terms, work.input_space, work.output_space);
    if (!index.ok()) {  // validated before queueing: cannot happen
      p.job->status = index.status();
      continue;
    }
    placed.push_back({p.job, p.problem, *index});
  }
  if (placed.empty()) return 0.0;
  if (absl::Status s = builder.Finish(); !s.ok()) return s;

  return slot.RunBatch(
      builder,
      [](const auto& view, cudaStream_t stream) {
        return kc::LaunchEnumerate(view, stream);
      },
      [&](const char* staged) {
        UnpackResults(placed, builder.OutLayout(), staged,
                      [&](int i) { return builder.problems()[i].out_begin; });
      });
}

template <typename T>
absl::StatusOr<double> RunEnumerate(Batch<EnumerateJob>& batch,
                                    CudaSlot& slot) {
  std::vector<PlacedProblem<T>> planned;
  absl::StatusOr<double> small = RunSmall<T>(batch, slot, &planned);
  if (!small.ok()) return small;
  absl::StatusOr<double> rest = RunPlanned<T>(planned, slot);
  if (!rest.ok()) return rest;
  return *small + *rest;
}

}  // namespace

absl::StatusOr<double> ExecuteOnGpu(Batch<EnumerateJob>& batch,
                                    CudaSlot& slot) {
  absl::StatusOr<double> f = RunEnumerate<float>(batch, slot);
  if (!f.ok()) return f;
  absl::StatusOr<double> d = RunEnumerate<double>(batch, slot);
  if (!d.ok()) return d;
  return *f + *d;
}

}  // namespace sampler::server
