// Search modes: fast (identical layers composed by powering) against exact on zoo models,
// the mode choice and its reasons, thread-count independence, baselines of every degree.
#include <doctest/doctest.h>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/planner.hpp>
#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_search_mode_test_file {

namespace to = tensoropt;

namespace {
struct cost_pair {
  to::cost_t time, memory;
  bool operator==(const cost_pair&) const = default;
};
std::vector<cost_pair> costs(const to::frontier_result& r) {
  std::vector<cost_pair> c;
  for (auto& q : r.points) c.push_back({q.time, q.memory});
  return c;
}
to::cluster zoo_cluster(const to::models::model_info& m, to::index_t devices) {
  const to::index_t per = std::min<to::index_t>(devices, m.gpus_per_node);
  return to::cluster::nodes(devices / per).gpus_per_node(per).gpu(to::gpus::find(m.gpu));
}
// zoo model `name`'s problem on `devices` at k micro-batches
to::built_problem zoo_problem(const std::string& name, const to::cluster& cl, to::index_t k) {
  to::build_options bo;
  bo.micro_batches = k;
  return to::build_problem(to::models::find(name).lower(), cl, bo);
}
}  // namespace

TEST_CASE("fast mode against exact on zoo models where exact finishes") {
  // equal: measured, the exact frontiers of these GPT models keep one residual layout
  // through the stack; on bert-large (k = 32) 4,143 of 7,996 exact points change layout and
  // fast mode is at most 0.09 % slower at any memory.
  struct workload { const char* model; to::index_t devices, k; bool equal; };
  const workload ws[] = {{"gpt3-125m", 2, 64, true}, {"gpt3-1.3b", 4, 16, true}, {"moe-380m", 2, 32, true},
                         {"bert-large", 4, 32, false}};
  for (const auto& w : ws) {
    const std::string name = w.model;
    CAPTURE(name);
    const auto cl = zoo_cluster(to::models::find(w.model), w.devices);
    const auto b = zoo_problem(name, cl, w.k);
    const auto mc = to::choose_mode(b.prob, b.graph, to::search_mode::fast);
    REQUIRE(mc.mode == to::search_mode::fast);
    to::solve_options so;
    so.memory_limit = to::cost_t(cl.gpu_spec.capacity.value);
    const auto fast = to::solve_repeated(b.prob, mc.block, so);
    const auto exact = to::solve(b.prob, so);
    REQUIRE(!exact.points.empty());
    CHECK(fast.restricted);
    // every fast point is a real strategy, so it lies on or behind the exact frontier
    for (auto& q : fast.points) {
      const auto c = to::cost_of(b.prob, q.choice);
      CHECK(c.time == q.time);
      CHECK(c.memory == q.memory);
      bool behind = false;
      for (auto& e : exact.points) behind = behind || (e.memory <= q.memory && e.time <= q.time);
      CHECK(behind);
    }
    // the restriction as stated: every exact point whose strategy keeps one layout at the
    // boundaries between identical layers is found (or beaten) by fast mode
    const auto sp = to::detail::split_repeated(b.prob, mc.block);
    std::size_t one_layout = 0;
    double worst = 0;
    for (auto& e : exact.points) {
      const auto& inst = mc.block.instances;
      const int g0 = sp.group[std::size_t(e.choice[std::size_t(inst[0][std::size_t(sp.boundary)])])];
      bool one = true;
      for (std::size_t l = 1; l + 1 < inst.size(); ++l)
        one = one && sp.group[std::size_t(e.choice[std::size_t(inst[l][std::size_t(sp.boundary)])])] == g0;
      const to::frontier_point* best = nullptr;
      for (auto& q : fast.points)
        if (q.memory <= e.memory) best = &q;
      REQUIRE(best);
      worst = std::max(worst, double(best->time) / double(e.time) - 1);
      if (!one) continue;
      ++one_layout;
      CHECK(best->time <= e.time);
    }
    CHECK(one_layout > 0);
    if (w.equal) CHECK(costs(fast) == costs(exact));
    MESSAGE(name, ": ", fast.points.size(), " fast points, ", exact.points.size(), " exact (", one_layout,
            " with one layout); fast at most ", 100 * worst, " % slower");
    const auto check = to::check_restriction(b.prob, fast, so.memory_limit);
    CHECK(check.compared >= 1);
    if (w.equal) CHECK(check.gap == 0);
    // the planner's check folds the identical layers exactly: the same optima as the general search
    const auto folded = to::check_restriction(b.prob, fast, so.memory_limit, {}, &mc.block);
    CHECK(folded.weights == check.weights);
    CHECK(folded.compared == check.compared);
    CHECK(folded.gap == check.gap);
  }
}

