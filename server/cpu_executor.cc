#include "server/cpu_executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/status_macros.h"
#include "server/gamma_groups.h"
#include "server/saturating.h"

namespace sampler::server {
namespace {

// ------------------------------------------------------------ task sizes ----
// Work is measured in rough nanoseconds of one core (the per-kind constants
// below, from timing the CPU kernels; only their order of magnitude matters).
// A batch is cut into about kPiecesPerThread pieces per thread, so that a
// thread that finishes early takes another piece instead of idling while the
// slowest one finishes; no piece is smaller than kMinPieceCost, so that the
// cost of queueing a task (a microsecond or two) stays negligible.
constexpr int64_t kMinPieceCost = 100'000;  // about 0.1 ms
constexpr int64_t kPiecesPerThread = 4;
// Costs saturate here so that sums over a batch cannot overflow.
constexpr int64_t kMaxCost = int64_t{1} << 52;

// Measured on the CPU kernels (x86-64, one core), rounded.
constexpr int64_t kGammaSampleCost = 100;
constexpr int64_t kDirichletComponentCost = 200;  // small alphas dominate
// Categorical, per row: building the table costs per category; a draw's
// butterfly search costs about kCategoricalStepCost per level of log2(K).
constexpr int64_t kCategoricalValueCost = 2;
constexpr int64_t kCategoricalDrawCost = 10;
constexpr int64_t kCategoricalStepCost = 8;
// Boards, per position: each colour's bit-parallel selection passes over the
// board's words some tens of times.
constexpr int64_t kBoardColourWordCost = 120;
constexpr int64_t kEnumeratePairCost = 2;     // linear space
constexpr int64_t kEnumerateLogPairCost = 8;  // log space: an exp per pair

// Costs saturate at kMaxCost (saturating.h).
int64_t CostAdd(int64_t a, int64_t b) { return server::SatAdd(a, b, kMaxCost); }
int64_t CostMul(int64_t a, int64_t b) { return server::SatMul(a, b, kMaxCost); }

// A range [begin, end) of one job's units (samples, rows, positions or
// problems). `whole` pieces cover their job entirely and call the kernel
// with the job's own spans, exactly as a direct call would; that is also
// how a job whose sizes are inconsistent gets the kernel's own error.
struct Piece {
  size_t job = 0;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t cost = 0;
  bool whole = true;
};

// Pieces of a job of `units` units of equal cost, about `target` each.
void CutEvenly(size_t job, int64_t units, int64_t cost, int64_t target,
               std::vector<Piece>& pieces) {
  const int64_t n =
      std::clamp<int64_t>(cost / target, 1, std::max<int64_t>(units, 1));
  if (n == 1) {
    pieces.push_back({job, 0, units, cost, true});
    return;
  }
  // Boundaries i * units / n without the product: base * i + min(i, rem).
  const int64_t base = units / n;
  const int64_t rem = units % n;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t begin = base * i + std::min(i, rem);
    const int64_t end = base * (i + 1) + std::min(i + 1, rem);
    pieces.push_back({job, begin, end, cost / n, false});
  }
}

// Pieces of a job whose unit u costs cum[u + 1] - cum[u] (cum non-
// decreasing, from cum[0] = 0), about `target` each.
void CutByCost(size_t job, absl::Span<const int64_t> cum, int64_t target,
               std::vector<Piece>& pieces) {
  const int64_t units = static_cast<int64_t>(cum.size()) - 1;
  const int64_t total = cum.back();
  const int64_t n =
      std::clamp<int64_t>(total / target, 1, std::max<int64_t>(units, 1));
  if (n == 1) {
    pieces.push_back({job, 0, units, total, true});
    return;
  }
  int64_t begin = 0;
  for (int64_t i = 1; i <= n && begin < units; ++i) {
    int64_t end = units;
    if (i < n) {
      // The first unit boundary at or past i/n of the cost, at least one
      // unit past `begin`.
      const int64_t goal = total / n * i;
      end = std::lower_bound(cum.begin() + begin + 1, cum.end(), goal) -
            cum.begin();
      end = std::min(end, units);
    }
    pieces.push_back({job, begin, end, cum[end] - cum[begin], false});
    begin = end;
  }
}

// A failure in one piece of a split job: the kernel's message may index
// within the piece, so say which part of the request the piece was.
absl::Status InPiece(const absl::Status& s, const Piece& piece,
                     const char* units) {
  if (s.ok() || piece.whole) return s;
  return absl::Status(s.code(), absl::StrCat(units, " [", piece.begin, ", ",
                                             piece.end, "): ", s.message()));
}

// ----------------------------------------------------------------- gamma ----

template <typename T>
bool Consistent(const GammaWork<T>& w) {
  const uint64_t n = w.out.size();
  if (!w.groups.empty()) {
    uint64_t sum = 0;
    for (const kernels::GammaGroup<T>& g : w.groups) {
      if (g.count < 0) return false;
      sum += static_cast<uint64_t>(g.count);
      if (sum > n) return false;
    }
    return sum == n;
  }
  return w.shape.size() == n && (w.scale.empty() || w.scale.size() == n);
}

int64_t Cost(const GammaJob& job) {
  return std::visit(
      [](const auto& w) {
        return CostMul(static_cast<int64_t>(w.out.size()), kGammaSampleCost);
      },
      job.work);
}

void Cut(const GammaJob& job, size_t index, int64_t target,
         std::vector<Piece>& pieces) {
  std::visit(
      [&](const auto& w) {
        const int64_t units = static_cast<int64_t>(w.out.size());
        if (!Consistent(w)) {
          pieces.push_back({index, 0, units, Cost(job), true});
        } else {
          CutEvenly(index, units, Cost(job), target, pieces);
        }
      },
      job.work);
}

// Per-element parameters with unit scale (an empty `scale`): the kernel
// takes a scale per element, so ones are passed a block at a time rather
// than materialising a scale vector as long as the request.
template <typename T>
absl::Status GammaUnitScale(const GammaJob& job, absl::Span<const T> shape,
                            uint64_t first_item, absl::Span<T> out) {
  if (shape.size() != out.size()) {
    return absl::InternalError(absl::StrCat("gamma job: out has ", out.size(),
                                            " elements but shape has ",
                                            shape.size()));
  }
  constexpr size_t kBlock = 4096;
  const std::vector<T> ones(std::min(kBlock, shape.size()), T(1));
  for (size_t i = 0; i < shape.size(); i += kBlock) {
    const size_t n = std::min(kBlock, shape.size() - i);
    SAMPLER_RETURN_IF_ERROR(kernels::SampleGammaCpu<T>(
        shape.subspan(i, n), absl::MakeConstSpan(ones).subspan(0, n),
        job.log_output, job.seed, first_item + i, out.subspan(i, n)));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status RunGamma(const GammaJob& job, GammaWork<T>& w,
                      const Piece& piece) {
  const bool log = job.log_output;
  if (piece.whole) {
    if (!w.groups.empty()) {
      return kernels::SampleGammaGroupedCpu<T>(w.groups, log, job.seed,
                                               job.first_sample, w.out);
    }
    if (w.scale.empty()) {
      return GammaUnitScale<T>(job, w.shape, job.first_sample, w.out);
    }
    return kernels::SampleGammaCpu<T>(w.shape, w.scale, log, job.seed,
                                      job.first_sample, w.out);
  }
  const size_t begin = static_cast<size_t>(piece.begin);
  const size_t n = static_cast<size_t>(piece.end - piece.begin);
  const uint64_t first = job.first_sample + begin;
  absl::Span<T> out = w.out.subspan(begin, n);
  if (!w.groups.empty()) {
    return kernels::SampleGammaGroupedCpu<T>(
        ClipGammaGroups<T>(w.groups, piece.begin, piece.end), log, job.seed,
        first, out);
  }
  absl::Span<const T> shape = absl::MakeConstSpan(w.shape).subspan(begin, n);
  if (w.scale.empty()) return GammaUnitScale<T>(job, shape, first, out);
  return kernels::SampleGammaCpu<T>(
      shape, absl::MakeConstSpan(w.scale).subspan(begin, n), log, job.seed,
      first, out);
}

absl::Status RunPiece(GammaJob& job, const Piece& piece) {
  return InPiece(
      std::visit([&](auto& w) { return RunGamma(job, w, piece); }, job.work),
      piece, "samples");
}

// ------------------------------------------------------------- dirichlet ----

template <typename T>
bool Consistent(const DirichletWork<T>& w) {
  const std::vector<int64_t>& off = w.row_offsets;
  if (off.empty() || off[0] != 0) return false;
  for (size_t r = 1; r < off.size(); ++r) {
    if (off[r] <= off[r - 1]) return false;
  }
  return static_cast<uint64_t>(off.back()) == w.alpha.size() &&
         w.out.size() == w.alpha.size();
}

int64_t Cost(const DirichletJob& job) {
  return std::visit(
      [](const auto& w) {
        return CostMul(static_cast<int64_t>(w.alpha.size()),
                       kDirichletComponentCost);
      },
      job.work);
}

void Cut(const DirichletJob& job, size_t index, int64_t target,
         std::vector<Piece>& pieces) {
  std::visit(
      [&](const auto& w) {
        if (!Consistent(w)) {
          const int64_t rows = std::max<int64_t>(
              0, static_cast<int64_t>(w.row_offsets.size()) - 1);
          pieces.push_back({index, 0, rows, Cost(job), true});
          return;
        }
        // Rows are cut where the components (row_offsets, the cumulative
        // cost in components) cross multiples of the target.
        const size_t first = pieces.size();
        CutByCost(index, w.row_offsets,
                  std::max<int64_t>(1, target / kDirichletComponentCost),
                  pieces);
        for (size_t p = first; p < pieces.size(); ++p) {
          pieces[p].cost = CostMul(pieces[p].cost, kDirichletComponentCost);
        }
      },
      job.work);
}

template <typename T>
absl::Status RunDirichlet(const DirichletJob& job, DirichletWork<T>& w,
                          const Piece& piece) {
  if (piece.whole) {
    return kernels::SampleDirichletCpu<T>(w.alpha, w.row_offsets,
                                          job.log_output, job.seed, 0, w.out);
  }
  // Rows [begin, end) as a request of their own: offsets rebased to 0, and
  // items numbered from the first component, as in the whole request.
  const int64_t base = w.row_offsets[piece.begin];
  const size_t len = static_cast<size_t>(w.row_offsets[piece.end] - base);
  std::vector<int64_t> offsets(w.row_offsets.begin() + piece.begin,
                               w.row_offsets.begin() + piece.end + 1);
  for (int64_t& o : offsets) o -= base;
  return kernels::SampleDirichletCpu<T>(
      absl::MakeConstSpan(w.alpha).subspan(static_cast<size_t>(base), len),
      offsets, job.log_output, job.seed, static_cast<uint64_t>(base),
      w.out.subspan(static_cast<size_t>(base), len));
}

absl::Status RunPiece(DirichletJob& job, const Piece& piece) {
  return InPiece(
      std::visit([&](auto& w) { return RunDirichlet(job, w, piece); },
                 job.work),
      piece, "rows");
}

// ----------------------------------------------------------- categorical ----

template <typename T>
bool Consistent(const CategoricalJob& job, const CategoricalWork<T>& w) {
  const kernels::CategoricalShape& s = job.shape;
  if (s.rows < 0 || s.categories < 1 || s.draws < 1) return false;
  if (static_cast<uint64_t>(s.rows) >
      w.values.size() / static_cast<uint64_t>(s.categories)) {
    return false;
  }
  return w.values.size() == static_cast<uint64_t>(s.rows * s.categories) &&
         w.out.size() ==
             static_cast<uint64_t>(s.rows) * static_cast<uint64_t>(s.draws);
}

int64_t RowCost(const CategoricalJob& job) {
  int64_t levels = 1;
  while (levels < 62 && (int64_t{1} << levels) < job.shape.categories) {
    ++levels;
  }
  const int64_t draw = kCategoricalDrawCost + kCategoricalStepCost * levels;
  return CostAdd(CostMul(job.shape.categories, kCategoricalValueCost),
                 CostMul(job.shape.draws, draw));
}

int64_t Cost(const CategoricalJob& job) {
  return CostMul(std::max<int64_t>(job.shape.rows, 1), RowCost(job));
}

void Cut(const CategoricalJob& job, size_t index, int64_t target,
         std::vector<Piece>& pieces) {
  const bool ok =
      std::visit([&](const auto& w) { return Consistent(job, w); }, job.work);
  if (!ok) {
    pieces.push_back(
        {index, 0, std::max<int64_t>(job.shape.rows, 0), Cost(job), true});
  } else {
    CutEvenly(index, job.shape.rows, Cost(job), target, pieces);
  }
}

template <typename T>
absl::Status RunCategorical(const CategoricalJob& job, CategoricalWork<T>& w,
                            const Piece& piece) {
  if (piece.whole) {
    return kernels::SampleCategoricalCpu<T>(
        w.values, job.shape, job.weight_kind, job.seed, job.first_row, w.out);
  }
  const size_t k = static_cast<size_t>(job.shape.categories);
  const size_t d = static_cast<size_t>(job.shape.draws);
  const size_t begin = static_cast<size_t>(piece.begin);
  const size_t rows = static_cast<size_t>(piece.end - piece.begin);
  kernels::CategoricalShape shape = job.shape;
  shape.rows = static_cast<int64_t>(rows);
  // Parsing validated the values (request_parse.h): the pieces do not read
  // them a second time before sampling.
  return kernels::SampleCategoricalCpu<T>(
      w.values.subspan(begin * k, rows * k), shape, job.weight_kind, job.seed,
      job.first_row + begin, w.out.subspan(begin * d, rows * d),
      kernels::CategoricalValues::kValidated);
}

absl::Status RunPiece(CategoricalJob& job, const Piece& piece) {
  return InPiece(
      std::visit([&](auto& w) { return RunCategorical(job, w, piece); },
                 job.work),
      piece, "rows");
}

// ---------------------------------------------------------------- boards ----

int64_t WordsPerPosition(const BoardsJob& job) {
  return int64_t{kernels::BoardWords64(job.spec)} *
         static_cast<int64_t>(job.spec.stones.size());
}

int64_t PositionCost(const BoardsJob& job) {
  return std::max<int64_t>(
      1, CostMul(WordsPerPosition(job), kBoardColourWordCost));
}

int64_t Cost(const BoardsJob& job) {
  return CostMul(std::max<int64_t>(job.count, 1), PositionCost(job));
}

void Cut(const BoardsJob& job, size_t index, int64_t target,
         std::vector<Piece>& pieces) {
  const int64_t per = WordsPerPosition(job);
  const bool ok = per > 0 && job.count >= 0 &&
                  static_cast<uint64_t>(job.count) <= job.out.size() / per &&
                  job.out.size() == static_cast<uint64_t>(job.count * per);
  if (!ok) {
    pieces.push_back(
        {index, 0, std::max<int64_t>(job.count, 0), Cost(job), true});
  } else {
    CutEvenly(index, job.count, Cost(job), target, pieces);
  }
}

absl::Status RunPiece(BoardsJob& job, const Piece& piece) {
  if (piece.whole) {
    return kernels::SampleBoardsCpu(job.spec, job.seed, job.first_position,
                                    job.count, job.out);
  }
  const size_t per = static_cast<size_t>(WordsPerPosition(job));
  const int64_t count = piece.end - piece.begin;
  return InPiece(
      kernels::SampleBoardsCpu(
          job.spec, job.seed, job.first_position + piece.begin, count,
          job.out.subspan(static_cast<size_t>(piece.begin) * per,
                          static_cast<size_t>(count) * per)),
      piece, "positions");
}

// ------------------------------------------------------------- enumerate ----

template <typename T>
std::vector<kernels::PmfTerm<T>> Terms(const EnumerateProblem<T>& p) {
  std::vector<kernels::PmfTerm<T>> terms(p.terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    terms[i].offset = i < p.offsets.size() ? p.offsets[i] : 0;
    terms[i].values = p.terms[i];
  }
  return terms;
}

// Cumulative cost of the problems: cum[i] is the cost of problems [0, i).
template <typename T>
std::vector<int64_t> ProblemCosts(const EnumerateWork<T>& w) {
  const bool linear = w.input_space == kernels::ProbSpace::kLinear &&
                      w.output_space == kernels::ProbSpace::kLinear;
  std::vector<int64_t> cum(w.problems.size() + 1, 0);
  for (size_t i = 0; i < w.problems.size(); ++i) {
    const EnumerateProblem<T>& p = w.problems[i];
    const std::vector<kernels::PmfTerm<T>> terms = Terms(p);
    const int64_t pairs =
        kernels::EnumeratePairCount<T>(absl::MakeConstSpan(terms));
    int64_t cost = CostMul(std::max<int64_t>(pairs, 1),
                           linear ? kEnumeratePairCost : kEnumerateLogPairCost);
    cost = CostAdd(cost, static_cast<int64_t>(p.out.size()));
    cum[i + 1] = CostAdd(cum[i], cost);
  }
  return cum;
}

int64_t Cost(const EnumerateJob& job) {
  return std::visit([](const auto& w) { return ProblemCosts(w).back(); },
                    job.work);
}

void Cut(const EnumerateJob& job, size_t index, int64_t target,
         std::vector<Piece>& pieces) {
  std::visit(
      [&](const auto& w) {
        // A problem is a sequential fold, so problems are the smallest unit.
        CutByCost(index, ProblemCosts(w), target, pieces);
      },
      job.work);
}

template <typename T>
absl::Status RunProblem(const EnumerateWork<T>& w, EnumerateProblem<T>& p) {
  if (p.offsets.size() != p.terms.size()) {
    return absl::InternalError(absl::StrCat(p.offsets.size(), " offsets for ",
                                            p.terms.size(), " terms"));
  }
  const std::vector<kernels::PmfTerm<T>> terms = Terms(p);
  SAMPLER_ASSIGN_OR_RETURN(
      const kernels::Pmf<T> pmf,
      kernels::EnumerateCpu<T>(absl::MakeConstSpan(terms), w.input_space,
                               w.output_space));
  if (pmf.values.size() != p.out.size()) {
    // Validation sized the output from the same formula; a mismatch is a
    // bug, and writing past `out` is not an option.
    return absl::InternalError(absl::StrCat("result has ", pmf.values.size(),
                                            " elements but its output has ",
                                            p.out.size()));
  }
  std::copy(pmf.values.begin(), pmf.values.end(), p.out.begin());
  if (p.out_offset != nullptr) *p.out_offset = pmf.offset;
  return absl::OkStatus();
}

absl::Status RunPiece(EnumerateJob& job, const Piece& piece) {
  return std::visit(
      [&](auto& w) {
        for (int64_t i = piece.begin; i < piece.end; ++i) {
          absl::Status s = RunProblem(w, w.problems[static_cast<size_t>(i)]);
          // Problems are numbered in every message, split or not: the
          // kernel's own message names only the term.
          if (!s.ok()) {
            return absl::Status(
                s.code(), absl::StrCat("problems[", i, "]: ", s.message()));
          }
        }
        return absl::OkStatus();
      },
      job.work);
}

// ----------------------------------------------------------------- batch ----

// Kernels return Status; this only stops an allocation failure (or a bug
// that throws) from escaping a pool thread and terminating the server.
template <typename JobT>
absl::Status RunPieceGuarded(JobT& job, const Piece& piece) {
  try {
    return RunPiece(job, piece);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of host memory");
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("exception: ", e.what()));
  } catch (...) {
    return absl::InternalError("unknown exception");
  }
}

template <typename JobT>
struct BatchState {
  Batch<JobT> batch;
  BatchDone done;
  std::vector<Piece> pieces;
  std::vector<absl::Status> piece_status;  // each written by one task
  std::atomic<int64_t> tasks_left{0};
  // Set by the planning task, which every other task runs after.
  Clock::time_point start;

  void MarkStarted() { start = Clock::now(); }

  // Cuts the jobs into pieces and packs consecutive pieces (small jobs) into
  // tasks of about the target cost each; returns the tasks' piece ranges, at
  // least one (an empty batch still reports from a task).
  std::vector<std::pair<size_t, size_t>> Plan(int threads) {
    std::vector<std::shared_ptr<JobT>>& jobs = batch.jobs;
    // A null job has no work; dropping it keeps every piece's job valid.
    jobs.erase(std::remove(jobs.begin(), jobs.end(), nullptr), jobs.end());
    int64_t total = 0;
    for (const std::shared_ptr<JobT>& job : jobs) {
      total = CostAdd(total, Cost(*job));
    }
    const int64_t target = std::max(
        kMinPieceCost, total / (int64_t{threads} * kPiecesPerThread) + 1);
    for (size_t j = 0; j < jobs.size(); ++j) Cut(*jobs[j], j, target, pieces);
    piece_status.resize(pieces.size());

    std::vector<std::pair<size_t, size_t>> ranges;
    for (size_t first = 0; first < pieces.size();) {
      size_t last = first;
      int64_t cost = 0;
      do {
        cost = CostAdd(cost, pieces[last].cost);
        ++last;
      } while (last < pieces.size() && cost + pieces[last].cost <= target);
      ranges.emplace_back(first, last);
      first = last;
    }
    if (ranges.empty()) ranges.emplace_back(0, 0);
    return ranges;
  }

  // Runs pieces [first, last); the batch's last task to finish reports it.
  void RunTask(size_t first, size_t last) {
    for (size_t p = first; p < last; ++p) {
      piece_status[p] = RunPieceGuarded(*batch.jobs[pieces[p].job], pieces[p]);
    }
    // acq_rel: the finisher sees every other task's piece_status writes.
    if (tasks_left.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish();
  }

  void Finish() {
    const double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    // A job's pieces are consecutive; its status is its first failure.
    for (size_t p = 0; p < pieces.size();) {
      const size_t job = pieces[p].job;
      absl::Status status;
      for (; p < pieces.size() && pieces[p].job == job; ++p) {
        if (status.ok()) status = std::move(piece_status[p]);
      }
      batch.jobs[job]->status = std::move(status);
    }
    BatchResult result;
    result.device = "cpu";
    result.device_seconds = seconds;
    BatchDone callback = std::move(done);
    callback(std::move(result));
  }
};

// Plans the batch and runs its first task on the calling thread, queueing
// the other tasks on the pool; or, `all_here`, runs every task here (so that
// done has been called when this returns).
template <typename JobT>
void PlanAndRun(const std::shared_ptr<BatchState<JobT>>& state, CpuPool& pool,
                bool all_here) {
  state->MarkStarted();
  std::vector<std::pair<size_t, size_t>> ranges;
  // Planning allocates (pieces, statuses); should that fail, the batch
  // fails as a whole rather than the exception ending the server.
  try {
    ranges = state->Plan(pool.threads());
  } catch (const std::exception& e) {
    BatchResult failed;
    failed.status = absl::ResourceExhaustedError(
        absl::StrCat("cpu backend cannot plan the batch: ", e.what()));
    failed.device = "cpu";
    BatchDone callback = std::move(state->done);
    callback(std::move(failed));
    return;
  }
  // Set before any task can finish, so that none sees a count of zero.
  state->tasks_left.store(static_cast<int64_t>(ranges.size()),
                          std::memory_order_relaxed);
  if (all_here) {
    for (const auto& [first, last] : ranges) state->RunTask(first, last);
    return;
  }
  std::vector<std::function<void()>> tasks;
  tasks.reserve(ranges.size() - 1);
  for (size_t i = 1; i < ranges.size(); ++i) {
    tasks.push_back([state, range = ranges[i]] {
      state->RunTask(range.first, range.second);
    });
  }
  if (!tasks.empty()) pool.Enqueue(std::move(tasks));
  state->RunTask(ranges[0].first, ranges[0].second);
}

// Plans the batch on a pool thread and runs it there (see the header).
template <typename JobT>
void ExecuteBatch(Batch<JobT> batch, CpuPool& pool, BatchDone done) {
  auto state = std::make_shared<BatchState<JobT>>();
  state->batch = std::move(batch);
  state->done = std::move(done);
  // Planning walks the inputs (group counts, row offsets, terms), so it runs
  // on the pool rather than on the caller's (the batcher's) thread: this
  // only queues. The planning task then runs the first piece range itself.
  std::vector<std::function<void()>> plan;
  plan.push_back(
      [&pool, state] { PlanAndRun(state, pool, /*all_here=*/false); });
  pool.Enqueue(std::move(plan));
}

// Whether the batch's work is at most `limit` (cost units), counting no
// further than needed. Costs walk inputs the caller has just parsed (at
// most), and may allocate: a failure only means "not here".
template <typename JobT>
bool CostAtMost(const Batch<JobT>& batch, int64_t limit) {
  try {
    int64_t total = 0;
    for (const std::shared_ptr<JobT>& job : batch.jobs) {
      if (job == nullptr) continue;
      total = CostAdd(total, Cost(*job));
      if (total > limit) return false;
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Set while a batch runs through ExecuteOnCpuHere on this thread: a batch
// that its done callbacks submit goes to the pool, so that runs do not nest.
thread_local bool running_here = false;

template <typename JobT>
bool ExecuteBatchHere(Batch<JobT>& batch, CpuPool& pool, BatchDone& done) {
  if (running_here || !CostAtMost(batch, kMinPieceCost)) return false;
  running_here = true;
  auto state = std::make_shared<BatchState<JobT>>();
  state->batch = std::move(batch);
  state->done = std::move(done);
  // One task by its cost; all_here holds the promise whatever the plan.
  PlanAndRun(state, pool, /*all_here=*/true);
  running_here = false;
  return true;
}

}  // namespace

void ExecuteOnCpu(AnyBatch batch, CpuPool& pool, BatchDone done) {
  std::visit(
      [&](auto& b) { ExecuteBatch(std::move(b), pool, std::move(done)); },
      batch);
}

bool ExecuteOnCpuHere(AnyBatch& batch, CpuPool& pool, BatchDone& done) {
  return std::visit([&](auto& b) { return ExecuteBatchHere(b, pool, done); },
                    batch);
}

}  // namespace sampler::server
