// Tests of the frontier algebra and the search engine against brute-force enumeration.
#include <doctest/doctest.h>
#include <cstdint>
#include <random>
#include <tensoropt/search/query.hpp>
#include <tensoropt/search/solve.hpp>
#include <tensoropt/search/detail/cell_merge.hpp>
#include <tensoropt/search/detail/chain_merge.hpp>
#include <tensoropt/search/detail/heap_front.hpp>
#include <tensoropt/search/detail/scalar_problem.hpp>
#include <algorithm>
#include <cmath>
#include <vector>
#include "random_problem.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_solve_test_file {

namespace to = tensoropt;
using namespace rand_problem;

namespace {

std::vector<cost_pair> costs(const to::frontier_result& r) {
  std::vector<cost_pair> c;
  for (auto& q : r.points) c.push_back({q.time, q.memory});
  return c;
}

void check_recost(const to::problem& p, const to::frontier_result& r) {
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto c = to::cost_of(p, r.points[i].choice);
    CHECK(c.time == r.points[i].time);
    CHECK(c.memory == r.points[i].memory);
    if (i > 0) {
      CHECK(r.points[i - 1].memory < r.points[i].memory);
      CHECK(r.points[i - 1].time > r.points[i].time);
    }
  }
}

std::size_t strategies(const to::problem& p) {
  std::size_t n = 1;
  for (auto& nd : p.nodes) n *= nd.configs.size();
  return n;
}

}  // namespace

TEST_CASE("frontier algebra: sum and union give pruned staircases with joined back-pointers") {
  to::trace t;
  const auto la = t.leaf(0, 0), lb = t.leaf(0, 1), lc = t.leaf(1, 0), ld = t.leaf(1, 1);
  const auto a = to::make_frontier({{5, 1, la}, {1, 4, lb}, {6, 2, -1}, {5, 2, -1}});
  REQUIRE(a.size() == 2);
  CHECK(a.is_staircase());
  CHECK(a.points[0] == to::frontier::point{5, 1, la});
  const auto b = to::make_frontier({{3, 0, lc}, {0, 3, ld}});
  const auto s = to::minkowski_sum(a, b, t);
  // sums: (8,1) (5,4) (4,4) (1,7) -> (8,1) (4,4) (1,7)
  REQUIRE(s.size() == 3);
  CHECK(s.points[0].time == 8);
  CHECK(s.points[1].time == 4);
  CHECK(s.points[1].memory == 4);
  CHECK(s.points[2].time == 1);
  std::vector<int> choice(2, -1);
  t.recover(s.points[1].tag, choice);
  CHECK(choice == std::vector<int>{1, 0});
  const auto u = to::frontier_union(a, b);
  // (3,0) (0,3) dominate a's points except none: (5,1) dominated by (3,0); (1,4) by (0,3)
  CHECK(u == b);
  const auto v = to::frontier_union(a, to::make_frontier({{2, 2, -1}}));
  CHECK(v.size() == 3);
  CHECK(v.is_staircase());
}

TEST_CASE("epsilon filter keeps a cover within (1 + delta) in time and never worse in memory") {
  std::vector<to::frontier::point> pts;
  for (int i = 0; i < 50; ++i) pts.push_back({1000 - 10 * i, i, -1});
  to::trace t;
  const auto exact = to::make_frontier(pts);
  const auto coarse = to::frontier_union(exact, to::frontier{}, 0.05);
  CHECK(coarse.size() < exact.size());
  for (auto& p : exact.points) {
    bool covered = false;
    for (auto& q : coarse.points)
      covered = covered || (q.memory <= p.memory && double(q.time) <= 1.05 * double(p.time));
    CHECK(covered);
  }
}

