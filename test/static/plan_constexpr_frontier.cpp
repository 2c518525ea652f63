// Frontier Tracking at compile time on a real model: a 3-layer MLP on 4 devices.
// The problem is built from the cost model and solved in a constant expression; the
// checks are that each point's strategy, re-costed from the problem, gives exactly
// its (time, memory), that the points form a staircase, and that the data-parallel
// and Megatron baselines are weakly dominated by a frontier point.
#include <tensoropt/models/cnn.hpp>
#include <tensoropt/plan/build_problem.hpp>
#include <tensoropt/plan/strategy.hpp>
#include <tensoropt/search/solve.hpp>

namespace to = tensoropt;

namespace {
using mlp3 = to::models::mlp_model<16, 32, 64, 3, 8, "mlp3">;

constexpr to::cluster four = to::cluster::nodes(1).gpus_per_node(4).gpu(to::gpus::a100_80gb);

struct summary {
  std::size_t points = 0;
  bool staircase = true, recost_exact = true, dp_dominated = false, tp_dominated = false;
};

constexpr bool dominated(const to::frontier_result& r, to::strategy_cost c) {
  for (auto& p : r.points)
    if (p.time <= c.time && p.memory <= c.memory) return true;
  return false;
}

constexpr summary compile_time_frontier() {
  const to::op_graph g = to::lower<mlp3>();
  to::build_options o;
  o.configs.recompute = false;  // keeps the constant evaluation small
  const auto b = to::build_problem(g, four, o);
  const auto r = to::solve(b.prob);
  summary s;
  s.points = r.points.size();
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto c = to::cost_of(b.prob, r.points[i].choice);
    s.recost_exact = s.recost_exact && c.time == r.points[i].time && c.memory == r.points[i].memory;
    if (i > 0)
      s.staircase = s.staircase && r.points[i - 1].memory < r.points[i].memory &&
                    r.points[i - 1].time > r.points[i].time;
  }
  s.dp_dominated = dominated(r, to::evaluate(to::strategy{}, g, four, o));
  to::strategy tp;
  tp.k = to::strategy::kind::megatron;
  tp.tensor_parallel = 4;
  s.tp_dominated = dominated(r, to::evaluate(tp, g, four, o));
  return s;
}

constexpr summary result = compile_time_frontier();
static_assert(result.points >= 2, "the MLP's frontier has a time-memory trade-off");
static_assert(result.staircase, "points sorted by memory with strictly decreasing time");
static_assert(result.recost_exact, "each point's strategy re-costs to exactly its point");
static_assert(result.dp_dominated, "data parallelism is weakly dominated by the frontier");
static_assert(result.tp_dominated, "tensor parallelism is weakly dominated by the frontier");
}  // namespace
