// EnumerateFftPlans (cuda/enumerate.h): the cuFFT plans of the
// enumeration's FFT path, created outside the launcher and executed by it.
// Host code only; cuFFT itself comes from cufft_loader.h.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cufft_loader.h"
#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::kernels::cuda {

using enumerate_internal::Launch;
using enumerate_internal::LaunchKind;

absl::StatusOr<std::unique_ptr<EnumerateFftPlans>> EnumerateFftPlans::Create() {
  if (!Cufft().ok) {
    return absl::UnavailableError(
        "cuFFT (libcufft.so) could not be loaded: the FFT path is off");
  }
  return std::unique_ptr<EnumerateFftPlans>(new EnumerateFftPlans());
}

EnumerateFftPlans::~EnumerateFftPlans() {
  for (const auto& [key, handle] : plans_) Cufft().destroy(handle);
}

absl::StatusOr<size_t> EnumerateFftPlans::WorkBytes(int64_t n, int64_t count) {
  const CufftApi& api = Cufft();
  if (!api.ok) return absl::UnavailableError("cuFFT not loaded");
  size_t most = 0;
  for (int k = 0; (int64_t{1} << k) <= count; ++k) {
    if ((count >> k & 1) == 0) continue;
    for (cufftType type : {CUFFT_D2Z, CUFFT_Z2D}) {
      size_t bytes = 0;
      if (absl::Status s = CufftStatus(
              api.estimate_1d(static_cast<int>(n), type, 1 << k, &bytes),
              "estimate");
          !s.ok()) {
        return s;
      }
      most = std::max(most, bytes);
    }
  }
  return most;
}

absl::Status EnumerateFftPlans::Ensure(int64_t n, int64_t count, bool inverse) {
  const CufftApi& api = Cufft();
  for (int k = 0; (int64_t{1} << k) <= count; ++k) {
    if ((count >> k & 1) == 0) continue;
    const auto key = std::make_tuple(n, int64_t{1} << k, inverse);
    if (plans_.count(key) != 0) continue;
    cufftHandle h;
    if (absl::Status s = CufftStatus(api.create(&h), "create"); !s.ok()) {
      return s;
    }
    int dims[1] = {static_cast<int>(n)};
    size_t work = 0;
    cufftResult r = api.set_auto_allocation(h, 0);
    if (r == CUFFT_SUCCESS) {
      r = api.make_plan_many(h, 1, dims, nullptr, 1, 0, nullptr, 1, 0,
                             inverse ? CUFFT_Z2D : CUFFT_D2Z, 1 << k, &work);
    }
    if (absl::Status s = CufftStatus(r, "plan"); !s.ok()) {
      api.destroy(h);
      return s;
    }
    plans_[key] = h;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status EnumerateFftPlans::Prepare(const EnumerateBatch<T>& batch) {
  if (batch.launches == nullptr) return absl::OkStatus();
  for (const Launch& l : *batch.launches) {
    if (l.kind != LaunchKind::kFft) continue;
    if (absl::Status s = Ensure(l.fft_length, l.fft_signals, false); !s.ok()) {
      return s;
    }
    if (absl::Status s = Ensure(l.fft_length, l.fft_problems, true); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

namespace {

using PlanMap = std::map<std::tuple<int64_t, int64_t, bool>, int>;

// Runs `count` transforms of length n, forward or inverse, through the
// prepared plans of power-of-two batch sizes (count's binary digits, largest
// first): `exec(plan, done)` transforms the batch that starts after the
// first `done` signals.
template <typename Exec>
absl::Status RunPlans(const PlanMap& plans, int64_t n, int64_t count,
                      bool inverse, void* work, cudaStream_t stream,
                      Exec exec) {
  const CufftApi& api = Cufft();
  int64_t done = 0;
  for (int k = 62; k >= 0; --k) {
    if ((count >> k & 1) == 0) continue;
    const auto it = plans.find(std::make_tuple(n, int64_t{1} << k, inverse));
    if (it == plans.end()) {
      return absl::FailedPreconditionError(
          "enumerate: FFT plan missing (call EnumerateFftPlans::Prepare)");
    }
    const cufftHandle h = it->second;
    SAMPLER_RETURN_IF_ERROR(CufftStatus(api.set_stream(h, stream), "stream"));
    SAMPLER_RETURN_IF_ERROR(
        CufftStatus(api.set_work_area(h, work), "work area"));
    SAMPLER_RETURN_IF_ERROR(exec(api, h, done));
    done += int64_t{1} << k;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EnumerateFftPlans::Forward(int64_t n, int64_t count, double* real,
                                        void* complex, void* work,
                                        cudaStream_t stream) {
  const int64_t bins = n / 2 + 1;
  return RunPlans(plans_, n, count, /*inverse=*/false, work, stream,
                  [&](const CufftApi& api, cufftHandle h, int64_t done) {
                    return CufftStatus(
                        api.exec_d2z(h, real + done * n,
                                     static_cast<cufftDoubleComplex*>(complex) +
                                         done * bins),
                        "D2Z");
                  });
}

absl::Status EnumerateFftPlans::Inverse(int64_t n, int64_t count, void* complex,
                                        double* real, void* work,
                                        cudaStream_t stream) {
  const int64_t bins = n / 2 + 1;
  return RunPlans(
      plans_, n, count, /*inverse=*/true, work, stream,
      [&](const CufftApi& api, cufftHandle h, int64_t done) {
        return CufftStatus(
            api.exec_z2d(
                h, static_cast<cufftDoubleComplex*>(complex) + done * bins,
                real + done * n),
            "Z2D");
      });
}

template absl::Status EnumerateFftPlans::Prepare<float>(
    const EnumerateBatch<float>&);
template absl::Status EnumerateFftPlans::Prepare<double>(
    const EnumerateBatch<double>&);

}  // namespace sampler::kernels::cuda
