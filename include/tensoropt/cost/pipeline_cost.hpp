// The cost of a pipeline-parallel plan under the 1F1B schedule: iteration time and the
// most memory of any device, from the per-stage costs of cost/op_cost.hpp.
//
// Sources: Narayanan et al. 2021, "Efficient large-scale language model training on GPU
// clusters using Megatron-LM" (SC'21), section 2.2 (1F1B, the pipeline bubble) and 4.1
// (the scatter/gather of stage-to-stage sends); Korthikanti et al. 2022, "Reducing
// activation recomputation in large transformer models", section 4.2.3 (1F1B keeps
// p micro-batches of activations in flight on the first stage).
//
// A plan has p stages, each a contiguous range of ops on d = devices / p devices, and
// runs the global batch as k >= p micro-batches. With
//   c_i   stage i's forward + backward per micro-batch (its ops' compute, recompute,
//         own collectives and the redistributions inside the stage, on the stage's mesh),
//   a_i   one gradient accumulation of stage i (each owned parameter's local gradient
//         added to its accumulator: kernel_traffic.hpp's accumulation_bytes),
//   u_i   stage i's once-per-iteration work (gradient synchronization over the stage's
//         data-parallel group and the optimizer update),
//   s_b   the send of the activation that crosses boundary b (and of its gradient back),
// the model is
//   time   = max_i [ (k + p - 1) c_i + (k - 1) a_i + u_i ]  +  sum_b 2 s_b
//   memory = max_i [ P_i + min(k, p - i) A_i + R ]
// The 1F1B schedule runs k + p - 1 slots of the slowest stage's micro-batch time (k
// micro-batches plus the p - 1 slots of the bubble, Narayanan et al. eq. (1): bubble
// fraction (p - 1) / k); stage i ends with its own gradient sync and optimizer step, so
// the iteration ends with the last stage to finish. The bubble's slots are idle time,
// not micro-batches: a stage runs k micro-batches and adds k - 1 gradients to the first
// (runtime/stage_executor.hpp: the first is moved into the accumulator). For balanced
// stages (every c_i, a_i and u_i equal) this is (k + p - 1) c + (k - 1) a + u; in
// general it is at most that of the maxima, the bound of the bottleneck stage. The first micro-batch's activation crosses
// every boundary forward once and the last gradient crosses back once on the critical
// path (steady-state sends overlap compute, as Megatron-LM's 1F1B issues them
// asynchronously); s_b = latency + (S_b / d) / bandwidth, S_b the bytes of the cut
// tensor of one micro-batch, split over the d devices of the stage (each device sends
// its 1/d share to its peer, the scatter/gather of Narayanan et al. 4.1; the receiving
// stage's input takes whatever layout its first ops want at no further cost), over the
// inter-node link when the boundary is between nodes, else the intra-node link. An
// integer tensor (token ids) has no gradient: s_b once.
//   P_i = the parameters, gradients and optimizer state of stage i's ops (shardable over
//         the stage's data-parallel group, as op_cost.hpp charges them on the stage mesh),
//   A_i = what one micro-batch keeps for backward on stage i (op activations and the
//         edges' saved inputs and checkpoints), held for min(k, p - i) micro-batches
//         under 1F1B (stage 0 holds p, the last stage 1),
//   R   = the reserve (workspace and communication buffers).
// A recompute working set (one layer's buffers rebuilt in backward) is held for one
// micro-batch at a time and is not multiplied.
//
// Integers. Every term is rounded as build_problem rounds it: an op's memory is
// round(param_state + recompute_working + activations) + (f - 1) round(activations) and an
// edge's f x round(edge memory), f = min(k, p - i); time terms are the problem's with the
// micro-batch multiplier k + p - 1 in place of k and k micro-batches accumulated
// (cost_options::accumulated_micro_batches = k). For p = 1 every term equals the
// ordinary problem's, so the p = 1 plans cost exactly what the planner reports today.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>
#include "../model/graph.hpp"
#include "../search/problem.hpp"
#include "cluster.hpp"
#include "op_cost.hpp"

