// Golden outputs: fixed (seed, request) pairs whose exact output bits are
// committed in tests/golden/golden.txt. Any change to a random stream, a
// counter layout or the arithmetic of a sampler fails here loudly; the
// randomness contract promises the same bits in every future version.
//
// To regenerate after a deliberate, documented contract change (never to make
// a failure go away): SAMPLER_UPDATE_GOLDEN=1 build/tests/golden_test
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/gamma.h"

namespace sampler::kernels {
namespace {

constexpr char kGoldenPath[] = SAMPLER_SOURCE_DIR "/tests/golden/golden.txt";

// Each case renders its output as hex words, exactly.
std::string Hex(absl::Span<const float> v) {
  std::string s;
  for (float x : v) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    absl::StrAppendFormat(&s, " %08x", b);
  }
  return s;
}
std::string Hex(absl::Span<const double> v) {
  std::string s;
  for (double x : v) {
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    absl::StrAppendFormat(&s, " %016x", b);
  }
  return s;
}
std::string Hex(absl::Span<const uint64_t> v) {
  std::string s;
  for (uint64_t x : v) absl::StrAppendFormat(&s, " %016x", x);
  return s;
}
std::string Dec(absl::Span<const int32_t> v) {
  std::string s;
  for (int32_t x : v) absl::StrAppendFormat(&s, " %d", x);
  return s;
}

template <typename T>
std::string Gamma(std::vector<T> shape, T scale, bool log_output, uint64_t seed,
                  uint64_t first_item) {
  std::vector<T> scales(shape.size(), scale);
  std::vector<T> out(shape.size());
  const absl::Status s = SampleGammaCpu<T>(shape, scales, log_output, seed,
                                           first_item, absl::MakeSpan(out));
  return s.ok() ? Hex(absl::MakeConstSpan(out)) : s.ToString();
}

template <typename T>
std::string Dirichlet(std::vector<T> alpha, std::vector<int64_t> offsets,
                      bool log_output, uint64_t seed) {
  std::vector<T> out(alpha.size());
  const absl::Status s = SampleDirichletCpu<T>(alpha, offsets, log_output, seed,
                                               0, absl::MakeSpan(out));
  return s.ok() ? Hex(absl::MakeConstSpan(out)) : s.ToString();
}

template <typename T>
std::string Categorical(int64_t rows, int64_t k, int32_t draws, WeightKind kind,
                        uint64_t seed, uint64_t first_row) {
  // Weights with structure: zeros, a wide dynamic range, a remnant when
  // k is not a multiple of 32; rows differ so every lane sees its own row.
  std::vector<T> values(rows * k);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t h = (r * 7919 + j * 104729) % 1000;
      const T w = h % 11 == 0 ? T(0) : static_cast<T>(h) / T(997);
      values[r * k + j] = kind == WeightKind::kLogits
                              ? (w == T(0) ? T(-3) : T(4) * w)
                              : w * (h % 3 == 0 ? T(1e-6) : T(1));
    }
  }
  std::vector<int32_t> out(rows * draws);
  const absl::Status s =
      SampleCategoricalCpu<T>(values, CategoricalShape{rows, k, draws}, kind,
                              seed, first_row, absl::MakeSpan(out));
  return s.ok() ? Dec(out) : s.ToString();
}

std::string Boards(int rows, int cols, std::vector<int32_t> stones,
                   int64_t count, uint64_t seed, uint64_t first) {
  BoardSpec spec{rows, cols, stones};
  std::vector<uint64_t> out(count * stones.size() * BoardWords64(spec));
  const absl::Status s =
      SampleBoardsCpu(spec, seed, first, count, absl::MakeSpan(out));
  return s.ok() ? Hex(absl::MakeConstSpan(out)) : s.ToString();
}

