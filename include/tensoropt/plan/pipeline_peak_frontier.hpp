// The pipeline planner's frontier held against the runtime peak: every pipeline plan
// it reports carries its predicted peak (plan/pipeline_peak.hpp: the most any stage's
// device holds under 1F1B), and the points kept are those not dominated under (peak,
// iteration time). The pipeline counterpart of plan/peak_frontier.hpp.
//
// The pipeline search optimizes the additive memory of the fullest stage
// (cost/pipeline_cost.hpp: parameters, gradients, optimizer state, the kept
// activations of min(k, p - i) micro-batches, the reserve), a sum the search can
// compose over stages and boundaries. The runtime's stage peak is that state plus a
// transient working set (the running op's inputs, outputs and gradients, a crossing's
// wire and received copies, the update's summed gradients), which is not additive:
// measured 0.2 % .. 62.7 % above the additive stage memory on the runtime tests'
// plans whose stages start at cut points. attach_pipeline_peaks replays every point
// the pipeline search returned and then, as attach_peaks does for plans without stages:
//  - sets pipeline_point::peak, which `tensoropt-plan --pipeline` prints and its budget
//    query and chosen-plan summary use;
//  - drops the points whose peak exceeds the device's memory and those dominated under
//    (peak, time): walking from the fastest, a point is kept iff its peak is below the
//    peak of every faster point kept. What is left is a subset of the additive
//    staircase whose peaks strictly fall with memory order kept, so it is a staircase
//    in both memories;
//  - keeps every point the search returned, with its peak, in `searched`;
//  - says which memory the search optimized (`describe`): exact (or balanced, or
//    approximate, as the search says) over the additive memory, then filtered by the
//    replayed peak. This is not the exact (peak, time) frontier: a plan off the
//    additive frontier can have a lower peak than every plan on it at the same time.
//
// Cost: one replay per stage per point (plan/stage_layout.hpp, plan/stage_replay.hpp:
// min(k, p - s) micro-batches of the stage's ops, each distinct placement built once
// per pipeline degree and thread, up to 256 MiB of them). Measured on megatron-1t
// (3,072 x A100-80GB) at pp 64, k 512: 0.04 s of CPU per plan of 64 stages (about 14 s before the replay was cut to min(k, p - s) micro-batches,
// the stage's own ops and memoized placements; the same peaks to the last bit). The
// replay runs on every point by default; `max_work` (ops x stage devices x points) can
// still turn it off, and then the points keep the additive memory (peak = 0) and
// `describe` says so. The result does not depend on the thread count.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>
#include "peak_frontier.hpp"
#include "pipeline_peak.hpp"
#include "pipeline_search.hpp"

namespace tensoropt {

/// What attach_pipeline_peaks did, for the reports.
struct pipeline_peak_filter {
  bool replayed = false;     ///< false: over the work limit, peaks not computed
  std::size_t searched = 0;  ///< points the pipeline search returned
  std::size_t dropped = 0;   ///< dominated under (peak, time) or over the device
  std::size_t over = 0;      ///< of those, the ones no faster plan kept dominates: peak above the memory limit
  double ratio_lo = 0, ratio_hi = 0;  ///< peak / additive memory over the searched points
  double work = 0;                    ///< ops x stage devices x points
  std::string describe() const {
    char b[400];
    if (!replayed)
      std::snprintf(b, sizeof b,
                    "the additive memory of the fullest stage (what the pipeline search optimized); the runtime "
                    "peak replay was not run (%.3g ops x stage devices x points, over the limit), so a plan's "
                    "runtime peak can exceed the memory shown",
                    work);
    else
      std::snprintf(b, sizeof b,
                    "the predicted runtime peak of the fullest stage (a replay of the stage executor's buffers "
                    "under 1F1B, %.2fx .. %.2fx the additive memory); the pipeline search optimized the additive "
                    "memory, not the peak, and %zu of its %zu points were dropped: dominated under (peak, time), "
                    "or %zu with a peak above the device",
                    ratio_lo, ratio_hi, dropped, searched, over);
    return b;
  }
};

/// Sets every point's peak and drops the points of `pf` dominated under (peak, time)
/// and those whose peak exceeds `limit` bytes (see the file comment). `threads` = 0:
/// every core.
inline pipeline_peak_filter attach_pipeline_peaks(pipeline_frontier& pf, const op_graph& g, const cluster& cl,
                                                  const build_options& o, std::size_t threads = 0,
                                                  cost_t limit = max_problem_cost,
                                                  double max_work = std::numeric_limits<double>::infinity()) {
  pipeline_peak_filter f;
  const std::size_t n = pf.points.size();
  f.searched = n;
  for (const auto& q : pf.points)
    f.work += double(g.ops.size()) * double(cl.mesh.devices()) / double(std::max(1, q.plan.degree));
  if (n == 0 || f.work > max_work) return f;
  f.replayed = true;
  std::vector<double> peak(n, 0.0);
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  auto work = [&] {
    std::map<int, detail::placement_cache> caches;  // per pipeline degree, this thread's
    for (std::size_t i; !failed && (i = next++) < n;) try {
        const auto& pp = pf.points[i].plan;
        auto it = caches.try_emplace(pp.degree, stage_mesh(cl.mesh, pp.degree)).first;
        if (it->second.bytes() > 256.0 * (1 << 20)) it->second.clear();  // bounded: 256 MiB per degree
        peak[i] = detail::pipeline_peak_of(g, pp, cl, o, it->second).peak();
      } catch (...) {
        if (!failed.exchange(true)) failure = std::current_exception();
      }
  };
  const std::size_t hw = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(hw, n); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  f.ratio_lo = 1e300;
  f.ratio_hi = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // a peak never rounds below 1 byte, so 0 keeps meaning "not computed"
    pf.points[i].peak = std::max<cost_t>(1, detail::checked_cost(std::ceil(peak[i]), "the predicted stage peak"));
    const double r = double(pf.points[i].peak) / double(std::max<cost_t>(1, pf.points[i].memory));
    f.ratio_lo = std::min(f.ratio_lo, r);
    f.ratio_hi = std::max(f.ratio_hi, r);
  }
  pf.searched = pf.points;
  // points are sorted by time strictly descending, as keep_under_peak wants them
  const auto keep = keep_under_peak(n, [&](std::size_t i) { return pf.points[i].peak; }, limit, f.over);
  std::vector<pipeline_point> pts;
  for (std::size_t i = 0; i < n; ++i)
    if (keep[i]) pts.push_back(std::move(pf.points[i]));
  f.dropped = n - pts.size();
  pf.points = std::move(pts);
  return f;
}

}  // namespace tensoropt
