// Pipeline plans from `--strategy pp=P,...`, the Megatron 3D baselines, and the balanced
// pipeline search on a small GPT: p = 1 equals today's planner, every point re-costs.
#include <doctest/doctest.h>
#include <random>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/pipeline_planner.hpp>
#include <tensoropt/plan/pipeline_plan_file.hpp>
#include <tensoropt/plan/pipeline_spec.hpp>

#include "plan_pipeline_fixture.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_pipeline_spec_test_file {

namespace to = tensoropt;

namespace {
struct tm_point {
  to::cost_t time, memory;
};
const char* tiny_gpt = "gpt:layers=4,hidden=64,heads=4,seq=16,vocab=64,batch=8";
to::cluster mesh_cluster(to::index_t nodes, to::index_t gpus) {
  return to::cluster::nodes(nodes).gpus_per_node(gpus).gpu(to::gpus::a100_80gb);
}
std::string error_of(auto&& f) {
  try {
    f();
  } catch (const to::invalid_argument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("plan_from_spec: balanced stages, Megatron configs on each stage's mesh") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(2, 4);
  const auto s = to::parse_strategy_spec("pp=2,tp=2,recompute=full");
  const auto pp = to::plan_from_spec(g, cl.mesh, s, 4);
  CHECK(to::pipeline_plan_error(pp, g.ops.size()) == "");
  CHECK(pp.degree == 2);
  CHECK(pp.micro_batches == 4);
  // the second stage starts at the first op of layer 2 of 4
  const auto rb = to::largest_repeat(g);
  REQUIRE(rb.instances.size() == 4);
  CHECK(pp.stage_begin == std::vector<std::size_t>{0, std::size_t(rb.instances[2][0])});
  // every op's config is for the stage's 1 x 4 mesh: products of degrees are at most 4
  for (auto& c : pp.configs) {
    std::int64_t n = 1;
    for (int d = 0; d < to::max_op_dims; ++d) n *= c.total_degree(d);
    CHECK(n <= 4);
  }
  const auto c = to::evaluate_pipeline(g, pp, cl);
  CHECK(c.stages.size() == 2);
  CHECK(c.time > c.sends);
  CHECK(to::summarize_pipeline(g, pp).rfind("pp 2 x ", 0) == 0);
}

TEST_CASE("plan_from_spec: illegal degrees are one-line errors") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(2, 4);
  CHECK(error_of([&] { to::plan_from_spec(g, cl.mesh, to::parse_strategy_spec("pp=3"), 4); }).find("does not divide") !=
        std::string::npos);
  CHECK(error_of([&] { to::plan_from_spec(g, cl.mesh, to::parse_strategy_spec("pp=4"), 2); }).find("at least 4 micro") !=
        std::string::npos);
  CHECK(error_of([&] { to::plan_from_spec(g, cl.mesh, to::parse_strategy_spec("pp=2,tp=2,dp=4"), 4); })
            .find("make tp * pp * dp equal the device count") != std::string::npos);
  CHECK(error_of([&] { to::plan_from_spec(g, to::device_mesh(1, 8), to::parse_strategy_spec("pp=8"), 8); })
            .find("exceeds the 4 layers") != std::string::npos);
  // a pipeline spec is not an ordinary plan
  CHECK(error_of([&] { to::configs_of(to::parse_strategy_spec("pp=2"), g, cl.mesh); }).find("pipeline plan") !=
        std::string::npos);
}

TEST_CASE("Megatron 3D baselines: every legal degree triple, named with pp") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(2, 4);
  const auto base = to::megatron_3d_baselines(g, cl, {}, {}, {1, 2, 4, 8});
  // p = 1 (2 x 4: tp 1, 2, 4), p = 2 (1 x 4: tp 1, 2, 4), p = 4 (1 x 2: tp 1, 2); p = 8 > 4 layers
  std::vector<std::string> names;
  for (auto& b : base) names.push_back(b.name.substr(0, b.name.find(',')));
  CHECK(names == std::vector<std::string>{"pp 1 x tp 1 x dp 8", "pp 1 x tp 2 x dp 4", "pp 1 x tp 4 x dp 2",
                                          "pp 2 x tp 1 x dp 4", "pp 2 x tp 2 x dp 2", "pp 2 x tp 4 x dp 1",
                                          "pp 4 x tp 1 x dp 2", "pp 4 x tp 2 x dp 1"});
  for (auto& b : base) {
    CHECK(b.valid);
    CHECK(b.time > 0);
  }
  // with 4 or 8 micro-batches of 8 sequences, dp 8 and dp 4 at p <= 2 do not divide a micro-batch
  const auto few = to::megatron_3d_baselines(g, cl, {}, {}, {4, 8});
  REQUIRE(few.size() == base.size());
  CHECK_FALSE(few[0].valid);
  CHECK(few[0].summary.find("does not divide") != std::string::npos);
  CHECK(few[4].valid);
}

