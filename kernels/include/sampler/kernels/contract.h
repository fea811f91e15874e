// The version of the randomness contract (docs/randomness.md): which bits a
// (request, seed) pair gives. It changes whenever any sampler's bits change,
// together with that kind's tag (philox.h) and the golden file; the server
// reports it in GetServerInfo and in every response's initial metadata
// (`sampler-contract-version`), so a client that stores seeds to replay them
// can pin the version its bits came from.
#ifndef SAMPLER_KERNELS_CONTRACT_H_
#define SAMPLER_KERNELS_CONTRACT_H_

namespace sampler::kernels {

// 1: the first published layout.
// 2: gamma and Dirichlet acceptance without cancellation (exact at shapes
//    up to 1e10 in float32), tags GAM2 and DIR2.
inline constexpr int kContractVersion = 2;

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_CONTRACT_H_
