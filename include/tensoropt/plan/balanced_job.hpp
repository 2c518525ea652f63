// One balanced pipeline job (pipeline degree p, micro-batch count k, the balanced
// partition): its skip tests and its stage searches, in two steps the planner can put
// other jobs between (plan/pipeline_planner.hpp). The stage searches and the max-max
// merge are plan/pipeline_search.hpp's; the bounds are plan/pipeline_bounds.hpp's; the
// test the planner makes when it commits a searched job is plan/job_cover.hpp's.
#pragma once
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include "../search/max_max_merge.hpp"
#include "job_cover.hpp"
#include "pipeline_bounds.hpp"
#include "pipeline_search.hpp"

namespace tensoropt::detail {

/// One balanced job (see the file comment), run in two steps so that the planner can put
/// other jobs between them: `bound` builds the stage classes and runs the skip tests of
/// plan/pipeline_bounds.hpp; `search` tests the job again on the points committed since
/// and searches its stage classes. `known()` gives the points committed so far (a
/// staircase); `floor` is the job's order bound (a lower bound of its time).
///
/// What the bounds learn of the job's points, `reg`, does not depend on the points found
/// so far: the corner (node minima, node and edge minima, then the scalar least memories
/// and times, all of them for a job that is searched) and one line per fixed slope
/// (fixed_slopes), from the minima and, at the slopes the points found ask for (the
/// nearest fixed one), from the scalar searches. Every exact point of the job lies in it,
/// so when the points found cover it within 1 + epsilon, so do they cover the job: it is
/// skipped. The stage searches run within 1 + e_s = (1 + epsilon)^stage_epsilon_share
/// (the planner's stage epsilon), so their staircase, raised by 1 + e_s, bounds the exact
/// points too: it is tested within (1 + epsilon) / (1 + e_s). Whatever the points found, a
/// job that is
/// searched carries `reg` and its staircase (job_bound) to the planner, which tests them
/// against the points of the jobs before it when it commits the job (job_covered). Every
/// region a test sees contains that whole `reg` (fewer lines, a lower corner) or that
/// staircase's region (fewer classes), and the points it is tested against are some of
/// the points committed before the job, so a job skipped on the way is one the commit
/// test drops: the result is that of running the jobs one by one in order, on any number
/// of threads (plan/pipeline_planner.hpp).
class balanced_job {
 public:
  using known_fn = std::function<std::vector<known_point>()>;

  balanced_job(const op_graph& g, op_graph micro, const cluster& cl, const pipeline_options& o, index_t p, index_t k,
               const balanced_partition& bp, const solve_options& so, cost_t floor = 0)
      : g_(g), micro_(std::move(micro)), cl_(cl), o_(o), so_(so), p_(p), k_(k), bp_(bp), key_{int(p), int(k)} {
    const std::size_t P = std::size_t(p);
    rep_of_.resize(P);
    for (std::size_t s = 0; s < P; ++s) {
      rep_of_[s] = reps_.size();
      for (std::size_t r = 0; r < reps_.size(); ++r) {
        const std::size_t t = reps_[r];
        if (bp.layers[t] == bp.layers[s] && (t == 0) == (s == 0) && (t + 1 == P) == (s + 1 == P)) rep_of_[s] = r;
      }
      if (rep_of_[s] == reps_.size()) reps_.push_back(s);
    }
    sends_ = pipeline_sends(micro_, cl, p, bp.starts, o.build.prec);
    C_ = reps_.size();
    res_->resize(C_);
    setups_->resize(C_);
    reg_.sends = sends_;
    reg_.time = floor;
    cover_ = 1 + std::max(0.0, o.solve.epsilon);
    stair_cover_ = cover_ / (1 + std::max(0.0, so.epsilon));
  }

