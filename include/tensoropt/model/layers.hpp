// Dense layer templates: linear (and a linear tied to an existing weight),
// embedding, layer_norm, gelu, relu, dropout, softmax cross-entropy.
//
// FLOPs per iteration point (documented so cost tests can check them): linear 2
// forward / 4 backward (points = batch x contract x out); embedding 1/v per point
// (one add per output element) both ways; layer_norm 5 / 10 per element; gelu 8 / 12;
// relu 1 / 1; dropout 2 / 1; softmax cross-entropy 5 / 3 per logit.
#pragma once
#include <cmath>
#include <string_view>
#include "../core/dims.hpp"
#include "graph.hpp"
#include "layer.hpp"
#include "lowering.hpp"

namespace tensoropt {

namespace detail {
/// Probability in 1e-6 units (graph attrs are integers).
constexpr std::int64_t ppm(double p) { return std::int64_t(p * 1e6 + 0.5); }

/// Appends a saved buffer indexed by the dims in `mask`.
constexpr void save(op_node& op, std::uint32_t mask, int elem_bytes = 0, int input = -1,
                    double multiplier = 1) {
  op.saved.push_back(saved_buffer{mask, multiplier, elem_bytes, input});
}
constexpr std::uint32_t low_mask(int n) { return n >= 32 ? ~0u : (1u << n) - 1u; }
}  // namespace detail

namespace detail {
TENSOROPT_NOINLINE constexpr int lower_linear(graph_builder& b, int x, const shape_desc& s, int nc, index_t out_size,
                           std::string_view out_name, bool bias) {
  const int r = s.rank, nb = r - nc;
  op_node op;
  op.kind = op_kind::linear;
  append_axes(op.dims, s);
  op.dims.push_back(make_dim(out_name, out_size));
  op.attr = {nb, nc, 1, bias ? 1 : 0};
  op.inputs.push_back(tmap_iota(x, r));
  const std::string name = b.op_name("linear");
  op.params.push_back(b.param(name, "weight", extents_of(s, nb).push(out_size), tmap_iota(-1, nc + 1, nb)));
  if (bias) op.params.push_back(b.param(name, "bias", {out_size}, tmap(-1, {r})));
  op.fwd_flops_per_point = 2;
  op.bwd_flops_per_point = 4;
  save(op, low_mask(r), 0, 0);
  tensor_map out = tmap_iota(-1, nb);
  out.dim[nb] = std::int8_t(r);
  return b.emit(std::move(op), name, extents_of(s, 0, nb).push(out_size), out);
}

TENSOROPT_NOINLINE constexpr int lower_tied_linear(graph_builder& b, int x, const shape_desc& s, index_t out_size,
                                std::string_view out_name, std::string_view param) {
  const int r = s.rank, nb = r - 1;
  const int w = b.find_tensor(param);
  detail::require(w >= 0 && b.g.tensors[w].parameter,
                  "tied_linear: the tied parameter does not exist (lower the layer that owns it first)");
  detail::require(b.g.tensors[w].rank == 2 && b.g.tensors[w].extents[0] == out_size &&
                      b.g.tensors[w].extents[1] == s.extents[r - 1],
                  "tied_linear: the tied parameter must have extents [Out, features]");
  op_node op;
  op.kind = op_kind::linear;
  append_axes(op.dims, s);
  op.dims.push_back(make_dim(out_name, out_size));
  op.attr = {nb, 1, 1, 2};
  op.inputs.push_back(tmap_iota(x, r));
  op.params.push_back(tmap(w, {r, r - 1}));
  op.fwd_flops_per_point = 2;
  op.bwd_flops_per_point = 4;
  save(op, low_mask(r), 0, 0);
  tensor_map out = tmap_iota(-1, nb);
  out.dim[nb] = std::int8_t(r);
  return b.emit(std::move(op), b.op_name("linear"), extents_of(s, 0, nb).push(out_size), out);
}

TENSOROPT_NOINLINE constexpr int lower_embedding(graph_builder& b, int x, const shape_desc& s, index_t vocab, index_t hidden,
                              bool positions) {
  const int nb = s.rank;
  op_node op;
  op.kind = op_kind::embedding;
  append_axes(op.dims, s);
  op.dims.push_back(make_dim("v", vocab));
  op.dims.push_back(make_dim("h", hidden));
  op.attr = {positions ? 1 : 0, 0, 0, 0};
  op.inputs.push_back(tmap_iota(x, nb));
  const std::string name = b.op_name("embed");
  op.params.push_back(b.param(name, "weight", {vocab, hidden}, tmap(-1, {nb, nb + 1})));
  if (positions)
    op.params.push_back(b.param(name, "pos", {s.extents[nb - 1], hidden}, tmap(-1, {nb - 1, nb + 1})));
  op.fwd_flops_per_point = 1.0 / double(vocab);
  op.bwd_flops_per_point = 1.0 / double(vocab);
  save(op, low_mask(nb), 4, 0);
  tensor_map out = tmap_iota(-1, nb);
  out.dim[nb] = std::int8_t(nb + 1);
  return b.emit(std::move(op), name, extents_of(s).push(hidden), out);
}

/// Ops whose dims are the input's axes and whose output has the input's shape.
TENSOROPT_NOINLINE constexpr int lower_elementwise(graph_builder& b, int x, const shape_desc& s, op_node&& op,
                                const std::string& name) {
  append_axes(op.dims, s);
  op.inputs.push_back(tmap_iota(x, s.rank));
  return b.emit(std::move(op), name, extents_of(s), tmap_iota(-1, s.rank));
}

TENSOROPT_NOINLINE constexpr int lower_layer_norm(graph_builder& b, int x, const shape_desc& s) {
  const int r = s.rank;
  const index_t h = s.extents[r - 1];
  op_node op;
  op.kind = op_kind::layer_norm;
  const std::string name = b.op_name("ln");
  op.params.push_back(b.param(name, "gamma", {h}, tmap(-1, {r - 1})));
  op.params.push_back(b.param(name, "beta", {h}, tmap(-1, {r - 1})));
  op.fwd_flops_per_point = 5;
  op.bwd_flops_per_point = 10;
  save(op, low_mask(r), 0, 0);
  const int y = lower_elementwise(b, x, s, std::move(op), name);
  b.g.ops.back().dims[r - 1].splittable = false;
  return y;
}

/// gelu, relu (save their input) and dropout (saves a one-byte mask). A dropout of
/// rate 0 is the identity: no op, and a name named<> gave it goes to no other op.
TENSOROPT_NOINLINE constexpr int lower_activation(graph_builder& b, int x, const shape_desc& s, op_kind kind, double p = 0) {
  if (kind == op_kind::dropout && p == 0) {
    b.name_next("");
    return x;
  }
  op_node op;
  op.kind = kind;
  std::string_view fallback = "relu";
  if (kind == op_kind::gelu) {
    op.fwd_flops_per_point = 8;
    op.bwd_flops_per_point = 12;
    save(op, low_mask(s.rank), 0, 0);
    fallback = "gelu";
  } else if (kind == op_kind::relu) {
    op.fwd_flops_per_point = 1;
    op.bwd_flops_per_point = 1;
    save(op, low_mask(s.rank), 0, 0);
  } else {
    op.attr[1] = ppm(p);
    op.fwd_flops_per_point = 2;
    op.bwd_flops_per_point = 1;
    save(op, low_mask(s.rank), 1, -1);
    fallback = "drop";
  }
  return lower_elementwise(b, x, s, std::move(op), b.op_name(fallback));
}

TENSOROPT_NOINLINE constexpr int lower_softmax_xent(graph_builder& b, int x, const shape_desc& s) {
  const int r = s.rank, nb = r - 1;
  op_node in;
  in.kind = op_kind::input;
  in.attr[0] = 1;
  append_axes(in.dims, s, 0, nb);
  const int labels = b.emit(std::move(in), b.unique(b.qualify("labels")), extents_of(s, 0, nb),
                            tmap_iota(-1, nb), true);
  op_node op;
  op.kind = op_kind::softmax_xent;
  append_axes(op.dims, s);
  op.inputs.push_back(tmap_iota(x, r));
  op.inputs.push_back(tmap_iota(labels, nb));
  op.fwd_flops_per_point = 5;
  op.bwd_flops_per_point = 3;
  save(op, low_mask(r), 4, -1);
  return b.emit(std::move(op), b.op_name("loss"), {}, tmap(-1, {}));
}
}  // namespace detail

/// y = x W (+ b) over the trailing axes of x that multiply to In (one axis, or
/// several: a linear on [b, c, y, x] with In = c*y*x flattens them). The output
/// axis is called Name, or by default "f" after an "h" input and "h" otherwise
/// (Megatron's column/row alternation). Lowers to one `linear` op.
template <index_t In, index_t Out, fixed_string Name = "", bool Bias = true>
struct linear : primitive_layer<linear<In, Out, Name, Bias>> {
  static_assert(In > 0 && Out > 0, "tensoropt::linear<In, Out>: In and Out must be positive");
  static constexpr bool params_ok = In > 0 && Out > 0;
  static constexpr std::string_view kind_name = "linear";

