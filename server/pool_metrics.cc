#include "server/pool_metrics.h"

#include <utility>

namespace sampler::server {

PoolMetricsBackend::PoolMetricsBackend(Backend* backend, Metrics* metrics)
    : backend_(backend), metrics_(metrics) {}

BackendInfo PoolMetricsBackend::Info() const { return backend_->Info(); }

int PoolMetricsBackend::Capacity() const { return backend_->Capacity(); }

std::vector<Backend::PoolBytes> PoolMetricsBackend::PoolUsage() const {
  return backend_->PoolUsage();
}

void PoolMetricsBackend::Run(AnyBatch batch, BatchDone done) {
  // Nothing of this object is touched once `done` has been called: the
  // batcher may be destroyed (and this object after it) as soon as its last
  // batch has reported.
  backend_->Run(std::move(batch),
                [this, done = std::move(done)](BatchResult result) {
                  Record();
                  done(std::move(result));
                });
}

void PoolMetricsBackend::Record() const {
  for (const PoolBytes& pool : backend_->PoolUsage()) {
    metrics_->SetPoolBytes(pool.device, "used", pool.used);
    metrics_->SetPoolBytes(pool.device, "reserved", pool.reserved);
  }
}

}  // namespace sampler::server
