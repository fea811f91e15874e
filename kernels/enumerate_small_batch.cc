// The host side of the small-problems path (enumerate_small.h): problems
// kept by reference as they are added, laid out once, packed in one pass.
#include <cstring>

#include "sampler/kernels/cuda/enumerate_small.h"

namespace sampler::kernels::cuda {

namespace esi = enumerate_small_internal;

namespace {

size_t AlignUp(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

template <typename T>
void EnumerateSmallBatch<T>::Reset(ProbSpace in, ProbSpace out) {
  in_ = in;
  out_ = out;
  problems_.clear();
  terms_.clear();
  offsets_.clear();
  total_terms_ = total_values_ = total_out_ = 0;
  layout_ = {};
}

template <typename T>
size_t EnumerateSmallBatch<T>::MemoryBytes() const {
  return problems_.capacity() * sizeof(esi::SmallProblem) +
         terms_.capacity() * sizeof(terms_[0]) +
         offsets_.capacity() * sizeof(int64_t);
}

template <typename T>
bool EnumerateSmallBatch<T>::Add(absl::Span<const absl::Span<const T>> terms,
                                 absl::Span<const int64_t> offsets) {
  int64_t values = 0;
  int64_t support = 0;
  for (size_t t = 0; t < terms.size(); ++t) {
    values += static_cast<int64_t>(terms[t].size());
    support += offsets[t];
  }
  if (offsets.size() != terms.size() ||
      !EnumerateSmallFits(static_cast<int64_t>(terms.size()), values, in_,
                          out_)) {
    return false;
  }
  for (const absl::Span<const T>& term : terms) {
    if (term.empty()) return false;
  }
  const int64_t out_length = values - static_cast<int64_t>(terms.size()) + 1;
  problems_.push_back(
      {total_values_, total_out_, static_cast<int32_t>(total_terms_),
       static_cast<int16_t>(terms.size()), static_cast<int16_t>(values)});
  terms_.push_back(terms.data());
  offsets_.push_back(support);
  total_terms_ += static_cast<int64_t>(terms.size());
  total_values_ += values;
  total_out_ += out_length;
  Lay();
  return true;
}

template <typename T>
void EnumerateSmallBatch<T>::Lay() {
  layout_.problems = 0;
  layout_.lengths =
      AlignUp(layout_.problems + problems_.size() * sizeof(esi::SmallProblem));
  layout_.values = AlignUp(layout_.lengths +
                           static_cast<size_t>(total_terms_) * sizeof(int16_t));
  layout_.end =
      AlignUp(layout_.values + static_cast<size_t>(total_values_) * sizeof(T));
}

template <typename T>
void EnumerateSmallBatch<T>::PackInto(void* host_arena) const {
  char* arena = static_cast<char*>(host_arena);
  if (!problems_.empty()) {
    std::memcpy(arena + layout_.problems, problems_.data(),
                problems_.size() * sizeof(esi::SmallProblem));
  }
  auto* lengths = reinterpret_cast<int16_t*>(arena + layout_.lengths);
  T* values = reinterpret_cast<T*>(arena + layout_.values);
  for (size_t p = 0; p < problems_.size(); ++p) {
    const absl::Span<const T>* terms = terms_[p];
    // Terms that lie end to end (a packed problem's, all of them) go in one
    // copy: a copy per 4-value term was most of the packing.
    const T* run = terms[0].data();
    size_t run_length = 0;
    for (int t = 0; t < problems_[p].num_terms; ++t) {
      const absl::Span<const T> term = terms[t];
      *lengths++ = static_cast<int16_t>(term.size());
      if (term.data() != run + run_length) {
        std::memcpy(values, run, run_length * sizeof(T));
        values += run_length;
        run = term.data();
        run_length = 0;
      }
      run_length += term.size();
    }
    std::memcpy(values, run, run_length * sizeof(T));
    values += run_length;
  }
}

template <typename T>
EnumerateSmallDeviceBatch<T> EnumerateSmallBatch<T>::View(
    const DeviceRegions& device) const {
  const char* arena = static_cast<const char*>(device.in);
  const ValuesAndStatusWords<T> out = OutLayout();
  EnumerateSmallDeviceBatch<T> batch;
  batch.problems =
      reinterpret_cast<const esi::SmallProblem*>(arena + layout_.problems);
  batch.lengths = reinterpret_cast<const int16_t*>(arena + layout_.lengths);
  batch.values = reinterpret_cast<const T*>(arena + layout_.values);
  batch.out = out.Values(device.out);
  batch.status = out.StatusWords(device.out);
  batch.num_problems = num_problems();
  return batch;
}

template class EnumerateSmallBatch<float>;
template class EnumerateSmallBatch<double>;

}  // namespace sampler::kernels::cuda
