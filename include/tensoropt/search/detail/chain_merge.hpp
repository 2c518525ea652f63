// One step of the exact chain fold (search/repeated_exact.hpp): the staircase of
// | over c of F(c) (+) T(c, d) for one layout d, pruned by a branch-and-bound region.
//
// The heap merge of detail/cell_merge.hpp (a popped row's next sum replaces the heap's
// front in one sift, detail/heap_front.hpp), with provenance kept per output point instead
// of back-pointers: for each input c the larger staircase S is swept and every point of
// the smaller one is a row (row + S is a staircase). Rows enter the heap when the memory
// sweep reaches their first point; a popped sum is kept when its time beats the best so
// far, it fits the memory limit and the region keeps it (detail/completion_bound.hpp). A
// sum the region drops still bounds the sums it dominates (the region is a down-set, so
// it would drop them too), and a row jumps, by a galloping search in S whose times decrease,
// past every sum that is dominated or above the region's bound at the popped memory (the
// bound only falls as memory grows). Sums above the memory limit end the merge.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>
#include "../frontier.hpp"
#include "completion_bound.hpp"
#include "heap_front.hpp"

namespace tensoropt::detail {

/// One input of a step: the staircases F(c) and T(c, d), and c.
struct chain_input {
  const std::vector<candidate>* f = nullptr;
  const std::vector<candidate>* t = nullptr;
  std::size_t state = 0;
};

/// Where an output point came from: state c, its point of F(c) and its point of T(c, d).
struct chain_source {
  std::size_t state = 0, fi = 0, ti = 0;
};

/// The pruned staircase of the union of f (+) t over `in`; `from` gets one source per point.
/// Points with memory above `limit` or outside `region` are dropped (exact, see the headers);
/// `shift`: every completion of this step's points costs at least that much more time than
/// the region's lower staircase (the fold's state-dependent bound), so a point is tested
/// with its time raised by it.
inline std::vector<candidate> chain_merge(const std::vector<chain_input>& in, const completion_filter& region,
                                          cost_t limit, std::vector<chain_source>& from, cost_t shift = 0) {
  // the region's bound less `shift` (a completion costs at least `shift` more time than the
  // region's lower staircase assumes; the unbounded stays unbounded)
  auto lowered = [shift](cost_t b) { return b == std::numeric_limits<cost_t>::max() ? b : b - shift; };
  struct row {
    cost_t time, memory;    // the row's point
    std::uint32_t input, i; // input and index of the row's point in the smaller staircase
  };
  struct item {
    cost_t memory, time;
    std::uint32_t row, j;
  };
  // a total order (ties by row and position), so the pops do not depend on the heap's layout
  auto after = [](const item& x, const item& y) {
    if (x.memory != y.memory) return x.memory > y.memory;
    if (x.time != y.time) return x.time > y.time;
    return x.row != y.row ? x.row > y.row : x.j > y.j;
  };
  std::vector<const std::vector<candidate>*> sweep(in.size());
  std::vector<bool> f_sweeps(in.size());
  std::vector<row> rows;
  for (std::size_t k = 0; k < in.size(); ++k) {
    f_sweeps[k] = in[k].f->size() >= in[k].t->size();
    sweep[k] = f_sweeps[k] ? in[k].f : in[k].t;
    const auto& small = f_sweeps[k] ? *in[k].t : *in[k].f;
    const auto& big = *sweep[k];
    for (std::size_t i = 0; i < small.size(); ++i)
      // a row whose ideal corner (least time and least memory of its sums) the region
      // drops has every sum dropped (the region is a down-set): it never enters
      if (region.keeps(small[i].time + big.back().time + shift, small[i].memory + big.front().memory) &&
          small[i].memory + big.front().memory <= limit)
        rows.push_back({small[i].time, small[i].memory, std::uint32_t(k), std::uint32_t(i)});
  }
  std::vector<item> pending, heap;
  pending.reserve(rows.size());
  // the inputs another input's real sum beats are left out (unbeaten_groups)
  auto at = [&](std::size_t r, std::size_t j) {
    const auto& q = (*sweep[rows[r].input])[j];
    return candidate{rows[r].time + q.time, rows[r].memory + q.memory, -1, -1};
  };
  unbeaten_groups(
      rows.size(), [&](std::size_t r, std::size_t e) { return rows[e].input == rows[r].input; },
      [&](std::size_t r) { return at(r, 0); }, [&](std::size_t r) { return at(r, sweep[rows[r].input]->size() - 1); },
      [&](std::size_t r, std::size_t e) {
        const candidate& first = sweep[rows[r].input]->front();
        for (std::size_t q = r; q < e; ++q)
          pending.push_back({rows[q].memory + first.memory, rows[q].time + first.time, std::uint32_t(q), 0});
      });
  std::sort(pending.begin(), pending.end(), [&](const item& x, const item& y) { return after(y, x); });
  std::vector<candidate> out;
  from.clear();
  std::size_t np = 0, corner = 0;
  cost_t best = std::numeric_limits<cost_t>::max();
  while (np < pending.size() || !heap.empty()) {
    const bool from_heap = !(np < pending.size() && (heap.empty() || !after(pending[np], heap.front())));
    const item x = from_heap ? heap.front() : pending[np++];  // the front is replaced or popped below
    if (x.memory > limit) break;
    const row& rw = rows[x.row];
    const auto& s = *sweep[rw.input];
    const cost_t cap = lowered(region.bound_rising(x.memory, corner));  // pops rise in memory
    std::size_t next = x.j + 1;
    const bool better = x.time < best;
    if (better) {
      best = x.time;
      if (x.time <= cap) {
        out.push_back({x.time, x.memory, -1, -1});
        const std::size_t fi = f_sweeps[rw.input] ? x.j : rw.i, ti = f_sweeps[rw.input] ? rw.i : x.j;
        from.push_back({in[rw.input].state, fi, ti});
      }
    }
    if (!better || x.time > cap) {
      // first j > x.j whose sum is below best and within cap (S's times decrease)
      const cost_t thr = std::min(best - 1, cap);
      next = usable_from(x.j + 1, s.size(), [&](std::size_t m) { return rw.time + s[m].time <= thr; });
    }
    const bool goes_on = next < s.size();
    item y{};
    if (goes_on) y = {rw.memory + s[next].memory, rw.time + s[next].time, x.row, std::uint32_t(next)};
    advance_rows(heap, after, from_heap, goes_on ? &y : nullptr);
  }
  return out;
}

}  // namespace tensoropt::detail
