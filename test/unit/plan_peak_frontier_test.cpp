// The planner's frontier held against the runtime peak (plan/peak_frontier.hpp): every
// point carries its replayed peak; without the bound search the points kept are exactly
// the additive frontier's points not dominated under (peak, time); with it (the default
// on these models) every plan of the additive frontier and of the exact (bound, time)
// frontier is matched by a reported plan as fast with a peak at most its peak / bound,
// and no budget pick is slower than the additive filter's; budget queries, plans,
// reports and the frontier file use the peak.
#include <doctest/doctest.h>
#include <tensoropt/plan/peak_search.hpp>
#include <tensoropt/plan/planner.hpp>
#include <cmath>
#include <memory>
#include "runtime_model_types.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_peak_frontier_test_file {

namespace to = tensoropt;

namespace {
struct setup {
  to::op_graph g;
  to::cluster cl;
  to::planner_options po;
};
template <class M>
setup make(int devices) {
  setup s{to::with_global_batch(to::lower<M>(), 16), to::cluster::nodes(1).gpus_per_node(devices), {}};
  s.po.baselines = false;
  s.po.micro_batches = {1, 2};
  s.po.build.prec = to::precisions::fp32;
  s.po.build.regenerate_dropout = true;
  return s;
}

/// The op configs of the plan `choice` of problem `b`.
std::vector<to::op_config> configs_of(const to::built_problem& b, const std::vector<int>& choice) {
  std::vector<to::op_config> c;
  for (std::size_t v = 0; v < choice.size(); ++v) c.push_back(b.configs[v][std::size_t(choice[v])]);
  return c;
}

/// The fastest point of `pts` whose peak (replayed from `additive`'s problems) fits `budget`.
std::optional<to::cost_t> fastest_time_within(const to::planned_frontier& additive, const std::vector<double>& peak,
                                              double budget) {
  std::optional<to::cost_t> t;
  for (std::size_t i = 0; i < additive.size(); ++i)
    if (std::ceil(peak[i]) <= budget && (!t || additive.points[i].time < *t)) t = additive.points[i].time;
  return t;
}

template <class M>
void check_model(const char* name, int devices) {
  auto s = make<M>(devices);
  s.po.runtime_peak = false;
  const auto additive = to::plan_frontier(s.g, s.cl, s.po);
  s.po.runtime_peak = true;
  s.po.peak_search.enabled = false;
  const auto pf = to::plan_frontier(s.g, s.cl, s.po);
  INFO(name << " on " << devices << " devices");
  REQUIRE(!additive.empty());
  REQUIRE(!pf.empty());
  CHECK(additive.memory_note.find("additive") != std::string::npos);
  CHECK(pf.memory_note.find("runtime peak") != std::string::npos);
  CHECK(pf.memory_note.find("the search optimized the additive memory, not the peak") != std::string::npos);
  std::vector<double> peak;
  for (std::size_t i = 0; i < additive.size(); ++i) {
    CHECK(additive.points[i].peak == 0);
    peak.push_back(to::point_peak(additive, i).peak());
  }
  // kept = the additive points not dominated under (peak, time), in the same order
  std::size_t j = 0;
  for (std::size_t i = 0; i < additive.size(); ++i) {
    bool dominated = false;
    for (std::size_t q = 0; q < additive.size(); ++q)
      dominated = dominated || (q != i && std::ceil(peak[q]) <= std::ceil(peak[i]) &&
                                additive.points[q].time <= additive.points[i].time);
    if (dominated) continue;
    REQUIRE(j < pf.size());
    CHECK(pf.points[j].time == additive.points[i].time);
    CHECK(pf.points[j].memory == additive.points[i].memory);
    CHECK(pf.points[j].choice == additive.points[i].choice);
    CHECK(double(pf.points[j].peak) == std::ceil(peak[i]));
    CHECK(pf.at(j).memory() == to::bytes(std::ceil(peak[i])));
    CHECK(pf.at(j).additive_memory() == to::bytes(double(additive.points[i].memory)));
    ++j;
  }
  CHECK(j == pf.size());
  for (std::size_t i = 1; i < pf.size(); ++i) {  // a staircase in both memories
    CHECK(pf.points[i].peak > pf.points[i - 1].peak);
    CHECK(pf.points[i].memory > pf.points[i - 1].memory);
    CHECK(pf.points[i].time < pf.points[i - 1].time);
  }
  // budget queries: the fastest plan whose peak fits, against every additive point
  for (std::size_t i = 0; i < additive.size(); ++i)
    for (double budget : {std::ceil(peak[i]), std::ceil(peak[i]) - 1, double(additive.points[i].memory)}) {
      const auto want = fastest_time_within(additive, peak, budget);
      const auto got = pf.fastest_within(to::bytes(budget));
      REQUIRE(want.has_value() == got.has_value());
      if (!got) continue;
      CHECK(got->point().time == *want);
      CHECK(got->memory() <= to::bytes(budget));
    }
  if (!pf.empty())
    CHECK(pf.no_fit_message(to::bytes(1)).find(to::format_bytes(pf.least_memory()->memory())) != std::string::npos);
  // attach_peaks on the additive frontier, on one thread and on three: the planner's points,
  // labelled, and the union with its peaks in `searched`
  for (const std::size_t threads : {std::size_t(1), std::size_t(3)}) {
    CAPTURE(threads);
    auto later = additive;
    for (auto& q : later.points) q.labels.clear();
    const auto f = to::attach_peaks(later, threads, s.po.solve.memory_limit);
    CHECK(f.searched == additive.size());
    REQUIRE(later.size() == pf.size());
    for (std::size_t i = 0; i < pf.size(); ++i) {
      CHECK(later.points[i].choice == pf.points[i].choice);
      CHECK(later.points[i].peak == pf.points[i].peak);
      CHECK(later.points[i].labels == pf.points[i].labels);
    }
    REQUIRE(later.searched.size() == additive.size());
    for (std::size_t i = 0; i < additive.size(); ++i)  // 0 where the replay stopped early, dominated
      CHECK((later.searched[i].peak == 0 || double(later.searched[i].peak) == std::ceil(peak[i])));
    to::complete_searched(later, threads);
    for (std::size_t i = 0; i < additive.size(); ++i) CHECK(double(later.searched[i].peak) == std::ceil(peak[i]));
  }
}
}  // namespace

