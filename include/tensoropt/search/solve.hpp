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
//   - factors over the same nodes (parallel edges) are joined by (+) when either is eliminated;
//   - a node with more neighbours gives a factor over all of them: this is the dynamic
//     program whose state is the configs of the nodes still connected to eliminated
//     ones (the "live" nodes), exact, with cost growing with that width.
// The order is planned on the graph before any frontier is computed (`plan`): first
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
// The engine is constexpr and runs in a constant expression for small problems.
#pragma once
#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include <cstdio>
#include <new>
#if __has_include(<unistd.h>)
#include <unistd.h>
#endif
#include "frontier.hpp"
#include "frontier_result.hpp"
#include "problem.hpp"
#include "validate.hpp"
#include "detail/cell_merge.hpp"

namespace tensoropt {

/// Options of `solve`.
struct solve_options {
  double epsilon = 0;                              ///< 0: exact; else see the header
  std::size_t width_limit = std::size_t(1) << 22;  ///< most cells of one factor table
  bool group_configs = true;                       ///< group configs with identical edges
  /// Only points with memory <= memory_limit are wanted (e.g. the device capacity):
  /// partial strategies above it are dropped as soon as they appear. Exact for the
  /// frontier below the limit, since every cost is non-negative.
  cost_t memory_limit = std::numeric_limits<cost_t>::max();
  /// Back-pointers no live point can reach are dropped when the arena has grown by this
  /// many entries (and doubled) since the last compaction; bounds memory on large problems.
  std::size_t compact_after = std::size_t(1) << 20;
  /// Most bytes the search may hold in factor tables and back-pointers; past it the search
  /// stops with runtime_error naming the sizes it reached. 0: three quarters of the
  /// machine's physical memory (unlimited in a constant expression).
  std::size_t max_bytes = 0;
};

/// Reported to the progress callback after each elimination.
struct search_progress {
  std::size_t eliminated = 0, total = 0;  ///< nodes eliminated so far, of `total`
  std::size_t cells = 0;                  ///< cells of the factor just made
  std::size_t points = 0;                 ///< points in it
};

/// The answer of `solve_conditioned`: for each assignment of configs to the kept nodes
/// (row-major over `kept`, ascending, `dims` = their config counts), the frontier of every
/// other node, all costs included; points carry tags into `tr` (recover with trace::recover).
struct conditioned_frontier {
  std::vector<int> kept;
  std::vector<std::size_t> dims;   ///< layout-configs per kept node
  /// configs[i][d]: the configs of kept node i grouped into its layout-config d (configs
  /// with identical edge rows, as the search groups them; one each without grouping)
  std::vector<std::vector<std::vector<int>>> configs;
  std::vector<std::size_t> start;  ///< CSR offsets into pts, cells + 1
  std::vector<frontier::point> pts;
  trace tr;
  std::size_t prune_depth = 0;
  bool exact = true;
  std::string note;
  constexpr std::size_t cells() const { return start.size() - 1; }
};

namespace detail {

/// Three quarters of the physical memory (8 GiB where it cannot be read).
inline std::size_t default_max_bytes() {
#if __has_include(<unistd.h>) && defined(_SC_PHYS_PAGES)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) return std::size_t(pages) / 4 * 3 * std::size_t(page);
#endif
  return std::size_t(8) << 30;
}

struct factor {
  std::vector<int> scope;           // variables, ascending
  std::vector<std::size_t> dims;    // domain size per scope variable
  std::vector<std::size_t> start;   // CSR offsets, cells + 1
  std::vector<frontier::point> pts;
  bool alive = true, tagged = false;
  constexpr std::size_t cells() const { return start.size() - 1; }
  constexpr double avg_points() const {
    return cells() == 0 ? 1.0 : double(pts.size()) / double(cells());
  }
};

class eliminator {
 public:
  constexpr eliminator(const problem& p, const solve_options& o) : p_(p), o_(o) {}
  /// Nodes left in the result instead of eliminated (see `solve_conditioned`).
  constexpr void keep(const std::vector<int>& nodes) {
    kept_.assign(p_.nodes.size(), false);
    for (int v : nodes) kept_[std::size_t(v)] = true;
  }

