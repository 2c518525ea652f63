// Which single collective a redistribution is, when it is exactly one: the
// layouts for which a data plane with native collectives (NCCL) may replace the
// generic grouped exchange of redistribute() (sharding.hpp) by AllReduce,
// AllGather or ReduceScatter, the collectives the cost model prices these layout
// changes at (cost/redistribute.hpp).
//
// Ranks fall into groups: the ranks whose source boxes cover one region (partial
// sources) or whose target boxes are one region (an all-gather). A redistribution
// is one collective when every group has at least two members and all groups agree:
//   all_reduce:     partial -> not partial; each group holds the terms 0..T-1 of
//                   one region once each, and every member's target is that region;
//   all_gather:     not partial -> not partial (groups: one target region and
//                   one source term); each group's target region is the
//                   concatenation, in ascending rank order, of equal slices along
//                   one axis a (the axes before a have length 1 in the region, so
//                   the concatenation is the dense box);
//   reduce_scatter: partial -> not partial; each group holds the terms 0..T-1 of a
//                   region once each, and the members' targets are its equal
//                   slices along one axis a (outer axes of length 1), in rank order.
// A partial source whose reduced layout (every rank holding its region whole)
// then gathers to the target is two steps, all-reduce then all-gather, the cost
// model's order (collective_steps). Anything else (an all-to-all, a finer local
// split, a mixture) is `none`: the generic exchange. Every rank decides from the same placements, so all ranks take
// the same path (a collective on some ranks and an exchange on others would hang).
//
// Values: an all-gather moves bytes and equals the generic path bit for bit. An
// all-reduce or reduce-scatter sums the same terms, but in the collective's order
// (NCCL: ring or tree, by message size), not the generic path's term order, so in
// floating point the result equals it to rounding (a few ulp per term), not bit for
// bit; every member of a group still gets the same bits.
#pragma once
#include <cstdint>
#include <span>
#include <vector>
#include "backend.hpp"
#include "data_plane.hpp"
#include "shard_box.hpp"

