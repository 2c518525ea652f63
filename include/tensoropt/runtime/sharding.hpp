// Sharded tensors: which block of a tensor each device holds under an op config
// (the binding device-placement rule of cost/config.hpp), and redistribution of a
// tensor between any two placements, partial sums included.
//
// A placement lists, for every rank, the box (offset and length per axis) of the
// global tensor it holds and, for a partial tensor, which pending-sum term it holds
// (the global value is the sum over terms). Redistribution is one generic plan:
// every target box is assembled from the source boxes that intersect it, term by
// term in ascending order, each piece taken from the device itself when it holds
// it (a local slice, no communication), else from the lowest rank holding it. This
// covers the standard cases in their usual traffic: identical placements are a
// no-op, a finer split is a local slice, split -> replicated is an all-gather,
// partial -> replicated an all-reduce, partial -> split a reduce-scatter, a change
// of split axis an all-to-all. The summation order is fixed, so replicas get the
// same bits. A data plane with native collectives (NCCL) runs the layout changes
// that are exactly one all-reduce, all-gather or reduce-scatter (or all-reduce then
// all-gather) as those collectives (collective_match.hpp: same values, sums in the
// collective's order).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>
#include "../cost/config.hpp"
#include "backend.hpp"
#include "collective_match.hpp"
#include "data_plane.hpp"
#include "shard_box.hpp"

namespace tensoropt::runtime {

using tensoropt::block_of;
using tensoropt::coords_of;
using tensoropt::op_coords;
using tensoropt::place;
using tensoropt::placement;
using tensoropt::replicated;
using tensoropt::split_over_replicas;

/// Checks that `c` is a legal config of `op` on `mesh` (cost/placement.hpp's validate_config).
inline void validate(const op_node& op, const op_config& c, const device_mesh& mesh) { validate_config(op, c, mesh); }

namespace detail {
inline bool same_region(const shard_box& a, const shard_box& b) {
  return a.lo == b.lo && a.len == b.len && a.term == b.term;
}

/// The rank that provides source box `s` (held by `holder`) to `target`: the target
/// itself when it holds that box, else the lowest rank holding it.
inline int provider(const placement& src, int holder, int target) {
  const auto& b = src.box[std::size_t(holder)];
  if (same_region(src.box[std::size_t(target)], b)) return target;
  for (std::size_t r = 0; r < src.box.size(); ++r)
    if (same_region(src.box[r], b)) return int(r);
  return holder;
}
}  // namespace detail

/// Moves a tensor from placement `from` (this device's shard `local`) to placement
/// `to` over data plane `dp`; returns this device's new shard, allocated on `be`.
/// Every rank must call it with the same placements. One grouped exchange: the
/// pieces this device provides are packed and sent, the pieces it needs are
/// received, then summed into the target in term order, then rank order.
inline buffer redistribute(data_plane& dp, const placement& from, const buffer& local, const placement& to,
                           backend& be) {
  const int me = dp.rank();
  const int n = int(from.box.size());
  const int rank = from.rank;
  const auto& mine = to.box[std::size_t(me)];
  if (from == to) return be.copy(local);  // identical placements: no traffic
  if (dp.native_collectives())
    if (const auto steps = collective_steps(from.box, to.box, rank, me); !steps.empty()) {
      if (steps.size() == 1) return run_collective(dp, steps[0], local, std::size_t(mine.size(rank)), be);
      // all-reduce in uncounted scratch (the generic path counts only its result), then all-gather
      const auto& own = from.box[std::size_t(me)];
      buffer whole = be.scratch(local.size(), local.type());
      be.copy_region(local, own, whole, own, own.lo, own.len, rank, false);
      dp.all_reduce(steps[0].members, whole);
      return run_collective(dp, steps[1], whole, std::size_t(mine.size(rank)), be);
    }
  // Sends: for every target rank, the pieces this device provides.
  std::vector<buffer> packs;
  std::vector<outgoing> sends;
  packs.reserve(std::size_t(n));
  for (int t = 0; t < n; ++t) {
    if (t == me) continue;
    const auto& tb = to.box[std::size_t(t)];
    if (tb.term != 0 || tb.terms != 1)
      throw invalid_argument("redistribute: the target placement may not be partial");
    extents_t lo, len;
    if (detail::provider(from, me, t) != me || !detail::intersect(from.box[std::size_t(me)], tb, rank, lo, len))
      continue;
    shard_box piece{lo, len, 0, 1};
    packs.push_back(be.scratch(std::size_t(piece.size(rank)), local.type()));
    be.copy_region(local, from.box[std::size_t(me)], packs.back(), piece, lo, len, rank, false);
    sends.push_back({t, &packs.back()});
  }
  // The pieces this device needs, in term order then rank order: deterministic sums.
  struct need {
    int source;
    extents_t lo, len;
  };
  std::vector<need> needs;
  const int terms = from.box.empty() ? 1 : from.box[0].terms;
  for (int term = 0; term < terms; ++term)
    for (int s = 0; s < n; ++s) {
      const auto& sb = from.box[std::size_t(s)];
      extents_t lo, len;
      if (sb.term != term || detail::provider(from, s, me) != s || !detail::intersect(sb, mine, rank, lo, len))
        continue;
      needs.push_back({s, lo, len});
    }
  std::vector<buffer> got;
  std::vector<incoming> recvs;
  got.reserve(needs.size());
  for (const auto& nd : needs)
    if (nd.source != me) {
      got.push_back(be.scratch(std::size_t(shard_box{nd.lo, nd.len, 0, 1}.size(rank)), local.type()));
      recvs.push_back({nd.source, &got.back()});
    }
  dp.exchange(sends, recvs, "redistribute");
  buffer out = be.allocate(std::size_t(mine.size(rank)), local.type());
  std::size_t k = 0;
  for (const auto& nd : needs) {
    if (nd.source == me) be.copy_region(local, from.box[std::size_t(me)], out, mine, nd.lo, nd.len, rank, true);
    else be.copy_region(got[k++], shard_box{nd.lo, nd.len, 0, 1}, out, mine, nd.lo, nd.len, rank, true);
  }
  return out;
}

/// redistribute() over the data plane backend `be` makes on control communicator `comm`.
inline buffer redistribute(communicator& comm, const placement& from, const buffer& local, const placement& to,
                           backend& be) {
  auto dp = be.make_data_plane(comm);
  return redistribute(*dp, from, local, to, be);
}

}  // namespace tensoropt::runtime
