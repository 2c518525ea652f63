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
//    times the device's GEMM efficiency curve; the others at the fp32 peak.
//    Backward: its FLOPs, twice the bytes, one launch.
//  - Attention core, per implementation (cost_options::attention, a switch of the
//    software stack): with P = b * heads * s^2 local score elements and e bytes
//    per activation,
//      materialized (Megatron's unfused softmax path, what Korthikanti et al.
//      assume): the scores S = QK^T, the softmax, the dropout mask (1 byte) and
//      the dropout output are written to memory. Forward: write S, read S + write
//      softmax, read softmax + write dropout output and mask, read it in AV:
//      6Pe + P bytes (4Pe without dropout). Backward: read the dropout output
//      (dV), write its gradient, read it + the mask + write the softmax gradient,
//      read softmax + gradient + write dS, read dS twice (dQ, dK): 9Pe + P bytes
//      (7Pe without dropout). Charged as separate memory-bound passes added to
//      the GEMM roofline, with one launch per softmax / dropout pass.
//      fused (FlashAttention, Dao et al. 2022): no score traffic; backward
//      recomputes QK^T (+2 FLOPs per point, 10 instead of 8); saved buffers
//      indexed by the key dim are not kept, only the softmax statistics
//      (b * heads * s fp32 values).
//  - Batch norm in training reads its input twice in forward (statistics, then
//    normalization) and x and dy twice in backward: one extra input pass forward,
//    two backward (cuDNN's and the reference kernels' structure).
//  - Own collectives: a partial output that no op reads (the loss) is all-reduced
//    in place; softmax cross-entropy with its class dim split all-reduces two
//    floats per sample; batch norm with b, h or w split all-reduces two floats
//    per channel in forward and in backward. Other partial outputs are resolved by
//    the consuming edge's redistribution and are not charged here.
//  - Gradient sync: for each parameter the op owns (the first op listing it), over
//    the devices that replicate it: all-reduce of its local gradient, or under
//    shard_optimizer reduce-scatter of the gradient + all-gather of the weights.
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
// Edge time = k * (forward redistribution producer-output -> consumer-input +
// backward redistribution of the gradient consumer -> producer); no backward for
// integer tensors or for the model input; + k * the forward redistribution once
// more when the consumer keeps the producer's shard of a gathered input (below).
// Edge memory (saved inputs and recompute checkpoints):
//  - Kept shard (Megatron's sequence parallelism, Korthikanti et al. sec. 4.2.2):
//    when the forward redistribution is a pure all-gather (no partial source, every
//    destination split divides the source split) the consumer keeps the
//    producer's smaller shard and all-gathers it again in backward; otherwise it
//    keeps its own (gathered or re-split) copy. This holds for the saved input of
//    a plain consumer and for the checkpoint of a recomputed one.
//  - A recomputed consumer keeps its input as checkpoint unless the producer is
//    recomputed too and belongs to the same repeat instance (layer): then the
//    input is rebuilt by recomputing the producer. Of several recomputed readers
//    of one tensor inside one layer, only the first (in op order) is charged: they
//    share one checkpoint (full recomputation keeps 2sbh per layer, as Megatron).
//    Deliberate gap: a later recomputed reader whose first reader is not
//    recomputed and does not save the tensor is charged nothing for it.
// So edge memory depends on the recompute switches, edge time only on the layouts.
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

/// How the attention core runs (see the file comment).
enum class attention_kernel : std::uint8_t {
  materialized,  ///< scores, softmax and dropout written to memory (Megatron's unfused path)
  fused,         ///< FlashAttention: scores stay on chip; backward recomputes them
};

