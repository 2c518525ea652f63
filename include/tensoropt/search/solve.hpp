// Frontier Tracking: the exact Pareto frontier of a search problem, with one strategy per point.
//
// How it works. The cost of a strategy is a sum of factors: one per node (its config's
// cost) and one per edge (its config pair's cost). The engine is variable elimination
// over this factor graph with frontiers in place of numbers: eliminating node v joins
// every factor that mentions v into one new factor over v's neighbours, whose cell for
// each assignment of the neighbours is  | over cv of (+) of the joined factors' cells.
// Edge directions play no part. This single rule is the graph reductions of OptCNN
// (node and edge elimination), lifted from scalars to frontiers:
//   - a leaf (one neighbour u) folds into u:      F'(cu) = F(cu) (+) |cv [F(cu,cv) (+) F(cv)];
//   - a node with two neighbours u, w folds into an edge u-w:
//                                  F(cu,cw) = |cv [F(cu,cv) (+) F(cv) (+) F(cv,cw)];
//   - factors over the same nodes (parallel edges) are joined by (+) when either is eliminated
//     (where three or more multi-point factors meet, those over one scope first, exactly:
//     eliminator.hpp's join_parallel);
//   - a node with more neighbours gives a factor over all of them: this is the dynamic
//     program whose state is the configs of the nodes still connected to eliminated
//     ones (the "live" nodes), exact, with cost growing with that width.
// The order is planned on the graph before any frontier is computed
// (detail/elimination_order.hpp): first
// every elimination that makes a factor over at most two nodes, the cheapest first (cells
// times configs of v times the estimated size of the second largest joined frontier, a
// frontier's size estimated by the number of nodes folded into it), then the node whose
// factor has the fewest nodes. So chains, trees and series-parallel graphs (transformers
// with residuals, ResNet, Inception) only ever make factors over at most two nodes
// (`max_width` <= 2, tested), and each layer folds into one edge before it meets the large
// frontier carried from the layers before it. Each cell is computed by a heap merge
// (detail/cell_merge.hpp); the measured figures are in bench/search_bench.cpp's output.
//
// Memory. Back-pointers no live point can reach are compacted away as the search goes
// (`compact_after`); `memory_limit` drops partial strategies above a device's capacity.
// `max_bytes` bounds what the search itself holds (factor tables and back-pointers): past
// it the search stops with runtime_error naming the sizes it reached and the limit, before
// the allocator would throw std::bad_alloc (also caught and reported the same way).
//
// Grouped configs. Configs of a node whose edge rows and columns are all identical (they
// differ only in switches such as recompute or optimizer sharding) are grouped into one
// layout-config whose cost is a small frontier. This is exact and cuts the cubic loops.
//
// Width limit (the fallback; no longer exact). When the next elimination would make a
// factor with more than `width_limit` cells, the engine restricts the configs of the
// neighbour with the most configs to the best half (ranked by the least time in its own
// factors; the least-memory config is always kept) until the factor fits, then goes on.
// Every returned point is still the exact cost of its strategy, but points of the exact
// frontier may be missing or dominated. The result says so (`exact == false`,
// `width_fallback == true`, `note`).
//
// epsilon bound. The elimination order is planned on the graph alone before any
// frontier is computed. Under epsilon > 0 every factor the search makes (over one, two
// or more nodes) has its cells pruned with delta = (2 epsilon / (2 + epsilon)) / D,
// where D (`prune_depth`) is the most factors on one path of the elimination tree (for
// a transformer about two per layer plus the ops of one layer). A point is dropped only
// when the kept point before it has less or equal memory and time <= (1 + delta) times
// its time. Sums and unions keep such a cover, and the covers of nested prunes multiply,
// so every exact frontier point p has a returned point q with q.memory <= p.memory and
// q.time <= (1 + delta)^D p.time <= e^(2 eps / (2 + eps)) p.time <= (1 + epsilon) p.time
// (as ln(1 + x) >= 2x / (2 + x)). Memory is never worse; every returned point is the
// exact cost of its strategy. Repeated blocks composed by powering split the budget
// over the depth of nested sums instead (search/repeated.hpp), which is logarithmic in
// the number of layers.
//
// Conditioned frontiers. `solve_conditioned` eliminates every node but a few kept ones
// and returns one frontier per assignment of their configs: the frontier of a block per
// boundary layout, from which search/repeated.hpp composes identical layers.
//
// The parts: solve_options.hpp (options, progress, the conditioned table),
// detail/factor_store.hpp (factor tables, config grouping, bytes, back-pointer compaction,
// the width fallback's restriction), detail/elimination_order.hpp (the order),
// detail/eliminator.hpp (the eliminations and their replay), detail/cell_merge.hpp (one
// cell's merge). The engine is constexpr and runs in a constant expression for small problems.
#pragma once
#include <algorithm>
#include <functional>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include "frontier.hpp"
#include "frontier_result.hpp"
#include "problem.hpp"
#include "solve_options.hpp"
#include "validate.hpp"
#include "detail/eliminator.hpp"

