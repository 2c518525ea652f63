// The answer of `solve` (search/solve.hpp): a problem's frontier and how it was found.
//
// `points` is a staircase (memory ascending, time strictly descending); every point
// is the exact cost of its strategy in the problem. The other fields say whether the
// frontier is exact (no epsilon pruning, no width fallback) and how large the search
// became, so a caller can report it next to the points.
#pragma once
#include <cstddef>
#include <string>
#include <vector>
#include "frontier_point.hpp"

namespace tensoropt {

struct frontier_result {
  std::vector<frontier_point> points;
  bool exact = true;           ///< false under epsilon > 0 or the width fallback
  bool width_fallback = false; ///< true when configs were restricted to fit width_limit
  bool restricted = false;     ///< true when a stated restriction applies (search/repeated.hpp)
  bool skipped = false;        ///< bounds from other searches made this one unnecessary (note says why)
  bool bounded = false;        ///< other searches' points joined this one's bound and may have dropped its points (exact for their union)
  double epsilon = 0;          ///< the bound requested
  std::size_t max_width = 0;   ///< most nodes in one factor made by the search
  std::size_t max_cells = 0;   ///< most cells in one factor made by the search
  std::size_t trace_entries = 0;
  std::size_t prune_depth = 0; ///< most epsilon-pruned factors on one path (see solve.hpp)
  std::size_t replayed = 0;    ///< eliminations replayed from an identical earlier one
  std::size_t parallel_joins = 0; ///< factors over one scope joined before an elimination (solve.hpp)
  std::string note;            ///< what the fallback did, if it ran
};

}  // namespace tensoropt