  template <class S>
  static constexpr std::size_t contract_axes = [] {
    if constexpr (Shape<S>) return trailing_axes_for<S>(In);
    else return std::size_t{0};
  }();
  template <class S>
  static constexpr bool accepts = Shape<S> && contract_axes<S> > 0;

  template <class S>
  static consteval void diagnose() {
    if constexpr (!Shape<S>)
      static_assert(Shape<S>, "tensoropt::linear<In, Out>: the input is integer token ids; put an embedding first");
    else if constexpr (S::rank == 0)
      static_assert(S::rank > 0, "tensoropt::linear<In, Out>: the input is a scalar");
    else
      static_assert(S::extents[S::rank - 1] == In,
                    "tensoropt::linear<In, Out>: in-features mismatch: the input's last axis (or the "
                    "product of its trailing axes) must equal In");
  }

  template <class S>
  using out_axis = std::conditional_t<
      (Name.size() > 0), axis<Name, Out>,
      std::conditional_t<(contract_axes<S> == 1 && S::names[S::rank - 1] == "h"), axis<"f", Out>,
                         axis<"h", Out>>>;
  template <class S>
  struct out_ {
    using type = cat_t<take_t<S, S::rank - contract_axes<S>>, shape<out_axis<S>>>;
  };

  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_linear(b, x, detail::desc_v<S>, int(contract_axes<S>), Out, out_axis<S>::name, Bias);
  }
};