  /// Eliminates every node not kept; returns the table over the kept nodes' layout-configs whose cells are the frontiers of everything else, memory_offset included.
  template <class Progress>
  constexpr conditioned_frontier run_kept(Progress& progress, const std::vector<int>& kept) {
    frontier_result r;
    std::vector<frontier> constants;
    eliminate_all(progress, r, constants);
    frontier total{{{0, p_.memory_offset, -1}}};
    for (auto& c : constants) total = minkowski_sum(total, c, trace_);
    conditioned_frontier out;
    out.kept = kept;
    std::sort(out.kept.begin(), out.kept.end());
    for (int v : out.kept) {
      out.dims.push_back(dom_[std::size_t(v)]);
      out.configs.push_back(group_[std::size_t(v)]);
    }
    std::vector<std::size_t> live;
    for (std::size_t id = 0; id < factors_.size(); ++id)
      if (factors_[id].alive) live.push_back(id);
    std::size_t cells = 1;
    for (auto d : out.dims) cells *= d;
    std::vector<std::size_t> idx(out.kept.size(), 0);
    out.start.push_back(0);
    for (std::size_t c = 0; c < cells; ++c) {
      frontier f = total;
      for (std::size_t id : live) {
        const factor& fa = factors_[id];
        std::size_t at = 0;
        for (std::size_t j = 0; j < fa.scope.size(); ++j) {
          const std::size_t pos =
              std::size_t(std::find(out.kept.begin(), out.kept.end(), fa.scope[j]) - out.kept.begin());
          at = at * fa.dims[j] + idx[pos];
        }
        frontier cell{{fa.pts.begin() + std::ptrdiff_t(fa.start[at]), fa.pts.begin() + std::ptrdiff_t(fa.start[at + 1])}};
        f = minkowski_sum(f, cell, trace_);
      }
      for (auto& q : f.points)
        if (q.memory <= o_.memory_limit) out.pts.push_back(q);
      out.start.push_back(out.pts.size());
      for (std::size_t i = idx.size(); i-- > 0;) {
        if (++idx[i] < out.dims[i]) break;
        idx[i] = 0;
      }
    }
    out.prune_depth = r.prune_depth;
    out.exact = o_.epsilon <= 0 && !r.width_fallback;
    out.note = r.note;
    out.tr = std::move(trace_);
    return out;
  }

  template <class Progress>
  constexpr frontier_result run(Progress& progress) {
    const std::size_t n = p_.nodes.size();
    frontier_result r;
    std::vector<frontier> constants;
    eliminate_all(progress, r, constants);
    frontier total{{{0, p_.memory_offset, -1}}};
    for (auto& c : constants) total = minkowski_sum(total, c, trace_);
    r.exact = o_.epsilon <= 0 && !r.width_fallback;
    r.trace_entries = trace_.entries.size();
    for (auto& q : total.points) {
      if (q.memory > o_.memory_limit) break;
      frontier_point fp{q.time, q.memory, std::vector<int>(n, -1)};
      trace_.recover(q.tag, fp.choice);
      for (int c : fp.choice) require<runtime_error>(c >= 0, "solve: internal error, a node has no config");
      r.points.push_back(std::move(fp));
    }
    return r;
  }

 private:
  template <class Progress>
  constexpr void eliminate_all(Progress& progress, frontier_result& r, std::vector<frontier>& constants) {
    const std::size_t n = p_.nodes.size();
    if (kept_.size() != n) kept_.assign(n, false);
    r.epsilon = o_.epsilon;
    limit_ = o_.memory_limit - std::min(o_.memory_limit, p_.memory_offset);
    build();
    min_sum_ = 0;
    for (auto& f : factors_)
      if (f.alive) min_sum_ = sat_add(min_sum_, min_memory(f));
    const std::size_t depth = plan();
    r.prune_depth = depth;
    delta_ = o_.epsilon > 0 && depth > 0 ? (2 * o_.epsilon / (2 + o_.epsilon)) / double(depth) : 0.0;
    for (std::size_t step = 0; step < order_.size(); ++step) {
      const int v = order_[step];
      factor g = eliminate(v, r, prune_[step] ? delta_ : 0.0);
      r.max_width = std::max(r.max_width, g.scope.size());
      r.max_cells = std::max(r.max_cells, g.cells());
      progress(search_progress{step + 1, order_.size(), g.cells(), g.pts.size()});
      check_bytes(step + 1, g);
      if (g.scope.empty()) {
        constants.push_back(frontier{g.pts});
      } else {
        add_factor(std::move(g));
      }
      if (trace_.entries.size() > 2 * compacted_ + o_.compact_after) {
        compact_trace(constants);
        compacted_ = trace_.entries.size();
      }
    }
  }

