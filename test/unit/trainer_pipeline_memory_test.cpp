// Measured peak memory per pipeline stage against plan/pipeline_peak.hpp's
// prediction (a replay of the stage executor's buffers under 1F1B with the cost
// model's sizes; the pipeline planner reports it): every stage of every plan below must be within -10 % .. +5 %
// (measured / predicted - 1), and each is printed. Plans: data, tensor and random
// intra-stage plans (random recompute and ZeRO switches per op), stages cut evenly
// by op count (inside layers: several tensors cross) or at the planner's cut points
// with a received layout from the plan. Measured (2 steps, Adam, global batch 16):
// every stage at +0.0 % (the replay follows the runtime's buffers one for one). Where
// the stages start at cut points the planner's additive stage memory (parameters,
// f micro-batches' kept activations, reserve: what the pipeline search optimizes) is
// printed too; it leaves out the transient working set the replay adds.
// Then the plans the pipeline planner picks (plan_pipeline_frontier with runtime_peak:
// the fastest, the least memory, the fastest and the least memory with 2+ stages; MLP
// and GPT on 2, 4 and 8 devices)
// run on the runtime: the fullest stage's measured peak must be within -10 % .. +5 % of
// the memory the planner reported for the plan, and every stage of its replay.
#include <doctest/doctest.h>
#include <tensoropt/plan/pipeline_peak.hpp>
#include <tensoropt/plan/pipeline_planner.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace trainer_pipeline_memory_test_file {

using namespace rt_test;

namespace {

struct pipe_case {
  const char* name;
  int devices, p, k;
  int inner;         // 0: data parallel, 1: tensor parallel, 2+: random plan with this seed
  bool cut_points = false;  // stages start at cut points (one tensor crosses), received split on the last dim that splits
};

to::pipeline_plan pipeline_of(const to::op_graph& g, const pipe_case& c) {
  const int d = c.devices / c.p;
  auto inner = c.inner == 0 ? data_parallel(g, d, c.k) : c.inner == 1 ? tensor_parallel(g, d) : random_plan(g, d, unsigned(c.inner), c.k);
  to::pipeline_plan pp;
  pp.degree = c.p;
  pp.micro_batches = c.k;
  pp.mesh = to::device_mesh(1, c.devices);
  pp.configs = inner.configs;
  if (!c.cut_points) {
    for (int s = 0; s < c.p; ++s) pp.stage_begin.push_back(std::size_t(s) * g.ops.size() / std::size_t(c.p));
    return pp;
  }
  const auto cuts = to::cut_points(g);
  REQUIRE(cuts.size() >= std::size_t(c.p - 1));
  pp.stage_begin = {0};
  const auto mg = to::with_batch(g, g.batch / c.k);
  for (int s = 1; s < c.p; ++s) {
    pp.stage_begin.push_back(cuts[std::size_t(s) * cuts.size() / std::size_t(c.p)]);
    const auto in = to::stage_graph(mg, pp.stage_begin.back(), mg.ops.size()).graph.ops[0];
    to::op_config rc;  // the last dim that splits d ways
    for (std::size_t k = in.dims.size(); k-- > 0;)
      if (in.dims[k].splittable && in.dims[k].extent % d == 0) {
        rc.degree[1][k] = d;
        break;
      }
    pp.receive_configs.push_back(rc);
  }
  return pp;
}

to::build_options runtime_build() {
  to::build_options bo;
  bo.prec = to::precisions::fp32;  // the CPU runtime trains in fp32 with Adam
  bo.regenerate_dropout = true;
  return bo;
}

/// Each stage's measured peak (the most of its devices) over 2 Adam steps of `pp`.
std::vector<std::int64_t> measured_stage_peaks(const to::op_graph& g, const to::pipeline_plan& pp, int devices) {
  rt::local_world w(devices, std::chrono::seconds(20));
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  rt::pipeline_trainer t(g, pp, w, adam);
  const std::size_t per = std::size_t(devices / pp.degree);
  std::vector<std::int64_t> peak(std::size_t(pp.degree), 0);
  for (int s = 0; s < 2; ++s) {
    t.step(make_batch(g, 100));
    const auto m = t.memory();
    for (std::size_t r = 0; r < m.size(); ++r) peak[r / per] = std::max(peak[r / per], m[r].peak);
  }
  return peak;
}

/// Worst error (measured / predicted - 1) over the stages, printed per stage.
template <class M>
std::pair<double, double> stage_errors(const pipe_case& c) {
  const auto g = to::with_global_batch(to::lower<M>(), 16);
  const auto pp = pipeline_of(g, c);
  const auto bo = runtime_build();
  const auto cl = to::cluster::nodes(1).gpus_per_node(c.devices);
  const auto peak = measured_stage_peaks(g, pp, c.devices);
  double lo = 1e9, hi = -1e9;
  // the planner's additive stage memory (cost/pipeline_cost.hpp, what the search
  // optimizes), printed for comparison where the stages start at cut points
  std::vector<double> additive;
  if (c.cut_points)
    for (const auto& st : to::evaluate_pipeline(g, pp, cl, bo).stages) additive.push_back(double(st.memory));
  for (int s = 0; s < c.p; ++s) {
    const auto pr = to::predicted_stage_peak(g, pp, s, cl, bo);
    const double err = double(peak[std::size_t(s)]) / pr.peak() - 1;
    const std::string at = pr.op < 0 ? "a crossing or the update" : std::string(pr.backward ? "backward of " : "forward of ") +
                                                          g.ops[std::size_t(pr.op)].name;
    std::printf("%-5s %-30s stage %d: in flight %d, predicted %8.1f KiB (at %s), measured %8.1f KiB, %+6.1f %%\n",
                g.name.c_str(), c.name, s, pr.in_flight, pr.peak() / 1024, at.c_str(), double(peak[std::size_t(s)]) / 1024,
                100 * err);
    if (!additive.empty())
      std::printf("      planner's additive stage memory %8.1f KiB: measured %+6.1f %%\n", additive[std::size_t(s)] / 1024,
                  100 * (double(peak[std::size_t(s)]) / additive[std::size_t(s)] - 1));
    lo = std::min(lo, err);
    hi = std::max(hi, err);
  }
  return {lo, hi};
}

template <class M>
void check_cases(std::initializer_list<pipe_case> cases) {
  for (const auto& c : cases) {
    const auto [lo, hi] = stage_errors<M>(c);
    INFO(c.name);
    CHECK(hi <= 0.05);
    CHECK(lo >= -0.10);
  }
}

}  // namespace

