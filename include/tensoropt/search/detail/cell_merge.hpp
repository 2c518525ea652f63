// The inner kernel of an elimination: one cell's frontier as the pruned union of sums, by a heap merge.
//
// A cell of a new factor is  | over cv of (+) of the joined factors' cells at cv. For each
// cv, the largest span S is kept as a staircase and the others become "rows": each row is
// a base cost (the sum of the single-point spans plus one point of the second largest
// span A), and row + S is a staircase too. All rows of all cv are merged in memory order
// with a min-heap; a popped point is kept when its time beats the best so far, and a
// dominated one jumps (a galloping search in S, whose times decrease: heap_front.hpp) to
// the first point that could beat it. Sorting every candidate (the first version) spent 75 % of the search in
// std::sort on a 4-layer transformer; the merge touches only the points near the staircase.
// Back-pointers are joined only for the points that survive. Before the merge, a cv whose
// every sum the fastest or the leanest real sum of another cv beats strictly is left out,
// and a row that cannot beat the last kept point even at S's least time stops at once (one
// probe instead of a galloping search); neither changes what is kept. In the table of
// wresnet-13b's A part (8 x 8 V100-16GB, k = 16; a test driver) the two sums leave out 42 %
// of the 134.5M rows (the staircase of every cv's first and last sums would leave out 52 %,
// at the cost of a sort per cell), and the count's search took 21.4 -> 19.0-19.5 s
// (`plan_bench --only wresnet-13b --threads 1 --epsilon 0.05 --micro-batches 16 --no-check`,
// the builds before and after, one after the other).
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>
#include "../frontier.hpp"
#include "heap_front.hpp"
#include "staircase_sum.hpp"

namespace tensoropt::detail {

// (ta, tb) pending tags of a partial sum, plus tag x: at most one join is made.
constexpr void add_tag(candidate& c, std::int32_t x, trace& t) {
  if (x < 0) return;
  if (c.ta < 0) c.ta = x;
  else if (c.tb < 0) c.tb = x;
  else { c.ta = t.join(c.ta, c.tb); c.tb = x; }
}

// cur := prune(cur (+) span); joins tags only for the survivors. The pruned sum is
// staircase_sum.hpp's heap merge (ta, tb: indices into cur and the span), which keeps
// the sums pareto_filter would keep of all |cur| n, ties included (its order is total);
// sorting every sum instead was 23 % of an inception-v3 search (perf). `span` is scratch.
constexpr void add_span(std::vector<candidate>& cur, const frontier::point* p, std::size_t n,
                        std::vector<candidate>& tmp, std::vector<candidate>& span, trace& t) {
  if (n == 1) {
    for (auto& c : cur) {
      c.time += p->time;
      c.memory += p->memory;
      add_tag(c, p->tag, t);
    }
    return;
  }
  span.clear();
  for (std::size_t j = 0; j < n; ++j) span.push_back({p[j].time, p[j].memory, -1, -1});
  tmp = sum_with_provenance(cur, span, 0, std::numeric_limits<cost_t>::max());
  for (auto& c : tmp) {
    candidate x = cur[std::size_t(c.ta)];
    add_tag(x, p[std::size_t(c.tb)].tag, t);
    c.ta = x.ta;
    c.tb = x.tb;
  }
  cur.swap(tmp);
}

struct span {
  const frontier::point* p = nullptr;
  std::size_t n = 0;
};

/// How one cv contributes: the staircase S (span of factor sf), the row span A (factor af,
/// or the explicit product of all other spans in `pool` when three or more have several
/// points), and the base cost of the single-point spans.
struct cv_plan {
  span s, a;
  int sf = -1, af = -1;
  bool explicit_a = false;
  std::size_t a_off = 0;
};

struct merge_row {
  cost_t time = 0, memory = 0;  // base, including A[i]
  std::size_t cv = 0;
  std::int32_t i = -1;          // index in A, or -1
};

struct merge_item {
  cost_t memory = 0, time = 0;
  std::uint32_t row = 0, j = 0;
};

// A total order (memory, time, then row and position), so the merge pops points in one
// order whatever the heap's layout: which of two equal-cost points is kept does not
// depend on how the heap was updated.
struct heap_after {  // a function object, so that the heap's comparisons inline
  constexpr bool operator()(const merge_item& x, const merge_item& y) const {
    if (x.memory != y.memory) return x.memory > y.memory;
    if (x.time != y.time) return x.time > y.time;
    return x.row != y.row ? x.row > y.row : x.j > y.j;
  }
};

struct cell_merger {
  std::vector<span> spans;     // filled by the caller for each cv, one per factor
  std::vector<cv_plan> plans;
  std::vector<merge_row> rows;
  std::vector<merge_item> heap, out, pending, scratch;
  std::vector<std::size_t> run_ends;
  std::vector<frontier::point> pool;
  std::vector<candidate> cur, tmp, span_copy;

