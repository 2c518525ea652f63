// Queries on a frontier: fastest within a memory budget, least memory, fastest, and
// least memory within x % of the fastest.
//
// Each query takes any staircase of points (memory ascending, time strictly
// descending) whose elements have integer `time` (ps) and `memory` (bytes): the
// `points` of a `frontier_result` or of a planned frontier, or a frontier file read
// back. The answer is the position of the point, or no value when no point
// qualifies (an empty frontier, or nothing within the budget): there is no sentinel
// index and no throwing twin. The planner's frontier wraps the same queries into
// plan handles (plan/planned_frontier.hpp). `no_fit_message` words the usual reason
// for an empty answer. A point that carries its runtime peak (frontier_point::peak,
// set by the planner: plan/peak_frontier.hpp) is held against a budget by that peak,
// not by the additive memory the search optimized; such a staircase is ascending in
// both.
#pragma once
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "frontier_result.hpp"

namespace tensoropt {
namespace detail {

inline std::string fmt_gib(cost_t bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f GiB (%lld bytes)", double(bytes) / double(1ll << 30),
                static_cast<long long>(bytes));
  return b;
}
/// The memory a budget is held against: `peak` where the point has a nonzero one.
template <class Point>
constexpr cost_t query_memory(const Point& p) {
  if constexpr (requires { p.peak; })
    return p.peak > 0 ? p.peak : p.memory;
  else
    return p.memory;
}
inline std::string fmt_seconds(cost_t ps) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g s", double(ps) / ps_per_second);
  return b;
}

}  // namespace detail

/// The position of the point with the least memory (the slowest), if any.
template <class Points>
std::optional<std::size_t> least_memory(const Points& pts) {
  if (pts.empty()) return std::nullopt;
  return std::size_t(0);
}

/// The position of the fastest point (the one with the most memory), if any.
template <class Points>
std::optional<std::size_t> fastest(const Points& pts) {
  if (pts.empty()) return std::nullopt;
  return pts.size() - 1;
}

/// The position of the fastest point whose memory (its peak where known) is at most
/// `budget`; none when no point fits (or the frontier is empty).
template <class Points>
std::optional<std::size_t> fastest_within(const Points& pts, bytes budget) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (from_byte_count(detail::query_memory(pts[i])) <= budget) best = i;
  return best;
}

/// The position of the point with the least memory whose time is within `percent` %
/// of the fastest (time <= fastest * (1 + percent / 100)); none for an empty
/// frontier. Throws invalid_argument for a negative or NaN percent.
template <class Points>
std::optional<std::size_t> least_memory_within(const Points& pts, double percent) {
  if (!(percent >= 0))
    throw invalid_argument("least_memory_within: percent must be >= 0, got " + std::to_string(percent));
  if (pts.empty()) return std::nullopt;
  const double limit = double(pts.back().time) * (1.0 + percent / 100.0);
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (double(pts[i].time) <= limit) return i;
  return pts.size() - 1;
}

/// Why `fastest_within(pts, budget)` has no answer, as a one-line message naming
/// the least memory any point needs and the ways out.
template <class Points>
std::string no_fit_message(const Points& pts, bytes budget) {
  if (pts.empty()) return "the frontier is empty: no strategy fits the device";
  return "no strategy fits " + format_bytes(budget) + " per device; the least memory is " +
         format_bytes(from_byte_count(detail::query_memory(pts.front()))) + " (point 0, " +
         format_seconds(from_picoseconds(pts.front().time)) +
         " per iteration): raise the budget, add devices or micro-batches";
}

/// The same queries on a solve result.
inline std::optional<std::size_t> least_memory(const frontier_result& r) { return least_memory(r.points); }
inline std::optional<std::size_t> fastest(const frontier_result& r) { return fastest(r.points); }
inline std::optional<std::size_t> fastest_within(const frontier_result& r, bytes budget) {
  return fastest_within(r.points, budget);
}
inline std::optional<std::size_t> least_memory_within(const frontier_result& r, double percent) {
  return least_memory_within(r.points, percent);
}

}  // namespace tensoropt