  const problem& p_;
  const solve_options& o_;
  double delta_ = 0;
  cost_t limit_ = std::numeric_limits<cost_t>::max();  // memory_limit less the offset
  // Sum over the live factors (and the constants made so far) of each one's least
  // memory: a point of a new factor can only be part of a strategy within the limit
  // if its memory plus the least memory of everything else is within it.
  cost_t min_sum_ = 0;
  static constexpr cost_t cost_max = std::numeric_limits<cost_t>::max();
  static constexpr cost_t sat_add(cost_t a, cost_t b) { return a > cost_max - b ? cost_max : a + b; }
  static constexpr cost_t min_memory(const factor& f) {
    cost_t m = cost_max;
    for (auto& q : f.pts) m = std::min(m, q.memory);
    return m;
  }
  std::size_t compacted_ = 0;                      // trace size after the last compaction
  struct memo_point {
    std::uint32_t cv;
    std::int32_t i;       // index in the row span, or -1
    std::uint32_t j;      // index in the staircase span
    std::int16_t sf, af;  // which factors gave the staircase and the rows
  };
  struct memo_entry {
    std::vector<std::int64_t> key;  // shape and costs of the inputs
    std::vector<std::size_t> start;
    std::vector<frontier::point> pts;
    std::vector<memo_point> prov;   // per output point: the input points it sums
    cost_t limit = 0;               // the memory limit it was made under
  };
  static constexpr std::size_t memo_size = 32;  // recent eliminations kept for replay
  std::vector<memo_entry> memo_;
  std::size_t memo_next_ = 0;
  std::vector<bool> kept_;                        // nodes not to eliminate
  std::vector<int> order_;                        // the planned elimination order
  std::vector<bool> prune_;                       // per step: prune under epsilon
  trace trace_;
  std::vector<factor> factors_;
  std::vector<std::vector<std::size_t>> of_var_;  // factor ids per variable (may be dead)
  std::vector<std::vector<std::size_t>> incident_;  // edge indices per node, ascending
  std::vector<std::vector<std::vector<int>>> group_;  // original configs per layout-config
  std::vector<std::size_t> dom_;

  std::size_t bytes_ = 0;  // factor tables held (points and offsets)
  static std::string gib(double b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / double(1ull << 30));
    return buf;
  }
  // Stops the search (before the allocator would) once its tables pass o_.max_bytes.
  constexpr void check_bytes(std::size_t done, const factor& last) {
    if (std::is_constant_evaluated() || o_.max_bytes == 0) return;
    const std::size_t held = bytes_ + bytes_of(last) + trace_.entries.size() * sizeof(trace::entry);
    if (held <= o_.max_bytes) return;
    throw runtime_error("search stopped: it holds " + gib(double(held)) + ", past its limit of " +
                        gib(double(o_.max_bytes)) + ", after eliminating " + std::to_string(done) + " of " +
                        std::to_string(order_.size()) + " ops (last factor: " + std::to_string(last.cells()) +
                        " cells, " + std::to_string(last.pts.size()) + " points; " +
                        std::to_string(trace_.entries.size()) + " back-pointers); use --epsilon, --mode fast, " +
                        "fewer micro-batch counts, or a machine with more memory");
  }
  static constexpr std::size_t bytes_of(const factor& f) {
    return f.pts.size() * sizeof(frontier::point) + f.start.size() * sizeof(std::size_t);
  }
  constexpr void add_factor(factor&& f) {
    bytes_ += bytes_of(f);
    const std::size_t id = factors_.size();
    for (int v : f.scope) of_var_[std::size_t(v)].push_back(id);
    factors_.push_back(std::move(f));
  }

