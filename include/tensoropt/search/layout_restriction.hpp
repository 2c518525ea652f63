// Fast mode's layout restriction: each node's configs limited to the layouts that
// weighted-sum optima of the unrestricted problem take there.
//
// Why. A model whose non-repeated parts are large (a CNN's stem and the stages before its
// longest run of identical blocks: on wresnet-13b, 101 ops whose activations have 41-99
// layouts on 8 x 8 devices) spends nearly all of fast mode's time in the general engine's
// tables of those parts (pair factors of up to 198 x 198 cells, each a union over up to 198
// configs). Yet the plans on the frontier take few of those layouts: on wresnet-13b (8 x 8
// V100-16GB, 16 micro-batches, epsilon 0.05) each op's 1,301 frontier plans take 2-8 of its
// layouts, each residual block's boundary 2-5 of 41-99.
//
// What. `restrict_layouts` finds weighted-sum optima (each the strategy of least memory +
// w x time for one weight w) of the whole problem, all in two passes of one vector search
// (detail/multi_weight.hpp: one lane per weight), and keeps at every node the configs whose
// layout one of them takes there, every recompute and optimizer-sharding variant included.
// The first pass finds the extremes (least memory, least time) and six weights over fifteen
// decades; the second `lanes` weights spread evenly in log over four decades either side of
// the extremes' slope (about three a decade at 24). A layout is a class of a node's configs
// with the same edge times to every config of every neighbour (edge time depends on layouts
// alone; recompute and sharding change node costs and edge memory). Where a repeated block
// is given, its instances keep the same configs at each position (the union over them), so
// they stay identical and can still be powered.
//
// What it costs. It is a restriction, not a bound: plans that take other layouts are not
// searched. Each optimum found is a plan of the restricted problem, so at those weights the
// restricted frontier is as good as the unrestricted one; between them it can lie behind.
// Measured on wresnet-13b (above; `search_bench --problem F --restrict-layouts 24 --epsilon
// 0.05 --memory-gib 16`, F from `tensoropt-plan --model wresnet-13b --micro-batches K
// --problem-json F`), against fast mode on the whole problem at the same epsilon: with 24
// lanes every point of the whole frontier has a restricted one at no more memory within
// 0.83 % in time at k = 16 and 0.90 % at k = 64 (the search 21.6 -> 1.75 s and 14.0 -> 1.05
// s); with 16 lanes within 1.2 % and 1.7 %. Over the runtime peak instead of the additive
// memory the search optimizes, the planner's frontier of every count lies up to 10 % behind
// near its least peak (README, "The layouts").
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <string>
#include <vector>
#include "problem.hpp"
#include "frontier.hpp"
#include "detail/multi_weight.hpp"

