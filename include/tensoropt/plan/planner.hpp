// The planner: a model's frontier over every micro-batch count, its baselines, and
// the reports of a chosen plan.
//
// For each micro-batch count k (every k dividing the global batch, or the ones
// given) the planner builds the problem of the micro-batch graph (plan/
// build_problem.hpp), solves it (search/solve.hpp) and keeps the union of the
// frontiers, each point tagged with its k. Problems whose points all fall off the
// union are released as soon as that is known, so only the problems behind the
// final points stay in memory. Each k runs in the search mode of plan/search_mode.hpp
// (exact, or fast: identical layers composed by powering under a stated restriction,
// checked against weighted-sum optima of the unrestricted problem on every k that holds
// points of the final union, once all are solved); a k whose least
// memory exceeds the memory limit is skipped before any search. Branch and bound over the
// micro-batch counts: jobs start in one fixed order (largest k first), and each fast-mode
// job, after its coarse pass, hands on the points it guarantees and is bounded by those of
// the jobs before it (search/repeated.hpp's repeated_bounds): its boundary layouts whose
// coarse lower bound they dominate are skipped, and its sums drop partial strategies they
// cover. A job waits only for the coarse passes of the jobs before it, so the result does
// not depend on the number of threads or on which job finishes first; at epsilon 0 the
// union is the one the jobs give alone (tested), and under epsilon it keeps the bound.
// A fast-mode job is skipped as a whole when those points lie at or below a lower bound of
// all its strategies (plan/job_bounds.hpp). Under epsilon, where fast mode also limits each
// op to the layouts of weighted-sum optima (plan/search_mode.hpp, "The layouts"), the
// optima's first pass bounds every strategy of the job from below, and a job whose bound the
// points of the jobs before it cover within epsilon is skipped before the rest of it. An exact-mode job whose identical layers are
// folded (search/repeated_exact.hpp) hands on its fast-mode points (real strategies) and
// adds those of the jobs before it to its own branch-and-bound set: the union keeps every
// cost it has alone (tested), and the folds keep fewer points (gpt3-1.3b on 4 x V100-16GB,
// exact, one thread: the counts' solves 8.2 -> 4.8-5.0 s; 8, 16 and 32 micro-batches are
// then skipped by that bound, and 64 returns no point). Where every job before such a job has
// published when it starts, it takes that test first, before its fold's tables and fast-mode
// points (the same test on the same points as after them; a job skipped either way changes
// nothing after it): gpt3-1.3b (4 x V100-16GB, exact, `plan_bench --only gpt3-1.3b --mode
// exact`) one thread 3.12-3.16 -> 2.98 s; on two threads the jobs before it are mostly still
// out by then, and the skipped jobs' tables ran beside them, off the longest path (1.81-1.91
// against 1.85-1.96 s, the same frontier files). Threads: `threads` jobs compute at once; a job
// waiting for the points of the jobs before it hands its turn to the next job, which
// builds its problem and solves its coarse per-layer tables meanwhile (at most 2 x threads
// jobs are started at once). Measured on gpt3-39b (8 x 8 V100-16GB, epsilon 0.01, 2
// threads): 159 s wall / 178 s CPU -> 108 s / 202 s, the same 497 points; before, every
// job waited for the others before its own first solve, so one core did nearly all of it.
// (With the two-step skip test of search/detail/repeated_tables.hpp: 86 s / 146 s.)
// Once every job is done, the same threads take the tail: the union (made once), fast
// mode's restriction checks, the peak bound's searches still waiting and the union's peak
// replays (plan/peak_frontier.hpp's peak_attacher), so no core waits for another's last
// search; then the peak filter, and the config labels of the points kept.
// Baselines (data parallelism, Megatron tensor parallelism of every legal degree with data
// parallelism over the rest, and the single-objective optimum: the least time with no
// memory limit, as OptCNN finds it) are costed on the same model and placed against the
// frontier.
#pragma once
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <optional>
#include <exception>
#include <mutex>
#include <semaphore>
#include <thread>
#include <tuple>
#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>
#include "../cost/op_cost.hpp"
#include "../search/frontier_json.hpp"
#include "../search/repeated_exact.hpp"
#include "../search/solve.hpp"
#include "baselines.hpp"
#include "build_problem.hpp"
#include "job_bounds.hpp"
#include "peak_frontier.hpp"
#include "planned_frontier.hpp"
#include "search_mode.hpp"
#include "report.hpp"
#include "strategy.hpp"
#include "summary.hpp"

