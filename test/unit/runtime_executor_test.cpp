// The executor refuses bad input with clear errors and without hanging, and reports per-device memory.
#include <doctest/doctest.h>
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace runtime_executor_test_file {

using namespace rt_test;

TEST_CASE("a plan for another graph, a device count mismatch and a bad batch are refused") {
  const auto g = to::lower<mlp>();
  const auto other = to::lower<cnn>();
  rt::local_world w(2, std::chrono::seconds(5));
  CHECK_THROWS_WITH_AS(rt::trainer(g, data_parallel(other, 2), w), doctest::Contains("is the plan for another model?"),
                       tensoropt::invalid_argument);
  CHECK_THROWS_WITH_AS(rt::trainer(g, data_parallel(g, 4), w), doctest::Contains("run it on 4 devices"),
                       tensoropt::invalid_argument);
  auto bad = data_parallel(g, 2);
  bad.configs[1].degree[1][1] = 2;  // 2 x 2 splits on 2 devices
  CHECK_THROWS_WITH_AS(rt::trainer(g, bad, w), doctest::Contains("does not divide the level's 2 devices"),
                       tensoropt::invalid_argument);
  auto odd = data_parallel(g, 2);
  odd.micro_batches = 3;
  CHECK_THROWS_WITH_AS(rt::trainer(g, odd, w), doctest::Contains("does not divide the global batch"),
                       tensoropt::invalid_argument);
  rt::trainer tr(g, random_plan(g, 2, 1), w);
  auto b = make_batch(g, 1);
  b[0].pop_back();
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(tr.step(b), doctest::Contains("batch input 'input' has 95 values; the model expects 96 (shape [8,12])"),
                       tensoropt::invalid_argument);
  b.pop_back();
  CHECK_THROWS_WITH_AS(tr.step(b), doctest::Contains("the batch has 1 arrays"), tensoropt::invalid_argument);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(std::isfinite(tr.step(make_batch(g, 1))));  // the trainer still works
}

TEST_CASE("per-device peak memory: sharding the weights lowers it") {
  const auto g = to::lower<gpt>();
  auto peak = [&](const rt::training_plan& p) {
    rt::local_world w(int(p.mesh.devices()));
    rt::trainer tr(g, p, w);
    tr.step(make_batch(g, 1));
    std::int64_t m = 0;
    for (auto& s : tr.memory()) {
      CHECK(s.peak >= s.current);
      CHECK(s.current > 0);
      m = std::max(m, s.peak);
    }
    return m;
  };
  const auto one = peak(data_parallel(g, 1));
  const auto dp = peak(data_parallel(g, 4));
  const auto tp = peak(tensor_parallel(g, 4));
  CHECK(dp < one);  // activations split 4 ways
  CHECK(tp < one);  // weights and activations split
  const double param_bytes = 4 * g.parameter_count();
  CHECK(double(one) > 3 * param_bytes);  // weights + momentum + gradients at least
  MESSAGE("peak bytes per device: 1 device " << one << ", data parallel x4 " << dp << ", tensor parallel x4 " << tp);
}

TEST_CASE("recomputation keeps losses and weights bit for bit") {
  const auto g = to::lower<gpt>();
  auto plan = data_parallel(g, 2);
  const auto ref = run(g, plan, 2);
  for (auto& c : plan.configs) c.recompute = true;
  const auto rc = run(g, plan, 2);
  CHECK(rc.losses == ref.losses);
  CHECK(rc.params == ref.params);
}
}  // namespace runtime_executor_test_file
