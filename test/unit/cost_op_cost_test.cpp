// cost/op_cost: Korthikanti's activation formulas under tensor / sequence parallelism
// and recomputation, 16 bytes of state per parameter, the roofline, gradient sync,
// micro-batches, and Megatron's per-layer communication.
#include <tensoropt/cost/op_cost.hpp>
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/strategy.hpp>
#include <doctest/doctest.h>
#include "cost_test_graphs.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace cost_op_cost_test_file {

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

/// Selective recomputation: recompute only the attention cores.
std::vector<op_config> selective(std::vector<op_config> cfg, const op_graph& g) {
  for (std::size_t i = 0; i < g.ops.size(); ++i) cfg[i].recompute = g.ops[i].kind == op_kind::attention;
  return cfg;
}

void check_korthikanti(const op_graph& g, int layer) {
  const double s = S, b = B, h = H, a = A;
  for (index_t t : {1, 2, 4, 8}) {
    CAPTURE(t);
    const cluster cl(device_mesh(1, t), gpus::a100_80gb);
    const double tp = s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t));
    CHECK(layer_activations(g, configs_of(megatron(t, false), g, cl.mesh), cl, layer) == doctest::Approx(tp));
    // Sequence parallel: Korthikanti's s*b*h*(34 + 5as/h)/t exactly (qkv and fc1
    // keep the sequence shard of their input and re-gather it in backward).
    const double sp = s * b * h * (34 + 5 * a * s / h) / t;
    CHECK(layer_activations(g, configs_of(megatron(t, true), g, cl.mesh), cl, layer) == doctest::Approx(sp));
    // Selective recomputation (the attention core): the 5as^2b/t term goes.
    CHECK(layer_activations(g, selective(configs_of(megatron(t, false), g, cl.mesh), g), cl, layer) ==
          doctest::Approx(s * b * h * (10 + 24.0 / t)));
    CHECK(layer_activations(g, selective(configs_of(megatron(t, true), g, cl.mesh), g), cl, layer) ==
          doctest::Approx(s * b * h * 34 / t));
    // Full recomputation: the layer input only, 2sbh (2sbh/t under sequence
    // parallelism): ln1 and the residual add share one checkpoint, and the mid-layer
    // residual is rebuilt by recomputing the add.
    CHECK(layer_activations(g, configs_of(megatron(t, false, true), g, cl.mesh), cl, layer) ==
          doctest::Approx(2 * s * b * h));
    CHECK(layer_activations(g, configs_of(megatron(t, true, true), g, cl.mesh), cl, layer) ==
          doctest::Approx(2 * s * b * h / t));
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
  const op_graph g = lower<models::gpt<{.layers = 2, .hidden = H, .heads = A, .seq = S, .vocab = 256, .batch = 8}>>();
  for (const precision& p : {precisions::bf16_mixed, precisions::fp32}) {
    const cluster one(device_mesh(1, 1), gpus::h100_80gb);
    const auto facts = analyze(g);
    double state = 0;
    for (std::size_t i = 0; i < g.ops.size(); ++i)
      state += cost_op(g, int(i), op_config{}, one, {p, 1}, facts[i]).param_state.value;
    CHECK(state == doctest::Approx(16 * g.parameter_count()));
    // data parallel over Nd with sharded optimizer state (ZeRO-2): weights whole, the
    // rest / Nd; for bf16-mixed Adam that is 2P + 14P/Nd (Rajbhandari et al., 2020)
    for (index_t nd : {2, 4, 8}) {
      CAPTURE(nd);
      const cluster many(device_mesh(1, nd), gpus::h100_80gb);
      strategy dp;
      dp.shard_optimizer = true;
      const auto cfg = configs_of(dp, g, many.mesh);
      double sharded = 0;
      for (std::size_t i = 0; i < g.ops.size(); ++i)
        sharded += cost_op(g, int(i), cfg[i], many, {p, 1}, facts[i]).param_state.value;
      const double P = g.parameter_count();
      CHECK(sharded == doctest::Approx(P * (p.weight_bytes + (p.grad_bytes + p.optimizer_bytes) / double(nd))));
      if (p == precisions::bf16_mixed) CHECK(sharded == doctest::Approx(2 * P + 14 * P / double(nd)));
    }
  }
}

