// Plans from the planner's frontier (least memory, middle, fastest) train like one device on 2, 4 and 8 local devices.
#include <doctest/doctest.h>
#include <tensoropt/plan/planner.hpp>
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace trainer_frontier_test_file {

using namespace rt_test;

namespace {
template <class M>
void check_frontier(std::initializer_list<int> counts) {
  const auto g = to::lower<M>();
  const auto ref = run(g, data_parallel(g, 1), 3);
  for (int n : counts) {
    to::planner_options po;
    po.baselines = false;
    po.micro_batches = {1, 2};
    const auto pf = to::plan_frontier(g, to::cluster::single_node(n), po);
    REQUIRE(pf.points.size() >= 1);
    for (const auto& chosen : {pf.least_memory(), pf.middle(), pf.fastest()}) {
      REQUIRE(chosen.has_value());
      const rt::training_plan p = chosen->training_plan();
      CHECK(p.mesh.devices() == n);
      CHECK(p.configs.size() == g.ops.size());
      CHECK(p.micro_batches == chosen->micro_batches());
      const std::string what = "frontier point #" + std::to_string(chosen->index()) + " of " + std::to_string(pf.size());
      check_against(g, ref, p, what.c_str());
    }
  }
}
}  // namespace

TEST_CASE("mlp: frontier points") { check_frontier<mlp>({2, 4, 8}); }
TEST_CASE("gpt: frontier points") { check_frontier<gpt>({2, 4, 8}); }
TEST_CASE("cnn: frontier points") { check_frontier<cnn>({2, 4, 8}); }
// Planning the MoE on 8 devices takes ~3 s: 2 and 4 only.
TEST_CASE("moe: frontier points") { check_frontier<moe>({2, 4}); }
}  // namespace trainer_frontier_test_file
