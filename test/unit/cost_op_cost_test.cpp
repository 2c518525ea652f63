// cost/op_cost: Korthikanti's activation formulas under tensor / sequence parallelism
// and recomputation, 16 bytes of state per parameter, the roofline, gradient sync,
// micro-batches, and Megatron's per-layer communication.
#include <tensoropt/cost/op_cost.hpp>
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/strategy.hpp>
#include <doctest/doctest.h>
#include "cost_test_graphs.hpp"

using namespace tensoropt;

namespace {
constexpr index_t S = 64, B = 2, H = 64, A = 8;
using small_gpt = models::gpt<{.layers = 2, .hidden = H, .heads = A, .seq = S, .vocab = 256, .batch = B}>;

/// Saved-activation bytes of the ops named "layers.<l>.*": node activations plus
/// the recompute checkpoints of the edges into them.
double layer_activations(const op_graph& g, const std::vector<op_config>& cfg, const cluster& cl, int layer) {
  const std::string prefix = "layers." + std::to_string(layer) + ".";
  auto in_layer = [&](int i) { return g.ops[i].name.rfind(prefix, 0) == 0; };
  const auto facts = analyze(g);
  double m = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (in_layer(int(i))) m += cost_op(g, int(i), cfg[i], cl, {}, facts[i]).activations.value;
  for (auto& e : g.edges())
    if (in_layer(e.to)) m += edge_memory(g, e, cfg[e.from], cfg[e.to]).value;
  return m;
}

/// Sum of edge times of the edges into layer `layer`'s ops.
double layer_edge_time(const op_graph& g, const std::vector<op_config>& cfg, const cluster& cl, int layer) {
  const std::string prefix = "layers." + std::to_string(layer) + ".";
  double t = 0;
  for (auto& e : g.edges())
    if (g.ops[e.to].name.rfind(prefix, 0) == 0) t += edge_time(g, e, cfg[e.from], cfg[e.to], cl).value;
  return t;
}

strategy megatron(index_t t, bool sp, bool rc = false) {
  strategy s;
  s.k = strategy::kind::megatron;
  s.tensor_parallel = t;
  s.sequence_parallel = sp;
  s.recompute = rc;
  return s;
}

void check_korthikanti(const op_graph& g, int layer) {
  const double s = S, b = B, h = H, a = A;
  for (index_t t : {1, 2, 4, 8}) {
    CAPTURE(t);
    const cluster cl(device_mesh(1, t), gpus::a100_80gb);
    const double tp = s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t));
    CHECK(layer_activations(g, configs_of(megatron(t, false), g, cl.mesh), cl, layer) == doctest::Approx(tp));
    // Sequence parallel: Korthikanti's s*b*h*(34 + 5as/h)/t, except that the
    // column-parallel qkv and fc1 keep their all-gathered input (2sbh each, not
    // 2sbh/t): s*b*h*(4 + 30/t + 5as/(ht)). Equal at t = 1.
    const double sp = s * b * h * (4 + 30.0 / t + 5 * a * s / (h * t));
    CHECK(layer_activations(g, configs_of(megatron(t, true), g, cl.mesh), cl, layer) == doctest::Approx(sp));
    if (t == 1) CHECK(sp == doctest::Approx(s * b * h * (34 + 5 * a * s / h)));
    // Full recomputation: Korthikanti keeps the layer input, 2sbh. Per-op
    // recomputation keeps the layer input (for ln1) and the mid-layer residual
    // (add1's output, for ln2: the add saves nothing, so it is not recomputed):
    // 4sbh, or 4sbh/t under sequence parallelism.
    CHECK(layer_activations(g, configs_of(megatron(t, false, true), g, cl.mesh), cl, layer) ==
          doctest::Approx(4 * s * b * h));
    CHECK(layer_activations(g, configs_of(megatron(t, true, true), g, cl.mesh), cl, layer) ==
          doctest::Approx(4 * s * b * h / t));
  }
}
}  // namespace

TEST_CASE("Korthikanti: a hand-built GPT layer") {
  check_korthikanti(testing::gpt_layers(B, S, H, A, 2), 1);
}

TEST_CASE("Korthikanti: the zoo's GPT layer") {
  const op_graph g = lower<small_gpt>();
  check_korthikanti(g, 0);
  check_korthikanti(g, 1);
}

