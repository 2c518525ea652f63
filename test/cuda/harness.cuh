// A small harness for the CUDA tests (no doctest on the GPU machine): named cases,
// device arrays filled from host vectors in the storage type under test, outputs
// poisoned (all bits set: NaN in fp32 and bf16) before a kernel runs so an element
// it forgets to write fails, and the issue's tolerances. Exit code 77 = skipped
// (no device), 1 = a check failed.
#pragma once
#include <tensoropt/cuda/error.cuh>
#include <tensoropt/cuda/launch.cuh>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace harness {

using tensoropt::cuda::bf16;

inline int failures = 0;
inline std::string current;

#define CHECK_TRUE(cond)                                                                        \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::printf("  FAIL %s: %s (%s:%d)\n", harness::current.c_str(), #cond, __FILE__, __LINE__); \
      ++harness::failures;                                                                      \
    }                                                                                           \
  } while (0)

/// Tolerances of the kernel tests: fp32 rtol 1e-5 + atol 1e-6, bf16 rtol 1e-2 + atol 1e-3.
template <class T>
constexpr double rtol = std::is_same_v<T, float> ? 1e-5 : 1e-2;
template <class T>
constexpr double atol = std::is_same_v<T, float> ? 1e-6 : 1e-3;
template <class T>
constexpr bool is_bf16 = std::is_same_v<T, bf16>;
template <class T>
const char* type_name() {
  return is_bf16<T> ? "bf16" : "fp32";
}

/// Compares a device result with the reference: |got - want| <= atol + rtol |want|.
inline bool close(const char* what, const std::vector<float>& got, const std::vector<float>& want, double rt,
                  double at) {
  if (got.size() != want.size()) {
    std::printf("  FAIL %s %s: %zu values, expected %zu\n", current.c_str(), what, got.size(), want.size());
    ++failures;
    return false;
  }
  std::size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]), tol = at + rt * std::fabs(double(want[i]));
    if (!(err <= tol)) {  // NaN (a poisoned, unwritten element) fails too
      ++bad;
      if (!(err - tol <= worst_excess)) {
        worst_excess = std::isnan(err) ? 1e300 : err - tol;
        worst = i;
      }
    }
  }
  if (bad) {
    std::printf("  FAIL %s %s: %zu of %zu values off (worst [%zu] got %.9g want %.9g)\n", current.c_str(), what, bad,
                got.size(), worst, double(got[worst]), double(want[worst]));
    ++failures;
  }
  return bad == 0;
}
template <class T>
bool close(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
  return close(what, got, want, rtol<T>, atol<T>);
}
/// Bitwise equality (for results the kernels promise to reproduce exactly).
inline bool same_bits(const char* what, const std::vector<float>& a, const std::vector<float>& b) {
  const bool ok = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  if (!ok) {
    std::printf("  FAIL %s %s: not bit for bit equal\n", current.c_str(), what);
    ++failures;
  }
  return ok;
}

/// A device array of T made from floats (rounded to T) and read back as floats.
template <class T>
class darray {
 public:
  explicit darray(std::size_t n) : n_(n) {
    if (n_) TENSOROPT_CUDA_CHECK(cudaMalloc(&p_, n_ * sizeof(T)));
    poison();
  }
  explicit darray(const std::vector<float>& v) : darray(v.size()) { upload(v); }
  darray(const darray&) = delete;
  darray& operator=(const darray&) = delete;
  ~darray() {
    if (p_) (void)cudaFree(p_);
  }
  void upload(const std::vector<float>& v) {
    std::vector<T> h(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) h[i] = tensoropt::cuda::store<T>(v[i]);
    TENSOROPT_CUDA_CHECK(cudaMemcpy(p_, h.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    TENSOROPT_CUDA_CHECK(cudaDeviceSynchronize());  // kernels run on non-blocking streams
  }
  std::vector<float> get() const {
    TENSOROPT_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> h(n_);
    TENSOROPT_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<float> v(n_);
    for (std::size_t i = 0; i < n_; ++i) v[i] = tensoropt::cuda::load(h[i]);
    return v;
  }
  /// All bits set: NaN as fp32 and as bf16.
  void poison() {
    if (n_) TENSOROPT_CUDA_CHECK(cudaMemset(p_, 0xff, n_ * sizeof(T)));
    TENSOROPT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  T* data() { return p_; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

/// Uniform values in [lo, hi), rounded to bf16 when `bf` (so the reference sees
/// exactly the inputs the device sees).
inline std::vector<float> random(std::size_t n, float lo, float hi, bool bf, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
    if (bf) x = tensoropt::cuda::load(tensoropt::cuda::store<bf16>(x));
  }
  return v;
}

/// Runs the named case, counting an exception as a failure.
inline void run(const std::string& name, const std::function<void()>& body) {
  current = name;
  const int before = failures;
  try {
    body();
  } catch (const std::exception& e) {
    std::printf("  FAIL %s: threw %s\n", name.c_str(), e.what());
    ++failures;
  }
  std::printf("%s %s\n", failures == before ? "ok  " : "FAIL", name.c_str());
}

/// 77 (skipped) without a device, else 0 or 1 by the failures.
inline int skip_without_device() {
  if (tensoropt::cuda::device_count() == 0) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  return 0;
}
inline int finish() {
  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}

}  // namespace harness
