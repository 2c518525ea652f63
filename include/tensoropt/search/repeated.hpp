// Repeated blocks as one unit: the frontier of L identical layers by binary powering.
//
// What. A problem whose nodes contain L >= 3 instances of one block (a transformer layer
// of repeat<Block, L>) is split at the block boundaries: A = everything before the
// second instance (embedding, the first layer), the L - 2 middle instances, and Z =
// everything after them (the last layer, head, loss). The middle instances must be
// identical (same configs and costs, same edges inside, the same edges into the next
// instance) and must touch nothing but their neighbours, and every edge between two
// instances must leave the boundary node o of the earlier one (the residual stream).
// `check_repeated` says which of these fails, in words.
//
// The restriction (the planner's "fast" mode). Every boundary between two identical
// layers takes one layout b: o_1 = ... = o_{L-2} in b, and o_0 in b (the boundaries next to
// non-repeated parts, the input of layer 0 and the output of the last layer, stay free).
// A layout is a class of o's configs whose edge rows are all identical (configs that
// differ only in recompute or optimizer sharding share one). Under it the cost splits:
//     F = | over b of  A(b) (+) T(b)^(L-2) (+) Z(b)
// where T(b) is the frontier of one middle layer with its input and output in layout b
// (solve_conditioned with the input boundary and the output node kept), A(b) the
// frontier of A with o_0 in b and Z(b) that of Z fed from layout b. T(b)^(L-2) is
// computed by binary powering: about 2 log2 L Minkowski sums instead of L - 2 folds.
// Every point keeps its provenance (which point of which power), so each returned
// point is a full per-node strategy whose cost re-computes exactly from the problem.
// Measured on the exact gpt3-1.3b frontiers (over all micro-batch counts) every point
// used one residual layout through all 24 layers; the planner checks the restriction
// against the unrestricted problem (plan/planner.hpp).
//
// The stream (optional: repeated_block::kin). A layer's residual adds other than its
// output (the attention block's x + attn(x) in a pre-LN transformer layer, add1, fed by
// the previous boundary and feeding this one) can be held to layout b as well, in every
// instance (the first and last included; their free boundaries stay free). Without it a
// layer's table joins three nodes of B layouts each (add1, the MLP's activation, the
// output: the triangle the MLP's residual edge closes), B^3 cell merges per layer; held,
// add1 takes b with the output and the join is about B^2 x 2. The tables come from the
// same conditioned solves with classes on the kept boundaries and on the tied adds
// (solve_conditioned's `tied`; each tied node shares an edge with a kept boundary, so the
// tie is exact, detail::stream_positions). Measured: megatron-1t, pp 12, k 384 (one job,
// one thread) 17.4 -> 5.2 s; its whole pipeline frontier 380 -> 230 s of CPU; gpt3-39b
// (plan_bench, epsilon 0.01) 82.9 -> 36.3 s of CPU. What it costs: held by hand on small
// models, fast mode is 0.43 % (gpt3-125m) and 1.48 % (moe-380m) slower than exact at some memory (unheld it equals
// exact there: plan_search_mode_test), so the planner holds the stream only where the
// tables are large (plan/search_mode.hpp), and its restriction check reports the loss.
//
// Speed. T is needed on its diagonal only (input and output in one layout), so only those
// cells are computed (solve_conditioned's classes). Before any composition, a layout whose
// convex lower bound (hull(A) (+) M hull(T) (+) hull(Z), detail/hull_bound.hpp) lies on or
// above points already known is skipped. Layouts are composed in order of their
// coarse least time, and each sum drops partial sums that points already returned cover
// after the least cost still to be added (detail/staircase_sum.hpp's dominance filter).
// Searches whose frontiers end in one union (the planner's micro-batch counts) bound each
// other the same way (`repeated_bounds`): after its coarse pass a search hands on the
// points it guarantees, each coarse point with time x (1 + delta)^(D + 2) (the fine
// composition covers a coarse point within that factor), and takes those of other searches
// into both its layout skipping and its sums' filter. A guaranteed point stands for a
// returned point at or below it, so the argument for points returned by this search
// holds for them unchanged: at epsilon 0 the union is exact, else within the bound.
//
// epsilon. The budget ln(1 + epsilon) is split: a share s to the three inner solves (each
// within (1 + e_in) = (1 + epsilon)^s by solve.hpp's bound), the rest over the D + 2
// nested sums of the powering and the final A (+) P (+) Z, each pruned with delta,
// (1 + delta)^(D + 2) = (1 + epsilon)^(1 - s); D <= 2 log2 (L - 2). A union adds no error.
// So every point of the restricted frontier has a returned point with no more memory and
// time within (1 + e_in)(1 + delta)^(D + 2) = 1 + epsilon; memory is exact. s is one half,
// or three quarters where the parts outside the middle layers hold more than four layers'
// nodes (detail::tables_share), whose general-engine tables then take the time: on
// wresnet-13b (A: the stem and 9 blocks, 101 ops; 8 x 8 V100-16GB, epsilon 0.05, k = 8,
// one thread) 43.7 s at one half, 37.1 s at three quarters, 35.3 s at 0.85; gpt3-39b,
// whose outside parts hold about two layers' nodes, went from 8.4-9.1 to 11.7 s at three
// quarters (its powering's sums take the time there), so it keeps one half.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>
#include "solve.hpp"
#include "detail/hull_bound.hpp"
#include "detail/repeated_split.hpp"
#include "detail/repeated_tables.hpp"
#include "detail/staircase_sum.hpp"

