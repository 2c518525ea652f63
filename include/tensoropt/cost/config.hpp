// Per-op configs (split degree per dim per mesh level + local switches) and the
// tensor layouts they imply.
//
// Device placement (binding for the runtime): within level L of size P, a device's
// local index is read as a mixed-radix number whose digits are, most significant
// first, the op's dims in order (radix = that dim's degree at L) and then the
// replication digit. A dim's block index is (level-0 digit) * (level-1 degree) +
// (level-1 digit): nodes take the outer blocks. A device's rank is
// node * gpus_per_node + gpu.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include "../core/mesh.hpp"
#include "../model/graph.hpp"

namespace tensoropt {

struct op_config {
  /// degree[level][dim]: how many blocks op dim `dim` is split into at `level`.
  std::array<std::array<std::int32_t, max_op_dims>, max_levels> degree{};
  bool recompute = false;        ///< keep only the op's inputs; redo forward in backward
  bool shard_optimizer = false;  ///< shard optimizer state (and grads) over the replicas of the op's params

  constexpr op_config() {
    for (auto& l : degree) l.fill(1);
  }
  /// Product of all levels' degrees of `dim`.
  constexpr std::int64_t total_degree(int dim) const {
    std::int64_t p = 1;
    for (auto& l : degree) p *= l[dim];
    return p;
  }
  /// Product of the degrees at `level` (the rest of the level replicates).
  constexpr std::int64_t split_product(int level) const {
    std::int64_t p = 1;
    for (auto d : degree[level]) p *= d;
    return p;
  }
  constexpr bool same_layout(const op_config& o) const { return degree == o.degree; }
  constexpr bool operator==(const op_config&) const = default;
};

/// How one tensor is spread over the mesh: per level, a split degree per tensor
/// axis, a partial (pending-sum) degree and a replication degree; their product is
/// the level's size.
struct tensor_layout {
  std::array<std::array<std::int32_t, max_tensor_rank>, max_levels> split{};
  std::array<std::int32_t, max_levels> partial{};
  std::array<std::int32_t, max_levels> replicate{};
  constexpr tensor_layout() {
    for (auto& l : split) l.fill(1);
    partial.fill(1);
    replicate.fill(1);
  }
  constexpr bool operator==(const tensor_layout&) const = default;
};

/// The layout a config gives the tensor seen through `m` (an input, param or the
/// output of `op`). Output tensors are partial over the dims they do not follow;
/// inputs and params are replicated over them.
constexpr tensor_layout layout_of(const op_node& op, const tensor_map& m, int rank,
                                  const op_config& c, const device_mesh& mesh, bool is_output) {
  tensor_layout t;
  for (int L = 0; L < max_levels; ++L) {
    std::int64_t followed = 1;
    std::uint32_t seen = 0;
    for (int a = 0; a < rank; ++a)
      if (m.dim[a] >= 0 && !(seen >> m.dim[a] & 1u)) {
        t.split[L][a] = c.degree[L][m.dim[a]];
        followed *= t.split[L][a];
        seen |= 1u << m.dim[a];
      }
    std::int64_t unfollowed = 1;
    for (std::size_t d = 0; d < op.dims.size(); ++d)
      if (!(seen >> d & 1u)) unfollowed *= c.degree[L][d];
    const std::int64_t size = mesh.level_size(L);
    const std::int64_t rep = size / c.split_product(L);
    if (is_output) {
      t.partial[L] = std::int32_t(unfollowed);
      t.replicate[L] = std::int32_t(rep);
    } else {
      t.replicate[L] = std::int32_t(rep * unfollowed);
    }
  }
  return t;
}

}  // namespace tensoropt
