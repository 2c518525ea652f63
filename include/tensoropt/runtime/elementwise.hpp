// Element-wise math shared by the CPU kernels and the CUDA kernels: GELU (with its
// clamped rational tanh), ReLU, the counter-based random stream behind dropout and
// parameter initialization, the dropout keep-scale, and the SGD / Adam updates of
// one parameter element.
//
// Every function is `TENSOROPT_HOST_DEVICE` and uses only +, -, *, /, comparisons,
// integer mixing and sqrtf, so one definition serves g++ and nvcc. The CPU kernels
// call these functions, and the CUDA kernels call the same ones, so:
//   - dropout masks are equal bit for bit on every backend and under any sharding
//     (the mask of a global element depends on (seed, stream, index) only: the
//     splitmix64 finalizer applied three times, top 24 bits as a uniform in [0, 1));
//   - GELU, ReLU and the optimizer steps compute the same formulas in the same order.
// Bitwise equality of GELU / Adam between CPU and GPU additionally needs the GPU
// build not to contract a*b+c into FMA (nvcc does so by default, `-fmad=true`);
// with contraction the results differ by a few ulp, within the fp32 tolerance of
// the kernel tests (rtol 1e-5). Dropout masks are integer arithmetic plus one exact
// conversion and are exact either way.
//
// This header includes nothing of the runtime (no BLAS, no threads): a `.cu`
// translation unit can include it without OpenBLAS.
#pragma once
#include <cmath>
#include <cstdint>
#include "../core/config.hpp"

namespace tensoropt::runtime {

namespace detail {
/// splitmix64's finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mix.
TENSOROPT_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace detail

/// A uniform number in [0, 1) from (seed, stream, index) alone: counter-based, so
/// every device draws the same number for the same global element. The top 24 bits
/// of the hash scaled by 2^-24: exact in float.
TENSOROPT_HOST_DEVICE inline float uniform01(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t h = detail::mix64(seed ^ detail::mix64(stream ^ detail::mix64(index)));
  return float(h >> 40) * (1.0f / 16777216.0f);
}

/// The random stream of op `op_index` at training step `step`.
TENSOROPT_HOST_DEVICE inline std::uint64_t dropout_stream(std::uint64_t step, std::uint64_t op_index) {
  return (step << 24) ^ op_index;
}

/// A dropout mask's constants, computed once on the host from the drop
/// probability p (trivially copyable: a kernel parameter).
struct dropout_mask {
  std::uint64_t seed = 0;
  std::uint64_t stream = 0;
  float p = 0.f;      ///< drop probability as float (the comparison threshold)
  float keep = 1.f;   ///< 1 / (1 - p), rounded once from double
  bool active = false;

  /// The mask of (seed, stream) with drop probability `p` (p <= 0: identity).
  static dropout_mask make(std::uint64_t seed, std::uint64_t stream, double p) {
    dropout_mask m;
    m.seed = seed;
    m.stream = stream;
    m.active = p > 0;
    m.p = float(p);
    m.keep = m.active ? float(1.0 / (1.0 - p)) : 1.f;
    return m;
  }
  /// Keep-scale at a global element: 0 (dropped) or 1 / (1 - p).
  TENSOROPT_HOST_DEVICE float scale(std::uint64_t global_index) const {
    if (!active) return 1.f;
    return uniform01(seed, stream, global_index) < p ? 0.f : keep;
  }
};

namespace kernels {

/// tanh as a clamped 13/6 rational function (the approximation Eigen uses for
/// float): within 3e-7 of std::tanh over [-20, 20] (checked by kernels_dense_test),
/// branch-free and inlined, so GELU loops vectorize. glibc's tanhf (via expm1f) was
/// 37 % of a 1-device train_gpt step under perf; this one is ~3.7x faster per element.
/// The clamp is written as std::min(c, std::max(-c, x)) evaluates (NaN maps to -c).
TENSOROPT_HOST_DEVICE inline float fast_tanh(float x) {
  const float c = 7.90531110763549805f;
  x = -c < x ? x : -c;
  x = x < c ? x : c;
  const float x2 = x * x;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return p * x / q;
}
/// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
TENSOROPT_HOST_DEVICE inline float gelu(float x) {
  const float k = 0.7978845608028654f;
  return 0.5f * x * (1.f + fast_tanh(k * (x + 0.044715f * x * x * x)));
}
/// d gelu / dx.
TENSOROPT_HOST_DEVICE inline float gelu_grad(float x) {
  const float k = 0.7978845608028654f;
  const float u = k * (x + 0.044715f * x * x * x), t = fast_tanh(u);
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * k * (1.f + 3.f * 0.044715f * x * x);
}
TENSOROPT_HOST_DEVICE inline float relu(float x) { return x > 0 ? x : 0.f; }
/// dx of ReLU given x and dy (0 at x <= 0).
TENSOROPT_HOST_DEVICE inline float relu_grad(float x, float dy) { return x > 0 ? dy : 0.f; }

/// Layer / batch norm's normalized value times gain plus bias.
TENSOROPT_HOST_DEVICE inline float norm_affine(float x, float mean, float rstd, float gain, float bias) {
  return (x - mean) * rstd * gain + bias;
}

}  // namespace kernels

/// The scalars of one optimizer step (trivially copyable: a kernel parameter).
/// c1, c2 are Adam's bias corrections 1 - beta^t, computed once on the host.
struct optimizer_step {
  float lr, momentum, beta1, beta2, eps, c1, c2;
  /// The scalars of step t (1-based): c1 = 1 - beta1^t, c2 = 1 - beta2^t in float.
  static optimizer_step at(float lr, float momentum, float beta1, float beta2, float eps, std::int64_t t) {
    return {lr, momentum, beta1, beta2, eps, 1.f - std::pow(beta1, float(t)), 1.f - std::pow(beta2, float(t))};
  }
};

/// SGD with momentum on one element: v = momentum v + g; w -= lr v.
TENSOROPT_HOST_DEVICE inline void sgd_element(const optimizer_step& s, float& w, float& v, float g) {
  v = s.momentum * v + g;
  w -= s.lr * v;
}
/// Adam on one element (Kingma & Ba 2015, bias-corrected):
/// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; w -= lr (m / c1) / (sqrt(v / c2) + eps).
TENSOROPT_HOST_DEVICE inline void adam_element(const optimizer_step& s, float& w, float& m, float& v, float g) {
  m = s.beta1 * m + (1.f - s.beta1) * g;
  v = s.beta2 * v + (1.f - s.beta2) * g * g;
  w -= s.lr * (m / s.c1) / (sqrtf(v / s.c2) + s.eps);
}

}  // namespace tensoropt::runtime
