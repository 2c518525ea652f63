// The three tables of the exact chain fold (search/repeated_exact.hpp): A (everything
// before the middle layers) per layout of o_0, T (one middle layer) per input and output
// layout, and Z (the last layer and the head) per input layout, each by solve_conditioned.
//
// The subproblems are those of fast mode (search/repeated.hpp): T and Z get a copy of the
// previous layer's boundary node with one zero-cost config per layout class, carrying
// the edges that leave it. Unlike fast mode, T is solved on every cell, not only its
// diagonal, since the exact fold lets the layout change at every boundary. A kept node's
// layout-configs must each lie in one layout class; a subproblem where they do not is
// solved again without grouping, as fast mode does.
#pragma once
#include <algorithm>
#include <vector>
#include "../problem.hpp"
#include "../solve.hpp"
#include "../solve_options.hpp"
#include "repeated_split.hpp"

namespace tensoropt::detail {

struct repeated_tables {
  conditioned_frontier a, t, z;   // kept: o_0 (a); the copy and o_1 (t); the copy (z)
  std::vector<int> ra, rt, rz;    // subproblem node -> node of the problem (-1: the copy)
};

inline repeated_tables repeated_parts(const problem& p, const repeated_block& rb, const repeated_split& s,
                                      const solve_options& o) {
  const std::size_t L = rb.instances.size();
  const int o0 = rb.instances[0][std::size_t(s.boundary)];
  const int o1 = rb.instances[1][std::size_t(s.boundary)];
  const int olast = rb.instances[L - 2][std::size_t(s.boundary)];
  repeated_tables out;
  const problem pa = subproblem(p, s.a_nodes, -1, s.reps, p.memory_offset, out.ra);
  problem qt = subproblem(p, rb.instances[1], o0, s.reps, 0, out.rt);
  problem qz = subproblem(p, s.z_nodes, olast, s.reps, 0, out.rz);
  auto local = [](const std::vector<int>& remap, int v) {
    return int(std::find(remap.begin(), remap.end(), v) - remap.begin());
  };
  // the copy's edges: the problem's edges from `from` into the subproblem's nodes
  auto add_copy_edges = [&](problem& q, const std::vector<int>& remap, int from) {
    for (auto& e : p.edges) {
      if (e.from != from) continue;
      const int w = local(remap, e.to);
      if (w >= int(remap.size()) || remap[std::size_t(w)] < 0) continue;
      const std::size_t cols = p.nodes[std::size_t(e.to)].configs.size();
      problem_edge pe{0, w, {}, {}};
      for (int c : s.reps)
        for (std::size_t j = 0; j < cols; ++j) {
          pe.time.push_back(e.time[std::size_t(c) * cols + j]);
          pe.memory.push_back(e.memory[std::size_t(c) * cols + j]);
        }
      q.edges.push_back(std::move(pe));
    }
  };
  add_copy_edges(qt, out.rt, o0);
  add_copy_edges(qz, out.rz, olast);
  auto conditioned = [&](const problem& q, const std::vector<int>& keep, int o_at) {
    auto f = solve_conditioned(q, keep, o);
    const std::size_t i = std::size_t(std::find(f.kept.begin(), f.kept.end(), o_at) - f.kept.begin());
    if (o_at >= 0 && i < f.kept.size())
      for (auto& g : f.configs[i])
        for (int c : g)
          if (s.group[std::size_t(c)] != s.group[std::size_t(g[0])]) {
            solve_options u = o;
            u.group_configs = false;
            return solve_conditioned(q, keep, u);
          }
    return f;
  };
  out.a = conditioned(pa, {local(out.ra, o0)}, local(out.ra, o0));
  out.t = conditioned(qt, {0, local(out.rt, o1)}, local(out.rt, o1));
  out.z = conditioned(qz, {0}, -1);
  return out;
}

}  // namespace tensoropt::detail
