// Time and memory of one graph edge (producer -> consumer) under a pair of configs:
// the layout redistribution in forward and backward, and what the consumer keeps of
// its input for backward. Everything is constexpr; k is the micro-batch count, the
// graph is the micro-batch's.
//
// Edge time = k * (forward redistribution producer-output -> consumer-input +
// backward redistribution of the gradient consumer -> producer); no backward for
// integer tensors or for the model input; + k * the forward redistribution once
// more when the consumer keeps the producer's shard of a gathered input (below).
// Edge memory (saved inputs and recompute checkpoints):
//  - Kept shard (Megatron's sequence parallelism, Korthikanti et al. 2022):
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
#pragma once
#include "op_cost.hpp"

namespace tensoropt {

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
/// Whether edge `e`'s consumer reads the tensor in the producer's layout (equal
/// splits on every axis at every level, no partial source).
constexpr bool same_split(const op_graph& g, const graph_edge& e, const op_config& cu, const op_config& cv) {
  const op_node& u = g.ops[e.from];
  const tensor_map& src = u.output;
  const tensor_map& dst = g.ops[e.to].inputs[e.slot];
  for (int L = 0; L < max_levels; ++L) {
    std::uint32_t su = 0, sv = 0;
    for (int a = 0; a < g.tensors[e.tensor].rank; ++a) {
      std::int64_t ds = 1, dd = 1;
      if (src.dim[a] >= 0 && !(su >> src.dim[a] & 1u)) {
        ds = cu.degree[L][src.dim[a]];
        su |= 1u << src.dim[a];
      }
      if (dst.dim[a] >= 0 && !(sv >> dst.dim[a] & 1u)) {
        dd = cv.degree[L][dst.dim[a]];
        sv |= 1u << dst.dim[a];
      }
      if (ds != dd) return false;
    }
    for (std::size_t d = 0; d < u.dims.size(); ++d)
      if (!(su >> d & 1u) && cu.degree[L][d] > 1) return false;
  }
  return true;
}
/// Whether an op before edge `e`'s consumer (in op order) reads the same tensor and
/// saves it for backward.
constexpr bool earlier_reader_saves(const op_graph& g, const graph_edge& e) {
  for (int j = e.from + 1; j < e.to; ++j)  // readers come after the producer
    for (std::size_t s = 0; s < g.ops[j].inputs.size(); ++s)
      if (g.ops[j].inputs[s].tensor == e.tensor && saves_input(g.ops[j], int(s))) return true;
  return false;
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
  if (!cv.recompute) {
    if (!detail::saves_input(v, e.slot)) return bytes(0);
    const double ratio = detail::kept_shard_ratio(g, e, cu, cv);
    // the producer's own buffer (same layout, or its shard of a gathered input) is
    // shared by every reader that keeps it: charged to the first that saves the tensor
    if ((ratio < 1 || detail::same_split(g, e, cu, cv)) && detail::earlier_reader_saves(g, e)) return bytes(0);
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
  if (cu.recompute && u.repeat_id >= 0 && detail::same_instance(u, v)) return bytes(0);
  if (!detail::first_reader_in_layer(g, e)) return bytes(0);
  return bytes(detail::local_elements(g, v, v.inputs[e.slot], cv) * detail::elem_bytes(t, o.prec) *
               detail::kept_shard_ratio(g, e, cu, cv));
}

}  // namespace tensoropt
