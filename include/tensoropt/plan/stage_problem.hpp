// One pipeline stage as a search problem, and the cost of a whole pipeline plan.
//
// The stage problem of ops [a, b) as stage i of p with k micro-batches is the ordinary
// problem (plan/build_problem.hpp) of the stage's graph (model/stage_graph.hpp) on the
// stage's mesh (plan/pipeline_plan.hpp's stage_mesh), with the pipeline's terms of
// cost/pipeline_cost.hpp: the per-micro-batch parts of every time counted k + p - 1
// times instead of k (the builder is given the stage graph at k + p - 1 times the
// micro-batch and splits it back) but its gradient accumulations k - 1 times, as the
// stage runs k micro-batches (stage_build_options), and every activation term held
// f = min(k, p - i) times: an op's memory becomes round(its memory) + (f - 1) round(its
// activations), an edge's f x its memory. Configs dropped as locally dominated stay dominated: configs of
// one op with equal layouts and recompute switch have equal activations, so scaling
// activations keeps their order. A strategy of the stage problem therefore costs exactly
// what evaluate_stage gives, and for p = 1 exactly what the ordinary problem of k gives.
//
// evaluate_pipeline re-costs a pipeline_plan from the graph alone: each stage by
// evaluate_stage on its mesh, plus the sends of every boundary, combined as the
// pipeline cost model says (max over stages of time and of memory).
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>
#include "../cost/pipeline_cost.hpp"
#include "../model/stage_graph.hpp"
#include "build_problem.hpp"
#include "pipeline_plan.hpp"

