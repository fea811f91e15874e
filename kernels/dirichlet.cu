// CUDA kernels of SampleDirichlet, bit for bit the CPU backend
// (dirichlet_cpu.cc): the gamma rejection loop of gamma_device.cuh in log
// space (GammaLogUnscaled, Dirichlet tag) writes the rows' log-gamma
// variates into out; a second kernel normalises every row in place exactly
// as dirichlet_cpu.cc does, the sum of exp(lg - m) added in component order.
// This file holds the Dirichlet item source, the row kernel, the launcher
// and the batch builder.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gamma_device.cuh"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/dirichlet.h"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/launch.h"
#include "sampler/kernels/cuda/status.h"
#include "sampler/kernels/cuda/warp.cuh"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/gamma_core.h"
#include "sampler/kernels/philox.h"
#include "sampler/kernels/status_macros.h"
#include "segment_arena.h"

namespace sampler::kernels::cuda {
namespace {

using gamma_device::Cursor;
using gamma_device::FindSegment;
using gamma_device::Item;
using gamma_device::kBlockThreads;
using gamma_device::LastAtOrBelow;
using gamma_device::LaunchRejection;
using segment_arena::After;
using segment_arena::CheckRoom;
using segment_arena::CopyInto;

// ------------------------------------------------------ item source ----

template <typename T>
struct DirichletSource {
  using Batch = DirichletBatch<T>;
  static constexpr KindTag kTag = KindTag::kDirichlet;

  static __device__ __forceinline__ void Fetch(const Batch& b, int64_t index,
                                               int64_t delta, Cursor& c,
                                               const Item<T>& prev,
                                               Item<T>& out) {
    if (index >= b.total) return;
    if (index >= c.window_end) {
      const int64_t s =
          FindSegment(b.segments, b.num_segments, c.segment, index);
      const DirichletSegment seg = b.segments[s];
      c.segment = s;
      c.window_end = seg.out_begin + seg.count;
      out.seed = seg.seed;
      out.item = seg.first_item + static_cast<uint64_t>(index - seg.out_begin);
    } else {
      out.seed = prev.seed;
      out.item = prev.item + static_cast<uint64_t>(delta);
    }
    out.log_output = true;
    out.g = GammaPrepare(__ldg(b.alpha + index));
    out.scale = T(1);
  }

