// Pipeline plans (runtime/pipeline.hpp) of the small GPT and MLP on 2, 4 and 8 local
// devices train like one device (losses and weights within 1e-5, fp32); a failing
// stage aborts the others with an error naming it; checkpoints move between degrees.
#include <doctest/doctest.h>
#include "runtime_models.hpp"
#include <cstdio>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace trainer_pipeline_test_file {

using namespace rt_test;

namespace {

/// p stages cut at `cuts` (or evenly by op count): runtime_model_types.hpp's pipeline_of.
to::pipeline_plan pipeline(const to::op_graph& g, int n, int p, const rt::training_plan& inner,
                           std::vector<std::size_t> cuts = {}) {
  return pipeline_of(g, n, p, inner, std::move(cuts));
}

run_result run_pipeline(const to::op_graph& g, const to::pipeline_plan& pp, int steps) {
  rt::local_world world(int(pp.mesh.devices()), std::chrono::seconds(20));
  rt::pipeline_trainer tr(g, pp, world);
  run_result r;
  for (int s = 0; s < steps; ++s) r.losses.push_back(tr.step(make_batch(g, 100 + unsigned(s))));
  for (auto& t : g.tensors)
    if (t.parameter) r.params.push_back(tr.parameter(t.name));
  return r;
}

run_result run_reference(const to::op_graph& g, int micro, int steps) {
  rt::local_world world(1, std::chrono::seconds(20));
  rt::trainer tr(g, data_parallel(g, 1, micro), world);
  run_result r;
  for (int s = 0; s < steps; ++s) r.losses.push_back(tr.step(make_batch(g, 100 + unsigned(s))));
  for (auto& t : g.tensors)
    if (t.parameter) r.params.push_back(tr.parameter(t.name));
  return r;
}

void check_same(const to::op_graph& g, const run_result& ref, const run_result& r, const std::string& what) {
  INFO(what);
  REQUIRE(r.losses.size() == ref.losses.size());
  for (std::size_t s = 0; s < r.losses.size(); ++s)
    CHECK(std::fabs(r.losses[s] - ref.losses[s]) <= 1e-5 * std::fabs(ref.losses[s]));
  std::size_t i = 0;
  for (auto& t : g.tensors)
    if (t.parameter) {
      INFO("parameter " << t.name);
      CHECK(rel_diff(ref.params[i], r.params[i]) <= 1e-5);
      ++i;
    }
}

/// The pipeline plans every model is checked under: p = 2 and 4 on 2, 4 and 8
/// devices, with data, tensor and random intra-stage plans, even and random cuts.
void check_pipelines(const to::op_graph& g) {
  const int steps = 3;
  const auto ref2 = run_reference(g, 2, steps), ref4 = run_reference(g, 4, steps);
  CHECK(ref4.losses[2] != ref4.losses[0]);  // the weights moved
  check_same(g, ref2, run_pipeline(g, pipeline(g, 2, 2, data_parallel(g, 1, 2)), steps), "p 2 on 2 devices");
  check_same(g, ref4, run_pipeline(g, pipeline(g, 4, 2, data_parallel(g, 2, 4)), steps), "p 2 x dp 2, k 4");
  check_same(g, ref2, run_pipeline(g, pipeline(g, 4, 2, random_plan(g, 2, 5, 2)), steps), "p 2 x random 2, k 2");
  check_same(g, ref4, run_pipeline(g, pipeline(g, 4, 4, data_parallel(g, 1, 4)), steps), "p 4 on 4 devices, k 4");
  check_same(g, ref4, run_pipeline(g, pipeline(g, 8, 4, random_plan(g, 2, 9, 4)), steps), "p 4 x random 2, k 4");
  auto tp = tensor_parallel(g, 4);
  tp.micro_batches = 2;
  check_same(g, ref2, run_pipeline(g, pipeline(g, 8, 2, tp), steps), "p 2 x tp 4, k 2");
  // random cuts (a stage may start inside a layer: several tensors cross it)
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2; ++trial) {
    std::vector<std::size_t> cuts{0};
    while (cuts.size() < 4) {
      const std::size_t c = 1 + rng() % (g.ops.size() - 1);
      if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
    }
    std::sort(cuts.begin(), cuts.end());
    check_same(g, ref4, run_pipeline(g, pipeline(g, 4, 4, random_plan(g, 1, 30 + unsigned(trial), 4), cuts), steps),
               "p 4, random cuts, trial " + std::to_string(trial));
  }
}

}  // namespace

