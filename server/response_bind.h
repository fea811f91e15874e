// Binding a parsed job's outputs into its response message: the backend then
// writes the answer in place, and no answer is copied after a batch runs.
//
// Each Bind* sizes the response's output field(s) for a parsed (whole) job
// (request_parse.h), points the job's output span(s) at that memory and
// fills the other response fields (seed, rows, draws, words_per_board,
// ...). The response must outlive the job's execution and its output fields
// must not be resized afterwards. Binding again rebinds.
//
// The field-level helpers below serve the chunks of streams too
// (stream_chunk.h), whose outputs are bound the same way.
#ifndef SAMPLER_SERVER_RESPONSE_BIND_H_
#define SAMPLER_SERVER_RESPONSE_BIND_H_

#include <cstdint>
#include <type_traits>

#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/v1/sampler.pb.h"
#include "server/jobs.h"

namespace sampler::server {

namespace v1 = ::sampler::v1;

// results[i] gets the problem's length and offset (the sum of its terms'
// offsets, known before execution, so Bind writes it; the job's
// out_offset pointers point at storage owned by the job, so a backend that
// writes them changes nothing in the response).
void BindEnumerate(EnumerateJob& job, v1::EnumerateResponse* response);
void BindCategorical(CategoricalJob& job,
                     v1::SampleCategoricalResponse* response);
void BindGamma(GammaJob& job, v1::SampleGammaResponse* response);
void BindDirichlet(DirichletJob& job, v1::SampleDirichletResponse* response);
void BindBoards(BoardsJob& job, v1::SampleBoardsResponse* response);

// ------------------------------------------------------- field helpers --

// Sizes the representation of T in `reals` to n values and returns its
// memory, for the backend to write in place.
template <typename T>
absl::Span<T> BindReals(int64_t n, v1::Reals* reals) {
  if constexpr (std::is_same_v<T, float>) {
    auto* values = reals->mutable_f32()->mutable_values();
    values->Resize(static_cast<int>(n), 0.0f);
    return absl::Span<T>(values->mutable_data(), values->size());
  } else {
    auto* values = reals->mutable_f64()->mutable_values();
    values->Resize(static_cast<int>(n), 0.0);
    return absl::Span<T>(values->mutable_data(), values->size());
  }
}

// The same for categorical indices and board words.
absl::Span<int32_t> BindIndices(
    int64_t n, google::protobuf::RepeatedField<int32_t>* indices);
absl::Span<uint64_t> BindWords(
    int64_t n, google::protobuf::RepeatedField<uint64_t>* words);

// Words of one position: colours x words per colour.
int64_t PositionWords(const kernels::BoardSpec& spec);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_RESPONSE_BIND_H_