namespace tensoropt {

/// Why `rb` cannot be composed by powering in `p` (empty when it can).
inline std::string check_repeated(const problem& p, const repeated_block& rb) {
  return detail::split_repeated(p, rb).why_not;
}

/// Bounds shared between searches whose frontiers are joined into one union (the planner's
/// micro-batch counts). `exchange` is called once per search, after its coarse pass, with
/// the points this search guarantees (for each, a point it returns has no more memory and
/// no more time); it returns such points of other searches, which bound this one: a
/// layout whose coarse lower bound they dominate is skipped, and partial sums they cover
/// are dropped, as points this search returned would. The union then still covers every
/// point of this search within the epsilon bound, provided every point given back is
/// guaranteed by a search whose own bounds came only from others (the planner takes them
/// from the searches before it in one fixed order, so nothing depends on threads).
struct repeated_bounds {
  std::function<std::vector<frontier::point>(std::vector<frontier::point>)> exchange;
  /// Optional: the points `exchange` will give back, asked for before the coarse pass (so
  /// they can skip layouts before they are composed); called once, before `exchange`.
  std::function<std::vector<frontier::point>()> known;
  /// With `known`: the epsilon of the coarse per-layer solves that may skip the whole search
  /// before its exact ones (detail/repeated_tables.hpp); at or below the inner solves'
  /// epsilon, no such solves are made. 0.02: on gpt3-39b (8 x 8 V100-16GB, epsilon 0.01) it skips
  /// k = 4 to 64, where 0.1 skips none (the bound loses the factor 1 + skip_epsilon).
  double skip_epsilon = 0.02;
  /// Optional, with `known`: called once with the points `known` gave; a non-empty reason
  /// skips the whole search (it returns and guarantees nothing; the note is the reason), as
  /// the planner does when they lie at or below a lower bound of every strategy
  /// (plan/job_bounds.hpp). Taking it here rather than before the search lets the coarse
  /// per-layer solves run while the other searches are still to hand on their points.
  std::function<std::string(const std::vector<frontier::point>&)> skip_if;
  /// As skip_if, where the points cover this search's strategies only within (1 + epsilon)
  /// (the result is then not exact): the planner's test of fast mode's layout restriction
  /// (search/layout_restriction.hpp's covered_by). Like skip_if, monotone: more points only
  /// skip more.
  std::function<std::string(const std::vector<frontier::point>&)> skip_within;
  /// With `known` and skip_epsilon: the most scalar searches of the layer (lines) the test
  /// before the coarse solves takes (detail/repeated_tables.hpp, layouts_covered_by_lines).
  std::size_t max_lines = 12;
  /// The share of ln(1 + epsilon) the per-layer tables take (the rest goes to the powering's
  /// sums; see the header); negative: detail::tables_share's. Exact mode's K (search/
  /// repeated_exact.hpp) takes 0: its tables exact, the whole budget on the powering.
  double tables_share = -1;
  /// Optional, with `known`: where `known` would wait and the caller wants the wait used,
  /// the points `known` will give that are in so far (nullopt where they are all in; it may
  /// wait until the caller wants the wait used). Then, where no coarse
  /// per-layer solve can come before the exact ones (skip_epsilon at or below the inner
  /// solves' epsilon) and those points do not already skip the search (skip_if or the
  /// lines: more points only skip more), the exact per-layer solves run first, while the
  /// other searches finish. They are the solves this search makes next unless it is
  /// skipped, so the result is the same either way (a search skipped after all only spent
  /// them). Without it the searches of a planner whose per-layer solves dominate
  /// (wresnet-13b's A part) ran one at a time.
  std::function<std::optional<std::vector<frontier::point>>()> so_far;
  /// Optional, with `so_far`: the points `known` will give that are in now, without waiting
  /// (each search's points arrive whole, so more of them means new ones). The solves made
  /// early ask for them after each elimination and stop where new ones skip the search
  /// (skip_if or the lines, as above): it will be skipped once all are in, since more points
  /// only skip more, so stopping changes nothing but the time spent (where it were not
  /// skipped after all, the solves are made again). Measured on wresnet-13b (8 x 8
  /// V100-16GB, epsilon 0.05, 2 threads): three counts spent 16.9, 31.5 and 29.2 s on
  /// early solves and were then skipped by the lines; leaving them took the run from 197.0
  /// to 148.6 s wall (321.6 -> 257.4 s CPU), megatron-1t (epsilon 0.05) 15.3-16.2 -> 12.4 s
  /// (`plan_bench --only W --threads 2 --epsilon 0.05`, the builds run one after the other).
  std::function<std::vector<frontier::point>()> in_so_far;
  /// Optional: called after each elimination of this search's per-layer solves (as solve's
  /// progress callback), so that a caller can show a long search at work; an exception it
  /// throws ends the search.
  std::function<void(const search_progress&)> progress;
  /// The caller needs the points' costs only (exact mode's K, search/repeated_exact.hpp):
  /// the points come without strategies (empty `choice`), whose recovery through the
  /// powering's tree and the per-layer solves' traces is not made.
  bool costs_only = false;
};

namespace detail {
/// Whether the parts of `p` outside the middle layers of `rb` (3 or more instances) hold more
/// than four layers' nodes, so that their general-engine tables take the time.
inline bool large_ends(const problem& p, const repeated_block& rb) {
  const double layer = double(rb.instances[0].size());
  const double outside = double(p.nodes.size()) - double(rb.instances.size() - 2) * layer;
  return outside > 4 * layer;
}
/// The share of ln(1 + epsilon) given to the per-layer tables (the rest goes to the
/// powering's sums; see the header): three quarters where the ends are large, else half.
inline double tables_share(const problem& p, const repeated_block& rb) { return large_ends(p, rb) ? 0.75 : 0.5; }
frontier_result solve_repeated_split(const problem& p, const repeated_block& rb, const repeated_split& s,
                                     const solve_options& o, const repeated_bounds& bounds,
                                     const repeated_tables* ends = nullptr);
}  // namespace detail

/// The frontier of `p` under the restriction of the header (one layout b at every boundary
/// between the identical layers of `rb`), by binary powering. Every point re-costs
/// exactly with cost_of (its strategy left out under bounds.costs_only). `restricted` is set in the result and `note` states the
/// restriction. Throws invalid_argument when `rb` cannot be powered (see check_repeated).
inline frontier_result solve_repeated(const problem& p, const repeated_block& rb, const solve_options& o = {},
                                      const repeated_bounds& bounds = {}) {
  validate(p);
  detail::require(o.epsilon >= 0, "solve: epsilon must be >= 0 (0 means exact)");
  const auto s = detail::split_repeated(p, rb);
  detail::require(s.why_not.empty(), "solve_repeated: the block cannot be composed by powering: " + s.why_not);
  return detail::solve_repeated_split(p, rb, s, o, bounds);
}

namespace detail {
/// solve_repeated on a problem that validates, with `s` = split_repeated(p, rb) (which
/// powers): for callers that derive many problems from one checked problem, entry by
/// entry and with the same split (plan/pipeline_bounds.hpp's scalar searches). `ends`
/// (optional): A's and Z's tables already solved exactly with these options but epsilon
/// (search/repeated_exact.hpp's), taken instead of solving them again where the inner
/// solves are exact and no stream is tied (the tables are then the same).
inline frontier_result solve_repeated_split(const problem& p, const repeated_block& rb, const repeated_split& s,
                                            const solve_options& o, const repeated_bounds& bounds,
                                            const repeated_tables* ends) {
  const std::size_t L = rb.instances.size(), M = L - 2, nb = s.reps.size();
  const std::size_t depth = detail::power_depth(M);
  const double lam = std::log1p(o.epsilon);
  const double share = bounds.tables_share >= 0 ? std::min(1.0, bounds.tables_share) : detail::tables_share(p, rb);
  solve_options inner = o;
  inner.epsilon = std::expm1(lam * share);
  const double delta = o.epsilon > 0 ? std::expm1(lam * (1 - share) / double(depth + 2)) : 0.0;
  const cost_t limit = o.memory_limit;
  // The powering's tables count against max_bytes like the inner searches' (solve.hpp):
  // past it the search stops with the sizes reached, before the allocator would fail.
  const std::size_t max_bytes = o.max_bytes ? o.max_bytes : detail::default_max_bytes();
  std::size_t held_bytes = 0, composed = 0;
  auto hold = [&](const std::vector<detail::candidate>& v) {
    held_bytes += v.size() * sizeof(detail::candidate);
    if (held_bytes <= max_bytes) return;
    char b[64];
    const bool gib = max_bytes >= (std::size_t(1) << 30);
    const double unit = double(std::size_t(1) << (gib ? 30 : 20));
    std::snprintf(b, sizeof b, gib ? "%.1f GiB, past its limit of %.1f GiB" : "%.1f MiB, past its limit of %.1f MiB",
                  double(held_bytes) / unit, double(max_bytes) / unit);
    throw runtime_error("search stopped: fast mode's powering holds " + std::string(b) + ", after composing " +
                        std::to_string(composed) + " of " + std::to_string(nb) +
                        " boundary layouts (last sum: " + std::to_string(v.size()) +
                        " points); use --epsilon, fewer micro-batch counts, or a machine with more memory");
  };

  // Others' guaranteed points: asked for once, after this search's coarse tables (if any)
  // and before its coarse pass, so that a search waits for the others as late as it can.
  std::vector<detail::candidate> others;
  std::string skip_reason;
  bool skip_exact = true;  // skip_reason from skip_if (beaten outright), not skip_within
  auto staircase = [](const std::vector<frontier::point>& pts) {
    std::vector<detail::candidate> out;
    for (auto& q : pts) out.push_back({q.time, q.memory, -1, -1});
    detail::pareto_filter(out);
    return out;
  };
  auto take_known = [&] {
    const auto pts = bounds.known();
    if (bounds.skip_if) skip_reason = bounds.skip_if(pts);
    if (skip_reason.empty() && bounds.skip_within) {
      skip_reason = bounds.skip_within(pts);
      skip_exact = false;
    }
    others = staircase(pts);
  };
  // The whole search skipped: it returns nothing and guarantees nothing to the others.
  // `exact`: nothing is lost (beaten outright), else only within the epsilon bound.
  auto skip_whole = [&](std::string note, bool exact) {
    if (bounds.exchange) bounds.exchange({});
    frontier_result r;
    r.epsilon = o.epsilon;
    r.exact = exact;
    r.restricted = !exact;
    r.skipped = true;
    r.note = std::move(note);
    return r;
  };
  // The whole search is skipped before its exact per-layer solves when the known points lie
  // within (1 + epsilon) of a lower bound of every layout (detail/repeated_tables.hpp); it
  // then guarantees nothing to the others. First from scalar searches alone (each layout's
  // least time, least memory and lines, taken where the known points ask for them), then,
  // where those ran out of lines and the inner solves are finer than skip_epsilon, from
  // coarse tables: T's alone with A and Z below one corner, then A's and Z's too.
  std::optional<detail::repeated_tables> early;
  if (bounds.known) {
    const auto scalars = detail::layer_scalars_of(p, rb, s, max_bytes);
    if (bounds.so_far && !(bounds.skip_epsilon > inner.epsilon)) {
      auto skipped_by = [&](const std::vector<frontier::point>& pts) {
        if (bounds.skip_if && !bounds.skip_if(pts).empty()) return true;
        if (bounds.skip_within && !bounds.skip_within(pts).empty()) return true;
        std::size_t lines = 0;
        return detail::layouts_covered_by_lines(scalars, s, staircase(pts), limit, o.epsilon, max_bytes,
                                                bounds.max_lines, lines) == detail::lines_outcome::covered;
      };
      if (const auto in = bounds.so_far()) {
        if (!skipped_by(*in)) {
          // made early; left (and made again below, where the search is not skipped after all)
          // when points that arrive meanwhile skip the search
          struct left_early {};
          std::size_t seen = in->size();
          std::function<void(const search_progress&)> poll = bounds.progress;
          if (bounds.in_so_far)
            poll = [&](const search_progress& sp) {
              if (bounds.progress) bounds.progress(sp);
              auto now = bounds.in_so_far();
              if (now.size() <= seen) return;
              seen = now.size();
              if (skipped_by(now)) throw left_early{};
            };
          try {
            early = detail::repeated_parts(p, rb, s, inner, true, poll);
          } catch (const left_early&) {
            early.reset();
          }
        }
      }
    }
    take_known();
    if (!skip_reason.empty()) return skip_whole(skip_reason, skip_exact);
    std::size_t lines = 0;
    const auto by_lines =
        detail::layouts_covered_by_lines(scalars, s, others, limit, o.epsilon, max_bytes, bounds.max_lines, lines);
    if (by_lines == detail::lines_outcome::covered)
      return skip_whole("fast mode, skipped before its per-layer solves: points of other searches lie within "
                        "(1 + epsilon) of a lower bound of every boundary layout (scalar searches: least time, "
                        "least memory and " + std::to_string(lines) + " line" + (lines == 1 ? "" : "s") + ")",
                        false);
    if (by_lines == detail::lines_outcome::undecided && bounds.skip_epsilon > inner.epsilon) {
      solve_options co = o;
      co.epsilon = bounds.skip_epsilon;
      detail::repeated_tables cp;
      detail::solve_parts(p, rb, s, co, true, detail::part_t, cp, bounds.progress);
      const auto corner = detail::ends_corner(p, rb, s);
      char e[32];
      std::snprintf(e, sizeof e, "%g", bounds.skip_epsilon);
      std::string by;
      if (cp.t.note.empty() && detail::layouts_covered_by_t(detail::t_per_layout(cp.t, s), corner,
                                                            bounds.skip_epsilon, M, others, limit, o.epsilon)) {
        by = "the layer's per-layer solve at epsilon " + std::string(e) + ", the ends below their least time and memory";
      } else {
        detail::solve_parts(p, rb, s, co, true, detail::part_a | detail::part_z, cp, bounds.progress);
        if (cp.a.note.empty() && cp.t.note.empty() && cp.z.note.empty() &&
            detail::layouts_covered(detail::per_layout(cp, s), bounds.skip_epsilon, M, others, limit, o.epsilon))
          by = "per-layer solves at epsilon " + std::string(e);
      }
      if (!by.empty())
        return skip_whole("fast mode, skipped before its per-layer solves: points of other searches lie within "
                          "(1 + epsilon) of a lower bound of every boundary layout (" + by +
                              ", composed by the convex bound)",
                          false);
    }
  }
  const auto parts = [&] {
    if (early) return std::move(*early);
    if (!ends || inner.epsilon != 0 || !detail::stream_positions(p, rb, s).empty())
      return detail::repeated_parts(p, rb, s, inner, true, bounds.progress);
    detail::repeated_tables t;
    detail::solve_parts(p, rb, s, inner, true, detail::part_t, t, bounds.progress);
    t.a = ends->a;
    t.ra = ends->ra;
    t.z = ends->z;
    t.rz = ends->rz;
    return t;
  }();
  const auto& fa = parts.a;
  const auto& ft = parts.t;
  const auto& fz = parts.z;
  const auto& ra = parts.ra;
  const auto& rt = parts.rt;
  const auto& rz = parts.rz;
  auto tables = detail::per_layout(parts, s);
  auto& a_of = tables.a;
  auto& t_of = tables.t;
  auto& z_of = tables.z;
  struct pick { std::size_t b, ia, ip, iz; };
  std::vector<detail::candidate> all;  // ta: index into picks
  std::vector<pick> picks;
  std::vector<std::vector<detail::power_node>> powers(nb);
  std::vector<int> power_root(nb, -1);
  std::vector<std::vector<detail::candidate>> az_of(nb);
  std::vector<std::vector<std::int32_t>> fa_tag(nb), fz_tag(nb);
  for (std::size_t b = 0; b < nb; ++b) {
    for (auto& q : a_of[b]) fa_tag[b].push_back(q.ta);
    for (auto& q : z_of[b]) fz_tag[b].push_back(q.ta);
  }
  // A (+) T(b)^M (+) Z for layout b, each sum pruned with d; the power tree goes to pw.
  // `found` (if any): points already returned; a partial sum is dropped when one of them
  // dominates it plus the least cost of what is still to be added to it (for a power of
  // c instances: M - c instances at T's least time and least memory, and A (+) Z's).
  auto compose = [&](std::size_t b, double d, std::vector<detail::power_node>& pw, int& root,
                     std::vector<detail::candidate>& az, const std::vector<detail::candidate>* found) {
    for (auto& n : pw) held_bytes -= n.pts.size() * sizeof(detail::candidate);
    pw.clear();
    az.clear();
    if (a_of[b].empty() || z_of[b].empty() || t_of[b].empty()) return std::vector<detail::candidate>{};
    const cost_t t_time = t_of[b].back().time, t_memory = t_of[b].front().memory;
    az = detail::sum_with_provenance(a_of[b], z_of[b], d, limit,
                                     {found, cost_t(M) * t_time, cost_t(M) * t_memory});
    if (az.empty()) return std::vector<detail::candidate>{};
    auto rest = [&](std::size_t count) {
      return detail::dominance_filter{found, cost_t(M - count) * t_time + az.back().time,
                                      cost_t(M - count) * t_memory + az.front().memory};
    };
    pw.push_back({t_of[b], -1, -1, 1});
    hold(pw.back().pts);
    int base = 0, acc = -1;
    for (std::size_t r = M; r; r >>= 1) {
      if (r & 1) {
        if (acc < 0) acc = base;
        else {
          const std::size_t count = pw[std::size_t(acc)].count + pw[std::size_t(base)].count;
          detail::power_node x{
              detail::sum_with_provenance(pw[std::size_t(acc)].pts, pw[std::size_t(base)].pts, d, limit, rest(count)),
              acc, base, count};
          hold(x.pts);
          pw.push_back(std::move(x));
          acc = int(pw.size() - 1);
        }
      }
      if (r >> 1) {
        const std::size_t count = 2 * pw[std::size_t(base)].count;
        detail::power_node x{
            detail::sum_with_provenance(pw[std::size_t(base)].pts, pw[std::size_t(base)].pts, d, limit, rest(count)),
            base, base, count};
        hold(x.pts);
        pw.push_back(std::move(x));
        base = int(pw.size() - 1);
      }
    }
    root = acc;
    return detail::sum_with_provenance(az, pw[std::size_t(acc)].pts, d, limit, {found, 0, 0});
  };
  // Branch and bound over b. A coarse pass (each sum pruned with dc) gives, for every exact
  // point p of layout b's composition, a real point q with q.memory <= p.memory and
  // q.time <= c p.time, c = (1 + dc)^(depth + 2). Layouts are then taken in order of their
  // coarse least time; b is skipped when every q / c (time) of its coarse frontier is
  // dominated by a coarse point of a layout already kept (or costs exactly as one), whose
  // fine result covers that point as it covers its own exact points, or when the points
  // returned so far cover its convex lower bound (below). Deterministic: the order and the
  // bounds depend only on the problem and the points given by `bounds`. dc is the fine
  // delta where that is at least 0.002, else 0.01: a coarse pass much finer than 0.01
  // costs more than its bound saves. On gpt3-39b (epsilon 0.01, fine delta 0.00062) the
  // coarse pass at 0.002 took 2.2 s of the powering's 5.9 s over the four searched counts
  // (one thread); at 0.01 it takes 0.26 s and the powering 3.7 s in all (fewer layouts are
  // skipped by the looser bound, more by the cheaper coarse points), at 0.02 3.2 s, at
  // 0.05 7.8 s. Where the fine delta is coarser (megatron-1t at epsilon 0.05: 0.0031; the
  // pipeline's stage searches) the fine delta itself: 0.01 there took megatron-145.6b's
  // pipeline frontier 55.5 -> 57.4-58.9 s and megatron-1t's flat one 27.7 s at 0.02.
  const double dc = delta >= 0.002 ? delta : 0.01;
  const double c_bound = std::pow(1 + dc, double(depth + 2));
  // Before its coarse pass, a layout is skipped when the coarse points of the layouts
  // composed so far (and the points of other searches, `bounds.known`) lie at or below every
  // point above its convex lower bound (hull(A) (+) M hull(T) (+) hull(Z),
  // detail/hull_bound.hpp): every exact point p of it then has a real point k <= p of a
  // composed layout (covered as that layout's own points are) or a guaranteed point. The
  // bound holds for sums of the inner tables' points, which cover the exact ones within
  // (1 + e_in) = (1 + epsilon)^share; the powering covers them within (1 + epsilon)^(1 -
  // share). A point returned (or guaranteed by another search) covers a sum by itself, so
  // against those the test takes that slack: k.time <= (1 + epsilon)^(1 - share) sum.time
  // keeps every point within (1 + epsilon).
  // Layouts go in order of their least time (A's, M T's and Z's added), most promising first.
  const double slack = o.epsilon > 0 ? std::expm1(lam * (1 - share)) : 0.0;
  std::vector<std::vector<detail::candidate>> coarse(nb);
  std::vector<detail::hull_chain> chain(nb);
  std::vector<std::size_t> order, by_least;
  std::size_t hull_skipped = 0;
  for (std::size_t b = 0; b < nb; ++b)
    if (!a_of[b].empty() && !t_of[b].empty() && !z_of[b].empty()) by_least.push_back(b);
  auto least_time = [&](std::size_t b) {
    return a_of[b].back().time + cost_t(M) * t_of[b].back().time + z_of[b].back().time;
  };
  std::stable_sort(by_least.begin(), by_least.end(),
                   [&](std::size_t x, std::size_t y) { return least_time(x) < least_time(y); });
  {
    std::vector<detail::power_node> pw;
    std::vector<detail::candidate> az;
    auto composed_coarse = others;
    int root = -1;
    for (std::size_t b : by_least) {
      const auto ha = detail::lower_hull(a_of[b]), ht = detail::lower_hull(t_of[b]), hz = detail::lower_hull(z_of[b]);
      chain[b] = detail::hull_sum({&ha, &ht, &hz}, {1, cost_t(M), 1});
      if (detail::covers_chain(composed_coarse, chain[b], limit) || detail::covers_chain(others, chain[b], limit, slack)) {
        ++hull_skipped;
        continue;
      }
      coarse[b] = compose(b, dc, pw, root, az, nullptr);
      if (coarse[b].empty()) continue;
      order.push_back(b);
      composed_coarse.insert(composed_coarse.end(), coarse[b].begin(), coarse[b].end());
      detail::pareto_filter(composed_coarse);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return coarse[x].back().time < coarse[y].back().time; });
  std::vector<detail::candidate> kept;  // staircase of the coarse points of kept layouts
  std::vector<detail::candidate> found;  // staircase of the points returned so far (the filter of compose)
  std::size_t skipped = 0, outside = 0;
  if (bounds.exchange) {
    // This search guarantees its coarse points with time x (1 + delta)^(depth + 2): the
    // fine composition covers each within that factor, and a skipped layout's points are
    // covered by the points that skipped it.
    const double f = std::pow(1 + delta, double(depth + 2));
    std::vector<detail::candidate> mine;
    for (auto& c : coarse) mine.insert(mine.end(), c.begin(), c.end());
    detail::pareto_filter(mine);
    std::vector<frontier::point> guaranteed;
    for (auto& q : mine)
      guaranteed.push_back(
          {delta > 0 ? std::max(q.time, cost_t(std::ceil((long double)(q.time) * f))) : q.time, q.memory, -1});
    for (auto& q : bounds.exchange(std::move(guaranteed))) {
      kept.push_back({q.time, q.memory, -1, -1});
      found.push_back({q.time, q.memory, -1, -1});
    }
    detail::pareto_filter(kept);
    detail::pareto_filter(found);
    outside = kept.size();
  }
  auto same_costs = [](const std::vector<detail::candidate>& x, const std::vector<detail::candidate>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i].time != y[i].time || x[i].memory != y[i].memory) return false;
    return true;
  };
  std::vector<std::size_t> kept_layouts;
  for (std::size_t b : order) {
    // a layout whose three parts cost exactly as a kept one's adds only equal points
    bool twin = false;
    for (std::size_t k : kept_layouts)
      twin = twin || (same_costs(a_of[b], a_of[k]) && same_costs(t_of[b], t_of[k]) && same_costs(z_of[b], z_of[k]));
    // the same bound against the points returned so far (and those of other searches),
    // which cover a sum on their own: within the slack s
    if (twin || detail::covers_chain(found, chain[b], limit, slack)) { ++skipped; continue; }
    bool dominated = true;
    for (auto& q : coarse[b]) {
      auto it = std::upper_bound(kept.begin(), kept.end(), q.memory,
                                 [](cost_t m, const detail::candidate& k) { return m < k.memory; });
      if (it == kept.begin() || double(std::prev(it)->time) * c_bound > double(q.time)) { dominated = false; break; }
    }
    if (dominated) { ++skipped; continue; }
    kept_layouts.push_back(b);
    auto merged = kept;
    merged.insert(merged.end(), coarse[b].begin(), coarse[b].end());
    detail::pareto_filter(merged);
    kept.swap(merged);
    std::vector<detail::candidate> az;
    const auto apz = compose(b, delta, powers[b], power_root[b], az, &found);
    ++composed;
    az_of[b].swap(az);
    for (auto& x : apz) {
      all.push_back({x.time, x.memory, std::int32_t(picks.size()), -1});
      picks.push_back({b, std::size_t(x.ta), std::size_t(x.tb), 0});
      found.push_back(x);
    }
    detail::pareto_filter(found);
  }
  detail::pareto_filter(all);

