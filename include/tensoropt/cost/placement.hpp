// Placements: which box of a tensor each device holds under an op config, the
// geometry of cost/config.hpp's device-placement rule as data.
//
// A placement lists, for every rank of a mesh, the box (offset and length per axis)
// of the global tensor it holds and, for a partial tensor, which pending-sum term it
// holds (the global value is the sum over terms). The runtime moves data between
// placements (runtime/sharding.hpp); the planner's memory replays (plan/memory_peak.hpp,
// plan/pipeline_peak.hpp) size and compare buffers with the same placements, so a
// prediction and a run agree on every shard by construction.
//
// place(op, m, t, c, mesh, partial): under config c a device's local index at each
// level is read as a mixed-radix number (the op's dims in order, then the replication
// digit); an axis of t mapped to op dim d holds block (level-0 digit x level-1 degree
// + level-1 digit) of extent / degree(d); a partial output carries one pending-sum term
// per device over the dims it does not follow. split_over_replicas cuts each box over
// the devices holding the same box (along the first axis their count divides): the
// layout of a sharded optimizer state and of a stage crossing's wire share.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>
#include "../core/error.hpp"
#include "config.hpp"

namespace tensoropt {

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
inline void validate_config(const op_node& op, const op_config& c, const device_mesh& mesh) {
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

}  // namespace tensoropt
