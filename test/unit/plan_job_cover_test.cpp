// The pipeline planner under epsilon: job regions and staircases covered within
// 1 + epsilon, the commit test's brackets (plan/job_cover.hpp), the fixed-slope lines,
// and the result's independence of the thread count.
#include <doctest/doctest.h>
#include <cmath>
#include <random>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/pipeline_planner.hpp>

#include "plan_pipeline_fixture.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_job_cover_test_file {

namespace to = tensoropt;

namespace {
const char* tiny_gpt = "gpt:layers=4,hidden=64,heads=4,seq=16,vocab=64,batch=8";
to::cluster mesh_cluster(to::index_t nodes, to::index_t gpus) {
  return to::cluster::nodes(nodes).gpus_per_node(gpus).gpu(to::gpus::a100_80gb);
}
/// The classes of a balanced job's stages: (first stage, ops [a, b)).
std::vector<std::pair<std::size_t, std::size_t>> stage_classes(const to::op_graph& g, const to::balanced_partition& bp) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::size_t P = bp.starts.size();
  for (std::size_t s = 0; s < P; ++s) {
    bool seen = false;
    for (std::size_t t = 0; t < s; ++t)
      seen = seen || (bp.layers[t] == bp.layers[s] && (t == 0) == (s == 0) && (t + 1 == P) == (s + 1 == P));
    if (!seen) out.push_back({s, bp.starts[s]});
  }
  (void)g;
  return out;
}
}  // namespace

TEST_CASE("job regions: covered within a factor") {
  // found so far: (100, 10), (50, 20), (20, 40); limit 100
  const std::vector<to::known_point> u{{100, 10, {2, 2}}, {50, 20, {2, 2}}, {20, 40, {2, 2}}};
  // (96, 12) is not dominated by (100, 10) but covered within 1.05 (100 <= 100.8), not 1.04
  CHECK(!to::dominated_by(u, 96, 12, {3, 3}));
  CHECK(to::dominated_by(u, 96, 12, {3, 3}, 1.05));
  CHECK(!to::dominated_by(u, 96, 12, {3, 3}, 1.04));
  // nothing covers a point of less memory than every point found
  CHECK(!to::dominated_by(u, 1000, 9, {3, 3}, 2.0));
  to::job_region r;
  r.time = 48;
  r.memory = 20;
  CHECK(!to::check_region(u, r, {3, 3}, 100).dominated);  // (50, 20) is slower than 48
  CHECK(to::check_region(u, r, {3, 3}, 100, 1.05).dominated);
  r.memory = 19;  // then (100, 10) must cover 48 at memory 19
  CHECK(!to::check_region(u, r, {3, 3}, 100, 1.05).dominated);
  CHECK(to::check_region(u, r, {3, 3}, 100, 100.0 / 48).dominated);
  // a staircase within a factor: (95 + 4, 12) and (45 + 4, 22) are not dominated by
  // (100, 10) and (50, 20); within 1.03 they are covered (100 <= 101.97, 50 <= 50.47),
  // within 1.01 the first is not (100 > 99.99)
  struct pt {
    to::cost_t time, memory;
  };
  to::job_region s;
  s.sends = 4;
  const std::vector<pt> stair{{95, 12}, {45, 22}};
  CHECK(!to::staircase_dominated(u, stair, s, {3, 3}, 100));
  CHECK(to::staircase_dominated(u, stair, s, {3, 3}, 100, 1.03));
  CHECK(!to::staircase_dominated(u, stair, s, {3, 3}, 100, 1.01));
}

TEST_CASE("fixed-slope lines: below every point of a stage, brackets around the scalar search") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 4);
  std::size_t checked = 0, settled = 0;
  for (const to::index_t p : {1, 2, 4})
    for (const to::index_t k : {4, 8})
      for (const double eps : {0.0, 0.1}) {
        CAPTURE(p);
        CAPTURE(k);
        CAPTURE(eps);
        auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {k});
        o.solve.epsilon = eps;
        const auto micro = to::with_batch(g, g.batch / k);
        const auto bp = to::balance_stages(g, p);
        for (const auto& [s, a] : stage_classes(g, bp)) {
          const std::size_t b = s + 1 < std::size_t(p) ? bp.starts[s + 1] : g.ops.size();
          auto r = to::detail::build_stage(micro, a, b, cl, o, k, p, to::index_t(s));
          const auto st = to::detail::stage_setup_of(*r.sp, o.mode);
          to::detail::solve_stage(r, st, o.solve);
          REQUIRE(!r.fr.points.empty());
          const auto corner = to::detail::stage_minima_corner(*r.sp, o.solve.memory_limit, true);
          const auto w = to::detail::fixed_slopes(corner.time, corner.memory, o.solve.memory_limit);
          for (std::size_t i = 1; i < w.size(); ++i) CHECK(w[i] == doctest::Approx(w[i - 1] / 2));
          for (const bool edges : {false, true}) {
            const auto lines = to::detail::stage_minima_lines(*r.sp, w, o.solve.memory_limit, edges);
            for (std::size_t i = 0; i < w.size(); ++i) {
              CAPTURE(i);
              // the same bound as stage_minima_line at that slope, in one pass for all
              CHECK(lines[i] == to::detail::stage_minima_line(*r.sp, w[i], o.solve.memory_limit, edges));
              for (const auto& q : r.fr.points) CHECK(double(lines[i]) <= double(q.memory) + w[i] * double(q.time));
            }
          }
          for (std::size_t i = 0; i < w.size(); i += 3) {
            CAPTURE(i);
            const to::cost_t line = to::detail::stage_line(*r.sp, st, w[i], 0);
            const auto [lo, hi] = to::detail::line_bracket(*r.sp, r.fr, w[i], eps, o.solve.memory_limit);
            CHECK(lo <= line);
            CHECK(line <= hi);
            ++checked;
            settled += hi - lo < (hi + 99) / 100;  // within 1 %
          }
        }
      }
  CHECK(checked > 50);
  MESSAGE("line brackets within 1 %: " << settled << " of " << checked);
}

