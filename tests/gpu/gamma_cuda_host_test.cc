// Host-side code of the CUDA gamma and Dirichlet path (the batch builders
// and status mapping), which needs no device: these tests run, and can
// fail, on every machine, CI included. Moved out of gamma_gpu_test.cc,
// whose binary runs nothing without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/kernels/cuda/dirichlet.h"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/philox.h"

namespace sampler::kernels::cuda {
namespace {

TEST(GammaCudaHostTest, RefusesWhatTheCpuRefuses) {
  GammaBatchBuilder<float> gamma;
  const std::vector<float> bad_shape = {1.0f, -1.0f};
  const std::vector<float> ones = {1.0f, 1.0f};
  absl::StatusOr<int> s = gamma.AddElements(bad_shape, {}, false, 1, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("shape[1]"), std::string::npos)
      << s.status();
  s = gamma.AddElements(ones, bad_shape, false, 1, 0);
  EXPECT_NE(s.status().message().find("scale[1]"), std::string::npos)
      << s.status();
  const std::vector<GammaGroup<float>> groups = {{1.0f, 1.0f, -2}};
  EXPECT_EQ(gamma.AddGroups(groups, false, 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(gamma.segments().empty());

  DirichletBatchBuilder<double> dirichlet;
  const std::vector<double> alpha = {1.0, 2.0};
  const std::vector<int64_t> offsets = {0, 2, 2};  // an empty row
  EXPECT_EQ(dirichlet.AddRows(alpha, offsets, false, 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Segments and groups are laid end to end; empty groups are left out.
TEST(GammaCudaHostTest, LaysOutSegmentsEndToEnd) {
  GammaBatchBuilder<double> b;
  const std::vector<GammaGroup<double>> groups = {
      {1.0, 1.0, 3}, {2.0, 1.0, 0}, {3.0, 2.0, 4}};
  const std::vector<double> shape = {0.5, 0.25};
  ASSERT_EQ(*b.AddGroups(groups, true, 9, 100), 0);
  ASSERT_EQ(*b.AddElements(shape, {}, false, 10, 0), 1);
  ASSERT_EQ(*b.AddElements(shape, shape, false, 11, 0), 2);
  ASSERT_EQ(b.total(), 11);
  const std::vector<GammaSegment>& segs = b.segments();
  EXPECT_EQ(segs[0].out_begin, 0);
  EXPECT_EQ(segs[0].count, 7);
  EXPECT_EQ(segs[0].num_groups, 2);
  EXPECT_EQ(segs[0].flags, kSegmentLogOutput);
  EXPECT_EQ(segs[1].out_begin, 7);
  EXPECT_EQ(segs[1].flags, kSegmentUnitScale);
  EXPECT_EQ(segs[2].out_begin, 9);
  EXPECT_EQ(segs[2].param_begin, 2);
  EXPECT_EQ(segs[2].scale_begin, 0);  // unit scales are not stored
  std::vector<char> arena(b.ArenaBytes());
  b.PackInto(arena.data());
  const GammaBatch<double> v = b.View(arena.data(), nullptr, nullptr);
  EXPECT_EQ(v.num_segments, 3);
  EXPECT_EQ(v.groups[1].out_begin, 3);
  EXPECT_EQ(v.groups[1].shape, 3.0);
  EXPECT_EQ(v.shape[3], 0.25);
  EXPECT_EQ(v.scale[1], 0.25);

  // The staging pipeline's layout: the arena in; the outputs, then one
  // status word per segment (8-byte aligned) out; no scratch.
  const StagingPlan plan = b.Staging();
  EXPECT_EQ(plan.in_bytes, b.ArenaBytes());
  EXPECT_EQ(plan.out_bytes, 11 * sizeof(double) + 3 * sizeof(uint32_t));
  EXPECT_EQ(plan.scratch_bytes, 0u);
  std::vector<char> out(plan.out_bytes);
  const GammaBatch<double> staged =
      b.View(DeviceRegions{arena.data(), out.data(), nullptr});
  EXPECT_EQ(staged.segments, v.segments);
  EXPECT_EQ(staged.groups, v.groups);
  EXPECT_EQ(reinterpret_cast<char*>(staged.out), out.data());
  EXPECT_EQ(reinterpret_cast<char*>(staged.segment_status),
            out.data() + 11 * sizeof(double));
  EXPECT_EQ(b.OutLayout().StatusWords(static_cast<const void*>(out.data())),
            staged.segment_status);

  // Dirichlet: the same layout, rows of float outputs (status words at the
  // next multiple of 8 bytes).
  DirichletBatchBuilder<float> d;
  const std::vector<float> alpha = {1.0f, 2.0f, 3.0f};
  const std::vector<int64_t> offsets = {0, 3};
  ASSERT_TRUE(d.AddRows(alpha, offsets, false, 1, 0).ok());
  EXPECT_EQ(d.Staging().out_bytes, 16 + sizeof(uint32_t));
  EXPECT_EQ(d.OutLayout().status_at(), 16u);
}

TEST(GammaCudaHostTest, SegmentStatusMapsToTheCpuCodes) {
  EXPECT_TRUE(SegmentStatus(0, 0).ok());
  EXPECT_EQ(SegmentStatus(kStatusAttemptCap, 3).code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(SegmentStatus(kStatusRowUnderflow, 3).code(),
            absl::StatusCode::kOutOfRange);
}

// A batch whose segments share one seed carries that seed's Philox round
// keys for the kernel's parameters; one with two seeds does not.
TEST(GammaCudaHostTest, OneSeedBatchesCarryTheirRoundKeys) {
  GammaBatchBuilder<float> b;
  const std::vector<GammaGroup<float>> g = {{2.5f, 1.0f, 100}};
  const uint64_t seed = 0x0123456789abcdefull;
  ASSERT_TRUE(b.AddGroups(g, false, seed, 0).ok());
  const std::vector<float> shape = {0.5f, 3.0f};
  ASSERT_TRUE(b.AddElements(shape, {}, true, seed, 7).ok());
  std::vector<char> arena(b.ArenaBytes());
  const GammaBatch<float> one = b.View(arena.data(), nullptr, nullptr);
  ASSERT_TRUE(one.one_seed);
  const PhiloxRoundKeys want = PhiloxKeySchedule(seed);
  for (int r = 0; r < 10; ++r) {
    EXPECT_EQ(one.round_keys.k0[r], want.k0[r]) << "round " << r;
    EXPECT_EQ(one.round_keys.k1[r], want.k1[r]) << "round " << r;
  }
  ASSERT_TRUE(b.AddGroups(g, false, seed + 1, 0).ok());
  std::vector<char> arena2(b.ArenaBytes());
  EXPECT_FALSE(b.View(arena2.data(), nullptr, nullptr).one_seed);
  EXPECT_FALSE(GammaBatchBuilder<float>()
                   .View(nullptr, nullptr, nullptr)
                   .one_seed);  // empty
}

// The service launches pre-caching only where it was measured to pay
// (GammaBatchBuilder::PreCachePays): float32, most items' shapes below 5;
// float64, most in [1, 1.25).
TEST(GammaCudaHostTest, PreCachingOnlyWhereItPays) {
  const auto groups = [](float shape, int64_t count) {
    GammaBatchBuilder<float> b;
    const std::vector<GammaGroup<float>> g = {{shape, 1.0f, count}};
    EXPECT_TRUE(b.AddGroups(g, false, 1, 0).ok());
    return b;
  };
  EXPECT_TRUE(groups(0.3f, 1000).PreCachePays());
  EXPECT_TRUE(groups(0.3f, 1000).ServiceOptions().pre_cache);
  EXPECT_FALSE(groups(10.0f, 1000).ServiceOptions().pre_cache);
  EXPECT_TRUE(groups(2.5f, 1000).PreCachePays());
  EXPECT_FALSE(groups(10.0f, 1000).PreCachePays());
  EXPECT_FALSE(GammaBatchBuilder<float>().PreCachePays());  // empty

  // Weighted by items: 300 outputs at shape 0.3 and 700 at shape 10 in one
  // batch, then the other way round.
  GammaBatchBuilder<float> mixed;
  const std::vector<GammaGroup<float>> few_small = {{0.3f, 1.0f, 300},
                                                    {10.0f, 1.0f, 700}};
  ASSERT_TRUE(mixed.AddGroups(few_small, false, 1, 0).ok());
  EXPECT_FALSE(mixed.PreCachePays());
  const std::vector<GammaGroup<float>> many_small = {{0.3f, 1.0f, 1100}};
  ASSERT_TRUE(mixed.AddGroups(many_small, false, 2, 0).ok());
  EXPECT_TRUE(mixed.PreCachePays());

  // Per-element shapes: estimated from a bounded sample (every 1000th of
  // 64,000 here), which sees the 3:1 split exactly.
  std::vector<float> shapes(64000);
  for (size_t i = 0; i < shapes.size(); ++i) {
    shapes[i] = i % 4000 < 3000 ? 0.5f : 8.0f;
  }
  GammaBatchBuilder<float> elements;
  ASSERT_TRUE(elements.AddElements(shapes, {}, false, 1, 0).ok());
  EXPECT_TRUE(elements.PreCachePays());
  for (float& s : shapes) s = s < 1 ? 8.0f : 0.5f;
  GammaBatchBuilder<float> flipped;
  ASSERT_TRUE(flipped.AddElements(shapes, {}, false, 1, 0).ok());
  EXPECT_FALSE(flipped.PreCachePays());

  // In float64 only where acceptance is lowest: shapes in [1, 1.25).
  const auto wide = [](double shape) {
    GammaBatchBuilder<double> b;
    const std::vector<GammaGroup<double>> g = {{shape, 1.0, 1000}};
    EXPECT_TRUE(b.AddGroups(g, false, 1, 0).ok());
    return b.PreCachePays();
  };
  EXPECT_FALSE(wide(0.3));
  EXPECT_TRUE(wide(1.0));
  EXPECT_FALSE(wide(2.5));
  EXPECT_FALSE(wide(10.0));
}

// The tunings the service launches (GammaBatchBuilder::ServiceOptions):
// round keys always, slow outputs deferred only where a per-element
// segment's shapes lie on both sides of 1, more warps in float without
// pre-caching.
TEST(GammaCudaHostTest, ServiceTuningsPerBatch) {
  GammaBatchBuilder<float> scalar;
  const std::vector<GammaGroup<float>> g = {{0.3f, 1.0f, 100},
                                            {10.0f, 1.0f, 100}};
  ASSERT_TRUE(scalar.AddGroups(g, false, 1, 0).ok());
  GammaLaunchOptions o = scalar.ServiceOptions();
  EXPECT_TRUE(o.seed_keys_in_params);
  EXPECT_FALSE(o.defer_slow_outputs);  // groups: no mixed calls to speak of
  EXPECT_EQ(o.more_warps, !o.pre_cache);

  std::vector<float> shapes(1000);
  for (size_t i = 0; i < shapes.size(); ++i) shapes[i] = 0.1f + 0.01f * i;
  GammaBatchBuilder<float> across;
  ASSERT_TRUE(across.AddElements(shapes, {}, false, 1, 0).ok());
  EXPECT_TRUE(across.ServiceOptions().defer_slow_outputs);
  for (float& a : shapes) a += 1.0f;  // all at or above 1
  GammaBatchBuilder<float> above;
  ASSERT_TRUE(above.AddElements(shapes, {}, false, 1, 0).ok());
  EXPECT_FALSE(above.ServiceOptions().defer_slow_outputs);

  GammaBatchBuilder<double> wide;
  const std::vector<GammaGroup<double>> big = {{10.0, 1.0, 100}};
  ASSERT_TRUE(wide.AddGroups(big, false, 1, 0).ok());
  EXPECT_FALSE(wide.ServiceOptions().more_warps);  // float only
}

}  // namespace
}  // namespace sampler::kernels::cuda