TEST_CASE("a single-objective problem folds to the general search's optimum") {
  // the restriction check's weighted sums (every time 0): the exact fold skips its
  // branch-and-bound frontier and must still find the least sum, with a strategy that costs it
  for (const char* model : {"gpt3-125m", "moe-380m"}) {
    CAPTURE(model);
    const auto cl = zoo_cluster(to::models::find(model), 2);
    const auto b = zoo_problem(model, cl, 16);
    const auto mc = to::choose_mode(b.prob, b.graph, to::search_mode::fast);
    REQUIRE(!mc.block.instances.empty());
    for (double w : {0.0, 1e-3, 1.0}) {
      CAPTURE(w);
      to::problem q = b.prob;
      q.memory_offset = 0;
      for (auto& n : q.nodes)
        for (auto& c : n.configs) c = {c.label, 0, to::cost_t(double(c.time) + w * double(c.memory))};
      for (auto& e : q.edges)
        for (std::size_t i = 0; i < e.time.size(); ++i) {
          e.memory[i] = to::cost_t(double(e.time[i]) + w * double(e.memory[i]));
          e.time[i] = 0;
        }
      const auto general = to::solve(q);
      const auto folded = to::solve_repeated_exact(q, mc.block);
      REQUIRE(general.points.size() == 1);
      REQUIRE(folded.points.size() == 1);
      CHECK(folded.exact);
      CHECK(folded.points[0].memory == general.points[0].memory);
      CHECK(to::cost_of(q, folded.points[0].choice).memory == folded.points[0].memory);
    }
  }
}

TEST_CASE("the stream held on zoo models: the restriction as stated, against exact") {
  // gpt3-125m is below the planner's threshold for holding the stream (its mode keeps the
  // residual adds free); held here by hand, fast mode must find or beat every exact point
  // whose strategy keeps one layout at the boundaries and at the residual adds
  struct workload { const char* model; to::index_t devices, k; };
  const workload ws[] = {{"gpt3-125m", 2, 64}, {"moe-380m", 2, 32}};
  for (const auto& w : ws) {
    const std::string name = w.model;
    CAPTURE(name);
    const auto cl = zoo_cluster(to::models::find(w.model), w.devices);
    const auto b = zoo_problem(name, cl, w.k);
    const auto free_mode = to::choose_mode(b.prob, b.graph, to::search_mode::fast);
    CHECK(free_mode.block.kin.empty());
    CHECK(free_mode.why.find("residual add") == std::string::npos);
    const auto mc = to::choose_mode(b.prob, b.graph, to::search_mode::fast, to::exact_engine::general, 5e4, 0);
    REQUIRE(!mc.block.kin.empty());
    CHECK(mc.why.find("and at the 1 residual add inside each") != std::string::npos);
    const auto sp = to::detail::split_repeated(b.prob, mc.block);
    const auto stream = to::detail::stream_positions(b.prob, mc.block, sp);
    REQUIRE(stream.size() == 1);
    to::solve_options so;
    so.memory_limit = to::cost_t(cl.gpu_spec.capacity.value);
    const auto held = to::solve_repeated(b.prob, mc.block, so);
    const auto unheld = to::solve_repeated(b.prob, free_mode.block, so);
    const auto exact = to::solve(b.prob, so);
    CHECK(held.note.find("and at the 1 residual add inside each layer") != std::string::npos);
    const auto& inst = mc.block.instances;
    std::size_t kept = 0;
    double worst = 0;  // what holding the stream costs: the held frontier's excess over exact
    for (auto& e : exact.points) {
      const to::frontier_point* best = nullptr;
      for (auto& q : held.points)
        if (q.memory <= e.memory) best = &q;
      if (best) worst = std::max(worst, double(best->time) / double(e.time) - 1);
    }
    for (auto& q : held.points) {
      const auto c = to::cost_of(b.prob, q.choice);
      CHECK(c.time == q.time);
      CHECK(c.memory == q.memory);
      // every held strategy keeps the stream in its boundaries' layout
      const int g0 = sp.group[std::size_t(q.choice[std::size_t(inst[0][std::size_t(sp.boundary)])])];
      for (std::size_t l = 0; l < inst.size(); ++l)
        CHECK(sp.group[std::size_t(q.choice[std::size_t(inst[l][stream[0]])])] == g0);
      // behind the unheld fast frontier (a subset of its strategies)
      bool behind = false;
      for (auto& u : unheld.points) behind = behind || (u.memory <= q.memory && u.time <= q.time);
      CHECK(behind);
    }
    for (auto& e : exact.points) {
      const int g0 = sp.group[std::size_t(e.choice[std::size_t(inst[0][std::size_t(sp.boundary)])])];
      bool one = true;
      for (std::size_t l = 0; l < inst.size(); ++l) {
        if (l + 1 < inst.size()) one = one && sp.group[std::size_t(e.choice[std::size_t(inst[l][std::size_t(sp.boundary)])])] == g0;
        one = one && sp.group[std::size_t(e.choice[std::size_t(inst[l][stream[0]])])] == g0;
      }
      if (!one) continue;
      ++kept;
      const to::frontier_point* best = nullptr;
      for (auto& q : held.points)
        if (q.memory <= e.memory) best = &q;
      REQUIRE(best);
      CHECK(best->time <= e.time);
    }
    CHECK(kept > 0);
    MESSAGE(name, ": ", held.points.size(), " points held, ", unheld.points.size(), " unheld, ", exact.points.size(),
            " exact (", kept, " of them hold the stream); held at most ", 100 * worst, " % slower than exact");
  }
}

