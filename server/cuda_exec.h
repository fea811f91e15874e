// Per-kind execution of a batch on one CUDA slot: pack the jobs into the
// kind's segmented layout in pinned staging, allocate device memory from the
// pool, copy in, launch, copy out, wait, and write each job's slice into its
// output. Each returns the kernel seconds measured with the slot's events.
#ifndef SAMPLER_SERVER_CUDA_EXEC_H_
#define SAMPLER_SERVER_CUDA_EXEC_H_

#include "absl/status/statusor.h"
#include "server/cuda_slot.h"
#include "server/jobs.h"

namespace sampler::server {

absl::StatusOr<double> ExecuteOnGpu(Batch<EnumerateJob>& batch, CudaSlot& slot);
absl::StatusOr<double> ExecuteOnGpu(Batch<CategoricalJob>& batch,
                                    CudaSlot& slot);
absl::StatusOr<double> ExecuteOnGpu(Batch<GammaJob>& batch, CudaSlot& slot);
absl::StatusOr<double> ExecuteOnGpu(Batch<DirichletJob>& batch, CudaSlot& slot);
absl::StatusOr<double> ExecuteOnGpu(Batch<BoardsJob>& batch, CudaSlot& slot);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CUDA_EXEC_H_
