// SampleBoards batches on a GPU: one segment per job, one launch per kernel
// variant present (threadwise or warpwise by board size).
#include <cstring>
#include <vector>

#include "sampler/kernels/cuda/boards.h"
#include "server/cuda_exec.h"

namespace sampler::server {

namespace kc = kernels::cuda;

absl::StatusOr<double> ExecuteOnGpu(Batch<BoardsJob>& batch, CudaSlot& slot) {
  kc::BoardsBatchBuilder builder;
  std::vector<BoardsJob*> placed;  // jobs with a segment, in order
  for (auto& job : batch.jobs) {
    absl::StatusOr<int> segment =
        builder.Add(job->spec, job->seed, job->first_position, job->count);
    if (!segment.ok()) {  // validated before queueing: cannot happen
      job->status = segment.status();
      continue;
    }
    placed.push_back(job.get());
  }
  if (placed.empty()) return 0.0;
  // Reorders the segments by variant; each keeps its own out_offset.
  if (absl::Status s = builder.Finish(); !s.ok()) return s;
  return slot.RunBatch(
      builder,
      [](const auto& view, cudaStream_t stream) {
        return kc::LaunchBoards(view, stream);
      },
      [&](const char* staged) {
        const uint64_t* words = builder.Outputs(staged);
        for (size_t i = 0; i < placed.size(); ++i) {
          BoardsJob& job = *placed[i];
          std::memcpy(job.out.data(),
                      words + builder.out_offset(static_cast<int>(i)),
                      job.out.size() * sizeof(uint64_t));
        }
      });
}

}  // namespace sampler::server