namespace {
/// With the bound search: the guarantees of the file comment, against independent searches.
template <class M>
void check_bound_model(const char* name, int devices) {
  auto s = make<M>(devices);
  s.po.peak_search.enabled = false;
  const auto filtered = to::plan_frontier(s.g, s.cl, s.po);
  s.po.peak_search.enabled = true;
  const auto pf = to::plan_frontier(s.g, s.cl, s.po);
  INFO(std::string(name) << " on " << devices << " devices");
  REQUIRE(!pf.empty());
  CHECK(pf.memory_note.find("the search optimized exactly an upper bound of the peak") != std::string::npos);
  for (std::size_t i = 0; i < pf.size(); ++i) {
    const auto& q = pf.points[i];
    const auto& b = pf.problem_of(i);
    CHECK(to::cost_of(b.prob, q.choice).memory == q.memory);  // memory: the strategy's additive memory
    CHECK(to::cost_of(b.prob, q.choice).time == q.time);
    CHECK(double(q.peak) == std::ceil(to::point_peak(pf, i).peak()));
    CHECK(q.micro_batches == int(b.options.micro_batches));
    if (i > 0) {
      CHECK(q.peak > pf.points[i - 1].peak);
      CHECK(q.time < pf.points[i - 1].time);
    }
  }
  auto covered = [&](to::cost_t time, double memory) {
    for (auto& q : pf.points)
      if (q.time <= time && double(q.peak) <= memory) return true;
    return false;
  };
  for (auto& q : filtered.points) CHECK(covered(q.time, double(q.peak)));  // never worse than the filter
  std::size_t better = 0;
  for (int k : {1, 2}) {  // the exact (bound, time) frontier, searched here without bucketing
    auto bo = s.po.build;
    bo.micro_batches = k;
    const auto b = to::build_problem(s.g, s.cl, bo);
    const auto pb = to::make_peak_bound(b);
    to::peak_search_options o;
    std::size_t distinct = 0;
    for (double eps : {0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0})
      if (to::detail::cap_values(pb, o.epsilon = eps, distinct).size() <= s.po.peak_search.max_caps) break;
    const auto r = to::solve_peak_bound(pb);
    for (auto& q : r.points) {
      INFO("k = " << k << ": bound " << q.memory << ", time " << q.time << ", planner's epsilon " << o.epsilon);
      CHECK(covered(q.time, (1 + o.epsilon) * double(q.memory)));
    }
  }
  for (auto& q : pf.points) {  // budget picks: as fast as the filter's, often faster
    const auto mine = pf.fastest_within(to::bytes(double(q.peak)));
    const auto theirs = filtered.fastest_within(to::bytes(double(q.peak)));
    REQUIRE(mine.has_value());
    CHECK(mine->point().time == q.time);
    if (theirs) {
      CHECK(q.time <= theirs->point().time);
      better += q.time < theirs->point().time;
    } else {
      ++better;
    }
  }
  MESSAGE(std::string(name), " on ", devices, " devices: ", pf.size(), " points (", filtered.size(),
          " from the filter alone); ", better, " budgets get a faster plan");
}
}  // namespace

