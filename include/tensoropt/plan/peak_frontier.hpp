// The planner's frontier held against the runtime peak: every reported plan carries
// its predicted peak (plan/memory_peak.hpp), and the points shown are those not
// dominated under (peak, iteration time).
//
// The search optimizes the additive memory `kept` (search/problem.hpp: a sum over ops
// and edges) exactly; the runtime's peak is kept plus a transient working set that is
// not additive (peak / kept measured 0.75x .. 2.19x over the runtime tests' frontiers).
// A budget query on `kept` can therefore pick a plan whose runtime peak exceeds the
// budget. Where it is affordable (exact mode, a micro-batch count whose problem has at most
// `peak_search_gate::max_cells` configs and edge cells: the runtime tests' models on up to
// 8 devices hold up to 50,422, gpt3-1.3b on 8 devices 539,222) the
// planner also searches an upper bound of the peak exactly (plan/peak_bound.hpp:
// kept' + the largest per-op site term; plan/peak_search.hpp: by enumerating that
// term's cap, bucketed under a stated epsilon past `max_caps` caps) and adds those
// plans to the candidates. Then every plan X has a reported plan at least as fast whose
// peak is at most X's bound (measured 1.08x .. 2.5x X's peak). Large models keep the
// additive search alone, and the note says so. `attach_peaks` replays every candidate
// and then:
//  - sets frontier_point::peak, which budget queries (search/query.hpp,
//    planned_frontier's fastest_within / no_fit_message) and plan::memory() use;
//  - drops the points whose peak exceeds the device's memory (the search held the
//    additive memory to it; a plan whose additive memory is over the device but whose
//    peak is under it is not found) and the points dominated under (peak, time): a
//    point is kept iff its peak is below the peak of every faster point kept. What is
//    left is a staircase in the peak (strictly rising as time falls), so every query
//    that assumes sorted points stays correct; each point's `memory` stays its
//    strategy's additive memory;
//  - keeps every point the additive search returned in `searched` (what --frontier-json
//    writes: the search's exact additive frontier), with its peak where its replay ran to
//    the end (a dominated plan's replay stops early: peak_attacher); complete_searched
//    gives every point its peak and config labels (the kept points have theirs at once);
//  - says how the frontier was computed (`describe`).
//
// Cost: one replay per point (linear in ops; each config's costs and sizes looked up; a
// dominated point's replay stops once it holds a faster point's peak), run on `threads`
// threads; the result does not depend on the thread count. The bound search
// runs up to `max_caps` restricted searches per micro-batch count where it runs.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "../search/frontier_json.hpp"
#include "memory_peak.hpp"
#include "peak_search.hpp"
#include "planned_frontier.hpp"

namespace tensoropt {

/// The replayed peak of point `i` of `pf` (its micro-batch graph, configs, cluster and build options).
inline memory_peak point_peak(const planned_frontier& pf, std::size_t i) {
  const auto& b = pf.problem_of(i);
  return predicted_peak(b.graph, pf.op_configs(i), b.cl, b.options);
}

/// Replays plans of one built problem with what does not depend on the plan looked up:
/// the graph's shape (memory_peak.hpp's peak_shape) once, and each config's kernel state,
/// sizes and parameter layouts (peak_sizes) once per config; the additive memory as the
/// problem sums it (evaluate's, term for term). What depends on a producer's and a
/// consumer's layouts (an input read in the producer's layout, a producer's shard kept) is
/// remembered per op input and pair of layouts as replays meet it (threads share the
/// table: two of them may compute one entry at once, with the same value), and each thread
/// keeps its replay's working arrays from one plan to the next. The same peak as
/// predicted_peak. On gpt3-1.3b (4 x V100-16GB, exact; `plan_bench --only gpt3-1.3b
/// --threads 2`) computing each op's kernel state and sizes per replay (analyze, then
/// cost_op per op twice) was about half of each replay's time: looked up, with the bound
/// search moved beside the jobs (plan/planner.hpp), the whole planning took 4.6 -> 3.9 s,
/// whose replays of 17,450 union points took 1.6 s on 2 threads; over 26,412 replays the
/// layouts looked up took it 4.64-4.67 -> 4.29-4.34 s of CPU, the pairs remembered
/// 4.14-4.18 s; the shape found once and the working arrays kept took the replays of its
/// 17,917 candidates 0.68-0.69 -> 0.59-0.60 s (one thread, the replay loop timed), the
/// whole planning 2.76-2.91 -> 2.72-2.78 s (one thread, the builds one after the other).
/// Each node's entry (where its sizes are, its kernel state, whether it recomputes, its
/// layout) is gathered once per replay instead of looked up through the config at every
/// site, and the peak attacher passes each point's additive memory instead of re-costing
/// it: the same 17,917 replays 0.58-0.60 -> 0.50-0.51 s (another machine, four runs each,
/// alternating), the whole planning 1.20-1.31 -> 1.17-1.28 s on two threads (six runs);
/// with each parameter's optimizer-state sharding found once per config (peak_sizes'
/// param_shards) instead of per replay, 0.50-0.51 -> 0.46-0.48 s.
class peak_replayer {
 public:
  /// Most entries of the table of layout pairs (bytes) by default; a problem with more
  /// computes them per replay.
  static constexpr std::size_t max_pair_entries = std::size_t(1) << 24;

