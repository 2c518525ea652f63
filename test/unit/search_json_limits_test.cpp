// Tests of the readers' limits: nesting depth, NUL bytes, bounded error messages, and
// problems whose cost sums could overflow int64 (each case a reported crash or wrong answer).
#include <doctest/doctest.h>
#include <cmath>
#include <string>
#include <tensoropt/search/frontier_json.hpp>
#include <tensoropt/search/problem_json.hpp>
#include <tensoropt/search/solve.hpp>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_json_limits_test_file {

namespace to = tensoropt;

namespace {

std::string problem_text(const std::string& offset, const std::string& time, const std::string& memory) {
  return R"({"format": "tensoropt-problem/1", "memory_offset": )" + offset +
         R"(, "nodes": [{"name": "a", "configs": [{"label": "a0", "time": )" + time + R"(, "memory": )" + memory +
         R"(}]}, {"name": "b", "configs": [{"label": "b0", "time": 1, "memory": 1}]}], "edges": []})";
}

// Every message a reader throws is one short line.
template <class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const to::format_error& e) {
    return e.what();
  } catch (const to::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("JSON readers: nesting 200,000 deep is refused with the depth, not a crash") {
  for (const std::string field : {"format", "memory_offset", "nodes"}) {
    std::string t = problem_text("0", "1", "1");
    const auto at = t.find("\"" + field + "\": ") + field.size() + 4;
    t.insert(at, std::string(200000, '[') + std::string(200000, ']') + ", \"x\": ");
    CAPTURE(field);
    const auto m = message_of([&] { to::read_problem_json(t); });
    CHECK(m.find("nested deeper than 64 levels") != std::string::npos);
    CHECK(m.size() < 200);
  }
  const std::string deep_frontier = R"({"format": "tensoropt-frontier/1", "points": )" + std::string(100000, '{');
  CHECK(message_of([&] { to::read_frontier_json(deep_frontier); }).find("nested deeper") != std::string::npos);
  // brackets inside strings do not count; 64 levels are fine as far as nesting goes
  std::string ok = problem_text("0", "1", "1");
  ok.replace(ok.find("\"a0\""), 4, "\"" + std::string(1000, '[') + "\"");
  CHECK(to::read_problem_json(ok).nodes[0].configs[0].label == std::string(1000, '['));
  const std::string at_limit = std::string(63, '[') + std::string(63, ']');
  CHECK(message_of([&] { to::read_problem_json("{\"format\": " + at_limit + "}"); }).find("format: expected") !=
        std::string::npos);
}

TEST_CASE("JSON readers: a NUL byte is refused, naming its position") {
  std::string t = problem_text("0", "1", "1");
  const auto n = t.size();
  t.push_back('\0');
  t += "garbage after the NUL";
  CHECK(message_of([&] { to::read_problem_json(t); }) ==
        "problem JSON: a NUL byte at byte " + std::to_string(n) + "; the file is binary or corrupt, not JSON text");
  std::string f = R"({"format": "tensoropt-frontier/1", "points": []})";
  f.insert(5, 1, '\0');
  CHECK(message_of([&] { to::read_frontier_json(f); }).find("NUL byte at byte 5") != std::string::npos);
}

TEST_CASE("JSON readers: echoed values are cut short") {
  const std::string huge(5'000'000, 'x');
  std::string t = problem_text("0", "1", "1");
  t.replace(t.find("\"tensoropt-problem/1\""), 21, "\"" + huge + "\"");
  auto m = message_of([&] { to::read_problem_json(t); });
  CHECK(m.find("(5000002 characters)") != std::string::npos);
  CHECK(m.size() < 200);
  // a huge node name in a validation message, and a huge array as a wrong value
  t = problem_text("0", "1", "1");
  t.replace(t.find("\"b\""), 3, "\"" + huge + "\"");
  t.replace(t.find("\"edges\": []"), 11, R"("edges": [{"from": 0, "to": 1, "time": [[1, 2]], "memory": [[0]]}])");
  m = message_of([&] { to::read_problem_json(t); });
  CHECK(m.find("expected 1 values") != std::string::npos);
  CHECK(m.size() < 300);
  std::string ones = "[1";
  for (int i = 0; i < 100000; ++i) ones += ",1";
  t = problem_text(ones + "]", "1", "1");
  m = message_of([&] { to::read_problem_json(t); });
  CHECK(m.find("memory_offset: expected a number of bytes, got array") != std::string::npos);
  // the parser's own message is bounded too (an unterminated 5 MB string)
  m = message_of([&] { to::read_problem_json("{\"format\": \"" + huge); });
  CHECK(m.find("not valid JSON") != std::string::npos);
  CHECK(m.size() < 500);
}

TEST_CASE("problems whose cost sums could overflow int64 are refused with the limit") {
  const std::string limit = std::to_string(to::max_problem_cost);
  // memory_offset INT64_MAX gave an empty frontier and exit 0
  auto m = message_of([&] { to::read_problem_json(problem_text("9223372036854775807", "1", "1")); });
  CHECK(m.find("memory: the largest strategy's memory") != std::string::npos);
  CHECK(m.find(limit) != std::string::npos);
  // two configs near INT64_MAX each: their sum printed as a negative memory
  to::problem p = to::read_problem_json(problem_text("0", "1", "1"));
  p.nodes[0].configs[0].memory = 9'000'000'000'000'000'000;
  p.nodes[1].configs[0].memory = 9'000'000'000'000'000'000;
  CHECK_THROWS_WITH_AS(to::validate(p), doctest::Contains("exceeds 2^62"), to::invalid_argument);
  CHECK_THROWS_WITH_AS(to::solve(p), doctest::Contains("exceeds 2^62"), to::invalid_argument);
  // edges count, with their largest cell
  p = to::read_problem_json(problem_text("0", "1", "1"));
  p.edges.push_back({0, 1, {0}, {to::max_problem_cost}});
  CHECK_THROWS_WITH_AS(to::validate(p), doctest::Contains("memory_offset + the largest config of every node"),
                       to::invalid_argument);
  p.edges[0].memory = {to::max_problem_cost - 2};  // + the two nodes' 1 byte each: exactly the limit
  CHECK_NOTHROW(to::validate(p));
  CHECK(to::solve(p).points.front().memory == to::max_problem_cost);
  // time: many nodes each within the reader's per-value limit, together beyond 2^62 ps
  p = to::problem{};
  for (int i = 0; i < 2100; ++i)
    p.nodes.push_back({"n" + std::to_string(i), {{"c", to::cost_t(1) << 51, 0}}});
  CHECK_THROWS_WITH_AS(to::validate(p), doctest::Contains("time: the largest strategy's time"), to::invalid_argument);
  CHECK_THROWS_WITH_AS(to::read_problem_json(to::problem_to_json(p).dump()),
                       doctest::Contains("time: the largest strategy's time"), to::format_error);
}

TEST_CASE("checked_cost: float-to-integer conversions are range-checked") {
  CHECK(to::detail::checked_cost(1e10, "x") == 10'000'000'000);
  CHECK(to::detail::checked_cost(0, "x") == 0);
  // --memory-budget 1e10 (GiB) in --solve mode printed -8589934592 GiB
  CHECK_THROWS_WITH_AS(to::detail::checked_cost(1e10 * 1073741824.0, "--memory-budget"),
                       doctest::Contains("--memory-budget is too large"), to::invalid_argument);
  CHECK_THROWS_AS(to::detail::checked_cost(-1, "x"), to::invalid_argument);
  CHECK_THROWS_AS(to::detail::checked_cost(std::nan(""), "x"), to::invalid_argument);
  CHECK_THROWS_AS(to::detail::checked_cost(1e300, "x"), to::invalid_argument);
}
}  // namespace search_json_limits_test_file