namespace tensoropt {

/// Micro-batches of activations stage i of p holds under 1F1B with k micro-batches.
constexpr index_t in_flight(index_t k, index_t p, index_t i) { return std::min(k, p - i); }

/// Slots of a stage's micro-batch time in one 1F1B iteration: k + p - 1.
constexpr index_t pipeline_slots(index_t k, index_t p) { return k + p - 1; }

namespace detail {
constexpr cost_t pipe_round(double x) {
  require(x >= 0 && x < 9.0e18, "pipeline cost: a cost is negative, NaN or too large to represent");
  return cost_t(x + 0.5);
}
}  // namespace detail

/// Whether the boundary after stage b of p (0 <= b < p - 1) lies between two nodes.
constexpr bool boundary_between_nodes(const device_mesh& m, index_t p, index_t b) {
  const index_t d = m.devices() / p;
  return ((b + 1) * d) % m.gpus_per_node == 0;
}

/// s_b in picoseconds, both directions: the cut tensor `t` (one micro-batch) sent after
/// stage b of p on `cl` (see the file comment).
constexpr cost_t stage_send_time(const tensor_info& t, const cluster& cl, index_t p, index_t b, const precision& pr) {
  const double d = double(cl.mesh.devices() / p);
  const double bytes_each = double(t.size()) * (t.integer ? 4.0 : double(pr.activation_bytes())) / d;
  const link& l = boundary_between_nodes(cl.mesh, p, b) ? cl.inter_link : cl.intra_link;
  const cost_t one = detail::pipe_round((l.latency.value + bytes_each / l.bw.value) * ps_per_second);
  return t.integer ? one : 2 * one;
}

/// Memory of an op of stage i holding f micro-batches in flight (see the file comment).
constexpr cost_t stage_op_memory(const op_cost& c, index_t f) {
  return detail::pipe_round(c.memory().value) + cost_t(f - 1) * detail::pipe_round(c.activations.value);
}
/// Memory of an edge (saved input or checkpoint of one micro-batch) with f in flight.
constexpr cost_t stage_edge_memory(bytes b, index_t f) { return cost_t(f) * detail::pipe_round(b.value); }

/// (time, memory) of stage graph `sg` (a micro-batch graph, model/stage_graph.hpp) under
/// `configs` on the stage's cluster `scl`: time = (k + p - 1) c + (k - 1) a + u, memory =
/// P + f A + R, with o.micro_batches = k + p - 1, o.accumulated_micro_batches = k and f
/// micro-batches in flight.
constexpr strategy_cost evaluate_stage(const op_graph& sg, const std::vector<op_config>& configs, const cluster& scl,
                                       const cost_options& o, index_t f, bytes reserve) {
  detail::require(configs.size() == sg.ops.size(), "evaluate_stage: one op_config per stage op is needed");
  detail::require(f >= 1, "evaluate_stage: a stage holds at least one micro-batch in flight");
  const auto facts = analyze(sg);
  strategy_cost s{0, detail::pipe_round(reserve.value)};
  for (std::size_t i = 0; i < sg.ops.size(); ++i) {
    const op_cost k = cost_op(sg, int(i), configs[i], scl, o, facts[i]);
    s.time += detail::pipe_round(k.time().value * ps_per_second);
    s.memory += stage_op_memory(k, f);
  }
  for (const auto& e : sg.edges()) {
    s.time += detail::pipe_round(edge_time(sg, e, configs[std::size_t(e.from)], configs[std::size_t(e.to)], scl, o).value *
                                 ps_per_second);
    s.memory += stage_edge_memory(edge_memory(sg, e, configs[std::size_t(e.from)], configs[std::size_t(e.to)], o), f);
  }
  return s;
}

/// A pipeline's cost from its stages' (time, memory) and its sends (picoseconds).
struct pipeline_cost {
  cost_t time = 0, memory = 0;
  std::vector<strategy_cost> stages;
  cost_t sends = 0;
  int bottleneck = 0;  ///< the stage of the largest time
  int peak = 0;        ///< the stage of the most memory
};

/// time = max stage time + sends; memory = max stage memory (see the file comment).
constexpr pipeline_cost combine_stages(std::vector<strategy_cost> stages, cost_t sends) {
  detail::require(!stages.empty(), "combine_stages: a pipeline has at least one stage");
  pipeline_cost r;
  r.sends = sends;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].time > stages[std::size_t(r.bottleneck)].time) r.bottleneck = int(i);
    if (stages[i].memory > stages[std::size_t(r.peak)].memory) r.peak = int(i);
  }
  r.time = stages[std::size_t(r.bottleneck)].time + sends;
  r.memory = stages[std::size_t(r.peak)].memory;
  r.stages = std::move(stages);
  return r;
}

}  // namespace tensoropt
