// The frontier with pipeline stages: (most memory of any device, iteration time) over
// every pipeline degree p, micro-batch count k >= p, stage partition and intra-stage
// strategy, under the cost model of cost/pipeline_cost.hpp.
//
// Jobs. One job per legal p (pipeline_degree_error; p = 1 included, whose only stage is
// today's problem, so today's frontier is a subset) and per k >= p dividing the batch.
// A stage is a range of ops between cut points (model/stage_graph.hpp); its frontier is
// today's search on its stage problem (plan/stage_problem.hpp: the stage's mesh, times
// over k + p - 1 slots and k - 1 gradient accumulations, activations times the
// micro-batches in flight), in the search mode of plan/search_mode.hpp (a stage of n
// identical layers is a repeat<> of n, composed by powering in fast mode). Stages run at
// once on disjoint devices, so stage frontiers combine by the exact max-max merge
// (search/max_max_merge.hpp); the sends of the boundaries are added to the time.
//
// Partitions.
//  - balanced: the model's largest repeat<> of L identical layers is cut into p stages
//    of L / p layers (the L mod p stages before the last get one more), the
//    embedding in the first stage and the head and loss in the last. Stages of one
//    class (same layer count, neither first nor last) are the same problem except for
//    the micro-batches in flight, which only lowers memory further down the pipeline;
//    so the class's first stage bounds all of them at every strategy, and one search per
//    class is exact for this partition (3 searches per job, whatever p).
//  - all: a dynamic program over cut points. G(i, a) is the frontier of stages i..p-1
//    starting at op a, kept per total of sends (sends differ between cut points):
//    G(i, a) = | over cut points b > a of  F(a, b, i) max-max G(i + 1, b)  (sends + s_b),
//    with F(a, b, i) the stage frontier of ops [a, b) as stage i (one search per range
//    and in-flight count). Exact over every partition into contiguous ranges.
//  - automatic: all when the graph has at most `max_dp_cuts` cut points, else balanced
//    (the result says which ran).
// Exactness. Each stage search is exact in exact mode, or within its epsilon (memory
// exact, time within 1 + epsilon); max and max keep that bound (max of times each within
// 1 + e is within 1 + e of the max) and adding the sends keeps it. The result is exact
// when every stage search was and the partition was searched whole (`all`); balanced
// partitions are a stated restriction. Balanced jobs (plan/balanced_job.hpp) search
// their stages within (1 + epsilon)^stage_epsilon_share and are skipped where the jobs
// before them cover them within 1 + epsilon, so every point of every job lies within
// 1 + epsilon of a returned one (exact dominance at epsilon 0).
// Every returned point carries a pipeline_plan, and evaluate_pipeline re-costs it to
// exactly its (time, memory). Points above the memory limit are dropped; among equal
// costs the smaller p, then the smaller k, is kept.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>
#include "../search/max_max_merge.hpp"
#include "../search/repeated.hpp"
#include "../search/solve.hpp"
#include "frontier_report.hpp"
#include "pipeline_bounds.hpp"
#include "search_mode.hpp"
#include "stage_partition.hpp"
#include "stage_problem.hpp"

