// A pipeline-parallel plan: the model's ops cut into p contiguous stages, each stage
// on its own group of devices with its own per-op configs, run under the 1F1B
// schedule over k >= p micro-batches.
//
// Devices: the cluster's ranks are cut into p contiguous groups of devices()/p
// ranks; stage s runs on ranks [s * d, (s + 1) * d) with d = devices()/p. The
// stage's own mesh (`stage_mesh`) is a sub-mesh of the cluster: when p divides the
// node count, each stage holds nodes/p whole nodes (nodes/p x gpus); otherwise p is
// a multiple of the node count, q = p / nodes divides the GPUs per node and each
// stage holds gpus/q GPUs of one node (1 x gpus/q). Any other p is not a legal
// pipeline degree on that mesh (`pipeline_degree_error` says why).
//
// Stages: stage s owns ops [stage_begin[s], stage_begin[s + 1]) of the graph, in
// graph order (stage_begin[0] = 0; the last stage ends at the last op). Every op's
// config in `configs` is a config for its stage's mesh, not the cluster's. p = 1 is
// an ordinary plan on the whole mesh (`as_training_plan`).
#pragma once
#include <cstddef>
#include <string>
#include <vector>
#include "../core/error.hpp"
#include "../core/mesh.hpp"
#include "training_plan.hpp"

namespace tensoropt {

struct pipeline_plan {
  int degree = 1;                        ///< p: the number of stages
  int micro_batches = 1;                 ///< k >= p
  std::vector<std::size_t> stage_begin;  ///< first op of each stage (size p)
  std::vector<op_config> configs;        ///< configs[i]: op i's config on its stage's mesh
  device_mesh mesh{1, 1};                ///< the whole cluster
  /// Optional: receive_configs[s - 1] is the layout (a config of its stage's mesh for the
  /// received tensor's axes) in which stage s >= 1 takes its input; the planner fills it
  /// (size p - 1), an empty list lets the cost model pick the cheapest.
  std::vector<op_config> receive_configs{};
};

/// Why p stages do not fit on `m`, or "" when p is a legal pipeline degree there.
inline std::string pipeline_degree_error(const device_mesh& m, index_t p) {
  if (p < 1) return "a pipeline degree must be at least 1 (got " + std::to_string(p) + ")";
  if (m.devices() % p != 0)
    return "pipeline degree " + std::to_string(p) + " does not divide the device count of the cluster (" +
           m.describe() + ")";
  if (m.nodes % p == 0) return "";
  if (p % m.nodes == 0 && m.gpus_per_node % (p / m.nodes) == 0) return "";
  return "pipeline degree " + std::to_string(p) + " cuts a node of " + m.describe() +
         " unevenly: use a degree that divides the node count or a multiple of it that divides the GPUs per node";
}

/// The mesh of one stage's devices when `m` is cut into p stages (see above).
inline device_mesh stage_mesh(const device_mesh& m, index_t p) {
  if (const std::string e = pipeline_degree_error(m, p); !e.empty()) throw invalid_argument(e);
  if (m.nodes % p == 0) return device_mesh(m.nodes / p, m.gpus_per_node);
  return device_mesh(1, m.gpus_per_node / (p / m.nodes));
}

/// The first global rank of stage s.
inline index_t stage_first_rank(const device_mesh& m, index_t p, index_t s) { return s * (m.devices() / p); }

/// The stage that owns op `op`.
inline int stage_of_op(const pipeline_plan& pp, std::size_t op) {
  int s = 0;
  while (s + 1 < int(pp.stage_begin.size()) && pp.stage_begin[std::size_t(s) + 1] <= op) ++s;
  return s;
}

/// Why `pp` is not a well-formed pipeline plan for a graph of `ops` ops, or "".
inline std::string pipeline_plan_error(const pipeline_plan& pp, std::size_t ops) {
  if (const std::string e = pipeline_degree_error(pp.mesh, pp.degree); !e.empty()) return e;
  if (pp.micro_batches < pp.degree)
    return "1F1B needs at least as many micro-batches as stages (k = " + std::to_string(pp.micro_batches) +
           " < p = " + std::to_string(pp.degree) + ")";
  if (pp.stage_begin.size() != std::size_t(pp.degree))
    return "the plan lists " + std::to_string(pp.stage_begin.size()) + " stage starts for " +
           std::to_string(pp.degree) + " stages";
  if (pp.stage_begin.empty() || pp.stage_begin[0] != 0) return "the first stage must start at op 0";
  for (std::size_t s = 1; s < pp.stage_begin.size(); ++s)
    if (pp.stage_begin[s] <= pp.stage_begin[s - 1] || pp.stage_begin[s] >= ops)
      return "stage " + std::to_string(s) + " starts at op " + std::to_string(pp.stage_begin[s]) +
             ": stage starts must increase and each stage must hold at least one op";
  if (pp.configs.size() != ops)
    return "the plan has " + std::to_string(pp.configs.size()) + " configs for " + std::to_string(ops) + " ops";
  if (!pp.receive_configs.empty() && pp.receive_configs.size() + 1 != pp.stage_begin.size())
    return "the plan lists " + std::to_string(pp.receive_configs.size()) + " received layouts for " +
           std::to_string(pp.stage_begin.size() - 1) + " stages after the first";
  return "";
}

/// A one-stage pipeline plan is an ordinary training plan on the whole mesh.
inline training_plan as_training_plan(const pipeline_plan& pp) {
  if (pp.degree != 1) throw invalid_argument("as_training_plan: the plan has " + std::to_string(pp.degree) + " stages");
  return training_plan{pp.configs, pp.micro_batches, pp.mesh};
}

}  // namespace tensoropt
