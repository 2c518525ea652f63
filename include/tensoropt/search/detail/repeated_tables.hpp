// The per-layer tables of a split repeated block (search/repeated.hpp and
// search/repeated_exact.hpp): the frontiers of A, T and Z per boundary layout from three
// conditioned solves, and the bound that skips a whole search before its exact solves.
//
// The tables. A (everything before the middle layers) per layout of o_0, T (one middle
// layer) per input and output layout and Z (the last layer and the head) per input layout,
// each by solve_conditioned on the subproblems of detail/repeated_split.hpp (T and Z get a
// copy of the previous layer's boundary node with one zero-cost config per layout class,
// carrying the edges that leave it). Fast mode needs T on its diagonal only (input and
// output in one layout); the exact fold needs every cell. The kept boundary nodes get their
// layout classes (solve_conditioned's classes), so each of their layout-configs lies in one.
//
// The bound before the solves. Tables solved at a coarse epsilon e_c cover the exact ones:
// every exact point p of a cell has a coarse point q with q.memory <= p.memory and q.time <=
// (1 + e_c) p.time (solve.hpp's bound, per cell). So p lies at or above (q.memory,
// floor(q.time / (1 + e_c))), and every exact point of A(b) (+) T(b)^M (+) Z(b) lies on or
// above the chain lower_hull(A_c / (1 + e_c)) (+) M lower_hull(T_c / (1 + e_c)) (+)
// lower_hull(Z_c / (1 + e_c)) (detail/hull_bound.hpp: Minkowski sums of convex sets). When
// known points (guaranteed by other searches of one union) lie within (1 + slack) of
// everything above that chain, for every layout b, then every exact restricted point of
// this search has a known point with no more memory and time within (1 + slack); with
// slack = epsilon the union keeps its bound without this search, which then returns
// nothing and solves nothing more. The coarse solves cost a fraction of the exact ones
// (their frontiers are pruned much harder); the figures are in README's "Speed, honestly".
//
// In two steps. The chain is mostly M hull(T): first only T's coarse table is solved, and A
// and Z are put below one corner, their least time and least memory over every layout
// (exact single-objective searches, `ends_corner`): every point of A(b) (+) Z(b) lies at or
// above it, so corner (+) M lower_hull(T_c / (1 + e_c)) lies below every exact point of
// every layout, and when the known points cover it the search is skipped having solved one
// table of three. Only when that fails are A's and Z's coarse tables solved for the test
// above. On gpt3-39b (8 x 8 V100-16GB, epsilon 0.01) the first step skips k = 4 to 32 and
// the second k = 64.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>
#include "../solve.hpp"
#include "hull_bound.hpp"
#include "repeated_split.hpp"