TEST_CASE("pipeline: gpt on 2, 4, 8 devices trains like one device") { check_pipelines(to::lower<gpt>()); }

TEST_CASE("pipeline: mlp on 2, 4, 8 devices trains like one device") { check_pipelines(to::lower<mlp>()); }

TEST_CASE("pipeline: the tied token table keeps one value in both stages") {
  const auto g = to::lower<gpt>();
  const auto pp = pipeline(g, 2, 2, data_parallel(g, 1, 2));
  rt::local_world world(2, std::chrono::seconds(20));
  rt::pipeline_trainer tr(g, pp, world);
  for (int s = 0; s < 2; ++s) tr.step(make_batch(g, 7));
  const int t = tr.device(0).stage_executor().param_index("embed.weight");
  CHECK(tr.device(0).holders(t) == std::vector<int>{0, 1});
  std::vector<std::vector<float>> copy(2);
  world.run([&](rt::communicator& c) { copy[std::size_t(c.rank())] = tr.device(std::size_t(c.rank())).stage_executor().gather(t, -1); });
  CHECK(copy[0] == copy[1]);
}

TEST_CASE("pipeline: a failing stage aborts the others, naming it") {
  const auto g = to::lower<gpt>();
  const auto pp = pipeline(g, 4, 4, data_parallel(g, 1, 4));
  rt::local_world world(4, std::chrono::seconds(10));
  std::vector<std::unique_ptr<rt::pipeline_stage>> st(4);
  world.run([&](rt::communicator& c) { st[std::size_t(c.rank())] = std::make_unique<rt::pipeline_stage>(g, pp, c); });
  auto good = make_batch(g, 1), bad = good;
  bad[0].pop_back();
  const auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  try {
    world.run([&](rt::communicator& c) { st[std::size_t(c.rank())]->step(c.rank() == 2 ? bad : good); });
  } catch (const std::exception& e) {
    msg = e.what();
  }
  CHECK(msg.find("pipeline stage 2 (ranks 2-2)") == 0);
  CHECK(msg.find("values; the model expects") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(8));  // aborted, not timed out
}

TEST_CASE("pipeline: malformed plans are refused with the reason") {
  const auto g = to::lower<gpt>();
  auto pp = pipeline(g, 4, 2, data_parallel(g, 2, 2));
  rt::local_world world(2);
  CHECK_THROWS_WITH_AS(rt::pipeline_trainer(g, pp, world), doctest::Contains("the communicator has 2"),
                       to::invalid_argument);
  pp.micro_batches = 1;
  rt::local_world w4(4);
  CHECK_THROWS_WITH_AS(rt::pipeline_trainer(g, pp, w4), doctest::Contains("1F1B needs at least as many micro-batches"),
                       to::invalid_argument);
}

TEST_CASE("pipeline: checkpoints move between pipeline degrees") {
  const auto g = to::lower<gpt>();
  const std::string path = "trainer_pipeline_test.ckpt";
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  adam.lr = 1e-3f;
  adam.eps = 1e-3f;
  std::vector<std::vector<float>> saved;
  float next_loss = 0;
  {
    rt::local_world world(2);
    rt::pipeline_trainer tr(g, pipeline(g, 2, 2, data_parallel(g, 1, 4)), world, adam);
    for (int s = 0; s < 2; ++s) tr.step(make_batch(g, 40 + unsigned(s)));
    tr.save(path);
    for (auto& t : g.tensors)
      if (t.parameter) saved.push_back(tr.parameter(t.name));
    next_loss = tr.step(make_batch(g, 42));
  }
  auto same_weights = [&](auto& tr) {
    std::size_t i = 0;
    for (auto& t : g.tensors)
      if (t.parameter) {
        INFO("parameter " << t.name);
        CHECK(tr.parameter(t.name) == saved[i++]);
      }
  };
  {  // p = 1: an ordinary trainer
    rt::local_world world(1);
    rt::trainer tr(g, data_parallel(g, 1, 4), world, adam);
    tr.load(path);
    same_weights(tr);
    CHECK(tr.device(0).steps() == 2);
    CHECK(std::fabs(tr.step(make_batch(g, 42)) - next_loss) <= 1e-5 * std::fabs(next_loss));
  }
  {  // p = 4 with dp 2 inside the stages
    rt::local_world world(8);
    rt::pipeline_trainer tr(g, pipeline(g, 8, 4, data_parallel(g, 2, 4)), world, adam);
    tr.load(path);
    same_weights(tr);
    CHECK(std::fabs(tr.step(make_batch(g, 42)) - next_loss) <= 1e-5 * std::fabs(next_loss));
  }
  {  // and back: an ordinary checkpoint into p = 2
    rt::local_world w1(1);
    rt::trainer t1(g, data_parallel(g, 1, 4), w1, adam);
    t1.load(path);
    t1.save(path);
    rt::local_world world(2);
    rt::pipeline_trainer tr(g, pipeline(g, 2, 2, data_parallel(g, 1, 4)), world, adam);
    tr.load(path);
    same_weights(tr);
  }
  std::remove(path.c_str());
}

