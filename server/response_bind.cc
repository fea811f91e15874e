// Outputs bound into response memory; see response_bind.h.
#include "server/response_bind.h"

#include <cstdint>
#include <variant>

#include "absl/types/span.h"
#include "sampler/kernels/boards.h"

namespace sampler::server {
namespace {

template <typename T>
void BindEnumerateWork(EnumerateWork<T>& work,
                       v1::EnumerateResponse* response) {
  auto* results = response->mutable_results();
  results->Clear();
  results->Reserve(static_cast<int>(work.problems.size()));
  // All results exist before any memory is bound: the repeated field holds
  // pointers, so adding results does not move earlier ones.
  for (size_t p = 0; p < work.problems.size(); ++p) results->Add();
  for (size_t p = 0; p < work.problems.size(); ++p) {
    EnumerateProblem<T>& problem = work.problems[p];
    v1::Pmf* pmf = results->Mutable(static_cast<int>(p));
    // Unsigned: validated jobs cannot overflow, and others must not be UB.
    uint64_t offset = 0;
    int64_t length = 1;
    for (size_t t = 0; t < problem.terms.size(); ++t) {
      offset += static_cast<uint64_t>(problem.offsets[t]);
      length += static_cast<int64_t>(problem.terms[t].size()) - 1;
    }
    pmf->set_offset(static_cast<int64_t>(offset));
    problem.out = BindReals<T>(length, pmf->mutable_probabilities());
  }
}

}  // namespace

absl::Span<int32_t> BindIndices(
    int64_t n, google::protobuf::RepeatedField<int32_t>* indices) {
  indices->Resize(static_cast<int>(n), 0);
  return absl::Span<int32_t>(indices->mutable_data(), indices->size());
}

absl::Span<uint64_t> BindWords(
    int64_t n, google::protobuf::RepeatedField<uint64_t>* words) {
  words->Resize(static_cast<int>(n), 0);
  return absl::Span<uint64_t>(words->mutable_data(), words->size());
}

int64_t PositionWords(const kernels::BoardSpec& spec) {
  return static_cast<int64_t>(spec.stones.size()) * kernels::BoardWords64(spec);
}

void BindEnumerate(EnumerateJob& job, v1::EnumerateResponse* response) {
  std::visit([&](auto& work) { BindEnumerateWork(work, response); }, job.work);
}

void BindCategorical(CategoricalJob& job,
                     v1::SampleCategoricalResponse* response) {
  const int64_t n = job.shape.rows * job.shape.draws;
  std::visit(
      [&](auto& work) {
        work.out = BindIndices(n, response->mutable_indices());
      },
      job.work);
  response->set_rows(job.shape.rows);
  response->set_draws(job.shape.draws);
  response->set_seed(job.seed);
}

void BindGamma(GammaJob& job, v1::SampleGammaResponse* response) {
  std::visit(
      [&](auto& work) {
        using T = typename decltype(work.out)::value_type;
        work.out = BindReals<T>(job.items, response->mutable_samples());
      },
      job.work);
  response->set_seed(job.seed);
}

void BindDirichlet(DirichletJob& job, v1::SampleDirichletResponse* response) {
  std::visit(
      [&](auto& work) {
        using T = typename decltype(work.out)::value_type;
        work.out = BindReals<T>(static_cast<int64_t>(work.alpha.size()),
                                response->mutable_samples());
      },
      job.work);
  response->set_seed(job.seed);
}

void BindBoards(BoardsJob& job, v1::SampleBoardsResponse* response) {
  job.out = BindWords(job.count * PositionWords(job.spec),
                      response->mutable_bitboards());
  response->set_words_per_board(kernels::BoardWords64(job.spec));
  response->set_colours(static_cast<int32_t>(job.spec.stones.size()));
  response->set_count(job.count);
  response->set_seed(job.seed);
}

}  // namespace sampler::server
