// The elimination order of the exact search (search/solve.hpp), planned on the factors'
// scopes alone before any frontier is computed, so that the epsilon budget can be split
// over a known number of pruning steps.
//
// Reductions (an elimination whose new factor is over at most two nodes) come first, the
// cheapest first: cells times configs of v times the estimated size of the second largest
// joined frontier, plus the cells times the total size, where a frontier's size is
// estimated by the number of nodes folded into it. Then the node whose factor has the
// fewest nodes (the dynamic program's width). So chains, trees and series-parallel
// graphs only make factors over at most two nodes, and each layer of a transformer folds
// into one edge before it meets the large frontier carried from the layers before it.
// Every factor made is pruned under epsilon; `depth` is the most pruned factors on one
// path of the elimination tree (the D of solve.hpp's bound).
//
// The node of least score is taken from a min-heap of (score, node) with stale entries
// skipped (ties to the lowest index, so the order depends only on the problem); a node in
// more than 64 live factors (the hub of a fan) is scored by that count alone.
#pragma once
#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>
#include "factor_store.hpp"

namespace tensoropt::detail {

/// The planned order: nodes to eliminate in turn, whether each step is pruned, and D.
struct elimination_order {
  std::vector<int> order;
  std::vector<bool> prune;
  std::size_t depth = 0;
};

/// Plans the order over `factors` (the live ones) for domains `dom`; `kept` nodes stay;
/// `late` nodes (optional) go after every other one (nodes held to the classes of kept
/// ones, eliminator::classes: eliminated last, each meets the kept nodes' classes in the
/// factors the others made, which then hold only the wanted cells).
constexpr elimination_order plan_elimination(const std::vector<factor>& factors, const std::vector<std::size_t>& dom,
                                             const std::vector<bool>& kept, const std::vector<bool>& late = {}) {
  elimination_order out;
  auto& order = out.order;
  auto& prune = out.prune;

  const std::size_t n = dom.size();
  struct sym {
    std::vector<int> scope;
    double weight;
    std::size_t depth;
    bool alive;
  };
  std::vector<sym> fs;
  std::vector<std::vector<std::size_t>> of(n);
  std::vector<std::size_t> live(n, 0);  // live factors per node
  for (const auto& f : factors) {
    for (int u : f.scope) {
      of[std::size_t(u)].push_back(fs.size());
      ++live[std::size_t(u)];
    }
    fs.push_back({f.scope, f.scope.size() == 1 ? 1.0 : 0.0, 0, true});
  }
  // A node in more than `crowded` live factors (the hub of a fan) is scored by that
  // count alone, which is at least its scope's size: re-scoring it exactly after each
  // neighbour's elimination made fans quadratic. Model graphs never reach it.
  constexpr std::size_t crowded = 64;
  auto last = [&](std::size_t v) { return v < late.size() && late[v] ? 1e250 : 0.0; };  // `late` goes last
  auto estimate = [&](std::size_t v, std::vector<int>& scope, std::vector<std::size_t>& ids) {
    ids.clear();
    scope.clear();
    for (std::size_t id : of[v])
      if (fs[id].alive) {
        ids.push_back(id);
        for (int u : fs[id].scope)
          if (std::size_t(u) != v) scope.push_back(u);
      }
    std::sort(scope.begin(), scope.end());
    scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
    // the merge touches, per cell and config of v, each point of the second largest
    // frontier (its rows), and per cell about the points of the result
    double cells = 1, largest = 0, second = 0, total = 0;
    for (int u : scope) cells *= double(dom[std::size_t(u)]);
    for (std::size_t id : ids) {
      const double w = fs[id].weight;
      total += w;
      if (w > largest) { second = largest; largest = w; }
      else if (w > second) second = w;
    }
    const double work = cells * (double(dom[v]) * (1 + second) + total);
    const double rank = scope.size() <= 2 ? 0.0 : double(scope.size());
    return last(v) + rank * 1e200 + std::min(work, 1e199);
  };
  std::vector<double> score(n, 0);
  std::vector<bool> done(n, false);
  std::vector<int> scope;
  std::vector<std::size_t> ids;
  std::size_t steps = 0;
  for (std::size_t v = 0; v < n; ++v) {
    done[v] = kept[v];
    if (!kept[v]) {
      score[v] = estimate(v, scope, ids);
      ++steps;
    }
  }
  order.clear();
  prune.clear();
  std::size_t most = 0;
  // The node of least score, ties to the lowest index: a min-heap of (score, node) with
  // stale entries (an older score, or a node done) skipped; linear scans made the plan
  // quadratic in the node count.
  using entry = std::pair<double, std::size_t>;
  std::vector<entry> heap;
  for (std::size_t u = 0; u < n; ++u)
    if (!done[u]) heap.push_back({score[u], u});
  std::make_heap(heap.begin(), heap.end(), std::greater<entry>{});
  for (std::size_t step = 0; step < steps; ++step) {
    std::size_t v = n;
    while (v == n) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<entry>{});
      const entry top = heap.back();
      heap.pop_back();
      if (!done[top.second] && top.first == score[top.second]) v = top.second;
    }
    done[v] = true;
    estimate(v, scope, ids);
    const bool pruned = true;
    sym g{scope, 0.0, 0, true};
    for (std::size_t id : ids) {
      fs[id].alive = false;
      for (int u : fs[id].scope) --live[std::size_t(u)];
      g.weight += fs[id].weight;
      g.depth = std::max(g.depth, fs[id].depth);
    }
    g.depth += pruned ? 1 : 0;
    most = std::max(most, g.depth);
    order.push_back(int(v));
    prune.push_back(pruned);
    const std::vector<int> touched = scope;
    for (int u : touched) {
      of[std::size_t(u)].push_back(fs.size());
      ++live[std::size_t(u)];
    }
    fs.push_back(std::move(g));
    for (int u : touched)
      if (!done[std::size_t(u)]) {
        score[std::size_t(u)] = live[std::size_t(u)] > crowded
                                    ? last(std::size_t(u)) + double(live[std::size_t(u)]) * 1e200
                                    : estimate(std::size_t(u), scope, ids);
        heap.push_back({score[std::size_t(u)], std::size_t(u)});
        std::push_heap(heap.begin(), heap.end(), std::greater<entry>{});
      }
  }
  out.depth = most;
  return out;
}

}  // namespace tensoropt::detail