std::map<std::string, std::string> ComputeAll() {
  const uint64_t big = 0x9e3779b97f4a7c15ull;
  std::map<std::string, std::string> c;
  c["gamma_f32"] = Gamma<float>({0.3f, 1.0f, 2.5f, 30.0f, 1000.0f, 0.05f}, 1.0f,
                                false, 42, 0);
  c["gamma_f32_scaled_offset"] =
      Gamma<float>({0.7f, 3.0f, 3.0f, 9.5f}, 0.25f, false, big, 1ull << 40);
  c["gamma_f32_log_tiny"] =
      Gamma<float>({0.001f, 0.001f, 0.01f, 0.5f}, 2.0f, true, 7, 0);
  c["gamma_f64"] =
      Gamma<double>({0.3, 1.0, 2.5, 30.0, 1000.0, 0.05}, 1.0, false, 42, 0);
  c["gamma_f64_log_tiny"] =
      Gamma<double>({0.001, 0.001, 0.01, 0.5}, 2.0, true, big, 123);
  // Large shapes (contract version 2: the acceptance test without
  // cancellation, outputs d + d t).
  c["gamma_f32_large"] =
      Gamma<float>({3e5f, 1e6f, 1e8f, 1e10f, 1e10f}, 1.0f, false, 11, 0);
  c["gamma_f64_large"] =
      Gamma<double>({3e5, 1e6, 1e8, 1e10, 1e10}, 1.0, false, big, 77);
  c["dirichlet_f32"] = Dirichlet<float>({0.5f, 1.0f, 2.0f, 1e-3f, 1e-3f, 1e-3f},
                                        {0, 3, 6}, false, 42);
  c["dirichlet_f64_log"] =
      Dirichlet<double>({1e-3, 1.0, 100.0, 0.1, 0.2}, {0, 3, 5}, true, big);
  c["categorical_f32_k7"] =
      Categorical<float>(40, 7, 3, WeightKind::kWeights, 42, 0);
  c["categorical_f32_k100_lanes"] =
      Categorical<float>(64, 100, 2, WeightKind::kWeights, big, 5);
  c["categorical_f64_k33_logits"] =
      Categorical<double>(40, 33, 2, WeightKind::kLogits, 42, 0);
  c["categorical_f32_k1000_logits"] =
      Categorical<float>(3, 1000, 5, WeightKind::kLogits, 9, 1ull << 33);
  c["boards_1x5"] = Boards(1, 5, {2}, 6, 42, 0);
  c["boards_9x9_two_colours"] = Boards(9, 9, {10, 10}, 3, 42, 0);
  c["boards_19x19"] = Boards(19, 19, {100, 80}, 2, big, 1ull << 36);
  c["boards_128x128"] = Boards(128, 128, {4000, 0, 1}, 1, 3, 0);
  return c;
}

std::map<std::string, std::string> ReadGolden(const std::string& path) {
  std::map<std::string, std::string> golden;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    golden[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return golden;
}

TEST(GoldenTest, OutputsMatchCommittedBits) {
  const std::map<std::string, std::string> computed = ComputeAll();
  if (const char* update = std::getenv("SAMPLER_UPDATE_GOLDEN");
      update != nullptr && std::string(update) == "1") {
    std::ofstream out(kGoldenPath);
    out << "# Golden outputs of tests/unit/golden_test.cc: name: output bits.\n"
        << "# Generated once; a change here is a change of the randomness "
           "contract.\n";
    for (const auto& [name, value] : computed)
      out << name << ":" << value << "\n";
    GTEST_SKIP() << "wrote " << kGoldenPath;
  }
  const std::map<std::string, std::string> golden = ReadGolden(kGoldenPath);
  ASSERT_FALSE(golden.empty()) << "missing or empty " << kGoldenPath;
  for (const auto& [name, value] : computed) {
    auto it = golden.find(name);
    ASSERT_NE(it, golden.end()) << "no golden output for " << name;
    EXPECT_EQ(value, it->second) << "the random stream of " << name
                                 << " changed: see docs/randomness.md";
  }
  EXPECT_EQ(golden.size(), computed.size())
      << "stale entries in the golden file";
}

}  // namespace
}  // namespace sampler::kernels