  // The row's log-gamma variate, normalised later by the row kernel.
  static __device__ __forceinline__ void Write(const Batch& b, int64_t index,
                                               const Item<T>& it,
                                               const GammaDraw<T>& x) {
    b.out[index] = GammaLogUnscaled(it.g, x);
  }
};
// ---------------------------------------------- Dirichlet rows ----

// Per lane: the segment of increasing row indices (rows are searched like
// outputs, by row_begin).
struct RowCursor {
  int64_t segment = -1;
  int64_t row_end = 0;
  bool log_output = false;
};

template <typename T>
__device__ __forceinline__ void FindRowSegment(const DirichletBatch<T>& b,
                                               int64_t row, RowCursor& c) {
  if (row < c.row_end) return;
  const DirichletSegment* segs = b.segments;
  c.segment = LastAtOrBelow(c.segment + 1, b.num_segments - 1, row,
                            [segs](int64_t k) { return segs[k].row_begin; });
  const DirichletSegment& seg = segs[c.segment];
  c.row_end = seg.row_begin + seg.num_rows;
  c.log_output = (seg.flags & kSegmentLogOutput) != 0;
}

template <typename T>
__device__ __forceinline__ T NegativeInfinity() {
  if constexpr (std::is_same_v<T, float>) {
    return -detmath::FloatFromBits(0x7f800000u);
  } else {
    return -detmath::DoubleFromBits(0x7ff0000000000000ull);
  }
}

// A short row by one thread: the CPU loop itself.
template <typename T>
__device__ void NormalizeRowThread(const DirichletBatch<T>& b, int64_t begin,
                                   int64_t end, int64_t segment,
                                   bool log_output) {
  T* out = b.out;
  T m = NegativeInfinity<T>();
  for (int64_t j = begin; j < end; ++j) {
    if (out[j] > m) m = out[j];
  }
  if (m == NegativeInfinity<T>()) {
    atomicOr(b.segment_status + segment, kStatusRowUnderflow);
  }
  T sum = T(0);
  for (int64_t j = begin; j < end; ++j) sum += DirichletTerm(out[j], m);
  const T log_sum = DirichletLogSum(sum);
  for (int64_t j = begin; j < end; ++j) {
    out[j] = DirichletOutput(out[j], m, log_sum, log_output);
  }
}

// A long row by the whole warp: the maximum by a butterfly (exact in any
// order: log-variates are never NaN or -0, see below), the terms in
// parallel, their sum in component order (every lane adds the 32 terms of a
// chunk as broadcast by shuffles, so every lane holds the CPU's sum).
template <typename T>
__device__ void NormalizeRowWarp(const DirichletBatch<T>& b, int64_t begin,
                                 int64_t end, int64_t segment, bool log_output,
                                 int lane) {
  T* out = b.out;
  // Log-variates are log(d v) [+ log(ub) / shape]: detmath::Log gives -0
  // nowhere and a sum of nonzero values rounds to +0, so no +0/-0 tie can
  // make the maximum's bits depend on the order; NaN (the attempt cap) is
  // ignored by `>` in both backends and reported anyway.
  T m = NegativeInfinity<T>();
  for (int64_t j = begin + lane; j < end; j += kWarpSize) {
    const T lg = out[j];
    if (lg > m) m = lg;
  }
  m = WarpMaxOf<ButterflyOrder::kHighToLow>(m);
  if (lane == 0 && m == NegativeInfinity<T>()) {
    atomicOr(b.segment_status + segment, kStatusRowUnderflow);
  }
  T sum = T(0);
  for (int64_t chunk = begin; chunk < end; chunk += kWarpSize) {
    const int64_t left = end - chunk;
    const T term = lane < left ? DirichletTerm(out[chunk + lane], m) : T(0);
    if (left >= kWarpSize) {
      sum = WarpSumInLaneOrder(sum, term);
    } else {
      sum = WarpSumInLaneOrder(sum, term, left);
    }
  }
  const T log_sum = DirichletLogSum(sum);
  for (int64_t j = begin + lane; j < end; j += kWarpSize) {
    out[j] = DirichletOutput(out[j], m, log_sum, log_output);
  }
}

// Rows of up to 32 components go one per lane; longer rows are taken by the
// whole warp, one after the other, so that one long row does not leave 31
// lanes waiting for a sequential loop.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    DirichletNormalizeKernel(const DirichletBatch<T> b) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t warp =
      (static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x) /
      kWarpSize;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlockThreads;
  RowCursor cursor;
  for (int64_t base = warp * kWarpSize; base < b.num_rows; base += stride) {
    const int64_t row = base + lane;
    const bool valid = row < b.num_rows;
    int64_t begin = 0, end = 0;
    if (valid) {
      begin = b.row_offsets[row];
      end = b.row_offsets[row + 1];
      FindRowSegment(b, row, cursor);
    }
    const bool is_long = valid && end - begin > kWarpSize;
    if (valid && !is_long) {
      NormalizeRowThread(b, begin, end, cursor.segment, cursor.log_output);
    }
    unsigned long_rows = __ballot_sync(kFullMask, is_long);
    while (long_rows != 0) {
      const int src = __ffs(long_rows) - 1;
      long_rows &= long_rows - 1;
      const int64_t rb = WarpBroadcast(begin, src);
      const int64_t re = WarpBroadcast(end, src);
      const int64_t seg = WarpBroadcast(cursor.segment, src);
      const bool log_output = WarpBroadcast(cursor.log_output, src);
      NormalizeRowWarp(b, rb, re, seg, log_output, lane);
    }
  }
}

}  // namespace

