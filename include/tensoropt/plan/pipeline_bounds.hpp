// Lower bounds of a pipeline job (one pipeline degree p and micro-batch count k), used
// to order the jobs and to skip the ones that cannot add a point to the frontier.
//
// Why. The pipeline frontier is a union over every legal (p, k): 217 jobs for
// megatron-1t on 3,072 devices, 246 for megatron-145.6b on 1,536. Most of them are
// beaten everywhere by a few others (a larger k has a smaller bubble and smaller
// micro-batches), and a job whose every plan is above the device memory spends its
// whole stage search (up to minutes for p = 1, today's search on the whole model) to
// find nothing. Two bounds decide that before the search:
//
//  - order bound (graph only, no problem is built): the bottleneck stage's GEMM
//    FLOPs per micro-batch (forward + backward, at least 1/d of them on each of its d
//    devices) at the device's peak and most GEMM efficiency, times the k + p - 1 slots
//    of 1F1B, plus the sends. cost_op charges every GEMM at least that (roofline max,
//    efficiency below its maximum, launch overhead and collectives added), so it is a
//    lower bound of the job's time; jobs run in ascending order of it (ties: p, then
//    k), so the fast plans are found first and bound the rest.
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
//    search finds nothing (w = 1/2, 1, 2 times limit / cap).
//
// Skipping. A job is skipped when its least memory is above the memory limit (it has
// no point below the limit, and points above it are not kept), or when a point found
// already has no more memory than the job's least memory and no more time than its
// least time (every point the job could give is dominated; on an exact tie the point
// with the smaller (p, k) is the one kept, as without skipping). The frontier is the
// same with and without skipping, whatever the number of threads; only the work done
// differs (pipeline_options::skip_by_bounds turns it off).
#pragma once
#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>
#include "../cost/pipeline_cost.hpp"
#include "../search/repeated.hpp"
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

/// Memory no stage search can go under: the limit was passed and nothing fits.
inline constexpr cost_t nothing_fits = std::numeric_limits<cost_t>::max();

/// The exact least time and least memory of stage problem `sp` searched in `mode`
/// (see the file comment); memory is nothing_fits when no strategy is within
/// `memory_limit`.
inline strategy_cost least_stage_cost(const stage_problem& sp, search_mode mode, cost_t memory_limit,
                                      std::size_t max_bytes) {
  const problem& prob = sp.built.prob;
  const mode_choice mc = choose_mode(prob, sp.built.graph, mode);
  solve_options so;
  so.max_bytes = max_bytes;
  auto run = [&](const problem& q) { return mc.mode == search_mode::fast ? solve_repeated(q, mc.block, so) : solve(q, so); };
  // a term at the time cap marks a strategy the stage search drops (build_problem.hpp):
  // the least-memory search must not pick it, so it costs the cap in memory there
  const cost_t cap = sp.built.time_cap;
  problem q = prob;
  for (auto& n : q.nodes)
    for (auto& c : n.configs) {
      if (c.time >= cap) c.memory = std::max(c.memory, cap);
      c.time = 0;
    }
  for (auto& e : q.edges) {
    for (std::size_t x = 0; x < e.time.size(); ++x)
      if (e.time[x] >= cap) e.memory[x] = std::max(e.memory[x], cap);
    std::fill(e.time.begin(), e.time.end(), cost_t(0));
  }
  so.memory_limit = memory_limit;
  const frontier_result fm = run(q);
  strategy_cost r{0, nothing_fits};
  if (fm.points.empty() || fm.points.front().memory >= cap) return r;
  r.memory = fm.points.front().memory;
  // Every point of the stage search has memory m <= limit and time t < cap. For any
  // w >= 0 such a strategy has m + floor(w t) < limit + w cap; when the least of
  // m + floor(w t) over all strategies is above that, the stage search finds nothing.
  if (memory_limit < cap)
    for (const double rel : {0.5, 1.0, 2.0}) {
      const double w = rel * double(memory_limit) / double(cap);
      problem qw = prob;
      for (auto& n : qw.nodes)
        for (auto& c : n.configs) {
          c.memory += cost_t(w * double(std::min(c.time, cap)));
          c.time = 0;
        }
      for (auto& e : qw.edges) {
        for (std::size_t x = 0; x < e.time.size(); ++x) e.memory[x] += cost_t(w * double(std::min(e.time[x], cap)));
        std::fill(e.time.begin(), e.time.end(), cost_t(0));
      }
      so.memory_limit = memory_limit + cost_t(w * double(cap)) + 1;
      const frontier_result fw = run(qw);
      if (fw.points.empty()) {
        r.memory = nothing_fits;
        return r;
      }
    }
  q = prob;
  for (auto& n : q.nodes)
    for (auto& c : n.configs) c.memory = 0;
  for (auto& e : q.edges) std::fill(e.memory.begin(), e.memory.end(), cost_t(0));
  q.memory_offset = 0;
  so.memory_limit = std::numeric_limits<cost_t>::max();
  const frontier_result ft = run(q);
  r.time = ft.points.empty() ? 0 : ft.points.front().time;
  return r;
}

}  // namespace detail

}  // namespace tensoropt
