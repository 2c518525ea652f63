// The peak bound (plan/peak_bound.hpp): kept' + the largest site term is never below
// the replayed runtime peak (plan/memory_peak.hpp), on random plans of the runtime
// tests' models on 1 to 8 devices and on 2 nodes x 2, with and without recompute,
// sharded optimizer state and micro-batches; how far above the peak it lies is held
// to the measured maxima; and the bound's problem keeps the built problem's times and shape.
#include <doctest/doctest.h>
#include <tensoropt/plan/memory_peak.hpp>
#include <tensoropt/plan/peak_bound.hpp>
#include <random>
#include "runtime_model_types.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_peak_bound_test_file {

namespace to = tensoropt;

namespace {
/// Checks the bound on random plans and returns the largest bound / peak seen.
template <class M>
double check_random_plans(const char* name, int nodes, int per, int plans) {
  const auto g = to::with_global_batch(to::lower<M>(), 16);
  const auto cl = to::cluster::nodes(nodes).gpus_per_node(per);
  std::mt19937_64 rng(std::uint64_t(nodes * 100 + per));
  double lo = 1e300, hi = 0;
  for (int k : {1, 2}) {
    to::build_options bo;
    bo.prec = to::precisions::fp32;
    bo.regenerate_dropout = true;
    bo.micro_batches = k;
    bo.reserve = to::bytes(1000);
    const auto b = to::build_problem(g, cl, bo);
    const auto pb = to::make_peak_bound(b);
    REQUIRE(pb.kept.nodes.size() == b.prob.nodes.size());
    REQUIRE(pb.kept.edges.size() == b.prob.edges.size());
    CHECK(pb.kept.memory_offset == b.prob.memory_offset);
    for (std::size_t i = 0; i < b.prob.nodes.size(); ++i)
      for (std::size_t c = 0; c < b.prob.nodes[i].configs.size(); ++c)
        CHECK(pb.kept.nodes[i].configs[c].time == b.prob.nodes[i].configs[c].time);
    for (int t = 0; t < plans; ++t) {
      std::vector<int> choice;
      std::vector<to::op_config> cfg;
      for (std::size_t i = 0; i < b.configs.size(); ++i) {
        // every third plan takes each op's first or last config (all or none recomputed, ...)
        const std::size_t m = b.configs[i].size();
        const std::size_t c = t % 3 == 0 ? (t % 2 ? m - 1 : 0) : std::size_t(rng() % m);
        choice.push_back(int(c));
        cfg.push_back(b.configs[i][c]);
      }
      const auto pk = to::predicted_peak(b.graph, cfg, cl, bo);
      const auto v = to::bound_of(pb, choice);
      INFO(name << " on " << nodes << " x " << per << ", k = " << k << ", plan " << t << ": bound " << v.bound()
                << " (kept' " << v.kept << " + cap " << v.cap << "), replayed peak " << pk.peak() << " at op " << pk.op
                << (pk.backward ? " backward" : " forward"));
      CHECK(double(v.bound()) >= pk.peak());
      lo = std::min(lo, double(v.bound()) / pk.peak());
      hi = std::max(hi, double(v.bound()) / pk.peak());
    }
  }
  MESSAGE(std::string(name), " on ", nodes, " x ", per, ": bound / peak ", lo, " .. ", hi);
  return hi;
}
}  // namespace

TEST_CASE("the bound is never below the replayed peak on random plans") {
  for (auto [nodes, per] : {std::pair{1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}, {1, 8}, {2, 2}}) {
    // how tight: the largest ratios measured (mlp 1.71, gpt 2.31 on one device and 3.82 on
    // 1 x 8, cnn 2.40, moe 2.07) with about 5 % headroom; the GPT's one-device limit fails
    // if every input of every rebuilt recompute op is charged again (3.38x there)
    INFO(nodes << " x " << per);
    CHECK(check_random_plans<rt_test::mlp_of<16>>("mlp", nodes, per, 60) <= 1.8);
    CHECK(check_random_plans<rt_test::gpt_of<16>>("gpt", nodes, per, 60) <= (nodes * per == 1 ? 2.45 : 4.0));
    CHECK(check_random_plans<rt_test::cnn_of<16>>("cnn", nodes, per, 60) <= 2.55);
    CHECK(check_random_plans<rt_test::moe_of<16>>("moe", nodes, per, 60) <= 2.2);
  }
}
}  // namespace plan_peak_bound_test_file
