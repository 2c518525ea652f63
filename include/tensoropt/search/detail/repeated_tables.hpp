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
// Before both, scalar searches alone (`layouts_covered_by_lines`): T(b) lies at or above
// its least time and least memory and above lines memory + w time >= s_w(b), each the
// least of memory + w time over T(b)'s strategies, found for every layout at once by one
// search whose frontiers are single points (every cost moved into memory). Supporting
// lines add under Minkowski sums (the least of a sum is the sum of the least), so every
// point of A(b) (+) T(b)^M (+) Z(b) lies in the region of the corner plus M times T(b)'s
// bounds, and the search is skipped when the known points cover that region within
// (1 + slack). Slopes by the sandwich rule: where the region is not covered, the chord
// between the two strategies of T(b) found so far (each search gives one) whose memories
// straddle the point; a slope searched already means the hull has that edge there, so no
// line lifts the region and the test fails. It needs no coarse solve, so it runs at
// every epsilon; on gpt3-39b it skips k = 4 to 32, on megatron-1t (epsilon 0.05, where
// the coarse test does not run) k = 1 to 16, 48 and 256 to 1024.
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

/// T's subproblem (one middle layer fed by a copy of the layer before's boundary node),
/// its kept nodes (the copy and o_1), their layout classes and, with `diagonal`, the
/// positions tied to the boundary's layout (the stream), as solve_parts searches it.
struct t_subproblem {
  problem q;
  std::vector<int> keep;
  std::vector<std::vector<int>> classes;
  std::vector<std::pair<int, std::vector<int>>> tied;
};
inline t_subproblem t_subproblem_of(const problem& p, const repeated_block& rb, const repeated_split& s, bool diagonal,
                                    std::vector<int>& rt) {
  const int o0 = rb.instances[0][std::size_t(s.boundary)];
  const int o1 = rb.instances[1][std::size_t(s.boundary)];
  t_subproblem out;
  out.q = fed_subproblem(p, rb.instances[1], o0, s.reps, rt);
  out.keep = {0, local_index(rt, o1)};
  // the boundary nodes group their configs by layout class (s.group), so every
  // layout-config of o_0 and o_1 lies in one class, as per_layout reads them
  out.classes = {{}, s.group};
  if (diagonal) {
    std::vector<int> copy_class(s.reps.size());
    for (std::size_t b = 0; b < copy_class.size(); ++b) copy_class[b] = int(b);
    out.classes[0] = copy_class;
    for (std::size_t j : stream_positions(p, rb, s)) out.tied.push_back({local_index(rt, rb.instances[1][j]), s.group});
  }
  return out;
}