TEST_CASE("exact frontier equals brute force on 400 random problems; every choice re-costs exactly") {
  std::mt19937_64 rng(12345);
  int checked = 0, points = 0;
  for (int it = 0; it < 400; ++it) {
    const int kind = it % 5;
    const int nodes = 1 + int(rng() % 7);
    const int max_configs = 1 + int(rng() % 8);
    const bool real = (it / 5) % 2 == 1;
    const auto p = random_problem(rng, kind, nodes, max_configs, real);
    if (strategies(p) > 200000) continue;
    CAPTURE(it);
    const auto r = to::solve(p, {.epsilon = 0,
                                 .width_limit = 1u << 20,
                                 .group_configs = it % 7 != 0,
                                 .compact_after = it % 3 == 0 ? 4 : std::size_t(1) << 20});
    CHECK(r.exact);
    CHECK(costs(r) == brute_force(p));
    check_recost(p, r);
    ++checked;
    points += int(r.points.size());
  }
  CHECK(checked >= 300);
  MESSAGE("problems checked: " << checked << ", frontier points: " << points);
}

// Single-objective problems: with every time 0 (as the planners' least-memory and weighted
// searches make them) the eliminator takes its one-point-per-cell pass; with every memory 0
// the merge runs on one-point frontiers.
TEST_CASE("single-objective problems: the one point is brute force's least, and re-costs exactly") {
  std::mt19937_64 rng(777);
  int checked = 0;
  for (int it = 0; it < 300; ++it) {
    auto p = random_problem(rng, it % 5, 1 + int(rng() % 7), 1 + int(rng() % 8), (it / 5) % 2 == 1);
    if (strategies(p) > 200000) continue;
    CAPTURE(it);
    const bool zero_time = it % 2 == 0;
    for (auto& n : p.nodes)
      for (auto& c : n.configs) (zero_time ? c.time : c.memory) = 0;
    for (auto& e : p.edges)
      for (std::size_t x = 0; x < e.time.size(); ++x) (zero_time ? e.time[x] : e.memory[x]) = 0;
    const auto r = to::solve(p);
    CHECK(costs(r) == brute_force(p));
    CHECK(r.points.size() == 1);
    check_recost(p, r);
    ++checked;
  }
  CHECK(checked >= 200);
}

TEST_CASE("chains, trees and series-parallel graphs never need a factor over more than two nodes") {
  std::mt19937_64 rng(777);
  for (int it = 0; it < 60; ++it) {
    const int kind = it % 3;  // chain, tree, series-parallel
    const auto p = random_problem(rng, kind, 2 + int(rng() % 30), 4, true);
    CAPTURE(it);
    const auto r = to::solve(p);
    CHECK(r.max_width <= 2);
    check_recost(p, r);
  }
}

TEST_CASE("epsilon frontiers satisfy the bound and re-cost exactly") {
  std::mt19937_64 rng(99);
  for (int it = 0; it < 120; ++it) {
    const auto p = random_problem(rng, it % 5, 2 + int(rng() % 6), 6, true);
    if (strategies(p) > 200000) continue;
    const double eps = it % 3 == 0 ? 0.01 : it % 3 == 1 ? 0.1 : 0.5;
    CAPTURE(it);
    const auto exact = brute_force(p);
    const auto r = to::solve(p, {.epsilon = eps});
    CHECK(!r.exact);
    check_recost(p, r);
    for (auto& e : exact) {
      bool covered = false;
      for (auto& q : r.points)
        covered = covered || (q.memory <= e.memory && double(q.time) <= (1 + eps) * double(e.time));
      CHECK(covered);
    }
    // no returned point beats the exact frontier
    for (auto& q : r.points) {
      bool dominated = false;
      for (auto& e : exact) dominated = dominated || (e.memory <= q.memory && e.time <= q.time);
      CHECK(dominated);
    }
  }
}

