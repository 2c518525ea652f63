// Tests of the pipeline problem (search/pipeline_problem.hpp) and its file
// "tensoropt-pipeline-problem/1": the cost with f micro-batches in flight, exact round
// trips, malformed files refused naming the field, and the frontier check that re-costs
// every pipeline point and refuses a corrupted one.
#include <doctest/doctest.h>
#include <random>
#include <tensoropt/search/frontier_json.hpp>
#include <tensoropt/search/pipeline_problem_json.hpp>
#include "fuzz_mutate.hpp"
#include "random_problem.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_pipeline_problem_test_file {

namespace to = tensoropt;
using nlohmann::json;

namespace {

// A random pipeline problem: `np` random stage problems with random activations, and
// `nparts` partitions over them with random sends.
to::pipeline_problem random_pipeline(std::mt19937_64& rng, int np, int nparts) {
  to::pipeline_problem pp;
  for (int q = 0; q < np; ++q) {
    to::pipeline_problem::stage_problem sp;
    sp.prob = rand_problem::random_problem(rng, rand_problem::shape_kind::dag, 1 + int(rng() % 4), 3, true, 1ll << 40,
                                           1ll << 36);
    for (auto& n : sp.prob.nodes) {
      sp.activations.emplace_back();
      for (std::size_t c = 0; c < n.configs.size(); ++c) sp.activations.back().push_back(to::cost_t(rng() % (1ull << 32)));
    }
    pp.problems.push_back(std::move(sp));
  }
  for (int i = 0; i < nparts; ++i) {
    to::pipeline_problem::partition pa;
    pa.degree = 1 + int(rng() % 4);
    pa.micro_batches = pa.degree + int(rng() % 5);
    for (int s = 0; s < pa.degree; ++s) {
      pa.stage_begin.push_back(std::size_t(s * 3));
      pa.stages.push_back({std::size_t(rng() % std::uint64_t(np)), to::in_flight(pa.micro_batches, pa.degree, s)});
      if (s > 0) pa.sends.push_back(to::cost_t(rng() % (1ull << 38)));
    }
    pp.partitions.push_back(std::move(pa));
  }
  return pp;
}

// One random point per partition, costed by pipeline_cost_of.
std::vector<to::frontier_entry> random_points(std::mt19937_64& rng, const to::pipeline_problem& pp) {
  std::vector<to::frontier_entry> out;
  for (std::size_t i = 0; i < pp.partitions.size(); ++i) {
    const auto& pa = pp.partitions[i];
    to::stage_choices st;
    st.degree = pa.degree;
    st.partition = i;
    st.stage_begin = pa.stage_begin;
    for (auto& r : pa.stages) {
      const auto& prob = pp.problems[r.problem].prob;
      std::vector<int> ch;
      std::vector<std::string> lb;
      for (auto& n : prob.nodes) {
        ch.push_back(int(rng() % n.configs.size()));
        lb.push_back(n.configs[std::size_t(ch.back())].label);
      }
      st.choice.push_back(ch);
      st.labels.push_back(lb);
    }
    const auto c = to::pipeline_cost_of(pp, st);
    to::frontier_point fp;
    fp.time = c.time;
    fp.memory = c.memory;
    fp.micro_batches = pa.micro_batches;
    out.push_back({fp, st});
  }
  return out;
}

}  // namespace

TEST_CASE("stage costs with f in flight: activations f - 1 more times, edge memory f times, the reserve once") {
  std::mt19937_64 rng(11);
  for (int it = 0; it < 40; ++it) {
    const auto pp = random_pipeline(rng, 1, 0);
    const auto& sp = pp.problems[0];
    std::vector<int> ch;
    for (auto& n : sp.prob.nodes) ch.push_back(int(rng() % n.configs.size()));
    for (to::index_t f = 1; f <= 5; ++f) {
      const auto c = to::stage_cost_of(sp, f, ch);
      CHECK(c == to::cost_of(to::with_in_flight(sp, f), ch));
      // by hand: the problem's cost plus (f - 1) x (activations + edge memory)
      const auto base = to::cost_of(sp.prob, ch);
      to::cost_t act = 0, edge = 0;
      for (std::size_t n = 0; n < ch.size(); ++n) act += sp.activations[n][std::size_t(ch[n])];
      for (auto& e : sp.prob.edges)
        edge += e.memory[std::size_t(ch[std::size_t(e.from)]) * sp.prob.nodes[std::size_t(e.to)].configs.size() +
                         std::size_t(ch[std::size_t(e.to)])];
      CHECK(c.time == base.time);
      CHECK(c.memory == base.memory + (f - 1) * (act + edge));
    }
  }
}

