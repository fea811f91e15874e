#include "client/loadgen/loadgen_driver.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "client/common/grpc_util.h"
#include "sampler/kernels/status_macros.h"
#include "sampler/v1/sampler.grpc.pb.h"

namespace sampler::client {
namespace {

using Clock = std::chrono::steady_clock;
using AsyncApi = sampler::v1::SamplerService::StubInterface::async_interface;
using DoneCallback = std::function<void(grpc::Status)>;

// One call in flight at a time: a private copy of the request (between calls
// only its seed changes), a response buffer and a fresh context per call.
class CallSlot {
 public:
  virtual ~CallSlot() = default;
  // Starts a call; `done` runs once, on a gRPC thread, when it ends.
  virtual void Start(AsyncApi* api, std::optional<uint64_t> seed,
                     absl::Duration deadline, DoneCallback done) = 0;
};

// Enumeration is deterministic: its request has no seed.
void SetSeed(std::optional<uint64_t>, sampler::v1::EnumerateRequest*) {}

template <typename Request>
void SetSeed(std::optional<uint64_t> seed, Request* request) {
  if (seed.has_value()) {
    request->set_seed(*seed);
  } else {
    request->clear_seed();
  }
}

template <typename Request, typename Response>
using StartFunction = void (*)(AsyncApi*, grpc::ClientContext*, const Request*,
                               Response*, DoneCallback);

template <typename Request, typename Response>
class UnaryCallSlot final : public CallSlot {
 public:
  UnaryCallSlot(const Request& request,
                StartFunction<Request, Response> start_function)
      : request_(request), start_function_(start_function) {}

  void Start(AsyncApi* api, std::optional<uint64_t> seed,
             absl::Duration deadline, DoneCallback done) override {
    // The previous call has ended (its callback ran), so its context and
    // response are free for reuse.
    context_.emplace();
    SetTimeout(deadline, &*context_);
    SetSeed(seed, &request_);
    response_.Clear();
    start_function_(api, &*context_, &request_, &response_, std::move(done));
  }