namespace tensoropt {

enum class partition_search { automatic, balanced, all };

struct pipeline_options {
  build_options build{};               ///< precision, reserve, config bounds
  std::vector<index_t> degrees;        ///< pipeline degrees to search; empty: every legal one
  std::vector<index_t> micro_batches;  ///< counts to search; empty: every k dividing the batch (k >= p)
  solve_options solve{};               ///< epsilon and memory_limit apply to every stage search
  search_mode mode = search_mode::automatic;
  partition_search partitions = partition_search::automatic;
  std::size_t max_dp_cuts = 24;        ///< automatic: the dynamic program up to this many cut points
  std::size_t threads = 0;             ///< jobs at once; 0 = every core
  bool skip_by_bounds = true;          ///< skip jobs that cannot add a point (plan/pipeline_bounds.hpp)
  std::size_t max_lines = 3;           ///< lines of a job's region at most (scalar searches per stage class each)
  std::function<void(const std::string&)> progress;
  /// Replay each point's runtime stage peaks and keep the plans not dominated under
  /// (peak, time) (plan/pipeline_peak_frontier.hpp); false: the additive frontier as searched.
  bool runtime_peak = true;
};

struct pipeline_point {
  cost_t time = 0, memory = 0;  ///< picoseconds per iteration, bytes on the fullest device (additive)
  pipeline_plan plan;
  cost_t peak = 0;  ///< the predicted runtime peak of the fullest stage; 0: not computed
  /// What a budget is held against: the peak where computed, else the additive memory.
  cost_t reported_memory() const { return peak > 0 ? peak : memory; }
};

struct pipeline_frontier {
  std::vector<pipeline_point> points;  ///< memory ascending, time strictly descending
  bool exact = true;                   ///< every stage search exact and every partition searched
  bool balanced = false;               ///< the balanced partition ran (a restriction)
  std::vector<std::string> notes;
  std::size_t jobs = 0, stage_searches = 0;
  std::size_t fast_searches = 0, stream_searches = 0;  ///< of them, in fast mode; with the stream held
  std::size_t skipped = 0;             ///< jobs skipped by bounds (plan/pipeline_bounds.hpp)
  std::size_t skipped_over_limit = 0;  ///< of them, jobs whose least memory is above the limit
  std::size_t skipped_by_minima = 0;   ///< of them, jobs skipped on node (and edge) minima alone, no scalar search
  std::size_t skipped_after_searches = 0;  ///< of them, jobs skipped on the frontier of some of their stage classes
  double seconds = 0;
  double peak_seconds = 0;  ///< of `seconds`, the runtime peak replay (runtime_peak)
  std::vector<baseline_result> baselines;
  std::vector<pipeline_point> searched;  ///< under runtime_peak: every point the search returned
  std::string memory_note;               ///< which memory `points` holds (and the search optimized)
};

namespace detail {

/// A stage search's result: its problem (config table) and frontier.
struct stage_result {
  std::shared_ptr<const stage_problem> sp;
  frontier_result fr;
  std::size_t a = 0, b = 0;
  double build_seconds = 0, solve_seconds = 0;
  bool fast = false, stream = false;  ///< searched in fast mode; with the stream held (search_mode.hpp)
};

inline stage_result build_stage(const op_graph& micro, std::size_t a, std::size_t b, const cluster& cl,
                                const pipeline_options& o, index_t k, index_t p, index_t i) {
  stage_result r;
  r.a = a;
  r.b = b;
  const auto t0 = std::chrono::steady_clock::now();
  r.sp = std::make_shared<stage_problem>(build_stage_problem(micro, a, b, cl, o.build, k, p, i));
  r.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}
/// The stage search of `r`, set up as `st` (stage_setup_of: validated, mode and split).
inline void solve_stage(stage_result& r, const stage_setup& st, const solve_options& so) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& prob = r.sp->built.prob;
  const mode_choice& mc = st.mc;
  r.fast = mc.mode == search_mode::fast;
  r.stream = r.fast && !mc.block.kin.empty();
  r.fr = r.fast ? solve_repeated_split(prob, mc.block, st.split, so, {})
                : solve_valid(prob, so, [](const search_progress&) {});
  std::erase_if(r.fr.points, [&](const frontier_point& q) { return q.time >= r.sp->built.time_cap; });
  r.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
inline void solve_stage(stage_result& r, const pipeline_options& o, const solve_options& so) {
  solve_stage(r, stage_setup_of(*r.sp, o.mode), so);
}
inline stage_result search_stage(const op_graph& micro, std::size_t a, std::size_t b, const cluster& cl,
                                 const pipeline_options& o, index_t k, index_t p, index_t i, const solve_options& so) {
  stage_result r = build_stage(micro, a, b, cl, o, k, p, i);
  solve_stage(r, o, so);
  return r;
}
/// Writes stage s's configs (from point `pt` of `r`, whose stage starts at r.a) into `pp`,
/// shifted to start at op `a` (a stage of the same class).
inline void put_stage(pipeline_plan& pp, const op_graph& g, const stage_result& r, std::size_t pt, std::size_t s,
                      std::size_t a) {
  const auto& choice = r.fr.points[pt].choice;
  const auto& sp = *r.sp;
  for (std::size_t j = 0; j < sp.op_of.size(); ++j) {
    const op_config& c = sp.built.configs[j][std::size_t(choice[j])];
    if (sp.op_of[j] < 0) {
      if (s > 0) pp.receive_configs[s - 1] = c;
      continue;
    }
    const std::size_t from = std::size_t(sp.op_of[j]), to = from - r.a + a;
    require<runtime_error>(to < g.ops.size() && g.ops[to].kind == g.ops[from].kind && g.ops[to].dims == g.ops[from].dims,
                           "pipeline search: internal error, stages of one class differ at op " + std::to_string(to));
    pp.configs[to] = c;
  }
}

/// A job's points before they become plans: cost and how to build the plan.
struct job_point {
  cost_t time = 0, memory = 0;
  std::function<pipeline_plan()> make;
};

}  // namespace detail

namespace detail {

struct job_bound;  // plan/job_cover.hpp

/// The job's points: the frontier of p stages, k micro-batches, over the partition `bp`.
struct job_result {
  std::vector<job_point> points;
  std::size_t searches = 0, fast = 0, stream = 0;  ///< stage searches; in fast mode; with the stream held
  bool exact = true;
  bool skipped = false;  ///< bounds showed the job adds nothing
  bool over_limit = false;  ///< skipped because its least memory is above the limit
  bool by_minima = false;   ///< skipped on node (and edge) minima alone, no scalar search
  bool after_searches = false;  ///< skipped on the frontier of the stage classes searched so far
  /// Of a job searched under the bounds: what the planner tests when it commits the job
  /// (job_bound; absent without bounds).
  std::shared_ptr<job_bound> bound;
  double bound_seconds = 0;  ///< the job bounds (minima and scalar searches)
  double build_seconds = 0, solve_seconds = 0;
  /// Counts a stage search; `built`: its build time is not counted yet.
  void count(const stage_result& r, bool built = true) {
    exact = exact && r.fr.exact && !r.fr.restricted;
    ++searches;
    fast += r.fast ? 1 : 0;
    stream += r.stream ? 1 : 0;
    if (built) build_seconds += r.build_seconds;
    solve_seconds += r.solve_seconds;
  }
};

/// The dynamic program over cut points (see the file comment).
inline job_result partition_job(const op_graph& g, const op_graph& micro, const cluster& cl, const pipeline_options& o,
                                index_t p, index_t k, const solve_options& so) {
  job_result jr;
  const std::size_t P = std::size_t(p), n = g.ops.size();
  std::vector<std::size_t> pos{0};
  for (std::size_t c : cut_points(micro)) pos.push_back(c);
  struct dp_point {
    cost_t time, memory;
    std::int32_t st, stage_pt, next_pos, next_group, next_pt;
  };
  struct dp_group {
    cost_t sends;
    std::vector<dp_point> pts;
  };
  struct table {
    std::vector<stage_result> stages;
    std::vector<std::vector<std::vector<dp_group>>> G;  // [stage][position]
  };
  auto T = std::make_shared<table>();
  T->G.assign(P, std::vector<std::vector<dp_group>>(pos.size()));
  std::map<std::tuple<std::size_t, std::size_t, index_t>, std::int32_t> cache;
  auto stage = [&](std::size_t a, std::size_t b, std::size_t i) {
    const auto key = std::make_tuple(a, b, in_flight(k, p, index_t(i)));
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    T->stages.push_back(search_stage(micro, a, b, cl, o, k, p, index_t(i), so));
    jr.count(T->stages.back());
    return cache[key] = std::int32_t(T->stages.size() - 1);
  };
  for (std::size_t i = P; i-- > 0;)
    for (std::size_t x = 0; x < pos.size(); ++x) {
      if ((i == 0) != (x == 0)) continue;
      const std::size_t a = pos[x];
      if (i + 1 == P) {
        const std::int32_t st = stage(a, n, i);
        dp_group grp{0, {}};
        const auto& pts = T->stages[std::size_t(st)].fr.points;
        for (std::size_t q = 0; q < pts.size(); ++q) grp.pts.push_back({pts[q].time, pts[q].memory, st, std::int32_t(q), -1, -1, -1});
        T->G[i][x].push_back(std::move(grp));
        continue;
      }
      std::map<cost_t, std::vector<dp_point>> by_sends;
      for (std::size_t y = x + 1; y < pos.size(); ++y) {
        if (T->G[i + 1][y].empty()) continue;
        const std::size_t b = pos[y];
        const std::int32_t st = stage(a, b, i);
        const cost_t sb = stage_send_time(micro.tensors[std::size_t(cut_tensor(micro, b))], cl, p, index_t(i), o.build.prec);
        for (std::size_t h = 0; h < T->G[i + 1][y].size(); ++h) {
          const dp_group& nx = T->G[i + 1][y][h];
          for (const auto& m : max_max_merge(T->stages[std::size_t(st)].fr.points, nx.pts))
            by_sends[nx.sends + sb].push_back(
                {m.time, m.memory, st, m.a, std::int32_t(y), std::int32_t(h), m.b});
        }
      }
      for (auto& [s, pts] : by_sends) {
        std::stable_sort(pts.begin(), pts.end(), [](const dp_point& u, const dp_point& v) {
          return u.memory != v.memory ? u.memory < v.memory : u.time < v.time;
        });
        std::size_t kept = 0;
        for (std::size_t q = 0; q < pts.size(); ++q)
          if (kept == 0 || pts[q].time < pts[kept - 1].time) pts[kept++] = pts[q];
        pts.resize(kept);
        T->G[i][x].push_back({s, std::move(pts)});
      }
    }
  for (std::size_t h = 0; h < T->G[0][0].size(); ++h)
    for (std::size_t q = 0; q < T->G[0][0][h].pts.size(); ++q) {
      const auto& x = T->G[0][0][h].pts[q];
      auto make = [&g, T, h, q, p, k, mesh = cl.mesh] {
        pipeline_plan pp;
        pp.degree = int(p);
        pp.micro_batches = int(k);
        pp.configs.resize(g.ops.size());
        pp.mesh = mesh;
        pp.receive_configs.resize(std::size_t(p) - 1);
        std::int32_t at = 0, grp = std::int32_t(h), pt = std::int32_t(q);
        for (std::size_t i = 0; i < std::size_t(p); ++i) {
          const dp_point& d = T->G[i][std::size_t(at)][std::size_t(grp)].pts[std::size_t(pt)];
          const stage_result& st = T->stages[std::size_t(d.st)];
          pp.stage_begin.push_back(st.a);
          put_stage(pp, g, st, std::size_t(d.stage_pt), i, st.a);
          at = d.next_pos;
          grp = d.next_group;
          pt = d.next_pt;
        }
        return pp;
      };
      jr.points.push_back({x.time + T->G[0][0][h].sends, x.memory, std::move(make)});
    }
  return jr;
}

}  // namespace detail

}  // namespace tensoropt
