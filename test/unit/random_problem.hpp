// The random search problems shared by the search, JSON and fuzz tests: chains, trees,
// series-parallel graphs, DAGs and forests, with small or realistic costs.
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>
#include <tensoropt/search/problem.hpp>

namespace rand_problem {
namespace to = tensoropt;

struct shape_kind {
  enum value { chain, tree, series_parallel, dag, forest };
};

inline std::string label(char prefix, int i) {
  std::string s = std::to_string(i);
  s.insert(s.begin(), prefix);
  return s;
}

// A random problem of the given kind. Costs are small integers (many ties and zeros) or
// "real" picosecond/byte values (up to max_time / max_memory); some configs duplicate another's edge rows so that
// grouping into layout-configs is exercised.
inline to::problem random_problem(std::mt19937_64& rng, int kind, int nodes, int max_configs, bool real,
                                  std::int64_t max_time = 2'000'000'000, std::int64_t max_memory = 1ll << 36) {
  auto uni = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  to::problem p;
  p.memory_offset = uni(0, 1) ? uni(0, 1000) : 0;
  std::vector<std::pair<int, int>> edges;
  if (kind == shape_kind::chain) {
    for (int i = 1; i < nodes; ++i) edges.push_back({i - 1, i});
  } else if (kind == shape_kind::tree) {
    for (int i = 1; i < nodes; ++i) {
      const int parent = int(uni(0, i - 1));
      if (uni(0, 1)) edges.push_back({parent, i});
      else edges.push_back({i, parent});
    }
  } else if (kind == shape_kind::series_parallel) {
    // two-terminal SP: subdivide an edge (series) or add a path or edge beside it (parallel)
    nodes = std::max(nodes, 2);
    int count = 2;
    edges.push_back({0, 1});
    while (count < nodes) {
      const auto e = edges[std::size_t(uni(0, std::int64_t(edges.size()) - 1))];
      const auto r = uni(0, 2);
      if (r == 2) edges.push_back(e);  // parallel edge
      const int w = count++;
      if (r == 0) {
        edges.erase(std::find(edges.begin(), edges.end(), e));
      }
      edges.push_back({e.first, w});
      edges.push_back({w, e.second});
    }
  } else if (kind == shape_kind::dag) {
    for (int j = 1; j < nodes; ++j) {
      edges.push_back({int(uni(0, j - 1)), j});
      for (int i = 0; i < j; ++i)
        if (uni(0, 99) < 30) edges.push_back({i, j});
    }
  } else {  // forest: several components, some isolated nodes
    for (int i = 1; i < nodes; ++i)
      if (uni(0, 2) > 0) edges.push_back({int(uni(0, i - 1)), i});
  }
  auto cost = [&](bool memory) -> std::int64_t {
    if (!real) return uni(0, 5);
    if (uni(0, 9) == 0) return 0;
    return memory ? uni(1, max_memory) : uni(1, max_time);
  };
  std::vector<int> m(std::size_t(nodes), 0);
  for (int i = 0; i < nodes; ++i) {
    m[std::size_t(i)] = int(uni(1, max_configs));
    to::problem_node n{label('n', i), {}};
    for (int c = 0; c < m[std::size_t(i)]; ++c)
      n.configs.push_back({label('c', c), cost(false), cost(true)});
    p.nodes.push_back(n);
  }
  // dup[i][c]: config c of node i copies the edge rows of this config
  std::vector<std::vector<int>> dup(static_cast<std::size_t>(nodes));
  for (int i = 0; i < nodes; ++i)
    for (int c = 0; c < m[std::size_t(i)]; ++c)
      dup[std::size_t(i)].push_back(c > 0 && uni(0, 3) == 0 ? int(uni(0, c - 1)) : c);
  for (auto [a, b] : edges) {
    to::problem_edge e{a, b, {}, {}};
    const int ra = m[std::size_t(a)], rb = m[std::size_t(b)];
    e.time.resize(std::size_t(ra * rb));
    e.memory.resize(std::size_t(ra * rb));
    for (int x = 0; x < ra; ++x)
      for (int y = 0; y < rb; ++y) {
        const int dx = dup[std::size_t(a)][std::size_t(x)], dy = dup[std::size_t(b)][std::size_t(y)];
        const std::size_t k = std::size_t(x * rb + y);
        if (dx != x || dy != y) {
          e.time[k] = e.time[std::size_t(dx * rb + dy)];
          e.memory[k] = e.memory[std::size_t(dx * rb + dy)];
        } else {
          e.time[k] = cost(false);
          e.memory[k] = uni(0, 2) == 0 ? 0 : cost(true);
        }
      }
    p.edges.push_back(e);
  }
  return p;
}

}  // namespace rand_problem
