// A lower bound of a powered sum A (+) T^M (+) Z from convex hulls, and the test whether
// known points cover everything above it (search/repeated.hpp skips boundary layouts with it
// before composing them).
//
// Every point of a staircase lies on or above its lower convex hull, and the Minkowski sum
// of convex sets is the convex set whose boundary takes the edges of both in slope order,
// so every point of A (+) T^M (+) Z lies on or above the chain hull(A) (+) M hull(T) (+)
// hull(Z): no composition is needed, only the hulls (linear in the staircases' sizes) and
// a merge of their edges. For M identical sums the bound is tight up to one copy of T's
// departure from convexity. Costs are integers and the arithmetic is exact (128-bit
// products), so a layout is skipped only when a known point truly lies at or below every
// point above the chain.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>
#include "../frontier.hpp"

namespace tensoropt::detail {

__extension__ using wide_cost = __int128;

/// A convex chain: vertices from the least memory (most time) to the least time, memory
/// strictly increasing and time strictly decreasing, slopes increasing.
struct hull_chain {
  std::vector<cost_t> memory, time;
};

/// The lower convex hull of a staircase (memory ascending, time strictly descending).
inline hull_chain lower_hull(const std::vector<candidate>& s) {
  hull_chain h;
  for (auto& p : s) {
    while (h.memory.size() >= 2) {
      const std::size_t n = h.memory.size();
      // drop the last vertex when it lies on or above the segment from the one before it to p
      const wide_cost dm1 = h.memory[n - 1] - h.memory[n - 2], dt1 = h.time[n - 1] - h.time[n - 2];
      const wide_cost dm2 = p.memory - h.memory[n - 2], dt2 = p.time - h.time[n - 2];
      if (dt1 * dm2 >= dt2 * dm1) { h.memory.pop_back(); h.time.pop_back(); }
      else break;
    }
    h.memory.push_back(p.memory);
    h.time.push_back(p.time);
  }
  return h;
}

/// The chain of sum_i scale_i hull_i (the lower boundary of the Minkowski sum of the
/// hulls, each scaled): starts at the sum of the first vertices and takes every edge, each
/// scaled, in order of slope.
inline hull_chain hull_sum(const std::vector<const hull_chain*>& parts, const std::vector<cost_t>& scale) {
  hull_chain out;
  struct edge { cost_t dm, dt; };
  std::vector<edge> edges;
  cost_t m = 0, t = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const hull_chain& h = *parts[i];
    if (h.memory.empty()) return out;
    m += scale[i] * h.memory.front();
    t += scale[i] * h.time.front();
    for (std::size_t v = 1; v < h.memory.size(); ++v)
      edges.push_back({scale[i] * (h.memory[v] - h.memory[v - 1]), scale[i] * (h.time[v] - h.time[v - 1])});
  }
  // steepest first: dt_x / dm_x < dt_y / dm_y (dm > 0)
  std::stable_sort(edges.begin(), edges.end(),
                   [](const edge& x, const edge& y) { return wide_cost(x.dt) * y.dm < wide_cost(y.dt) * x.dm; });
  out.memory.push_back(m);
  out.time.push_back(t);
  for (auto& e : edges) {
    m += e.dm;
    t += e.dt;
    out.memory.push_back(m);
    out.time.push_back(t);
  }
  return out;
}

/// True when every integer point (m, t) with chain start <= m <= limit on or above `chain`
/// (t >= the chain's time at m, its last time past its end) has a point k of `known` (a
/// staircase) with k.memory <= m and k.time <= (1 + slack) t. Exact at slack 0; under a
/// slack, k.time is held to (1 + slack) (1 - 1e-12) times the chain's (real) time.
inline bool covers_chain(const std::vector<candidate>& known, const hull_chain& chain, cost_t limit,
                         double slack = 0) {
  if (chain.memory.empty() || chain.memory.front() > limit) return true;  // nothing above it fits
  const std::size_t n = chain.memory.size();
  // the known point in force at the chain's start
  auto it = std::upper_bound(known.begin(), known.end(), chain.memory.front(),
                             [](cost_t x, const candidate& c) { return x < c.memory; });
  if (it == known.begin()) return false;
  std::size_t i = std::size_t(it - known.begin()) - 1, seg = 0;
  while (true) {
    // known[i] holds on [from, to]: to = next known memory - 1, or the limit
    const cost_t to = i + 1 < known.size() ? std::min(limit, known[i + 1].memory - 1) : limit;
    // the chain's least time on [.., to]: at `to` (non-increasing)
    while (seg + 1 < n && chain.memory[seg + 1] <= to) ++seg;
    if (slack > 0) {
      long double t = (long double)(chain.time[n - 1]);
      if (seg + 1 < n)
        t = (long double)(chain.time[seg]) + (long double)(chain.time[seg + 1] - chain.time[seg]) *
                                                 (long double)(to - chain.memory[seg]) /
                                                 (long double)(chain.memory[seg + 1] - chain.memory[seg]);
      if ((long double)(known[i].time) > t * (1 + (long double)(slack)) * (1 - 1e-12L)) return false;
    } else if (seg + 1 >= n) {
      if (known[i].time > chain.time[n - 1]) return false;
    } else {
      // the least integer time at `to` on the segment [seg, seg + 1] is ceil(t_s + dt (to - m_s) / dm);
      // known.time <= ceil(x) exactly when known.time - 1 < x
      const wide_cost dm = chain.memory[seg + 1] - chain.memory[seg], dt = chain.time[seg + 1] - chain.time[seg];
      if (wide_cost(known[i].time - 1 - chain.time[seg]) * dm >= dt * (to - chain.memory[seg])) return false;
    }
    if (to >= limit || i + 1 >= known.size()) return true;
    ++i;
  }
}

}  // namespace tensoropt::detail
