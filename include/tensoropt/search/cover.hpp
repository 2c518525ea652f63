// The cover of a frontier: the fewest points that stand for all of them within a time tolerance.
//
// Exact frontiers are large and nearly redundant: per-op recomputation over identical
// layers is a knapsack with identical items, so gpt3-1.3b on 4 x V100-16GB over all
// micro-batch counts has 8,980 exact points, of which a 1 % cover keeps 65 (measured with
// tensoropt-plan, see plan/report.hpp).
// A person reading a table or a plot needs the shape of the trade-off, not every step.
//
// Definition. Points p_0 .. p_{n-1} form a staircase: memory strictly ascending, time
// strictly descending. A point c covers p when
//       c.memory <= p.memory   and   c.time <= (1 + tol) * p.time,
// i.e. c needs no more memory than p (memory exact) and is at most tol slower. A cover
// is a subset S such that every point is covered by some member of S. (Every point
// covers itself, so the whole frontier is a cover.) `cover_indices` returns a cover of
// the least size, which may be asked to contain given points (the chosen plan).
//
// The greedy scan. Walk the staircase by increasing memory, holding the last point
// taken, c. Take p_j when p_j is required, or when c does not cover p_j (also for j = 0,
// when nothing is held); then c = p_j.
//
// Why it is a cover: a point that is not taken is covered by the c held when it is
// reached, which lies before it (less memory) and is within tol in time.
//
// Why it is the smallest (one-sided covers make this a simple exchange argument). Let
// the greedy take g_1 < g_2 < ... < g_m and let S be any cover containing the required
// points. Claim: S has at least i members with index <= g_i, for each i. For i = 1,
// g_1 = 0 and only p_0 has memory <= p_0.memory, so p_0 is in S. Step from i to i + 1:
//  - if g_{i+1} is required, it is in S itself and g_{i+1} > g_i;
//  - otherwise g_i does not cover g_{i+1}: t(g_i) > (1 + tol) t(g_{i+1}). Every index
//    <= g_i has time >= t(g_i) (times descend), so none of them covers g_{i+1} either;
//    a member of S covering g_{i+1} has memory <= its memory, hence an index in
//    (g_i, g_{i+1}].
// Either way S has a member in (g_i, g_{i+1}], on top of the i members at or before g_i.
// With i = m, |S| >= m. The same argument shows the greedy is optimal for every prefix,
// so the scan is O(n) with no search. The tests compare it with brute force over every
// subset of random small staircases, with and without required points.
//
// The comparison of times is done in double precision, so for integer costs (ps) the
// tolerance is exact up to double rounding of (1 + tol) * time; memory compares exactly.
//
// `--frontier-json` and `--solve` keep every point: a cover is for display only, and
// outside tools that check the planner need the whole frontier.
#pragma once
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>
#include "../core/error.hpp"

namespace tensoropt {

/// The tolerance reports use unless told otherwise: every frontier point has a shown
/// point with no more memory and at most 1 % more time.
inline constexpr double default_display_tolerance = 0.01;

namespace detail {

/// True when a point of time `ct` (and memory <= the other's) covers a point of time `pt`.
template <class T>
constexpr bool time_within(const T& ct, const T& pt, double tolerance) {
  return double(ct) <= (1.0 + tolerance) * double(pt);
}

template <class Points>
constexpr void require_staircase(const Points& pts, const char* what) {
  for (std::size_t i = 1; i < pts.size(); ++i) {
    const auto& a = pts[i - 1];
    const auto& b = pts[i];
    if (!(a.memory < b.memory) || !(b.time < a.time))
      throw invalid_argument(std::string(what) + ": points " + std::to_string(i - 1) + " and " + std::to_string(i) +
                             " are not a frontier (memory must ascend strictly and time descend strictly); "
                             "prune the points first");
  }
}

constexpr void require_tolerance(double tolerance, const char* what) {
  if (!(tolerance >= 0) || !(tolerance < 1e6))
    throw invalid_argument(std::string(what) + ": the tolerance must be a finite number >= 0 (0.01 = 1 %), got " +
                           std::to_string(tolerance));
}

}  // namespace detail

/// True when point `c` covers point `p`: no more memory, time within (1 + tolerance).
template <class Point>
constexpr bool covers(const Point& c, const Point& p, double tolerance) {
  return c.memory <= p.memory && detail::time_within(c.time, p.time, tolerance);
}

/// The indices (ascending) of a smallest cover of `pts` at `tolerance` that contains
/// every index in `required` (see the header). `pts` is any range of points with `time`
/// and `memory` members sorted as a frontier. Throws invalid_argument when `pts` is not
/// a staircase, the tolerance is negative or not finite, or a required index is out of range.
template <class Points>
constexpr std::vector<std::size_t> cover_indices(const Points& pts, double tolerance,
                                                 std::span<const std::size_t> required = {}) {
  detail::require_tolerance(tolerance, "cover_indices");
  detail::require_staircase(pts, "cover_indices");
  std::vector<bool> must(pts.size(), false);
  for (std::size_t r : required) {
    if (r >= pts.size())
      throw invalid_argument("cover_indices: required point " + std::to_string(r) + " is out of range (" +
                             std::to_string(pts.size()) + " points)");
    must[r] = true;
  }
  std::vector<std::size_t> out;
  for (std::size_t j = 0; j < pts.size(); ++j)
    if (out.empty() || must[j] || !detail::time_within(pts[out.back()].time, pts[j].time, tolerance))
      out.push_back(j);
  return out;
}

/// True when the points of `pts` at `subset` cover every point of `pts` (any order, any
/// points: a check for tests and for outside tools, O(n * |subset|)).
template <class Points>
constexpr bool is_cover(const Points& pts, std::span<const std::size_t> subset, double tolerance) {
  for (std::size_t j = 0; j < pts.size(); ++j) {
    bool ok = false;
    for (std::size_t c : subset)
      if (c < pts.size() && covers(pts[c], pts[j], tolerance)) { ok = true; break; }
    if (!ok) return false;
  }
  return true;
}

/// For each point of `pts`, the index of the member of `cover` (ascending, as returned by
/// cover_indices) that stands for it: the last member at or before it.
inline std::vector<std::size_t> cover_owner(std::size_t points, std::span<const std::size_t> cover) {
  std::vector<std::size_t> owner(points, 0);
  std::size_t k = 0;
  for (std::size_t j = 0; j < points; ++j) {
    while (k + 1 < cover.size() && cover[k + 1] <= j) ++k;
    owner[j] = cover.empty() ? j : cover[k];
  }
  return owner;
}

}  // namespace tensoropt