// Parallel branches between two nodes (an Inception module's branches between its input and
// its concat) leave several factors over one pair; with three or more multi-point factors at
// an elimination the search joins those first (eliminator.hpp, join_parallel). The joins must
// happen here, and leave the frontier exact, or within epsilon, with every strategy re-costing.
TEST_CASE("parallel branches: factors over one scope are joined first, exact and within epsilon") {
  std::mt19937_64 rng(2026);
  int checked = 0;
  std::size_t joins = 0;
  for (int it = 0; it < 240; ++it) {
    const auto p = random_problem(rng, shape_kind::modules, 4 + int(rng() % 8), 2 + int(rng() % 3), it % 4 != 0);
    if (strategies(p) > 200000) continue;
    CAPTURE(it);
    const auto exact = brute_force(p);
    const auto r = to::solve(p);
    CHECK(r.exact);
    CHECK(costs(r) == exact);
    check_recost(p, r);
    joins += r.parallel_joins;
    const double eps = it % 2 == 0 ? 0.05 : 0.3;
    const auto a = to::solve(p, {.epsilon = eps});
    check_recost(p, a);
    joins += a.parallel_joins;
    for (auto& e : exact) {
      bool covered = false;
      for (auto& q : a.points) covered = covered || (q.memory <= e.memory && double(q.time) <= (1 + eps) * double(e.time));
      CHECK(covered);
    }
    ++checked;
  }
  CHECK(checked >= 150);
  CHECK(joins >= 50);
  MESSAGE("module problems checked: " << checked << ", parallel joins: " << joins);
}

TEST_CASE("past the width limit the search restricts configs, says so, and stays feasible") {
  std::mt19937_64 rng(4242);
  int fallbacks = 0;
  for (int it = 0; it < 40; ++it) {
    const auto p = random_problem(rng, shape_kind::dag, 6, 8, true);
    if (strategies(p) > 300000) continue;
    const auto r = to::solve(p, {.width_limit = 8});
    check_recost(p, r);
    const auto exact = brute_force(p);
    for (auto& q : r.points) {
      bool dominated = false;
      for (auto& e : exact) dominated = dominated || (e.memory <= q.memory && e.time <= q.time);
      CHECK(dominated);
    }
    if (r.width_fallback) {
      ++fallbacks;
      CHECK(!r.exact);
      CHECK(!r.note.empty());
      CHECK(r.max_cells <= 8);
    }
  }
  CHECK(fallbacks > 0);
}

TEST_CASE("queries return the right point, or none, and explain infeasible budgets") {
  std::mt19937_64 rng(5);
  auto B = [](to::cost_t m) { return to::from_byte_count(m); };
  for (int it = 0; it < 50; ++it) {
    const auto p = random_problem(rng, it % 5, 2 + int(rng() % 5), 6, true);
    if (strategies(p) > 100000) continue;
    const auto r = to::solve(p);
    const auto all = brute_force(p);
    REQUIRE(to::least_memory(r).has_value());
    CHECK(r.points[*to::least_memory(r)].memory == all.front().memory);
    CHECK(r.points[*to::fastest(r)].time == all.back().time);
    for (auto& e : all) {
      // fastest within exactly e.memory is e itself
      const auto q = to::fastest_within(r, B(e.memory));
      REQUIRE(q.has_value());
      CHECK(r.points[*q].time == e.time);
      CHECK(r.points[*q].memory == e.memory);
    }
    if (all.front().memory > 0) CHECK(!to::fastest_within(r, B(all.front().memory - 1)).has_value());
    for (double pct : {0.0, 1.0, 10.0, 100.0}) {
      const auto q = to::least_memory_within(r, pct);
      REQUIRE(q.has_value());
      const double limit = double(all.back().time) * (1 + pct / 100);
      CHECK(double(r.points[*q].time) <= limit);
      for (auto& e : all)
        if (double(e.time) <= limit) CHECK(r.points[*q].memory <= e.memory);
    }
  }
  const to::frontier_result empty;
  CHECK(!to::least_memory(empty));
  CHECK(!to::fastest(empty));
  CHECK(!to::fastest_within(empty, to::from_byte_count(1) * 1e15));
  CHECK(!to::least_memory_within(empty, 5));
  to::problem one;
  one.nodes = {{"x", {{"a", 10, 1 << 30}}}};
  const auto r1 = to::solve(one);
  CHECK(!to::fastest_within(r1, B(1000)));
  CHECK(to::fastest_within(r1, B(1 << 30)) == std::optional<std::size_t>(0));
  CHECK(to::no_fit_message(r1.points, B(1000)).find("the least memory is " + to::format_bytes(to::bytes(to::gib))) != std::string::npos);
  CHECK_THROWS_AS((void)to::least_memory_within(r1, -1), to::invalid_argument);
}

