// The planner's search mode: exact, or fast (identical layers composed by powering), the
// choice between them, and the check of fast mode's restriction.
//
// exact: the frontier of the whole problem (search/solve.hpp). fast: the repeat<> with
// the most instances is composed by binary powering under one restriction, stated in
// every report: every boundary between two identical layers takes one layout (the
// residual stream keeps its layout through the stack; the boundaries next to the
// embedding and the head stay free; see search/repeated.hpp), and where the layer's
// tables are large, at the residual adds inside each layer too ("The stream", below).
// `automatic` picks fast when the model has such a block and exact would be slow, by the
// exact engine the caller runs. The general search (search/solve.hpp) joins two
// layer-boundary factors once per layer, about L x B^3 cell merges for B boundary
// layouts: fast when that exceeds `fast_above` (5e4: gpt3-125m on 2 devices stays
// exact; gpt3-1.3b on 4, 24 x 20^3, goes fast, 42 s -> 7.9 s of CPU over all
// micro-batch counts for the same 8,980 points). The
// chain fold (search/repeated_exact.hpp, the planner's exact engine at epsilon 0) merges
// about B^2 pairs of boundary layouts per layer: fast when L x B^2 exceeds `fast_above`.
// Measured over all micro-batch counts (search only, one thread, busy 2-core machine):
// gpt3-1.3b on 4 x V100-16GB, 24 x 20^2 = 9,600: exact 13-15 s CPU, fast 6.3 s; on 8 x
// A100-80GB, 24 x 38^2 = 34,656: exact 59 s, fast 15 s (both exact); gpt3-39b on 64 (48 x
// 40^2 .. 114^2 >= 76,800) stays fast.
//
// The stream. Where fast mode's per-layer tables would cost more than `stream_above` (1e6)
// boundary-cell merges, L x B^3 (gpt3-39b on 64 devices: 48 x 96^3; megatron-1t's pipeline
// stages: about 10 x 76^3), the residual adds inside each identical layer take the
// boundaries' layout too (search/repeated.hpp, "The stream": about 2x less search there;
// held by hand on small models, which stay below the threshold and unheld, the plans were
// up to 0.43 % slower on gpt3-125m and 1.48 % on moe-380m); the mode line says so.
//
// The check. A restricted frontier is a set of real strategies, so it can only lie on or
// behind the exact one. How far behind is measured against weighted-sum optima of the
// unrestricted problem: for a weight w (picoseconds per byte) the strategy minimizing
// time + w x memory is a single-objective search (each frontier is one point, so it is
// fast even where the exact frontier is not), and the best restricted point at that
// weight is compared with it. Weights: 0, the frontier's overall slope x {1/4, 1, 4},
// and memory alone; a weight whose optimum does not fit the memory limit is skipped.
// `gap` is the largest relative excess found (0: the restriction cost nothing there).
//
// The layouts. Under epsilon > 0, where the parts outside the identical layers hold more
// than four layers' nodes (a CNN's stem and first stages: their general-engine tables take
// nearly all of fast mode's time), fast mode also limits each op to the layouts that
// weighted-sum optima of the unrestricted problem take there, found in two vector passes
// (search/layout_restriction.hpp, which gives its cost and what it loses: on wresnet-13b,
// 8 x 8 V100-16GB, one count's search 14-22 s -> 1.1-1.8 s, every point of the unlimited
// fast frontier matched within 0.9 % in time at no more memory; over the runtime peak, up to
// 10 % behind near the least peak). The mode line says so, and the check above measures the
// two restrictions together.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>
#include "../model/graph.hpp"
#include "../search/repeated.hpp"
#include "../search/layout_restriction.hpp"
#include "../search/repeated_exact.hpp"

