// The server's name for one stream's staging resources: a CudaSlot is the
// kernels' Stager (sampler/kernels/cuda/staging.h), which holds the staging
// pipeline every kind's batch goes through (Run). The backend builds one
// per stream; cuda_exec_*.cc run their batches through it.
#ifndef SAMPLER_SERVER_CUDA_SLOT_H_
#define SAMPLER_SERVER_CUDA_SLOT_H_

#include "sampler/kernels/cuda/staging.h"

namespace sampler::server {

using CudaSlot = kernels::cuda::Stager;

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CUDA_SLOT_H_
