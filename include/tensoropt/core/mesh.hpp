// The device mesh: nodes x gpus_per_node, each level factored into prime axes.
//
// Level 0 is the inter-node level (size = nodes), level 1 the intra-node level
// (size = gpus per node). Device rank = node * gpus_per_node + gpu. A per-op
// config gives each level a degree per iteration dim; the product of a level's
// degrees times its replication degree is the level's size. Levels of any size are
// handled (degrees are divisors); axes of one level are interchangeable for cost.
#pragma once
#include <array>
#include <string>
#include "dims.hpp"
#include "error.hpp"

namespace tensoropt {

inline constexpr int max_levels = 2;

/// Largest number of devices tensoropt plans for (one level or both together).
inline constexpr index_t max_devices = 1 << 20;

struct device_mesh {
  index_t nodes = 1;
  index_t gpus_per_node = 1;

  constexpr device_mesh() = default;
  /// Throws invalid_argument unless 1 <= nodes, gpus_per_node and the total is at
  /// most max_devices.
  constexpr device_mesh(index_t n, index_t g) : nodes(n), gpus_per_node(g) {
    detail::require(n >= 1, "device mesh: the node count must be at least 1");
    detail::require(g >= 1, "device mesh: the GPU count per node must be at least 1");
    detail::require(n <= max_devices && g <= max_devices && n * g <= max_devices,
                    "device mesh: more than 2^20 devices is not supported");
  }
  constexpr index_t devices() const { return nodes * gpus_per_node; }
  constexpr index_t level_size(int level) const { return level == 0 ? nodes : gpus_per_node; }
  constexpr int node_of(index_t rank) const { return int(rank / gpus_per_node); }
  constexpr bool operator==(const device_mesh&) const = default;
  std::string describe() const {
    return nodes == 1 ? std::to_string(gpus_per_node) + " devices"
                      : std::to_string(nodes) + " nodes x " + std::to_string(gpus_per_node) + " devices";
  }
};

/// A compile-time mesh, for strategies pinned in the source: `mesh<8>` is one
/// node of 8 devices, `mesh<8, 4>` four nodes of 8.
template <index_t GpusPerNode, index_t Nodes = 1>
struct mesh {
  static_assert(GpusPerNode >= 1, "tensoropt::mesh: the device count per node must be at least 1");
  static_assert(Nodes >= 1, "tensoropt::mesh: the node count must be at least 1");
  static constexpr index_t gpus_per_node = GpusPerNode;
  static constexpr index_t nodes = Nodes;
  static constexpr index_t devices = GpusPerNode * Nodes;
  static constexpr device_mesh value() { return device_mesh(Nodes, GpusPerNode); }
};

template <class T>
inline constexpr bool is_mesh_v = false;
template <index_t G, index_t N>
inline constexpr bool is_mesh_v<mesh<G, N>> = true;
template <class T>
concept Mesh = is_mesh_v<T>;

}  // namespace tensoropt