TEST_CASE("pipeline: a checkpoint of another model is refused, naming a stage") {
  const auto g = to::lower<gpt>();
  const auto m = to::lower<mlp>();
  const std::string path = "trainer_pipeline_test_other.ckpt";
  {
    rt::local_world w1(1);
    rt::trainer t1(m, data_parallel(m, 1), w1);
    t1.save(path);
  }
  rt::local_world world(2);
  rt::pipeline_trainer tr(g, pipeline(g, 2, 2, data_parallel(g, 1, 2)), world);
  CHECK_THROWS_WITH_AS(tr.load(path), doctest::Contains("is of another model"), to::format_error);
  CHECK_THROWS_WITH_AS(tr.load(path), doctest::Contains("pipeline stage "), to::format_error);
  std::remove(path.c_str());
}

TEST_CASE("pipeline: stage edges send each device's share, in the plan's received layout") {
  const auto g = to::lower<gpt>();
  const auto cuts = to::cut_points(g);
  REQUIRE(!cuts.empty());
  const std::size_t cut = cuts[cuts.size() / 2];
  const auto ref = run_reference(g, 2, 3);
  for (const auto& inner : {data_parallel(g, 2, 2), tensor_parallel(g, 2), random_plan(g, 2, 17, 2)}) {
    auto tp = inner;
    tp.micro_batches = 2;
    auto pp = pipeline(g, 4, 2, tp, {0, cut});
    const auto mg = to::with_batch(g, g.batch / pp.micro_batches);
    const auto x = rt::crossings_of(mg, pp, 1);
    REQUIRE(x.in.size() == 1);
    const auto& t = mg.tensors[std::size_t(x.in[0].tensor)];
    // the 2 members each send a distinct half: S / d floats, as the cost model charges
    for (int r = 0; r < 2; ++r) CHECK(x.in[0].wire.box[std::size_t(r)].size(t.rank) * 2 == t.size());
    CHECK(x.in[0].wire.box[0] != x.in[0].wire.box[1]);
    CHECK(rt::crossings_of(mg, pp, 0).out.size() == 1);
    check_same(g, ref, run_pipeline(g, pp, 3), "cut at op " + std::to_string(cut));
    // a received layout from the plan: split on the last axis (hidden), whatever the reader wants
    const auto in = to::stage_graph(mg, cut, mg.ops.size()).graph.ops[0];
    to::op_config rc;
    rc.degree[1][in.dims.size() - 1] = 2;
    pp.receive_configs = {rc};
    const auto y = rt::crossings_of(mg, pp, 1);
    CHECK(y.in[0].recv.box[0].len[std::size_t(t.rank - 1)] == t.extents[std::size_t(t.rank - 1)] / 2);
    check_same(g, ref, run_pipeline(g, pp, 3), "received split on the hidden axis");
  }
  auto pp = pipeline(g, 4, 2, data_parallel(g, 2, 2), {0, cut});
  to::op_config bad;
  bad.degree[1][0] = 4;  // 4 ways on a 2-device stage
  pp.receive_configs = {bad};
  rt::local_world world(4);
  CHECK_THROWS_WITH_AS(rt::pipeline_trainer(g, pp, world),
                       doctest::Contains("the receive config of pipeline stage 1 does not fit its input"),
                       to::invalid_argument);
}
}  // namespace trainer_pipeline_test_file
