// The planner's answer: a model's frontier over every micro-batch count, with the
// problems behind its points, its baselines, and typed queries that return plans.
//
// `points` is the union of the per-micro-batch-count frontiers (memory ascending,
// time strictly descending), each point saying its micro-batch count and labelled
// per op. `parts` keeps, per count, the frontier of its problem and the built
// problem itself while a final point still uses it (the problem maps a point's
// config indices back to op configs).
//
// Where the planner attached each point's runtime peak (plan/peak_frontier.hpp, the
// default), `points` holds only the plans not dominated under (peak, time), and every
// budget query and plan::memory() use the peak; plan::additive_memory() is the
// search's additive memory. `memory_note` says which memory the search optimized.
//
// Queries return `std::optional<plan>` (plan/plan.hpp): no value when nothing
// qualifies (an empty frontier, or no point within the budget), never a sentinel
// index; `no_fit_message` words why for a user. They are the queries of
// search/query.hpp on `points`, wrapped into handles:
//   least_memory()              the slowest point
//   fastest()                   the point with the most memory
//   fastest_within(budget)      the fastest point with memory <= budget
//   least_memory_within(pct)    the least memory with time <= fastest * (1 + pct/100)
//   middle()                    the fastest point within the geometric mean of the
//                               least and the most memory (a default between the ends)
//   at(i)                       the point at position i (throws invalid_argument)
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include "../cost/cluster.hpp"
#include "../search/query.hpp"
#include "build_problem.hpp"
#include "plan.hpp"
#include "report.hpp"
#include "search_mode.hpp"
#include "summary.hpp"

namespace tensoropt {

/// The problem and frontier of one micro-batch count.
struct plan_part {
  index_t micro_batches = 1;
  std::shared_ptr<const built_problem> built;  ///< null once no final point uses it
  frontier_result frontier;
  double build_seconds = 0, solve_seconds = 0, check_seconds = 0;
  double solve_cpu_seconds = 0;  ///< CPU time of the solve (solve_seconds also counts waits for other counts)
  std::size_t configs = 0, edges = 0;
  search_mode mode = search_mode::exact;  ///< the mode that ran
  std::string why;                        ///< why that mode (or why the k was skipped)
  restriction_check check;                ///< fast mode: the check of its restriction
  repeated_block block;                   ///< the identical layers the mode found (none: empty)
  bool layouts_limited = false;           ///< fast mode's layout restriction ran (plan/search_mode.hpp)
};

struct planned_frontier {
  op_graph graph;                       ///< the full-batch graph
  cluster cl;
  build_options build;                  ///< precision, reserve and config bounds it was planned with
  std::vector<plan_part> parts;
  std::vector<frontier_point> points;   ///< budget_memory (the peak where set) ascending, time strictly descending
  /// Every point the search returned (the union over k, before the runtime-peak
  /// filter of peak_frontier.hpp, with their peaks): what --frontier-json writes, so
  /// an outside tool re-solving the problem finds the same points. Empty when no
  /// filter ran (then `points` is that union). Its points carry no config labels until
  /// label_searched() gives them (most of them are not plans of `points`: labelling
  /// them all took 0.1 s of gpt3-1.3b's planning, a string per op and point), and no
  /// peak where their replay stopped early (dominated; complete_searched in
  /// plan/peak_frontier.hpp gives both).
  std::vector<frontier_point> searched;
  std::vector<int> part_of;             ///< points[i] comes from parts[part_of[i]]
  std::vector<baseline_result> baselines;
  double search_seconds = 0;
  bool exact = true;
  bool restricted = false;              ///< some k ran in fast mode
  /// How the frontier's memory was computed (plan/peak_frontier.hpp's describe()).
  std::string memory_note;
  /// One line per distinct mode decision ("fast mode: ... (k = 1, 2, 4)").
  std::vector<std::string> mode_notes;

  std::size_t size() const { return points.size(); }
  bool empty() const { return points.empty(); }