TEST_CASE("solve rejects malformed in-memory problems and reports progress") {
  to::problem p;
  CHECK_THROWS_AS(to::solve(p), to::invalid_argument);
  p.nodes = {{"a", {{"x", 1, 1}}}, {"b", {{"y", 1, 1}, {"z", 2, 0}}}};
  p.edges = {{0, 1, {0}, {0, 0}}};
  CHECK_THROWS_WITH_AS(to::solve(p), doctest::Contains("edges[0].time: expected 1 x 2"),
                       to::invalid_argument);
  // every check names its field and position (the names are built only for the message)
  auto rejects = [](to::problem q, const char* what) {
    CAPTURE(what);
    CHECK_THROWS_WITH_AS(to::solve(q), doctest::Contains(what), to::invalid_argument);
  };
  const auto good = [&] {
    auto q = p;
    q.edges = {{0, 1, {0, 1}, {0, 0}}};
    return q;
  }();
  auto q = good;
  q.nodes[1].configs[1].time = -3;
  rejects(q, "nodes[1].configs[1].time: must be >= 0, got -3 ps");
  q = good;
  q.nodes[1].configs[0].memory = -4;
  rejects(q, "nodes[1].configs[0].memory: must be >= 0, got -4 bytes");
  q = good;
  q.nodes[0].configs.clear();
  rejects(q, "nodes[0].configs: node 0 'a' has no configs");
  q = good;
  q.edges[0].memory[1] = -1;
  rejects(q, "edges[0].memory[0][1]: must be >= 0, got -1");
  q = good;
  q.edges[0].to = 5;
  rejects(q, "edges[0].to: node 5 does not exist (there are 2 nodes");
  q = good;
  q.edges[0].from = -1;
  rejects(q, "edges[0].from: node -1 does not exist");
  q = good;
  q.edges[0].to = 0;
  rejects(q, "edges[0]: a self-loop on node 0 'a'");
  q = good;
  q.edges.push_back({1, 0, {0, 0}, {0, 0}});
  rejects(q, "a cycle through");
  p.edges = {{0, 1, {0, 1}, {0, 0}}};
  int calls = 0;
  const auto r = to::solve(p, {}, [&](const to::search_progress& s) {
    ++calls;
    CHECK(s.total == 2);
  });
  CHECK(calls == 2);
  CHECK(r.points.size() == 2);
  CHECK_THROWS_AS(to::solve(p, {.epsilon = -1}), to::invalid_argument);
}

TEST_CASE("memory_limit drops partial strategies early and keeps the exact frontier below it") {
  std::mt19937_64 rng(8080);
  for (int it = 0; it < 60; ++it) {
    const auto p = random_problem(rng, it % 5, 2 + int(rng() % 5), 6, it % 2 == 0);
    if (strategies(p) > 100000) continue;
    const auto all = brute_force(p);
    const auto limit = all[rng() % all.size()].memory + std::int64_t(rng() % 2);
    CAPTURE(it);
    const auto r = to::solve(p, {.memory_limit = limit});
    std::vector<cost_pair> below;
    for (auto& e : all)
      if (e.memory <= limit) below.push_back(e);
    CHECK(costs(r) == below);
    check_recost(p, r);
  }
}

TEST_CASE("configs with identical edge rows are grouped into one layout-config with a frontier cost") {
  // hub b: 6 configs, two layouts (0-2 and 3-5) that differ only in their own (time, memory)
  to::problem p;
  p.nodes.push_back({"b", {{"l0", 10, 1}, {"l0 rc", 12, 0}, {"l0 zs", 11, 1}, {"l1", 5, 4}, {"l1 rc", 7, 2}, {"l1 zs", 6, 3}}});
  for (int leaf = 0; leaf < 3; ++leaf) {
    p.nodes.push_back({"leaf", {{"x", 1, 3}, {"y", 3, 1}, {"z", 2, 2}, {"w", 0, 5}}});
    to::problem_edge e{0, leaf + 1, {}, {}};
    for (int c = 0; c < 6; ++c)
      for (int d = 0; d < 4; ++d) {
        e.time.push_back(c < 3 ? d : 3 - d);
        e.memory.push_back(c < 3 ? 0 : d % 2);
      }
    p.edges.push_back(e);
  }
  const auto grouped = to::solve(p);
  const auto plain = to::solve(p, {.group_configs = false});
  CHECK(grouped.max_cells == 2);  // the factors over b have one cell per layout
  CHECK(plain.max_cells == 6);
  CHECK(costs(grouped) == brute_force(p));
  CHECK(costs(plain) == brute_force(p));
  check_recost(p, grouped);
}

