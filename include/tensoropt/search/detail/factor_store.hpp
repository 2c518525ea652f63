// The factor tables of the exact search (search/solve.hpp): one factor per node (its
// configs' costs) and one per edge (each config pair's cost), each a table over the
// configs of its nodes whose cells are frontiers (CSR: `start` offsets into `pts`).
//
// Grouped configs. Configs of a node whose edge rows and columns are all identical (they
// differ only in switches such as recompute or optimizer sharding) are grouped into one
// layout-config whose node cell is the small frontier of the group (`build`); a node with
// classes groups only configs of one class. Exact, and it cuts the cubic loops of the
// eliminations.
//
// Bookkeeping the eliminations share: which factors mention a node (`live_factors`), the
// scope a join makes (`new_scope`), the bytes held against `max_bytes` (`check_bytes`
// stops the search with the sizes it reached, before the allocator would), compaction of
// the back-pointer arena (`compact_trace`: a join refers only to earlier entries, so one
// backward pass marks everything reachable from a live point), and the width fallback's
// domain restriction (`halve_domain`: the best half of a node's configs by least time in
// its own factors, plus the least-memory one; no longer exact, and said so by the caller),
// the wanted cells of a conditioned table (`cell_class`, `wanted`: the nodes with classes
// share one), and the pruning by known strategies (`drop_beaten`: a point is dropped when a known
// strategy is strictly better than it plus the least time and memory of every other factor).
#pragma once
#include <algorithm>
#include <iterator>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>
#include "../frontier.hpp"
#include "../problem.hpp"
#include "../solve_options.hpp"

namespace tensoropt::detail {

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

/// The tables and their bookkeeping; the eliminations are in detail/eliminator.hpp.
class factor_store {
 public:
  constexpr factor_store(const problem& p, const solve_options& o) : p_(p), o_(o) {}

 protected:
  const problem& p_;
  const solve_options& o_;
  static constexpr cost_t cost_max = std::numeric_limits<cost_t>::max();
  static constexpr cost_t sat_add(cost_t a, cost_t b) { return a > cost_max - b ? cost_max : a + b; }
  static constexpr cost_t min_memory(const factor& f) {
    cost_t m = cost_max;
    for (auto& q : f.pts) m = std::min(m, q.memory);
    return m;
  }
  std::size_t compacted_ = 0;                      // trace size after the last compaction
  std::vector<std::int32_t> trace_to_;            // compact_trace's renumbering, kept
  std::vector<bool> kept_;                        // nodes not to eliminate
  trace trace_;
  std::vector<factor> factors_;
  std::vector<std::vector<std::size_t>> of_var_;  // factor ids per variable (may be dead)
  std::vector<std::vector<std::size_t>> incident_;  // edge indices per node, ascending
  std::vector<std::vector<std::vector<int>>> group_;  // original configs per layout-config
  std::vector<std::size_t> dom_;

