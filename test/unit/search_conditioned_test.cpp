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
    // the full table ungrouped: one cell per assignment of configs to the kept nodes
    to::solve_options ungrouped = o;
    ungrouped.group_configs = false;
    const auto full = to::solve_conditioned(p, keep, ungrouped);
    const auto part = to::solve_conditioned(p, keep, o, classes);
    REQUIRE(part.kept == full.kept);
    for (std::size_t i = 0; i < full.kept.size(); ++i)
      REQUIRE(full.dims[i] == p.nodes[std::size_t(full.kept[i])].configs.size());
    std::vector<std::size_t> at(full.kept.size());  // kept node i's entry in keep / classes
    for (std::size_t i = 0; i < full.kept.size(); ++i)
      at[i] = std::size_t(std::find(keep.begin(), keep.end(), full.kept[i]) - keep.begin());
    // a kept node with classes groups only configs of one class
    for (std::size_t i = 0; i < part.kept.size(); ++i)
      if (!classes[at[i]].empty())
        for (const auto& g : part.configs[i])
          for (int x : g) CHECK(classes[at[i]][std::size_t(x)] == classes[at[i]][std::size_t(g[0])]);
    std::vector<std::size_t> idx(part.kept.size(), 0);
    for (std::size_t c = 0; c < part.cells(); ++c) {
      // wanted: the kept nodes with classes share the class of their layout-configs
      std::vector<int> common;
      bool first = true;
      for (std::size_t i = 0; i < part.kept.size(); ++i) {
        if (classes[at[i]].empty()) continue;
        const int mine = classes[at[i]][std::size_t(part.configs[i][idx[i]][0])];
        if (first) common = {mine};
        else if (common.empty() || common[0] != mine) common.clear();
        first = false;
      }
      // the cell's frontier: the union of the full table's cells over its configs
      std::vector<cost_pair> all;
      std::vector<std::size_t> pick(part.kept.size(), 0);
      while (true) {
        std::size_t fc = 0;
        for (std::size_t i = 0; i < part.kept.size(); ++i)
          fc = fc * full.dims[i] + std::size_t(part.configs[i][idx[i]][pick[i]]);
        for (auto& q : cell_costs(full, fc)) all.push_back(q);
        std::size_t i = pick.size();
        while (i-- > 0) {
          if (++pick[i] < part.configs[i][idx[i]].size()) break;
          pick[i] = 0;
        }
        if (i == std::size_t(-1)) break;
      }
      std::sort(all.begin(), all.end(), [](const cost_pair& x, const cost_pair& y) {
        return x.memory != y.memory ? x.memory < y.memory : x.time < y.time;
      });
      std::vector<cost_pair> want;
      for (auto& q : all)
        if (want.empty() || q.time < want.back().time) want.push_back(q);
      if (common.empty()) {
        CHECK(cell_costs(part, c).empty());
        masked_cells += !want.empty();
      } else {
        CHECK(cell_costs(part, c) == want);
        ++wanted_cells;
      }
      for (std::size_t i = idx.size(); i-- > 0;) {
        if (++idx[i] < part.dims[i]) break;
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
  const std::vector<int> negative(p.nodes[0].configs.size(), -1);
  CHECK_THROWS_WITH_AS(to::solve_conditioned(p, {0, 1}, {}, {negative, {}}), doctest::Contains("classes are >= 0"),
                       to::invalid_argument);
  // tied nodes: not kept, in range, one class (>= 0) per config
  const std::vector<int> zeros(p.nodes[2].configs.size(), 0);
  CHECK_THROWS_WITH_AS(to::solve_conditioned(p, {0, 1}, {}, {}, {{1, zeros}}), doctest::Contains("out of range or kept"),
                       to::invalid_argument);
  CHECK_THROWS_WITH_AS(to::solve_conditioned(p, {0, 1}, {}, {}, {{9, zeros}}), doctest::Contains("out of range or kept"),
                       to::invalid_argument);
  CHECK_THROWS_WITH_AS(to::solve_conditioned(p, {0, 1}, {}, {}, {{2, std::vector<int>(zeros.size(), -1)}}),
                       doctest::Contains("one class (>= 0) per config"), to::invalid_argument);
  CHECK_NOTHROW(to::solve_conditioned(p, {0, 1}, {}, {}, {{2, zeros}}));
}
}  // namespace search_conditioned_test_file
