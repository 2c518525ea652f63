// The sums of the powering (search/repeated.hpp): prune(a (+) b) of two staircases with
// provenance, by a heap merge of the rows a_i + b in memory order.
//
// A popped sum is kept when no kept point covers it (kept.time <= (1 + delta) time; delta
// = 0: plain dominance), and a row jumps (galloping search, b's times decrease) to its first
// sum that could be kept; sums above the memory limit end the merge. Sorting all |a| |b|
// sums instead took 75 % of a gpt3-1.3b search. A square (one staircase as both operands,
// as the doublings do) merges only a_i + a_j with j >= i.
//
// The dominance filter. Points already returned (u) make a partial sum s useless when
// u.memory <= s.memory + off_memory and u.time <= (1 + delta) (s.time + off_time), where
// (off_time, off_memory) is at most what any completion adds to s (the least time and
// memory of the instances and parts still to come): u then covers every completion of s
// within (1 + delta), as the sum's own pruning would, so the epsilon bound of the powering
// is unchanged and delta = 0 stays exact. Rows jump past filtered sums the same way: the
// filter's bound at a sum's memory bounds every later sum of its row.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>
#include "../frontier.hpp"
#include "heap_front.hpp"

namespace tensoropt::detail {

struct power_node {
  std::vector<candidate> pts;  // ta, tb: points of the left and right operands (leaf: ta = tag)
  int left = -1, right = -1;
  std::size_t count = 1;       // instances covered
};

/// The depth of nested sums of binary powering to m copies (squarings and accumulations
/// on one chain): the number of prunes a point of the power has been through.
constexpr std::size_t power_depth(std::size_t m) {
  std::size_t base = 0, acc = 0;
  bool have = false;
  for (std::size_t r = m; r; r >>= 1) {
    if (r & 1) { acc = have ? std::max(acc, base) + 1 : base; have = true; }
    if (r >> 1) base += 1;
  }
  return acc;
}

/// The largest time t with (1 + delta) t < b in floating point (t < b at delta 0): the
/// merges' keep test ("beats the last kept point by more than 1 + delta") as an integer
/// threshold. The test is monotone in t, so it holds exactly for t <= the threshold, which
/// is found once per kept point instead of at every probe of every search.
constexpr cost_t time_below(cost_t b, double delta) {
  if (delta <= 0) return b - 1;
  const double f = 1 + delta;
  cost_t t = cost_t(double(b) / f);
  while (t >= 0 && !(f * double(t) < double(b))) --t;
  while (f * double(t + 1) < double(b)) ++t;
  return t;
}

/// Points already found (a staircase) that make a partial sum useless: a sum s whose every
/// completion costs at least s + (off_time, off_memory) is dropped when a point u has
/// u.memory <= s.memory + off_memory and u.time <= (1 + delta) (s.time + off_time), since u
/// then covers every completion of s as a sum's own pruning does (delta = 0: u weakly
/// dominates them; exact). The points of u are real and returned.
struct dominance_filter {
  const std::vector<candidate>* u = nullptr;
  cost_t off_time = 0, off_memory = 0;
  /// The least time a sum at memory m must beat (max when nothing bounds it).
  constexpr cost_t bound(cost_t m) const {
    if (!u || u->empty()) return std::numeric_limits<cost_t>::max();
    auto it = std::upper_bound(u->begin(), u->end(), m + off_memory,
                               [](cost_t x, const candidate& c) { return x < c.memory; });
    return it == u->begin() ? std::numeric_limits<cost_t>::max() : std::prev(it)->time - off_time;
  }
};

/// prune(a (+) b) of two staircases, with provenance (ta, tb: indices into a and b), by a
/// heap merge of the rows a_i + b in memory order: a popped sum is kept when no kept point
/// covers it (kept.time <= (1 + delta) time; delta = 0: plain dominance), and a row jumps
/// (galloping search, b's times decrease) to its first sum that could be kept. Sums above
/// `limit` end the merge. Sorting all |a| |b| sums instead took 75 % of a gpt3-1.3b search.
/// A square (one staircase passed as both operands, as the powering's doublings do)
/// merges only the sums a_i + a_j with j >= i: the others repeat them. Sums that `filter`
/// drops are skipped the same way (a row jumps past them).
constexpr std::vector<candidate> sum_with_provenance(const std::vector<candidate>& a, const std::vector<candidate>& b,
                                                  double delta, cost_t limit, const dominance_filter& filter = {}) {
  std::vector<candidate> out;
  if (a.empty() || b.empty()) return out;
  struct head { cost_t memory, time; std::int32_t i, j; };
  // a total order (ties by row and position), so the pops do not depend on the heap's layout
  auto later = [](const head& x, const head& y) {
    if (x.memory != y.memory) return x.memory > y.memory;
    if (x.time != y.time) return x.time > y.time;
    return x.i != y.i ? x.i > y.i : x.j > y.j;
  };
  // a square (a and b one staircase): a_i + a_j = a_j + a_i, so row i starts at j = i
  const bool square = &a == &b;
  // Row i's first sum (a_i + b_0, or a_i + a_i) has more memory than row i - 1's (a is a
  // staircase), so rows enter the merge in order, each when the sweep reaches its first
  // sum: the heap holds only the rows still competing, and a row whose every sum is covered
  // on entry never enters it.
  auto first_of = [&](std::size_t i) {
    const std::size_t j = square ? i : 0;
    return head{a[i].memory + b[j].memory, a[i].time + b[j].time, std::int32_t(i), std::int32_t(j)};
  };
  std::vector<head> heap;
  std::size_t next_row = 0;
  // A sum of time t may be kept iff it is not covered by the last kept point ((1 + delta) t
  // < its time), beats it (t < its time) and is not filtered ((1 + delta) t < the filter's
  // bound): t <= an integer threshold (time_below), found once per kept point and per
  // pop, so the searches compare integers.
  constexpr cost_t none = std::numeric_limits<cost_t>::max();
  auto below = [&](cost_t b) { return time_below(b, delta); };
  cost_t kept_limit = none;  // from the last kept point
  while (next_row < a.size() || !heap.empty()) {
    head h;
    const bool from_heap = !(next_row < a.size() && (heap.empty() || !later(first_of(next_row), heap.front())));
    if (!from_heap) h = first_of(next_row++);
    else h = heap.front();  // replaced by its row's next sum, or popped, below
    if (h.memory > limit) break;
    // the filter's bound at h.memory also bounds the later sums of row i (more memory)
    const cost_t fb = filter.bound(h.memory);
    cost_t usable = fb == none ? kept_limit : std::min(kept_limit, below(fb));
    const bool kept = h.time <= usable;
    if (kept) {
      out.push_back({h.time, h.memory, h.i, h.j});
      kept_limit = std::min(below(h.time), h.time - 1);
      usable = fb == none ? kept_limit : std::min(kept_limit, below(fb));
    }
    // next sum of row i that is not covered by the last kept point nor filtered
    const cost_t at = a[std::size_t(h.i)].time;
    auto ok = [&](std::size_t m) { return at + b[m].time <= usable; };
    const std::size_t lo = kept ? first_from(std::size_t(h.j) + 1, b.size(), ok)
                                : usable_from(std::size_t(h.j) + 1, b.size(), ok);
    const bool goes_on = lo < b.size();
    head y{};
    if (goes_on) y = {a[std::size_t(h.i)].memory + b[lo].memory, at + b[lo].time, h.i, std::int32_t(lo)};
    advance_rows(heap, later, from_heap, goes_on ? &y : nullptr);
  }
  return out;
}

}  // namespace tensoropt::detail
