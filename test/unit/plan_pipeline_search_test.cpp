// Pipeline stages in the planner: the 1F1B cost model against hand computations, the
// max-max merge and the search over partitions against brute force, and every point's
// plan re-costed exactly.
#include <doctest/doctest.h>
#include <random>
#include <tensoropt/plan/pipeline_planner.hpp>
#include "cost_test_graphs.hpp"

#include "plan_pipeline_fixture.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_pipeline_search_test_file {

namespace to = tensoropt;

namespace {
struct tm_point {
  to::cost_t time, memory;
  bool operator==(const tm_point&) const = default;
};
std::vector<tm_point> pareto(std::vector<tm_point> v) {
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.memory != b.memory ? a.memory < b.memory : a.time < b.time; });
  std::vector<tm_point> out;
  for (auto& q : v)
    if (out.empty() || q.time < out.back().time) out.push_back(q);
  return out;
}
to::cluster small_cluster(to::index_t nodes, to::index_t gpus) {
  return to::cluster::nodes(nodes).gpus_per_node(gpus).gpu(to::gpus::a100_80gb);
}
/// Every (time, memory) of stage [a, b) as stage i of p, k micro-batches: all configs of
/// every op of the stage graph, each combination evaluated (then its Pareto set).
std::vector<tm_point> brute_stage(const to::op_graph& micro, std::size_t a, std::size_t b, const to::cluster& cl,
                                  to::index_t k, to::index_t p, to::index_t i) {
  const auto sg = to::stage_graph(micro, a, b);
  const auto scl = to::stage_cluster(cl, p);
  std::vector<std::vector<to::op_config>> all;
  for (auto& op : sg.graph.ops) all.push_back(to::enumerate_configs(sg.graph, op, scl.mesh));
  const to::cost_options co = to::stage_build_options({}, k, p).cost();
  std::vector<tm_point> pts;
  std::vector<std::size_t> at(all.size(), 0);
  std::vector<to::op_config> cs(all.size());
  while (true) {
    for (std::size_t j = 0; j < all.size(); ++j) cs[j] = all[j][at[j]];
    const auto c = to::evaluate_stage(sg.graph, cs, scl, co, to::in_flight(k, p, i), to::bytes(0));
    pts.push_back({c.time, c.memory});
    std::size_t j = 0;
    while (j < at.size() && ++at[j] == all[j].size()) at[j++] = 0;
    if (j == at.size()) break;
  }
  return pareto(pts);
}
/// The frontier over every partition into p stages at cut points and every stage config.
std::vector<tm_point> brute_pipeline(const to::op_graph& g, const to::cluster& cl, to::index_t p, to::index_t k) {
  const auto micro = to::with_batch(g, g.batch / k);
  const auto cuts = to::cut_points(micro);
  std::vector<tm_point> out;
  std::vector<std::size_t> pick(std::size_t(p) - 1);
  // every increasing choice of p - 1 cut points
  std::function<void(std::size_t, std::size_t)> rec = [&](std::size_t d, std::size_t from) {
    if (d == pick.size()) {
      std::vector<std::size_t> starts{0};
      for (auto x : pick) starts.push_back(x);
      std::vector<tm_point> acc{{0, 0}};
      for (std::size_t s = 0; s < starts.size(); ++s) {
        const auto st = brute_stage(micro, starts[s], s + 1 < starts.size() ? starts[s + 1] : g.ops.size(), cl, k, p,
                                    to::index_t(s));
        std::vector<tm_point> next;
        for (auto& x : acc)
          for (auto& y : st) next.push_back({std::max(x.time, y.time), std::max(x.memory, y.memory)});
        acc = pareto(next);
      }
      const to::cost_t sends = to::pipeline_sends(micro, cl, p, starts, to::precisions::bf16_mixed);
      for (auto& x : acc) out.push_back({x.time + sends, x.memory});
      return;
    }
    for (std::size_t c = from; c < cuts.size(); ++c) {
      pick[d] = cuts[c];
      rec(d + 1, c + 1);
    }
  };
  rec(0, 0);
  return pareto(out);
}
}  // namespace

