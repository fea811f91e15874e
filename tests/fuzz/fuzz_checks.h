// Per-kind answers and invariants for the fuzz targets: the kernel's CPU
// function called directly on a whole parsed job (the reference a backend's
// answer must equal bit for bit, however it cut the job), and the checks
// every accepted answer must pass.
#ifndef SAMPLER_TESTS_FUZZ_FUZZ_CHECKS_H_
#define SAMPLER_TESTS_FUZZ_FUZZ_CHECKS_H_

#include <bitset>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sampler/kernels/boards.h"
#include "sampler/kernels/categorical.h"
#include "sampler/kernels/dirichlet.h"
#include "sampler/kernels/enumerate.h"
#include "sampler/kernels/gamma.h"
#include "server/jobs.h"
#include "tests/fuzz/fuzz_target.h"

namespace sampler::fuzz {

namespace kernels = ::sampler::kernels;

// The seed a parsed job must carry.
template <typename Request>
uint64_t ExpectedSeed(const Request& request) {
  return request.has_seed() ? request.seed() : kServerSeed;
}

// ----------------------------------------------------------- categorical --

// The kernel on the whole job (rows from its first_row).
template <typename T>
std::vector<int32_t> DirectCategorical(const server::CategoricalJob& job,
                                       const server::CategoricalWork<T>& work,
                                       absl::Status* status) {
  std::vector<int32_t> out(
      static_cast<size_t>(job.shape.rows * job.shape.draws), -1);
  *status = kernels::SampleCategoricalCpu<T>(
      work.values, job.shape, job.weight_kind, job.seed, job.first_row,
      absl::MakeSpan(out));
  return out;
}

// Every index in [0, K) and on a category of non-zero weight (weights > 0;
// logits > -inf).
template <typename T>
void CheckCategorical(const server::CategoricalJob& job,
                      const server::CategoricalWork<T>& work,
                      absl::Span<const int32_t> indices) {
  const int64_t k = job.shape.categories;
  const int64_t draws = job.shape.draws;
  FUZZ_CHECK(static_cast<int64_t>(indices.size()) == job.shape.rows * draws,
             indices.size(), " indices for ", job.shape.rows, " x ", draws);
  FUZZ_CHECK(static_cast<int64_t>(work.values.size()) == job.shape.rows * k);
  for (size_t i = 0; i < indices.size(); ++i) {
    const int64_t j = indices[i];
    FUZZ_CHECK(j >= 0 && j < k, "index ", j, " at ", i, ", K = ", k);
    const T v = work.values[static_cast<size_t>(i / draws * k + j)];
    if (job.weight_kind == kernels::WeightKind::kWeights) {
      FUZZ_CHECK(v > T(0), "category ", j, " of weight ", v, " drawn at ", i);
    } else {
      FUZZ_CHECK(v > -std::numeric_limits<T>::infinity(), "category ", j,
                 " of logit ", v, " drawn at ", i);
    }
  }
}

// ------------------------------------------------------------------ gamma --

template <typename T>
std::vector<T> DirectGamma(const server::GammaJob& job,
                           const server::GammaWork<T>& work,
                           absl::Status* status) {
  std::vector<T> out(static_cast<size_t>(job.items),
                     std::numeric_limits<T>::quiet_NaN());
  if (!work.groups.empty()) {
    *status = kernels::SampleGammaGroupedCpu<T>(work.groups, job.log_output,
                                                job.seed, job.first_sample,
                                                absl::MakeSpan(out));
  } else {
    const std::vector<T> ones(work.scale.empty() ? work.shape.size() : 0, T(1));
    *status = kernels::SampleGammaCpu<T>(
        work.shape, work.scale.empty() ? ones : work.scale, job.log_output,
        job.seed, job.first_sample, absl::MakeSpan(out));
  }
  return out;
}

// Linear samples >= 0 and not NaN (finite unless shape x scale is within a
// factor 1e6 of overflow); log samples not NaN and below +inf.
template <typename T>
void CheckGamma(const server::GammaJob& job, const server::GammaWork<T>& work,
                absl::Span<const T> samples) {
  FUZZ_CHECK(static_cast<int64_t>(samples.size()) == job.items);
  size_t group = 0;  // groups: the group of sample i, and where it ends
  int64_t group_end = work.groups.empty() ? 0 : work.groups[0].count;
  for (size_t i = 0; i < samples.size(); ++i) {
    T shape, scale;
    if (work.groups.empty()) {
      shape = work.shape[i];
      scale = work.scale.empty() ? T(1) : work.scale[i];
    } else {
      while (static_cast<int64_t>(i) >= group_end) {
        ++group;
        FUZZ_CHECK(group < work.groups.size(), "sample ", i,
                   " past the groups");
        group_end += work.groups[group].count;
      }
      shape = work.groups[group].shape;
      scale = work.groups[group].scale;
    }
    const T x = samples[i];
    FUZZ_CHECK(!std::isnan(x), "sample ", i, " is NaN (shape ", shape,
               ", scale ", scale, ")");
    const bool tame =
        double{shape} * double{scale} < std::numeric_limits<T>::max() * 1e-6;
    if (job.log_output) {
      FUZZ_CHECK(x < std::numeric_limits<T>::infinity(), "log sample ", i,
                 " = ", x);
    } else {
      FUZZ_CHECK(x >= T(0), "sample ", i, " = ", x);
      FUZZ_CHECK(!tame || std::isfinite(x), "sample ", i, " = ", x, " (shape ",
                 shape, ", scale ", scale, ")");
    }
  }
}

// -------------------------------------------------------------- Dirichlet --

template <typename T>
std::vector<T> DirectDirichlet(const server::DirichletJob& job,
                               const server::DirichletWork<T>& work,
                               absl::Status* status) {
  std::vector<T> out(work.alpha.size(), std::numeric_limits<T>::quiet_NaN());
  *status = kernels::SampleDirichletCpu<T>(work.alpha, work.row_offsets,
                                           job.log_output, job.seed, 0,
                                           absl::MakeSpan(out));
  return out;
}

// Each row a probability vector: components in [0, 1] summing to 1 within
// a rounding error per component (log output: components <= 0 up to
// rounding, and their log-sum-exp 0).
template <typename T>
void CheckDirichlet(const server::DirichletJob& job,
                    const server::DirichletWork<T>& work,
                    absl::Span<const T> out) {
  FUZZ_CHECK(out.size() == work.alpha.size());
  const double eps = std::numeric_limits<T>::epsilon();
  for (size_t r = 0; r + 1 < work.row_offsets.size(); ++r) {
    const size_t begin = static_cast<size_t>(work.row_offsets[r]);
    const size_t end = static_cast<size_t>(work.row_offsets[r + 1]);
    const double tolerance = 8 * eps * static_cast<double>(end - begin + 1);
    double sum = 0;
    for (size_t j = begin; j < end; ++j) {
      const double x = out[j];
      FUZZ_CHECK(!std::isnan(x), "row ", r, " component ", j - begin,
                 " is NaN");
      if (job.log_output) {
        FUZZ_CHECK(x <= tolerance, "row ", r, " log component ", j - begin,
                   " = ", x);
        sum += std::exp(x);
      } else {
        FUZZ_CHECK(x >= 0 && x <= 1 + tolerance, "row ", r, " component ",
                   j - begin, " = ", x);
        sum += x;
      }
    }
    FUZZ_CHECK(std::fabs(sum - 1) <= tolerance, "row ", r, " (", end - begin,
               " components) sums to ", sum);
  }
}

// ----------------------------------------------------------------- boards --

inline std::vector<uint64_t> DirectBoards(const server::BoardsJob& job,
                                          absl::Status* status) {
  const int64_t per = static_cast<int64_t>(job.spec.stones.size()) *
                      kernels::BoardWords64(job.spec);
  std::vector<uint64_t> out(static_cast<size_t>(job.count * per), ~0ULL);
  *status = kernels::SampleBoardsCpu(job.spec, job.seed, job.first_position,
                                     job.count, absl::MakeSpan(out));
  return out;
}

// Per position: colour c has exactly stones[c] stones, colours never share
// a site, and no bit lies past rows x cols.
inline void CheckBoards(const server::BoardsJob& job,
                        absl::Span<const uint64_t> words) {
  const int64_t words_per = kernels::BoardWords64(job.spec);
  const int64_t colours = static_cast<int64_t>(job.spec.stones.size());
  const int64_t sites = int64_t{job.spec.rows} * job.spec.cols;
  FUZZ_CHECK(words_per == (sites + 63) / 64, words_per, " words for ", sites,
             " sites");
  FUZZ_CHECK(static_cast<int64_t>(words.size()) ==
             job.count * colours * words_per);
  for (int64_t p = 0; p < job.count; ++p) {
    for (int64_t w = 0; w < words_per; ++w) {
      uint64_t seen = 0;
      const uint64_t valid =
          (w + 1) * 64 <= sites ? ~0ULL : (1ULL << (sites - w * 64)) - 1;
      for (int64_t c = 0; c < colours; ++c) {
        const uint64_t word =
            words[static_cast<size_t>((p * colours + c) * words_per + w)];
        FUZZ_CHECK((word & ~valid) == 0, "position ", p, " colour ", c,
                   " has stones past the board in word ", w);
        FUZZ_CHECK((word & seen) == 0, "position ", p, " colour ", c,
                   " shares a site in word ", w);
        seen |= word;
      }
    }
    for (int64_t c = 0; c < colours; ++c) {
      int64_t stones = 0;
      for (int64_t w = 0; w < words_per; ++w) {
        stones += static_cast<int64_t>(
            std::bitset<64>(
                words[static_cast<size_t>((p * colours + c) * words_per + w)])
                .count());
      }
      FUZZ_CHECK(stones == job.spec.stones[static_cast<size_t>(c)], "position ",
                 p, " colour ", c, " has ", stones, " stones, wanted ",
                 job.spec.stones[static_cast<size_t>(c)]);
    }
  }
}

}  // namespace sampler::fuzz

#endif  // SAMPLER_TESTS_FUZZ_FUZZ_CHECKS_H_
