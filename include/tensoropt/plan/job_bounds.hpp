// Bounds between the planner's jobs (plan/planner.hpp): a lower bound of every strategy of
// a problem that costs no search, and the test that points already guaranteed lie at or
// below it, which skips a micro-batch count before any search.
//
// The bound. A strategy's cost is the sum of its nodes' configs and its edges' config
// pairs. Each edge's time is at least its least time over the producer's configs for the
// consumer's config, and likewise its memory (the two minima may come from different
// producer configs, which only lowers the bound); added to the consumer's config, the edges
// join nothing and the node frontiers add up. They are summed in a balanced tree, each sum
// pruned within (1 + delta) (a pruned sum keeps a point with no more memory within that
// factor of every sum), so dividing every time by (1 + delta)^depth at the end leaves a
// staircase at or below every strategy within the memory limit.
//
// What it is worth (measured). On gpt3-1.3b on 4 V100-16GB (fast mode, every k) it skips
// k = 8, 16 and 32; on gpt3-39b on 64 the union's times lie 2.7-6.5 x above it (layout
// changes between ops cost more than any one edge's cheapest producer) and it skips
// nothing: there the search's own bounds (search/repeated.hpp's repeated_bounds) do the work.
//
// The grouped bound keeps the edges inside groups of nodes (the layers of a repeated block)
// and relaxes only those between groups: each group's frontier, summed the same way.
// The peak bound's search (plan/peak_search.hpp) ends its walk over caps with it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>
#include "../search/frontier.hpp"
#include "../search/problem.hpp"
#include "../search/solve.hpp"
#include "../search/detail/completion_bound.hpp"
#include "../search/detail/staircase_sum.hpp"

