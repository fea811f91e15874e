// CUDA Dirichlet sampler: segmented-batch descriptors, a host-side packer for
// them, and the launcher. The rejection loop is the gamma sampler's (in log
// space), so the segment flags, status bits, launch options and
// SegmentStatus are cuda/gamma.h's.
//
//   DirichletBatchBuilder<float> b;
//   b.AddRows(alpha, row_offsets, log_output, seed, first_item);  // per
//   request b.PackInto(pinned_staging);                 // b.ArenaBytes() bytes
//   cudaMemcpyAsync(device_arena, pinned_staging, b.ArenaBytes(), ...);
//   LaunchDirichlet(b.View(device_arena, device_out, device_status), stream);
//   ... copy out and status back, wait for the stream ...
//   SegmentStatus(status[s], s)   // per request: OK, INTERNAL or OUT_OF_RANGE
#ifndef SAMPLER_KERNELS_CUDA_DIRICHLET_H_
#define SAMPLER_KERNELS_CUDA_DIRICHLET_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/kernels/cuda/gamma.h"

namespace sampler::kernels::cuda {

// ------------------------------------------------------- descriptors ----

// One Dirichlet request. Its rows are row_offsets[row_begin ..
// row_begin + num_rows] (batch component indices) and its components are
// out[out_begin, out_begin + count), drawn as items first_item + (j -
// out_begin). Segments are laid end to end in components and in rows.
struct DirichletSegment {
  uint64_t seed = 0;
  uint64_t first_item = 0;
  int64_t out_begin = 0;
  int64_t count = 0;
  int64_t row_begin = 0;
  int64_t num_rows = 0;
  uint32_t flags = 0;  // kSegmentLogOutput
};

// A Dirichlet batch in device memory. alpha[j] is the concentration of
// component j of the batch (requests concatenated, aligned with out).
template <typename T>
struct DirichletBatch {
  const DirichletSegment* segments = nullptr;
  int32_t num_segments = 0;
  int64_t total = 0;  // components
  int64_t num_rows = 0;
  const T* alpha = nullptr;
  // num_rows + 1 batch component indices: row r is [row_offsets[r],
  // row_offsets[r + 1]); starts at 0, ends at total, strictly increasing.
  const int64_t* row_offsets = nullptr;
  T* out = nullptr;
  uint32_t* segment_status = nullptr;
};

// ---------------------------------------------------------- launching ----

// Enqueues the batch on `stream`: zeroes segment_status, draws the log-gamma
// variates into out (one kernel), then normalises each row in place (a
// second kernel).
template <typename T>
absl::Status LaunchDirichlet(const DirichletBatch<T>& batch,
                             cudaStream_t stream,
                             const GammaLaunchOptions& options = {});

// ------------------------------------------------------------ packing ----

template <typename T>
class DirichletBatchBuilder {
 public:
  // row_offsets as for SampleDirichletCpu (rows + 1 entries from 0).
  absl::StatusOr<int> AddRows(absl::Span<const T> alpha,
                              absl::Span<const int64_t> row_offsets,
                              bool log_output, uint64_t seed,
                              uint64_t first_item);

  int64_t total() const { return total_; }
  int64_t num_rows() const { return static_cast<int64_t>(rows_.size()) - 1; }
  const std::vector<DirichletSegment>& segments() const { return segments_; }

  size_t ArenaBytes() const;
  void PackInto(void* host_arena) const;
  DirichletBatch<T> View(const void* device_arena, T* out,
                         uint32_t* segment_status) const;

  ValuesAndStatusWords<T> OutLayout() const {
    return {total_, segments_.size()};
  }
  StagingPlan Staging() const { return {ArenaBytes(), OutLayout().bytes(), 0}; }
  DirichletBatch<T> View(const DeviceRegions& device) const {
    return ViewOnRegions(*this, device);
  }

 private:
  struct Offsets {
    size_t segments, alpha, rows, end;
  };
  Offsets Layout() const;

  std::vector<DirichletSegment> segments_;
  std::vector<T> alpha_;
  std::vector<int64_t> rows_{0};
  int64_t total_ = 0;
};

extern template absl::Status LaunchDirichlet<float>(
    const DirichletBatch<float>&, cudaStream_t, const GammaLaunchOptions&);
extern template absl::Status LaunchDirichlet<double>(
    const DirichletBatch<double>&, cudaStream_t, const GammaLaunchOptions&);
extern template class DirichletBatchBuilder<float>;
extern template class DirichletBatchBuilder<double>;

}  // namespace sampler::kernels::cuda

#endif  // SAMPLER_KERNELS_CUDA_DIRICHLET_H_
