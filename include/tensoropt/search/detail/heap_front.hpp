// Replacing a heap's front in one sift: the merges of detail/cell_merge.hpp and
// detail/staircase_sum.hpp pop a row's sum and, most of the time, push the same row's
// next one; std::pop_heap then std::push_heap sifts twice (pop_heap walks the hole down
// to a leaf and back up), this sifts the new front down once and stops where it belongs.
// The same merges move a row past the sums it cannot keep with `first_from`, a galloping
// search (the row's next usable sum is most often a few places on), or `usable_from`
// where one probe of the row's last sum may tell that none is left; and they leave out,
// before sorting, the rows of a group that another group's real sum beats
// (`unbeaten_groups`).
#pragma once
#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>
#include "../frontier.hpp"

namespace tensoropt::detail {

/// Restores the heap order of `h` (a non-empty heap under `comp` as std::push_heap keeps it,
/// whose front std::pop_heap would take next) after its front was overwritten. Its one
/// caller, advance_rows, calls it only for an item taken from the front, so `h` holds one.
template <class T, class Comp>
constexpr void replace_heap_front(std::vector<T>& h, Comp comp) {
  const std::size_t n = h.size();
  const T x = h[0];
  std::size_t i = 0;
  for (;;) {
    std::size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && comp(h[c], h[c + 1])) ++c;
    if (!comp(x, h[c])) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = x;
}

/// One step of a row merge: the item just taken came from the heap's front (`from_heap`)
/// or from outside it (a row entering the merge); `next` (null: the row has ended) is that
/// row's next item. Replaces the front in one sift, pops it, or pushes `next`.
template <class T, class Comp>
constexpr void advance_rows(std::vector<T>& h, Comp comp, bool from_heap, const T* next) {
  if (from_heap && next) {
    h.front() = *next;
    replace_heap_front(h, comp);
  } else if (from_heap) {
    std::pop_heap(h.begin(), h.end(), comp);
    h.pop_back();
  } else if (next) {
    h.push_back(*next);
    std::push_heap(h.begin(), h.end(), comp);
  }
}

/// The first i in [lo, hi) where `ok(i)` holds, for `ok` false and then true over the
/// range (hi where it never holds): probes lo, lo + 1, lo + 2, lo + 4, lo + 8, ... and then
/// bisects the last gap, O(log d) probes for an answer d places on (a plain bisection
/// takes log(hi - lo) whatever d is). The answer is the bisection's.
template <class Ok>
constexpr std::size_t first_from(std::size_t lo, std::size_t hi, Ok ok) {
  if (lo >= hi || ok(lo)) return lo;
  std::size_t from = lo + 1, step = 1, probe = lo + 1;
  while (probe < hi && !ok(probe)) {
    from = probe + 1;
    step *= 2;
    probe = lo + step;
  }
  std::size_t to = std::min(probe, hi);  // ok(to) or to == hi
  while (from < to) {
    const std::size_t mid = from + (to - from) / 2;
    if (ok(mid)) to = mid;
    else from = mid + 1;
  }
  return from;
}

/// first_from after a sum the merge did not keep: most rows then have nothing left they
/// could keep, which the last index tells in one probe (hi where `ok(hi - 1)` fails)
/// instead of a galloping search's 2 log2(hi - lo).
template <class Ok>
constexpr std::size_t usable_from(std::size_t lo, std::size_t hi, Ok ok) {
  if (lo >= hi) return lo;
  return ok(hi - 1) ? first_from(lo, hi, ok) : hi;
}

/// The groups of rows a merge keeps. Rows [0, n) come in groups of consecutive rows
/// (`same(r, e)`: row e is in row r's group), each group's rows from its least memory to
/// its least time, and every row's sums run over one staircase S of its group:
/// `lean(r)` is row r's sum with S's first (leanest) point, `fast(r)` with S's last
/// (fastest), both candidates. A group's sums then lie at or above its corner (its first
/// row's lean memory, its last row's fast time), and its first and last sums are real.
/// A group whose corner the leanest or the fastest of all those first and last sums beats
/// strictly (no more memory, less time) has every sum beaten by a real sum of another
/// group (never its own: its own lean sum is at its corner's memory, its fast sum at its
/// corner's time), so it adds nothing to the merge's staircase; `keep(r, e)` is called
/// for the others' row ranges [r, e), in order.
template <class Same, class Lean, class Fast, class Keep>
constexpr void unbeaten_groups(std::size_t n, Same same, Lean lean, Fast fast, Keep keep) {
  constexpr cost_t none = std::numeric_limits<cost_t>::max();
  candidate l{none, none, -1, -1}, f{none, none, -1, -1};  // the leanest and the fastest sum
  auto group_end = [&](std::size_t r) {
    std::size_t e = r + 1;
    while (e < n && same(r, e)) ++e;
    return e;
  };
  for (std::size_t r = 0, e; r < n; r = e) {
    e = group_end(r);
    const candidate a = lean(r), b = fast(e - 1);
    if (a.memory < l.memory || (a.memory == l.memory && a.time < l.time)) l = a;
    if (b.time < f.time || (b.time == f.time && b.memory < f.memory)) f = b;
  }
  for (std::size_t r = 0, e; r < n; r = e) {
    e = group_end(r);
    const cost_t corner_time = fast(e - 1).time;
    if (l.time < corner_time || (f.time < corner_time && f.memory <= lean(r).memory)) continue;
    keep(r, e);
  }
}

}  // namespace tensoropt::detail
