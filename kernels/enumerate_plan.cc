// Host planning of the CUDA enumeration (cuda/enumerate.h,
// cuda/enumerate_plan.h): EnumerateBatchBuilder validates the problems,
// routes them to the FFT or the direct path, splits the direct path into
// the pair convolutions of each problem's tree (enumerate.h), grouped by
// tree level and kernel configuration, and lays the batch out in one arena.
// Plain C++: the kernels and their launch are in enumerate.cu.
#include "sampler/kernels/cuda/enumerate_plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "cufft_loader.h"
#include "enumerate_cpu_convolve.h"
#include "sampler/kernels/common.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/enumerate.h"

namespace sampler::kernels::cuda {

namespace enumerate_internal {

// Thresholds measured in bench/results/enumerate-kernel.md; from 65 on,
// session 9's mid-session run on an H100 (Mpairs/s, float products / double
// products): 65 to 512 g1r5x2 (long) for float (m = 256: 89.6 against g1r5's
// 84.3 at B = 4096, 117.2 against 104.9 at 16,384); 513 to 2048 g1r7s4, split
// tiles (m = 1024, B = 256: 7.35 against g1r7's 6.39; at B = 2048 float loses
// 10%, 10.2 against 11.2, the price of the B = 256); 2049 to 4096
// split tiles too (m = 4096, B = 128: float g1r7s4 0.83, against g2r15's
// 0.66); longer g2r15. Session 10's mid-session run (H100, the tensor-core
// kernel, every product in double, so one choice for both types where it
// wins): 41 to 64 dmma t2 (m = 64, B = 65,536: float 722 against g1r3q2's
// 405, double 614 against 328); double products 65 to 192 dmma k8 t2 (m =
// 128: 206 against g1r5's 178), 193 to 4096 dmma k8 t4 (m = 256: 83.0
// against 61.1; m = 1024: 7.88 against g1r7s4's 5.09; at m = 512 and 2048
// k8 t2 already wins, 22.6 against 16.2 and 1.76 against 1.27); float
// products 769 to 1536 dmma k8 t4 (m = 1024: 7.34 against 6.92; at m = 256,
// 512 and 2048 the warp-cooperative kernel is as fast or faster).
// Session 11's mid-session run (H100, 15:11 UTC, Mpairs/s): float products
// 65 to 192 dmma k8 t4 (m = 128: 297.3 against g1r5x2 (long)'s 273.8),
// 193 to 1536 dmma k8 t4p, k8 t4 with the next tile prefetched into L2
// (m = 256: 93.8 against 87.9 and k8 t4's 87.6; m = 1024: 8.24 against
// k8 t4's 7.83; m = 512: k8 t4 30.4 against g1r5x2's 25.8, t4p between
// its wins on either side), from 1537 the split tiles still (m = 2048:
// 1.89 against k8 t4's 1.64); double products 65 to 192 dmma k8 t4 too (m =
// 128: 278.9 against k8 t2's 224.6), 193 to 4096 k8 t4 (t4p +2% at m = 256,
// -3% at 1024).
int AutoLinearConfig(int64_t lx, int64_t ly, bool f32) {
  (void)ly;
  if (lx <= 40) return 1;  // g1r5x2q1: two problems per warp
  if (lx <= 64) return kTensorT2;
  if (f32) {
    if (lx <= 192) return kTensorK8T4;    // dmma k8 t4
    if (lx <= 1536) return kTensorK8T4P;  // dmma k8 t4p
    if (lx <= 4096) return 16;            // g1r7s4 (split)
    return 9;                             // g2r15
  }
  if (lx <= 4096) return kTensorK8T4;
  return 9;  // g2r15
}

// Every size the pair kernel fits. By count of instructions it issues less
// per problem than the direct kernel's sub-warps (g1r5x2q1, the choice
// below 41) at every size up to 32 (enumerate_pair.cu): the same arithmetic
// per step and problem, about a third of their fixed cost (no tile
// geometry, staging loops or output staging). enumerate_bench times both
// (pair, g1r5x2q1) at m = 16 and 32.
bool PairKernelAuto(int64_t lx, int64_t ly) { return PairKernelFits(lx, ly); }

int AutoLogConfig(int64_t lx) { return lx <= 64 ? 0 : 1; }

int TileOutputs(LaunchKind kind, int config) {
  if (kind == LaunchKind::kLog) return kWarpSize / kLogGroups[config];
  if (kind == LaunchKind::kExtended) {
    return kWarpSize / kLogGroups[config] * kExtendedOutputs;
  }
  const DirectConfigDef& c = kDirectConfigDefs[config];
  if (c.tensor > 0) return 64 * c.tensor * c.tensor_passes;
  return kWarpSize / c.sw / c.g * c.r;
}

int Log2(int64_t n) {
  int k = 0;
  while ((int64_t{1} << k) < n) ++k;
  return k;
}

}  // namespace enumerate_internal

using enumerate_internal::AutoLinearConfig;
using enumerate_internal::AutoLogConfig;
using enumerate_internal::DirectConfigDef;
using enumerate_internal::FftProblem;
using enumerate_internal::FftSignal;
using enumerate_internal::kAInScratch;
using enumerate_internal::kBInScratch;
using enumerate_internal::kDirectConfigDefs;
using enumerate_internal::kDstScratch;
using enumerate_internal::kInLog;
using enumerate_internal::kLogGroups;
using enumerate_internal::kNumDirectConfigs;
using enumerate_internal::kOutLog;
using enumerate_internal::Launch;
using enumerate_internal::LaunchKind;
using enumerate_internal::Log2;
using enumerate_internal::PairKernelAuto;
using enumerate_internal::PairKernelFits;
using enumerate_internal::StepProblem;
using enumerate_internal::Task;
using enumerate_internal::TileOutputs;

namespace {

constexpr EnumerateDirectConfig PublicConfig(const DirectConfigDef& d) {
  return {d.g,    d.r,     d.sw,    d.q,
          d.name, d.split, d.chunk, d.tensor * d.tensor_passes};
}
template <int... I>
constexpr std::array<EnumerateDirectConfig, sizeof...(I)> PublicConfigs(
    std::integer_sequence<int, I...>) {
  return {PublicConfig(kDirectConfigDefs[I])...};
}
constexpr std::array<EnumerateDirectConfig, kNumDirectConfigs> kDirectConfigs =
    PublicConfigs(std::make_integer_sequence<int, kNumDirectConfigs>{});

constexpr size_t Align(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

absl::Span<const EnumerateDirectConfig> EnumerateDirectConfigs() {
  return absl::MakeConstSpan(kDirectConfigs);
}

template <typename T>
void EnumerateBatchBuilder<T>::Reset(const EnumerateOptions& options) {
  options_ = options;
  finished_ = false;
  problems_.clear();
  pending_.clear();
  terms_.clear();
  values_.clear();
  steps_.clear();
  tasks_.clear();
  fft_signals_.clear();
  fft_problems_.clear();
  launches_.clear();
  layout_ = Layout();
  scratch_bytes_ = 0;
  fft_work_at_ = 0;
  total_out_ = 0;
  pairs_ = 0;
  pair_problems_ = 0;
}

template <typename T>
size_t EnumerateBatchBuilder<T>::MemoryBytes() const {
  auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  return bytes(problems_) + bytes(pending_) + bytes(terms_) + bytes(values_) +
         bytes(steps_) + bytes(tasks_) + bytes(fft_signals_) +
         bytes(fft_problems_) + bytes(launches_);
}

template <typename T>
void EnumerateBatchBuilder<T>::Reserve(size_t problems, size_t terms,
                                       size_t values) {
  problems_.reserve(problems_.size() + problems);
  pending_.reserve(pending_.size() + problems);
  terms_.reserve(terms_.size() + terms);
  values_.reserve(values_.size() + values);
}

template <typename T>
absl::StatusOr<int> EnumerateBatchBuilder<T>::Add(
    absl::Span<const PmfTerm<T>> terms, ProbSpace in, ProbSpace out) {
  if (finished_) {
    return absl::FailedPreconditionError("enumerate batch already finished");
  }
  if (out != ProbSpace::kLinear && out != ProbSpace::kLog) {
    return absl::InvalidArgumentError(
        absl::StrCat("output space = ", static_cast<int>(out),
                     ": unknown probability space"));
  }
  if (absl::Status s = ValidateEnumerate<T>(terms, in); !s.ok()) return s;
  if (terms.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ||
      problems_.size() >=
          static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::ResourceExhaustedError("enumerate batch too large");
  }
  EnumerateProblem p;
  p.num_terms = static_cast<int32_t>(terms.size());
  p.in = in;
  p.out = out;
  p.out_length = 1;
  Pending pending{static_cast<int32_t>(terms_.size()), p.num_terms};
  for (const PmfTerm<T>& t : terms) {
    p.support_offset += t.offset;  // validated: no overflow
    p.out_length += static_cast<int64_t>(t.values.size()) - 1;
    terms_.push_back({static_cast<int64_t>(values_.size()),
                      static_cast<int32_t>(t.values.size())});
    values_.insert(values_.end(), t.values.begin(), t.values.end());
  }
  // The CPU's test (enumerate_cpu.cc): finite log values beyond the
  // extended form's range send the problem to log-space arithmetic.
  if (in == ProbSpace::kLog) {
    for (const PmfTerm<T>& t : terms) {
      for (const T v : t.values) {
        p.beyond_extended |=
            std::isfinite(v) &&
            std::abs(static_cast<double>(v)) >
                ::sampler::kernels::enumerate_internal::kMaxExtendedLog;
      }
    }
  }
  p.out_begin = total_out_;
  total_out_ += p.out_length;
  problems_.push_back(p);
  pending_.push_back(pending);
  return static_cast<int>(problems_.size() - 1);
}

template <typename T>
absl::Status EnumerateBatchBuilder<T>::PlanFft(int64_t* scratch_doubles) {
  // Which problems: linear in and out, at least two terms, by the method.
  std::map<int64_t, std::vector<int32_t>> by_length;  // n -> problems
  for (size_t p = 0; p < problems_.size(); ++p) {
    EnumerateProblem& prob = problems_[p];
    if (prob.in != ProbSpace::kLinear || prob.out != ProbSpace::kLinear ||
        prob.num_terms < 2) {
      continue;
    }
    const bool want =
        options_.method == EnumerateMethod::kFft ||
        (options_.method == EnumerateMethod::kAuto && options_.allow_fft &&
         prob.out_length >= options_.fft_min_length);
    if (!want) continue;
    if (options_.method == EnumerateMethod::kAuto && !Cufft().ok) continue;
    prob.fft = true;
    by_length[int64_t{1} << Log2(std::max<int64_t>(prob.out_length, 16))]
        .push_back(static_cast<int32_t>(p));
  }
  if (by_length.empty()) return absl::OkStatus();
  if (!Cufft().ok) {
    return absl::UnavailableError(
        "enumerate: the FFT method needs cuFFT, which could not be loaded");
  }
  size_t work = 0;
  for (const auto& [n, members] : by_length) {
    Launch l;
    l.kind = LaunchKind::kFft;
    l.fft_length = n;
    l.fft_problems = static_cast<int64_t>(members.size());
    l.fft_signal_begin = static_cast<int64_t>(fft_signals_.size());
    l.fft_problem_begin = static_cast<int64_t>(fft_problems_.size());
    int32_t sig = 0;
    for (int32_t p : members) {
      const Pending& pd = pending_[p];
      fft_problems_.push_back({problems_[p].out_begin, sig, pd.num_terms,
                               static_cast<int32_t>(problems_[p].out_length),
                               p});
      for (int32_t t = 0; t < pd.num_terms; ++t) {
        const Term& term = terms_[pd.first_term + t];
        fft_signals_.push_back({term.values, term.length, 0});
      }
      sig += pd.num_terms;
    }
    l.fft_signals = sig;
    const int64_t bins2 = 2 * (n / 2 + 1);  // doubles per spectrum
    l.fft_real = *scratch_doubles;
    *scratch_doubles += Align(static_cast<size_t>(sig * n), 32);
    l.fft_spectra = *scratch_doubles;
    *scratch_doubles += Align(static_cast<size_t>(sig * bins2), 32);
    l.fft_product = *scratch_doubles;
    *scratch_doubles += Align(static_cast<size_t>(l.fft_problems * bins2), 32);
    absl::StatusOr<size_t> w =
        EnumerateFftPlans::WorkBytes(n, std::max<int64_t>(sig, 1));
    if (!w.ok()) return w.status();
    work = std::max(work, *w);
    launches_.push_back(l);
  }
  // cuFFT's work area after everything else.
  fft_work_at_ = static_cast<size_t>(*scratch_doubles) * sizeof(double);
  *scratch_doubles += static_cast<int64_t>(Align(work, 256) / sizeof(double));
  return absl::OkStatus();
}

namespace {

// A launch of the direct path is a group of pair convolutions keyed by
// (tree level, kind, config, f32). The key as one dense index, ordered as
// the tuple (level, then kind, config, f32), so that the groups in index
// order run the tree bottom up, a level's launches after the last level's.
constexpr int kLinearSlots = 2 * kNumDirectConfigs;  // config, f32
constexpr int kLogSlots = 2 * static_cast<int>(std::size(kLogGroups));
// Copies, linear, log, then extended launches (as many slots as log), then
// the pair kernel's (level 1 only).
constexpr int kPairSlot = 1 + kLinearSlots + 2 * kLogSlots;
constexpr int kGroupsPerLevel = kPairSlot + enumerate_internal::kPairVariants;
// Levels of a tree of fewer than 2^31 terms, plus level 0 (the copies).
constexpr int kMaxLevels = 32;

int GroupIndex(int level, LaunchKind kind, int config, bool f32) {
  if (kind == LaunchKind::kPair) {
    return level * kGroupsPerLevel + kPairSlot + config;
  }
  const int in_kind = 2 * config + (f32 ? 1 : 0);
  const int slot = kind == LaunchKind::kCopy     ? 0
                   : kind == LaunchKind::kLinear ? 1 + in_kind
                   : kind == LaunchKind::kLog
                       ? 1 + kLinearSlots + in_kind
                       : 1 + kLinearSlots + kLogSlots + in_kind;
  return level * kGroupsPerLevel + slot;
}

// The inverse of GroupIndex: the launch's level, kind, config and f32.
void SetGroup(int group, Launch* l) {
  l->level = group / kGroupsPerLevel;
  const int slot = group % kGroupsPerLevel;
  if (slot == 0 || slot >= kPairSlot) {
    l->kind = slot == 0 ? LaunchKind::kCopy : LaunchKind::kPair;
    l->config = slot == 0 ? 0 : slot - kPairSlot;
    l->f32 = false;
    return;
  }
  const bool linear = slot <= kLinearSlots;
  const bool log = !linear && slot <= kLinearSlots + kLogSlots;
  const int in_kind = linear ? slot - 1
                      : log  ? slot - 1 - kLinearSlots
                             : slot - 1 - kLinearSlots - kLogSlots;
  l->kind = linear ? LaunchKind::kLinear
            : log  ? LaunchKind::kLog
                   : LaunchKind::kExtended;
  l->config = in_kind / 2;
  l->f32 = in_kind % 2 == 1;
}

// Problems per planning thread, at least: a thread's start costs about what
// the walks of a few hundred small problems do.
constexpr size_t kProblemsPerThread = 2048;

// The planner's threads: the hardware's, where there are at least 4 (on
// two cores, shared with the server's other work, a second planning thread
// measured slower than one: bench/results/enumerate-plan-host-2026-11-25.md).
size_t PlanningThreads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw >= 4 ? hw : 1;
}

// run(r) for r < ranges, range 0 on the calling thread, the others on
// threads of their own; returns when all are done.
template <typename Run>
void RunRanges(size_t ranges, Run&& run) {
  std::vector<std::thread> threads;
  threads.reserve(ranges - 1);
  for (size_t r = 1; r < ranges; ++r) threads.emplace_back(run, r);
  run(0);
  for (std::thread& t : threads) t.join();
}

}  // namespace

template <typename T>
template <typename Visit>
int64_t EnumerateBatchBuilder<T>::WalkDirect(size_t p_begin, size_t p_end,
                                             int64_t scratch_doubles,
                                             Visit&& visit) const {
  // The tree of enumerate.h. Scratch: three buffers of L doubles, L the
  // sum of the terms' lengths. A node covering terms [i, j) lives at
  // offset prefix(i) (the lengths of the terms before i) of its buffer,
  // and is at most prefix(j) - prefix(i) long, so the nodes of a level
  // never overlap. Level l writes buffer l % 2 and reads level l - 1's
  // (the other), except the odd last node that a level passes up: it
  // stays where it was written, to the right of every node written after
  // it, and when a later level pairs it while it sits in that level's
  // buffer, their node goes to the third buffer instead. An extended-range
  // problem's elements are kExtendedDoubles doubles each: its buffers are
  // that much longer, its offsets that much further.
  struct Node {
    int64_t at;      // values index (a term) or scratch index
    int64_t prefix;  // prefix(first term)
    int32_t len;
    int buffer;  // -1: a term in values
  };
  std::vector<Node> nodes, next;  // reused by every problem
  for (size_t p = p_begin; p < p_end; ++p) {
    const EnumerateProblem& prob = problems_[p];
    if (prob.fft) continue;
    const Pending& pd = pending_[p];
    const bool log_path =
        prob.in == ProbSpace::kLog || prob.out == ProbSpace::kLog;
    const bool extended = log_path && !prob.beyond_extended;
    const int64_t width = extended ? enumerate_internal::kExtendedDoubles : 1;
    uint32_t space_bits = (prob.in == ProbSpace::kLog ? kInLog : 0u) |
                          (prob.out == ProbSpace::kLog ? kOutLog : 0u);
    if (pd.num_terms == 1) {
      const Term& t = terms_[pd.first_term];
      visit(GroupIndex(0, LaunchKind::kCopy, 0, false),
            StepProblem{0, t.values, prob.out_begin, 0, t.length,
                        static_cast<int32_t>(p), space_bits});
      continue;
    }
    nodes.clear();
    int64_t total_len = 0;
    for (int32_t t = 0; t < pd.num_terms; ++t) {
      const Term& term = terms_[pd.first_term + t];
      nodes.push_back({term.values, total_len, term.length, -1});
      total_len += term.length;
    }
    const int64_t base = scratch_doubles;
    if (pd.num_terms > 2) scratch_doubles += 3 * total_len * width;
    for (int level = 1; nodes.size() > 1; ++level) {
      const bool root = nodes.size() == 2;
      next.clear();
      for (size_t i = 0; i + 1 < nodes.size(); i += 2) {
        const Node& a = nodes[i];
        const Node& b = nodes[i + 1];  // only b can be a passed-up node
        Node r{0, a.prefix, a.len + b.len - 1, level % 2};
        if (b.buffer == r.buffer) r.buffer = 2;
        r.at = base + (r.buffer * total_len + a.prefix) * width;
        StepProblem sp;
        sp.problem = static_cast<int32_t>(p);
        sp.bits = space_bits | (a.buffer >= 0 ? kAInScratch : 0u) |
                  (b.buffer >= 0 ? kBInScratch : 0u);
        sp.a = a.at;
        sp.a_len = a.len;
        sp.b = b.at;
        sp.b_len = b.len;
        if (root) {
          sp.dst = prob.out_begin;
        } else {
          sp.dst = r.at;
          sp.bits |= kDstScratch;
        }
        const int64_t lx = std::min(a.len, b.len);
        const int64_t ly = std::max(a.len, b.len);
        // The pair kernel: a two-term problem's only pair (so level 1, the
        // root, both operands terms).
        const bool pair = !log_path && pd.num_terms == 2 &&
                          ((options_.method == EnumerateMethod::kAuto &&
                            PairKernelAuto(lx, ly)) ||
                           (options_.method == EnumerateMethod::kPair &&
                            PairKernelFits(lx, ly)));
        int group;
        if (pair) {
          const bool forced =
              options_.method == EnumerateMethod::kPair &&
              options_.direct_config >= 0 &&
              options_.direct_config < enumerate_internal::kPairVariants;
          group = GroupIndex(level, LaunchKind::kPair,
                             forced ? options_.direct_config
                                    : enumerate_internal::kAutoPairVariant,
                             false);
        } else if (log_path) {
          group = GroupIndex(
              level, extended ? LaunchKind::kExtended : LaunchKind::kLog,
              AutoLogConfig(lx), false);
        } else {
          // Float products only where both operands are float terms and
          // the pair is the problem's whole sum (two terms): a product's
          // float rounding (2^-24) in a leaf of a longer tree compounds
          // through every level above it (measured: 1e-6 relative at 4,000
          // terms, the float32 bound), while a node of the tree is a double
          // partial sum.
          const bool f32 =
              std::is_same_v<T, float> && a.buffer < 0 && b.buffer < 0 && root;
          const int config = options_.method == EnumerateMethod::kDirect &&
                                     options_.direct_config >= 0 &&
                                     options_.direct_config < kNumDirectConfigs
                                 ? options_.direct_config
                                 : AutoLinearConfig(lx, ly, f32);
          group = GroupIndex(level, LaunchKind::kLinear, config, f32);
        }
        visit(group, sp);
        next.push_back(r);
      }
      if (nodes.size() % 2 == 1) next.push_back(nodes.back());
      std::swap(nodes, next);
    }
  }
  return scratch_doubles;
}

template <typename T>
void EnumerateBatchBuilder<T>::PlanDirect(int64_t* scratch_doubles) {
  // Pair convolutions grouped by launch, each group in the order the walk
  // makes them, the groups in index order (GroupIndex). Two walks of the
  // trees, so that no group needs a list of its own: the first counts each
  // group's pair convolutions, the second writes each straight to its place.
  //
  // Many problems: the walks of contiguous ranges of problems run on
  // threads. A range's first walk counts its groups and its scratch; the
  // prefix sums over ranges give each range its place in every group and
  // its scratch base, so its second walk writes exactly what the serial
  // walk would (the same bits, whatever the number of threads).
  constexpr int kGroups = kMaxLevels * kGroupsPerLevel;
  const size_t n = problems_.size();
  const size_t ranges = std::max<size_t>(
      1, std::min<size_t>(std::min(PlanningThreads(), size_t{16}),
                          n / kProblemsPerThread));
  auto range_begin = [&](size_t r) { return n * r / ranges; };
  // counts[r][group]: range r's steps in each group; then its cursors.
  std::vector<std::array<int64_t, kGroups>> counts(ranges);
  std::vector<int64_t> scratch_end(ranges);
  RunRanges(ranges, [&](size_t r) {
    counts[r].fill(0);
    scratch_end[r] =
        WalkDirect(range_begin(r), range_begin(r + 1), 0,
                   [&](int group, const StepProblem&) { ++counts[r][group]; });
  });
  std::vector<int64_t> group_begin(kGroups + 1, 0);
  for (int g = 0; g < kGroups; ++g) {
    int64_t at = group_begin[g];
    for (size_t r = 0; r < ranges; ++r) {
      const int64_t c = counts[r][g];
      counts[r][g] = at;  // range r's first place in group g
      at += c;
    }
    group_begin[g + 1] = at;
  }
  std::vector<int64_t> scratch_base(ranges + 1, *scratch_doubles);
  for (size_t r = 0; r < ranges; ++r) {
    scratch_base[r + 1] = scratch_base[r] + scratch_end[r];
  }
  const int64_t steps_at = static_cast<int64_t>(steps_.size());
  steps_.resize(steps_.size() + group_begin.back());
  std::vector<int64_t> pairs(ranges, 0);
  RunRanges(ranges, [&](size_t r) {
    std::array<int64_t, kGroups>& cursor = counts[r];
    WalkDirect(range_begin(r), range_begin(r + 1), scratch_base[r],
               [&](int group, const StepProblem& sp) {
                 if (group % kGroupsPerLevel != 0) {  // not a copy: a pair
                   pairs[r] += static_cast<int64_t>(sp.a_len) * sp.b_len;
                 }
                 steps_[steps_at + cursor[group]++] = sp;
               });
  });
  for (const int64_t p : pairs) pairs_ += p;
  *scratch_doubles = scratch_base[ranges];
  for (int group = 0; group + 1 < static_cast<int>(group_begin.size());
       ++group) {
    const int64_t count = group_begin[group + 1] - group_begin[group];
    if (count == 0) continue;
    Launch l;
    SetGroup(group, &l);
    l.sp_begin = steps_at + group_begin[group];
    l.sp_count = count;
    const absl::Span<const StepProblem> sps(steps_.data() + l.sp_begin,
                                            static_cast<size_t>(count));
    if (l.kind == LaunchKind::kCopy || l.kind == LaunchKind::kPair) {
      l.task_begin = -1;  // a warp per problem
      l.task_count = l.sp_count;
      if (l.kind == LaunchKind::kPair) pair_problems_ += l.sp_count;
    } else {
      const int tw = TileOutputs(l.kind, l.config);
      // Mirrored tensor tiles: a task is tile t with tile tiles - 1 - t, so
      // a problem has (tiles + 1) / 2 tasks.
      const bool mirror = l.kind == LaunchKind::kLinear &&
                          kDirectConfigDefs[l.config].tensor_mirror;
      auto tasks_of = [&](const StepProblem& sp) {
        const int64_t K = static_cast<int64_t>(sp.a_len) + sp.b_len - 1;
        const int64_t tiles = (K + tw - 1) / tw;
        return mirror ? (tiles + 1) / 2 : tiles;
      };
      int64_t tiles_total = 0;
      bool single = true;
      for (const StepProblem& sp : sps) {
        const int64_t K = static_cast<int64_t>(sp.a_len) + sp.b_len - 1;
        single &= K <= tw;
        tiles_total += tasks_of(sp);
      }
      if (single) {
        l.task_begin = -1;
        l.task_count = l.sp_count;
      } else {
        l.task_begin = static_cast<int64_t>(tasks_.size());
        tasks_.reserve(tasks_.size() + static_cast<size_t>(tiles_total));
        // Tiles in problem order, each problem's in tile order; for the
        // long-chunk sub-warps, tile-major over runs of SW problems, so
        // that a warp's SW sub-warps take the same tile of SW problems
        // (equal steps in a uniform batch, where consecutive tiles of one
        // problem would leave sub-warps idle while the longest runs). The
        // order moves tiles between warps only: a tile's sum is the same
        // bits in any sub-warp.
        const int run = l.kind == LaunchKind::kLinear &&
                                kDirectConfigDefs[l.config].chunk > 0
                            ? kDirectConfigDefs[l.config].sw
                            : 1;
        auto tiles_of = [&](size_t i) { return tasks_of(sps[i]); };
        for (size_t i0 = 0; i0 < sps.size(); i0 += run) {
          const size_t i1 = std::min(sps.size(), i0 + run);
          int64_t most = 0;
          for (size_t i = i0; i < i1; ++i) most = std::max(most, tiles_of(i));
          for (int64_t t = 0; t < most; ++t) {
            for (size_t i = i0; i < i1; ++i) {
              if (t < tiles_of(i)) {
                tasks_.push_back(
                    {static_cast<int32_t>(i), static_cast<int32_t>(t)});
              }
            }
          }
        }
        l.task_count = static_cast<int64_t>(tasks_.size()) - l.task_begin;
      }
    }
    launches_.push_back(l);
  }
}

template <typename T>
absl::Status EnumerateBatchBuilder<T>::Finish() {
  if (finished_) return absl::OkStatus();
  // Scratch: the FFT groups' buffers and cuFFT's work area, then the
  // direct path's partial sums.
  int64_t scratch_doubles = 0;
  if (absl::Status s = PlanFft(&scratch_doubles); !s.ok()) return s;
  PlanDirect(&scratch_doubles);
  scratch_bytes_ =
      Align(static_cast<size_t>(scratch_doubles) * sizeof(double), 256);
  if (tasks_.size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::ResourceExhaustedError("enumerate batch: too many tiles");
  }
  size_t at = 0;
  layout_.steps = at;
  at = Align(at + steps_.size() * sizeof(StepProblem), 256);
  layout_.tasks = at;
  at = Align(at + tasks_.size() * sizeof(Task), 256);
  layout_.fft_signals = at;
  at = Align(at + fft_signals_.size() * sizeof(FftSignal), 256);
  layout_.fft_problems = at;
  at = Align(at + fft_problems_.size() * sizeof(FftProblem), 256);
  layout_.values = at;
  at = Align(at + values_.size() * sizeof(T), 256);
  layout_.end = at;
  finished_ = true;
  return absl::OkStatus();
}

template <typename T>
void EnumerateBatchBuilder<T>::PackInto(void* host_arena) const {
  auto* base = static_cast<unsigned char*>(host_arena);
  auto copy = [base](size_t at, const auto& v) {
    if (!v.empty()) {
      std::memcpy(base + at, v.data(), v.size() * sizeof(v[0]));
    }
  };
  copy(layout_.steps, steps_);
  copy(layout_.tasks, tasks_);
  copy(layout_.fft_signals, fft_signals_);
  copy(layout_.fft_problems, fft_problems_);
  copy(layout_.values, values_);
}

template <typename T>
EnumerateBatch<T> EnumerateBatchBuilder<T>::View(const void* device_arena,
                                                 T* out, uint32_t* status,
                                                 void* scratch,
                                                 size_t scratch_bytes) const {
  EnumerateBatch<T> b;
  b.arena = device_arena;
  b.out = out;
  b.status = status;
  b.scratch = scratch;
  b.scratch_bytes = scratch_bytes;
  b.num_problems = static_cast<int32_t>(problems_.size());
  b.values_at = layout_.values;
  b.steps_at = layout_.steps;
  b.tasks_at = layout_.tasks;
  b.fft_signals_at = layout_.fft_signals;
  b.fft_problems_at = layout_.fft_problems;
  b.scratch_needed = scratch_bytes_;
  b.fft_work_at = fft_work_at_;
  // The pair kernel writes its problems' status words; no other kernel
  // writes theirs.
  b.zero_status = pair_problems_ != static_cast<int64_t>(problems_.size());
  b.launches = &launches_;
  return b;
}

template <typename T>
std::string EnumerateBatchBuilder<T>::DescribeLaunches() const {
  std::string s;
  for (const Launch& l : launches_) {
    switch (l.kind) {
      case LaunchKind::kCopy:
        absl::StrAppend(&s, "copy x", l.sp_count, "; ");
        break;
      case LaunchKind::kLinear:
        absl::StrAppend(&s, "level ", l.level, " linear ",
                        kDirectConfigs[l.config].name, l.f32 ? " f32" : " f64",
                        " problems ", l.sp_count, " tasks ", l.task_count,
                        "; ");
        break;
      case LaunchKind::kLog:
      case LaunchKind::kExtended:
        absl::StrAppend(&s, "level ", l.level,
                        l.kind == LaunchKind::kLog ? " log g" : " extended g",
                        kLogGroups[l.config], " problems ", l.sp_count,
                        " tasks ", l.task_count, "; ");
        break;
      case LaunchKind::kFft:
        absl::StrAppend(&s, "fft n=", l.fft_length, " problems ",
                        l.fft_problems, " signals ", l.fft_signals, "; ");
        break;
      case LaunchKind::kPair:
        absl::StrAppend(&s, "level ", l.level,
                        l.config == 1 ? " pair (two problems a warp) "
                                      : " pair (warp per problem) ",
                        "problems ", l.sp_count, "; ");
        break;
    }
  }
  return s;
}

template class EnumerateBatchBuilder<float>;
template class EnumerateBatchBuilder<double>;

}  // namespace sampler::kernels::cuda