TEST_CASE("the restriction check finds a restricted frontier that misses the optimum") {
  // a frontier holding only the least-memory point misses the time optimum by a known gap
  const auto& m = to::models::find("gpt3-125m");
  const auto cl = zoo_cluster(m, 2);
  to::build_options bo;
  bo.micro_batches = 64;
  const auto b = to::build_problem(m.lower(), cl, bo);
  auto exact = to::solve(b.prob);
  REQUIRE(exact.points.size() >= 2);
  auto one = exact;
  one.points.resize(1);
  const auto c = to::check_restriction(b.prob, one, std::numeric_limits<to::cost_t>::max());
  CHECK(c.weights == 2);  // one point: no slope, so only the time and memory weights
  const double want = double(one.points[0].time - exact.points.back().time) / double(exact.points.back().time);
  CHECK(c.gap == doctest::Approx(want));
  CHECK(to::check_restriction(b.prob, exact, std::numeric_limits<to::cost_t>::max()).gap == 0);
  // the same through the exact fold of the identical layers (the planner's way)
  const auto mc = to::choose_mode(b.prob, b.graph, to::search_mode::fast);
  REQUIRE(!mc.block.instances.empty());
  const auto f = to::check_restriction(b.prob, one, std::numeric_limits<to::cost_t>::max(), {}, &mc.block);
  CHECK(f.weights == 2);
  CHECK(f.gap == doctest::Approx(want));
}

TEST_CASE("the restriction check stays within the search's range when time + w x memory is huge") {
  // three nodes, each fast-and-big or slow-and-small (2^59 ps or bytes): the weighted terms
  // of the slope weights reach 2^62 each, beyond what the search adds exactly unscaled
  to::problem p;
  const to::cost_t big = to::cost_t(1) << 59;
  for (int i = 0; i < 3; ++i) p.nodes.push_back({"n" + std::to_string(i), {{"fast", 1, big}, {"small", big, 1}}});
  p.edges.push_back({0, 1, {0, 0, 0, 0}, {0, 0, 0, 0}});
  p.edges.push_back({1, 2, {0, 0, 0, 0}, {0, 0, 0, 0}});
  const auto exact = to::solve(p);
  REQUIRE(exact.points.size() == 4);
  to::restriction_check c;
  REQUIRE_NOTHROW(c = to::check_restriction(p, exact, std::numeric_limits<to::cost_t>::max()));
  CHECK(c.compared == c.weights);
  CHECK(c.gap == doctest::Approx(0).epsilon(1e-9));  // the exact frontier holds every optimum
  auto one = exact;
  one.points.resize(1);  // the least memory only: slower than the time optimum
  CHECK(to::check_restriction(p, one, std::numeric_limits<to::cost_t>::max()).gap > 1);
}