  // Signature comparison of two configs of node v over all incident edges.
  constexpr int compare_configs(std::size_t v, int a, int b) const {
    for (std::size_t k : incident_[v]) {
      const auto& e = p_.edges[k];
      if (std::size_t(e.from) == v) {
        const std::size_t m = p_.nodes[std::size_t(e.to)].configs.size();
        for (std::size_t j = 0; j < m; ++j) {
          const std::size_t ia = std::size_t(a) * m + j, ib = std::size_t(b) * m + j;
          if (e.time[ia] != e.time[ib]) return e.time[ia] < e.time[ib] ? -1 : 1;
          if (e.memory[ia] != e.memory[ib]) return e.memory[ia] < e.memory[ib] ? -1 : 1;
        }
      }
      if (std::size_t(e.to) == v) {
        const std::size_t m = p_.nodes[v].configs.size();
        const std::size_t rows = p_.nodes[std::size_t(e.from)].configs.size();
        for (std::size_t i = 0; i < rows; ++i) {
          const std::size_t ia = i * m + std::size_t(a), ib = i * m + std::size_t(b);
          if (e.time[ia] != e.time[ib]) return e.time[ia] < e.time[ib] ? -1 : 1;
          if (e.memory[ia] != e.memory[ib]) return e.memory[ia] < e.memory[ib] ? -1 : 1;
        }
      }
    }
    return 0;
  }

  constexpr void build() {
    const std::size_t n = p_.nodes.size();
    incident_.assign(n, {});
    for (std::size_t k = 0; k < p_.edges.size(); ++k) {
      incident_[std::size_t(p_.edges[k].from)].push_back(k);
      incident_[std::size_t(p_.edges[k].to)].push_back(k);
    }
    of_var_.assign(n, {});
    group_.assign(n, {});
    dom_.assign(n, 0);
    for (std::size_t v = 0; v < n; ++v) {
      const int m = int(p_.nodes[v].configs.size());
      std::vector<int> idx(std::size_t(m), 0);
      for (int c = 0; c < m; ++c) idx[std::size_t(c)] = c;
      const bool group = o_.group_configs;
      if (group) {
        std::sort(idx.begin(), idx.end(), [&](int a, int b) {
          const int s = compare_configs(v, a, b);
          return s != 0 ? s < 0 : a < b;
        });
      }
      for (std::size_t k = 0; k < idx.size(); ++k) {
        if (k > 0 && group && compare_configs(v, idx[k - 1], idx[k]) == 0)
          group_[v].back().push_back(idx[k]);
        else
          group_[v].push_back({idx[k]});
      }
      dom_[v] = group_[v].size();
      factor f;
      f.scope = {int(v)};
      f.dims = {dom_[v]};
      f.tagged = true;
      f.start.push_back(0);
      for (auto& g : group_[v]) {
        std::vector<frontier::point> pts;
        for (int c : g) {
          auto& cfg = p_.nodes[v].configs[std::size_t(c)];
          pts.push_back({cfg.time, cfg.memory, trace_.leaf(int(v), c)});
        }
        for (auto& q : make_frontier(std::move(pts)).points) f.pts.push_back(q);
        f.start.push_back(f.pts.size());
      }
      add_factor(std::move(f));
    }
    for (auto& e : p_.edges) {
      const std::size_t u = std::size_t(e.from), w = std::size_t(e.to);
      const std::size_t mw = p_.nodes[w].configs.size();
      factor f;
      const bool fwd = u < w;
      // (no ?: on vector prvalues: GCC 12 rejects it in constant expressions)
      f.scope = {int(std::min(u, w)), int(std::max(u, w))};
      f.dims = {dom_[std::size_t(f.scope[0])], dom_[std::size_t(f.scope[1])]};
      f.start.push_back(0);
      for (std::size_t a = 0; a < f.dims[0]; ++a)
        for (std::size_t b = 0; b < f.dims[1]; ++b) {
          const std::size_t gu = fwd ? a : b, gw = fwd ? b : a;
          const std::size_t k = std::size_t(group_[u][gu][0]) * mw + std::size_t(group_[w][gw][0]);
          f.pts.push_back({e.time[k], e.memory[k], -1});
          f.start.push_back(f.pts.size());
        }
      add_factor(std::move(f));
    }
  }

