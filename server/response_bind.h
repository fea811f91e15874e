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
#include <optional>

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

// Output memory is added to the response's field without being
// initialised: the backend overwrites every value (Resize would first fill
// them with zeros, about 9.5% of the server's CPU for a 40 MB answer in a
// profile; fresh_output_test proves, for every kind and shape on the CPU
// backend, that no byte of the bound memory survives into an answer, and
// the CUDA backend copies each output whole from its staging memory). Heap
// memory handed out again may hold an earlier answer or request: a kernel
// that skipped a value would leak it, hence the proof. Any earlier content
// of the field is dropped (rebinding). Outputs of 4 MiB or more are advised
// transparent huge pages before the first write: the page faults of fresh
// memory, not the fill itself, were most of that cost (response_bind.cc).

// Sizes the representation of T in `reals` to n values and returns its
// memory, for the backend to write in place. T: float or double.
template <typename T>
absl::Span<T> BindReals(int64_t n, v1::Reals* reals);
extern template absl::Span<float> BindReals<float>(int64_t n, v1::Reals* reals);
extern template absl::Span<double> BindReals<double>(int64_t n,
                                                     v1::Reals* reals);

// The same for categorical indices and board words.
absl::Span<int32_t> BindIndices(
    int64_t n, google::protobuf::RepeatedField<int32_t>* indices);
absl::Span<uint64_t> BindWords(
    int64_t n, google::protobuf::RepeatedField<uint64_t>* words);

// Words of one position: colours x words per colour.
int64_t PositionWords(const kernels::BoardSpec& spec);

// ------------------------------------------------------------- test seam --
// Tests only (fresh_output_test): from now on, every output memory bound
// above is filled with `byte` before it is handed out (std::nullopt, the
// default: left as allocated). Thread-safe; affects bindings made after it.
void SetFreshOutputFillForTesting(std::optional<uint8_t> byte);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_RESPONSE_BIND_H_
