// Every visible GPU gives the CPU twin's bits (issue 14 item 2): one request
// of each kind (gamma and Dirichlet in both precisions, categorical with
// both kernel classes, boards, enumerate) goes through the kernels' pipeline
// (a Stager made on that device, the kind's batch builder, its launcher) on
// each device in turn. Sampling kinds must equal the CPU bit for bit;
// enumeration within the contract's tolerance of the CPU and identical
// across devices. With one GPU, device 0 is still checked against the CPU
// and the cross-device test is skipped (GTEST_SKIP: the binary passes).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/cuda/boards.h"
#include "sampler/kernels/cuda/categorical.h"
#include "sampler/kernels/cuda/dirichlet.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/gamma.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/detmath.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/gamma.h"
#include "sampler/kernels/status_macros.h"
#include "tests/gpu/gpu_test_util.h"

namespace sampler::kernels::cuda {
namespace {

constexpr uint64_t kSeed = 0x5eed14;

int DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

// The inputs of one request of each kind, fixed (from a fixed generator) so
// that every device and the CPU see the same requests.
struct Requests {
  std::vector<float> gamma_shape_f, gamma_scale_f;
  std::vector<double> gamma_shape_d, gamma_scale_d;
  std::vector<double> alpha;
  std::vector<int64_t> row_offsets;
  std::vector<float> narrow_weights, wide_logits;
  CategoricalShape narrow{500, 10, 3}, wide{200, 300, 2};
  BoardSpec board{19, 19, {90, 90}};
  int64_t boards = 64;
  std::vector<std::vector<double>> pmfs;  // enumerate terms (linear)
};

Requests MakeRequests() {
  Requests r;
  std::mt19937_64 rng(14);
  std::uniform_real_distribution<double> log_shape(std::log(0.05),
                                                   std::log(50.0));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < 50000; ++i) {
    const double shape = std::exp(log_shape(rng));
    const double scale = 0.5 + unit(rng);
    r.gamma_shape_f.push_back(static_cast<float>(shape));
    r.gamma_scale_f.push_back(static_cast<float>(scale));
    r.gamma_shape_d.push_back(shape);
    r.gamma_scale_d.push_back(scale);
  }
  r.row_offsets.push_back(0);
  for (int row = 0; row < 300; ++row) {
    const int k = 2 + row % 40;
    for (int j = 0; j < k; ++j) r.alpha.push_back(0.1 + 3 * unit(rng));
    r.row_offsets.push_back(static_cast<int64_t>(r.alpha.size()));
  }
  for (int64_t i = 0; i < r.narrow.rows * r.narrow.categories; ++i) {
    r.narrow_weights.push_back(static_cast<float>(unit(rng)));
  }
  for (int64_t i = 0; i < r.wide.rows * r.wide.categories; ++i) {
    r.wide_logits.push_back(static_cast<float>(-8 * unit(rng)));
  }
  for (int t = 0; t < 8; ++t) {
    std::vector<double> pmf(3 + t * 4);
    double sum = 0;
    for (double& p : pmf) sum += (p = unit(rng) + 1e-3);
    for (double& p : pmf) p /= sum;
    r.pmfs.push_back(std::move(pmf));
  }
  return r;
}

// What one device (or the CPU) answered.
struct Answers {
  std::vector<float> gamma_f;
  std::vector<double> gamma_d;
  std::vector<double> dirichlet;
  std::vector<int32_t> narrow, wide;
  std::vector<uint64_t> boards;
  std::vector<double> pmf;
};

Answers OnCpu(const Requests& r) {
  Answers a;
  a.gamma_f.resize(r.gamma_shape_f.size());
  EXPECT_TRUE(SampleGammaCpu<float>(r.gamma_shape_f, r.gamma_scale_f, false,
                                    kSeed, 0, absl::MakeSpan(a.gamma_f))
                  .ok());
  a.gamma_d.resize(r.gamma_shape_d.size());
  EXPECT_TRUE(SampleGammaCpu<double>(r.gamma_shape_d, r.gamma_scale_d, true,
                                     kSeed, 0, absl::MakeSpan(a.gamma_d))
                  .ok());
  a.dirichlet.resize(r.alpha.size());
  EXPECT_TRUE(SampleDirichletCpu<double>(r.alpha, r.row_offsets, false, kSeed,
                                         0, absl::MakeSpan(a.dirichlet))
                  .ok());
  a.narrow.resize(r.narrow.rows * r.narrow.draws);
  EXPECT_TRUE(SampleCategoricalCpu<float>(r.narrow_weights, r.narrow,
                                          WeightKind::kWeights, kSeed, 0,
                                          absl::MakeSpan(a.narrow))
                  .ok());
  a.wide.resize(r.wide.rows * r.wide.draws);
  EXPECT_TRUE(SampleCategoricalCpu<float>(r.wide_logits, r.wide,
                                          WeightKind::kLogits, kSeed, 0,
                                          absl::MakeSpan(a.wide))
                  .ok());
  a.boards.resize(r.boards * r.board.stones.size() * BoardWords64(r.board));
  EXPECT_TRUE(
      SampleBoardsCpu(r.board, kSeed, 0, r.boards, absl::MakeSpan(a.boards))
          .ok());
  std::vector<PmfTerm<double>> terms;
  for (const auto& pmf : r.pmfs) terms.push_back({0, pmf});
  absl::StatusOr<Pmf<double>> pmf =
      EnumerateCpu<double>(terms, ProbSpace::kLinear, ProbSpace::kLinear);
  EXPECT_TRUE(pmf.ok()) << pmf.status();
  if (pmf.ok()) a.pmf = pmf->values;
  return a;
}

// Runs `builder` through `stager` and copies its values out; every status
// word must be 0.
template <typename T, typename Builder, typename LaunchFn>
absl::Status RunValues(Stager& stager, const Builder& builder, LaunchFn launch,
                       std::vector<T>* out) {
  absl::Status words_ok;
  const absl::StatusOr<double> ran =
      stager.RunBatch(builder, launch, [&](const char* staged) {
        const auto layout = builder.OutLayout();
        const T* values = layout.Values(staged);
        out->assign(values, values + layout.values);
        const uint32_t* words = layout.StatusWords(staged);
        for (size_t i = 0; i < layout.words; ++i) {
          if (words[i] != 0) words_ok = absl::InternalError("status word set");
        }
      });
  if (!ran.ok()) return ran.status();
  return words_ok;
}

// Categorical and boards: their one request's outputs (Outputs, at its
// out_offset) into `out`, sized by the caller.
template <typename Builder, typename LaunchFn, typename Out>
absl::Status RunIndexed(Stager& stager, const Builder& builder, LaunchFn launch,
                        Out* out) {
  const absl::StatusOr<double> ran =
      stager.RunBatch(builder, launch, [&](const char* staged) {
        const auto* values = builder.Outputs(staged) + builder.out_offset(0);
        std::memcpy(out->data(), values, out->size() * sizeof((*out)[0]));
      });
  return ran.status();
}

template <typename T>
absl::Status RunGamma(Stager& stager, const std::vector<T>& shape,
                      const std::vector<T>& scale, bool log_output,
                      std::vector<T>* out) {
  GammaBatchBuilder<T> b;
  SAMPLER_RETURN_IF_ERROR(
      b.AddElements(shape, scale, log_output, kSeed, 0).status());
  return RunValues<T>(
      stager, b,
      [](const GammaBatch<T>& v, cudaStream_t s) {
        return LaunchGamma<T>(v, s);
      },
      out);
}

absl::StatusOr<Answers> OnDevice(int device, const Requests& r) {
  if (cudaSetDevice(device) != cudaSuccess) {
    return absl::InternalError("cudaSetDevice failed");
  }
  absl::StatusOr<std::unique_ptr<Stager>> created = Stager::Create();
  if (!created.ok()) return created.status();
  Stager& stager = **created;
  if (stager.device() != device) {
    return absl::InternalError("the stager is not on the device asked for");
  }
  Answers a;
  SAMPLER_RETURN_IF_ERROR(RunGamma<float>(stager, r.gamma_shape_f,
                                          r.gamma_scale_f,
                                          /*log_output=*/false, &a.gamma_f));
  SAMPLER_RETURN_IF_ERROR(RunGamma<double>(stager, r.gamma_shape_d,
                                           r.gamma_scale_d,
                                           /*log_output=*/true, &a.gamma_d));
  {
    DirichletBatchBuilder<double> b;
    SAMPLER_RETURN_IF_ERROR(
        b.AddRows(r.alpha, r.row_offsets, false, kSeed, 0).status());
    SAMPLER_RETURN_IF_ERROR(RunValues<double>(
        stager, b,
        [](const DirichletBatch<double>& v, cudaStream_t s) {
          return LaunchDirichlet<double>(v, s);
        },
        &a.dirichlet));
  }
  for (const bool wide : {false, true}) {
    CategoricalBatchBuilder<float> b(wide ? CategoricalKernel::kWarpPerRow
                                          : CategoricalKernel::kButterfly);
    SAMPLER_RETURN_IF_ERROR(
        b.Add(wide ? r.wide_logits : r.narrow_weights, wide ? r.wide : r.narrow,
              wide ? WeightKind::kLogits : WeightKind::kWeights, kSeed, 0)
            .status());
    SAMPLER_RETURN_IF_ERROR(b.Finish());
    std::vector<int32_t>& out = wide ? a.wide : a.narrow;
    const CategoricalShape& shape = wide ? r.wide : r.narrow;
    out.assign(shape.rows * shape.draws, -1);
    SAMPLER_RETURN_IF_ERROR(RunIndexed(
        stager, b,
        [](const auto& view, cudaStream_t stream) {
          return LaunchCategorical(view, stream);
        },
        &out));
  }
  {
    BoardsBatchBuilder b;
    SAMPLER_RETURN_IF_ERROR(b.Add(r.board, kSeed, 0, r.boards).status());
    SAMPLER_RETURN_IF_ERROR(b.Finish());
    a.boards.assign(r.boards * r.board.stones.size() * BoardWords64(r.board),
                    ~uint64_t{0});
    SAMPLER_RETURN_IF_ERROR(RunIndexed(
        stager, b,
        [](const auto& view, cudaStream_t stream) {
          return LaunchBoards(view, stream);
        },
        &a.boards));
  }
  {
    std::vector<PmfTerm<double>> terms;
    for (const auto& pmf : r.pmfs) terms.push_back({0, pmf});
    EnumerateBatchBuilder<double> b;
    SAMPLER_RETURN_IF_ERROR(
        b.Add(terms, ProbSpace::kLinear, ProbSpace::kLinear).status());
    SAMPLER_RETURN_IF_ERROR(b.Finish());
    SAMPLER_RETURN_IF_ERROR(RunValues<double>(
        stager, b,
        [](const EnumerateBatch<double>& v, cudaStream_t s) {
          return LaunchEnumerate<double>(v, s);
        },
        &a.pmf));
  }
  return a;
}

template <typename T>
void ExpectSameBits(const std::vector<T>& want, const std::vector<T>& got,
                    const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      ASSERT_EQ(detmath::Bits(want[i]), detmath::Bits(got[i]))
          << what << "[" << i << "]: " << want[i] << " vs " << got[i];
    } else {
      ASSERT_EQ(want[i], got[i]) << what << "[" << i << "]";
    }
  }
}