  constexpr std::vector<std::size_t> live_factors(int v) const {
    std::vector<std::size_t> ids;
    for (std::size_t id : of_var_[std::size_t(v)])
      if (factors_[id].alive) ids.push_back(id);
    return ids;
  }

  constexpr std::vector<int> new_scope(int v, const std::vector<std::size_t>& ids) const {
    std::vector<int> s;
    for (std::size_t id : ids)
      for (int u : factors_[id].scope)
        if (u != v) s.push_back(u);
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    return s;
  }

  // Drops the back-pointers no live point can reach, and renumbers the rest. A join
  // only refers to earlier entries, so one backward pass marks everything reachable.
  constexpr void compact_trace(std::vector<frontier>& constants) {
    auto& e = trace_.entries;
    std::vector<bool> live(e.size(), false);
    for (auto& f : factors_)
      if (f.alive)
        for (auto& q : f.pts)
          if (q.tag >= 0) live[std::size_t(q.tag)] = true;
    for (auto& c : constants)
      for (auto& q : c.points)
        if (q.tag >= 0) live[std::size_t(q.tag)] = true;
    for (std::size_t i = e.size(); i-- > 0;)
      if (live[i] && e[i].a >= 0) {
        live[std::size_t(e[i].a)] = true;
        live[std::size_t(e[i].b)] = true;
      }
    std::vector<std::int32_t> to(e.size(), -1);
    std::size_t k = 0;
    for (std::size_t i = 0; i < e.size(); ++i)
      if (live[i]) {
        to[i] = std::int32_t(k);
        e[k++] = e[i].a >= 0 ? trace::entry{to[std::size_t(e[i].a)], to[std::size_t(e[i].b)]} : e[i];
      }
    e.resize(k);
    e.shrink_to_fit();
    for (auto& f : factors_)
      if (f.alive)
        for (auto& q : f.pts)
          if (q.tag >= 0) q.tag = to[std::size_t(q.tag)];
    for (auto& c : constants)
      for (auto& q : c.points)
        if (q.tag >= 0) q.tag = to[std::size_t(q.tag)];
  }

  // The elimination order, planned on scopes alone before any frontier is computed, so
  // that the epsilon budget can be split over a known number of pruning steps.
  // Reductions (a new factor over at most two nodes) come first, the cheapest first, where
  // a factor's frontier size is estimated by the number of nodes folded into it; then the
  // node whose factor has the fewest nodes (the dynamic program's width). The factors over
  // at most one node (what is carried from the folded part of the graph to the rest) are
  // the ones pruned under epsilon. Returns the most pruned factors on any path of the
  // elimination tree.
  constexpr std::size_t plan() {
    const std::size_t n = p_.nodes.size();
    struct sym {
      std::vector<int> scope;
      double weight;
      std::size_t depth;
      bool alive;
    };
    std::vector<sym> fs;
    std::vector<std::vector<std::size_t>> of(n);
    std::vector<std::size_t> live(n, 0);  // live factors per node
    for (const auto& f : factors_) {
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
      for (int u : scope) cells *= double(dom_[std::size_t(u)]);
      for (std::size_t id : ids) {
        const double w = fs[id].weight;
        total += w;
        if (w > largest) { second = largest; largest = w; }
        else if (w > second) second = w;
      }
      const double work = cells * (double(dom_[v]) * (1 + second) + total);
      const double rank = scope.size() <= 2 ? 0.0 : double(scope.size());
      return rank * 1e200 + std::min(work, 1e199);
    };
    std::vector<double> score(n, 0);
    std::vector<bool> done(n, false);
    std::vector<int> scope;
    std::vector<std::size_t> ids;
    std::size_t steps = 0;
    for (std::size_t v = 0; v < n; ++v) {
      done[v] = kept_[v];
      if (!kept_[v]) {
        score[v] = estimate(v, scope, ids);
        ++steps;
      }
    }
    order_.clear();
    prune_.clear();
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
      order_.push_back(int(v));
      prune_.push_back(pruned);
      const std::vector<int> touched = scope;
      for (int u : touched) {
        of[std::size_t(u)].push_back(fs.size());
        ++live[std::size_t(u)];
      }
      fs.push_back(std::move(g));
      for (int u : touched)
        if (!done[std::size_t(u)]) {
          score[std::size_t(u)] = live[std::size_t(u)] > crowded ? double(live[std::size_t(u)]) * 1e200
                                                                  : estimate(std::size_t(u), scope, ids);
          heap.push_back({score[std::size_t(u)], std::size_t(u)});
          std::push_heap(heap.begin(), heap.end(), std::greater<entry>{});
        }
    }
    return most;
  }

