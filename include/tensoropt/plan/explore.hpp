// Resource exploration: the frontier at several device counts, and the fewest devices
// that fit a memory budget (and, optionally, meet a time target).
#pragma once
#include <functional>
#include <limits>
#include <optional>
#include <vector>
#include "planner.hpp"

namespace tensoropt {

/// One device count of an exploration.
struct exploration_row {
  index_t devices = 0;
  cluster cl;
  std::size_t points = 0;        ///< frontier size (plans that fit the device)
  bytes least_memory{};          ///< 0 when nothing fits the device
  seconds fastest_time{};        ///< of the fastest plan that fits the device
  std::optional<std::size_t> fit;  ///< position of the fastest point within the budget
  seconds fit_time{};
  bytes fit_memory{};
  bool meets = false;            ///< fits the budget and meets the time target
};

struct exploration {
  std::vector<exploration_row> rows;  ///< in the order of the counts given
  index_t fewest = 0;                 ///< fewest devices that meet the request; 0 = none
};

/// Plans `g` on `make_cluster(n)` for each n in `counts`; the budget (none: the
/// device capacity) and the time target (none: any time) decide which counts meet
/// the request. Throws invalid_argument for an empty list or a count below 1.
inline exploration explore_device_counts(const op_graph& g, const std::vector<index_t>& counts,
                                         const std::function<cluster(index_t)>& make_cluster,
                                         std::optional<bytes> budget = std::nullopt,
                                         std::optional<seconds> time_target = std::nullopt,
                                         planner_options o = {}) {
  detail::require(!counts.empty(), "explore_device_counts: give at least one device count");
  o.baselines = false;
  exploration ex;
  for (index_t n : counts) {
    detail::require(n >= 1, "explore_device_counts: device counts must be at least 1");
    exploration_row row;
    row.devices = n;
    row.cl = make_cluster(n);
    o.solve.memory_limit = to_byte_count(row.cl.gpu_spec.capacity);
    const auto pf = plan_frontier(g, row.cl, o);
    row.points = pf.points.size();
    if (!pf.empty()) {
      row.least_memory = pf.least_memory()->memory();
      row.fastest_time = pf.fastest()->time();
      if (const auto fit = pf.fastest_within(budget.value_or(row.cl.gpu_spec.capacity))) {
        row.fit = fit->index();
        row.fit_time = fit->time();
        row.fit_memory = fit->memory();
        row.meets = !time_target || row.fit_time <= *time_target;
      }
    }
    if (row.meets && (ex.fewest == 0 || n < ex.fewest)) ex.fewest = n;
    ex.rows.push_back(row);
  }
  return ex;
}

}  // namespace tensoropt