TEST_CASE("the commit test: its brackets decide as the searched lines do (random points found)") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = mesh_cluster(1, 4);
  std::mt19937 rng(5);
  std::size_t by_brackets = 0, covered = 0, compared = 0;
  for (const double eps : {0.0, 0.1})
    for (const to::index_t p : {2, 4}) {
      CAPTURE(eps);
      CAPTURE(p);
      const to::index_t k = 8;
      auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {k});
      o.solve.epsilon = eps;
      to::solve_options so = o.solve;
      so.epsilon = std::pow(1 + eps, to::detail::stage_epsilon_share) - 1;
      const auto micro = to::with_batch(g, g.batch / k);
      const auto bp = to::balance_stages(g, p);
      to::detail::balanced_job job(g, micro, cl, o, p, k, bp, so);
      const auto none = [] { return std::vector<to::known_point>{}; };
      REQUIRE(!job.bound(none));
      auto r = job.search(none);
      REQUIRE(r.bound);
      REQUIRE(!r.points.empty());
      // nothing is searched without points found: every line comes from the brackets
      for (const bool s : r.bound->searched) CHECK(!s);
      to::detail::job_bound all = *r.bound;  // every line searched
      for (std::size_t i = 0; i < to::detail::region_slopes; ++i) {
        all.region.lines[i].s = std::max(all.region.lines[i].s, all.line(i));
        all.searched[i] = true;
        CHECK(r.bound->lo[i] <= all.region.lines[i].s);
        CHECK(all.region.lines[i].s <= std::max(r.bound->hi[i], r.bound->region.lines[i].s));
      }
      const std::pair<int, int> key{int(p), int(k)};
      std::uniform_real_distribution<double> f(0.85, 1.2);
      for (int trial = 0; trial < 200; ++trial) {
        // points found: the job's own points, each moved by a random factor in time and memory
        std::vector<to::known_point> u;
        for (const auto& q : r.points)
          if (rng() % 3 == 0)
            u.push_back({to::cost_t(double(q.time) * f(rng)), to::cost_t(double(q.memory) * f(rng)), {1, 1}});
        std::sort(u.begin(), u.end(), [](const auto& x, const auto& y) {
          return x.memory != y.memory ? x.memory < y.memory : x.time < y.time;
        });
        std::vector<to::known_point> stair;
        for (auto& q : u)
          if (stair.empty() || q.time < stair.back().time) stair.push_back(q);
        const bool want = to::detail::job_covered(stair, all, key, o.solve.memory_limit);
        to::detail::job_bound b = *r.bound;
        const auto quick = to::detail::job_covered_by_brackets(stair, b, key, o.solve.memory_limit);
        if (quick) {
          CHECK(*quick == want);
          ++by_brackets;
        }
        CHECK(to::detail::job_covered(stair, b, key, o.solve.memory_limit) == want);
        covered += want;
        ++compared;
      }
    }
  MESSAGE("decided on the brackets: " << by_brackets << " of " << compared << ", covered " << covered);
  CHECK(covered > 0);
  CHECK(covered < compared);
  CHECK(by_brackets > 0);
}

TEST_CASE("jobs skipped under epsilon: every point of every job covered, whatever the thread count") {
  // compute-bound layers: larger k (smaller bubble) beats smaller k, so jobs are covered
  const auto g = to::models::lower("gpt:layers=4,hidden=4096,heads=32,seq=1024,vocab=512,batch=16");
  const auto cl = mesh_cluster(2, 4);
  for (const double eps : {0.05, 0.3}) {
    CAPTURE(eps);
    auto o = to::testing::small_pipeline_options(to::partition_search::balanced, {}, 1);
    o.mode = to::search_mode::exact;
    o.solve.epsilon = eps;
    o.skip_by_bounds = false;
    const auto all = to::plan_pipeline_frontier(g, cl, o);  // every job searched
    REQUIRE(all.points.size() > 2);
    o.skip_by_bounds = true;
    const auto one = to::plan_pipeline_frontier(g, cl, o);
    CHECK(one.skipped > 0);
    for (const auto& q : all.points) {
      bool cover = false;
      for (const auto& x : one.points)
        cover = cover || (x.memory <= q.memory && double(x.time) <= (1 + eps) * double(q.time));
      CHECK(cover);
    }
    for (const auto& x : one.points) {  // and every point is a plan that re-costs exactly
      const auto c = to::evaluate_pipeline(g, x.plan, cl);
      CHECK(c.time == x.time);
      CHECK(c.memory == x.memory);
    }
    o.threads = 3;
    const auto three = to::plan_pipeline_frontier(g, cl, o);
    REQUIRE(three.points.size() == one.points.size());
    for (std::size_t i = 0; i < one.points.size(); ++i) {
      CHECK(three.points[i].time == one.points[i].time);
      CHECK(three.points[i].memory == one.points[i].memory);
      CHECK(three.points[i].plan.degree == one.points[i].plan.degree);
      CHECK(three.points[i].plan.micro_batches == one.points[i].plan.micro_batches);
      CHECK(three.points[i].plan.configs == one.points[i].plan.configs);
    }
    CHECK(three.skipped == one.skipped);
  }
}

}  // namespace plan_job_cover_test_file