namespace tensoropt {

namespace detail {
template <class Progress>
constexpr frontier_result solve_valid(const problem& p, const solve_options& o, Progress&& progress);
}  // namespace detail

/// The Pareto frontier of `p` over (time, memory), each point with a strategy attaining
/// it; `progress(const search_progress&)` is called after each node is eliminated.
/// Throws invalid_argument when `p` is malformed (see `validate`).
template <class Progress>
constexpr frontier_result solve(const problem& p, const solve_options& o, Progress&& progress) {
  if (std::is_constant_evaluated()) {
    detail::require(!p.nodes.empty(), "solve: the problem has no nodes");
  } else {
    validate(p);
  }
  return detail::solve_valid(p, o, std::forward<Progress>(progress));
}

namespace detail {
/// solve on a problem that validates, without validate's passes over every entry: for
/// callers that derive many problems from one checked problem, entry by entry with the
/// bounds checked (plan/pipeline_bounds.hpp's scalar searches).
template <class Progress>
constexpr frontier_result solve_valid(const problem& p, const solve_options& o, Progress&& progress) {
  detail::require(o.epsilon >= 0, "solve: epsilon must be >= 0 (0 means exact)");
  detail::require(o.width_limit >= 1, "solve: width_limit must be at least 1");
  // One config per node: one strategy, costed in linear time.
  if (std::all_of(p.nodes.begin(), p.nodes.end(), [](const problem_node& n) { return n.configs.size() == 1; })) {
    frontier_result r;
    r.epsilon = o.epsilon;
    frontier_point q{0, 0, std::vector<int>(p.nodes.size(), 0)};
    const auto c = cost_of(p, q.choice);
    q.time = c.time;
    q.memory = c.memory;
    if (q.memory <= o.memory_limit) r.points.push_back(std::move(q));
    progress(search_progress{p.nodes.size(), p.nodes.size(), 1, r.points.size()});
    return r;
  }
  solve_options lim = o;
  if (lim.max_bytes == 0 && !std::is_constant_evaluated()) lim.max_bytes = detail::default_max_bytes();
  detail::eliminator e(p, lim);
  if (std::is_constant_evaluated()) return e.run(progress);
  try {
    return e.run(progress);
  } catch (const std::bad_alloc&) {
    throw runtime_error("search stopped: out of memory (the allocator refused) with a search limit of " +
                        std::to_string(lim.max_bytes >> 20) + " MiB; use --epsilon, --mode fast, fewer " +
                        "micro-batch counts, or a machine with more memory");
  }
}
}  // namespace detail

/// The frontier of `p` conditioned on the configs of the nodes `keep` (distinct, in range):
/// every other node is eliminated, and cell (d_1, ..., d_m) holds the frontier of the
/// strategies with kept node i at a config of its layout-config d_i (see `configs`). Used
/// to fold a repeated block into its frontier per boundary layout (search/repeated.hpp).
/// `classes` (empty, or one entry per kept node: a class per config of that node, or empty
/// for none) asks for the wanted cells only: those where every kept node with classes
/// takes a layout-config of one class (a node with classes groups configs of one class
/// only); the others are left empty, and no factor over two
/// such nodes computes them (for a layer between two boundaries in one layout: the
/// diagonal, B cells of B^2). Classes are not negative. `tied` gives classes to nodes that are not kept (node, a class per config): the
/// strategies of a wanted cell then take configs of the cell's class at those nodes too
/// (held when such a node is eliminated, against the nodes with classes its elimination
/// joins; a residual add inside a layer, whose edges reach both boundaries, always meets
/// one). Exact in the wanted cells over the strategies so held. Throws as `solve` does.
inline conditioned_frontier solve_conditioned(const problem& p, const std::vector<int>& keep, const solve_options& o = {},
                                              const std::vector<std::vector<int>>& classes = {},
                                              const std::vector<std::pair<int, std::vector<int>>>& tied = {});

namespace detail {
/// solve_conditioned on a problem that validates, without validate's passes over every
/// entry: for the per-layer tables and scalar searches of search/repeated.hpp, whose
/// subproblems are cut entry by entry from a problem checked once (profiled at 5 % of a
/// gpt3-39b planning run when each was validated again).
/// `progress` (optional) is called after each elimination, as solve's; an exception it throws
/// ends the search and leaves it.
inline conditioned_frontier solve_conditioned_valid(
    const problem& p, const std::vector<int>& keep, const solve_options& o,
    const std::vector<std::vector<int>>& classes, const std::vector<std::pair<int, std::vector<int>>>& tied,
    const std::function<void(const search_progress&)>& progress = {}) {
  detail::require(o.epsilon >= 0, "solve: epsilon must be >= 0 (0 means exact)");
  for (int v : keep)
    detail::require(v >= 0 && std::size_t(v) < p.nodes.size(), "solve_conditioned: a kept node is out of range");
  detail::require(classes.empty() || classes.size() == keep.size(),
                  "solve_conditioned: give classes for every kept node (empty for none) or none at all");
  for (std::size_t i = 0; i < classes.size(); ++i)
    detail::require(classes[i].empty() || classes[i].size() == p.nodes[std::size_t(keep[i])].configs.size(),
                    "solve_conditioned: the classes of a kept node must give one class per config");
  auto non_negative = [](const std::vector<int>& cls) {
    return std::all_of(cls.begin(), cls.end(), [](int c) { return c >= 0; });
  };
  for (const auto& cls : classes)
    detail::require(non_negative(cls), "solve_conditioned: a class of a kept node is negative; classes are >= 0");
  solve_options lim = o;
  if (lim.max_bytes == 0) lim.max_bytes = detail::default_max_bytes();
  detail::eliminator e(p, lim);
  e.keep(keep);
  for (std::size_t i = 0; i < classes.size(); ++i)
    if (!classes[i].empty()) e.classes(keep[i], classes[i]);
  for (const auto& [v, cls] : tied) {
    detail::require(v >= 0 && std::size_t(v) < p.nodes.size() && std::find(keep.begin(), keep.end(), v) == keep.end(),
                    "solve_conditioned: a tied node is out of range or kept");
    detail::require(cls.size() == p.nodes[std::size_t(v)].configs.size() && non_negative(cls),
                    "solve_conditioned: the classes of a tied node must give one class (>= 0) per config");
    e.classes(v, cls);
  }
  auto report = [&progress](const search_progress& sp) {
    if (progress) progress(sp);
  };
  return e.run_kept(report, keep);
}
}  // namespace detail

inline conditioned_frontier solve_conditioned(const problem& p, const std::vector<int>& keep, const solve_options& o,
                                              const std::vector<std::vector<int>>& classes,
                                              const std::vector<std::pair<int, std::vector<int>>>& tied) {
  validate(p);
  return detail::solve_conditioned_valid(p, keep, o, classes, tied);
}

/// The Pareto frontier of `p`; see the overload with a progress callback.
constexpr frontier_result solve(const problem& p, const solve_options& o = {}) {
  return solve(p, o, [](const search_progress&) {});
}

}  // namespace tensoropt
