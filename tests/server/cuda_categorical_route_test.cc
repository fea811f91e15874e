// CategoricalKernelFor (server/cuda_exec_categorical.cc): the kernel the
// CUDA backend runs a categorical job on, by its K and precision. The bits
// are the same on every kernel (tests/gpu/categorical_gpu_test.cc, and the
// integration suite on the CUDA backend); this pins the routing itself.
#include <cstdint>

#include "gtest/gtest.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/categorical.h"
#include "server/cuda_exec.h"

namespace sampler::server {
namespace {

using kernels::Precision;
using kernels::cuda::CategoricalKernel;
using kernels::cuda::RowSplitMaxCategories;

TEST(CudaCategoricalRouteTest, LaneGroupsUpTo512) {
  for (const Precision p : {Precision::kFloat32, Precision::kFloat64}) {
    for (const int32_t draws : {1, 4, 32}) {
      for (const int64_t k : {1, 32, 101, 128, 129, 256, 257, 512}) {
        EXPECT_EQ(CategoricalKernelFor(k, p, draws),
                  CategoricalKernel::kLaneGroups)
            << k << " " << draws;
      }
    }
    // Many draws from 33 to 100; doubles at every draw count.
    EXPECT_EQ(CategoricalKernelFor(33, p, 5), CategoricalKernel::kLaneGroups);
    EXPECT_EQ(CategoricalKernelFor(61, p, 4), CategoricalKernel::kLaneGroups);
    EXPECT_EQ(CategoricalKernelFor(64, p, 32), CategoricalKernel::kLaneGroups);
    EXPECT_EQ(CategoricalKernelFor(64, p, 2), CategoricalKernel::kLaneGroups);
    EXPECT_EQ(CategoricalKernelFor(100, p, 2), CategoricalKernel::kLaneGroups);
  }
  EXPECT_EQ(CategoricalKernelFor(33, Precision::kFloat64, 1),
            CategoricalKernel::kLaneGroups);
  EXPECT_EQ(CategoricalKernelFor(100, Precision::kFloat64, 1),
            CategoricalKernel::kLaneGroups);
}

// Float rows of 33 to 60 with up to 4 draws, of 61 to 100 with one.
TEST(CudaCategoricalRouteTest, LanesForFewDrawsFrom33) {
  const Precision f32 = Precision::kFloat32;
  for (const int32_t draws : {1, 2, 4}) {
    EXPECT_EQ(CategoricalKernelFor(33, f32, draws), CategoricalKernel::kLanes);
    EXPECT_EQ(CategoricalKernelFor(60, f32, draws), CategoricalKernel::kLanes);
  }
  EXPECT_EQ(CategoricalKernelFor(61, f32, 1), CategoricalKernel::kLanes);
  EXPECT_EQ(CategoricalKernelFor(100, f32, 1), CategoricalKernel::kLanes);
  // One draw is the default.
  EXPECT_EQ(CategoricalKernelFor(64, f32), CategoricalKernel::kLanes);
}

// Rows of up to 64 KiB: 16,384 floats, 8,192 doubles.
TEST(CudaCategoricalRouteTest, BlockRowFrom513To64KiBRows) {
  for (const Precision p : {Precision::kFloat32, Precision::kFloat64}) {
    EXPECT_EQ(CategoricalKernelFor(513, p), CategoricalKernel::kBlockRow);
    EXPECT_EQ(CategoricalKernelFor(1000, p), CategoricalKernel::kBlockRow);
    EXPECT_EQ(CategoricalKernelFor(4096, p), CategoricalKernel::kBlockRow);
    EXPECT_EQ(CategoricalKernelFor(8192, p), CategoricalKernel::kBlockRow);
  }
  EXPECT_EQ(CategoricalKernelFor(16384, Precision::kFloat32),
            CategoricalKernel::kBlockRow);
}

// Past 64 KiB, block-row clusters up to rows of 80,000 bytes (20,000
// floats, 10,000 doubles), warp tiles from there to 2^15.
TEST(CudaCategoricalRouteTest, BlockRowClustersTo80000BytesThenWarpTiles) {
  EXPECT_EQ(CategoricalKernelFor(16385, Precision::kFloat32),
            CategoricalKernel::kBlockRow);
  EXPECT_EQ(CategoricalKernelFor(20000, Precision::kFloat32),
            CategoricalKernel::kBlockRow);
  EXPECT_EQ(CategoricalKernelFor(20001, Precision::kFloat32),
            CategoricalKernel::kWarpTiles);
  EXPECT_EQ(CategoricalKernelFor(8193, Precision::kFloat64),
            CategoricalKernel::kBlockRow);
  EXPECT_EQ(CategoricalKernelFor(10000, Precision::kFloat64),
            CategoricalKernel::kBlockRow);
  EXPECT_EQ(CategoricalKernelFor(10001, Precision::kFloat64),
            CategoricalKernel::kWarpTiles);
  for (const Precision p : {Precision::kFloat32, Precision::kFloat64}) {
    EXPECT_EQ(CategoricalKernelFor((int64_t{1} << 15) - 1, p),
              CategoricalKernel::kWarpTiles);
    EXPECT_EQ(CategoricalKernelFor(int64_t{1} << 15, p),
              CategoricalKernel::kWarpTiles);
  }
}

// Past 2^15, block-row clusters again up to rows of 512 KiB (2^17 floats,
// 2^16 doubles).
TEST(CudaCategoricalRouteTest, BlockRowPast2To15To512KiBRows) {
  for (const Precision p : {Precision::kFloat32, Precision::kFloat64}) {
    EXPECT_EQ(CategoricalKernelFor((int64_t{1} << 15) + 1, p),
              CategoricalKernel::kBlockRow);
    EXPECT_EQ(CategoricalKernelFor(int64_t{1} << 16, p),
              CategoricalKernel::kBlockRow);
  }
  EXPECT_EQ(CategoricalKernelFor(int64_t{1} << 17, Precision::kFloat32),
            CategoricalKernel::kBlockRow);
  EXPECT_EQ(CategoricalKernelFor((int64_t{1} << 16) + 1, Precision::kFloat64),
            CategoricalKernel::kRowSplit);
}

TEST(CudaCategoricalRouteTest, RowSplitPastBlockRowUpToItsLargestK) {
  for (const Precision p : {Precision::kFloat32, Precision::kFloat64}) {
    const int64_t largest = RowSplitMaxCategories(p);
    EXPECT_EQ(CategoricalKernelFor((int64_t{1} << 17) + 1, p),
              CategoricalKernel::kRowSplit);
    EXPECT_EQ(CategoricalKernelFor(largest, p), CategoricalKernel::kRowSplit);
    // Past what its shared memory holds: one warp per row again.
    EXPECT_EQ(CategoricalKernelFor(largest + 1, p),
              CategoricalKernel::kWarpPerRow);
    EXPECT_EQ(CategoricalKernelFor(int64_t{1} << 20, p),
              CategoricalKernel::kWarpPerRow);
  }
  // Double's largest K is the smaller: K between the two is row-split in
  // float only.
  const int64_t between = RowSplitMaxCategories(Precision::kFloat64) + 1;
  EXPECT_EQ(CategoricalKernelFor(between, Precision::kFloat32),
            CategoricalKernel::kRowSplit);
  EXPECT_EQ(CategoricalKernelFor(between, Precision::kFloat64),
            CategoricalKernel::kWarpPerRow);
}

}  // namespace
}  // namespace sampler::server
