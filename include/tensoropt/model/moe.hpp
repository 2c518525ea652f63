// Top-k gated mixture of experts (GShard): router, dispatch, per-expert FFN and
// combine, lowered to the four moe_* ops of graph.hpp.
//
// Token groups: each sequence is one group (g = the batch axis, s = its tokens), so
// the expert capacity is c = ceil(CapacityFactor * TopK * s / Experts). GShard/Alpa
// use groups of a fixed token count (2048 in Alpa's suite, i.e. two 1024-token
// sequences); the dispatched tensor [e, g, c, h] has the same size either way
// (TopK * CapacityFactor tokens per token), the dispatch/combine FLOPs scale with
// the group size and are therefore half of Alpa's for its suite.
#pragma once
#include "graph.hpp"
#include "layer.hpp"
#include "layers.hpp"
#include "lowering.hpp"

namespace tensoropt {

namespace detail {
TENSOROPT_NOINLINE constexpr int lower_moe(graph_builder& b, int x, const shape_desc& in, index_t experts, index_t ffn, index_t top_k,
                        index_t c) {
  const index_t G = in.extents[0], s = in.extents[1], h = in.extents[2];
  // router
  op_node gate;
  gate.kind = op_kind::moe_gate;
  gate.dims = {make_dim("g", G), make_dim("s", s), make_dim("e", experts), make_dim("h", h)};
  gate.attr = {top_k, 0, c, 0};
  gate.inputs.push_back(tmap(x, {0, 1, 3}));
  std::string name = b.op_name("gate");
  gate.params.push_back(b.param(name, "weight", {h, experts}, tmap(-1, {3, 2})));
  gate.fwd_flops_per_point = 2;
  gate.bwd_flops_per_point = 4;
  save(gate, dim_mask({0, 1, 3}), 0, 0);
  // the probabilities and the top-k mask over all experts (the softmax's backward
  // needs whole rows), whatever the split of e
  save(gate, dim_mask({0, 1}), 0, -1, 2.0 * double(experts));
  const int gates = b.emit(std::move(gate), std::move(name), {G, s, experts}, tmap(-1, {0, 1, 2}));
  // dispatch
  op_node disp;
  disp.kind = op_kind::moe_dispatch;
  disp.dims = {make_dim("g", G), make_dim("s", s), make_dim("e", experts), make_dim("c", c, false), make_dim("h", h)};
  disp.attr = {top_k, 0, c, 0};
  disp.inputs.push_back(tmap(x, {0, 1, 4}));
  disp.inputs.push_back(tmap(gates, {0, 1, 2}));
  disp.fwd_flops_per_point = 2;
  disp.bwd_flops_per_point = 4;
  save(disp, dim_mask({0, 1, 2}), 8, -1);  // the routes: a slot per (token, expert), int64
  const int routed = b.emit(std::move(disp), b.op_name("dispatch"), {experts, G, c, h}, tmap(-1, {2, 0, 3, 4}));
  // experts
  op_node ex;
  ex.kind = op_kind::moe_experts;
  ex.dims = {make_dim("e", experts), make_dim("g", G), make_dim("c", c, false), make_dim("h", h), make_dim("f", ffn)};
  ex.inputs.push_back(tmap(routed, {0, 1, 2, 3}));
  name = b.op_name("experts");
  ex.params.push_back(b.param(name, "w1", {experts, h, ffn}, tmap(-1, {0, 3, 4})));
  ex.params.push_back(b.param(name, "w2", {experts, ffn, h}, tmap(-1, {0, 4, 3})));
  ex.fwd_flops_per_point = 4;
  ex.bwd_flops_per_point = 8;
  save(ex, dim_mask({0, 1, 2, 3}), 0, 0);
  save(ex, dim_mask({0, 1, 2, 4}), 0, -1);  // gelu input; backward recomputes gelu from it
  const int expert_out = b.emit(std::move(ex), std::move(name), {experts, G, c, h}, tmap(-1, {0, 1, 2, 3}));
  // combine
  op_node comb;
  comb.kind = op_kind::moe_combine;
  comb.dims = {make_dim("g", G), make_dim("s", s), make_dim("e", experts), make_dim("c", c, false), make_dim("h", h)};
  comb.attr = {top_k, 0, c, 0};
  comb.inputs.push_back(tmap(expert_out, {2, 0, 3, 4}));
  comb.inputs.push_back(tmap(gates, {0, 1, 2}));
  comb.fwd_flops_per_point = 2;
  comb.bwd_flops_per_point = 4;
  save(comb, dim_mask({0, 2, 3, 4}), 0, 0);
  save(comb, dim_mask({0, 1, 2}), 0, 1);
  save(comb, dim_mask({0, 1, 2}), 8, -1);  // the routes, as dispatch
  return b.emit(std::move(comb), b.op_name("combine"), {G, s, h}, tmap(-1, {0, 1, 4}));
}
}  // namespace detail

/// GShard MoE FFN on x[g, s, h]: Experts experts of inner size Ffn (gelu), top-TopK
/// gating with capacity factor CapacityFactor. Output has the input's shape.
template <index_t Experts, index_t Ffn, index_t TopK = 2, double CapacityFactor = 1.0>
struct moe : primitive_layer<moe<Experts, Ffn, TopK, CapacityFactor>> {
  static_assert(Experts > 0 && Ffn > 0, "tensoropt::moe<Experts, Ffn>: sizes must be positive");
  static_assert(TopK >= 1 && TopK <= Experts, "tensoropt::moe<Experts, Ffn, TopK>: TopK must be in [1, Experts]");
  static_assert(CapacityFactor > 0, "tensoropt::moe: CapacityFactor must be positive");
  static constexpr bool params_ok = Experts > 0 && Ffn > 0 && TopK >= 1 && TopK <= Experts && CapacityFactor > 0;
  static constexpr std::string_view kind_name = "moe";
  static constexpr bool is_composite = true;

  template <class S>
  static constexpr bool accepts = [] {
    if constexpr (Shape<S>) return S::rank == 3;
    else return false;
  }();
  template <class S>
  static consteval void diagnose() {
    static_assert(Shape<S> && S::rank == 3, "tensoropt::moe<Experts, Ffn>: the input must be [groups, tokens, hidden]");
  }
  template <class S>
  struct out_ {
    using type = S;
  };
  /// Tokens each expert takes per group.
  static constexpr index_t capacity(index_t tokens) {
    const double c = CapacityFactor * double(TopK) * double(tokens) / double(Experts);
    const index_t ci = index_t(c);
    return ci < c ? ci + 1 : (ci < 1 ? 1 : ci);
  }

  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_moe(b, x, detail::desc_v<S>, Experts, Ffn, TopK, capacity(S::extents[1]));
  }
};

}  // namespace tensoropt
