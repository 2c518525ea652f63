// Training runs: a resumed run gives the losses of an uninterrupted one, and plan
// files are refused for another device count or a precision the CPU backend does
// not run; a plan file with pipeline stages loads as a pipeline plan.
#include <doctest/doctest.h>
#include <tensoropt/models/model_spec.hpp>
#include "runtime_models.hpp"
#include <cstdio>
#include <filesystem>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace runtime_training_run_test_file {

using namespace rt_test;

namespace {
to::planner_options fp32_options() {
  to::planner_options o;
  o.micro_batches = {1, 2};
  o.baselines = false;
  o.build.prec = to::precisions::fp32;
  return o;
}
std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("tensoropt_run_") + name)).string();
}
}  // namespace

TEST_CASE("a run resumed from a checkpoint continues the step count and gives the same losses") {
  const auto g = to::lower<gpt>();
  for (const auto& [what, plan] : {std::pair<const char*, rt::training_plan>{"data parallel", data_parallel(g, 2)},
                                   {"random plan", random_plan(g, 4, 3, 2)}}) {
    INFO(what);
    for (auto kind : {rt::optimizer_options::kind::sgd, rt::optimizer_options::kind::adam}) {
      rt::training_options o;
      o.optimizer.type = kind;
      o.optimizer.lr = 0.01f;
      std::vector<std::pair<std::int64_t, float>> whole, parts;
      const auto next = [&](std::int64_t step) { return make_batch(g, unsigned(100 + step)); };
      o.steps = 6;
      o.on_step = [&](std::int64_t s, float loss, double) { whole.push_back({s, loss}); };
      {
        rt::local_world w(int(plan.mesh.devices()));
        const auto r = rt::train(g, plan, w, next, o);
        CHECK(r.first_step == 0);
        CHECK(r.last_loss == whole.back().second);
      }
      const std::string ck = temp_path("resume.ckpt");
      o.on_step = [&](std::int64_t s, float loss, double) { parts.push_back({s, loss}); };
      o.steps = 2;
      o.save = ck;
      {
        rt::local_world w(int(plan.mesh.devices()));
        (void)rt::train(g, plan, w, next, o);
      }
      // Resume twice: 2 -> 4 (saving again), then 4 -> 6, on another device count.
      o.resume = ck;
      {
        rt::local_world w(int(plan.mesh.devices()));
        const auto r = rt::train(g, plan, w, next, o);
        CHECK(r.first_step == 2);
      }
      o.save.clear();
      const auto other = data_parallel(g, 1);
      {
        rt::local_world w(1);
        const auto r = rt::train(g, other, w, next, o);
        CHECK(r.first_step == 4);
      }
      std::remove(ck.c_str());
      REQUIRE(parts.size() == whole.size());
      for (std::size_t i = 0; i < whole.size(); ++i) {
        CHECK(parts[i].first == whole[i].first);
        CHECK(std::fabs(parts[i].second - whole[i].second) <= 1e-5f * std::fabs(whole[i].second));
      }
      CHECK(whole.back().second != whole.front().second);
    }
  }
}

