// A plan: one chosen point of a planned frontier, the handle every query returns.
//
//   const auto frontier = to::plan_frontier(graph, cluster);
//   if (auto p = frontier.fastest_within(40_GiB)) {
//     std::printf("%s per step, %s per device\n", format_seconds(p->time()).c_str(),
//                 format_bytes(p->memory()).c_str());
//     to::runtime::trainer t(p->graph(), p->training_plan(), world);
//   }
//
// A plan is a small handle (the frontier and a position in it): it is valid while
// the planned_frontier it came from lives and is not moved or changed. Its time and
// memory come out as the typed quantities of core/units.hpp (seconds per iteration,
// bytes per device, as the cost model predicts), and `training_plan()` gives what
// the runtime executes: one op config per op, the micro-batch count and the mesh.
//
// The members are defined in plan/planned_frontier.hpp (which this header includes
// at its end), since a plan reads through to its frontier.
#pragma once
#include <cstddef>
#include <string>
#include <vector>
#include "../core/units.hpp"
#include "../cost/config.hpp"
#include "../model/graph.hpp"
#include "../search/frontier_point.hpp"
#include "training_plan.hpp"

namespace tensoropt {

struct planned_frontier;

class plan {
 public:
  /// The plan at position `index` of `pf` (points sorted by memory ascending).
  plan(const planned_frontier& pf, std::size_t index) : pf_(&pf), index_(index) {}

  /// Position in the frontier: 0 is the least memory, size() - 1 the fastest.
  std::size_t index() const { return index_; }
  /// Predicted iteration time (all micro-batches, gradient sync and update).
  seconds time() const;
  /// Predicted peak memory per device on the runtime (plan/memory_peak.hpp's replay),
  /// or the additive memory where the planner did not replay the point.
  bytes memory() const;
  /// The additive memory the search optimized (the problem's sum over ops and edges).
  bytes additive_memory() const;
  /// The gradient-accumulation count k.
  int micro_batches() const;
  /// The frontier point: exact integer costs, config index and label per op.
  const frontier_point& point() const;
  /// One op_config per op of the graph (graph order).
  std::vector<op_config> op_configs() const;
  /// What the runtime executes: op configs, micro-batch count, device mesh.
  tensoropt::training_plan training_plan() const;
  /// "dp 4 x tp 2, recompute 12/24 layers".
  std::string summary() const;
  /// The full-batch graph that was planned.
  const op_graph& graph() const;
  /// The frontier this plan belongs to.
  const planned_frontier& frontier() const { return *pf_; }

  friend bool operator==(const plan& a, const plan& b) { return a.pf_ == b.pf_ && a.index_ == b.index_; }

 private:
  const planned_frontier* pf_;
  std::size_t index_;
};

}  // namespace tensoropt

#include "planned_frontier.hpp"
