// Checks that an in-memory search problem is well formed (sizes, costs, edges, no cycles).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "../core/error.hpp"
#include "problem.hpp"

namespace tensoropt {
namespace detail {

inline std::string node_ref(const problem& p, std::size_t i) {
  return "node " + std::to_string(i) + " '" + cut_short(p.nodes[i].name) + "'";
}

/// Throws E unless the largest strategy's time and memory (memory_offset, plus every
/// node's largest config, plus every edge's largest cell) stay within max_problem_cost.
/// Costs are >= 0 here (checked first), so no partial sum the search forms is larger.
template <class E>
void check_cost_bounds(const problem& p) {
  cost_t t = 0, m = p.memory_offset;
  auto add = [](cost_t& acc, cost_t v) { acc = v > max_problem_cost - acc ? max_problem_cost + 1 : acc + v; };
  auto max_of = [](const std::vector<cost_t>& v) {
    cost_t r = 0;
    for (cost_t x : v) r = x > r ? x : r;
    return r;
  };
  for (const auto& n : p.nodes) {
    cost_t nt = 0, nm = 0;
    for (const auto& c : n.configs) {
      nt = c.time > nt ? c.time : nt;
      nm = c.memory > nm ? c.memory : nm;
    }
    add(t, nt);
    add(m, nm);
  }
  for (const auto& e : p.edges) {
    add(t, max_of(e.time));
    add(m, max_of(e.memory));
  }
  const std::string how = " (memory_offset + the largest config of every node + the largest cell of every "
                          "edge) exceeds 2^62 = " + std::to_string(max_problem_cost);
  if (m > max_problem_cost)
    throw E("memory: the largest strategy's memory" + how +
            " bytes, beyond what the search adds exactly; the costs are wrong or need a larger unit");
  if (t > max_problem_cost)
    throw E("time: the largest strategy's time" + how +
            " ps (53 days), beyond what the search adds exactly; the costs are wrong or need a larger unit");
}

/// Throws E naming the first problem found; the checks `validate` documents.
template <class E>
void check_problem(const problem& p) {
  if (p.memory_offset < 0)
    throw E("memory_offset: must be >= 0 bytes, got " + std::to_string(p.memory_offset));
  if (p.nodes.empty()) throw E("nodes: the problem has no nodes; add at least one");
  std::size_t configs = 0;
  for (const auto& n : p.nodes) configs += n.configs.size();
  if (configs >= std::size_t(INT32_MAX))
    throw E("nodes: the problem has " + std::to_string(configs) + " configs in all, too big: nodes and "
            "configs are indexed with 32 bits (at most 2^31 - 2 configs)");
  // the field names are built only for the message: every search validates its problem,
  // and a valid one should cost no allocation per node, config and edge
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    const auto& n = p.nodes[i];
    auto at = [i] { return "nodes[" + std::to_string(i) + "]"; };
    if (n.configs.empty())
      throw E(at() + ".configs: " + node_ref(p, i) + " has no configs; every node needs at least one");
    for (std::size_t c = 0; c < n.configs.size(); ++c) {
      const auto& cf = n.configs[c];
      if (cf.time >= 0 && cf.memory >= 0) continue;
      const std::string cat = at() + ".configs[" + std::to_string(c) + "]";
      if (cf.time < 0) throw E(cat + ".time: must be >= 0, got " + std::to_string(cf.time) + " ps");
      throw E(cat + ".memory: must be >= 0, got " + std::to_string(cf.memory) + " bytes");
    }
  }
  const std::size_t n = p.nodes.size();
  std::vector<std::vector<int>> out(n);
  std::vector<int> indeg(n, 0);
  for (std::size_t k = 0; k < p.edges.size(); ++k) {
    const auto& e = p.edges[k];
    auto at = [k] { return "edges[" + std::to_string(k) + "]"; };
    if (e.from < 0 || std::size_t(e.from) >= n)
      throw E(at() + ".from: node " + std::to_string(e.from) + " does not exist (there are " +
              std::to_string(n) + " nodes, 0-based)");
    if (e.to < 0 || std::size_t(e.to) >= n)
      throw E(at() + ".to: node " + std::to_string(e.to) + " does not exist (there are " +
              std::to_string(n) + " nodes, 0-based)");
    if (e.from == e.to) throw E(at() + ": a self-loop on " + node_ref(p, std::size_t(e.from)));
    const std::size_t rows = p.nodes[std::size_t(e.from)].configs.size();
    const std::size_t cols = p.nodes[std::size_t(e.to)].configs.size();
    for (const auto* m : {&e.time, &e.memory}) {
      auto f = [&] { return at() + (m == &e.time ? ".time" : ".memory"); };
      if (m->size() != rows * cols)
        throw E(f() + ": expected " + std::to_string(rows) + " x " + std::to_string(cols) +
                " values (configs of " + node_ref(p, std::size_t(e.from)) + " x configs of " +
                node_ref(p, std::size_t(e.to)) + "), got " + std::to_string(m->size()));
      for (std::size_t q = 0; q < m->size(); ++q)
        if ((*m)[q] < 0)
          throw E(f() + "[" + std::to_string(q / cols) + "][" + std::to_string(q % cols) +
                  "]: must be >= 0, got " + std::to_string((*m)[q]));
    }
    out[std::size_t(e.from)].push_back(e.to);
    ++indeg[std::size_t(e.to)];
  }
  check_cost_bounds<E>(p);
  std::vector<int> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push_back(int(i));
  std::size_t seen = 0;
  while (!ready.empty()) {
    const int u = ready.back();
    ready.pop_back();
    ++seen;
    for (int w : out[std::size_t(u)])
      if (--indeg[std::size_t(w)] == 0) ready.push_back(w);
  }
  if (seen != n) {
    for (std::size_t i = 0; i < n; ++i)
      if (indeg[i] > 0)
        throw E("edges: the graph has a cycle through " + node_ref(p, i) +
                "; a problem must be a DAG (remove or reverse an edge of the cycle)");
  }
}

}  // namespace detail

/// Checks `p`: at least one node, every node has configs, costs and memory_offset are
/// >= 0, edges join existing distinct nodes with matrices of rows x cols values, the
/// largest strategy's costs stay within max_problem_cost, and the graph is acyclic. Throws invalid_argument naming the field and position.
inline void validate(const problem& p) { detail::check_problem<invalid_argument>(p); }

}  // namespace tensoropt
