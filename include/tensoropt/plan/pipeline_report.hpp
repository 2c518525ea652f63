// The report of a frontier with pipeline stages: the data the table, the plot and the HTML
// page show (plan/frontier_report.hpp) made from a pipeline frontier.
//
// Each point keeps its pipeline degree and stage starts (the plot colours it by degree, the
// HTML lists its stages), a config label per op of the model on its stage's mesh (so the
// plan panel and "what changes" read as for a plan without stages), the summary
// ("pp 4 x dp 2 x tp 8, recompute 80/80 layers") and the predicted model FLOPs utilization.
// The memory is the fullest device's predicted runtime peak where the planner replayed it
// (plan/pipeline_peak_frontier.hpp; the search's additive memory is shown next to it),
// else the additive memory. The chosen plan's table is per stage: its ops, its mesh, the
// micro-batches it holds in flight, its time ((k + p - 1) c + (k - 1) a + u) and memory
// (the stage's replayed peak where the point has one, else evaluate_pipeline's), and the
// send to the next stage.
#pragma once
#include <optional>
#include <string>
#include <vector>
#include "pipeline_peak.hpp"
#include "pipeline_search.hpp"
#include "pipeline_spec.hpp"
#include "report.hpp"
#include "strategy_spec.hpp"

namespace tensoropt {

/// The report point of pipeline point `q` of the full-batch graph `g` on `cl`.
inline frontier_report::point pipeline_report_point(const op_graph& g, const cluster& cl, const precision& prec,
                                                    const pipeline_point& q) {
  frontier_report::point p;
  p.time = double(q.time) / ps_per_second;
  p.memory = double(q.reported_memory());
  if (q.peak > 0 && q.peak != q.memory) p.additive = double(q.memory);
  p.micro_batches = q.plan.micro_batches;
  p.pipeline_degree = q.plan.degree;
  if (q.plan.degree > 1) p.stage_begin = q.plan.stage_begin;
  const device_mesh sm = stage_mesh(cl.mesh, q.plan.degree);
  for (std::size_t i = 0; i < g.ops.size() && i < q.plan.configs.size(); ++i)
    p.labels.push_back(label_of(g.ops[i], q.plan.configs[i], sm));
  p.summary = summarize_pipeline(g, q.plan);
  p.mfu = model_flops_utilization(g, p.time, cl, prec);
  return p;
}

/// The report of the pipeline frontier `pf` of `g` on `cl` (built with `bo`): every point,
/// `chosen` (an index into pf.points, or -1) with its per-stage table, the memory `budget`
/// and the `baselines` (e.g. megatron_3d_baselines) placed against it.
inline frontier_report make_pipeline_report(const op_graph& g, const cluster& cl, const build_options& bo,
                                            const pipeline_frontier& pf, const std::string& model, int chosen = -1,
                                            std::optional<bytes> budget = std::nullopt,
                                            std::vector<baseline_result> baselines = {}) {
  detail::require(chosen < int(pf.points.size()), "make_pipeline_report: the chosen point is not on the frontier");
  frontier_report r;
  r.model = model;
  r.cluster = cl.describe();
  r.precision = std::string(bo.prec.name);
  r.samples = double(g.batch);
  r.capacity = cl.gpu_spec.capacity.value;
  r.budget = budget ? budget->value : 0;
  r.search_seconds = pf.seconds;
  r.baselines = std::move(baselines);
  r.chosen = chosen;
  for (const auto& op : g.ops) r.op_names.push_back(op.name);
  for (const auto& q : pf.points) r.points.push_back(pipeline_report_point(g, cl, bo.prec, q));
  r.notes = "pipeline stages under 1F1B; memory: " +
            (pf.memory_note.empty() ? std::string("the fullest device's additive memory") : pf.memory_note) +
            (pf.exact ? "" : pf.balanced ? "; balanced stages (a restriction)" : "; approximate stage searches");
  if (chosen >= 0) {
    const pipeline_plan& pl = pf.points[std::size_t(chosen)].plan;
    const pipeline_cost c = evaluate_pipeline(g, pl, cl, bo);
    const bool peaks = pf.points[std::size_t(chosen)].peak > 0;
    const device_mesh sm = stage_mesh(cl.mesh, pl.degree);
    const op_graph micro = with_batch(g, g.batch / pl.micro_batches);
    r.chosen_ops_title = "per stage";
    for (std::size_t s = 0; s < c.stages.size(); ++s) {
      const std::size_t a = pl.stage_begin[s], b = s + 1 < pl.stage_begin.size() ? pl.stage_begin[s + 1] : g.ops.size();
      op_row row;
      row.op = std::to_string(s) + ": ops " + std::to_string(a) + "\u2013" + std::to_string(b - 1) + " (" + g.ops[a].name +
               (b - 1 > a ? " \u2026 " + g.ops[b - 1].name : std::string()) + ")";
      row.config = sm.describe() + ", " + std::to_string(in_flight(pl.micro_batches, pl.degree, index_t(s))) +
                   " micro-batches in flight";
      row.time = double(c.stages[s].time) / ps_per_second;
      row.memory = peaks ? predicted_stage_peak(g, pl, int(s), cl, bo).peak() : double(c.stages[s].memory);
      if (s + 1 < c.stages.size()) {
        const int t = cut_tensor(micro, b);
        row.collectives = t < 0 ? "-" : "send to stage " + std::to_string(s + 1) + " " +
                                            format_seconds(double(stage_send_time(micro.tensors[std::size_t(t)], cl,
                                                                                  pl.degree, index_t(s), bo.prec)) /
                                                           ps_per_second) + " (both directions)";
      } else {
        row.collectives = "-";
      }
      r.chosen_ops.push_back(std::move(row));
    }
  }
  return r;
}

}  // namespace tensoropt