TEST_CASE("a search past its memory limit stops with the sizes it reached, in both modes, never bad_alloc") {
  const auto& m = to::models::find("gpt3-125m");
  const auto cl = zoo_cluster(m, 2);
  const auto g = m.lower();
  for (auto mode : {to::search_mode::fast, to::search_mode::exact}) {
    std::size_t stopped = 0, finished = 0;
    for (std::size_t limit = 1024; limit <= (std::size_t(1) << 28); limit *= 4) {
      to::planner_options o;
      o.micro_batches = {64};
      o.baselines = false;
      o.check_restriction = false;
      o.mode = mode;
      o.solve.max_bytes = limit;
      try {
        const auto pf = to::plan_frontier(g, cl, o);
        CHECK(!pf.points.empty());
        ++finished;
      } catch (const to::runtime_error& e) {
        const std::string w = e.what();
        CHECK(w.find("search stopped") != std::string::npos);
        CHECK(w.find("past its limit of") != std::string::npos);
        CHECK(w.find("points") != std::string::npos);
        ++stopped;
      }
    }
    CHECK(stopped > 0);
    CHECK(finished > 0);
  }
}

TEST_CASE("the planner says which mode ran and why") {
  const auto& m = to::models::find("gpt3-125m");
  const auto cl = zoo_cluster(m, 2);
  to::planner_options o;
  o.micro_batches = {64};
  o.baselines = false;
  o.runtime_peak = false;  // the searches' frontiers (equal points may differ in their runtime peak)
  o.mode = to::search_mode::fast;
  const auto fast = to::plan_frontier(m.lower(), cl, o);
  REQUIRE(fast.mode_notes.size() == 1);
  CHECK(fast.mode_notes[0].find("fast mode (asked)") != std::string::npos);
  CHECK(fast.mode_notes[0].find("one layout at every boundary") != std::string::npos);
  CHECK(fast.mode_notes[0].find("weighted-sum optima") != std::string::npos);
  CHECK(fast.restricted);
  o.mode = to::search_mode::automatic;
  const auto autom = to::plan_frontier(m.lower(), cl, o);
  CHECK(autom.mode_notes[0].find("exact mode: small enough") != std::string::npos);
  CHECK(!autom.restricted);
  CHECK(autom.points.size() == fast.points.size());
  CHECK_THROWS_WITH_AS(to::parse_search_mode("quick"), doctest::Contains("use exact, fast or auto"), to::invalid_argument);
  // a model without repeat<> runs exact and says why
  const auto& cnn = to::models::find("vgg16");
  o.micro_batches = {cnn.batch};
  const auto v = to::plan_frontier(cnn.lower(), zoo_cluster(cnn, 2), o);
  CHECK(v.mode_notes[0].find("no repeat<>") != std::string::npos);
}

