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
// Cut vertices last. A node whose removal disconnects the graph of the factors' scopes
// (the residual stream between two ResNet blocks, a module's input and concat, the
// boundary between two transformer layers) is scored after the other nodes whose
// factors have as many nodes (a score is compared as (late, rank, cut, work)). So every
// block folds into a factor over its cut vertices first, and the chain of blocks is then
// folded from its ends, each step a frontier over one node joined with a block's table
// (B^2 cells for B layouts). Taken greedily instead, a cheap join of two blocks' tables
// (B^3 cells) came before the costly fold of a wide block it waited for, and chained
// tables were joined to each other: Wide-ResNet-101's blocks before its 22 identical ones
// (8 x 8 V100-16GB, k = 16, the table of fast mode's A part at epsilon 0.05, one thread)
// took 157 s that way and take 36 s with cut vertices last; inception-v3's modules (4 x 4
// V100-16GB, epsilon 0.05, every count on 2 threads) 9.6 -> 5.5 s.
// Only where more than exact_order::max_nodes nodes are to be eliminated: on the small
// problems of one or two layers the dynamic program's order is weighed against the
// greedy one, and a greedy order with cut vertices last scores low enough there to keep
// it where the order without them lost to the dynamic program's (gpt3-39b's last layer
// and head, k = 128: 1.4 s with the program's order, 4.0 s with the greedy one).
//
// The node of least score is taken from a min-heap of (score, node) with stale entries
// skipped (ties to the lowest index, so the order depends only on the problem); a node in
// more than 64 live factors (the hub of a fan) is scored by that count alone.
//
// Small problems (at most 16 nodes to eliminate: the per-layer solves of the repeated-block
// search) also get the order of least total score over every order (`exact_order`, a
// dynamic program over the sets eliminated so far), scored with the classes' empty cells and
// a fixed size for frontiers made by eliminations. It replaces the greedy order only where
// it scores below half of it and is no deeper: on the last pipeline stage of megatron-145.6b
// (a transformer layer and the model's head, 106 boundary layouts) the greedy order joined
// the MLP's two carried frontiers on 106 x 106 cells (3.6 s of a 3.8 s solve); the planned
// one takes 1.2 s. Orders scored only a few percent lower were measured slower, so the
// margin is wide. Exact mode's frontiers keep their costs (any order is exact); under
// epsilon a changed order prunes elsewhere, within the same bound.
// A step of the program counts the factors over v alone (the only ones that weigh; a
// factor over more nodes weighs nothing), counted once per node instead of found among
// all factors at every step: the same orders, the 23 programs of gpt3-1.3b's exact
// planning (4 x V100-16GB, one thread) 0.08-0.11 -> 0.05-0.07 s.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
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

/// The model's score of an order, summed over its steps: first the ranks (the sizes of the
/// factors made over more than two nodes), then the work, as the greedy plan's estimate
/// scores one step but with the classes' empty cells and a fixed size for the frontiers
/// eliminations make (exact_order::step); lexicographic.
struct order_score {
  double rank = 0, work = 0;
  constexpr bool operator<(const order_score& o) const { return rank != o.rank ? rank < o.rank : work < o.work; }
};

/// The order of least total score by a dynamic program over the sets of nodes eliminated so
/// far. The factor that eliminating v makes after a set S depends only on S (it joins v's
/// own factors and those made from the connected parts of S next to v; its scope is their
/// neighbours outside S), so the least score of each set follows from the sets one node
/// smaller: 2^m sets for m nodes to eliminate, taken where m <= `max_nodes` (65,536
/// sets: about 10 ms, measured on a 17-node stage problem). `late` nodes go after every
/// other one, as in the greedy plan; ties go to the lower node index. `score` scores any
/// order under the same model, so that the two plans can be compared.
struct exact_order {
  static constexpr std::size_t max_nodes = 16;
  using mask = std::uint64_t;
  struct part {
    mask around;  // a connected part of S's neighbours outside S (its factor's scope)
  };
  std::size_t n = 0;
  const std::vector<std::size_t>* dom = nullptr;
  std::vector<mask> adj;
  // per node, its factors over it alone: the only ones a step weighs (a factor over more
  // nodes weighs 0 and one over v alone never meets S, which v is not in)
  std::vector<int> own;
  std::vector<int> free;
  mask early = 0;    // the nodes to eliminate that are not `late`
  mask classed = 0;  // the nodes with classes (eliminator::classes)

