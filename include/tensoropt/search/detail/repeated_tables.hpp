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
// above. On gpt3-39b (8 x 8 V100-16GB, epsilon 0.01) the first step skipped k = 4 to 32
// and the second k = 64.
//
// Before both, scalar searches alone (`layouts_covered_by_lines`): each of A(b), T(b) and
// Z(b) is searched for its least time, its least memory and, per slope w, its least of
// memory + w time, for every layout at once by one search whose frontiers are single
// points (every cost moved into memory). The least of a sum of independent parts is the
// sum of their least values, so A(b) (+) T(b)^M (+) Z(b) lies at or above the sums (T's
// counted M times): a corner and lines memory + w time >= s_w(b) that touch the
// composition's convex hull. The search is skipped when the known points cover that
// region within (1 + slack). Slopes by the sandwich rule: where the region is not
// covered, the chord between the two strategies found so far (each search gives one)
// whose memories straddle the point; a slope searched already means the hull has that
// edge there, so the region is the hull at that point and no line lifts it; nor can the
// coarse tables' chain, which is convex and below every exact point, hence below the
// hull: the coarse tests run only when the lines run out (`undecided`). The scalar test
// needs no coarse solve, so it runs at every epsilon: on gpt3-39b (epsilon 0.01) it skips
// k = 4 to 64, on megatron-1t (epsilon 0.05, where the coarse test does not run) 15 of
// the 22 counts (k = 1 to 16, 32 to 128 and 256 to 1024).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>
#include "../solve.hpp"
#include "hull_bound.hpp"
#include "scalar_problem.hpp"
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

/// One of the three conditioned searches of a split block: its subproblem, its kept nodes
/// with their layout classes, the positions tied to the boundary's layout (the stream,
/// with `diagonal`) and, per kept node, whether its config index is the layout itself
/// (the copy of a boundary node: one zero-cost config per layout class) or maps to it
/// through the split's groups (an o node).
struct conditioned_part {
  problem q;
  std::vector<int> keep;
  std::vector<std::vector<int>> classes;
  std::vector<std::pair<int, std::vector<int>>> tied;
  std::vector<bool> copy;
  conditioned_frontier solve(const solve_options& o, const std::function<void(const search_progress&)>& progress = {}) const {
    return solve_conditioned_valid(q, keep, o, classes, tied, progress);
  }
};

inline std::vector<int> copy_classes(const repeated_split& s) {
  std::vector<int> c(s.reps.size());
  for (std::size_t b = 0; b < c.size(); ++b) c[b] = int(b);
  return c;
}

/// A (everything before the middle layers), kept: o_0.
inline conditioned_part a_part_of(const problem& p, const repeated_block& rb, const repeated_split& s, bool diagonal,
                                  std::vector<int>& ra) {
  conditioned_part out;
  out.q = subproblem(p, s.a_nodes, -1, s.reps, p.memory_offset, ra);
  out.keep = {local_index(ra, rb.instances[0][std::size_t(s.boundary)])};
  // the boundary nodes group their configs by layout class (s.group), so every
  // layout-config of o_0 and o_1 lies in one class, as per_layout reads them
  out.classes = {s.group};
  out.copy = {false};
  if (diagonal)
    for (std::size_t j : stream_positions(p, rb, s)) out.tied.push_back({local_index(ra, rb.instances[0][j]), s.group});
  return out;
}

/// T (one middle layer fed by a copy of the layer before's boundary node), kept: the copy
/// and o_1.
inline conditioned_part t_part_of(const problem& p, const repeated_block& rb, const repeated_split& s, bool diagonal,
                                  std::vector<int>& rt) {
  const int o0 = rb.instances[0][std::size_t(s.boundary)];
  const int o1 = rb.instances[1][std::size_t(s.boundary)];
  conditioned_part out;
  out.q = fed_subproblem(p, rb.instances[1], o0, s.reps, rt);
  out.keep = {0, local_index(rt, o1)};
  out.classes = {{}, s.group};
  out.copy = {true, false};
  if (diagonal) {
    out.classes[0] = copy_classes(s);
    for (std::size_t j : stream_positions(p, rb, s)) out.tied.push_back({local_index(rt, rb.instances[1][j]), s.group});
  }
  return out;
}

