// plan/build_problem and plan/strategy: problem invariants, exact domination
// dropping, cached costs equal direct ones, strategies and their costs.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/search/solve.hpp>
#include <tensoropt/search/validate.hpp>
#include <tensoropt/plan/build_problem.hpp>
#include <tensoropt/plan/strategy.hpp>
#include <doctest/doctest.h>
#include "cost_test_graphs.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_build_problem_test_file {

using namespace tensoropt;

namespace {
using tiny_gpt = models::gpt<{.layers = 3, .hidden = 64, .heads = 8, .seq = 32, .vocab = 128, .batch = 8}>;

cost_t ps(seconds s) { return cost_t(s.value * ps_per_second + 0.5); }
cost_t by(bytes b) { return cost_t(b.value + 0.5); }

void check_invariants(const built_problem& bp) {
  const auto& p = bp.prob;
  const auto& g = bp.graph;
  REQUIRE(p.nodes.size() == g.ops.size());
  REQUIRE(bp.configs.size() == g.ops.size());
  const auto facts = analyze(g);
  const cost_options co = bp.options.cost();
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    CHECK(p.nodes[i].name == g.ops[i].name);
    REQUIRE(p.nodes[i].configs.size() == bp.configs[i].size());
    CHECK(!p.nodes[i].configs.empty());
    for (std::size_t c = 0; c < bp.configs[i].size(); ++c) {
      const auto& cfg = bp.configs[i][c];
      CHECK(config_error(g.ops[i], cfg, bp.cl.mesh) == "");
      CHECK(p.nodes[i].configs[c].label == label_of(g.ops[i], cfg, bp.cl.mesh));
      const op_cost k = cost_op(g, int(i), cfg, bp.cl, co, facts[i]);
      CHECK(p.nodes[i].configs[c].time == ps(k.time()));
      CHECK(p.nodes[i].configs[c].memory == by(k.memory()));
    }
  }
  const auto edges = g.edges();
  REQUIRE(p.edges.size() == edges.size());
  for (std::size_t e = 0; e < edges.size(); ++e) {
    const auto& pe = p.edges[e];
    CHECK(pe.from == edges[e].from);
    CHECK(pe.to == edges[e].to);
    const auto& cu = bp.configs[pe.from];
    const auto& cv = bp.configs[pe.to];
    REQUIRE(pe.time.size() == cu.size() * cv.size());
    REQUIRE(pe.memory.size() == cu.size() * cv.size());
    for (std::size_t a = 0; a < cu.size(); a += 1 + cu.size() / 5)
      for (std::size_t b = 0; b < cv.size(); b += 1 + cv.size() / 5) {
        CHECK(pe.time[a * cv.size() + b] == std::min(bp.time_cap, ps(edge_time(g, edges[e], cu[a], cv[b], bp.cl, co))));
        CHECK(pe.memory[a * cv.size() + b] == by(edge_memory(g, edges[e], cu[a], cv[b], co)));
      }
  }
}
}  // namespace

TEST_CASE("problem invariants: sizes, labels, costs equal the cost model, cached or not") {
  const op_graph g = lower<tiny_gpt>();
  for (auto mesh : {device_mesh(1, 4), device_mesh(2, 4), device_mesh(3, 2)}) {
    CAPTURE(mesh.describe());
    build_options o;
    o.reserve = bytes(1.0 * gib);
    const auto bp = build_problem(g, cluster(mesh, gpus::a100_40gb), o);
    CHECK(bp.prob.memory_offset == cost_t(gib));
    check_invariants(bp);
  }
}

TEST_CASE("domination dropping is exact") {
  const op_graph g = lower<tiny_gpt>();
  const cluster cl(device_mesh(1, 8), gpus::h100_80gb);
  build_options keep_all;
  keep_all.drop_dominated = false;
  const auto full = build_problem(g, cl, keep_all);
  const auto kept = build_problem(g, cl);
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    for (std::size_t c = 0; c < full.configs[i].size(); ++c) {
      const auto& cfg = full.configs[i][c];
      const auto& fc = full.prob.nodes[i].configs[c];
      const int k = config_index(kept, int(i), cfg);
      if (k >= 0) {
        CHECK(kept.prob.nodes[i].configs[k] == fc);
        continue;
      }
      ++dropped;
      bool dominated = false;
      for (std::size_t j = 0; j < kept.configs[i].size(); ++j) {
        const auto& kc = kept.prob.nodes[i].configs[j];
        dominated |= kept.configs[i][j].same_layout(cfg) && kept.configs[i][j].recompute == cfg.recompute &&
                     kc.time <= fc.time && kc.memory <= fc.memory;
      }
      CHECK(dominated);
    }
  }
  CHECK(dropped > 0);
}