namespace tensoropt {

enum class search_mode { automatic, exact, fast };

constexpr const char* mode_name(search_mode m) {
  return m == search_mode::exact ? "exact" : m == search_mode::fast ? "fast" : "auto";
}

/// Parses "exact", "fast" or "auto"; throws invalid_argument naming the choices.
inline search_mode parse_search_mode(const std::string& s) {
  if (s == "exact") return search_mode::exact;
  if (s == "fast") return search_mode::fast;
  if (s == "auto") return search_mode::automatic;
  throw invalid_argument("--mode: unknown search mode '" + s + "'; use exact, fast or auto");
}

/// Every repeat<> of `g` with at least 2 instances (ops in op order per instance), in the
/// order of their first op: what a problem file declares repeated (search/problem_json.hpp).
inline std::vector<repeated_block> repeat_blocks(const op_graph& g) {
  std::vector<std::vector<std::vector<int>>> by_id;
  std::vector<std::size_t> first;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    if (op.repeat_id < 0) continue;
    if (std::size_t(op.repeat_id) >= by_id.size()) {
      by_id.resize(std::size_t(op.repeat_id) + 1);
      first.resize(by_id.size(), g.ops.size());
    }
    auto& inst = by_id[std::size_t(op.repeat_id)];
    if (std::size_t(op.repeat_index) >= inst.size()) inst.resize(std::size_t(op.repeat_index) + 1);
    inst[std::size_t(op.repeat_index)].push_back(int(i));
    first[std::size_t(op.repeat_id)] = std::min(first[std::size_t(op.repeat_id)], i);
  }
  std::vector<std::size_t> ids;
  for (std::size_t r = 0; r < by_id.size(); ++r)
    if (by_id[r].size() >= 2) ids.push_back(r);
  std::stable_sort(ids.begin(), ids.end(), [&](std::size_t x, std::size_t y) { return first[x] < first[y]; });
  // kin: positions whose ops share kind, dims, attributes and tensor maps (they lower to
  // the same configs, config for config) share an entry
  auto same_maps = [](const std::vector<tensor_map>& x, const std::vector<tensor_map>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                      [](const tensor_map& a, const tensor_map& b) { return a.dim == b.dim; });
  };
  auto same_op = [&](const op_node& q, const op_node& op) {
    return q.kind == op.kind && q.dims == op.dims && q.attr == op.attr && same_maps(q.inputs, op.inputs) &&
           same_maps(q.params, op.params) && q.output.dim == op.output.dim;
  };
  std::vector<repeated_block> out;
  for (std::size_t r : ids) {
    repeated_block b{by_id[r], {}};
    const auto& first_inst = b.instances[0];
    for (std::size_t j = 0; j < first_inst.size(); ++j) {
      const op_node& op = g.ops[std::size_t(first_inst[j])];
      int id = int(j);
      for (std::size_t i = 0; i < j; ++i) {
        if (same_op(g.ops[std::size_t(first_inst[i])], op)) {
          id = b.kin[i];
          break;
        }
      }
      b.kin.push_back(id);
    }
    out.push_back(std::move(b));
  }
  return out;
}

/// Of `blocks`, the one with the most instances (the first of equals); empty instances
/// when none has at least 3.
inline repeated_block largest_repeat(const std::vector<repeated_block>& blocks) {
  repeated_block best;
  for (auto& b : blocks)
    if (b.instances.size() >= 3 && b.instances.size() > best.instances.size()) best = b;
  return best;
}

/// The repeat<> of `g` with the most instances; empty instances when the graph has no
/// repeat of at least 3 instances.
inline repeated_block largest_repeat(const op_graph& g) { return largest_repeat(repeat_blocks(g)); }

/// Which mode runs on problem `p` of graph `g`, and why (one line for the output).
struct mode_choice {
  search_mode mode = search_mode::exact;
  std::string why;
  repeated_block block;
};

/// The exact engine a caller runs: the general search (search/solve.hpp), or the chain fold
/// of search/repeated_exact.hpp (epsilon 0 and a block that splits; the planner's).
enum class exact_engine { general, chain_fold };