TEST_CASE("balanced pipeline search: p = 1 is today's frontier, every point re-costs exactly") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 4);
  auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {4});
  o.degrees = {1};
  const auto one = to::plan_pipeline_frontier(g, cl, o);
  to::planner_options po;
  po.micro_batches = {4};
  po.baselines = false;
  po.threads = 1;
  po.check_restriction = false;
  po.runtime_peak = false;  // the pipeline frontier is over the additive memory
  const auto today = to::plan_frontier(g, cl, po);
  REQUIRE(one.points.size() == today.points.size());
  for (std::size_t i = 0; i < one.points.size(); ++i) {
    CHECK(one.points[i].time == today.points[i].time);
    CHECK(one.points[i].memory == today.points[i].memory);
  }
  o.degrees.clear();
  const auto all = to::plan_pipeline_frontier(g, cl, o);
  bool deeper = false;
  for (auto& q : all.points) {
    deeper = deeper || q.plan.degree > 1;
    const auto c = to::evaluate_pipeline(g, q.plan, cl);
    CHECK(c.time == q.time);
    CHECK(c.memory == q.memory);
  }
  CHECK(deeper);
  // today's points are on or behind the frontier with stages
  for (auto& t : today.points) {
    bool covered = false;
    for (auto& q : all.points) covered = covered || (q.memory <= t.memory && q.time <= t.time);
    CHECK(covered);
  }
}

TEST_CASE("plan file /2 carries the stages; a pipeline point reads back and re-costs exactly") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 4);
  to::pipeline_options o;
  o.partitions = to::partition_search::balanced;
  o.micro_batches = {4};
  o.threads = 1;
  o.degrees = {2};
  const auto pf = to::plan_pipeline_frontier(g, cl, o);
  REQUIRE(!pf.points.empty());
  const auto& q = pf.points.front();
  const auto f = to::make_pipeline_plan_file(g, cl, {}, q);
  const std::string text = to::write_plan_json(f);
  CHECK(text.find("\"tensoropt-plan/2\"") != std::string::npos);
  const auto back = to::pipeline_plan_for_graph(to::read_plan_json(text), g);
  CHECK(back.degree == 2);
  CHECK(back.stage_begin == q.plan.stage_begin);
  CHECK(back.configs == q.plan.configs);
  CHECK(back.receive_configs == q.plan.receive_configs);
  const auto c = to::evaluate_pipeline(g, back, cl);
  CHECK(c.time == q.time);
  CHECK(c.memory == q.memory);
  // a stage list that does not match the degree is a format error naming the field
  std::string bad = text;
  const auto at = bad.find("\"degree\":2");
  REQUIRE(at != std::string::npos);
  bad.replace(at, 10, "\"degree\":3");
  CHECK_THROWS_WITH_AS(to::read_plan_json(bad), doctest::Contains("pipeline.stage_begin: expected 3 stage starts"),
                       to::format_error);
  // a one-stage plan is still written as /1
  to::pipeline_point one = q;
  one.plan = to::plan_from_spec(g, cl.mesh, to::parse_strategy_spec("tp=2"), 4);
  CHECK(to::write_plan_json(to::make_pipeline_plan_file(g, cl, {}, one)).find("\"tensoropt-plan/1\"") !=
        std::string::npos);
}

TEST_CASE("the pipeline frontier does not depend on the thread count") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 4);
  auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {4, 8});
  o.runtime_peak = true;  // the peaks too
  const auto one = to::plan_pipeline_frontier(g, cl, o);
  o.threads = 3;
  const auto three = to::plan_pipeline_frontier(g, cl, o);
  REQUIRE(one.points.size() == three.points.size());
  for (std::size_t i = 0; i < one.points.size(); ++i) {
    CHECK(one.points[i].time == three.points[i].time);
    CHECK(one.points[i].memory == three.points[i].memory);
    CHECK(one.points[i].plan.degree == three.points[i].plan.degree);
    CHECK(one.points[i].plan.micro_batches == three.points[i].plan.micro_batches);
    CHECK(one.points[i].plan.configs == three.points[i].plan.configs);
  }
}

