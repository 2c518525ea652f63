// The predicted peak memory of one device of a pipeline stage under 1F1B, from the
// planner's per-op cost model, to hold the runtime's measured peak against.
//
// plan/memory_peak.hpp predicts one micro-batch's profile on a plan: with S the
// parameter state plus the reserve and K_i what op i keeps,
//   forward of op j:  S + sum_{i<j} K_i + working_fwd_j
//   backward of op j: S + sum_{i<=j} K_i + working_bwd_j.
// A stage does the same over its own ops, with two changes:
//  - S counts the parameters the stage's ops read, each once in the stage (a
//    parameter shared with another stage, GPT's tied token table, is held in both:
//    op_facts::owned_params is recomputed per stage);
//  - under 1F1B (pipeline.hpp) stage s of p holds the kept activations of up to
//    f = min(k, p - s) micro-batches: when the oldest one's backward runs, f - 1
//    others have run their forward and wait. So
//      peak_s = ordered profile of one micro-batch + (f - 1) * sum_i K_i
//    (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
//    Clusters Using Megatron-LM", SC'21, sec. 2.2.1: 1F1B keeps at most p
//    micro-batches in flight, stage s at most p - s).
// A tensor that crosses a stage edge arrives whole (pipeline.hpp): its consumers keep
// their own slices (not the producer's shard, which edge_memory assumes for a pure
// all-gather edge), and a recomputed consumer keeps its input even when the producer
// is in the same layer (the producer runs in another stage, so nothing can rebuild
// it); detail::boundary_input_kept counts these. Not modelled: the receiving stage
// briefly holds the whole boundary activation during forward (and the sending stage
// a whole boundary gradient in backward) where the model counts the consumer's
// shard; this matters when the stage's config splits that tensor over many devices.
#pragma once
#include <algorithm>
#include <vector>
#include "../cost/edge_cost.hpp"
#include "../plan/memory_peak.hpp"
#include "../plan/pipeline_plan.hpp"