  constexpr void begin(std::size_t dv) {
    plans.assign(dv, cv_plan{});
    rows.clear();
    pool.clear();
  }

  /// Adds the contribution of `cv` from `spans`.
  constexpr void add(std::size_t cv, trace& t) {
    cv_plan& pl = plans[cv];
    int sf = -1;
    for (std::size_t f = 0; f < spans.size(); ++f) {
      if (spans[f].n == 0) return;  // an empty cell: nothing is feasible at this cv
      if (sf < 0 || spans[f].n > spans[std::size_t(sf)].n) sf = int(f);
    }
    pl.sf = sf;
    pl.s = spans[std::size_t(sf)];
    int af = -1, multi = 0;
    cost_t bt = 0, bm = 0;
    for (std::size_t f = 0; f < spans.size(); ++f) {
      if (int(f) == sf) continue;
      if (spans[f].n > 1) {
        ++multi;
        if (af < 0 || spans[f].n > spans[std::size_t(af)].n) af = int(f);
      } else {
        bt += spans[f].p->time;
        bm += spans[f].p->memory;
      }
    }
    if (multi >= 2) {  // materialize the product of every span but S
      cur.assign(1, candidate{0, 0, -1, -1});
      for (std::size_t f = 0; f < spans.size(); ++f)
        if (int(f) != sf) add_span(cur, spans[f].p, spans[f].n, tmp, span_copy, t);
      pl.explicit_a = true;
      pl.a_off = pool.size();
      for (auto& c : cur) pool.push_back({c.time, c.memory, t.join(c.ta, c.tb)});
      for (std::size_t i = 0; i < cur.size(); ++i)
        rows.push_back({cur[i].time, cur[i].memory, cv, std::int32_t(i)});
      return;
    }
    pl.af = af;
    if (af < 0) {
      rows.push_back({bt, bm, cv, -1});
      return;
    }
    pl.a = spans[std::size_t(af)];
    for (std::size_t i = 0; i < pl.a.n; ++i)
      rows.push_back({bt + pl.a.p[i].time, bm + pl.a.p[i].memory, cv, std::int32_t(i)});
  }

  /// Sorts `pending` into pop order. The rows of one cv usually enter in that order
  /// already (their base costs come from a staircase), so sorted runs are merged bottom-up
  /// (the same order: it is total); many short runs take std::sort.
  constexpr void sort_pending() {
    auto before = [](const merge_item& a, const merge_item& b) { return heap_after{}(b, a); };
    run_ends.clear();
    for (std::size_t i = 1; i < pending.size(); ++i)
      if (before(pending[i], pending[i - 1])) run_ends.push_back(i);
    run_ends.push_back(pending.size());
    if (run_ends.size() == 1) return;
    if (run_ends.size() * 8 > pending.size()) {
      std::sort(pending.begin(), pending.end(), before);
      return;
    }
    std::vector<std::size_t> ends;
    while (run_ends.size() > 1) {
      scratch.resize(pending.size());
      ends.clear();
      std::size_t from = 0;
      for (std::size_t r = 0; r < run_ends.size(); r += 2) {
        const std::size_t mid = run_ends[r], to = r + 1 < run_ends.size() ? run_ends[r + 1] : mid;
        std::merge(pending.begin() + std::ptrdiff_t(from), pending.begin() + std::ptrdiff_t(mid),
                   pending.begin() + std::ptrdiff_t(mid), pending.begin() + std::ptrdiff_t(to),
                   scratch.begin() + std::ptrdiff_t(from), before);
        ends.push_back(to);
        from = to;
      }
      pending.swap(scratch);
      run_ends.swap(ends);
    }
  }