/// The mode for problem `p` of graph `g` when `asked` (see the file comment for the rule).
inline mode_choice choose_mode(const problem& p, const op_graph& g, search_mode asked,
                               exact_engine engine = exact_engine::general, double fast_above = 5e4,
                               double stream_above = 1e6) {
  mode_choice c;
  c.block = largest_repeat(g);
  std::vector<int> kin;  // the stream's kin, kept only where fast mode ties it (below)
  kin.swap(c.block.kin);
  if (asked == search_mode::exact) {
    c.why = "exact mode (asked)";
    return c;
  }
  if (c.block.instances.empty()) {
    c.why = "exact mode: the model has no repeat<> of 3 or more identical layers";
    return c;
  }
  const auto s = detail::split_repeated(p, c.block);
  if (!s.why_not.empty()) {
    c.why = "exact mode: the repeated layers cannot be composed by powering (" + s.why_not + ")";
    return c;
  }
  const bool fold = engine == exact_engine::chain_fold;
  const double L = double(c.block.instances.size()), B = double(s.reps.size());
  const double work = fold ? L * B * B : L * B * B * B;
  const std::string rule = std::to_string(c.block.instances.size()) + " layers x " + std::to_string(s.reps.size()) +
                           (fold ? "^2 boundary layouts for the chain fold" : "^3 boundary layouts") + " = " +
                           std::to_string(std::llround(work)) + (work <= fast_above ? " <= " : " > ") +
                           std::to_string(std::llround(fast_above));
  if (asked == search_mode::automatic && work <= fast_above) {
    c.why = "exact mode: small enough (" + rule + ")";
    return c;
  }
  c.mode = search_mode::fast;
  c.why = std::string(asked == search_mode::fast ? "fast mode (asked)" : "fast mode: exact would be slow (" + rule + ")") +
          " (" + std::to_string(c.block.instances.size()) + " identical layers, " + std::to_string(s.reps.size()) +
          " boundary layouts); restriction: one layout at every boundary between identical layers";
  // The stream: where the layer's tables would hold more than stream_above boundary-cell
  // merges (L x B^3), the residual adds inside each identical layer take the boundaries'
  // layout too (search/repeated.hpp, "The stream").
  if (L * B * B * B > stream_above) {
    repeated_block tied = c.block;
    tied.kin = std::move(kin);
    if (const auto at = detail::stream_positions(p, tied, s); !at.empty()) {
      c.block = std::move(tied);
      c.why += " and at the " + std::to_string(at.size()) + " residual add" + (at.size() == 1 ? "" : "s") +
               " inside each (" + std::to_string(c.block.instances.size()) + " layers x " +
               std::to_string(s.reps.size()) + "^3 = " + std::to_string(std::llround(L * B * B * B)) + " > " +
               std::to_string(std::llround(stream_above)) + ")";
    }
  }
  return c;
}

/// Whether fast mode also limits each op to the layouts of weighted-sum optima of the
/// unrestricted problem (search/layout_restriction.hpp; "The layouts", above): under epsilon
/// > 0, where the parts outside the identical middle layers of `rb` hold more than four
/// layers' nodes, so that their general-engine tables take the time.
inline bool layouts_restricted(const problem& p, const repeated_block& rb, double epsilon) {
  return epsilon > 0 && rb.instances.size() >= 3 && detail::large_ends(p, rb);
}

/// The mode line's words for that restriction with `lanes` weights in its second pass.
inline std::string layouts_restriction_note(std::size_t lanes) {
  return "; each op limited to the layouts that weighted-sum optima of the unrestricted problem take at " +
         std::to_string(first_pass_lanes + lanes) + " weights (epsilon > 0 and parts outside the identical layers larger than "
         "four of them)";
}

/// The outcome of checking a restricted frontier against the unrestricted problem.
struct restriction_check {
  std::size_t weights = 0, compared = 0;  ///< weights tried, and compared (optimum fits the limit)
  double gap = 0;                          ///< largest (restricted - optimum) / optimum at a weight
  /// > 0: the optima came from one vector pass in float arithmetic (detail/multi_weight.hpp),
  /// each within this relative amount of exact, so the gap may be that much too small
  double float_slack = 0;
  std::string describe() const {
    if (weights == 0) return "no point to check";
    char b[200];
    std::snprintf(b, sizeof b, "checked at %zu of %zu weighted-sum optima of the unrestricted problem%s: %s", compared,
                  weights, float_slack > 0 ? " (found in float arithmetic)" : "", gap == 0 ? "equal at every one" : "");
    std::string s = b;
    if (gap > 0) {
      std::snprintf(b, sizeof b, "at most %.3g %% worse", 100 * gap);
      s += b;
    }
    if (float_slack > 0) {
      std::snprintf(b, sizeof b, " (within %.2g %% of exact)", 100 * float_slack);
      s += b;
    }
    return s;
  }
};