  static constexpr mask bit(std::size_t u) { return mask(1) << u; }
  // a frontier made by an elimination is scored as this many points per cell (the greedy
  // plan's weights count the nodes folded into it, which undercounts a join of two)
  static constexpr double derived_points = 10;
  // the plan replaces the greedy one only when it scores below this fraction of it: the
  // score is a model, and on the layers measured an order scored a few percent lower could
  // be slower
  static constexpr double margin = 0.5;

  /// false where it does not apply (more than 64 nodes, or more than max_nodes to eliminate)
  constexpr bool init(const std::vector<factor>& factors, const std::vector<std::size_t>& d,
                      const std::vector<bool>& kept, const std::vector<bool>& late, const std::vector<bool>& cls) {
    n = d.size();
    dom = &d;
    if (n > 64) return false;
    for (std::size_t v = 0; v < n; ++v)
      if (!kept[v]) free.push_back(int(v));
    if (free.empty() || free.size() > max_nodes) return false;
    adj.assign(n, 0);
    own.assign(n, 0);
    for (const auto& f : factors) {
      mask x = 0;
      for (int u : f.scope) x |= bit(std::size_t(u));
      if (!x) continue;
      for (int u : f.scope) adj[std::size_t(u)] |= x;
      if (f.scope.size() == 1) ++own[std::size_t(f.scope[0])];
    }
    for (int v : free)
      if (!(std::size_t(v) < late.size() && late[std::size_t(v)])) early |= bit(std::size_t(v));
    for (std::size_t v = 0; v < cls.size() && v < n; ++v)
      if (cls[v]) classed |= bit(v);
    return true;
  }
  constexpr mask neighbours(mask x) const {
    mask out = 0;
    for (mask y = x; y; y &= y - 1) out |= adj[std::size_t(std::countr_zero(y))];
    return out;
  }
  /// The connected parts of the eliminated set S, each standing for the factor made from it.
  constexpr void parts_of(mask S, std::vector<part>& parts) const {
    parts.clear();
    for (mask rem = S; rem;) {
      mask c = rem & (~rem + 1);
      for (;;) {
        const mask grown = c | (neighbours(c) & S);
        if (grown == c) break;
        c = grown;
      }
      rem &= ~c;
      parts.push_back({neighbours(c) & ~S});
    }
  }
  /// Eliminating v after S: false where v must wait (`late`), else its rank and work.
  constexpr bool step(mask S, std::size_t v, const std::vector<part>& parts, order_score& sc) const {
    const mask vb = bit(v);
    if (!(early & vb) && (early & ~S)) return false;
    double largest = 0, second = 0, total = 0;
    auto joined = [&](double w) {
      total += w;
      if (w > largest) { second = largest; largest = w; }
      else if (w > second) second = w;
    };
    mask scope = adj[v];
    for (int f = 0; f < own[v]; ++f) joined(1.0);
    for (const auto& pt : parts)
      if (pt.around & vb) {
        joined(derived_points);
        scope |= pt.around;
      }
    scope &= ~S & ~vb;
    // Cells whose nodes with classes differ in class stay empty, and a v with classes
    // takes only the configs of the cell's class (eliminator::eliminate): with one config
    // per class, as the boundary layouts have, the wanted cells are the unclassed nodes'
    // product times the largest classed domain.
    double cells = 1, widest = 0;
    const bool masked = std::popcount(scope & classed) >= 2;
    for (mask y = scope; y; y &= y - 1) {
      const std::size_t u = std::size_t(std::countr_zero(y));
      const double d = double((*dom)[u]);
      if (!(classed & bit(u))) cells *= d;
      else if (masked) widest = std::max(widest, d);
      else cells *= (widest = d);
    }
    if (masked) cells *= widest;
    double dv = double((*dom)[v]);
    if ((classed & vb) && widest > 0) dv = std::max(1.0, dv / widest);
    const auto width = std::size_t(std::popcount(scope));
    sc.rank = width <= 2 ? 0.0 : double(width);
    sc.work = std::min(cells * (dv * (1 + second) + total), 1e199);
    return true;
  }
  /// The model's score of `order` (every node to eliminate, once).
  constexpr order_score score(const std::vector<int>& order) const {
    order_score total;
    std::vector<part> parts;
    mask S = 0;
    for (int v : order) {
      parts_of(S, parts);
      order_score sc;
      if (!step(S, std::size_t(v), parts, sc)) sc.rank = 1e250;
      total.rank += sc.rank;
      total.work += sc.work;
      S |= bit(std::size_t(v));
    }
    return total;
  }
  /// The order of least score.
  constexpr std::vector<int> plan() const {
    const std::size_t m = free.size(), states = std::size_t(1) << m;
    constexpr double unreached = 1e300;
    std::vector<order_score> best(states, order_score{unreached, unreached});
    std::vector<std::int8_t> last(states, -1);
    std::vector<mask> global(states, 0);  // the set as a mask of node indices
    best[0] = {0, 0};
    std::vector<part> parts;
    for (std::size_t st = 0; st < states; ++st) {
      if (st) global[st] = global[st & (st - 1)] | bit(std::size_t(free[std::size_t(std::countr_zero(st))]));
      if (best[st].rank >= unreached) continue;
      const mask S = global[st];
      parts_of(S, parts);
      for (std::size_t i = 0; i < m; ++i) {
        if (st >> i & 1) continue;
        order_score sc;
        if (!step(S, std::size_t(free[i]), parts, sc)) continue;
        const order_score to{best[st].rank + sc.rank, best[st].work + sc.work};
        const std::size_t t = st | (std::size_t(1) << i);
        if (to < best[t]) {
          best[t] = to;
          last[t] = std::int8_t(i);
        }
      }
    }
    std::vector<int> order;
    for (std::size_t st = states - 1; st;) {
      const auto i = std::size_t(last[st]);
      order.push_back(free[i]);
      st &= ~(std::size_t(1) << i);
    }
    std::reverse(order.begin(), order.end());
    return order;
  }
};

