// The split of a problem at a repeated block: checks (in words) that the block can be
// composed by powering, finds the boundary node and its layout classes, and cuts out the
// subproblems before, inside and after the identical layers (see search/repeated.hpp).
#pragma once
#include <algorithm>
#include <string>
#include <vector>
#include "../problem.hpp"

namespace tensoropt {

namespace detail {

struct repeated_split {
  std::string why_not;                 // empty when the block can be powered
  int boundary = -1;                   // position of o in an instance
  std::vector<int> a_nodes, z_nodes;   // ascending
  std::vector<int> group;              // layout class of each config of o
  std::vector<int> reps;               // a config per layout class
};

constexpr bool same_edge_costs(const problem_edge& x, const problem_edge& y) {
  return x.time == y.time && x.memory == y.memory;
}

inline repeated_split split_repeated(const problem& p, const repeated_block& rb) {
  repeated_split s;
  const std::size_t n = p.nodes.size(), L = rb.instances.size();
  if (L < 3) { s.why_not = "fewer than 3 instances"; return s; }
  const std::size_t m = rb.instances[0].size();
  std::vector<int> inst(n, -1), pos(n, -1);
  for (std::size_t i = 0; i < L; ++i) {
    if (rb.instances[i].size() != m || m == 0) { s.why_not = "instances differ in size"; return s; }
    for (std::size_t j = 0; j < m; ++j) {
      const int v = rb.instances[i][j];
      if (v < 0 || std::size_t(v) >= n || inst[std::size_t(v)] >= 0) { s.why_not = "a node is out of range or in two instances"; return s; }
      inst[std::size_t(v)] = int(i);
      pos[std::size_t(v)] = int(j);
      if (p.nodes[std::size_t(v)].configs.size() != p.nodes[std::size_t(rb.instances[0][j])].configs.size()) {
        s.why_not = "instances differ in config counts"; return s;
      }
      if (i >= 1 && i + 1 < L && p.nodes[std::size_t(v)].configs != p.nodes[std::size_t(rb.instances[1][j])].configs) {
        s.why_not = "the middle instances differ in node costs"; return s;
      }
    }
  }
  // intra[i] / inter[i]: (position pair, edge) per instance, in edge order
  struct rec { int pu, pw; std::size_t e; };
  std::vector<std::vector<rec>> intra(L), inter(L);
  std::vector<std::vector<int>> adj(n);
  for (std::size_t e = 0; e < p.edges.size(); ++e) {
    const int u = p.edges[e].from, w = p.edges[e].to;
    const int iu = inst[std::size_t(u)], iw = inst[std::size_t(w)];
    const bool mid_u = iu >= 1 && std::size_t(iu) + 1 < L, mid_w = iw >= 1 && std::size_t(iw) + 1 < L;
    if (iu >= 0 && iu == iw) {
      intra[std::size_t(iu)].push_back({pos[std::size_t(u)], pos[std::size_t(w)], e});
      if (!mid_u) { adj[std::size_t(u)].push_back(w); adj[std::size_t(w)].push_back(u); }
    } else if (iu >= 0 && iw == iu + 1) {
      inter[std::size_t(iu)].push_back({pos[std::size_t(u)], pos[std::size_t(w)], e});
    } else if (mid_u || mid_w) {
      s.why_not = "an edge joins a middle instance to a node other than its neighbours (" + p.nodes[std::size_t(u)].name +
                  " -> " + p.nodes[std::size_t(w)].name + ")";
      return s;
    } else {
      adj[std::size_t(u)].push_back(w);
      adj[std::size_t(w)].push_back(u);
    }
  }
  for (std::size_t i = 0; i + 1 < L; ++i) {
    if (inter[i].empty()) { s.why_not = "consecutive instances are not connected"; return s; }
    if (inter[i].size() != inter[0].size()) { s.why_not = "the edges between instances differ"; return s; }
    for (std::size_t k = 0; k < inter[i].size(); ++k) {
      const auto &x = inter[i][k], &y = inter[0][k];
      if (x.pu != y.pu || x.pw != y.pw || !same_edge_costs(p.edges[x.e], p.edges[y.e])) {
        s.why_not = "the edges between instances differ"; return s;
      }
      if (x.pu != inter[0][0].pu) { s.why_not = "edges between instances leave more than one node of a block"; return s; }
    }
    if (i >= 1) {
      if (intra[i].size() != intra[1].size()) { s.why_not = "the middle instances differ in edges"; return s; }
      for (std::size_t k = 0; k < intra[i].size(); ++k) {
        const auto &x = intra[i][k], &y = intra[1][k];
        if (x.pu != y.pu || x.pw != y.pw || !same_edge_costs(p.edges[x.e], p.edges[y.e])) {
          s.why_not = "the middle instances differ in edge costs"; return s;
        }
      }
    }
  }
  s.boundary = inter[0][0].pu;
  // A: reachable from instance 0 without the middle; Z: from instance L-1; A and Z must not meet.
  std::vector<int> side(n, -1);
  auto flood = [&](int start, int mark) {
    std::vector<int> stack{start};
    side[std::size_t(start)] = mark;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      for (int w : adj[std::size_t(v)])
        if (side[std::size_t(w)] < 0) { side[std::size_t(w)] = mark; stack.push_back(w); }
    }
  };
  for (int v : rb.instances[0]) if (side[std::size_t(v)] < 0) flood(v, 0);
  for (int v : rb.instances[L - 1])
    if (side[std::size_t(v)] == 0) {
      s.why_not = "an edge path joins the first and last instances around the middle ones"; return s;
    }
  for (int v : rb.instances[L - 1]) if (side[std::size_t(v)] < 0) flood(v, 1);
  for (std::size_t v = 0; v < n; ++v) {
    const bool mid = inst[v] >= 1 && std::size_t(inst[v]) + 1 < L;
    if (mid) continue;
    if (side[v] == 1) s.z_nodes.push_back(int(v));
    else s.a_nodes.push_back(int(v));
  }
  // layout classes of o, from the incident edges of a middle instance's o
  const int o1 = rb.instances[1][std::size_t(s.boundary)];
  const std::size_t mo = p.nodes[std::size_t(o1)].configs.size();
  std::vector<std::vector<cost_t>> sig(mo);
  for (auto& e : p.edges) {
    if (e.from == o1) {
      const std::size_t cols = p.nodes[std::size_t(e.to)].configs.size();
      for (std::size_t c = 0; c < mo; ++c)
        for (std::size_t j = 0; j < cols; ++j) { sig[c].push_back(e.time[c * cols + j]); sig[c].push_back(e.memory[c * cols + j]); }
    }
    if (e.to == o1) {
      const std::size_t rows = p.nodes[std::size_t(e.from)].configs.size();
      for (std::size_t c = 0; c < mo; ++c)
        for (std::size_t i = 0; i < rows; ++i) { sig[c].push_back(e.time[i * mo + c]); sig[c].push_back(e.memory[i * mo + c]); }
    }
  }
  s.group.assign(mo, -1);
  for (std::size_t c = 0; c < mo; ++c) {
    for (std::size_t r = 0; r < s.reps.size() && s.group[c] < 0; ++r)
      if (sig[std::size_t(s.reps[r])] == sig[c]) s.group[c] = int(r);
    if (s.group[c] < 0) { s.group[c] = int(s.reps.size()); s.reps.push_back(int(c)); }
  }
  return s;
}

/// The subproblem over `nodes` (and, first, a copy of node `boundary` with one zero-cost
/// config per layout class when `boundary` >= 0, standing in for the previous layer's o:
/// the edges leaving `boundary` into `nodes` leave the copy instead). `remap` gives each
/// subproblem node's node in p (-1 for the copy).
inline problem subproblem(const problem& p, const std::vector<int>& nodes, int boundary, const std::vector<int>& reps,
                          cost_t offset, std::vector<int>& remap) {
  problem q;
  q.memory_offset = offset;
  std::vector<int> at(p.nodes.size(), -1);
  remap.clear();
  if (boundary >= 0) {
    problem_node b{p.nodes[std::size_t(boundary)].name + " (previous layer)", {}};
    for (int c : reps) b.configs.push_back({p.nodes[std::size_t(boundary)].configs[std::size_t(c)].label, 0, 0});
    q.nodes.push_back(std::move(b));
    remap.push_back(-1);
  }
  for (int v : nodes) {
    at[std::size_t(v)] = int(q.nodes.size());
    q.nodes.push_back(p.nodes[std::size_t(v)]);
    remap.push_back(v);
  }
  for (auto& e : p.edges) {
    const int u = at[std::size_t(e.from)], w = at[std::size_t(e.to)];
    if (u >= 0 && w >= 0) q.edges.push_back({u, w, e.time, e.memory});
  }
  return q;
}

/// The position of node `v` of p in a subproblem's `remap` (remap.size() when absent).
inline int local_index(const std::vector<int>& remap, int v) {
  return int(std::find(remap.begin(), remap.end(), v) - remap.begin());
}

/// The subproblem of a layer over `nodes` fed by node `from` of the layer before it: a copy
/// of `from` with one zero-cost config per layout class (`reps`), then `nodes`, and p's
/// edges leaving `from` into `nodes` leaving the copy instead, their rows restricted to the
/// classes' representatives. `remap` as in `subproblem`.
inline problem fed_subproblem(const problem& p, const std::vector<int>& nodes, int from, const std::vector<int>& reps,
                              std::vector<int>& remap) {
  problem q = subproblem(p, nodes, from, reps, 0, remap);
  for (auto& e : p.edges) {
    if (e.from != from) continue;
    const int w = local_index(remap, e.to);
    if (w >= int(remap.size()) || remap[std::size_t(w)] < 0) continue;
    const std::size_t cols = p.nodes[std::size_t(e.to)].configs.size();
    problem_edge pe{0, w, {}, {}};
    for (int c : reps)
      for (std::size_t j = 0; j < cols; ++j) {
        pe.time.push_back(e.time[std::size_t(c) * cols + j]);
        pe.memory.push_back(e.memory[std::size_t(c) * cols + j]);
      }
    q.edges.push_back(std::move(pe));
  }
  return q;
}

}  // namespace detail
}  // namespace tensoropt
