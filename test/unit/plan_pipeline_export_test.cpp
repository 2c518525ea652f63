// Pipeline plans exported as files (plan/pipeline_export.hpp): the pipeline problem and the
// frontier with stages re-cost every point of the planner exactly, the stage problems equal
// the search's at every in-flight count, and a corrupted point or problem fails the check.
#include <doctest/doctest.h>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/pipeline_export.hpp>
#include <tensoropt/plan/pipeline_planner.hpp>
#include <tensoropt/plan/pipeline_spec.hpp>
#include <tensoropt/search/frontier_json.hpp>
#include <tensoropt/search/pipeline_problem_json.hpp>
#include <tensoropt/search/pipeline_solve.hpp>
#include "cost_test_graphs.hpp"
#include "plan_pipeline_fixture.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_pipeline_export_test_file {

namespace to = tensoropt;

namespace {
const char* tiny_gpt = "gpt:layers=4,hidden=64,heads=4,seq=16,vocab=64,batch=8";
to::cluster mesh_cluster(to::index_t nodes, to::index_t gpus) {
  return to::cluster::nodes(nodes).gpus_per_node(gpus).gpu(to::gpus::a100_80gb);
}
/// The files' round trip, then every point checked against the problem and against
/// evaluate_pipeline of its plan.
void check_export(const to::op_graph& g, const to::cluster& cl, const to::build_options& bo,
                  const std::vector<to::pipeline_point>& pts) {
  const auto ex = to::export_pipeline(g, cl, bo, pts);
  REQUIRE(ex.points.size() == pts.size());
  const auto prob = to::read_pipeline_problem_json(to::write_pipeline_problem_json(ex.problem));
  CHECK(prob == ex.problem);
  const auto entries = to::read_frontier_entries(to::write_frontier_json(ex.points));
  CHECK(entries == ex.points);
  CHECK_NOTHROW(to::check_frontier(prob, entries));
  for (std::size_t i = 0; i < pts.size(); ++i) {
    CAPTURE(i);
    const auto c = to::pipeline_cost_of(prob, *entries[i].stages);
    const auto e = to::evaluate_pipeline(g, pts[i].plan, cl, bo);
    CHECK(c.time == e.time);
    CHECK(c.memory == e.memory);
    CHECK(c.time == pts[i].time);
    CHECK(c.memory == pts[i].memory);
    CHECK(entries[i].stages->degree == pts[i].plan.degree);
    CHECK(entries[i].point.micro_batches == pts[i].plan.micro_batches);
  }
}
}  // namespace

TEST_CASE("a balanced pipeline frontier re-costs exactly from its exported files; equal stages share a problem") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 8);
  const auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {4, 8});
  const auto pf = to::plan_pipeline_frontier(g, cl, o);
  bool deep = false;
  for (auto& q : pf.points) deep = deep || q.plan.degree >= 4;
  REQUIRE(deep);
  check_export(g, cl, o.build, pf.points);
  // a pipeline of 4 stages over 4 layers: the two middle stages are one problem
  const auto ex = to::export_pipeline(g, cl, o.build, pf.points);
  for (auto& pa : ex.problem.partitions)
    if (pa.degree == 4) {
      CHECK(pa.stages[1].problem == pa.stages[2].problem);
      CHECK(pa.stages[1].in_flight == std::min(pa.micro_batches, 3));
      CHECK(pa.stages[2].in_flight == std::min(pa.micro_batches, 2));
      CHECK(pa.stages[0].problem != pa.stages[1].problem);
    }
  std::size_t stages = 0;
  for (auto& pa : ex.problem.partitions) stages += pa.stages.size();
  CHECK(ex.problem.problems.size() < stages);
}

TEST_CASE("a frontier over every partition (dynamic program) re-costs exactly from its exported files") {
  const auto g = to::testing::mlp(8, {8, 16, 8, 4});
  for (const auto& cl : {mesh_cluster(1, 4), mesh_cluster(2, 2)}) {
    const auto pf = to::testing::partition_frontier(g, cl);
    REQUIRE(!pf.points.empty());
    check_export(g, cl, {}, pf.points);
  }
}

