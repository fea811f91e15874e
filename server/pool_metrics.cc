#include "server/pool_metrics.h"

#include <memory>
#include <utility>

namespace sampler::server {

PoolMetricsBackend::PoolMetricsBackend(Backend* backend, Metrics* metrics)
    : backend_(backend),
      metrics_(metrics),
      has_pools_(!backend->PoolUsage().empty()) {}

BackendInfo PoolMetricsBackend::Info() const { return backend_->Info(); }

int PoolMetricsBackend::Capacity() const { return backend_->Capacity(); }

std::vector<Backend::PoolBytes> PoolMetricsBackend::PoolUsage() const {
  return backend_->PoolUsage();
}

int PoolMetricsBackend::EagerBatches() const {
  return backend_->EagerBatches();
}

void PoolMetricsBackend::Run(AnyBatch batch, BatchDone done) {
  if (!has_pools_) {
    backend_->Run(std::move(batch), std::move(done));
    return;
  }
  // Nothing of this object is touched once `done` has been called: the
  // batcher may be destroyed (and this object after it) as soon as its last
  // batch has reported.
  backend_->Run(std::move(batch),
                [this, done = std::move(done)](BatchResult result) {
                  Record();
                  done(std::move(result));
                });
}

bool PoolMetricsBackend::RunHere(AnyBatch& batch, BatchDone& done) {
  if (!has_pools_) return backend_->RunHere(batch, done);
  // Held apart so that the caller gets it back when the backend declines.
  auto held = std::make_shared<BatchDone>(std::move(done));
  BatchDone recording = [this, held](BatchResult result) {
    Record();
    (*held)(std::move(result));
  };
  if (backend_->RunHere(batch, recording)) return true;
  done = std::move(*held);
  return false;
}

void PoolMetricsBackend::Record() const {
  for (const PoolBytes& pool : backend_->PoolUsage()) {
    metrics_->SetPoolBytes(pool.device, "used", pool.used);
    metrics_->SetPoolBytes(pool.device, "reserved", pool.reserved);
  }
}

}  // namespace sampler::server