struct cost_options {
  precision prec = precisions::bf16_mixed;
  index_t micro_batches = 1;  ///< k: the graph is one micro-batch, run k times
  attention_kernel attention = attention_kernel::materialized;
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
  seconds optimizer{};    ///< the optimizer update, once per iteration
  bytes param_state{};    ///< weights + grads + optimizer state
  bytes activations{};    ///< saved for backward (one micro-batch)
  bytes recompute_working{};  ///< under recompute in a repeat: its saved buffers / repeat count
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
/// Bytes of the score tensors a materialized attention core moves (file comment).
struct score_bytes {
  double fwd = 0, bwd = 0;
  int passes = 0;  ///< memory-bound kernels per direction (softmax, dropout)
};
constexpr score_bytes score_traffic(const op_node& op, const op_config& c, const precision& pr) {
  double P = 1;  // local b * heads * sq * sk
  for (int d = 0; d < 4; ++d) P *= double(op.dims[d].extent) / double(c.total_degree(d));
  const double e = pr.activation_bytes();
  if (op.attr[1] > 0) return {P * (6 * e + 1), P * (9 * e + 1), 2};
  return {P * 4 * e, P * 7 * e, 1};
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
    const bool fused = op.kind == op_kind::attention && o.attention == attention_kernel::fused;
    // backward of fused attention recomputes QK^T: 2 FLOPs per point more
    const double bf_run = fused ? bf + 2 * pts : bf;
    double fwd = kernel(ff, traffic), bwd = kernel(bf_run, 2 * traffic);
    const double stream = dev.memory_bw.value * dev.memory_efficiency;
    if (op.kind == op_kind::attention && !fused) {
      const auto sc = detail::score_traffic(op, c, pr);
      fwd += sc.fwd / stream + sc.passes * dev.launch_overhead.value;
      bwd += sc.bwd / stream + sc.passes * dev.launch_overhead.value;
    }
    if (op.kind == op_kind::batch_norm && !op.inputs.empty()) {
      const double x = detail::local_elements(g, op, op.inputs[0], c) * detail::elem_bytes(g.tensors[op.inputs[0].tensor], pr);
      fwd += x / stream;
      bwd += 2 * x / stream;
    }
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
      if (s.input >= 0) continue;  // charged on the edge that delivers the input
      if (fused && (s.dims >> 3 & 1u)) continue;  // indexed by the key dim: not kept by a fused kernel
      double n = s.multiplier;
      for (std::size_t d = 0; d < op.dims.size(); ++d)
        if (s.dims >> d & 1u) n *= double(op.dims[d].extent) / double(c.total_degree(int(d)));
      saved += bytes(n * (s.elem_bytes > 0 ? s.elem_bytes : pr.activation_bytes()));
    }
    if (fused)  // the softmax statistics: b * heads * sq fp32 values
      saved += bytes(4.0 * double(op.dims[0].extent) / double(c.total_degree(0)) * double(op.dims[1].extent) /
                     double(c.total_degree(1)) * double(op.dims[2].extent));
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
    const double shard = c.shard_optimizer ? double(rg.size()) : 1.0;
    r.param_state += bytes(n * (pr.weight_bytes + (pr.grad_bytes + pr.optimizer_bytes) / shard));
    const double upd = pr.grad_bytes + 2.0 * (pr.optimizer_bytes + pr.weight_bytes) -
                       (pr.compute == dtype::fp32 ? 0.0 : double(pr.weight_bytes));
    r.optimizer += seconds(n / shard * upd / (dev.memory_bw.value * dev.memory_efficiency));
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

namespace detail {
/// Whether op `v` keeps input `slot` for backward (a saved buffer that is the input).
constexpr bool saves_input(const op_node& v, int slot) {
  for (auto& b : v.saved)
    if (b.input == slot) return true;
  return false;
}
/// Local elements of the producer's shard / the consumer's, when edge `e`'s forward
/// redistribution is a pure all-gather (no partial source; every destination split
/// divides the source split, at each level) and the source is smaller; else 1.
constexpr double kept_shard_ratio(const op_graph& g, const graph_edge& e, const op_config& cu, const op_config& cv) {
  const op_node& u = g.ops[e.from];
  const op_node& v = g.ops[e.to];
  const tensor_map& src = u.output;
  const tensor_map& dst = v.inputs[e.slot];
  const int rank = g.tensors[e.tensor].rank;
  double ratio = 1;
  for (int L = 0; L < max_levels; ++L) {
    std::uint32_t su = 0, sv = 0;
    for (int a = 0; a < rank; ++a) {
      std::int64_t ds = 1, dd = 1;
      if (src.dim[a] >= 0 && !(su >> src.dim[a] & 1u)) {
        ds = cu.degree[L][src.dim[a]];
        su |= 1u << src.dim[a];
      }
      if (dst.dim[a] >= 0 && !(sv >> dst.dim[a] & 1u)) {
        dd = cv.degree[L][dst.dim[a]];
        sv |= 1u << dst.dim[a];
      }
      if (ds % dd != 0) return 1;
      ratio *= double(dd) / double(ds);
    }
    for (std::size_t d = 0; d < u.dims.size(); ++d)
      if (!(su >> d & 1u) && cu.degree[L][d] > 1) return 1;  // partial source
  }
  return ratio;
}
/// Whether edge `e`'s consumer is the first op of its repeat instance reading the
/// tensor (ops of one instance are contiguous in op order); true outside repeats.
constexpr bool first_reader_in_layer(const op_graph& g, const graph_edge& e) {
  const op_node& v = g.ops[e.to];
  if (v.repeat_id < 0) return true;
  for (int j = e.to - 1; j >= 0 && same_instance(g.ops[j], v); --j)
    for (auto& in : g.ops[j].inputs)
      if (in.tensor == e.tensor) return false;
  for (std::size_t s = 0; s < std::size_t(e.slot); ++s)
    if (v.inputs[s].tensor == e.tensor) return false;
  return true;
}
}  // namespace detail

/// Edge time per iteration (see the file comment). Depends only on the layouts.
constexpr seconds edge_time(const op_graph& g, const graph_edge& e, const op_config& cu, const op_config& cv,
                            const cluster& cl, const cost_options& o = {}) {
  const auto& t = g.tensors[e.tensor];
  const bytes total(double(t.size()) * detail::elem_bytes(t, o.prec));
  const auto l = layouts_of_edge(g, e, cu, cv, cl.mesh);
  const seconds fwd = redistribution_time(l.fwd_src, l.fwd_dst, t.rank, total, cl);
  seconds s = fwd;
  if (!t.integer && g.ops[e.from].kind != op_kind::input)
    s += redistribution_time(l.bwd_src, l.bwd_dst, t.rank, total, cl);
  if (detail::saves_input(g.ops[e.to], e.slot) && detail::kept_shard_ratio(g, e, cu, cv) < 1) s += fwd;  // re-gather
  return s * double(o.micro_batches);
}

/// Edge memory: the consumer's saved input or recompute checkpoint (see the file comment).
constexpr bytes edge_memory(const op_graph& g, const graph_edge& e, const op_config& cu, const op_config& cv,
                            const cost_options& o = {}) {
  const op_node& u = g.ops[e.from];
  const op_node& v = g.ops[e.to];
  const auto& t = g.tensors[e.tensor];
  const double ratio = detail::kept_shard_ratio(g, e, cu, cv);
  if (!cv.recompute) {
    double b = 0;
    for (auto& s : v.saved) {
      if (s.input != e.slot) continue;
      double n = s.multiplier;
      for (std::size_t d = 0; d < v.dims.size(); ++d)
        if (s.dims >> d & 1u) n *= double(v.dims[d].extent) / double(cv.total_degree(int(d)));
      b += n * (s.elem_bytes > 0 ? s.elem_bytes : detail::elem_bytes(t, o.prec));
    }
    return bytes(b * ratio);
  }
  if (cu.recompute && detail::same_instance(u, v)) return bytes(0);
  if (!detail::first_reader_in_layer(g, e)) return bytes(0);
  return bytes(detail::local_elements(g, v, v.inputs[e.slot], cv) * detail::elem_bytes(t, o.prec) * ratio);
}

}  // namespace tensoropt
