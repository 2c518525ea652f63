// Lowering of each layer kind: dims, tensor maps, parameters, FLOPs and saved
// buffers against hand formulas; naming, repeat marks and with_batch.
#include <doctest/doctest.h>
#include <tensoropt/model/model.hpp>
#include <tensoropt/models/cnn.hpp>
#include <string>
#include <vector>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace model_layers_test_file {

namespace to = tensoropt;
using to::axis;
using to::ids;
using to::index_t;
using to::op_graph;
using to::op_kind;
using to::op_node;
using to::shape;

namespace {

template <class Input, class Body>
op_graph lower_one() {
  return to::lower<to::model<"t", Input, Body>>();
}

const op_node& find_op(const op_graph& g, std::string_view name) {
  for (auto& o : g.ops)
    if (o.name == name) return o;
  FAIL("no op named " << name);
  throw 0;
}

std::vector<std::string> dim_names(const op_node& o) {
  std::vector<std::string> n;
  for (auto& d : o.dims) n.emplace_back(d.name);
  return n;
}

std::vector<int> map_of(const to::tensor_map& m, int rank) {
  return std::vector<int>(m.dim.begin(), m.dim.begin() + rank);
}

/// Elements of a saved buffer of op o.
double saved_elems(const op_node& o, const to::saved_buffer& s) {
  double n = s.multiplier;
  for (std::size_t d = 0; d < o.dims.size(); ++d)
    if (s.dims >> d & 1u) n *= double(o.dims[d].extent);
  return n;
}

/// Bytes saved by op o at `act` bytes per activation element.
double saved_bytes(const op_node& o, int act) {
  double b = 0;
  for (auto& s : o.saved) b += saved_elems(o, s) * (s.elem_bytes == 0 ? act : s.elem_bytes);
  return b;
}

}  // namespace

TEST_CASE("linear: dims, maps, params, FLOPs and saved input") {
  constexpr index_t B = 8, S = 16, H = 64, F = 96;
  const auto g = lower_one<shape<axis<"b", B>, axis<"s", S>, axis<"h", H>>, to::named<"fc", to::linear<H, F>>>();
  REQUIRE(g.ops.size() == 2);
  CHECK(g.ops[0].kind == op_kind::input);
  CHECK(g.ops[0].attr[0] == 0);
  const auto& op = find_op(g, "fc");
  CHECK(op.kind == op_kind::linear);
  CHECK(dim_names(op) == std::vector<std::string>{"b", "s", "h", "f"});
  CHECK(op.dims[0].batch);
  CHECK_FALSE(op.dims[1].batch);
  CHECK(op.attr == std::array<std::int64_t, 4>{2, 1, 1, 1});
  CHECK(map_of(op.inputs[0], 3) == std::vector<int>{0, 1, 2});
  REQUIRE(op.params.size() == 2);
  const auto& w = g.tensors[op.params[0].tensor];
  CHECK(w.name == "fc.weight");
  CHECK(w.parameter);
  CHECK(w.size() == H * F);
  CHECK(map_of(op.params[0], 2) == std::vector<int>{2, 3});
  CHECK(g.tensors[op.params[1].tensor].size() == F);
  CHECK(map_of(op.params[1], 1) == std::vector<int>{3});
  CHECK(map_of(op.output, 3) == std::vector<int>{0, 1, 3});
  CHECK(g.tensors[op.output.tensor].size() == B * S * F);
  CHECK(g.tensors[op.output.tensor].producer == 1);
  CHECK(op.fwd_flops_per_point * op.points() == doctest::Approx(2.0 * B * S * H * F));
  CHECK(op.bwd_flops_per_point * op.points() == doctest::Approx(4.0 * B * S * H * F));
  CHECK(g.parameter_count() == H * F + F);
  REQUIRE(op.saved.size() == 1);
  CHECK(op.saved[0].input == 0);
  CHECK(saved_bytes(op, 2) == 2.0 * B * S * H);
}

TEST_CASE("linear over several trailing axes flattens them (VGG's first FC)") {
  const auto g = lower_one<shape<axis<"b", 2>, axis<"c", 8>, axis<"y", 3>, axis<"x", 3>>, to::linear<72, 10, "classes">>();
  const auto& op = g.ops[1];
  CHECK(dim_names(op) == std::vector<std::string>{"b", "c", "y", "x", "classes"});
  CHECK(op.attr[0] == 1);
  CHECK(op.attr[1] == 3);
  CHECK(g.tensors[op.params[0].tensor].rank == 4);
  CHECK(g.parameter_count() == 72 * 10 + 10);
  CHECK(op.fwd_flops_per_point * op.points() == doctest::Approx(2.0 * 2 * 72 * 10));
}