TEST_CASE("repeated identical blocks: eliminations are replayed, and the frontier stays exact") {
  // a chain of identical residual blocks (u -> a -> b -> w with a skip u -> w, w the next
  // block's u), the same costs in every block, so later blocks replay earlier eliminations
  std::mt19937_64 rng(31);
  std::size_t replays = 0;
  for (int it = 0; it < 20; ++it) {
    const int c = 1 + it % 3;
    const bool real = it % 2 == 0;
    std::vector<to::problem_node> node_kind(3);
    std::vector<std::vector<to::cost_t>> times(4), mems(4);
    for (int k = 0; k < 3; ++k)
      for (int x = 0; x < c; ++x)
        node_kind[std::size_t(k)].configs.push_back(
            {label('k', x), std::int64_t(rng() % (real ? 1000000 : 5)), std::int64_t(rng() % (real ? 1000000 : 5))});
    for (int e = 0; e < 4; ++e)
      for (int x = 0; x < c * c; ++x) {
        times[std::size_t(e)].push_back(std::int64_t(rng() % (real ? 1000000 : 5)));
        mems[std::size_t(e)].push_back(std::int64_t(rng() % 3 == 0 ? 0 : rng() % (real ? 1000000 : 5)));
      }
    to::problem p;
    p.nodes.push_back(node_kind[2]);
    const int blocks = 2 + it % 3;
    for (int b = 0; b < blocks; ++b) {
      const int u = int(p.nodes.size()) - 1;
      for (int k = 0; k < 3; ++k) p.nodes.push_back(node_kind[std::size_t(k)]);
      const int ends[4][2] = {{u, u + 1}, {u + 1, u + 2}, {u + 2, u + 3}, {u, u + 3}};
      for (int e = 0; e < 4; ++e)
        p.edges.push_back({ends[e][0], ends[e][1], times[std::size_t(e)], mems[std::size_t(e)]});
    }
    if (strategies(p) > 300000) continue;
    CAPTURE(it);
    const auto r = to::solve(p, {.epsilon = 0, .width_limit = 1u << 20, .group_configs = it % 3 != 0});
    CHECK(costs(r) == brute_force(p));
    check_recost(p, r);
    replays += r.replayed;
  }
  CHECK(replays > 0);
}