  explicit peak_replayer(const built_problem& b, std::size_t max_pairs = max_pair_entries)
      : b_(&b), shape_(b.graph), at_(b.configs.size()) {
    const auto facts = analyze(b.graph);
    const cost_options co = b.options.cost();
    const std::size_t n = b.configs.size();
    for (std::size_t i = 0; i < n; ++i)
      for (const auto& c : b.configs[i]) {
        at_[i].push_back({sizes_.out_bytes.size(), sizes_.in_bytes.size(), sizes_.param_elements.size(),
                          cost_op(b.graph, int(i), c, b.cl, co, facts[i]).kernel_state.value, c.recompute});
        detail::append_op_sizes(b.graph, i, c, co.prec, b.cl.mesh, sizes_);
      }
    // each config's layout (configs with equal degrees share one), and per op input the
    // offset of its table over (producer layout, op layout)
    layout_.resize(n);
    layouts_.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<std::size_t> first;  // a config of each layout
      for (const auto& c : b.configs[i]) {
        std::size_t l = 0;
        while (l < first.size() && !b.configs[i][first[l]].same_layout(c)) ++l;
        if (l == first.size()) first.push_back(std::size_t(&c - b.configs[i].data()));
        layout_[i].push_back(std::uint32_t(l));
      }
      layouts_[i] = first.size();
    }
    std::size_t total = 0;
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t s = 0; s < b.graph.ops[j].inputs.size(); ++s) {
        pair_at_.push_back(total);
        total += layouts_[std::size_t(shape_.producer[shape_.ins[j] + s])] * layouts_[j];
      }
    if (total <= max_pairs) pairs_.reset(new std::atomic<unsigned char>[total]());
  }
  /// The replayed peak of the plan `choice` (a config index per node of the problem),
  /// stopped at the first site that holds at least `stop_at()` (memory_peak::cut).
  template <class StopAt = detail::never_stop>
  memory_peak operator()(const std::vector<int>& choice, StopAt&& stop_at = {}) const {
    return with_kept(choice, cost_of(b_->prob, choice).memory, std::forward<StopAt>(stop_at));
  }
  /// The same for a plan whose additive memory (cost_of's) the caller knows: `kept` goes to
  /// memory_peak::kept and transient as it is; the peak does not depend on it.
  template <class StopAt = detail::never_stop>
  memory_peak with_kept(const std::vector<int>& choice, cost_t kept, StopAt&& stop_at = {}) const {
    thread_local detail::peak_scratch w;
    thread_local std::vector<unsigned char> flags;
    thread_local std::vector<start> at;
    thread_local std::vector<std::uint32_t> lay;
    const auto& g = b_->graph;
    const std::size_t n = choice.size();
    flags.clear();
    at.resize(n);
    lay.resize(n);
    for (std::size_t j = 0; j < n; ++j) {
      at[j] = at_[j][std::size_t(choice[j])];
      lay[j] = layout_[j][std::size_t(choice[j])];
    }
    std::size_t k = 0;
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t s = 0; s < g.ops[j].inputs.size(); ++s, ++k) {
        const auto p = std::size_t(shape_.producer[k]);
        auto compute = [&] {
          const auto& cv = b_->configs[j][std::size_t(choice[j])];
          const auto& cu = b_->configs[p][std::size_t(choice[p])];
          const graph_edge ge{int(p), int(j), g.ops[j].inputs[s].tensor, int(s)};
          return (unsigned char)(4 | (detail::same_split(g, ge, cu, cv) ? 1 : 0) |
                                 (detail::kept_shard_ratio(g, ge, cu, cv) < 1 ? 2 : 0));
        };
        unsigned char v;
        if (pairs_) {  // bit 2: known
          auto& e = pairs_[pair_at_[k] + lay[p] * layouts_[j] + lay[j]];
          v = e.load(std::memory_order_relaxed);
          if (v == 0) {
            v = compute();
            e.store(v, std::memory_order_relaxed);
          }
        } else
          v = compute();
        flags.push_back(v & 3);
      }
    const chosen_plan plan{this, flags.data(), at.data()};
    return detail::replay_peak(g, shape_, plan, b_->options, double(kept), w, stop_at);
  }

 private:
  // [node][config]: where that config's sizes are in sizes_ (output, first input, first
  // parameter), its kernel state (bytes) and whether it recomputes
  struct start {
    std::size_t out, in, param;
    double state;
    bool recompute;
  };
  /// The plan `choice` as the replay reads it, looked up in the tables below (`at`: each
  /// node's entry of at_ for its config, gathered once per replay).
  struct chosen_plan {
    const peak_replayer* r;
    const unsigned char* flags;  // per input
    const start* at_of;          // per node
    double out_bytes(std::size_t j) const { return r->sizes_.out_bytes[at(j).out]; }
    double in_bytes(std::size_t j, std::size_t s) const { return r->sizes_.in_bytes[at(j).in + s]; }
    double param_elements(std::size_t j, std::size_t s) const { return r->sizes_.param_elements[at(j).param + s]; }
    const tensor_layout& param_layout(std::size_t j, std::size_t s) const {
      return r->sizes_.param_layout[at(j).param + s];
    }
    double param_shards(std::size_t j, std::size_t s) const { return r->sizes_.param_shards[at(j).param + s]; }
    double param_shard_elements(std::size_t j, std::size_t s) const {
      return r->sizes_.param_shard_elements[at(j).param + s];
    }
    bool recompute(std::size_t j) const { return at(j).recompute; }
    double kernel_state(std::size_t j) const { return at(j).state; }
    unsigned char input_flags(std::size_t j, std::size_t s) const { return flags[r->shape_.ins[j] + s]; }
    const start& at(std::size_t j) const { return at_of[j]; }
  };
  const built_problem* b_;
  detail::peak_shape shape_;
  std::vector<std::vector<start>> at_;
  detail::peak_sizes sizes_;  // append_op_sizes of every node's every config, in order
  std::vector<std::vector<std::uint32_t>> layout_;  // [node][config]: its layout's index
  std::vector<std::size_t> layouts_;                // [node]: layouts
  std::vector<std::size_t> pair_at_;                // [op input, in order]: its table's offset
  // per op input and (producer layout, op layout): 0 unknown, else 4 | the input flags' bits;
  // null where the tables would pass max_pair_entries
  std::unique_ptr<std::atomic<unsigned char>[]> pairs_;
};