TEST_CASE("optimizer update: 28 bytes per element of the local optimizer shard, once per iteration") {
  const op_graph g = testing::mlp(64, {1024, 4096});
  const cluster one(device_mesh(1, 1), gpus::a100_80gb);
  const device& d = one.gpu_spec;
  const double n = 1024.0 * 4096, stream = d.memory_bw.value * d.memory_efficiency;
  for (const precision& p : {precisions::bf16_mixed, precisions::fp32}) {
    CHECK(cost_op(g, 1, op_config{}, one, {p, 1}).optimizer.value == doctest::Approx(28 * n / stream));
    // micro-batches do not repeat it
    CHECK(cost_op(with_batch(g, 16), 1, op_config{}, one, {p, 4}).optimizer.value ==
          doctest::Approx(28 * n / stream));
  }
  const cluster eight(device_mesh(1, 8), gpus::a100_80gb);
  op_config dp;
  dp.degree[1][0] = 8;
  dp.shard_optimizer = true;
  CHECK(cost_op(g, 1, dp, eight).optimizer.value == doctest::Approx(28 * n / 8 / stream));
  const op_cost c = cost_op(g, 1, dp, eight);
  CHECK(c.time().value == doctest::Approx(c.compute.value + c.grad_sync.value + c.optimizer.value));
}

TEST_CASE("attention core: score traffic when materialized, none when fused (which recomputes QK^T)") {
  const op_graph g = lower<small_gpt>();
  int core = -1;
  for (std::size_t i = 0; i < g.ops.size() && core < 0; ++i)
    if (g.ops[i].kind == op_kind::attention) core = int(i);
  REQUIRE(core >= 0);
  const op_node& op = g.ops[core];
  // a slow-memory device so the traffic shows, and launches are free
  device d = device::calibrated("t", flop_rate(1e15), gb_per_s(1), bytes(80 * gib), seconds(0));
  const cluster cl(device_mesh(1, 1), d);
  const double P = double(B) * A * S * S, e = 2, pts = P * double(H / A);
  const double io = 3.0 * B * S * H * e + B * S * H * e;  // qkv in, y out
  cost_options mat, fused;
  fused.attention = attention_kernel::fused;
  const op_cost m = cost_op(g, core, op_config{}, cl, mat);
  const op_cost f = cost_op(g, core, op_config{}, cl, fused);
  CHECK(m.compute.value == doctest::Approx((io + P * (6 * e + 1) + 2 * io + P * (9 * e + 1)) / 1e9));
  CHECK(f.compute.value == doctest::Approx(3 * io / 1e9));
  // memory: fused keeps no score-indexed buffer, only b*heads*s fp32 statistics
  CHECK(m.activations.value == doctest::Approx(5 * P));  // softmax 2P, mask P, dropout output 2P
  CHECK(f.activations.value == doctest::Approx(4.0 * B * A * S));
  // fused is compute-bound on a fast-memory device: 4 + 10 FLOPs per point
  const cluster fast(device_mesh(1, 1), device::calibrated("f", flop_rate(1e12), gb_per_s(1e6), bytes(80 * gib), seconds(0)));
  CHECK(cost_op(g, core, op_config{}, fast, fused).compute.value == doctest::Approx(14 * pts / 1e12));
  (void)op;
}

