// Tests of the problem and frontier JSON formats: exact round trips, and every kind of malformed input.
#include <doctest/doctest.h>
#include <random>
#include <tensoropt/search/frontier_json.hpp>
#include <tensoropt/search/problem_json.hpp>
#include <tensoropt/search/repeated.hpp>
#include "random_problem.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_json_test_file {

namespace to = tensoropt;
using nlohmann::json;

namespace {

// A random DAG (the shared generator) whose names need JSON escapes.
to::problem random_dag(std::mt19937_64& rng, int nodes, std::int64_t max_time) {
  auto p = rand_problem::random_problem(rng, rand_problem::shape_kind::dag, nodes, 4, true, max_time, 1ll << 45);
  for (auto& n : p.nodes) n.name += " \"q\\\"";
  return p;
}

const char* good = R"({"format": "tensoropt-problem/1", "memory_offset": 100,
  "nodes": [{"name": "a", "configs": [{"label": "a0", "time": 1e-3, "memory": 10},
                                      {"label": "a1", "time": 2e-3, "memory": 5}]},
            {"name": "layers.0.mlp.fc1", "configs": [{"label": "x", "time": 0, "memory": 0},
                                      {"label": "y", "time": 0.5, "memory": 1},
                                      {"label": "z", "time": 0.25, "memory": 2}]}],
  "edges": [{"from": 0, "to": 1, "time": [[0, 1e-6, 2e-6], [3e-6, 0, 0]],
             "memory": [[0, 0, 0], [1, 2, 3]]}]})";

// Applies `edit` to the good problem and expects a format_error containing `message`.
template <class Edit>
void expect_rejected(Edit edit, const std::string& message) {
  json j = json::parse(good);
  edit(j);
  CAPTURE(message);
  CHECK_THROWS_WITH_AS(to::problem_from_json(j), doctest::Contains(message.c_str()), to::format_error);
  CHECK_THROWS_AS(to::read_problem_json(j.dump()), to::format_error);
}

}  // namespace