template <typename T>
absl::Status LaunchDirichlet(const DirichletBatch<T>& batch,
                             cudaStream_t stream,
                             const GammaLaunchOptions& options) {
  if (batch.num_segments > 0) {
    SAMPLER_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(batch.segment_status, 0,
                        sizeof(uint32_t) * batch.num_segments, stream));
  }
  if (absl::Status s =
          LaunchRejection<T, DirichletSource<T>>(batch, stream, options);
      !s.ok()) {
    return s;
  }
  if (batch.num_rows <= 0) return absl::OkStatus();
  // One warp per 32 rows.
  SAMPLER_ASSIGN_OR_RETURN(
      const int blocks,
      ResidentGridBlocks(DirichletNormalizeKernel<T>, kBlockThreads,
                         batch.num_rows, kBlockThreads, options.max_blocks));
  DirichletNormalizeKernel<T><<<blocks, kBlockThreads, 0, stream>>>(batch);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

// ------------------------------------------------------------ builder ----

template <typename T>
absl::StatusOr<int> DirichletBatchBuilder<T>::AddRows(
    absl::Span<const T> alpha, absl::Span<const int64_t> row_offsets,
    bool log_output, uint64_t seed, uint64_t first_item) {
  if (absl::Status s = ValidateDirichletParams(alpha, row_offsets); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRoom(segments_.size(), total_, alpha.size());
      !s.ok()) {
    return s;
  }
  DirichletSegment seg;
  seg.seed = seed;
  seg.first_item = first_item;
  seg.out_begin = total_;
  seg.count = static_cast<int64_t>(alpha.size());
  seg.row_begin = static_cast<int64_t>(rows_.size()) - 1;
  seg.num_rows = static_cast<int64_t>(row_offsets.size()) - 1;
  seg.flags = log_output ? kSegmentLogOutput : 0u;
  alpha_.insert(alpha_.end(), alpha.begin(), alpha.end());
  for (size_t r = 1; r < row_offsets.size(); ++r) {
    rows_.push_back(total_ + row_offsets[r]);
  }
  total_ += seg.count;
  segments_.push_back(seg);
  return static_cast<int>(segments_.size() - 1);
}

template <typename T>
typename DirichletBatchBuilder<T>::Offsets DirichletBatchBuilder<T>::Layout()
    const {
  Offsets o;
  o.segments = 0;
  o.alpha = After(o.segments, segments_);
  o.rows = After(o.alpha, alpha_);
  o.end = After(o.rows, rows_);
  return o;
}

template <typename T>
size_t DirichletBatchBuilder<T>::ArenaBytes() const {
  return Layout().end;
}

template <typename T>
void DirichletBatchBuilder<T>::PackInto(void* host_arena) const {
  const Offsets o = Layout();
  char* base = static_cast<char*>(host_arena);
  CopyInto(base, o.segments, segments_);
  CopyInto(base, o.alpha, alpha_);
  CopyInto(base, o.rows, rows_);
}

template <typename T>
DirichletBatch<T> DirichletBatchBuilder<T>::View(
    const void* device_arena, T* out, uint32_t* segment_status) const {
  const Offsets o = Layout();
  const char* base = static_cast<const char*>(device_arena);
  DirichletBatch<T> b;
  b.segments = reinterpret_cast<const DirichletSegment*>(base + o.segments);
  b.num_segments = static_cast<int32_t>(segments_.size());
  b.total = total_;
  b.num_rows = num_rows();
  b.alpha = reinterpret_cast<const T*>(base + o.alpha);
  b.row_offsets = reinterpret_cast<const int64_t*>(base + o.rows);
  b.out = out;
  b.segment_status = segment_status;
  return b;
}

template absl::Status LaunchDirichlet<float>(const DirichletBatch<float>&,
                                             cudaStream_t,
                                             const GammaLaunchOptions&);
template absl::Status LaunchDirichlet<double>(const DirichletBatch<double>&,
                                              cudaStream_t,
                                              const GammaLaunchOptions&);
template class DirichletBatchBuilder<float>;
template class DirichletBatchBuilder<double>;

}  // namespace sampler::kernels::cuda
