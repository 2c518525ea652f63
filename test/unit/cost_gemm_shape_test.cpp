// cost/gemm_shape: the contraction lengths of a linear's three GEMMs, the K / (K + K0)
// factor against the measured cuBLAS figures it comes from, and what it does to an
// op's time.
#include <tensoropt/cost/gemm_shape.hpp>
#include <tensoropt/cost/op_cost.hpp>
#include <doctest/doctest.h>
#include <cmath>
#include "cost_test_graphs.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace cost_gemm_shape_test_file {

using namespace tensoropt;

TEST_CASE("gemm shape: contraction lengths of forward, data gradient and weight gradient") {
  // mlp(64, {1024, 4096}): op 1 is x[64, 1024] W[1024, 4096] -> y[64, 4096]
  const op_graph g = testing::mlp(64, {1024, 4096});
  const op_node& fc = g.ops[1];
  REQUIRE(shaped_gemm(g, fc));
  const auto k = contractions_of(g, fc, op_config{});
  CHECK(k.forward == 1024);     // input features
  CHECK(k.data_grad == 4096);   // output features
  CHECK(k.weight_grad == 64);   // samples
  // local extents: the batch split over 4 devices shortens only the weight gradient's
  op_config dp;
  dp.degree[1][0] = 4;
  const auto kd = contractions_of(g, fc, dp);
  CHECK(kd.forward == 1024);
  CHECK(kd.data_grad == 4096);
  CHECK(kd.weight_grad == 16);
  // a row-parallel split of the input features shortens the forward contraction
  op_config tp;
  tp.degree[1][1] = 4;
  CHECK(contractions_of(g, fc, tp).forward == 256);
  // non-linears are not shaped
  for (const auto& op : g.ops)
    if (op.kind != op_kind::linear) CHECK(!shaped_gemm(g, op));
}

TEST_CASE("gemm shape: K0 reproduces the measured cuBLAS table it comes from") {
  // OpenXLA's H100 matmul table (sm_90, bf16): achieved TFLOP/s at the largest M, N
  // for contraction K (gemm_shape.hpp's file comment); peak 989 TFLOP/s.
  struct point {
    double k, tflops;
  };
  const point table[] = {{256, 503.87}, {512, 619.86}, {1024, 678.72}, {2048, 763.01}, {4096, 783.33}};
  const device& d = gpus::h100_80gb;
  REQUIRE(d.gemm_k0 == 157);
  // E * K / (K + K0) with E = 0.82, the value the same fit gives
  for (const auto& p : table) {
    CAPTURE(p.k);
    const double measured = p.tflops / 989, modelled = 0.82 * d.gemm_k_factor(p.k);
    CHECK(std::abs(modelled - measured) <= 0.03);
  }
  // the ratio of the longest to the shortest contraction fixes K0: within 1 %
  const double ratio = d.gemm_k_factor(4096) / d.gemm_k_factor(256);
  CHECK(std::abs(ratio / (783.33 / 503.87) - 1) <= 0.01);
  // every GPU preset carries it; a calibrated device (measured rates) does not
  for (const auto* p : gpus::all)
    if (p->name != "cpu") CHECK(p->gemm_k0 == 157);
  CHECK(gpus::cpu.gemm_k0 == 0);
  CHECK(gpus::cpu.gemm_k_factor(64) == 1);
}

TEST_CASE("gemm shape: an op's GEMM time divides by the factors") {
  const op_graph g = testing::mlp(64, {1024, 4096});
  const cluster one(device_mesh(1, 1), gpus::a100_80gb);
  const device& d = one.gpu_spec;
  const auto f = shape_factors(g, g.ops[1], op_config{}, d);
  CHECK(f.forward == doctest::Approx(1024.0 / (1024 + 157)));
  const double dgrad = 4096.0 / (4096 + 157), wgrad = 64.0 / (64 + 157);
  CHECK(f.backward == doctest::Approx(2 / (1 / dgrad + 1 / wgrad)));
  // an fp32 GEMM (CUDA cores) hides the same per-tile cost in fewer steps of its
  // slower main loop: K0 * peak(fp32) / peak(bf16)
  const device& v = gpus::v100_32gb;
  const double k0_fp32 = 157 * v.peak_fp32.value / v.peak_half.value;
  CHECK(k0_fp32 == doctest::Approx(19.7).epsilon(0.01));
  CHECK(shape_factors(g, g.ops[1], op_config{}, v, dtype::fp32).forward ==
        doctest::Approx(1024.0 / (1024 + k0_fp32)));
  CHECK(shape_factors(g, g.ops[1], op_config{}, v, dtype::fp32).forward >
        shape_factors(g, g.ops[1], op_config{}, v, dtype::bf16).forward);
  // the same op on a device without the factor is faster, by no more than the factors
  device flat = d;
  flat.gemm_k0 = 0;
  const cluster one_flat(device_mesh(1, 1), flat);
  const double shaped = cost_op(g, 1, op_config{}, one).compute.value;
  const double plain = cost_op(g, 1, op_config{}, one_flat).compute.value;
  CHECK(shaped > plain);
  CHECK(shaped <= plain / f.backward);
}
}  // namespace cost_gemm_shape_test_file
