// plan/strategy_spec: parsing --strategy SPEC, its configs, its evaluation (equal to
// the built problem's cost of the same choice), MFU, and the errors.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/strategy_spec.hpp>
#include <doctest/doctest.h>
#include <string>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_strategy_spec_test_file {

using namespace tensoropt;

namespace {
using small_gpt = models::gpt<{.layers = 2, .hidden = 64, .heads = 8, .seq = 64, .vocab = 256, .batch = 8}>;

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const invalid_argument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("strategy spec: parsing") {
  const auto s = parse_strategy_spec("tp=4,sp=1,recompute=selective,zero=1");
  CHECK(s.tp == 4);
  CHECK(s.dp == 0);
  CHECK(s.sp);
  CHECK(s.zero);
  CHECK(s.recompute == strategy_spec::recompute_kind::selective);
  CHECK(parse_strategy_spec("dp=2").dp == 2);
  CHECK(parse_strategy_spec("pp=4,tp=2").pp == 4);
  CHECK(error_of([] { parse_strategy_spec("vp=2"); }).find("valid keys: pp, dp, tp, sp, recompute, zero") !=
        std::string::npos);
  CHECK(error_of([] { parse_strategy_spec("recompute=some"); }).find("none, selective, full") != std::string::npos);
  CHECK(error_of([] { parse_strategy_spec("tp=0"); }).find("positive integer") != std::string::npos);
  CHECK(error_of([] { parse_strategy_spec("sp=2"); }).find("sp=0 or sp=1") != std::string::npos);
  CHECK(error_of([] { parse_strategy_spec("tp=2,tp=4"); }).find("twice") != std::string::npos);
  CHECK(error_of([] { parse_strategy_spec(""); }).find("empty") != std::string::npos);
}

TEST_CASE("strategy spec: impossible on the cluster") {
  const op_graph g = lower<small_gpt>();
  const device_mesh m(1, 8);
  CHECK(error_of([&] { configs_of(parse_strategy_spec("dp=2,tp=2"), g, m); }).find("cluster has 8") !=
        std::string::npos);
  CHECK(error_of([&] { configs_of(parse_strategy_spec("tp=3"), g, m); }).find("cluster has 8") != std::string::npos);
  CHECK(error_of([&] { configs_of(parse_strategy_spec("sp=1"), g, m); }).find("needs tp > 1") != std::string::npos);
  CHECK(error_of([&] { configs_of(parse_strategy_spec("tp=4"), g, device_mesh(4, 2)); }).find("per node") !=
        std::string::npos);
  // dp=8 needs the batch (8) divisible: with 2 micro-batches of 4 it is not
  CHECK(!error_of([&] { configs_of(parse_strategy_spec("dp=8"), with_batch(g, 4), m); }).empty());
}

TEST_CASE("strategy spec: configs, and the evaluation equals the built problem's cost") {
  const op_graph g = lower<small_gpt>();
  const cluster cl(device_mesh(1, 4), gpus::a100_80gb);
  for (const char* spec : {"tp=2", "tp=4,sp=1", "dp=4,zero=1", "tp=2,recompute=selective", "tp=2,sp=1,recompute=full"}) {
    CAPTURE(spec);
    const auto s = parse_strategy_spec(spec);
    build_options bo;
    bo.micro_batches = 2;
    bo.drop_dominated = false;
    bo.configs.recompute = true;
    bo.configs.shard_optimizer = true;
    const auto ev = evaluate_spec(s, g, cl, bo);
    const auto bp = build_problem(g, cl, bo);
    std::vector<int> choice;
    for (std::size_t i = 0; i < ev.configs.size(); ++i) choice.push_back(config_index(bp, int(i), ev.configs[i]));
    for (int c : choice) REQUIRE(c >= 0);
    const auto pc = cost_of(bp.prob, choice);
    CHECK(double(pc.time) / ps_per_second == doctest::Approx(ev.time).epsilon(1e-9));
    CHECK(double(pc.memory) == doctest::Approx(ev.memory).epsilon(1e-9));
    double t = 0, m = 0;
    for (auto& o : ev.ops) t += o.time, m += o.memory;
    CHECK(t == doctest::Approx(ev.time).epsilon(1e-6));
    CHECK(m == doctest::Approx(ev.memory).epsilon(1e-6));
    CHECK(ev.mfu == doctest::Approx(3 * g.fwd_flops() / (ev.time * 4 * 312e12)));
    CHECK(ev.mfu > 0);
    CHECK(ev.mfu < 1);
    int rc = 0;
    for (auto& c : ev.configs) rc += c.recompute;
    if (s.recompute == strategy_spec::recompute_kind::selective) CHECK(rc == 2);  // one core per layer
    if (s.recompute == strategy_spec::recompute_kind::none) CHECK(rc == 0);
  }
}
}  // namespace plan_strategy_spec_test_file
