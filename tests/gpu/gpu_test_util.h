// GPU tests skip (they do not pass) where no GPU is present. The skip is
// decided by the binaries' main (gpu_test_main.cc), which runs no test and
// exits 77 (CTest's SKIP_RETURN_CODE) without a GPU; the macro below is a
// second guard for a test run by hand on a machine that lost its GPU.
#ifndef SAMPLER_TESTS_GPU_GPU_TEST_UTIL_H_
#define SAMPLER_TESTS_GPU_GPU_TEST_UTIL_H_

#include <cuda_runtime.h>
#include <gtest/gtest.h>

namespace sampler::testing {

inline bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace sampler::testing

#define SAMPLER_SKIP_WITHOUT_GPU()                                \
  do {                                                            \
    if (!::sampler::testing::HaveGpu()) GTEST_SKIP() << "no GPU"; \
  } while (false)

#endif  // SAMPLER_TESTS_GPU_GPU_TEST_UTIL_H_