 private:
  Request request_;
  Response response_;
  std::optional<grpc::ClientContext> context_;
  const StartFunction<Request, Response> start_function_;
};

void StartEnumerate(AsyncApi* api, grpc::ClientContext* context,
                    const sampler::v1::EnumerateRequest* request,
                    sampler::v1::EnumerateResponse* response,
                    DoneCallback done) {
  api->Enumerate(context, request, response, std::move(done));
}
void StartCategorical(AsyncApi* api, grpc::ClientContext* context,
                      const sampler::v1::SampleCategoricalRequest* request,
                      sampler::v1::SampleCategoricalResponse* response,
                      DoneCallback done) {
  api->SampleCategorical(context, request, response, std::move(done));
}
void StartGamma(AsyncApi* api, grpc::ClientContext* context,
                const sampler::v1::SampleGammaRequest* request,
                sampler::v1::SampleGammaResponse* response, DoneCallback done) {
  api->SampleGamma(context, request, response, std::move(done));
}
void StartDirichlet(AsyncApi* api, grpc::ClientContext* context,
                    const sampler::v1::SampleDirichletRequest* request,
                    sampler::v1::SampleDirichletResponse* response,
                    DoneCallback done) {
  api->SampleDirichlet(context, request, response, std::move(done));
}
void StartBoards(AsyncApi* api, grpc::ClientContext* context,
                 const sampler::v1::SampleBoardsRequest* request,
                 sampler::v1::SampleBoardsResponse* response,
                 DoneCallback done) {
  api->SampleBoards(context, request, response, std::move(done));
}

using SlotFactory = std::function<std::unique_ptr<CallSlot>()>;

struct PreparedLoad {
  SlotFactory new_slot;
  int64_t items_per_request = 0;
};

template <typename Request, typename Response>
absl::StatusOr<PreparedLoad> Prepare(
    absl::StatusOr<Request> made_request,
    StartFunction<Request, Response> start_function) {
  SAMPLER_ASSIGN_OR_RETURN(Request request, std::move(made_request));
  PreparedLoad load;
  load.items_per_request = ItemCount(request);
  load.new_slot = [request = std::move(request), start_function] {
    return std::make_unique<UnaryCallSlot<Request, Response>>(request,
                                                              start_function);
  };
  return load;
}

absl::StatusOr<PreparedLoad> PrepareLoad(RpcKind kind, const LoadShape& shape) {
  switch (kind) {
    case RpcKind::kEnumerate:
      return Prepare<sampler::v1::EnumerateRequest,
                     sampler::v1::EnumerateResponse>(MakeEnumerateLoad(shape),
                                                     StartEnumerate);
    case RpcKind::kCategorical:
      return Prepare<sampler::v1::SampleCategoricalRequest,
                     sampler::v1::SampleCategoricalResponse>(
          MakeCategoricalLoad(shape), StartCategorical);
    case RpcKind::kGamma:
      return Prepare<sampler::v1::SampleGammaRequest,
                     sampler::v1::SampleGammaResponse>(MakeGammaLoad(shape),
                                                       StartGamma);
    case RpcKind::kDirichlet:
      return Prepare<sampler::v1::SampleDirichletRequest,
                     sampler::v1::SampleDirichletResponse>(
          MakeDirichletLoad(shape), StartDirichlet);
    case RpcKind::kBoards:
      return Prepare<sampler::v1::SampleBoardsRequest,
                     sampler::v1::SampleBoardsResponse>(MakeBoardsLoad(shape),
                                                        StartBoards);
  }
  return absl::InvalidArgumentError("unknown RPC kind");
}

// Whether `duration` bounds the run (0 and infinity do not).
bool IsTimeBound(absl::Duration duration) {
  return duration > absl::ZeroDuration() &&
         duration != absl::InfiniteDuration();
}

double Seconds(Clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

// One run: shared by the thread that starts requests, gRPC's callback
// threads that finish them, and the progress thread.
class LoadRun {
 public:
  LoadRun(const DriverOptions& options, SlotFactory new_slot)
      : options_(options), new_slot_(std::move(new_slot)) {
    for (const std::shared_ptr<grpc::Channel>& channel : options_.channels) {
      stubs_.push_back(sampler::v1::SamplerService::NewStub(channel));
    }
  }

  LoadResult Run() {
    start_ = Clock::now();
    stop_starting_at_ =
        IsTimeBound(options_.duration)
            ? start_ + absl::ToChronoNanoseconds(options_.duration)
            : Clock::time_point::max();
    last_done_ = start_;
    std::thread progress;
    if (options_.progress) progress = std::thread([this] { ProgressLoop(); });

    if (options_.rate_per_s > 0) {
      RunOpenLoop();
    } else {
      RunClosedLoop();
    }

    {
      absl::MutexLock lock(&mu_);
      finished_ = true;
    }
    if (progress.joinable()) progress.join();
    absl::MutexLock lock(&mu_);
    result_.sent = sent_.load();
    result_.elapsed_s = Seconds(last_done_ - start_);
    return std::move(result_);
  }

 private:
  // Claims the index of the next request, or nothing when a bound is hit.
  std::optional<int64_t> ClaimIndex() {
    if (Clock::now() >= stop_starting_at_) return std::nullopt;
    const int64_t index = next_index_.fetch_add(1);
    if (options_.max_requests > 0 && index >= options_.max_requests) {
      return std::nullopt;
    }
    return index;
  }

  std::optional<uint64_t> SeedOf(int64_t index) const {
    if (!options_.base_seed.has_value()) return std::nullopt;
    return *options_.base_seed + static_cast<uint64_t>(index);
  }

  AsyncApi* ApiFor(int64_t index) {
    return stubs_[index % stubs_.size()]->async();
  }

  void RunClosedLoop() {
    std::vector<std::unique_ptr<CallSlot>> slots;
    for (int i = 0; i < options_.concurrency; ++i) slots.push_back(new_slot_());
    {
      absl::MutexLock lock(&mu_);
      active_slots_ = options_.concurrency;
    }
    for (std::unique_ptr<CallSlot>& slot : slots) StartNext(slot.get());
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int64_t* active) { return *active == 0; }, &active_slots_));
  }

  // Closed loop: the slot's next request, started as soon as the previous
  // one ends; a slot with nothing left to do retires.
  void StartNext(CallSlot* slot) {
    const std::optional<int64_t> index = ClaimIndex();
    if (!index.has_value()) {
      absl::MutexLock lock(&mu_);
      --active_slots_;
      return;
    }
    sent_.fetch_add(1);
    const Clock::time_point started = Clock::now();
    slot->Start(ApiFor(*index), SeedOf(*index), options_.deadline,
                [this, slot, started](grpc::Status status) {
                  Record(status, Clock::now() - started);
                  StartNext(slot);
                });
  }

