// The exact frontier over (peak bound, time): the bound of plan/peak_bound.hpp is
// kept' (additive over ops and edges) + cap (the largest per-op or per-edge site
// term), which the engine cannot sum; enumerating the cap makes it additive again.
//
// For each distinct cap value c (ascending): forbid the configs whose term exceeds c
// (dropped from their node) and the edge cells whose term exceeds c (given a memory
// above the search's limit, so the search drops every partial strategy holding one),
// solve the additive problem over (time, kept') exactly (search/solve.hpp), add c to
// every point's memory, and take the union, pruned. Exact: a strategy whose largest
// term is M is feasible at the cap c = M and reported there at kept' + M; at any
// larger cap it is reported above that, so the union holds its true bound; a cap never
// reports less than a point's bound. Caps are pruned soundly:
//  - caps below the least cap every op can meet (each op's least term) are skipped;
//  - a cap at which a node has no config left, or the search finds no strategy, adds
//    nothing;
//  - once the union holds a point at or below (least kept' + next cap, least time),
//    every later cap is dominated (its points cost at least that) and the walk stops;
//  - a strategy new at cap c holds an item (config or edge cell) whose term lies above
//    the previous cap; such an item is forbidden when a point of the union is at or
//    below what any strategy holding it costs at least (its own cost plus every other
//    node and edge at its least), and a cap with no new item left is skipped;
//  - each restricted search is given the union so far, less c in memory, as known
//    strategies (solve_options::known): it drops the partial strategies that one of them
//    beats strictly, which are dominated in the union (in particular every strategy the
//    previous caps allowed: found there with less memory).
//  - with a memory limit L, caps above L - least kept' are not solved, and each
//    restricted search runs with the limit L - c.
//  - with node groups (peak_search_options::groups, the planner's: the instances of a
//    repeated block), a lower bound LB of every strategy's (kept', time) whatever its cap
//    (plan/job_bounds.hpp's grouped_bound: each group's exact frontier, the edges between
//    groups at their least; every time raised to the least time of any strategy) ends the
//    walk at the first cap c where the union beats every point of LB + (c, 0) as the known
//    strategies do (no more memory and less time, or less memory and no more time): every
//    strategy of cap c or later lies at or above such a point, so its search would return
//    nothing the union keeps. gpt3-1.3b (4 x V100-16GB, exact): k = 1024's walk solved 15
//    caps, 13 of them empty; the bound ends it after 9.
// Bucketing (epsilon > 0): caps are grouped into runs whose largest is at most
// (1 + epsilon) times their least, and each run is solved once at its largest cap: a
// strategy whose largest term M falls in a run is reported at kept' + c with
// c <= (1 + epsilon) M, so every reported memory is within (1 + epsilon) of the
// strategy's bound and no point of the exact frontier is missed by more than that
// factor (times are exact). The planner uses it where the caps are many.
#pragma once
#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>
#include "../search/solve.hpp"
#include "job_bounds.hpp"
#include "peak_bound.hpp"

namespace tensoropt {

struct peak_search_options {
  solve_options solve{};  ///< of each restricted search (its memory_limit bounds the bound)
  double epsilon = 0;     ///< cap bucketing (file comment); 0: every distinct cap
  /// Node groups for the bound that ends the walk over caps (file comment; the instances of
  /// a repeated block); empty: no such bound. Any grouping is exact.
  std::vector<std::vector<int>> groups{};
};

struct peak_search_result {
  std::vector<frontier_point> points;  ///< memory = the bound (kept' + cap), choice into the problem
  std::vector<cost_t> cap;             ///< per point: the cap it was found under
  std::size_t caps = 0;                ///< distinct cap values
  std::size_t solved = 0;              ///< restricted searches run
  bool exact = true;                   ///< every search exact and no bucketing
  double epsilon = 0;
};

namespace detail {
/// The caps to solve (ascending): every distinct term, or under epsilon the largest of each run.
inline std::vector<cost_t> cap_values(const peak_bound_problem& pb, double epsilon, std::size_t& distinct) {
  std::vector<cost_t> v;
  for (auto& n : pb.node_cap) v.insert(v.end(), n.begin(), n.end());
  for (auto& e : pb.edge_cap) v.insert(v.end(), e.begin(), e.end());
  cost_t least = 0;  // every strategy's cap is at least each op's least term
  for (auto& n : pb.node_cap)
    if (!n.empty()) least = std::max(least, *std::min_element(n.begin(), n.end()));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::erase_if(v, [&](cost_t c) { return c < least; });
  distinct = v.size();
  if (epsilon <= 0 || v.empty()) return v;
  std::vector<cost_t> runs;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && double(v[j + 1]) <= (1 + epsilon) * double(v[i])) ++j;
    runs.push_back(v[j]);
    i = j + 1;
  }
  return runs;
}
}  // namespace detail