TEST_CASE("the bound search: every additive and every (bound, time) frontier plan is matched, no pick is slower") {
  check_bound_model<rt_test::mlp_of<16>>("mlp", 4);
  check_bound_model<rt_test::gpt_of<16>>("gpt", 3);
  check_bound_model<rt_test::gpt_of<16>>("gpt", 2);
  check_bound_model<rt_test::moe_of<16>>("moe", 2);
  check_bound_model<rt_test::cnn_of<16>>("cnn", 3);
}

TEST_CASE("the bound search is gated off on large problems, and the note says so") {
  auto s = make<rt_test::gpt_of<16>>(2);
  s.po.peak_search.max_cells = 100;
  const auto pf = to::plan_frontier(s.g, s.cl, s.po);
  CHECK(pf.memory_note.find("the search optimized the additive memory, not the peak (the bound search was not "
                            "affordable here)") != std::string::npos);
}

TEST_CASE("with no plan under the memory limit, the note says there was none to replay") {
  auto s = make<rt_test::gpt_of<16>>(2);
  s.po.solve.memory_limit = 1;  // one byte: nothing fits
  const auto pf = to::plan_frontier(s.g, s.cl, s.po);
  CHECK(pf.empty());
  CHECK(pf.memory_note.find("the search returned no plan to replay") != std::string::npos);
  CHECK(pf.memory_note.find("0.00x") == std::string::npos);
}

TEST_CASE("the planner's points carry their runtime peak and are the (peak, time) non-dominated ones") {
  check_model<rt_test::mlp_of<16>>("mlp", 4);
  check_model<rt_test::gpt_of<16>>("gpt", 4);
  check_model<rt_test::gpt_of<16>>("gpt", 3);
  check_model<rt_test::moe_of<16>>("moe", 2);
}

TEST_CASE("a budget on the additive memory can overrun the runtime; the planner's pick does not") {
  auto s = make<rt_test::gpt_of<16>>(4);
  s.po.runtime_peak = false;
  const auto additive = to::plan_frontier(s.g, s.cl, s.po);
  s.po.runtime_peak = true;
  const auto pf = to::plan_frontier(s.g, s.cl, s.po);
  int overruns = 0;
  for (std::size_t i = 0; i < additive.size(); ++i) {
    const auto budget = additive.at(i).memory();  // the additive memory of point i
    const double was = to::point_peak(additive, i).peak();
    if (was <= budget / to::bytes(1)) continue;
    ++overruns;  // the additive pick (point i) would exceed the budget on the runtime
    if (const auto p = pf.fastest_within(budget)) CHECK(p->memory() <= budget);
  }
  MESSAGE("gpt on 4 devices: ", overruns, " of ", additive.size(), " additive budget picks exceed the budget on the runtime");
  CHECK(overruns > 0);  // the model's frontier has transient working sets above the additive memory
}