  std::optional<plan> least_memory() const { return wrap(tensoropt::least_memory(points)); }
  std::optional<plan> fastest() const { return wrap(tensoropt::fastest(points)); }
  std::optional<plan> fastest_within(bytes budget) const { return wrap(tensoropt::fastest_within(points, budget)); }
  /// Throws invalid_argument for a negative or NaN percent.
  std::optional<plan> least_memory_within(double percent) const {
    return wrap(tensoropt::least_memory_within(points, percent));
  }
  std::optional<plan> middle() const {
    if (points.empty()) return std::nullopt;
    const double lo = double(budget_memory(points.front())), hi = double(budget_memory(points.back()));
    return fastest_within(bytes(std::sqrt(lo * hi)));
  }
  /// The plan at position `i`; throws invalid_argument past the end.
  plan at(std::size_t i) const {
    detail::require(i < points.size(), "planned frontier: plan #" + std::to_string(i) +
                                                         " does not exist (the frontier has " +
                                                         std::to_string(points.size()) + " points)");
    return plan(*this, i);
  }
  /// Why fastest_within(budget) has no answer, naming the least memory.
  std::string no_fit_message(bytes budget) const { return tensoropt::no_fit_message(points, budget); }

  const built_problem& problem_of(std::size_t point) const { return *parts.at(std::size_t(part_of.at(point))).built; }
  /// Gives every point of `points` without config labels its labels (one per op), on
  /// `threads` threads (0: every core).
  void label_points(std::size_t threads = 1) {
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t i; (i = next++) < points.size();)
        if (points[i].labels.empty()) points[i].labels = detail::config_labels(problem_of(i).prob, points[i].choice);
    };
    const std::size_t hw = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < std::min(hw, std::max<std::size_t>(1, points.size() / 1024)); ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }
  /// Gives every point of `searched` its config labels (see `searched`; what
  /// write_frontier_json needs). Throws invalid_argument where a point's count has no
  /// problem kept (every point of `searched` has one when the planner returns).
  void label_searched() {
    for (auto& q : searched) {
      if (!q.labels.empty() || q.choice.empty()) continue;
      q.labels = detail::config_labels(parts[kept_part(q.micro_batches)].built->prob, q.choice);
    }
  }
  /// The part of micro-batch count `k` whose problem is kept (the last such). Throws
  /// invalid_argument where none is (every point of `searched` has one when the planner
  /// returns).
  std::size_t kept_part(int k) const {
    std::size_t at = parts.size();
    for (std::size_t p = 0; p < parts.size(); ++p)
      if (parts[p].micro_batches == k && parts[p].built) at = p;
    detail::require(at < parts.size(), "planned frontier: no problem is kept for micro-batch count " +
                                           std::to_string(k) + " to label or replay its points");
    return at;
  }
  /// The op_config of every op under point `point`.
  std::vector<op_config> op_configs(std::size_t point) const {
    const auto& b = problem_of(point);
    std::vector<op_config> c;
    for (std::size_t i = 0; i < points[point].choice.size(); ++i)
      c.push_back(b.configs[i][std::size_t(points[point].choice[i])]);
    return c;
  }
  std::string summary(std::size_t point) const { return summarize(problem_of(point).graph, op_configs(point)); }

 private:
  std::optional<plan> wrap(std::optional<std::size_t> i) const {
    if (!i) return std::nullopt;
    return plan(*this, *i);
  }
};

inline seconds plan::time() const { return seconds_of(point()); }
inline bytes plan::memory() const { return from_byte_count(budget_memory(point())); }
inline bytes plan::additive_memory() const { return bytes_of(point()); }
inline int plan::micro_batches() const { return point().micro_batches; }
inline const frontier_point& plan::point() const { return pf_->points.at(index_); }
inline std::vector<op_config> plan::op_configs() const { return pf_->op_configs(index_); }
inline tensoropt::training_plan plan::training_plan() const {
  return {op_configs(), micro_batches(), pf_->cl.mesh};
}
inline std::string plan::summary() const { return pf_->summary(index_); }
inline const op_graph& plan::graph() const { return pf_->graph; }

}  // namespace tensoropt
