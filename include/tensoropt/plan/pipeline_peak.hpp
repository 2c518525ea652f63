// The predicted peak memory of one device of a pipeline stage under 1F1B: a replay of
// the buffers the runtime's stage executor (runtime/stage_executor.hpp) allocates and
// frees in one step, with the cost model's sizes. The pipeline planner reports it for
// every plan it returns (plan/pipeline_planner.hpp: the most of any stage), and the
// runtime prints it next to its measured stage peaks.
//
// plan/memory_peak.hpp replays one micro-batch of an ordinary plan. A stage differs in
// three ways, and the replay follows the runtime in each:
//  - persistent state: the parameters the stage's ops read, each in its first
//    stage-user's layout (a parameter another stage also reads, GPT's tied token
//    table, is held by both), its optimizer state (split over its replicas under
//    shard_optimizer) and gradient buffers; plus the cost model's reserve;
//  - crossings (plan/stage_crossings.hpp): a received input arrives as this device's box of
//    the wire layout and is moved into the received layout (both held for a moment);
//    its readers fetch it from there like any producer's output, and its gradient is
//    summed in that layout until the micro-batch's backward ends, then cut to the
//    wire box. An output another stage reads is moved into each crossing's wire layout
//    (held while it is handed out); its gradient shares arrive in the wire layout and
//    are moved into the producer's gradient layout;
//  - 1F1B order (runtime/pipeline.hpp): stage s of p with k micro-batches runs
//    w = min(p - s - 1, k) forwards, then k - w pairs (forward m + w, backward m),
//    then w backwards. Each micro-batch's kept buffers (saved inputs, the producer's
//    shard of a gathered input, kernel state) live from its forward to its backward,
//    so at most f = min(k, p - s) are held at once (Narayanan et al., SC'21, sec.
//    2.2.1: stage s holds p - s micro-batches), next to the working set of the op
//    that runs.
// Then the update: per parameter, the gradient in the optimizer's layout, the parts
// of other users, a shared parameter's whole summed gradient, and under
// shard_optimizer the local slice and the gathered weights.
//
// Buffer sizes come from the placements the runtime uses (cost/placement.hpp, the same
// degrees as the cost model's local shards), precision bytes from the build options,
// and each op's kernel state from cost_op's kernel_state. Every member of a stage has
// the same shard sizes, so the replay is of member 0. What is not modelled: the
// communicator's message copies (host memory, not charged to the device) and the
// scratch buffers of a redistribution (uncounted in the runtime too).
//
// Layout: plan/stage_layout.hpp builds the buffers' layouts and sizes, and
// plan/stage_replay.hpp replays them in the 1F1B order (min(k, p - s) micro-batches
// give the peak of all k; see there). A plan's stages share one micro-batch graph and
// its analysis.
#pragma once
#include <algorithm>
#include <string>
#include <vector>
#include "pipeline_plan.hpp"
#include "stage_replay.hpp"

namespace tensoropt {

namespace detail {
/// Stage s of `pp` on the micro-batch graph `mg` (analysis `facts`), stage cluster `scl`.
inline stage_memory_prediction stage_peak_of(const op_graph& mg, const std::vector<op_facts>& facts,
                                             placement_cache& cache, const pipeline_plan& pp, int s,
                                             const cluster& scl, const build_options& o, int micro_batches = 0) {
  return stage_replay(mg, pp, s, scl, o, facts, cache).run(s, micro_batches);
}
inline cluster stage_cluster_of(const cluster& cl, const pipeline_plan& pp) {
  cluster scl = cl;
  scl.mesh = stage_mesh(cl.mesh, pp.degree);
  return scl;
}
}  // namespace detail

/// The prediction for stage s of `pp` on graph `g` (the global-batch graph), with the
/// cluster `cl` of the whole plan and the planner's build options (their micro-batch
/// count is taken from the plan). Throws invalid_argument for a malformed plan.
inline stage_memory_prediction predicted_stage_peak(const op_graph& g, const pipeline_plan& pp, int s,
                                                    const cluster& cl, build_options o = {}) {
  if (const auto e = pipeline_plan_error(pp, g.ops.size()); !e.empty()) throw invalid_argument(e);
  if (s < 0 || s >= pp.degree)
    throw invalid_argument("stage " + std::to_string(s) + " of a " + std::to_string(pp.degree) + "-stage plan");
  o.micro_batches = pp.micro_batches;
  const op_graph mg = with_batch(g, g.batch / pp.micro_batches);
  const cluster scl = detail::stage_cluster_of(cl, pp);
  detail::placement_cache cache(scl.mesh);
  return detail::stage_peak_of(mg, analyze(mg), cache, pp, s, scl, o);
}

/// Every stage's predicted memory (stage_memory_prediction) and the most of any.
struct pipeline_memory_peak {
  std::vector<stage_memory_prediction> stages;  ///< per stage, in stage order
  int stage = 0;                                ///< the stage that holds the most
  double peak() const { return stages.empty() ? 0.0 : stages[std::size_t(stage)].peak(); }
};

namespace detail {
/// predicted_pipeline_peak with the placements memoized in `cache` (on the stage mesh of
/// `pp`; plans of one pipeline degree can share it).
inline pipeline_memory_peak pipeline_peak_of(const op_graph& g, const pipeline_plan& pp, const cluster& cl,
                                             build_options o, placement_cache& cache) {
  if (const auto e = pipeline_plan_error(pp, g.ops.size()); !e.empty()) throw invalid_argument(e);
  o.micro_batches = pp.micro_batches;
  const op_graph mg = with_batch(g, g.batch / pp.micro_batches);
  const auto facts = analyze(mg);
  const cluster scl = stage_cluster_of(cl, pp);
  require<runtime_error>(cache.mesh() == scl.mesh, "pipeline peak: internal error, a placement cache of another mesh");
  pipeline_memory_peak r;
  for (int s = 0; s < pp.degree; ++s) {
    r.stages.push_back(stage_peak_of(mg, facts, cache, pp, s, scl, o));
    if (r.stages.back().peak() > r.stages[std::size_t(r.stage)].peak()) r.stage = s;
  }
  return r;
}
}  // namespace detail

/// The prediction for every stage of `pp` (see predicted_stage_peak).
/// Throws invalid_argument for a malformed plan.
inline pipeline_memory_peak predicted_pipeline_peak(const op_graph& g, const pipeline_plan& pp, const cluster& cl,
                                                    const build_options& o = {}) {
  if (const auto e = pipeline_plan_error(pp, g.ops.size()); !e.empty()) throw invalid_argument(e);
  detail::placement_cache cache(detail::stage_cluster_of(cl, pp).mesh);
  return detail::pipeline_peak_of(g, pp, cl, o, cache);
}

}  // namespace tensoropt