TEST_CASE("pipeline memory: mlp stages against the prediction") {
  check_cases<mlp>({{"p 2, 1 device/stage, k 2", 2, 2, 2, 0},
                    {"p 2, 1 device/stage, k 4", 2, 2, 4, 0},
                    {"p 4, 1 device/stage, k 4", 4, 4, 4, 0},
                    {"p 2 x dp 2, k 4", 4, 2, 4, 0},
                    {"p 2 x tp 2, k 2", 4, 2, 2, 1},
                    {"p 2 x random 4, k 2", 8, 2, 2, 5},
                    {"p 4 x random 2, k 4", 8, 4, 4, 6},
                    {"p 2 x tp 2, k 2, cut points", 4, 2, 2, 1, true}});
}

TEST_CASE("pipeline memory: gpt stages against the prediction") {
  check_cases<gpt>({{"p 2, 1 device/stage, k 2", 2, 2, 2, 0},
                    {"p 4, 1 device/stage, k 4", 4, 4, 4, 0},
                    {"p 2 x dp 2, k 4", 4, 2, 4, 0},
                    {"p 2 x tp 2, k 2", 4, 2, 2, 1},
                    {"p 4 x random 2, k 4", 8, 4, 4, 9},
                    {"p 4 x random 2, k 8", 8, 4, 8, 11},
                    {"p 2 x random 4, k 2", 8, 2, 2, 12},
                    {"p 1 x random 2, k 4", 2, 1, 4, 9},
                    {"p 2 x dp 2, k 4, cut points", 4, 2, 4, 0, true},
                    {"p 2 x tp 2, k 2, cut points", 4, 2, 2, 1, true},
                    {"p 4 x random 2, k 4, cut points", 8, 4, 4, 13, true}});
}

namespace {

/// The planner's pipeline frontier of M on `devices` CPU devices with runtime peaks;
/// the fastest plan, the least-memory plan and the fastest and least-memory plans with
/// 2+ stages run, and the fullest stage's measured peak is held against the reported memory.
template <class M>
void check_planned(int devices) {
  const auto g = to::with_global_batch(to::lower<M>(), 16);
  const auto cl = to::cluster::nodes(1).gpus_per_node(devices);
  to::pipeline_options o;
  o.build = runtime_build();
  o.micro_batches = {2, 4};
  o.threads = 1;
  o.runtime_peak = true;
  const auto pf = to::plan_pipeline_frontier(g, cl, o);
  INFO(g.name, " on ", devices, " devices: ", pf.memory_note);
  REQUIRE(!pf.points.empty());
  CHECK(pf.memory_note.find("predicted runtime peak") != std::string::npos);
  CHECK(pf.searched.size() >= pf.points.size());
  for (std::size_t i = 0; i < pf.points.size(); ++i) {
    CHECK(pf.points[i].peak > 0);
    CHECK(pf.points[i].reported_memory() == pf.points[i].peak);
    if (i > 0) CHECK(pf.points[i].peak > pf.points[i - 1].peak);  // a staircase in the peak too
  }
  // the fastest, the least memory, and the fastest and the least memory with stages
  std::vector<std::size_t> picks = {pf.points.size() - 1, 0}, staged;
  for (std::size_t i = 0; i < pf.points.size(); ++i)
    if (pf.points[i].plan.degree > 1) staged.push_back(i);
  REQUIRE(!staged.empty());  // a plan with stages is on the frontier
  picks.push_back(staged.back());
  picks.push_back(staged.front());
  std::sort(picks.begin(), picks.end());
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  for (std::size_t i : picks) {
    const auto& q = pf.points[i];
    const auto peak = measured_stage_peaks(g, q.plan, devices);
    const auto pred = to::predicted_pipeline_peak(g, q.plan, cl, o.build);
    const double most = double(*std::max_element(peak.begin(), peak.end()));
    const double err = most / double(q.reported_memory()) - 1;
    std::printf("%-5s %d devices, planned #%zu pp %d k %d: reported %8.1f KiB (additive %8.1f KiB), measured fullest "
                "stage %8.1f KiB, %+6.1f %%\n",
                g.name.c_str(), devices, i, q.plan.degree, q.plan.micro_batches, double(q.reported_memory()) / 1024,
                double(q.memory) / 1024, most / 1024, 100 * err);
    INFO("point ", i, ": ", to::summarize_pipeline(g, q.plan));
    CHECK(err <= 0.05);
    CHECK(err >= -0.10);
    for (int s = 0; s < q.plan.degree; ++s) {
      const double e = double(peak[std::size_t(s)]) / pred.stages[std::size_t(s)].peak() - 1;
      CHECK(e <= 0.05);
      CHECK(e >= -0.10);
    }
  }
}

}  // namespace

TEST_CASE("pipeline memory: the plans the planner picks, against what it reported") {
  for (int d : {2, 4, 8}) {
    check_planned<mlp>(d);
    check_planned<gpt>(d);
  }
}
}  // namespace trainer_pipeline_memory_test_file