/// A linear without its own weight: it reads the existing parameter `Param`
/// (e.g. "embed.weight", stored [Out, features]) transposed, as GPT's LM head does
/// with the token embedding table. No bias. Lowers to a `linear` op with attr[3]
/// bit 1 set. Throws invalid_argument (a compile error in a constant expression)
/// if no earlier layer created `Param` with extents [Out, features].
template <index_t Out, fixed_string Param, fixed_string Name = "v">
struct tied_linear : primitive_layer<tied_linear<Out, Param, Name>> {
  static_assert(Out > 0, "tensoropt::tied_linear<Out, Param>: Out must be positive");
  static constexpr bool params_ok = Out > 0;
  static constexpr std::string_view kind_name = "tied_linear";
  template <class S>
  static constexpr bool accepts = [] {
    if constexpr (Shape<S>) return S::rank >= 1;
    else return false;
  }();
  template <class S>
  static consteval void diagnose() {
    static_assert(Shape<S>, "tensoropt::tied_linear: the input must be a real tensor of rank >= 1");
  }
  template <class S>
  struct out_ {
    using type = cat_t<take_t<S, S::rank - 1>, shape<axis<Name, Out>>>;
  };
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_tied_linear(b, x, detail::desc_v<S>, Out, Name.view(), Param.view());
  }
};


/// Token embedding: ids[batch...] -> y[batch..., Hidden] through a table [Vocab,
/// Hidden] (parameter "<op>.weight"); with Positions, a learned table [s, Hidden]
/// ("<op>.pos", s = the last id axis) is added.
template <index_t Vocab, index_t Hidden, bool Positions = false>
struct embedding : primitive_layer<embedding<Vocab, Hidden, Positions>> {
  static_assert(Vocab > 0 && Hidden > 0, "tensoropt::embedding<Vocab, Hidden>: sizes must be positive");
  static constexpr bool params_ok = Vocab > 0 && Hidden > 0;
  static constexpr std::string_view kind_name = "embedding";
  template <class S>
  static constexpr bool accepts = [] {
    if constexpr (is_ids_v<S>) return S::shape_type::rank >= (Positions ? 2u : 1u);
    else return false;
  }();
  template <class S>
  static consteval void diagnose() {
    static_assert(is_ids_v<S>, "tensoropt::embedding<Vocab, Hidden>: the input must be integer token ids (tensoropt::ids<shape<...>>)");
    static_assert(!is_ids_v<S> || Positions == false,
                  "tensoropt::embedding<Vocab, Hidden, true>: position embeddings need ids of rank >= 2 ([b, s])");
  }
  template <class S>
  struct out_ {
    using type = cat_t<typename S::shape_type, shape<axis<"h", Hidden>>>;
  };
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_embedding(b, x, detail::desc_v<typename S::shape_type>, Vocab, Hidden, Positions);
  }
};


