// Resource exploration: the fewest devices that fit, with and without a time target.
#include <tensoropt/models/cnn.hpp>
#include <tensoropt/plan/explore.hpp>
#include <doctest/doctest.h>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_explore_test_file {

using namespace tensoropt;

namespace {
using mlp = models::mlp_model<64, 256, 1024, 4, 16, "explore-mlp">;
cluster on(index_t n) { return cluster::nodes(1).gpus_per_node(n).gpu(gpus::v100_16gb); }
planner_options small() {
  planner_options o;
  o.micro_batches = {1, 4};
  return o;
}
}  // namespace

TEST_CASE("the fewest devices that fit a budget, and the table behind it") {
  const auto g = lower<mlp>();
  const std::vector<index_t> counts{1, 2, 4, 8};
  const auto all = explore_device_counts(g, counts, on, std::nullopt, std::nullopt, small());
  REQUIRE(all.rows.size() == 4);
  // The least memory per device falls as devices are added.
  for (std::size_t i = 1; i < all.rows.size(); ++i) CHECK(all.rows[i].least_memory < all.rows[i - 1].least_memory);
  // A budget between the least memory on 2 and on 1 device: 2 is the fewest.
  const bytes budget = (all.rows[0].least_memory + all.rows[1].least_memory) / 2;
  const auto ex = explore_device_counts(g, counts, on, budget, std::nullopt, small());
  CHECK(ex.fewest == 2);
  CHECK(!ex.rows[0].fit.has_value());
  CHECK(ex.rows[1].fit.has_value());
  CHECK(ex.rows[1].fit_memory <= budget);
  // A time target only the fastest count meets: that count is the answer.
  seconds target(1e300);
  index_t fastest = 0;
  for (auto& r : ex.rows)
    if (r.fit && r.fit_time < target) { target = r.fit_time; fastest = r.devices; }
  REQUIRE(fastest > 0);
  const auto fast = explore_device_counts(g, counts, on, budget, target, small());
  CHECK(fast.fewest == fastest);
  CHECK(fast.rows[0].meets == false);
  // Nothing meets an impossible target.
  CHECK(explore_device_counts(g, counts, on, budget, from_picoseconds(1), small()).fewest == 0);
  CHECK_THROWS_AS(explore_device_counts(g, {}, on, std::nullopt, std::nullopt, small()), invalid_argument);
}
}  // namespace plan_explore_test_file
