// Lower bounds of a pipeline job (one pipeline degree p and micro-batch count k), used
// to order the jobs and to skip the ones that cannot add a point to the frontier.
//
// Why. The pipeline frontier is a union over every legal (p, k): 217 jobs for
// megatron-1t on 3,072 devices, 246 for megatron-145.6b on 1,536. Most of them are
// beaten everywhere by a few others (a larger k has a smaller bubble and smaller
// micro-batches), and a job whose every plan is above the device memory spends its
// whole stage search (up to minutes for p = 1, today's search on the whole model) to
// find nothing. These bounds decide that before the search:
//
//  - order bound (graph only, no problem is built): the bottleneck stage's GEMM
//    FLOPs per micro-batch (forward + backward, at least 1/d of them on each of its d
//    devices) at the device's peak and most GEMM efficiency, times the k + p - 1 slots
//    of 1F1B, plus the sends. cost_op charges every GEMM at least that (roofline max,
//    efficiency below its maximum, launch overhead and collectives added), so it is a
//    lower bound of the job's time; within one pipeline degree jobs run in ascending
//    order of it (the degrees from the largest, plan/pipeline_planner.hpp), so the
//    fast plans are found first and bound the rest.
//  - corner bound (after the stage problems are built, which is cheap next to their
//    search): for each stage class, the exact least time and the exact least memory of
//    its stage problem, each found by solving the problem with the other objective set
//    to zero (every frontier then has one point, so the search is a scalar dynamic
//    program; a config or edge at the builder's time cap, which the stage search
//    drops, costs the cap in memory there), in the same search mode as the stage search (a fast-mode stage is
//    searched over the same restricted space, so its least cost bounds what its search
//    can return). The job's points all lie at or above (max time + sends, max memory)
//    over its stages. The least-memory search runs under the memory limit: when it
//    finds nothing, no plan of the job fits.
//  - fits nowhere: the stage search keeps strategies of memory m <= limit and time
//    t < cap (the builder's time cap); the least memory may need a strategy far slower
//    than the cap (on megatron-1t at p = 1 it splits tensors across nodes). For a
//    weight w >= 0 any kept strategy has m + w t < limit + w cap, so when the least of
//    m + floor(w min(t, cap)) (a scalar search again) is not below that, the stage
//    search finds nothing (w = 1/2, 1, 2 times limit / cap). These three searches run
//    only when the least-memory strategy itself is not kept (time at or above the cap).
//  - regions: a scalar search of m + floor(w t) (w in bytes per picosecond) gives s_i
//    with M_i + w T_i >= s_i for every strategy of stage i (less one per term: w t is
//    rounded in double). A job point (T, M) has T - sends >= T_i and M >= M_i for every
//    stage, so M + w (T - sends) >= max_i s_i: a line under the job's frontier. The
//    corner and the lines bound a region that holds every point the job can return;
//    its least time at memory m only falls as m grows.
//
//  - node and edge minima (before any scalar search): every cost is non-negative and a
//    strategy the stage search keeps has time below the cap and memory within the limit,
//    so it uses no config of time at or above the cap or of memory above the limit less
//    the offset, and no edge entry of time at or above the cap. Its time is then at least
//    the sum over nodes of their least time among the other configs, its memory the
//    offset plus the sum of their least memory, and m + w t at least the offset plus the
//    sum of their least m + w t (node minima: edges counted as 0, one pass over the
//    configs). Charging each edge to the node it leaves, at that node's config, its least
//    entry over the other end's admitted configs gives the same bounds with the edges in
//    (node and edge minima: one pass over the edge entries). Each gives a corner and any
//    number of lines without a search; the job is tested on node minima, then on node and
//    edge minima, then on the scalar searches. On megatron-1t they are within a few per
//    cent of the searched least time where it decides (84.1 s searched, 81.0 s from
//    minima at p = 1, k = 1), and 150 of its 180 skipped jobs need no scalar search.
//
// Skipping. A job is skipped when its least memory is above the memory limit (it has
// no point below the limit, and points above it are not kept), or when every point of
// its region within the limit is covered by a point found already: with `cover` = 1 +
// epsilon, a point of no more memory and at most `cover` times the time (then so is
// every exact point of the job; at epsilon 0, dominated, on an exact tie the point with
// the smaller (p, k) being the one kept, as without skipping). That is checked at the
// region's least memory, just below the memory of each point found (where the best time
// found changes) and at the limit. The region's lines have fixed slopes (fixed_slopes,
// from the job's node minima), so that it does not depend on the points found: the
// minima give all of them in one pass; the scalar searches give a line only where the
// points found ask for one (the fixed slope nearest to theirs around the memory where
// the region is not yet covered, up to `max_lines`), and the least time only when a
// point found already has no more memory than the job's least memory. Every scalar
// search has one point per frontier, which the eliminator takes in one pass per cell
// (search/detail/eliminator.hpp).
//
//  - the classes searched so far (after each stage search but the last of a job): the
//    job's stage classes are searched one at a time, and every point the job returns is
//    a point of the max-max merge of those searched so far combined with points of the
//    others, so it lies in the region with its corner raised to that point
//    (staircase_dominated). This staircase is not convex, so it settles jobs that the
//    lines cannot (a region's lines sit under the convex hull of its stages' frontiers).
//    Its points are those of stage searches within 1 + e_s, so it is tested within
//    cover / (1 + e_s).
// How the planner keeps the result independent of the order jobs finish in, and what
// epsilon buys, is plan/balanced_job.hpp's and plan/pipeline_planner.hpp's
// (pipeline_options::skip_by_bounds turns the skipping off).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>
#include "../cost/pipeline_cost.hpp"
#include "../search/repeated.hpp"
#include "../search/detail/scalar_problem.hpp"
#include "../search/solve.hpp"
#include "search_mode.hpp"
#include "stage_partition.hpp"
#include "stage_problem.hpp"