namespace tensoropt {

struct planner_options {
  build_options build{};              ///< precision, reserve, config bounds (micro_batches is set per k)
  std::vector<index_t> micro_batches; ///< counts to search; empty: every k dividing the batch
  solve_options solve{};
  bool baselines = true;
  std::size_t threads = 0;            ///< problems solved at once (one per k); 0 = every core
  search_mode mode = search_mode::automatic;  ///< exact, fast or chosen per problem
  bool check_restriction = true;      ///< fast mode: compare with weighted-sum optima
  /// Fast mode under epsilon, where the parts outside the identical layers are large
  /// (plan/search_mode.hpp's layouts_restricted): each op limited to the layouts of
  /// weighted-sum optima at this many weights (search/layout_restriction.hpp); 0: never.
  std::size_t layout_lanes = 24;
  /// Fast-mode searches bound each other (search/repeated.hpp's repeated_bounds): each takes
  /// the points guaranteed by the searches before it in a fixed order (largest k first);
  /// false: every search runs alone (the same union with epsilon 0).
  bool job_bounds = true;
  /// Replay each point's runtime peak and keep the plans not dominated under (peak, time)
  /// (plan/peak_frontier.hpp); false: report the additive frontier as searched.
  bool runtime_peak = true;
  /// With runtime_peak: where the peak bound is also searched exactly (plan/peak_frontier.hpp).
  peak_search_gate peak_search{};
  /// Progress lines ("k=4: 312 configs ... solved in 0.21 s"); empty: silent.
  std::function<void(const std::string&)> progress;
  /// With progress, at epsilon 0: once the planning has run this many seconds, one line
  /// says so and names the option that bounds the error and prunes the search (--epsilon);
  /// 0: never. An exact search of a large model can run for hours, and the progress lines
  /// alone do not say what would make it finish.
  double slow_hint_after_s = 60;
};

namespace detail {
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
/// CPU seconds the calling thread has used (0 where the platform cannot say). A job runs on
/// one thread from start to end and uses no CPU while it waits, so the difference of two
/// readings in a job is the job's own work.
inline double thread_cpu_seconds() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
#endif
  return 0;
}
/// Every k that divides the batch and leaves each batch dim whole.
inline std::vector<index_t> legal_micro_batches(const op_graph& g) {
  std::vector<index_t> ks;
  for (index_t k = 1; k <= g.batch; ++k) {
    if (g.batch % k) continue;
    bool ok = true;
    for (auto& op : g.ops)
      for (auto& d : op.dims)
        if (d.batch && d.extent % k) ok = false;
    if (ok) ks.push_back(k);
  }
  return ks;
}
inline std::string count_str(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", v);
  std::string s = b, o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) o += ',';
    o += s[i];
  }
  return o;
}
}  // namespace detail

