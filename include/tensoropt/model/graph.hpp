// The operator graph: what lowering a model produces and what cost, search and the
// runtime consume.
//
// An op has named iteration dimensions; each tensor it reads or writes maps its
// axes to those dims. Splitting an iteration dim by p splits every tensor axis that
// follows it into p contiguous blocks; a tensor that does not follow a split dim is
// replicated (an input or parameter) or partial, i.e. a pending sum (an output: the
// dim was a contraction). FLOPs are a coefficient times the product of the dims, so
// the local shard's FLOPs are the global ones divided by the split degrees.
//
// Everything here is a plain value (std::vector, std::string) and constexpr-capable:
// a small model lowers and is costed inside a constant expression.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "../core/dims.hpp"
#include "../core/error.hpp"

namespace tensoropt {

inline constexpr int max_op_dims = 8;     ///< iteration dims of one op
inline constexpr int max_tensor_rank = 6; ///< axes of one tensor

/// What an op computes. The comment of each kind is binding for lowering, cost and
/// the runtime: dims in this order, inputs in this order, params in this order.
/// `attr` holds the integer attributes named per kind.
enum class op_kind : std::uint8_t {
  /// The model's input batch. dims = the tensor's axes; no inputs; output = data.
  /// attr[0] = 1 for integer token ids, 0 for real features.
  input,
  /// Generalized linear: dims [batch..., contract..., out...] with
  /// attr[0] = #batch dims, attr[1] = #contract dims, attr[2] = #out dims,
  /// attr[3] bit 0 = has a bias, bit 1 = the weight is stored [out..., contract...]
  /// (a weight tied to another op's parameter, e.g. GPT's LM head reading the token
  /// table [v, h]; its tensor_map still says which axis follows which dim).
  /// input x[batch..., contract...]; params W[contract..., out...] (+ bias[out...]);
  /// output y[batch..., out...]. Lowering saves x (the input).
  linear,
  /// dims [b, cout, cin, oh, ow, kh, kw] (oh, ow, kh, kw unsplittable);
  /// input x[b, cin, ih, iw]; param W[cout, cin, kh, kw] (+ bias[cout]);
  /// output y[b, cout, oh, ow]. attr[0] = stride, attr[1] = pad along rows (ih),
  /// attr[2] = pad along columns (iw), attr[3] = has bias. Kernel size = extents
  /// of kh, kw. x's ih, iw axes map to -1.
  conv2d,
  /// dims [b, c, oh, ow, kh, kw]; x[b, c, ih, iw] -> y[b, c, oh, ow].
  /// attr[0] = stride, attr[1] = pad, attr[2] = kernel.
  max_pool,
  avg_pool,
  /// dims [b, c, y, x]; x[b, c, y, x] -> out[b, c] (mean over y, x).
  global_avg_pool,
  /// dims [b, c, y, x]; x -> out of the same shape; params gamma[c], beta[c].
  /// Statistics over b, y, x (synchronized across devices when those are split).
  batch_norm,
  /// dims [batch..., h] (h unsplittable); x -> y same shape; params gamma[h], beta[h].
  layer_norm,
  /// dims [batch..., v, h]; ids[batch...] (integer), table[v, h] -> y[batch..., h].
  /// Splitting v leaves y partial (vocab-parallel embedding). attr[0] = 1: a second
  /// param pos[s, h] (learned positions; s = the last batch dim, i.e. dims[nb - 1])
  /// is added to y. Lowering saves the ids (4 bytes each).
  embedding,
  /// Attention core: dims [b, heads, sq, sk, d] (sq, sk, d unsplittable);
  /// input qkv[b, s, 3, heads, d] (map {b, sq, -1, heads, d}) -> y[b, s, heads, d].
  /// attr[0] = 1 if causal; attr[1] = dropout probability on the attention
  /// weights in 1e-6 units.
  attention,
  /// Elementwise, dims = the tensor's axes; x -> y.
  gelu,
  relu,
  /// Elementwise; attr[1] = drop probability in 1e-6 units.
  dropout,
  /// Elementwise sum of inputs of one shape (two for a residual: x, then body(x);
  /// one per branch for an add-merge): dims = the tensor's axes.
  add,
  /// Concatenation along one axis: dims = the output's axes with the concat axis
  /// unsplittable; attr[0] = the concat axis; inputs in order (each input's concat
  /// axis maps to -1).
  concat,
  /// Mean softmax cross-entropy: dims [batch..., classes];
  /// inputs logits[batch..., classes], labels[batch...] (integer) -> loss (rank 0).
  /// The labels come from an `input` op (attr[0] = 1) placed just before it.
  softmax_xent,
  /// Mixture-of-experts router (top-k gating, GShard): dims [g, s, e, h]
  /// (g = token groups, s = tokens per group); input x[g, s, h]; param Wg[h, e];
  /// output gates[g, s, e] (softmax probabilities, zero outside each token's top k).
  /// attr[0] = k, attr[2] = capacity per expert per group.
  moe_gate,
  /// dims [g, s, e, c, h]; inputs x[g, s, h], gates[g, s, e] ->
  /// y[e, g, c, h]: each expert's first c routed tokens of each group.
  /// attr[0] = k, attr[2] = capacity.
  moe_dispatch,
  /// One FFN per expert: dims [e, g, c, h, f]; input x[e, g, c, h];
  /// params W1[e, h, f], W2[e, f, h] -> y[e, g, c, h] (gelu between).
  moe_experts,
  /// dims [g, s, e, c, h]; inputs y[e, g, c, h], gates[g, s, e] -> out[g, s, h]
  /// (gate-weighted sum of each token's expert outputs). attr[0] = k, attr[2] = capacity.
  moe_combine,
};

constexpr std::string_view name_of(op_kind k) {
  constexpr std::string_view names[] = {
      "input",     "linear",  "conv2d", "max_pool",       "avg_pool",     "global_avg_pool",
      "batch_norm", "layer_norm", "embedding", "attention", "gelu",       "relu",
      "dropout",   "add",     "concat", "softmax_xent",   "moe_gate",     "moe_dispatch",
      "moe_experts", "moe_combine"};
  return names[static_cast<int>(k)];
}

/// An iteration dimension of an op.
struct op_dim {
  std::string_view name;      ///< "b", "s", "h", "k", "n", "heads", ...
  index_t extent = 1;
  bool splittable = true;     ///< false: never split (e.g. a conv's kernel window)
  bool batch = false;         ///< scales with the (micro-)batch size
  constexpr bool operator==(const op_dim&) const = default;
};

/// How a tensor's axes follow an op's dims.
struct tensor_map {
  int tensor = -1;                                   ///< index into op_graph::tensors
  std::array<std::int8_t, max_tensor_rank> dim{};    ///< per axis: op dim, or -1 (never split)
  constexpr bool operator==(const tensor_map&) const = default;
};

/// A buffer an op keeps from forward to backward, in elements:
/// multiplier * product of the extents of the dims in `dims` (a bitmask over the
/// op's dims; the local shard divides by their split degrees).
struct saved_buffer {
  std::uint32_t dims = 0;     ///< bit i set: indexed by op dim i
  double multiplier = 1;      ///< elements per index point
  int elem_bytes = 0;         ///< bytes per element; 0 = the activation dtype
  int input = -1;             ///< >= 0: this buffer is that input (kept under recompute)
  constexpr bool operator==(const saved_buffer&) const = default;
};

/// A tensor of the graph: an activation (produced by one op) or a parameter.
struct tensor_info {
  std::string name;
  std::array<index_t, max_tensor_rank> extents{};
  int rank = 0;
  bool parameter = false;
  bool integer = false;       ///< token ids, labels
  int producer = -1;          ///< op index (activations)
  constexpr index_t size() const {
    index_t n = 1;
    for (int i = 0; i < rank; ++i) n *= extents[i];
    return n;
  }
};

struct op_node {
  std::string name;           ///< "layers.3.attn.qkv"
  op_kind kind = op_kind::input;
  std::vector<op_dim> dims;
  std::vector<tensor_map> inputs;   ///< activations read
  std::vector<tensor_map> params;   ///< parameters read
  tensor_map output;                ///< the activation written
  double fwd_flops_per_point = 0;   ///< forward FLOPs = this * product of dims
  double bwd_flops_per_point = 0;   ///< backward FLOPs = this * product of dims
  std::vector<saved_buffer> saved;  ///< kept for backward (without recompute)
  std::array<std::int64_t, 4> attr{};
  int repeat_id = -1;               ///< instance of repeat<>: which repeat (or -1)
  int repeat_index = 0;             ///< and which copy

