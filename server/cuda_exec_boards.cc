// SampleBoards batches on a GPU: one segment per job, one launch per kernel
// variant present (threadwise or warpwise by board size).
#include <cstring>
#include <vector>

#include "sampler/kernels/cuda/boards.h"
#include "server/cuda_exec.h"

namespace sampler::server {

namespace kc = kernels::cuda;

absl::StatusOr<double> ExecuteOnGpu(Batch<BoardsJob>& batch, CudaSlot& slot) {
  std::vector<kc::BoardSegment> segments;
  std::vector<BoardsJob*> placed;        // jobs with a segment, in order
  std::vector<uint64_t> placed_offsets;  // their output offsets (words)
  uint64_t out_words = 0;
  for (auto& job : batch.jobs) {
    absl::StatusOr<kc::BoardSegment> segment = kc::MakeBoardSegment(
        job->spec, job->seed, job->first_position, job->count, out_words);
    if (!segment.ok()) {  // validated before queueing: cannot happen
      job->status = segment.status();
      continue;
    }
    placed.push_back(job.get());
    placed_offsets.push_back(out_words);
    out_words += kc::BoardSegmentWords(*segment);
    segments.push_back(*segment);
  }
  if (segments.empty()) return 0.0;
  // Reorders the segments by variant; each keeps its own out_offset.
  if (absl::Status s =
          kc::PrepareBoardSegments(absl::MakeSpan(segments), out_words);
      !s.ok()) {
    return s;
  }
  const size_t segment_bytes = segments.size() * sizeof(kc::BoardSegment);
  const StagingPlan plan{segment_bytes, out_words * sizeof(uint64_t), 0};
  return slot.Run(
      plan,
      [&](char* staged) {
        std::memcpy(staged, segments.data(), segment_bytes);
      },
      [&](const DeviceRegions& device, cudaStream_t stream) {
        return kc::LaunchBoards(
            segments, static_cast<const kc::BoardSegment*>(device.in),
            static_cast<uint64_t*>(device.out), out_words, stream);
      },
      [&](const char* staged) {
        const auto* words = reinterpret_cast<const uint64_t*>(staged);
        for (size_t i = 0; i < placed.size(); ++i) {
          BoardsJob& job = *placed[i];
          std::memcpy(job.out.data(), words + placed_offsets[i],
                      job.out.size() * sizeof(uint64_t));
        }
      });
}

}  // namespace sampler::server