TEST_CASE("the report shows the peak and the additive memory; the frontier file keeps the peak") {
  auto s = make<rt_test::gpt_of<16>>(4);
  auto pf = to::plan_frontier(s.g, s.cl, s.po);
  REQUIRE(!pf.empty());
  const auto r = to::make_report(pf, "gpt", pf.fastest());
  REQUIRE(r.points.size() == pf.size());
  bool differs = false;
  for (std::size_t i = 0; i < pf.size(); ++i) {
    CHECK(r.points[i].memory == double(pf.points[i].peak));
    CHECK(pf.points[i].peak <= to::bound_of(to::make_peak_bound(pf.problem_of(i)), pf.points[i].choice).bound());
    if (pf.points[i].peak != pf.points[i].memory) {
      CHECK(r.points[i].additive == double(pf.points[i].memory));
      differs = true;
    }
  }
  REQUIRE(differs);
  const std::string table = to::format_table(r);
  CHECK(table.find("peak/dev") != std::string::npos);
  CHECK(table.find("additive") != std::string::npos);
  CHECK(r.notes.find("the search optimized exactly an upper bound of the peak") != std::string::npos);
  std::size_t rows = 0;
  for (std::size_t at = table.find("    #"); at < table.size();) {  // the header and the rows keep 80 columns
    const std::size_t end = std::min(table.find('\n', at), table.size());
    CHECK(end - at <= 80);
    ++rows;
    at = end + 1;
  }
  CHECK(rows >= 3);
  // the union's points are labelled on demand (the kept points at once), each with its configs' labels
  REQUIRE(pf.searched.size() > pf.points.size());
  std::size_t unlabelled = 0;
  for (auto& q : pf.searched) unlabelled += q.labels.empty();
  CHECK(unlabelled > 0);
  // the union's dominated points whose replays stopped have no peak until complete_searched
  std::size_t no_peak = 0;
  for (auto& q : pf.searched) no_peak += q.peak == 0;
  CHECK(no_peak > 0);
  to::complete_searched(pf, 2);
  for (auto& q : pf.searched) {
    const to::built_problem* b = nullptr;
    for (auto& part : pf.parts)
      if (part.micro_batches == q.micro_batches) b = part.built.get();
    REQUIRE(b != nullptr);
    CHECK(q.labels == to::detail::config_labels(b->prob, q.choice));
    CHECK(double(q.peak) == std::ceil(to::predicted_peak(b->graph, configs_of(*b, q.choice), b->cl, b->options).peak()));
  }
  for (std::size_t i = 0; i < pf.size(); ++i)
    CHECK(pf.points[i].labels == to::detail::config_labels(pf.problem_of(i).prob, pf.points[i].choice));
  CHECK(to::read_frontier_json(to::write_frontier_json(pf.searched)) == pf.searched);  // sorted by memory, not peak
  const auto back = to::read_frontier_json(to::write_frontier_json(pf.points));
  REQUIRE(back.size() == pf.size());
  for (std::size_t i = 0; i < back.size(); ++i) {
    CHECK(back[i].peak == pf.points[i].peak);
    CHECK(back[i] == pf.points[i]);
  }
  CHECK_THROWS_WITH_AS(to::read_frontier_json(R"({"format": "tensoropt-frontier/1", "points": [{"time": 1,
    "memory": 10, "micro_batches": 1, "choice": [0], "labels": ["x"], "peak": -5}]})"),
                       doctest::Contains("points[0].peak"), to::format_error);
}

