// Resource exploration: the frontier at several device counts, and the fewest devices
// that fit a memory budget (and, optionally, meet a time target).
#pragma once
#include <functional>
#include <limits>
#include <vector>
#include "planner.hpp"

namespace tensoropt {

/// One device count of an exploration.
struct exploration_row {
  index_t devices = 0;
  cluster cl;
  std::size_t points = 0;        ///< frontier size (plans that fit the device)
  double least_memory = 0;       ///< bytes; 0 when nothing fits the device
  double fastest_time = 0;       ///< seconds of the fastest plan that fits the device
  int fit = -1;                  ///< fastest point within the budget, or -1
  double fit_time = 0, fit_memory = 0;
  bool meets = false;            ///< fits the budget and meets the time target
};

struct exploration {
  std::vector<exploration_row> rows;  ///< in the order of the counts given
  index_t fewest = 0;                 ///< fewest devices that meet the request; 0 = none
};

/// Plans `g` on `make_cluster(n)` for each n in `counts`; the budget (bytes, 0 = the
/// device capacity) and the time target (seconds, 0 = none) decide which counts meet
/// the request. Throws invalid_argument for an empty list or a count below 1.
inline exploration explore_device_counts(const op_graph& g, const std::vector<index_t>& counts,
                                         const std::function<cluster(index_t)>& make_cluster, double budget,
                                         double time_target, planner_options o = {}) {
  detail::require(!counts.empty(), "explore_device_counts: give at least one device count");
  o.baselines = false;
  exploration ex;
  for (index_t n : counts) {
    detail::require(n >= 1, "explore_device_counts: device counts must be at least 1");
    exploration_row row;
    row.devices = n;
    row.cl = make_cluster(n);
    o.solve.memory_limit = cost_t(row.cl.gpu_spec.capacity.value);
    const auto pf = plan_frontier(g, row.cl, o);
    row.points = pf.points.size();
    if (!pf.points.empty()) {
      row.least_memory = double(pf.points.front().memory);
      row.fastest_time = double(pf.points.back().time) / ps_per_second;
      row.fit = fastest_within_index(pf, budget > 0 ? budget : row.cl.gpu_spec.capacity.value);
      if (row.fit >= 0) {
        row.fit_time = double(pf.points[std::size_t(row.fit)].time) / ps_per_second;
        row.fit_memory = double(pf.points[std::size_t(row.fit)].memory);
        row.meets = time_target <= 0 || row.fit_time <= time_target;
      }
    }
    if (row.meets && (ex.fewest == 0 || n < ex.fewest)) ex.fewest = n;
    ex.rows.push_back(row);
  }
  return ex;
}

}  // namespace tensoropt