/// The cut vertices of the graph whose edges join the nodes of each factor's scope: the
/// nodes whose removal leaves more connected parts (Tarjan's low-link test, by an explicit
/// stack, so that long chains do not recurse).
constexpr std::vector<bool> cut_vertices(const std::vector<factor>& factors, std::size_t n) {
  std::vector<std::vector<int>> adj(n);
  for (const auto& f : factors)
    for (int a : f.scope)
      for (int b : f.scope)
        if (a != b) adj[std::size_t(a)].push_back(b);
  std::vector<bool> cut(n, false);
  std::vector<int> disc(n, -1), low(n, 0), parent(n, -1);
  std::vector<std::size_t> next(n, 0);
  std::vector<int> stack;
  int clock = 0;
  for (std::size_t root = 0; root < n; ++root) {
    if (disc[root] >= 0) continue;
    disc[root] = low[root] = clock++;
    stack.assign(1, int(root));
    std::size_t children = 0;  // of the root in the DFS tree
    while (!stack.empty()) {
      const auto u = std::size_t(stack.back());
      if (next[u] < adj[u].size()) {
        const auto w = std::size_t(adj[u][next[u]++]);
        if (disc[w] < 0) {
          parent[w] = int(u);
          children += u == root;
          disc[w] = low[w] = clock++;
          stack.push_back(int(w));
        } else if (int(w) != parent[u]) {
          low[u] = std::min(low[u], disc[w]);
        }
        continue;
      }
      stack.pop_back();
      if (parent[u] < 0) continue;
      const auto pu = std::size_t(parent[u]);
      low[pu] = std::min(low[pu], low[u]);
      if (pu != root && low[u] >= disc[pu]) cut[pu] = true;
    }
    cut[root] = children >= 2;
  }
  return cut;
}