/// The frontier of `pb` over (kept' + cap, time) (see the file comment). Throws as solve does.
inline peak_search_result solve_peak_bound(const peak_bound_problem& pb, const peak_search_options& o = {}) {
  detail::require(o.epsilon >= 0, "solve_peak_bound: epsilon must be >= 0 (0 means exact)");
  const problem& p = pb.kept;
  peak_search_result r;
  r.epsilon = o.epsilon;
  const auto caps = detail::cap_values(pb, o.epsilon, r.caps);
  r.exact = o.epsilon <= 0 || caps.size() == r.caps;
  // least kept' and least time of any strategy (every node and edge at its least)
  cost_t kept_lo = p.memory_offset, time_lo = 0, kept_hi = p.memory_offset;
  for (auto& nd : p.nodes) {
    cost_t m = max_problem_cost, t = max_problem_cost, mh = 0;
    for (auto& c : nd.configs) m = std::min(m, c.memory), t = std::min(t, c.time), mh = std::max(mh, c.memory);
    kept_lo += m, time_lo += t, kept_hi += mh;
  }
  for (auto& e : p.edges)
    if (!e.memory.empty()) {
      kept_lo += *std::min_element(e.memory.begin(), e.memory.end());
      kept_hi += *std::max_element(e.memory.begin(), e.memory.end());
      time_lo += *std::min_element(e.time.begin(), e.time.end());
    }
  std::vector<frontier_point> all;
  std::vector<cost_t> all_cap;
  // the groups' lower bound of every strategy, each time raised to the least time of any
  // strategy (see the file comment); made once, when the union first holds a point
  std::optional<std::vector<detail::candidate>> lower;
  auto make_lower = [&] { return detail::layered_bound(p, o.groups, o.solve.memory_limit, 0.0, o.solve.max_bytes); };
  // whether a union point beats (bound m, time t) as the search's known strategies do: no
  // more memory and less time, or less memory and no more time
  auto beats_point = [&](cost_t m, cost_t t) {
    auto le = std::upper_bound(all.begin(), all.end(), m, [](cost_t x, const frontier_point& u) { return x < u.memory; });
    if (le != all.begin() && std::prev(le)->time < t) return true;
    auto lt = std::lower_bound(all.begin(), all.end(), m, [](const frontier_point& u, cost_t x) { return u.memory < x; });
    return lt != all.begin() && std::prev(lt)->time <= t;
  };
  for (std::size_t ci = 0; ci < caps.size(); ++ci) {
    const cost_t c = caps[ci];
    if (o.solve.memory_limit < max_problem_cost && c > o.solve.memory_limit - kept_lo) break;
    bool done = false;  // a point at or below (kept_lo + c, time_lo) dominates this cap and every later one
    for (auto& q : all) done = done || (q.time <= time_lo && q.memory <= kept_lo + c);
    // the groups' bound beaten at this cap: at every later cap too (its points move right)
    if (!done && !o.groups.empty() && !all.empty()) {
      if (!lower) lower = make_lower();
      done = std::all_of(lower->begin(), lower->end(),
                         [&](const detail::candidate& x) { return beats_point(x.memory + c, x.time); });
    }
    if (done) break;
    // the restricted problem: configs with a term <= c, forbidden cells above the limit
    std::vector<std::vector<int>> keep(p.nodes.size());
    bool empty = false;
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
      for (std::size_t a = 0; a < p.nodes[i].configs.size(); ++a)
        if (pb.node_cap[i][a] <= c) keep[i].push_back(int(a));
      empty = empty || keep[i].empty();
    }
    if (empty) continue;
    // Strategies new at this cap hold an item (config or edge cell) whose term lies in
    // (previous cap, c]; one holding item x costs at least lo(x): x's own cost plus every
    // other node and edge at its least allowed cost. A new item is forbidden when a point
    // of the union is at or below (lo(x).kept' + c, lo(x).time); with no new item left
    // the cap is skipped.
    const cost_t prev = ci == 0 ? -1 : caps[ci - 1];
    std::vector<cost_t> nm(p.nodes.size()), nt_(p.nodes.size()), em(p.edges.size()), et(p.edges.size());
    cost_t base_m = p.memory_offset, base_t = 0;
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
      nm[i] = nt_[i] = max_problem_cost;
      for (int a : keep[i])
        nm[i] = std::min(nm[i], p.nodes[i].configs[std::size_t(a)].memory),
        nt_[i] = std::min(nt_[i], p.nodes[i].configs[std::size_t(a)].time);
      base_m += nm[i], base_t += nt_[i];
    }
    bool open = true;  // every edge has an allowed cell
    for (std::size_t ei = 0; ei < p.edges.size() && open; ++ei) {
      const auto& e = p.edges[ei];
      const std::size_t nt = p.nodes[std::size_t(e.to)].configs.size();
      em[ei] = et[ei] = max_problem_cost;
      for (int a : keep[std::size_t(e.from)])
        for (int b : keep[std::size_t(e.to)]) {
          const std::size_t k = std::size_t(a) * nt + std::size_t(b);
          if (pb.edge_cap[ei][k] <= c) em[ei] = std::min(em[ei], e.memory[k]), et[ei] = std::min(et[ei], e.time[k]);
        }
      open = em[ei] < max_problem_cost;
      if (open) base_m += em[ei], base_t += et[ei];
    }
    if (!open) continue;
    auto beaten = [&](cost_t m, cost_t t) {  // a union point at or below (m + c, t)
      auto it = std::upper_bound(all.begin(), all.end(), m + c,
                                 [](cost_t x, const frontier_point& u) { return x < u.memory; });
      return it != all.begin() && std::prev(it)->time <= t;
    };
    std::vector<std::vector<bool>> cell_ok(p.edges.size());
    bool fresh = false;
    for (std::size_t i = 0; i < p.nodes.size(); ++i)
      std::erase_if(keep[i], [&](int a) {
        const auto& x = p.nodes[i].configs[std::size_t(a)];
        if (pb.node_cap[i][std::size_t(a)] <= prev) return false;
        const bool drop = beaten(base_m - nm[i] + x.memory, base_t - nt_[i] + x.time);
        fresh = fresh || !drop;
        return drop;
      });
    for (std::size_t ei = 0; ei < p.edges.size(); ++ei) {
      const auto& e = p.edges[ei];
      const std::size_t f = std::size_t(e.from), t = std::size_t(e.to), nt = p.nodes[t].configs.size();
      cell_ok[ei].assign(e.memory.size(), false);
      for (int a : keep[f])
        for (int b : keep[t]) {
          const std::size_t k = std::size_t(a) * nt + std::size_t(b);
          if (pb.edge_cap[ei][k] > c) continue;
          if (pb.edge_cap[ei][k] <= prev) {
            cell_ok[ei][k] = true;
            continue;
          }
          const auto& xa = p.nodes[f].configs[std::size_t(a)];
          const auto& xb = p.nodes[t].configs[std::size_t(b)];
          const bool drop = beaten(base_m - em[ei] + e.memory[k] - nm[f] + xa.memory - nm[t] + xb.memory,
                                   base_t - et[ei] + e.time[k] - nt_[f] + xa.time - nt_[t] + xb.time);
          cell_ok[ei][k] = !drop;
          fresh = fresh || !drop;
        }
    }
    if (!fresh) continue;
    empty = false;
    for (auto& k : keep) empty = empty || k.empty();
    if (empty) continue;
    const cost_t limit = std::min(kept_hi, o.solve.memory_limit < max_problem_cost ? o.solve.memory_limit - c
                                                                                    : max_problem_cost);
    const cost_t forbid = limit + 1;
    // the cells the cap leaves out cost more memory than the limit: never taken
    const problem q = detail::restricted_problem(
        p, keep, [&](std::size_t ei, std::size_t k, cost_t m) { return cell_ok[ei][k] ? m : forbid; });
    solve_options so = o.solve;
    so.memory_limit = limit;
    // the union so far, in this cap's terms (bound - c): what it beats strictly is dominated
    for (auto& x : all) so.known.push_back({x.time, std::max<cost_t>(0, x.memory - c), -1});
    const auto f = solve(q, so);
    ++r.solved;
    r.exact = r.exact && f.exact;
    for (auto& pt : f.points) {
      frontier_point x = pt;
      for (std::size_t i = 0; i < x.choice.size(); ++i) x.choice[i] = keep[i][std::size_t(x.choice[i])];
      x.memory += c;
      all.push_back(std::move(x));
      all_cap.push_back(c);
    }
    // prune the union: sorted by memory, time strictly falling
    std::vector<std::size_t> idx(all.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) {
      return all[x].memory != all[y].memory ? all[x].memory < all[y].memory : all[x].time < all[y].time;
    });
    std::vector<frontier_point> kept;
    std::vector<cost_t> kept_cap;
    for (std::size_t i : idx)
      if (kept.empty() || all[i].time < kept.back().time) {
        kept.push_back(std::move(all[i]));
        kept_cap.push_back(all_cap[i]);
      }
    all = std::move(kept);
    all_cap = std::move(kept_cap);
  }
  r.points = std::move(all);
  r.cap = std::move(all_cap);
  return r;
}

}  // namespace tensoropt
