// One point of a solved frontier: its exact cost and a strategy that attains it.
//
// This is the one point type of every answer the library gives: `solve` returns
// them (search/frontier_result.hpp), the planner keeps them per micro-batch count
// and as their union (plan/planned_frontier.hpp), and the frontier file
// "tensoropt-frontier/2" (search/frontier_json.hpp) writes and reads them.
//
// Costs stay the search's exact integers (picoseconds, bytes) so that a point
// re-costed from its problem compares equal; `seconds_of` / `bytes_of` give the
// typed quantities of core/units.hpp. The search's own working points (a cost and a
// back-pointer, search/frontier.hpp) are internal to the algebra and never leave it.
//
// Fields:
//   time, memory    picoseconds per iteration, bytes per device (the sum of the
//                   problem's node and edge costs plus its memory offset)
//   choice          config index per problem node (the strategy)
//   micro_batches   the gradient-accumulation count k of the problem it came from
//                   (1 when the problem says nothing about k)
//   labels          the config label per node ("b2 n2 rc"); empty until the point is
//                   labelled against its problem (`label_points`)
//   peak            the plan's predicted peak on the runtime, bytes per device (the
//                   replay of plan/memory_peak.hpp); 0 where it was not computed (a
//                   bare problem file has no model to replay). Budget queries compare
//                   `budget_memory`: the peak where known, else `memory`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "../core/units.hpp"
#include "problem.hpp"

namespace tensoropt {

struct frontier_point {
  cost_t time = 0, memory = 0;  ///< picoseconds, bytes
  std::vector<int> choice;
  int micro_batches = 1;
  std::vector<std::string> labels{};
  cost_t peak = 0;  ///< bytes; 0 = not computed
  constexpr bool operator==(const frontier_point&) const = default;
};

/// The point's iteration time and memory per device as typed quantities.
constexpr seconds seconds_of(const frontier_point& p) { return from_picoseconds(p.time); }
constexpr bytes bytes_of(const frontier_point& p) { return from_byte_count(p.memory); }
/// The memory a budget is held against: the runtime peak where known, else the additive memory.
constexpr cost_t budget_memory(const frontier_point& p) { return p.peak > 0 ? p.peak : p.memory; }

}  // namespace tensoropt