TEST_CASE("pipeline point cost: max of stage times plus the sends, max of stage memories") {
  std::mt19937_64 rng(12);
  for (int it = 0; it < 40; ++it) {
    const auto pp = random_pipeline(rng, 3, 4);
    for (const auto& e : random_points(rng, pp)) {
      const auto& pa = pp.partitions[e.stages->partition];
      to::cost_t t = 0, m = 0, sends = 0;
      for (std::size_t s = 0; s < pa.stages.size(); ++s) {
        const auto c = to::cost_of(to::with_in_flight(pp.problems[pa.stages[s].problem], pa.stages[s].in_flight),
                                   e.stages->choice[s]);
        t = std::max(t, c.time);
        m = std::max(m, c.memory);
      }
      for (auto x : pa.sends) sends += x;
      CHECK(e.point.time == t + sends);
      CHECK(e.point.memory == m);
    }
  }
}

TEST_CASE("pipeline problem JSON: exact round trips, and the frontier check passes on them") {
  std::mt19937_64 rng(13);
  for (int it = 0; it < 30; ++it) {
    const auto pp = random_pipeline(rng, 1 + it % 3, 1 + it % 4);
    const std::string text = to::write_pipeline_problem_json(pp);
    const auto back = to::read_pipeline_problem_json(text);
    CHECK(back == pp);
    const auto pts = random_points(rng, pp);
    std::vector<to::frontier_entry> one{pts[0]};  // a one-point frontier is always a staircase
    const auto read = to::read_frontier_entries(to::write_frontier_json(one));
    CHECK(read == one);
    CHECK_NOTHROW(to::check_frontier(back, read));
  }
}

TEST_CASE("the frontier check refuses a corrupted pipeline point, naming it") {
  std::mt19937_64 rng(14);
  const auto pp = random_pipeline(rng, 2, 3);
  const auto pts = random_points(rng, pp);
  auto expect = [&](auto edit, const char* message) {
    auto bad = pts;
    edit(bad);
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(to::check_frontier(pp, bad), doctest::Contains(message), to::format_error);
  };
  CHECK_NOTHROW(to::check_frontier(pp, pts));
  expect([](auto& b) { b[1].point.time += 1; }, "points[1]: the stages cost");
  expect([](auto& b) { b[2].point.memory -= 1; }, "points[2]: the stages cost");
  expect([](auto& b) { b[0].stages->partition = 9; }, "points[0].pipeline.partition: 9 does not exist");
  expect([](auto& b) { b[0].stages->choice[0][0] = 99; }, "points[0].pipeline.stages[0].choice[0]: config 99");
  expect([](auto& b) { b[0].stages->labels[0][0] = "nope"; }, "points[0].pipeline.stages[0].labels[0]: 'nope'");
  expect([](auto& b) { b[1].point.micro_batches += 1; }, "points[1].micro_batches");
  expect([](auto& b) { b[1].stages->stage_begin.push_back(99); }, "points[1].pipeline: degree");
  expect([](auto& b) { b[0].stages.reset(); }, "points[0]: a point of one problem");
  // a stage's memory one byte more than the file says: the corrupted problem fails the check
  auto worse = pp;
  for (auto& n : worse.problems[0].prob.nodes)
    for (auto& c : n.configs) c.time += 1'000'000'000'000;  // every stage on problem 0 becomes the bottleneck
  bool any = false;
  for (auto& pa : pp.partitions)
    for (auto& r : pa.stages) any = any || r.problem == 0;
  if (any) CHECK_THROWS_AS(to::check_frontier(worse, pts), to::format_error);
}