TEST_CASE("1F1B: in-flight micro-batches and slots by hand") {
  // p = 4, k = 8: stage 0 holds 4 micro-batches, stage 3 one; 8 + 4 - 1 = 11 slots
  CHECK(to::in_flight(8, 4, 0) == 4);
  CHECK(to::in_flight(8, 4, 1) == 3);
  CHECK(to::in_flight(8, 4, 3) == 1);
  CHECK(to::in_flight(2, 4, 0) == 2);  // fewer micro-batches than stages: k bounds it
  CHECK(to::pipeline_slots(8, 4) == 11);
  CHECK(to::pipeline_slots(1, 1) == 1);
  // the slowest stage sets the time, the fullest the memory; sends add
  const auto c = to::combine_stages({{10, 7}, {30, 5}, {20, 9}}, 5);
  CHECK(c.time == 35);
  CHECK(c.memory == 9);
  CHECK(c.bottleneck == 1);
  CHECK(c.peak == 2);
}

TEST_CASE("a hand-written pipeline plan costs (k + p - 1) c + (k - 1) a + u per stage, activations times in flight") {
  const auto g = to::testing::mlp(16, {64, 128, 128, 128, 64});
  const auto cl = small_cluster(2, 2);
  const to::index_t p = 2, k = 4;
  to::pipeline_plan pp;
  pp.degree = int(p);
  pp.micro_batches = int(k);
  pp.mesh = cl.mesh;
  pp.stage_begin = {0, 5};  // input, fc1, relu, fc2, relu | fc3, relu, fc4, relu
  pp.configs.assign(g.ops.size(), to::op_config{});
  for (auto& c : pp.configs) c.degree[1][0] = 2;  // data parallel over the stage's 2 devices
  const auto cost = to::evaluate_pipeline(g, pp, cl);
  const auto micro = to::with_batch(g, g.batch / k);
  const auto scl = to::stage_cluster(cl, p);
  CHECK(scl.mesh == to::device_mesh(1, 2));
  to::cost_t expect_time = 0, expect_memory = 0;
  for (std::size_t s = 0; s < 2; ++s) {
    const auto sg = to::stage_graph(micro, pp.stage_begin[s], s ? g.ops.size() : pp.stage_begin[1]);
    std::vector<to::op_config> cs(sg.graph.ops.size(), pp.configs[0]);
    // c + u, 2c + u and 2c + a + u from the ordinary evaluation with 1 and 2 micro-batches,
    // the second without and with its gradient accumulation
    to::build_options one, two_apart, two;
    two_apart.micro_batches = two.micro_batches = 2;
    two_apart.accumulated_micro_batches = 1;
    const auto e1 = to::evaluate(sg.graph, cs, scl, one), e2 = to::evaluate(sg.graph, cs, scl, two_apart),
               e3 = to::evaluate(sg.graph, cs, scl, two);
    const double c = double(e2.time - e1.time), a = double(e3.time - e2.time), u = double(e1.time) - c;
    CHECK(a > 0);
    const double t = double(k + p - 1) * c + double(k - 1) * a + u;
    // activations of one micro-batch: ops' saved buffers and edges' saved inputs
    const auto facts = to::analyze(sg.graph);
    double act = 0;
    for (std::size_t j = 0; j < sg.graph.ops.size(); ++j)
      act += to::cost_op(sg.graph, int(j), cs[j], scl, {}, facts[j]).activations.value;
    for (auto& e : sg.graph.edges()) act += to::edge_memory(sg.graph, e, cs[std::size_t(e.from)], cs[std::size_t(e.to)]).value;
    CHECK(act > 0);
    const double m = double(e1.memory) + double(std::min(k, p - to::index_t(s)) - 1) * act;
    CHECK(std::abs(double(cost.stages[s].time) - t) <= double(4 * sg.graph.ops.size()));
    CHECK(std::abs(double(cost.stages[s].memory) - m) <= double(4 * sg.graph.ops.size()));
    expect_time = std::max(expect_time, cost.stages[s].time);
    expect_memory = std::max(expect_memory, cost.stages[s].memory);
  }
  // one boundary between the two nodes: [16/4, 128] bf16 activation split over 2 devices, both ways
  const double bytes_each = 4.0 * 128 * 2 / 2;
  const double send = cl.inter_link.latency.value + bytes_each / cl.inter_link.bw.value;
  CHECK(cost.sends == 2 * to::cost_t(send * 1e12 + 0.5));
  CHECK(cost.time == expect_time + cost.sends);
  CHECK(cost.memory == expect_memory);
  // stage 0 holds 2 micro-batches: more memory than with one stage's worth
  CHECK(cost.stages[0].memory > cost.stages[1].memory);
}