/// The frontier of `g` (at its global batch) on `cl`: the union over micro-batch counts.
/// Throws invalid_argument for a micro-batch count that does not divide the batch.
inline planned_frontier plan_frontier(const op_graph& g, const cluster& cl, const planner_options& opt = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  planned_frontier pf;
  pf.graph = g;
  pf.cl = cl;
  pf.build = opt.build;
  auto say = [&](const std::string& s) {
    if (opt.progress) opt.progress(s);
  };
  std::vector<index_t> ks = opt.micro_batches.empty() ? detail::legal_micro_batches(g) : opt.micro_batches;
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const index_t k = ks[i];
    detail::require(k >= 1 && g.batch % k == 0,
                    "micro-batch count " + std::to_string(k) + " does not divide the global batch " +
                        std::to_string(g.batch) + "; choose a divisor");
    // each point names its part by its count, so one count per part
    detail::require(std::find(ks.begin(), ks.begin() + std::ptrdiff_t(i), k) == ks.begin() + std::ptrdiff_t(i),
                    "micro-batch count " + std::to_string(k) + " is listed twice; list each count once");
  }
  // One problem per k, solved by a pool of threads; results land in slot idx so the
  // outcome does not depend on the order in which threads finish.
  std::vector<std::vector<frontier_point>> entries(ks.size());
  // per k: the plans of the peak bound's search and what it did (plan/peak_frontier.hpp)
  std::vector<std::vector<frontier_point>> bound_found(ks.size());
  std::vector<bound_search_note> bound_notes(ks.size());
  pf.parts.resize(ks.size());
  std::mutex mu;
  std::condition_variable published_cv;
  // Jobs start in a fixed order (largest k first: the fewest activations, usually the
  // low-memory end of the union); a fast-mode job is bounded by the points guaranteed by
  // the jobs before it in that order, whatever the threads and their finishing order.
  std::vector<std::size_t> order(ks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return ks[x] > ks[y]; });
  std::vector<std::optional<std::vector<frontier::point>>> published(ks.size());
  auto publish = [&](std::size_t pos, std::vector<frontier::point> pts) {
    std::lock_guard lock(mu);
    if (!published[pos]) published[pos] = std::move(pts);
    published_cv.notify_all();
  };
  // `hw` jobs compute at once (`running` holds one token per computing job); a job that
  // waits for the points of the jobs before it gives its token back while it waits, so the
  // next job can start its own work (building its problem, its coarse per-layer solves).
  // At most 2 hw jobs are started at once (each holds its tables, so memory is bounded).
  const std::size_t hw = opt.threads > 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  std::counting_semaphore<> running(std::ptrdiff_t(std::min<std::size_t>(hw, 1 << 20)));
  // With `lock` held on mu: waits until `until()`, its token given back meanwhile.
  auto wait_idle = [&](std::unique_lock<std::mutex>& lock, auto until) {
    if (until()) return;
    lock.unlock();
    running.release();
    lock.lock();
    published_cv.wait(lock, until);
    lock.unlock();
    running.acquire();
    lock.lock();
  };
  // With mu held: how many jobs before `pos` have not published, and the points of those that have.
  auto out_before = [&](std::size_t pos) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < pos; ++i) n += !published[i];
    return n;
  };
  auto points_before = [&](std::size_t pos) {
    std::vector<frontier::point> all;
    for (std::size_t i = 0; i < pos; ++i)
      if (published[i]) all.insert(all.end(), published[i]->begin(), published[i]->end());
    return all;
  };
  auto published_before = [&](std::size_t pos) {
    std::unique_lock lock(mu);
    wait_idle(lock, [&] { return out_before(pos) == 0; });
    return points_before(pos);
  };
  std::atomic<bool> slow_hinted{false};  // the note of slow_hint_after_s was given
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> next_check{0};  // the tail's next restriction check
  std::size_t done = 0;
  std::exception_ptr failure;
  const std::size_t started = std::min(2 * hw, std::max<std::size_t>(ks.size(), 1));
  // Searches alive at once share the machine's memory.
  solve_options so = opt.solve;
  if (so.max_bytes == 0) so.max_bytes = detail::default_max_bytes() / started;
  static constexpr const char* beaten =
      "skipped: beaten by the points of the larger micro-batch counts, which lie at or below a lower bound of "
      "every strategy (edges at their least cost)";
  static constexpr const char* beaten_layers =
      "skipped: beaten by the points of the larger micro-batch counts, which lie at or below a lower bound of "
      "every strategy (each layer at its least cost, found after the layers' tables)";
  // whether the points of the counts before a job lie at or below that lower bound of its problem
  static constexpr const char* covered_note =
      "fast mode, skipped before its layout restriction's second pass: points of the counts before it lie within "
      "(1 + epsilon) of a lower bound of every strategy (weighted-sum optima of the whole problem at 8 weights)";
  auto beaten_by = [&](const problem& q, const std::vector<frontier::point>& before) {
    return detail::all_dominated(detail::edge_free_bound(q, opt.solve.memory_limit), before);
  };
  // The peak bound's own searches (plan/peak_frontier.hpp), where affordable, wait here until
  // no count is left to start: they take the cores the counts' searches leave idle at the
  // end instead of delaying the counts after them (gpt3-1.3b, 4 x V100-16GB, exact, two
  // threads: k = 1024's took 0.25 s right after its search, and the counts behind it started
  // that much later). Once every count is done, those still waiting run beside the peak
  // replays instead (the tail below), so no core idles while one thread searches
  // (the same run: a core idled 0.2 s while k = 1024's ran after the last count). Each
  // keeps its count's problem until it has run.
  std::vector<std::size_t> bounds_to_search;
  std::vector<bool> bound_waits(ks.size(), false);
  std::size_t begun = 0, finished = 0;  // counts started; of them, done or failed (both under mu)
  struct token_back {
    std::counting_semaphore<>& s;
    ~token_back() { s.release(); }
  };
  auto all_counts_done = [&] { return next >= ks.size() && finished == begun; };  // with mu held
  auto run_bound = [&](std::size_t idx) {
    try {
      auto found = bound_search_part(pf.parts[idx], opt.peak_search, opt.solve.memory_limit, bound_notes[idx]);
      std::lock_guard lock(mu);
      bound_found[idx] = std::move(found);
      bound_waits[idx] = false;
    } catch (...) {
      std::lock_guard lock(mu);
      bound_waits[idx] = false;
      if (!failure) failure = std::current_exception();
    }
  };
  auto take_bound = [&]() -> std::optional<std::size_t> {  // with mu held
    if (bounds_to_search.empty()) return std::nullopt;
    const std::size_t idx = bounds_to_search.front();
    bounds_to_search.erase(bounds_to_search.begin());
    return idx;
  };
  auto search_bounds = [&] {
    for (;;) {
      std::optional<std::size_t> idx;
      {
        std::unique_lock lock(mu);
        // every count done: the rest run beside the peak replays
        published_cv.wait(lock, [&] { return !bounds_to_search.empty() || all_counts_done(); });
        if (all_counts_done()) return;
        idx = take_bound();
      }
      running.acquire();
      token_back give_back{running};
      run_bound(*idx);
    }
  };
  // The tail, once every count is done: the union of the counts' frontiers (made once, by
  // the first thread there), then on every thread (one token each) fast mode's restriction
  // checks, the peak bound's searches still waiting and the union's peak replays. A thread
  // whose last count or bound search ends early starts it while the others finish theirs
  // (gpt3-1.3b, 4 x V100-16GB, exact, two threads: one core idled 0.09 s while the other
  // ended k = 1024's bound search, before the replays began).
  std::mutex union_mu;
  bool union_made = false;
  std::vector<std::size_t> to_check;
  std::vector<frontier::point> returned;
  std::optional<peak_attacher> peaks;
  // one restriction check per call (fast mode is checked where it matters: on the counts
  // that hold points of the final union; the others' problems are released already); false
  // when none is left
  auto check_one = [&] {
    const std::size_t i = next_check++;
    if (i >= to_check.size()) return false;
    try {
      auto& part = pf.parts[to_check[i]];
      auto tc = std::chrono::steady_clock::now();
      part.check = check_restriction(part.built->prob, part.frontier, opt.solve.memory_limit, returned,
                                     part.block.instances.empty() ? nullptr : &part.block, part.layouts_limited);
      part.check_seconds = detail::seconds_since(tc);
    } catch (...) {
      std::lock_guard lock(mu);
      if (!failure) failure = std::current_exception();
      next_check = to_check.size();
      return false;
    }
    return true;
  };
  auto make_union = [&] {
    pf.points = merge_frontiers(std::move(entries));
    entries.clear();
    for (auto& e : pf.points)
      for (std::size_t p = 0; p < pf.parts.size(); ++p)
        if (pf.parts[p].micro_batches == e.micro_batches) pf.part_of.push_back(int(p));
    if (opt.check_restriction) {
      for (std::size_t p = 0; p < pf.parts.size(); ++p)
        if (pf.parts[p].frontier.restricted && pf.parts[p].built) to_check.push_back(p);
      // what the union returns (the searches bounded each other, so a part alone may lack
      // points another covers)
      for (auto& e : pf.points) returned.push_back({e.time, e.memory, -1});
    }
    if (opt.runtime_peak) peaks.emplace(pf, opt.solve.memory_limit);
  };
  auto tail = [&] {
    {
      std::lock_guard lock(mu);
      if (failure) return;
    }
    try {
      std::lock_guard lock(union_mu);
      if (!union_made) make_union();
      union_made = true;
    } catch (...) {
      std::lock_guard lock(mu);
      if (!failure) failure = std::current_exception();
      return;
    }
    running.acquire();
    token_back give_back{running};
    while (check_one()) {
    }
    if (!opt.runtime_peak) return;
    for (;;) {  // the bound searches still waiting, then the replays
      std::optional<std::size_t> idx;
      {
        std::lock_guard lock(mu);
        if (!failure) idx = take_bound();
      }
      if (!idx) break;
      run_bound(*idx);
    }
    try {
      peaks->run();
    } catch (...) {
      std::lock_guard lock(mu);
      if (!failure) failure = std::current_exception();
    }
  };
  auto work = [&] {
    for (;;) {
      running.acquire();
      token_back give_back{running};
      std::size_t pos = 0;
      {
        std::lock_guard lock(mu);
        pos = next++;
        if (pos < ks.size()) ++begun;
      }
      if (pos >= ks.size()) break;
      const std::size_t idx = order[pos];
      bool counted = false;  // in `finished`
      try {
        const index_t k = ks[idx];
        plan_part part;
        part.micro_batches = k;
        auto tb = std::chrono::steady_clock::now();
        build_options bo = opt.build;
        bo.micro_batches = k;
        auto built = std::make_shared<built_problem>(build_problem(g, cl, bo));
        part.build_seconds = detail::seconds_since(tb);
        for (auto& n : built->prob.nodes) part.configs += n.configs.size();
        part.edges = built->prob.edges.size();
        auto ts = std::chrono::steady_clock::now();
        const double cpu0 = detail::thread_cpu_seconds();
        // Skip a k whose least memory (every node and edge at its least) exceeds the limit.
        double least = double(built->prob.memory_offset);
        for (auto& nd : built->prob.nodes) {
          cost_t m = nd.configs.front().memory;
          for (auto& c : nd.configs) m = std::min(m, c.memory);
          least += double(m);
        }
        for (auto& e : built->prob.edges)
          if (!e.memory.empty()) least += double(*std::min_element(e.memory.begin(), e.memory.end()));
        // at epsilon 0 exact mode runs the chain fold where the block splits (below)
        const mode_choice mc = choose_mode(built->prob, built->graph, opt.mode,
                                           so.epsilon == 0 ? exact_engine::chain_fold : exact_engine::general);
        part.mode = mc.mode;
        part.block = mc.block;
        part.why = mc.why;
        // Long searches report how far they are, at most every 2 seconds (fast mode and the
        // exact fold from their per-layer solves, each a search of its own part of the model).
        auto last = std::chrono::steady_clock::now();
        auto report_as = [&](const char* what) {
          return [&, what](const search_progress& sp) {
            if (!opt.progress) return;
            if (so.epsilon == 0 && opt.slow_hint_after_s > 0 && !slow_hinted.load(std::memory_order_relaxed) &&
                detail::seconds_since(t0) >= opt.slow_hint_after_s && !slow_hinted.exchange(true)) {
              std::lock_guard lock(mu);
              say("  note: still searching after " + std::to_string(int(detail::seconds_since(t0))) +
                  " s at epsilon 0 (exact); --epsilon 0.05 bounds the error instead (a plan within 5 % of "
                  "the fastest at every memory, memory exact) and prunes most of the search");
            }
            if (detail::seconds_since(last) < 2) return;
            last = std::chrono::steady_clock::now();
            std::lock_guard lock(mu);
            say("  micro-batches " + std::to_string(k) + ": " + what + std::to_string(sp.eliminated) + "/" +
                std::to_string(sp.total) + " ops eliminated, " + detail::count_str(double(sp.points)) +
                " points in the last factor");
          };
        };
        auto report = report_as("");
        const bool fits = least <= double(opt.solve.memory_limit);
        const bool folds = mc.mode == search_mode::exact && so.epsilon == 0 && !mc.block.instances.empty() &&
                           check_repeated(built->prob, mc.block).empty();
        if (!fits || !(mc.mode == search_mode::fast || folds) || !opt.job_bounds) publish(pos, {});
        if (!fits) {
          part.why = "skipped: even the least memory of every op exceeds the memory limit";
          part.frontier.exact = true;
        } else if (mc.mode == search_mode::fast) {
          repeated_bounds rbd;
          if (opt.progress) rbd.progress = report_as("a per-layer solve, ");
          // points past the time cap are erased from the union below, so they guarantee nothing
          if (opt.job_bounds) {
            rbd.exchange = [&, pos, cap = built->time_cap](std::vector<frontier::point> mine) {
              std::erase_if(mine, [&](const frontier::point& q) { return q.time >= cap; });
              publish(pos, std::move(mine));
              return published_before(pos);
            };
            if (pos > 0) {
              rbd.known = [&, pos] { return published_before(pos); };
              // the wait is used for this count's per-layer solves once fewer counts before it
              // are still out than threads (waiting idle until then, its token given back: run
              // further ahead, more of them would be spent on counts the others then skip)
              rbd.so_far = [&, pos]() -> std::optional<std::vector<frontier::point>> {
                std::unique_lock lock(mu);
                wait_idle(lock, [&] { return out_before(pos) < hw; });
                if (out_before(pos) == 0) return std::nullopt;
                return points_before(pos);
              };
              // polled by those early solves: they stop where newly arrived points skip the count
              rbd.in_so_far = [&, pos] {
                std::lock_guard lock(mu);
                return points_before(pos);
              };
              // the whole count is beaten when those points lie at or below a lower bound of
              // every strategy (plan/job_bounds.hpp); tested once they are in, so the count's
              // coarse per-layer solves run while the counts before it are still searching
              rbd.skip_if = [&](const std::vector<frontier::point>& before) {
                return beaten_by(built->prob, before) ? std::string(beaten) : std::string();
              };
            }
          }
          // fast mode's layout restriction (plan/search_mode.hpp, "The layouts"): the search
          // runs on the restricted problem, its points' configs mapped back. Its first pass
          // bounds every strategy of the count from below: where the points the counts before
          // it have published so far cover that bound within epsilon, the count is skipped
          // now, and the same test on all of them skips it later (skip_within; monotone, so
          // the outcome does not depend on which points were in first)
          std::optional<weighted_optima> first;
          std::optional<layout_restriction> lr;
          bool skipped_now = false;
          if (opt.layout_lanes > 0 && layouts_restricted(built->prob, mc.block, so.epsilon)) {
            first = first_pass(built->prob);
            if (opt.job_bounds && pos > 0) {
              std::vector<frontier::point> now;
              {
                std::lock_guard lock(mu);
                now = points_before(pos);
              }
              skipped_now = covered_by(*first, now, so.epsilon, so.memory_limit);
            }
            if (!skipped_now) {
              lr = restrict_layouts(built->prob, mc.block, opt.layout_lanes, so.memory_limit, &*first);
              part.why += layouts_restriction_note(opt.layout_lanes);
              part.layouts_limited = true;
              if (opt.job_bounds && pos > 0)
                rbd.skip_within = [&](const std::vector<frontier::point>& before) {
                  return covered_by(*first, before, so.epsilon, so.memory_limit) ? std::string(covered_note)
                                                                                  : std::string();
                };
            }
          }
          if (skipped_now) {
            publish(pos, {});
            part.frontier = frontier_result{};
            part.frontier.epsilon = so.epsilon;
            part.frontier.exact = false;
            part.frontier.restricted = true;
            part.frontier.skipped = true;
            part.frontier.note = covered_note;
          } else {
            part.frontier = solve_repeated(lr ? lr->restricted : built->prob, mc.block, so, rbd);
          }
          if (lr)
            for (auto& q : part.frontier.points)
              if (!q.choice.empty()) q.choice = lr->to_full(q.choice);
          if (part.frontier.skipped) part.why = part.frontier.note;
        } else if (folds) {
          // exact, identical layers folded once; bounded by its own fast-mode points and those
          // of the counts before it (real strategies: the union stays exact)
          // (skipped where those lie at or below a lower bound of all its strategies, as fast mode's)
          // The same test as the exchange's below is made now, before the fold's tables and
          // its fast-mode points, on the points the counts before it have published so far: a
          // count it skips publishes no points, which changes nothing after it (its points
          // would each lie at or above one of those before it, since they lie above its lower
          // bound). Points only join that set, so a count beaten by part of it is beaten by all
          // of it, and the exchange would skip it too, whatever the threads' timing (gpt3-1.3b
          // on 4 x V100-16GB, two threads: k = 32, 16 and 8 made their tables and fast-mode
          // points, 0.22 s of CPU, waiting for k = 64's).
          bool beaten_now = false;
          if (opt.job_bounds && pos > 0) {
            std::vector<frontier::point> before;
            bool all_in = false;  // with none published yet, only where every count before is in
            {
              std::lock_guard lock(mu);
              before = points_before(pos);
              all_in = out_before(pos) == 0;
            }
            beaten_now = (all_in || !before.empty()) && beaten_by(built->prob, before);
          }
          known_exchange ex;
          if (opt.job_bounds)
            ex = [&, pos, cap = built->time_cap](std::vector<frontier::point> mine) -> std::optional<std::vector<frontier::point>> {
              std::erase_if(mine, [&](const frontier::point& q) { return q.time >= cap; });
              publish(pos, std::move(mine));
              auto before = published_before(pos);
              if (pos > 0 && beaten_by(built->prob, before)) return std::nullopt;
              return before;
            };
          std::function<void(const search_progress&)> per_layer;
          if (opt.progress) per_layer = report_as("a per-layer solve, ");
          // once its tables are made, the search tests the points published so far (a part of
          // what the exchange returns) before it makes its fast-mode points
          std::function<std::vector<frontier::point>()> so_far;
          if (opt.job_bounds && pos > 0)
            so_far = [&, pos] {
              std::lock_guard lock(mu);
              return points_before(pos);
            };
          std::function<std::vector<frontier::point>()> before;
          if (opt.job_bounds && pos > 0) before = [&, pos] { return published_before(pos); };
          part.frontier = beaten_now ? united_skip(skip_stage::before_tables)
                                     : solve_repeated_exact(built->prob, mc.block, so, ex, per_layer, so_far, before);
          if (part.frontier.skipped)
            part.why = part.frontier.note.starts_with(skipped_after_tables) ? beaten_layers : beaten;
          publish(pos, {});  // where the search made no K (nothing published yet): the counts after it go on
        } else {
          part.frontier = solve(built->prob, so, report);
        }
        part.solve_seconds = detail::seconds_since(ts);
        part.solve_cpu_seconds = detail::thread_cpu_seconds() - cpu0;
        std::erase_if(part.frontier.points, [&](const auto& q) { return q.time >= built->time_cap; });
        // labelled once the union is known (most points fall off it)
        std::vector<frontier_point> mine;
        mine.reserve(part.frontier.points.size());
        for (auto& q : part.frontier.points) mine.push_back({q.time, q.memory, q.choice, int(k), {}});
        part.built = std::move(built);
        const bool bound_search = opt.runtime_peak && peak_search_affordable(part, opt.peak_search);
        std::lock_guard lock(mu);
        ++done;
        say("[" + std::to_string(done) + "/" + std::to_string(ks.size()) + "] micro-batches " + std::to_string(k) +
            ": " + detail::count_str(double(part.built->prob.nodes.size())) + " ops, " +
            detail::count_str(double(part.configs)) + " configs, " + detail::count_str(double(part.edges)) +
            " edges; built in " + detail::fmt("%.2f", part.build_seconds) + " s, solved in " +
            detail::fmt("%.2f", part.solve_seconds) + " s (" + detail::fmt("%.2f", part.solve_cpu_seconds) +
            " s CPU): " + std::to_string(part.frontier.points.size()) +
            " points; " + part.why);
        entries[idx] = std::move(mine);
        pf.parts[idx] = std::move(part);
        if (bound_search) {
          bounds_to_search.push_back(idx);
          bound_waits[idx] = true;
        }
        ++finished;
        counted = true;
        published_cv.notify_all();
        // Release the problems that no longer contribute to the union so far (the union as
        // merge_frontiers takes it, on the costs alone: copying the points cost 1 s on gpt3-1.3b).
        struct key { cost_t memory, time; int micro_batches; std::size_t part; };
        std::vector<key> keys;
        for (std::size_t p = 0; p < entries.size(); ++p)
          for (auto& e : entries[p]) keys.push_back({e.memory, e.time, e.micro_batches, p});
        std::sort(keys.begin(), keys.end(), [](const key& a, const key& b) {
          return std::tie(a.memory, a.time, a.micro_batches) < std::tie(b.memory, b.time, b.micro_batches);
        });
        std::vector<bool> used(pf.parts.size(), false);
        cost_t best = std::numeric_limits<cost_t>::max();
        for (auto& x : keys)
          if (x.time < best) {
            best = x.time;
            for (std::size_t p = 0; p < pf.parts.size(); ++p)  // every part of that count, as part_of below
              if (pf.parts[p].micro_batches == x.micro_batches) used[p] = true;
          }
        for (std::size_t p = 0; p < pf.parts.size(); ++p)
          if (!used[p] && bound_found[p].empty() && !bound_waits[p]) pf.parts[p].built.reset();
      } catch (...) {
        publish(pos, {});
        std::lock_guard lock(mu);
        if (!failure) failure = std::current_exception();
        next = ks.size();
        if (!counted) ++finished;
        published_cv.notify_all();
      }
    }
    search_bounds();
    tail();
  };
  auto run_pool = [&](auto&& fn, std::size_t threads) {  // fn on `threads` threads (this one included)
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(fn);
    fn();
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
  };
  run_pool(work, started);
  if (opt.runtime_peak) {
    // the peak bound's plans join the candidates after the union's replays
    bound_search_note bn;
    bn.parts = pf.parts.size();
    std::vector<frontier_point> extra;
    std::vector<int> extra_part;
    for (std::size_t p = 0; p < pf.parts.size(); ++p) {
      bn.searched += bound_notes[p].searched;
      bn.solved += bound_notes[p].solved;
      bn.candidates += bound_notes[p].candidates;
      bn.epsilon = std::max(bn.epsilon, bound_notes[p].epsilon);
      for (auto& q : bound_found[p]) {
        extra.push_back(std::move(q));
        extra_part.push_back(int(p));
      }
    }
    peaks->add(std::move(extra), extra_part);
    auto f = peaks->finish(hw);
    f.bound = bn;
    pf.memory_note = f.describe();
  } else
    pf.memory_note = "the additive memory the search optimized (not the runtime peak)";
  // each kept point's config labels, on every thread (a string per op and point; the union's
  // other points, in pf.searched, get theirs from label_searched or complete_searched)
  pf.label_points(hw);
  for (auto& part : pf.parts) {
    pf.exact = pf.exact && part.frontier.exact;
    pf.restricted = pf.restricted || part.frontier.restricted;
    std::string line = part.why;
    if (part.frontier.restricted && opt.check_restriction)
      line += "; " + (part.built ? part.check.describe() : std::string("not checked: no point on the final frontier"));
    const std::string k = std::to_string(part.micro_batches);
    bool found = false;
    for (auto& n : pf.mode_notes)
      if (n.rfind(line + " (k = ", 0) == 0) {
        n.insert(n.size() - 1, ", " + k);
        found = true;
      }
    if (!found) pf.mode_notes.push_back(line + " (k = " + k + ")");
  }
  pf.search_seconds = detail::seconds_since(t0);
  if (opt.baselines) {
    pf.baselines = plan_baselines(g, cl, opt.build, pf.points, ks, opt.runtime_peak);
    pf.baselines.push_back(single_objective_baseline(g, cl, opt.build, pf.points, ks, opt.runtime_peak));
  }
  return pf;
}

