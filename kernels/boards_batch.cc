// BoardsBatchBuilder: the host side of a boards batch (requests placed end
// to end, planned by PrepareBoardSegments, laid out for the staging
// pipeline). Host code only; the kernels are in boards.cu.
#include <cstring>

#include "sampler/kernels/cuda/boards.h"

namespace sampler::kernels::cuda {

absl::StatusOr<int> BoardsBatchBuilder::Add(const BoardSpec& spec,
                                            uint64_t seed,
                                            uint64_t first_position,
                                            int64_t count) {
  if (finished_) {
    return absl::FailedPreconditionError(
        "BoardsBatchBuilder: Add after Finish");
  }
  absl::StatusOr<BoardSegment> segment =
      MakeBoardSegment(spec, seed, first_position, count, out_words_);
  if (!segment.ok()) return segment.status();
  out_offsets_.push_back(out_words_);
  out_words_ += BoardSegmentWords(*segment);
  segments_.push_back(*segment);
  return static_cast<int>(segments_.size() - 1);
}

absl::Status BoardsBatchBuilder::Finished(absl::Status prepared) {
  finished_ = prepared.ok();
  return prepared;
}

absl::Status BoardsBatchBuilder::Finish(BoardKernel kernel) {
  return Finished(
      PrepareBoardSegments(absl::MakeSpan(segments_), out_words_, kernel));
}

absl::Status BoardsBatchBuilder::FinishWithVariant(int32_t variant) {
  return Finished(PrepareBoardSegmentsWithVariant(absl::MakeSpan(segments_),
                                                  out_words_, variant));
}

StagingPlan BoardsBatchBuilder::Staging() const {
  return {segments_.size() * sizeof(BoardSegment),
          out_words_ * sizeof(uint64_t), 0};
}

void BoardsBatchBuilder::PackInto(void* staged_in) const {
  if (segments_.empty()) return;
  std::memcpy(staged_in, segments_.data(),
              segments_.size() * sizeof(BoardSegment));
}

BoardsBatch BoardsBatchBuilder::View(const DeviceRegions& device) const {
  BoardsBatch batch;
  batch.segments = segments_;
  batch.device_segments = static_cast<const BoardSegment*>(device.in);
  batch.out = static_cast<uint64_t*>(device.out);
  batch.out_words = out_words_;
  return batch;
}

}  // namespace sampler::kernels::cuda