void ExpectSameSamples(const Answers& want, const Answers& got,
                       const std::string& where) {
  ExpectSameBits(want.gamma_f, got.gamma_f, where + " gamma float32");
  ExpectSameBits(want.gamma_d, got.gamma_d, where + " log-gamma float64");
  ExpectSameBits(want.dirichlet, got.dirichlet, where + " Dirichlet float64");
  ExpectSameBits(want.narrow, got.narrow, where + " categorical (butterfly)");
  ExpectSameBits(want.wide, got.wide, where + " categorical (warp per row)");
  ExpectSameBits(want.boards, got.boards, where + " boards");
}

TEST(MultiDeviceGpuTest, EveryDeviceMatchesTheCpu) {
  SAMPLER_SKIP_WITHOUT_GPU();
  const Requests requests = MakeRequests();
  const Answers cpu = OnCpu(requests);
  for (int device = 0; device < DeviceCount(); ++device) {
    const std::string where = "GPU " + std::to_string(device);
    absl::StatusOr<Answers> gpu = OnDevice(device, requests);
    ASSERT_TRUE(gpu.ok()) << where << ": " << gpu.status();
    ExpectSameSamples(cpu, *gpu, where);
    // Enumeration: the contract's tolerance (float64: 1e-12 relative).
    ASSERT_EQ(cpu.pmf.size(), gpu->pmf.size()) << where;
    for (size_t i = 0; i < cpu.pmf.size(); ++i) {
      ASSERT_LE(std::abs(gpu->pmf[i] - cpu.pmf[i]),
                1e-12 * std::abs(cpu.pmf[i]) + 1e-300)
          << where << " enumerate[" << i << "]";
    }
  }
}

TEST(MultiDeviceGpuTest, DevicesAgreeBitForBit) {
  SAMPLER_SKIP_WITHOUT_GPU();
  const int count = DeviceCount();
  if (count < 2) GTEST_SKIP() << "one GPU: nothing to compare it with";
  const Requests requests = MakeRequests();
  absl::StatusOr<Answers> first = OnDevice(0, requests);
  ASSERT_TRUE(first.ok()) << first.status();
  for (int device = 1; device < count; ++device) {
    const std::string where = "GPU " + std::to_string(device) + " vs GPU 0";
    absl::StatusOr<Answers> other = OnDevice(device, requests);
    ASSERT_TRUE(other.ok()) << where << ": " << other.status();
    ExpectSameSamples(*first, *other, where);
    // Enumeration is deterministic too: the same kernels, the same order of
    // operations, whatever the device.
    ExpectSameBits(first->pmf, other->pmf, where + " enumerate");
  }
}

}  // namespace
}  // namespace sampler::kernels::cuda
