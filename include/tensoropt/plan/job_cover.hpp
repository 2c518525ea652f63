// Whether a searched pipeline job adds anything the jobs before it do not cover: the
// planner's test when it commits a job (plan/pipeline_planner.hpp), on what the job's
// bounds learned (plan/balanced_job.hpp) and its points.
//
// The test reads the job's region (its corner and one line per fixed slope,
// plan/pipeline_bounds.hpp) with every line at the value its scalar search gives, and the
// job's staircase. A line the job did not search is bracketed by its stage frontiers
// (line_bracket): when the region with the low ends is covered, so is the true one; when
// the region with the high ends is not (nor the staircase), neither is the true one; in
// between, the lines are searched one at a time (search_next_line), which on the
// Megatron frontiers happens for a few lines per run (the planner's notes count them).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <utility>
#include <vector>
#include "../search/frontier_result.hpp"
#include "pipeline_bounds.hpp"
#include "stage_problem.hpp"

namespace tensoropt::detail {

/// The share of the planner's epsilon the stage searches of balanced jobs take: they run
/// within (1 + epsilon)^share, the job bounds' regions are covered within 1 + epsilon
/// and the stage staircases within the rest (balanced_job). Measured on the whole
/// pipeline frontiers at epsilon 0.05 (`pipeline_bench --only M --threads 2`, one
/// session): 1 (the stage searches take it all, the staircases are tested for dominance
/// only) gave megatron-145.6b 83.3 s, megatron-1t 61.3 s; 0.75 68.4 and 58.5 s; 0.5 77.1
/// and 66.7 s (finer stage searches return more points, which cost more to search and
/// to replay).
inline constexpr double stage_epsilon_share = 0.75;

/// What a job's skip test knows that does not depend on the points found so far, kept for
/// the planner's test when it commits the job (see balanced_job): the corner (minima and
/// the scalar least memories and times) and one line per fixed slope (fixed_slopes), from
/// node and edge minima and, where searched, from the scalar searches (stage_line). Where a
/// line was not searched, the job's stage frontiers bracket the search's value: `lo` and
/// `hi` (job_covered). `stair`: the job's points, less the sends.
struct job_bound {
  job_region region;
  std::array<bool, region_slopes> searched{};
  std::array<cost_t, region_slopes> lo{}, hi{};
  std::function<cost_t(std::size_t)> line;  ///< the scalar line at slope i (max over the classes)
  std::vector<known_point> stair;
  double cover = 1, stair_cover = 1;        ///< the region's, and the staircase's (see balanced_job)
  std::size_t late_lines = 0;               ///< lines job_covered had to search
};

/// Whether the job of `b` adds nothing that `u` does not cover (see balanced_job): its
/// region with every line at its scalar search's value is covered within b.cover, or its
/// staircase within b.stair_cover. Decided on the brackets where they settle it (the
/// region with the low ends covers: so does the true one; with the high ends it does not:
/// nor does the true one); empty when they do not.
inline std::optional<bool> job_covered_by_brackets(const std::vector<known_point>& u, const job_bound& b,
                                                   std::pair<int, int> key, cost_t limit) {
  if (u.empty()) return false;
  auto test = [&](const std::array<cost_t, region_slopes>& v) {
    job_region r = b.region;
    for (std::size_t i = 0; i < region_slopes; ++i)
      if (!b.searched[i]) r.lines[i].s = std::max(r.lines[i].s, v[i]);
    return check_region(u, r, key, limit, b.cover).dominated ||
           staircase_dominated(u, b.stair, r, key, limit, b.stair_cover);
  };
  if (test(b.lo)) return true;
  if (!test(b.hi)) return false;
  return std::nullopt;
}

/// Searches the scalar line of `b` at the fixed slope nearest to that of u where the
/// region with the lines' low ends is not covered (the first not searched from there
/// when that one is); false when every line is searched.
inline bool search_next_line(const std::vector<known_point>& u, job_bound& b, std::pair<int, int> key,
                             cost_t limit) {
  job_region r = b.region;
  for (std::size_t i = 0; i < region_slopes; ++i)
    if (!b.searched[i]) r.lines[i].s = std::max(r.lines[i].s, b.lo[i]);
  const double w = line_weight(u, check_region(u, r, key, limit, b.cover).at);
  std::size_t at = region_slopes;
  for (std::size_t i = 0; i < region_slopes; ++i)
    if (!b.searched[i] && (at == region_slopes || (w > 0 && std::abs(std::log(r.lines[i].w / w)) <
                                                                std::abs(std::log(r.lines[at].w / w)))))
      at = i;
  if (at == region_slopes) return false;
  b.region.lines[at].s = std::max(b.region.lines[at].s, b.line(at));
  b.searched[at] = true;
  ++b.late_lines;
  return true;
}

/// job_covered_by_brackets, searching lines (search_next_line) until they settle it.
inline bool job_covered(const std::vector<known_point>& u, job_bound& b, std::pair<int, int> key, cost_t limit) {
  for (;;) {
    if (const auto c = job_covered_by_brackets(u, b, key, limit)) return *c;
    if (!search_next_line(u, b, key, limit)) break;
  }
  return check_region(u, b.region, key, limit, b.cover).dominated ||
         staircase_dominated(u, b.stair, b.region, key, limit, b.stair_cover);
}

/// Brackets of the scalar line of stage problem `sp` at slope w from its stage frontier
/// `f`, searched within 1 + eps: stage_line <= hi (the frontier's points are strategies),
/// and lo <= stage_line (every strategy kept within the limit has a point of f with no
/// more memory and at most 1 + eps times its time; the others cost at least the limit, or
/// w times the cap; a term counted at stage_line_term_cap makes the sum at least that;
/// each term of the search rounds down by less than one, and stage_line takes one more
/// per term).
inline std::pair<cost_t, cost_t> line_bracket(const stage_problem& sp, const frontier_result& f, double w, double eps,
                                              cost_t limit) {
  double least = 1e300, least_lo = 1e300;
  for (const auto& q : f.points) {
    least = std::min(least, double(q.memory) + w * double(q.time));
    least_lo = std::min(least_lo, double(q.memory) + w * double(q.time) / (1 + eps));
  }
  const double terms = double(stage_terms(sp));
  least_lo = std::min({least_lo, double(limit), w * double(sp.built.time_cap), stage_line_term_cap(sp)}) * (1 - 1e-9) -
             2 * terms - 2;
  const cost_t lo = least_lo > 0 ? cost_t(std::min(least_lo, 9.0e18)) : 0;
  const cost_t hi = least >= 9.0e18 ? cost_t(9.0e18) : cost_t(std::ceil(least));
  return {lo, hi};
}

}  // namespace tensoropt::detail
