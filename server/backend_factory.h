// Picks and creates the backend named by --backend.
#ifndef SAMPLER_SERVER_BACKEND_FACTORY_H_
#define SAMPLER_SERVER_BACKEND_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/backend.h"

namespace sampler::server {

// "cpu": the CPU backend with `cpu_threads` threads (0: one per core).
// "cuda": the CUDA backend, or an error if none can run here.
// "auto": CUDA when a usable GPU is present, else CPU; Info().reason says why.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const std::string& name,
                                                       int cpu_threads);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_BACKEND_FACTORY_H_
