// Time and memory of one op under one config, and of one graph edge under a pair
// of configs: the cost model the search optimizes. Everything is constexpr.
//
// Op time per iteration = k * (forward + backward + recompute's extra forward + the
// op's own collectives) + gradient synchronization (once per iteration), with k the
// micro-batch count (the graph is already the micro-batch's: see with_batch).
//  - Forward = max(FLOPs / (peak(dtype) * efficiency), bytes / (bandwidth *
//    memory_efficiency)) + launch overhead, on the local shard (FLOPs and the
//    bytes of inputs, params and output divided by the split degrees). GEMM-like
//    ops (linear, conv2d, attention, moe_experts) run at the compute dtype's peak
//    times the device's GEMM efficiency curve; the others at the fp32 peak.
//    Backward: its FLOPs, twice the bytes, one launch.
//  - Own collectives: a partial output that no op reads (the loss) is all-reduced
//    in place; softmax cross-entropy with its class dim split all-reduces two
//    floats per sample; batch norm with b, h or w split all-reduces two floats
//    per channel in forward and in backward. Other partial outputs are resolved by
//    the consuming edge's redistribution and are not charged here.
//  - Gradient sync: for each parameter the op owns (the first op listing it), over
//    the devices that replicate it: all-reduce of its local gradient, or under
//    shard_optimizer reduce-scatter of the gradient + all-gather of the weights.
// Op memory = for owned parameters, local elements * (weight + grad + optimizer
// bytes), grad and optimizer bytes divided by the replica count under
// shard_optimizer; + the saved buffers' local shards (one micro-batch), or none
// under recompute. Recompute working set: backward re-runs a recomputed layer's
// forward and holds that layer's saved buffers until its backward is done, on top
// of every layer's checkpoints (measured on the CPU runtime: the least-memory GPT
// point peaked at +87 % over a model without this term). It is one layer's worth,
// not one per layer, so a recomputed op of a repeat<> of L instances is charged
// its saved buffers / L: exact when the instances share their configs (the sum
// over the repeat is one layer's working set), an average of them otherwise;
// recomputed ops outside a repeat are charged nothing for it.
// Edge time = k * (forward redistribution producer-output -> consumer-input +
// backward redistribution of the gradient consumer -> producer); no backward for
// integer tensors or for the model input.
// Edge memory (recompute checkpoints): when the consumer is recomputed it keeps
// its input (local shard in its layout) unless the producer is recomputed too and
// belongs to the same repeat instance (layer): then the input is rebuilt by
// recomputing the producer. So edge memory depends on the recompute switches,
// edge time only on the layouts.
// Simplifications (stated, not hidden): no overlap of communication with compute;
// memory is the sum of what is kept (no transient peaks: those go in the
// reserve); a shared (tied) parameter is stored, synchronized and charged by its
// first op only, even when a later op reads it under another layout; layouts with
// equal degrees per level are equal (axes of a level are interchangeable).
#pragma once
#include <cstdint>
#include <vector>
#include "../core/dtype.hpp"
#include "../model/graph.hpp"
#include "cluster.hpp"
#include "collective.hpp"
#include "config.hpp"
#include "redistribute.hpp"

namespace tensoropt {

struct cost_options {
  precision prec = precisions::bf16_mixed;
  index_t micro_batches = 1;  ///< k: the graph is one micro-batch, run k times
  constexpr bool operator==(const cost_options&) const = default;
};

/// Facts about an op that depend on the whole graph.
struct op_facts {
  std::uint32_t owned_params = 0;  ///< bit j: params[j] is first listed by this op
  int readers = 0;                 ///< ops reading its output
  int repeats = 0;                 ///< instances of the op's repeat<> (0: in none)
};

/// op_facts for every op of `g`.
constexpr std::vector<op_facts> analyze(const op_graph& g) {
  std::vector<op_facts> f(g.ops.size());
  std::vector<bool> seen(g.tensors.size(), false);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    for (std::size_t j = 0; j < g.ops[i].params.size(); ++j) {
      const int t = g.ops[i].params[j].tensor;
      if (!seen[t]) f[i].owned_params |= 1u << j;
      seen[t] = true;
    }
    for (auto& in : g.ops[i].inputs) {
      const int p = g.tensors[in.tensor].producer;
      if (p >= 0) ++f[p].readers;
    }
  }
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].repeat_id < 0) continue;
    int n = 0;
    for (auto& o : g.ops)
      if (o.repeat_id == g.ops[i].repeat_id && o.repeat_index + 1 > n) n = o.repeat_index + 1;
    f[i].repeats = n;
  }
  return f;
}

