// Time and memory of one op under one config, and of one graph edge under a pair
// of configs: the cost model the search optimizes. Everything is constexpr.
//
// Op time per iteration = k * (forward + backward + recompute's extra forward + the
// op's own collectives) + gradient synchronization + the optimizer update (both once
// per iteration), with k the micro-batch count (the graph is already the
// micro-batch's: see with_batch).
//  - Forward = max(FLOPs / (peak(dtype) * efficiency), bytes / (bandwidth *
//    memory_efficiency)) + launch overhead, on the local shard (FLOPs and the
//    bytes of inputs, params and output divided by the split degrees). GEMM-like
//    ops (linear, conv2d, attention, moe_experts) run at the compute dtype's peak
//    times the device's GEMM efficiency curve, and a linear also at its GEMMs'
//    contraction-length factor K / (K + K0) (gemm_shape.hpp); the others at the
//    fp32 peak. Backward: its FLOPs, twice the bytes, one launch.
//  - Extra memory passes of particular kernels, per switch of the software stack:
//    a materialized attention core's score tensors, batch norm's second reads,
//    batch norm fused with the ReLU (and residual add) after it, a linear's bias
//    (its gradient's column sum; under linear_bias_pass its own forward pass) and,
//    with k > 1 micro-batches, k - 1 gradient accumulations per iteration of each
//    owned parameter (counted in `compute`; k is accumulated_micro_batches when set,
//    as under 1F1B, where the bubble's slots are not micro-batches): formulas and
//    sources in kernel_traffic.hpp.
//  - Own collectives: a partial output that no op reads (the loss) is all-reduced
//    in place; softmax cross-entropy with its class dim split all-reduces two
//    floats per sample; batch norm with b, h or w split all-reduces two floats
//    per channel in forward and in backward (global statistics, what the runtime
//    computes; cost_options::local_batch_norm drops them for stacks that keep
//    per-device statistics, e.g. PyTorch DDP or MXNet data parallelism without
//    SyncBN). Other partial outputs are resolved by
//    the consuming edge's redistribution and are not charged here.
//  - Gradient sync: for each parameter the op owns (the first op listing it), over
//    the devices that replicate it: all-reduce of its local gradient, or under
//    shard_optimizer reduce-scatter of the gradient + all-gather of the weights.
//    Under cost_options::overlap_grad_sync (stacks that reduce gradients while backward
//    goes on: PyTorch DDP's buckets, Horovod, Megatron-LM's --overlap-grad-reduce) only
//    what exceeds the op's own backward of one micro-batch is charged: the sync of the
//    last micro-batch's gradients can run under the backward that follows it, and each
//    op's sync is set against its own backward (plus its recomputed forward), an additive
//    stand-in for a reduction running under the backward of the ops before it (Li et al.
//    2020, "PyTorch Distributed: experiences on accelerating data parallel training",
//    VLDB: gradient buckets all-reduced as soon as their gradients are ready). It
//    lies between no overlap and the whole sync hidden behind the whole backward.
//  - Optimizer update (Adam, elementwise, memory-bound): over the local optimizer
//    shard (local elements / replicas under shard_optimizer), it reads the
//    gradient, the state and the weight and writes the state and the weight:
//    grad + 2 * (optimizer + weight) bytes per element, less one weight read under
//    mixed precision (the bf16 copy is written from the fp32 master): 28 bytes per
//    element for fp32 and for bf16-mixed Adam.
// Op memory = for owned parameters, local elements * (weight + grad + optimizer
// bytes), grad and optimizer bytes divided by the replica count under
// shard_optimizer; + the saved buffers' local shards (one micro-batch), or none
// under recompute. A saved buffer that IS an input (saved_buffer::input >= 0) is
// charged on the edge that delivers it instead (see edge memory). Recompute
// working set: backward re-runs a recomputed layer's
// forward and holds that layer's saved buffers until its backward is done, on top
// of every layer's checkpoints (measured on the CPU runtime: the least-memory GPT
// point peaked at +87 % over a model without this term). It is one layer's worth,
// not one per layer, so a recomputed op of a repeat<> of L instances is charged
// its saved buffers / L: exact when the instances share their configs (the sum
// over the repeat is one layer's working set), an average of them otherwise;
// recomputed ops outside a repeat are charged nothing for it.
// Edge costs (redistribution time, saved inputs and recompute checkpoints): see
// edge_cost.hpp.
// Simplifications (stated, not hidden): no overlap of communication with compute but
// the gradient sync's under overlap_grad_sync;
// memory is the sum of what is kept (the working set of the running op and the
// order in which buffers live are in plan/memory_peak.hpp's peak); a shared (tied) parameter is stored, synchronized and charged by its
// first op only, even when a later op reads it under another layout; layouts with
// equal degrees per level are equal (axes of a level are interchangeable).
#pragma once
#include <cstdint>
#include <vector>
#include <string>
#include "../core/dtype.hpp"
#include "../model/graph.hpp"
#include "cluster.hpp"
#include "collective.hpp"
#include "config.hpp"
#include "gemm_shape.hpp"
#include "kernel_traffic.hpp"
#include "redistribute.hpp"

