// The single-objective baseline is the least time with no memory limit: it equals the
// frontier's fastest point when the device is large, and lies beyond the capacity (and is
// faster than any plan that fits) when the device is small.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/planner.hpp>
#include <doctest/doctest.h>
#include <algorithm>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_baselines_test_file {

using namespace tensoropt;

namespace {
using tiny_gpt = models::gpt<{.layers = 2, .hidden = 64, .heads = 4, .seq = 32, .vocab = 128, .batch = 8}>;

const baseline_result& single_objective(const planned_frontier& pf) {
  auto it = std::find_if(pf.baselines.begin(), pf.baselines.end(), [](const baseline_result& b) {
    return b.name.rfind("min time (single objective)", 0) == 0;
  });
  REQUIRE(it != pf.baselines.end());
  return *it;
}
}  // namespace

TEST_CASE("with no memory pressure the single-objective optimum is the frontier's fastest point") {
  const op_graph g = lower<tiny_gpt>();
  planner_options o;
  o.micro_batches = {1, 2};
  const auto pf = plan_frontier(g, cluster::single_node(4), o);
  REQUIRE(!pf.points.empty());
  const auto& b = single_objective(pf);
  REQUIRE(b.valid);
  CHECK(b.time == double(pf.points.back().time) / ps_per_second);
  CHECK(b.memory == double(budget_memory(pf.points.back())));  // the runtime peak, as the points'
  CHECK(b.summary == "= frontier point #" + std::to_string(pf.points.size() - 1));
}

TEST_CASE("under a memory limit the single-objective optimum ignores it and is faster than any plan that fits") {
  const op_graph g = lower<tiny_gpt>();
  planner_options o;
  o.micro_batches = {1, 2};
  const auto full = plan_frontier(g, cluster::single_node(4), o);
  REQUIRE(full.points.size() >= 3);
  // A limit between the least memory and the fastest plan's memory: the fastest plan is cut off.
  o.solve.memory_limit = full.points[full.points.size() / 2].memory;
  const auto pf = plan_frontier(g, cluster::single_node(4), o);
  REQUIRE(!pf.points.empty());
  REQUIRE(pf.points.back().time > full.points.back().time);
  const auto& b = single_objective(pf);
  CHECK(b.time == double(full.points.back().time) / ps_per_second);
  CHECK(b.memory == double(budget_memory(full.points.back())));
  CHECK(b.memory > double(o.solve.memory_limit));
  CHECK(b.time < double(pf.points.back().time) / ps_per_second);
}

TEST_CASE("folding time and memory into one objective orders by time, then memory") {
  problem p;
  p.nodes.push_back({"a", {{"slow", 100, 1}, {"fast-big", 90, 1000}, {"fast-small", 90, 10}}});
  p.nodes.push_back({"b", {{"x", 5, 7}}});
  const auto f = detail::time_then_memory(p);
  const auto r = solve(f, solve_options{});
  REQUIRE(r.points.size() == 1);
  CHECK(r.points.front().choice == std::vector<int>{2, 0});
  CHECK(cost_of(p, r.points.front().choice) == strategy_cost{95, 17});
}
}  // namespace plan_baselines_test_file
