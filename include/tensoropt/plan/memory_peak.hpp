// The predicted peak memory of a plan on the runtime: what the plan keeps, in the
// order the runtime creates and frees it, plus the working set of the op that runs.
//
// The search optimizes the additive memory (parameters, gradients, optimizer state,
// saved activations, recompute checkpoints, the reserve: evaluate()). The runtime
// holds more at some moments and less at others:
//  - it holds the working set of the running op (op_cost::working_fwd: its output
//    and the inputs it does not keep, e.g. a concat's inputs and output at once;
//    working_bwd: the output gradient, input and parameter gradients, and under
//    recompute the rebuilt state; plus, per incoming edge whose layouts differ, the
//    input gradient redistributed into the producer's layout);
//  - what op i keeps (its activations and the saved inputs / checkpoints charged on
//    its incoming edges) exists from op i's forward to op i's backward;
//  - under recompute, backward rebuilds a layer's segment when it reaches the layer's
//    last recomputed op: at the backward of a recomputed op the rebuilt state of the
//    layer's earlier recomputed ops is alive too (op_cost::recompute_working is this
//    working set spread over the layers for the additive memory; here it is placed).
// So, with S the parameter state (allocated for the whole run, gradients included)
// plus the reserve, and K_i what op i keeps (micro-batch; ops in forward order):
//   forward of op j:  S + sum_{i<j} K_i + working_fwd_j
//   backward of op j: S + sum_{i<=j} K_i + working_bwd_j
//   peak = max over j of both (one micro-batch at a time: gradients accumulate into
//   the persistent buffers, so every micro-batch has the same profile).
// It is at most additive + max_j working set (the conservative fold, also returned);
// it is at least the additive memory less the recompute working sets (which the
// additive memory spreads over the layers and this places where they occur). Simplifications: a saved input is counted from its consumer's
// forward (it exists from its producer's), a recompute working set is counted as
// kept; the tests hold predictions and measurements together.
//
// The max over ops is not additive, so the search's frontier is over the additive
// memory; peak() is what a chosen plan is held to on the runtime.
#pragma once
#include <algorithm>
#include <vector>
#include "build_problem.hpp"
#include "strategy.hpp"

namespace tensoropt {

/// A plan's memory on the runtime (bytes per device).
struct memory_peak {
  double kept = 0;          ///< the additive memory: evaluate(), what the search optimizes
  double ordered = 0;       ///< the ordered peak (file comment)
  double conservative = 0;  ///< kept + the largest working set of any op
  int op = -1;              ///< the op at whose forward or backward `ordered` is reached
  constexpr double peak() const { return ordered; }
};

/// The memory of `configs` on the micro-batch graph `g` (see the file comment).
constexpr memory_peak predicted_peak(const op_graph& g, const std::vector<op_config>& configs, const cluster& cl,
                                     const build_options& o = {}) {
  memory_peak m;
  m.kept = double(evaluate(g, configs, cl, o).memory);
  const cost_options co = o.cost();
  const auto facts = analyze(g);
  const std::size_t n = g.ops.size();
  std::vector<double> keep(n, 0.0), wf(n, 0.0), wb(n, 0.0);
  double state = o.reserve.value, widest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const op_cost c = cost_op(g, int(i), configs[i], cl, co, facts[i]);
    state += c.param_state.value;
    keep[i] = c.activations.value;
    wf[i] = c.working_fwd.value;
    wb[i] = c.working_bwd.value;
    // backward of a recomputed op of a layer runs after the layer's segment was
    // rebuilt: the rebuilt state of the layer's earlier recomputed ops is alive too
    for (std::size_t k = i; k-- > 0 && g.ops[k].repeat_id >= 0 && detail::same_instance(g.ops[k], g.ops[i]);)
      if (configs[i].recompute && configs[k].recompute)
        wb[i] += cost_op(g, int(k), configs[k], cl, co, facts[k]).recompute_working.value * double(facts[k].repeats);
  }
  for (const auto& e : g.edges()) {
    const auto& cu = configs[std::size_t(e.from)];
    const auto& cv = configs[std::size_t(e.to)];
    keep[std::size_t(e.to)] += edge_memory(g, e, cu, cv, co).value;
    // an input gradient in another layout is redistributed into a new buffer
    const auto& t = g.tensors[std::size_t(e.tensor)];
    const auto& u = g.ops[std::size_t(e.from)];
    if (!t.integer && u.kind != op_kind::input && !detail::same_split(g, e, cu, cv))
      wb[std::size_t(e.to)] += detail::local_elements(g, u, u.output, cu) * detail::elem_bytes(t, o.prec);
  }
  for (std::size_t i = 0; i < n; ++i) widest = std::max({widest, wf[i], wb[i]});
  double prefix = state;
  for (std::size_t j = 0; j < n; ++j) {
    const double f = prefix + wf[j], b = prefix + keep[j] + wb[j];
    if (f > m.ordered || b > m.ordered) {
      m.ordered = std::max(f, b);
      m.op = int(j);
    }
    prefix += keep[j];
  }
  m.ordered = std::max(m.ordered, prefix);
  m.conservative = m.kept + widest;
  return m;
}

}  // namespace tensoropt
