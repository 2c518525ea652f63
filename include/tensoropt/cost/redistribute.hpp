// The cost of moving a tensor from one layout to another (an edge of the search problem).
//
// Per mesh level L, with src split degrees s[a], dst split degrees d[a] per tensor
// axis, and src partial degree p:
//   up   = prod_a d[a] / gcd(s[a], d[a])   (how much finer dst is)
//   down = prod_a s[a] / gcd(s[a], d[a])   (how much coarser dst is)
//   1. a partial src (p > 1) whose partial degree dst does not keep is reduced:
//      reduce-scatter over p when p divides up (the scatter makes p of the finer
//      split; up /= p), else all-reduce over p;
//   2. k = min(up, down) when both exceed 1: all-to-all over k (re-splits one axis
//      into another at equal size);
//   3. the rest of `down` (down / k, or down when up = 1): all-gather;
//   4. the rest of `up`: a local slice, free.
// Steps of one kind at both levels run as one hierarchical collective (see
// collective.hpp), in the order all-reduce, reduce-scatter, all-to-all,
// all-gather; S is the local shard before the step (the gathered result for
// all-gather). Identical layouts cost nothing.
#pragma once
#include <numeric>
#include "../cost/config.hpp"
#include "collective.hpp"

namespace tensoropt {

/// The collectives a redistribution runs (one group per kind; ranks 1 = none).
struct redistribution {
  comm_group all_reduce_group, reduce_scatter_group, all_to_all_group, all_gather_group;
  bytes all_reduce_bytes{}, reduce_scatter_bytes{}, all_to_all_bytes{}, all_gather_bytes{};
  seconds time{};
  constexpr bool is_free() const {
    return all_reduce_group.size() == 1 && reduce_scatter_group.size() == 1 &&
           all_to_all_group.size() == 1 && all_gather_group.size() == 1;
  }
};

/// Plans and costs moving a tensor of `total` bytes (global, unsharded) and rank
/// `rank` from layout `src` to layout `dst` on cluster `cl`.
constexpr redistribution plan_redistribution(const tensor_layout& src, const tensor_layout& dst, int rank,
                                             bytes total, const cluster& cl) {
  redistribution r;
  if (src == dst) return r;
  double local = total.value;
  for (int L = 0; L < max_levels; ++L)
    for (int a = 0; a < rank; ++a) local /= double(src.split[L][a]);
  for (int L = 0; L < max_levels; ++L) {
    index_t up = 1, down = 1;
    for (int a = 0; a < rank; ++a) {
      const index_t g = std::gcd(index_t(src.split[L][a]), index_t(dst.split[L][a]));
      up *= dst.split[L][a] / g;
      down *= src.split[L][a] / g;
    }
    const index_t p = src.partial[L];
    if (p > 1 && dst.partial[L] != p) {
      if (up % p == 0) {
        r.reduce_scatter_group.ranks[L] = p;
        up /= p;
      } else {
        r.all_reduce_group.ranks[L] = p;
      }
    }
    index_t k = 1;
    if (up > 1 && down > 1) k = up < down ? up : down;
    r.all_to_all_group.ranks[L] = k;
    r.all_gather_group.ranks[L] = down / k;
  }
  if (r.all_reduce_group.size() > 1) {
    r.all_reduce_bytes = bytes(local);
    r.time += all_reduce(r.all_reduce_group, r.all_reduce_bytes, cl);
  }
  if (r.reduce_scatter_group.size() > 1) {
    r.reduce_scatter_bytes = bytes(local);
    r.time += reduce_scatter(r.reduce_scatter_group, r.reduce_scatter_bytes, cl);
    local /= double(r.reduce_scatter_group.size());
  }
  if (r.all_to_all_group.size() > 1) {
    r.all_to_all_bytes = bytes(local);
    r.time += all_to_all(r.all_to_all_group, r.all_to_all_bytes, cl);
  }
  if (r.all_gather_group.size() > 1) {
    local *= double(r.all_gather_group.size());
    r.all_gather_bytes = bytes(local);
    r.time += all_gather(r.all_gather_group, r.all_gather_bytes, cl);
  }
  return r;
}

/// Time of plan_redistribution.
constexpr seconds redistribution_time(const tensor_layout& src, const tensor_layout& dst, int rank, bytes total,
                                      const cluster& cl) {
  return plan_redistribution(src, dst, rank, total, cl).time;
}

}  // namespace tensoropt