TEST_CASE("micro-batches: k divides the batch; activations shrink, sync stays") {
  const op_graph g = lower<tiny_gpt>();
  const cluster cl(device_mesh(1, 2), gpus::a100_80gb);
  build_options o;
  o.micro_batches = 4;
  const auto bp = build_problem(g, cl, o);
  CHECK(bp.graph.batch == 2);
  check_invariants(bp);
  strategy dp;
  const auto one = evaluate(dp, g, cl);
  const auto four = evaluate(dp, g, cl, o);
  CHECK(four.memory < one.memory);
  o.micro_batches = 3;
  CHECK_THROWS_AS(build_problem(g, cl, o), invalid_argument);
}

TEST_CASE("strategies: configs, labels, errors; evaluate equals the problem's cost_of") {
  const op_graph g = lower<tiny_gpt>();
  const cluster cl(device_mesh(1, 8), gpus::a100_80gb);
  strategy mt;
  mt.k = strategy::kind::megatron;
  mt.tensor_parallel = 4;
  mt.shard_optimizer = true;
  const auto cfg = configs_of(mt, g, cl.mesh);
  auto label = [&](std::string_view name) {
    for (std::size_t i = 0; i < g.ops.size(); ++i)
      if (g.ops[i].name == name) return label_of(g.ops[i], cfg[i], cl.mesh);
    return std::string("?");
  };
  CHECK(label("layers.0.attn.qkv") == "b2 heads4 | zo");
  CHECK(label("layers.0.attn.proj") == "b2 heads4 | zo");
  CHECK(label("layers.1.mlp.fc1") == "b2 f4 | zo");
  CHECK(label("layers.1.ln1") == "b2 r4 | zo");
  const auto bp = build_problem(g, cl);
  std::vector<int> choice;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    choice.push_back(config_index(bp, int(i), cfg[i]));
    CHECK_MESSAGE(choice.back() >= 0, g.ops[i].name, " ", label_of(g.ops[i], cfg[i], cl.mesh));
  }
  CHECK(cost_of(bp.prob, choice) == evaluate(g, cfg, cl));
  // data parallel: everything split on the batch only
  for (auto& c : configs_of(strategy{}, g, cl.mesh)) CHECK(c.split_product(1) == 8);
  // Megatron with t = 4 holds less than data parallel on a model this size
  CHECK(evaluate(mt, g, cl).memory < evaluate(strategy{}, g, cl).memory);
  strategy bad = mt;
  bad.tensor_parallel = 3;
  CHECK_THROWS_WITH_AS(configs_of(bad, g, cl.mesh), doctest::Contains("does not divide the 8 devices per node"),
                       invalid_argument);
  bad.tensor_parallel = 16;
  CHECK_THROWS_AS(configs_of(bad, g, device_mesh(1, 16)), invalid_argument);  // 16 does not divide 8 heads
  strategy pinned;
  pinned.devices = 4;
  CHECK(resolve(pinned, g, cl.mesh).error == strategy_error::mesh_mismatch);
}

TEST_CASE("explicit per-op degrees") {
  const op_graph g = lower<tiny_gpt>();
  const device_mesh m(2, 4);
  strategy s;
  s.k = strategy::kind::explicit_degrees;
  s.rules = {"*:b=8", "layers.1.mlp:b=2,f=4"};
  const auto r = resolve(s, g, m);
  REQUIRE(r.error == strategy_error::none);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    if (op.name.rfind("layers.1.mlp.fc1", 0) == 0) {
      CHECK(r.configs[i].degree[1][0] == 2);
      CHECK(r.configs[i].degree[1][op.dim_index("f")] == 2);
      CHECK(r.configs[i].degree[0][op.dim_index("f")] == 2);
    } else if (op.name == "layers.0.ln1") {
      CHECK(r.configs[i].degree[1][0] == 4);
      CHECK(r.configs[i].degree[0][0] == 2);
    }
  }
  s.rules = {"nothing.here:b=2"};
  CHECK(resolve(s, g, m).error == strategy_error::bad_rule);
  s.rules = {"*:b=two"};
  CHECK(resolve(s, g, m).error == strategy_error::bad_rule);
  s.rules = {"*:b=16"};
  CHECK(resolve(s, g, m).error == strategy_error::not_divisible);
  s.rules = {"layers:heads=8,b=8"};
  CHECK(resolve(s, g, m).error == strategy_error::too_many);
}