TEST_CASE("problem JSON: the good file reads with times in picoseconds") {
  const auto p = to::read_problem_json(good);
  REQUIRE(p.nodes.size() == 2);
  CHECK(p.memory_offset == 100);
  CHECK(p.nodes[0].configs[0].time == 1'000'000'000);
  CHECK(p.nodes[1].configs[2].time == 250'000'000'000);
  CHECK(p.edges[0].time == std::vector<std::int64_t>{0, 1'000'000, 2'000'000, 3'000'000, 0, 0});
  CHECK(p.edges[0].memory == std::vector<std::int64_t>{0, 0, 0, 1, 2, 3});
  CHECK(to::read_problem_json(to::write_problem_json(p)) == p);
}

TEST_CASE("problem JSON: round trips of random problems are exact") {
  std::mt19937_64 rng(1);
  for (int it = 0; it < 60; ++it) {
    // times up to 2^51 ps (~37 min), in every decade
    const std::int64_t max_time = std::int64_t(1) << (11 + (it % 41));
    const auto p = random_dag(rng, 1 + it % 6, max_time);
    const auto text = to::write_problem_json(p);
    const auto q = to::read_problem_json(text);
    CAPTURE(it);
    CHECK(q == p);
  }
  // every small integer count of picoseconds
  to::problem p;
  p.nodes.push_back({"n", {}});
  for (std::int64_t t = 0; t < 3000; ++t) p.nodes[0].configs.push_back({"c", t * 7919 + t * t, t});
  CHECK(to::read_problem_json(to::write_problem_json(p)) == p);
}

TEST_CASE("problem JSON: malformed files are rejected, naming the field and position") {
  CHECK_THROWS_WITH_AS(to::read_problem_json("{\"format\": "), doctest::Contains("not valid JSON at byte"),
                       to::format_error);
  CHECK_THROWS_WITH_AS(to::read_problem_json("[1, 2]"), doctest::Contains("expected a JSON object"),
                       to::format_error);
  expect_rejected([](json& j) { j["format"] = "tensoropt-problem/3"; },
                  "format: expected \"tensoropt-problem/1\" or \"tensoropt-problem/2\", got \"tensoropt-problem/3\"");
  expect_rejected([](json& j) { j.erase("format"); }, "format: missing field");
  expect_rejected([](json& j) { j.erase("edges"); }, "edges: missing field");
  expect_rejected([](json& j) { j["nodes"][0]["configs"][1].erase("time"); }, "nodes[0].configs[1].time: missing field");
  expect_rejected([](json& j) { j["nodes"][1]["configs"][0]["label"] = 3; }, "nodes[1].configs[0].label: expected a string");
  expect_rejected([](json& j) { j["nodes"] = json::object(); }, "nodes: expected an array");
  expect_rejected([](json& j) { j["nodes"][0]["configs"][0]["time"] = "fast"; },
                  "nodes[0].configs[0].time: expected a number of seconds, got string");
  expect_rejected([](json& j) { j["edges"][0]["time"][1] = json::array({0, 0}); },
                  "edges[0].time[1]: expected 3 values (configs of node 1 'layers.0.mlp.fc1'), got 2");
  expect_rejected([](json& j) { j["edges"][0]["memory"].erase(1); },
                  "edges[0].memory: expected 2 rows (configs of node 0 'a'), got 1");
  expect_rejected([](json& j) { j["nodes"][0]["configs"][0]["time"] = -1e-3; },
                  "nodes[0].configs[0].time: must be >= 0 seconds");
  expect_rejected([](json& j) { j["edges"][0]["memory"][1][2] = -3; }, "edges[0].memory[1][2]: must be >= 0 bytes");
  expect_rejected([](json& j) { j["memory_offset"] = -1; }, "memory_offset: must be >= 0 bytes");
  expect_rejected([](json& j) { j["nodes"][0]["configs"][0]["memory"] = 2.5; },
                  "nodes[0].configs[0].memory: must be a whole number of bytes");
  expect_rejected([](json& j) { j["edges"][0]["time"][0][0] = std::nan(""); }, "edges[0].time[0][0]: must be finite");
  expect_rejected([](json& j) { j["edges"][0]["time"][0][1] = 1e7; }, "edges[0].time[0][1]: 10000000.0 s is too large");
  expect_rejected([](json& j) { j["edges"][0]["to"] = 2; }, "edges[0].to: node 2 does not exist (there are 2 nodes");
  expect_rejected([](json& j) { j["edges"][0]["from"] = "a"; }, "edges[0].from: expected a node index");
  expect_rejected([](json& j) { j["edges"][0]["to"] = 0; }, "edges[0]: a self-loop on node 0 'a'");
  expect_rejected([](json& j) { j["nodes"][1]["configs"] = json::array(); },
                  "nodes[1].configs: node 1 'layers.0.mlp.fc1' has no configs");
  expect_rejected([](json& j) { j["nodes"] = json::array(); j["edges"] = json::array(); }, "nodes: the problem has no nodes");
  expect_rejected(
      [](json& j) {
        json back = j["edges"][0];
        back["from"] = 1;
        back["to"] = 0;
        back["time"] = json::array({{0, 0}, {0, 0}, {0, 0}});
        back["memory"] = back["time"];
        j["edges"].push_back(back);
      },
      "the graph has a cycle through node");
  // overflowing text numbers are caught, not turned into garbage
  std::string big = good;
  big.replace(big.find("\"time\": 1e-3"), 12, "\"time\": 1e400");
  CHECK_THROWS_AS(to::read_problem_json(big), to::format_error);
}

TEST_CASE("problem JSON /2: declared repeated blocks round-trip; /1 is written without them") {
  std::mt19937_64 rng(7);
  for (int it = 0; it < 20; ++it) {
    const auto g = rand_problem::random_repeated(rng, it % 3, 3 + it % 4, 1 + it % 3, it % 2, 3, it % 2 == 1);
    const std::vector<to::repeated_block> reps{g.rb};
    const auto text = to::write_problem_json(g.p, reps);
    CHECK(text.rfind("{\"format\": \"tensoropt-problem/2\"", 0) == 0);
    const auto f = to::read_problem_file(text);
    CHECK(f.prob == g.p);
    CHECK(f.repeats == reps);
    // the problem alone reads the same; without repeats the file is /1 and declares none
    CHECK(to::read_problem_json(text) == g.p);
    const auto v1 = to::write_problem_json(g.p);
    CHECK(v1.rfind("{\"format\": \"tensoropt-problem/1\"", 0) == 0);
    CHECK(v1.find("repeats") == std::string::npos);
    CHECK(to::read_problem_file(v1).repeats.empty());
    // fast mode on the read block is the same search as on the generated one
    const auto a = to::solve_repeated(g.p, g.rb), b = to::solve_repeated(f.prob, f.repeats[0]);
    REQUIRE(a.points.size() == b.points.size());
    for (std::size_t i = 0; i < a.points.size(); ++i) {
      CHECK(a.points[i].time == b.points[i].time);
      CHECK(a.points[i].memory == b.points[i].memory);
      CHECK(a.points[i].choice == b.points[i].choice);
    }
  }
}

TEST_CASE("problem JSON /2: malformed repeated blocks are rejected, naming the position") {
  auto with = [](const std::string& repeats) {
    json j = json::parse(good);
    j["format"] = "tensoropt-problem/2";
    j["repeats"] = json::parse(repeats);
    return j;
  };
  auto rejects = [&](const std::string& repeats, const std::string& message) {
    CAPTURE(repeats);
    CHECK_THROWS_WITH_AS(to::problem_file_from_json(with(repeats)), doctest::Contains(message.c_str()),
                         to::format_error);
  };
  CHECK(to::problem_file_from_json(with(R"([{"instances": [[0], [1]]}])")).repeats ==
        std::vector<to::repeated_block>{{{{0}, {1}}, {}}});
  CHECK(to::problem_file_from_json(with("[]")).repeats.empty());
  rejects(R"({"instances": []})", "repeats: expected an array, got object");
  rejects(R"([{"copies": [[0], [1]]}])", "repeats[0].instances: missing field");
  rejects(R"([{"instances": [[0]]}])", "repeats[0].instances: a repeated block needs at least 2 instances, got 1");
  rejects(R"([{"instances": [[0], []]}])", "repeats[0].instances[1]: an instance needs at least one node");
  rejects(R"([{"instances": [[0, 1], [1]]}])", "repeats[0].instances[1]: 1 nodes where instance 0 has 2");
  rejects(R"([{"instances": [[0], [2]]}])", "repeats[0].instances[1][0]: node 2 does not exist (there are 2 nodes");
  rejects(R"([{"instances": [[0], ["1"]]}])", "repeats[0].instances[1][0]: expected a node index");
  rejects(R"([{"instances": [[0], [0]]}])",
          "repeats[0].instances[1][0]: node 0 is already in repeats[0].instances[0]");
  rejects(R"([{"instances": [[0], [1]]}, {"instances": [[1], [0]]}])",
          "repeats[1].instances[0][0]: node 1 is already in repeats[0].instances[1]");
  // a /1 file has no repeats
  json j = with(R"([{"instances": [[0], [1]]}])");
  j["format"] = "tensoropt-problem/1";
  CHECK_THROWS_WITH_AS(to::problem_file_from_json(j), doctest::Contains("repeats: a tensoropt-problem/1 file has no"),
                       to::format_error);
  // the writer refuses what the reader would
  const auto p = to::read_problem_json(good);
  CHECK_THROWS_WITH_AS(to::write_problem_json(p, {{{{0}, {5}}, {}}}), doctest::Contains("node 5 does not exist"),
                       to::invalid_argument);
}

TEST_CASE("validate() checks in-memory problems with the same positions") {
  auto p = to::read_problem_json(good);
  CHECK_NOTHROW(to::validate(p));
  p.edges[0].time.pop_back();
  CHECK_THROWS_WITH_AS(to::validate(p), doctest::Contains("edges[0].time: expected 2 x 3 values"),
                       to::invalid_argument);
  p = to::read_problem_json(good);
  p.nodes[1].configs[1].memory = -5;
  CHECK_THROWS_WITH_AS(to::validate(p), doctest::Contains("nodes[1].configs[1].memory: must be >= 0"),
                       to::invalid_argument);
  p = to::read_problem_json(good);
  p.edges.push_back({1, 0, std::vector<std::int64_t>(6, 0), std::vector<std::int64_t>(6, 0)});
  CHECK_THROWS_WITH_AS(to::validate(p), doctest::Contains("cycle"), to::invalid_argument);
  CHECK_THROWS_AS(to::write_problem_json(p), to::invalid_argument);
}

TEST_CASE("frontier JSON: entries, union over micro-batch counts, exact round trip, checked against the problem") {
  std::mt19937_64 rng(3);
  for (int it = 0; it < 30; ++it) {
    const auto p1 = random_dag(rng, 4, 1ll << 40);
    auto p2 = p1;  // "two micro-batches": cheaper memory, slower
    for (auto& n : p2.nodes)
      for (auto& c : n.configs) {
        c.memory /= 2;
        c.time += 1000;
      }
    const auto e1 = to::label_points(p1, to::solve(p1), 1);
    const auto e2 = to::label_points(p2, to::solve(p2), 2);
    CHECK_NOTHROW(to::check_frontier(p1, e1, 1));
    const auto u = to::merge_frontiers({e1, e2});
    for (std::size_t i = 1; i < u.size(); ++i) {
      CHECK(u[i - 1].memory < u[i].memory);
      CHECK(u[i - 1].time > u[i].time);
    }
    // every input point is weakly dominated by a point of the union, which comes from an input
    for (const auto* part : {&e1, &e2})
      for (auto& e : *part) {
        bool dominated = false;
        for (auto& q : u) dominated = dominated || (q.memory <= e.memory && q.time <= e.time);
        CHECK(dominated);
      }
    for (auto& q : u) CHECK(std::find(q.micro_batches == 1 ? e1.begin() : e2.begin(),
                                      q.micro_batches == 1 ? e1.end() : e2.end(), q) !=
                            (q.micro_batches == 1 ? e1.end() : e2.end()));
    CHECK_NOTHROW(to::check_frontier(p1, u, 1));
    CHECK_NOTHROW(to::check_frontier(p2, u, 2));
    CHECK(to::read_frontier_json(to::write_frontier_json(u)) == u);
  }
}

TEST_CASE("frontier JSON: malformed files are rejected") {
  const auto p = to::read_problem_json(good);
  const auto pts = to::label_points(p, to::solve(p), 1);
  REQUIRE(pts.size() >= 2);
  const json base = json::parse(to::write_frontier_json(pts));
  auto expect = [&](auto edit, const char* message) {
    json j = base;
    edit(j);
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(to::frontier_from_json(j), doctest::Contains(message), to::format_error);
  };
  expect([](json& j) { j["format"] = "tensoropt-problem/1"; }, "format: expected \"tensoropt-frontier/1\"");
  expect([](json& j) { j["points"] = json::array(); }, "points: the frontier has no points");
  expect([](json& j) { std::swap(j["points"][0], j["points"][1]); }, "points[1]: points must be sorted");
  expect([](json& j) { j["points"][1]["micro_batches"] = 0; }, "points[1].micro_batches: expected an integer >= 1");
  expect([](json& j) { j["points"][0]["choice"][0] = -1; }, "points[0].choice[0]: expected a config index");
  expect([](json& j) { j["points"][0]["labels"].erase(0); }, "points[0].labels: expected 2 labels");
  expect([](json& j) { j["points"][0].erase("memory"); }, "points[0].memory: missing field");
  CHECK_THROWS_AS(to::read_frontier_json("{"), to::format_error);
  auto bad = pts;
  bad[0].time += 1;
  CHECK_THROWS_WITH_AS(to::check_frontier(p, bad), doctest::Contains("points[0]: the strategy costs"), to::format_error);
  bad = pts;
  bad[1].labels[0] = "nope";
  CHECK_THROWS_WITH_AS(to::check_frontier(p, bad), doctest::Contains("points[1].labels[0]: 'nope'"), to::format_error);
  bad = pts;
  bad[0].choice[1] = 7;
  CHECK_THROWS_WITH_AS(to::check_frontier(p, bad), doctest::Contains("points[0].choice[1]: config 7 does not exist"),
                       to::format_error);
}

TEST_CASE("frontier JSON versions: /2 is written, /1 (with or without peak) still reads, others are refused") {
  const auto p = to::read_problem_json(good);
  auto pts = to::label_points(p, to::solve(p), 1);
  REQUIRE(pts.size() >= 2);
  pts[0].peak = pts[0].memory + 17;
  const std::string text = to::write_frontier_json(pts);
  CHECK(text.rfind("{\"format\": \"tensoropt-frontier/2\"", 0) == 0);
  CHECK(to::read_frontier_json(text) == pts);
  // the same points as a /1 file: read unchanged, "peak" included
  json v1 = json::parse(text);
  v1["format"] = "tensoropt-frontier/1";
  CHECK(to::frontier_from_json(v1) == pts);
  v1["points"][0].erase("peak");
  CHECK(to::frontier_from_json(v1)[0].peak == 0);
  // a /1 file cannot hold a pipeline point: "pipeline" there is not read, choice is still required
  v1["points"][1]["pipeline"] = json::object();
  CHECK(to::frontier_from_json(v1)[1] == pts[1]);
  for (const char* f : {"tensoropt-frontier/3", "tensoropt-frontier/0", "tensoropt-frontier"}) {
    json j = json::parse(text);
    j["format"] = f;
    CHECK_THROWS_WITH_AS(to::frontier_entries_from_json(j),
                         doctest::Contains("format: expected \"tensoropt-frontier/1\" or \"tensoropt-frontier/2\", got"),
                         to::format_error);
  }
}

TEST_CASE("frontier JSON /2: pipeline points round-trip; the one-problem reader refuses them") {
  const auto p = to::read_problem_json(good);
  const auto pts = to::label_points(p, to::solve(p), 1);
  REQUIRE(pts.size() >= 2);
  auto entries = to::entries_of(pts);
  to::stage_choices st;
  st.degree = 2;
  st.partition = 3;
  st.stage_begin = {0, 5};
  st.choice = {{0, 1}, {2}};
  st.labels = {{"a \"0\"", "b"}, {"c"}};
  entries[1].point.choice.clear();
  entries[1].point.labels.clear();
  entries[1].point.micro_batches = 4;
  entries[1].stages = st;
  const std::string text = to::write_frontier_json(entries);
  CHECK(to::read_frontier_entries(text) == entries);
  CHECK_THROWS_WITH_AS(to::read_frontier_json(text), doctest::Contains("points[1]: a pipeline point"), to::format_error);
  const json base = json::parse(text);
  auto expect = [&](auto edit, const char* message) {
    json j = base;
    edit(j);
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(to::frontier_entries_from_json(j), doctest::Contains(message), to::format_error);
  };
  expect([](json& j) { j["points"][1]["choice"] = json::array(); }, "points[1]: a point has either");
  expect([](json& j) { j["points"][1]["pipeline"]["stage_begin"].push_back(9); },
         "points[1].pipeline.stage_begin: expected 2 entries");
  expect([](json& j) { j["points"][1]["pipeline"]["stages"].erase(0); }, "points[1].pipeline.stages: expected 2 entries");
  expect([](json& j) { j["points"][1]["pipeline"]["stages"][1]["labels"].push_back("x"); },
         "points[1].pipeline.stages[1].labels: expected 1 labels");
  expect([](json& j) { j["points"][1]["pipeline"]["stages"][0]["choice"][1] = -2; },
         "points[1].pipeline.stages[0].choice[1]: expected a config index");
  expect([](json& j) { j["points"][1]["pipeline"]["degree"] = 0; }, "points[1].pipeline.degree: expected an integer >= 1");
  expect([](json& j) { j["points"][1]["pipeline"].erase("partition"); }, "points[1].pipeline.partition: missing field");
  expect([](json& j) { j["points"][0].erase("choice"); }, "points[0].choice: missing field");
}
}  // namespace search_json_test_file