/// When the planner also searches the peak bound (see the file comment).
struct peak_search_gate {
  bool enabled = true;
  std::size_t max_cells = 60000;  ///< a micro-batch count's problem has at most this many configs + edge cells
  std::size_t max_caps = 24;      ///< restricted searches per count; more caps are bucketed
};

/// What the bound search did, for the reports.
struct bound_search_note {
  std::size_t parts = 0, searched = 0;  ///< micro-batch counts, of them searched over the bound
  std::size_t candidates = 0, solved = 0;
  double epsilon = 0;                   ///< the largest cap bucketing used (0: exact)
};

/// What attach_peaks did, for the reports.
struct peak_filter {
  std::size_t searched = 0;  ///< points of the additive frontier
  std::size_t dropped = 0;   ///< candidates dominated under (peak, time) or above the memory limit
  std::size_t over = 0;      ///< of those, the ones dropped for the limit alone (no faster plan kept has less peak)
  double ratio_lo = 0, ratio_hi = 0;  ///< peak / additive memory over the points kept
  bound_search_note bound{};
  /// "the predicted runtime peak per plan (...); the search optimized ..."
  std::string describe() const {
    if (searched + bound.candidates == 0)
      return "the predicted runtime peak per plan (a replay of the executor's buffers): the search returned no "
             "plan to replay";
    char b[640];
    if (bound.searched > 0) {
      char eps[64] = "";
      if (bound.epsilon > 0) std::snprintf(eps, sizeof eps, " within a factor %.2f (cap buckets)", 1 + bound.epsilon);
      std::snprintf(b, sizeof b,
                    "the predicted runtime peak per plan (a replay of the executor's buffers, %.2fx .. %.2fx "
                    "the additive memory); the search optimized exactly an upper bound of the peak (additive "
                    "kept' + the largest per-op working set)%s on %zu of %zu micro-batch counts%s, and the additive "
                    "memory; of %zu candidates (%zu from the additive search, %zu from the bound search), %zu were "
                    "dropped: dominated under (peak, time), or %zu with a peak above the device",
                    ratio_lo, ratio_hi, eps, bound.searched, bound.parts,
                    bound.searched < bound.parts ? " (the others too large: additive memory only, then filtered)" : "",
                    searched + bound.candidates, searched, bound.candidates, dropped, over);
      return b;
    }
    std::snprintf(b, sizeof b,
                  "the predicted runtime peak per plan (a replay of the executor's buffers, %.2fx .. %.2fx "
                  "the additive memory); the search optimized the additive memory, not the peak (the bound "
                  "search was not affordable here), and %zu of its %zu points were dropped: dominated under "
                  "(peak, time), or %zu with a peak above the device",
                  ratio_lo, ratio_hi, dropped, searched, over);
    return b;
  }
};