TEST_CASE("batch norm: one extra input pass forward, two backward") {
  testing::graph_builder gb;
  gb.g.batch = 8;
  const index_t b = 8, c = 64, y = 16, x = 16;
  const int in = gb.op("input", op_kind::input, {{"b", b, true, true}, {"c", c}, {"y", y}, {"x", x}}, {}, {},
                       {b, c, y, x}, {0, 1, 2, 3}, 0, 0, {});
  const int gamma = gb.tensor("bn.gamma", {c}, true), beta = gb.tensor("bn.beta", {c}, true);
  const int bn = gb.op("bn", op_kind::batch_norm, {{"b", b, true, true}, {"c", c}, {"y", y}, {"x", x}},
                       {testing::graph_builder::map(gb.out(in), {0, 1, 2, 3})},
                       {testing::graph_builder::map(gamma, {1}), testing::graph_builder::map(beta, {1})},
                       {b, c, y, x}, {0, 1, 2, 3}, 8, 16, {});
  const device d = device::calibrated("t", flop_rate(1e15), gb_per_s(1), bytes(80 * gib), seconds(0));
  const cluster cl(device_mesh(1, 1), d);
  const double X = double(b * c * y * x) * 2, W = 2.0 * c * 2;
  const double one_pass = X + W + X;  // x, gamma + beta, y
  CHECK(cost_op(gb.g, bn, op_config{}, cl).compute.value == doctest::Approx((one_pass + X + 2 * one_pass + 2 * X) / 1e9));
}

TEST_CASE("fused batch norm + ReLU: no relu or add kernels, the mask read and the addend's traffic") {
  // x -> bn1 -> relu1 -> bn2 -> add(bn2, x) -> relu2, and relu0 reading x directly.
  testing::graph_builder gb;
  gb.g.batch = 8;
  const index_t b = 8, c = 64, y = 16, x = 16;
  const std::vector<op_dim> dims = {{"b", b, true, true}, {"c", c}, {"y", y}, {"x", x}};
  using gbm = testing::graph_builder;
  const int in = gb.op("input", op_kind::input, dims, {}, {}, {b, c, y, x}, {0, 1, 2, 3}, 0, 0, {});
  const auto bn_of = [&](const std::string& name, int from) {
    const int gamma = gb.tensor(name + ".gamma", {c}, true), beta = gb.tensor(name + ".beta", {c}, true);
    return gb.op(name, op_kind::batch_norm, dims, {gbm::map(gb.out(from), {0, 1, 2, 3})},
                 {gbm::map(gamma, {1}), gbm::map(beta, {1})}, {b, c, y, x}, {0, 1, 2, 3}, 8, 16, {});
  };
  const auto relu_of = [&](const std::string& name, int from) {
    return gb.op(name, op_kind::relu, dims, {gbm::map(gb.out(from), {0, 1, 2, 3})}, {}, {b, c, y, x},
                 {0, 1, 2, 3}, 1, 1, {});
  };
  const int bn1 = bn_of("bn1", in);
  const int relu1 = relu_of("relu1", bn1);
  const int bn2 = bn_of("bn2", relu1);
  const int add = gb.op("add", op_kind::add, dims,
                        {gbm::map(gb.out(bn2), {0, 1, 2, 3}), gbm::map(gb.out(in), {0, 1, 2, 3})}, {},
                        {b, c, y, x}, {0, 1, 2, 3}, 1, 0, {});
  const int relu2 = relu_of("relu2", add);
  const int relu0 = relu_of("relu0", in);
  const op_graph& g = gb.g;
  const device d = device::calibrated("t", flop_rate(1e15), gb_per_s(1), bytes(80 * gib), seconds(0));
  const cluster cl(device_mesh(1, 1), d);
  cost_options plain, fused;
  fused.fused_bn_relu = true;
  const double X = double(b * c * y * x) * 2;  // one activation tensor, bytes
  const auto t = [&](int op, const cost_options& o) { return cost_op(g, op, op_config{}, cl, o).compute.value; };
  CHECK(t(relu1, plain) > 0);
  CHECK(t(relu1, fused) == 0);
  CHECK(t(relu2, fused) == 0);
  CHECK(t(relu0, fused) == doctest::Approx(t(relu0, plain)));  // reads the input: no batch norm to fuse into
  CHECK(t(add, fused) == doctest::Approx(2 * X / 1e9));          // the addend read + its gradient written
  CHECK(t(add, plain) == doctest::Approx(9 * X / 1e9));          // 3 tensors forward, twice that backward
  CHECK(t(bn1, fused) == doctest::Approx(t(bn1, plain) + X / 1e9));  // the ReLU mask read in backward
  CHECK(t(bn2, fused) == doctest::Approx(t(bn2, plain) + X / 1e9));
}

