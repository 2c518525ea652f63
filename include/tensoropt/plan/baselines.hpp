// The baselines the planner places against its frontier, on the same cost model:
// data parallelism, Megatron tensor parallelism at every degree that divides a node
// (with data parallelism over the rest), and the single-objective optimum (the least
// iteration time, OptCNN's objective, with no memory limit).
//
// Each hand-written baseline takes the micro-batch count that makes it fastest within
// the device memory (the least memory when none fits). Memory is the strategy's
// additive memory (evaluate()) or, with `runtime_peak`, its predicted peak on the
// runtime (memory_peak.hpp), the same measure the planner's points carry, so "fits"
// and "frontier N x faster" compare like with like.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdio>
#include <string>
#include <vector>
#include "../search/solve.hpp"
#include "build_problem.hpp"
#include "frontier_report.hpp"
#include "memory_peak.hpp"
#include "strategy.hpp"

namespace tensoropt {

/// The baselines (data parallelism, Megatron tensor parallelism) on `g` (full batch) and `cl`. Each takes the
/// micro-batch count among `ks` that makes it fastest within the device memory (the
/// least memory when none fits). `frontier` (may be empty) places each against it.
/// With `runtime_peak` a baseline's memory is its predicted runtime peak
/// (memory_peak.hpp), as the frontier's points are held to their peaks.
inline std::vector<baseline_result> plan_baselines(const op_graph& g, const cluster& cl, const build_options& bo,
                                                   const std::vector<frontier_point>& frontier,
                                                   const std::vector<index_t>& ks, bool runtime_peak = false) {
  std::vector<baseline_result> out;
  const double cap = cl.gpu_spec.capacity.value;
  auto add = [&](std::string name, const strategy& s) {
    baseline_result b;
    b.name = std::move(name);
    bool have = false;
    index_t best_k = 1;
    std::string why;
    for (index_t k : ks) {
      const op_graph mg = with_batch(g, g.batch / k);
      const auto r = resolve(s, mg, cl.mesh);
      if (r.error != strategy_error::none) {
        if (why.empty()) why = r.message;
        continue;
      }
      build_options o = bo;
      o.micro_batches = k;
      const auto c = evaluate(mg, r.configs, cl, o);
      const double t = double(c.time) / ps_per_second,
                   m = runtime_peak ? predicted_peak(mg, r.configs, cl, o).peak() : double(c.memory);
      const bool fits = m <= cap, had_fit = have && b.memory <= cap;
      if (!have || (fits && (!had_fit || t < b.time)) || (!fits && !had_fit && m < b.memory)) {
        b.time = t;
        b.memory = m;
        best_k = k;
        have = true;
      }
    }
    if (!have) {
      b.valid = false;
      b.summary = why;
      out.push_back(b);
      return;
    }
    if (best_k > 1) b.name += ", k " + std::to_string(best_k);
    // Where the frontier stands at this memory.
    const frontier_point* best = nullptr;
    for (auto& p : frontier)
      if (double(budget_memory(p)) <= b.memory) best = &p;
    if (b.memory > cl.gpu_spec.capacity.value) {
      b.summary = "does not fit " + format_bytes(cl.gpu_spec.capacity);
    } else if (best) {
      const double speedup = b.time / (double(best->time) / ps_per_second);
      char buf[96];
      std::snprintf(buf, sizeof buf, "frontier %.2fx faster", speedup);
      b.summary = buf;
    } else if (!frontier.empty()) {
      b.summary = "uses less memory than any frontier point?";
    }
    out.push_back(b);
  };
  add("data parallel", strategy{});
  for (index_t t = 2; t <= cl.mesh.gpus_per_node; ++t) {
    if (cl.mesh.gpus_per_node % t) continue;
    strategy s;
    s.k = strategy::kind::megatron;
    s.tensor_parallel = t;
    const index_t dp = cl.mesh.devices() / t;
    add("megatron tp " + std::to_string(t) + (dp > 1 ? " x dp " + std::to_string(dp) : ""), s);
  }
  return out;
}

namespace detail {
/// `p` with one objective, held in memory: memory' = time * 2^s + floor(memory / q) and
/// time' = 0, so every frontier of the search shrinks to one point, the least memory'. The
/// shift s leaves memory' below 2^62 and q makes the memory terms of any strategy sum below
/// 2^s: memory' orders strategies by time exactly, and equal times by memory (rounded down
/// to q per term).
inline problem time_then_memory(const problem& p) {
  cost_t tmax = 0, mmax = p.memory_offset;
  for (auto& n : p.nodes) {
    cost_t t = 0, m = 0;
    for (auto& c : n.configs) { t = std::max(t, c.time); m = std::max(m, c.memory); }
    tmax += t;
    mmax += m;
  }
  for (auto& e : p.edges) {
    tmax += e.time.empty() ? 0 : *std::max_element(e.time.begin(), e.time.end());
    mmax += e.memory.empty() ? 0 : *std::max_element(e.memory.begin(), e.memory.end());
  }
  const int s = std::clamp(62 - int(std::bit_width(std::uint64_t(tmax))), 0, 20);
  const cost_t q = (mmax >> s) + 1;
  problem f = p;
  f.memory_offset = 0;
  // the folded objective is put in memory (time 0): the eliminator's single-objective
  // pass takes such searches on dense rows (search/detail/eliminator.hpp)
  for (auto& n : f.nodes)
    for (auto& c : n.configs) { c.memory = (c.time << s) + (s ? c.memory / q : 0); c.time = 0; }
  for (auto& e : f.edges) {
    for (std::size_t i = 0; i < e.time.size(); ++i) e.memory[i] = (e.time[i] << s) + (s ? e.memory[i] / q : 0);
    std::fill(e.time.begin(), e.time.end(), 0);
  }
  return f;
}
}  // namespace detail

/// The single-objective optimum of OptCNN on the same cost model: the least iteration time
/// over every micro-batch count in `ks`, with no memory limit (so it may not fit the device),
/// and among equal times the least memory. It is found by the same search on each problem
/// with the two objectives folded into one (detail::time_then_memory), where every frontier
/// shrinks to one point; its time and memory are then re-costed from the real problem
/// (with `runtime_peak`, the memory is the strategy's predicted runtime peak).
inline baseline_result single_objective_baseline(const op_graph& g, const cluster& cl, const build_options& bo,
                                                 const std::vector<frontier_point>& frontier,
                                                 const std::vector<index_t>& ks, bool runtime_peak = false) {
  baseline_result b;
  b.name = "min time (single objective)";
  b.valid = false;
  index_t best_k = 0;
  double additive = 0;
  for (index_t k : ks) {
    build_options o = bo;
    o.micro_batches = k;
    const built_problem built = build_problem(g, cl, o);
    const auto r = solve(detail::time_then_memory(built.prob), solve_options{});
    if (r.points.empty()) continue;
    const strategy_cost c = cost_of(built.prob, r.points.front().choice);
    const double t = double(c.time) / ps_per_second;
    if (!b.valid || t < b.time || (t == b.time && double(c.memory) < additive)) {
      b.valid = true;
      b.time = t;
      additive = double(c.memory);
      b.memory = additive;
      if (runtime_peak) {
        std::vector<op_config> configs;
        for (std::size_t i = 0; i < r.points.front().choice.size(); ++i)
          configs.push_back(built.configs[i][std::size_t(r.points.front().choice[i])]);
        b.memory = predicted_peak(built.graph, configs, built.cl, built.options).peak();
      }
      best_k = k;
    }
  }
  if (!b.valid) {
    b.summary = "no strategy";
    return b;
  }
  if (best_k > 1) b.name += ", k " + std::to_string(best_k);
  for (std::size_t i = 0; i < frontier.size(); ++i)
    if (double(frontier[i].time) / ps_per_second == b.time && double(frontier[i].memory) == additive)
      b.summary = "= frontier point #" + std::to_string(i);
  if (b.summary.empty() && !frontier.empty())
    b.summary = b.memory > cl.gpu_spec.capacity.value
                    ? "ignores memory; the fastest plan that fits is frontier point #" + std::to_string(frontier.size() - 1)
                    : "no memory limit";
  return b;
}

}  // namespace tensoropt