TEST_CASE("balanced stages: one search per class equals searching every stage") {
  // 4 layers in 4 stages: stages 1 and 2 are one class; stage 2 holds fewer micro-batches
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 4);
  const to::index_t p = 4, k = 4;
  auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {k});
  o.degrees = {p};
  o.mode = to::search_mode::exact;
  const auto pf = to::plan_pipeline_frontier(g, cl, o);
  const auto bp = to::balance_stages(g, p);
  REQUIRE(bp.why_not.empty());
  const auto micro = to::with_batch(g, g.batch / k);
  std::vector<tm_point> acc{{0, 0}};
  for (std::size_t s = 0; s < std::size_t(p); ++s) {
    const auto r = to::detail::search_stage(micro, bp.starts[s], s + 1 < std::size_t(p) ? bp.starts[s + 1] : g.ops.size(),
                                            cl, o, k, p, to::index_t(s), o.solve);
    std::vector<tm_point> next;
    for (auto& m : to::max_max_merge(acc, r.fr.points)) next.push_back({m.time, m.memory});
    acc = next;
  }
  const auto sends = to::pipeline_sends(micro, cl, p, bp.starts, to::precisions::bf16_mixed);
  REQUIRE(acc.size() == pf.points.size());
  for (std::size_t i = 0; i < acc.size(); ++i) {
    CHECK(acc[i].time + sends == pf.points[i].time);
    CHECK(acc[i].memory == pf.points[i].memory);
  }
}

TEST_CASE("jobs skipped by bounds: the same frontier as searching every job") {
  // compute-bound layers: larger k (smaller bubble) beats smaller k, so jobs are beaten
  const auto g = to::models::lower("gpt:layers=4,hidden=4096,heads=32,seq=1024,vocab=512,batch=16");
  const auto cl = mesh_cluster(2, 4);
  std::size_t beaten = 0, minima = 0, after = 0;
  for (const bool limit : {false, true}) {
    CAPTURE(limit);
    auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {}, 2);
    o.mode = to::search_mode::exact;
    o.skip_by_bounds = false;
    const auto all = to::plan_pipeline_frontier(g, cl, o);
    REQUIRE(all.points.size() > 2);
    CHECK(all.skipped == 0);
    // a limit at the frontier's least memory: the jobs of more memory fit nowhere
    if (limit) o.solve.memory_limit = all.points.front().memory;
    const auto want = limit ? [&] {
      auto v = all.points;
      std::erase_if(v, [&](const to::pipeline_point& q) { return q.memory > o.solve.memory_limit; });
      return v;
    }() : all.points;
    for (const std::size_t threads : {std::size_t(1), std::size_t(3)}) {
      CAPTURE(threads);
      o.skip_by_bounds = true;
      o.threads = threads;
      const auto got = to::plan_pipeline_frontier(g, cl, o);
      if (limit) CHECK(got.skipped_over_limit > 0);
      beaten += got.skipped - got.skipped_over_limit;
      if (threads == 1) minima += got.skipped_by_minima;  // one thread: the same jobs every run
      if (threads == 1) after += got.skipped_after_searches;
      REQUIRE(got.points.size() == want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        CHECK(got.points[i].time == want[i].time);
        CHECK(got.points[i].memory == want[i].memory);
        CHECK(got.points[i].plan.degree == want[i].plan.degree);
        CHECK(got.points[i].plan.micro_batches == want[i].plan.micro_batches);
      }
    }
  }
  CHECK(beaten > 0);
  MESSAGE("jobs skipped on node and edge minima alone (one thread): " << minima);
  CHECK(minima > 0);
  MESSAGE("jobs skipped on the frontier of some stage classes (one thread): " << after);
}

