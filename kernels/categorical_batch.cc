// CategoricalBatchBuilder: the host side of a categorical batch (requests
// placed end to end, planned by PrepareCategoricalSegments, laid out for the
// staging pipeline). Host code only; the kernels are in categorical.cu.
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "sampler/kernels/cuda/categorical.h"

namespace sampler::kernels::cuda {

template <typename T>
absl::StatusOr<int> CategoricalBatchBuilder<T>::Add(
    absl::Span<const T> values, const CategoricalShape& shape, WeightKind kind,
    uint64_t seed, uint64_t first_row) {
  if (finished_) {
    return absl::FailedPreconditionError(
        "CategoricalBatchBuilder: Add after Finish");
  }
  // A shape of no rows or categories is left for Finish to name.
  if (shape.rows >= 1 && shape.categories >= 1 &&
      (values.size() % static_cast<uint64_t>(shape.categories) != 0 ||
       values.size() / static_cast<uint64_t>(shape.categories) !=
           static_cast<uint64_t>(shape.rows))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "values: ", values.size(), " values for rows * categories = ",
        shape.rows, " * ", shape.categories));
  }
  CategoricalSegment segment;
  segment.values_offset = values_size_;
  segment.out_offset = out_size_;
  segment.seed = seed;
  segment.first_row = first_row;
  segment.rows = shape.rows;
  segment.categories = shape.categories;
  segment.draws = shape.draws;
  segment.kind = kind;
  values_size_ += values.size();
  if (shape.rows >= 1 && shape.draws >= 1) {
    out_size_ +=
        static_cast<uint64_t>(shape.rows) * static_cast<uint64_t>(shape.draws);
  }
  segments_.push_back(segment);
  values_.push_back(values);
  out_offsets_.push_back(segment.out_offset);
  return static_cast<int>(segments_.size() - 1);
}

template <typename T>
absl::Status CategoricalBatchBuilder<T>::Finish() {
  const Precision precision =
      std::is_same_v<T, double> ? Precision::kFloat64 : Precision::kFloat32;
  absl::StatusOr<CategoricalPlan> plan = PrepareCategoricalSegments(
      absl::MakeSpan(segments_), precision, values_size_, out_size_, kernel_);
  if (!plan.ok()) return plan.status();
  plan_ = *plan;
  finished_ = true;
  return absl::OkStatus();
}

template <typename T>
size_t CategoricalBatchBuilder<T>::ValuesAt() const {
  return (segments_.size() * sizeof(CategoricalSegment) + 7) / 8 * 8;
}

template <typename T>
StagingPlan CategoricalBatchBuilder<T>::Staging() const {
  return {ValuesAt() + values_size_ * sizeof(T), out_size_ * sizeof(int32_t),
          plan_.workspace_bytes};
}

template <typename T>
void CategoricalBatchBuilder<T>::PackInto(void* staged_in) const {
  char* base = static_cast<char*>(staged_in);
  if (!segments_.empty()) {
    std::memcpy(base, segments_.data(),
                segments_.size() * sizeof(CategoricalSegment));
  }
  T* values = reinterpret_cast<T*>(base + ValuesAt());
  for (absl::Span<const T> v : values_) {
    if (!v.empty()) std::memcpy(values, v.data(), v.size() * sizeof(T));
    values += v.size();
  }
}

template <typename T>
CategoricalBatch<T> CategoricalBatchBuilder<T>::View(
    const DeviceRegions& device) const {
  const char* in = static_cast<const char*>(device.in);
  CategoricalBatch<T> batch;
  batch.plan = plan_;
  batch.segments = reinterpret_cast<const CategoricalSegment*>(in);
  batch.values = reinterpret_cast<const T*>(in + ValuesAt());
  batch.out = static_cast<int32_t*>(device.out);
  batch.workspace = device.scratch;
  batch.workspace_bytes = plan_.workspace_bytes;
  return batch;
}

template class CategoricalBatchBuilder<float>;
template class CategoricalBatchBuilder<double>;

}  // namespace sampler::kernels::cuda
