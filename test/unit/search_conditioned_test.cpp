// Tests of solve_conditioned's wanted cells (classes of the kept nodes) against the full table.
#include <doctest/doctest.h>
#include <algorithm>
#include <cstdint>
#include <random>
#include <tensoropt/search/solve.hpp>
#include "random_problem.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_conditioned_test_file {

namespace to = tensoropt;

namespace {

struct cost_pair {
  std::int64_t time, memory;
  bool operator==(const cost_pair&) const = default;
};

std::vector<cost_pair> cell_costs(const to::conditioned_frontier& f, std::size_t c) {
  std::vector<cost_pair> out;
  for (std::size_t q = f.start[c]; q < f.start[c + 1]; ++q) out.push_back({f.pts[q].time, f.pts[q].memory});
  return out;
}

// A random connected problem (a DAG over a chain, or a series-parallel graph) whose costs
// are up to 1000; configs of some nodes share their edge rows, so that grouping has
// something to group (rand_problem::random_problem).
to::problem random_problem(std::mt19937_64& rng, int n, int kind = rand_problem::shape_kind::dag) {
  return rand_problem::random_problem(rng, kind, n, 4, true, 1000, 1000);
}

}  // namespace

TEST_CASE("wanted cells of a conditioned frontier equal the full table's; the others are empty") {
  std::mt19937_64 rng(27);
  int masked_cells = 0, wanted_cells = 0;
  for (int it = 0; it < 400; ++it) {
    CAPTURE(it);
    const int n = 3 + int(rng() % 6);
    const auto p = random_problem(rng, n, it % 2 ? rand_problem::shape_kind::dag : rand_problem::shape_kind::series_parallel);
    std::vector<int> keep;
    const int kept = 2 + int(rng() % 2);
    while (int(keep.size()) < kept) {
      const int v = int(rng() % std::uint64_t(n));
      if (std::find(keep.begin(), keep.end(), v) == keep.end()) keep.push_back(v);
    }
    std::vector<std::vector<int>> classes;
    for (std::size_t i = 0; i < keep.size(); ++i) {
      std::vector<int> cls;
      if (i < 2 || rng() % 2)  // at least two kept nodes with classes
        for (std::size_t c = 0; c < p.nodes[std::size_t(keep[i])].configs.size(); ++c) cls.push_back(int(rng() % 3));
      classes.push_back(cls);
    }
    to::solve_options o;
    o.group_configs = it % 3 != 0;
    const auto full = to::solve_conditioned(p, keep, o);
    const auto part = to::solve_conditioned(p, keep, o, classes);
    REQUIRE(part.kept == full.kept);
    REQUIRE(part.dims == full.dims);
    REQUIRE(part.configs == full.configs);
    REQUIRE(part.cells() == full.cells());
    std::vector<std::size_t> idx(full.kept.size(), 0);
    for (std::size_t c = 0; c < full.cells(); ++c) {
      // wanted: some class taken by a config of every kept node with classes
      std::vector<int> common;
      bool first = true;
      for (std::size_t i = 0; i < full.kept.size(); ++i) {
        const std::size_t at = std::size_t(std::find(keep.begin(), keep.end(), full.kept[i]) - keep.begin());
        if (classes[at].empty()) continue;
        std::vector<int> mine;
        for (int x : full.configs[i][idx[i]]) mine.push_back(classes[at][std::size_t(x)]);
        std::sort(mine.begin(), mine.end());
        if (first) common = mine;
        else {
          std::vector<int> both;
          std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::back_inserter(both));
          common = both;
        }
        first = false;
      }
      if (common.empty()) {
        CHECK(cell_costs(part, c).empty());
        masked_cells += !cell_costs(full, c).empty();
      } else {
        CHECK(cell_costs(part, c) == cell_costs(full, c));
        ++wanted_cells;
      }
      for (std::size_t i = idx.size(); i-- > 0;) {
        if (++idx[i] < full.dims[i]) break;
        idx[i] = 0;
      }
    }
    // every point of a wanted cell is a strategy whose cost re-computes from the problem
    std::vector<int> choice;
    for (std::size_t q = 0; q < part.pts.size(); ++q) {
      choice.assign(p.nodes.size(), -1);
      part.tr.recover(part.pts[q].tag, choice);
      bool whole = std::all_of(choice.begin(), choice.end(), [](int c) { return c >= 0; });
      // kept nodes carry no tag of their own: fill them from the cell's layout-config
      if (!whole) continue;
      const auto c = to::cost_of(p, choice);
      CHECK(c.time == part.pts[q].time);
      CHECK(c.memory == part.pts[q].memory);
    }
  }
  // the test reaches both kinds of cells
  CHECK(masked_cells > 50);
  CHECK(wanted_cells > 50);
}

TEST_CASE("classes that do not match the kept nodes are refused in words") {
  std::mt19937_64 rng(3);
  const auto p = random_problem(rng, 4);
  CHECK_THROWS_WITH_AS(to::solve_conditioned(p, {0, 1}, {}, {{0}}),
                       doctest::Contains("give classes for every kept node"), to::invalid_argument);
  CHECK_THROWS_WITH_AS(to::solve_conditioned(p, {0, 1}, {}, {std::vector<int>(9, 0), {}}),
                       doctest::Contains("one class per config"), to::invalid_argument);
}
}  // namespace search_conditioned_test_file