TEST_CASE("op time: roofline, launch overhead, gradient sync, micro-batches") {
  const op_graph g = testing::mlp(64, {1024, 4096});
  const op_node& fc = g.ops[1];
  const cluster one(device_mesh(1, 1), gpus::a100_80gb);
  const device& d = one.gpu_spec;
  const double F = 2.0 * 64 * 1024 * 4096;
  const double bytes_moved = 2.0 * (64 * 1024 + 1024 * 4096 + 64 * 4096);
  // a linear's GEMMs also run at their contraction-length factors (gemm_shape.hpp)
  const gemm_shape_factors sf = shape_factors(g, fc, op_config{}, d);
  auto kernel = [&](double f, double by, double shape) {
    return std::max(f / (d.peak_half.value * d.gemm_efficiency(f) * shape),
                    by / (d.memory_bw.value * d.memory_efficiency)) +
           d.launch_overhead.value;
  };
  const op_cost c1 = cost_op(g, 1, op_config{}, one);
  CHECK(c1.compute.value ==
        doctest::Approx(kernel(F, bytes_moved, sf.forward) + kernel(2 * F, 2 * bytes_moved, sf.backward)));
  CHECK(c1.grad_sync.value == 0);
  op_config rc;
  rc.recompute = true;
  CHECK(cost_op(g, 1, rc, one).recompute.value == doctest::Approx(kernel(F, bytes_moved, sf.forward)));
  CHECK(cost_op(g, 1, rc, one).activations.value == 0);
  // the saved input is charged on the edge that delivers it
  CHECK(c1.activations.value == 0);
  CHECK(edge_memory(g, g.edges()[0], op_config{}, op_config{}).value == 2.0 * 64 * 1024);
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

TEST_CASE("Megatron's per-layer communication: 4 all-reduces of 2sbh, or 6 all-gathers + 4 reduce-scatters") {
  const op_graph g = lower<small_gpt>();
  for (index_t t : {2, 4, 8}) {
    CAPTURE(t);
    const cluster cl(device_mesh(1, t), gpus::a100_80gb);
    const bytes act(2.0 * S * B * H);
    CHECK(layer_edge_time(g, configs_of(megatron(t, false), g, cl.mesh), cl, 1) ==
          doctest::Approx(4 * all_reduce({{1, t}}, act, cl).value));
    CHECK(layer_edge_time(g, configs_of(megatron(t, true), g, cl.mesh), cl, 1) ==
          doctest::Approx(6 * all_gather({{1, t}}, act, cl).value + 4 * reduce_scatter({{1, t}}, act, cl).value));
  }
}

TEST_CASE("op cost is constexpr") {
  constexpr double m = [] {
    const op_graph g = testing::mlp(8, {16, 16});
    return cost_op(g, 1, op_config{}, cluster(device_mesh(1, 1), gpus::v100_16gb)).memory().value +
           edge_memory(g, g.edges()[0], op_config{}, op_config{}).value;
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
  // a stack with per-device statistics (local_batch_norm) all-reduces nothing, and
  // the switch changes nothing else of the op's cost
  cost_options local;
  local.local_batch_norm = true;
  const op_cost synced = cost_op(g, bn, split_b, cl), unsynced = cost_op(g, bn, split_b, cl, local);
  CHECK(synced.collectives.value > 0);
  CHECK(unsynced.collectives.value == 0);
  CHECK(unsynced.compute.value == synced.compute.value);
  CHECK(unsynced.memory().value == synced.memory().value);
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
      // its saved buffers, the saved inputs (charged on edges when kept) included
      const double inputs = detail::saved_input_bytes(g, g.ops[i], plain, precisions::bf16_mixed);
      CHECK(re.recompute_working.value == doctest::Approx((keep.activations.value + inputs) / 2));
      checked += keep.activations.value + inputs > 0;
    } else {
      CHECK(facts[i].repeats == 0);
      CHECK(re.recompute_working.value == 0);
    }
    CHECK(re.memory().value == doctest::Approx(re.param_state.value + re.recompute_working.value));
  }
  CHECK(checked > 5);
}

