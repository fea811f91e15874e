// Stream planning, slicing into piece jobs and cutting into messages; see
// stream_chunk.h.
#include "server/stream_chunk.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <type_traits>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/gamma.h"
#include "server/gamma_groups.h"
#include "server/request_limits.h"
#include "server/response_bind.h"
#include "server/saturating.h"

namespace sampler::server {
namespace {

// What one unit of a streamed job costs: its estimated bytes in a chunk
// message, and its work items.
struct UnitCost {
  int64_t bytes = 8;
  int64_t items = 1;
};

UnitCost CostOf(const CategoricalJob& whole) {
  return {SatMul(whole.shape.draws,
                 VarintBytes(static_cast<uint64_t>(
                     std::max<int64_t>(whole.shape.categories - 1, 0)))),
          std::max<int64_t>(whole.shape.draws, 1)};
}

UnitCost CostOf(const GammaJob& whole) {
  return {std::holds_alternative<GammaWork<float>>(whole.work) ? 4 : 8, 1};
}

UnitCost CostOf(const BoardsJob& whole) {
  return {SatMul(static_cast<int64_t>(whole.spec.stones.size()) * 8,
                 kernels::BoardWords64(whole.spec)),
          1};
}

// ChunkSize of a job of `units` units that cost `unit` each.
int64_t ChunkUnits(const UnitCost& unit, int64_t units_in_stream,
                   int64_t client_max_per_chunk, const RequestLimits& limits) {
  const int64_t budget = std::max<int64_t>(
      std::min(limits.target_chunk_bytes, MaxMessageBytes(limits) / 2) -
          kMessageOverhead,
      1);
  int64_t units =
      std::max<int64_t>(budget / std::max<int64_t>(unit.bytes, 1), 1);
  const int64_t max_units =
      std::max<int64_t>(MaxStreamChunkItems(limits) / unit.items, 1);
  units = std::min(units, max_units);
  // Whole warps: categorical rows run on lane (first_row + r) mod 32, and
  // chunks that start at multiples of 32 keep every warp of a chunk full.
  if (units >= 64) units -= units % 32;
  if (client_max_per_chunk > 0) units = std::min(units, client_max_per_chunk);
  return std::max<int64_t>(std::min(units, units_in_stream), 1);
}

template <typename StreamedJob>
int64_t ChunkSizeOf(const StreamedJob& whole, int64_t client_max_per_chunk,
                    const RequestLimits& limits) {
  return ChunkUnits(CostOf(whole), StreamUnits(whole), client_max_per_chunk,
                    limits);
}

template <typename StreamedJob>
StreamPlan PlanStreamOf(const StreamedJob& whole, int64_t client_max_per_chunk,
                        const RequestLimits& limits, int64_t max_piece_items) {
  StreamPlan plan;
  plan.piece = ChunkSizeOf(whole, /*client_max_per_chunk=*/0, limits);
  if (max_piece_items > 0) {
    plan.piece = std::max<int64_t>(
        std::min(plan.piece, max_piece_items / CostOf(whole).items), 1);
  }
  plan.message =
      std::min(ChunkSizeOf(whole, client_max_per_chunk, limits), plan.piece);
  // Whole messages per piece, and whole warps where that still leaves one
  // (categorical rows run on lane (first_row + r) mod 32). message <= piece
  // <= 2^31, so the lcm cannot overflow.
  const int64_t warps = std::lcm(plan.message, int64_t{32});
  const int64_t step = plan.piece >= warps ? warps : plan.message;
  plan.piece -= plan.piece % step;
  return plan;
}

// Copies what a chunk shares with its whole request.
void CopyCommon(const Job& whole, Job* chunk) {
  chunk->client = whole.client;
  chunk->seed = whole.seed;
  chunk->deadline = whole.deadline;
  chunk->cancelled = whole.cancelled;
}

bool ValidRange(int64_t first, int64_t count, int64_t total) {
  return first >= 0 && count >= 1 && first <= total && count <= total - first;
}

}  // namespace

int64_t StreamUnits(const CategoricalJob& whole) { return whole.shape.rows; }
int64_t StreamUnits(const GammaJob& whole) { return whole.items; }
int64_t StreamUnits(const BoardsJob& whole) { return whole.count; }

int64_t ChunkSize(const CategoricalJob& whole, int64_t client_max_per_chunk,
                  const RequestLimits& limits) {
  return ChunkSizeOf(whole, client_max_per_chunk, limits);
}
int64_t ChunkSize(const GammaJob& whole, int64_t client_max_per_chunk,
                  const RequestLimits& limits) {
  return ChunkSizeOf(whole, client_max_per_chunk, limits);
}
int64_t ChunkSize(const BoardsJob& whole, int64_t client_max_per_chunk,
                  const RequestLimits& limits) {
  return ChunkSizeOf(whole, client_max_per_chunk, limits);
}

StreamPlan PlanStream(const CategoricalJob& whole, int64_t client_max_per_chunk,
                      const RequestLimits& limits, int64_t max_piece_items) {
  return PlanStreamOf(whole, client_max_per_chunk, limits, max_piece_items);
}
StreamPlan PlanStream(const GammaJob& whole, int64_t client_max_per_chunk,
                      const RequestLimits& limits, int64_t max_piece_items) {
  return PlanStreamOf(whole, client_max_per_chunk, limits, max_piece_items);
}
StreamPlan PlanStream(const BoardsJob& whole, int64_t client_max_per_chunk,
                      const RequestLimits& limits, int64_t max_piece_items) {
  return PlanStreamOf(whole, client_max_per_chunk, limits, max_piece_items);
}

absl::Status ValidateChunkMax(absl::string_view field, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, " = ", value, ": must be >= 0 (0 lets the server choose)"));
}

