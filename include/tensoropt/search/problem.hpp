// The search problem: nodes with per-config (time, memory),
// edges with per-config-pair (time, memory). A strategy picks one config per node;
// its cost is memory_offset plus the sums over nodes and edges.
//
// Costs are integers (picoseconds and bytes) so that every sum is exact: the
// frontier of a problem, and the cost of a strategy recomputed from the problem,
// agree bit for bit whatever the order of summation.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>
#include "../core/error.hpp"

namespace tensoropt {

using cost_t = std::int64_t;                  ///< picoseconds or bytes
inline constexpr double ps_per_second = 1e12;

/// The largest total a problem's costs may reach: 2^62 (4 EiB of memory, or 4.6e6 s =
/// 53 days of time). `validate` refuses a problem whose largest strategy (memory_offset
/// plus every node's largest config plus every edge's largest cell) could exceed it, so
/// every sum the search forms, and the sum of two of them, fits in int64 exactly.
inline constexpr cost_t max_problem_cost = cost_t(1) << 62;

namespace detail {
/// `x` (a count of bytes or picoseconds held in a double, e.g. a budget from the command
/// line) as a cost_t; throws invalid_argument naming `what` when it is NaN, negative or
/// above max_problem_cost, instead of the undefined conversion.
inline cost_t checked_cost(double x, const std::string& what) {
  char v[32];
  std::snprintf(v, sizeof v, "%.6g", x);
  if (!(x >= 0)) throw invalid_argument(what + " must be >= 0, got " + v);
  if (!(x <= double(max_problem_cost)))
    throw invalid_argument(what + " is too large: " + v + " exceeds the limit of 2^62 = " +
                           std::to_string(max_problem_cost));
  return cost_t(x);
}
}  // namespace detail

struct problem_config {
  std::string label;      ///< human-readable, e.g. "b2 n4 | rc"
  cost_t time = 0;        ///< picoseconds
  cost_t memory = 0;      ///< bytes
  constexpr bool operator==(const problem_config&) const = default;
};

struct problem_node {
  std::string name;
  std::vector<problem_config> configs;
  constexpr bool operator==(const problem_node&) const = default;
};

struct problem_edge {
  int from = -1, to = -1;
  /// Row-major [config of from][config of to].
  std::vector<cost_t> time, memory;
  constexpr bool operator==(const problem_edge&) const = default;
};

struct problem {
  cost_t memory_offset = 0;
  std::vector<problem_node> nodes;
  std::vector<problem_edge> edges;
  constexpr bool operator==(const problem&) const = default;
};

/// L instances of one block: instances[i][j] is the node at position j of instance i (a
/// repeat<> of the model, or a declaration of a problem file, search/problem_json.hpp).
struct repeated_block {
  std::vector<std::vector<int>> instances;
  /// Optional, one entry per position of an instance: positions with equal entries hold
  /// nodes whose configs are the same layouts, config for config (ops of one kind and
  /// shape, as the planner lowers them). Fast mode holds every position of the boundary
  /// node's entry to the boundary's layout (search/repeated.hpp); empty: none.
  std::vector<int> kin;
  constexpr bool operator==(const repeated_block&) const = default;
};

/// (time, memory) of the strategy `choice` (one config index per node).
struct strategy_cost {
  cost_t time = 0, memory = 0;
  constexpr bool operator==(const strategy_cost&) const = default;
};

constexpr strategy_cost cost_of(const problem& p, const std::vector<int>& choice) {
  detail::require(choice.size() == p.nodes.size(), "cost_of: one config index per node is needed");
  strategy_cost c{0, p.memory_offset};
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    detail::require(choice[i] >= 0 && std::size_t(choice[i]) < p.nodes[i].configs.size(),
                    "cost_of: config index out of range");
    c.time += p.nodes[i].configs[choice[i]].time;
    c.memory += p.nodes[i].configs[choice[i]].memory;
  }
  for (auto& e : p.edges) {
    const std::size_t k = std::size_t(choice[e.from]) * p.nodes[e.to].configs.size() + choice[e.to];
    c.time += e.time[k];
    c.memory += e.memory[k];
  }
  return c;
}

namespace detail {
/// The label of each node's config under `choice` (a config index per node of `p`).
inline std::vector<std::string> config_labels(const problem& p, const std::vector<int>& choice) {
  std::vector<std::string> out;
  out.reserve(choice.size());
  for (std::size_t i = 0; i < choice.size(); ++i) out.push_back(p.nodes[i].configs.at(std::size_t(choice[i])).label);
  return out;
}
}  // namespace detail

namespace detail {
/// `p` on the configs kept[v] (ascending, in range) of every node, each node's and edge's
/// entries those of the kept configs; `edge_memory(edge, entry, memory)` may change an edge
/// entry's memory (`entry` indexes the edge's row-major table in `p`).
template <class EdgeMemory>
problem restricted_problem(const problem& p, const std::vector<std::vector<int>>& kept, EdgeMemory&& edge_memory) {
  problem q;
  q.memory_offset = p.memory_offset;
  q.nodes.resize(p.nodes.size());
  for (std::size_t v = 0; v < p.nodes.size(); ++v) {
    q.nodes[v].name = p.nodes[v].name;
    for (int c : kept[v]) q.nodes[v].configs.push_back(p.nodes[v].configs[std::size_t(c)]);
  }
  q.edges.reserve(p.edges.size());
  for (std::size_t ei = 0; ei < p.edges.size(); ++ei) {
    const auto& e = p.edges[ei];
    const auto& ka = kept[std::size_t(e.from)];
    const auto& kb = kept[std::size_t(e.to)];
    const std::size_t db = p.nodes[std::size_t(e.to)].configs.size();
    problem_edge f;
    f.from = e.from;
    f.to = e.to;
    f.time.reserve(ka.size() * kb.size());
    f.memory.reserve(ka.size() * kb.size());
    for (int a : ka)
      for (int b : kb) {
        const std::size_t k = std::size_t(a) * db + std::size_t(b);
        f.time.push_back(e.time[k]);
        f.memory.push_back(edge_memory(ei, k, e.memory[k]));
      }
    q.edges.push_back(std::move(f));
  }
  return q;
}

/// `p` on the configs kept[v] of every node.
inline problem restricted_problem(const problem& p, const std::vector<std::vector<int>>& kept) {
  return restricted_problem(p, kept, [](std::size_t, std::size_t, cost_t m) { return m; });
}
}  // namespace detail

}  // namespace tensoropt
