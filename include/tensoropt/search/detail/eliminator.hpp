// The eliminations of the exact search (search/solve.hpp): variable elimination over the
// factor graph with frontiers in place of numbers.
//
// Eliminating node v joins every live factor that mentions v into one new factor over v's
// neighbours, whose cell for each assignment of the neighbours is
//     | over cv of (+) of the joined factors' cells at cv,
// computed by a heap merge (detail/cell_merge.hpp). Under epsilon every new factor's cells
// are pruned with delta (see solve.hpp for the bound). Partial strategies whose memory
// plus the least memory of every other live factor exceeds the memory limit are dropped
// (exact: every cost is non-negative).
//
// Replay. An elimination whose inputs have the same shape and costs as one of the last 32
// (the same op of another layer of a repeated block) has the same output costs, made from
// the same input points: its output is replayed, joining this elimination's back-pointers
// (`memo_`), instead of merged again.
//
// Known strategies (solve_options::known) drop the points of each new factor that one of
// them beats strictly after the least time and memory of every other factor are added
// (factor_store's `drop_beaten`), after the replay record is made, so replays stay exact.
//
// `run` returns the frontier of the whole problem with one strategy per point (recovered
// from the back-pointers); `run_kept` leaves the nodes given to `keep` and returns the
// table of frontiers over their layout-configs (solve_conditioned).
//
// Classes (`classes`, solve_conditioned's classes and tied nodes): only strategies whose
// nodes with classes share one class are wanted. A new factor's cell whose nodes with
// classes share none is left empty, and when v has classes, so is its config cv wherever
// cv shares no class with the cell's nodes; nodes with classes that are not kept go last
// in the order (elimination_order.hpp), so that each meets the kept ones' classes.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include "../frontier.hpp"
#include "../frontier_result.hpp"
#include "../problem.hpp"
#include "../solve_options.hpp"
#include "cell_merge.hpp"
#include "elimination_order.hpp"
#include "factor_store.hpp"