std::shared_ptr<CategoricalJob> SliceCategorical(
    const CategoricalJob& whole, int64_t first_row, int64_t rows,
    v1::SampleCategoricalStreamResponse* chunk) {
  if (!ValidRange(first_row, rows, whole.shape.rows)) return nullptr;
  auto job = std::make_shared<CategoricalJob>();
  CopyCommon(whole, job.get());
  job->shape = whole.shape;
  job->shape.rows = rows;
  job->weight_kind = whole.weight_kind;
  job->first_row = whole.first_row + static_cast<uint64_t>(first_row);
  job->items = rows * whole.shape.draws;
  const size_t begin = static_cast<size_t>(first_row * whole.shape.categories);
  const size_t end = begin + static_cast<size_t>(rows * whole.shape.categories);
  bool fits = true;
  std::visit(
      [&](const auto& work) {
        using W = std::decay_t<decltype(work)>;
        W& part = job->work.template emplace<W>();
        if (end > work.values.size()) {
          fits = false;
          return;
        }
        // The piece reads the whole request's values (no copy).
        part.values = work.values.subspan(begin, end - begin);
        part.out = BindIndices(job->items, chunk->mutable_indices());
      },
      whole.work);
  if (!fits) return nullptr;
  job->values_owner = whole.values_owner;
  chunk->set_first_row(static_cast<int64_t>(job->first_row));
  chunk->set_rows(rows);
  chunk->set_draws(job->shape.draws);
  chunk->set_seed(job->seed);
  return job;
}

std::shared_ptr<GammaJob> SliceGamma(const GammaJob& whole,
                                     int64_t first_sample, int64_t samples,
                                     v1::SampleGammaStreamResponse* chunk) {
  if (!ValidRange(first_sample, samples, whole.items)) return nullptr;
  auto job = std::make_shared<GammaJob>();
  CopyCommon(whole, job.get());
  job->log_output = whole.log_output;
  job->first_sample = whole.first_sample + static_cast<uint64_t>(first_sample);
  job->items = samples;
  const int64_t last = first_sample + samples;  // one past
  const std::vector<int64_t>& ends = whole.group_ends;
  bool fits = true;
  std::visit(
      [&](const auto& work) {
        using W = std::decay_t<decltype(work)>;
        using T = typename decltype(work.out)::value_type;
        W& part = job->work.template emplace<W>();
        if (work.groups.empty()) {
          const size_t begin = static_cast<size_t>(first_sample);
          const size_t end = static_cast<size_t>(last);
          if (end > work.shape.size() ||
              (!work.scale.empty() && end > work.scale.size())) {
            fits = false;
            return;
          }
          part.shape.assign(work.shape.begin() + begin,
                            work.shape.begin() + end);
          if (!work.scale.empty()) {
            part.scale.assign(work.scale.begin() + begin,
                              work.scale.begin() + end);
          }
        } else {
          // The first group that ends after first_sample, and its start,
          // by binary search where the group ends are known.
          GammaGroupStart from;
          if (ends.size() == work.groups.size()) {
            from.index = static_cast<size_t>(
                std::upper_bound(ends.begin(), ends.end(), first_sample) -
                ends.begin());
            if (from.index < work.groups.size()) {
              from.first_sample =
                  ends[from.index] - work.groups[from.index].count;
            }
          }
          part.groups =
              ClipGammaGroups<T>(work.groups, first_sample, last, from);
          int64_t covered = 0;
          for (const kernels::GammaGroup<T>& group : part.groups) {
            covered += group.count;
          }
          if (covered != samples) {
            fits = false;
            return;
          }
        }
        part.out = BindReals<T>(samples, chunk->mutable_samples());
      },
      whole.work);
  if (!fits) return nullptr;
  chunk->set_first_sample(static_cast<int64_t>(job->first_sample));
  chunk->set_seed(job->seed);
  return job;
}

