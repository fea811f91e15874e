// --cpu_below_items (issue 13 item 5): with a GPU backend, batches too small
// to gain from the GPU are served by a CPU backend in the same process. A
// batch is routed as a whole, when it closes: under load batches grow past
// the threshold and go to the GPU; a lone small request goes to the CPU
// (and, when it is one task's work, runs on its own gRPC thread,
// Backend::RunHere), skipping the staging, the copies and the stream
// synchronisation that cost more than its sampling.
//
// The sampling kinds give the same bits on either backend
// (docs/randomness.md), so which one served a batch is invisible to clients
// but for latency. Enumerate batches always go to the main backend: its CPU
// twin agrees with the GPU only within a tolerance (1e-6 float32, 1e-12
// float64 relative), and a request's answer must not depend on the load.
#ifndef SAMPLER_SERVER_SMALL_ON_CPU_H_
#define SAMPLER_SERVER_SMALL_ON_CPU_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "server/backend.h"

namespace sampler::server {

class SmallOnCpuBackend final : public Backend {
 public:
  // Batches of fewer than `below_items` work items (Batch::items), of every
  // kind but Enumerate, run on `cpu`; the rest on `main`.
  SmallOnCpuBackend(std::unique_ptr<Backend> main, std::unique_ptr<Backend> cpu,
                    int64_t below_items);

  // The main backend's: the batchers' flow control (Capacity,
  // EagerBatches) stays the GPU's, a small batch on the CPU holding one of
  // its slots while it runs (well under a millisecond).
  BackendInfo Info() const override;
  int Capacity() const override;
  int EagerBatches() const override;
  std::vector<PoolBytes> PoolUsage() const override;

  void Run(AnyBatch batch, BatchDone done) override;
  bool RunHere(AnyBatch& batch, BatchDone& done) override;

  // Whether `batch` goes to the CPU backend.
  bool OnCpu(const AnyBatch& batch) const;

 private:
  const std::unique_ptr<Backend> main_;
  const std::unique_ptr<Backend> cpu_;
  const int64_t below_items_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_SMALL_ON_CPU_H_
