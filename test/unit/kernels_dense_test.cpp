// runtime/kernels_dense.hpp: the GELU kernels' tanh approximation against std::tanh.
#include <doctest/doctest.h>
#include <tensoropt/runtime/kernels_dense.hpp>
#include <cmath>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace kernels_dense_test_file {

namespace k = tensoropt::runtime::kernels;

TEST_CASE("fast_tanh is within 3e-7 of std::tanh, odd, and saturates") {
  double worst = 0;
  for (int i = -200000; i <= 200000; ++i) {
    const float x = float(i) * 1e-4f;
    worst = std::max(worst, std::fabs(double(k::fast_tanh(x)) - double(std::tanh(x))));
    CHECK_EQ(k::fast_tanh(-x), -k::fast_tanh(x));
  }
  CHECK(worst < 3e-7);
  CHECK(k::fast_tanh(100.f) == doctest::Approx(1.f).epsilon(1e-6));
  CHECK(k::fast_tanh(-1e30f) == doctest::Approx(-1.f).epsilon(1e-6));
  CHECK(k::fast_tanh(0.f) == 0.f);
}

TEST_CASE("gelu_grad is the derivative of gelu") {
  for (float x = -6.f; x <= 6.f; x += 0.37f) {
    CAPTURE(x);
    const double h = 1e-3;
    const double fd = (double(k::gelu(float(x + h))) - double(k::gelu(float(x - h)))) / (2 * h);
    CHECK(double(k::gelu_grad(x)) == doctest::Approx(fd).epsilon(2e-3));
  }
}
}  // namespace kernels_dense_test_file
