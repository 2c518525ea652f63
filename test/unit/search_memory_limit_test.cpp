// A memory limit cuts the frontier exactly: the points below it, nothing lost.
#include <tensoropt/search/solve.hpp>
#include <doctest/doctest.h>
#include <random>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_memory_limit_test_file {

using namespace tensoropt;

namespace {
// A random DAG: a chain with extra forward edges (some crossing), 1-6 configs a node.
problem random_problem(std::mt19937& rng, int n) {
  problem p;
  p.memory_offset = rng() % 50;
  std::uniform_int_distribution<int> nc(1, 6), cost(0, 100);
  for (int i = 0; i < n; ++i) {
    problem_node node;
    node.name = "n" + std::to_string(i);
    for (int c = nc(rng); c-- > 0;)
      node.configs.push_back({"c", cost(rng) * 1000, cost(rng) * 7});
    p.nodes.push_back(node);
  }
  auto edge = [&](int a, int b) {
    problem_edge e{a, b, {}, {}};
    for (std::size_t k = 0; k < p.nodes[a].configs.size() * p.nodes[b].configs.size(); ++k) {
      e.time.push_back(cost(rng) * 100);
      e.memory.push_back(cost(rng) * 3);
    }
    p.edges.push_back(e);
  };
  for (int i = 1; i < n; ++i) edge(i - 1, i);
  for (int i = 2; i < n; ++i)
    if (rng() % 3 == 0) edge(int(rng() % unsigned(i - 1)), i);
  return p;
}
}  // namespace

TEST_CASE("solve with a memory limit returns exactly the exact frontier's points below it") {
  std::mt19937 rng(7);
  int nonempty = 0, cut = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const auto p = random_problem(rng, 3 + trial % 7);
    const auto full = solve(p);
    REQUIRE(!full.points.empty());
    // limits: below everything, inside the frontier, above everything
    const cost_t lo = full.points.front().memory, hi = full.points.back().memory;
    for (cost_t limit : {lo - 1, lo, (lo + hi) / 2, hi, hi + 1}) {
      solve_options o;
      o.memory_limit = limit;
      const auto r = solve(p, o);
      std::vector<frontier_point> want;
      for (auto& q : full.points)
        if (q.memory <= limit) want.push_back(q);
      REQUIRE(r.points.size() == want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        CHECK(r.points[i].time == want[i].time);
        CHECK(r.points[i].memory == want[i].memory);
        const auto c = cost_of(p, r.points[i].choice);
        CHECK(c.time == r.points[i].time);
        CHECK(c.memory == r.points[i].memory);
      }
      nonempty += !want.empty();
      cut += want.size() < full.points.size();
    }
  }
  CHECK(nonempty > 300);  // the checks above were not vacuous
  CHECK(cut > 200);
}
}  // namespace search_memory_limit_test_file