/// Solves the tables of `p` split by `s` with options `o` that `parts` names, into `out`
/// (the others are left as they are); `diagonal`: T only where its input and output take one
/// layout (fast mode's restriction).
inline void solve_parts(const problem& p, const repeated_block& rb, const repeated_split& s, const solve_options& o,
                        bool diagonal, unsigned parts, repeated_tables& out) {
  const int o0 = rb.instances[0][std::size_t(s.boundary)];
  const auto [pa, qz] = ends_problems(p, rb, s, out.ra, out.rz);
  const auto local = local_index;
  std::vector<std::vector<int>> a_classes{s.group}, z_classes;
  std::vector<std::pair<int, std::vector<int>>> a_tied, z_tied;
  if (diagonal) {
    std::vector<int> copy_class(s.reps.size());
    for (std::size_t b = 0; b < copy_class.size(); ++b) copy_class[b] = int(b);
    // the stream: the positions held to the boundary's layout (repeated_block::kin)
    const std::size_t L = rb.instances.size();
    for (std::size_t j : stream_positions(p, rb, s)) {
      a_tied.push_back({local(out.ra, rb.instances[0][j]), s.group});
      z_tied.push_back({local(out.rz, rb.instances[L - 1][j]), s.group});
    }
    if (!z_tied.empty()) z_classes = {copy_class};
  }
  if (parts & part_a) out.a = solve_conditioned(pa, {local(out.ra, o0)}, o, a_classes, a_tied);
  if (parts & part_t) {
    const t_subproblem t = t_subproblem_of(p, rb, s, diagonal, out.rt);
    out.t = solve_conditioned(t.q, t.keep, o, t.classes, t.tied);
  }
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

/// A scalar search's least value for one layout and the time and memory of a strategy
/// that takes it (value -1: no strategy holds the layout).
struct scalar_min {
  cost_t value = -1, time = 0, memory = 0;
};

/// The least of f(time, memory) summed over a strategy of T(b), for every layout b (T's
/// subproblem `t` as t_subproblem_of gives it, diagonal), and a strategy taking it: every
/// config and edge costs f in memory and nothing in time, so each cell of the conditioned
/// search is one point (a scalar search, one pass per cell). f must be >= 0 and each of
/// its values at most max_problem_cost / (t_terms + 1) (so no sum leaves the range;
/// callers cap it).
template <class Weigh>
std::vector<scalar_min> t_scalar_per_layout(const t_subproblem& t, const repeated_split& s, std::size_t max_bytes,
                                            Weigh f) {
  problem q;
  q.memory_offset = f(cost_t(0), t.q.memory_offset);
  q.nodes.resize(t.q.nodes.size());
  for (std::size_t i = 0; i < q.nodes.size(); ++i) {
    const auto& from = t.q.nodes[i].configs;
    auto& cs = q.nodes[i].configs;
    cs.resize(from.size());
    for (std::size_t c = 0; c < cs.size(); ++c) cs[c].memory = f(from[c].time, from[c].memory);
  }
  q.edges.resize(t.q.edges.size());
  for (std::size_t i = 0; i < q.edges.size(); ++i) {
    const auto& e = t.q.edges[i];
    auto& g = q.edges[i];
    g.from = e.from;
    g.to = e.to;
    g.time.assign(e.time.size(), 0);
    g.memory.resize(e.memory.size());
    for (std::size_t x = 0; x < e.time.size(); ++x) g.memory[x] = f(e.time[x], e.memory[x]);
  }
  solve_options so;
  so.max_bytes = max_bytes;
  const conditioned_frontier cf = solve_conditioned(q, t.keep, so, t.classes, t.tied);
  const std::size_t nb = s.reps.size(), mo = cf.dims[1];
  std::vector<scalar_min> out(nb);
  std::vector<int> choice;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::size_t bt = copy_cell(cf, b);
    std::size_t best_cell = 0, best = cf.pts.size();
    for (std::size_t d = 0; d < mo; ++d) {
      if (std::size_t(s.group[std::size_t(cf.configs[1][d][0])]) != b) continue;
      const std::size_t c = bt * mo + d;
      for (std::size_t i = cf.start[c]; i < cf.start[c + 1]; ++i)
        if (best == cf.pts.size() || cf.pts[i].memory < cf.pts[best].memory) {
          best = i;
          best_cell = c;
        }
    }
    if (best == cf.pts.size()) continue;
    out[b].value = cf.pts[best].memory;
    // the strategy (its kept nodes from the cell where the trace leaves them open)
    choice.assign(q.nodes.size(), -1);
    cf.tr.recover(cf.pts[best].tag, choice);
    if (choice[std::size_t(t.keep[0])] < 0) choice[std::size_t(t.keep[0])] = cf.configs[0][best_cell / mo][0];
    if (choice[std::size_t(t.keep[1])] < 0) choice[std::size_t(t.keep[1])] = cf.configs[1][best_cell % mo][0];
    if (std::none_of(choice.begin(), choice.end(), [](int c) { return c < 0; })) {
      const strategy_cost c = cost_of(t.q, choice);
      out[b].time = c.time;
      out[b].memory = c.memory;
    }
  }
  return out;
}

/// The terms of a scalar search of T (its nodes, its edges and its offset): each rounds
/// w t down by less than one.
inline std::size_t t_terms(const t_subproblem& t) { return t.q.nodes.size() + t.q.edges.size() + 1; }

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