TEST_CASE("1F1B: a stage accumulates k - 1 gradients, not k + p - 2, by hand") {
  // mlp(16, {64, 128, 128, 128, 64}) as p = 2 stages of k = 4 micro-batches on 2 x 2
  // A100-80GB, data parallel over each stage's 2 devices, bf16-mixed. Stage 1 is fc3, relu,
  // fc4, relu: 128 x 128 + 128 x 64 = 24,576 weights, all local on each device (replicated).
  // One accumulation reads the accumulator and the new gradient and writes the sum:
  //   a = 3 x 24,576 x 2 B (bf16 gradient) / (2,039 GB/s x 0.85) = 147,456 B / 1.73315e12 B/s
  //     = 85,079.7 ps.
  // The runtime runs k = 4 micro-batches and adds 3 gradients to the first
  // (runtime/stage_executor.hpp): 3 a = 255,239 ps. The k + p - 1 = 5 slots of the bubble
  // were charged before as 5 micro-batches, 4 accumulations: 4 a = 340,319 ps, one too many.
  const auto g = to::testing::mlp(16, {64, 128, 128, 128, 64});
  const auto cl = small_cluster(2, 2);
  const to::index_t p = 2, k = 4;
  to::pipeline_plan pp;
  pp.degree = int(p);
  pp.micro_batches = int(k);
  pp.mesh = cl.mesh;
  pp.stage_begin = {0, 5};
  pp.configs.assign(g.ops.size(), to::op_config{});
  for (auto& c : pp.configs) c.degree[1][0] = 2;
  const double a = 3.0 * 24576 * 2 / (2039e9 * 0.85) * 1e12;
  CHECK(a == doctest::Approx(85079.7).epsilon(1e-5));
  const auto micro = to::with_batch(g, g.batch / k);
  const auto sg = to::stage_graph(micro, 5, g.ops.size());
  const auto scl = to::stage_cluster(cl, p);
  const std::vector<to::op_config> cs(sg.graph.ops.size(), pp.configs[0]);
  const to::build_options bo = to::stage_build_options({}, k, p);
  CHECK(bo.micro_batches == 5);
  CHECK(bo.accumulated_micro_batches == 4);
  CHECK(bo.cost().accumulations() == 3);
  auto stage_time = [&](to::index_t accumulated) {
    to::cost_options co = bo.cost();
    co.accumulated_micro_batches = accumulated;
    return double(to::evaluate_stage(sg.graph, cs, scl, co, 1, to::bytes(0)).time);
  };
  const double none = stage_time(1);  // no accumulation: (k + p - 1) c + u
  const double now = double(to::evaluate_pipeline(g, pp, cl).stages[1].time);
  // every op's time is rounded to whole picoseconds: 1 ps per op at most
  const double tol = double(sg.graph.ops.size());
  CHECK(now - none == doctest::Approx(3 * a).epsilon(tol / (3 * a)));
  CHECK(now == stage_time(4));
  // the charge before this count existed (0: the micro-batch count, here the 5 slots): 4 a
  CHECK(stage_time(0) == stage_time(5));
  CHECK(stage_time(0) - none == doctest::Approx(4 * a).epsilon(tol / (4 * a)));
  // without stages nothing changes: the count defaults to the micro-batch count
  to::cost_options flat;
  flat.micro_batches = 4;
  CHECK(flat.accumulations() == 3);
  to::cost_options same = flat;
  same.accumulated_micro_batches = 4;
  CHECK(to::evaluate_stage(sg.graph, cs, scl, flat, 1, to::bytes(0)).time ==
        to::evaluate_stage(sg.graph, cs, scl, same, 1, to::bytes(0)).time);
}

