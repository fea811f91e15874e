// main() of every GPU test binary (instead of gtest_main). Skipping is
// decided here, before any test runs, and reported through the exit code
// alone (CTest's SKIP_RETURN_CODE, tests/CMakeLists.txt): with no GPU the
// binary runs nothing and exits 77; otherwise it runs every test and exits
// with RUN_ALL_TESTS's code, so a failure can never be reported as skipped,
// whatever the log says. A GPU that is present but broken fails rather
// than skips, and so does a test that ends the process with exit() (which
// could otherwise pass the skip code, or 0, with tests unrun).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "tests/gpu/gpu_probe.h"

namespace {

bool tests_running = false;

// Runs at exit(): an exit while the tests are still running is a failure.
void FailIfTestsRunning() {
  if (!tests_running) return;
  std::fprintf(stderr,
               "exit() was called while the tests were running: failing\n");
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  // Listing the tests runs none and needs no GPU.
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();
  const sampler::testing::GpuProbe probe = sampler::testing::ProbeGpu();
  switch (probe.state) {
    case sampler::testing::GpuState::kPresent: {
      std::atexit(FailIfTestsRunning);
      tests_running = true;
      const int result = RUN_ALL_TESTS();
      tests_running = false;
      return result;
    }
    case sampler::testing::GpuState::kAbsent:
      std::printf("no GPU (%s): no test ran; exit code %d (skipped)\n",
                  probe.detail.c_str(), sampler::testing::kSkipExitCode);
      return sampler::testing::kSkipExitCode;
    case sampler::testing::GpuState::kBroken:
      break;
  }
  std::printf("GPU present but unusable (%s): failing\n", probe.detail.c_str());
  return 1;
}
