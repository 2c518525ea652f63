// The dense copy of a region between two boxes of a tensor (cost/placement.hpp's
// shard_box: offset and length per axis, and which partial-sum term): the data layout
// that sharding.hpp's placements and every backend's packing share.
#pragma once
#include <algorithm>
#include <array>
#include "../cost/placement.hpp"

namespace tensoropt::runtime {

using tensoropt::extents_t;
using tensoropt::shard_box;

namespace detail {
/// Copies (or adds) the region [lo, lo + len) of a tensor between two dense boxes.
inline void copy_region(const float* src, const shard_box& sb, float* dst, const shard_box& db, const extents_t& lo,
                        const extents_t& len, int rank, bool add) {
  if (rank == 0) {
    dst[0] = add ? dst[0] + src[0] : src[0];
    return;
  }
  for (int a = 0; a < rank; ++a)
    if (len[a] == 0) return;
  extents_t idx{};
  const index_t inner = len[rank - 1];
  while (true) {
    index_t so = 0, dof = 0;
    for (int a = 0; a < rank; ++a) {
      so = so * sb.len[a] + (lo[a] + idx[a] - sb.lo[a]);
      dof = dof * db.len[a] + (lo[a] + idx[a] - db.lo[a]);
    }
    if (add)
      for (index_t i = 0; i < inner; ++i) dst[dof + i] += src[so + i];
    else
      std::copy_n(src + so, inner, dst + dof);
    int a = rank - 2;
    for (; a >= 0; --a) {
      if (++idx[a] < len[a]) break;
      idx[a] = 0;
    }
    if (a < 0) return;
  }
}

/// Intersection of two boxes; false when empty.
inline bool intersect(const shard_box& a, const shard_box& b, int rank, extents_t& lo, extents_t& len) {
  lo.fill(0);
  len.fill(1);
  for (int i = 0; i < rank; ++i) {
    const index_t l = std::max(a.lo[i], b.lo[i]), h = std::min(a.lo[i] + a.len[i], b.lo[i] + b.len[i]);
    if (h <= l) return false;
    lo[i] = l;
    len[i] = h - l;
  }
  return true;
}

}  // namespace detail

}  // namespace tensoropt::runtime