namespace tensoropt {

/// The cluster of one stage when `cl` is cut into p stages (same device and links).
inline cluster stage_cluster(const cluster& cl, index_t p) {
  cluster c = cl;
  c.mesh = stage_mesh(cl.mesh, p);
  return c;
}

/// The build options of a stage of p with k micro-batches: `bo` with the k + p - 1 slots
/// of 1F1B as its micro-batch count and k micro-batches' gradients accumulated.
inline build_options stage_build_options(build_options bo, index_t k, index_t p) {
  bo.micro_batches = pipeline_slots(k, p);
  bo.accumulated_micro_batches = k;
  return bo;
}

/// A stage's problem and what maps it back to the model.
struct stage_problem {
  built_problem built;      ///< built.graph: the stage's micro-batch graph
  std::vector<int> op_of;   ///< original op of each problem node (-1: the received input)
  index_t in_flight = 1;    ///< f
  index_t slots = 1;        ///< k + p - 1
  index_t degree = 1;       ///< p
};

/// The problem of ops [a, b) of the micro-batch graph `micro` as stage i of p, with k
/// micro-batches, on `cl` (the whole cluster); see the file comment.
inline stage_problem build_stage_problem(const op_graph& micro, std::size_t a, std::size_t b, const cluster& cl,
                                         build_options bo, index_t k, index_t p, index_t i) {
  detail::require(p >= 1 && i >= 0 && i < p && k >= p, "build_stage_problem: need 0 <= i < p <= k");
  stage_subgraph sg = stage_graph(micro, a, b);
  stage_problem s;
  s.op_of = std::move(sg.op_of);
  s.in_flight = in_flight(k, p, i);
  s.slots = pipeline_slots(k, p);
  s.degree = p;
  s.built = build_problem(with_global_batch(sg.graph, sg.graph.batch * s.slots), stage_cluster(cl, p),
                          stage_build_options(std::move(bo), k, p));
  const index_t f = s.in_flight;
  if (f > 1) {
    const op_graph& g = s.built.graph;
    const auto facts = analyze(g);
    const auto canon = detail::canonical_ops(g, facts);
    const cost_options co = s.built.options.cost();
    for (std::size_t n = 0; n < g.ops.size(); ++n) {
      auto& node = s.built.prob.nodes[n];
      if (canon[n] != int(n)) {
        node.configs = s.built.prob.nodes[std::size_t(canon[n])].configs;
        continue;
      }
      for (std::size_t c = 0; c < node.configs.size(); ++c)
        node.configs[c].memory =
            stage_op_memory(cost_op(g, int(n), s.built.configs[n][c], s.built.cl, co, facts[n]), f);
    }
    for (auto& e : s.built.prob.edges)
      for (auto& m : e.memory) m *= cost_t(f);
  }
  return s;
}

/// The received input's config of stage s of `pp`, or the one of least (time, memory)
/// of its edges when the plan does not say.
inline op_config receive_config(const pipeline_plan& pp, std::size_t s, const op_graph& sg,
                                const std::vector<op_config>& configs, const cluster& scl, const cost_options& co) {
  if (pp.receive_configs.size() == pp.stage_begin.size() - 1) return pp.receive_configs[s - 1];
  const auto all = enumerate_configs(sg, sg.ops[0], scl.mesh);
  op_config best = all.front();
  double bt = -1, bm = -1;
  for (auto& c : all) {
    auto cs = configs;
    cs[0] = c;
    double t = 0, m = 0;
    for (const auto& e : sg.edges())
      if (e.from == 0) {
        t += edge_time(sg, e, cs[0], cs[std::size_t(e.to)], scl, co).value;
        m += edge_memory(sg, e, cs[0], cs[std::size_t(e.to)], co).value;
      }
    if (bt < 0 || t < bt || (t == bt && m < bm)) { best = c; bt = t; bm = m; }
  }
  return best;
}

/// The cost of `pp` for the full-batch graph `g` on `cl` (see the file comment). Throws
/// invalid_argument when the plan is malformed or a boundary is not a cut point.
inline pipeline_cost evaluate_pipeline(const op_graph& g, const pipeline_plan& pp, const cluster& cl,
                                       const build_options& bo = {}) {
  if (const std::string e = pipeline_plan_error(pp, g.ops.size()); !e.empty()) throw invalid_argument(e);
  detail::require(pp.mesh == cl.mesh, "evaluate_pipeline: the plan is for another mesh");
  const index_t p = pp.degree, k = pp.micro_batches;
  const op_graph micro = with_batch(g, g.batch / k);
  const cluster scl = stage_cluster(cl, p);
  const build_options o = stage_build_options(bo, k, p);
  const cost_options co = o.cost();
  std::vector<strategy_cost> stages;
  cost_t sends = 0;
  for (std::size_t s = 0; s < std::size_t(p); ++s) {
    const std::size_t a = pp.stage_begin[s], b = s + 1 < std::size_t(p) ? pp.stage_begin[s + 1] : g.ops.size();
    const stage_subgraph sg = stage_graph(micro, a, b);
    std::vector<op_config> cs(sg.graph.ops.size());
    for (std::size_t j = 0; j < cs.size(); ++j)
      if (sg.op_of[j] >= 0) cs[j] = pp.configs[std::size_t(sg.op_of[j])];
    if (s > 0) {
      detail::require(sg.op_of.size() > 1 && sg.op_of[0] < 0 && sg.op_of[1] >= 0,
                      "evaluate_pipeline: stage " + std::to_string(s) + " does not start at a cut point (op " +
                          std::to_string(a) + " is reached by more than one tensor)");
      cs[0] = receive_config(pp, s, sg.graph, cs, scl, co);
      const int t = cut_tensor(micro, a);
      detail::require(t >= 0, "evaluate_pipeline: stage " + std::to_string(s) + " starts at op " + std::to_string(a) +
                                  ", which is not a cut point (one tensor must cross)");
      sends += stage_send_time(micro.tensors[std::size_t(t)], cl, p, index_t(s) - 1, o.prec);
    }
    stages.push_back(evaluate_stage(sg.graph, cs, scl, co, in_flight(k, p, index_t(s)), o.reserve));
  }
  return combine_stages(std::move(stages), sends);
}

}  // namespace tensoropt
