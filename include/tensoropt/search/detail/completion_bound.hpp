// Branch and bound for exact searches: the test that drops a partial strategy when no
// completion of it can reach the frontier (used by search/repeated_exact.hpp).
//
// The test. K is a staircase of costs of real strategies of the problem (for example the
// frontier of fast mode, search/repeated.hpp). LB is a lower staircase of every
// completion of a partial strategy p: for each completion c (the cost of everything not
// yet in p) some r in LB has r <= c in both objectives. p is dropped iff for every r in LB
// some k in K has
//     k.memory <= p.memory + r.memory  and  k.time < p.time + r.time.
// Then every completion p + c (with r <= c) is strictly dominated by the real strategy k,
// so no strategy through p has a frontier cost, and every strategy with a frontier cost
// keeps all of its partial strategies: the search still finds every point of the exact
// frontier, each with a strategy of its own. Exact; the costs of K are never returned.
//
// The survival region. "p + r is not strictly dominated by K" says p + r lies in the free
// region of K, {x : no k has k.memory <= x.memory and k.time < x.time}: a down-set whose
// maximal corners are (k_{j+1}.memory - 1, k_j.time) (costs are integers), plus
// (k_0.memory - 1, inf) and (inf, k_last.time). p survives iff p lies in the union over r
// of (free region - r), a down-set again, whose corners are the Pareto-maximal points of
// {corner - r}. Negated, that is the Pareto-minimal Minkowski sum of (-corners) and LB,
// computed by the heap merge of detail/staircase_sum.hpp in time near its output. So one
// sum turns a test against all of LB into one binary search per point (`bound`: the
// largest time that survives at a memory).
//
// The memory limit. A completion above the limit is never returned, so "p + r survives"
// also asks p + r.memory <= limit: the free region ends at the limit (its last corner
// (limit, k_last.time) instead of (inf, k_last.time), every corner clipped to it). Measured
// on gpt3-1.3b (4 x V100-16GB, exact, every count, one thread): k = 128's solve 0.35 ->
// 0.23 s, the planning 2.60 -> 2.44 s, the frontier file byte-identical; without it the
// partial points whose only completions not beaten by K lay above the limit were carried
// to the last layer.
//
// Erosion. When LB grows by a staircase U (LB' = LB (+) U: one more layer still to come),
// the region for LB' is the region for LB eroded by U: its corners are the maximal points
// of {corner - u} (`erode`). A chain of L identical layers builds its L regions one from
// the next at the cost of a sum with U each, instead of a sum with the whole LB.
//
// Why the lower staircase must be exact. Frontiers of repeated layers are dense (on
// gpt3-1.3b, a point every 1e-4 in relative memory), so a lower bound looser than that
// keeps almost everything. Measured on gpt3-1.3b (k = 256): inside the general search,
// with LB the sum of every other factor's staircase coarsened to 4,096 points, the test
// kept 151K of 201K partial points at a layer boundary and the search ran 5 x slower; the
// chain fold's exact LB keeps at most 16K over all boundary layouts.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>
#include "../frontier.hpp"
#include "staircase_sum.hpp"

namespace tensoropt::detail {

/// The survival region of the header: `bound(m)` is the largest time a partial strategy
/// of memory m may have and still reach the frontier (cost max: any time). Inactive: keeps all.
struct completion_filter {
  bool active = false;
  std::vector<candidate> corners;  // finite maximal corners: memory ascending, time descending
  cost_t free_memory = -1;         // memory <= free_memory survives whatever its time
  cost_t free_time = -1;           // time <= free_time survives whatever its memory