namespace tensoropt::runtime {

/// One stage's predicted memory per device (bytes).
struct stage_memory_prediction {
  int in_flight = 1;        ///< f = min(k, p - s) micro-batches held at once
  double state = 0;         ///< parameters, gradients, optimizer state + reserve
  double kept = 0;          ///< what one micro-batch keeps for backward (sum of K_i)
  double one_micro = 0;     ///< the ordered peak of one micro-batch (state included)
  double peak() const { return one_micro + double(in_flight - 1) * kept; }
};

namespace detail {
/// Bytes op e.to keeps of a boundary input (made in an earlier stage): the tensor
/// arrives whole, so the consumer keeps its own slice, never the producer's shard,
/// and a recomputed consumer keeps it too (its producer cannot be re-run here). A
/// consumer that reads the whole tensor shares the received buffer with the other
/// such readers: charged once.
inline double boundary_input_kept(const op_graph& g, const graph_edge& e, const op_config& cv, const cost_options& o,
                                  std::vector<bool>& whole_kept) {
  const op_node& v = g.ops[std::size_t(e.to)];
  const auto& t = g.tensors[std::size_t(e.tensor)];
  if (!cv.recompute && !tensoropt::detail::saves_input(v, e.slot)) return 0;
  const double local = tensoropt::detail::local_elements(g, v, v.inputs[std::size_t(e.slot)], cv);
  if (local == double(t.size())) {
    if (whole_kept[std::size_t(e.tensor)]) return 0;
    whole_kept[std::size_t(e.tensor)] = true;
  }
  if (cv.recompute) return local * tensoropt::detail::elem_bytes(t, o.prec);
  double b = 0;
  for (auto& sv : v.saved) {
    if (sv.input != e.slot) continue;
    double n = sv.multiplier;
    for (std::size_t d = 0; d < v.dims.size(); ++d)
      if (sv.dims >> d & 1u) n *= double(v.dims[d].extent) / double(cv.total_degree(int(d)));
    b += n * (sv.elem_bytes > 0 ? sv.elem_bytes : tensoropt::detail::elem_bytes(t, o.prec));
  }
  return b;
}
}  // namespace detail

/// The prediction for stage s of `pp` on graph `g` (the global-batch graph), with
/// the cluster `cl` of the whole plan and the planner's build options (their
/// micro-batch count is taken from the plan).
inline stage_memory_prediction predicted_stage_peak(const op_graph& g, const pipeline_plan& pp, int s,
                                                    const cluster& cl, build_options o = {}) {
  if (const auto e = pipeline_plan_error(pp, g.ops.size()); !e.empty()) throw invalid_argument(e);
  if (s < 0 || s >= pp.degree)
    throw invalid_argument("stage " + std::to_string(s) + " of a " + std::to_string(pp.degree) + "-stage plan");
  o.micro_batches = pp.micro_batches;
  const op_graph mg = with_batch(g, g.batch / pp.micro_batches);
  cluster scl = cl;
  scl.mesh = stage_mesh(cl.mesh, pp.degree);
  const std::size_t lo = pp.stage_begin[std::size_t(s)],
                    hi = s + 1 < pp.degree ? pp.stage_begin[std::size_t(s) + 1] : mg.ops.size();
  const std::size_t n = mg.ops.size();
  // the ops that run here: the range and the input ops it reads
  std::vector<bool> here(n, false);
  for (std::size_t j = lo; j < hi; ++j) {
    here[j] = true;
    for (auto& m : mg.ops[j].inputs)
      if (const int p = mg.tensors[std::size_t(m.tensor)].producer; mg.ops[std::size_t(p)].kind == op_kind::input)
        here[std::size_t(p)] = true;
  }
  auto facts = analyze(mg);
  std::vector<bool> seen(mg.tensors.size(), false);
  for (std::size_t i = 0; i < n; ++i) {
    facts[i].owned_params = 0;
    if (!here[i]) continue;
    for (std::size_t j = 0; j < mg.ops[i].params.size(); ++j) {
      const int t = mg.ops[i].params[j].tensor;
      if (!seen[std::size_t(t)]) facts[i].owned_params |= 1u << j;
      seen[std::size_t(t)] = true;
    }
  }
  const cost_options co = o.cost();
  const auto& cfg = pp.configs;
  std::vector<double> keep(n, 0.0), wf(n, 0.0), wb(n, 0.0);
  stage_memory_prediction r;
  r.in_flight = std::min(pp.micro_batches, pp.degree - s);
  r.state = o.reserve.value;
  for (std::size_t i = 0; i < n; ++i) {
    if (!here[i]) continue;
    const op_cost c = cost_op(mg, int(i), cfg[i], scl, co, facts[i]);
    r.state += c.param_state.value;
    keep[i] = c.activations.value;
    wf[i] = c.working_fwd.value;
    wb[i] = c.working_bwd.value;
    for (std::size_t k = i; k-- > lo && mg.ops[k].repeat_id >= 0 && tensoropt::detail::same_instance(mg.ops[k], mg.ops[i]);)
      if (cfg[i].recompute && cfg[k].recompute)
        wb[i] += cost_op(mg, int(k), cfg[k], scl, co, facts[k]).recompute_working.value * double(facts[k].repeats);
  }
  std::vector<bool> whole_kept(mg.tensors.size(), false);
  for (const auto& e : mg.edges()) {
    if (!here[std::size_t(e.to)]) continue;
    const auto& cu = cfg[std::size_t(e.from)];
    const auto& cv = cfg[std::size_t(e.to)];
    if (!here[std::size_t(e.from)]) {  // a boundary input: what the runtime keeps (file comment)
      keep[std::size_t(e.to)] += detail::boundary_input_kept(mg, e, cv, co, whole_kept);
      continue;
    }
    keep[std::size_t(e.to)] += edge_memory(mg, e, cu, cv, co).value;
    const auto& t = mg.tensors[std::size_t(e.tensor)];
    const auto& u = mg.ops[std::size_t(e.from)];
    if (!t.integer && u.kind != op_kind::input && !tensoropt::detail::same_split(mg, e, cu, cv))
      wb[std::size_t(e.to)] += tensoropt::detail::local_elements(mg, u, u.output, cu) * tensoropt::detail::elem_bytes(t, o.prec);
  }
  double prefix = r.state;
  for (std::size_t j = 0; j < n; ++j) {
    if (!here[j]) continue;
    r.one_micro = std::max({r.one_micro, prefix + wf[j], prefix + keep[j] + wb[j]});
    prefix += keep[j];
    r.kept += keep[j];
  }
  r.one_micro = std::max(r.one_micro, prefix);
  return r;
}

}  // namespace tensoropt::runtime