  /// The skip tests before any stage search; true when the job is skipped (result()).
  bool bound(const known_fn& known) {
    if (!o_.skip_by_bounds) return false;
    const auto tb = std::chrono::steady_clock::now();
    u_ = known ? known() : std::vector<known_point>{};
    // The minima, class by class (each class's stage problem is built when first needed):
    // node minima, then node and edge minima (no search). The classes taken so far give a
    // region that holds the whole job's, tested after each step, so a job their minima
    // cover builds no more of its classes. The fixed slopes come from the first class's
    // node minima.
    for (std::size_t c = 0; c < C_ && !jr_.skipped; ++c) {
      const stage_problem& sp = *cls(c).sp;
      for (const bool edges : {false, true}) {
        const strategy_cost m = stage_minima_corner(sp, so_.memory_limit, edges);
        if (m.memory == nothing_fits) {  // (stage_minima_corner: also when above the limit)
          jr_.skipped = jr_.over_limit = jr_.by_minima = true;
          break;
        }
        reg_.memory = std::max(reg_.memory, m.memory);
        reg_.time = std::max(reg_.time, m.time + sends_);
        if (c == 0 && !edges) {
          slopes_ = fixed_slopes(m.time, m.memory, so_.memory_limit);
          for (const double w : slopes_) reg_.lines.push_back({w, 0});
        } else if (edges && covered()) {  // the corner: no pass for the edges' lines
          jr_.skipped = jr_.by_minima = true;
          break;
        }
        const auto l = stage_minima_lines(sp, slopes_, so_.memory_limit, edges);
        for (std::size_t i = 0; i < region_slopes; ++i) reg_.lines[i].s = std::max(reg_.lines[i].s, l[i]);
        if (covered()) {
          jr_.skipped = jr_.by_minima = true;
          break;
        }
      }
    }
    // The scalar searches go class by class, and after each the region is tested again
    // (a pass over u): a job covered before every class is searched stops there. Least
    // memories go first stage first (it holds the most micro-batches in flight), least
    // times last stage first (the head and the loss). A job not skipped gets them all,
    // so that `reg` is whole for the planner's test.
    if (!jr_.skipped && known) u_ = known();
    while (!jr_.skipped && mem_done_ < C_ && next_memory() && !gate()) {}
    if (!jr_.skipped && !jr_.over_limit && gate()) {
      while (!jr_.skipped && time_done_ < C_) {
        next_time();
        jr_.skipped = covered();
      }
      while (!jr_.skipped && mem_done_ < C_ && next_memory()) jr_.skipped = covered();
    }
    if (!jr_.skipped && !jr_.over_limit) {
      while (mem_done_ < C_ && next_memory()) {}
      while (!jr_.over_limit && time_done_ < C_) next_time();
    }
    lines();
    if (jr_.over_limit) jr_.skipped = true;
    jr_.bound_seconds += since(tb);
    return jr_.skipped;
  }

  /// Tests the job again on the points committed since `bound` (more scalar lines where
  /// they ask for them), then searches its stage classes one at a time, the staircase of
  /// those searched so far tested after each (see below).
  job_result search(const known_fn& known) {
    if (jr_.skipped) return std::move(jr_);
    if (o_.skip_by_bounds && known) {
      const auto tb = std::chrono::steady_clock::now();
      u_ = known();
      jr_.skipped = covered();
      lines();
      jr_.bound_seconds += since(tb);
      if (jr_.skipped) return std::move(jr_);
    }
    // The stage classes are searched one at a time, and the frontier of those searched
    // so far is merged as it grows: every point of the job is a point of it combined with
    // the other classes' (max of times and of memories), so it lies at or above one of its
    // points, within the region. When every one of them is covered, the classes not yet
    // searched cannot change that, and the job is skipped (staircase_dominated). Classes
    // run in stage order; on megatron-145.6b, the last class first or the first and then
    // the last made 128-130 stage searches against 128, the same frontier.
    struct acc_point {
      cost_t time, memory;
      std::vector<std::int32_t> idx;
    };
    std::vector<acc_point> acc;
    for (std::size_t r = 0; r < C_; ++r) {
      const stage_setup& st = setup(r);  // (builds the class)
      solve_stage((*res_)[r], st, so_);
      jr_.count((*res_)[r], false);
      const auto& pts = (*res_)[r].fr.points;
      std::vector<acc_point> next;
      if (r == 0) {
        for (std::size_t i = 0; i < pts.size(); ++i) next.push_back({pts[i].time, pts[i].memory, {std::int32_t(i)}});
      } else {
        for (const auto& m : max_max_merge(acc, pts)) {
          acc_point q{m.time, m.memory, acc[std::size_t(m.a)].idx};
          q.idx.push_back(m.b);
          next.push_back(std::move(q));
        }
      }
      acc.swap(next);
      if (o_.skip_by_bounds && known && r + 1 < C_) {
        const auto tb = std::chrono::steady_clock::now();
        u_ = known();
        const bool beaten = !u_.empty() && staircase_dominated(u_, acc, reg_, key_, so_.memory_limit, stair_cover_);
        jr_.bound_seconds += since(tb);
        if (beaten) {
          jr_.skipped = jr_.after_searches = true;
          return std::move(jr_);
        }
      }
    }
    for (auto& q : acc) {
      auto make = [&g = g_, res = res_, rep_of = rep_of_, idx = q.idx, p = p_, k = k_, starts = bp_.starts,
                   mesh = cl_.mesh] {
        pipeline_plan pp;
        pp.degree = int(p);
        pp.micro_batches = int(k);
        pp.stage_begin = starts;
        pp.configs.resize(g.ops.size());
        pp.mesh = mesh;
        pp.receive_configs.resize(starts.size() - 1);
        for (std::size_t s = 0; s < starts.size(); ++s)
          put_stage(pp, g, (*res)[rep_of[s]], std::size_t(idx[rep_of[s]]), s, starts[s]);
        return pp;
      };
      jr_.points.push_back({q.time + sends_, q.memory, std::move(make)});
    }
    if (o_.skip_by_bounds) {
      auto b = std::make_shared<job_bound>();
      b->region = reg_;
      b->searched = line_searched_;
      b->cover = cover_;
      b->stair_cover = stair_cover_;
      for (const auto& q : acc) b->stair.push_back({q.time, q.memory, key_});
      for (std::size_t i = 0; i < region_slopes; ++i)
        for (std::size_t c = 0; c < C_ && !line_searched_[i]; ++c) {
          const auto [lo, hi] = line_bracket(*(*res_)[c].sp, (*res_)[c].fr, slopes_[i], so_.epsilon, so_.memory_limit);
          b->lo[i] = std::max(b->lo[i], lo);
          b->hi[i] = std::max(b->hi[i], hi);
        }
      b->line = [res = res_, setups = setups_, mode = o_.mode, slopes = slopes_, max_bytes = so_.max_bytes](std::size_t i) {
        cost_t s = 0;
        for (std::size_t c = 0; c < res->size(); ++c)
          s = std::max(s, stage_line(*(*res)[c].sp, setup_in(*res, *setups, mode, c), slopes[i], max_bytes));
        return s;
      };
      jr_.bound = std::move(b);
    }
    return std::move(jr_);
  }

