// The planner with pipeline stages: runs the jobs of plan/pipeline_search.hpp (one per
// pipeline degree p and micro-batch count k >= p) on a pool of threads and keeps their
// union, each point a pipeline_plan.
//
// Jobs run in descending order of the pipeline degree p, and within one p in ascending
// order of a lower bound of their time (plan/pipeline_bounds.hpp; ties: smaller k): a
// large p has small stages on few devices, so its searches are the cheap ones (on
// megatron-1t a pp 64 job takes about a second of CPU, a pp 1 job 10-200 s) and its
// fast plans bound the expensive jobs of small p that run last (ordering by the time
// bound alone put every pp 1 job first: the first 10 of 217 jobs took 180 s of CPU). A
// job whose least memory is above the limit, or all of whose possible points (a region
// of lower bounds) are dominated by points found already, is skipped. Skipping never
// changes the frontier (see there).
//
// The union is kept as the jobs finish: a job's point becomes a plan only when no point
// found so far is at least as good (on ties the smaller p, then k, wins), and the union
// drops what a new point dominates, so the plans held stay about one frontier's worth.
// The outcome does not depend on the number of threads or the order jobs finish in:
// the tie rule orders every pair of points with equal costs. Jobs whose pipeline degree
// has no balanced partition (and too many cut points for the dynamic program) are
// skipped with a note saying why. Under pipeline_options::runtime_peak every point then
// gets its replayed stage peak (plan/pipeline_peak_frontier.hpp).
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "pipeline_peak_frontier.hpp"
#include "pipeline_search.hpp"
#include "planner.hpp"