TEST_CASE("embedding with positions, tied head, loss and labels") {
  constexpr index_t V = 50, H = 16, B = 4, S = 8;
  const auto g = lower_one<ids<shape<axis<"b", B>, axis<"s", S>>>,
                           to::seq<to::named<"embed", to::embedding<V, H, true>>,
                                   to::named<"head", to::tied_linear<V, "embed.weight">>,
                                   to::named<"loss", to::softmax_cross_entropy<V>>>>();
  CHECK(g.ops[0].name == "tokens");
  CHECK(g.ops[0].attr[0] == 1);
  CHECK(g.tensors[g.ops[0].output.tensor].integer);
  const auto& e = find_op(g, "embed");
  CHECK(dim_names(e) == std::vector<std::string>{"b", "s", "v", "h"});
  CHECK(e.attr[0] == 1);
  REQUIRE(e.params.size() == 2);
  CHECK(map_of(e.params[0], 2) == std::vector<int>{2, 3});
  CHECK(map_of(e.params[1], 2) == std::vector<int>{1, 3});
  CHECK(g.tensors[e.params[1].tensor].size() == S * H);
  CHECK(map_of(e.output, 3) == std::vector<int>{0, 1, 3});
  const auto& h = find_op(g, "head");
  CHECK(h.attr[3] == 2);  // no bias, weight stored [out, contract]
  REQUIRE(h.params.size() == 1);
  CHECK(h.params[0].tensor == e.params[0].tensor);
  CHECK(map_of(h.params[0], 2) == std::vector<int>{3, 2});
  CHECK(g.parameter_count() == V * H + S * H);  // the head adds none
  const auto& labels = find_op(g, "labels");
  CHECK(labels.kind == op_kind::input);
  CHECK(g.tensors[labels.output.tensor].integer);
  const auto& loss = find_op(g, "loss");
  CHECK(loss.kind == op_kind::softmax_xent);
  CHECK(dim_names(loss) == std::vector<std::string>{"b", "s", "v"});
  REQUIRE(loss.inputs.size() == 2);
  CHECK(loss.inputs[1].tensor == labels.output.tensor);
  CHECK(g.tensors[loss.output.tensor].rank == 0);
  CHECK(map_of(loss.output, 1) == std::vector<int>{-1});
}

TEST_CASE("layer_norm, gelu, relu, dropout: elementwise dims and saved buffers") {
  using S = shape<axis<"b", 4>, axis<"s", 8>, axis<"h", 32>>;
  const auto g = lower_one<S, to::seq<to::layer_norm<32>, to::gelu, to::relu, to::dropout<0.25>>>();
  const auto& ln = find_op(g, "ln");
  CHECK_FALSE(ln.dims[2].splittable);
  CHECK(ln.dims[0].splittable);
  CHECK(g.parameter_count() == 64);
  CHECK(saved_bytes(ln, 2) == 2.0 * 4 * 8 * 32);
  CHECK(saved_bytes(find_op(g, "gelu"), 2) == 2.0 * 4 * 8 * 32);
  CHECK(find_op(g, "gelu").fwd_flops_per_point == 8);
  CHECK(saved_bytes(find_op(g, "relu"), 4) == 4.0 * 4 * 8 * 32);
  const auto& d = find_op(g, "drop");
  CHECK(d.attr[1] == 250000);
  CHECK(saved_bytes(d, 2) == 1.0 * 4 * 8 * 32);  // one-byte mask
}

TEST_CASE("dropout<0> lowers to no op, and its name goes to no other op") {
  using S = shape<axis<"b", 4>, axis<"s", 8>, axis<"h", 32>>;
  const auto g = lower_one<S, to::seq<to::gelu, to::named<"d", to::dropout<0.0>>, to::relu>>();
  int ops = 0;
  for (const auto& o : g.ops) {
    CHECK(o.kind != op_kind::dropout);
    CHECK(o.name != "d");
    ops += o.kind == op_kind::relu || o.kind == op_kind::gelu;
  }
  CHECK(ops == 2);
  CHECK(find_op(g, "relu").inputs[0].tensor == find_op(g, "gelu").output.tensor);
}

