// Typed jobs: a validated request (or one chunk of a streamed request), ready
// to be batched and executed. Parsing (request_parse.h) builds them from the
// protos; the batcher groups them; a backend executes a batch of them and
// writes each job's output straight into its response's memory.
#ifndef SAMPLER_SERVER_JOBS_H_
#define SAMPLER_SERVER_JOBS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/gamma.h"

namespace sampler::server {

using Clock = std::chrono::steady_clock;

// The five request kinds, each with its own batcher. Also the `method` label
// of the metrics (MethodName).
enum class Kind { kEnumerate, kCategorical, kGamma, kDirichlet, kBoards };
inline constexpr Kind kAllKinds[] = {Kind::kEnumerate, Kind::kCategorical,
                                     Kind::kGamma, Kind::kDirichlet,
                                     Kind::kBoards};
const char* MethodName(Kind kind);  // "Enumerate", "SampleGamma", ...

// What every job carries besides its work: how much work it is, when it must
// be done by, how to tell that its client left, and whom to tell when done.
struct Job {
  virtual ~Job() = default;

  // Work items: samples, rows x draws, output elements or positions. Batches
  // close on these; queues are bounded by them.
  int64_t items = 0;
  // Who asked, for fair admission (QueueBudget): the bearer token or the
  // peer address; chunks of a stream carry their stream's.
  std::string client;
  // The seed used (echoed to the client).
  uint64_t seed = 0;
  // When the client stops waiting; Clock::time_point::max() for never.
  Clock::time_point deadline = Clock::time_point::max();
  // Set by the service; true once the client has cancelled or gone away.
  std::function<bool()> cancelled = [] { return false; };
  // Set on entering the queue (for the queue-wait metric).
  Clock::time_point enqueued{};
  // Set by the service for a unary call when it counts calls per connection
  // (connection_calls.h, for --gpu_inline=auto): no other unary call of its
  // connection was in the server when it was queued, nor two at once within
  // the last second. False when not counted (and for every piece of a
  // stream).
  bool lone_call = false;
  // A per-job failure found during execution (e.g. an enumeration whose
  // result overflows the precision); OK otherwise. Written by the backend.
  absl::Status status;
  // Called exactly once, from any thread, with the job's final status: its
  // own, or the batch's if the batch failed, or CANCELLED/DEADLINE_EXCEEDED
  // if it was dropped before execution, or UNAVAILABLE at shutdown.
  std::function<void(absl::Status)> done;
};

// ---------------------------------------------------------------- kinds ----
// Each kind's parameters come in the request's precision T (float or double);
// `out` points into the response message (or a chunk's buffer).

// A problem's terms view `values`, which holds each distinct term's values
// once: a term that the request repeats k times (EnumerateProblem.repeats)
// is k entries of `terms` and `offsets` viewing the same values. Move-only,
// because a copy's terms would still view the original's values.
template <typename T>
struct EnumerateProblem {
  EnumerateProblem() = default;
  EnumerateProblem(EnumerateProblem&&) = default;
  EnumerateProblem& operator=(EnumerateProblem&&) = default;
  EnumerateProblem(const EnumerateProblem&) = delete;
  EnumerateProblem& operator=(const EnumerateProblem&) = delete;

  std::vector<T> values;
  std::vector<int64_t> offsets;
  std::vector<absl::Span<const T>> terms;  // into `values`
  absl::Span<T> out;              // result length: sum(len) - (terms - 1)
  int64_t* out_offset = nullptr;  // sum of offsets, written by the backend
};
template <typename T>
struct EnumerateWork {
  kernels::ProbSpace input_space = kernels::ProbSpace::kLinear;
  kernels::ProbSpace output_space = kernels::ProbSpace::kLinear;
  std::vector<EnumerateProblem<T>> problems;
};
struct EnumerateJob : Job {
  std::variant<EnumerateWork<float>, EnumerateWork<double>> work;
};

template <typename T>
struct CategoricalWork {
  // rows x categories, row-major, in memory that the job's values_owner
  // keeps alive: the parsed request's own (its arena), read where it lies,
  // or a converted copy (request_parse.h).
  absl::Span<const T> values;
  absl::Span<int32_t> out;  // rows x draws
};
struct CategoricalJob : Job {
  kernels::CategoricalShape shape;  // rows, categories, draws
  kernels::WeightKind weight_kind = kernels::WeightKind::kWeights;
  uint64_t first_row = 0;  // within the request (chunks of a stream)
  std::variant<CategoricalWork<float>, CategoricalWork<double>> work;
  // Owns the memory work.values points into; shared by a stream's pieces,
  // whose values are spans of the whole request's.
  std::shared_ptr<const void> values_owner;
};

template <typename T>
struct GammaWork {
  // Either per-element parameters (scale empty means 1) or groups.
  std::vector<T> shape;
  std::vector<T> scale;
  std::vector<kernels::GammaGroup<T>> groups;
  absl::Span<T> out;
};
struct GammaJob : Job {
  bool log_output = false;
  uint64_t first_sample = 0;  // within the request (chunks of a stream)
  std::variant<GammaWork<float>, GammaWork<double>> work;
  // A whole streamed request with groups: the end of each group in samples
  // (one entry per group), so that each chunk finds its first group by
  // binary search rather than a walk over all groups (a stream may have
  // millions of groups and thousands of chunks). Empty otherwise, chunks
  // included; slicing then walks the groups.
  std::vector<int64_t> group_ends;
};

template <typename T>
struct DirichletWork {
  std::vector<T> alpha;              // rows laid end to end
  std::vector<int64_t> row_offsets;  // rows + 1 entries, from 0
  absl::Span<T> out;                 // like alpha
};
struct DirichletJob : Job {
  bool log_output = false;
  std::variant<DirichletWork<float>, DirichletWork<double>> work;
};

struct BoardsJob : Job {
  kernels::BoardSpec spec;
  int64_t count = 0;            // positions
  uint64_t first_position = 0;  // within the request (chunks of a stream)
  absl::Span<uint64_t> out;     // count x colours x words
};

// A batch: jobs of one kind executed together as one segmented problem.
template <typename JobT>
struct Batch {
  std::vector<std::shared_ptr<JobT>> jobs;
  int64_t items = 0;
  // Set by the batcher when it closed this batch on the thread of a call
  // that arrived alone on its connection (Job::lone_call): holding that
  // gRPC thread for the batch (Backend::RunHere) keeps no other call of
  // that connection waiting to be read (CudaBackend, --gpu_inline=auto).
  bool closed_on_lone_call = false;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_JOBS_H_