TEST_CASE("a search past its memory limit stops with the sizes it reached, not bad_alloc") {
  std::mt19937_64 rng(31);
  const auto p = random_problem(rng, shape_kind::chain, 40, 8, true);
  CHECK_THROWS_WITH_AS(to::solve(p, {.max_bytes = 4096}), doctest::Contains("search stopped"), to::runtime_error);
  try {
    (void)to::solve(p, {.max_bytes = 4096});
  } catch (const to::runtime_error& e) {
    const std::string m = e.what();
    CHECK(m.find("past its limit of") != std::string::npos);
    CHECK(m.find("after eliminating") != std::string::npos);
    CHECK(m.find("points") != std::string::npos);
  }
  // the default limit (three quarters of the machine) does not get in the way
  CHECK(!to::solve(p).points.empty());
}
TEST_CASE("the merges' galloping search finds what a bisection finds") {
  // first_from (detail/heap_front.hpp) moves a merge's row past the sums it cannot keep:
  // on every range of a staircase's decreasing times and every threshold it must give the
  // bisection's answer, the first index in [lo, hi) at or below the threshold.
  static_assert(to::detail::first_from(2, 9, [](std::size_t i) { return i >= 5; }) == 5);
  static_assert(to::detail::first_from(2, 9, [](std::size_t) { return false; }) == 9);
  static_assert(to::detail::first_from(4, 4, [](std::size_t) { return true; }) == 4);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(0, 70)(rng);
    std::vector<std::int64_t> t(n);
    std::int64_t v = 1000;
    for (auto& x : t) x = v -= std::uniform_int_distribution<std::int64_t>(1, 9)(rng);  // times decrease
    const std::size_t lo = std::uniform_int_distribution<std::size_t>(0, n)(rng);
    const std::size_t hi = std::uniform_int_distribution<std::size_t>(lo, n)(rng);
    const std::int64_t thr = std::uniform_int_distribution<std::int64_t>(v - 20, 1010)(rng);
    auto ok = [&](std::size_t i) { return t[i] <= thr; };
    const std::size_t want = std::size_t(
        std::partition_point(t.begin() + std::ptrdiff_t(lo), t.begin() + std::ptrdiff_t(hi),
                             [&](std::int64_t x) { return x > thr; }) - t.begin());
    CAPTURE(n);
    CAPTURE(lo);
    CAPTURE(hi);
    CHECK(to::detail::first_from(lo, hi, ok) == want);
  }
}

namespace {
/// A random staircase of n points (memory rising, time falling) from (memory, time).
std::vector<to::frontier::point> random_staircase(std::mt19937& rng, std::size_t n, to::cost_t memory,
                                                  to::cost_t time) {
  std::vector<to::frontier::point> s;
  for (std::size_t i = 0; i < n; ++i) {
    s.push_back({time, memory, -1});
    memory += std::uniform_int_distribution<to::cost_t>(1, 40)(rng);
    time -= std::uniform_int_distribution<to::cost_t>(1, 40)(rng);
  }
  return s;
}
}  // namespace

TEST_CASE("a cell's merge and a chain step keep what a prune of every sum keeps, dominated configs left out") {
  // cell_merger (detail/cell_merge.hpp) and chain_merge (detail/chain_merge.hpp) leave out
  // the rows of a config (an input) whose every sum another's first or last sum beats
  // strictly, and stop a row at once where its least time cannot be kept. Neither may
  // change what they keep: against every sum enumerated, sorted and pruned the same way
  // (a sum is kept when (1 + delta) its time < the last kept one's), on cells where many
  // configs are far behind the others (a large time offset) and many are not.
  std::mt19937 rng(23);
  auto pick = [&](to::cost_t lo, to::cost_t hi) { return std::uniform_int_distribution<to::cost_t>(lo, hi)(rng); };
  std::size_t left_out = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t dv = std::size_t(pick(1, 12)), nf = std::size_t(pick(1, 3));
    const double delta = trial % 3 == 0 ? 0.0 : 0.02;
    const to::cost_t limit = trial % 5 == 0 ? pick(2500, 4000) : std::numeric_limits<to::cost_t>::max();
    std::vector<std::vector<std::vector<to::frontier::point>>> spans(dv);
    std::vector<std::pair<to::cost_t, to::cost_t>> all;  // (memory, time) of every sum
    for (std::size_t cv = 0; cv < dv; ++cv) {
      const to::cost_t behind = pick(0, 1) ? pick(2000, 5000) : 0;
      for (std::size_t f = 0; f < nf; ++f) {
        const std::size_t n = std::size_t(f == 0 ? pick(1, 25) : pick(1, 4));
        spans[cv].push_back(random_staircase(rng, n, pick(0, 800), pick(1500, 2500) + (f == 0 ? behind : 0)));
      }
      std::vector<std::pair<to::cost_t, to::cost_t>> sums{{0, 0}};
      for (auto& sp : spans[cv]) {
        std::vector<std::pair<to::cost_t, to::cost_t>> next;
        for (auto& x : sums)
          for (auto& q : sp) next.push_back({x.first + q.memory, x.second + q.time});
        sums = std::move(next);
      }
      all.insert(all.end(), sums.begin(), sums.end());
    }
    std::sort(all.begin(), all.end());
    std::vector<std::pair<to::cost_t, to::cost_t>> want;
    to::cost_t thr = std::numeric_limits<to::cost_t>::max();
    for (auto& x : all) {
      if (x.first > limit) break;
      if (x.second <= thr) {
        want.push_back(x);
        thr = to::detail::time_below(x.second, delta);
      }
    }
    to::detail::cell_merger merge;
    to::trace tr;
    merge.begin(dv);
    for (std::size_t cv = 0; cv < dv; ++cv) {
      merge.spans.clear();
      for (auto& sp : spans[cv]) merge.spans.push_back({sp.data(), sp.size()});
      merge.add(cv, tr);
    }
    merge.run(delta, limit);
    std::vector<std::pair<to::cost_t, to::cost_t>> got;
    for (auto& x : merge.out) got.push_back({x.memory, x.time});
    CAPTURE(trial);
    CHECK(got == want);
    left_out += merge.rows.size() - merge.pending.size();

    // a chain step over the same configs as inputs: F = the first span, T = the product of the rest
    if (nf != 2 || delta != 0) continue;
    std::vector<std::vector<to::detail::candidate>> fs(dv), ts(dv);
    std::vector<to::detail::chain_input> in;
    for (std::size_t cv = 0; cv < dv; ++cv) {
      for (auto& q : spans[cv][0]) fs[cv].push_back({q.time, q.memory, -1, -1});
      for (auto& q : spans[cv][1]) ts[cv].push_back({q.time, q.memory, -1, -1});
    }
    for (std::size_t cv = 0; cv < dv; ++cv) in.push_back({&fs[cv], &ts[cv], cv});
    std::vector<to::detail::chain_source> from;
    const auto step = to::detail::chain_merge(in, to::detail::completion_filter{}, limit, from);
    got.clear();
    for (auto& x : step) got.push_back({x.memory, x.time});
    CHECK(got == want);
    REQUIRE(from.size() == step.size());
    for (std::size_t q = 0; q < step.size(); ++q)  // each point is the sum its source names
      CHECK(fs[from[q].state][from[q].fi].time + ts[from[q].state][from[q].ti].time == step[q].time);
  }
  CHECK(left_out > 0);  // the cells did leave dominated configs out
}