namespace tensoropt::detail {

/// The staircases of `level` (each at or below what its part of a strategy costs) summed
/// in a balanced tree, each sum pruned within (1 + delta) and cut at `limit` less `m0`,
/// every time then divided by (1 + delta)^depth and `m0` added to every memory: no sum of
/// one point from each lies below or left of the result.
inline std::vector<candidate> bound_of_sum(std::vector<std::vector<candidate>> level, cost_t m0, cost_t limit,
                                           double delta) {
  if (level.empty()) return {{0, m0, -1, -1}};
  std::size_t depth = 0;
  while (level.size() > 1) {
    std::vector<std::vector<candidate>> up;
    for (std::size_t i = 0; i + 1 < level.size(); i += 2)
      up.push_back(sum_with_provenance(level[i], level[i + 1], delta, limit - m0));
    if (level.size() % 2) up.push_back(std::move(level.back()));
    level.swap(up);
    ++depth;
  }
  const long double f = std::pow((long double)(1 + delta), (long double)depth);
  std::vector<candidate> out;
  for (auto& q : level.front()) out.push_back({cost_t(std::floor((long double)q.time / f)), m0 + q.memory, -1, -1});
  return out;
}

/// A lower bound of every strategy of `p` within `limit`: each edge's cost is replaced by
/// its least time and least memory over the producer's configs, added to the consumer's
/// config (an edge then joins nothing, so the node frontiers add up); the node frontiers
/// are summed in a balanced tree with each sum pruned within (1 + delta), and every time is
/// divided by (1 + delta)^depth at the end. No strategy lies below or left of it.
inline std::vector<candidate> edge_free_bound(const problem& p, cost_t limit, double delta = 0.002) {
  const cost_t m0 = p.memory_offset;
  if (m0 > limit) return {};
  std::vector<std::vector<candidate>> level;
  for (auto& n : p.nodes) {
    std::vector<candidate> c;
    for (auto& x : n.configs) c.push_back({x.time, x.memory, -1, -1});
    level.push_back(std::move(c));
  }
  for (auto& e : p.edges) {
    auto& to = level[std::size_t(e.to)];
    const std::size_t rows = p.nodes[std::size_t(e.from)].configs.size(), cols = to.size();
    for (std::size_t j = 0; j < cols; ++j) {
      cost_t t = std::numeric_limits<cost_t>::max(), m = t;
      for (std::size_t i = 0; i < rows; ++i) {
        t = std::min(t, e.time[i * cols + j]);
        m = std::min(m, e.memory[i * cols + j]);
      }
      to[j].time += t;
      to[j].memory += m;
    }
  }
  for (auto& c : level) pareto_filter(c);
  return bound_of_sum(std::move(level), m0, limit, delta);
}

/// A lower bound of every strategy of `p` within `limit` that keeps the edges inside each
/// of `groups` (node lists; the nodes in none form one more group): each group's frontier
/// (search/solve.hpp at epsilon `delta`, every time divided by 1 + delta: at or below the
/// exact one) with the edges into it from other groups at their least, as edge_free_bound
/// adds them to the consumer's config, summed as there. A group whose subproblem equals the
/// one before it (the middle layers of a repeated block) takes its frontier. Empty where
/// no strategy fits `limit`.
inline std::vector<candidate> grouped_bound(const problem& p, const std::vector<std::vector<int>>& groups,
                                            cost_t limit, double delta = 0.002) {
  validate(p);  // its sums below then stay within max_problem_cost
  const cost_t m0 = p.memory_offset;
  if (m0 > limit) return {};
  const std::size_t n = p.nodes.size();
  std::vector<int> group_of(n, int(groups.size()));
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (int v : groups[g]) {
      require(v >= 0 && std::size_t(v) < n, "grouped bound: group " + std::to_string(g) + " names node " +
                                                std::to_string(v) + ", but the problem's nodes are 0 to " +
                                                std::to_string(std::int64_t(n) - 1));
      group_of[std::size_t(v)] = int(g);
    }
  std::vector<std::vector<int>> members(groups.size() + 1);
  for (std::size_t v = 0; v < n; ++v) members[std::size_t(group_of[v])].push_back(int(v));
  std::vector<std::vector<cost_t>> in_time(n), in_memory(n);
  for (std::size_t v = 0; v < n; ++v) {
    in_time[v].assign(p.nodes[v].configs.size(), 0);
    in_memory[v].assign(p.nodes[v].configs.size(), 0);
  }
  for (auto& e : p.edges) {
    if (group_of[std::size_t(e.from)] == group_of[std::size_t(e.to)]) continue;
    const std::size_t rows = p.nodes[std::size_t(e.from)].configs.size(),
                      cols = p.nodes[std::size_t(e.to)].configs.size();
    for (std::size_t j = 0; j < cols; ++j) {
      cost_t t = std::numeric_limits<cost_t>::max(), m = t;
      for (std::size_t i = 0; i < rows; ++i) {
        t = std::min(t, e.time[i * cols + j]);
        m = std::min(m, e.memory[i * cols + j]);
      }
      in_time[std::size_t(e.to)][j] += t;
      in_memory[std::size_t(e.to)][j] += m;
    }
  }
  std::vector<std::vector<candidate>> level;
  problem before;
  std::vector<int> local(n, -1);
  solve_options so;
  so.memory_limit = limit - m0;
  so.epsilon = delta;  // each returned time within (1 + delta) of an exact one: divided by it below
  for (auto& nodes : members) {
    if (nodes.empty()) continue;
    const int g = group_of[std::size_t(nodes.front())];
    problem q;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto v = std::size_t(nodes[i]);
      local[v] = int(i);
      problem_node nd;
      for (std::size_t c = 0; c < p.nodes[v].configs.size(); ++c) {
        const auto& x = p.nodes[v].configs[c];
        nd.configs.push_back({std::string(), x.time + in_time[v][c], x.memory + in_memory[v][c]});
      }
      q.nodes.push_back(std::move(nd));
    }
    for (auto& e : p.edges)
      if (group_of[std::size_t(e.from)] == g && group_of[std::size_t(e.to)] == g)
        q.edges.push_back({local[std::size_t(e.from)], local[std::size_t(e.to)], e.time, e.memory});
    if (!level.empty() && q == before) {
      level.push_back(level.back());
      continue;
    }
    std::vector<candidate> c;
    for (auto& x : solve(q, so).points)
      c.push_back({cost_t(std::floor((long double)x.time / (1 + (long double)delta))), x.memory, -1, -1});
    pareto_filter(c);
    if (c.empty()) return {};  // no strategy of the group, so none of p, within the limit
    level.push_back(std::move(c));
    before = std::move(q);
  }
  return bound_of_sum(std::move(level), m0, limit, delta);
}

/// The least time of any strategy of `p` (no memory limit): the one point of the frontier
/// of `p` with every memory 0.
inline cost_t least_time(const problem& p, std::size_t max_bytes = 0) {
  problem fastest = p;
  fastest.memory_offset = 0;
  for (auto& nd : fastest.nodes)
    for (auto& x : nd.configs) x.memory = 0;
  for (auto& e : fastest.edges) std::fill(e.memory.begin(), e.memory.end(), cost_t(0));
  solve_options o;
  o.max_bytes = max_bytes;
  const auto f = solve(fastest, o);
  return f.points.empty() ? max_problem_cost : f.points.front().time;
}

/// grouped_bound with every time raised to the least time of any strategy (least_time): a
/// lower bound still, and at the fast end (where the groups' own least times, each with
/// its favourite layouts, lie below what any strategy reaches) a tighter one.
inline std::vector<candidate> layered_bound(const problem& p, const std::vector<std::vector<int>>& groups,
                                            cost_t limit, double delta, std::size_t max_bytes = 0) {
  auto lb = grouped_bound(p, groups, limit, delta);
  if (lb.empty()) return lb;
  const cost_t t = least_time(p, max_bytes);
  for (auto& x : lb) x.time = std::max(x.time, t);
  return lb;
}

/// Whether every point of `lb` has a point of `by` at or below it (each a staircase).
inline bool all_dominated(const std::vector<candidate>& lb, const std::vector<frontier::point>& by) {
  return all_at_or_below(lb, by);
}
}  // namespace tensoropt::detail