/// An op's cost, with its parts.
struct op_cost {
  seconds compute{};      ///< k * (forward + backward)
  seconds recompute{};    ///< k * extra forward
  seconds collectives{};  ///< k * own collectives
  seconds grad_sync{};    ///< once per iteration
  bytes param_state{};    ///< weights + grads + optimizer state
  bytes activations{};    ///< saved for backward (one micro-batch)
  bytes recompute_working{};  ///< under recompute in a repeat: its saved buffers / repeat count
  constexpr seconds time() const { return compute + recompute + collectives + grad_sync; }
  constexpr bytes memory() const { return param_state + activations + recompute_working; }
};

namespace detail {
constexpr bool is_gemm(op_kind k) {
  return k == op_kind::linear || k == op_kind::conv2d || k == op_kind::attention || k == op_kind::moe_experts;
}
/// Elements of the local shard of the tensor seen through `m`.
constexpr double local_elements(const op_graph& g, const op_node& op, const tensor_map& m, const op_config& c) {
  const auto& t = g.tensors[m.tensor];
  double n = double(t.size());
  std::uint32_t seen = 0;
  for (int a = 0; a < t.rank; ++a)
    if (m.dim[a] >= 0 && !(seen >> m.dim[a] & 1u)) {
      n /= double(c.total_degree(m.dim[a]));
      seen |= 1u << m.dim[a];
    }
  (void)op;
  return n;
}
constexpr double elem_bytes(const tensor_info& t, const precision& p) {
  return t.integer ? 4.0 : double(p.activation_bytes());
}
/// The group of devices that split the dims in `mask` (per level).
constexpr comm_group split_group(const op_config& c, std::uint32_t mask, std::size_t ndims) {
  comm_group g;
  for (int L = 0; L < max_levels; ++L)
    for (std::size_t d = 0; d < ndims; ++d)
      if (mask >> d & 1u) g.ranks[L] *= c.degree[L][d];
  return g;
}
constexpr double local_points(const op_node& op, const op_config& c) {
  double p = 1;
  for (std::size_t d = 0; d < op.dims.size(); ++d) p *= double(op.dims[d].extent) / double(c.total_degree(int(d)));
  return p;
}
constexpr bool same_instance(const op_node& a, const op_node& b) {
  return a.repeat_id == b.repeat_id && a.repeat_index == b.repeat_index;
}
}  // namespace detail

/// The cost of op `i` of `g` under `c` on `cl` (see the file comment).
constexpr op_cost cost_op(const op_graph& g, int i, const op_config& c, const cluster& cl, const cost_options& o,
                          const op_facts& facts) {
  const op_node& op = g.ops[i];
  const device& dev = cl.gpu_spec;
  const precision& pr = o.prec;
  const double k = double(o.micro_batches);
  op_cost r;
  if (op.kind != op_kind::input) {
    const double pts = detail::local_points(op, c);
    const double ff = op.fwd_flops_per_point * pts, bf = op.bwd_flops_per_point * pts;
    double traffic = 0;
    for (auto& in : op.inputs)
      traffic += detail::local_elements(g, op, in, c) * detail::elem_bytes(g.tensors[in.tensor], pr);
    for (auto& p : op.params) traffic += detail::local_elements(g, op, p, c) * double(pr.weight_bytes);
    if (op.output.tensor >= 0)
      traffic += detail::local_elements(g, op, op.output, c) * detail::elem_bytes(g.tensors[op.output.tensor], pr);
    const bool gemm = detail::is_gemm(op.kind);
    const double rate = gemm ? dev.peak(pr.compute).value : dev.peak_fp32.value;
    auto kernel = [&](double f, double b) {
      const double eff = gemm ? dev.gemm_efficiency(f) : 1.0;
      const double tc = f > 0 ? f / (rate * eff) : 0.0;
      const double tm = b / (dev.memory_bw.value * dev.memory_efficiency);
      return (tc > tm ? tc : tm) + dev.launch_overhead.value;
    };
    const double fwd = kernel(ff, traffic), bwd = kernel(bf, 2 * traffic);
    r.compute = seconds(k * (fwd + bwd));
    if (c.recompute) r.recompute = seconds(k * fwd);

    double coll = 0;
    if (op.output.tensor >= 0 && facts.readers == 0) {
      const auto t = layout_of(op, op.output, g.tensors[op.output.tensor].rank, c, cl.mesh, true);
      const comm_group pg{{t.partial[0], t.partial[1]}};
      if (pg.size() > 1)
        coll += all_reduce(pg, bytes(detail::local_elements(g, op, op.output, c) * 4), cl).value;
    }
    if (op.kind == op_kind::softmax_xent && !op.dims.empty()) {
      const std::size_t cls = op.dims.size() - 1;
      const comm_group cg = detail::split_group(c, 1u << cls, op.dims.size());
      if (cg.size() > 1)
        coll += all_reduce(cg, bytes(2 * 4 * pts / (double(op.dims[cls].extent) / double(c.total_degree(int(cls))))),
                           cl).value;
    }
    if (op.kind == op_kind::batch_norm && op.dims.size() == 4) {
      const comm_group sg = detail::split_group(c, 0b1101u, 4);
      if (sg.size() > 1) {
        const double ch = double(op.dims[1].extent) / double(c.total_degree(1));
        coll += 2 * all_reduce(sg, bytes(2 * 4 * ch), cl).value;
      }
    }
    r.collectives = seconds(k * coll);

    bytes saved{};
    for (auto& s : op.saved) {
      double n = s.multiplier;
      for (std::size_t d = 0; d < op.dims.size(); ++d)
        if (s.dims >> d & 1u) n *= double(op.dims[d].extent) / double(c.total_degree(int(d)));
      saved += bytes(n * (s.elem_bytes > 0 ? s.elem_bytes : pr.activation_bytes()));
    }
    if (!c.recompute) r.activations = saved;
    else if (facts.repeats > 0) r.recompute_working = bytes(saved.value / double(facts.repeats));
  }
  for (std::size_t j = 0; j < op.params.size(); ++j) {
    if (!(facts.owned_params >> j & 1u)) continue;
    const auto& p = op.params[j];
    const auto t = layout_of(op, p, g.tensors[p.tensor].rank, c, cl.mesh, false);
    const comm_group rg{{t.replicate[0], t.replicate[1]}};
    const double n = detail::local_elements(g, op, p, c);
    const double shard = c.shard_optimizer ? double(rg.size()) : 1.0;
    r.param_state += bytes(n * (pr.weight_bytes + (pr.grad_bytes + pr.optimizer_bytes) / shard));
    if (rg.size() > 1) {
      if (c.shard_optimizer)
        r.grad_sync += reduce_scatter(rg, bytes(n * pr.grad_bytes), cl) + all_gather(rg, bytes(n * pr.weight_bytes), cl);
      else
        r.grad_sync += all_reduce(rg, bytes(n * pr.grad_bytes), cl);
    }
  }
  return r;
}