TEST_CASE("job bounds: the time floor and the least stage cost are below every point") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 4);
  int edge_gain = 0;  // stages where the edges' least entries raise a node-minima bound
  for (const to::index_t p : {1, 2, 4})
    for (const to::index_t k : {4, 8}) {
      CAPTURE(p);
      CAPTURE(k);
      auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {k});
      o.mode = to::search_mode::exact;
      o.degrees = {p};
      o.skip_by_bounds = false;
      const auto pf = to::plan_pipeline_frontier(g, cl, o);
      REQUIRE(!pf.points.empty());
      const auto micro = to::with_batch(g, g.batch / k);
      const auto bp = to::balance_stages(g, p);
      const auto floor = to::detail::balanced_time_floor(micro, cl, p, k, bp, o.build.prec);
      CHECK(floor > 0);
      CHECK(floor <= pf.points.back().time);
      const auto sends = to::pipeline_sends(micro, cl, p, bp.starts, o.build.prec);
      to::cost_t least_time = 0, least_memory = 0;
      for (std::size_t s = 0; s < std::size_t(p); ++s) {
        const auto r = to::detail::search_stage(micro, bp.starts[s], s + 1 < std::size_t(p) ? bp.starts[s + 1] : g.ops.size(),
                                                cl, o, k, p, to::index_t(s), o.solve);
        const auto c = to::detail::least_stage_cost(*r.sp, o.mode, o.solve.memory_limit, 0);
        REQUIRE(!r.fr.points.empty());
        // exact: the least of each objective is the frontier's end point
        CHECK(c.time == r.fr.points.back().time);
        CHECK(c.memory == r.fr.points.front().memory);
        least_time = std::max(least_time, c.time);
        least_memory = std::max(least_memory, c.memory);
        // node minima (no search) are below the least costs, and nothing fits below them
        const auto nm = to::detail::stage_minima_corner(*r.sp, o.solve.memory_limit, false);
        CHECK(nm.time <= c.time);
        CHECK(nm.memory <= c.memory);
        CHECK(nm.memory > r.sp->built.prob.memory_offset);
        CHECK(to::detail::stage_minima_corner(*r.sp, nm.memory - 1, false).memory == to::detail::nothing_fits);
        // with the edges' least entries: between the node minima and the least costs
        const auto em = to::detail::stage_minima_corner(*r.sp, o.solve.memory_limit, true);
        CHECK(em.time >= nm.time);
        CHECK(em.time <= c.time);
        CHECK(em.memory >= nm.memory);
        CHECK(em.memory <= c.memory);
        CHECK(to::detail::stage_minima_corner(*r.sp, em.memory - 1, true).memory == to::detail::nothing_fits);
        edge_gain += em.time > nm.time || em.memory > nm.memory;
      }
      CHECK(least_time + sends == pf.points.back().time);
      // regions: each stage's line is under every point, and tight at the frontier
      for (std::size_t s = 0; s < std::size_t(p); ++s) {
        const auto r = to::detail::search_stage(micro, bp.starts[s], s + 1 < std::size_t(p) ? bp.starts[s + 1] : g.ops.size(),
                                                cl, o, k, p, to::index_t(s), o.solve);
        const auto& pts = r.fr.points;
        const double slope = pts.size() > 1 ? double(pts.back().memory - pts.front().memory) /
                                                  double(pts.front().time - pts.back().time)
                                            : 1e-6;
        const std::size_t terms = r.sp->built.prob.nodes.size() + r.sp->built.prob.edges.size();
        const auto setup = to::detail::stage_setup_of(*r.sp, o.mode);
        for (const double w : {slope / 4, slope, slope * 4}) {
          CAPTURE(w);
          const to::cost_t line = to::detail::stage_line(*r.sp, setup, w, 0);
          const to::cost_t node_line = to::detail::stage_minima_line(*r.sp, w, o.solve.memory_limit, false);
          const to::cost_t edge_line = to::detail::stage_minima_line(*r.sp, w, o.solve.memory_limit, true);
          CHECK(node_line <= line + to::cost_t(terms));
          CHECK(node_line > 0);
          CHECK(edge_line <= line + to::cost_t(terms));  // both round down by up to one per term
          CHECK(edge_line + to::cost_t(terms) >= node_line);
          double least = 1e300;
          for (const auto& q : pts) {
            CHECK(double(line) <= double(q.memory) + w * double(q.time));
            CHECK(double(edge_line) <= double(q.memory) + w * double(q.time));
            CHECK(double(node_line) <= double(q.memory) + w * double(q.time));
            least = std::min(least, double(q.memory) + w * double(q.time));
          }
          CHECK(least - double(line) <= 2.0 * double(terms) + 1);
        }
      }
      CHECK(least_memory == pf.points.front().memory);
      // a limit under the least memory: nothing fits
      const auto r0 = to::detail::search_stage(micro, 0, p > 1 ? bp.starts[1] : g.ops.size(), cl, o, k, p, 0, o.solve);
      CHECK(to::detail::least_stage_cost(*r0.sp, o.mode, r0.fr.points.front().memory - 1, 0).memory ==
            to::detail::nothing_fits);
    }
  CHECK(edge_gain > 0);
}