  /// The result of a job skipped by `bound`.
  job_result result() { return std::move(jr_); }

 private:
  using setups = std::vector<std::optional<stage_setup>>;
  /// Each class is set up once (validated, its mode and split), when its first search comes.
  static const stage_setup& setup_in(const std::vector<stage_result>& res, setups& st, search_mode mode, std::size_t c) {
    if (!st[c]) st[c] = stage_setup_of(*res[c].sp, mode);
    return *st[c];
  }
  const stage_setup& setup(std::size_t c) {
    cls(c);
    return setup_in(*res_, *setups_, o_.mode, c);
  }
  /// Stage class c, its problem built when first asked for.
  stage_result& cls(std::size_t c) {
    stage_result& r = (*res_)[c];
    if (!r.sp) {
      const std::size_t s = reps_[c], P = std::size_t(p_);
      r = build_stage(micro_, bp_.starts[s], s + 1 < P ? bp_.starts[s + 1] : g_.ops.size(), cl_, o_, k_, p_,
                      index_t(s));
      jr_.build_seconds += r.build_seconds;
    }
    return r;
  }
  static double since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  bool covered() const { return !u_.empty() && check_region(u_, reg_, key_, so_.memory_limit, cover_).dominated; }
  // without a point of no more memory than the job's least, nothing can cover it
  bool gate() const { return !u_.empty() && u_.front().memory <= reg_.memory; }
  bool next_memory() {
    const stage_setup& st = setup(mem_done_);
    reg_.memory =
        std::max(reg_.memory, least_stage_memory(*(*res_)[mem_done_].sp, st, so_.memory_limit, so_.max_bytes));
    ++mem_done_;
    jr_.over_limit = reg_.memory == nothing_fits || reg_.memory > so_.memory_limit;
    return !jr_.over_limit;
  }
  void next_time() {
    const std::size_t i = C_ - 1 - time_done_++;
    const stage_setup& st = setup(i);
    reg_.time = std::max(reg_.time, least_stage_time(*(*res_)[i].sp, st, so_.max_bytes) + sends_);
  }
  // Scalar lines (up to max_lines), each at the fixed slope nearest to that of u where the
  // region is not yet covered, the largest over the classes, the region tested after each
  // class; no more once a line gains nothing there.
  void lines() {
    for (std::size_t line = 0; !jr_.skipped && !jr_.over_limit && gate(); ++line) {
      const region_check c = check_region(u_, reg_, key_, so_.memory_limit, cover_);
      if (c.dominated) {
        jr_.skipped = true;
        break;
      }
      const double w = line_weight(u_, c.at);
      if (line == o_.max_lines || w <= 0) break;
      std::size_t at = 0;
      for (std::size_t i = 1; i < region_slopes; ++i)
        if (std::abs(std::log(slopes_[i] / w)) < std::abs(std::log(slopes_[at] / w))) at = i;
      if (line_searched_[at]) break;
      line_searched_[at] = true;
      const cost_t before = reg_.least_time_at(c.at);
      for (std::size_t i = 0; i < C_ && !jr_.skipped; ++i) {
        const stage_setup& st = setup(i);
        reg_.lines[at].s = std::max(reg_.lines[at].s, stage_line(*(*res_)[i].sp, st, slopes_[at], so_.max_bytes));
        jr_.skipped = i + 1 < C_ && covered();
      }
      if (!jr_.skipped && reg_.least_time_at(c.at) == before) break;
    }
  }

  const op_graph& g_;
  op_graph micro_;
  cluster cl_;
  const pipeline_options& o_;
  solve_options so_;
  index_t p_, k_;
  balanced_partition bp_;
  std::pair<int, int> key_;
  std::vector<std::size_t> rep_of_, reps_;  ///< the class of each stage; each class's first stage
  std::shared_ptr<std::vector<stage_result>> res_ = std::make_shared<std::vector<stage_result>>();
  std::shared_ptr<setups> setups_ = std::make_shared<setups>();
  std::size_t C_ = 0, mem_done_ = 0, time_done_ = 0;
  cost_t sends_ = 0;
  job_region reg_;
  std::array<double, region_slopes> slopes_{};
  std::array<bool, region_slopes> line_searched_{};
  double cover_ = 1, stair_cover_ = 1;
  std::vector<known_point> u_;
  job_result jr_;
};

}  // namespace tensoropt::detail