/// Whether the bound search runs on `part` (see peak_search_gate).
inline bool peak_search_affordable(const plan_part& part, const peak_search_gate& gate) {
  // a part with no point has nothing within the memory limit, unless other counts' points cut it
  if (!gate.enabled || !part.built || part.mode != search_mode::exact || !part.frontier.exact ||
      (part.frontier.points.empty() && !part.frontier.bounded))
    return false;
  std::size_t cells = 0;
  for (auto& n : part.built->prob.nodes) cells += n.configs.size();
  for (auto& e : part.built->prob.edges) cells += e.memory.size();
  return cells <= gate.max_cells;
}

/// The plans of the exact (bound, time) frontier of `part` (affordable: peak_search_affordable),
/// labelled, with their strategies' additive memory; `note` counts the search. The bucketing
/// epsilon is the least of 0, 1, 2, 5, 10, 20, 50, 100 % that leaves at most gate.max_caps
/// caps (100 % when none does).
inline std::vector<frontier_point> bound_search_part(const plan_part& part, const peak_search_gate& gate, cost_t limit,
                                                     bound_search_note& note) {
  const auto pb = make_peak_bound(*part.built);
  peak_search_options o;
  for (double eps : {0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0}) {
    std::size_t distinct = 0;
    o.epsilon = eps;
    if (detail::cap_values(pb, eps, distinct).size() <= gate.max_caps) break;
  }
  o.solve.memory_limit = limit;
  o.groups = part.block.instances;
  auto r = solve_peak_bound(pb, o);
  ++note.searched;
  note.solved += r.solved;
  note.epsilon = std::max(note.epsilon, r.exact ? 0.0 : o.epsilon);
  frontier_result fr;
  for (auto& q : r.points) {
    q.memory = cost_of(part.built->prob, q.choice).memory;
    fr.points.push_back(std::move(q));
  }
  auto out = label_points(part.built->prob, fr, int(part.micro_batches));
  note.candidates += out.size();
  return out;
}

