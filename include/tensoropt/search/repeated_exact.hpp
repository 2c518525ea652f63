// The exact frontier of a problem with identical repeated layers: a chain fold over the
// boundary layouts, pruned by branch and bound against fast mode's frontier.
//
// What. For a block that search/repeated.hpp can split (A = embedding and the first layer,
// M = L - 2 identical middle layers, Z = the last layer and the head; only the boundary
// node o links consecutive layers), the cost of a strategy is
//     A(c_0) + T(c_0, c_1) + ... + T(c_{M-1}, c_M) + Z(c_M)
// where c_i is the layout of o_i (layouts whose edges into the next layer cost the same
// form one state) and T(c, d) is the frontier of one middle layer with its input in c and
// its output in d: every layout may change at every boundary, unlike fast mode. The
// frontier is the chain fold
//     F_0(c) = A(c),  F_i(d) = | over c of F_{i-1}(c) (+) T(c, d),  F = | over c of F_M(c) (+) Z(c),
// with A, T (the whole table, every input and output layout) and Z each solved once by
// solve_conditioned. This is what the general search does for such a problem, without
// re-solving each layer and without its 2 x L joins of layer-boundary factors.
//
// Branch and bound (detail/completion_bound.hpp). K = the frontier of fast mode (one layout
// across the middle layers) at epsilon 0.001: real strategies, cheap. A looser K only keeps
// more partial points; measured on gpt3-1.3b (k = 64; k = 256; wall, busy machine), K at
// epsilon 0 cost 1.7 s (2.6 s) and the fold 2.5 s (1.1 s); at 0.001 1.0 s (1.1 s) and
// 2.4 s (1.1 s), keeping the same partial points; at 0.003 and above the fold keeps more
// and takes longer. K's per-layer tables are exact and the whole 0.001 goes to its
// powering's sums (repeated_bounds::tables_share = 0; fast mode splits it in half): sums
// at twice the delta keep fewer points, and K takes A's and Z's tables from the fold's
// own (solved before K; they are the same tables where no stream is tied), solving only T's
// diagonal. gpt3-1.3b (4 x V100-16GB, exact, every count, `plan_bench --only gpt3-1.3b
// --mode exact`, one thread): 3.63-3.73 s -> 3.34-3.40 s (exact K tables) -> 3.28-3.33 s
// (A and Z reused), the same 6,705 points and byte-identical frontier files. After i
// middle layers, every
// completion costs at least some point of LB_i = U^(M-i) (+) Zu, where U is the Pareto
// staircase of every cell of T and Zu that of every cell of Z (both exact). A partial point
// is dropped when every completion above LB_i is strictly dominated by a point of K: no
// strategy through it has a frontier cost, so the fold still returns every point of the
// exact frontier, each with its own strategy. Exact. The bound also takes the state a
// partial point is in: every cell T(c, e) lies at least gap(c, e) in time above U at each
// of its memories, and Z(e) at least gap_z(e) above Zu, so a completion from state d with
// j layers to come lies at least shift_j(d) = the least sum of gaps over j steps from d
// (a shortest path over the states) above U^j (+) Zu, and the region's time bound falls by
// that much for it. gpt3-1.3b (4 x V100-16GB, exact, every count, one thread) 3.29-3.32 ->
// 3.18-3.19 s; the default job (8 x A100-80GB, 38 states) 10.9 -> 9.6-9.7 s; the same
// frontier files byte for byte. Partial points above the memory
// limit after the least memory still to come are dropped as well (costs are non-negative).
//
// Measured on gpt3-1.3b (4 x V100-16GB, k = 256; wall times on a busy 2-core machine): the
// general search carries up to 211K points across a layer boundary (10.9 s); the fold
// carries at most 16K over its 10 states and returns the same 9,489 points (2.9 s: K 1.1 s,
// the three tables 0.24 s, the regions 0.29 s, the fold 1.1 s, the strategies 0.13 s).
//
// A caller that unites several such searches (the planner: one per micro-batch count)
// may hand K on and add the costs of the other searches' real strategies to it
// (`known_exchange`; with `before`, K's own search takes them too, and skips the layouts
// and sums they cover: gpt3-1.3b, 4 x V100-16GB, exact, one thread 1.91-1.96 -> 1.83-1.86
// s, two threads 1.00-1.03 -> 0.97-1.03 s, six runs each, the same frontier files). A point
// of this problem strictly beaten by one of them is then dropped, so the result is exact for the union, not for this problem alone; of
// strategies with equal costs the fold may then keep another one (the search visits
// fewer partial points). Measured on gpt3-1.3b (4 x V100-16GB, exact, every count, one
// thread): the folds' points 52,631 -> 26,412, the union the same 17,450 costs.
//
// Before the regions and the fold, the other searches' points are tested against
// A* (+) U^M (+) Zu (A* the staircase of every cell of A), a lower bound of every strategy
// within the memory limit: where they lie at or below all of it, the search returns no point
// (`skip_stage::after_tables`; detail/completion_bound.hpp's chain_sums_beaten, sound
// whatever its pruning). On gpt3-1.3b (4 x V100-16GB, exact) this skips k = 64, whose fold
// carried up to 14K partial points and returned none. The test is made twice: once the
// three tables are solved, before K, on the points the other searches have published so
// far (`so_far`: a part of what the exchange returns, so a search it skips, the exchange's
// points skip too; the tables come first so that K, 0.07 s of k = 64's 0.14 s, is not made
// for a search skipped anyway), and after the exchange on all of them.
//
// Every returned point is a full per-node strategy (recovered through the fold's
// provenance and the three inner searches' traces) whose cost re-computes exactly with
// cost_of. Epsilon > 0 is not handled here: the call goes to `solve`.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "repeated.hpp"
#include "solve.hpp"
#include "detail/chain_merge.hpp"
#include "detail/completion_bound.hpp"
#include "detail/repeated_split.hpp"
#include "detail/repeated_tables.hpp"
#include "solve_options.hpp"

