// Executes batches on a CpuPool with the kernels' CPU functions: the CPU
// backend's work (cpu_backend.h is its Backend face).
//
// A batch is one unit of work spread over the whole pool. ExecuteOnCpu
// queues one planning task; on a pool thread, it cuts the jobs into pieces
// (large jobs into ranges of samples, rows or positions, which the kernels
// address by index through first_item / first_row / first_position, so the
// bits do not depend on the cut), packs small pieces into tasks of similar
// cost (about four per thread for a large batch, none under 0.1 ms), queues
// them behind whatever is already in the pool's FIFO queue and runs the
// first itself. The last task of a batch to finish reports the batch.
#ifndef SAMPLER_SERVER_CPU_EXECUTOR_H_
#define SAMPLER_SERVER_CPU_EXECUTOR_H_

#include "server/backend.h"
#include "server/cpu_pool.h"

namespace sampler::server {

// Queues the batch on `pool` and returns at once; `done` is called exactly
// once from a pool thread (never from inside this call), with status OK,
// device "cpu" and device_seconds = wall time from the start of the batch's
// planning to the end of its last task (RESOURCE_EXHAUSTED for the whole
// batch only if planning cannot allocate). Per-job kernel failures go to
// job->status (a failure in one piece of a cut job names the piece's range).
void ExecuteOnCpu(AnyBatch batch, CpuPool& pool, BatchDone done);

// A batch of at most one task's work (under about 0.1 ms, which planning
// would not cut) is planned and run on the calling thread, exactly as a pool
// thread would, and `done` called before this returns true: the hand-off to
// a pool thread would cost as much as the work. Otherwise, or when called
// from such a run's done (runs do not nest), returns false with `batch` and
// `done` untouched.
bool ExecuteOnCpuHere(AnyBatch& batch, CpuPool& pool, BatchDone& done);

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_CPU_EXECUTOR_H_