/// The (peak, time) dominance filter: candidates 0 .. n - 1 are in order of time
/// descending (of equal times, the least peak last); walking from the fastest, candidate
/// i is kept iff peak_at(i) is within `limit` and below the peak of every faster
/// candidate kept. Returns whether each is kept and adds to `over` those dropped for
/// `limit` alone (below the peak of every faster candidate kept, but above `limit`).
/// What is kept is a staircase: peak strictly rising as time falls.
template <class PeakAt>
std::vector<bool> keep_under_peak(std::size_t n, PeakAt peak_at, cost_t limit, std::size_t& over) {
  std::vector<bool> keep(n, false);
  cost_t best = max_problem_cost;
  for (std::size_t i = n; i-- > 0;) {
    const cost_t peak = peak_at(i);
    if (peak >= best) continue;
    if (peak > limit)
      ++over;
    else {
      keep[i] = true;
      best = peak;
    }
  }
  return keep;
}

/// The runtime-peak filter of the file comment in steps, for a caller that replays on
/// threads of its own (the planner: its last searches and the replays share one pool, so
/// no core waits for the other's last search before the replays begin). The candidates
/// are pf's points (with pf.part_of) and those `add`ed; `run` replays the candidates not
/// yet replayed and may be called by any number of threads at once; `add` and `finish`
/// are called by one thread, with no `run` under way. What `finish` leaves in `pf` does
/// not depend on the threads.
///
/// Replays stop early. Candidates are replayed fastest first (each batch, pf's points and
/// each `add`, in order of time), and a replay stops at the first site that holds at least
/// the least peak within `limit` of a faster candidate already replayed: its plan is then
/// dominated under (peak, time) whatever the rest of its replay, and dropped. The points
/// kept are those of the full replays (a dominated point changes nothing in the walk of
/// keep_under_peak); which replays stop depends on the threads' timing, what is kept does
/// not. On gpt3-1.3b (4 x V100-16GB, exact) 63 % of the candidates are dominated, their
/// peak reached on average half-way through the replay's sites: on one thread 11,035 of the
/// 17,917 replays stop, and the planning took 2.02 -> 1.91 s (`plan_bench --only gpt3-1.3b
/// --mode exact --threads 1`, the builds one after the other).
class peak_attacher {
 public:
  peak_attacher(planned_frontier& pf, cost_t limit)
      : pf_(&pf), limit_(limit), own_(pf.points.size()), replay_(pf.parts.size()) {
    batch(0);
  }
  /// Further candidates (e.g. from bound_search_part), with their parts; those the additive
  /// search already holds (same count and strategy) are left out.
  void add(std::vector<frontier_point> extra, const std::vector<int>& extra_part_of) {
    detail::require(extra.size() == extra_part_of.size(), "peak_attacher::add: one part per candidate");
    auto& pf = *pf_;
    const std::size_t from = pf.points.size();
    for (std::size_t i = 0; i < extra.size(); ++i) {
      bool dup = false;
      for (std::size_t j = 0; j < own_ && !dup; ++j)
        dup = pf.points[j].micro_batches == extra[i].micro_batches && pf.points[j].choice == extra[i].choice;
      if (dup) continue;
      pf.points.push_back(std::move(extra[i]));
      pf.part_of.push_back(extra_part_of[i]);
    }
    if (pf.points.size() > from) batch(from);
  }
  /// Replays every candidate not yet replayed (threads share the work: each takes the next).
  void run() {
    auto& pf = *pf_;
    for (std::size_t at; (at = next_++) < order_.size();) {
      const std::size_t i = order_[at];
      // the stop, found again where more candidates before this one are done meanwhile
      std::size_t seen = prefix_.load(std::memory_order_acquire);
      double stop = stop_at(at, seen);
      auto at_most = [&] {
        const std::size_t now = prefix_.load(std::memory_order_acquire);
        if (now != seen) stop = stop_at(at, seen = now);
        return stop;
      };
      const auto mp = replay_[std::size_t(pf.part_of[i])]->with_kept(pf.points[i].choice, pf.points[i].memory, at_most);
      peak_[i] = mp.cut ? -1.0 : mp.peak();
      done(at);
    }
  }
  /// Replays what is left on `threads` threads (0: every core), then sets every point's peak
  /// and drops the points dominated under (peak, time) and those whose peak exceeds the
  /// limit (the device): pf.points holds what is kept (without config labels: the caller
  /// labels what it keeps), pf.searched the additive search's own points, with their peaks
  /// where their replays ran to the end (complete_searched gives the others theirs).
  peak_filter finish(std::size_t threads) {
    auto& pf = *pf_;
    const std::size_t n = pf.points.size();
    if (next_.load() < n) {
      const std::size_t hw = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
      std::vector<std::thread> pool;
      for (std::size_t t = 1; t < std::min(hw, n - next_.load()); ++t) pool.emplace_back([this] { run(); });
      run();
      for (auto& t : pool) t.join();
    }
    peak_filter f;
    f.searched = own_;
    // the replays that ran to the end: the others are dominated (see the class comment)
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < n; ++i) {
      if (peak_[i] < 0) continue;
      // a peak never rounds below 1 byte, so 0 keeps meaning "not computed"
      pf.points[i].peak = std::max<cost_t>(1, detail::checked_cost(std::ceil(peak_[i]), "the predicted peak"));
      order.push_back(i);
    }
    // walk from the fastest (time descending; of equal times the least peak last, so it is met first)
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const auto& x = pf.points[a];
      const auto& y = pf.points[b];
      return x.time != y.time ? x.time > y.time : x.peak > y.peak;
    });
    const auto kept =
        keep_under_peak(order.size(), [&](std::size_t i) { return pf.points[order[i]].peak; }, limit_, f.over);
    std::vector<bool> keep(n, false);
    for (std::size_t i = 0; i < order.size(); ++i) keep[order[i]] = kept[i];
    // the kept points copied, the union moved to `searched` (what --frontier-json writes)
    std::vector<frontier_point> pts;
    std::vector<int> part_of;
    f.ratio_lo = 1e300;
    f.ratio_hi = 0;
    for (std::size_t i : order)
      if (keep[i]) {
        const double r = double(pf.points[i].peak) / double(std::max<cost_t>(1, pf.points[i].memory));
        f.ratio_lo = std::min(f.ratio_lo, r);
        f.ratio_hi = std::max(f.ratio_hi, r);
        if (i < own_) pts.push_back(pf.points[i]);
        else pts.push_back(std::move(pf.points[i]));  // a point of the bound's search: not in the union
        part_of.push_back(pf.part_of[i]);
      }
    if (pts.empty()) f.ratio_lo = f.ratio_hi = 0;
    f.dropped = n - pts.size();
    pf.points.resize(own_);
    pf.searched = std::move(pf.points);
    pf.points = std::move(pts);
    pf.part_of = std::move(part_of);
    return f;
  }

 private:
  // A new batch from candidate `from` on: its replayers, its candidates in order of time.
  void batch(std::size_t from) {
    auto& pf = *pf_;
    for (std::size_t i = from; i < pf.points.size(); ++i) {
      auto& r = replay_.at(std::size_t(pf.part_of.at(i)));
      if (!r) r = std::make_unique<peak_replayer>(pf.problem_of(i));
    }
    peak_.resize(pf.points.size(), 0.0);
    const std::size_t start = order_.size();
    for (std::size_t i = from; i < pf.points.size(); ++i) order_.push_back(i);
    std::stable_sort(order_.begin() + std::ptrdiff_t(start), order_.end(),
                     [&](std::size_t a, std::size_t b) { return pf.points[a].time < pf.points[b].time; });
    batches_.push_back(start);
    least_.resize(order_.size(), inf);
    done_.resize(order_.size(), 0);
    next_.store(start);
    prefix_.store(start);
  }
  // The least peak within the limit of the candidates faster than the one at position
  // `at` that are known (each earlier batch whole, this batch's done prefix up to `ready`).
  double stop_at(std::size_t at, std::size_t ready) const {
    const auto& pf = *pf_;
    const cost_t t = pf.points[order_[at]].time;
    double s = inf;
    for (std::size_t b = 0; b < batches_.size(); ++b) {
      const std::size_t lo = batches_[b], hi = std::min(b + 1 < batches_.size() ? batches_[b + 1] : order_.size(), ready);
      if (hi <= lo) break;
      // this batch's positions with a smaller time: a prefix of it (in order of time)
      const auto end = std::lower_bound(order_.begin() + std::ptrdiff_t(lo), order_.begin() + std::ptrdiff_t(hi), t,
                                        [&](std::size_t i, cost_t x) { return pf.points[i].time < x; });
      if (end != order_.begin() + std::ptrdiff_t(lo)) s = std::min(s, least_[std::size_t(end - order_.begin()) - 1]);
    }
    return s;
  }
  // Position `at` is replayed: the done prefix of its batch moves on as far as it can.
  void done(std::size_t at) {
    std::lock_guard lock(mu_);
    done_[at] = 1;
    std::size_t p = prefix_.load(std::memory_order_relaxed);
    const std::size_t start = batches_.back();
    while (p < order_.size() && done_[p]) {
      const double v = peak_[order_[p]];
      const double mine = v >= 0 && std::ceil(v) <= double(limit_) ? v : inf;
      least_[p] = std::min(p > start ? least_[p - 1] : inf, mine);
      ++p;
    }
    prefix_.store(p, std::memory_order_release);
  }
  static constexpr double inf = std::numeric_limits<double>::infinity();
  planned_frontier* pf_;
  cost_t limit_;
  std::size_t own_;  // the additive search's points (the first own_ candidates)
  std::vector<std::unique_ptr<peak_replayer>> replay_;  // per part, where a candidate needs it
  std::vector<double> peak_;            // per candidate: its peak, or -1 where its replay stopped
  std::vector<std::size_t> order_;      // candidates in the order they are replayed
  std::vector<std::size_t> batches_;    // where each batch begins in order_
  std::vector<double> least_;           // per position: the least peak within the limit up to it in its batch
  std::vector<unsigned char> done_;     // per position: replayed
  std::atomic<std::size_t> next_{0};    // the next position to replay
  std::atomic<std::size_t> prefix_{0};  // every position before it is replayed (under mu_)
  std::mutex mu_;
};

