// SampleCategorical batches on a GPU: the butterfly kernel, one segment per
// job, rows placed so that each request's lanes are the contract's lanes.
#include <cstring>
#include <variant>
#include <vector>

#include "sampler/kernels/cuda/categorical.h"
#include "sampler/kernels/cuda/status.h"
#include "server/cuda_exec.h"

namespace sampler::server {
namespace {

namespace kc = kernels::cuda;

template <typename T>
absl::StatusOr<double> RunCategorical(Batch<CategoricalJob>& batch,
                                      CudaSlot& slot) {
  std::vector<kc::CategoricalSegment> segments;
  std::vector<CategoricalJob*> placed;
  uint64_t values_size = 0, out_size = 0;
  for (auto& job : batch.jobs) {
    auto* work = std::get_if<CategoricalWork<T>>(&job->work);
    if (work == nullptr) continue;  // the other precision's launch
    kc::CategoricalSegment segment;
    segment.values_offset = values_size;
    segment.out_offset = out_size;
    segment.seed = job->seed;
    segment.first_row = job->first_row;
    segment.rows = job->shape.rows;
    segment.categories = job->shape.categories;
    segment.draws = job->shape.draws;
    segment.kind = job->weight_kind;
    values_size += work->values.size();
    out_size += work->out.size();
    segments.push_back(segment);
    placed.push_back(job.get());
  }
  if (segments.empty()) return 0.0;
  const kernels::Precision precision = std::is_same_v<T, float>
                                           ? kernels::Precision::kFloat32
                                           : kernels::Precision::kFloat64;
  absl::StatusOr<kc::CategoricalPlan> plan = kc::PrepareCategoricalSegments(
      absl::MakeSpan(segments), precision, values_size, out_size);
  if (!plan.ok()) return plan.status();

  // Staging: the segments, then the values (8-byte aligned).
  const size_t segment_bytes = segments.size() * sizeof(kc::CategoricalSegment);
  const size_t values_at = (segment_bytes + 7) / 8 * 8;
  const size_t values_bytes = values_size * sizeof(T);
  const size_t out_bytes = out_size * sizeof(int32_t);
  if (absl::Status s = slot.Reserve(values_at + values_bytes, out_bytes);
      !s.ok()) {
    return s;
  }
  char* staged_in = static_cast<char*>(slot.in.data());
  std::memcpy(staged_in, segments.data(), segment_bytes);
  {
    T* values = reinterpret_cast<T*>(staged_in + values_at);
    for (CategoricalJob* job : placed) {
      const auto& work = std::get<CategoricalWork<T>>(job->work);
      std::memcpy(values, work.values.data(), work.values.size() * sizeof(T));
      values += work.values.size();
    }
  }
  absl::StatusOr<kc::DeviceBuffer> device_in =
      slot.Allocate(values_at + values_bytes);
  if (!device_in.ok()) return device_in.status();
  absl::StatusOr<kc::DeviceBuffer> device_out = slot.Allocate(out_bytes);
  if (!device_out.ok()) return device_out.status();
  absl::StatusOr<kc::DeviceBuffer> workspace =
      slot.Allocate(plan->workspace_bytes);
  if (!workspace.ok()) return workspace.status();

  const cudaStream_t stream = slot.stream.get();
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      device_in->data(), staged_in, values_at + values_bytes,
      cudaMemcpyHostToDevice, stream));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.start.get(), stream));
  const char* device_base = static_cast<const char*>(device_in->data());
  if (absl::Status s = kc::LaunchSampleCategorical(
          *plan, reinterpret_cast<const kc::CategoricalSegment*>(device_base),
          reinterpret_cast<const T*>(device_base + values_at),
          device_out->as<int32_t>(), workspace->data(), plan->workspace_bytes,
          stream);
      !s.ok()) {
    return s;
  }
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.stop.get(), stream));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(slot.out.data(),
                                               device_out->data(), out_bytes,
                                               cudaMemcpyDeviceToHost, stream));
  absl::StatusOr<double> seconds = slot.Finish();
  if (!seconds.ok()) return seconds;

  const int32_t* staged_out = static_cast<const int32_t*>(slot.out.data());
  for (CategoricalJob* job : placed) {
    absl::Span<int32_t> out = std::get<CategoricalWork<T>>(job->work).out;
    std::memcpy(out.data(), staged_out, out.size() * sizeof(int32_t));
    staged_out += out.size();
  }
  return seconds;
}

}  // namespace

absl::StatusOr<double> ExecuteOnGpu(Batch<CategoricalJob>& batch,
                                    CudaSlot& slot) {
  absl::StatusOr<double> f = RunCategorical<float>(batch, slot);
  if (!f.ok()) return f;
  absl::StatusOr<double> d = RunCategorical<double>(batch, slot);
  if (!d.ok()) return d;
  return *f + *d;
}

}  // namespace sampler::server