TEST_CASE("a scalar search's reweighed entry is a lower bound, within one unit and 2^-49 relative") {
  // weighed_below (detail/scalar_problem.hpp) takes m + floor(w t) in double arithmetic:
  // checked in exact 113-bit arithmetic (t < 2^55, so w t is exact there) against
  // m + w t (never above) and m + floor(w t) - 1 - 2^-49 w t (never below), and at the cap.
  using q = __float128;
  std::mt19937_64 rng(11);
  const to::cost_t cap = to::max_problem_cost;
  for (int trial = 0; trial < 20000; ++trial) {
    const double w = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng),
                                std::uniform_int_distribution<int>(-40, 12)(rng));
    const to::cost_t t = to::cost_t(rng() >> std::uniform_int_distribution<int>(9, 63)(rng));
    const to::cost_t m = to::cost_t(rng() >> std::uniform_int_distribution<int>(3, 63)(rng));
    const to::cost_t r = to::detail::weighed_below(m, t, w, cap);
    const q exact = q(m) + q(w) * q(t);
    CAPTURE(w);
    CAPTURE(t);
    CAPTURE(m);
    CHECK(r <= cap);
    CHECK(q(r) <= exact);
    if (exact < q(cap) / 2) {
      const q fl = q(to::cost_t(q(w) * q(t)));  // floor: w t >= 0
      CHECK(q(r) >= q(m) + fl - 1 - q(w) * q(t) * q(0x1p-49));
    }
  }
  CHECK(to::detail::weighed_below(cap, 5, 1.0, cap) == cap);
  CHECK(to::detail::weighed_below(0, to::cost_t(1) << 61, 8.0, cap) == cap);
  CHECK(to::detail::weighed_below(7, 10, 0.5, cap) == 11);  // 7 + floor(5 (1 - 2^-50)) = 11
}

}  // namespace search_solve_test_file
