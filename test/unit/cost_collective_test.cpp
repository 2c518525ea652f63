// cost/device, cost/cluster, cost/collective: presets, lookup, builder, and the
// alpha-beta ring formulas, flat and hierarchical.
#include <tensoropt/cost/collective.hpp>
#include <doctest/doctest.h>
#include "cost_test_graphs.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace cost_collective_test_file {

using namespace tensoropt;

TEST_CASE("device presets: lookup by name, list, unknown names") {
  CHECK(gpus::list().size() == 7);
  for (auto n : gpus::list()) CHECK(gpus::find(n).name == n);
  CHECK(gpus::find("a100-80gb").capacity.value == 80 * gib);
  CHECK(gpus::find("h200-141gb").memory_bw.value > gpus::find("h100-80gb").memory_bw.value);
  CHECK(gpus::find("v100-16gb").peak(dtype::bf16).value == 125e12);
  CHECK(gpus::find("a100-40gb").peak(dtype::fp32).value == 19.5e12);
  CHECK_THROWS_WITH_AS(gpus::find("a100"), doctest::Contains("valid names: v100-16gb v100-32gb"), invalid_argument);
  static_assert(gpus::find("h100-80gb").peak(dtype::bf16).value == 989e12);
}

TEST_CASE("device: GEMM efficiency curve and calibration hook") {
  const device& d = gpus::a100_80gb;
  CHECK(d.gemm_efficiency(d.gemm_half_flops) == doctest::Approx(d.gemm_max_efficiency / 2));
  CHECK(d.gemm_efficiency(1e6) < d.gemm_efficiency(1e9));
  CHECK(d.gemm_efficiency(1e15) == doctest::Approx(d.gemm_max_efficiency).epsilon(1e-3));
  constexpr device c = device::calibrated("my-cpu", flop_rate(2e11), gb_per_s(30), bytes(64 * gib));
  CHECK(c.peak(dtype::bf16).value == 2e11);
  CHECK(c.gemm_efficiency(10) == 1.0);
  CHECK_THROWS_AS(device::calibrated("x", flop_rate(0), gb_per_s(1), bytes(1)), invalid_argument);
}

TEST_CASE("cluster builder") {
  constexpr auto c = cluster::nodes(2).gpus_per_node(8).gpu(gpus::a100_80gb);
  static_assert(c.devices() == 16 && c.mesh == device_mesh(2, 8));
  CHECK(c.intra_link == gpus::a100_80gb.nvlink);
  CHECK(c.inter_link == gpus::a100_80gb.network);
  CHECK(c.describe() == "2 x 8 x a100-80gb");
  const auto d = c.inter({gb_per_s(12.5), seconds(1e-5)});
  CHECK(d.level_link(0).bw.value == 12.5e9);
  CHECK_THROWS_AS(cluster::nodes(0), invalid_argument);
  CHECK_THROWS_AS(c.intra({bandwidth(0), seconds(0)}), invalid_argument);
}

TEST_CASE("ring collectives on one level match the alpha-beta formulas") {
  const auto c = cluster::nodes(4).gpus_per_node(8).gpu(gpus::h100_80gb);
  const double S = 3.0e8, B1 = c.intra_link.bw.value, a1 = c.intra_link.latency.value;
  const double B0 = c.inter_link.bw.value, a0 = c.inter_link.latency.value;
  for (index_t n : {2, 4, 8}) {
    const comm_group g{{1, n}};
    CHECK(all_reduce(g, bytes(S), c).value == doctest::Approx(2.0 * (n - 1) / n * S / B1 + 2.0 * (n - 1) * a1));
    CHECK(all_gather(g, bytes(S), c).value == doctest::Approx(1.0 * (n - 1) / n * S / B1 + (n - 1) * a1));
    CHECK(reduce_scatter(g, bytes(S), c).value == doctest::Approx(1.0 * (n - 1) / n * S / B1 + (n - 1) * a1));
    CHECK(all_to_all(g, bytes(S), c).value == doctest::Approx(1.0 * (n - 1) / n * S / B1 + (n - 1) * a1));
  }
  const comm_group g0{{4, 1}};
  CHECK(all_reduce(g0, bytes(S), c).value == doctest::Approx(2.0 * 3 / 4 * S / B0 + 2.0 * 3 * a0));
  CHECK(all_reduce(comm_group{{1, 1}}, bytes(S), c).value == 0);
}

TEST_CASE("collectives over both levels are hierarchical") {
  const auto c = cluster::nodes(4).gpus_per_node(8).gpu(gpus::a100_80gb);
  const double S = 1.0e9, B1 = c.intra_link.bw.value, a1 = c.intra_link.latency.value;
  const double B0 = c.inter_link.bw.value, a0 = c.inter_link.latency.value;
  const double n0 = 4, n1 = 8;
  const comm_group g{{4, 8}};
  const double rs1 = (n1 - 1) / n1 * S / B1 + (n1 - 1) * a1;
  const double ag1 = rs1;
  const double ar0 = 2 * (n0 - 1) / n0 * (S / n1) / B0 + 2 * (n0 - 1) * a0;
  CHECK(all_reduce(g, bytes(S), c).value == doctest::Approx(rs1 + ar0 + ag1));
  const double ag0 = (n0 - 1) / n0 * (S / n1) / B0 + (n0 - 1) * a0;
  CHECK(all_gather(g, bytes(S), c).value == doctest::Approx(ag0 + ag1));
  CHECK(reduce_scatter(g, bytes(S), c).value == doctest::Approx(rs1 + ag0));
  const double a2a = (n1 - 1) / n1 * S / B1 + (n1 - 1) * a1 + (n0 - 1) / n0 * S / B0 + (n0 - 1) * a0;
  CHECK(all_to_all(g, bytes(S), c).value == doctest::Approx(a2a));
  // hierarchical all-reduce beats a flat ring over the slow link
  CHECK(all_reduce(g, bytes(S), c).value < 2 * 31.0 / 32 * S / B0);
}
}  // namespace cost_collective_test_file
