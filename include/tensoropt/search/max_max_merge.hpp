// The frontier of two parts that run side by side: (max memory, max time).
//
// Pipeline stages run on disjoint devices at once, so a pipeline's memory per device is
// the largest of its stages' and its time is set by its slowest stage. Combining the
// frontiers A and B of two stages (each a staircase: memory ascending, time strictly
// descending) gives the frontier of { (max(a.memory, b.memory), max(a.time, b.time)) }.
//
// Exact in linear time: in a combination whose memory is a's (b.memory <= a.memory),
// replacing b by the fastest point of B with memory <= a.memory keeps the memory and
// does not raise the time; that point is the last such one of B's staircase. So the
// candidates are, for each a, a with the last b at or below its memory, and the same
// with A and B swapped: |A| + |B| candidates, then one Pareto filter. Each result says
// which point of A and of B it combines.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>
#include "problem.hpp"

namespace tensoropt {

/// A point of a max-max combination: its cost and the points of A and B it combines.
struct max_max_point {
  cost_t time = 0, memory = 0;
  std::int32_t a = -1, b = -1;
  constexpr bool operator==(const max_max_point&) const = default;
};

/// The exact frontier of (max memory, max time) over every pair of a point of `a` and a
/// point of `b` (see the file comment). `a` and `b` hold `.time` and `.memory`, sorted by
/// memory ascending with time strictly descending. Ties keep the pair with the smaller
/// (a, b) indices.
template <class A, class B>
constexpr std::vector<max_max_point> max_max_merge(const A& a, const B& b) {
  std::vector<max_max_point> c;
  c.reserve(a.size() + b.size());
  std::size_t j = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    while (j < b.size() && b[j].memory <= a[i].memory) ++j;
    if (j > 0)
      c.push_back({std::max(a[i].time, b[j - 1].time), a[i].memory, std::int32_t(i), std::int32_t(j - 1)});
  }
  std::size_t i = 0;
  for (std::size_t jj = 0; jj < b.size(); ++jj) {
    while (i < a.size() && a[i].memory <= b[jj].memory) ++i;
    if (i > 0)
      c.push_back({std::max(a[i - 1].time, b[jj].time), b[jj].memory, std::int32_t(i - 1), std::int32_t(jj)});
  }
  std::sort(c.begin(), c.end(), [](const max_max_point& x, const max_max_point& y) {
    if (x.memory != y.memory) return x.memory < y.memory;
    if (x.time != y.time) return x.time < y.time;
    if (x.a != y.a) return x.a < y.a;
    return x.b < y.b;
  });
  std::size_t k = 0;
  for (std::size_t n = 0; n < c.size(); ++n)
    if (k == 0 || c[n].time < c[k - 1].time) c[k++] = c[n];
  c.resize(k);
  return c;
}

}  // namespace tensoropt