namespace {
/// The planner's replayer (per-config kernel states, sizes and parameter layouts and the
/// problem's additive memory looked up, layout pairs remembered) against the plain replay,
/// field by field, on every point and on plans mixing them: one replayer per micro-batch
/// count, so later plans read pairs earlier ones remembered, each plan replayed twice, and
/// a replayer without the pair table (max_pairs 0) alongside; given the additive memory
/// (as the peak attacher gives each point's), the same replay.
template <class M>
void check_replayer(const char* name, int devices) {
  auto s = make<M>(devices);
  s.po.runtime_peak = false;
  const auto pf = to::plan_frontier(s.g, s.cl, s.po);
  INFO(name << " on " << devices << " devices");
  REQUIRE(pf.size() >= 2);
  std::size_t compared = 0, stopped = 0;
  std::vector<std::unique_ptr<to::peak_replayer>> replayers(pf.parts.size()), plain(pf.parts.size());
  for (std::size_t i = 0; i < pf.size(); ++i) {
    const auto& b = pf.problem_of(i);
    auto& kept = replayers.at(std::size_t(pf.part_of[i]));
    if (!kept) kept = std::make_unique<to::peak_replayer>(b);
    auto& untabled = plain.at(std::size_t(pf.part_of[i]));
    if (!untabled) untabled = std::make_unique<to::peak_replayer>(b, 0);
    const to::peak_replayer& replay = *kept;
    // the point itself and the point with every other node taken from the next point of its k
    std::vector<std::vector<int>> plans{pf.points[i].choice};
    for (std::size_t j = 0; j < pf.size(); ++j)
      if (j != i && pf.part_of[j] == pf.part_of[i]) {
        auto mixed = pf.points[i].choice;
        for (std::size_t v = 0; v < mixed.size(); v += 2) mixed[v] = pf.points[j].choice[v];
        plans.push_back(std::move(mixed));
        break;
      }
    for (const auto& choice : plans) {
      std::vector<to::op_config> configs;
      for (std::size_t v = 0; v < choice.size(); ++v) configs.push_back(b.configs[v][std::size_t(choice[v])]);
      const auto want = to::predicted_peak(b.graph, configs, b.cl, b.options);
      for (const auto& got : {replay(choice), replay(choice), (*untabled)(choice)}) {
        CHECK(got.kept == want.kept);
        CHECK(got.ordered == want.ordered);
        CHECK(got.transient == want.transient);
        CHECK(got.op == want.op);
        CHECK(got.backward == want.backward);
        CHECK(got.fwd == want.fwd);
        CHECK(got.bwd == want.bwd);
        CHECK(got.update == want.update);
        CHECK(!got.cut);
      }
      // the additive memory given (as the peak attacher passes each point's own): the same
      // replay, that memory kept as given
      const auto given = replay.with_kept(choice, to::cost_t(want.kept) + 7);
      CHECK(given.kept == want.kept + 7);
      CHECK(given.ordered == want.ordered);
      CHECK(given.transient == want.ordered - (want.kept + 7));
      CHECK(given.fwd == want.fwd);
      CHECK(given.bwd == want.bwd);
      CHECK(!given.cut);
      // what the attacher passes is exactly the replay's own additive memory
      if (&choice == &plans.front()) CHECK(double(pf.points[i].memory) == want.kept);
      // stopped at a value the peak reaches: at the first site holding that much; at a
      // value above the peak: the whole replay
      const double most = want.peak();
      for (const double frac : {0.25, 0.9, 1.0}) {
        const double stop = frac * most;
        const auto got = replay(choice, [&] { return stop; });
        REQUIRE(got.cut);
        CHECK(got.ordered >= stop);
        CHECK(got.ordered <= most);
        if (got.op >= 0 && !got.backward) {  // the sites replayed hold less than the stop, but the last
          CHECK(got.fwd[std::size_t(got.op)] == got.ordered);
          for (std::size_t j = 0; j < std::size_t(got.op); ++j) CHECK(got.fwd[j] < stop);
        }
        ++stopped;
      }
      const auto whole = replay(choice, [&] { return most * 1.0001 + 1; });
      CHECK(!whole.cut);
      CHECK(whole.ordered == want.ordered);
      ++compared;
    }
  }
  CHECK(compared > pf.size());  // some mixed plans too
  CHECK(stopped == 3 * compared);
}
}  // namespace

TEST_CASE("the planner's replayer gives the plain replay's peak, field by field") {
  check_replayer<rt_test::gpt_of<16>>("gpt", 4);
  check_replayer<rt_test::moe_of<16>>("moe", 2);
  check_replayer<rt_test::cnn_of<16>>("cnn", 3);
}
}  // namespace plan_peak_frontier_test_file