TEST_CASE("Korthikanti's closed forms hold exactly (==) at the 22B shape, t = 8") {
  // Korthikanti et al. 2022, Table 3's 22B widths: s 2048, h 6144, a 64 (batch 8, so
  // that 8-way data parallelism divides it below); two layers are enough. Every term is an integer below 2^53, so the sums are exact
  // in double and the check is ==, not a tolerance (a missed term of any size fails).
  constexpr index_t s = 2048, b = 8, h = 6144, a = 64, t = 8;
  const op_graph g = lower<models::gpt<{.layers = 2, .hidden = h, .heads = a, .seq = s, .vocab = 51200, .batch = b}>>();
  const cluster cl(device_mesh(1, t), gpus::a100_80gb);
  const double sbh = double(s) * b * h, scores = 5.0 * a * s * s * b;
  CHECK(layer_activations(g, configs_of(megatron(t, false), g, cl.mesh), cl, 1) == sbh * (10 + 24 / t) + scores / t);
  CHECK(layer_activations(g, configs_of(megatron(t, true), g, cl.mesh), cl, 1) == sbh * 34 / t + scores / t);
  CHECK(layer_activations(g, selective(configs_of(megatron(t, false), g, cl.mesh), g), cl, 1) == sbh * (10 + 24 / t));
  CHECK(layer_activations(g, selective(configs_of(megatron(t, true), g, cl.mesh), g), cl, 1) == sbh * 34 / t);
  CHECK(layer_activations(g, configs_of(megatron(t, false, true), g, cl.mesh), cl, 1) == 2 * sbh);
  CHECK(layer_activations(g, configs_of(megatron(t, true, true), g, cl.mesh), cl, 1) == 2 * sbh / t);
  // 16 bytes per parameter (bf16-mixed Adam) and ZeRO's 2P + 14P/Nd, exactly, on the
  // replicated (t = 1) model over Nd = 8.
  const auto facts = analyze(g);
  const double P = g.parameter_count();
  double whole = 0, sharded = 0;
  strategy dp;
  dp.shard_optimizer = true;
  const auto cfg = configs_of(dp, g, cl.mesh);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    whole += cost_op(g, int(i), op_config{}, cl, {}, facts[i]).param_state.value;
    sharded += cost_op(g, int(i), cfg[i], cl, {}, facts[i]).param_state.value;
  }
  CHECK(whole == 16 * P);
  CHECK(sharded == 2 * P + 14 * P / 8);
}

TEST_CASE("linear bias: the gradient's column sum always, a forward pass under linear_bias_pass") {
  op_graph g = testing::mlp(64, {1024, 4096});
  const cluster one(device_mesh(1, 1), gpus::a100_80gb);
  const device& d = one.gpu_spec;
  const double y = 2.0 * 64 * 4096, stream = d.memory_bw.value * d.memory_efficiency;
  const double plain = cost_op(g, 1, op_config{}, one).compute.value;
  cost_options pass;
  pass.linear_bias_pass = true;
  CHECK(cost_op(g, 1, op_config{}, one, pass).compute.value == plain);  // no bias: nothing to add
  g.ops[1].attr[3] = 1;                                                 // the lowering's mark of an own bias
  const double biased = cost_op(g, 1, op_config{}, one).compute.value;
  CHECK(biased == doctest::Approx(plain + y / stream + d.launch_overhead.value));
  CHECK(cost_op(g, 1, op_config{}, one, pass).compute.value ==
        doctest::Approx(biased + 2 * y / stream + d.launch_overhead.value));
  g.ops[1].attr[3] = 2;  // a tied linear (no bias of its own)
  CHECK(cost_op(g, 1, op_config{}, one, pass).compute.value == plain);
}

