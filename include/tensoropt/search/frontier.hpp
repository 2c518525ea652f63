// The Pareto frontier over (memory, time) and its algebra: prune, Minkowski sum, union.
//
// A frontier is a staircase: points sorted by memory ascending with time strictly
// descending, so no point dominates another. Costs are integers (picoseconds, bytes),
// so sums are exact and equal costs compare equal.
//
// Every point carries a `tag`, a back-pointer into a `trace` arena that records how
// the point was made: a leaf (node, config), or the sum of two earlier points. The
// search keeps only the tags of surviving points, so the arena grows with the number
// of points that survive pruning, not with the number of candidates. `recover` walks
// a tag back into one config per node.
//
// epsilon pruning: `prune_epsilon(f, delta)` drops a point p only when the point kept
// just before it (less or equal memory) has time <= (1 + delta) * p.time. So every
// dropped point has a kept point with memory <= its memory and time within a factor
// (1 + delta). Sums and unions preserve such a cover, and nested prunes multiply
// their factors: after D nested prunes the cover is within (1 + delta)^D.
//
// Everything here is constexpr and runs in a constant expression.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>
#include "problem.hpp"

namespace tensoropt {

/// The back-pointer arena: entry i is a leaf (a < 0: node -1-a takes config b) or the
/// union of the choices of two earlier entries a and b.
struct trace {
  struct entry {
    std::int32_t a, b;
  };
  std::vector<entry> entries;

  /// Tags are 32-bit: a search that needs more back-pointers is too big to solve as
  /// asked (a clear error instead of wrapped indices).
  static constexpr std::size_t max_entries = std::size_t(INT32_MAX);
  constexpr void check_room() const {
    if (entries.size() >= max_entries)
      throw invalid_argument("the search needs more than 2^31 back-pointers: the problem is too big to solve "
                             "exactly; allow an approximation (epsilon > 0) or give fewer configs");
  }
  constexpr std::int32_t leaf(int node, int config) {
    check_room();
    entries.push_back({-1 - node, config});
    return std::int32_t(entries.size() - 1);
  }
  /// The tag of a point that joins the choices of tags x and y.
  constexpr std::int32_t join(std::int32_t x, std::int32_t y) {
    if (x < 0) return y;
    if (y < 0) return x;
    check_room();
    entries.push_back({x, y});
    return std::int32_t(entries.size() - 1);
  }
  /// Writes the configs recorded under `tag` into `choice` (indexed by node).
  constexpr void recover(std::int32_t tag, std::vector<int>& choice) const {
    std::vector<std::int32_t> stack;
    if (tag >= 0) stack.push_back(tag);
    while (!stack.empty()) {
      const entry e = entries[std::size_t(stack.back())];
      stack.pop_back();
      if (e.a < 0) {
        choice[std::size_t(-1 - e.a)] = e.b;
      } else {
        stack.push_back(e.a);
        stack.push_back(e.b);
      }
    }
  }
};

namespace detail {

/// A candidate during a sum: cost and the two tags it joins (joined only if it survives).
struct candidate {
  cost_t time = 0, memory = 0;
  std::int32_t ta = -1, tb = -1;
};

/// The candidates' total order: memory, then time, then tags. A function object, not a
/// function, so that std::sort inlines it (through a function pointer the comparisons
/// were 13 % of an inception-v3 search and the sort around them 8 %, perf).
struct memory_then_time_order {
  constexpr bool operator()(const candidate& x, const candidate& y) const {
    if (x.memory != y.memory) return x.memory < y.memory;
    if (x.time != y.time) return x.time < y.time;
    if (x.ta != y.ta) return x.ta < y.ta;
    return x.tb < y.tb;
  }
};
inline constexpr memory_then_time_order memory_then_time{};

/// Sorts `c` and keeps the non-dominated candidates in place (first of equal costs).
constexpr void pareto_filter(std::vector<candidate>& c) {
  if (c.size() <= 1) return;
  std::sort(c.begin(), c.end(), memory_then_time);
  std::size_t k = 0;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (k == 0 || c[i].time < c[k - 1].time) c[k++] = c[i];
  c.resize(k);
}

/// Drops from a frontier (sorted, exact) the points covered within (1 + delta) in time
/// by the last kept point of less or equal memory.
constexpr void epsilon_filter(std::vector<candidate>& c, double delta) {
  if (delta <= 0 || c.size() <= 2) return;
  std::size_t k = 1;
  for (std::size_t i = 1; i < c.size(); ++i) {
    const bool covered = double(c[k - 1].time) <= (1.0 + delta) * double(c[i].time);
    if (!covered) c[k++] = c[i];
  }
  c.resize(k);
}

}  // namespace detail

/// A frontier with back-pointers; `points` sorted by memory ascending, time descending.
struct frontier {
  /// One point: its cost and a back-pointer into the trace (-1: no choice recorded).
  struct point {
    cost_t time = 0, memory = 0;
    std::int32_t tag = -1;
    constexpr bool operator==(const point&) const = default;
  };
  std::vector<point> points;

  constexpr std::size_t size() const { return points.size(); }
  constexpr bool empty() const { return points.empty(); }
  constexpr bool operator==(const frontier&) const = default;

  /// True when points are sorted by memory ascending with time strictly descending.
  constexpr bool is_staircase() const {
    for (std::size_t i = 1; i < points.size(); ++i)
      if (!(points[i - 1].memory < points[i].memory && points[i - 1].time > points[i].time))
        return false;
    return true;
  }
};

/// Prunes arbitrary points (any order) into a frontier; dominated points and all but
/// one of equal points are dropped. Tags are kept as they are.
constexpr frontier make_frontier(std::vector<frontier::point> pts) {
  std::vector<detail::candidate> c;
  c.reserve(pts.size());
  for (auto& p : pts) c.push_back({p.time, p.memory, p.tag, -1});
  detail::pareto_filter(c);
  frontier f;
  f.points.reserve(c.size());
  for (auto& x : c) f.points.push_back({x.time, x.memory, x.ta});
  return f;
}

/// a (+) b: every sum of a point of a and a point of b, pruned. Tags are joined in `t`.
constexpr frontier minkowski_sum(const frontier& a, const frontier& b, trace& t,
                                 double delta = 0) {
  std::vector<detail::candidate> c;
  c.reserve(a.size() * b.size());
  for (auto& x : a.points)
    for (auto& y : b.points) c.push_back({x.time + y.time, x.memory + y.memory, x.tag, y.tag});
  detail::pareto_filter(c);
  detail::epsilon_filter(c, delta);
  frontier f;
  f.points.reserve(c.size());
  for (auto& x : c) f.points.push_back({x.time, x.memory, t.join(x.ta, x.tb)});
  return f;
}

/// a | b: the union of two frontiers, pruned by a linear merge.
constexpr frontier frontier_union(const frontier& a, const frontier& b, double delta = 0) {
  std::vector<detail::candidate> c;
  c.reserve(a.size() + b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const bool take_a =
        j == b.size() ||
        (i < a.size() && (a.points[i].memory < b.points[j].memory ||
                          (a.points[i].memory == b.points[j].memory &&
                           a.points[i].time <= b.points[j].time)));
    const auto& p = take_a ? a.points[i++] : b.points[j++];
    if (c.empty() || p.time < c.back().time) c.push_back({p.time, p.memory, p.tag, -1});
  }
  detail::epsilon_filter(c, delta);
  frontier f;
  f.points.reserve(c.size());
  for (auto& x : c) f.points.push_back({x.time, x.memory, x.ta});
  return f;
}

}  // namespace tensoropt