/// Whether the known points cover, within (1 + slack), every exact point of every layout's
/// A (+) T(b)^m (+) Z(b) up to `limit`, judged from scalar searches of T alone (no
/// frontier is built): A and Z lie at or above one corner (`ends`, ends_corner), T(b) at
/// or above its least time and least memory (`tmin`, `mmin`) and above lines
/// memory + w time >= s_w(b) (one scalar search of T per slope w, for all layouts at
/// once). Supporting lines add under Minkowski sums, so every point of layout b lies in
/// line_region{ends.time + m tmin(b), ends.memory + m mmin(b), {(w, ends.memory + w
/// ends.time + m (s_w(b) - terms))}} (terms: the rounding of w t). Slopes by the sandwich
/// rule: where layout b's region is not covered, the slope of the chord between the two
/// strategies of T(b) found so far (the least time's, the least memory's and each line's)
/// whose memories straddle that point; the line of that slope touches the hull between
/// them, and where it does not lift the region there (the hull has that edge) no line
/// will, so the test fails. At most `max_lines` searches; `lines` returns how many.
inline bool layouts_covered_by_lines(const t_subproblem& t, const repeated_split& s, const candidate& ends,
                                     const std::vector<scalar_min>& tmin, const std::vector<scalar_min>& mmin,
                                     std::size_t m, const std::vector<candidate>& known, cost_t limit, double slack,
                                     std::size_t max_bytes, std::size_t max_lines, std::size_t& lines) {
  lines = 0;
  if (known.empty() || m == 0) return false;
  const std::size_t nb = tmin.size();
  std::vector<line_region> region(nb);
  std::vector<std::vector<scalar_min>> found(nb);  // strategies of T(b) on its hull
  std::vector<bool> live(nb, false);
  for (std::size_t b = 0; b < nb; ++b) {
    if (tmin[b].value < 0 || mmin[b].value < 0) continue;  // no strategy holds b
    region[b].t0 = ends.time + cost_t(m) * tmin[b].value;
    region[b].m0 = ends.memory + cost_t(m) * mmin[b].value;
    found[b] = {tmin[b], mmin[b]};
    live[b] = true;
  }
  const std::size_t terms = t_terms(t);
  const long double most = (long double)(max_problem_cost) / (long double)(terms + 1);
  std::vector<long double> slopes;
  for (std::size_t b = 0; b < nb; ++b) {
    if (!live[b]) continue;
    while (true) {
      const cost_t at = region_uncovered(known, region[b], limit, slack);
      if (at < 0) break;
      if (lines >= max_lines) return false;
      // the chord of T(b)'s strategies found around `at` (in T(b)'s memory)
      const long double x = ((long double)(at) - (long double)(ends.memory)) / (long double)(m);
      const scalar_min* lo = nullptr;
      const scalar_min* hi = nullptr;
      for (const auto& f : found[b]) {
        if ((long double)(f.memory) <= x && (!lo || f.memory > lo->memory)) lo = &f;
        if ((long double)(f.memory) > x && (!hi || f.memory < hi->memory)) hi = &f;
      }
      if (!lo || !hi || lo->time <= hi->time) return false;  // at or past the least time: exact there
      const long double w = (long double)(hi->memory - lo->memory) / (long double)(lo->time - hi->time);
      if (std::any_of(slopes.begin(), slopes.end(), [w](long double v) { return std::fabs(v - w) <= 1e-9L * w; }))
        return false;  // searched already: the hull has this edge, no line lifts the region here
      slopes.push_back(w);
      ++lines;
      const auto sw = t_scalar_per_layout(t, s, max_bytes, [w, most](cost_t tt, cost_t mm) {
        return cost_t(std::min(most, (long double)(mm) + std::floor(w * (long double)(tt))));
      });
      for (std::size_t c = 0; c < nb; ++c) {
        if (!live[c] || sw[c].value < 0) continue;
        const long double sc = (long double)(sw[c].value) - (long double)(terms);
        region[c].lines.push_back({w, (long double)(ends.memory) + w * (long double)(ends.time) + (long double)(m) * sc});
        found[c].push_back(sw[c]);
      }
    }
  }
  return true;
}

}  // namespace tensoropt::detail