namespace tensoropt::runtime {

enum class collective_kind : std::uint8_t { none, all_reduce, all_gather, reduce_scatter };

/// The collective a redistribution is (kind none: it is not one) and the group of
/// the asking rank, ascending.
struct collective_match {
  collective_kind kind = collective_kind::none;
  group members;
};

namespace detail {
inline bool same_box(const shard_box& a, const shard_box& b, int rank) {
  for (int d = 0; d < rank; ++d)
    if (a.lo[d] != b.lo[d] || a.len[d] != b.len[d]) return false;
  return true;
}
/// Whether `parts` (ascending ranks' boxes) are equal slices tiling `whole` in order
/// along one axis whose outer axes have length 1 in `whole`.
inline bool tiles_in_order(const shard_box& whole, const std::vector<const shard_box*>& parts, int rank) {
  const index_t n = index_t(parts.size());
  for (int a = 0; a < rank; ++a) {
    if (whole.len[a] % n == 0 && whole.len[a] >= n) {
      const index_t w = whole.len[a] / n;
      bool ok = true;
      for (index_t i = 0; i < n && ok; ++i) {
        const shard_box& p = *parts[std::size_t(i)];
        for (int d = 0; d < rank && ok; ++d)
          ok = d == a ? p.lo[d] == whole.lo[d] + i * w && p.len[d] == w : p.lo[d] == whole.lo[d] && p.len[d] == whole.len[d];
      }
      if (ok) return true;
    }
    if (whole.len[a] != 1) return false;  // a longer outer axis: slices would not be contiguous
  }
  return false;
}
}  // namespace detail

/// The collective that moves a tensor of `rank` axes from boxes `from` to boxes
/// `to` (one per rank), as seen by rank `me` (see the opening comment).
inline collective_match match_collective(std::span<const shard_box> from, std::span<const shard_box> to, int rank,
                                         int me) {
  const int n = int(from.size());
  if (n < 2 || int(to.size()) != n || me < 0 || me >= n) return {};
  const int terms = from[0].terms;
  for (int r = 0; r < n; ++r)
    if (from[std::size_t(r)].terms != terms || to[std::size_t(r)].terms != 1) return {};
  const bool partial = terms > 1;
  collective_kind kind = collective_kind::none;
  collective_match mine;
  for (int r = 0; r < n; ++r) {
    // r's group: the ranks with r's source region (partial) or r's target region.
    group g;
    for (int s = 0; s < n; ++s)
      if (partial ? detail::same_box(from[std::size_t(s)], from[std::size_t(r)], rank)
                  : detail::same_box(to[std::size_t(s)], to[std::size_t(r)], rank) &&
                        from[std::size_t(s)].term == from[std::size_t(r)].term)
        g.push_back(s);
    if (g.size() < 2) return {};
    collective_kind k = collective_kind::none;
    if (partial) {
      if (int(g.size()) != terms) return {};
      std::vector<bool> seen(std::size_t(terms), false);
      for (int s : g) {
        const int t = from[std::size_t(s)].term;
        if (t < 0 || t >= terms || seen[std::size_t(t)]) return {};
        seen[std::size_t(t)] = true;
      }
      bool all_whole = true;
      std::vector<const shard_box*> parts;
      for (int s : g) {
        all_whole = all_whole && detail::same_box(to[std::size_t(s)], from[std::size_t(r)], rank);
        parts.push_back(&to[std::size_t(s)]);
      }
      if (all_whole) k = collective_kind::all_reduce;
      else if (detail::tiles_in_order(from[std::size_t(r)], parts, rank)) k = collective_kind::reduce_scatter;
    } else {
      std::vector<const shard_box*> parts;
      for (int s : g) parts.push_back(&from[std::size_t(s)]);
      if (detail::tiles_in_order(to[std::size_t(r)], parts, rank)) k = collective_kind::all_gather;
    }
    if (k == collective_kind::none || (kind != collective_kind::none && k != kind)) return {};
    kind = k;
    if (r == me) mine.members = std::move(g);
  }
  mine.kind = kind;
  return mine;
}

/// The collectives, in order, that move boxes `from` to `to` as seen by rank `me`:
/// one step (match_collective), all-reduce then all-gather, or none (use the
/// generic exchange).
inline std::vector<collective_match> collective_steps(std::span<const shard_box> from, std::span<const shard_box> to,
                                                      int rank, int me) {
  if (auto m = match_collective(from, to, rank, me); m.kind != collective_kind::none) return {std::move(m)};
  if (from.empty() || from[0].terms < 2) return {};
  // reduced: each rank's region whole; its old term stays as a colour, so the
  // all-gather groups take one holder of each region (the same term in each).
  std::vector<shard_box> reduced(from.begin(), from.end());
  for (auto& b : reduced) b.terms = 1;
  auto first = match_collective(from, reduced, rank, me);
  if (first.kind != collective_kind::all_reduce) return {};
  auto second = match_collective(reduced, to, rank, me);
  if (second.kind != collective_kind::all_gather) return {};
  return {std::move(first), std::move(second)};
}

/// Runs a matched redistribution on `dp`: this rank's new shard (to_size elements,
/// allocated on `be`) from its old one.
inline buffer run_collective(data_plane& dp, const collective_match& m, const buffer& local, std::size_t to_size,
                             backend& be) {
  switch (m.kind) {
    case collective_kind::all_reduce: {
      buffer out = be.copy(local);
      dp.all_reduce(m.members, out);
      return out;
    }
    case collective_kind::all_gather: {
      buffer out = be.allocate(to_size, local.type());
      dp.all_gather(m.members, local, out);
      return out;
    }
    case collective_kind::reduce_scatter: {
      buffer out = be.allocate(to_size, local.type());
      dp.reduce_scatter(m.members, local, out);
      return out;
    }
    case collective_kind::none: break;
  }
  throw invalid_argument("run_collective: the redistribution is not a single collective");
}

}  // namespace tensoropt::runtime