TEST_CASE("parameters + gradients + Adam: 16 bytes per parameter; sharding divides grads and state") {
  const op_graph g = lower<small_gpt>();
  for (const precision& p : {precisions::bf16_mixed, precisions::fp32}) {
    const cluster one(device_mesh(1, 1), gpus::h100_80gb);
    const auto facts = analyze(g);
    double state = 0;
    for (std::size_t i = 0; i < g.ops.size(); ++i)
      state += cost_op(g, int(i), op_config{}, one, {p, 1}, facts[i]).param_state.value;
    CHECK(state == doctest::Approx(16 * g.parameter_count()));
    // data parallel over 2 with sharded optimizer state: weights whole, the rest / 2
    const cluster two(device_mesh(1, 2), gpus::h100_80gb);
    strategy dp;
    dp.shard_optimizer = true;
    const auto cfg = configs_of(dp, g, two.mesh);
    double sharded = 0;
    for (std::size_t i = 0; i < g.ops.size(); ++i)
      sharded += cost_op(g, int(i), cfg[i], two, {p, 1}, facts[i]).param_state.value;
    CHECK(sharded ==
          doctest::Approx(g.parameter_count() * (p.weight_bytes + (p.grad_bytes + p.optimizer_bytes) / 2.0)));
  }
}

TEST_CASE("op time: roofline, launch overhead, gradient sync, micro-batches") {
  const op_graph g = testing::mlp(64, {1024, 4096});
  const op_node& fc = g.ops[1];
  const cluster one(device_mesh(1, 1), gpus::a100_80gb);
  const device& d = one.gpu_spec;
  const double F = 2.0 * 64 * 1024 * 4096;
  const double bytes_moved = 2.0 * (64 * 1024 + 1024 * 4096 + 64 * 4096);
  auto kernel = [&](double f, double by) {
    return std::max(f / (d.peak_half.value * d.gemm_efficiency(f)), by / (d.memory_bw.value * d.memory_efficiency)) +
           d.launch_overhead.value;
  };
  const op_cost c1 = cost_op(g, 1, op_config{}, one);
  CHECK(c1.compute.value == doctest::Approx(kernel(F, bytes_moved) + kernel(2 * F, 2 * bytes_moved)));
  CHECK(c1.grad_sync.value == 0);
  op_config rc;
  rc.recompute = true;
  CHECK(cost_op(g, 1, rc, one).recompute.value == doctest::Approx(kernel(F, bytes_moved)));
  CHECK(cost_op(g, 1, rc, one).activations.value == 0);
  CHECK(c1.activations.value == 2.0 * 64 * 1024);
  // data parallel over 8: grads all-reduced once per iteration, compute x k
  const cluster eight(device_mesh(1, 8), gpus::a100_80gb);
  op_config dp;
  dp.degree[1][0] = 8;
  const op_cost c8 = cost_op(g, 1, dp, eight);
  CHECK(c8.grad_sync.value == doctest::Approx(all_reduce({{1, 8}}, bytes(2.0 * 1024 * 4096), eight).value));
  dp.shard_optimizer = true;
  CHECK(cost_op(g, 1, dp, eight).grad_sync.value ==
        doctest::Approx(reduce_scatter({{1, 8}}, bytes(2.0 * 1024 * 4096), eight).value +
                        all_gather({{1, 8}}, bytes(2.0 * 1024 * 4096), eight).value));
  dp.shard_optimizer = false;
  const op_graph half = with_batch(g, 32);
  const op_cost k2 = cost_op(half, 1, dp, eight, {precisions::bf16_mixed, 2});
  CHECK(k2.grad_sync.value == doctest::Approx(c8.grad_sync.value));
  CHECK(k2.activations.value == doctest::Approx(c8.activations.value / 2));
  CHECK(k2.compute.value > c8.compute.value * 0.99);  // same work, smaller GEMMs
  (void)fc;
}

TEST_CASE("Megatron's per-layer communication: 4 all-reduces of 2sbh, or 4 all-gathers + 4 reduce-scatters") {
  const op_graph g = lower<small_gpt>();
  for (index_t t : {2, 4, 8}) {
    CAPTURE(t);
    const cluster cl(device_mesh(1, t), gpus::a100_80gb);
    const bytes act(2.0 * S * B * H);
    CHECK(layer_edge_time(g, configs_of(megatron(t, false), g, cl.mesh), cl, 1) ==
          doctest::Approx(4 * all_reduce({{1, t}}, act, cl).value));
    CHECK(layer_edge_time(g, configs_of(megatron(t, true), g, cl.mesh), cl, 1) ==
          doctest::Approx(4 * all_gather({{1, t}}, act, cl).value + 4 * reduce_scatter({{1, t}}, act, cl).value));
  }
}

