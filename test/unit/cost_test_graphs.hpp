// Hand-built operator graphs for the cost tests (GPT layers with Korthikanti's op
// set, a small MLP), following model/graph.hpp's binding per-kind comments.
#pragma once
#include <tensoropt/model/graph.hpp>

namespace tensoropt::testing {

struct graph_builder {
  op_graph g;

  constexpr int tensor(std::string name, std::initializer_list<index_t> ext, bool param = false, int producer = -1,
                       bool integer = false) {
    tensor_info t;
    t.name = name;
    int r = 0;
    for (auto e : ext) t.extents[r++] = e;
    t.rank = r;
    t.parameter = param;
    t.producer = producer;
    t.integer = integer;
    g.tensors.push_back(t);
    return int(g.tensors.size()) - 1;
  }
  static constexpr tensor_map map(int t, std::initializer_list<int> dims) {
    tensor_map m;
    m.tensor = t;
    m.dim.fill(-1);
    int a = 0;
    for (auto d : dims) m.dim[a++] = std::int8_t(d);
    return m;
  }
  /// Adds an op whose output tensor has extents `out_ext` and axes following `out_dims`.
  constexpr int op(std::string name, op_kind k, std::vector<op_dim> dims, std::vector<tensor_map> ins,
                   std::vector<tensor_map> params, std::initializer_list<index_t> out_ext,
                   std::initializer_list<int> out_dims, double fwd, double bwd, std::vector<saved_buffer> saved,
                   int repeat_id = -1, int repeat_index = 0) {
    op_node o;
    o.name = name;
    o.kind = k;
    o.dims = std::move(dims);
    o.inputs = std::move(ins);
    o.params = std::move(params);
    const int id = int(g.ops.size());
    o.output = map(tensor(name + ".out", out_ext, false, id), out_dims);
    o.fwd_flops_per_point = fwd;
    o.bwd_flops_per_point = bwd;
    o.saved = std::move(saved);
    o.repeat_id = repeat_id;
    o.repeat_index = repeat_index;
    g.ops.push_back(std::move(o));
    return id;
  }
  constexpr int out(int op) const { return g.ops[op].output.tensor; }
};

constexpr std::uint32_t bits(std::initializer_list<int> d) {
  std::uint32_t m = 0;
  for (int i : d) m |= 1u << i;
  return m;
}

/// `layers` GPT layers (pre-LN, Korthikanti's op set: layer norm, qkv, attention
/// core with softmax dropout, proj, dropout, residual add; layer norm, fc1, gelu,
/// fc2, dropout, residual add) on an input of [b, s, h] features. Op names are
/// "layers.<i>.attn.qkv" etc.; each layer is one instance of repeat 0.
constexpr op_graph gpt_layers(index_t b, index_t s, index_t h, index_t a, int layers = 1) {
  graph_builder gb;
  gb.g.name = "gpt-layers";
  gb.g.batch = b;
  const index_t d = h / a, f = 4 * h;
  auto B = [&] { return op_dim{"b", b, true, true}; };
  auto S = [&] { return op_dim{"s", s, true, false}; };
  auto H = [&](bool split = true) { return op_dim{"h", h, split, false}; };
  const int in = gb.op("input", op_kind::input, {B(), S(), H()}, {}, {}, {b, s, h}, {0, 1, 2}, 0, 0, {});
  int x = gb.out(in);
  for (int l = 0; l < layers; ++l) {
    std::string num;
    for (int v = l;; v /= 10) {
      num.insert(num.begin(), char('0' + v % 10));
      if (v < 10) break;
    }
    const std::string p = "layers." + num + ".";
    auto ln = [&](std::string name, int xin) {
      const int gamma = gb.tensor(name + ".gamma", {h}, true), beta = gb.tensor(name + ".beta", {h}, true);
      return gb.op(name, op_kind::layer_norm, {B(), S(), H(false)}, {graph_builder::map(xin, {0, 1, 2})},
                   {graph_builder::map(gamma, {2}), graph_builder::map(beta, {2})}, {b, s, h}, {0, 1, 2}, 8, 16,
                   {{bits({0, 1, 2}), 1, 0, 0}}, 0, l);
    };
    const int ln1 = ln(p + "ln1", x);
    const int wqkv = gb.tensor(p + "attn.qkv.w", {h, 3, a, d}, true), bqkv = gb.tensor(p + "attn.qkv.b", {3, a, d}, true);
    const int qkv = gb.op(p + "attn.qkv", op_kind::linear,
                          {B(), S(), H(), {"three", 3, false, false}, {"heads", a, true, false}, {"d", d, false, false}},
                          {graph_builder::map(gb.out(ln1), {0, 1, 2})},
                          {graph_builder::map(wqkv, {2, 3, 4, 5}), graph_builder::map(bqkv, {3, 4, 5})}, {b, s, 3, a, d},
                          {0, 1, 3, 4, 5}, 2, 4, {{bits({0, 1, 2}), 1, 0, 0}}, 0, l);
    gb.g.ops[qkv].attr = {2, 1, 3, 1};
    const int att = gb.op(p + "attn.core", op_kind::attention,
                          {B(), {"heads", a, true, false}, {"sq", s, false, false}, {"sk", s, false, false},
                           {"d", d, false, false}},
                          {graph_builder::map(gb.out(qkv), {0, 2, -1, 1, 4})}, {}, {b, s, a, d}, {0, 2, 1, 4}, 4, 8,
                          {{bits({0, 1, 2, 4}), 3, 0, 0},   // q, k, v: 6sbh
                           {bits({0, 1, 2, 3}), 2, 0, -1},  // softmax output + dropout output: 4as^2b
                           {bits({0, 1, 2, 3}), 1, 1, -1}}, // dropout mask (1 byte): as^2b
                          0, l);
    gb.g.ops[att].attr = {1, 100000, 0, 0};
    const int wp = gb.tensor(p + "attn.proj.w", {a, d, h}, true), bp = gb.tensor(p + "attn.proj.b", {h}, true);
    const int proj = gb.op(p + "attn.proj", op_kind::linear,
                           {B(), S(), {"heads", a, true, false}, {"d", d, false, false}, H()},
                           {graph_builder::map(gb.out(att), {0, 1, 2, 3})},
                           {graph_builder::map(wp, {2, 3, 4}), graph_builder::map(bp, {4})}, {b, s, h}, {0, 1, 4}, 2, 4,
                           {{bits({0, 1, 2, 3}), 1, 0, 0}}, 0, l);
    gb.g.ops[proj].attr = {2, 2, 1, 1};
    auto dropout = [&](std::string name, int xin) {
      const int o = gb.op(name, op_kind::dropout, {B(), S(), H()}, {graph_builder::map(xin, {0, 1, 2})}, {}, {b, s, h},
                          {0, 1, 2}, 1, 1, {{bits({0, 1, 2}), 1, 1, -1}}, 0, l);
      gb.g.ops[o].attr = {0, 100000, 0, 0};
      return o;
    };
    auto add = [&](std::string name, int x1, int x2) {
      return gb.op(name, op_kind::add, {B(), S(), H()},
                   {graph_builder::map(x1, {0, 1, 2}), graph_builder::map(x2, {0, 1, 2})}, {}, {b, s, h}, {0, 1, 2}, 1,
                   0, {}, 0, l);
    };
    const int dr1 = dropout(p + "attn.dropout", gb.out(proj));
    const int add1 = add(p + "attn.residual", x, gb.out(dr1));
    const int ln2 = ln(p + "ln2", gb.out(add1));
    const int w1 = gb.tensor(p + "mlp.fc1.w", {h, f}, true), b1 = gb.tensor(p + "mlp.fc1.b", {f}, true);
    const int fc1 = gb.op(p + "mlp.fc1", op_kind::linear, {B(), S(), H(), {"f", f, true, false}},
                          {graph_builder::map(gb.out(ln2), {0, 1, 2})},
                          {graph_builder::map(w1, {2, 3}), graph_builder::map(b1, {3})}, {b, s, f}, {0, 1, 3}, 2, 4,
                          {{bits({0, 1, 2}), 1, 0, 0}}, 0, l);
    gb.g.ops[fc1].attr = {2, 1, 1, 1};
    const int ge = gb.op(p + "mlp.gelu", op_kind::gelu, {B(), S(), {"f", f, true, false}},
                         {graph_builder::map(gb.out(fc1), {0, 1, 2})}, {}, {b, s, f}, {0, 1, 2}, 8, 16,
                         {{bits({0, 1, 2}), 1, 0, 0}}, 0, l);
    const int w2 = gb.tensor(p + "mlp.fc2.w", {f, h}, true), b2 = gb.tensor(p + "mlp.fc2.b", {h}, true);
    const int fc2 = gb.op(p + "mlp.fc2", op_kind::linear, {B(), S(), {"f", f, true, false}, H()},
                          {graph_builder::map(gb.out(ge), {0, 1, 2})},
                          {graph_builder::map(w2, {2, 3}), graph_builder::map(b2, {3})}, {b, s, h}, {0, 1, 3}, 2, 4,
                          {{bits({0, 1, 2}), 1, 0, 0}}, 0, l);
    gb.g.ops[fc2].attr = {2, 1, 1, 1};
    const int dr2 = dropout(p + "mlp.dropout", gb.out(fc2));
    const int add2 = add(p + "mlp.residual", gb.out(add1), gb.out(dr2));
    x = gb.out(add2);
  }
  return gb.g;
}

/// An MLP: input [b, k0], then `widths.size()` linear+relu pairs.
constexpr op_graph mlp(index_t b, std::vector<index_t> widths) {
  graph_builder gb;
  gb.g.name = "mlp";
  gb.g.batch = b;
  const int in = gb.op("input", op_kind::input, {{"b", b, true, true}, {"h", widths[0], true, false}}, {}, {},
                       {b, widths[0]}, {0, 1}, 0, 0, {});
  int x = gb.out(in);
  for (std::size_t i = 1; i < widths.size(); ++i) {
    const std::string p = "fc" + std::string(1, char('0' + i));
    const int w = gb.tensor(p + ".w", {widths[i - 1], widths[i]}, true);
    const int l = gb.op(p, op_kind::linear,
                        {{"b", b, true, true}, {"k", widths[i - 1], true, false}, {"n", widths[i], true, false}},
                        {graph_builder::map(x, {0, 1})}, {graph_builder::map(w, {1, 2})}, {b, widths[i]}, {0, 2}, 2, 4,
                        {{bits({0, 1}), 1, 0, 0}});
    gb.g.ops[l].attr = {1, 1, 1, 0};
    const int r = gb.op(p + ".relu", op_kind::relu, {{"b", b, true, true}, {"n", widths[i], true, false}},
                        {graph_builder::map(gb.out(l), {0, 1})}, {}, {b, widths[i]}, {0, 1}, 1, 1,
                        {{bits({0, 1}), 1, 0, 0}});
    x = gb.out(r);
  }
  return gb.g;
}

}  // namespace tensoropt::testing