TEST_CASE("fast mode's layout restriction: stated, real plans, near fast mode with every layout") {
  // wresnet-1b: 17 blocks of a CNN outside its 22 identical ones, so under epsilon fast mode
  // limits each op to the layouts of weighted-sum optima (measured: within 0.58 % in time)
  const auto& m = to::models::find("wresnet-1b");
  const auto cl = zoo_cluster(m, 4);
  to::planner_options o;
  o.micro_batches = {16};
  o.baselines = false;
  o.runtime_peak = false;  // the searches' own frontiers
  o.mode = to::search_mode::fast;
  o.solve.epsilon = 0.05;
  o.solve.memory_limit = to::cost_t(cl.gpu_spec.capacity.value);
  const auto lim = to::plan_frontier(m.lower(), cl, o);
  REQUIRE(lim.mode_notes.size() == 1);
  CHECK(lim.mode_notes[0].find("each op limited to the layouts that weighted-sum optima") != std::string::npos);
  REQUIRE(!lim.points.empty());
  for (std::size_t i = 0; i < lim.points.size(); ++i) {
    const auto c = to::cost_of(lim.problem_of(i).prob, lim.points[i].choice);
    CHECK(c.time == lim.points[i].time);
    CHECK(c.memory == lim.points[i].memory);
  }
  o.layout_lanes = 0;
  const auto all = to::plan_frontier(m.lower(), cl, o);
  CHECK(all.mode_notes[0].find("limited to the layouts") == std::string::npos);
  // every point of the unlimited frontier has one of the limited at no more memory, within 2 %
  // in time (the two are each within epsilon of their own exact frontiers)
  std::size_t fewer_configs_used = 0;
  for (const auto& q : all.points) {
    double best = HUGE_VAL;
    for (const auto& r : lim.points)
      if (r.memory <= q.memory) best = std::min(best, double(r.time));
    CHECK(best <= 1.02 * double(q.time));
    fewer_configs_used += best > double(q.time);
  }
  // and it is a restriction: somewhere it is behind
  CHECK(fewer_configs_used > 0);
  // exact mode (epsilon 0) keeps every layout
  o.layout_lanes = 24;
  o.solve.epsilon = 0;
  o.micro_batches = {64};
  const auto exact_eps = to::plan_frontier(to::models::find("wresnet-250m").lower(), zoo_cluster(to::models::find("wresnet-250m"), 2), o);
  CHECK(exact_eps.mode_notes[0].find("limited to the layouts") == std::string::npos);
}

TEST_CASE("a long search at epsilon 0 says once which option bounds the error and prunes it") {
  const auto& m = to::models::find("gpt3-125m");
  const auto cl = zoo_cluster(m, 2);
  to::planner_options o;
  o.micro_batches = {32, 64};
  o.baselines = false;
  o.runtime_peak = false;
  std::vector<std::string> lines;
  o.progress = [&](const std::string& s) { lines.push_back(s); };
  auto hints = [&] {
    return std::count_if(lines.begin(), lines.end(), [](const std::string& s) {
      return s.find("still searching") != std::string::npos && s.find("--epsilon 0.05") != std::string::npos;
    });
  };
  o.slow_hint_after_s = 1e-9;  // every search counts as long
  to::plan_frontier(m.lower(), cl, o);
  CHECK(hints() == 1);  // once, though two counts search
  lines.clear();
  o.slow_hint_after_s = 0;  // never
  to::plan_frontier(m.lower(), cl, o);
  CHECK(hints() == 0);
  lines.clear();
  o.slow_hint_after_s = 1e-9;
  o.solve.epsilon = 0.05;  // the error is bounded already
  to::plan_frontier(m.lower(), cl, o);
  CHECK(hints() == 0);
  CHECK(!lines.empty());
}

TEST_CASE("planner results do not depend on the number of threads") {
  const auto& m = to::models::find("gpt3-125m");
  const auto cl = zoo_cluster(m, 2);
  // fast mode under epsilon; exact mode, whose folds take the points of the counts before them
  for (const auto mode : {to::search_mode::fast, to::search_mode::exact}) {
    CAPTURE(to::mode_name(mode));
    to::planner_options o;
    o.micro_batches = {16, 32, 64, 128};
    o.baselines = false;
    o.mode = mode;
    o.solve.epsilon = mode == to::search_mode::fast ? 0.01 : 0;
    o.threads = 1;
    auto one = to::plan_frontier(m.lower(), cl, o);
    o.threads = 3;
    auto three = to::plan_frontier(m.lower(), cl, o);
    REQUIRE(one.points.size() == three.points.size());
    for (std::size_t i = 0; i < one.points.size(); ++i) {
      CHECK(one.points[i].time == three.points[i].time);
      CHECK(one.points[i].memory == three.points[i].memory);
      CHECK(one.points[i].micro_batches == three.points[i].micro_batches);
      CHECK(one.points[i].choice == three.points[i].choice);
      CHECK(one.points[i].peak == three.points[i].peak);
      CHECK(one.points[i].labels == three.points[i].labels);
      CHECK(!one.points[i].labels.empty());
    }
    CHECK(one.mode_notes == three.mode_notes);
    CHECK(one.memory_note == three.memory_note);
    // the union's points, with their peaks once the replays that stopped early are completed
    // (which of them stop depends on the threads' timing)
    to::complete_searched(one, 1);
    to::complete_searched(three, 3);
    REQUIRE(one.searched.size() == three.searched.size());
    for (std::size_t i = 0; i < one.searched.size(); ++i) {
      CHECK(one.searched[i].peak == three.searched[i].peak);
      CHECK(one.searched[i].choice == three.searched[i].choice);
    }
  }
}

