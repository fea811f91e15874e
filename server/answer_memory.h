// Memory for large unary answers, reused between calls (issue 13).
//
// A unary answer's values live in its response message until gRPC has sent
// them (wire_answer.h). Allocated from the heap, a 40 MB answer is mapped
// afresh by glibc for every call (above its largest mmap threshold) and
// unmapped after the send: every page is faulted in and zeroed by the
// kernel first (with huge pages, about 20 faults of 2 MiB), and the mapping
// torn down after. The profile of the answer path
// (bench/results/unary-answer-profile-2core-2026-11-26.md) put those faults
// at about 30% of the server's CPU per call, as much as copying the values.
//
// So large answers are built in a protobuf arena whose large blocks come
// from an AnswerBlockCache: memory already faulted in (huge pages advised)
// and handed back when the arena goes, kept up to a cap in bytes. Only the
// memory moves; the message, its fields and the bytes on the wire are those
// of a heap message (wire_answer_test, golden and integration tests).
#ifndef SAMPLER_SERVER_ANSWER_MEMORY_H_
#define SAMPLER_SERVER_ANSWER_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/arena.h"

namespace sampler::server {

// Blocks of at least kMinCachedBlockBytes, mapped in whole 2 MiB pages and
// kept after use up to `cap_bytes` in all (the oldest given back go first).
// A hostile client that asks for answers of ever new sizes only ever
// displaces cached blocks: the cache never holds more than its cap, and
// blocks in use are those of calls in flight, bounded by the server's
// request limits as heap memory was. Thread-safe.
class AnswerBlockCache {
 public:
  // Smaller blocks are not worth a mapping of their own (the heap reuses
  // them); the arena's hooks below send them to operator new.
  static constexpr size_t kMinCachedBlockBytes = size_t{4} << 20;

  explicit AnswerBlockCache(size_t cap_bytes) : cap_bytes_(cap_bytes) {}
  ~AnswerBlockCache();
  AnswerBlockCache(const AnswerBlockCache&) = delete;
  AnswerBlockCache& operator=(const AnswerBlockCache&) = delete;

  // At least `bytes` of memory: a cached block of at least `bytes` and at
  // most twice that (a larger one would hold more memory than the call
  // needs), else a fresh mapping. Throws std::bad_alloc when the system
  // has no memory, as operator new does.
  void* Take(size_t bytes);
  // Back from Take (`bytes` as asked): kept, then the oldest blocks
  // unmapped while the cache holds more than its cap (a block larger than
  // the cap is unmapped at once).
  void Give(void* block, size_t bytes);

  void SetCapBytes(size_t cap_bytes);
  size_t cap_bytes() const;
  size_t cached_bytes() const;
  size_t cached_blocks() const;

 private:
  struct Block {
    void* data;
    size_t capacity;
  };
  // Takes the oldest cached blocks out while the cache holds more than its
  // cap, for the caller to unmap outside the lock.
  std::deque<Block> EvictOverCapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  size_t cap_bytes_ ABSL_GUARDED_BY(mu_);
  size_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Block> cached_ ABSL_GUARDED_BY(mu_);  // oldest first
  // Blocks handed out: their capacity (Give is told only the size asked).
  absl::flat_hash_map<void*, size_t> lent_ ABSL_GUARDED_BY(mu_);
};

// The cache every answer arena draws from; its cap is set once at startup
// (--answer_cache_bytes) and may be changed by tests.
AnswerBlockCache& AnswerBlocks();

// Answers of this many work items or more are built in an arena (NewAnswer);
// smaller ones on the heap as before: an arena costs a little more per
// call, and small answers' memory is reused by the heap anyway.
inline constexpr int64_t kArenaAnswerItems = int64_t{1} << 20;

// Arena options whose blocks of kMinCachedBlockBytes or more come from
// AnswerBlocks().
google::protobuf::ArenaOptions AnswerArenaOptions();

// A fresh response message for an answer of `items` work items: in an arena
// drawing on AnswerBlocks() from kArenaAnswerItems on, which the returned
// pointer owns (the arena goes with its last reference), else on the heap.
// A cache of cap 0 (--answer_cache_bytes=0) puts every answer on the heap,
// as before the cache existed.
template <typename Response>
std::shared_ptr<Response> NewAnswer(int64_t items) {
  if (items < kArenaAnswerItems || AnswerBlocks().cap_bytes() == 0) {
    return std::make_shared<Response>();
  }
  auto arena = std::make_shared<google::protobuf::Arena>(AnswerArenaOptions());
  Response* message =
      google::protobuf::Arena::CreateMessage<Response>(arena.get());
  return std::shared_ptr<Response>(std::move(arena), message);
}

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_ANSWER_MEMORY_H_
