// SampleBoards batches on a GPU: one segment per job, one launch per kernel
// variant present (threadwise or warpwise by board size).
#include <cstring>
#include <vector>

#include "sampler/kernels/cuda/boards.h"
#include "sampler/kernels/cuda/status.h"
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
  if (absl::Status s = kc::PrepareBoardSegments(absl::MakeSpan(segments),
                                                out_words);
      !s.ok()) {
    return s;
  }
  const size_t segment_bytes = segments.size() * sizeof(kc::BoardSegment);
  const size_t out_bytes = out_words * sizeof(uint64_t);
  if (absl::Status s = slot.Reserve(segment_bytes, out_bytes); !s.ok()) {
    return s;
  }
  std::memcpy(slot.in.data(), segments.data(), segment_bytes);
  absl::StatusOr<kc::DeviceBuffer> device_segments = slot.Allocate(segment_bytes);
  if (!device_segments.ok()) return device_segments.status();
  absl::StatusOr<kc::DeviceBuffer> device_out = slot.Allocate(out_bytes);
  if (!device_out.ok()) return device_out.status();

  const cudaStream_t stream = slot.stream.get();
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(device_segments->data(),
                                               slot.in.data(), segment_bytes,
                                               cudaMemcpyHostToDevice, stream));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.start.get(), stream));
  if (absl::Status s = kc::LaunchSampleBoards(
          segments, device_segments->as<kc::BoardSegment>(),
          device_out->as<uint64_t>(), out_words, stream);
      !s.ok()) {
    return s;
  }
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.stop.get(), stream));
  SAMPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(slot.out.data(),
                                               device_out->data(), out_bytes,
                                               cudaMemcpyDeviceToHost, stream));
  absl::StatusOr<double> seconds = slot.Finish();
  if (!seconds.ok()) return seconds;

  const auto* staged = static_cast<const uint64_t*>(slot.out.data());
  for (size_t i = 0; i < placed.size(); ++i) {
    BoardsJob& job = *placed[i];
    std::memcpy(job.out.data(), staged + placed_offsets[i],
                job.out.size() * sizeof(uint64_t));
  }
  return seconds;
}

}  // namespace sampler::server