// Plans `o` without bounds between the micro-batch counts, then with them on one and two
// threads: the same costs each time; `more(bounded, alone, threads)` checks the rest.
template <class More>
void check_job_bounds(const to::models::model_info& m, const to::cluster& cl, to::planner_options o, More more) {
  o.job_bounds = false;
  const auto alone = to::plan_frontier(m.lower(), cl, o);
  o.job_bounds = true;
  for (const std::size_t threads : {std::size_t(1), std::size_t(2)}) {
    CAPTURE(threads);
    o.threads = threads;
    const auto bounded = to::plan_frontier(m.lower(), cl, o);
    REQUIRE(bounded.points.size() == alone.points.size());
    for (std::size_t i = 0; i < alone.points.size(); ++i) {
      CHECK(bounded.points[i].time == alone.points[i].time);
      CHECK(bounded.points[i].memory == alone.points[i].memory);
      CHECK(bounded.points[i].micro_batches == alone.points[i].micro_batches);
    }
    more(bounded, alone, threads);
  }
}

TEST_CASE("micro-batch counts bounded by the ones before them: the same frontier, fewer points searched") {
  const auto& m = to::models::find("gpt3-125m");
  const auto cl = zoo_cluster(m, 2);
  // fast mode (coarse passes and skips) and exact mode (the chain fold's branch-and-bound set
  // gains the points of the counts before it)
  for (const auto mode : {to::search_mode::fast, to::search_mode::exact}) {
    CAPTURE(to::mode_name(mode));
    to::planner_options o;
    o.micro_batches = {8, 16, 32, 64, 128};
    o.baselines = false;
    o.runtime_peak = false;
    o.check_restriction = false;
    o.mode = mode;
    check_job_bounds(m, cl, o, [&](const to::planned_frontier& bounded, const to::planned_frontier& alone, std::size_t) {
      // some micro-batch count returned fewer points: the bounds of the others cut it
      std::size_t fewer = 0;
      for (std::size_t p = 0; p < alone.parts.size(); ++p) {
        CHECK(bounded.parts[p].micro_batches == alone.parts[p].micro_batches);
        CHECK(bounded.parts[p].mode == mode);
        CHECK(bounded.parts[p].frontier.points.size() <= alone.parts[p].frontier.points.size());
        fewer += bounded.parts[p].frontier.points.size() < alone.parts[p].frontier.points.size();
      }
      CHECK(fewer > 0);
    });
  }
}

TEST_CASE("exact mode skips a beaten micro-batch count before its tables where the counts before it are in") {
  const auto& m = to::models::find("gpt3-125m");
  const auto cl = zoo_cluster(m, 2);
  to::planner_options o;
  o.micro_batches = {1024, 512, 256, 128, 64, 32, 16};
  o.solve.memory_limit = to::cost_t(cl.gpu_spec.capacity.value);  // the device's: the small counts are beaten
  o.baselines = false;
  o.runtime_peak = false;
  o.check_restriction = false;
  o.mode = to::search_mode::exact;
  check_job_bounds(m, cl, o, [](const to::planned_frontier& bounded, const to::planned_frontier&, std::size_t threads) {
    std::size_t beaten = 0, early = 0;
    for (const auto& part : bounded.parts)
      if (part.why.rfind("skipped: beaten", 0) == 0) {
        ++beaten;
        CHECK(part.frontier.points.empty());
        early += part.frontier.note.rfind("skipped before its tables", 0) == 0;
      }
    CHECK(beaten > 0);
    // one thread: every count before a job has published when it starts, so each beaten
    // count is found so before its fold makes any table
    if (threads == 1) CHECK(early == beaten);
  });
}