TEST_CASE("pipeline problem JSON: malformed files are refused naming the field") {
  std::mt19937_64 rng(15);
  const auto pp = random_pipeline(rng, 2, 2);
  const json base = json::parse(to::write_pipeline_problem_json(pp));
  auto expect = [&](auto edit, const char* message) {
    json j = base;
    edit(j);
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(to::pipeline_problem_from_json(j), doctest::Contains(message), to::format_error);
    CHECK_THROWS_AS(to::read_pipeline_problem_json(j.dump()), to::format_error);
  };
  expect([](json& j) { j["format"] = "tensoropt-pipeline-problem/2"; },
         "format: expected \"tensoropt-pipeline-problem/1\", got \"tensoropt-pipeline-problem/2\"");
  expect([](json& j) { j["format"] = "tensoropt-problem/1"; }, "format: expected \"tensoropt-pipeline-problem/1\"");
  expect([](json& j) { j["problems"][1]["nodes"][0]["configs"][0].erase("activations"); },
         "problems[1].nodes[0].configs[0].activations: missing field");
  expect([](json& j) { j["problems"][0]["nodes"][0]["configs"][0]["activations"] = -1; },
         "problems[0].nodes[0].configs[0].activations: must be >= 0");
  expect([](json& j) { j["problems"][0].erase("edges"); }, "problems[0].edges: missing field");
  expect([](json& j) { j["partitions"][0]["stages"][0]["problem"] = 7; }, "partitions[0].stages[0].problem: 7 does not exist");
  expect([](json& j) { j["partitions"][0]["stages"][0]["in_flight"] = 0; }, "partitions[0].stages[0].in_flight");
  expect([](json& j) { j["partitions"][1]["sends"].push_back(1.0); }, "partitions[1]: a partition of degree");
  expect([](json& j) { j["partitions"][1]["degree"] = 0; }, "partitions[1].degree: expected an integer in [1,");
  expect([](json& j) { j.erase("partitions"); }, "partitions: missing field");
  // a plain problem file is refused by this reader, and a pipeline problem by the plain one
  CHECK_THROWS_WITH_AS(to::read_problem_json(base.dump()), doctest::Contains("read it with read_pipeline_problem_json"),
                       to::format_error);
}

TEST_CASE("fuzz: mutated pipeline problem and frontier files are refused clearly or accepted consistently") {
  std::mt19937_64 rng(20261201);
  const auto pp = random_pipeline(rng, 2, 3);
  const auto pts = random_points(rng, pp);
  const std::string problem_text = to::write_pipeline_problem_json(pp);
  const std::string frontier_text = to::write_frontier_json(std::vector<to::frontier_entry>{pts[0]});
  int refused = 0;
  for (int it = 0; it < 600; ++it) {
    CAPTURE(it);
    const bool prob = it % 2 == 0;
    const std::string text = fuzz::mutate(prob ? problem_text : frontier_text, rng, true);
    try {
      if (prob) {
        const auto q = to::read_pipeline_problem_json(text);
        CHECK(to::pipeline_problem_error(q) == "");
        CHECK(to::read_pipeline_problem_json(to::write_pipeline_problem_json(q)) == q);
        try {  // against the original points: equal, or refused with a format_error
          to::check_frontier(q, pts);
        } catch (const to::format_error&) {
        }
      } else {
        const auto f = to::read_frontier_entries(text);
        CHECK(to::read_frontier_entries(to::write_frontier_json(f)) == f);
        try {
          to::check_frontier(pp, f);
        } catch (const to::format_error&) {
        }
      }
    } catch (const to::format_error& e) {
      ++refused;
      const std::string m = e.what();
      CAPTURE(m);
      CHECK(!m.empty());
      CHECK(m.size() < 600);
      CHECK(m.find('\n') == std::string::npos);
    }
  }
  CHECK(refused > 100);  // the mutations reach the checks
}
}  // namespace search_pipeline_problem_test_file