namespace tensoropt::detail {

/// The three conditioned tables of a split block and where their nodes lie in the problem.
struct repeated_tables {
  conditioned_frontier a, t, z;   // kept: o_0 (a); the copy and o_1 (t); the copy (z)
  std::vector<int> ra, rt, rz;    // subproblem node -> node of the problem (-1: the copy)
};

/// The positions of a block (other than the boundary) that fast mode holds to the
/// boundary's layout (the stream): those of the boundary's kin (repeated_block::kin) whose
/// nodes have as many configs as the boundary and an edge to the boundary of their own
/// instance and from that of the instance before (a residual add: x + f(x) feeds o and is
/// fed by the previous o). Each table then keeps a boundary node with classes that shares
/// an edge with every tied node, so the tie holds exactly (solve_conditioned's `tied`).
inline std::vector<std::size_t> stream_positions(const problem& p, const repeated_block& rb, const repeated_split& s) {
  std::vector<std::size_t> out;
  const std::size_t o = std::size_t(s.boundary);
  if (rb.kin.size() != rb.instances[0].size()) return out;
  const int o0 = rb.instances[0][o], o1 = rb.instances[1][o];
  auto joined = [&](int u, int w) {
    return std::any_of(p.edges.begin(), p.edges.end(), [&](const problem_edge& e) {
      return (e.from == u && e.to == w) || (e.from == w && e.to == u);
    });
  };
  for (std::size_t j = 0; j < rb.kin.size(); ++j) {
    const int v = rb.instances[1][j];
    if (j != o && rb.kin[j] == rb.kin[o] && p.nodes[std::size_t(v)].configs.size() == s.group.size() &&
        joined(v, o1) && joined(o0, v))
      out.push_back(j);
  }
  return out;
}

/// Which of the three tables repeated_parts solves (bits).
enum : unsigned { part_a = 1, part_t = 2, part_z = 4, all_parts = 7 };

/// The subproblems of A (everything before the middle layers) and Z (the last layer and the
/// head, fed by a copy of the last middle layer's boundary node), with their remaps.
inline std::pair<problem, problem> ends_problems(const problem& p, const repeated_block& rb, const repeated_split& s,
                                                 std::vector<int>& ra, std::vector<int>& rz) {
  const int olast = rb.instances[rb.instances.size() - 2][std::size_t(s.boundary)];
  return {subproblem(p, s.a_nodes, -1, s.reps, p.memory_offset, ra), fed_subproblem(p, s.z_nodes, olast, s.reps, rz)};
}

/// Solves the tables of `p` split by `s` with options `o` that `parts` names, into `out`
/// (the others are left as they are); `diagonal`: T only where its input and output take one
/// layout (fast mode's restriction).
inline void solve_parts(const problem& p, const repeated_block& rb, const repeated_split& s, const solve_options& o,
                        bool diagonal, unsigned parts, repeated_tables& out) {
  const int o0 = rb.instances[0][std::size_t(s.boundary)];
  const int o1 = rb.instances[1][std::size_t(s.boundary)];
  const auto [pa, qz] = ends_problems(p, rb, s, out.ra, out.rz);
  const problem qt = fed_subproblem(p, rb.instances[1], o0, s.reps, out.rt);
  const auto local = local_index;
  // the boundary nodes group their configs by layout class (s.group), so every
  // layout-config of o_0 and o_1 lies in one class, as per_layout reads them
  std::vector<std::vector<int>> t_classes{{}, s.group}, a_classes{s.group}, z_classes;
  std::vector<std::pair<int, std::vector<int>>> a_tied, t_tied, z_tied;
  if (diagonal) {
    std::vector<int> copy_class(s.reps.size());
    for (std::size_t b = 0; b < copy_class.size(); ++b) copy_class[b] = int(b);
    t_classes[0] = copy_class;
    // the stream: the positions held to the boundary's layout (repeated_block::kin)
    const std::size_t L = rb.instances.size();
    for (std::size_t j : stream_positions(p, rb, s)) {
      a_tied.push_back({local(out.ra, rb.instances[0][j]), s.group});
      t_tied.push_back({local(out.rt, rb.instances[1][j]), s.group});
      z_tied.push_back({local(out.rz, rb.instances[L - 1][j]), s.group});
    }
    if (!z_tied.empty()) z_classes = {copy_class};
  }
  if (parts & part_a) out.a = solve_conditioned(pa, {local(out.ra, o0)}, o, a_classes, a_tied);
  if (parts & part_t) out.t = solve_conditioned(qt, {0, local(out.rt, o1)}, o, t_classes, t_tied);
  if (parts & part_z) out.z = solve_conditioned(qz, {0}, o, z_classes, z_tied);
}

/// Solves the three tables of `p` split by `s` (see solve_parts).
inline repeated_tables repeated_parts(const problem& p, const repeated_block& rb, const repeated_split& s,
                                      const solve_options& o, bool diagonal) {
  repeated_tables out;
  solve_parts(p, rb, s, o, diagonal, all_parts, out);
  return out;
}

/// The least time and the least memory of any strategy of `q` (exact single-objective
/// searches; the two may come from different strategies): a point at or below all of them.
inline candidate least_corner(const problem& q) {
  // the least time as the least "memory" of a problem whose memory is its time (time 0):
  // the eliminator's single-objective pass takes it on dense rows
  problem t = q, m = q;
  t.memory_offset = 0;
  for (auto& n : t.nodes)
    for (auto& c : n.configs) {
      c.memory = c.time;
      c.time = 0;
    }
  for (auto& e : t.edges) {
    e.memory = e.time;
    std::fill(e.time.begin(), e.time.end(), cost_t(0));
  }
  for (auto& n : m.nodes)
    for (auto& c : n.configs) c.time = 0;
  for (auto& e : m.edges) std::fill(e.time.begin(), e.time.end(), cost_t(0));
  const auto ft = solve(t), fm = solve(m);
  require<runtime_error>(!ft.points.empty() && !fm.points.empty(), "least_corner: a search returned no point");
  return {ft.points.front().memory, fm.points.front().memory, -1, -1};
}

/// The corners of A and Z (least_corner of their subproblems, over every layout) added: a
/// point at or below every point of A(b) (+) Z(b) for every b.
inline candidate ends_corner(const problem& p, const repeated_block& rb, const repeated_split& s) {
  std::vector<int> ra, rz;
  const auto [pa, qz] = ends_problems(p, rb, s, ra, rz);
  const candidate a = least_corner(pa), z = least_corner(qz);
  return {a.time + z.time, a.memory + z.memory, -1, -1};
}

/// Fast mode's tables per boundary layout b: A(b), T(b) (input and output in b) and Z(b)
/// as staircases whose tags are the points' tags in the conditioned tables.
struct layout_tables {
  std::vector<std::vector<candidate>> a, t, z;
};

/// The layout-config of a table's first kept node (the previous layer's copy) holding layout b.
inline std::size_t copy_cell(const conditioned_frontier& f, std::size_t b) {
  for (std::size_t d = 0; d < f.configs[0].size(); ++d)
    for (int c : f.configs[0][d])
      if (std::size_t(c) == b) return d;
  return 0;
}

inline frontier table_cell(const conditioned_frontier& f, std::size_t c) {
  return frontier{{f.pts.begin() + std::ptrdiff_t(f.start[c]), f.pts.begin() + std::ptrdiff_t(f.start[c + 1])}};
}
inline std::vector<candidate> as_candidates(const frontier& f) {
  std::vector<candidate> c;
  for (auto& q : f.points) c.push_back({q.time, q.memory, q.tag, -1});
  return c;
}

/// T(b) of table `t` for every layout b (input and output in b; see per_layout).
inline std::vector<std::vector<candidate>> t_per_layout(const conditioned_frontier& t, const repeated_split& s) {
  std::vector<std::vector<candidate>> out(s.reps.size());
  const std::size_t mo_t = t.dims[1];
  for (std::size_t b = 0; b < out.size(); ++b) {
    frontier tb;
    const std::size_t bt = copy_cell(t, b);
    for (std::size_t d = 0; d < mo_t; ++d)
      if (std::size_t(s.group[std::size_t(t.configs[1][d][0])]) == b) tb = frontier_union(tb, table_cell(t, bt * mo_t + d));
    out[b] = as_candidates(tb);
  }
  return out;
}

inline layout_tables per_layout(const repeated_tables& r, const repeated_split& s) {
  const std::size_t nb = s.reps.size();
  layout_tables out;
  out.a.resize(nb);
  out.z.resize(nb);
  out.t = t_per_layout(r.t, s);
  const std::size_t mo_a = r.a.dims[0];
  for (std::size_t b = 0; b < nb; ++b) {
    frontier ab;
    for (std::size_t d = 0; d < mo_a; ++d)
      if (std::size_t(s.group[std::size_t(r.a.configs[0][d][0])]) == b) ab = frontier_union(ab, table_cell(r.a, d));
    out.a[b] = as_candidates(ab);
    out.z[b] = as_candidates(table_cell(r.z, copy_cell(r.z, b)));
  }
  return out;
}

/// A staircase's lower bound for the exact staircase it covers within (1 + e): each time
/// divided by 1 + e, rounded down (with a relative margin for the rounding of the division).
inline std::vector<candidate> lowered(const std::vector<candidate>& s, double e) {
  std::vector<candidate> out;
  for (auto& q : s)
    out.push_back({cost_t(std::floor((long double)(q.time) / (1 + (long double)(e)) * (1 - 1e-12L))), q.memory, -1, -1});
  pareto_filter(out);
  return out;
}

/// The convex chain below every point of A (+) T^m (+) Z (detail/hull_bound.hpp).
inline hull_chain powered_chain(const std::vector<candidate>& a, const std::vector<candidate>& t,
                                const std::vector<candidate>& z, std::size_t m) {
  const auto ha = lower_hull(a), ht = lower_hull(t), hz = lower_hull(z);
  return hull_sum({&ha, &ht, &hz}, {1, cost_t(m), 1});
}

/// layouts_covered with A and Z replaced by one corner at or below all of their exact points
/// (ends_corner): only T's coarse tables `t` (per layout, solved at epsilon `e`) are needed.
/// The chain corner (+) M lower_hull(T_c / (1 + e)) lies below every exact point of every
/// layout (the header); it is neither above nor below the full test's chain in general
/// (lowered coarse points may lie below the exact least time), so the two tests differ.
inline bool layouts_covered_by_t(const std::vector<std::vector<candidate>>& t, const candidate& corner, double e,
                                 std::size_t m, const std::vector<candidate>& known, cost_t limit, double slack) {
  const std::vector<candidate> ends{corner};
  const std::vector<candidate> zero{{0, 0, -1, -1}};
  for (const auto& tb : t) {
    if (tb.empty()) continue;
    if (!covers_chain(known, powered_chain(ends, lowered(tb, e), zero, m), limit, slack)) return false;
  }
  return true;
}

/// True when `known` (a staircase of points guaranteed by other searches) lies within
/// (1 + slack) of every exact point of every layout's A (+) T^m (+) Z up to `limit`, judged
/// from tables `coarse` solved at epsilon `e` (the header's bound). A layout with an empty
/// coarse table has no exact point under the limit either.
inline bool layouts_covered(const layout_tables& coarse, double e, std::size_t m, const std::vector<candidate>& known,
                            cost_t limit, double slack) {
  for (std::size_t b = 0; b < coarse.a.size(); ++b) {
    if (coarse.a[b].empty() || coarse.t[b].empty() || coarse.z[b].empty()) continue;
    const auto chain = powered_chain(lowered(coarse.a[b], e), lowered(coarse.t[b], e), lowered(coarse.z[b], e), m);
    if (!covers_chain(known, chain, limit, slack)) return false;
  }
  return true;
}

}  // namespace tensoropt::detail