/// The greedy plan (see plan_elimination), or, with `fixed`, that order with its pruning
/// steps and depth.
constexpr elimination_order greedy_elimination(const std::vector<factor>& factors, const std::vector<std::size_t>& dom,
                                               const std::vector<bool>& kept, const std::vector<bool>& late,
                                               const std::vector<int>* fixed) {
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
  // cut vertices last only where the dynamic program does not plan (see the header)
  const auto free_nodes = std::size_t(std::count(kept.begin(), kept.end(), false));
  // an if, not ?: (GCC 12's constant evaluator rejects the conditional's temporaries)
  std::vector<bool> cut(n, false);
  if (free_nodes > exact_order::max_nodes) cut = cut_vertices(factors, n);
  // A score is (tier, work), compared lexicographically: the tier puts `late` nodes last,
  // then orders by the new factor's rank (0 up to two nodes, else its node count), cut
  // vertices (see the header) after the others of one rank.
  using key = std::pair<double, double>;
  auto tier = [&](std::size_t v, double rank) {
    return (v < late.size() && late[v] ? 1e18 : 0.0) + 2 * rank + (cut[v] ? 1 : 0);
  };
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
    return key{tier(v, rank), work};
  };
  std::vector<key> score(n, key{0, 0});
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
  using entry = std::pair<key, std::size_t>;
  std::vector<entry> heap;
  for (std::size_t u = 0; u < n; ++u)
    if (!done[u]) heap.push_back({score[u], u});
  std::make_heap(heap.begin(), heap.end(), std::greater<entry>{});
  for (std::size_t step = 0; step < steps; ++step) {
    std::size_t v = n;
    if (fixed) v = std::size_t((*fixed)[step]);
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
                                    ? key{tier(std::size_t(u), double(live[std::size_t(u)])), 0.0}
                                    : estimate(std::size_t(u), scope, ids);
        heap.push_back({score[std::size_t(u)], std::size_t(u)});
        std::push_heap(heap.begin(), heap.end(), std::greater<entry>{});
      }
  }
  out.depth = most;
  return out;
}

/// Plans the order over `factors` (the live ones) for domains `dom`; `kept` nodes stay;
/// `late` nodes (optional) go after every other one (nodes held to the classes of kept
/// ones, eliminator::classes: eliminated last, each meets the kept nodes' classes in the
/// factors the others made, which then hold only the wanted cells). Where exact_order
/// applies, its order replaces the greedy one when it scores below exact_order::margin of
/// it and is no deeper (a deeper order splits epsilon over more prunes, which the score
/// does not see).
constexpr elimination_order plan_elimination(const std::vector<factor>& factors, const std::vector<std::size_t>& dom,
                                             const std::vector<bool>& kept, const std::vector<bool>& late = {},
                                             const std::vector<bool>& classed = {}) {
  elimination_order greedy = greedy_elimination(factors, dom, kept, late, nullptr);
  exact_order ex;
  if (!ex.init(factors, dom, kept, late, classed)) return greedy;
  const std::vector<int> order = ex.plan();
  const order_score mine = ex.score(order), theirs = ex.score(greedy.order);
  if (!(mine.rank < theirs.rank || (mine.rank == theirs.rank && mine.work < exact_order::margin * theirs.work)))
    return greedy;
  elimination_order planned = greedy_elimination(factors, dom, kept, late, &order);
  return planned.depth <= greedy.depth ? planned : greedy;
}

/// plan_elimination at run time, remembered per thread: the plan depends only on the
/// factors' scopes, the domains and the flags, and one problem's structure is searched
/// many times over (a pipeline stage's search and the scalar searches of its bounds
/// reweigh the same problem, and exact_order's dynamic program takes about 10 ms on 16
/// nodes: 5 % of the megatron-145.6b pipeline run, perf). The last `kept_plans` plans are
/// kept, keyed by everything the plan reads.
inline elimination_order plan_elimination_memo(const std::vector<factor>& factors, const std::vector<std::size_t>& dom,
                                               const std::vector<bool>& kept, const std::vector<bool>& late,
                                               const std::vector<bool>& classed) {
  constexpr std::size_t kept_plans = 64;
  std::vector<std::uint64_t> key;
  key.reserve(4 * dom.size() + 4 * factors.size() + 2);
  key.push_back(dom.size());
  for (std::size_t v = 0; v < dom.size(); ++v) {
    auto at = [v](const std::vector<bool>& b) { return v < b.size() && b[v] ? std::uint64_t(1) : 0; };
    key.push_back(std::uint64_t(dom[v]) << 3 | at(kept) << 2 | at(late) << 1 | at(classed));
  }
  for (const auto& f : factors) {
    key.push_back(~std::uint64_t(f.scope.size()));  // a separator no node index can equal
    for (int u : f.scope) key.push_back(std::uint64_t(u));
  }
  struct entry {
    std::vector<std::uint64_t> key;
    elimination_order plan;
  };
  thread_local std::vector<entry> plans;
  thread_local std::size_t next = 0;
  for (const auto& e : plans)
    if (e.key == key) return e.plan;
  elimination_order plan = plan_elimination(factors, dom, kept, late, classed);
  entry e{std::move(key), plan};
  if (plans.size() < kept_plans) plans.push_back(std::move(e));
  else plans[next++ % kept_plans] = std::move(e);
  return plan;
}

}  // namespace tensoropt::detail
