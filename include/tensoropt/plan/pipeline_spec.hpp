// Hand-written pipeline plans (`--strategy pp=P,tp=T,...`), the Megatron-LM 3D
// baselines built from them, and the one-line summary of a pipeline plan.
//
// plan_from_spec: pp = P stages (a legal pipeline degree of the mesh,
// pipeline_degree_error), each on stage_mesh(mesh, P) and running the spec's Megatron
// strategy there (tp inside a node, dp over the rest of the stage); tp x pp x dp must
// equal the devices (dp defaults to what is left); k >= P micro-batches. The stages are
// the balanced partition of plan/pipeline_search.hpp (the largest repeat<> cut into
// equal stages; the embedding in the first stage, the head and loss in the last).
//
// Megatron 3D baselines (Narayanan et al. 2021, the tp x pp x dp plans of their Table 1,
// with full activation recomputation as they train): every legal triple, not only
// powers of two, each at the micro-batch count among the given ones that makes it
// fastest within the device memory (the least memory when none fits), costed by
// evaluate_pipeline, named "pp 64 x tp 8 x dp 6, k 384" and placed against the frontier.
#pragma once
#include <algorithm>
#include <string>
#include <vector>
#include "pipeline_search.hpp"
#include "report.hpp"
#include "strategy_spec.hpp"
#include "summary.hpp"

namespace tensoropt {

/// The pipeline plan of `s` for the full-batch graph `g` on `mesh` with k micro-batches
/// (see the file comment). Throws invalid_argument naming the problem: an illegal pipeline
/// degree, tp x pp x dp not the device count, k < pp, or a model without a balanced
/// partition into pp stages.
inline pipeline_plan plan_from_spec(const op_graph& g, const device_mesh& mesh, const strategy_spec& s, index_t k) {
  const index_t p = s.pp, n = mesh.devices();
  if (const std::string e = pipeline_degree_error(mesh, p); !e.empty()) throw invalid_argument("--strategy: " + e);
  if (k < p)
    throw invalid_argument("--strategy: pp=" + std::to_string(p) + " needs at least " + std::to_string(p) +
                           " micro-batches under 1F1B (got " + std::to_string(k) + "); raise --micro-batches");
  if (k < 1 || g.batch % k != 0)
    throw invalid_argument("--strategy: " + std::to_string(k) + " micro-batches do not divide the global batch " +
                           std::to_string(g.batch));
  const device_mesh sm = stage_mesh(mesh, p);
  const index_t dp = s.dp ? s.dp : sm.devices() / s.tp;
  if (dp * s.tp * p != n)
    throw invalid_argument("--strategy: tp=" + std::to_string(s.tp) + " x pp=" + std::to_string(p) + " x dp=" +
                           std::to_string(dp) + " = " + std::to_string(dp * s.tp * p) + " devices, but the cluster has " +
                           std::to_string(n) + "; make tp * pp * dp equal the device count");
  const balanced_partition bp = balance_stages(g, p);
  if (!bp.why_not.empty()) throw invalid_argument("--strategy: pp=" + std::to_string(p) + ": " + bp.why_not);
  strategy_spec inner = s;
  inner.pp = 1;
  inner.dp = dp;
  const op_graph micro = with_batch(g, g.batch / k);
  pipeline_plan pp;
  pp.degree = int(p);
  pp.micro_batches = int(k);
  pp.stage_begin = bp.starts;
  pp.mesh = mesh;
  pp.configs.resize(g.ops.size());
  pp.receive_configs.resize(std::size_t(p) - 1);
  for (std::size_t st = 0; st < std::size_t(p); ++st) {
    const std::size_t a = bp.starts[st], b = st + 1 < std::size_t(p) ? bp.starts[st + 1] : g.ops.size();
    const stage_subgraph sg = stage_graph(micro, a, b);
    const auto cs = configs_of(inner, sg.graph, sm);
    for (std::size_t j = 0; j < cs.size(); ++j) {
      if (sg.op_of[j] >= 0) pp.configs[std::size_t(sg.op_of[j])] = cs[j];
      else if (st > 0) pp.receive_configs[st - 1] = cs[j];
    }
  }
  return pp;
}

/// "pp 4 x dp 2 x tp 8, recompute 80/80 layers" (summarize() of the stage configs,
/// prefixed by the pipeline degree when p > 1).
inline std::string summarize_pipeline(const op_graph& g, const pipeline_plan& pp) {
  const std::string s = summarize(g, pp.configs);
  return pp.degree > 1 ? "pp " + std::to_string(pp.degree) + " x " + s : s;
}

/// The Megatron 3D baselines (see the file comment) of `g` on `cl` over the counts `ks`,
/// placed against the pipeline frontier `frontier` (may be empty).
inline std::vector<baseline_result> megatron_3d_baselines(const op_graph& g, const cluster& cl,
                                                          const build_options& bo,
                                                          const std::vector<pipeline_point>& frontier,
                                                          const std::vector<index_t>& ks) {
  std::vector<baseline_result> out;
  const double cap = cl.gpu_spec.capacity.value;
  for (index_t p : legal_pipeline_degrees(g, cl.mesh)) {
    if (!balance_stages(g, p).why_not.empty()) continue;
    const device_mesh sm = stage_mesh(cl.mesh, p);
    for (index_t t = 1; t <= sm.gpus_per_node; ++t) {
      if (sm.gpus_per_node % t) continue;
      strategy_spec s;
      s.pp = p;
      s.tp = t;
      s.recompute = strategy_spec::recompute_kind::full;
      baseline_result b;
      b.name = "pp " + std::to_string(p) + " x tp " + std::to_string(t) + " x dp " + std::to_string(sm.devices() / t);
      bool have = false;
      index_t best_k = 0;
      for (index_t k : ks) {
        if (k < p) continue;
        pipeline_cost c;
        try {
          c = evaluate_pipeline(g, plan_from_spec(g, cl.mesh, s, k), cl, bo);
        } catch (const invalid_argument& e) {
          if (b.summary.empty()) b.summary = e.what();
          continue;
        }
        const double tm = double(c.time) / ps_per_second, m = double(c.memory);
        const bool fits = m <= cap, had_fit = have && b.memory <= cap;
        if (!have || (fits && (!had_fit || tm < b.time)) || (!fits && !had_fit && m < b.memory)) {
          b.time = tm;
          b.memory = m;
          best_k = k;
          have = true;
        }
      }
      if (!have) {  // the degrees do not divide the model's dims at any k: say why
        b.valid = false;
        out.push_back(std::move(b));
        continue;
      }
      b.summary.clear();
      b.name += ", k " + std::to_string(best_k);
      const pipeline_point* best = nullptr;
      for (auto& q : frontier)
        if (double(q.memory) <= b.memory) best = &q;
      if (b.memory > cap) b.summary = "does not fit " + format_bytes(cl.gpu_spec.capacity);
      else if (best) b.summary = "frontier " + detail::fmt("%.2f", b.time / (double(best->time) / ps_per_second)) + "x faster";
      out.push_back(std::move(b));
    }
  }
  return out;
}

}  // namespace tensoropt