namespace tensoropt {

namespace detail {

/// A lower bound in picoseconds of stage [a, b) of the micro-batch graph `micro` as a
/// stage of p with k micro-batches on `cl` (see the file comment: GEMM FLOPs at peak).
inline cost_t stage_time_floor(const op_graph& micro, std::size_t a, std::size_t b, const cluster& cl, index_t p,
                               index_t k, const precision& pr) {
  const device& dev = cl.gpu_spec;
  const double d = double(cl.mesh.devices() / p);
  const double rate = dev.peak(pr.compute).value * std::max(dev.gemm_max_efficiency, 1e-12);
  double s = 0;
  std::size_t terms = 0;
  for (std::size_t i = a; i < b && i < micro.ops.size(); ++i) {
    const op_node& op = micro.ops[i];
    ++terms;
    if (op.kind == op_kind::input || !is_gemm(op.kind)) continue;
    const double pts = op.points();
    s += (op.fwd_flops_per_point + op.bwd_flops_per_point) * pts / d / rate + 2 * dev.launch_overhead.value;
  }
  // every op's time is rounded to whole picoseconds: allow half of one per op
  const double ps = s * double(pipeline_slots(k, p)) * ps_per_second - 0.5 * double(terms) - 1;
  return ps > 0 ? cost_t(ps) : 0;
}

/// The order bound of a balanced job: the largest stage floor plus the sends.
inline cost_t balanced_time_floor(const op_graph& micro, const cluster& cl, index_t p, index_t k,
                                  const balanced_partition& bp, const precision& pr) {
  cost_t t = 0;
  const std::size_t P = bp.starts.size();
  for (std::size_t s = 0; s < P; ++s)
    t = std::max(t, stage_time_floor(micro, bp.starts[s], s + 1 < P ? bp.starts[s + 1] : micro.ops.size(), cl, p, k, pr));
  return t + pipeline_sends(micro, cl, p, bp.starts, pr);
}

/// The order bound of a job over every partition: the whole model's floor divided over
/// the p stages (the bottleneck holds at least 1/p of it), no sends.
inline cost_t partition_time_floor(const op_graph& micro, const cluster& cl, index_t p, index_t k,
                                   const precision& pr) {
  return stage_time_floor(micro, 0, micro.ops.size(), cl, p, k, pr) / cost_t(p);
}

/// The stages of a pipeline (p > 1) take fast mode above this much work (L x B^3,
/// plan/search_mode.hpp), below the flat planner's 5e4: a pipeline search runs one stage
/// search per stage class of every job it does not skip, and a stage of few layers has
/// large frontiers. Measured on megatron-1t at pp 32, k 256 (stages of 4 layers x 20^3 =
/// 32,000): exact 19.4 s for the job's three stage searches, fast 1.0 s; its fastest plan
/// 75.78 s exact, 76.07 s fast. p = 1, whose one stage is the whole model, keeps the flat
/// planner's rule, so that today's frontier stays part of the pipeline frontier.
inline constexpr double stage_fast_above = 5e3;
/// ... and hold the stream (the residual adds inside each identical layer take the
/// boundaries' layout too, plan/search_mode.hpp) above this much, below the flat planner's
/// 1e6. Measured on the whole pipeline frontiers (`pipeline_bench --only M --threads 2`,
/// one session): megatron-145.6b 79.2 -> 68.4 s wall, megatron-1t 60.8 -> 58.5 s; the
/// fastest plan that fits 145.6b 17.341 -> 17.402 s (the restriction, 0.35 %), 1t the
/// same 71.835 s. 3e4 and 1e4 measured the same as 1e5 within noise.
inline constexpr double stage_stream_above = 1e5;

/// The search mode of stage problem `sp` when `mode` is asked (both the stage search and
/// the bounds' scalar searches use it, so that each bounds what the other searches).
inline mode_choice stage_mode(const stage_problem& sp, search_mode mode) {
  return sp.degree > 1 ? choose_mode(sp.built.prob, sp.built.graph, mode, exact_engine::general, stage_fast_above,
                                     stage_stream_above)
                       : choose_mode(sp.built.prob, sp.built.graph, mode);
}

/// What every search of one stage problem shares: the mode (stage_mode) and, in fast
/// mode, the block's split (search/detail/repeated_split.hpp), found once; the problem
/// is validated once too. The scalar searches below reweigh the same problem entry by
/// entry, so its structure, its identical layers and their layout classes stay valid;
/// they search under these classes, the stage search's own (a reweighed problem's own
/// split could merge classes, i.e. allow more strategies), so each bounds exactly the
/// strategies the stage search keeps.
struct stage_setup {
  mode_choice mc;
  repeated_split split;  ///< fast mode only
};
inline stage_setup stage_setup_of(const stage_problem& sp, search_mode mode) {
  validate(sp.built.prob);
  stage_setup s{stage_mode(sp, mode), {}};
  if (s.mc.mode == search_mode::fast) {
    s.split = split_repeated(sp.built.prob, s.mc.block);
    require<runtime_error>(s.split.why_not.empty(), "pipeline search: internal error, a fast-mode stage does not split: " +
                                                        s.split.why_not);
  }
  return s;
}

/// Memory no stage search can go under: the limit was passed and nothing fits.
inline constexpr cost_t nothing_fits = std::numeric_limits<cost_t>::max();

/// One scalar search of stage problem `sp` set up as `st`: every config and edge costs
/// `weigh(time, memory)` in memory and nothing in time, so every frontier is one point.
/// The reweighed problem (search/detail/scalar_problem.hpp) is written without the
/// config labels, and its entries are checked as they are written (>= 0, the bound of
/// validate), so the search skips validate's passes. Before, each scalar search copied the labels, validated and split
/// the whole stage again: on megatron-145.6b's pipeline frontier (perf) the copies, the
/// split's comparisons and validate took about 8 % of the run's CPU time.
template <class Weigh>
frontier_result scalar_stage_search(const stage_problem& sp, const stage_setup& st, cost_t memory_limit,
                                    std::size_t max_bytes, Weigh weigh, bool keep_offset = true) {
  const problem& p = sp.built.prob;
  const problem q = scalar_problem(p, keep_offset ? p.memory_offset : 0, weigh);
  solve_options so;
  so.max_bytes = max_bytes;
  so.memory_limit = memory_limit;
  return st.mc.mode == search_mode::fast ? solve_repeated_split(q, st.mc.block, st.split, so, {})
                                         : solve_valid(q, so, [](const search_progress&) {});
}

/// The exact least memory of stage problem `sp` searched as set up by `st` (see the file
/// comment), or nothing_fits when no strategy the stage search keeps is within
/// `memory_limit`. The three weighted searches of the fits-nowhere test run only when
/// the least-memory strategy itself is not kept (its time at or above the cap).
inline cost_t least_stage_memory(const stage_problem& sp, const stage_setup& st, cost_t memory_limit,
                                 std::size_t max_bytes) {
  // a term at the time cap marks a strategy the stage search drops (build_problem.hpp):
  // the least-memory search must not pick it, so it costs the cap in memory there
  const cost_t cap = sp.built.time_cap;
  const frontier_result fm = scalar_stage_search(sp, st, memory_limit, max_bytes, [cap](cost_t t, cost_t m) {
    return t >= cap ? std::max(m, cap) : m;
  });
  if (fm.points.empty() || fm.points.front().memory >= cap) return nothing_fits;
  const cost_t least = fm.points.front().memory;
  if (cost_of(sp.built.prob, fm.points.front().choice).time < cap || memory_limit >= cap) return least;
  // Every point of the stage search has memory m <= limit and time t < cap. For any
  // w >= 0 such a strategy has m + floor(w t) < limit + w cap; when the least of
  // m + floor(w t) over all strategies is above that, the stage search finds nothing.
  for (const double rel : {0.5, 1.0, 2.0}) {
    const double w = rel * double(memory_limit) / double(cap);
    const frontier_result fw =
        scalar_stage_search(sp, st, memory_limit + cost_t(w * double(cap)) + 1, max_bytes,
                            [w, cap](cost_t t, cost_t m) { return m + cost_t(w * double(std::min(t, cap))); });
    if (fw.points.empty()) return nothing_fits;
  }
  return least;
}

/// The exact least time of stage problem `sp` searched as set up by `st` (memory ignored).
inline cost_t least_stage_time(const stage_problem& sp, const stage_setup& st, std::size_t max_bytes) {
  const frontier_result ft = scalar_stage_search(
      sp, st, std::numeric_limits<cost_t>::max(), max_bytes, [](cost_t t, cost_t) { return t; }, false);
  return ft.points.empty() ? 0 : ft.points.front().memory;
}

/// s such that every strategy of `sp` (searched as set up by `st`) with time t < cap has
/// memory m with m + w t >= s: the least of m + floor(w min(t, cap)) (each term at most
/// stage_line_term_cap), less one per term for the rounding of w t (see the file
/// comment, "regions").
/// stage_line's terms: the nodes with configs and the edges of `sp`.
inline std::size_t stage_terms(const stage_problem& sp) {
  std::size_t terms = sp.built.prob.edges.size();
  for (auto& n : sp.built.prob.nodes) terms += n.configs.empty() ? 0 : 1;
  return terms;
}
/// The most one term of stage_line's search counts: max_problem_cost / (terms + 1), so
/// that no sum leaves the integer range however steep the line (a term counted less
/// keeps the bound below the true one).
inline double stage_line_term_cap(const stage_problem& sp) {
  return double(max_problem_cost) / double(stage_terms(sp) + 1);
}

inline cost_t stage_line(const stage_problem& sp, const stage_setup& st, double w, std::size_t max_bytes) {
  const cost_t cap = sp.built.time_cap;
  const std::size_t terms = stage_terms(sp);
  const double most = stage_line_term_cap(sp);
  const frontier_result f = scalar_stage_search(
      sp, st, std::numeric_limits<cost_t>::max(), max_bytes, [w, cap, most](cost_t t, cost_t m) {
        return cost_t(std::min(most, double(m) + std::floor(w * double(std::min(t, cap)))));
      });
  if (f.points.empty()) return 0;
  const cost_t s = f.points.front().memory;
  return s > cost_t(terms) ? s - cost_t(terms) : 0;
}

/// The offset plus, over the nodes u, the least over u's admitted configs c (time below
/// the cap, memory within `memory_limit` less the offset) of f(c) plus, with `edges`, the
/// sum over the edges e leaving u of the least f(e[c, d]) over the admitted configs d of
/// e's other end (an entry of time at or above the cap is not admitted): a lower bound of
/// f summed over any strategy the stage search keeps (see the file comment, "node and
/// edge minima"). `inf` when some node admits nothing; sums saturate at `inf`. f gives N
/// values (std::array<V, N>), each minimized on its own in the same pass over the entries;
/// each must not fall as time or memory grows (a row's least is then on its staircase).
template <std::size_t N, class V, class F>
std::array<V, N> stage_minima(const stage_problem& sp, cost_t memory_limit, bool edges, F f, V inf) {
  using vec = std::array<V, N>;
  vec none;
  none.fill(inf);
  const problem& q = sp.built.prob;
  const cost_t cap = sp.built.time_cap;
  if (q.memory_offset > memory_limit) return none;
  const cost_t room = memory_limit - q.memory_offset;
  auto admitted = [&](const problem_config& c) { return c.time < cap && c.memory <= room; };
  auto add = [inf](V a, V b) { return a >= inf - b ? inf : a + b; };
  std::vector<std::vector<vec>> extra(q.nodes.size());
  for (std::size_t u = 0; u < q.nodes.size(); ++u) extra[u].assign(q.nodes[u].configs.size(), vec{});
  std::vector<char> ok;
  std::vector<std::pair<cost_t, cost_t>> stair;  // a row's staircase of (time, memory)
  for (std::size_t i = 0; edges && i < q.edges.size(); ++i) {
    const auto& e = q.edges[i];
    const auto& cu = q.nodes[std::size_t(e.from)].configs;
    const auto& cw = q.nodes[std::size_t(e.to)].configs;
    ok.resize(cw.size());
    for (std::size_t b = 0; b < cw.size(); ++b) ok[b] = admitted(cw[b]);
    auto& x = extra[std::size_t(e.from)];
    for (std::size_t a = 0; a < cu.size(); ++a) {
      if (!admitted(cu[a]) || x[a][0] == inf) continue;
      // f is monotone in time and memory, so its least over the row is the least over the
      // row's staircase (its entries no other entry is at most in both), which holds a
      // few distinct entries where the row has hundreds: f runs on those only
      vec best = none;
      auto take = [&](const std::pair<cost_t, cost_t>& q) {
        const vec v = f(q.first, q.second);
        for (std::size_t j = 0; j < N; ++j) best[j] = std::min(best[j], v[j]);
      };
      if constexpr (N <= 2) {  // f costs less than building the staircase
        for (std::size_t b = 0; b < cw.size(); ++b) {
          const std::size_t at = a * cw.size() + b;
          if (!ok[b] || e.time[at] >= cap) continue;
          const vec v = f(e.time[at], e.memory[at]);
          for (std::size_t j = 0; j < N; ++j) best[j] = std::min(best[j], v[j]);
        }
        for (std::size_t j = 0; j < N; ++j) x[a][j] = add(x[a][j], best[j]);
        continue;
      }
      stair.clear();
      for (std::size_t b = 0; b < cw.size(); ++b) {
        const std::size_t at = a * cw.size() + b;
        const cost_t t = e.time[at], m = e.memory[at];
        if (!ok[b] || t >= cap) continue;
        bool covered = false;
        for (const auto& q : stair)
          if (q.first <= t && q.second <= m) {
            covered = true;
            break;
          }
        if (covered) continue;
        std::erase_if(stair, [&](const std::pair<cost_t, cost_t>& q) { return t <= q.first && m <= q.second; });
        if (stair.size() == 16) {  // a long staircase: take what it holds and start again
          for (const auto& q : stair) take(q);
          stair.clear();
        }
        stair.push_back({t, m});
      }
      for (const auto& q : stair) take(q);
      for (std::size_t j = 0; j < N; ++j) x[a][j] = add(x[a][j], best[j]);
    }
  }
  vec total;
  total.fill(V(q.memory_offset));
  for (std::size_t u = 0; u < q.nodes.size(); ++u) {
    vec b = none;
    const auto& cs = q.nodes[u].configs;
    for (std::size_t a = 0; a < cs.size(); ++a)
      if (admitted(cs[a])) {
        const vec v = f(cs[a].time, cs[a].memory);
        for (std::size_t j = 0; j < N; ++j) b[j] = std::min(b[j], add(v[j], extra[u][a][j]));
      }
    if (b[0] == inf) return none;
    for (std::size_t j = 0; j < N; ++j) total[j] = add(total[j], b[j]);
  }
  return total;
}

/// The least time and least memory of stage problem `sp` from node minima (`edges`: node
/// and edge minima; see stage_minima), both in one pass. memory is nothing_fits when some
/// node admits no config or the least memory exceeds the limit.
inline strategy_cost stage_minima_corner(const stage_problem& sp, cost_t memory_limit, bool edges) {
  const auto [t, m] = stage_minima<2>(
      sp, memory_limit, edges, [](cost_t x, cost_t y) { return std::array<cost_t, 2>{x, y}; }, max_problem_cost);
  if (t >= max_problem_cost || m >= max_problem_cost || m > memory_limit) return {0, nothing_fits};
  return {t, m};
}

/// s with m + w t >= s for every strategy of `sp` the stage search keeps, from node minima
/// (`edges`: node and edge minima; see stage_minima): their sum of m + w t, less one per
/// node and edge and a relative 1e-9 for the rounding of the double sums; 0 when some node
/// admits nothing.
inline cost_t stage_minima_line(const stage_problem& sp, double w, cost_t memory_limit, bool edges) {
  const double inf = std::numeric_limits<double>::infinity();
  double s = stage_minima<1>(
      sp, memory_limit, edges, [w](cost_t t, cost_t m) { return std::array<double, 1>{double(m) + w * double(t)}; },
      inf)[0];
  if (s == inf) return 0;
  const auto& q = sp.built.prob;
  s = s * (1 - 1e-9) - double(q.nodes.size() + q.edges.size()) - 1;
  return s > 0 ? cost_t(std::min(s, 9.0e18)) : 0;
}

/// Slopes (bytes per picosecond) of the lines a job's region takes from node (and edge)
/// minima before anything else: a fixed set, so that the region does not depend on the
/// points found so far (the planner's order-independent skip test reads it again when
/// the job is committed, plan/pipeline_planner.hpp). The steepest trades the memory
/// between the job's least memory m0 and the limit for 5 % of its least time t0 (a
/// steeper line cannot lift the region where it fits); each next one is half as steep,
/// down to 2^-15 of it, which is flatter than the slow end of the Megatron frontiers.
inline constexpr std::size_t region_slopes = 16;
inline std::array<double, region_slopes> fixed_slopes(cost_t t0, cost_t m0, cost_t limit) {
  std::array<double, region_slopes> w{};
  double x = double(std::max<cost_t>(limit - std::min(limit, m0), 1)) / (0.05 * double(std::max<cost_t>(t0, 1)));
  for (auto& v : w) {
    v = x;
    x /= 2;
  }
  return w;
}

/// s_i with m + w_i t >= s_i for every strategy of `sp` the stage search keeps, for every
/// slope of `w` at once: stage_minima_line's bound (node and, with `edges`, edge minima),
/// in one pass over the entries.
inline std::array<cost_t, region_slopes> stage_minima_lines(const stage_problem& sp,
                                                            const std::array<double, region_slopes>& w,
                                                            cost_t memory_limit, bool edges) {
  using vec = std::array<double, region_slopes>;
  const vec v = stage_minima<region_slopes>(
      sp, memory_limit, edges,
      [&w](cost_t t, cost_t m) {
        vec x;
        for (std::size_t i = 0; i < region_slopes; ++i) x[i] = double(m) + w[i] * double(t);
        return x;
      },
      std::numeric_limits<double>::infinity());
  std::array<cost_t, region_slopes> out{};
  const auto& q = sp.built.prob;
  for (std::size_t i = 0; i < region_slopes; ++i) {
    if (v[i] == std::numeric_limits<double>::infinity()) continue;
    const double s = v[i] * (1 - 1e-9) - double(q.nodes.size() + q.edges.size()) - 1;
    out[i] = s > 0 ? cost_t(std::min(s, 9.0e18)) : 0;
  }
  return out;
}

/// The exact least time and least memory of stage problem `sp` (see least_stage_memory
/// and least_stage_time).
inline strategy_cost least_stage_cost(const stage_problem& sp, search_mode mode, cost_t memory_limit,
                                      std::size_t max_bytes) {
  const stage_setup st = stage_setup_of(sp, mode);
  strategy_cost r{0, least_stage_memory(sp, st, memory_limit, max_bytes)};
  if (r.memory != nothing_fits) r.time = least_stage_time(sp, st, max_bytes);
  return r;
}

}  // namespace detail

/// A point found already, as the job bounds see it: its cost and its tie key (p, k).
struct known_point {
  cost_t time = 0, memory = 0;
  std::pair<int, int> key;
};

/// A region that holds every point a job can return (see the file comment): T >= time,
/// M >= memory and, for each line (w, s), M + w (T - sends) >= s.
struct job_region {
  cost_t time = 0, memory = 0, sends = 0;
  struct line {
    double w;
    cost_t s;
  };
  std::vector<line> lines;

