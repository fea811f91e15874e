// Replays the fuzz corpus through the fuzz targets in the normal build (gcc,
// no libFuzzer): every file of tests/fuzz/corpus/<target>/ (the seeds) and
// tests/fuzz/regressions/<target>/ (inputs that once broke something) goes
// through the same entry point that libFuzzer calls, compiled with
// -DSAMPLER_FUZZ_REGRESSION so that each target registers itself by name
// (fuzz_target.h). A broken invariant aborts with its message; each file's
// name is printed before it runs, so the log names the input. A folder
// that exists must hold inputs: an empty one fails rather than pass having
// replayed nothing; a target without regressions has no folder and no
// regressions_<target> test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.h"

namespace sampler::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path kFuzzDir = fs::path(SAMPLER_SOURCE_DIR) / "tests" / "fuzz";

std::vector<fs::path> Inputs(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

void Replay(const std::string& target, FuzzFn fn, const fs::path& dir) {
  const std::vector<fs::path> files = Inputs(dir);
  if (files.empty()) {
    ADD_FAILURE() << "no inputs in " << dir
                  << ": a replay of nothing proves nothing; add inputs or "
                     "remove the folder";
  }
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    std::fprintf(stderr, "replaying %s\n", file.c_str());
    const std::string bytes = ReadFile(file);
    EXPECT_EQ(fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
              0)
        << target;
  }
}

// Every target built here has a seed corpus, and every corpus a target.
TEST(FuzzRegression, EveryTargetHasACorpus) {
  ASSERT_FALSE(Registry().empty());
  for (const auto& [name, fn] : Registry()) {
    EXPECT_FALSE(Inputs(kFuzzDir / "corpus" / name).empty())
        << "no seeds in tests/fuzz/corpus/" << name;
  }
  for (const fs::directory_entry& e :
       fs::directory_iterator(kFuzzDir / "corpus")) {
    EXPECT_EQ(Registry().count(e.path().filename().string()), 1u)
        << "no fuzz target for " << e.path();
  }
}

// Every regressions folder belongs to a target (a misspelt folder would
// otherwise never be replayed).
TEST(FuzzRegression, EveryRegressionFolderHasATarget) {
  for (const fs::directory_entry& e :
       fs::directory_iterator(kFuzzDir / "regressions")) {
    EXPECT_TRUE(e.is_directory()) << e.path();
    EXPECT_EQ(Registry().count(e.path().filename().string()), 1u)
        << "no fuzz target for " << e.path();
  }
}

}  // namespace
}  // namespace sampler::fuzz

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  // One test per target and directory, registered once the targets have
  // registered themselves (static initialisation, before main). Every
  // target has a corpus (EveryTargetHasACorpus); regressions only where
  // its folder exists.
  for (const auto& [name, fn] : sampler::fuzz::Registry()) {
    for (const char* dir : {"corpus", "regressions"}) {
      const std::string target = name;
      const sampler::fuzz::FuzzFn target_fn = fn;
      const std::filesystem::path path = sampler::fuzz::kFuzzDir / dir / target;
      if (std::string(dir) == "regressions" &&
          !std::filesystem::is_directory(path)) {
        continue;
      }
      testing::RegisterTest(
          "FuzzRegression", (std::string(dir) + "_" + target).c_str(), nullptr,
          nullptr, __FILE__, __LINE__, [=]() -> testing::Test* {
            class ReplayTest : public testing::Test {
             public:
              ReplayTest(std::string t, sampler::fuzz::FuzzFn f,
                         std::filesystem::path p)
                  : target_(std::move(t)), fn_(f), path_(std::move(p)) {}
              void TestBody() override {
                sampler::fuzz::Replay(target_, fn_, path_);
              }

             private:
              std::string target_;
              sampler::fuzz::FuzzFn fn_;
              std::filesystem::path path_;
            };
            return new ReplayTest(target, target_fn, path);
          });
    }
  }
  return RUN_ALL_TESTS();
}