TEST_CASE("job regions: a region is skipped only when every point of it is dominated") {
  // found so far: (time 100, memory 10), (50, 20), (20, 40); limit 100
  const std::vector<to::known_point> u{{100, 10, {2, 2}}, {50, 20, {2, 2}}, {20, 40, {2, 2}}};
  to::job_region r;
  r.time = 60;
  r.memory = 15;
  // the corner alone: at memory 15 the best found takes 100 > 60
  auto c = to::check_region(u, r, {3, 3}, 100);
  CHECK(!c.dominated);
  CHECK(c.at == 15);
  // the line M + T >= 120 lifts the least time to 104 at memory 15, 100 at 19, 80 at 39
  r.lines.push_back({1.0, 120});
  CHECK(r.least_time_at(15) == 104);
  CHECK(r.least_time_at(39) == 80);
  CHECK(r.least_time_at(100) == 60);
  CHECK(to::check_region(u, r, {3, 3}, 100).dominated);
  // a weaker line leaves (98, 19) undominated: the memory where it is not is returned
  r.lines.back().s = 118;
  c = to::check_region(u, r, {3, 3}, 100);
  CHECK(!c.dominated);
  CHECK(c.at == 19);
  CHECK(to::line_weight(u, c.at) == doctest::Approx(10.0 / 50.0));
  // above the limit: dominated (such points are not kept)
  r.memory = 101;
  CHECK(to::check_region(u, r, {3, 3}, 100).dominated);
  // an exact tie is dominated only by a point of smaller or equal key
  to::job_region tie;
  tie.time = 20;
  tie.memory = 40;
  CHECK(to::check_region(u, tie, {3, 3}, 40).dominated);
  CHECK(!to::check_region(u, tie, {1, 1}, 40).dominated);
  // sends add to the line's time
  to::job_region sent;
  sent.memory = 15;
  sent.sends = 10;
  sent.lines.push_back({1.0, 120});
  CHECK(sent.least_time_at(15) == 114);
}

TEST_CASE("job regions: the frontier of the stage classes searched so far skips a job the lines cannot") {
  // found so far: (100, 10), (50, 20), (20, 40); limit 100
  const std::vector<to::known_point> u{{100, 10, {2, 2}}, {50, 20, {2, 2}}, {20, 40, {2, 2}}};
  struct pt {
    to::cost_t time, memory;
  };
  to::job_region r;
  r.memory = 12;
  r.sends = 5;
  // a staircase whose points each sit just above a point of u: (96+5, 12) and (46+5, 22)
  // and (16+5, 41); the convex hull between them dips below u, the staircase does not
  std::vector<pt> stair{{96, 12}, {46, 22}, {16, 41}};
  CHECK(to::staircase_dominated(u, stair, r, {3, 3}, 100));
  CHECK(!to::check_region(u, r, {3, 3}, 100).dominated);  // the region's corner alone is not
  // one point of it not beaten: (94 + 5 = 99, 12) beats (100, 10)
  stair[0].time = 94;
  CHECK(!to::staircase_dominated(u, stair, r, {3, 3}, 100));
  // the job's least memory lifts that point to memory 20, where (50, 20) beats it
  r.memory = 20;
  CHECK(to::staircase_dominated(u, stair, r, {3, 3}, 100));
  // the region's least time lifts a point's time: (10 + 5, 41) is not beaten, at least 25 is
  stair = {{10, 41}};
  r.memory = 0;
  CHECK(!to::staircase_dominated(u, stair, r, {3, 3}, 100));
  r.time = 25;
  CHECK(to::staircase_dominated(u, stair, r, {3, 3}, 100));
  // points above the limit are never returned: only those within it must be beaten
  stair = {{96, 12}, {1, 90}};
  r.time = 0;
  CHECK(to::staircase_dominated(u, stair, r, {3, 3}, 80));
  CHECK(!to::staircase_dominated(u, stair, r, {3, 3}, 100));
  // an exact tie is beaten only by a point of smaller or equal key
  stair = {{15, 40}};
  CHECK(to::staircase_dominated(u, stair, r, {3, 3}, 100));
  CHECK(!to::staircase_dominated(u, stair, r, {1, 1}, 100));
  // the region's lines bound a point's time at the memory the job's point has, which the
  // other classes can raise: with M + (T - 5) >= 110 a point combined from (0, 12) may
  // take 114 - M, (95, 19), which (100, 10) does not beat, though it beats (102, 12)
  stair = {{0, 12}};
  r.memory = 0;
  r.lines.push_back({1.0, 110});
  CHECK(r.least_time_at(12) == 102);
  CHECK(r.least_time_at(19) == 95);
  CHECK(!to::staircase_dominated(u, stair, r, {3, 3}, 100));
  // with M + (T - 5) >= 120 every such point is beaten: (105, 19), (85, 39), (24, 100)
  r.lines.back().s = 120;
  CHECK(to::staircase_dominated(u, stair, r, {3, 3}, 100));
}