TEST_CASE("plan files: chosen, saved, loaded and refused for the wrong devices or precision") {
  const to::models::gpt_config tiny{.layers = 2, .hidden = 64, .heads = 4, .seq = 32, .vocab = 64, .batch = 8,
                                    .dropout = 0.0};
  const auto kind = to::models::transformer_kind::gpt;
  const auto g = to::models::lower_transformer(tiny, kind);
  const std::string spec = to::models::to_spec(tiny, kind);
  const auto cl = to::cluster::single_node(4);
  const auto picked = rt::choose_training_plan(g, cl, fp32_options(), std::nullopt);
  CHECK(picked.plan.mesh.devices() == 4);
  CHECK(picked.source.find("plan #") == 0);
  // The same plan through a file.
  const auto pf = to::plan_frontier(g, cl, fp32_options());
  const auto p = pf.middle();
  REQUIRE(p);
  CHECK(picked.plan.configs == p->training_plan().configs);
  const std::string path = temp_path("plan.json");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    const auto text = to::write_plan_json(to::make_plan_file(*p, spec));
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  const auto loaded = rt::choose_training_plan(g, cl, fp32_options(), std::nullopt, path, spec);
  CHECK(loaded.plan.configs == p->training_plan().configs);
  CHECK(loaded.memory == p->memory());
  CHECK(loaded.source == "plan file " + path);
  CHECK_THROWS_WITH_AS((void)rt::choose_training_plan(g, to::cluster::single_node(2), fp32_options(), std::nullopt,
                                                      path),
                       doctest::Contains("the plan is for 4 devices (1 x 4), this run has 2"), to::invalid_argument);
  // A bf16 plan: the CPU backend refuses it with the fix.
  auto bf16 = fp32_options();
  bf16.build.prec = to::precisions::bf16_mixed;
  const auto pb = to::plan_frontier(g, cl, bf16);
  const auto fb = to::read_plan_json(to::write_plan_json(to::make_plan_file(*pb.fastest())));
  CHECK_THROWS_WITH_AS((void)rt::load_training_plan(fb, g, 4),
                       doctest::Contains("the CPU backend runs fp32: plan with --precision fp32"),
                       to::invalid_argument);
  rt::backend_options cuda_fp32;
  cuda_fp32.kind = "cuda";
  CHECK_THROWS_WITH_AS((void)rt::load_training_plan(fb, g, 4, spec, cuda_fp32),
                       doctest::Contains("this run trains in fp32: plan with --precision fp32 or run with "
                                         "--precision bf16-mixed"),
                       to::invalid_argument);
  // A plan saved for another spec is refused naming both.
  auto other = tiny;
  other.layers = 3;
  CHECK_THROWS_WITH_AS((void)rt::choose_training_plan(g, cl, fp32_options(), std::nullopt, path,
                                                      to::models::to_spec(other, kind)),
                       doctest::Contains(("the plan was made for another model: " + spec + ", this run trains ").c_str()),
                       to::invalid_argument);
  // No plan within a tiny budget: the message names the least memory.
  CHECK_THROWS_WITH_AS((void)rt::choose_training_plan(g, cl, fp32_options(), to::bytes(1)),
                       doctest::Contains("the least memory is"), to::infeasible);
  std::remove(path.c_str());
}

TEST_CASE("plan files with pipeline stages: loaded as pipeline plans, refused as one-stage plans") {
  const to::models::gpt_config tiny{.layers = 4, .hidden = 64, .heads = 4, .seq = 32, .vocab = 64, .batch = 8,
                                    .dropout = 0.0};
  const auto kind = to::models::transformer_kind::gpt;
  const auto g = to::models::lower_transformer(tiny, kind);
  const std::string spec = to::models::to_spec(tiny, kind);
  const auto cl = to::cluster::single_node(4);
  to::pipeline_point q;
  q.plan = to::plan_from_spec(g, cl.mesh, to::parse_strategy_spec("pp=2,dp=2"), 4);
  q.time = 1000;
  q.memory = 4096;
  REQUIRE(q.plan.degree == 2);
  const auto bo = fp32_options().build;
  const std::string path = temp_path("pipeline_plan.json");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    const auto text = to::write_plan_json(to::make_pipeline_plan_file(g, cl, bo, q, spec));
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  const auto f = to::load_plan_file(path);
  CHECK_THROWS_WITH_AS((void)rt::load_training_plan(f, g, 4, spec), doctest::Contains("2 pipeline stages"),
                       to::invalid_argument);
  const auto pp = rt::load_pipeline_plan(f, g, 4, spec);
  CHECK(pp.degree == 2);
  CHECK(pp.stage_begin == q.plan.stage_begin);
  CHECK(pp.configs == q.plan.configs);
  CHECK(pp.micro_batches == 4);
  const auto chosen = rt::choose_training_plan(g, cl, fp32_options(), std::nullopt, path, spec);
  CHECK(chosen.pipeline.degree == 2);
  CHECK(chosen.pipeline.configs == q.plan.configs);
  CHECK(chosen.source == "plan file " + path);
  CHECK_THROWS_WITH_AS((void)rt::load_pipeline_plan(f, g, 2, spec), doctest::Contains("this run has 2"),
                       to::invalid_argument);
  std::remove(path.c_str());
}
}  // namespace runtime_training_run_test_file