  constexpr int dim_index(std::string_view n) const {
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (dims[i].name == n) return int(i);
    return -1;
  }
  constexpr double points() const {
    double p = 1;
    for (auto& d : dims) p *= double(d.extent);
    return p;
  }
};

/// A directed edge: op `from` produces `tensor`, which op `to` reads as input `slot`.
struct graph_edge {
  int from = -1, to = -1, tensor = -1, slot = 0;
  constexpr bool operator==(const graph_edge&) const = default;
};

struct op_graph {
  std::string name;
  std::vector<tensor_info> tensors;
  std::vector<op_node> ops;         ///< in a topological order
  index_t batch = 1;                ///< the global batch the extents are for

  /// Edges in order of (to, slot).
  constexpr std::vector<graph_edge> edges() const {
    std::vector<graph_edge> e;
    for (std::size_t j = 0; j < ops.size(); ++j)
      for (std::size_t s = 0; s < ops[j].inputs.size(); ++s) {
        const int t = ops[j].inputs[s].tensor;
        e.push_back({tensors[t].producer, int(j), t, int(s)});
      }
    return e;
  }
  constexpr double parameter_count() const {
    double n = 0;
    for (auto& t : tensors)
      if (t.parameter) n += double(t.size());
    return n;
  }
  constexpr double fwd_flops() const {
    double f = 0;
    for (auto& o : ops) f += o.fwd_flops_per_point * o.points();
    return f;
  }
};

/// The same graph for a batch of `b` samples (a micro-batch): every batch dim and
/// every tensor axis that follows one scales by b / g.batch. Throws
/// invalid_argument unless b divides g.batch.
constexpr op_graph with_batch(const op_graph& src, index_t b) {
  op_graph g = src;  // a local, not a by-value parameter: GCC 12 cannot move a parameter's strings in constexpr
  detail::require(b >= 1 && g.batch % b == 0,
                  "with_batch: the micro-batch size must divide the global batch");
  const index_t k = g.batch / b;
  if (k == 1) return g;
  std::vector<bool> scaled(g.tensors.size(), false);
  for (auto& op : g.ops) {
    for (auto& d : op.dims)
      if (d.batch) {
        detail::require(d.extent % k == 0,
                        "with_batch: a batch dim is not divisible by the micro-batch count");
        d.extent /= k;
      }
    auto scale = [&](const tensor_map& m, int rank) {
      if (m.tensor < 0 || scaled[m.tensor]) return;
      auto& t = g.tensors[m.tensor];
      for (int a = 0; a < rank; ++a)
        if (m.dim[a] >= 0 && op.dims[m.dim[a]].batch) t.extents[a] /= k;
      scaled[m.tensor] = true;
    };
    scale(op.output, op.output.tensor >= 0 ? g.tensors[op.output.tensor].rank : 0);
  }
  g.batch = b;
  return g;
}

/// The same graph for a global batch of `b` samples, larger or smaller than
/// g.batch: every batch dim and every tensor axis that follows one scales by
/// b / g.batch. Throws invalid_argument when a batch dim would not stay an integer
/// (e.g. MoE token groups) or b < 1.
constexpr op_graph with_global_batch(const op_graph& src, index_t b) {
  op_graph g = src;
  detail::require(b >= 1, "the global batch must be at least 1");
  if (b == g.batch) return g;
  for (auto& op : g.ops)
    for (auto& d : op.dims)
      if (d.batch) {
        detail::require(d.extent * b % g.batch == 0,
                        "this model's batch cannot be changed to that size: a batch dim (e.g. MoE token "
                        "groups) would not be a whole number; pick a multiple or divisor of the default batch");
        d.extent = d.extent * b / g.batch;
      }
  std::vector<bool> scaled(g.tensors.size(), false);
  for (auto& op : g.ops) {
    const auto& m = op.output;
    if (m.tensor < 0 || scaled[m.tensor]) continue;
    auto& t = g.tensors[m.tensor];
    for (int a = 0; a < t.rank; ++a)
      if (m.dim[a] >= 0 && op.dims[m.dim[a]].batch) t.extents[a] = t.extents[a] * b / src.batch;
    scaled[m.tensor] = true;
  }
  g.batch = b;
  return g;
}

}  // namespace tensoropt
