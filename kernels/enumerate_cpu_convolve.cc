// Pair convolutions of the CPU enumeration: extended-range linear (the one
// every ordinary problem takes) and log space in double (for log inputs too
// large for the extended form). See enumerate_cpu_convolve.h.
#include "enumerate_cpu_convolve.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "enumerate_tilt.h"

namespace sampler::kernels::enumerate_internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ln 2 in two parts (fdlibm): kLn2Hi has 32 significant bits, so e * kLn2Hi
// is exact for |e| < 2^21.
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;

// Outputs per tile: the operands' windows cost O(J) conversions per tile and
// the tile T * J multiply-adds, so 512 keeps the conversions a few percent.
constexpr int64_t kTile = 512;
// Outputs per register block of the inner loop, and the blocked sums' sizes.
constexpr int kLanes = 16;
constexpr int64_t kInnerBlock = 64;
constexpr int64_t kOuterBlock = 4096;
// A scaled sum at least this large is accurate (see the header).
constexpr double kAccurate = 0x1p-900;
// Largest pair exponents below this mean "no pair of non-zero values".
constexpr int64_t kNoPair = -(int64_t{1} << 60);

// 2^d for d in [-1022, 1023], exactly.
double Pow2(int64_t d) {
  const uint64_t bits = static_cast<uint64_t>(d + 1023) << 52;
  double r;
  std::memcpy(&r, &bits, sizeof(r));
  return r;
}

// m * 2^d for m in [0, 1) and d <= 0, rounded once (as ldexp); 0 below
// 2^-1100, where it weighs nothing next to the sums it enters.
double Scale(double m, int64_t d) {
  if (d >= -1022) return m * Pow2(d);
  if (d < -1100) return 0.0;
  return (m * Pow2(d + 200)) * Pow2(-200);
}

// Compensated (Neumaier) summation: the running sum plus the rounding errors
// it has dropped, so that a sum of n non-negative terms is accurate to a few
// ulps whatever n is (plain summation loses up to n ulps).
struct NeumaierSum {
  double sum = 0;
  double compensation = 0;

  void Add(double x) {
    const double t = sum + x;
    // The larger operand's low bits survive in t; recover the smaller's.
    if (std::abs(sum) >= std::abs(x)) {
      compensation += (sum - t) + x;
    } else {
      compensation += (x - t) + sum;
    }
    sum = t;
  }
  double Total() const { return sum + compensation; }
};

// Index range of x in r_k = sum_j x_j y_{k-j}: max(0, k-ly+1) .. min(lx-1, k).
struct PairRange {
  int64_t lo;
  int64_t hi;  // inclusive
};
PairRange Pairs(int64_t k, int64_t lx, int64_t ly) {
  return {std::max<int64_t>(0, k - (ly - 1)), std::min(lx - 1, k)};
}

// The largest pair exponent of output k (below kNoPair: none non-zero).
int64_t LargestPair(const ExtendedPmf& x, const ExtendedPmf& y, int64_t k) {
  const PairRange p =
      Pairs(k, static_cast<int64_t>(x.size()), static_cast<int64_t>(y.size()));
  int64_t best = std::numeric_limits<int64_t>::min();
  for (int64_t j = p.lo; j <= p.hi; ++j) {
    best = std::max(best, x.exponent[j] + y.exponent[k - j]);
  }
  return best;
}

// Output k on its own: every pair scaled by the largest, summed compensated
// in ascending j (the largest pair alone is at least 1/4, so the sum keeps
// full relative precision).
void ExactOutput(const ExtendedPmf& x, const ExtendedPmf& y, int64_t k,
                 double* m, int64_t* e) {
  const int64_t largest = LargestPair(x, y, k);
  if (largest < kNoPair) {
    *m = 0.0;
    *e = kZeroExponent;
    return;
  }
  const PairRange p =
      Pairs(k, static_cast<int64_t>(x.size()), static_cast<int64_t>(y.size()));
  NeumaierSum s;
  for (int64_t j = p.lo; j <= p.hi; ++j) {
    s.Add(Scale(x.mantissa[j] * y.mantissa[k - j],
                x.exponent[j] + y.exponent[k - j] - largest));
  }
  int ee = 0;
  *m = std::frexp(s.Total(), &ee);
  *e = largest + ee;
}

