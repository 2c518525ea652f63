// GPT lowering against the closed forms: saved activations per layer (Korthikanti
// et al.), full-recompute inputs, FLOPs (Narayanan et al.), parameter counts of the
// GPT-3 suite and Megatron table, op names, constexpr lowering, with_batch.
#include <doctest/doctest.h>
#include <tensoropt/models/gpt.hpp>
#include <chrono>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace model_gpt_test_file {

namespace to = tensoropt;
using to::index_t;
using to::op_graph;
using to::op_kind;
using to::op_node;

namespace {

double saved_bytes(const op_node& o, int act) {
  double total = 0;
  for (auto& s : o.saved) {
    double n = s.multiplier;
    for (std::size_t d = 0; d < o.dims.size(); ++d)
      if (s.dims >> d & 1u) n *= double(o.dims[d].extent);
    total += n * (s.elem_bytes == 0 ? act : s.elem_bytes);
  }
  return total;
}

std::vector<const op_node*> layer_ops(const op_graph& g, int layer) {
  std::vector<const op_node*> ops;
  for (auto& o : g.ops)
    if (o.repeat_id == 0 && o.repeat_index == layer) ops.push_back(&o);
  return ops;
}

/// "gpt3-1.3b" -> 1.3e9, "gpt3-125m" -> 1.25e8, "megatron-1t" -> 1e12.
double nominal_size(std::string_view name) {
  const auto dash = name.rfind('-');
  const std::string num(name.substr(dash + 1, name.size() - dash - 2));
  const char unit = name.back();
  return std::stod(num) * (unit == 'm' ? 1e6 : unit == 'b' ? 1e9 : 1e12);
}

template <index_t L, index_t H, index_t A, index_t S, index_t V, index_t B>
using gpt_of = to::models::gpt<{.layers = L, .hidden = H, .heads = A, .seq = S, .vocab = V, .batch = B}>;

/// Korthikanti et al.: s b h (34 + 5 a s / h) bytes per layer at 2-byte activations.
double korthikanti(double s, double b, double h, double a) { return s * b * h * (34 + 5 * a * s / h); }

}  // namespace

TEST_CASE("saved activations of one GPT layer equal Korthikanti et al.'s 34sbh + 5as^2b") {
  auto check = [](const op_graph& g, double s, double b, double h, double a) {
    for (int layer : {0, 1}) {
      double bytes = 0;
      for (auto* o : layer_ops(g, layer)) bytes += saved_bytes(*o, 2);
      CHECK(bytes == korthikanti(s, b, h, a));
    }
  };
  check(to::lower<gpt_of<2, 64, 4, 16, 128, 8>>(), 16, 8, 64, 4);
  check(to::lower<gpt_of<3, 96, 12, 32, 100, 2>>(), 32, 2, 96, 12);
  // gpt3-1.3b at micro-batch 1: 1024 * 2048 * (34 + 5 * 32 * 1024 / 2048) bytes
  check(to::with_batch(to::lower<to::models::gpt3_1_3b>(), 1), 1024, 1, 2048, 32);
  // megatron-1t at micro-batch 1 (seq 2048, 160 heads)
  check(to::with_batch(to::lower<to::models::megatron_1t>(), 1), 2048, 1, 25600, 160);
}

TEST_CASE("full recomputation: a layer's only outside input is x[b, s, h] = 2sbh bytes") {
  const auto g = to::lower<gpt_of<2, 64, 4, 16, 128, 8>>();
  const double s = 16, b = 8, h = 64;
  const auto ops = layer_ops(g, 1);
  std::set<int> inside, outside;
  for (auto* o : ops) inside.insert(o->output.tensor);
  double per_op_inputs = 0, per_op_saved_inputs = 0;
  for (auto* o : ops) {
    for (auto& m : o->inputs) {
      if (!inside.count(m.tensor)) outside.insert(m.tensor);
      per_op_inputs += double(g.tensors[m.tensor].size()) * 2;
    }
    for (auto& sb : o->saved)
      if (sb.input >= 0) per_op_saved_inputs += double(g.tensors[o->inputs[sb.input].tensor].size()) * 2;
  }
  REQUIRE(outside.size() == 1);
  CHECK(double(g.tensors[*outside.begin()].size()) * 2 == 2 * s * b * h);  // Korthikanti's 2sbh
  // Recompute per op (every op keeps all its inputs) keeps far more than 2sbh:
  // ln1 2 + qkv 2 + core 6 + proj 2 + drop 2 + add1 4 + ln2 2 + fc1 2 + act 8 + fc2 8 + drop 2 + add2 4 = 44 sbh.
  CHECK(per_op_inputs == 44 * s * b * h);
  // Counting only inputs that are also saved buffers: ln1, qkv, core, proj, ln2, fc1, act, fc2 = 32 sbh.
  CHECK(per_op_saved_inputs == 32 * s * b * h);
}

TEST_CASE("GPT forward FLOPs of linears and attention: 24bslh^2 (1 + s/6h) + 2bshv") {
  auto check = [](const op_graph& g, double L, double h, double s, double v, double b) {
    double f = 0;
    for (auto& o : g.ops)
      if (o.kind == op_kind::linear || o.kind == op_kind::attention) f += o.fwd_flops_per_point * o.points();
    CHECK(f == doctest::Approx(24 * b * s * L * h * h * (1 + s / (6 * h)) + 2 * b * s * h * v).epsilon(1e-12));
  };
  check(to::lower<gpt_of<2, 64, 4, 16, 128, 8>>(), 2, 64, 16, 128, 8);
  check(to::lower<to::models::gpt3_39b>(), 48, 8192, 1024, 51200, 1024);
}