TEST_CASE("baselines try every tensor-parallel degree that divides the devices per node") {
  const auto& m = to::models::find("gpt3-125m");
  const auto cl = to::cluster::nodes(1).gpus_per_node(6).gpu(to::gpus::find(m.gpu));
  const auto g = m.lower();
  const auto bl = to::plan_baselines(g, cl, {}, {}, {64});
  std::vector<std::string> names;
  for (auto& b : bl) names.push_back(b.name);
  auto has = [&](const std::string& s) {
    for (auto& n : names)
      if (n.rfind(s, 0) == 0) return true;
    return false;
  };
  CHECK(has("megatron tp 2 x dp 3"));
  CHECK(has("megatron tp 3 x dp 2"));
  CHECK(has("megatron tp 6"));
  CHECK(!has("megatron tp 4"));
}

TEST_CASE("the edge-free bound lies at or below every strategy, and is the frontier when edges cost nothing") {
  std::mt19937_64 rng(99);
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  for (int it = 0; it < 60; ++it) {
    CAPTURE(it);
    const bool free_edges = it % 3 == 0;
    to::problem p;
    p.memory_offset = uni(0, 50);
    const int n = int(uni(2, 6));
    for (int v = 0; v < n; ++v) {
      to::problem_node nd{"n" + std::to_string(v), {}};
      for (int c = 0, k = int(uni(1, 4)); c < k; ++c) nd.configs.push_back({"c", uni(1, 1000), uni(0, 1000)});
      p.nodes.push_back(nd);
    }
    for (int v = 1; v < n; ++v) {
      const int u = int(uni(0, v - 1));
      to::problem_edge e{u, v, {}, {}};
      for (std::size_t i = 0; i < p.nodes[std::size_t(u)].configs.size() * p.nodes[std::size_t(v)].configs.size(); ++i) {
        e.time.push_back(free_edges ? 0 : uni(0, 300));
        e.memory.push_back(free_edges ? 0 : uni(0, 300));
      }
      p.edges.push_back(e);
    }
    const auto lb = to::detail::edge_free_bound(p, std::numeric_limits<to::cost_t>::max());
    REQUIRE(!lb.empty());
    const auto exact = to::solve(p);
    for (auto& e : exact.points) {
      const to::detail::candidate* at = nullptr;
      for (auto& l : lb)
        if (l.memory <= e.memory) at = &l;
      REQUIRE(at);
      CHECK(at->time <= e.time);
      if (free_edges) CHECK(double(at->time) * 1.05 >= double(e.time));
    }
    // a staircase dominates the bound when it is the bound; one point slower breaks it
    std::vector<to::frontier::point> same;
    for (auto& l : lb) same.push_back({l.time, l.memory, -1});
    CHECK(to::detail::all_dominated(lb, same));
    same.back().time += 1;
    CHECK(!to::detail::all_dominated(lb, same));
  }
}

