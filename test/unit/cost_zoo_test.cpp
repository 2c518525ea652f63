// The problem builder on the zoo at each model's default GPU count (8 per node): every
// op has configs, layout-configs stay bounded, every config is legal, and the
// Megatron baseline of each GPT is a point of its problem.
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/build_problem.hpp>
#include <tensoropt/plan/strategy.hpp>
#include <doctest/doctest.h>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace cost_zoo_test_file {

using namespace tensoropt;

namespace {
cluster cluster_for(const models::model_info& m) {
  const index_t per = m.gpus < m.gpus_per_node ? m.gpus : m.gpus_per_node;
  return cluster::nodes(m.gpus / per).gpus_per_node(per).gpu(gpus::find(m.gpu));
}
}  // namespace

TEST_CASE("zoo problems: bounded, legal, every op has a config") {
  for (std::string name :
       {"gpt3-1.3b", "gpt3-39b", "megatron-1t", "wresnet-13b", "inception-v3", "moe-70b", "bert-large"}) {
    CAPTURE(name);
    const auto& m = models::find(name);
    const cluster cl = cluster_for(m);
    const auto bp = build_problem(m.lower(), cl);
    std::size_t configs = 0, most_layouts = 0;
    for (std::size_t i = 0; i < bp.configs.size(); ++i) {
      REQUIRE(!bp.configs[i].empty());
      configs += bp.configs[i].size();
      std::vector<op_config> layouts;
      for (auto& c : bp.configs[i]) {
        bool seen = false;
        for (auto& l : layouts) seen |= l.same_layout(c);
        if (!seen) layouts.push_back(c);
      }
      most_layouts = std::max(most_layouts, layouts.size());
      CHECK(config_error(bp.graph.ops[i], bp.configs[i].front(), cl.mesh) == "");
      CHECK(config_error(bp.graph.ops[i], bp.configs[i].back(), cl.mesh) == "");
    }
    MESSAGE(name, " on ", cl.describe(), ": ", bp.prob.nodes.size(), " ops, ", configs, " configs, at most ",
            most_layouts, " layout-configs per op, ", bp.prob.edges.size(), " edges");
    CHECK(most_layouts <= 256);
    CHECK(most_layouts >= 8);
  }
}

TEST_CASE("zoo: Megatron baselines cost the same through the problem") {
  const auto& m = models::find("gpt3-1.3b");
  const cluster cl = cluster::nodes(1).gpus_per_node(4).gpu(gpus::v100_16gb);
  const op_graph g = m.lower();
  const auto bp = build_problem(g, cl);
  strategy s;
  s.k = strategy::kind::megatron;
  s.tensor_parallel = 4;
  s.shard_optimizer = true;
  const auto cfg = configs_of(s, bp.graph, cl.mesh);
  std::vector<int> choice;
  for (std::size_t i = 0; i < cfg.size(); ++i) choice.push_back(config_index(bp, int(i), cfg[i]));
  for (int c : choice) REQUIRE(c >= 0);
  CHECK(cost_of(bp.prob, choice) == evaluate(bp.graph, cfg, cl));
  // sharding the optimizer state of data parallelism saves memory, and costs no
  // communication time in the ring model (reduce-scatter + all-gather = all-reduce);
  // the update itself runs on a quarter of the elements
  strategy zo;
  zo.shard_optimizer = true;
  const auto plain = evaluate(strategy{}, g, cl), sharded = evaluate(zo, g, cl);
  CHECK(sharded.memory < plain.memory);
  const auto dp = configs_of(strategy{}, g, cl.mesh);
  const auto facts = analyze(g);
  double update = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) update += cost_op(g, int(i), dp[i], cl, {}, facts[i]).optimizer.value;
  CHECK(update > 0);
  CHECK(double(plain.time - sharded.time) == doctest::Approx(0.75 * update * 1e12).epsilon(1e-6));
}
}  // namespace cost_zoo_test_file
