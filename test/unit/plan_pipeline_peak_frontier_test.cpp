// The pipeline planner's frontier held against the replayed runtime peak
// (plan/pipeline_peak_frontier.hpp): every kept point carries the most any stage holds
// (plan/pipeline_peak.hpp), the kept points are exactly those no faster point beats in
// peak, every searched point stays in `searched`, the device limit drops by peak, the
// work limit leaves the additive memory with a note, and the report, the frontier file
// and the plan file show the peak. The runtime's measured peaks are held against these
// numbers in trainer_pipeline_memory_test.
#include <doctest/doctest.h>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/pipeline_export.hpp>
#include <tensoropt/plan/pipeline_peak_frontier.hpp>
#include <tensoropt/plan/pipeline_plan_file.hpp>
#include <tensoropt/plan/pipeline_planner.hpp>
#include <tensoropt/plan/pipeline_report.hpp>
#include <cmath>
#include <string>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_pipeline_peak_frontier_test_file {

namespace to = tensoropt;

namespace {
const char* tiny_gpt = "gpt:layers=4,hidden=64,heads=4,seq=16,vocab=64,batch=8";

to::pipeline_options options(bool peaks) {
  to::pipeline_options o;
  o.build.prec = to::precisions::fp32;
  o.micro_batches = {4};
  o.threads = 1;
  o.runtime_peak = peaks;
  return o;
}

to::cost_t replayed(const to::op_graph& g, const to::pipeline_plan& pp, const to::cluster& cl,
                    const to::build_options& bo) {
  return std::max<to::cost_t>(1, to::cost_t(std::ceil(to::predicted_pipeline_peak(g, pp, cl, bo).peak())));
}
}  // namespace

TEST_CASE("pipeline peaks: kept points are the searched ones no faster point beats in peak") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = to::cluster::nodes(1).gpus_per_node(4);
  const auto additive = to::plan_pipeline_frontier(g, cl, options(false));
  const auto pf = to::plan_pipeline_frontier(g, cl, options(true));
  CHECK(additive.searched.empty());
  CHECK(additive.memory_note.find("not the runtime peak") != std::string::npos);
  CHECK(pf.memory_note.find("the pipeline search optimized the additive memory, not the peak") != std::string::npos);
  REQUIRE(pf.searched.size() == additive.points.size());
  REQUIRE(!pf.points.empty());
  CHECK(pf.points.size() < pf.searched.size());  // the peak reorders some points here
  std::size_t kept = 0, differs = 0;
  to::cost_t best = to::max_problem_cost;
  for (std::size_t i = pf.searched.size(); i-- > 0;) {  // from the fastest
    const auto& q = pf.searched[i];
    CAPTURE(i);
    CHECK(q.time == additive.points[i].time);
    CHECK(q.memory == additive.points[i].memory);
    CHECK(q.peak == replayed(g, q.plan, cl, options(true).build));
    differs += q.peak != q.memory ? 1 : 0;
    if (q.peak < best) {  // kept: the next kept point (from the slow end) is this one
      best = q.peak;
      REQUIRE(kept < pf.points.size());
      const auto& k = pf.points[pf.points.size() - 1 - kept];
      CHECK(k.time == q.time);
      CHECK(k.peak == q.peak);
      ++kept;
    }
  }
  CHECK(kept == pf.points.size());
  CHECK(differs > 0);
  for (std::size_t i = 1; i < pf.points.size(); ++i) {
    CHECK(pf.points[i].peak > pf.points[i - 1].peak);
    CHECK(pf.points[i].time < pf.points[i - 1].time);
  }
}

TEST_CASE("pipeline peaks: the device limit drops by peak; past the work limit the additive memory stays") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = to::cluster::nodes(1).gpus_per_node(4);
  const auto base = to::plan_pipeline_frontier(g, cl, options(false));
  auto pf = base;
  const auto all = to::attach_pipeline_peaks(pf, g, cl, options(true).build, 1);
  REQUIRE(pf.points.size() >= 3);
  const to::cost_t limit = pf.points[pf.points.size() / 2].peak;
  auto lim = base;
  const auto f = to::attach_pipeline_peaks(lim, g, cl, options(true).build, 2, limit);
  CHECK(f.replayed);
  CHECK(f.over > 0);
  CHECK(f.describe().find(std::to_string(f.over) + " with a peak above the device") != std::string::npos);
  for (const auto& q : lim.points) CHECK(q.peak <= limit);
  CHECK(lim.points.size() == pf.points.size() / 2 + 1);  // the kept points up to the limit, as without it
  CHECK(all.ratio_lo <= all.ratio_hi);
  auto big = base;
  const auto skipped = to::attach_pipeline_peaks(big, g, cl, options(true).build, 1, to::max_problem_cost, 10.0);
  CHECK(!skipped.replayed);
  CHECK(skipped.describe().find("replay was not run") != std::string::npos);
  REQUIRE(big.points.size() == base.points.size());
  for (const auto& q : big.points) {
    CHECK(q.peak == 0);
    CHECK(q.reported_memory() == q.memory);
  }
}

