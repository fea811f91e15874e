// Reused memory for large answers; see answer_memory.h.
#include "server/answer_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>
#include <utility>

namespace sampler::server {
namespace {

// Blocks are mapped in whole 2 MiB pages, aligned to them, so that every
// page of a block can be a transparent huge page (advised; THP "madvise").
constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t RoundUpToHugePages(size_t bytes) {
  return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
}

// `capacity` bytes (a multiple of kHugePageBytes) aligned to a huge page:
// one page more is mapped and the unaligned ends unmapped.
void* MapBlock(size_t capacity) {
  const size_t mapped = capacity + kHugePageBytes;
  void* map = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(map);
  const uintptr_t aligned =
      (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (aligned > start) munmap(map, aligned - start);
  const uintptr_t end = start + mapped;
  if (end > aligned + capacity) {
    munmap(reinterpret_cast<void*>(aligned + capacity),
           end - (aligned + capacity));
  }
  void* block = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  (void)madvise(block, capacity, MADV_HUGEPAGE);  // a hint only
#endif
  return block;
}

void* AllocateArenaBlock(size_t bytes) {
  if (bytes < AnswerBlockCache::kMinCachedBlockBytes) {
    return ::operator new(bytes);
  }
  return AnswerBlocks().Take(bytes);
}

// The arena gives back each block with the size it asked for, so a block
// returns to where it came from.
void DeallocateArenaBlock(void* block, size_t bytes) {
  if (bytes < AnswerBlockCache::kMinCachedBlockBytes) {
    ::operator delete(block);
    return;
  }
  AnswerBlocks().Give(block, bytes);
}

// Large answers are kept up to this many bytes unless --answer_cache_bytes
// says otherwise: four answers of the largest message by default (64 MiB).
constexpr size_t kDefaultAnswerCacheBytes = size_t{256} << 20;

}  // namespace

AnswerBlockCache::~AnswerBlockCache() {
  for (const Block& b : cached_) munmap(b.data, b.capacity);
}

void* AnswerBlockCache::Take(size_t bytes) {
  const size_t wanted = RoundUpToHugePages(bytes);
  {
    absl::MutexLock lock(&mu_);
    // The smallest cached block that fits, if not twice the size asked.
    auto best = cached_.end();
    for (auto it = cached_.begin(); it != cached_.end(); ++it) {
      if (it->capacity >= wanted && it->capacity / 2 <= wanted &&
          (best == cached_.end() || it->capacity < best->capacity)) {
        best = it;
      }
    }
    if (best != cached_.end()) {
      const Block block = *best;
      cached_.erase(best);
      cached_bytes_ -= block.capacity;
      lent_[block.data] = block.capacity;
      return block.data;
    }
  }
  void* data = MapBlock(wanted);
  absl::MutexLock lock(&mu_);
  lent_[data] = wanted;
  return data;
}

void AnswerBlockCache::Give(void* block, size_t bytes) {
  (void)bytes;  // the block's capacity is known from Take
  std::deque<Block> evicted;
  {
    absl::MutexLock lock(&mu_);
    auto it = lent_.find(block);
    if (it == lent_.end()) return;  // not ours: cannot happen
    const size_t capacity = it->second;
    lent_.erase(it);
    if (capacity > cap_bytes_) {
      // Never fits: it would only push out the blocks that do.
      evicted.push_back(Block{block, capacity});
    } else {
      cached_.push_back(Block{block, capacity});
      cached_bytes_ += capacity;
      evicted = EvictOverCapLocked();
    }
  }
  for (const Block& b : evicted) munmap(b.data, b.capacity);
}

void AnswerBlockCache::SetCapBytes(size_t cap_bytes) {
  std::deque<Block> evicted;
  {
    absl::MutexLock lock(&mu_);
    cap_bytes_ = cap_bytes;
    evicted = EvictOverCapLocked();
  }
  for (const Block& b : evicted) munmap(b.data, b.capacity);
}

std::deque<AnswerBlockCache::Block> AnswerBlockCache::EvictOverCapLocked() {
  std::deque<Block> evicted;
  while (cached_bytes_ > cap_bytes_) {
    evicted.push_back(cached_.front());
    cached_bytes_ -= cached_.front().capacity;
    cached_.pop_front();
  }
  return evicted;
}

size_t AnswerBlockCache::cap_bytes() const {
  absl::MutexLock lock(&mu_);
  return cap_bytes_;
}

size_t AnswerBlockCache::cached_bytes() const {
  absl::MutexLock lock(&mu_);
  return cached_bytes_;
}

size_t AnswerBlockCache::cached_blocks() const {
  absl::MutexLock lock(&mu_);
  return cached_.size();
}

AnswerBlockCache& AnswerBlocks() {
  // Never destroyed: arenas may give blocks back during static destruction.
  static AnswerBlockCache* const cache =
      new AnswerBlockCache(kDefaultAnswerCacheBytes);
  return *cache;
}

google::protobuf::ArenaOptions AnswerArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.block_alloc = AllocateArenaBlock;
  options.block_dealloc = DeallocateArenaBlock;
  return options;
}

}  // namespace sampler::server