  /// Merges every row + S into `out`: the cell's staircase, epsilon-pruned with delta (a
  /// point is dropped when the kept point before it has time <= (1 + delta) times its
  /// time), without the points whose memory exceeds `limit` (popped in memory order: the
  /// merge stops at the first).
  constexpr void run(double delta, cost_t limit = std::numeric_limits<cost_t>::max()) {
    heap.clear();
    out.clear();
    // rows enter the heap only when the sweep reaches their first point, so the heap
    // holds the rows still competing, not all of them (a row whose every point is
    // dominated on entry never enters)
    pending.clear();
    // the cvs another cv's real sum beats are left out (unbeaten_groups)
    auto at = [&](std::size_t r, std::size_t j) {
      const auto& q = plans[rows[r].cv].s.p[j];
      return candidate{rows[r].time + q.time, rows[r].memory + q.memory, -1, -1};
    };
    unbeaten_groups(
        rows.size(), [&](std::size_t r, std::size_t e) { return rows[e].cv == rows[r].cv; },
        [&](std::size_t r) { return at(r, 0); }, [&](std::size_t r) { return at(r, plans[rows[r].cv].s.n - 1); },
        [&](std::size_t r, std::size_t e) {
          const frontier::point& first = plans[rows[r].cv].s.p[0];
          for (std::size_t q = r; q < e; ++q)
            pending.push_back({rows[q].memory + first.memory, rows[q].time + first.time, std::uint32_t(q), 0});
        });
    sort_pending();
    std::size_t np = 0;
    // Under delta a point is kept only when it beats the last kept one by more than
    // (1 + delta) in time: the first such point in memory order is the one a prune of the
    // exact staircase keeps (a staircase point before it with no more time would have been
    // kept instead), so pruning during the merge gives the same costs and lets rows jump
    // past every point the prune would drop.
    // beats(t), "(1 + delta) t < best" (t < best at delta 0), is t <= thr, the integer
    // threshold of the last kept point (time_below), so the searches compare integers.
    cost_t thr = std::numeric_limits<cost_t>::max();
    auto beats = [&](cost_t t) { return t <= thr; };
    while (np < pending.size() || !heap.empty()) {
      merge_item x;
      const bool from_heap = !(np < pending.size() && (heap.empty() || !heap_after{}(pending[np], heap.front())));
      if (!from_heap) x = pending[np++];
      else x = heap.front();  // replaced by its row's next point, or popped, below
      if (x.memory > limit) break;
      const merge_row& row = rows[x.row];
      const span& s = plans[row.cv].s;
      std::size_t next = x.j + 1;
      if (beats(x.time)) {
        out.push_back(x);
        thr = time_below(x.time, delta);
      } else {
        // first j > x.j whose point beats the last kept one (S's times decrease)
        next = usable_from(x.j + 1, s.n, [&](std::size_t m) { return beats(row.time + s.p[m].time); });
      }
      const bool goes_on = next < s.n;
      merge_item y{};
      if (goes_on) y = {row.memory + s.p[next].memory, row.time + s.p[next].time, x.row, std::uint32_t(next)};
      advance_rows(heap, heap_after{}, from_heap, goes_on ? &y : nullptr);
    }
  }
};

}  // namespace tensoropt::detail