TEST_CASE("job regions: a job skipped on part of its stage classes has every point beaten (random)") {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> cost(0, 40);
  // a random staircase: memory ascending, time strictly descending
  auto staircase = [&](int n) {
    std::vector<tm_point> v;
    for (int i = 0; i < n; ++i) v.push_back({to::cost_t(cost(rng)), to::cost_t(cost(rng))});
    std::sort(v.begin(), v.end(), [](const tm_point& a, const tm_point& b) {
      return a.memory != b.memory ? a.memory < b.memory : a.time < b.time;
    });
    std::vector<tm_point> out;
    for (auto& q : v)
      if (out.empty() || q.time < out.back().time) out.push_back(q);
    return out;
  };
  auto merge = [](const std::vector<tm_point>& a, const std::vector<tm_point>& b) {
    std::vector<tm_point> c;
    for (auto& m : to::max_max_merge(a, b)) c.push_back({m.time, m.memory});
    return c;
  };
  int skipped = 0, kept = 0, by_lines = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    CAPTURE(trial);
    const int classes = 2 + trial % 3;
    std::vector<std::vector<tm_point>> st;
    for (int c = 0; c < classes; ++c) st.push_back(staircase(1 + int(rng() % 6)));
    std::vector<tm_point> job = st[0];
    for (int c = 1; c < classes; ++c) job = merge(job, st[std::size_t(c)]);
    // a valid region of the job's points: a corner at or below them and a line under them
    to::job_region r;
    r.sends = to::cost_t(rng() % 5);
    to::cost_t tmin = job.back().time, mmin = job.front().memory;
    r.time = tmin + r.sends - std::min<to::cost_t>(tmin + r.sends, rng() % 3);
    r.memory = mmin - std::min<to::cost_t>(mmin, rng() % 3);
    if (rng() % 2) {
      const double w = 0.25 * double(1 + rng() % 8);
      double s = 1e18;
      for (auto& q : job) s = std::min(s, double(q.memory) + w * double(q.time));
      r.lines.push_back({w, to::cost_t(std::floor(s))});
    }
    // points found so far: a random staircase, some of it of smaller (p, k)
    std::vector<to::known_point> u;
    for (auto& q : staircase(1 + int(rng() % 8)))
      u.push_back({q.time, q.memory, rng() % 2 ? std::pair{1, 1} : std::pair{3, 3}});
    const std::pair<int, int> key{2, 2};
    const to::cost_t limit = rng() % 4 ? 1000 : to::cost_t(cost(rng));
    // the classes searched so far: a random proper prefix
    const int searched = 1 + int(rng() % unsigned(classes - 1));
    std::vector<tm_point> part = st[0];
    for (int c = 1; c < searched; ++c) part = merge(part, st[std::size_t(c)]);
    if (!to::staircase_dominated(u, part, r, key, limit)) {
      ++kept;
      continue;
    }
    ++skipped;
    // what the old test at the corner's memory alone would have missed
    by_lines += !r.lines.empty();
    for (auto& q : job)
      if (q.memory <= limit) CHECK(to::dominated_by(u, q.time + r.sends, q.memory, key));
  }
  MESSAGE("skipped " << skipped << ", kept " << kept << ", skipped with a line " << by_lines);
  CHECK(skipped > 200);
  CHECK(kept > 200);
  CHECK(by_lines > 50);
}
}  // namespace plan_pipeline_spec_test_file
