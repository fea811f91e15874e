#include "server/small_on_cpu.h"

#include <type_traits>
#include <utility>
#include <variant>

namespace sampler::server {

SmallOnCpuBackend::SmallOnCpuBackend(std::unique_ptr<Backend> main,
                                     std::unique_ptr<Backend> cpu,
                                     int64_t below_items)
    : main_(std::move(main)), cpu_(std::move(cpu)), below_items_(below_items) {}

BackendInfo SmallOnCpuBackend::Info() const { return main_->Info(); }

int SmallOnCpuBackend::Capacity() const { return main_->Capacity(); }

int SmallOnCpuBackend::EagerBatches() const { return main_->EagerBatches(); }

std::vector<Backend::PoolBytes> SmallOnCpuBackend::PoolUsage() const {
  return main_->PoolUsage();
}

bool SmallOnCpuBackend::OnCpu(const AnyBatch& batch) const {
  return std::visit(
      [this](const auto& b) {
        using B = std::decay_t<decltype(b)>;
        return !std::is_same_v<B, Batch<EnumerateJob>> &&
               b.items < below_items_;
      },
      batch);
}

void SmallOnCpuBackend::Run(AnyBatch batch, BatchDone done) {
  Backend& to = OnCpu(batch) ? *cpu_ : *main_;
  to.Run(std::move(batch), std::move(done));
}

bool SmallOnCpuBackend::RunHere(AnyBatch& batch, BatchDone& done) {
  return (OnCpu(batch) ? *cpu_ : *main_).RunHere(batch, done);
}

}  // namespace sampler::server
