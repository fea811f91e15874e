#include "server/cpu_backend.h"

#include <utility>

#include "sampler/kernels/status_macros.h"
#include "server/cpu_executor.h"

namespace sampler::server {

CpuBackend::CpuBackend(std::unique_ptr<CpuPool> pool, std::string reason)
    : reason_(std::move(reason)), pool_(std::move(pool)) {}

absl::StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(
    int threads, std::string reason) {
  SAMPLER_ASSIGN_OR_RETURN(std::unique_ptr<CpuPool> pool,
                           CpuPool::Create(threads));
  return std::unique_ptr<CpuBackend>(new CpuBackend(
      std::move(pool), reason.empty() ? "cpu" : std::move(reason)));
}

// The pool drains here, while the backend is whole: a done callback that
// calls Run during the drain finds pool_ still set.
CpuBackend::~CpuBackend() { pool_->Shutdown(); }

BackendInfo CpuBackend::Info() const {
  BackendInfo info;
  info.name = "cpu";
  info.reason = reason_;
  return info;
}

int CpuBackend::Capacity() const { return pool_->threads(); }

void CpuBackend::Run(AnyBatch batch, BatchDone done) {
  ExecuteOnCpu(std::move(batch), *pool_, std::move(done));
}

int CpuBackend::EagerBatches() const { return pool_->threads(); }

bool CpuBackend::RunHere(AnyBatch& batch, BatchDone& done) {
  return ExecuteOnCpuHere(batch, *pool_, done);
}

}  // namespace sampler::server