  void RunOpenLoop() {
    const double nanoseconds_per_request = 1e9 / options_.rate_per_s;
    for (int64_t index = 0;; ++index) {
      // Due times come from the index, not from the previous start, so that
      // late starts do not lower the rate.
      const Clock::time_point due =
          start_ + std::chrono::nanoseconds(static_cast<int64_t>(
                       static_cast<double>(index) * nanoseconds_per_request));
      if (due >= stop_starting_at_) break;
      if (options_.max_requests > 0 && index >= options_.max_requests) break;
      std::this_thread::sleep_until(due);
      CallSlot* slot = AcquireSlot();
      sent_.fetch_add(1);
      // Latency counts from when the request was due: a server that falls
      // behind delays starts, and that delay is part of what a client sees.
      slot->Start(ApiFor(index), SeedOf(index), options_.deadline,
                  [this, slot, due](grpc::Status status) {
                    Record(status, Clock::now() - due);
                    ReleaseSlot(slot);
                  });
    }
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int64_t* outstanding) { return *outstanding == 0; },
        &outstanding_));
  }

  // Open loop: a free slot (new ones as needed), waiting while
  // max_outstanding requests are in flight.
  CallSlot* AcquireSlot() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &LoadRun::BelowMaxOutstanding));
    ++outstanding_;
    if (free_slots_.empty()) {
      all_slots_.push_back(new_slot_());
      return all_slots_.back().get();
    }
    CallSlot* slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }

  bool BelowMaxOutstanding() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return outstanding_ < options_.max_outstanding;
  }

  void ReleaseSlot(CallSlot* slot) {
    absl::MutexLock lock(&mu_);
    free_slots_.push_back(slot);
    --outstanding_;
  }

  void Record(const grpc::Status& status, Clock::duration latency) {
    const Clock::time_point now = Clock::now();
    absl::MutexLock lock(&mu_);
    last_done_ = std::max(last_done_, now);
    if (status.ok()) {
      ++result_.ok;
      result_.latencies_ns.push_back(
          std::chrono::duration_cast<std::chrono::nanoseconds>(latency)
              .count());
      return;
    }
    const std::string code = StatusCodeName(status.error_code());
    if (result_.errors[code]++ == 0) {
      result_.first_error_message[code] = status.error_message();
    }
    ++failed_;
  }

  // Once a second: counts so far and the rate over the last second. Only
  // runs that last more than about 2 s get it; shorter ones are over before
  // a person could read it.
  void ProgressLoop() {
    const bool terminal = isatty(STDERR_FILENO) != 0;
    const bool long_run =
        IsTimeBound(options_.duration) && options_.duration > absl::Seconds(2);
    int64_t previous_ok = 0;
    bool printed = false;
    for (int second = 1;; ++second) {
      std::string line;
      {
        absl::MutexLock lock(&mu_);
        const Clock::time_point tick = start_ + std::chrono::seconds(second);
        const absl::Duration wait =
            absl::FromChrono(std::max(tick - Clock::now(), Clock::duration(0)));
        if (mu_.AwaitWithTimeout(absl::Condition(&finished_), wait)) break;
        const int64_t sent = sent_.load();
        if (long_run || second >= 2) {
          line = absl::StrFormat(
              "[%4ds] %d sent, %d ok, %d failed, %d in flight, %d ok/s", second,
              sent, result_.ok, failed_, sent - result_.ok - failed_,
              result_.ok - previous_ok);
        }
        previous_ok = result_.ok;
      }
      if (line.empty()) continue;
      // \r rewrites the line on a terminal; a log gets one line each.
      std::fprintf(stderr, terminal ? "\r%-78s" : "%s\n", line.c_str());
      std::fflush(stderr);
      printed = true;
    }
    if (printed && terminal) std::fputc('\n', stderr);
  }

  const DriverOptions& options_;
  const SlotFactory new_slot_;
  std::vector<std::unique_ptr<sampler::v1::SamplerService::Stub>> stubs_;
  Clock::time_point start_;
  Clock::time_point stop_starting_at_;
  std::atomic<int64_t> next_index_{0};
  std::atomic<int64_t> sent_{0};

  absl::Mutex mu_;
  LoadResult result_ ABSL_GUARDED_BY(mu_);
  int64_t failed_ ABSL_GUARDED_BY(mu_) = 0;
  Clock::time_point last_done_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // Closed loop: slots still starting requests.
  int64_t active_slots_ ABSL_GUARDED_BY(mu_) = 0;
  // Open loop: requests in flight, and slots not in use.
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<CallSlot>> all_slots_ ABSL_GUARDED_BY(mu_);
  std::vector<CallSlot*> free_slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<int64_t> ItemsPerRequest(RpcKind kind, const LoadShape& shape) {
  SAMPLER_ASSIGN_OR_RETURN(const PreparedLoad load, PrepareLoad(kind, shape));
  return load.items_per_request;
}

absl::StatusOr<LoadResult> RunLoad(RpcKind kind, const LoadShape& shape,
                                   const DriverOptions& options) {
  if (options.channels.empty()) {
    return absl::InvalidArgumentError("no channels");
  }
  if (options.rate_per_s < 0) {
    return absl::InvalidArgumentError("--rate cannot be negative");
  }
  if (options.rate_per_s == 0 && options.concurrency <= 0) {
    return absl::InvalidArgumentError("--concurrency must be positive");
  }
  if (options.max_outstanding <= 0) {
    return absl::InvalidArgumentError("--max_outstanding must be positive");
  }
  if (!IsTimeBound(options.duration) && options.max_requests <= 0) {
    return absl::InvalidArgumentError(
        "the run needs a bound: --duration and/or --requests");
  }
  SAMPLER_ASSIGN_OR_RETURN(PreparedLoad load, PrepareLoad(kind, shape));
  LoadRun run(options, std::move(load.new_slot));
  return run.Run();
}

}  // namespace sampler::client
