// The planner with pipeline stages: runs the jobs of plan/pipeline_search.hpp (one per
// pipeline degree p and micro-batch count k >= p) on a pool of threads and keeps their
// union, each point a pipeline_plan.
//
// Jobs have one fixed order: descending pipeline degree p, and within one p ascending
// order of a lower bound of their time (plan/pipeline_bounds.hpp; ties: smaller k): a
// large p has small stages on few devices, so its searches are the cheap ones (on
// megatron-1t a pp 64 job takes about a second of CPU, a pp 1 job 10-200 s) and its
// fast plans bound the expensive jobs of small p that come last (ordering by the time
// bound alone put every pp 1 job first: the first 10 of 217 jobs took 180 s of CPU).
//
// Commit order. The result is that of running the jobs one by one in that order: job j
// is skipped when the points of the jobs before it cover it (within 1 + epsilon, memory
// exact: plan/balanced_job.hpp and plan/job_cover.hpp; at epsilon 0, dominated, which
// changes nothing), else its points join the union. The workers run jobs at once and
// out of order, but a job's tests read only the points committed so far (those of jobs
// before it), and jobs are committed in order: a finished job is tested again against
// every point of the jobs before it (job_covered) and then merged or dropped. Every
// test is monotone in the points, so a job a worker skipped early is one this test
// would drop, and the frontier does not depend on the number of threads or on the
// order jobs finish in. A balanced job that passes its bounds before the jobs ahead of
// it are committed waits (the worker goes on with later jobs' bounds, up to 2 x threads
// jobs waiting), so that its test sees their points before its stage searches.
//
// The union is kept as the jobs commit: a job's point becomes a plan only when no
// committed point is at least as good (on ties the smaller p, then k, wins), and the
// union drops what a new point dominates, so the plans held stay about one frontier's
// worth. Jobs whose pipeline degree has no balanced partition (and too many cut points
// for the dynamic program) are skipped with a note saying why. Under
// pipeline_options::runtime_peak every point then gets its replayed stage peak
// (plan/pipeline_peak_frontier.hpp).
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include "pipeline_peak_frontier.hpp"
#include "balanced_job.hpp"
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
  // The stage searches of balanced jobs run within (1 + epsilon)^stage_epsilon_share and
  // the skip tests cover within 1 + epsilon (see detail::balanced_job): every exact point
  // of every job is within 1 + epsilon of a returned point.
  if (!dp && so.epsilon > 0) so.epsilon = std::pow(1 + so.epsilon, detail::stage_epsilon_share) - 1;
  const std::size_t hw = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  if (so.max_bytes == 0) so.max_bytes = detail::default_max_bytes() / std::min(hw, std::max<std::size_t>(jobs.size(), 1));
  std::mutex mu;
  std::atomic<std::size_t> next{0};
  std::size_t done = 0, skipped = 0, over_limit = 0, by_minima = 0, after_searches = 0, covered_at_commit = 0,
              late_lines = 0;
  bool exact = true;
  std::exception_ptr failure;
  // the points committed so far, for the jobs' skip tests (plan/pipeline_bounds.hpp); under mu
  auto committed_points = [&] {
    std::vector<known_point> u;
    u.reserve(pf.points.size());
    for (const auto& q : pf.points) u.push_back({q.time, q.memory, {q.plan.degree, q.plan.micro_batches}});
    return u;
  };
  // Jobs finish in any order and are committed in job order: job j is tested against the
  // points of the jobs before it (its region covered within 1 + epsilon: it adds nothing
  // that they do not cover) and its points are merged, or it is dropped. See the file
  // comment.
  struct finished {
    bool ready = false;
    detail::job_result r;
    std::vector<pipeline_point> add;
    double seconds = 0;
  };
  std::vector<finished> results(jobs.size());
  std::size_t commit_at = 0;
  bool committing = false;
  // Commits the finished jobs in order (one thread at a time; `lock` holds mu). A job's
  // test reads only the committed points, which change only here, so the lines it may
  // have to search (detail::job_covered) are searched with mu released.
  auto commit = [&](std::unique_lock<std::mutex>& lock) {
    if (committing) return;  // the thread in the loop commits this result too
    committing = true;
    for (; commit_at < jobs.size() && results[commit_at].ready; ++commit_at) {
      finished& f = results[commit_at];
      const job& jb = jobs[commit_at];
      detail::job_result& r = f.r;
      const std::pair<int, int> key{int(jb.p), int(jb.k)};
      bool dropped = false;
      if (!r.skipped && r.bound) {
        const std::vector<known_point> u = committed_points();
        std::optional<bool> c;
        while (!(c = detail::job_covered_by_brackets(u, *r.bound, key, so.memory_limit))) {
          lock.unlock();
          const bool more = detail::search_next_line(u, *r.bound, key, so.memory_limit);
          lock.lock();
          if (!more) {
            c = detail::job_covered(u, *r.bound, key, so.memory_limit);
            break;
          }
        }
        dropped = *c;
        late_lines += r.bound->late_lines;
      }
      if (r.skipped || dropped) {
        ++skipped;
        over_limit += r.over_limit ? 1 : 0;
        by_minima += r.by_minima ? 1 : 0;
        after_searches += r.after_searches ? 1 : 0;
        covered_at_commit += dropped ? 1 : 0;
      } else {
        detail::pipeline_union(pf.points, std::move(f.add));
        exact = exact && r.exact;
      }
      pf.stage_searches += r.searches;
      pf.fast_searches += r.fast;
      pf.stream_searches += r.stream;
      ++done;
      if (o.progress) {
        const std::string head = "[" + std::to_string(done) + "/" + std::to_string(jobs.size()) + "] pp " +
                                 std::to_string(jb.p) + ", micro-batches " + std::to_string(jb.k) + ": ";
        if (r.skipped)
          o.progress(head + "skipped by bounds (" + (r.over_limit ? "nothing fits" : "beaten") +
                     (r.by_minima ? " on minima" : "") +
                     (r.after_searches ? " after " + std::to_string(r.searches) + " stage searches in " +
                                             detail::fmt("%.2f", r.solve_seconds) + " s"
                                       : std::string()) +
                     ", built in " + detail::fmt("%.2f", r.build_seconds) + " s, bounds " +
                     detail::fmt("%.2f", r.bound_seconds) + " s, " + detail::fmt("%.2f", f.seconds) + " s in all)");
        else
          o.progress(head + std::to_string(r.searches) + " stage searches (built in " +
                     detail::fmt("%.2f", r.build_seconds) + " s, bounds " + detail::fmt("%.2f", r.bound_seconds) +
                     " s, solved in " + detail::fmt("%.2f", r.solve_seconds) + " s), " +
                     (dropped ? "covered by the jobs before it" : std::to_string(r.points.size()) + " points") +
                     " in " + detail::fmt("%.2f", f.seconds) + " s");
      }
      f = finished{true, {}, {}, 0};
    }
    committing = false;
  };
  // The workers take the jobs in order. A balanced job's skip tests run first (bound);
  // one that is not skipped waits for its turn (every job before it committed) before its
  // stage searches, while the worker goes on with later jobs' tests, up to `max_waiting`
  // jobs waiting: the points of the jobs just before it, which often cover it, then come
  // in before its searches instead of after them. A waiting job whose turn came goes
  // first; when the waiting jobs are full (or no job is left to test), the first of them
  // is searched before its turn, and the planner's test at commit still drops it if the
  // jobs before it cover it. Either way the outcome is the same.
  const std::size_t max_waiting = 2 * hw;
  std::map<std::size_t, std::unique_ptr<detail::balanced_job>> waiting;
  auto known = [&] {
    std::lock_guard lock(mu);
    return committed_points();
  };
  auto record = [&](std::size_t j, detail::job_result r) {
    const job& jb = jobs[j];
    // plans only for the points the committed ones do not dominate already (they
    // dominate them at commit too)
    std::vector<bool> keep(r.points.size());
    if (!r.skipped) {
      std::lock_guard lock(mu);
      for (std::size_t i = 0; i < r.points.size(); ++i)
        keep[i] = !detail::pipeline_dominated(pf.points, r.points[i].time, r.points[i].memory, {int(jb.p), int(jb.k)});
    }
    std::vector<pipeline_point> add;
    for (std::size_t i = 0; i < r.points.size(); ++i)
      if (keep[i]) add.push_back({r.points[i].time, r.points[i].memory, r.points[i].make()});
    const double seconds = r.build_seconds + r.bound_seconds + r.solve_seconds;
    std::unique_lock lock(mu);
    results[j] = finished{true, std::move(r), std::move(add), seconds};
    commit(lock);
  };
  auto work = [&] {
    for (;;) {
      std::size_t j = jobs.size();
      std::unique_ptr<detail::balanced_job> run;
      {
        std::lock_guard lock(mu);
        if (failure) return;
        const bool turn = !waiting.empty() && waiting.begin()->first <= commit_at;
        if (!turn && next < jobs.size() && waiting.size() < max_waiting) {
          j = next++;
        } else if (!waiting.empty()) {
          j = waiting.begin()->first;
          run = std::move(waiting.begin()->second);
          waiting.erase(waiting.begin());
        } else {
          return;
        }
      }
      try {
        const job& jb = jobs[j];
        if (run) {
          record(j, run->search(known));
          continue;
        }
        const op_graph micro = with_batch(g, g.batch / jb.k);
        if (dp) {
          record(j, detail::partition_job(g, micro, cl, o, jb.p, jb.k, so));
          continue;
        }
        run = std::make_unique<detail::balanced_job>(g, micro, cl, o, jb.p, jb.k, jb.bp, so, jb.floor);
        if (run->bound(known)) {
          record(j, run->result());
          continue;
        }
        {
          std::lock_guard lock(mu);
          if (commit_at < j) {
            waiting.emplace(j, std::move(run));
            continue;
          }
        }
        record(j, run->search(known));
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
  const std::string within = o.solve.epsilon > 0 ? "covered within 1 + " + detail::fmt("%g", o.solve.epsilon) +
                                                        " (memory exact, time within that factor)"
                                                  : "dominated";
  pf.notes.push_back(std::to_string(skipped) + " of " + std::to_string(jobs.size()) + " jobs skipped by bounds (" +
                     std::to_string(over_limit) + " with least memory above the limit, " +
                     std::to_string(skipped - over_limit) + " " + within + " by the points of the jobs before them: " +
                     std::to_string(by_minima) + " on node and edge minima alone, no scalar search; " +
                     std::to_string(after_searches) + " on the frontier of some of their stage classes; " +
                     std::to_string(covered_at_commit) + " once searched, when committed" +
                     (late_lines > 0 ? " (" + std::to_string(late_lines) + " scalar lines searched then)" : std::string()) +
                     "; the rest on the scalar searches)");
  if (!dp && o.solve.epsilon > 0)
    pf.notes.push_back("stage searches within 1 + " + detail::fmt("%.4g", so.epsilon) + " ((1 + " +
                       detail::fmt("%g", o.solve.epsilon) + ")^" + detail::fmt("%g", detail::stage_epsilon_share) +
                       "); every point of every job is within 1 + " + detail::fmt("%g", o.solve.epsilon) +
                       " of a returned one, whatever the number of threads");
  if (pf.fast_searches > 0)
    pf.notes.push_back(std::to_string(pf.fast_searches) + " of " + std::to_string(pf.stage_searches) +
                       " stage searches in fast mode (one layout at every boundary between identical layers" +
                       (pf.stream_searches > 0 ? "; " + std::to_string(pf.stream_searches) +
                                                     " of them also at the residual adds inside each layer, where "
                                                     "layers x boundary layouts^3 > 10^5 (10^6 for p = 1)"
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