TEST_CASE("pipeline peaks: the report, the frontier file and the plan file show the peak") {
  const auto g = to::models::lower(tiny_gpt);
  const auto cl = to::cluster::nodes(1).gpus_per_node(4);
  const auto o = options(true);
  const auto pf = to::plan_pipeline_frontier(g, cl, o);
  REQUIRE(!pf.points.empty());
  std::size_t staged = pf.points.size();
  for (std::size_t i = 0; i < pf.points.size(); ++i)
    if (pf.points[i].plan.degree > 1) staged = i;
  REQUIRE(staged < pf.points.size());
  const auto rep = to::make_pipeline_report(g, cl, o.build, pf, "gpt", int(staged));
  CHECK(rep.notes.find("predicted runtime peak") != std::string::npos);
  REQUIRE(rep.points.size() == pf.points.size());
  for (std::size_t i = 0; i < pf.points.size(); ++i) {
    CHECK(rep.points[i].memory == double(pf.points[i].peak));
    CHECK(rep.points[i].additive == (pf.points[i].peak != pf.points[i].memory ? double(pf.points[i].memory) : 0.0));
  }
  const auto& q = pf.points[staged];
  const auto pred = to::predicted_pipeline_peak(g, q.plan, cl, o.build);
  REQUIRE(rep.chosen_ops.size() == std::size_t(q.plan.degree));
  for (int s = 0; s < q.plan.degree; ++s) CHECK(rep.chosen_ops[std::size_t(s)].memory == pred.stages[std::size_t(s)].peak());
  const auto ex = to::export_pipeline(g, cl, o.build, pf.searched);
  REQUIRE(ex.points.size() == pf.searched.size());
  for (std::size_t i = 0; i < ex.points.size(); ++i) CHECK(ex.points[i].point.peak == pf.searched[i].peak);
  const auto file = to::make_pipeline_plan_file(g, cl, o.build, q);
  CHECK(file.memory.value == double(q.peak));
}

TEST_CASE("pipeline peaks: replaying min(k, p - s) micro-batches gives the replay of all k") {
  // k well above p: the steady 1F1B pairs repeat, so the short replay must give every
  // field of the full one (the running sum may round differently in its last bits)
  const auto g = to::models::lower("gpt:layers=4,hidden=64,heads=4,seq=16,vocab=64,batch=16");
  const auto cl = to::cluster::nodes(2).gpus_per_node(2);
  auto o = options(false);
  o.micro_batches = {4, 16};
  const auto pf = to::plan_pipeline_frontier(g, cl, o);
  std::size_t compared = 0, short_runs = 0, recomputed = 0;
  for (std::size_t i = 0; i < pf.points.size(); i += 4) {  // a sample, to stay quick under sanitizers
    const auto& pp = pf.points[i].plan;
    auto bo = o.build;
    bo.micro_batches = pp.micro_batches;
    const auto mg = to::with_batch(g, g.batch / pp.micro_batches);
    const auto facts = to::analyze(mg);
    const auto scl = to::detail::stage_cluster_of(cl, pp);
    to::detail::placement_cache cache(scl.mesh);
    for (const auto& c : pp.configs) recomputed += c.recompute ? 1 : 0;
    for (int s = 0; s < pp.degree; ++s) {
      CAPTURE(pp.degree);
      CAPTURE(pp.micro_batches);
      CAPTURE(s);
      const auto fast = to::detail::stage_peak_of(mg, facts, cache, pp, s, scl, bo);
      const auto full = to::detail::stage_peak_of(mg, facts, cache, pp, s, scl, bo, pp.micro_batches);
      CHECK(fast.replayed == doctest::Approx(full.replayed).epsilon(1e-12));
      CHECK(fast.kept == doctest::Approx(full.kept).epsilon(1e-12));
      CHECK(fast.state == full.state);
      CHECK(fast.in_flight == full.in_flight);
      CHECK(fast.op == full.op);
      CHECK(fast.backward == full.backward);
      CHECK(fast.peak() == doctest::Approx(to::predicted_stage_peak(g, pp, s, cl, o.build).peak()).epsilon(1e-12));
      ++compared;
      short_runs += pp.micro_batches > pp.degree - s ? 1 : 0;
    }
  }
  CHECK(short_runs > 10);  // most stages here replay fewer micro-batches than k
  CHECK(recomputed > 0);   // and some plans recompute
  CHECK(compared > 0);
}
}  // namespace plan_pipeline_peak_frontier_test_file