// The multiply-add loop of a tile: sums[t] = sum_q xr[q] ys[t + q] for t <
// round_up(kt, kLanes), q < J, in ascending q, in blocks (kInnerBlock steps
// into registers, kOuterBlock into a middle sum, then the total), so that
// each sum carries at most 64 + 64 + J / 4096 roundings. GCC's vector
// extension in SSE2's width (wider vectors spill on x86-64's baseline):
// plain multiplies and adds, no contraction, the same bits everywhere.
typedef double Vec2 __attribute__((vector_size(16)));
void TileSums(const double* xr, int64_t J, const double* ys, int64_t kt,
              double* sums) {
  constexpr int kVecs = kLanes / 2;
  for (int64_t t0 = 0; t0 < kt; t0 += kLanes) {
    Vec2 total[kVecs] = {};
    for (int64_t qo = 0; qo < J; qo += kOuterBlock) {
      const int64_t qo_end = std::min(J, qo + kOuterBlock);
      Vec2 mid[kVecs] = {};
      for (int64_t qi = qo; qi < qo_end; qi += kInnerBlock) {
        const int64_t qi_end = std::min(qo_end, qi + kInnerBlock);
        Vec2 acc[kVecs] = {};
        const double* y = ys + t0;
        for (int64_t q = qi; q < qi_end; ++q) {
          const Vec2 xv = {xr[q], xr[q]};
#pragma GCC unroll 8
          for (int v = 0; v < kVecs; ++v) {
            Vec2 yv;
            std::memcpy(&yv, y + q + 2 * v, sizeof(yv));
            acc[v] += xv * yv;
          }
        }
#pragma GCC unroll 8
        for (int v = 0; v < kVecs; ++v) mid[v] += acc[v];
      }
#pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v) total[v] += mid[v];
    }
    std::memcpy(sums + t0, total, sizeof(total));
  }
}

struct TileBuffers {
  std::vector<double> xr, ys, sums;
};

// Outputs [k0, k0 + kt) of r = x (*) y (x the shorter operand). Returns
// how many of them were recomputed on their own (ExactOutput).
int64_t ConvolveTile(const ExtendedPmf& x, const ExtendedPmf& y, int64_t k0,
                     int64_t kt, TileBuffers* buf, ExtendedPmf* r) {
  const int64_t lx = static_cast<int64_t>(x.size());
  const int64_t ly = static_cast<int64_t>(y.size());
  const int64_t jlo = std::max<int64_t>(0, k0 - (ly - 1));
  const int64_t jhi = std::min(lx - 1, k0 + kt - 1);
  const int64_t J = jhi - jlo + 1;
  const int64_t padded = (kt + kLanes - 1) / kLanes * kLanes;
  const int64_t ibase = k0 - jhi;  // the y index of ys[0]
  const int64_t ny = padded + J - 1;

  // The tilt, sigma = a / 2^kTiltBits bits per index (enumerate_tilt.h):
  // the secant slope of the largest pairs across the tile, in whole bits
  // unless that leaves a wide gap.
  const int64_t first = kt > 1 ? LargestPair(x, y, k0) : kNoPair - 1;
  const int64_t last = kt > 1 ? LargestPair(x, y, k0 + kt - 1) : kNoPair - 1;
  const bool tilted = first >= kNoPair && last >= kNoPair;
  int64_t a = tilted ? WholeTiltNumerator(first, last, kt) : 0;
  // Each window's largest exponent tilted by the tilt's whole part (zeros'
  // exponents are far below any other, so they never lead unless the window
  // is all zeros).
  const int64_t ilo = std::max<int64_t>(0, ibase);
  const int64_t ihi = std::min(ly - 1, ibase + ny - 1);
  int64_t ex = 0, ey = 0;
  auto window_tops = [&] {
    ex = std::numeric_limits<int64_t>::min();
    for (int64_t j = jlo; j <= jhi; ++j) {
      ex = std::max(ex, x.exponent[j] - TiltWhole(a * j));
    }
    ey = std::numeric_limits<int64_t>::min();
    for (int64_t i = ilo; i <= ihi; ++i) {
      ey = std::max(ey, y.exponent[i] - TiltWhole(a * i));
    }
  };
  window_tops();
  if (tilted && NeedsFractionalTilt(ex, ey, first, last, k0, kt, a)) {
    a = FractionalTiltNumerator(first, last, kt);
    window_tops();
  }
  // The windows as plain doubles in [0, 1): x reversed, y zero-padded; the
  // whole part of the tilt in the exponent, its fraction a table multiply.
  buf->xr.resize(J);
  for (int64_t q = 0; q < J; ++q) {
    const int64_t j = jhi - q;
    buf->xr[q] = Scale(x.mantissa[j], x.exponent[j] - TiltWhole(a * j) - ex) *
                 kTiltFactor[TiltFraction(a * j)];
  }
  buf->ys.assign(ny, 0.0);
  for (int64_t i = ilo; i <= ihi; ++i) {
    buf->ys[i - ibase] =
        Scale(y.mantissa[i], y.exponent[i] - TiltWhole(a * i) - ey) *
        kTiltFactor[TiltFraction(a * i)];
  }
  buf->sums.resize(padded);
  TileSums(buf->xr.data(), J, buf->ys.data(), kt, buf->sums.data());

  int64_t fallbacks = 0;
  for (int64_t t = 0; t < kt; ++t) {
    const int64_t k = k0 + t;
    const double s = buf->sums[t];
    if (s >= kAccurate) {
      // Un-tilt: 2^(a k / 2^kTiltBits), the whole part into the exponent,
      // the fraction c as 2^(c / 32) = 2 kTiltFactor[32 - c].
      const int c = TiltFraction(a * k);
      int ee = 0;
      r->mantissa[k] =
          std::frexp(c == 0 ? s : s * (2 * kTiltFactor[kTiltSteps - c]), &ee);
      r->exponent[k] = ex + ey + TiltWhole(a * k) + ee;
    } else {
      ++fallbacks;
      ExactOutput(x, y, k, &r->mantissa[k], &r->exponent[k]);
    }
  }
  return fallbacks;
}

}  // namespace