TEST_CASE("max-max merge equals brute force on random staircases") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    auto make = [&](int n) {
      std::vector<tm_point> v;
      for (int i = 0; i < n; ++i) v.push_back({to::cost_t(rng() % 50), to::cost_t(rng() % 50)});
      return pareto(v);
    };
    const auto a = make(1 + int(rng() % 8)), b = make(1 + int(rng() % 8));
    std::vector<tm_point> all;
    for (auto& x : a)
      for (auto& y : b) all.push_back({std::max(x.time, y.time), std::max(x.memory, y.memory)});
    std::vector<tm_point> got;
    for (auto& m : to::max_max_merge(a, b)) {
      got.push_back({m.time, m.memory});
      CHECK(m.time == std::max(a[std::size_t(m.a)].time, b[std::size_t(m.b)].time));
      CHECK(m.memory == std::max(a[std::size_t(m.a)].memory, b[std::size_t(m.b)].memory));
    }
    CHECK(got == pareto(all));
  }
}

TEST_CASE("cut points and stage graphs") {
  const auto g = to::testing::mlp(8, {8, 16, 8});
  // input, fc1, relu, fc2, relu: one tensor crosses before every op
  CHECK(to::cut_points(g) == std::vector<std::size_t>{1, 2, 3, 4});
  const auto sg = to::stage_graph(g, 2, 5);
  REQUIRE(sg.graph.ops.size() == 4);
  CHECK(sg.op_of == std::vector<int>{-1, 2, 3, 4});
  CHECK(sg.graph.ops[0].kind == to::op_kind::input);
  CHECK(sg.graph.ops[0].dims[0].batch);
  CHECK(sg.graph.ops[1].inputs[0].tensor == sg.graph.ops[0].output.tensor);
  CHECK_THROWS_AS(to::stage_graph(g, 3, 3), to::invalid_argument);
}

TEST_CASE("pipeline search over every partition equals brute force on random MLPs") {
  std::mt19937 rng(11);
  const to::index_t widths[] = {4, 8, 12, 16};
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<to::index_t> w;
    const int layers = trial == 2 ? 3 : 2;
    for (int i = 0; i <= layers; ++i) w.push_back(widths[rng() % 4]);
    const auto g = to::testing::mlp(8, w);
    const auto cl = trial == 1 ? small_cluster(2, 1) : small_cluster(1, trial == 3 ? 4 : 2);
    CAPTURE(trial);
    const auto pf = to::testing::partition_frontier(g, cl);
    CHECK(pf.exact);
    std::vector<tm_point> brute;
    for (to::index_t p : to::legal_pipeline_degrees(g, cl.mesh))
      for (to::index_t k : {2, 4})  // the fixture's counts
        if (k >= p)
          for (auto& q : brute_pipeline(g, cl, p, k)) brute.push_back(q);
    brute = pareto(brute);
    std::vector<tm_point> got;
    bool deeper = false;
    for (auto& q : pf.points) {
      got.push_back({q.time, q.memory});
      deeper = deeper || q.plan.degree > 1;
      CHECK(to::pipeline_plan_error(q.plan, g.ops.size()) == "");
      const auto c = to::evaluate_pipeline(g, q.plan, cl);
      CHECK(c.time == q.time);
      CHECK(c.memory == q.memory);
    }
    CHECK(got == brute);
    CHECK(deeper);
  }
}
}  // namespace plan_pipeline_search_test_file
