// Per-kind execution of a batch on one CUDA slot: pack the jobs into the
// kind's segmented layout in pinned staging, allocate device memory from the
// pool, copy in, launch, copy out, wait, and write each job's slice into its
// output. Each returns the kernel seconds measured with the slot's events.
#ifndef SAMPLER_SERVER_CUDA_EXEC_H_
#define SAMPLER_SERVER_CUDA_EXEC_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/categorical.h"
#include "server/cuda_slot.h"
#include "server/jobs.h"

namespace sampler::server {

absl::StatusOr<double> ExecuteOnGpu(Batch<EnumerateJob>& batch, CudaSlot& slot);
absl::StatusOr<double> ExecuteOnGpu(Batch<CategoricalJob>& batch,
                                    CudaSlot& slot);
// The kernel that ExecuteOnGpu runs a categorical job of `categories` (K)
// in `precision` with `draws` draws a row on: the lane-group kernel up to
// K = 512 (the lanes kernel at 33 to 60 for up to 4 draws and at 61 to 100
// for one, float only), the block-row
// kernel from 513 to rows of 80,000 bytes (one block a row up to 64 KiB,
// clusters past), the warp-tiles kernel from there to 2^15, block-row
// clusters again past 2^15 up to rows of 512 KiB (2^17 floats), the
// row-split kernel from there up to its largest K (RowSplitMaxCategories),
// one warp per row past it (cuda_exec_categorical.cc says what measured
// each bound).
kernels::cuda::CategoricalKernel CategoricalKernelFor(
    int64_t categories, kernels::Precision precision, int32_t draws = 1);
absl::StatusOr<double> ExecuteOnGpu(Batch<GammaJob>& batch, CudaSlot& slot);
absl::StatusOr<double> ExecuteOnGpu(Batch<DirichletJob>& batch, CudaSlot& slot);
absl::StatusOr<double> ExecuteOnGpu(Batch<BoardsJob>& batch, CudaSlot& slot);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CUDA_EXEC_H_