std::shared_ptr<BoardsJob> SliceBoards(const BoardsJob& whole,
                                       int64_t first_position,
                                       int64_t positions,
                                       v1::SampleBoardsStreamResponse* chunk) {
  if (!ValidRange(first_position, positions, whole.count)) return nullptr;
  auto job = std::make_shared<BoardsJob>();
  CopyCommon(whole, job.get());
  job->spec = whole.spec;
  job->count = positions;
  job->items = positions;
  job->first_position =
      whole.first_position + static_cast<uint64_t>(first_position);
  job->out = BindWords(positions * PositionWords(job->spec),
                       chunk->mutable_bitboards());
  chunk->set_first_position(static_cast<int64_t>(job->first_position));
  chunk->set_words_per_board(kernels::BoardWords64(job->spec));
  chunk->set_colours(static_cast<int32_t>(job->spec.stones.size()));
  chunk->set_count(positions);
  chunk->set_seed(job->seed);
  return job;
}

bool CutCategoricalMessage(const v1::SampleCategoricalStreamResponse& piece,
                           int64_t first, int64_t count,
                           v1::SampleCategoricalStreamResponse* message) {
  const int64_t draws = piece.draws();
  if (!ValidRange(first, count, piece.rows()) ||
      SatMul(piece.rows(), draws) != piece.indices_size()) {
    return false;
  }
  const auto begin = piece.indices().begin() + first * draws;
  message->mutable_indices()->Assign(begin, begin + count * draws);
  message->set_first_row(piece.first_row() + first);
  message->set_rows(count);
  message->set_draws(piece.draws());
  message->set_seed(piece.seed());
  return true;
}

bool CutGammaMessage(const v1::SampleGammaStreamResponse& piece, int64_t first,
                     int64_t count, v1::SampleGammaStreamResponse* message) {
  const v1::Reals& samples = piece.samples();
  auto cut = [&](const auto& values, auto* out) {
    if (!ValidRange(first, count, values.size())) return false;
    out->Assign(values.begin() + first, values.begin() + first + count);
    return true;
  };
  bool ok = false;
  if (samples.has_f32()) {
    ok = cut(samples.f32().values(),
             message->mutable_samples()->mutable_f32()->mutable_values());
  } else if (samples.has_f64()) {
    ok = cut(samples.f64().values(),
             message->mutable_samples()->mutable_f64()->mutable_values());
  }
  if (!ok) return false;
  message->set_first_sample(piece.first_sample() + first);
  message->set_seed(piece.seed());
  return true;
}

bool CutBoardsMessage(const v1::SampleBoardsStreamResponse& piece,
                      int64_t first, int64_t count,
                      v1::SampleBoardsStreamResponse* message) {
  const int64_t words =
      SatMul(int64_t{piece.colours()}, int64_t{piece.words_per_board()});
  if (!ValidRange(first, count, piece.count()) || words <= 0 ||
      SatMul(piece.count(), words) != piece.bitboards_size()) {
    return false;
  }
  const auto begin = piece.bitboards().begin() + first * words;
  message->mutable_bitboards()->Assign(begin, begin + count * words);
  message->set_first_position(piece.first_position() + first);
  message->set_words_per_board(piece.words_per_board());
  message->set_colours(piece.colours());
  message->set_count(count);
  message->set_seed(piece.seed());
  return true;
}

}  // namespace sampler::server
