// Large answers in reused memory (server/answer_memory.h): the cache reuses
// blocks, never holds more than its cap whatever sizes are asked for, and
// an answer built in its arena goes onto the wire byte for byte as a heap
// message does, its values still borrowed.
#include "server/answer_memory.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/response_bind.h"
#include "server/wire_answer.h"
#include "tests/server/wire_bytes.h"

namespace sampler::server {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(AnswerBlockCache, ReusesABlockGivenBack) {
  AnswerBlockCache cache(64 * kMiB);
  void* first = cache.Take(5 * kMiB);
  std::memset(first, 1, 5 * kMiB);  // the whole block is writable
  cache.Give(first, 5 * kMiB);
  EXPECT_EQ(cache.cached_blocks(), 1u);
  EXPECT_EQ(cache.cached_bytes(), 6 * kMiB);  // whole 2 MiB pages
  void* second = cache.Take(6 * kMiB);
  EXPECT_EQ(second, first);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  cache.Give(second, 6 * kMiB);
}

TEST(AnswerBlockCache, KeepsNoBlockOfMoreThanTwiceTheSizeAsked) {
  AnswerBlockCache cache(64 * kMiB);
  void* big = cache.Take(40 * kMiB);
  cache.Give(big, 40 * kMiB);
  void* small = cache.Take(4 * kMiB);
  EXPECT_NE(small, big);
  EXPECT_EQ(cache.cached_blocks(), 1u);  // the big block stays cached
  cache.Give(small, 4 * kMiB);
}

TEST(AnswerBlockCache, NeverHoldsMoreThanItsCap) {
  AnswerBlockCache cache(32 * kMiB);
  // A hostile client's answers: many sizes, all in flight at once, then
  // all given back.
  std::vector<std::pair<void*, size_t>> lent;
  for (size_t mib = 4; mib <= 40; mib += 3) {
    lent.push_back({cache.Take(mib * kMiB), mib * kMiB});
  }
  for (const auto& [block, bytes] : lent) {
    cache.Give(block, bytes);
    EXPECT_LE(cache.cached_bytes(), 32 * kMiB);
  }
  EXPECT_GT(cache.cached_blocks(), 0u);  // the newest that fit are kept
  // One larger than the cap is never kept.
  void* huge = cache.Take(48 * kMiB);
  cache.Give(huge, 48 * kMiB);
  EXPECT_LE(cache.cached_bytes(), 32 * kMiB);
  // A smaller cap drops the oldest blocks at once; 0 keeps nothing.
  cache.SetCapBytes(10 * kMiB);
  EXPECT_LE(cache.cached_bytes(), 10 * kMiB);
  cache.SetCapBytes(0);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  void* block = cache.Take(4 * kMiB);
  cache.Give(block, 4 * kMiB);
  EXPECT_EQ(cache.cached_blocks(), 0u);
}

TEST(NewAnswer, SmallAnswersAndAllWithoutACacheStayOnTheHeap) {
  AnswerBlocks().SetCapBytes(256 * kMiB);
  EXPECT_EQ(
      NewAnswer<v1::SampleGammaResponse>(kArenaAnswerItems - 1)->GetArena(),
      nullptr);
  AnswerBlocks().SetCapBytes(0);
  EXPECT_EQ(NewAnswer<v1::SampleGammaResponse>(kArenaAnswerItems)->GetArena(),
            nullptr);
}

TEST(NewAnswer, LargeAnswersAreTheSameBytesFromReusedMemory) {
  AnswerBlocks().SetCapBytes(256 * kMiB);
  const int64_t n = kArenaAnswerItems + 12345;
  const void* data = nullptr;
  for (int call = 0; call < 2; ++call) {
    std::shared_ptr<v1::SampleGammaResponse> answer =
        NewAnswer<v1::SampleGammaResponse>(n);
    EXPECT_NE(answer->GetArena(), nullptr);
    absl::Span<float> out = BindReals<float>(n, answer->mutable_samples());
    for (int64_t i = 0; i < n; ++i) out[i] = 0.25f * i - 7.0f;
    answer->set_seed(77);
    // The second call's values are where the first call's were.
    if (call == 1) {
      EXPECT_EQ(out.data(), data);
    }
    data = out.data();
    const std::string expected = answer->SerializeAsString();
    const size_t cached_before_send = AnswerBlocks().cached_blocks();
    {
      const grpc::ByteBuffer wire = AnswerToWire(answer);
      answer.reset();  // the wire keeps the arena alive
      EXPECT_EQ(Bytes(wire), expected);
      EXPECT_EQ(AnswerBlocks().cached_blocks(), cached_before_send);
    }
    // The arena went with the wire: its block is back in the cache.
    EXPECT_EQ(AnswerBlocks().cached_blocks(), cached_before_send + 1);
  }
}

}  // namespace
}  // namespace sampler::server
