// Enumeration of the configs of one op (split degrees per dim and mesh level, plus the
// recompute and optimizer-sharding switches), their validity, and
// their human-readable labels.
//
// A layout-config gives each mesh level a degree per splittable dim: a dim's
// degrees over both levels multiply to a divisor of its extent, a level's degrees
// multiply to a divisor of the level's size, and the rest of the level replicates
// (replication is needed, e.g. for Megatron's layer norms). Each layout-config is
// offered with recompute on/off (only for ops that save something for backward) and
// shard_optimizer on/off (only for ops with parameters that are replicated).
//
// Bounding rules (enumerate_options; the defaults keep every op of the zoo at tens
// to low hundreds of layout-configs, even for 384 nodes x 8):
//   - max_split_dims[L]: at most this many dims split at level L
//     (default 1 between nodes, 2 inside a node);
//   - skip_dims: dims never split, by name (default: attention's head dim "d");
//   - max_replication[L]: the split degrees of level L multiply to at least
//     size_L / max_replication[L] (0 = no limit; default 1 between nodes, i.e. the
//     node level is used fully, no limit inside a node). A level whose size has an
//     odd factor (384 nodes = 3 x 128) may also replicate by that odd part in ops
//     with parameters (ops without any gain no memory from it, and the boundary
//     layouts of the residual stream stay few: 20 instead of 146 on megatron-1t;
//     odd_part_all_ops offers it to every op): model
//     dims are powers of two times small odd factors, so otherwise only the batch
//     takes the whole level and every weight stays replicated across nodes
//     (megatron-1t on 384 x 8 A100-80GB: the least memory of any plan was 2,017 GB
//     per device with the node level fully split, 14 GB with 3-way replication
//     allowed, measured with build_problem at k = 8). When no config of an op
//     meets the bound, the configs with the largest achievable product at that
//     level are kept instead, so every op has a config.
// Levels of any size work: degrees are divisors, not powers of two.
#pragma once
#include <algorithm>
#include <string>
#include <vector>
#include "../core/mesh.hpp"
#include "../model/graph.hpp"
#include "config.hpp"