  std::size_t bytes_ = 0;  // factor tables held (points and offsets)
  // The point storage of dead factors, kept for the next factors (spare_bytes_: its
  // capacity). A search makes and drops tables of millions of points one after the
  // other; given back to the allocator, each was mapped and zeroed again by the kernel
  // (perf: 20 % of wresnet-13b's planning on 2 threads in clear_page). At most two are
  // kept, the largest, and they count against max_bytes. Measured (`plan_bench --only
  // wresnet-13b --threads 2 --epsilon 0.05`, the builds without and with them one after
  // the other): 133.1 -> 125.3 s wall, 46.1 -> 33.0 s of system time.
  static constexpr std::size_t max_spares = 2;
  std::vector<std::vector<frontier::point>> spare_pts_;
  std::size_t spare_bytes_ = 0;
  constexpr void recycle_points(std::vector<frontier::point>&& v) {
    if (v.capacity() == 0) return;
    v.clear();
    spare_pts_.push_back(std::move(v));
    spare_bytes_ += spare_pts_.back().capacity() * sizeof(frontier::point);
    if (spare_pts_.size() > max_spares) {  // drop the smallest
      std::size_t at = 0;
      for (std::size_t i = 1; i < spare_pts_.size(); ++i)
        if (spare_pts_[i].capacity() < spare_pts_[at].capacity()) at = i;
      spare_bytes_ -= spare_pts_[at].capacity() * sizeof(frontier::point);
      spare_pts_.erase(spare_pts_.begin() + std::ptrdiff_t(at));
    }
  }
  /// Empty point storage for a new factor: the largest spare, if any.
  constexpr std::vector<frontier::point> spare_points() {
    if (spare_pts_.empty()) return {};
    std::size_t at = 0;
    for (std::size_t i = 1; i < spare_pts_.size(); ++i)
      if (spare_pts_[i].capacity() > spare_pts_[at].capacity()) at = i;
    std::vector<frontier::point> v = std::move(spare_pts_[at]);
    spare_pts_.erase(spare_pts_.begin() + std::ptrdiff_t(at));
    spare_bytes_ -= v.capacity() * sizeof(frontier::point);
    return v;
  }
  static std::string gib(double b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / double(1ull << 30));
    return buf;
  }
  // Stops the search (before the allocator would) once its tables pass o_.max_bytes.
  constexpr void check_bytes(std::size_t done, std::size_t total, const factor& last) {
    if (std::is_constant_evaluated() || o_.max_bytes == 0) return;
    const std::size_t held =
        bytes_ + spare_bytes_ + bytes_of(last) + trace_.entries.size() * sizeof(trace::entry) +
        trace_to_.capacity() * sizeof(std::int32_t);
    if (held <= o_.max_bytes) return;
    throw runtime_error("search stopped: it holds " + gib(double(held)) + ", past its limit of " +
                        gib(double(o_.max_bytes)) + ", after eliminating " + std::to_string(done) + " of " +
                        std::to_string(total) + " ops (last factor: " + std::to_string(last.cells()) +
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
    // a node with classes groups only configs of one class (eliminator::classes)
    if (class_.size() == p_.nodes.size() && !class_[v].empty() && class_[v][std::size_t(a)] != class_[v][std::size_t(b)])
      return class_[v][std::size_t(a)] < class_[v][std::size_t(b)] ? -1 : 1;
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
    // to[i]: -1 for an entry no live point reaches, else (after the marking) 0 and then its
    // new index; kept between compactions (its capacity), like the arena's
    auto& to = trace_to_;
    to.assign(e.size(), -1);
    for (auto& f : factors_)
      if (f.alive)
        for (auto& q : f.pts)
          if (q.tag >= 0) to[std::size_t(q.tag)] = 0;
    for (auto& c : constants)
      for (auto& q : c.points)
        if (q.tag >= 0) to[std::size_t(q.tag)] = 0;
    for (std::size_t i = e.size(); i-- > 0;)
      if (to[i] >= 0 && e[i].a >= 0) {
        to[std::size_t(e[i].a)] = 0;
        to[std::size_t(e[i].b)] = 0;
      }
    std::size_t k = 0;
    for (std::size_t i = 0; i < e.size(); ++i)
      if (to[i] >= 0) {
        to[i] = std::int32_t(k);
        e[k++] = e[i].a >= 0 ? trace::entry{to[std::size_t(e[i].a)], to[std::size_t(e[i].b)]} : e[i];
      }
    e.resize(k);  // the capacity stays: the arena grows back to it (a new one was mapped and zeroed)
    for (auto& f : factors_)
      if (f.alive)
        for (auto& q : f.pts)
          if (q.tag >= 0) q.tag = to[std::size_t(q.tag)];
    for (auto& c : constants)
      for (auto& q : c.points)
        if (q.tag >= 0) q.tag = to[std::size_t(q.tag)];
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


  std::vector<frontier::point> known_;      // o_.known as a staircase
  static constexpr cost_t min_time(const factor& f) {
    cost_t m = cost_max;
    for (auto& q : f.pts) m = std::min(m, q.time);
    return m;
  }
  // Drops the points of g that a known strategy beats strictly even after the least cost
  // of everything else (rest_time, rest_memory, memory_offset) is added to them.
  constexpr void drop_beaten(factor& g, cost_t rest_time, cost_t rest_memory) const {
    if (known_.empty() || rest_time == cost_max || rest_memory == cost_max) return;
    std::size_t k = 0, at = 0;
    for (std::size_t c = 0; c < g.cells(); ++c) {
      const std::size_t end = g.start[c + 1];
      for (std::size_t q = at; q < end; ++q) {
        const cost_t t = g.pts[q].time + rest_time, m = g.pts[q].memory + rest_memory + p_.memory_offset;
        // the known point of least time among those with memory <= m
        auto it = std::upper_bound(known_.begin(), known_.end(), m,
                                   [](cost_t x, const frontier::point& u) { return x < u.memory; });
        const bool beaten = it != known_.begin() && (std::prev(it)->time < t || (std::prev(it)->time == t && std::prev(it)->memory < m));
        if (!beaten) g.pts[k++] = g.pts[q];
      }
      at = end;
      g.start[c + 1] = k;
    }
    g.pts.resize(k);
  }

  std::vector<std::vector<int>> class_;  // per node: class per config, or empty (see `classes`)
  // The class of layout-config d of node u (build groups a node with classes by class, and
  // a width fallback keeps whole groups, so every config of the group has it).
  constexpr int class_of(int u, std::size_t d) const {
    return class_[std::size_t(u)][std::size_t(group_[std::size_t(u)][d][0])];
  }
  static constexpr int no_class = -1, no_common = -2;
  // The class every node of `scope` with classes takes under the assignment idx of
  // layout-configs: no_class when none has classes, no_common when they differ.
  constexpr int cell_class(const std::vector<int>& scope, const std::vector<std::size_t>& idx) const {
    if (class_.size() != p_.nodes.size()) return no_class;
    int c = no_class;
    for (std::size_t i = 0; i < scope.size(); ++i) {
      if (class_[std::size_t(scope[i])].empty()) continue;
      const int mine = class_of(scope[i], idx[i]);
      if (c != no_class && c != mine) return no_common;
      c = mine;
    }
    return c;
  }
  // Whether the assignment idx of layout-configs to `scope` is wanted: the nodes of the
  // scope with classes share one.
  constexpr bool wanted(const std::vector<int>& scope, const std::vector<std::size_t>& idx) const {
    return cell_class(scope, idx) != no_common;
  }
};

}  // namespace tensoropt::detail
