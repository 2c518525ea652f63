// Multi-head self-attention (Megatron/GPT layout): qkv projection, attention core,
// output projection and dropout, lowered to four ops with Korthikanti et al.'s
// saved activations.
//
// On x[b, s, h] with a = Heads and d = h / a, lowering gives (op names in the
// layer's scope, e.g. named<"attn", attention<...>> -> "attn.qkv"):
//   qkv   linear    dims [b, s, h, three, heads, d] -> [b, s, 3, heads, d]; saves x
//   core  attention dims [b, heads, sq, sk, d] -> [b, s, heads, d]; saves q, k, v
//         (its input), the softmax output, the dropout mask (1 byte) and the
//         dropout output: 6sbh + 5as^2b bytes at 2-byte activations
//   proj  linear    dims [b, s, heads, d, h] -> [b, s, h]; saves its input
//   drop  dropout   [b, s, h]; saves a 1-byte mask
// Attention core FLOPs: 4 per point forward (QK^T and AV), 8 backward; causal
// masking does not halve them (as in Megatron's formulas).
#pragma once
#include "graph.hpp"
#include "layer.hpp"
#include "layers.hpp"
#include "lowering.hpp"

namespace tensoropt {

namespace detail {
TENSOROPT_NOINLINE constexpr int lower_attention(graph_builder& b, int x, const shape_desc& in, index_t heads, bool causal,
                              double drop, double attn_drop) {
  const index_t B = in.extents[0], s = in.extents[1], h = in.extents[2], d = h / heads;
  const std::string_view bn = in.names[0];
  // qkv projection
  op_node qkv;
  qkv.kind = op_kind::linear;
  qkv.dims = {make_dim(bn, B), make_dim("s", s), make_dim("h", h), make_dim("three", 3, false),
              make_dim("heads", heads), make_dim("d", d)};
  qkv.attr = {2, 1, 3, 1};
  qkv.inputs.push_back(tmap(x, {0, 1, 2}));
  std::string name = b.op_name("qkv");
  qkv.params.push_back(b.param(name, "weight", {h, 3, heads, d}, tmap(-1, {2, 3, 4, 5})));
  qkv.params.push_back(b.param(name, "bias", {3, heads, d}, tmap(-1, {3, 4, 5})));
  qkv.fwd_flops_per_point = 2;
  qkv.bwd_flops_per_point = 4;
  save(qkv, dim_mask({0, 1, 2}), 0, 0);
  const int t_qkv = b.emit(std::move(qkv), std::move(name), {B, s, 3, heads, d}, tmap(-1, {0, 1, 3, 4, 5}));
  // attention core
  op_node core;
  core.kind = op_kind::attention;
  core.dims = {make_dim(bn, B), make_dim("heads", heads), make_dim("sq", s, false),
               make_dim("sk", s, false), make_dim("d", d, false)};
  core.attr = {causal ? 1 : 0, ppm(attn_drop), 0, 0};
  core.inputs.push_back(tmap(t_qkv, {0, 2, -1, 1, 4}));
  core.fwd_flops_per_point = 4;
  core.bwd_flops_per_point = 8;
  save(core, dim_mask({0, 1, 2, 4}), 0, 0, 3);  // q, k, v
  save(core, dim_mask({0, 1, 2, 3}), 0);        // softmax output
  if (attn_drop > 0) {
    save(core, dim_mask({0, 1, 2, 3}), 1);  // dropout mask
    save(core, dim_mask({0, 1, 2, 3}), 0);  // dropout output
  }
  const int t_core = b.emit(std::move(core), b.op_name("core"), {B, s, heads, d}, tmap(-1, {0, 2, 1, 4}));
  // output projection
  op_node proj;
  proj.kind = op_kind::linear;
  proj.dims = {make_dim(bn, B), make_dim("s", s), make_dim("heads", heads), make_dim("d", d), make_dim("h", h)};
  proj.attr = {2, 2, 1, 1};
  proj.inputs.push_back(tmap(t_core, {0, 1, 2, 3}));
  name = b.op_name("proj");
  proj.params.push_back(b.param(name, "weight", {heads, d, h}, tmap(-1, {2, 3, 4})));
  proj.params.push_back(b.param(name, "bias", {h}, tmap(-1, {4})));
  proj.fwd_flops_per_point = 2;
  proj.bwd_flops_per_point = 4;
  save(proj, dim_mask({0, 1, 2, 3}), 0, 0);
  const int t_proj = b.emit(std::move(proj), std::move(name), {B, s, h}, tmap(-1, {0, 1, 4}));
  return lower_activation(b, t_proj, in, op_kind::dropout, drop);  // at drop 0: no op
}
}  // namespace detail

/// Multi-head self-attention with Heads heads on x[b, s, h]; Causal masks the
/// future; Dropout is the output dropout, AttnDropout the one on the attention
/// weights (0 drops the op / buffers).
template <index_t Heads, bool Causal = false, double Dropout = 0.1, double AttnDropout = 0.1>
struct attention : primitive_layer<attention<Heads, Causal, Dropout, AttnDropout>> {
  static_assert(Heads > 0, "tensoropt::attention<Heads>: Heads must be positive");
  static_assert(Dropout >= 0 && Dropout < 1 && AttnDropout >= 0 && AttnDropout < 1,
                "tensoropt::attention: dropout probabilities must be in [0, 1)");
  static constexpr bool params_ok = Heads > 0 && Dropout >= 0 && Dropout < 1 && AttnDropout >= 0 && AttnDropout < 1;
  static constexpr std::string_view kind_name = "attention";
  static constexpr bool is_composite = true;

  template <class S>
  static constexpr bool accepts = [] {
    if constexpr (Shape<S>) return S::rank == 3 && S::extents[2] % Heads == 0;
    else return false;
  }();
  template <class S>
  static consteval void diagnose() {
    if constexpr (!Shape<S> || S::rank != 3)
      static_assert(Shape<S> && S::rank == 3, "tensoropt::attention<Heads>: the input must be [batch, seq, hidden]");
    else
      static_assert(S::extents[2] % Heads == 0,
                    "tensoropt::attention<Heads>: the number of heads must divide the hidden size "
                    "(the input's last axis)");
  }
  template <class S>
  struct out_ {
    using type = S;
  };

  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_attention(b, x, detail::desc_v<S>, Heads, Causal, Dropout, AttnDropout);
  }
};

}  // namespace tensoropt