/// Sets every point's peak and drops the points of `pf` dominated under (peak, time)
/// and those whose peak exceeds `limit` bytes (the device; see the file comment), on
/// `threads` threads (0: every core). `extra` (with their parts in `extra_part_of`) are
/// further candidates, e.g. from bound_search_part; `searched` keeps only pf's own points.
/// The points kept are labelled (each node's config label). peak_attacher does the same in
/// steps, for a caller with threads of its own.
inline peak_filter attach_peaks(planned_frontier& pf, std::size_t threads = 0, cost_t limit = max_problem_cost,
                                std::vector<frontier_point> extra = {}, const std::vector<int>& extra_part_of = {}) {
  peak_attacher pa(pf, limit);
  pa.add(std::move(extra), extra_part_of);
  auto f = pa.finish(threads);
  pf.label_points(threads);
  return f;
}

/// Gives every point of pf.searched what the planner leaves out where no one asks for it:
/// its config labels and, where its replay stopped early (dominated: peak_attacher), its
/// peak, replayed to the end on `threads` threads (0: every core). What --frontier-json
/// writes. Throws invalid_argument where a point's count has no problem kept (every point
/// of `searched` has one when the planner returns).
inline void complete_searched(planned_frontier& pf, std::size_t threads = 0) {
  pf.label_searched();
  std::vector<std::size_t> left, part_of(pf.searched.size(), 0);
  std::vector<std::unique_ptr<peak_replayer>> replay(pf.parts.size());
  for (std::size_t i = 0; i < pf.searched.size(); ++i) {
    if (pf.searched[i].peak > 0) continue;
    const std::size_t at = pf.kept_part(pf.searched[i].micro_batches);
    if (!replay[at]) replay[at] = std::make_unique<peak_replayer>(*pf.parts[at].built);
    part_of[i] = at;
    left.push_back(i);
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t k; (k = next++) < left.size();) {
      const std::size_t i = left[k];
      const double peak = replay[part_of[i]]->with_kept(pf.searched[i].choice, pf.searched[i].memory).peak();
      pf.searched[i].peak = std::max<cost_t>(1, detail::checked_cost(std::ceil(peak), "the predicted peak"));
    }
  };
  const std::size_t hw = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(hw, std::max<std::size_t>(1, left.size() / 256)); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace tensoropt
