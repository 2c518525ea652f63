// runtime/elementwise.hpp: the host-device math shared by the CPU and CUDA kernels,
// tested on the CPU (the GPU tests compare the CUDA kernels against the same code).
#include <doctest/doctest.h>
#include <tensoropt/runtime/elementwise.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace runtime_elementwise_test_file {

namespace rt = tensoropt::runtime;
namespace k = tensoropt::runtime::kernels;

TEST_CASE("mix64 is splitmix64's finalizer (published first outputs of seed 0)") {
  // splitmix64 with state 0 yields mix64(0), mix64(golden), mix64(2 golden), ...
  // (Vigna's reference: 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f).
  CHECK_EQ(rt::detail::mix64(0), 0xe220a8397b1dcdafull);
  CHECK_EQ(rt::detail::mix64(0x9e3779b97f4a7c15ull), 0x6e789e6aa1b965f4ull);
  CHECK_EQ(rt::detail::mix64(2 * 0x9e3779b97f4a7c15ull), 0x06c45d188009454full);
}

TEST_CASE("uniform01 lies in [0, 1), is a multiple of 2^-24 and is uniform") {
  double sum = 0;
  int below_tenth = 0;
  constexpr int n = 200000;
  for (int i = 0; i < n; ++i) {
    const float u = rt::uniform01(7, 3, std::uint64_t(i));
    REQUIRE(u >= 0.f);
    REQUIRE(u < 1.f);
    REQUIRE(std::ldexp(double(u), 24) == std::floor(std::ldexp(double(u), 24)));
    sum += u;
    below_tenth += u < 0.1f;
  }
  CHECK(sum / n == doctest::Approx(0.5).epsilon(0.01));
  CHECK(double(below_tenth) / n == doctest::Approx(0.1).epsilon(0.03));
  CHECK(rt::uniform01(7, 3, 5) != rt::uniform01(7, 4, 5));  // streams differ
  CHECK(rt::uniform01(7, 3, 5) != rt::uniform01(8, 3, 5));  // seeds differ
}

TEST_CASE("dropout_mask: drops a fraction p, keeps with 1/(1-p), identity at p = 0") {
  const auto m = rt::dropout_mask::make(11, rt::dropout_stream(3, 5), 0.25);
  CHECK_EQ(m.stream, (std::uint64_t(3) << 24) ^ 5u);
  int dropped = 0;
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float s = m.scale(std::uint64_t(i));
    REQUIRE((s == 0.f || s == float(1.0 / 0.75)));
    CHECK_EQ(s == 0.f, rt::uniform01(11, m.stream, std::uint64_t(i)) < 0.25f);
    dropped += s == 0.f;
  }
  CHECK(double(dropped) / n == doctest::Approx(0.25).epsilon(0.03));
  const auto id = rt::dropout_mask::make(11, 1, 0.0);
  for (int i = 0; i < 100; ++i) CHECK_EQ(id.scale(std::uint64_t(i)), 1.f);
}

TEST_CASE("fast_tanh clamps like std::min(c, std::max(-c, x)), NaN included") {
  CHECK_EQ(k::fast_tanh(1e30f), k::fast_tanh(7.90531110763549805f));
  CHECK_EQ(k::fast_tanh(-1e30f), k::fast_tanh(-7.90531110763549805f));
  CHECK_EQ(k::fast_tanh(std::numeric_limits<float>::quiet_NaN()), k::fast_tanh(-7.90531110763549805f));
  CHECK(std::fabs(k::fast_tanh(0.5f) - std::tanh(0.5f)) < 3e-7);
}

TEST_CASE("relu and its gradient") {
  CHECK_EQ(k::relu(-2.f), 0.f);
  CHECK_EQ(k::relu(3.f), 3.f);
  CHECK_EQ(k::relu(0.f), 0.f);
  CHECK_EQ(k::relu_grad(-1.f, 5.f), 0.f);
  CHECK_EQ(k::relu_grad(0.f, 5.f), 0.f);
  CHECK_EQ(k::relu_grad(1.f, 5.f), 5.f);
}

TEST_CASE("gelu matches the erf form within the tanh approximation's error") {
  for (float x = -8.f; x <= 8.f; x += 0.01f) {
    const double exact = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    CHECK(std::fabs(double(k::gelu(x)) - exact) < 1e-3);
  }
}

TEST_CASE("sgd_element and adam_element follow their formulas") {
  const rt::optimizer_step s{0.1f, 0.9f, 0.9f, 0.999f, 1e-8f, 1.f - 0.9f, 1.f - 0.999f};
  float w = 1.f, v = 0.5f;
  rt::sgd_element(s, w, v, 2.f);
  CHECK(v == doctest::Approx(0.9 * 0.5 + 2));
  CHECK(w == doctest::Approx(1 - 0.1 * (0.9 * 0.5 + 2)));
  float wa = 1.f, m = 0.f, va = 0.f;
  rt::adam_element(s, wa, m, va, 0.5f);
  CHECK(m == doctest::Approx(0.05));
  CHECK(va == doctest::Approx(0.001 * 0.25));
  // first Adam step moves w by lr * sign(g) (bias correction makes m/c1 = g, v/c2 = g^2)
  CHECK(wa == doctest::Approx(1 - 0.1).epsilon(1e-5));
}

TEST_CASE("norm_affine") {
  CHECK_EQ(k::norm_affine(3.f, 1.f, 0.5f, 2.f, 0.25f), (3.f - 1.f) * 0.5f * 2.f + 0.25f);
}
}  // namespace runtime_elementwise_test_file
