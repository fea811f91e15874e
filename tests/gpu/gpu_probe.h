// Whether this machine has a usable GPU, for the GPU test binaries' main
// (gpu_test_main.cc). The answer has three values, not two, because "no GPU
// here" (CI: skip) and "a GPU that does not work" (a broken driver on a GPU
// host: fail) must never be confused: only the first may report skipped.
//
// The probe is a separate function, linked in from gpu_probe_cuda.cc in the
// real GPU tests and from fakes in tests/harness/, so the harness can prove
// what CTest reports for each answer on any machine.
#ifndef SAMPLER_TESTS_GPU_GPU_PROBE_H_
#define SAMPLER_TESTS_GPU_GPU_PROBE_H_

#include <string>

namespace sampler::testing {

enum class GpuState {
  kPresent,  // at least one device answers: run the tests
  kAbsent,   // no driver or no device: nothing can run, report skipped
  kBroken,   // a driver is installed but the runtime fails: report failed
};

struct GpuProbe {
  GpuState state;
  std::string detail;  // what the runtime said, for the log
};

GpuProbe ProbeGpu();

// The exit code that CTest reads as "skipped" (SKIP_RETURN_CODE in
// tests/CMakeLists.txt; 77 as in Automake).
inline constexpr int kSkipExitCode = 77;

}  // namespace sampler::testing

#endif  // SAMPLER_TESTS_GPU_GPU_PROBE_H_
