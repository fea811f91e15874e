// The backend interface: executes whole batches as segmented problems. The
// CPU backend (cpu_backend.h) runs them on a thread pool; the CUDA backend
// packs each batch into pinned staging memory and launches one kernel per
// batch on one of its streams. Both report completion asynchronously, so the
// batcher can keep filling the next batch while one runs.
#ifndef SAMPLER_SERVER_BACKEND_H_
#define SAMPLER_SERVER_BACKEND_H_

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "server/jobs.h"

namespace sampler::server {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int64_t memory_bytes = 0;
  std::string compute_capability;
  int multiprocessors = 0;
  // Empty when the device serves; otherwise why it could not be initialised
  // (it is listed, and takes no batch).
  std::string unavailable_reason;
};

struct BackendInfo {
  std::string name;  // "cpu" or "cuda"
  std::vector<DeviceInfo> devices;
  std::string reason;  // why this backend was chosen
};

// Called once per batch when every output of the batch is written (or the
// batch failed as a whole: RESOURCE_EXHAUSTED when device memory ran out,
// INTERNAL for a device error). Per-job failures are in each job's `status`.
// `device` names where it ran ("cpu", "0", "1", ...) and `device_seconds` is
// the execution time measured there (kernel time from events on a GPU), for
// the metrics.
struct BatchResult {
  absl::Status status;
  std::string device;
  double device_seconds = 0;
};
using BatchDone = std::function<void(BatchResult)>;

// A batch of any kind: what Backend::Run takes. A backend's per-kind code is
// chosen by std::visit over it (overloads on Batch<JobT>), so adding a kind
// is adding an alternative here and an overload in each backend.
using AnyBatch =
    std::variant<Batch<EnumerateJob>, Batch<CategoricalJob>, Batch<GammaJob>,
                 Batch<DirichletJob>, Batch<BoardsJob>>;

class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendInfo Info() const = 0;

  // How many batches it can execute at once. A batcher holds its next batch
  // back while this many are in flight, so batches grow under load.
  virtual int Capacity() const = 0;

  // Execute a batch. Returns at once (or after a short enqueue); `done` is
  // called exactly once, from any thread. The jobs' inputs and outputs stay
  // alive until then.
  // A Batch<JobT> converts to AnyBatch implicitly.
  virtual void Run(AnyBatch batch, BatchDone done) = 0;

  // Batches that may execute at once before a batcher with close_when_idle
  // holds its next batch back so that it grows (batcher.h): 1 by default,
  // for a GPU, where one larger launch beats several small ones.
  virtual int EagerBatches() const { return 1; }

  // Runs the batch on the calling thread, calling `done` before returning,
  // and returns true, when the backend can do so at about the cost of a
  // hand-off (the CPU backend: a batch of one task's work); otherwise
  // returns false and leaves `batch` and `done` untouched (call Run). The
  // batcher tries it for a batch closed on a request's own thread, so that
  // a small request is served without a thread hop.
  virtual bool RunHere(AnyBatch& /*batch*/, BatchDone& /*done*/) {
    return false;
  }

  // Bytes in the device memory pools by state ("used", "reserved"), per
  // device, for the sampler_device_pool_bytes gauge. Empty on the CPU.
  struct PoolBytes {
    std::string device;
    int64_t used = 0;
    int64_t reserved = 0;
  };
  virtual std::vector<PoolBytes> PoolUsage() const { return {}; }
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_BACKEND_H_
