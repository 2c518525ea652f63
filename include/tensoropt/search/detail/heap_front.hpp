// Replacing a heap's front in one sift: the merges of detail/cell_merge.hpp and
// detail/staircase_sum.hpp pop a row's sum and, most of the time, push the same row's
// next one; std::pop_heap then std::push_heap sifts twice (pop_heap walks the hole down
// to a leaf and back up), this sifts the new front down once and stops where it belongs.
// The same merges move a row past the sums it cannot keep with `first_from`, a galloping
// search (the row's next usable sum is most often a few places on).
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace tensoropt::detail {

/// Restores the heap order of `h` (a heap under `comp` as std::push_heap keeps it, whose
/// front std::pop_heap would take next) after its front was overwritten.
template <class T, class Comp>
constexpr void replace_heap_front(std::vector<T>& h, Comp comp) {
  const std::size_t n = h.size();
  if (n == 0) return;
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

}  // namespace tensoropt::detail