namespace tensoropt {

/// A problem on a subset of another's configs, and the way back.
struct layout_restriction {
  problem restricted;                 ///< the kept configs of every node, with their edges
  std::vector<std::vector<int>> kept; ///< kept[v]: the configs of the full problem kept at v, ascending
  std::size_t lanes = 0;              ///< weights searched, both passes
  std::size_t optima = 0;             ///< distinct optima within the memory limit
  /// The optima's strategies (configs of the full problem), one per weight searched.
  std::vector<std::vector<int>> strategies;
  /// The configs of the full problem that a strategy of `restricted` takes.
  std::vector<int> to_full(const std::vector<int>& choice) const {
    std::vector<int> out(choice.size());
    for (std::size_t v = 0; v < choice.size(); ++v) out[v] = kept[v][std::size_t(choice[v])];
    return out;
  }
  /// The number of configs kept, over all nodes.
  std::size_t configs() const {
    std::size_t n = 0;
    for (const auto& k : kept) n += k.size();
    return n;
  }
};

/// Weights of restrict_layouts' first pass: the two extremes and six over fifteen decades.
inline constexpr std::size_t first_pass_lanes = 8;

namespace detail {

/// Per node, the layout class of each config: configs with equal edge times to every config
/// of every neighbour share one (numbered by first occurrence).
inline std::vector<std::vector<int>> layout_classes(const problem& p) {
  std::vector<std::vector<const problem_edge*>> out(p.nodes.size()), in(p.nodes.size());
  for (const auto& e : p.edges) {
    out[std::size_t(e.from)].push_back(&e);
    in[std::size_t(e.to)].push_back(&e);
  }
  std::vector<std::vector<int>> cls(p.nodes.size());
  for (std::size_t v = 0; v < p.nodes.size(); ++v) {
    const std::size_t n = p.nodes[v].configs.size();
    std::map<std::vector<cost_t>, int> seen;
    cls[v].resize(n);
    std::vector<cost_t> key;
    for (std::size_t c = 0; c < n; ++c) {
      key.clear();
      for (const auto* e : out[v]) {
        const std::size_t dt = p.nodes[std::size_t(e->to)].configs.size();
        key.insert(key.end(), e->time.begin() + std::ptrdiff_t(c * dt), e->time.begin() + std::ptrdiff_t((c + 1) * dt));
      }
      for (const auto* e : in[v]) {
        const std::size_t df = p.nodes[std::size_t(e->from)].configs.size();
        for (std::size_t a = 0; a < df; ++a) key.push_back(e->time[a * n + c]);
      }
      cls[v][c] = seen.try_emplace(key, int(seen.size())).first->second;
    }
  }
  return cls;
}

}  // namespace detail

/// Weighted-sum optima of a problem: per weight (a lane: score a x memory + b x time), a
/// strategy found by detail::multi_weight_optima, its exact cost, and a lower bound of every
/// strategy's score in that lane.
struct weighted_optima {
  std::vector<detail::weight_lane> lanes;
  std::vector<std::vector<int>> strategies;
  std::vector<cost_t> time, memory;
  /// per lane: no strategy of the problem scores below it (the found optimum's exact score
  /// less the float rounding the vector pass may have made, see `first_pass`)
  std::vector<double> floor;
};

/// restrict_layouts' first pass over `p` (valid): the extremes (least memory, least time)
/// and six weights over fifteen decades. Each floor is the found strategy's exact score less
/// the float rounding the pass may have made (detail::multi_weight_slack).
inline weighted_optima first_pass(const problem& p) {
  weighted_optima w;
  w.lanes = {{1, 0}, {0, 1}};
  for (int e = -12; e <= 3; e += 3) w.lanes.push_back({1, std::pow(10.0, e)});
  static_assert(first_pass_lanes == 8);  // the list above
  w.strategies = detail::multi_weight_optima(p, w.lanes);
  const double slack = detail::multi_weight_slack(p);
  for (std::size_t s = 0; s < w.lanes.size(); ++s) {
    const auto c = cost_of(p, w.strategies[s]);
    w.time.push_back(c.time);
    w.memory.push_back(c.memory);
    const double score = w.lanes[s].a * double(c.memory) + w.lanes[s].b * double(c.time);
    w.floor.push_back(score * (1 - slack));
  }
  return w;
}

/// Whether the points `known` (real strategies, e.g. of other micro-batch counts) cover every
/// strategy of the problem of `w` with memory <= `limit` within (1 + epsilon): for each such
/// strategy x some k has k.memory <= x.memory and k.time <= (1 + epsilon) x.time. Tested on
/// the lower bound the floors give ({x : a m + b t >= floor in every lane}): every corner of
/// the region the points leave uncovered must lie below some lane's floor. Sound (the floors
/// are lower bounds); false where it cannot tell.
inline bool covered_by(const weighted_optima& w, std::vector<frontier::point> known, double epsilon, cost_t limit) {
  if (known.empty() || w.lanes.empty()) return false;
  std::sort(known.begin(), known.end(), [](const frontier::point& x, const frontier::point& y) {
    return x.memory != y.memory ? x.memory < y.memory : x.time < y.time;
  });
  // outside the bound: a (memory, time) point some lane's floor excludes
  auto outside = [&](double m, double t) {
    for (std::size_t s = 0; s < w.lanes.size(); ++s) {
      // a lane without time ignores it (0 x infinity would be NaN)
      const double score = w.lanes[s].a * m + (w.lanes[s].b == 0 ? 0.0 : w.lanes[s].b * t);
      if (score < w.floor[s]) return true;
    }
    return false;
  };
  // the uncovered region's maximal corners: memory below the first point's at any time, then
  // between consecutive points' memories below the best time so far over (1 + epsilon)
  const double inf = std::numeric_limits<double>::infinity();
  if (!outside(double(known.front().memory) - 1, inf)) return false;
  double best = inf;
  for (std::size_t j = 0; j < known.size(); ++j) {
    best = std::min(best, double(known[j].time));
    const double next = j + 1 < known.size() ? double(known[j + 1].memory) - 1 : double(limit);
    const double m = std::min(next, double(limit));
    // just below the covered time: x.time < best / (1 + epsilon) is uncovered
    if (!outside(m, std::nextafter(best / (1 + epsilon), 0.0))) return false;
    if (next >= double(limit)) break;
  }
  return true;
}

/// The restriction of the header: `p` (valid) on the layouts of weighted-sum optima found by
/// two passes of detail::multi_weight_optima: `first_pass` (given, or made here), then
/// `lanes` (1 to 56) weights spaced evenly in log over [1e-4 s, 1e4 s], s the slope between
/// the extremes (memory per time). The instances of `rb` (empty: none) keep equal configs at
/// each position; optima above `memory_limit` keep no layout (they lie on no frontier under
/// the limit).
inline layout_restriction restrict_layouts(const problem& p, const repeated_block& rb, std::size_t lanes,
                                           cost_t memory_limit = std::numeric_limits<cost_t>::max(),
                                           const weighted_optima* first = nullptr) {
  detail::require(lanes >= 1 && lanes <= 56, "restrict_layouts: lanes must be 1 to 56");
  layout_restriction r;
  struct optimum {
    cost_t time = 0, memory = 0;
    std::vector<int> choice;
  };
  std::vector<optimum> found;
  auto take = [&](std::vector<std::vector<int>> choices) {
    for (auto& c : choices) {
      const auto k = cost_of(p, c);
      found.push_back({k.time, k.memory, std::move(c)});
    }
  };
  {
    const weighted_optima made = first ? weighted_optima{} : first_pass(p);
    const weighted_optima& f = first ? *first : made;
    for (std::size_t s = 0; s < f.lanes.size(); ++s) found.push_back({f.time[s], f.memory[s], f.strategies[s]});
    r.lanes = f.lanes.size();
  }
  const optimum& least_memory = found[0];
  const optimum& least_time = found[1];
  if (least_memory.memory < least_time.memory && least_memory.time > least_time.time) {
    const double slope = double(least_time.memory - least_memory.memory) / double(least_memory.time - least_time.time);
    std::vector<detail::weight_lane> grid;
    for (std::size_t i = 0; i < lanes; ++i) {
      const double e = lanes == 1 ? 0.0 : -4.0 + 8.0 * double(i) / double(lanes - 1);
      grid.push_back({1, slope * std::pow(10.0, e)});
    }
    take(detail::multi_weight_optima(p, grid));
    r.lanes += grid.size();
  }
  // the layouts the optima within the memory limit take
  const auto cls = detail::layout_classes(p);
  std::vector<std::vector<char>> used(p.nodes.size());
  for (std::size_t v = 0; v < p.nodes.size(); ++v) used[v].assign(p.nodes[v].configs.size(), 0);
  auto mark = [&](const std::vector<int>& choice) {  // every config of each node's layout in `choice`
    for (std::size_t v = 0; v < p.nodes.size(); ++v) {
      const int c = cls[v][std::size_t(choice[v])];
      for (std::size_t x = 0; x < cls[v].size(); ++x)
        if (cls[v][x] == c) used[v][x] = 1;
    }
  };
  std::vector<std::pair<cost_t, cost_t>> distinct;
  for (const auto& o : found) {
    if (o.memory > memory_limit) continue;
    distinct.push_back({o.memory, o.time});
    mark(o.choice);
  }
  std::sort(distinct.begin(), distinct.end());
  r.optima = std::size_t(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
  // nothing fits: keep the least-memory optimum's layouts (the restricted search then says so)
  if (r.optima == 0) mark(found[0].choice);
  // identical instances keep equal configs at each position (configs aligned by index), and
  // so do the positions of one kin (the same layouts config for config: fast mode may hold
  // them to the boundary's layout, repeated_block::kin), among nodes with as many configs
  auto unite = [&](const std::vector<std::size_t>& nodes) {
    std::vector<std::size_t> done;
    for (std::size_t a : nodes) {
      if (std::find(done.begin(), done.end(), a) != done.end()) continue;
      std::vector<std::size_t> same;
      for (std::size_t b : nodes)
        if (used[b].size() == used[a].size()) same.push_back(b);
      std::vector<char> u(used[a].size(), 0);
      for (std::size_t b : same)
        for (std::size_t x = 0; x < u.size(); ++x) u[x] = char(u[x] | used[b][x]);
      for (std::size_t b : same) used[b] = u;
      done.insert(done.end(), same.begin(), same.end());
    }
  };
  if (!rb.instances.empty()) {
    const std::size_t m = rb.instances[0].size();
    auto position = [&](std::size_t j) {
      std::vector<std::size_t> nodes;
      for (const auto& inst : rb.instances) nodes.push_back(std::size_t(inst[j]));
      return nodes;
    };
    for (std::size_t j = 0; j < m; ++j) unite(position(j));
    if (rb.kin.size() == m)
      for (std::size_t j = 0; j < m; ++j) {
        std::vector<std::size_t> nodes;
        for (std::size_t q = 0; q < m; ++q)
          if (rb.kin[q] == rb.kin[j]) {
            const auto more = position(q);
            nodes.insert(nodes.end(), more.begin(), more.end());
          }
        unite(nodes);
      }
  }
  for (const auto& o : found) r.strategies.push_back(o.choice);
  r.kept.resize(p.nodes.size());
  for (std::size_t v = 0; v < p.nodes.size(); ++v)
    for (std::size_t x = 0; x < used[v].size(); ++x)
      if (used[v][x]) r.kept[v].push_back(int(x));
  r.restricted = detail::restricted_problem(p, r.kept);
  return r;
}

}  // namespace tensoropt
