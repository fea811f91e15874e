// ClipGammaGroups (server/gamma_groups.h): which groups a range of samples
// keeps and with what counts, the start hint, and that the clipped groups
// sampled from the range's first sample give the whole's bits there.
#include "server/gamma_groups.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "sampler/kernels/gamma.h"

namespace sampler::server {
namespace {

using Group = kernels::GammaGroup<double>;

// Shape and count of each group (the scale follows the shape here).
std::vector<std::pair<double, int64_t>> Summary(
    const std::vector<Group>& groups) {
  std::vector<std::pair<double, int64_t>> out;
  for (const Group& g : groups) {
    EXPECT_EQ(g.scale, 2 * g.shape);
    out.emplace_back(g.shape, g.count);
  }
  return out;
}

const std::vector<Group> kGroups = {
    {1.0, 2.0, 3}, {2.0, 4.0, 0}, {3.0, 6.0, 4}, {4.0, 8.0, 2}};

TEST(ClipGammaGroupsTest, CutsCountsToTheRangeAndDropsEmptyGroups) {
  using V = std::vector<std::pair<double, int64_t>>;
  EXPECT_EQ(Summary(ClipGammaGroups<double>(kGroups, 0, 9)),
            (V{{1.0, 3}, {3.0, 4}, {4.0, 2}}));
  EXPECT_EQ(Summary(ClipGammaGroups<double>(kGroups, 2, 5)),
            (V{{1.0, 1}, {3.0, 2}}));
  EXPECT_EQ(Summary(ClipGammaGroups<double>(kGroups, 3, 7)), (V{{3.0, 4}}));
  EXPECT_EQ(Summary(ClipGammaGroups<double>(kGroups, 8, 9)), (V{{4.0, 1}}));
  EXPECT_TRUE(ClipGammaGroups<double>(kGroups, 4, 4).empty());
  // Past the groups' end: only what they cover.
  EXPECT_EQ(Summary(ClipGammaGroups<double>(kGroups, 7, 20)), (V{{4.0, 2}}));
}

TEST(ClipGammaGroupsTest, StartHintSkipsEarlierGroups) {
  using V = std::vector<std::pair<double, int64_t>>;
  // Group 2 starts at sample 3 (group 1 is empty).
  EXPECT_EQ(Summary(ClipGammaGroups<double>(kGroups, 5, 9, {2, 3})),
            (V{{3.0, 2}, {4.0, 2}}));
  EXPECT_EQ(Summary(ClipGammaGroups<double>(kGroups, 5, 9)),
            Summary(ClipGammaGroups<double>(kGroups, 5, 9, {2, 3})));
}

TEST(ClipGammaGroupsTest, ClippedGroupsGiveTheWholesBits) {
  std::vector<Group> groups;
  int64_t n = 0;
  for (int g = 0; g < 40; ++g) {
    const int64_t count = (g * 37) % 23;  // zeros included
    groups.push_back({0.1 + 0.3 * g, 1.0 + g, count});
    n += count;
  }
  constexpr uint64_t kSeed = 42;
  constexpr uint64_t kFirst = 1000;  // the whole's first sample
  std::vector<double> whole(static_cast<size_t>(n));
  ASSERT_TRUE(kernels::SampleGammaGroupedCpu<double>(
                  groups, false, kSeed, kFirst, absl::MakeSpan(whole))
                  .ok());
  for (int64_t begin = 0; begin < n; begin += 17) {
    const int64_t end = std::min(n, begin + 61);
    const std::vector<Group> clipped =
        ClipGammaGroups<double>(groups, begin, end);
    std::vector<double> part(static_cast<size_t>(end - begin));
    ASSERT_TRUE(kernels::SampleGammaGroupedCpu<double>(
                    clipped, false, kSeed, kFirst + begin, absl::MakeSpan(part))
                    .ok())
        << "[" << begin << ", " << end << ")";
    for (int64_t i = begin; i < end; ++i) {
      ASSERT_EQ(part[static_cast<size_t>(i - begin)],
                whole[static_cast<size_t>(i)])
          << "sample " << i;
    }
  }
}

}  // namespace
}  // namespace sampler::server
