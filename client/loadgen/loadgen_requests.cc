#include "client/loadgen/loadgen_requests.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/common/enumerate_terms.h"
#include "client/common/parse.h"
#include "client/common/reals.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::client {
namespace {

// Fixed, so that runs are comparable: the same inputs every time.
constexpr uint64_t kValueSeed = 0x5eed5eed;

// Checks size flags, by name, so the error names the flag to fix.
absl::Status RequirePositive(
    std::initializer_list<std::pair<absl::string_view, int64_t>> sizes) {
  for (const auto& [name, value] : sizes) {
    if (value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " must be positive, got ", value));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RpcKind> ParseRpcKind(absl::string_view name) {
  for (RpcKind kind :
       {RpcKind::kEnumerate, RpcKind::kCategorical, RpcKind::kGamma,
        RpcKind::kDirichlet, RpcKind::kBoards}) {
    if (name == RpcKindName(kind)) return kind;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown --rpc \"", name,
      "\": expected enumerate, categorical, gamma, dirichlet or boards"));
}

absl::string_view RpcKindName(RpcKind kind) {
  switch (kind) {
    case RpcKind::kEnumerate:
      return "enumerate";
    case RpcKind::kCategorical:
      return "categorical";
    case RpcKind::kGamma:
      return "gamma";
    case RpcKind::kDirichlet:
      return "dirichlet";
    case RpcKind::kBoards:
      return "boards";
  }
  return "unknown";
}

absl::string_view ItemUnit(RpcKind kind) {
  switch (kind) {
    case RpcKind::kEnumerate:
      return "points";
    case RpcKind::kCategorical:
      return "draws";
    case RpcKind::kGamma:
      return "samples";
    case RpcKind::kDirichlet:
      return "elements";
    case RpcKind::kBoards:
      return "positions";
  }
  return "items";
}

std::vector<std::pair<std::string, std::string>> ShapeParameters(
    RpcKind kind, const LoadShape& shape) {
  std::vector<std::pair<std::string, std::string>> parameters;
  auto add = [&parameters](absl::string_view name, const auto& value) {
    parameters.emplace_back(std::string(name), absl::StrCat(value));
  };
  switch (kind) {
    case RpcKind::kEnumerate:
      if (shape.poisson_binomial > 0) {
        add("poisson_binomial", shape.poisson_binomial);
      } else {
        add("problems", shape.problems);
        add("terms", shape.terms);
        add("pmf_len", shape.pmf_len);
      }
      if (shape.enumerate_packed) add("enumerate_packed", "true");
      if (shape.enumerate_repeat != 1) {
        add("enumerate_repeat", shape.enumerate_repeat);
      }
      if (shape.output_space == sampler::v1::PROBABILITY_SPACE_LOG) {
        add("output_space", "log");
      }
      break;
    case RpcKind::kCategorical:
      add("categorical_rows", shape.categorical_rows);
      add("categories", shape.categories);
      add("draws", shape.draws);
      break;
    case RpcKind::kGamma:
      add("gamma_samples", shape.gamma_samples);
      if (shape.gamma_per_element) {
        add("gamma_per_element", "true");
      } else {
        add("gamma_shape", shape.gamma_shape);
      }
      break;
    case RpcKind::kDirichlet:
      add("dirichlet_rows", shape.dirichlet_rows);
      add("dirichlet_dim", shape.dirichlet_dim);
      add("dirichlet_alpha", shape.dirichlet_alpha);
      break;
    case RpcKind::kBoards:
      add("board_rows", shape.board_rows);
      add("board_cols", shape.board_cols);
      add("stones", absl::StrJoin(shape.stones, ","));
      add("board_count", shape.board_count);
      return parameters;  // boards have no precision
  }
  add("precision", sampler::v1::Precision_Name(shape.precision));
  return parameters;
}

double PoissonBinomialP(int64_t i) {
  uint64_t z =
      kPoissonBinomialSeed + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  z ^= z >> 31;
  return std::ldexp(static_cast<double>(2 * (z >> 12) + 1), -53);
}

absl::StatusOr<sampler::v1::EnumerateRequest> MakeEnumerateLoad(
    const LoadShape& shape) {
  SAMPLER_RETURN_IF_ERROR(
      RequirePositive({{"problems", shape.problems},
                       {"terms", shape.terms},
                       {"pmf_len", shape.pmf_len},
                       {"enumerate_repeat", shape.enumerate_repeat}}));
  sampler::v1::EnumerateRequest request;
  request.set_precision(shape.precision);
  request.set_output_space(shape.output_space);
  auto add_problem = [&](const std::vector<PmfTerm>& terms) {
    const std::vector<int64_t> repeats(
        shape.enumerate_repeat == 1 ? 0 : terms.size(), shape.enumerate_repeat);
    AddTerms(terms, repeats, shape.enumerate_packed, shape.precision,
             request.add_problems());
  };
  std::vector<PmfTerm> terms;
  if (shape.poisson_binomial > 0) {
    terms.resize(static_cast<size_t>(shape.poisson_binomial));
    for (int64_t i = 0; i < shape.poisson_binomial; ++i) {
      const double p = PoissonBinomialP(i);
      terms[static_cast<size_t>(i)].probabilities = {1 - p, p};
    }
    add_problem(terms);
    return request;
  }
  std::mt19937_64 rng(kValueSeed);
  std::uniform_real_distribution<double> weight(0.01, 1.0);
  terms.resize(static_cast<size_t>(shape.terms));
  for (int64_t p = 0; p < shape.problems; ++p) {
    for (int64_t t = 0; t < shape.terms; ++t) {
      std::vector<double>& values = terms[static_cast<size_t>(t)].probabilities;
      values.resize(static_cast<size_t>(shape.pmf_len));
      double total = 0;
      for (double& value : values) total += value = weight(rng);
      for (double& value : values) value /= total;
      terms[static_cast<size_t>(t)].offset = t;
    }
    add_problem(terms);
  }
  return request;
}

absl::StatusOr<sampler::v1::SampleCategoricalRequest> MakeCategoricalLoad(
    const LoadShape& shape) {
  SAMPLER_RETURN_IF_ERROR(
      RequirePositive({{"categorical_rows", shape.categorical_rows},
                       {"categories", shape.categories},
                       {"draws", shape.draws}}));
  std::mt19937_64 rng(kValueSeed);
  std::uniform_real_distribution<double> weight(0.01, 1.0);
  std::vector<double> values(shape.categorical_rows * shape.categories);
  for (double& value : values) value = weight(rng);
  sampler::v1::SampleCategoricalRequest request;
  request.set_categories(shape.categories);
  SetReals(values, shape.precision, request.mutable_values());
  request.set_input(sampler::v1::CATEGORICAL_INPUT_WEIGHTS);
  request.set_draws(shape.draws);
  request.set_precision(shape.precision);
  return request;
}

absl::StatusOr<sampler::v1::SampleGammaRequest> MakeGammaLoad(
    const LoadShape& shape) {
  SAMPLER_RETURN_IF_ERROR(
      RequirePositive({{"gamma_samples", shape.gamma_samples}}));
  sampler::v1::SampleGammaRequest request;
  request.set_precision(shape.precision);
  if (shape.gamma_per_element) {
    std::mt19937_64 rng(kValueSeed);
    std::uniform_real_distribution<double> log10_shape(-1.0, 1.0);
    std::vector<double> shapes(shape.gamma_samples);
    for (double& value : shapes) value = std::pow(10.0, log10_shape(rng));
    SetReals(shapes, shape.precision,
             request.mutable_elements()->mutable_shape());
  } else {
    if (!(shape.gamma_shape > 0)) {
      return absl::InvalidArgumentError("--gamma_shape must be positive");
    }
    sampler::v1::GammaGroup* group = request.mutable_groups()->add_groups();
    group->set_shape(shape.gamma_shape);
    group->set_scale(1.0);
    group->set_count(shape.gamma_samples);
  }
  return request;
}

absl::StatusOr<sampler::v1::SampleDirichletRequest> MakeDirichletLoad(
    const LoadShape& shape) {
  SAMPLER_RETURN_IF_ERROR(
      RequirePositive({{"dirichlet_rows", shape.dirichlet_rows},
                       {"dirichlet_dim", shape.dirichlet_dim}}));
  if (!(shape.dirichlet_alpha > 0)) {
    return absl::InvalidArgumentError("--dirichlet_alpha must be positive");
  }
  sampler::v1::SampleDirichletRequest request;
  const std::vector<double> concentrations(
      shape.dirichlet_rows * shape.dirichlet_dim, shape.dirichlet_alpha);
  SetReals(concentrations, shape.precision, request.mutable_concentrations());
  request.set_dimension(shape.dirichlet_dim);
  request.set_precision(shape.precision);
  return request;
}

absl::StatusOr<sampler::v1::SampleBoardsRequest> MakeBoardsLoad(
    const LoadShape& shape) {
  SAMPLER_RETURN_IF_ERROR(
      RequirePositive({{"board_rows", shape.board_rows},
                       {"board_cols", shape.board_cols},
                       {"board_count", shape.board_count}}));
  if (shape.stones.empty()) {
    return absl::InvalidArgumentError("--stones needs at least one colour");
  }
  sampler::v1::SampleBoardsRequest request;
  request.set_rows(shape.board_rows);
  request.set_cols(shape.board_cols);
  for (int32_t k : shape.stones) request.add_stones(k);
  request.set_count(shape.board_count);
  return request;
}

int64_t ItemCount(const sampler::v1::EnumerateRequest& request) {
  int64_t items = 0;
  for (const sampler::v1::EnumerateProblem& problem : request.problems()) {
    items += ResultLength(problem);
  }
  return items;
}

int64_t ItemCount(const sampler::v1::SampleCategoricalRequest& request) {
  if (request.categories() <= 0) return 0;
  const int64_t rows = RealsSize(request.values()) / request.categories();
  return rows * std::max(request.draws(), 1);
}

int64_t ItemCount(const sampler::v1::SampleGammaRequest& request) {
  if (request.has_elements()) return RealsSize(request.elements().shape());
  int64_t items = 0;
  for (const sampler::v1::GammaGroup& group : request.groups().groups()) {
    items += group.count();
  }
  return items;
}

int64_t ItemCount(const sampler::v1::SampleDirichletRequest& request) {
  return RealsSize(request.concentrations());
}

int64_t ItemCount(const sampler::v1::SampleBoardsRequest& request) {
  return request.count();
}

}  // namespace sampler::client
