// Tests of solve_options::known (costs of known strategies prune partial ones) against the plain search.
#include <doctest/doctest.h>
#include <cstdint>
#include <random>
#include <tensoropt/search/solve.hpp>
#include "random_problem.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_known_test_file {

namespace to = tensoropt;

namespace {

// A random connected problem (a DAG over a chain: every node after the first has an edge
// from an earlier one) with costs up to 1000, and a memory offset up to 500 when asked.
to::problem random_problem(std::mt19937_64& rng, int n, bool offset) {
  auto p = rand_problem::random_problem(rng, rand_problem::shape_kind::dag, n, 4, true, 1000, 1000);
  p.memory_offset = offset ? std::int64_t(rng() % 501) : 0;
  return p;
}

}  // namespace

TEST_CASE("known strategies prune the search without changing the frontier") {
  std::mt19937_64 rng(91);
  int smaller = 0;
  for (int it = 0; it < 300; ++it) {
    CAPTURE(it);
    const auto p = random_problem(rng, 3 + int(rng() % 7), it % 2 == 0);
    to::solve_options o;
    o.epsilon = it % 5 == 4 ? 0.05 : 0.0;
    if (it % 7 == 6) o.memory_limit = 2000;
    const auto plain = to::solve(p, o);
    to::solve_options k = o;
    // known: random real strategies, and (every other case) some points of the frontier itself
    for (int s = 0; s < 6; ++s) {
      std::vector<int> choice;
      for (auto& nd : p.nodes) choice.push_back(int(rng() % nd.configs.size()));
      const auto c = to::cost_of(p, choice);
      k.known.push_back({c.time, c.memory, -1});
    }
    if (it % 2 == 0)
      for (std::size_t i = 0; i < plain.points.size(); i += 2) k.known.push_back({plain.points[i].time, plain.points[i].memory, -1});
    std::size_t held_plain = 0, held_pruned = 0;  // points of every factor made
    to::solve(p, o, [&](const to::search_progress& s) { held_plain += s.points; });
    const auto pruned = to::solve(p, k, [&](const to::search_progress& s) { held_pruned += s.points; });
    CHECK(held_pruned <= held_plain);
    if (o.epsilon == 0) {
      REQUIRE(pruned.points.size() == plain.points.size());
      for (std::size_t i = 0; i < plain.points.size(); ++i) {
        CHECK(pruned.points[i].time == plain.points[i].time);
        CHECK(pruned.points[i].memory == plain.points[i].memory);
      }
    } else {
      // the epsilon bound still holds against the exact frontier
      to::solve_options e = o;
      e.epsilon = 0;
      for (auto& x : to::solve(p, e).points) {
        bool covered = false;
        for (auto& q : pruned.points)
          covered = covered || (q.memory <= x.memory && double(q.time) <= 1.05 * double(x.time));
        CHECK(covered);
      }
    }
    for (auto& q : pruned.points) {
      const auto c = to::cost_of(p, q.choice);
      CHECK(c.time == q.time);
      CHECK(c.memory == q.memory);
    }
    smaller += held_pruned < held_plain;
  }
  CHECK(smaller > 30);  // the known strategies do prune partial ones
}
}  // namespace search_known_test_file
