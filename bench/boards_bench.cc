// Benchmark of the CUDA board kernels (kernels/boards.cu): positions per
// second for the issue's headline cases, every kernel variant that fits a
// 32x32 and a 19x19 board, the three loops (flat with masked transitions,
// flat with divergent transitions, the seed's nested loop),
// large boards and a many-segment batch; each next to its two ceilings
// measured in the same run (device-to-device copy bandwidth for the output
// bytes, Philox blocks per second for the arithmetic).
//
// Usage: boards_bench [--reps N] [--only I] (I: run case I of the table
// alone, e.g. under ncu). Prints one table; a benchmark reports, it
// asserts nothing about timings. Each case also checks its first and last
// positions against SampleBoardsCpu and says "ok" or "MISMATCH".
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/boards_core.h"
#include "sampler/kernels/cuda/boards.h"
#include "sampler/kernels/cuda/staging.h"
#include "sampler/kernels/cuda/status.h"

namespace sampler::bench {

// In boards_bench_roofline.cu.
absl::StatusOr<double> PhiloxBlocksPerSecond(cudaStream_t stream, int reps,
                                             bool wide);

namespace {

using kernels::BoardSpec;
using kernels::cuda::BoardSegment;
using kernels::cuda::BoardVariantName;
using kernels::cuda::BoardVariants;

// The benchmark cannot go on after a failed call: say where and stop.
void Check(const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "boards_bench: %s: %s\n", what,
                 status.ToString().c_str());
    std::exit(1);
  }
}