TEST_CASE("the grouped bound lies at or below every strategy, and is the frontier with one group") {
  std::mt19937_64 rng(23);
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return lo + std::int64_t(rng() % std::uint64_t(hi - lo + 1)); };
  int tighter = 0;
  for (int it = 0; it < 200; ++it) {
    to::problem p;
    p.memory_offset = uni(0, 50);
    const int n = int(uni(2, 7));
    for (int v = 0; v < n; ++v) {
      to::problem_node nd{"n" + std::to_string(v), {}};
      for (int c = 0, k = int(uni(1, 4)); c < k; ++c) nd.configs.push_back({"c", uni(1, 1000), uni(0, 1000)});
      p.nodes.push_back(nd);
    }
    for (int v = 1; v < n; ++v)
      for (int u = 0; u < v; ++u) {
        if (u != v - 1 && rng() % 3) continue;  // a chain, with some edges across it
        to::problem_edge e{u, v, {}, {}};
        for (std::size_t i = 0; i < p.nodes[std::size_t(u)].configs.size() * p.nodes[std::size_t(v)].configs.size(); ++i) {
          e.time.push_back(uni(0, 300));
          e.memory.push_back(uni(0, 300));
        }
        p.edges.push_back(e);
      }
    // random groups (some nodes in none)
    std::vector<std::vector<int>> groups(std::size_t(uni(1, 3)));
    for (int v = 0; v < n; ++v) {
      const auto g = std::size_t(uni(0, std::int64_t(groups.size())));
      if (g < groups.size()) groups[g].push_back(v);
    }
    const auto cap = std::numeric_limits<to::cost_t>::max();
    const auto lb = to::detail::grouped_bound(p, groups, cap, 0.0);
    const auto free = to::detail::edge_free_bound(p, cap, 0.0);
    const auto pruned = to::detail::grouped_bound(p, groups, cap, 0.05);  // the groups' solves pruned too
    const auto raised = to::detail::layered_bound(p, groups, cap, 0.0);
    REQUIRE(!lb.empty());
    const auto exact = to::solve(p);
    // a staircase's last point with memory at or below m (null: none)
    auto at_or_below = [](const std::vector<to::detail::candidate>& s, to::cost_t m) {
      const to::detail::candidate* at = nullptr;
      for (auto& l : s)
        if (l.memory <= m) at = &l;
      return at;
    };
    bool above_free = false;
    for (auto& e : exact.points) {
      for (const auto* bound : {&lb, &pruned, &raised}) {
        const auto* below = at_or_below(*bound, e.memory);
        REQUIRE(below);
        CHECK(below->time <= e.time);
      }
      const auto* f = at_or_below(free, e.memory);
      above_free = above_free || (f && at_or_below(lb, e.memory)->time > f->time);
    }
    tighter += above_free;
    // raised to the least time, its fastest point takes the fastest strategy's time
    CHECK(raised.back().time == exact.points.back().time);
    // every node in one group: the bound is the exact frontier
    std::vector<std::vector<int>> one(1);
    for (int v = 0; v < n; ++v) one[0].push_back(v);
    const auto whole = to::detail::grouped_bound(p, one, cap, 0.0);
    REQUIRE(whole.size() == exact.points.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      CHECK(whole[i].time == exact.points[i].time);
      CHECK(whole[i].memory == exact.points[i].memory);
    }
  }
  CHECK(tighter > 20);  // the edges kept inside groups raise it above the edge-free bound
  // a group naming a node the problem lacks is an error that says so
  to::problem p;
  p.nodes.push_back({"a", {{"c", 1, 1}}});
  CHECK_THROWS_WITH_AS(to::detail::grouped_bound(p, {{0, 3}}, 100), doctest::Contains("names node 3, but the problem's nodes are 0 to 0"),
                       to::invalid_argument);
}

TEST_CASE("auto mode: exact where the chain fold is prompt, by the stated rule") {
  // gpt3-1.3b on 8 x A100-80GB: 24 layers x 38^2 boundary layouts for the chain fold stays
  // exact; the general engine's rule (x 38^3) and gpt3-39b on 64 devices go fast
  const auto& m = to::models::find("gpt3-1.3b");
  const auto cl = to::cluster::nodes(1).gpus_per_node(8).gpu(to::gpus::find("a100-80gb"));
  to::build_options bo;
  bo.micro_batches = 16;
  const auto b = to::build_problem(m.lower(), cl, bo);
  const auto fold = to::choose_mode(b.prob, b.graph, to::search_mode::automatic, to::exact_engine::chain_fold);
  CHECK(fold.mode == to::search_mode::exact);
  CHECK(fold.why.find("exact mode: small enough (24 layers x ") != std::string::npos);
  CHECK(fold.why.find("^2 boundary layouts for the chain fold") != std::string::npos);
  const auto general = to::choose_mode(b.prob, b.graph, to::search_mode::automatic, to::exact_engine::general);
  CHECK(general.mode == to::search_mode::fast);
  CHECK(general.why.find("fast mode: exact would be slow (24 layers x ") != std::string::npos);
  // the threshold is the rule: the same problem goes fast under a lower one
  CHECK(to::choose_mode(b.prob, b.graph, to::search_mode::automatic, to::exact_engine::chain_fold, 1e3).mode ==
        to::search_mode::fast);
  const auto& big = to::models::find("gpt3-39b");
  const auto bcl = to::cluster::nodes(8).gpus_per_node(8).gpu(to::gpus::find(big.gpu));
  bo.micro_batches = 64;
  const auto bb = to::build_problem(big.lower(), bcl, bo);
  CHECK(to::choose_mode(bb.prob, bb.graph, to::search_mode::automatic, to::exact_engine::chain_fold).mode ==
        to::search_mode::fast);
}
}  // namespace plan_search_mode_test_file