TEST_CASE("the builder runs in a constant expression") {
  constexpr std::size_t n = [] {
    const auto bp = build_problem(testing::mlp(8, {16, 16, 16}), cluster(device_mesh(1, 2), gpus::cpu));
    std::size_t c = 0;
    for (auto& node : bp.prob.nodes) c += node.configs.size();
    return c;
  }();
  static_assert(n > 5);
  CHECK(n > 5);
}

TEST_CASE("the time cap keeps every sum exact: megatron-1t on 3,072 GPUs builds a problem the search accepts") {
  const auto& m = models::find("megatron-1t");
  const auto cl = cluster::nodes(384).gpus_per_node(8).gpu(gpus::find(m.gpu));
  build_options o;
  o.micro_batches = 384;
  const auto b = build_problem(m.lower(), cl, o);
  CHECK_NOTHROW(validate(b.prob));  // the 2^62 bound over every cost term holds
  // only the huge terms are cut: plans far slower than 2^62 ps over the number of terms
  // (1,381 s, where every plan that fits 80 GB lies) stay in the search
  CHECK(b.time_cap > 10 * (max_problem_cost / cost_t(b.prob.nodes.size() + b.prob.edges.size() + 1)));
  std::size_t capped = 0;
  for (auto& n : b.prob.nodes)
    for (auto& c : n.configs) CHECK(c.time < b.time_cap);
  for (auto& e : b.prob.edges)
    for (auto t : e.time) capped += t == b.time_cap;
  MESSAGE("time cap " << double(b.time_cap) / ps_per_second << " s; " << capped << " edge cells capped");
  // a small model never reaches the cap: its problem is the uncapped one
  const auto s = build_problem(lower<tiny_gpt>(), cluster(device_mesh(1, 4), gpus::a100_40gb), {});
  for (auto& n : s.prob.nodes)
    for (auto& c : n.configs) CHECK(c.time < s.time_cap / 1000);
}

TEST_CASE("water_level: the cap that cuts only the largest terms") {
  CHECK(detail::water_level({1, 2, 3}, 100) == max_problem_cost);  // the whole sum fits
  CHECK(detail::water_level({1, 2, 30}, 13) == 10);                // 1 + 2 + 10 = 13
  CHECK(detail::water_level({5, 50, 50}, 45) == 20);               // 5 + 20 + 20 = 45
  CHECK(detail::water_level({7, 7}, 10) == 5);
  const std::vector<cost_t> v{3, 9, 1000, 40, 7};
  for (cost_t budget : {10, 50, 100, 500, 1000}) {
    const cost_t c = detail::water_level(v, budget);
    cost_t sum = 0, more = 0;
    for (auto x : v) { sum += std::min(x, c); more += std::min(x, c + 1); }
    CHECK(sum <= budget);
    CHECK(more > budget);  // the largest such c
  }
}

TEST_CASE("megatron-1t on 384 x 8 A100-80GB has a plan within 80 GiB below the time cap") {
  // weights split across nodes (the odd part of 384 nodes replicates) and the time cap
  // cutting only huge terms: before both, the least memory of any plan was 2,017 GB
  const auto& m = models::find("megatron-1t");
  const auto cl = cluster::nodes(384).gpus_per_node(8).gpu(gpus::find(m.gpu));
  build_options o;
  o.micro_batches = 3072;
  const auto b = build_problem(m.lower(), cl, o);
  problem least = b.prob;  // memory as the only objective
  least.memory_offset = 0;
  for (auto& n : least.nodes)
    for (auto& c : n.configs) { c.time = c.memory; c.memory = 0; }
  for (auto& e : least.edges)
    for (std::size_t i = 0; i < e.time.size(); ++i) { e.time[i] = e.memory[i]; e.memory[i] = 0; }
  const auto r = solve(least);
  REQUIRE(!r.points.empty());
  const auto c = cost_of(b.prob, r.points.front().choice);
  MESSAGE("least memory " << double(c.memory) / 1e9 << " GB at " << double(c.time) / ps_per_second << " s");
  CHECK(double(c.memory) <= cl.gpu_spec.capacity.value);
  CHECK(c.time < b.time_cap);
}
}  // namespace plan_build_problem_test_file