void FromLinear(double v, double* m, int64_t* e) {
  if (v == 0) {
    *m = 0.0;
    *e = kZeroExponent;
    return;
  }
  int ee = 0;
  *m = std::frexp(v, &ee);
  *e = ee;
}

void FromLog(double v, double* m, int64_t* e) {
  if (v == -kInf) {
    *m = 0.0;
    *e = kZeroExponent;
    return;
  }
  // v = n ln 2 + r, r in about [0, ln 2): exp(v) = exp(r) 2^n.
  const double n = std::floor(v * kInvLn2);
  const double r = (v - n * kLn2Hi) - n * kLn2Lo;
  int ee = 0;
  *m = std::frexp(std::exp(r), &ee);
  *e = static_cast<int64_t>(n) + ee;
}

double ToLinear(double m, int64_t e) {
  if (m == 0) return 0.0;
  if (e > 2000) return kInf;
  if (e < -2000) return 0.0;
  return std::ldexp(m, static_cast<int>(e));
}

double ToLog(double m, int64_t e) {
  if (m == 0) return -kInf;
  const double n = static_cast<double>(e);
  return n * kLn2Hi + (std::log(m) + n * kLn2Lo);
}

int64_t ConvolveExtended(const ExtendedPmf& a, const ExtendedPmf& b,
                         ExtendedPmf* r) {
  const bool a_shorter = a.size() <= b.size();
  const ExtendedPmf& x = a_shorter ? a : b;
  const ExtendedPmf& y = a_shorter ? b : a;
  const int64_t k_total = static_cast<int64_t>(x.size() + y.size()) - 1;
  r->mantissa.resize(k_total);
  r->exponent.resize(k_total);
  TileBuffers buf;
  int64_t fallbacks = 0;
  for (int64_t k0 = 0; k0 < k_total; k0 += kTile) {
    fallbacks += ConvolveTile(x, y, k0, std::min(kTile, k_total - k0), &buf, r);
  }
  return fallbacks;
}

bool ConvolveLog(const std::vector<double>& a, const std::vector<double>& b,
                 std::vector<double>* r) {
  const int64_t m = static_cast<int64_t>(a.size());
  const int64_t n = static_cast<int64_t>(b.size());
  r->resize(m + n - 1);
  for (int64_t k = 0; k < m + n - 1; ++k) {
    const PairRange range = Pairs(k, m, n);
    double max = -kInf;
    int64_t arg_max = range.lo;
    for (int64_t j = range.lo; j <= range.hi; ++j) {
      const double v = a[j] + b[k - j];
      if (v > max) {
        max = v;
        arg_max = j;
      }
    }
    if (!std::isfinite(max)) {
      if (max == kInf) return false;
      (*r)[k] = max;
      continue;
    }
    NeumaierSum s;
    for (int64_t j = range.lo; j <= range.hi; ++j) {
      if (j == arg_max) continue;
      // exp(-inf) = 0 for the zero-probability pairs.
      s.Add(std::exp((a[j] + b[k - j]) - max));
    }
    (*r)[k] = max + std::log1p(s.Total());
  }
  return true;
}

}  // namespace sampler::kernels::enumerate_internal
