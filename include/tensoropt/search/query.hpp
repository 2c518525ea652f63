// Queries on a frontier: fastest within a memory budget, least memory, least memory near the fastest.
//
// Each query takes any range of points with `time` (ps) and `memory` (bytes) members
// sorted as a frontier (memory ascending, time strictly descending): the `points` of a
// `frontier_result`, or the entries of a frontier file. They return a reference into it.
#pragma once
#include <cstdio>
#include <string>
#include "../core/error.hpp"
#include "problem.hpp"
#include "solve.hpp"

namespace tensoropt {
namespace detail {

inline std::string fmt_gib(cost_t bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f GiB (%lld bytes)", double(bytes) / double(1ll << 30),
                static_cast<long long>(bytes));
  return b;
}
inline std::string fmt_seconds(cost_t ps) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g s", double(ps) / ps_per_second);
  return b;
}
template <class Points>
void require_points(const Points& pts, const char* query) {
  if (pts.empty()) throw infeasible(std::string(query) + ": the frontier is empty");
}

}  // namespace detail

/// The point with the least memory (the slowest point of the frontier).
template <class Points>
const auto& least_memory(const Points& pts) {
  detail::require_points(pts, "least_memory");
  return pts.front();
}

/// The point with the least time (the one with the most memory).
template <class Points>
const auto& fastest(const Points& pts) {
  detail::require_points(pts, "fastest");
  return pts.back();
}

/// The fastest point whose memory is <= `memory_budget` bytes. Throws infeasible, stating
/// the least memory any strategy needs, when none fits.
template <class Points>
const auto& fastest_within(const Points& pts, cost_t memory_budget) {
  detail::require_points(pts, "fastest_within");
  if (pts.front().memory > memory_budget)
    throw infeasible("no strategy fits " + detail::fmt_gib(memory_budget) +
                     " per device; the least memory is " + detail::fmt_gib(pts.front().memory) +
                     " (point 0, iteration time " + detail::fmt_seconds(pts.front().time) +
                     "): raise the budget, add devices or micro-batches");
  std::size_t best = 0;
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (pts[i].memory <= memory_budget) best = i;
  return pts[best];
}

/// The point with the least memory whose time is within `percent` % of the fastest
/// (time <= fastest * (1 + percent / 100)). Throws invalid_argument for percent < 0.
template <class Points>
const auto& least_memory_within(const Points& pts, double percent) {
  if (!(percent >= 0))
    throw invalid_argument("least_memory_within: percent must be >= 0, got " +
                           std::to_string(percent));
  const auto& f = fastest(pts);
  const double limit = double(f.time) * (1.0 + percent / 100.0);
  for (const auto& q : pts)
    if (double(q.time) <= limit) return q;
  return f;
}

/// Overloads taking a frontier_result.
inline const frontier_point& least_memory(const frontier_result& r) { return least_memory(r.points); }
inline const frontier_point& fastest(const frontier_result& r) { return fastest(r.points); }
inline const frontier_point& fastest_within(const frontier_result& r, cost_t memory_budget) {
  return fastest_within(r.points, memory_budget);
}
inline const frontier_point& least_memory_within(const frontier_result& r, double percent) {
  return least_memory_within(r.points, percent);
}

}  // namespace tensoropt
