// A cluster: the device mesh, the device, and the intra- and inter-node links.
#pragma once
#include <string>
#include "../core/mesh.hpp"
#include "device.hpp"

namespace tensoropt {

/// nodes x gpus_per_node devices of one kind. Built fluently:
/// `cluster::nodes(2).gpus_per_node(8).gpu(gpus::a100_80gb)`; the links default
/// to the device's (`intra(...)`, `inter(...)` override them).
struct cluster {
  device_mesh mesh{};
  device gpu_spec = gpus::cpu;
  link intra_link = gpus::cpu.nvlink;   ///< level 1 (inside a node)
  link inter_link = gpus::cpu.network;  ///< level 0 (between nodes)

  constexpr cluster() = default;
  constexpr cluster(device_mesh m, const device& d) : mesh(m), gpu_spec(d), intra_link(d.nvlink), inter_link(d.network) {}

  /// Starts a builder with `n` nodes (n >= 1, else invalid_argument).
  static constexpr cluster nodes(index_t n) { return cluster(device_mesh(n, 1), gpus::cpu); }
  /// One node of `g` devices.
  static constexpr cluster single_node(index_t g) { return cluster(device_mesh(1, g), gpus::cpu); }

  constexpr cluster gpus_per_node(index_t g) const {
    cluster c = *this;
    c.mesh = device_mesh(mesh.nodes, g);
    return c;
  }
  /// Sets the device and takes its default links.
  constexpr cluster gpu(const device& d) const {
    cluster c = *this;
    c.gpu_spec = d;
    c.intra_link = d.nvlink;
    c.inter_link = d.network;
    return c;
  }
  constexpr cluster intra(link l) const {
    detail::require(l.bw.value > 0 && l.latency.value >= 0,
                    "cluster::intra: the link bandwidth must be positive and the latency non-negative");
    cluster c = *this;
    c.intra_link = l;
    return c;
  }
  constexpr cluster inter(link l) const {
    detail::require(l.bw.value > 0 && l.latency.value >= 0,
                    "cluster::inter: the link bandwidth must be positive and the latency non-negative");
    cluster c = *this;
    c.inter_link = l;
    return c;
  }
  constexpr index_t devices() const { return mesh.devices(); }
  /// The link of mesh level `level` (0 = between nodes, 1 = inside a node).
  constexpr const link& level_link(int level) const { return level == 0 ? inter_link : intra_link; }
  std::string describe() const {
    return (mesh.nodes == 1 ? std::to_string(mesh.gpus_per_node)
                            : std::to_string(mesh.nodes) + " x " + std::to_string(mesh.gpus_per_node)) +
           " x " + std::string(gpu_spec.name);
  }
  constexpr bool operator==(const cluster&) const = default;
};

/// The mesh of a cluster or of a mesh (for templates that take either).
constexpr device_mesh mesh_of(const device_mesh& m) { return m; }
constexpr device_mesh mesh_of(const cluster& c) { return c.mesh; }

}  // namespace tensoropt