  /// A lower bound of the time of the job's points of memory at most m.
  cost_t least_time_at(cost_t m) const {
    cost_t t = time;
    for (const line& l : lines)
      if (l.w > 0 && l.s > m) {
        const double x = std::floor(double(l.s - m) / l.w) - 1;
        if (x > 0) t = std::max(t, cost_t(std::min(x, 9.0e18)) + sends);
      }
    return t;
  }
};

/// Whether (t, m) with tie key `key` is dominated by the staircase `u` (memory ascending,
/// time strictly descending): a point of u has no more memory and less time, or equal
/// time and less memory or a key at most `key` (the point kept on an exact tie). With
/// `cover` > 1: whether a point of u has no more memory and at most `cover` times t.
inline bool dominated_by(const std::vector<known_point>& u, cost_t t, cost_t m, std::pair<int, int> key,
                         double cover = 1) {
  auto it = std::upper_bound(u.begin(), u.end(), m, [](cost_t x, const known_point& q) { return x < q.memory; });
  if (it == u.begin()) return false;
  const auto& q = *std::prev(it);
  if (cover > 1) return double(q.time) <= cover * double(t);
  if (q.time != t) return q.time < t;
  return q.memory < m || q.key <= key;
}

/// Whether every point of `r` within `limit` is dominated by `u` (see the file comment,
/// "regions"); if not, the memory of a point of r that is not (for choosing a line).
struct region_check {
  bool dominated = false;
  cost_t at = 0;
};
/// With `cover` > 1: whether every point of `r` within `limit` is covered within `cover`
/// (a point of u with no more memory and at most cover times its time).
inline region_check check_region(const std::vector<known_point>& u, const job_region& r, std::pair<int, int> key,
                                 cost_t limit, double cover = 1) {
  if (r.memory > limit) return {true, 0};
  // the least time at m only falls with m and u's best time changes only at its points,
  // so the memories just below each point of u, and the limit, are the ones to check
  if (!dominated_by(u, r.least_time_at(r.memory), r.memory, key, cover)) return {false, r.memory};
  for (const auto& q : u)
    if (q.memory > r.memory && q.memory - 1 <= limit && !dominated_by(u, r.least_time_at(q.memory - 1), q.memory - 1, key, cover))
      return {false, q.memory - 1};
  if (!dominated_by(u, r.least_time_at(limit), limit, key, cover)) return {false, limit};
  return {true, 0};
}

/// Whether every point the job can return is dominated by `u`, given `stair`, the frontier
/// (memory ascending) of some of its stage classes merged by max and max: each point the
/// job returns combines one point q of `stair` with points of the other classes, so it
/// lies in the region `r` with its corner raised to memory max(q.memory, r.memory) and
/// time q.time + sends; that region is checked whole (check_region: the other classes can
/// add memory, where the region's lines allow less time). Points above `limit` are never
/// returned. Unlike the lines, the staircase is not convex, so this holds where they are
/// loose (between the points of a stage's frontier). With `cover` > 1: covered within it.
template <class Stair>
bool staircase_dominated(const std::vector<known_point>& u, const Stair& stair, const job_region& r,
                         std::pair<int, int> key, cost_t limit, double cover = 1) {
  for (const auto& q : stair) {
    job_region c = r;
    c.memory = std::max(q.memory, r.memory);
    if (c.memory > limit) break;  // memory ascending: so are the rest
    c.time = std::max(r.time, q.time + r.sends);
    if (!check_region(u, c, key, limit, cover).dominated) return false;
  }
  return true;
}

/// A weight for a new line of a region not dominated at memory m: the slope (bytes per
/// picosecond) of u around m, 0 when u gives none.
inline double line_weight(const std::vector<known_point>& u, cost_t m) {
  auto it = std::upper_bound(u.begin(), u.end(), m, [](cost_t x, const known_point& q) { return x < q.memory; });
  if (it == u.begin()) return 0;
  std::size_t j = std::size_t(it - u.begin()) - 1;
  if (j + 1 == u.size()) {
    if (j == 0) return 0;
    --j;
  }
  const double dm = double(u[j + 1].memory - u[j].memory), dt = double(u[j].time - u[j + 1].time);
  return dt > 0 ? dm / dt : 0;
}

}  // namespace tensoropt