TEST_CASE("overlap_grad_sync: only the sync's excess over the op's backward of one micro-batch is charged") {
  cost_options on;
  on.overlap_grad_sync = true;
  int hidden = 0, exposed = 0;
  for (index_t batch : {64, 65536}) {  // a backward shorter and one longer than the sync
    const op_graph g = testing::mlp(batch, {1024, 4096});
    const op_graph micro = with_batch(g, batch / 4);
    for (const auto& gpu : {gpus::a100_80gb, gpus::v100_16gb})
      for (index_t d : {2, 8})
        for (bool rc : {false, true})
          for (index_t k : {1, 4}) {
            CAPTURE(batch);
            CAPTURE(d);
            CAPTURE(rc);
            CAPTURE(k);
            const cluster cl(device_mesh(1, d), gpu);
            op_config dp;
            dp.degree[1][0] = d;  // data parallel: the weight is replicated d ways
            dp.recompute = rc;
            const op_graph& gr = k == 1 ? g : micro;
            const cost_options off{precisions::bf16_mixed, k};
            on.micro_batches = k;
            const op_cost a = cost_op(gr, 1, dp, cl, off), b = cost_op(gr, 1, dp, cl, on);
            // one micro-batch's forward (recompute = k x forward) and backward (compute at k = 1 is
            // forward + backward); a recomputing op re-runs its forward in backward too
            op_config with_rc = dp;
            with_rc.recompute = true;
            const double fwd = cost_op(gr, 1, with_rc, cl, off).recompute.value / double(k);
            const double bwd = cost_op(gr, 1, dp, cl, {precisions::bf16_mixed, 1}).compute.value - fwd;
            const double want = std::max(0.0, a.grad_sync.value - bwd - (rc ? fwd : 0.0));
            REQUIRE(a.grad_sync.value > 0);
            CHECK(b.grad_sync.value == doctest::Approx(want));
            CHECK(b.grad_sync.value <= a.grad_sync.value);
            // nothing else moves
            CHECK(b.compute.value == a.compute.value);
            CHECK(b.recompute.value == a.recompute.value);
            CHECK(b.optimizer.value == a.optimizer.value);
            CHECK(b.memory().value == a.memory().value);
            (want > 0 ? exposed : hidden) += 1;
          }
  }
  CHECK(hidden > 0);  // both regimes occur
  CHECK(exposed > 0);
  // no replicated parameter, no sync: nothing to hide
  const cluster one(device_mesh(1, 1), gpus::a100_80gb);
  CHECK(cost_op(testing::mlp(64, {1024, 4096}), 1, op_config{}, one, on).grad_sync.value == 0);
}

TEST_CASE("gradient accumulation: k - 1 in-place adds of each owned parameter's gradient") {
  const op_graph micro = with_batch(testing::mlp(64, {1024, 4096}), 16);
  const cluster one(device_mesh(1, 1), gpus::a100_80gb);
  const device& d = one.gpu_spec;
  const double stream = d.memory_bw.value * d.memory_efficiency, n = 1024.0 * 4096;
  for (const precision& p : {precisions::bf16_mixed, precisions::fp32}) {
    CAPTURE(p.name);
    const double once = cost_op(micro, 1, op_config{}, one, {p, 1}).compute.value;
    // read the accumulator and the new gradient, write the sum: 3 x grad bytes
    CHECK(cost_op(micro, 1, op_config{}, one, {p, 4}).compute.value ==
          doctest::Approx(4 * once + 3 * 3 * n * p.grad_bytes / stream));
    // an op without parameters accumulates nothing
    CHECK(cost_op(micro, 2, op_config{}, one, {p, 4}).compute.value ==
          doctest::Approx(4 * cost_op(micro, 2, op_config{}, one, {p, 1}).compute.value));
  }
}
}  // namespace cost_op_cost_test_file