#define BENCH_CUDA(call)                                                       \
  Check(::sampler::kernels::cuda::ToStatus((call), #call, __FILE__, __LINE__), \
        #call)

struct Case {
  std::string name;
  BoardSpec spec;
  int64_t count;
  int32_t variant = -1;  // -1: PrepareBoardSegments' automatic choice.
  kernels::cuda::BoardLoop loop = kernels::cuda::BoardLoop::kAuto;
  int segments = 1;  // Split into this many requests, each its own seed.
};

// The variant index with this shape, or -1.
int32_t Variant(int lanes, int per, int min_blocks = 1) {
  const absl::Span<const kernels::cuda::BoardVariant> v = BoardVariants();
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].lanes == lanes && v[i].blocks_per_lane == per &&
        v[i].min_blocks == min_blocks) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

// Mean Philox blocks per position, counted on the host with the shared core
// over `samples` positions of `seed`.
double MeanPhiloxBlocks(const BoardSpec& spec, uint64_t seed, int samples) {
  const int32_t sites = spec.rows * spec.cols;
  const int words = kernels::BoardWords32(sites);
  std::vector<uint32_t> vacant(words), cand(words), sel(words), subset(words);
  double steps = 0;
  for (int i = 0; i < samples; ++i) {
    for (int j = 0; j < words; ++j) {
      vacant[j] = kernels::BoardSiteMask(sites, j);
    }
    uint32_t step = 0;
    for (int32_t k : spec.stones) {
      kernels::SelectStones(seed, static_cast<uint64_t>(i), words, k, &step,
                            vacant.data(), cand.data(), sel.data(),
                            subset.data());
    }
    steps += step;
  }
  return steps / samples * kernels::BoardBlocksPerStep(words);
}

std::string SpecString(const BoardSpec& spec) {
  std::string s = absl::StrCat(spec.rows, "x", spec.cols, " k=");
  for (size_t c = 0; c < spec.stones.size(); ++c) {
    absl::StrAppend(&s, c ? "+" : "", spec.stones[c]);
  }
  return s;
}

int Run(int reps, int only) {
  int device = 0;
  BENCH_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, device));
  int clock_khz = 0;
  BENCH_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  std::printf("device: %s, %d SMs, peak SM clock %.0f MHz, L2 %.0f MB\n",
              prop.name, prop.multiProcessorCount, clock_khz / 1e3,
              prop.l2CacheSize / 1e6);

  // The stream, events and pool allocations of the staging pipeline.
  absl::StatusOr<std::unique_ptr<kernels::cuda::Stager>> stager =
      kernels::cuda::Stager::Create();
  Check(stager.status(), "stager");
  const kernels::cuda::Stream& stream = (*stager)->stream;
  const kernels::cuda::Event* start = &(*stager)->start;
  const kernels::cuda::Event* stop = &(*stager)->stop;
  const auto time_ms = [&](const auto& launch) {
    std::vector<float> ms;
    for (int i = 0; i <= reps; ++i) {
      BENCH_CUDA(cudaEventRecord(start->get(), stream.get()));
      launch();
      BENCH_CUDA(cudaEventRecord(stop->get(), stream.get()));
      BENCH_CUDA(cudaEventSynchronize(stop->get()));
      float t = 0;
      BENCH_CUDA(cudaEventElapsedTime(&t, start->get(), stop->get()));
      if (i > 0) ms.push_back(t);  // The first run warms up.
    }
    std::sort(ms.begin(), ms.end());
    return static_cast<double>(ms[ms.size() / 2]);
  };

  // Ceiling 1: device-to-device copy, bytes read plus bytes written.
  const size_t copy_bytes = size_t{1} << 31;
  double copy_tbps = 0;
  {
    absl::StatusOr<kernels::cuda::DeviceBuffer> a =
        (*stager)->Allocate(copy_bytes);
    Check(a.status(), "copy buffer");
    absl::StatusOr<kernels::cuda::DeviceBuffer> b =
        (*stager)->Allocate(copy_bytes);
    Check(b.status(), "copy buffer");
    BENCH_CUDA(cudaMemsetAsync(a->data(), 0x5A, copy_bytes, stream.get()));
    const double ms = time_ms([&] {
      BENCH_CUDA(cudaMemcpyAsync(b->data(), a->data(), copy_bytes,
                                 cudaMemcpyDeviceToDevice, stream.get()));
    });
    copy_tbps = 2.0 * copy_bytes / (ms * 1e-3) / 1e12;
  }
  // Ceiling 2: Philox blocks per second, in the board kernels' formulation
  // (the ceiling) and in Random123's (for comparison).
  absl::StatusOr<double> philox =
      PhiloxBlocksPerSecond(stream.get(), reps, /*wide=*/true);
  Check(philox.status(), "philox");
  absl::StatusOr<double> philox_r123 =
      PhiloxBlocksPerSecond(stream.get(), reps, /*wide=*/false);
  Check(philox_r123.status(), "philox");
  std::printf(
      "ceilings: d2d copy %.3f TB/s (read+write); Philox4x32-10 %.1f G "
      "blocks/s (board kernels' formulation), %.1f G blocks/s (Random123's)\n",
      copy_tbps, *philox / 1e9, *philox_r123 / 1e9);

  using kernels::cuda::BoardLoop;
  constexpr BoardLoop kFlat = BoardLoop::kFlat;
  constexpr BoardLoop kDiv = BoardLoop::kFlatDivergent;
  constexpr BoardLoop kNested = BoardLoop::kNested;
  const BoardSpec b32_512{32, 32, {512}};
  const BoardSpec go{19, 19, {120, 120}};
  const BoardSpec b64{64, 64, {2048}};
  const BoardSpec b128{128, 128, {8192}};
  std::vector<Case> cases = {
      {"headline", b32_512, 1 << 24},
      {"", {32, 32, {16}}, 1 << 24},
      {"", {32, 32, {1000}}, 1 << 24},
      {"divergent transitions", b32_512, 1 << 23, -1, kDiv},
      {"target 2", go, 1 << 24},
      {"nested loop", b32_512, 1 << 23, -1, kNested},
      {"divergent transitions", go, 1 << 23, -1, kDiv},
      {"nested loop", go, 1 << 23, -1, kNested},
      {"1024 segments", go, 1 << 24, -1, BoardLoop::kAuto, 1024},
      {"peer's case", {19, 19, {120}}, 1 << 24},
      {"", {15, 15, {71, 70}}, 1 << 24},
      {"", {9, 9, {20, 20}}, 1 << 24},
      {"", {33, 33, {544}}, 1 << 20},
      {"", b64, 1 << 20},
      {"nested loop", b64, 1 << 20, -1, kNested},
      {"masked transitions", b64, 1 << 20, -1, kFlat},
      {"", b128, 1 << 17},
      {"nested loop", b128, 1 << 17, -1, kNested},
      {"masked transitions", b128, 1 << 17, -1, kFlat},
      {"", {128, 128, {5000, 5000}}, 1 << 17},
      {"", {1, 16384, {1}}, 1 << 17},
  };
  for (auto [lanes, per, min_blocks] : {std::tuple{1, 8, 1},
                                        {1, 8, 6},
                                        {2, 4, 1},
                                        {4, 2, 1},
                                        {8, 1, 1},
                                        {8, 2, 1},
                                        {8, 4, 1},
                                        {16, 4, 1},
                                        {32, 4, 1}}) {
    cases.push_back(
        {"variant sweep", b32_512, 1 << 23, Variant(lanes, per, min_blocks)});
  }
  cases.push_back({"variant sweep", b32_512, 1 << 23, Variant(1, 8, 6), kDiv});
  for (auto [lanes, per] :
       {std::pair{1, 3}, {1, 4}, {2, 2}, {4, 1}, {2, 4}, {4, 2}, {8, 1}}) {
    cases.push_back({"variant sweep", go, 1 << 23, Variant(lanes, per)});
  }
  for (auto [lanes, per] : {std::pair{8, 4}, {16, 4}, {32, 4}}) {
    cases.push_back({"variant sweep", b64, 1 << 20, Variant(lanes, per)});
  }

  std::printf("\n%-3s %-20s %-15s %-14s %8s %10s %9s %8s %9s %7s %7s %s\n", "#",
              "case", "board", "variant", "boards", "ms", "Gboards/s",
              "GB/s out", "Philox/bd", "%Philox", "%copy", "check");
  for (size_t index = 0; index < cases.size(); ++index) {
    if (only >= 0 && static_cast<size_t>(only) != index) continue;
    const Case& c = cases[index];
    const uint64_t words_per_position =
        c.spec.stones.size() * kernels::BoardWords64(c.spec);
    const size_t words = static_cast<size_t>(c.count) * words_per_position;
    // Requests: consecutive first positions, one seed each, their outputs
    // end to end.
    kernels::cuda::BoardsBatchBuilder batch;
    std::vector<BoardSegment> requests;
    const int64_t per = c.count / c.segments;
    for (int s = 0; s < c.segments; ++s) {
      const int64_t count = s + 1 < c.segments ? per : c.count - per * s;
      const absl::StatusOr<int> added = batch.Add(
          c.spec, 0x5eed0000u + s, static_cast<uint64_t>(per * s), count);
      Check(added.status(), "segment");
      requests.push_back(batch.segments()[*added]);
    }
    Check(c.variant >= 0 ? batch.FinishWithVariant(c.variant) : batch.Finish(),
          "prepare");
    // Staged once (segments in, output poisoned), launched reps + 1 times.
    absl::StatusOr<kernels::cuda::StagedBatch> staged = (*stager)->Upload(
        batch.Staging(), [&](char* in) { batch.PackInto(in); });
    Check(staged.status(), "upload");
    kernels::cuda::BoardLaunchOptions options;
    options.loop = c.loop;
    BENCH_CUDA(cudaMemsetAsync(staged->regions.out, 0xAB,
                               words * sizeof(uint64_t), stream.get()));
    const kernels::cuda::BoardsBatch view = batch.View(staged->regions);
    const double ms = time_ms([&] {
      Check(kernels::cuda::LaunchBoards(view, stream.get(), options), "launch");
    });

    // Spot check: the first and last positions of the first and last
    // requests against the CPU.
    bool ok = true;
    Check((*stager)->Download(
              *staged,
              [&](const char* out) {
                const uint64_t* all = batch.Outputs(out);
                for (const BoardSegment* s :
                     {&requests.front(), &requests.back()}) {
                  const int64_t n = std::min<int64_t>(s->count, 64);
                  for (int64_t first : {int64_t{0}, s->count - n}) {
                    const uint64_t* got =
                        all + s->out_offset + first * words_per_position;
                    std::vector<uint64_t> want(n * words_per_position);
                    Check(kernels::SampleBoardsCpu(c.spec, s->seed,
                                                   s->first_position + first, n,
                                                   absl::MakeSpan(want)),
                          "cpu");
                    ok = ok && std::equal(want.begin(), want.end(), got);
                  }
                }
              }),
          "download");

    const double boards_per_s = c.count / (ms * 1e-3);
    const double out_bytes_per_s = words * 8.0 / (ms * 1e-3);
    const double philox_per_board =
        MeanPhiloxBlocks(c.spec, requests.front().seed, 4096);
    std::string variant = BoardVariantName(batch.segments().front().variant);
    switch (c.loop) {
      case kernels::cuda::BoardLoop::kAuto:
        break;
      case kernels::cuda::BoardLoop::kFlat:
        variant += " masked";
        break;
      case kernels::cuda::BoardLoop::kFlatDivergent:
        variant += " div";
        break;
      case kernels::cuda::BoardLoop::kNested:
        variant += " nested";
        break;
    }
    std::printf(
        "%-3zu %-20s %-15s %-14s %8lld %10.3f %9.3f %8.1f %9.1f %6.1f%% "
        "%6.1f%% "
        "%s\n",
        index, c.name.c_str(), SpecString(c.spec).c_str(), variant.c_str(),
        static_cast<long long>(c.count), ms, boards_per_s / 1e9,
        out_bytes_per_s / 1e9, philox_per_board,
        100.0 * boards_per_s * philox_per_board / *philox,
        100.0 * out_bytes_per_s / (copy_tbps * 1e12), ok ? "ok" : "MISMATCH");
    std::fflush(stdout);
  }
  std::printf(
      "\n%%Philox: Philox blocks computed per second (boards/s x mean blocks "
      "per board, counted on the host) over the Philox-only ceiling.\n"
      "%%copy: output bytes written per second over the d2d copy rate "
      "(which counts read + write).\n");
  return 0;
}

}  // namespace
}  // namespace sampler::bench

int main(int argc, char** argv) {
  int reps = 10;
  int only = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--only I]\n", argv[0]);
      return 2;
    }
  }
  return sampler::bench::Run(reps, only);
}