/// Layer normalization over the last axis (extent H, never split); params
/// gamma[H], beta[H]. Saves its input.
template <index_t H>
struct layer_norm : primitive_layer<layer_norm<H>> {
  static_assert(H > 0, "tensoropt::layer_norm<H>: H must be positive");
  static constexpr bool params_ok = H > 0;
  static constexpr std::string_view kind_name = "layer_norm";
  template <class S>
  static constexpr bool accepts = [] {
    if constexpr (Shape<S>) return S::rank >= 1 && S::extents[S::rank - 1] == H;
    else return false;
  }();
  template <class S>
  static consteval void diagnose() {
    if constexpr (!Shape<S> || S::rank == 0)
      static_assert(Shape<S> && S::rank > 0, "tensoropt::layer_norm<H>: the input must be a real tensor of rank >= 1");
    else
      static_assert(S::extents[S::rank - 1] == H, "tensoropt::layer_norm<H>: the input's last axis must equal H");
  }
  template <class S>
  struct out_ {
    using type = S;
  };
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_layer_norm(b, x, detail::desc_v<S>);
  }
};

namespace detail {
/// Elementwise activation-like layer on any real tensor.
template <class Derived, op_kind Kind>
struct elementwise_layer : primitive_layer<Derived> {
  static constexpr std::string_view kind_name = name_of(Kind);
  template <class S>
  static constexpr bool accepts = Shape<S>;
  template <class S>
  static consteval void diagnose() {
    static_assert(Shape<S>, "tensoropt: an elementwise layer (gelu, relu, dropout) needs a real tensor, not token ids");
  }
  template <class S>
  struct out_ {
    using type = S;
  };
};
}  // namespace detail

/// GELU; saves its input.
struct gelu : detail::elementwise_layer<gelu, op_kind::gelu> {
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_activation(b, x, detail::desc_v<S>, op_kind::gelu);
  }
};

/// ReLU; saves its input.
struct relu : detail::elementwise_layer<relu, op_kind::relu> {
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_activation(b, x, detail::desc_v<S>, op_kind::relu);
  }
};

/// Dropout with probability P (0 <= P < 1); saves a one-byte mask. dropout<0> is the
/// identity and lowers to no op (detail::lower_activation).
template <double P = 0.1>
struct dropout : detail::elementwise_layer<dropout<P>, op_kind::dropout> {
  static_assert(P >= 0 && P < 1, "tensoropt::dropout<P>: P must be in [0, 1)");
  static constexpr bool params_ok = P >= 0 && P < 1;
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_activation(b, x, detail::desc_v<S>, op_kind::dropout, P);
  }
};

/// Mean softmax cross-entropy of logits[batch..., Classes] against integer labels
/// (an `input` op "labels" of shape [batch...], created here). Output: a scalar.
/// Saves the softmax probabilities in fp32 (4 bytes each).
template <index_t Classes>
struct softmax_cross_entropy : primitive_layer<softmax_cross_entropy<Classes>> {
  static_assert(Classes > 0, "tensoropt::softmax_cross_entropy<Classes>: Classes must be positive");
  static constexpr bool params_ok = Classes > 0;
  static constexpr std::string_view kind_name = "softmax_cross_entropy";
  template <class S>
  static constexpr bool accepts = [] {
    if constexpr (Shape<S>) return S::rank >= 2 && S::extents[S::rank - 1] == Classes;
    else return false;
  }();
  template <class S>
  static consteval void diagnose() {
    if constexpr (!Shape<S> || S::rank < 2)
      static_assert(Shape<S> && S::rank >= 2, "tensoropt::softmax_cross_entropy<Classes>: the input must be logits [batch..., Classes]");
    else
      static_assert(S::extents[S::rank - 1] == Classes,
                    "tensoropt::softmax_cross_entropy<Classes>: the input's last axis must equal Classes");
  }
  template <class S>
  struct out_ {
    using type = shape<>;
  };
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_softmax_xent(b, x, detail::desc_v<S>);
  }
};

}  // namespace tensoropt
