// The planner's frontier held against the runtime peak: every reported plan carries
// its predicted peak (plan/memory_peak.hpp), and the points shown are those not
// dominated under (peak, iteration time).
//
// The search optimizes the additive memory `kept` (search/problem.hpp: a sum over ops
// and edges) exactly; the runtime's peak is kept plus a transient working set that is
// not additive (peak / kept measured 0.75x .. 2.19x over the runtime tests' frontiers).
// A budget query on `kept` can therefore pick a plan whose runtime peak exceeds the
// budget. `attach_peaks` replays every point of the planner's union and then:
//  - sets frontier_point::peak, which budget queries (search/query.hpp,
//    planned_frontier's fastest_within / no_fit_message) and plan::memory() use;
//  - drops the points whose peak exceeds the device's memory (the search held the
//    additive memory to it; a plan whose additive memory is over the device but whose
//    peak is under it is not found) and the points dominated under (peak, time): a
//    point is kept iff its peak is below the peak of every faster point kept. What is left is a subset of the additive
//    staircase whose peaks strictly rise as time falls, so it is a staircase in both
//    memories at once and every query that assumes sorted points stays correct;
//  - keeps every point the search returned, with its peak, in `searched` (what
//    --frontier-json writes: the search's exact additive frontier);
//  - says how the frontier was computed (`describe`): exact over the additive
//    memory, then filtered by the replayed peak. This is not the exact (peak, time)
//    frontier: a plan off the additive frontier can have a lower peak than every
//    plan on it at the same time.
//
// Cost: one replay per point (linear in ops, with one cost_op per op), run on
// `threads` threads; the result does not depend on the thread count.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>
#include "memory_peak.hpp"
#include "planned_frontier.hpp"

namespace tensoropt {

/// The replayed peak of point `i` of `pf` (its micro-batch graph, configs, cluster and build options).
inline memory_peak point_peak(const planned_frontier& pf, std::size_t i) {
  const auto& b = pf.problem_of(i);
  return predicted_peak(b.graph, pf.op_configs(i), b.cl, b.options);
}

/// What attach_peaks did, for the reports.
struct peak_filter {
  std::size_t searched = 0;  ///< points of the additive frontier
  std::size_t dropped = 0;   ///< dominated under (peak, time)
  std::size_t over = 0;      ///< of those, peak above the memory limit
  double ratio_lo = 0, ratio_hi = 0;  ///< peak / additive memory over the searched points
  /// "the predicted runtime peak per plan (...); the search optimized the additive memory, not the peak, ..."
  std::string describe() const {
    char b[320];
    std::snprintf(b, sizeof b,
                  "the predicted runtime peak per plan (a replay of the executor's buffers, %.2fx .. %.2fx "
                  "the additive memory); the search optimized the additive memory, not the peak, and %zu of its "
                  "%zu points were dropped: dominated under (peak, time), or %zu with a peak above the device",
                  ratio_lo, ratio_hi, dropped, searched, over);
    return b;
  }
};

/// Sets every point's peak and drops the points of `pf` dominated under (peak, time)
/// and those whose peak exceeds `limit` bytes (the device; see the file comment).
/// `threads` = 0: every core.
inline peak_filter attach_peaks(planned_frontier& pf, std::size_t threads = 0, cost_t limit = max_problem_cost) {
  peak_filter f;
  const std::size_t n = pf.points.size();
  f.searched = n;
  if (n == 0) return f;
  std::vector<double> peak(n, 0.0);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < n;) peak[i] = point_peak(pf, i).peak();
  };
  const std::size_t hw = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(hw, n); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  f.ratio_lo = 1e300;
  f.ratio_hi = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // a peak never rounds below 1 byte, so 0 keeps meaning "not computed"
    pf.points[i].peak = std::max<cost_t>(1, detail::checked_cost(std::ceil(peak[i]), "the predicted peak"));
    const double r = double(pf.points[i].peak) / double(std::max<cost_t>(1, pf.points[i].memory));
    f.ratio_lo = std::min(f.ratio_lo, r);
    f.ratio_hi = std::max(f.ratio_hi, r);
  }
  pf.searched = pf.points;  // every point the search returned, with its peak (--frontier-json)
  // points are sorted by time strictly descending: walk from the fastest
  std::vector<bool> keep(n, false);
  cost_t best = max_problem_cost;
  for (std::size_t i = n; i-- > 0;)
    if (pf.points[i].peak > limit)
      ++f.over;
    else if (pf.points[i].peak < best) {
      keep[i] = true;
      best = pf.points[i].peak;
    }
  std::vector<frontier_point> pts;
  std::vector<int> part_of;
  for (std::size_t i = 0; i < n; ++i)
    if (keep[i]) {
      pts.push_back(std::move(pf.points[i]));
      if (i < pf.part_of.size()) part_of.push_back(pf.part_of[i]);
    }
  f.dropped = n - pts.size();
  pf.points = std::move(pts);
  pf.part_of = std::move(part_of);
  return f;
}

}  // namespace tensoropt
