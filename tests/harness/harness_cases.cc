// Test bodies for the harness checks (tests/harness/CMakeLists.txt builds
// this file several times, each with one SAMPLER_HARNESS_CASE_* macro and a
// main). None of these binaries is part of the real suite: they run only
// inside the nested CTest projects that the harness tests drive.
#include <gtest/gtest.h>

#include <cstdlib>

namespace {

#if defined(SAMPLER_HARNESS_CASE_SKIP_THEN_FAIL)
// Prints "[  SKIPPED ]" and then "[  FAILED  ]": the output that the old
// SKIP_REGULAR_EXPRESSION reported as skipped.
TEST(HarnessCase, Skips) { GTEST_SKIP() << "skipping one test"; }
TEST(HarnessCase, Fails) { FAIL() << "a real failure"; }

#elif defined(SAMPLER_HARNESS_CASE_PASS)
// One test passes and one skips: the binary passes.
TEST(HarnessCase, Passes) { SUCCEED(); }
TEST(HarnessCase, Skips) { GTEST_SKIP() << "skipping one test"; }

#elif defined(SAMPLER_HARNESS_CASE_EXIT_77)
// A test that ends the process with the skip code: still a failure.
TEST(HarnessCase, Passes) { SUCCEED(); }
TEST(HarnessCase, ExitsWithTheSkipCode) { std::exit(77); }

#elif defined(SAMPLER_HARNESS_CASE_NO_TESTS)
// No test at all: gtest runs 0 tests and exits 0.

#elif defined(SAMPLER_HARNESS_CASE_ALL_SKIPPED)
TEST(HarnessCase, SkipsOne) { GTEST_SKIP() << "skipping"; }
TEST(HarnessCase, SkipsTwo) { GTEST_SKIP() << "skipping"; }

#else
#error "define one SAMPLER_HARNESS_CASE_*"
#endif

}  // namespace

#if defined(SAMPLER_HARNESS_NO_RUN_MAIN)
// A main that forgets RUN_ALL_TESTS: exits 0 having run nothing.
int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return 0;
}
#endif
