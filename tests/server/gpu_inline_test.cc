// When the CUDA backend runs a small batch on the gRPC thread that closed it
// (server/gpu_inline.h): the decision CudaBackend::RunHere takes before it
// looks for a free stream, and the --gpu_inline values. No GPU needed.
#include "server/gpu_inline.h"

#include <gtest/gtest.h>

namespace sampler::server {
namespace {

TEST(GpuInlineTest, ParsesTheThreeModesAndNothingElse) {
  EXPECT_EQ(ParseGpuInline("never"), GpuInline::kNever);
  EXPECT_EQ(ParseGpuInline("always"), GpuInline::kAlways);
  EXPECT_EQ(ParseGpuInline("auto"), GpuInline::kAuto);
  for (const char* bad : {"", "Auto", "on", "off", "lone", "always "}) {
    EXPECT_FALSE(ParseGpuInline(bad).has_value()) << bad;
  }
}

TEST(GpuInlineTest, OnlyBatchesUnderTheBoundAndAsTheModeAllows) {
  struct Case {
    GpuInline mode;
    int64_t below_items;
    int64_t items;
    bool lone;
    bool inline_wanted;
  };
  const Case cases[] = {
      // --gpu_inline_below_items=0 (the default): never, whatever the mode.
      {GpuInline::kAlways, 0, 1, true, false},
      {GpuInline::kAuto, 0, 1, true, false},
      // Under the bound: always, whoever closed it (session 8's mode).
      {GpuInline::kAlways, 16384, 256, false, true},
      {GpuInline::kAlways, 16384, 256, true, true},
      {GpuInline::kAlways, 16384, 16383, false, true},
      // At or over it: never.
      {GpuInline::kAlways, 16384, 16384, true, false},
      {GpuInline::kAuto, 16384, 16384, true, false},
      {GpuInline::kAuto, 16384, 1 << 20, true, false},
      // auto: only a batch closed by a call alone on its connection.
      {GpuInline::kAuto, 16384, 256, true, true},
      {GpuInline::kAuto, 16384, 256, false, false},
      // never: never.
      {GpuInline::kNever, 16384, 256, true, false},
      {GpuInline::kNever, 16384, 256, false, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(WantsInline(c.mode, c.below_items, c.items, c.lone),
              c.inline_wanted)
        << "mode " << static_cast<int>(c.mode) << " below " << c.below_items
        << " items " << c.items << " lone " << c.lone;
  }
}

}  // namespace
}  // namespace sampler::server