/// Convenience: computes the op's facts first (O(graph); prefer analyze() once).
constexpr op_cost cost_op(const op_graph& g, int i, const op_config& c, const cluster& cl, const cost_options& o = {}) {
  return cost_op(g, i, c, cl, o, analyze(g)[i]);
}

/// The layouts at both ends of edge `e` in forward (producer output -> consumer
/// input) and in backward (consumer's input gradient, partial over the dims it does
/// not follow -> producer's output gradient, replicated over them).
struct edge_layouts {
  tensor_layout fwd_src, fwd_dst, bwd_src, bwd_dst;
};
constexpr edge_layouts layouts_of_edge(const op_graph& g, const graph_edge& e, const op_config& cu,
                                       const op_config& cv, const device_mesh& mesh) {
  const op_node& u = g.ops[e.from];
  const op_node& v = g.ops[e.to];
  const int rank = g.tensors[e.tensor].rank;
  const tensor_map& in = v.inputs[e.slot];
  return {layout_of(u, u.output, rank, cu, mesh, true), layout_of(v, in, rank, cv, mesh, false),
          layout_of(v, in, rank, cv, mesh, true), layout_of(u, u.output, rank, cu, mesh, false)};
}

/// Edge time per iteration (see the file comment). Depends only on the layouts.
constexpr seconds edge_time(const op_graph& g, const graph_edge& e, const op_config& cu, const op_config& cv,
                            const cluster& cl, const cost_options& o = {}) {
  const auto& t = g.tensors[e.tensor];
  const bytes total(double(t.size()) * detail::elem_bytes(t, o.prec));
  const auto l = layouts_of_edge(g, e, cu, cv, cl.mesh);
  seconds s = redistribution_time(l.fwd_src, l.fwd_dst, t.rank, total, cl);
  if (!t.integer && g.ops[e.from].kind != op_kind::input)
    s += redistribution_time(l.bwd_src, l.bwd_dst, t.rank, total, cl);
  return s * double(o.micro_batches);
}

/// Edge memory: the recompute checkpoint the consumer keeps (see the file comment).
constexpr bytes edge_memory(const op_graph& g, const graph_edge& e, const op_config& cu, const op_config& cv,
                            const cost_options& o = {}) {
  if (!cv.recompute) return bytes(0);
  const op_node& u = g.ops[e.from];
  const op_node& v = g.ops[e.to];
  if (cu.recompute && detail::same_instance(u, v)) return bytes(0);
  const auto& t = g.tensors[e.tensor];
  return bytes(detail::local_elements(g, v, v.inputs[e.slot], cv) * detail::elem_bytes(t, o.prec));
}

}  // namespace tensoropt
