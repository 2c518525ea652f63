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
// same bits.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>
#include "../cost/config.hpp"
#include "backend.hpp"
#include "comm.hpp"

namespace tensoropt::runtime {

using extents_t = std::array<index_t, max_tensor_rank>;

/// The part of a global tensor one device holds.
struct shard_box {
  extents_t lo{};       ///< offset per axis
  extents_t len{};      ///< length per axis (1 past the rank)
  int term = 0;         ///< which partial-sum term (0 when not partial)
  int terms = 1;        ///< number of partial-sum terms
  index_t size(int rank) const {
    index_t n = 1;
    for (int a = 0; a < rank; ++a) n *= len[a];
    return n;
  }
  bool operator==(const shard_box&) const = default;
};

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
/// `to`; returns this device's new shard, allocated on `be`. Every rank of `comm`
/// must call it with the same placements.
inline buffer redistribute(communicator& comm, const placement& from, const buffer& local, const placement& to,
                           cpu_backend& be) {
  const int me = comm.rank();
  const int n = int(from.box.size());
  const int rank = from.rank;
  const auto& mine = to.box[std::size_t(me)];
  if (from == to) return be.copy(local.span());  // identical placements: no traffic
  const int tag = comm.next_tag();
  // Sends: for every target rank, the pieces this device provides.
  for (int t = 0; t < n; ++t) {
    if (t == me) continue;
    const auto& tb = to.box[std::size_t(t)];
    if (tb.term != 0 || tb.terms != 1)
      throw invalid_argument("redistribute: the target placement may not be partial");
    extents_t lo, len;
    if (detail::provider(from, me, t) != me || !detail::intersect(from.box[std::size_t(me)], tb, rank, lo, len))
      continue;
    shard_box piece{lo, len, 0, 1};
    std::vector<float> pack(std::size_t(piece.size(rank)));
    detail::copy_region(local.data(), from.box[std::size_t(me)], pack.data(), piece, lo, len, rank, false);
    comm.send(t, pack, tag);
  }
  // Receives, in term order then rank order: deterministic sums.
  buffer out = be.allocate(std::size_t(mine.size(rank)));
  const int terms = from.box.empty() ? 1 : from.box[0].terms;
  std::vector<float> pack;
  for (int term = 0; term < terms; ++term)
    for (int s = 0; s < n; ++s) {
      const auto& sb = from.box[std::size_t(s)];
      extents_t lo, len;
      if (sb.term != term || detail::provider(from, s, me) != s || !detail::intersect(sb, mine, rank, lo, len))
        continue;
      if (s == me) {
        detail::copy_region(local.data(), sb, out.data(), mine, lo, len, rank, true);
        continue;
      }
      shard_box piece{lo, len, 0, 1};
      pack.resize(std::size_t(piece.size(rank)));
      comm.recv(s, pack, tag, "redistribute");
      detail::copy_region(pack.data(), piece, out.data(), mine, lo, len, rank, true);
    }
  return out;
}

}  // namespace tensoropt::runtime