TEST_CASE("parameter counts of every GPT in the zoo are within 3 % of their names") {
  namespace m = to::models;
  int checked = 0;
  auto check = [&]<class M>() {
    const double params = to::lower<M>().parameter_count(), nominal = nominal_size(M::name);
    INFO(M::name << ": " << params << " vs " << nominal);
    CHECK(std::fabs(params / nominal - 1) < 0.03);
    ++checked;
  };
  [&]<class... Ms>(std::tuple<Ms...>*) { (check.template operator()<Ms>(), ...); }(
      static_cast<std::tuple<m::gpt3_125m, m::gpt3_350m, m::gpt3_760m, m::gpt3_1_3b, m::gpt3_2_6b, m::gpt3_6_7b,
                             m::gpt3_15b, m::gpt3_39b, m::megatron_1_7b, m::megatron_18_4b, m::megatron_39_1b,
                             m::megatron_145_6b, m::megatron_1t>*>(nullptr));
  CHECK(checked == 13);
  // closed form: 12Lh^2 + 13Lh + vh + sh + 2h
  const double L = 24, h = 2048, v = 51200, s = 1024;
  CHECK(to::lower<to::models::gpt3_1_3b>().parameter_count() == 12 * L * h * h + 13 * L * h + v * h + s * h + 2 * h);
}

TEST_CASE("op names, dims and tied head follow the binding conventions") {
  const auto g = to::lower<to::models::gpt3_1_3b>();
  CHECK(g.name == "gpt3-1.3b");
  CHECK(g.batch == 1024);
  std::vector<std::string> names;
  for (auto* o : layer_ops(g, 3)) names.push_back(o->name);
  CHECK(names == std::vector<std::string>{"layers.3.ln1", "layers.3.attn.qkv", "layers.3.attn.core",
                                          "layers.3.attn.proj", "layers.3.attn.drop", "layers.3.add1",
                                          "layers.3.ln2", "layers.3.mlp.fc1", "layers.3.mlp.act",
                                          "layers.3.mlp.fc2", "layers.3.mlp.drop", "layers.3.add2"});
  CHECK(g.ops.front().name == "tokens");
  CHECK(g.ops[1].name == "embed");
  const auto n = g.ops.size();
  CHECK(g.ops[n - 4].name == "ln_f");
  CHECK(g.ops[n - 3].name == "head");
  CHECK(g.ops[n - 2].name == "labels");
  CHECK(g.ops[n - 1].name == "loss");
  CHECK(g.ops[n - 3].params[0].tensor == g.ops[1].params[0].tensor);
  const auto& fc1 = g.ops[2 + 3 * 12 + 7];
  CHECK(fc1.name == "layers.3.mlp.fc1");
  CHECK(fc1.dims[fc1.dim_index("f")].extent == 4 * 2048);
  CHECK(fc1.dims[fc1.dim_index("b")].batch);
  CHECK(g.ops[2 + 3 * 12 + 2].attr[0] == 1);  // causal
  std::set<std::string> op_names, tensor_names;
  for (auto& o : g.ops) op_names.insert(o.name);
  for (auto& t : g.tensors) tensor_names.insert(t.name);
  CHECK(op_names.size() == g.ops.size());
  CHECK(tensor_names.size() == g.tensors.size());
}

using tiny = gpt_of<2, 64, 4, 16, 128, 8>;
static_assert(to::lower<tiny>().ops.size() == 30);
static_assert(to::lower<tiny>().fwd_flops() > 24.0 * 8 * 16 * 2 * 64 * 64);

TEST_CASE("lower<> is a constant expression for a small GPT") {
  constexpr auto ops = to::lower<tiny>().ops.size();
  constexpr double params = to::lower<tiny>().parameter_count();
  CHECK(ops == 30);
  CHECK(params == to::lower<tiny>().parameter_count());
}

TEST_CASE("with_batch divides activations and FLOPs, keeps parameters") {
  const auto g = to::lower<to::models::gpt3_350m>();
  const auto m = to::with_batch(g, 8);
  CHECK(m.batch == 8);
  CHECK(m.parameter_count() == g.parameter_count());
  CHECK(m.fwd_flops() == doctest::Approx(g.fwd_flops() / 128));
  double sg = 0, sm = 0;
  for (auto& o : g.ops) sg += saved_bytes(o, 2);
  for (auto& o : m.ops) sm += saved_bytes(o, 2);
  CHECK(sm == doctest::Approx(sg / 128));
  CHECK(m.tensors[m.ops[0].output.tensor].extents[0] == 8);
  CHECK_THROWS_AS(to::with_batch(g, 1000), to::invalid_argument);
}

TEST_CASE("lowering megatron-1t takes well under a second") {
  const auto t0 = std::chrono::steady_clock::now();
  const auto g = to::lower<to::models::megatron_1t>();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("megatron-1t: " << g.ops.size() << " ops lowered in " << s * 1e3 << " ms");
  CHECK(g.ops.size() == 2 + 128 * 12 + 4);
  CHECK(s < 0.5);
}
}  // namespace model_gpt_test_file