/// Z (the last layer and the head, fed by a copy of the last middle layer's boundary
/// node), kept: the copy.
inline conditioned_part z_part_of(const problem& p, const repeated_block& rb, const repeated_split& s, bool diagonal,
                                  std::vector<int>& rz) {
  const std::size_t L = rb.instances.size();
  conditioned_part out;
  out.q = fed_subproblem(p, s.z_nodes, rb.instances[L - 2][std::size_t(s.boundary)], s.reps, rz);
  out.keep = {0};
  out.copy = {true};
  if (diagonal) {
    for (std::size_t j : stream_positions(p, rb, s)) out.tied.push_back({local_index(rz, rb.instances[L - 1][j]), s.group});
    if (!out.tied.empty()) out.classes = {copy_classes(s)};
  }
  return out;
}

/// Solves the tables of `p` split by `s` with options `o` that `parts` names, into `out`
/// (the others are left as they are); `diagonal`: T only where its input and output take one
/// layout (fast mode's restriction). `progress` (optional): called after each elimination
/// of each of them (solve_conditioned_valid).
inline void solve_parts(const problem& p, const repeated_block& rb, const repeated_split& s, const solve_options& o,
                        bool diagonal, unsigned parts, repeated_tables& out,
                        const std::function<void(const search_progress&)>& progress = {}) {
  if (parts & part_a) out.a = a_part_of(p, rb, s, diagonal, out.ra).solve(o, progress);
  if (parts & part_t) out.t = t_part_of(p, rb, s, diagonal, out.rt).solve(o, progress);
  if (parts & part_z) out.z = z_part_of(p, rb, s, diagonal, out.rz).solve(o, progress);
}