  // Keeps only the local configs `keep` of variable u, in every live factor.
  constexpr void restrict_domain(int u, const std::vector<std::size_t>& keep) {
    for (std::size_t id : live_factors(u)) {
      factor& f = factors_[id];
      const std::size_t pos =
          std::size_t(std::find(f.scope.begin(), f.scope.end(), u) - f.scope.begin());
      std::size_t inner = 1;
      for (std::size_t i = pos + 1; i < f.dims.size(); ++i) inner *= f.dims[i];
      const std::size_t outer = f.cells() / (inner * f.dims[pos]);
      factor g;
      g.scope = f.scope;
      g.dims = f.dims;
      g.dims[pos] = keep.size();
      g.tagged = f.tagged;
      g.start.push_back(0);
      for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t k : keep)
          for (std::size_t i = 0; i < inner; ++i) {
            const std::size_t cell = (o * f.dims[pos] + k) * inner + i;
            for (std::size_t q = f.start[cell]; q < f.start[cell + 1]; ++q) g.pts.push_back(f.pts[q]);
            g.start.push_back(g.pts.size());
          }
      f = std::move(g);
    }
    std::vector<std::vector<int>> groups;
    for (std::size_t k : keep) groups.push_back(group_[std::size_t(u)][k]);
    group_[std::size_t(u)] = std::move(groups);
    dom_[std::size_t(u)] = keep.size();
  }

  // Halves the domain of u: keeps the configs with the least time in u's own factors,
  // and the one with the least memory.
  constexpr void halve_domain(int u) {
    const std::size_t d = dom_[std::size_t(u)];
    std::vector<cost_t> best_time(d, 0), best_mem(d, 0);
    for (std::size_t id : live_factors(u)) {
      const factor& f = factors_[id];
      if (f.scope.size() != 1) continue;
      for (std::size_t c = 0; c < d; ++c) {
        cost_t t = -1, m = -1;
        for (std::size_t q = f.start[c]; q < f.start[c + 1]; ++q) {
          if (t < 0 || f.pts[q].time < t) t = f.pts[q].time;
          if (m < 0 || f.pts[q].memory < m) m = f.pts[q].memory;
        }
        best_time[c] += t < 0 ? cost_t(1) << 60 : t;
        best_mem[c] += m < 0 ? cost_t(1) << 60 : m;
      }
    }
    std::vector<std::size_t> order(d, 0);
    for (std::size_t c = 0; c < d; ++c) order[c] = c;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return best_time[a] != best_time[b] ? best_time[a] < best_time[b] : a < b;
    });
    std::size_t least_mem = 0;
    for (std::size_t c = 1; c < d; ++c)
      if (best_mem[c] < best_mem[least_mem]) least_mem = c;
    std::vector<std::size_t> keep(order.begin(), order.begin() + std::ptrdiff_t((d + 1) / 2));
    if (std::find(keep.begin(), keep.end(), least_mem) == keep.end()) keep.back() = least_mem;
    std::sort(keep.begin(), keep.end());
    restrict_domain(u, keep);
  }

  constexpr factor eliminate(int v, frontier_result& r, double delta) {
    auto ids = live_factors(v);
    std::vector<int> s = new_scope(v, ids);
    auto cells_of = [&] {
      std::size_t c = 1;
      for (int u : s) c *= dom_[std::size_t(u)];
      return c;
    };
    while (cells_of() > o_.width_limit) {
      int widest = -1;
      for (int u : s)
        if (dom_[std::size_t(u)] > 1 && (widest < 0 || dom_[std::size_t(u)] > dom_[std::size_t(widest)]))
          widest = u;
      if (widest < 0) break;
      if (!r.width_fallback) {
        r.note = "width limit reached: the configs of some nodes were restricted to the best "
                 "half (least time, plus the least-memory one) before elimination; the frontier "
                 "is not exact";
      }
      r.width_fallback = true;
      halve_domain(widest);
    }
    // untagged factors first, so that tags are joined as late as possible
    {
      std::vector<std::size_t> sorted;
      for (int pass = 0; pass < 2; ++pass)
        for (std::size_t id : ids)
          if (factors_[id].tagged == (pass == 1)) sorted.push_back(id);
      ids.swap(sorted);
    }
    const std::size_t k = s.size(), m = ids.size();
    // strides[f][i]: stride of s[i] in factor f's table; vstride[f]: stride of v
    std::vector<std::vector<std::size_t>> strides(m, std::vector<std::size_t>(k, 0));
    std::vector<std::size_t> vstride(m, 0), off(m, 0);
    for (std::size_t f = 0; f < m; ++f) {
      const factor& fa = factors_[ids[f]];
      std::size_t st = 1;
      for (std::size_t j = fa.scope.size(); j-- > 0;) {
        const int u = fa.scope[j];
        if (u == v) vstride[f] = st;
        for (std::size_t i = 0; i < k; ++i)
          if (s[i] == u) strides[f][i] = st;
        st *= fa.dims[j];
      }
    }
    factor g;
    g.scope = s;
    g.tagged = true;
    for (int u : s) g.dims.push_back(dom_[std::size_t(u)]);
    const std::size_t cells = cells_of();
    g.start.reserve(cells + 1);
    g.start.push_back(0);
    std::vector<std::size_t> idx(k, 0);
    const std::size_t dv = dom_[std::size_t(v)];
    // The memory limit of this factor's points: the search's limit less the least
    // memory of every other live factor (exact: all costs are non-negative).
    cost_t joined_min = 0;
    for (std::size_t id : ids) joined_min = sat_add(joined_min, min_memory(factors_[id]));
    // min_sum_ is a lower bound (the width fallback may raise a factor's least memory
    // after it was counted), so the difference is clamped at 0, which stays exact.
    const cost_t rest = min_sum_ == cost_max || joined_min == cost_max ? cost_max
                                                                        : std::max<cost_t>(0, min_sum_ - joined_min);
    const cost_t lim = rest > limit_ ? -1 : limit_ - rest;
    // An elimination whose inputs have the same shape and costs as a recent one (the
    // same op of another layer of a repeated block) has the same output costs, made from
    // the same input points: replay it, joining this elimination's back-pointers.
    memo_entry rec;
    rec.key = {std::int64_t(dv), std::int64_t(k), std::int64_t(m), std::bit_cast<std::int64_t>(delta)};
    rec.limit = lim;
    for (std::size_t i = 0; i < k; ++i) rec.key.push_back(std::int64_t(g.dims[i]));
    for (std::size_t f = 0; f < m; ++f) {
      const factor& fa = factors_[ids[f]];
      rec.key.push_back(std::int64_t(vstride[f]));
      for (std::size_t i = 0; i < k; ++i) rec.key.push_back(std::int64_t(strides[f][i]));
      rec.key.push_back(std::int64_t(fa.pts.size()));
      for (std::size_t x : fa.start) rec.key.push_back(std::int64_t(x));
      for (auto& q : fa.pts) {
        rec.key.push_back(q.time);
        rec.key.push_back(q.memory);
      }
    }
    const memo_entry* hit = nullptr;
    for (auto& e : memo_)
      if (e.key == rec.key && e.limit >= lim) hit = &e;  // a looser limit only keeps extra points
    bool any_explicit = false;
    if (hit) ++r.replayed;
    auto tag_of = [&](std::size_t cv, std::int32_t i, std::size_t j, int sf, int af) {
      std::int32_t tag = -1;
      for (std::size_t f = 0; f < m; ++f) {
        if (int(f) == sf || int(f) == af) continue;
        const factor& fa = factors_[ids[f]];
        tag = trace_.join(tag, fa.pts[fa.start[off[f] + cv * vstride[f]]].tag);
      }
      if (af >= 0) {
        const factor& fa = factors_[ids[std::size_t(af)]];
        tag = trace_.join(tag, fa.pts[fa.start[off[std::size_t(af)] + cv * vstride[std::size_t(af)]] + std::size_t(i)].tag);
      }
      const factor& fs = factors_[ids[std::size_t(sf)]];
      return trace_.join(tag, fs.pts[fs.start[off[std::size_t(sf)] + cv * vstride[std::size_t(sf)]] + j].tag);
    };
    cell_merger merge;
    for (std::size_t c = 0; c < cells; ++c) {
      if (hit) {
        for (std::size_t q = hit->start[c]; q < hit->start[c + 1]; ++q) {
          if (hit->pts[q].memory > lim) continue;
          const memo_point& mp = hit->prov[q];
          g.pts.push_back({hit->pts[q].time, hit->pts[q].memory, tag_of(mp.cv, mp.i, mp.j, mp.sf, mp.af)});
        }
      } else {
        merge.begin(dv);
        for (std::size_t cv = 0; cv < dv; ++cv) {
          merge.spans.clear();
          for (std::size_t f = 0; f < m; ++f) {
            const factor& fa = factors_[ids[f]];
            const std::size_t at = off[f] + cv * vstride[f];
            merge.spans.push_back({fa.pts.data() + fa.start[at], fa.start[at + 1] - fa.start[at]});
          }
          merge.add(cv, trace_);
        }
        merge.run(delta, lim);
        for (std::size_t q = 0; q < merge.out.size(); ++q) {
          const auto& x = merge.out[q];
          const auto& row = merge.rows[x.row];
          const auto& pl = merge.plans[row.cv];
          std::int32_t tag = -1;
          if (pl.explicit_a) {
            any_explicit = true;
            tag = trace_.join(merge.pool[pl.a_off + std::size_t(row.i)].tag, pl.s.p[x.j].tag);
          } else {
            tag = tag_of(row.cv, row.i, x.j, pl.sf, pl.af);
            rec.prov.push_back({std::uint32_t(row.cv), row.i, x.j, std::int16_t(pl.sf), std::int16_t(pl.af)});
          }
          g.pts.push_back({x.time, x.memory, tag});
        }
      }
      g.start.push_back(g.pts.size());
      // odometer over s (last index fastest), offsets follow
      for (std::size_t i = k; i-- > 0;) {
        ++idx[i];
        for (std::size_t f = 0; f < m; ++f) off[f] += strides[f][i];
        if (idx[i] < g.dims[i]) break;
        for (std::size_t f = 0; f < m; ++f) off[f] -= g.dims[i] * strides[f][i];
        idx[i] = 0;
      }
    }
    if (!hit && !any_explicit) {
      rec.start = g.start;
      rec.pts = g.pts;
      if (memo_.size() < memo_size) memo_.push_back(std::move(rec));
      else memo_[memo_next_] = std::move(rec);
      memo_next_ = (memo_next_ + 1) % memo_size;
    }
    for (std::size_t id : ids) {
      factors_[id].alive = false;
      bytes_ -= std::min(bytes_, bytes_of(factors_[id]));
      factors_[id].pts = {};
      factors_[id].start = {};
    }
    min_sum_ = rest == cost_max ? cost_max : sat_add(rest, min_memory(g));
    return g;
  }
};

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

/// The frontier of `p` conditioned on the configs of the nodes `keep` (distinct, in range):
/// every other node is eliminated, and cell (d_1, ..., d_m) holds the frontier of the
/// strategies with kept node i at a config of its layout-config d_i (see `configs`). Used to fold a repeated block into its
/// frontier per boundary layout (search/repeated.hpp). Throws as `solve` does.
inline conditioned_frontier solve_conditioned(const problem& p, const std::vector<int>& keep, const solve_options& o = {}) {
  validate(p);
  detail::require(o.epsilon >= 0, "solve: epsilon must be >= 0 (0 means exact)");
  for (int v : keep)
    detail::require(v >= 0 && std::size_t(v) < p.nodes.size(), "solve_conditioned: a kept node is out of range");
  solve_options lim = o;
  if (lim.max_bytes == 0) lim.max_bytes = detail::default_max_bytes();
  detail::eliminator e(p, lim);
  e.keep(keep);
  auto quiet = [](const search_progress&) {};
  return e.run_kept(quiet, keep);
}

/// The Pareto frontier of `p`; see the overload with a progress callback.
constexpr frontier_result solve(const problem& p, const solve_options& o = {}) {
  return solve(p, o, [](const search_progress&) {});
}

}  // namespace tensoropt