/// Compares `r` (points of a restricted search of `p`) with the optima of time + w x memory
/// of the unrestricted `p` for the weights of the header. `also`: costs of other points the
/// caller returns with `r` (the planner's union over micro-batch counts, whose searches
/// bound each other and so leave out of `r` what the others cover); the best of both counts.
/// `vector_pass`: the optima come from one pass of detail::multi_weight_optima (float lanes,
/// each optimum within detail::multi_weight_slack of exact, relatively: the check's
/// `float_slack`) instead of one exact search per weight; where the layout restriction ran
/// (its own optima come from the same passes), whose exact checks took a third of
/// wresnet-13b's planning (8 x 8 V100-16GB, epsilon 0.05).
inline restriction_check check_restriction(const problem& p, const frontier_result& r, cost_t memory_limit,
                                           const std::vector<frontier::point>& also = {},
                                           const repeated_block* block = nullptr, bool vector_pass = false) {
  restriction_check out;
  if (r.points.empty() && also.empty()) return out;
  std::vector<frontier::point> ends;
  for (auto& q : r.points) ends.push_back({q.time, q.memory, -1});
  ends.insert(ends.end(), also.begin(), also.end());
  const auto span = make_frontier(ends).points;
  const double dt = double(span.front().time - span.back().time);
  const double dm = double(span.back().memory - span.front().memory);
  const double slope = dm > 0 ? dt / dm : 0;
  std::vector<double> ws{0};
  if (slope > 0) ws.insert(ws.end(), {slope / 4, slope, slope * 4});
  ws.push_back(-1);  // memory alone
  if (vector_pass) {
    // lane (a, b) scores a x memory + b x time: time + w x memory is (w, 1), memory alone (1, 0)
    std::vector<detail::weight_lane> lanes;
    for (double w : ws) lanes.push_back(w < 0 ? detail::weight_lane{1, 0} : detail::weight_lane{w, 1});
    const auto optima = detail::multi_weight_optima(p, lanes);
    out.float_slack = detail::multi_weight_slack(p);
    for (std::size_t s = 0; s < lanes.size(); ++s) {
      ++out.weights;
      const auto oc = cost_of(p, optima[s]);
      if (oc.memory > memory_limit) continue;
      ++out.compared;
      auto score = [&](cost_t t, cost_t m) { return lanes[s].a * double(m) + lanes[s].b * double(t); };
      double best = HUGE_VAL;
      for (const auto& pt : r.points) best = std::min(best, score(pt.time, pt.memory));
      for (const auto& pt : also)
        if (pt.memory <= memory_limit) best = std::min(best, score(pt.time, pt.memory));
      const double o = score(oc.time, oc.memory);
      if (best > o) out.gap = std::max(out.gap, (best - o) / std::max(o, 1.0));
    }
    return out;
  }
  // identical layers of p stay identical in every weighted sum (equal terms scale equally)
  const bool foldable = block && check_repeated(p, *block).empty();
  for (double w : ws) {
    ++out.weights;
    problem q = p;
    // time + w x memory in units of `unit` ps, the unit chosen so that the largest
    // strategy (every node and edge at its largest) stays within 2^61: the search
    // stays exact on the scaled terms, and the rounding (half a unit per term) is far
    // below the gaps measured
    auto raw = [w](cost_t t, cost_t m) { return w < 0 ? double(m) : double(t) + w * double(m); };
    double largest = 0;
    for (auto& n : p.nodes) {
      double x = 0;
      for (auto& c : n.configs) x = std::max(x, raw(c.time, c.memory));
      largest += x;
    }
    for (auto& e : p.edges) {
      double x = 0;
      for (std::size_t i = 0; i < e.time.size(); ++i) x = std::max(x, raw(e.time[i], e.memory[i]));
      largest += x;
    }
    const double unit = std::max(1.0, largest / double(max_problem_cost / 2));
    auto scal = [&](cost_t t, cost_t m) { return cost_t(std::llround(raw(t, m) / unit)); };
    // the weighted sum is put in memory (time 0): the eliminator's single-objective pass
    // takes such searches on dense rows (search/detail/eliminator.hpp)
    q.memory_offset = 0;
    for (auto& n : q.nodes)
      for (auto& c : n.configs) { c.memory = scal(c.time, c.memory); c.time = 0; }
    for (auto& e : q.edges)
      for (std::size_t i = 0; i < e.time.size(); ++i) { e.memory[i] = scal(e.time[i], e.memory[i]); e.time[i] = 0; }
    const auto opt = foldable ? solve_repeated_exact(q, *block) : solve(q);
    if (opt.points.empty()) continue;
    const auto oc = cost_of(p, opt.points.front().choice);
    if (oc.memory > memory_limit) continue;
    ++out.compared;
    cost_t best = -1;
    for (auto& pt : r.points) {
      const cost_t v = cost_of(q, pt.choice).memory;
      if (best < 0 || v < best) best = v;
    }
    for (auto& pt : also) {
      if (pt.memory > memory_limit) continue;
      const cost_t v = cost_t(std::llround(raw(pt.time, pt.memory) / unit));
      if (best < 0 || v < best) best = v;
    }
    const cost_t o = opt.points.front().memory;
    if (best > o) out.gap = std::max(out.gap, double(best - o) / double(std::max<cost_t>(o, 1)));
  }
  return out;
}

}  // namespace tensoropt