/// Solves the three tables of `p` split by `s` (see solve_parts).
inline repeated_tables repeated_parts(const problem& p, const repeated_block& rb, const repeated_split& s,
                                      const solve_options& o, bool diagonal,
                                      const std::function<void(const search_progress&)>& progress = {}) {
  repeated_tables out;
  solve_parts(p, rb, s, o, diagonal, all_parts, out, progress);
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

/// A scalar search's least value for one layout and the time and memory of a strategy
/// that takes it (value -1: no strategy holds the layout).
struct scalar_min {
  cost_t value = -1, time = 0, memory = 0;
};

/// The least of f(time, memory) summed over a strategy of `part`, for every layout b (its
/// kept nodes all in b), and a strategy taking it: every config and edge costs f in
/// memory and nothing in time, so each cell of the conditioned search is one point (a
/// scalar search, one pass per cell). f must be >= 0 and each of its values at most
/// max_problem_cost / (scalar_terms + 1) (so no sum leaves the range; callers cap it).
template <class Weigh>
std::vector<scalar_min> scalar_per_layout(const conditioned_part& part, const repeated_split& s,
                                          std::size_t max_bytes, Weigh f) {
  const problem& from = part.q;
  const problem q = scalar_problem(from, f(cost_t(0), from.memory_offset), f);
  solve_options so;
  so.max_bytes = max_bytes;
  const conditioned_frontier cf = solve_conditioned_valid(q, part.keep, so, part.classes, part.tied);
  const std::size_t nb = s.reps.size(), kept = part.keep.size();
  std::vector<scalar_min> out(nb);
  std::vector<std::size_t> best(nb, cf.pts.size()), best_cell(nb, 0), d(kept);
  // the config of kept node i in its layout-config dd holding layout b, or -1 (a
  // layout-config groups configs with equal edge rows: a copy's group may hold several
  // layouts, an o node's lies in one class)
  auto config_in = [&](std::size_t i, std::size_t dd, std::size_t b) {
    for (int c : cf.configs[i][dd])
      if (std::size_t(part.copy[i] ? c : s.group[std::size_t(c)]) == b) return c;
    return -1;
  };
  for (std::size_t c = 0; c < cf.cells(); ++c) {
    // the cell's layout-config per kept node (the first kept node varies slowest)
    std::size_t r = c;
    for (std::size_t i = kept; i-- > 0;) {
      d[i] = r % cf.dims[i];
      r /= cf.dims[i];
    }
    for (int c0 : cf.configs[0][d[0]]) {
      const std::size_t b = std::size_t(part.copy[0] ? c0 : s.group[std::size_t(c0)]);
      bool all = true;
      for (std::size_t i = 1; i < kept && all; ++i) all = config_in(i, d[i], b) >= 0;
      if (!all) continue;
      auto& x = best[b];
      for (std::size_t i = cf.start[c]; i < cf.start[c + 1]; ++i)
        if (x == cf.pts.size() || cf.pts[i].memory < cf.pts[x].memory) {
          x = i;
          best_cell[b] = c;
        }
    }
  }
  std::vector<int> choice;
  for (std::size_t b = 0; b < nb; ++b) {
    if (best[b] == cf.pts.size()) continue;
    out[b].value = cf.pts[best[b]].memory;
    // the strategy (its kept nodes from the cell where the trace leaves them open)
    choice.assign(q.nodes.size(), -1);
    cf.tr.recover(cf.pts[best[b]].tag, choice);
    std::size_t r = best_cell[b];
    for (std::size_t i = kept; i-- > 0;) {
      int& ci = choice[std::size_t(part.keep[i])];
      if (ci < 0) ci = config_in(i, r % cf.dims[i], b);
      r /= cf.dims[i];
    }
    if (std::none_of(choice.begin(), choice.end(), [](int c) { return c < 0; })) {
      const strategy_cost c = cost_of(from, choice);
      out[b].time = c.time;
      out[b].memory = c.memory;
    }
  }
  return out;
}

/// The terms of a scalar search of `part` (its nodes, its edges and its offset): each
/// rounds w t down by less than one.
inline std::size_t scalar_terms(const conditioned_part& part) { return part.q.nodes.size() + part.q.edges.size() + 1; }

/// The scalar searches of a split block's layer and ends, composed per layout b as A(b)
/// (+) T(b)^m (+) Z(b) composes: a scalar of the composition is the sum of the parts'
/// (the least of a sum of independent parts is the sum of their least values), and so is
/// the strategy taking it. `tmin`, `mmin`: the least time and least memory per layout.
struct layer_scalars {
  std::array<conditioned_part, 3> parts;  // A, T, Z
  std::array<cost_t, 3> mult{1, 0, 1};    // T counts m times
  std::size_t terms = 0;                  // of the composition, counted as mult says
  std::vector<scalar_min> tmin, mmin;
};

template <class Weigh>
std::vector<scalar_min> composed_scalar(const layer_scalars& ls, const repeated_split& s, std::size_t max_bytes,
                                        Weigh f) {
  std::vector<scalar_min> out(s.reps.size(), scalar_min{0, 0, 0});
  for (std::size_t i = 0; i < 3; ++i) {
    const auto v = scalar_per_layout(ls.parts[i], s, max_bytes, f);
    for (std::size_t b = 0; b < out.size(); ++b) {
      if (out[b].value < 0) continue;
      if (v[b].value < 0) {
        out[b] = scalar_min{};
        continue;
      }
      out[b].value += ls.mult[i] * v[b].value;
      out[b].time += ls.mult[i] * v[b].time;
      out[b].memory += ls.mult[i] * v[b].memory;
    }
  }
  return out;
}

/// The parts of `p` split by `s` (diagonal, the stream held) and their least time and
/// least memory per layout.
inline layer_scalars layer_scalars_of(const problem& p, const repeated_block& rb, const repeated_split& s,
                                      std::size_t max_bytes) {
  layer_scalars ls;
  std::vector<int> remap;
  ls.parts[0] = a_part_of(p, rb, s, true, remap);
  ls.parts[1] = t_part_of(p, rb, s, true, remap);
  ls.parts[2] = z_part_of(p, rb, s, true, remap);
  ls.mult[1] = cost_t(rb.instances.size() - 2);
  for (std::size_t i = 0; i < 3; ++i) ls.terms += std::size_t(ls.mult[i]) * scalar_terms(ls.parts[i]);
  ls.tmin = composed_scalar(ls, s, max_bytes, [](cost_t t, cost_t) { return t; });
  ls.mmin = composed_scalar(ls, s, max_bytes, [](cost_t, cost_t m) { return m; });
  return ls;
}

/// A region below every point of A(b) (+) T(b)^m (+) Z(b): time >= t0, memory >= m0 and,
/// for each line (w, s), memory + w time >= s (w in memory units per time unit).
struct line_region {
  cost_t t0 = 0, m0 = 0;
  struct line {
    long double w, s;
  };
  std::vector<line> lines;
  /// A lower bound of the time of the region's points of memory at most m.
  long double least_time_at(cost_t m) const {
    long double t = (long double)(t0);
    for (const line& l : lines)
      if (l.w > 0 && l.s > (long double)(m)) t = std::max(t, (l.s - (long double)(m)) / l.w);
    return t;
  }
};

/// The memory of a point of `r` within `limit` that `known` (a staircase) does not cover
/// within (1 + slack), or -1 when it covers every one. The region's least time at m only
/// falls as m grows and the known best time changes only at known points, so the region's
/// least memory, the memories just below the known points and the limit are the ones to
/// check.
inline cost_t region_uncovered(const std::vector<candidate>& known, const line_region& r, cost_t limit, double slack) {
  if (r.m0 > limit) return -1;
  auto uncovered = [&](cost_t m) {
    auto it = std::upper_bound(known.begin(), known.end(), m, [](cost_t x, const candidate& c) { return x < c.memory; });
    if (it == known.begin()) return true;
    return (long double)(std::prev(it)->time) > r.least_time_at(m) * (1 + (long double)(slack)) * (1 - 1e-12L);
  };
  if (uncovered(r.m0)) return r.m0;
  for (const auto& k : known)
    if (k.memory > r.m0 && k.memory - 1 <= limit && uncovered(k.memory - 1)) return k.memory - 1;
  return uncovered(limit) ? limit : -1;
}

/// What layouts_covered_by_lines found: every layout covered; a layout not covered where
/// its region is its hull (no line can lift it, nor can any bound of the same
/// strategies that is convex, such as the coarse tables' chain); or the line budget spent.
enum class lines_outcome { covered, hull_not_covered, undecided };

/// Whether the known points cover, within (1 + slack), every exact point of every layout's
/// A (+) T(b)^m (+) Z(b) up to `limit`, judged from scalar searches alone (no frontier is
/// built): each layout's composition lies at or above its least time and least memory and
/// above lines memory + w time >= s_w(b), one composed scalar search per slope w for all
/// layouts at once, less `terms` for the rounding of w t. Slopes by the sandwich rule:
/// where layout b's region is not covered, the slope of the chord between the two
/// strategies found so far (the least time's, the least memory's and each line's) whose
/// memories straddle that point; that line touches the hull between them, and where the
/// slope was searched already the hull has that edge there (hull_not_covered). At most
/// `max_lines` searches (undecided past them); `lines` returns how many.
inline lines_outcome layouts_covered_by_lines(const layer_scalars& ls, const repeated_split& s,
                                              const std::vector<candidate>& known, cost_t limit, double slack,
                                              std::size_t max_bytes, std::size_t max_lines, std::size_t& lines) {
  lines = 0;
  const std::size_t nb = ls.tmin.size();
  std::vector<line_region> region(nb);
  std::vector<std::vector<scalar_min>> found(nb);  // strategies on the composition's hull
  std::vector<bool> live(nb, false);
  for (std::size_t b = 0; b < nb; ++b) {
    if (ls.tmin[b].value < 0 || ls.mmin[b].value < 0) continue;  // no strategy holds b
    region[b].t0 = ls.tmin[b].value;
    region[b].m0 = ls.mmin[b].value;
    found[b] = {ls.tmin[b], ls.mmin[b]};
    live[b] = true;
  }
  const long double most = (long double)(max_problem_cost) / (long double)(ls.terms + 1);
  std::vector<long double> slopes;
  for (std::size_t b = 0; b < nb; ++b) {
    if (!live[b]) continue;
    while (true) {
      const cost_t at = region_uncovered(known, region[b], limit, slack);
      if (at < 0) break;
      // no known point at or below that memory: the least-memory strategy (memory m0 <= at)
      // is not covered, whatever the lines
      if (known.empty() || known.front().memory > at) return lines_outcome::hull_not_covered;
      const scalar_min* lo = nullptr;
      const scalar_min* hi = nullptr;
      for (const auto& f : found[b]) {
        if (f.memory <= at && (!lo || f.memory > lo->memory)) lo = &f;
        if (f.memory > at && (!hi || f.memory < hi->memory)) hi = &f;
      }
      // at or past the least time's strategy, or before the least memory's: exact there
      if (!lo || !hi || lo->time <= hi->time) return lines_outcome::hull_not_covered;
      const long double w = (long double)(hi->memory - lo->memory) / (long double)(lo->time - hi->time);
      if (std::any_of(slopes.begin(), slopes.end(), [w](long double v) { return std::fabs(v - w) <= 1e-9L * w; }))
        return lines_outcome::hull_not_covered;
      if (lines >= max_lines) return lines_outcome::undecided;
      slopes.push_back(w);
      ++lines;
      const auto sw = composed_scalar(ls, s, max_bytes, [w = double(w), cap = cost_t(most)](cost_t tt, cost_t mm) {
        return weighed_below(mm, tt, w, cap);
      });
      for (std::size_t c = 0; c < nb; ++c) {
        if (!live[c] || sw[c].value < 0) continue;
        region[c].lines.push_back({w, (long double)(sw[c].value) - (long double)(ls.terms)});
        found[c].push_back(sw[c]);
      }
    }
  }
  return lines_outcome::covered;
}

}  // namespace tensoropt::detail