namespace tensoropt {

struct cost_options {
  precision prec = precisions::bf16_mixed;
  index_t micro_batches = 1;  ///< k: the graph is one micro-batch, run k times
  attention_kernel attention = attention_kernel::materialized;
  /// Dropout masks are regenerated from a counter-based random stream in backward
  /// (the CPU runtime) instead of kept: dropout ops keep nothing, a materialized
  /// attention core keeps its softmax output only (P elements, not 2P + a mask).
  bool regenerate_dropout = false;
  /// Batch norm keeps per-device statistics (no all-reduce of its moments): a switch
  /// of the software stack for published runs; the runtime computes global ones.
  bool local_batch_norm = false;
  /// Batch norm runs fused with the ReLU (and residual add) after it (file comment).
  bool fused_bn_relu = false;
  /// A linear's own bias is added by a pass of its own over the output (PyTorch's
  /// nn.Linear before the cuBLASLt bias epilogue; kernel_traffic.hpp).
  bool linear_bias_pass = false;
  /// The gradient sync overlaps backward: only its excess over the op's backward of one
  /// micro-batch is charged (file comment). Off: the CPU runtime syncs after backward.
  bool overlap_grad_sync = false;
  /// Micro-batches whose gradients one iteration sums (accumulated_micro_batches - 1
  /// adds); 0: micro_batches. A pipeline stage sets k here and the k + p - 1 slots of
  /// 1F1B in micro_batches (cost/pipeline_cost.hpp).
  index_t accumulated_micro_batches = 0;
  constexpr index_t accumulations() const {
    return (accumulated_micro_batches > 0 ? accumulated_micro_batches : micro_batches) - 1;
  }
  constexpr bool operator==(const cost_options&) const = default;
  /// The software-stack switches in one line, as tensoropt-plan's flags name them:
  /// "attention materialized, fused-bn-relu off, ...".
  std::string stack() const {
    auto on = [](bool b) { return b ? " on" : " off"; };
    return "attention " + std::string(attention_kernel_name(attention)) + ", fused-bn-relu" + on(fused_bn_relu) +
           ", local-batch-norm" + on(local_batch_norm) + ", linear-bias-pass" + on(linear_bias_pass) +
           ", regenerate-dropout" + on(regenerate_dropout) + ", overlap-grad-sync" + on(overlap_grad_sync);
  }
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
  seconds optimizer{};    ///< the optimizer update, once per iteration
  bytes param_state{};    ///< weights + grads + optimizer state
  bytes activations{};    ///< saved for backward (one micro-batch)
  bytes recompute_working{};  ///< under recompute in a repeat: its saved buffers / repeat count
  bytes working_fwd{};  ///< held while its forward runs (not in memory(): see plan/memory_peak.hpp)
  bytes working_bwd{};  ///< held while its backward runs (idem)
  bytes kernel_state{};  ///< the buffers its forward kernel saves, recomputed or not (plan/memory_peak.hpp)
  constexpr seconds time() const { return compute + recompute + collectives + grad_sync + optimizer; }
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
/// Whether the local shard of parameter `m` splits evenly over `n` replicas along
/// one of its axes (the runtime shards optimizer state along the first such axis
/// and keeps it whole when none divides, e.g. 3 replicas of a [16, 8] weight).
constexpr bool shardable(const op_graph& g, const tensor_map& m, const op_config& c, std::int64_t n) {
  const auto& t = g.tensors[m.tensor];
  std::uint32_t seen = 0;
  for (int a = 0; a < t.rank; ++a) {
    std::int64_t local = t.extents[a];
    if (m.dim[a] >= 0 && !(seen >> m.dim[a] & 1u)) {
      local /= c.total_degree(m.dim[a]);
      seen |= 1u << m.dim[a];
    }
    if (local % n == 0) return true;
  }
  return false;
}
/// Whether op `v` keeps input `slot` for backward (a saved buffer that is the input).
constexpr bool saves_input(const op_node& v, int slot) {
  for (auto& b : v.saved)
    if (b.input == slot) return true;
  return false;
}
/// Bytes of op's saved buffers that are inputs, in the op's own layout.
constexpr double saved_input_bytes(const op_graph& g, const op_node& op, const op_config& c, const precision& pr) {
  double b = 0;
  for (auto& s : op.saved) {
    if (s.input < 0) continue;
    double n = s.multiplier;
    for (std::size_t d = 0; d < op.dims.size(); ++d)
      if (s.dims >> d & 1u) n *= double(op.dims[d].extent) / double(c.total_degree(int(d)));
    b += n * (s.elem_bytes > 0 ? s.elem_bytes : pr.activation_bytes());
  }
  (void)g;
  return b;
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
  double backward_one = 0;  // the op's backward of one micro-batch (with its recomputed forward)
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
    const gemm_shape_factors shape = shape_factors(g, op, c, dev, pr.compute);
    auto kernel = [&](double f, double b, double shape_factor = 1.0) {
      const double eff = gemm ? dev.gemm_efficiency(f) * shape_factor : 1.0;
      const double tc = f > 0 ? f / (rate * eff) : 0.0;
      const double tm = b / (dev.memory_bw.value * dev.memory_efficiency);
      return (tc > tm ? tc : tm) + dev.launch_overhead.value;
    };
    const bool fused = op.kind == op_kind::attention && o.attention == attention_kernel::fused;
    // backward of fused attention recomputes QK^T: 2 FLOPs per point more
    const double bf_run = fused ? bf + 2 * pts : bf;
    double fwd = kernel(ff, traffic, shape.forward), bwd = kernel(bf_run, 2 * traffic, shape.backward);
    const double stream = dev.memory_bw.value * dev.memory_efficiency;
    if (op.kind == op_kind::attention && !fused) {
      const auto sc = detail::score_traffic(op, c, pr);
      fwd += sc.fwd / stream + sc.passes * dev.launch_overhead.value;
      bwd += sc.bwd / stream + sc.passes * dev.launch_overhead.value;
    }
    if (detail::owns_bias(op)) {
      const double y = detail::local_elements(g, op, op.output, c) * detail::elem_bytes(g.tensors[op.output.tensor], pr);
      bwd += y / stream + dev.launch_overhead.value;  // the bias gradient: a column sum of dY
      if (o.linear_bias_pass) fwd += 2 * y / stream + dev.launch_overhead.value;
    }
    if (op.kind == op_kind::batch_norm && !op.inputs.empty()) {
      const double x = detail::local_elements(g, op, op.inputs[0], c) * detail::elem_bytes(g.tensors[op.inputs[0].tensor], pr);
      fwd += x / stream;
      bwd += 2 * x / stream;
      if (o.fused_bn_relu && detail::bn_runs_fused(g, op)) bwd += x / stream;  // the ReLU mask
    }
    if (o.fused_bn_relu && detail::bn_fused_relu(g, op)) fwd = bwd = 0;
    if (o.fused_bn_relu && detail::bn_fused_add(g, op)) {  // the addend's read and its gradient's write
      const auto& addend = op.inputs[1 - detail::fused_add_bn_slot(g, op)];
      const double a = detail::local_elements(g, op, addend, c) * detail::elem_bytes(g.tensors[addend.tensor], pr);
      fwd = a / stream;
      bwd = a / stream;
    }
    r.compute = seconds(k * (fwd + bwd));
    if (c.recompute) r.recompute = seconds(k * fwd);
    backward_one = bwd + (c.recompute ? fwd : 0.0);

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
    if (op.kind == op_kind::batch_norm && op.dims.size() == 4 && !o.local_batch_norm) {
      const comm_group sg = detail::split_group(c, 0b1101u, 4);
      if (sg.size() > 1) {
        const double ch = double(op.dims[1].extent) / double(c.total_degree(1));
        coll += 2 * all_reduce(sg, bytes(2 * 4 * ch), cl).value;
      }
    }
    r.collectives = seconds(k * coll);
    // Working set: forward holds the output and the inputs it does not keep; backward
    // the output gradient, the input gradients and the parameter gradients.
    const double out = op.output.tensor >= 0
                           ? detail::local_elements(g, op, op.output, c) * detail::elem_bytes(g.tensors[op.output.tensor], pr)
                           : 0.0;
    double fwd_ws = out, bwd_ws = out;
    for (std::size_t s = 0; s < op.inputs.size(); ++s) {
      const auto& t = g.tensors[op.inputs[s].tensor];
      const double in = detail::local_elements(g, op, op.inputs[s], c) * detail::elem_bytes(t, pr);
      if (!detail::saves_input(op, int(s))) fwd_ws += in;
      if (!t.integer) bwd_ws += in;
    }
    for (auto& p : op.params) bwd_ws += detail::local_elements(g, op, p, c) * double(pr.grad_bytes);
    r.working_fwd = bytes(fwd_ws);
    r.working_bwd = bytes(bwd_ws);

    bytes saved{};
    for (auto& s : op.saved) {
      if (s.input >= 0) continue;  // charged on the edge that delivers the input
      if (fused && (s.dims >> 3 & 1u)) continue;  // indexed by the key dim: not kept by a fused kernel
      if (o.regenerate_dropout && (op.kind == op_kind::dropout || (op.kind == op_kind::attention && (s.dims >> 3 & 1u))))
        continue;
      double n = s.multiplier;
      for (std::size_t d = 0; d < op.dims.size(); ++d)
        if (s.dims >> d & 1u) n *= double(op.dims[d].extent) / double(c.total_degree(int(d)));
      saved += bytes(n * (s.elem_bytes > 0 ? s.elem_bytes : pr.activation_bytes()));
    }
    if (op.kind == op_kind::attention && !fused && o.regenerate_dropout)  // the softmax output
      saved += bytes(detail::local_scores(op, c) * pr.activation_bytes());
    if (fused)  // the softmax statistics: b * heads * sq fp32 values
      saved += bytes(4.0 * double(op.dims[0].extent) / double(c.total_degree(0)) * double(op.dims[1].extent) /
                     double(c.total_degree(1)) * double(op.dims[2].extent));
    r.kernel_state = saved;
    if (c.recompute) r.working_bwd += saved;  // backward rebuilds what forward did not keep
    if (!c.recompute) r.activations = saved;
    else if (facts.repeats > 0) r.recompute_working = bytes((saved.value + detail::saved_input_bytes(g, op, c, pr)) /
                                                            double(facts.repeats));
  }
  for (std::size_t j = 0; j < op.params.size(); ++j) {
    if (!(facts.owned_params >> j & 1u)) continue;
    const auto& p = op.params[j];
    const auto t = layout_of(op, p, g.tensors[p.tensor].rank, c, cl.mesh, false);
    const comm_group rg{{t.replicate[0], t.replicate[1]}};
    const double n = detail::local_elements(g, op, p, c);
    const double shard = c.shard_optimizer && detail::shardable(g, p, c, rg.size()) ? double(rg.size()) : 1.0;
    r.param_state += bytes(n * (pr.weight_bytes + (pr.grad_bytes + pr.optimizer_bytes) / shard));
    const double upd = pr.grad_bytes + 2.0 * (pr.optimizer_bytes + pr.weight_bytes) -
                       (pr.compute == dtype::fp32 ? 0.0 : double(pr.weight_bytes));
    r.optimizer += seconds(n / shard * upd / (dev.memory_bw.value * dev.memory_efficiency));
    if (o.accumulations() > 0)  // each micro-batch after the first adds its gradient to the accumulator
      r.compute += seconds(double(o.accumulations()) * detail::accumulation_bytes(n, pr) /
                           (dev.memory_bw.value * dev.memory_efficiency));
    if (rg.size() > 1) {
      if (c.shard_optimizer)
        r.grad_sync += reduce_scatter(rg, bytes(n * pr.grad_bytes), cl) + all_gather(rg, bytes(n * pr.weight_bytes), cl);
      else
        r.grad_sync += all_reduce(rg, bytes(n * pr.grad_bytes), cl);
    }
  }
  if (o.overlap_grad_sync) r.grad_sync = seconds(r.grad_sync.value > backward_one ? r.grad_sync.value - backward_one : 0.0);
  return r;
}

/// Convenience: computes the op's facts first (O(graph); prefer analyze() once).
constexpr op_cost cost_op(const op_graph& g, int i, const op_config& c, const cluster& cl, const cost_options& o = {}) {
  return cost_op(g, i, c, cl, o, analyze(g)[i]);
}

}  // namespace tensoropt

// Edge costs live in edge_cost.hpp; included here so that op_cost.hpp keeps giving
// the whole cost model.
#include "edge_cost.hpp"
