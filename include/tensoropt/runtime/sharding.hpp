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

/// A tensor's distribution: its global shape and every rank's box.
struct placement {
  int rank = 0;               ///< tensor rank (number of axes)
  extents_t extents{};        ///< global shape
  std::vector<shard_box> box; ///< per device
  bool operator==(const placement&) const = default;
};

/// Every device holds the whole tensor.
inline placement replicated(const tensor_info& t, int devices) {
  placement p{t.rank, t.extents, {}};
  shard_box b;
  b.len.fill(1);
  for (int a = 0; a < t.rank; ++a) b.len[a] = t.extents[a];
  p.box.assign(std::size_t(devices), b);
  return p;
}

/// A device's position under an op config: per level, the block of each op dim and
/// the replication digit (cost/config.hpp's mixed-radix rule).
struct op_coords {
  std::array<std::array<std::int64_t, max_op_dims + 1>, max_levels> digit{};
};

inline op_coords coords_of(const op_node& op, const op_config& c, const device_mesh& mesh, index_t rank) {
  op_coords k;
  const index_t local[2] = {rank / mesh.gpus_per_node, rank % mesh.gpus_per_node};
  const int nd = int(op.dims.size());
  for (int L = 0; L < max_levels; ++L) {
    std::int64_t v = local[L];
    const std::int64_t rep = mesh.level_size(L) / c.split_product(L);
    k.digit[L][nd] = v % rep;
    v /= rep;
    for (int d = nd - 1; d >= 0; --d) {
      k.digit[L][d] = v % c.degree[L][d];
      v /= c.degree[L][d];
    }
  }
  return k;
}

/// Block index and block count of op dim `d` on a device.
inline std::pair<index_t, index_t> block_of(const op_coords& k, const op_config& c, int d) {
  return {k.digit[0][d] * c.degree[1][d] + k.digit[1][d], index_t(c.degree[0][d]) * c.degree[1][d]};
}

/// Checks that `c` is a legal config of `op` on `mesh`; throws invalid_argument naming the op.
inline void validate(const op_node& op, const op_config& c, const device_mesh& mesh) {
  for (int L = 0; L < max_levels; ++L) {
    for (int d = 0; d < max_op_dims; ++d) {
      const auto deg = c.degree[L][d];
      if (deg < 1)
        throw invalid_argument("op '" + op.name + "': degree " + std::to_string(deg) + " at level " +
                               std::to_string(L) + " is not positive");
      if (d >= int(op.dims.size()) && deg != 1)
        throw invalid_argument("op '" + op.name + "': the config splits dim #" + std::to_string(d) +
                               " but the op has " + std::to_string(op.dims.size()) +
                               " dims; is the config for another graph?");
    }
    if (mesh.level_size(L) % c.split_product(L) != 0)
      throw invalid_argument("op '" + op.name + "': the split degrees at level " + std::to_string(L) +
                             " multiply to " + std::to_string(c.split_product(L)) +
                             ", which does not divide the level's " + std::to_string(mesh.level_size(L)) +
                             " devices");
  }
  for (std::size_t d = 0; d < op.dims.size(); ++d) {
    const auto t = c.total_degree(int(d));
    const auto& dim = op.dims[d];
    if (t > 1 && !dim.splittable)
      throw invalid_argument("op '" + op.name + "': dim '" + std::string(dim.name) + "' is not splittable");
    if (dim.extent % t != 0)
      throw invalid_argument("op '" + op.name + "': dim '" + std::string(dim.name) + "' of extent " +
                             std::to_string(dim.extent) + " cannot be split " + std::to_string(t) + " ways");
  }
}

/// Where the tensor seen through `m` lives under config `c`. `partial_output`: the
/// op's output (or an input's gradient), a pending sum over the dims it does not
/// follow; otherwise it is replicated over them.
inline placement place(const op_node& op, const tensor_map& m, const tensor_info& t, const op_config& c,
                       const device_mesh& mesh, bool partial_output) {
  placement p{t.rank, t.extents, {}};
  const int nd = int(op.dims.size());
  for (index_t r = 0; r < mesh.devices(); ++r) {
    const op_coords k = coords_of(op, c, mesh, r);
    shard_box b;
    b.len.fill(1);
    std::uint32_t seen = 0;
    for (int a = 0; a < t.rank; ++a) {
      b.len[a] = t.extents[a];
      const int d = m.dim[a];
      if (d < 0 || (seen >> d & 1u)) continue;
      seen |= 1u << d;
      auto [blk, n] = block_of(k, c, d);
      b.len[a] = t.extents[a] / n;
      b.lo[a] = blk * b.len[a];
    }
    if (partial_output)
      for (int d = 0; d < nd; ++d)
        if (!(seen >> d & 1u)) {
          auto [blk, n] = block_of(k, c, d);
          b.term = int(b.term * n + blk);
          b.terms = int(b.terms * n);
        }
    p.box.push_back(b);
  }
  return p;
}

/// Splits each device's box over the devices that hold the same box (its replicas),
/// along the first axis the replica count divides; a box no axis divides stays whole.
inline void split_over_replicas(placement& p) {
  const placement orig = p;
  for (std::size_t r = 0; r < p.box.size(); ++r) {
    int count = 0, index = 0;
    for (std::size_t q = 0; q < p.box.size(); ++q)
      if (orig.box[q] == orig.box[r]) {
        if (q < r) ++index;
        ++count;
      }
    for (int a = 0; a < p.rank && count > 1; ++a)
      if (orig.box[r].len[a] % count == 0) {
        p.box[r].len[a] = orig.box[r].len[a] / count;
        p.box[r].lo[a] = orig.box[r].lo[a] + index * p.box[r].len[a];
        break;
      }
  }
}

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
