// A GPU probe with a fixed answer (SAMPLER_FAKE_GPU_STATE, a GpuState
// enumerator), so that tests/harness can build GPU test binaries that see
// no GPU, a GPU or a broken one on any machine, and check what CTest
// reports for each.
#include "tests/gpu/gpu_probe.h"

namespace sampler::testing {

GpuProbe ProbeGpu() {
  return {GpuState::SAMPLER_FAKE_GPU_STATE,
          "fake probe: " SAMPLER_FAKE_GPU_DETAIL};
}

}  // namespace sampler::testing