/// The report of `pf` with the plan `chosen` (if any) highlighted and its per-op
/// table; `budget` (if any) is drawn as the memory budget.
inline frontier_report make_report(const planned_frontier& pf, const std::string& model,
                                   const std::optional<plan>& chosen_plan = std::nullopt,
                                   std::optional<bytes> budget = std::nullopt) {
  detail::require(!chosen_plan || &chosen_plan->frontier() == &pf,
                  "make_report: the chosen plan belongs to another frontier");
  const int chosen = chosen_plan ? int(chosen_plan->index()) : -1;
  frontier_report r;
  r.model = model;
  r.cluster = pf.cl.describe();
  r.precision = std::string(pf.build.prec.name);
  r.samples = double(pf.graph.batch);
  r.capacity = pf.cl.gpu_spec.capacity.value;
  r.budget = budget ? budget->value : 0;
  r.search_seconds = pf.search_seconds;
  r.baselines = pf.baselines;
  r.chosen = chosen;
  for (auto& op : pf.graph.ops) r.op_names.push_back(op.name);
  for (std::size_t i = 0; i < pf.points.size(); ++i) {
    frontier_report::point p;
    p.time = double(pf.points[i].time) / ps_per_second;
    p.memory = double(budget_memory(pf.points[i]));
    if (pf.points[i].peak > 0 && pf.points[i].peak != pf.points[i].memory) p.additive = double(pf.points[i].memory);
    p.micro_batches = pf.points[i].micro_batches;
    p.choice = pf.points[i].choice;
    p.labels = pf.points[i].labels;
    p.summary = pf.summary(i);
    r.points.push_back(std::move(p));
  }
  if (!pf.exact) r.notes = "approximate frontier (epsilon or width fallback): see the search notes";
  if (!pf.memory_note.empty()) r.notes += std::string(r.notes.empty() ? "" : "; ") + pf.memory_note;
  if (pf.restricted) {
    r.notes += std::string(r.notes.empty() ? "" : "; ") +
               "fast mode: one layout at every boundary between identical layers (" + pf.mode_notes.front() + ")";
  }
  if (chosen >= 0) {
    const auto& b = pf.problem_of(std::size_t(chosen));
    const auto configs = pf.op_configs(std::size_t(chosen));
    const cost_options co = b.options.cost();
    for (std::size_t i = 0; i < b.graph.ops.size(); ++i) {
      const auto& op = b.graph.ops[i];
      const op_cost c = cost_op(b.graph, int(i), configs[i], pf.cl, co);
      op_row row;
      row.op = op.name;
      row.config = pf.points[std::size_t(chosen)].labels[i];
      row.time = c.time().value;
      row.memory = c.memory().value;
      std::string coll;
      if (c.collectives.value > 0) coll += "own collectives " + format_seconds(c.collectives);
      if (c.grad_sync.value > 0)
        coll += std::string(coll.empty() ? "" : "; ") + (configs[i].shard_optimizer ? "reduce-scatter + all-gather" : "all-reduce") +
                " of gradients " + format_seconds(c.grad_sync);
      if (c.recompute.value > 0) coll += std::string(coll.empty() ? "" : "; ") + "recompute " + format_seconds(c.recompute);
      row.collectives = coll.empty() ? "-" : coll;
      r.chosen_ops.push_back(std::move(row));
    }
  }
  return r;
}

}  // namespace tensoropt