namespace tensoropt::detail {

class eliminator : factor_store {
 public:
  constexpr eliminator(const problem& p, const solve_options& o) : factor_store(p, o) {}
  /// Nodes left in the result instead of eliminated (see `solve_conditioned`).
  constexpr void keep(const std::vector<int>& nodes) {
    kept_.assign(p_.nodes.size(), false);
    for (int v : nodes) kept_[std::size_t(v)] = true;
  }
  /// Only strategies whose nodes with classes all take configs of one class are wanted:
  /// `cls[c]` (>= 0) is the class of config c of node `v` (see `solve_conditioned`). A node
  /// with classes that is eliminated is held to them against the nodes with classes of its
  /// elimination's scope.
  constexpr void classes(int v, const std::vector<int>& cls) {
    if (class_.size() != p_.nodes.size()) class_.assign(p_.nodes.size(), {});
    class_[std::size_t(v)] = cls;
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
    if (class_.size() != p_.nodes.size()) class_.assign(p_.nodes.size(), {});
    std::size_t cells = 1;
    for (auto d : out.dims) cells *= d;
    std::vector<std::size_t> idx(out.kept.size(), 0);
    out.start.push_back(0);
    for (std::size_t c = 0; c < cells; ++c) {
      frontier f = wanted(out.kept, idx) ? total : frontier{};
      for (std::size_t id : live) {
        const factor& fa = factors_[id];
        std::size_t at = 0;
        for (std::size_t j = 0; j < fa.scope.size(); ++j) {
          const std::size_t pos =
              std::size_t(std::find(out.kept.begin(), out.kept.end(), fa.scope[j]) - out.kept.begin());
          at = at * fa.dims[j] + idx[pos];
        }
        if (f.points.empty()) break;
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
    min_time_sum_ = 0;
    for (auto& f : factors_)
      if (f.alive) {
        min_sum_ = sat_add(min_sum_, min_memory(f));
        min_time_sum_ = sat_add(min_time_sum_, min_time(f));
      }
    known_ = make_frontier(o_.known).points;
    std::vector<bool> late(n, false), classed(n, false);
    if (class_.size() == n)
      for (std::size_t v = 0; v < n; ++v) {
        classed[v] = !class_[v].empty();
        late[v] = !kept_[v] && classed[v];
      }
    // An if, not ?: : GCC 12's constant evaluator rejects the conditional's temporaries
    // ("use of allocated storage after deallocation"; test/static/plan_constexpr_frontier).
    elimination_order planned;
    if (std::is_constant_evaluated()) planned = plan_elimination(factors_, dom_, kept_, late, classed);
    else planned = plan_elimination_memo(factors_, dom_, kept_, late, classed);
    order_ = std::move(planned.order);
    prune_ = std::move(planned.prune);
    const std::size_t depth = planned.depth;
    r.prune_depth = depth;
    delta_ = o_.epsilon > 0 && depth > 0 ? (2 * o_.epsilon / (2 + o_.epsilon)) / double(depth) : 0.0;
    for (std::size_t step = 0; step < order_.size(); ++step) {
      const int v = order_[step];
      factor g = eliminate(v, r, prune_[step] ? delta_ : 0.0);
      r.max_width = std::max(r.max_width, g.scope.size());
      r.max_cells = std::max(r.max_cells, g.cells());
      progress(search_progress{step + 1, order_.size(), g.cells(), g.pts.size()});
      check_bytes(step + 1, order_.size(), g);
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


  double delta_ = 0;
  cost_t limit_ = std::numeric_limits<cost_t>::max();  // memory_limit less the offset
  // Sum over the live factors (and the constants made so far) of each one's least
  // memory: a point of a new factor can only be part of a strategy within the limit
  // if its memory plus the least memory of everything else is within it.
  cost_t min_sum_ = 0;
  cost_t min_time_sum_ = 0;                 // the same for time (for the known strategies' test)
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
  memo_entry memo_scratch_;  // the record of the elimination under way
  std::size_t memo_next_ = 0;
  std::vector<int> order_;                        // the planned elimination order
  std::vector<bool> prune_;                       // per step: prune under epsilon

  // Factors over one scope, two or more of them with several points in a cell (parallel
  // paths between the same nodes, as the branches of an Inception module between its
  // input and its concat), are joined first into one factor: each cell the exact
  // (unpruned) staircase of their sum, back-pointers joined. Exact, and no prune is
  // added. Left to the elimination, that sum is made once per cell of the new factor and
  // config of v (the cell merger's explicit product), so as many times over as the new
  // scope has configs outside theirs (and, as rows of a merge, it was slower: the module's
  // input against the carried frontier took 21M heap pops, 4.2M after). Measured on
  // inception-v3 (4 x 4 V100-16GB, k = 8, one thread): epsilon 0.05 10.3 -> 3.2 s, exact
  // 24.1 -> 19.2 s, the same costs (strategies may differ between equal-cost points). A
  // sum of two multi-point factors alone is merged pruned, without a product: not joined.
  constexpr std::vector<std::size_t> join_parallel(std::vector<std::size_t> ids, frontier_result& r) {
    auto multi = [&](std::size_t id) { return factors_[id].pts.size() > factors_[id].cells(); };
    // only where the merge would build an explicit product: three or more joined factors
    // with several points in a cell (a sum of two is merged pruned, without one)
    std::size_t multis = 0;
    for (std::size_t id : ids) multis += multi(id) ? 1 : 0;
    if (multis < 3) return ids;
    std::vector<bool> taken(ids.size(), false);
    std::vector<std::size_t> out;
    std::vector<candidate> cur, tmp, span_copy;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (taken[i]) continue;
      taken[i] = true;
      std::vector<std::size_t> group{ids[i]};
      if (multi(ids[i]))
        for (std::size_t j = i + 1; j < ids.size(); ++j)
          if (!taken[j] && multi(ids[j]) && factors_[ids[j]].scope == factors_[ids[i]].scope) {
            taken[j] = true;
            group.push_back(ids[j]);
          }
      if (group.size() == 1) {
        out.push_back(ids[i]);
        continue;
      }
      factor joined;
      joined.scope = factors_[group[0]].scope;
      joined.dims = factors_[group[0]].dims;
      joined.tagged = false;
      cost_t old_memory = 0, old_time = 0;
      for (std::size_t id : group) {
        joined.tagged = joined.tagged || factors_[id].tagged;
        old_memory = sat_add(old_memory, min_memory(factors_[id]));
        old_time = sat_add(old_time, min_time(factors_[id]));
      }
      const std::size_t cells = factors_[group[0]].cells();
      joined.start.reserve(cells + 1);
      joined.start.push_back(0);
      for (std::size_t x = 0; x < cells; ++x) {
        cur.assign(1, candidate{0, 0, -1, -1});
        for (std::size_t id : group) {
          const factor& f = factors_[id];
          const std::size_t n = f.start[x + 1] - f.start[x];
          if (n == 0) {
            cur.clear();
            break;
          }
          add_span(cur, f.pts.data() + f.start[x], n, tmp, span_copy, trace_);
        }
        for (auto& c : cur)
          if (c.memory <= limit_) joined.pts.push_back({c.time, c.memory, trace_.join(c.ta, c.tb)});
        joined.start.push_back(joined.pts.size());
      }
      for (std::size_t id : group) {
        factors_[id].alive = false;
        bytes_ -= std::min(bytes_, bytes_of(factors_[id]));
        factors_[id].pts = {};
        factors_[id].start = {};
      }
      // the least costs only grow (each cell's least is at least the sum of the factors' least)
      // (min_sum_ may be below the factors' current least: clamped, as in eliminate)
      if (min_sum_ != cost_max && old_memory != cost_max)
        min_sum_ = sat_add(std::max<cost_t>(0, min_sum_ - old_memory), min_memory(joined));
      if (min_time_sum_ != cost_max && old_time != cost_max)
        min_time_sum_ = sat_add(std::max<cost_t>(0, min_time_sum_ - old_time), min_time(joined));
      out.push_back(factors_.size());
      add_factor(std::move(joined));
      ++r.parallel_joins;
    }
    return out;
  }

  constexpr factor eliminate(int v, frontier_result& r, double delta) {
    auto ids = join_parallel(live_factors(v), r);
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
    g.pts = spare_points();
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
    cost_t joined_tmin = 0;
    for (std::size_t id : ids) joined_tmin = sat_add(joined_tmin, min_time(factors_[id]));
    const cost_t rest_time = min_time_sum_ == cost_max || joined_tmin == cost_max
                                 ? cost_max
                                 : std::max<cost_t>(0, min_time_sum_ - joined_tmin);
    // An elimination whose inputs have the same shape and costs as a recent one (the
    // same op of another layer of a repeated block) has the same output costs, made from
    // the same input points: replay it, joining this elimination's back-pointers.
    // the record is built in memo_scratch_, whose buffers (and those of the slot it replaces,
    // swapped in) are reused: the key holds every input point
    memo_entry& rec = memo_scratch_;
    rec.prov.clear();
    // sized before it is filled: grown by doubling, a key of millions of points was copied
    // into freshly mapped pages several times per elimination
    std::size_t key_size = 4 + k;
    for (std::size_t f = 0; f < m; ++f)
      key_size += 2 + k + factors_[ids[f]].start.size() + 2 * factors_[ids[f]].pts.size();
    rec.key.clear();
    rec.key.reserve(key_size);
    rec.key.insert(rec.key.end(), {std::int64_t(dv), std::int64_t(k), std::int64_t(m), std::bit_cast<std::int64_t>(delta)});
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
    // Nodes with classes (see `classes`): a cell of the new factor whose nodes with classes
    // differ in class is unwanted and stays empty (no strategy through it is wanted: kept
    // nodes are never eliminated, and every other node is held to its class when it is
    // eliminated), and so is a config cv of v whose class is not the cell's. The cells then
    // depend on the scope, which the memo key does not hold: no replay.
    const bool any_classes = class_.size() == p_.nodes.size();
    auto has_classes = [&](int u) { return any_classes && !class_[std::size_t(u)].empty(); };
    std::size_t classed = has_classes(v) ? 1 : 0;
    for (int u : s) classed += has_classes(u) ? 1 : 0;
    const bool masked = classed >= 2;
    const bool v_classed = masked && has_classes(v);
    int cell = no_class;  // the cell's class (cell_class)
    auto cv_wanted = [&](std::size_t cv) { return !v_classed || cell == no_class || class_of(v, cv) == cell; };
    const memo_entry* hit = nullptr;
    if (!masked)
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
    // A single-objective search (every time 0, so every frontier one point, as the
    // planners' least-memory and weighted searches make them): each cell is the least-memory
    // sum over cv (ties: the smaller cv), which the merge would keep alone; it is found by
    // one pass over cv (cell_merger's rows and plans are not built). Taken only when every
    // joined factor has at most one point per cell, each of time 0, where it always holds.
    // Measured on the megatron-1t pipeline frontier (whose job bounds are such searches):
    // the dense rows below took its job bounds from 113 to 74 s.
    bool single = true;
    for (std::size_t f = 0; f < m && single; ++f) {
      const factor& fa = factors_[ids[f]];
      for (std::size_t x = 0; x + 1 < fa.start.size() && single; ++x) single = fa.start[x + 1] - fa.start[x] <= 1;
      for (std::size_t q = 0; q < fa.pts.size() && single; ++q) single = fa.pts[q].time == 0;
    }
    // The single-objective pass reads dense copies of the joined factors: one memory per
    // cell (`empty_cell` where a cell has no point) with v innermost, so that the pass over
    // cv reads each factor's row in order; acc holds the sums over the factors.
    // (A value at or above empty_cell, which a validated problem cannot reach, takes the
    // merge instead.)
    bool dense = single && !hit;
    constexpr std::uint64_t empty_cell = (std::uint64_t(1) << 62) + 1;
    std::vector<std::vector<std::uint64_t>> dtab(dense ? m : 0);
    std::vector<std::vector<std::size_t>> dstrides(dense ? m : 0, std::vector<std::size_t>(k, 0));
    std::vector<std::size_t> doff(dense ? m : 0, 0);
    std::vector<std::uint64_t> acc(dense ? dv : 0);
    std::vector<int> cv_class(dense && v_classed ? dv : 0);
    if (dense) {
      for (std::size_t cv = 0; cv < cv_class.size(); ++cv) cv_class[cv] = class_of(v, cv);
      for (std::size_t f = 0; f < m; ++f) {
        const factor& fa = factors_[ids[f]];
        // every joined factor mentions v (live_factors): v gets stride 1, the rest follow
        const std::size_t w = fa.scope.size();
        std::vector<std::size_t> nst(w, 1);
        std::size_t st = dv;
        for (std::size_t j = w; j-- > 0;) {
          if (fa.scope[j] == v) continue;
          nst[j] = st;
          st *= fa.dims[j];
        }
        dtab[f].assign(st, empty_cell);
        std::vector<std::size_t> at(w, 0);
        for (std::size_t x = 0; x < fa.cells(); ++x) {
          std::size_t y = 0;
          for (std::size_t j = 0; j < w; ++j) y += at[j] * nst[j];
          if (fa.start[x + 1] > fa.start[x]) {
            const cost_t mem = fa.pts[fa.start[x]].memory;
            if (mem < 0 || std::uint64_t(mem) >= empty_cell) dense = false;
            dtab[f][y] = std::uint64_t(mem);
          }
          for (std::size_t j = w; j-- > 0;) {
            if (++at[j] < fa.dims[j]) break;
            at[j] = 0;
          }
        }
        for (std::size_t i = 0; i < k; ++i)
          for (std::size_t j = 0; j < w; ++j)
            if (s[i] == fa.scope[j]) dstrides[f][i] = nst[j];
      }
    }
    cell_merger merge;
    for (std::size_t c = 0; c < cells; ++c) {
      if (masked) cell = cell_class(s, idx);
      if (masked && cell == no_common) {
        // an unwanted cell stays empty
      } else if (hit) {
        for (std::size_t q = hit->start[c]; q < hit->start[c + 1]; ++q) {
          if (hit->pts[q].memory > lim) continue;
          const memo_point& mp = hit->prov[q];
          g.pts.push_back({hit->pts[q].time, hit->pts[q].memory, tag_of(mp.cv, mp.i, mp.j, mp.sf, mp.af)});
        }
      } else if (dense) {
        std::uint64_t* a = acc.data();
        for (std::size_t f = 0; f < m; ++f) {
          const std::uint64_t* row = dtab[f].data() + doff[f];
          if (f == 0) {
            for (std::size_t cv = 0; cv < dv; ++cv) a[cv] = row[cv];
          } else {
            for (std::size_t cv = 0; cv < dv; ++cv) a[cv] += row[cv];
          }
          // three sums of values up to empty_cell fit in 64 bits; from four on, saturate
          if (m > 3)
            for (std::size_t cv = 0; cv < dv; ++cv) a[cv] = std::min(a[cv], empty_cell);
        }
        // the least sum, on ties the smaller cv (as the merge keeps)
        std::uint64_t bm = empty_cell;
        std::size_t bcv = 0;
        if (!v_classed || cell == no_class) {
          for (std::size_t cv = 0; cv < dv; ++cv)
            if (a[cv] < bm) {
              bm = a[cv];
              bcv = cv;
            }
        } else {
          for (std::size_t cv = 0; cv < dv; ++cv)
            if (cv_class[cv] == cell && a[cv] < bm) {
              bm = a[cv];
              bcv = cv;
            }
        }
        if (bm < empty_cell && lim >= 0 && bm <= std::uint64_t(lim)) {
          g.pts.push_back({0, cost_t(bm), tag_of(bcv, -1, 0, 0, -1)});
          rec.prov.push_back({std::uint32_t(bcv), -1, 0, 0, -1});
        }
      } else {
        merge.begin(dv);
        for (std::size_t cv = 0; cv < dv; ++cv) {
          if (!cv_wanted(cv)) continue;
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
        for (std::size_t f = 0; f < doff.size(); ++f) doff[f] += dstrides[f][i];
        if (idx[i] < g.dims[i]) break;
        for (std::size_t f = 0; f < m; ++f) off[f] -= g.dims[i] * strides[f][i];
        for (std::size_t f = 0; f < doff.size(); ++f) doff[f] -= g.dims[i] * dstrides[f][i];
        idx[i] = 0;
      }
    }
    if (!hit && !any_explicit && !masked) {
      rec.start = g.start;
      rec.pts = g.pts;
      if (memo_.size() < memo_size) memo_.push_back(std::move(rec));
      else std::swap(memo_[memo_next_], rec);
      memo_next_ = (memo_next_ + 1) % memo_size;
    }
    for (std::size_t id : ids) {
      factors_[id].alive = false;
      bytes_ -= std::min(bytes_, bytes_of(factors_[id]));
      recycle_points(std::move(factors_[id].pts));
      factors_[id].pts = {};
      factors_[id].start = {};
    }
    drop_beaten(g, rest_time, rest);
    min_sum_ = rest == cost_max ? cost_max : sat_add(rest, min_memory(g));
    min_time_sum_ = rest_time == cost_max ? cost_max : sat_add(rest_time, min_time(g));
    return g;
  }
};

}  // namespace tensoropt::detail