  constexpr cost_t bound(cost_t m) const {
    if (!active || m <= free_memory) return std::numeric_limits<cost_t>::max();
    auto it = std::lower_bound(corners.begin(), corners.end(), m,
                               [](const candidate& c, cost_t x) { return c.memory < x; });
    return it == corners.end() ? free_time : std::max(free_time, it->time);
  }
  constexpr bool keeps(cost_t t, cost_t m) const { return t <= bound(m); }
  /// Drops the corners below memory `m`: bound() at memories >= m is unchanged, and so are
  /// those of every erosion of the region at memories >= m less the eroding staircase's
  /// least memory (an eroded corner has at most the memory of the corner it comes from).
  constexpr void drop_below(cost_t m) {
    const auto it = std::lower_bound(corners.begin(), corners.end(), m,
                                     [](const candidate& c, cost_t x) { return c.memory < x; });
    corners.erase(corners.begin(), it);
  }
  /// bound(m) for memories that never fall between calls (a merge in memory order): `at`
  /// (start at 0) walks the corners once instead of a binary search per call.
  constexpr cost_t bound_rising(cost_t m, std::size_t& at) const {
    if (!active || m <= free_memory) return std::numeric_limits<cost_t>::max();
    while (at < corners.size() && corners[at].memory < m) ++at;
    return at == corners.size() ? free_time : std::max(free_time, corners[at].time);
  }
};

/// The corners of `f` eroded by the staircase `u` (see the header): the region of LB (+) u
/// from the region of LB. An empty `u` (no completion exists) leaves `f` unchanged.
inline completion_filter erode(const completion_filter& f, const std::vector<candidate>& u) {
  if (!f.active || u.empty()) return f;
  completion_filter g;
  g.active = true;
  g.free_memory = f.free_memory - u.front().memory;
  g.free_time = f.free_time - u.back().time;
  if (f.corners.empty()) return g;
  // negated corners in ascending negated memory form a staircase; rows of the merge: u
  std::vector<candidate> neg;
  neg.reserve(f.corners.size());
  for (std::size_t i = f.corners.size(); i-- > 0;) neg.push_back({-f.corners[i].time, -f.corners[i].memory, -1, -1});
  const auto s = sum_with_provenance(u, neg, 0.0, std::numeric_limits<cost_t>::max());
  g.corners.reserve(s.size());
  for (std::size_t i = s.size(); i-- > 0;) g.corners.push_back({-s[i].time, -s[i].memory, -1, -1});
  return g;
}

/// Whether every point of `lb` has a point of `by` at or below it (both objectives; `lb`
/// any set of points, `by` any points with .time and .memory).
template <class Point>
bool all_at_or_below(const std::vector<candidate>& lb, std::vector<Point> by) {
  std::sort(by.begin(), by.end(), [](const Point& x, const Point& y) { return x.memory < y.memory; });
  std::vector<candidate> sorted = lb;
  std::sort(sorted.begin(), sorted.end(), [](const candidate& x, const candidate& y) { return x.memory < y.memory; });
  cost_t best = std::numeric_limits<cost_t>::max();
  std::size_t j = 0;
  for (const auto& l : sorted) {
    while (j < by.size() && by[j].memory <= l.memory) best = std::min(best, by[j++].time);
    if (best > l.time) return false;
  }
  return true;
}

/// prune(a (+) u (+) ... (+) u (+) z), n copies of u, each sum pruned within (1 + delta)
/// (detail/staircase_sum.hpp) and cut at `limit` less the least memory still to come: for
/// every such sum s within `limit` it holds a real sum p with p.memory <= s.memory and
/// p.time <= (1 + delta)^(n + 1) s.time. `factor` receives (1 + delta)^(n + 1).
inline std::vector<candidate> chain_sum_pruned(const std::vector<candidate>& a, const std::vector<candidate>& u,
                                               std::size_t n, const std::vector<candidate>& z, cost_t limit,
                                               double delta, long double& factor) {
  factor = std::pow((long double)(1 + delta), (long double)(n + 1));
  if (a.empty() || z.empty() || (n > 0 && u.empty())) return {};
  const cost_t um = n ? u.front().memory : 0, zm = z.front().memory;
  std::vector<candidate> s = a;
  for (std::size_t i = 0; i < n; ++i)
    s = sum_with_provenance(s, u, delta, limit - cost_t(n - 1 - i) * um - zm);
  return sum_with_provenance(s, z, delta, limit);
}

/// Whether the points `by` lie at or below every sum a + u_1 + ... + u_n + z within `limit`
/// (a in `a`, each u_i in `u`, z in `z`: staircases), tested without the exact sum. With
/// P = chain_sum_pruned at delta and f its factor: P's points are real sums, so if one of
/// them has no point of `by` at or below it, neither has the exact sum's point below it
/// (false, whatever delta); if every point of P / f (times divided by f) has one, so has
/// every exact sum (true). Between the two, the test is made again at delta / 10.
template <class Point>
bool chain_sums_beaten(const std::vector<candidate>& a, const std::vector<candidate>& u, std::size_t n,
                       const std::vector<candidate>& z, cost_t limit, const std::vector<Point>& by) {
  if (by.empty()) return false;
  for (const double delta : {1e-3, 1e-4}) {
    long double f = 1;
    auto p = chain_sum_pruned(a, u, n, z, limit, delta, f);
    if (!all_at_or_below(p, by)) return false;
    for (auto& q : p) q.time = cost_t(std::floor((long double)q.time / f));
    if (all_at_or_below(p, by)) return true;
  }
  return false;
}

/// The region for known strategies `k` (a staircase) and completions above the staircase
/// `lb`, within the memory limit `limit` (see the header). Inactive when `k` is empty (nothing to test against).
inline completion_filter make_completion_filter(const std::vector<candidate>& k, const std::vector<candidate>& lb,
                                                cost_t limit = std::numeric_limits<cost_t>::max()) {
  completion_filter f;
  if (k.empty()) return f;
  f.active = true;
  f.free_memory = k.front().memory - 1;
  f.free_time = k.back().time;
  const bool limited = limit < std::numeric_limits<cost_t>::max();
  if (limited) {
    // nothing above the limit survives: the region ends there, its corners clipped to it
    f.free_time = -1;
    if (f.free_memory >= limit) {
      f.free_memory = limit;
      return erode(f, lb);
    }
  }
  for (std::size_t j = 0; j + 1 < k.size(); ++j) {
    if (limited && k[j + 1].memory - 1 >= limit) {
      f.corners.push_back({k[j].time, limit, -1, -1});
      return erode(f, lb);
    }
    f.corners.push_back({k[j].time, k[j + 1].memory - 1, -1, -1});
  }
  if (limited) f.corners.push_back({k.back().time, limit, -1, -1});
  return erode(f, lb);
}

}  // namespace tensoropt::detail
