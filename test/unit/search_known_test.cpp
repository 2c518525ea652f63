// Tests of solve_options::known (costs of known strategies prune partial ones) against the plain search.
#include <doctest/doctest.h>
#include <cstdint>
#include <random>
#include <tensoropt/search/solve.hpp>

namespace to = tensoropt;

namespace {

to::problem random_problem(std::mt19937_64& rng, int n, bool offset) {
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  to::problem p;
  p.memory_offset = offset ? uni(0, 500) : 0;
  for (int v = 0; v < n; ++v) {
    to::problem_node nd{"n" + std::to_string(v), {}};
    const int m = int(uni(1, 4));
    for (int c = 0; c < m; ++c) nd.configs.push_back({"c", uni(0, 1000), uni(0, 1000)});
    p.nodes.push_back(std::move(nd));
  }
  auto edge = [&](int a, int b) {
    to::problem_edge e{a, b, {}, {}};
    const std::size_t k = p.nodes[std::size_t(a)].configs.size() * p.nodes[std::size_t(b)].configs.size();
    for (std::size_t i = 0; i < k; ++i) {
      e.time.push_back(uni(0, 1000));
      e.memory.push_back(uni(0, 2) ? 0 : uni(0, 1000));
    }
    p.edges.push_back(std::move(e));
  };
  for (int v = 1; v < n; ++v) edge(v - 1, v);
  for (int k = 0; k < n / 2; ++k) {
    const int a = int(uni(0, n - 1)), b = int(uni(0, n - 1));
    if (a != b) edge(std::min(a, b), std::max(a, b));
  }
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
