// Typed queries on a planned frontier: plans or no value, seconds and bytes out,
// a training plan straight from the chosen point.
#include <doctest/doctest.h>
#include <tensoropt/models/cnn.hpp>
#include <tensoropt/plan/planner.hpp>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_planned_frontier_test_file {

using namespace tensoropt;

namespace {
using mlp = models::mlp_model<64, 256, 1024, 4, 16, "query-mlp">;
planned_frontier small_frontier() {
  planner_options o;
  o.micro_batches = {1, 2};
  o.baselines = false;
  return plan_frontier(lower<mlp>(), cluster::nodes(1).gpus_per_node(4).gpu(gpus::v100_16gb), o);
}
}  // namespace

TEST_CASE("queries return plans whose time and memory are the points' in typed units") {
  const auto pf = small_frontier();
  REQUIRE(pf.size() >= 3);
  const auto least = pf.least_memory(), fast = pf.fastest();
  REQUIRE(least);
  REQUIRE(fast);
  CHECK(least->index() == 0);
  CHECK(fast->index() == pf.size() - 1);
  CHECK(least->memory() < fast->memory());
  CHECK(least->time() > fast->time());
  for (std::size_t i = 0; i < pf.size(); ++i) {
    const auto p = pf.at(i);
    CHECK(p.time() == seconds(double(pf.points[i].time) / 1e12));
    CHECK(p.memory() == bytes(double(budget_memory(pf.points[i]))));  // the runtime peak
    CHECK(p.additive_memory() == bytes(double(pf.points[i].memory)));
    CHECK(p.micro_batches() == pf.points[i].micro_batches);
    // The fastest plan within exactly this point's memory is this point.
    const auto q = pf.fastest_within(p.memory());
    REQUIRE(q);
    CHECK(q->index() == i);
    // A byte less: the point before it (or nothing before the first).
    const auto r = pf.fastest_within(p.memory() - bytes(1));
    if (i == 0) CHECK_FALSE(r.has_value());
    else CHECK(r->index() == i - 1);
  }
  CHECK_THROWS_AS((void)pf.at(pf.size()), invalid_argument);
  CHECK(pf.no_fit_message(bytes(1)).find("the least memory is " + format_bytes(least->memory())) !=
        std::string::npos);
}

TEST_CASE("least memory within a percentage of the fastest, and the middle plan") {
  const auto pf = small_frontier();
  for (double pct : {0.0, 5.0, 50.0, 1000.0}) {
    const auto p = pf.least_memory_within(pct);
    REQUIRE(p);
    CHECK(p->time() <= pf.fastest()->time() * (1 + pct / 100));
    if (p->index() > 0) CHECK(pf.at(p->index() - 1).time() > pf.fastest()->time() * (1 + pct / 100));
  }
  CHECK(pf.least_memory_within(0)->index() == pf.size() - 1);
  CHECK_THROWS_AS((void)pf.least_memory_within(-1), invalid_argument);
  const auto mid = pf.middle();
  REQUIRE(mid);
  const double gm = std::sqrt(pf.least_memory()->memory() / 1_B * (pf.fastest()->memory() / 1_B));
  CHECK(mid->memory() <= bytes(gm));
  if (mid->index() + 1 < pf.size()) CHECK(pf.at(mid->index() + 1).memory() > bytes(gm));
}

TEST_CASE("a micro-batch count listed twice is an error naming it") {
  planner_options o;
  o.micro_batches = {1, 2, 1};
  o.baselines = false;
  CHECK_THROWS_WITH_AS(plan_frontier(lower<mlp>(), cluster::nodes(1).gpus_per_node(4).gpu(gpus::v100_16gb), o),
                       doctest::Contains("micro-batch count 1 is listed twice"), invalid_argument);
}

TEST_CASE("an empty frontier answers no plan, not a sentinel") {
  planned_frontier empty;
  CHECK_FALSE(empty.least_memory());
  CHECK_FALSE(empty.fastest());
  CHECK_FALSE(empty.middle());
  CHECK_FALSE(empty.fastest_within(1_TiB));
  CHECK_FALSE(empty.least_memory_within(10));
}

TEST_CASE("a training plan comes straight from the chosen point") {
  const auto pf = small_frontier();
  const auto p = pf.fastest_within(pf.at(pf.size() / 2).memory());
  REQUIRE(p);
  const training_plan tp = p->training_plan();
  CHECK(tp.configs == pf.op_configs(p->index()));
  CHECK(tp.configs.size() == p->graph().ops.size());
  CHECK(tp.micro_batches == p->micro_batches());
  CHECK(tp.mesh.devices() == 4);
  CHECK(p->summary() == pf.summary(p->index()));
  // The report highlights the same plan.
  const auto rep = make_report(pf, "q", p, p->memory());
  CHECK(rep.chosen == int(p->index()));
  CHECK(rep.chosen_ops.size() == tp.configs.size());
  CHECK(make_report(pf, "q").chosen == -1);
  const auto other = small_frontier();
  CHECK_THROWS_AS((void)make_report(other, "q", p), invalid_argument);
}
}  // namespace plan_planned_frontier_test_file
