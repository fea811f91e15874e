// Synthetic requests of a given size for sampler-loadgen, and how many work
// items each one is. Pure: no gRPC calls.
#ifndef SAMPLER_CLIENT_LOADGEN_LOADGEN_REQUESTS_H_
#define SAMPLER_CLIENT_LOADGEN_LOADGEN_REQUESTS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sampler/v1/sampler.pb.h"

namespace sampler::client {

enum class RpcKind { kEnumerate, kCategorical, kGamma, kDirichlet, kBoards };

// "enumerate", "categorical", "gamma", "dirichlet", "boards".
absl::StatusOr<RpcKind> ParseRpcKind(absl::string_view name);
absl::string_view RpcKindName(RpcKind kind);
// What a work item of the kind is, for reports: "points" (of the result
// PMFs), "draws" (rows x draws), "samples", "elements" (rows x dimension),
// "positions".
absl::string_view ItemUnit(RpcKind kind);

// The size of each request (the same for every request of a run).
struct LoadShape {
  sampler::v1::Precision precision = sampler::v1::PRECISION_UNSPECIFIED;
  // enumerate: problems per request, terms per problem, points per term.
  int64_t problems = 1;
  int64_t terms = 2;
  int64_t pmf_len = 16;
  // enumerate: send the packed form (EnumerateProblem.values) instead of one
  // Pmf per term; repeat each term this many times (1: no repeats field).
  bool enumerate_packed = false;
  int64_t enumerate_repeat = 1;
  // enumerate: > 0 replaces problems/terms/pmf_len by one Poisson-binomial
  // problem of this many Bernoulli terms (1 - p_i, p_i), p_i from
  // PoissonBinomialP.
  int64_t poisson_binomial = 0;
  // enumerate: the answer's space (UNSPECIFIED: linear).
  sampler::v1::ProbabilitySpace output_space =
      sampler::v1::PROBABILITY_SPACE_UNSPECIFIED;
  // categorical: rows (distributions) x categories, draws per row.
  int64_t categorical_rows = 256;
  int64_t categories = 32;
  int32_t draws = 1;
  // gamma: one group of gamma_samples, or (per_element) one shape per sample
  // spread log-uniformly over [0.1, 10].
  int64_t gamma_samples = 256;
  double gamma_shape = 1.5;
  bool gamma_per_element = false;
  // dirichlet: rows x dimension, all concentrations dirichlet_alpha.
  int64_t dirichlet_rows = 64;
  int64_t dirichlet_dim = 8;
  double dirichlet_alpha = 0.5;
  // boards: board_count positions of board_rows x board_cols.
  int32_t board_rows = 9;
  int32_t board_cols = 9;
  std::vector<int32_t> stones = {10, 10};
  int64_t board_count = 64;
};

// The success probability of the Poisson-binomial load's term i, a pure
// function of i so that other tools (bench/service/poisson_binomial_ref.py)
// rebuild the same problem: splitmix64 of kPoissonBinomialSeed + (i + 1) *
// 0x9E3779B97F4A7C15, z, gives p_i = (2 * (z >> 12) + 1) * 2^-53, exactly
// representable, as is 1 - p_i, and strictly inside (0, 1).
inline constexpr uint64_t kPoissonBinomialSeed = 15;
double PoissonBinomialP(int64_t i);

// The parameters of `kind` that `shape` sets, by flag name, for reports.
std::vector<std::pair<std::string, std::string>> ShapeParameters(
    RpcKind kind, const LoadShape& shape);

// Requests of each kind. Their values come from a fixed-seed generator, so
// every run sends the same requests (apart from the seed field).
absl::StatusOr<sampler::v1::EnumerateRequest> MakeEnumerateLoad(
    const LoadShape& shape);
absl::StatusOr<sampler::v1::SampleCategoricalRequest> MakeCategoricalLoad(
    const LoadShape& shape);
absl::StatusOr<sampler::v1::SampleGammaRequest> MakeGammaLoad(
    const LoadShape& shape);
absl::StatusOr<sampler::v1::SampleDirichletRequest> MakeDirichletLoad(
    const LoadShape& shape);
absl::StatusOr<sampler::v1::SampleBoardsRequest> MakeBoardsLoad(
    const LoadShape& shape);

// Work items in the answer to a request, as the server's limits count them:
// output elements (enumerate: sum of result lengths; dirichlet: all vector
// components), rows x draws, samples, positions.
int64_t ItemCount(const sampler::v1::EnumerateRequest& request);
int64_t ItemCount(const sampler::v1::SampleCategoricalRequest& request);
int64_t ItemCount(const sampler::v1::SampleGammaRequest& request);
int64_t ItemCount(const sampler::v1::SampleDirichletRequest& request);
int64_t ItemCount(const sampler::v1::SampleBoardsRequest& request);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_LOADGEN_LOADGEN_REQUESTS_H_
