// sampler-demo: one sample of each kind from the CPU implementations, for a
// first look without a server. Usage: sampler-demo [seed]
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/gamma.h"

namespace k = sampler::kernels;

namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "sampler-demo: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : 42;
  std::printf("seed %" PRIu64 "\n\n", seed);

  // Enumerate: two dice, one of them shifted to start at -1.
  std::vector<double> die(6, 1.0 / 6);
  std::vector<k::PmfTerm<double>> terms = {{1, die}, {-1, die}};
  auto pmf = k::EnumerateCpu<double>(terms, k::ProbSpace::kLinear,
                                     k::ProbSpace::kLinear);
  if (!pmf.ok()) return Fail(pmf.status());
  std::printf("Enumerate: d6 + (d6 - 2)\n");
  for (size_t i = 0; i < pmf->values.size(); ++i) {
    std::printf("  %3" PRId64 "  %.6f\n", pmf->offset + static_cast<int64_t>(i),
                pmf->values[i]);
  }

  // SampleCategorical: 3 rows of 4 weights, 8 draws each.
  std::vector<float> weights = {1, 1, 1, 1, 0, 0, 1, 9, 5, 0, 5, 0};
  std::vector<int32_t> draws(3 * 8);
  if (auto s = k::SampleCategoricalCpu<float>(
          weights, k::CategoricalShape{3, 4, 8}, k::WeightKind::kWeights, seed,
          0, absl::MakeSpan(draws));
      !s.ok()) {
    return Fail(s);
  }
  std::printf("\nSampleCategorical: 8 draws per row\n");
  for (int r = 0; r < 3; ++r) {
    std::printf("  weights %g %g %g %g ->", weights[4 * r], weights[4 * r + 1],
                weights[4 * r + 2], weights[4 * r + 3]);
    for (int d = 0; d < 8; ++d) std::printf(" %d", draws[8 * r + d]);
    std::printf("\n");
  }

  // SampleGamma: a few shapes.
  std::vector<double> shape = {0.1, 0.5, 1.0, 2.5, 10.0, 100.0};
  std::vector<double> scale(shape.size(), 1.0);
  std::vector<double> gamma(shape.size());
  if (auto s = k::SampleGammaCpu<double>(shape, scale, false, seed, 0,
                                         absl::MakeSpan(gamma));
      !s.ok()) {
    return Fail(s);
  }
  std::printf("\nSampleGamma (scale 1)\n");
  for (size_t i = 0; i < shape.size(); ++i) {
    std::printf("  shape %6.1f -> %.6g\n", shape[i], gamma[i]);
  }

  // SampleDirichlet: a flat and a sparse concentration vector.
  std::vector<double> alpha = {1, 1, 1, 1, 1e-3, 1e-3, 1e-3, 1e-3};
  std::vector<int64_t> offsets = {0, 4, 8};
  std::vector<double> dirichlet(alpha.size());
  if (auto s = k::SampleDirichletCpu<double>(alpha, offsets, false, seed, 0,
                                             absl::MakeSpan(dirichlet));
      !s.ok()) {
    return Fail(s);
  }
  std::printf("\nSampleDirichlet\n");
  for (int r = 0; r < 2; ++r) {
    std::printf("  alpha %-5g ->", alpha[4 * r]);
    for (int j = 0; j < 4; ++j) std::printf(" %.4g", dirichlet[4 * r + j]);
    std::printf("\n");
  }

  // SampleBoards: a 9x9 board with 10 black (X) and 10 white (O) stones.
  k::BoardSpec spec{9, 9, {10, 10}};
  const int words = k::BoardWords64(spec);
  std::vector<uint64_t> board(2 * words);
  if (auto s = k::SampleBoardsCpu(spec, seed, 0, 1, absl::MakeSpan(board));
      !s.ok()) {
    return Fail(s);
  }
  std::printf("\nSampleBoards: 9x9, 10 X and 10 O\n");
  for (int r = 0; r < 9; ++r) {
    std::printf("  ");
    for (int c = 0; c < 9; ++c) {
      const int site = r * 9 + c;
      const uint64_t bit = uint64_t{1} << (site % 64);
      char mark = '.';
      if (board[site / 64] & bit) mark = 'X';
      if (board[words + site / 64] & bit) mark = 'O';
      std::printf(" %c", mark);
    }
    std::printf("\n");
  }
  return 0;
}
