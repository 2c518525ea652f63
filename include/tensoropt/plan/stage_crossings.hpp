// The layouts of the tensors that cross a pipeline stage boundary: in which layout a
// stage receives each activation, and which share of it each device sends.
//
// A tensor t made in stage a and read in a later stage b travels once per micro-batch
// (and its gradient once back). Both stages have the same mesh (plan/pipeline_plan.hpp's
// stage_mesh), so member i of a and member i of b are peers, and a placement on that
// mesh names a box per member on either side:
//  - the received layout R (`recv`): the layout the plan's receive config gives the
//    stage's received input (pipeline_plan::receive_configs, a config of the recv op of
//    model/stage_graph.hpp), for the first tensor that crosses into b; for a tensor the
//    plan does not give a layout (no receive configs, or a second tensor crossing a cut
//    that is not a cut point), the layout its first reader in b wants, so that reader
//    takes it as it is;
//  - the wire layout W (`wire`): R with each box split over the members that hold the
//    same box (along the first axis their count divides), so that every member sends a
//    distinct share. Peers send and receive W's box: S / d floats per device when R
//    holds each element on r members and r divides an axis (S the tensor, d the
//    stage's members), the scatter of Narayanan et al. (SC'21, sec. 4.1) that the cost
//    model (cost/pipeline_cost.hpp) charges as S / d per device.
// The sender redistributes its output from the producer's layout into W inside its
// stage, sends its box, and the receiver redistributes W into R inside its stage (the
// gather; nothing when R has no replicas). Gradients go back the other way: the
// receiver's gradient of t, summed in R, is cut to W's box (a local slice) and sent;
// the sender adds the shares of every reading stage (in stage order) in W and moves
// them into the producer's gradient layout. The runtime's stage executor
// (runtime/stage_executor.hpp) moves data along these layouts; the planner's stage
// replay (plan/pipeline_peak.hpp) sizes its buffers with them.
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>
#include "../cost/placement.hpp"
#include "../model/op_range.hpp"
#include "../model/stage_graph.hpp"
#include "pipeline_plan.hpp"
#include "placement_cache.hpp"

namespace tensoropt {

/// One tensor crossing into a stage: its layouts there (see the file comment).
struct crossing {
  int tensor = -1;     ///< the tensor (index into the graph's tensors)
  int from_stage = 0;  ///< the stage that makes it
  int to_stage = 0;    ///< the stage that reads it
  placement recv;      ///< R: where the reading stage holds it
  placement wire;      ///< W: the box each member sends to its peer
};

/// The tensors that cross into stage `b` of `pp` (each once, in tensor order), on the
/// micro-batch graph `g`; `mesh` is the stage's mesh. `cache` (on `mesh`, optional)
/// memoizes the layouts. Throws invalid_argument when a receive config is not a legal
/// config of the stage's received input.
inline std::vector<crossing> crossings_into(const op_graph& g, const pipeline_plan& pp, int b, const device_mesh& mesh,
                                            detail::placement_cache* cache = nullptr) {
  auto placed = [&](const op_node& op, const tensor_map& m, const tensor_info& t, const op_config& c, bool split) {
    if (cache) return cache->get(op, m, t, c, false, split);
    placement pl = place(op, m, t, c, mesh, false);
    if (split) split_over_replicas(pl);
    return pl;
  };
  const std::size_t begin = pp.stage_begin[std::size_t(b)];
  const std::size_t end = b + 1 < pp.degree ? pp.stage_begin[std::size_t(b) + 1] : g.ops.size();
  std::vector<crossing> out;
  for (int t : ops_of_range(g, op_range{begin, end}).inputs) {
    crossing c;
    c.tensor = t;
    c.to_stage = b;
    c.from_stage = stage_of_op(pp, std::size_t(g.tensors[std::size_t(t)].producer));
    const tensor_info& ti = g.tensors[std::size_t(t)];
    for (std::size_t j = begin; j < end && c.recv.box.empty(); ++j)  // the first reader's layout
      for (const auto& m : g.ops[j].inputs)
        if (m.tensor == t) {
          c.recv = placed(g.ops[j], m, ti, pp.configs[j], false);
          c.wire = placed(g.ops[j], m, ti, pp.configs[j], true);
          break;
        }
    out.push_back(std::move(c));
  }
  const int first = first_received(g, begin, end);  // stage_graph's first op receives it
  if (b > 0 && first >= 0 && pp.receive_configs.size() + 1 == pp.stage_begin.size()) {
    const op_node r = received_op(g, first);
    const op_config& rc = pp.receive_configs[std::size_t(b) - 1];
    try {
      validate_config(r, rc, mesh);
    } catch (const invalid_argument& e) {
      throw invalid_argument("the receive config of pipeline stage " + std::to_string(b) + " does not fit its input: " +
                             e.what());
    }
    for (auto& c : out)
      if (c.tensor == first) {
        c.recv = placed(r, r.output, g.tensors[std::size_t(c.tensor)], rc, false);
        c.wire = placed(r, r.output, g.tensors[std::size_t(c.tensor)], rc, true);
      }
  }
  return out;
}

/// What crosses stage `s`'s edges: `in` the tensors it receives, `out` those it sends
/// (each crossing once per reading stage, in tensor order, then stage order).
struct stage_crossings {
  std::vector<crossing> in, out;
};

/// The crossings of stage `s` of `pp` on the micro-batch graph `g` (see crossings_into).
inline stage_crossings crossings_of(const op_graph& g, const pipeline_plan& pp, int s,
                                    detail::placement_cache* cache = nullptr) {
  const device_mesh mesh = stage_mesh(pp.mesh, pp.degree);
  stage_crossings r;
  r.in = crossings_into(g, pp, s, mesh, cache);
  std::vector<crossing> out;
  // only the later stages that read a tensor made here (one pass over their ops)
  const std::size_t begin = pp.stage_begin[std::size_t(s)];
  const std::size_t end = s + 1 < pp.degree ? pp.stage_begin[std::size_t(s) + 1] : g.ops.size();
  std::vector<bool> reads(std::size_t(pp.degree), false);
  for (std::size_t j = end, b = std::size_t(s); j < g.ops.size(); ++j) {
    while (b + 1 < pp.stage_begin.size() && pp.stage_begin[b + 1] <= j) ++b;
    for (auto& m : g.ops[j].inputs) {
      const auto q = std::size_t(g.tensors[std::size_t(m.tensor)].producer);
      if (q >= begin && q < end && g.ops[q].kind != op_kind::input) reads[b] = true;
    }
  }
  for (int b = s + 1; b < pp.degree; ++b)
    if (reads[std::size_t(b)])
      for (auto& c : crossings_into(g, pp, b, mesh, cache))
        if (c.from_stage == s) out.push_back(std::move(c));
  std::stable_sort(out.begin(), out.end(), [](const crossing& x, const crossing& y) { return x.tensor < y.tensor; });
  r.out = std::move(out);
  return r;
}

}  // namespace tensoropt
