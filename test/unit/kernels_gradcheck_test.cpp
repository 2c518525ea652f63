// Every kernel's backward agrees with finite differences of the loss (one device; the sharded runs are
// checked against one device elsewhere, so this closes the loop).
#include <doctest/doctest.h>
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace kernels_gradcheck_test_file {

using namespace rt_test;

namespace {
template <class M>
void gradcheck() {
  const auto g = to::lower<M>();
  rt::local_world w(1);
  rt::optimizer_options sgd;
  sgd.lr = 1.f;
  sgd.momentum = 0.f;
  rt::executor ex(g, data_parallel(g, 1), w.comm(0), sgd);
  const auto b = make_batch(g, 9);
  auto loss = [&] {  // the loss at the current weights; no update (restored), same dropout masks
    std::vector<std::vector<float>> saved;
    for (int t : ex.parameters()) saved.push_back(ex.gather(t, -1));
    ex.set_steps(0);
    const float l = ex.step(b);
    std::size_t k = 0;
    for (int t : ex.parameters()) ex.scatter(t, -1, saved[k++]);
    return double(l);
  };
  // Analytical gradient: one SGD step with lr 1 and no momentum moves w by -g.
  std::vector<std::vector<float>> w0, grad;
  for (int t : ex.parameters()) w0.push_back(ex.gather(t, -1));
  ex.set_steps(0);
  ex.step(b);
  std::size_t k = 0;
  for (int t : ex.parameters()) {
    auto w1 = ex.gather(t, -1);
    std::vector<float> gr(w1.size());
    for (std::size_t i = 0; i < w1.size(); ++i) gr[i] = w0[k][i] - w1[i];
    grad.push_back(gr);
    ex.scatter(t, -1, w0[k]);
    ++k;
  }
  // Momentum 0: the optimizer keeps no state between steps. Check the
  // largest-gradient element of every parameter tensor with central differences.
  int checked = 0;
  k = 0;
  for (int t : ex.parameters()) {
    const auto& gr = grad[k];
    std::size_t i = 0;
    for (std::size_t j = 1; j < gr.size(); ++j)
      if (std::fabs(gr[j]) > std::fabs(gr[i])) i = j;
    if (std::fabs(gr[i]) > 1e-3f) {
      const double eps = 2e-3 * std::max(1.0, std::fabs(double(w0[k][i])));
      auto at = [&](double v) {
        auto x = w0[k];
        x[i] = float(v);
        ex.scatter(t, -1, x);
        const double l = loss();
        ex.scatter(t, -1, w0[k]);
        return l;
      };
      const double num = (at(w0[k][i] + eps) - at(w0[k][i] - eps)) / (2 * eps);
      INFO("parameter " << g.tensors[std::size_t(t)].name << " element " << i);
      CHECK(std::fabs(num - gr[i]) <= 0.03 * std::fabs(gr[i]) + 3e-4);
      ++checked;
    }
    ++k;
  }
  CHECK(checked >= 3);
}
}  // namespace

TEST_CASE("gradients: MLP (linear, relu, gelu, dropout, softmax cross-entropy)") { gradcheck<mlp>(); }
TEST_CASE("gradients: GPT (embedding + positions, layer norm, attention, tied head)") { gradcheck<gpt>(); }
TEST_CASE("gradients: CNN (conv2d, batch norm, pools, concat, global pool)") { gradcheck<cnn>(); }
TEST_CASE("gradients: MoE (gate, dispatch, experts, combine)") { gradcheck<moe>(); }
}  // namespace kernels_gradcheck_test_file
