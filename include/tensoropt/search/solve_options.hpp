// The options and answers of the exact search (search/solve.hpp): what `solve` is asked
// (epsilon, width limit, config grouping, memory limit, the memory the search may hold),
// what it reports while it runs, and the table `solve_conditioned` returns.
//
// `max_bytes` = 0 means three quarters of the physical memory (`detail::default_max_bytes`),
// read with sysconf where the platform has it, else 8 GiB. Searches running at once (the
// planner solves several micro-batch counts in parallel) divide it among themselves.
#pragma once
#include <cstddef>
#include <limits>
#include <string>
#include <vector>
#if __has_include(<unistd.h>)
#include <unistd.h>
#endif
#include "frontier.hpp"
#include "problem.hpp"

namespace tensoropt {

/// Options of `solve`.
struct solve_options {
  double epsilon = 0;                              ///< 0: exact; else see the header
  std::size_t width_limit = std::size_t(1) << 22;  ///< most cells of one factor table
  bool group_configs = true;                       ///< group configs with identical edges
  /// Only points with memory <= memory_limit are wanted (e.g. the device capacity):
  /// partial strategies above it are dropped as soon as they appear. Exact for the
  /// frontier below the limit, since every cost is non-negative.
  cost_t memory_limit = std::numeric_limits<cost_t>::max();
  /// Back-pointers no live point can reach are dropped when the arena has grown by this
  /// many entries (and doubled) since the last compaction; bounds memory on large problems.
  std::size_t compact_after = std::size_t(1) << 20;
  /// Most bytes the search may hold in factor tables and back-pointers; past it the search
  /// stops with runtime_error naming the sizes it reached. 0: three quarters of the
  /// machine's physical memory (unlimited in a constant expression).
  std::size_t max_bytes = 0;
  /// Costs (time, memory; tags ignored) of strategies of this problem already known, for
  /// example from a restricted search: a partial strategy is dropped when one of them is
  /// strictly better than it plus the least time and the least memory of everything still
  /// to be added. Exact (no frontier point is strictly dominated by a real strategy); the
  /// result is wrong if a cost given here is not one of a real strategy.
  std::vector<frontier::point> known{};
};

/// Reported to the progress callback after each elimination.
struct search_progress {
  std::size_t eliminated = 0, total = 0;  ///< nodes eliminated so far, of `total`
  std::size_t cells = 0;                  ///< cells of the factor just made
  std::size_t points = 0;                 ///< points in it
};

/// The answer of `solve_conditioned`: for each assignment of configs to the kept nodes
/// (row-major over `kept`, ascending, `dims` = their config counts), the frontier of every
/// other node, all costs included; points carry tags into `tr` (recover with trace::recover).
struct conditioned_frontier {
  std::vector<int> kept;
  std::vector<std::size_t> dims;   ///< layout-configs per kept node
  /// configs[i][d]: the configs of kept node i grouped into its layout-config d (configs
  /// with identical edge rows, as the search groups them; one each without grouping)
  std::vector<std::vector<std::vector<int>>> configs;
  std::vector<std::size_t> start;  ///< CSR offsets into pts, cells + 1
  std::vector<frontier::point> pts;
  trace tr;
  std::size_t prune_depth = 0;
  bool exact = true;
  std::string note;
  constexpr std::size_t cells() const { return start.size() - 1; }
};

namespace detail {

/// Three quarters of the physical memory (8 GiB where it cannot be read).
inline std::size_t default_max_bytes() {
#if __has_include(<unistd.h>) && defined(_SC_PHYS_PAGES)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) return std::size_t(pages) / 4 * 3 * std::size_t(page);
#endif
  return std::size_t(8) << 30;
}

}  // namespace detail
}  // namespace tensoropt