namespace tensoropt {

struct enumerate_options {
  std::array<int, max_levels> max_split_dims{1, 2};
  std::array<index_t, max_levels> max_replication{1, 0};
  bool recompute = true;        ///< offer recompute where meaningful
  bool shard_optimizer = true;  ///< offer optimizer sharding where meaningful
  bool odd_part_all_ops = false;  ///< the odd-part replication for ops without parameters too
  /// Dims never split, by name (at most 4). Default: the head dim "d" (attention's
  /// d cannot be split, so splitting d in qkv or proj only forces a re-split that
  /// splitting heads avoids).
  std::array<std::string_view, 4> skip_dims{"d", {}, {}, {}};
  constexpr bool operator==(const enumerate_options&) const = default;
};

namespace detail {
constexpr std::vector<index_t> divisors(index_t n) {
  std::vector<index_t> d;
  for (index_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

/// Every degree vector of one level: dims from `i` on, product dividing `budget`,
/// at most `dims_left` dims split, each dim's total degree dividing its extent.
constexpr void level_vectors(const op_node& op, int level, std::size_t i, index_t budget, int dims_left,
                             const std::array<std::string_view, 4>& skip, op_config& cur,
                             std::vector<op_config>& out) {
  if (i == op.dims.size()) {
    out.push_back(cur);
    return;
  }
  level_vectors(op, level, i + 1, budget, dims_left, skip, cur, out);
  const auto& d = op.dims[i];
  if (!d.splittable || dims_left == 0 || d.extent <= 1) return;
  for (auto n : skip) if (!n.empty() && n == d.name) return;
  const index_t other = cur.total_degree(int(i));
  for (index_t k : divisors(budget)) {
    if (k == 1 || (d.extent % (other * k)) != 0) continue;
    cur.degree[level][i] = std::int32_t(k);
    level_vectors(op, level, i + 1, budget / k, dims_left - 1, skip, cur, out);
    cur.degree[level][i] = 1;
  }
}

/// The largest odd divisor of n (n >= 1).
constexpr index_t odd_part(index_t n) {
  while (n > 1 && n % 2 == 0) n /= 2;
  return n;
}

/// Keeps configs whose level-L product meets the replication bound (max_rep, or for an
/// op with parameters (`weights`) the odd part of the level size where that is larger),
/// or else those with the largest product.
constexpr std::vector<op_config> bound_replication(std::vector<op_config> v, int level, index_t size,
                                                   index_t max_rep, bool weights) {
  if (max_rep <= 0 || v.empty()) return v;
  if (weights) max_rep = std::max(max_rep, odd_part(size));
  std::vector<op_config> keep;
  for (auto& c : v)
    if (c.split_product(level) * max_rep >= size) keep.push_back(c);
  if (!keep.empty()) return keep;
  index_t best = 0;
  for (auto& c : v) best = c.split_product(level) > best ? c.split_product(level) : best;
  for (auto& c : v)
    if (c.split_product(level) == best) keep.push_back(c);
  return keep;
}

constexpr std::string int_str(std::int64_t v) {
  char buf[24]{};
  int n = 0;
  const bool neg = v < 0;
  std::uint64_t u = neg ? std::uint64_t(0) - std::uint64_t(v) : std::uint64_t(v);
  do {
    buf[n++] = char('0' + u % 10);
    u /= 10;
  } while (u > 0);
  std::string s;
  if (neg) s.push_back('-');
  while (n > 0) s.push_back(buf[--n]);
  return s;
}
/// Concatenation that works in constant expressions on GCC 12 (whose constexpr
/// std::string rejects `literal + std::string&&` and moving into a string).
constexpr std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (auto p : parts) s.append(p);
  return s;
}
}  // namespace detail

/// Whether `op` (an element of g.ops) is the first op listing parameter `tensor`:
/// a shared parameter (a tied LM head) is counted by its first op only.
constexpr bool owns_param(const op_graph& g, const op_node& op, int tensor) {
  for (const auto& o : g.ops) {
    if (&o == &op) return true;
    for (auto& p : o.params)
      if (p.tensor == tensor) return false;
  }
  return true;
}

/// Whether some parameter `op` owns is replicated under `c` (so sharding its
/// optimizer state changes something).
constexpr bool params_replicated(const op_graph& g, const op_node& op, const op_config& c,
                                 const device_mesh& mesh) {
  for (auto& p : op.params) {
    if (!owns_param(g, op, p.tensor)) continue;
    const auto t = layout_of(op, p, g.tensors[p.tensor].rank, c, mesh, false);
    if (t.replicate[0] * t.replicate[1] > 1) return true;
  }
  return false;
}

/// Whether recompute means something for `op`: it saves something for backward, or
/// it is a residual add inside a repeated layer (recomputing it lets the layer keep
/// only its input, Megatron's full recomputation).
constexpr bool can_recompute(const op_node& op) {
  return op.kind != op_kind::input && (!op.saved.empty() || (op.kind == op_kind::add && op.repeat_id >= 0));
}

/// The layout-configs of `op` on `mesh` (switches off), under the bounding rules.
constexpr std::vector<op_config> enumerate_layouts(const op_node& op, const device_mesh& mesh,
                                                   const enumerate_options& o = {}) {
  std::vector<op_config> lvl0;
  op_config cur;
  detail::level_vectors(op, 0, 0, mesh.nodes, o.max_split_dims[0], o.skip_dims, cur, lvl0);
  lvl0 = detail::bound_replication(std::move(lvl0), 0, mesh.nodes, o.max_replication[0],
                                  o.odd_part_all_ops || !op.params.empty());
  std::vector<op_config> all;
  for (auto& c0 : lvl0) {
    op_config c = c0;
    detail::level_vectors(op, 1, 0, mesh.gpus_per_node, o.max_split_dims[1], o.skip_dims, c, all);
  }
  return detail::bound_replication(std::move(all), 1, mesh.gpus_per_node, o.max_replication[1],
                                   o.odd_part_all_ops || !op.params.empty());
}

/// Every config of `op` on `mesh`: layout-configs times the meaningful switches.
/// Configs of one layout are adjacent, switches off first.
constexpr std::vector<op_config> enumerate_configs(const op_graph& g, const op_node& op, const device_mesh& mesh,
                                                   const enumerate_options& o = {}) {
  std::vector<op_config> out;
  const bool rc = o.recompute && can_recompute(op);
  for (auto& c : enumerate_layouts(op, mesh, o)) {
    const bool zo = o.shard_optimizer && params_replicated(g, op, c, mesh);
    for (int r = 0; r <= (rc ? 1 : 0); ++r)
      for (int z = 0; z <= (zo ? 1 : 0); ++z) {
        op_config x = c;
        x.recompute = r;
        x.shard_optimizer = z;
        out.push_back(x);
      }
  }
  return out;
}

/// Why `c` is not a legal config of `op` on `mesh`, or "" when it is: degrees at
/// least 1, unsplittable dims unsplit, each dim's degrees dividing its extent, each
/// level's degrees dividing the level size.
constexpr std::string config_error(const op_node& op, const op_config& c, const device_mesh& mesh) {
  for (int L = 0; L < max_levels; ++L) {
    for (std::size_t i = op.dims.size(); i < std::size_t(max_op_dims); ++i)
      if (c.degree[L][i] != 1) return detail::cat({"op '", op.name, "': a degree is set for a dim the op does not have"});
    for (std::size_t i = 0; i < op.dims.size(); ++i) {
      if (c.degree[L][i] < 1) return detail::cat({"op '", op.name, "': degrees must be at least 1"});
      if (c.degree[L][i] > 1 && !op.dims[i].splittable)
        return detail::cat({"op '", op.name, "': dim '", op.dims[i].name, "' cannot be split"});
    }
    if (mesh.level_size(L) % c.split_product(L) != 0)
      return detail::cat({"op '", op.name, "': the degrees at mesh level ", detail::int_str(L), " multiply to ",
                          detail::int_str(c.split_product(L)), ", which does not divide the level size ",
                          detail::int_str(mesh.level_size(L))});
  }
  for (std::size_t i = 0; i < op.dims.size(); ++i)
    if (op.dims[i].extent % c.total_degree(int(i)) != 0)
      return detail::cat({"op '", op.name, "': degree ", detail::int_str(c.total_degree(int(i))),
                          " does not divide dim '", op.dims[i].name, "' of extent ",
                          detail::int_str(op.dims[i].extent)});
  return "";
}

/// "b4 h2 | rc zo" on one node; "n:b2 g:b4 h2" across nodes; a level's
/// replication shows as "r<degree>" ("b2 r4", "g:r8"); "-" on one device. rc = recompute,
/// zo = sharded optimizer state.
constexpr std::string label_of(const op_node& op, const op_config& c, const device_mesh& mesh) {
  std::string s;
  for (int L = 0; L < max_levels; ++L) {
    const index_t size = mesh.level_size(L);
    if (size == 1) continue;
    std::string part;
    for (std::size_t i = 0; i < op.dims.size(); ++i)
      if (c.degree[L][i] > 1) {
        if (!part.empty()) part.push_back(' ');
        part.append(op.dims[i].name).append(detail::int_str(c.degree[L][i]));
      }
    const index_t rep = size / c.split_product(L);
    if (rep > 1) {
      if (!part.empty()) part.push_back(' ');
      part.append("r").append(detail::int_str(rep));
    }
    if (!s.empty()) s.push_back(' ');
    if (mesh.nodes > 1) s.append(L == 0 ? "n:" : "g:");
    s.append(part);
  }
  if (s.empty()) s.append("-");
  if (c.recompute || c.shard_optimizer) {
    s.append(" |");
    if (c.recompute) s.append(" rc");
    if (c.shard_optimizer) s.append(" zo");
  }
  return s;
}

}  // namespace tensoropt