TEST_CASE("attention: four ops, Megatron dims, Korthikanti's saved bytes") {
  constexpr index_t B = 2, S = 16, H = 64, A = 4, D = H / A;
  const auto g = lower_one<shape<axis<"b", B>, axis<"s", S>, axis<"h", H>>, to::named<"attn", to::attention<A, true>>>();
  REQUIRE(g.ops.size() == 5);
  const auto& qkv = find_op(g, "attn.qkv");
  CHECK(dim_names(qkv) == std::vector<std::string>{"b", "s", "h", "three", "heads", "d"});
  CHECK_FALSE(qkv.dims[3].splittable);
  CHECK(qkv.attr == std::array<std::int64_t, 4>{2, 1, 3, 1});
  CHECK(qkv.fwd_flops_per_point * qkv.points() == doctest::Approx(2.0 * B * S * H * 3 * H));
  const auto& core = find_op(g, "attn.core");
  CHECK(core.kind == op_kind::attention);
  CHECK(dim_names(core) == std::vector<std::string>{"b", "heads", "sq", "sk", "d"});
  CHECK(core.attr[0] == 1);
  CHECK(core.attr[1] == 100000);
  CHECK(map_of(core.inputs[0], 5) == std::vector<int>{0, 2, -1, 1, 4});
  CHECK(map_of(core.output, 4) == std::vector<int>{0, 2, 1, 4});
  CHECK(core.fwd_flops_per_point * core.points() == doctest::Approx(4.0 * B * A * S * S * D));
  // q, k, v (6sbh) + softmax (2as^2b) + mask (as^2b) + dropout output (2as^2b)
  CHECK(saved_bytes(core, 2) == 6.0 * S * B * H + 5.0 * A * S * S * B);
  const auto& proj = find_op(g, "attn.proj");
  CHECK(dim_names(proj) == std::vector<std::string>{"b", "s", "heads", "d", "h"});
  CHECK(proj.attr == std::array<std::int64_t, 4>{2, 2, 1, 1});
  CHECK(find_op(g, "attn.drop").kind == op_kind::dropout);
  CHECK(g.parameter_count() == 4 * H * H + 4 * H);
}

TEST_CASE("mixture of experts: gate, dispatch, experts, combine") {
  constexpr index_t G = 2, S = 8, H = 16, E = 4, F = 32;
  const auto g = lower_one<shape<axis<"b", G>, axis<"s", S>, axis<"h", H>>, to::named<"moe", to::moe<E, F, 2>>>();
  REQUIRE(g.ops.size() == 5);
  const auto& gate = find_op(g, "moe.gate");
  CHECK(dim_names(gate) == std::vector<std::string>{"g", "s", "e", "h"});
  CHECK(gate.dims[0].batch);
  const index_t c = 2 * S / E;
  CHECK(gate.attr[0] == 2);
  CHECK(gate.attr[2] == c);
  const auto& disp = find_op(g, "moe.dispatch");
  CHECK(dim_names(disp) == std::vector<std::string>{"g", "s", "e", "c", "h"});
  CHECK(map_of(disp.output, 4) == std::vector<int>{2, 0, 3, 4});
  CHECK(g.tensors[disp.output.tensor].size() == E * G * c * H);
  const auto& ex = find_op(g, "moe.experts");
  CHECK(dim_names(ex) == std::vector<std::string>{"e", "g", "c", "h", "f"});
  CHECK(ex.fwd_flops_per_point * ex.points() == doctest::Approx(4.0 * E * G * c * H * F));
  const auto& comb = find_op(g, "moe.combine");
  CHECK(comb.inputs[1].tensor == gate.output.tensor);
  CHECK(g.tensors[comb.output.tensor].size() == G * S * H);
  CHECK(g.parameter_count() == H * E + 2 * E * H * F);
}