namespace tensoropt {

/// The epsilon of the fast-mode search that gives K: any value keeps the fold exact (K's points
/// are real strategies); 0.001 was the fastest measured (see the header).
inline constexpr double known_epsilon = 0.001;

/// Hands this search's K (costs of real strategies of `p`) to a caller that unites several
/// searches' frontiers, and returns costs of real strategies of the others, which then
/// join K (see the header: exact for the union, not for `p` alone); or nullopt where the
/// caller knows the others' points lie at or below every strategy of `p` (the search then
/// returns no point, `skipped`).
using known_exchange =
    std::function<std::optional<std::vector<frontier::point>>(std::vector<frontier::point>)>;

/// Where a search united with others found itself beaten (`united_skip`): before its tables
/// and fast-mode points (the caller's bound), after its fast-mode points (the caller's bound,
/// told through the exchange), or after its tables (its own bound: each layer at its least).
enum class skip_stage { before_tables, after_known, after_tables };

/// How the note of a search skipped after its tables begins (`united_skip`).
inline constexpr std::string_view skipped_after_tables = "skipped after its tables";

/// The result of a search skipped because the points of the searches it is united with lie
/// at or below every strategy of its problem (exact for the union; no point).
inline frontier_result united_skip(skip_stage at = skip_stage::after_known) {
  frontier_result r;
  r.skipped = r.bounded = true;
  r.note = std::string(at == skip_stage::before_tables  ? "skipped before its tables"
                       : at == skip_stage::after_tables ? skipped_after_tables
                                                        : "skipped") +
           ": the points of the searches it is united with lie at or below every strategy" +
           (at == skip_stage::after_tables ? " (a lower bound: the first layer's, each middle layer's and the last "
                                             "layer's least costs, whatever the layouts between them)"
                                           : "");
  return r;
}

/// The exact frontier of `p`, whose identical layers `rb` are folded as the header says.
/// Throws invalid_argument when `rb` cannot be split (see check_repeated), and as `solve`.
/// `progress` (optional) is called after each elimination of the per-layer solves (A, Z,
/// K's and T's tables), as solve's. `so_far` (optional, with `exchange`): costs of real
/// strategies of the searches it is united with that are known already, all of them among
/// those the exchange will return; the search returns no point where they lie at or below
/// every strategy of `p` (tested before K is made; see the header). `before` (optional,
/// with `exchange`): all the points the exchange will return, waited for (the caller's
/// searches before this one); K's own search takes them as other searches' points (it skips
/// the layouts and drops the partial sums they cover), so its points are fewer and found
/// sooner, and the fold's set of known points holds both.
inline frontier_result solve_repeated_exact(const problem& p, const repeated_block& rb, const solve_options& o = {},
                                            const known_exchange& exchange = {},
                                            const std::function<void(const search_progress&)>& progress = {},
                                            const std::function<std::vector<frontier::point>()>& so_far = {},
                                            const std::function<std::vector<frontier::point>()>& before = {}) {
  if (o.epsilon > 0) return solve(p, o);
  validate(p);
  const auto s = detail::split_repeated(p, rb);
  detail::require(s.why_not.empty(), "solve_repeated_exact: the block cannot be folded: " + s.why_not);
  using detail::candidate;
  const std::size_t L = rb.instances.size(), M = L - 2;
  // K: fast mode's frontier at epsilon 0.001 (real strategies of p; see the header). Left
  // out on a single-objective problem (every time 0: the weighted sums of the planner's
  // restriction check, plan/search_mode.hpp), where every cell and state holds one point,
  // so the fold has nothing to prune and K would cost more than the fold itself.
  const bool single = std::all_of(p.nodes.begin(), p.nodes.end(), [](const problem_node& n) {
                        return std::all_of(n.configs.begin(), n.configs.end(), [](const auto& c) { return c.time == 0; });
                      }) && std::all_of(p.edges.begin(), p.edges.end(), [](const problem_edge& e) {
                        return std::all_of(e.time.begin(), e.time.end(), [](cost_t t) { return t == 0; });
                      });
  // A and Z solved exactly (K takes them from here), and T (every input and output layout)
  detail::repeated_tables parts;
  detail::solve_parts(p, rb, s, o, false, detail::part_a | detail::part_z | detail::part_t, parts, progress);
  const auto& fa = parts.a;
  const auto& ft = parts.t;
  const auto& fz = parts.z;
  // states: the layout-configs of T's input copy (layout classes whose edges into a layer cost the same)
  const std::size_t G = ft.dims[0], D = ft.dims[1];
  std::vector<std::size_t> state_of(s.reps.size(), 0);
  for (std::size_t g = 0; g < G; ++g)
    for (int c : ft.configs[0][g]) state_of[std::size_t(c)] = g;
  auto cell = [](const conditioned_frontier& f, std::size_t x) {
    std::vector<candidate> c;
    for (std::size_t q = f.start[x]; q < f.start[x + 1]; ++q) c.push_back({f.pts[q].time, f.pts[q].memory, f.pts[q].tag, -1});
    return c;
  };
  auto unite = [](std::vector<candidate>& into, const std::vector<candidate>& more) {
    into.insert(into.end(), more.begin(), more.end());
    detail::pareto_filter(into);
  };
  std::vector<std::vector<std::vector<candidate>>> t(G, std::vector<std::vector<candidate>>(G));
  std::vector<std::vector<candidate>> a(G), z(G);
  for (std::size_t g = 0; g < G; ++g)
    for (std::size_t d = 0; d < D; ++d)
      unite(t[g][state_of[std::size_t(s.group[std::size_t(ft.configs[1][d][0])])]], cell(ft, g * D + d));
  for (std::size_t d = 0; d < fa.dims[0]; ++d)
    unite(a[state_of[std::size_t(s.group[std::size_t(fa.configs[0][d][0])])]], cell(fa, d));
  for (std::size_t g = 0; g < G; ++g) {
    const std::size_t b = std::size_t(ft.configs[0][g][0]);  // a layout of state g: Z costs the same for all
    for (std::size_t d = 0; d < fz.dims[0]; ++d)
      if (std::find(fz.configs[0][d].begin(), fz.configs[0][d].end(), int(b)) != fz.configs[0][d].end()) z[g] = cell(fz, d);
  }
  // the lower staircases: U (every cell of T), Zu (every cell of Z), A* (every cell of A)
  std::vector<candidate> u, zu, as;
  for (std::size_t x = 0; x < ft.cells(); ++x) unite(u, cell(ft, x));
  for (auto& c : z) unite(zu, c);
  for (auto& c : a) unite(as, c);
  for (auto* v : {&u, &zu})
    for (auto& c : *v) c.ta = c.tb = -1;
  // The other searches' points may lie at or below A* (+) U^M (+) Zu: a lower bound of every
  // strategy, each layer at its least whatever the layouts between them. Then no strategy of
  // p is on the union's frontier and K, the regions and the fold are not made (gpt3-1.3b on
  // 4 x V100-16GB, k = 64: the fold returned no point after 0.24 s of regions and fold; this
  // test takes 0.02 s). First on the points known so far, then on all of them (below).
  auto beaten = [&](const std::vector<frontier::point>& by) {
    return !by.empty() && detail::chain_sums_beaten(as, u, M, zu, o.memory_limit, by);
  };
  if (exchange && so_far && beaten(so_far())) return united_skip(skip_stage::after_tables);
  std::vector<candidate> known;  // own points tagged -1, the other searches' 1
  std::vector<frontier::point> theirs;
  std::size_t others = 0;
  bool known_fallback = false;
  if (!single) {
    solve_options ko = o;
    ko.epsilon = known_epsilon;
    repeated_bounds kb;
    kb.tables_share = 0;  // exact tables, the whole epsilon on the powering (see the header)
    kb.progress = progress;
    kb.costs_only = true;  // only K's costs are used
    // the other searches' points, given to K's own search: what they cover needs no K point
    if (exchange && before) kb.exchange = [&](std::vector<frontier::point>) { return before(); };
    const frontier_result fast = detail::solve_repeated_split(p, rb, s, ko, kb, &parts);
    known_fallback = fast.width_fallback;
    for (auto& q : fast.points) known.push_back({q.time, q.memory, -1, -1});
    if (exchange) {
      std::vector<frontier::point> mine;
      for (auto& q : fast.points) mine.push_back({q.time, q.memory, -1});
      auto got = exchange(std::move(mine));
      if (!got) return united_skip();
      theirs = std::move(*got);
      for (auto& q : theirs) known.push_back({q.time, q.memory, 1, -1});
    }
    detail::pareto_filter(known);
    for (auto& q : known) others += q.ta == 1;
  }

  if (beaten(theirs)) return united_skip(skip_stage::after_tables);
  // The fold's points after i layers hold at least A's least memory and i of U's, so the
  // step that uses region[j] asks it at no less memory than that (j = M - i): the corners
  // below it are dropped before the next erosion, whose corners then lie below the next
  // step's least memory (gpt3-1.3b, 4 x V100-16GB, exact: 33-60 % of the corners per count).
  // the least memory of a middle layer and of Z: U's and Zu's first points (A's: A*'s)
  const cost_t u_mem = u.empty() ? 0 : u.front().memory, z_mem = zu.empty() ? 0 : zu.front().memory;
  // region[j]: j middle layers still to come after the step that uses it (the fold's step i
  // uses region[M - i], so j < M)
  std::vector<detail::completion_filter> region(M);
  region[0] = detail::make_completion_filter(known, zu, o.memory_limit);
  for (std::size_t j = 0; j < M; ++j) {
    if (j > 0) region[j] = detail::erode(region[j - 1], u);
    if (!as.empty()) region[j].drop_below(as.front().memory + cost_t(M - j) * u_mem);
  }
  // per state d and j layers still to come, the least extra time a completion from d costs
  // over the state-free bound U^j (+) Zu (see the header): each cell T(c, e) lies at least
  // gap(c, e) above U at every memory and Z(e) at least gap_z(e) above Zu, so a completion
  // d -> e_1 -> ... -> e_j -> Z lies at least the sum of its gaps above the bound; shift[j][d]
  // is the least such sum (a shortest path over the states, j steps)
  auto time_gap = [](const std::vector<candidate>& row, const std::vector<candidate>& lower) {
    if (row.empty() || lower.empty()) return cost_t(0);
    cost_t gap = std::numeric_limits<cost_t>::max();
    std::size_t j = 0;  // lower's last point with memory <= the row point's (both by memory ascending)
    for (const auto& q : row) {
      while (j + 1 < lower.size() && lower[j + 1].memory <= q.memory) ++j;
      if (lower[j].memory > q.memory) return cost_t(0);  // (cannot happen: lower is below every row)
      gap = std::min(gap, q.time - lower[j].time);
    }
    return std::max<cost_t>(0, gap);
  };
  constexpr cost_t no_path = std::numeric_limits<cost_t>::max();
  std::vector<std::vector<cost_t>> shift(M, std::vector<cost_t>(G, 0));
  {
    std::vector<std::vector<cost_t>> gap(G, std::vector<cost_t>(G, no_path));
    for (std::size_t c = 0; c < G; ++c)
      for (std::size_t e = 0; e < G; ++e)
        if (!t[c][e].empty()) gap[c][e] = time_gap(t[c][e], u);
    for (std::size_t e = 0; e < G; ++e) shift[0][e] = z[e].empty() ? no_path : time_gap(z[e], zu);
    for (std::size_t j = 1; j < M; ++j)
      for (std::size_t d = 0; d < G; ++d) {
        cost_t best = no_path;
        for (std::size_t e = 0; e < G; ++e)
          if (gap[d][e] != no_path && shift[j - 1][e] != no_path) best = std::min(best, gap[d][e] + shift[j - 1][e]);
        shift[j][d] = best;
      }
    // a state with no completion (no path of cells): the state-free bound alone
    for (auto& row : shift)
      for (auto& x : row)
        if (x == no_path) x = 0;
  }

  // the fold, with provenance: step i, state d, point q came from (state c, point of F_{i-1}(c), point of T(c, d))
  std::vector<std::vector<std::vector<candidate>>> f(M + 1, std::vector<std::vector<candidate>>(G));
  std::vector<std::vector<std::vector<detail::chain_source>>> from(M + 1, std::vector<std::vector<detail::chain_source>>(G));
  f[0] = a;
  std::size_t carried = 0, held = 0;
  const std::size_t max_bytes = o.max_bytes ? o.max_bytes : detail::default_max_bytes();
  for (std::size_t i = 1; i <= M; ++i) {
    const cost_t rest = cost_t(M - i) * u_mem + z_mem;  // the least memory still to come
    const cost_t limit = o.memory_limit < rest ? -1 : o.memory_limit - rest;
    std::size_t here = 0;
    for (std::size_t d = 0; d < G; ++d) {
      std::vector<detail::chain_input> in;
      for (std::size_t c = 0; c < G; ++c)
        if (!f[i - 1][c].empty() && !t[c][d].empty()) in.push_back({&f[i - 1][c], &t[c][d], c});
      f[i][d] = detail::chain_merge(in, region[M - i], limit, from[i][d], shift[M - i][d]);
      here += f[i][d].size();
    }
    carried = std::max(carried, here);
    // the fold's tables count against max_bytes like the inner searches' (solve.hpp)
    held += here * (sizeof(candidate) + sizeof(detail::chain_source));
    if (held > max_bytes)
      throw runtime_error("search stopped: the exact fold of identical layers holds " + std::to_string(held >> 20) +
                          " MiB, past its limit of " + std::to_string(max_bytes >> 20) + " MiB, after " +
                          std::to_string(i) + " of " + std::to_string(M) + " layers (last boundary: " +
                          std::to_string(here) + " points); use --epsilon, --mode fast, fewer micro-batch counts, " +
                          "or a machine with more memory");
  }
  // the last layer and the head
  std::vector<candidate> all;
  struct pick { std::size_t state, fi, zi; };
  std::vector<pick> picks;
  for (std::size_t g = 0; g < G; ++g)
    for (auto& x : detail::sum_with_provenance(f[M][g], z[g], 0.0, o.memory_limit)) {
      all.push_back({x.time, x.memory, std::int32_t(picks.size()), -1});
      picks.push_back({g, std::size_t(x.ta), std::size_t(x.tb)});
    }
  detail::pareto_filter(all);

  frontier_result r;
  r.epsilon = 0;
  r.bounded = others > 0;
  r.width_fallback = !fa.note.empty() || !ft.note.empty() || !fz.note.empty() || known_fallback;
  r.exact = !r.width_fallback;
  r.max_width = 2;
  r.note = "exact: the " + std::to_string(L) + " identical layers folded over " + std::to_string(G) +
           " boundary layouts, every layout change allowed; branch and bound against fast mode's " +
           std::to_string(known.size()) + " points" +
           (others ? " (" + std::to_string(others) + " of them from the searches it is united with)" : "") +
           " kept at most " + std::to_string(carried) + " partial points per boundary";
  std::vector<int> sub;
  for (auto& x : all) {
    const pick& pk = picks[std::size_t(x.ta)];
    frontier_point fp{x.time, x.memory, std::vector<int>(p.nodes.size(), -1)};
    auto put = [&](const conditioned_frontier& cf, const std::vector<int>& remap, std::int32_t tag,
                   const std::vector<int>& target) {
      sub.assign(remap.size(), -1);
      cf.tr.recover(tag, sub);
      for (std::size_t k = 0; k < remap.size(); ++k)
        if (remap[k] >= 0) fp.choice[std::size_t(target.empty() ? remap[k] : target[k])] = sub[k];
    };
    put(fz, parts.rz, z[pk.state][pk.zi].ta, {});
    std::size_t state = pk.state, at = pk.fi;
    std::vector<int> target(parts.rt.size(), -1);
    for (std::size_t i = M; i >= 1; --i) {
      const auto& src = from[i][state][at];
      for (std::size_t k = 1; k < parts.rt.size(); ++k) target[k] = rb.instances[i][k - 1];
      put(ft, parts.rt, t[src.state][state][src.ti].ta, target);
      state = src.state;
      at = src.fi;
    }
    put(fa, parts.ra, a[state][at].ta, {});
    for (int c : fp.choice) detail::require<runtime_error>(c >= 0, "solve_repeated_exact: internal error, a node has no config");
    r.points.push_back(std::move(fp));
  }
  return r;
}

}  // namespace tensoropt
