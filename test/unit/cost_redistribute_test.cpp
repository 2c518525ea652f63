// cost/redistribute: every kind of layout change against the collective formulas.
#include <tensoropt/cost/redistribute.hpp>
#include <doctest/doctest.h>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace cost_redistribute_test_file {

using namespace tensoropt;

namespace {
// A rank-2 tensor [b, h] layout on a mesh: split degrees per level, partial, replicate.
tensor_layout lay(const device_mesh& m, std::array<int, 2> s0, std::array<int, 2> s1, std::array<int, 2> p = {1, 1}) {
  tensor_layout t;
  const std::array<std::array<int, 2>, 2> s{s0, s1};
  for (int L = 0; L < 2; ++L) {
    t.split[L][0] = s[L][0];
    t.split[L][1] = s[L][1];
    t.partial[L] = p[L];
    t.replicate[L] = std::int32_t(m.level_size(L) / (s[L][0] * s[L][1] * p[L]));
  }
  return t;
}
}  // namespace

TEST_CASE("redistribution on one node") {
  const auto c = cluster::nodes(1).gpus_per_node(8).gpu(gpus::a100_80gb);
  const auto& m = c.mesh;
  const bytes T(8.0e8);
  const double t = T.value;
  auto cost = [&](const tensor_layout& a, const tensor_layout& b) { return redistribution_time(a, b, 2, T, c).value; };
  const auto rep = lay(m, {1, 1}, {1, 1});
  const auto b8 = lay(m, {1, 1}, {8, 1});
  const auto h8 = lay(m, {1, 1}, {1, 8});
  const auto b4 = lay(m, {1, 1}, {4, 1});
  const auto b2h4 = lay(m, {1, 1}, {2, 4});
  SUBCASE("identical layouts are free") {
    for (auto& l : {rep, b8, h8, b2h4}) CHECK(cost(l, l) == 0);
    CHECK(plan_redistribution(b8, b8, 2, T, c).is_free());
  }
  SUBCASE("slicing is free") {
    CHECK(cost(rep, b8) == 0);
    CHECK(cost(b4, b8) == 0);
    CHECK(cost(rep, b2h4) == 0);
  }
  SUBCASE("all-gather") {
    CHECK(cost(b8, rep) == doctest::Approx(all_gather({{1, 8}}, T, c).value));
    CHECK(cost(b8, b4) == doctest::Approx(all_gather({{1, 2}}, bytes(t / 4), c).value));
  }
  SUBCASE("all-to-all") {
    CHECK(cost(b8, h8) == doctest::Approx(all_to_all({{1, 8}}, bytes(t / 8), c).value));
    // b2 h4 -> b8: h coarsens by 4, b refines by 4: all-to-all over 4
    CHECK(cost(b2h4, b8) == doctest::Approx(all_to_all({{1, 4}}, bytes(t / 8), c).value));
  }
  SUBCASE("partial sums: all-reduce, or reduce-scatter when the consumer splits further") {
    const auto p8 = lay(m, {1, 1}, {1, 1}, {1, 8});
    CHECK(cost(p8, rep) == doctest::Approx(all_reduce({{1, 8}}, T, c).value));
    CHECK(cost(p8, b8) == doctest::Approx(reduce_scatter({{1, 8}}, T, c).value));
    const auto p2b4 = lay(m, {1, 1}, {4, 1}, {1, 2});
    CHECK(cost(p2b4, b4) == doctest::Approx(all_reduce({{1, 2}}, bytes(t / 4), c).value));
    CHECK(cost(p2b4, b8) == doctest::Approx(reduce_scatter({{1, 2}}, bytes(t / 4), c).value));
    CHECK(cost(p2b4, lay(m, {1, 1}, {1, 1}, {1, 1})) ==
          doctest::Approx(all_reduce({{1, 2}}, bytes(t / 4), c).value + all_gather({{1, 4}}, T, c).value));
  }
}

TEST_CASE("redistribution across nodes is hierarchical") {
  const auto c = cluster::nodes(4).gpus_per_node(8).gpu(gpus::h100_80gb);
  const auto& m = c.mesh;
  const bytes T(3.2e9);
  const double t = T.value;
  auto cost = [&](const tensor_layout& a, const tensor_layout& b) { return redistribution_time(a, b, 2, T, c).value; };
  const auto full = lay(m, {4, 1}, {8, 1});
  const auto rep = lay(m, {1, 1}, {1, 1});
  CHECK(cost(full, rep) == doctest::Approx(all_gather({{4, 8}}, T, c).value));
  const auto part = lay(m, {1, 1}, {1, 1}, {4, 8});
  CHECK(cost(part, rep) == doctest::Approx(all_reduce({{4, 8}}, T, c).value));
  CHECK(cost(part, full) == doctest::Approx(reduce_scatter({{4, 8}}, T, c).value));
  // moving a split from the node level to the GPU level: gather over nodes
  const auto n4 = lay(m, {4, 1}, {1, 1});
  const auto g4 = lay(m, {1, 1}, {4, 1});
  CHECK(cost(n4, g4) == doctest::Approx(all_gather({{4, 1}}, bytes(t), c).value));
  // b over everything -> h over everything: hierarchical all-to-all
  CHECK(cost(full, lay(m, {1, 4}, {1, 8})) == doctest::Approx(all_to_all({{4, 8}}, bytes(t / 32), c).value));
  CHECK(cost(full, full) == 0);
}
}  // namespace cost_redistribute_test_file