TEST_CASE("op cost is constexpr") {
  constexpr double m = [] {
    const op_graph g = testing::mlp(8, {16, 16});
    return cost_op(g, 1, op_config{}, cluster(device_mesh(1, 1), gpus::v100_16gb)).memory().value;
  }();
  static_assert(m == 16.0 * 16 * 16 + 2.0 * 8 * 16);
  CHECK(m > 0);
}

TEST_CASE("own collectives: synchronized batch norm, vocab-parallel loss, the loss reduction") {
  testing::graph_builder gb;
  gb.g.batch = 8;
  const index_t b = 8, c = 64, y = 16, x = 16, v = 32;
  const int in = gb.op("input", op_kind::input, {{"b", b, true, true}, {"c", c}, {"y", y}, {"x", x}}, {}, {},
                       {b, c, y, x}, {0, 1, 2, 3}, 0, 0, {});
  const int gamma = gb.tensor("bn.gamma", {c}, true), beta = gb.tensor("bn.beta", {c}, true);
  const int bn = gb.op("bn", op_kind::batch_norm, {{"b", b, true, true}, {"c", c}, {"y", y}, {"x", x}},
                       {testing::graph_builder::map(gb.out(in), {0, 1, 2, 3})},
                       {testing::graph_builder::map(gamma, {1}), testing::graph_builder::map(beta, {1})},
                       {b, c, y, x}, {0, 1, 2, 3}, 8, 16, {{testing::bits({0, 1, 2, 3}), 1, 0, 0}});
  const int logits = gb.tensor("logits", {b, v}, false, 0);
  const int labels = gb.tensor("labels", {b}, false, 0, true);
  const int loss = gb.op("loss", op_kind::softmax_xent, {{"b", b, true, true}, {"v", v}},
                         {testing::graph_builder::map(logits, {0, 1}), testing::graph_builder::map(labels, {0})}, {},
                         {}, {}, 4, 4, {});
  const op_graph& g = gb.g;
  const cluster cl(device_mesh(2, 4), gpus::a100_80gb);
  op_config split_b;  // b over all 8 devices: statistics over b are all-reduced over 8
  split_b.degree[0][0] = 2;
  split_b.degree[1][0] = 4;
  const double ch = 2.0 * 4 * c;  // two floats per channel
  CHECK(cost_op(g, bn, split_b, cl).collectives.value == doctest::Approx(2 * all_reduce({{2, 4}}, bytes(ch), cl).value));
  op_config split_c;  // channels split: statistics stay local
  split_c.degree[1][1] = 4;
  CHECK(cost_op(g, bn, split_c, cl).collectives.value == 0);
  // the loss: v split by 4 all-reduces 2 floats per local sample over v's 4 devices; its
  // output (read by no op) is partial over b and v and is all-reduced in place
  op_config lv;
  lv.degree[0][0] = 2;
  lv.degree[1][1] = 4;
  const double expect = all_reduce({{1, 4}}, bytes(2.0 * 4 * b / 2), cl).value + all_reduce({{2, 4}}, bytes(4), cl).value;
  CHECK(cost_op(g, loss, lv, cl).collectives.value == doctest::Approx(expect));
  CHECK(cost_op(g, loss, op_config{}, cl).collectives.value == 0);
}

TEST_CASE("recompute working set: a recomputed op of a repeat is charged its saved buffers / repeat count") {
  const op_graph g = lower<small_gpt>();
  const auto facts = analyze(g);
  const cluster one(device_mesh(1, 1), gpus::a100_80gb);
  op_config plain, rc;
  rc.recompute = true;
  int checked = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    CAPTURE(g.ops[i].name);
    const auto keep = cost_op(g, int(i), plain, one, {}, facts[i]);
    const auto re = cost_op(g, int(i), rc, one, {}, facts[i]);
    CHECK(re.activations.value == 0);
    CHECK(keep.recompute_working.value == 0);
    if (g.ops[i].repeat_id >= 0) {
      CHECK(facts[i].repeats == 2);
      CHECK(re.recompute_working.value == doctest::Approx(keep.activations.value / 2));
      checked += keep.activations.value > 0;
    } else {
      CHECK(facts[i].repeats == 0);
      CHECK(re.recompute_working.value == 0);
    }
    CHECK(re.memory().value == doctest::Approx(re.param_state.value + re.recompute_working.value));
  }
  CHECK(checked > 5);
}
