// Pipeline plans in the plan file (plan/plan_file.hpp, "tensoropt-plan/2"): writing a
// pipeline frontier point, and reading it back for a graph as a pipeline_plan.
//
// The ops are written as in "/1" (each op's degrees are for its stage's mesh); the
// "pipeline" object adds the degree, the first op of each stage and the layout each
// stage after the first receives its input in (the dims of that stage's received input,
// model/stage_graph.hpp, at the full batch). A "/1" file, or a "/2" file without
// "pipeline", reads as a one-stage pipeline plan.
#pragma once
#include <string>
#include <vector>
#include "pipeline_search.hpp"
#include "pipeline_spec.hpp"
#include "plan_file.hpp"

namespace tensoropt {

namespace detail {
inline plan_file::op_entry plan_entry(const op_node& op, const op_config& c, const device_mesh& m) {
  plan_file::op_entry e;
  e.name = op.name;
  e.label = label_of(op, c, m);
  for (std::size_t d = 0; d < op.dims.size(); ++d) {
    e.dims.emplace_back(op.dims[d].name);
    e.extents.push_back(op.dims[d].extent);
    std::array<std::int32_t, max_levels> deg{};
    for (int L = 0; L < max_levels; ++L) deg[std::size_t(L)] = c.degree[std::size_t(L)][d];
    e.degrees.push_back(deg);
  }
  e.recompute = c.recompute;
  e.shard_optimizer = c.shard_optimizer;
  return e;
}
}  // namespace detail

/// The plan file of pipeline point `q` of full-batch graph `g` on `cl`; `spec` names the
/// model as the user gave it (may be empty).
inline plan_file make_pipeline_plan_file(const op_graph& g, const cluster& cl, const build_options& bo,
                                         const pipeline_point& q, std::string spec = {}) {
  const pipeline_plan& pp = q.plan;
  detail::require(pipeline_plan_error(pp, g.ops.size()).empty(), "make_pipeline_plan_file: " +
                                                                     pipeline_plan_error(pp, g.ops.size()));
  plan_file f;
  f.model = g.name;
  f.spec = std::move(spec);
  f.batch = g.batch;
  f.op_count = g.ops.size();
  f.parameters = g.parameter_count();
  f.nodes = cl.mesh.nodes;
  f.gpus_per_node = cl.mesh.gpus_per_node;
  f.gpu = std::string(cl.gpu_spec.name);
  f.precision = std::string(bo.prec.name);
  f.set_stack(bo);
  f.micro_batches = pp.micro_batches;
  f.time = from_picoseconds(q.time);
  f.memory = from_byte_count(q.reported_memory());  // the runtime peak where the planner replayed it
  f.summary = summarize_pipeline(g, pp);
  const device_mesh sm = stage_mesh(cl.mesh, pp.degree);
  for (std::size_t i = 0; i < g.ops.size(); ++i) f.ops.push_back(detail::plan_entry(g.ops[i], pp.configs[i], sm));
  f.pipeline_degree = pp.degree;
  f.stage_begin = pp.stage_begin;
  if (pp.receive_configs.size() + 1 == pp.stage_begin.size())
    for (std::size_t s = 1; s < pp.stage_begin.size(); ++s) {
      const std::size_t end = s + 1 < pp.stage_begin.size() ? pp.stage_begin[s + 1] : g.ops.size();
      const stage_subgraph sg = stage_graph(g, pp.stage_begin[s], end);
      f.receive.push_back(detail::plan_entry(sg.graph.ops[0], pp.receive_configs[s - 1], sm));
    }
  return f;
}

/// The pipeline plan of `f` for graph `g`: the ops' configs as plan_for_graph reads them,
/// with the stages of "pipeline". Throws invalid_argument when the plan was made for
/// another model (as plan_for_graph) or its stages do not fit the mesh or the graph.
inline pipeline_plan pipeline_plan_for_graph(const plan_file& f, const op_graph& g) {
  const training_plan tp = plan_for_graph(f, g);
  pipeline_plan pp;
  pp.degree = f.pipeline_degree;
  pp.micro_batches = f.micro_batches;
  pp.mesh = tp.mesh;
  pp.configs = tp.configs;
  pp.stage_begin = f.pipeline_degree > 1 ? f.stage_begin : std::vector<std::size_t>{0};
  if (const std::string e = pipeline_plan_error(pp, g.ops.size()); !e.empty())
    throw invalid_argument("plan file: " + e);
  for (std::size_t s = 0; s < f.receive.size(); ++s) {
    const std::size_t a = pp.stage_begin[s + 1], end = s + 2 < pp.stage_begin.size() ? pp.stage_begin[s + 2] : g.ops.size();
    const stage_subgraph sg = stage_graph(g, a, end);
    const op_node& in = sg.graph.ops[0];
    const auto& e = f.receive[s];
    op_config c;
    detail::require(sg.op_of[0] < 0 && e.dims.size() == in.dims.size(),
                    "plan file: pipeline.receive[" + std::to_string(s) + "] does not match the input of stage " +
                        std::to_string(s + 1) + " (op " + std::to_string(a) + " is not a cut point here)");
    for (std::size_t d = 0; d < e.dims.size(); ++d) {
      const int k = in.dim_index(e.dims[d]);
      detail::require(k >= 0 && in.dims[std::size_t(k)].extent == e.extents[d],
                      "plan file: pipeline.receive[" + std::to_string(s) + "] dim '" + e.dims[d] +
                          "' is not a dim of that extent of the stage's input here");
      for (int L = 0; L < max_levels; ++L) c.degree[std::size_t(L)][std::size_t(k)] = e.degrees[d][std::size_t(L)];
    }
    pp.receive_configs.push_back(c);
  }
  return pp;
}

}  // namespace tensoropt
