// Replacing a heap's front in one sift: the merges of detail/cell_merge.hpp and
// detail/staircase_sum.hpp pop a row's sum and, most of the time, push the same row's
// next one; std::pop_heap then std::push_heap sifts twice (pop_heap walks the hole down
// to a leaf and back up), this sifts the new front down once and stops where it belongs.
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

}  // namespace tensoropt::detail