TEST_CASE("conv2d, pooling, batch_norm, global pooling") {
  using img = shape<axis<"b", 2>, axis<"c", 3>, axis<"y", 9>, axis<"x", 9>>;
  const auto g = lower_one<img, to::seq<to::conv2d_rect<3, 8, 3, 1, 2, 1, 0, true>, to::batch_norm<8>,
                                        to::max_pool<3, 2, 1>, to::avg_pool<2>, to::global_avg_pool>>();
  const auto& conv = find_op(g, "conv");
  CHECK(dim_names(conv) == std::vector<std::string>{"b", "cout", "cin", "oh", "ow", "kh", "kw"});
  // oh = (9 + 2 - 3) / 2 + 1 = 5, ow = (9 + 0 - 1) / 2 + 1 = 5
  CHECK(conv.dims[3].extent == 5);
  CHECK(conv.dims[4].extent == 5);
  CHECK(conv.attr == std::array<std::int64_t, 4>{2, 1, 0, 1});
  for (int d = 3; d < 7; ++d) CHECK_FALSE(conv.dims[d].splittable);
  CHECK(map_of(conv.inputs[0], 4) == std::vector<int>{0, 2, -1, -1});
  CHECK(map_of(conv.params[0], 4) == std::vector<int>{1, 2, 5, 6});
  CHECK(conv.fwd_flops_per_point * conv.points() == doctest::Approx(2.0 * 2 * 8 * 3 * 5 * 5 * 3 * 1));
  CHECK(saved_bytes(conv, 4) == 4.0 * 2 * 3 * 9 * 9);
  const auto& bn = find_op(g, "bn");
  CHECK(dim_names(bn) == std::vector<std::string>{"b", "c", "y", "x"});
  const auto& mp = find_op(g, "max_pool");
  CHECK(mp.attr == std::array<std::int64_t, 4>{2, 1, 3, 0});
  CHECK(mp.dims[2].extent == 3);  // (5 + 2 - 3) / 2 + 1
  CHECK(saved_bytes(mp, 4) == 8.0 * 2 * 8 * 3 * 3);  // an int64 argmax per output element
  CHECK(find_op(g, "avg_pool").saved.empty());
  const auto& gp = find_op(g, "pool");
  CHECK(g.tensors[gp.output.tensor].rank == 2);
  CHECK(g.tensors[gp.output.tensor].size() == 2 * 8);
  CHECK(g.parameter_count() == 8 * 3 * 3 * 1 + 8 + 2 * 8);
}

TEST_CASE("residual and branches: add and concat ops, branch scopes") {
  using img = shape<axis<"b", 2>, axis<"c", 4>, axis<"y", 8>, axis<"x", 8>>;
  const auto g = lower_one<img, to::seq<to::residual<to::conv2d<4, 4, 3, 1, 1>, "skip">,
                                        to::named<"mix", to::branches<to::merge::concat<"c">, to::conv2d<4, 2, 1>,
                                                                      to::named<"wide", to::conv2d<4, 6, 1>>>>>>();
  const auto& add = find_op(g, "skip");
  CHECK(add.kind == op_kind::add);
  REQUIRE(add.inputs.size() == 2);
  CHECK(add.inputs[0].tensor == g.ops[0].output.tensor);  // x first, then body(x)
  CHECK(add.inputs[1].tensor == find_op(g, "conv").output.tensor);
  CHECK(add.saved.empty());
  find_op(g, "mix.0.conv");
  find_op(g, "mix.wide");
  const auto& cat = find_op(g, "mix.concat");
  CHECK(cat.kind == op_kind::concat);
  CHECK(cat.attr[0] == 1);
  CHECK_FALSE(cat.dims[1].splittable);
  CHECK(cat.dims[1].extent == 8);
  CHECK(map_of(cat.inputs[1], 4) == std::vector<int>{0, -1, 2, 3});
  CHECK(g.edges().size() == g.ops.size() - 1 + 2);  // every op reads one input, add and concat two
}

TEST_CASE("repeat marks copies, unique names, and with_batch scales batch dims") {
  using bh = shape<axis<"b", 8>, axis<"h", 16>>;
  const auto g = lower_one<bh, to::seq<to::relu, to::relu, to::named<"blocks", to::repeat<to::residual<to::linear<16, 16>>, 3>>>>();
  find_op(g, "relu");
  find_op(g, "relu_1");
  for (int i = 0; i < 3; ++i) {
    const auto& fc = find_op(g, "blocks." + std::to_string(i) + ".linear");
    CHECK(fc.repeat_id == 0);
    CHECK(fc.repeat_index == i);
  }
  CHECK(find_op(g, "relu").repeat_id == -1);
  const auto half = to::with_batch(g, 2);
  CHECK(half.batch == 2);
  const auto& fc = find_op(half, "blocks.1.linear");
  CHECK(fc.dims[0].extent == 2);
  CHECK(fc.dims[1].extent == 16);
  CHECK(half.tensors[fc.output.tensor].extents[0] == 2);
  CHECK(half.fwd_flops() == doctest::Approx(g.fwd_flops() / 4));
  CHECK(half.parameter_count() == g.parameter_count());
  CHECK_THROWS_AS(to::with_batch(g, 3), to::invalid_argument);
}
}  // namespace model_layers_test_file