namespace tensoropt {

namespace detail {
/// Whether a point (t, m) with tie key `key` is dominated by the staircase `u`.
inline bool pipeline_dominated(const std::vector<pipeline_point>& u, cost_t t, cost_t m,
                               std::pair<int, int> key) {
  auto it = std::upper_bound(u.begin(), u.end(), m, [](cost_t x, const pipeline_point& q) { return x < q.memory; });
  if (it == u.begin()) return false;
  const auto& q = *std::prev(it);
  if (q.time != t) return q.time < t;
  return q.memory < m || std::pair{q.plan.degree, q.plan.micro_batches} <= key;
}
inline void pipeline_union(std::vector<pipeline_point>& u, std::vector<pipeline_point> add) {
  for (auto& q : u) add.push_back(std::move(q));
  std::sort(add.begin(), add.end(), [](const pipeline_point& x, const pipeline_point& y) {
    if (x.memory != y.memory) return x.memory < y.memory;
    if (x.time != y.time) return x.time < y.time;
    return std::pair{x.plan.degree, x.plan.micro_batches} < std::pair{y.plan.degree, y.plan.micro_batches};
  });
  u.clear();
  for (auto& q : add)
    if (u.empty() || q.time < u.back().time) u.push_back(std::move(q));
}
}  // namespace detail

/// The frontier of `g` (full batch) on `cl` with pipeline stages (see pipeline_search.hpp).
/// Throws invalid_argument for a degree that is not legal on the mesh or a micro-batch
/// count that does not divide the batch.
inline pipeline_frontier plan_pipeline_frontier(const op_graph& g, const cluster& cl, const pipeline_options& o = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  pipeline_frontier pf;
  std::vector<index_t> degrees = o.degrees.empty() ? legal_pipeline_degrees(g, cl.mesh) : o.degrees;
  for (index_t p : degrees)
    if (const std::string e = pipeline_degree_error(cl.mesh, p); !e.empty()) throw invalid_argument(e);
  const std::vector<index_t> ks = o.micro_batches.empty() ? detail::legal_micro_batches(g) : o.micro_batches;
  for (index_t k : ks)
    detail::require(k >= 1 && g.batch % k == 0, "micro-batch count " + std::to_string(k) +
                                                    " does not divide the global batch " + std::to_string(g.batch) +
                                                    "; choose a divisor");
  const std::size_t ncuts = cut_points(g).size();
  const bool dp = o.partitions == partition_search::all ||
                  (o.partitions == partition_search::automatic && ncuts <= o.max_dp_cuts);
  pf.balanced = !dp;
  struct job {
    index_t p, k;
    balanced_partition bp;
    cost_t floor = 0;  ///< the order bound
  };
  std::vector<job> jobs;
  for (index_t p : degrees) {
    balanced_partition bp;
    if (!dp) {
      bp = balance_stages(g, p);
      if (!bp.why_not.empty()) {
        pf.notes.push_back("pipeline degree " + std::to_string(p) + " skipped: " + bp.why_not);
        continue;
      }
    } else if (std::size_t(p) > ncuts + 1) {
      pf.notes.push_back("pipeline degree " + std::to_string(p) + " skipped: more stages than the " +
                         std::to_string(ncuts + 1) + " ranges between cut points");
      continue;
    }
    bool any = false;
    for (index_t k : ks)
      if (k >= p) {
        jobs.push_back({p, k, bp});
        any = true;
      }
    if (!any) pf.notes.push_back("pipeline degree " + std::to_string(p) + " skipped: no micro-batch count k >= p");
  }
  for (auto& jb : jobs) {
    const op_graph micro = with_batch(g, g.batch / jb.k);
    jb.floor = dp ? detail::partition_time_floor(micro, cl, jb.p, jb.k, o.build.prec)
                  : detail::balanced_time_floor(micro, cl, jb.p, jb.k, jb.bp, o.build.prec);
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const job& x, const job& y) {
    if (x.p != y.p) return x.p > y.p;
    return x.floor != y.floor ? x.floor < y.floor : x.k < y.k;
  });
  pf.notes.push_back(dp ? "partitions: every split at the " + std::to_string(ncuts) + " cut points (dynamic program)"
                        : "partitions: balanced (the largest repeat<> cut into equal stages; " + std::to_string(ncuts) +
                              " cut points are too many for the dynamic program)");
  solve_options so = o.solve;
  const std::size_t hw = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  if (so.max_bytes == 0) so.max_bytes = detail::default_max_bytes() / std::min(hw, std::max<std::size_t>(jobs.size(), 1));
  std::mutex mu;
  std::atomic<std::size_t> next{0};
  std::size_t done = 0, skipped = 0, over_limit = 0, by_minima = 0, after_searches = 0;
  bool exact = true;
  std::exception_ptr failure;
  auto work = [&] {
    for (std::size_t j; (j = next++) < jobs.size();) {
      try {
        const auto tj = std::chrono::steady_clock::now();
        const job& jb = jobs[j];
        const op_graph micro = with_batch(g, g.batch / jb.k);
        // the points found so far, for the job's skip test (plan/pipeline_bounds.hpp)
        auto known = [&] {
          std::lock_guard lock(mu);
          std::vector<known_point> u;
          u.reserve(pf.points.size());
          for (const auto& q : pf.points) u.push_back({q.time, q.memory, {q.plan.degree, q.plan.micro_batches}});
          return u;
        };
        detail::job_result r = dp ? detail::partition_job(g, micro, cl, o, jb.p, jb.k, so)
                                  : detail::balanced_job(g, micro, cl, o, jb.p, jb.k, jb.bp, so, known, jb.floor);
        if (r.skipped) {
          std::lock_guard lock(mu);
          ++skipped;
          over_limit += r.over_limit ? 1 : 0;
          by_minima += r.by_minima ? 1 : 0;
          after_searches += r.after_searches ? 1 : 0;
          pf.stage_searches += r.searches;
          pf.fast_searches += r.fast;
          pf.stream_searches += r.stream;
          ++done;
          if (o.progress)
            o.progress("[" + std::to_string(done) + "/" + std::to_string(jobs.size()) + "] pp " + std::to_string(jb.p) +
                       ", micro-batches " + std::to_string(jb.k) + ": skipped by bounds (" +
                       (r.over_limit ? "nothing fits" : "beaten") + (r.by_minima ? " on minima" : "") +
                       (r.after_searches ? " after " + std::to_string(r.searches) + " stage searches in " +
                                               detail::fmt("%.2f", r.solve_seconds) + " s"
                                         : std::string()) +
                       ", built in " + detail::fmt("%.2f", r.build_seconds) + " s, bounds " +
                       detail::fmt("%.2f", r.bound_seconds) + " s, " + detail::fmt("%.2f", detail::seconds_since(tj)) +
                       " s in all)");
          continue;
        }
        std::vector<bool> keep(r.points.size());
        {
          std::lock_guard lock(mu);
          for (std::size_t i = 0; i < r.points.size(); ++i)
            keep[i] = !detail::pipeline_dominated(pf.points, r.points[i].time, r.points[i].memory,
                                                  {int(jb.p), int(jb.k)});
        }
        std::vector<pipeline_point> add;
        for (std::size_t i = 0; i < r.points.size(); ++i)
          if (keep[i]) add.push_back({r.points[i].time, r.points[i].memory, r.points[i].make()});
        std::lock_guard lock(mu);
        detail::pipeline_union(pf.points, std::move(add));
        exact = exact && r.exact;
        pf.stage_searches += r.searches;
        pf.fast_searches += r.fast;
        pf.stream_searches += r.stream;
        ++done;
        if (o.progress)
          o.progress("[" + std::to_string(done) + "/" + std::to_string(jobs.size()) + "] pp " + std::to_string(jb.p) +
                     ", micro-batches " + std::to_string(jb.k) + ": " + std::to_string(r.searches) +
                     " stage searches (built in " + detail::fmt("%.2f", r.build_seconds) + " s, bounds " +
                     detail::fmt("%.2f", r.bound_seconds) + " s, solved in " +
                     detail::fmt("%.2f", r.solve_seconds) + " s), " + std::to_string(r.points.size()) + " points in " +
                     detail::fmt("%.2f", detail::seconds_since(tj)) + " s");
      } catch (...) {
        std::lock_guard lock(mu);
        if (!failure) failure = std::current_exception();
        next = jobs.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(hw, jobs.size()); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  pf.jobs = jobs.size();
  pf.skipped = skipped;
  pf.skipped_over_limit = over_limit;
  pf.skipped_by_minima = by_minima;
  pf.skipped_after_searches = after_searches;
  pf.notes.push_back(std::to_string(skipped) + " of " + std::to_string(jobs.size()) + " jobs skipped by bounds (" +
                     std::to_string(over_limit) + " with least memory above the limit, " +
                     std::to_string(skipped - over_limit) + " with every possible point beaten; " +
                     std::to_string(by_minima) + " on node and edge minima alone, no scalar search; " +
                     std::to_string(after_searches) + " on the frontier of some of their stage classes, the rest not searched)");
  if (pf.fast_searches > 0)
    pf.notes.push_back(std::to_string(pf.fast_searches) + " of " + std::to_string(pf.stage_searches) +
                       " stage searches in fast mode (one layout at every boundary between identical layers" +
                       (pf.stream_searches > 0 ? "; " + std::to_string(pf.stream_searches) +
                                                     " of them also at the residual adds inside each layer, where "
                                                     "layers x boundary layouts^3 > 10^6"
                                               : std::string()) +
                       ")");
  pf.exact = exact && dp;
  const auto tp = std::chrono::steady_clock::now();
  pf.memory_note = o.runtime_peak ? attach_pipeline_peaks(pf, g, cl, o.build, hw, o.solve.memory_limit).describe()
                                  : "the additive memory of the fullest stage, what the search optimized (not the "
                                    "runtime peak)";
  pf.peak_seconds = detail::seconds_since(tp);
  pf.seconds = detail::seconds_since(t0);
  return pf;
}

}  // namespace tensoropt