  frontier_result r;
  r.epsilon = o.epsilon;
  r.exact = false;
  r.restricted = true;
  r.prune_depth = std::max({fa.prune_depth, ft.prune_depth, fz.prune_depth}) + depth + 2;
  r.max_width = 2;
  r.width_fallback = !fa.note.empty() || !ft.note.empty() || !fz.note.empty();
  const std::size_t stream = detail::stream_positions(p, rb, s).size();
  r.note = "fast mode: one layout at every boundary between the " + std::to_string(L) +
           " identical layers (boundaries next to non-repeated parts free)" +
           (stream ? " and at the " + std::to_string(stream) + " residual add" + (stream == 1 ? "" : "s") +
                         " inside each layer"
                   : std::string()) +
           "; " + std::to_string(nb) +
           " boundary layouts, each composed by binary powering (" + std::to_string(hull_skipped) +
           " skipped by a convex lower bound before composing, " + std::to_string(skipped) + " more by bounds" +
           (bounds.exchange ? ", with " + std::to_string(outside) + " points of other searches" : std::string()) + ")";
  if (bounds.costs_only) {
    for (auto& x : all) r.points.push_back({x.time, x.memory, {}});
    return r;
  }
  std::vector<int> sub;
  for (auto& x : all) {
    const pick& pk = picks[std::size_t(x.ta)];
    frontier_point fp{x.time, x.memory, std::vector<int>(p.nodes.size(), -1)};
    auto put = [&](const conditioned_frontier& f, const std::vector<int>& remap, std::int32_t tag,
                   const std::vector<int>& target) {
      sub.assign(remap.size(), -1);
      f.tr.recover(tag, sub);
      for (std::size_t i = 0; i < remap.size(); ++i)
        if (remap[i] >= 0) fp.choice[std::size_t(target.empty() ? remap[i] : target[i])] = sub[i];
    };
    const auto& az = az_of[pk.b][pk.ia];  // (index into A, index into Z)
    put(fa, ra, fa_tag[pk.b][std::size_t(az.ta)], {});
    put(fz, rz, fz_tag[pk.b][std::size_t(az.tb)], {});
    // walk the powering tree: (node, point, first middle instance)
    struct item { int node; std::size_t point, first; };
    std::vector<item> stack{{power_root[pk.b], pk.ip, 1}};
    const auto& pw = powers[pk.b];
    std::vector<int> target(rt.size(), -1);
    while (!stack.empty()) {
      const item it = stack.back();
      stack.pop_back();
      const auto& nd = pw[std::size_t(it.node)];
      const auto& q = nd.pts[it.point];
      if (nd.left < 0) {
        for (std::size_t i = 1; i < rt.size(); ++i) target[i] = rb.instances[it.first][i - 1];
        put(ft, rt, q.ta, target);
      } else {
        stack.push_back({nd.left, std::size_t(q.ta), it.first});
        stack.push_back({nd.right, std::size_t(q.tb), it.first + pw[std::size_t(nd.left)].count});
      }
    }
    for (int c : fp.choice) detail::require<runtime_error>(c >= 0, "solve_repeated: internal error, a node has no config");
    r.points.push_back(std::move(fp));
  }
  return r;
}
}  // namespace detail

}  // namespace tensoropt
