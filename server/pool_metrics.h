// sampler_device_pool_bytes{device,state}: the bytes in each GPU's
// stream-ordered memory pool, "used" and "reserved", sampled as each batch
// completes. The sampling wraps the backend that runs the batches, so the
// batchers know nothing of pools: the service hands its batchers this
// backend, and every batch's completion first records the pools' usage
// (Backend::PoolUsage; empty on the CPU, which then sets no gauge) and then
// reports to the batcher exactly as the wrapped backend would. A backend
// with no pools when this is made (the CPU) is passed through untouched:
// wrapping each batch's done costs two allocations a batch (issue 13).
#ifndef SAMPLER_SERVER_POOL_METRICS_H_
#define SAMPLER_SERVER_POOL_METRICS_H_

#include <vector>

#include "server/backend.h"
#include "server/metrics.h"

namespace sampler::server {

class PoolMetricsBackend final : public Backend {
 public:
  // Both must outlive this object.
  PoolMetricsBackend(Backend* backend, Metrics* metrics);

  BackendInfo Info() const override;
  int Capacity() const override;
  // Runs the batch on the wrapped backend; its `done` is called after the
  // pools' usage is recorded, from the thread the wrapped backend reports
  // on.
  void Run(AnyBatch batch, BatchDone done) override;
  std::vector<PoolBytes> PoolUsage() const override;
  int EagerBatches() const override;
  // The wrapped backend's RunHere, recording the pools' usage like Run.
  bool RunHere(AnyBatch& batch, BatchDone& done) override;

 private:
  // Sets the gauge from the wrapped backend's PoolUsage.
  void Record() const;

  Backend* const backend_;
  Metrics* const metrics_;
  // Whether the wrapped backend had pools to record when this was made.
  const bool has_pools_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_POOL_METRICS_H_
