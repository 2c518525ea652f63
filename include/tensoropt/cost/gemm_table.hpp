// Measured GEMM efficiency by contraction length: what a calibrated device knows
// about its GEMMs' shapes, used by cost/gemm_shape.hpp instead of the fitted
// K / (K + K0) where it is present.
//
// A GPU calibration measures GEMM throughput by shape (m, n, k), one dtype at a
// time (gemm_rate rows: the "gemm-shapes" of a device file, plan/device_file.hpp).
// The cost model charges a GEMM of f FLOPs and contraction K at
//     peak(dtype) * gemm_efficiency(f) * factor(K)
// (device::gemm_efficiency: the curve over FLOPs). A measured row therefore gives
// the factor that makes the model predict exactly the measured time:
//     factor(K) = rate / (peak(dtype) * gemm_efficiency(2 m n k)),
// one point per (dtype, K). Between points the factor is interpolated linearly in
// log K; above the largest measured K it stays at the last point's (efficiency
// saturates); below the smallest it follows the fitted shape scaled to meet the
// first point, factor(K0min) * kf(K) / kf(K0min) with kf(K) = K / (K + K0)
// (device::gemm_k_factor; 1 when the device has K0 = 0, then it stays flat).
//
// A device carries its table by pointer (device::gemm_measured), so devices stay
// literal types; device_file.hpp keeps the tables it makes alive for the process.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "device.hpp"

namespace tensoropt {

/// One measured GEMM: C (m x n) = A (m x k) B (k x n) in `type`, `flops` FLOP/s.
struct gemm_rate {
  dtype type = dtype::bf16;
  std::int64_t m = 0, n = 0, k = 0;
  double flops = 0;
  friend bool operator==(const gemm_rate&, const gemm_rate&) = default;
};

/// The factor points of one dtype, ascending in k (see the file comment).
struct gemm_k_curve {
  std::vector<double> k, factor;
  friend bool operator==(const gemm_k_curve&, const gemm_k_curve&) = default;

  bool empty() const { return k.empty(); }
  /// The factor of a GEMM of contraction `kk` on `dev` (rate_fraction as in
  /// device::gemm_k_factor). Precondition: !empty().
  double at(double kk, const device& dev, double rate_fraction = 1) const {
    if (kk <= k.front()) return factor.front() * dev.gemm_k_factor(kk, rate_fraction) /
                                dev.gemm_k_factor(k.front(), rate_fraction);
    if (kk >= k.back()) return factor.back();
    const auto hi = std::size_t(std::upper_bound(k.begin(), k.end(), kk) - k.begin());
    const double t = std::log(kk / k[hi - 1]) / std::log(k[hi] / k[hi - 1]);
    return factor[hi - 1] + t * (factor[hi] - factor[hi - 1]);
  }
};

/// A device's measured factors: bf16 (also used for fp16) and fp32.
struct gemm_table {
  gemm_k_curve half, fp32;
  friend bool operator==(const gemm_table&, const gemm_table&) = default;

  /// The curve of GEMMs computed in `t`; null when none was measured.
  const gemm_k_curve* of(dtype t) const {
    const gemm_k_curve& c = t == dtype::fp32 ? fp32 : half;
    return c.empty() ? nullptr : &c;
  }
};

/// The table of `rates` on device `dev` (its peaks and FLOPs curve, without a
/// table). Throws invalid_argument on a non-positive figure or two rows of one
/// dtype and contraction length (the model has one factor per K).
inline gemm_table make_gemm_table(std::span<const gemm_rate> rates, const device& dev) {
  gemm_table t;
  std::vector<gemm_rate> sorted(rates.begin(), rates.end());
  std::sort(sorted.begin(), sorted.end(), [](const gemm_rate& a, const gemm_rate& b) { return a.k < b.k; });
  for (const auto& r : sorted) {
    if (!(r.m > 0 && r.n > 0 && r.k > 0 && r.flops > 0))
      throw invalid_argument("GEMM table: a row of " + std::string(name_of(r.type)) +
                             " has a size or rate that is not positive");
    gemm_k_curve& c = r.type == dtype::fp32 ? t.fp32 : t.half;
    if (!c.k.empty() && c.k.back() == double(r.k))
      throw invalid_argument("GEMM table: two " + std::string(name_of(r.type)) + " rows with k = " +
                             std::to_string(r.k) + "; keep one shape per contraction length");
    const double f = 2.0 * double(r.m) * double(r.n) * double(r.k);
    const double peak = dev.peak(r.type).value;
    if (!(peak > 0)) throw invalid_argument("GEMM table: the device has no " + std::string(name_of(r.type)) + " peak");
    c.k.push_back(double(r.k));
    c.factor.push_back(r.flops / (peak * dev.gemm_efficiency(f)));
  }
  return t;
}

}  // namespace tensoropt