TEST_CASE("an exported stage problem with f in flight equals the search's stage problem") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 4);
  const to::index_t p = 4, k = 8;
  const auto micro = to::with_batch(g, g.batch / k);
  const auto cuts = to::cut_points(micro);
  REQUIRE(cuts.size() >= 3);
  to::build_options bo;
  const std::pair<std::size_t, std::size_t> ranges[] = {{0, cuts[1]}, {cuts[0], cuts[1]}, {cuts[1], g.ops.size()}};
  for (auto [a, b] : ranges) {
    const auto one = to::build_stage_problem(micro, a, b, cl, bo, k, p, p - 1);
    const to::pipeline_problem::stage_problem sp{one.built.prob, to::detail::stage_activations(one)};
    for (to::index_t i = 0; i < p; ++i) {
      CAPTURE(a);
      CAPTURE(i);
      const auto at = to::build_stage_problem(micro, a, b, cl, bo, k, p, i);
      CHECK(to::with_in_flight(sp, to::in_flight(k, p, i)) == at.built.prob);
    }
  }
}

TEST_CASE("the check fails on a corrupted point or problem file") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 4);
  auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {4});
  o.degrees = {2, 4};
  const auto pf = to::plan_pipeline_frontier(g, cl, o);
  REQUIRE(pf.points.size() >= 2);
  const auto ex = to::export_pipeline(g, cl, o.build, pf.points);
  CHECK_NOTHROW(to::check_frontier(ex.problem, ex.points));
  // one byte more memory on one point
  auto bad = ex.points;
  bad[1].point.memory += 1;
  CHECK_THROWS_WITH_AS(to::check_frontier(ex.problem, bad), doctest::Contains("points[1]: the stages cost"),
                       to::format_error);
  // another config for one node of one stage (labels kept in step)
  bad = ex.points;
  auto& st = *bad[0].stages;
  const auto& sp = ex.problem.problems[ex.problem.partitions[st.partition].stages[0].problem];
  std::size_t node = 0;
  while (node < sp.prob.nodes.size() && sp.prob.nodes[node].configs.size() < 2) ++node;
  REQUIRE(node < sp.prob.nodes.size());
  st.choice[0][node] = st.choice[0][node] == 0 ? 1 : 0;
  st.labels[0][node] = sp.prob.nodes[node].configs[std::size_t(st.choice[0][node])].label;
  CHECK_THROWS_WITH_AS(to::check_frontier(ex.problem, bad), doctest::Contains("points[0]: the stages cost"),
                       to::format_error);
  // a send one picosecond slower in the problem
  auto worse = ex.problem;
  for (auto& pa : worse.partitions)
    if (!pa.sends.empty()) pa.sends[0] += 1;
  CHECK_THROWS_AS(to::check_frontier(worse, ex.points), to::format_error);
}

TEST_CASE("a hand-written pipeline plan (--strategy pp=2) exports as a one-point frontier") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(2, 4);
  to::build_options bo;
  bo.drop_dominated = false;
  const auto pl = to::plan_from_spec(g, cl.mesh, to::parse_strategy_spec("pp=2,tp=2,recompute=full"), 4);
  const auto c = to::evaluate_pipeline(g, pl, cl, bo);
  check_export(g, cl, bo, {{c.time, c.memory, pl}});
  // a plan for another mesh is refused with a message
  to::pipeline_point q{c.time, c.memory, pl};
  q.plan.stage_begin = {0};
  CHECK_THROWS_AS(to::export_pipeline(g, cl, bo, {q}), to::invalid_argument);
}

TEST_CASE("solving the exported pipeline problem gives the planner's frontier back") {
  const auto g = to::testing::mlp(8, {8, 16, 8, 4});
  for (const auto& cl : {mesh_cluster(1, 4), mesh_cluster(2, 2)}) {
    const auto pf = to::testing::partition_frontier(g, cl);
    REQUIRE(pf.exact);
    const auto ex = to::export_pipeline(g, cl, {}, pf.points);
    const auto re = to::solve_pipeline_problem(ex.problem);
    REQUIRE(re.size() == pf.points.size());
    for (std::size_t i = 0; i < re.size(); ++i) {
      CHECK(re[i].point.time == pf.points[i].time);
      CHECK(re[i].point.memory == pf.points[i].memory);
    }
    CHECK_NOTHROW(to::check_frontier(ex.problem, re));
  }
}
}  // namespace plan_pipeline_export_test_file
