// Huge but easy problems finish: a million one-config nodes, wide fans, long chains.
// Not a timed test: the ctest TIMEOUT is the bound (the plan was quadratic in the node
// count, and 10^6 one-config nodes timed out).
#include <doctest/doctest.h>
#include <cstdint>
#include <string>
#include <tensoropt/search/problem_json.hpp>
#include <tensoropt/search/solve.hpp>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_huge_test_file {

namespace to = tensoropt;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int scale = 10;  // the sanitizer build is ~10x slower
#else
constexpr int scale = 1;
#endif

// n nodes with `configs` configs each; edges i-1 -> i (chain) or i -> 0 (fan).
to::problem make(int n, int configs, bool fan) {
  to::problem p;
  p.memory_offset = 7;
  p.nodes.reserve(std::size_t(n));
  for (int i = 0; i < n; ++i) {
    to::problem_node node{"n" + std::to_string(i), {}};
    for (int c = 0; c < configs; ++c) node.configs.push_back({"c", 1000 + 10 * c, 10 - 3 * c});
    p.nodes.push_back(std::move(node));
  }
  for (int i = 1; i < n; ++i) {
    const int from = fan ? i : i - 1, to_ = fan ? 0 : i;
    to::problem_edge e{from, to_, {}, {}};
    for (int a = 0; a < configs; ++a)
      for (int b = 0; b < configs; ++b) {
        e.time.push_back(a == b ? 5 : 1'000'000'000);
        e.memory.push_back(a == b ? 1 : 1000);
      }
    p.edges.push_back(std::move(e));
  }
  return p;
}

}  // namespace

TEST_CASE("a million one-config nodes: one point, the exact sum") {
  const std::int64_t n = 1'000'000 / scale;
  for (bool fan : {false, true}) {
    const auto p = make(int(n), 1, fan);
    const auto r = to::solve(p);
    REQUIRE(r.points.size() == 1);
    CHECK(r.points[0].time == n * 1000 + (n - 1) * 5);
    CHECK(r.points[0].memory == 7 + n * 10 + (n - 1));
    CHECK(r.points[0].choice == std::vector<int>(std::size_t(n), 0));
    CHECK(r.exact);
    to::solve_options tight;
    tight.memory_limit = r.points[0].memory - 1;
    CHECK(to::solve(p, tight).points.empty());
  }
}

TEST_CASE("100,000 one-config nodes round-trip through the problem file") {
  const auto p = make(100'000 / scale, 1, true);
  const auto q = to::read_problem_json(to::write_problem_json(p));
  CHECK(q == p);
  CHECK(to::solve(q).points.size() == 1);
}

TEST_CASE("chains and wide fans of two-config nodes") {
  // Config 0 is faster, config 1 smaller; a switch between neighbours costs more time
  // and memory than any mix saves, so the frontier is the two uniform strategies. (A
  // segment of the chain between two fixed ends still carries a staircase as long as
  // the segment: where the switch sits trades time for memory. So chains stay shorter.)
  const int n = 20'000 / scale;
  const auto chain = to::solve(make(n, 2, false));
  REQUIRE(chain.points.size() == 2);
  CHECK(chain.points[0].memory == 7 + std::int64_t(n) * 7 + (n - 1));
  CHECK(chain.points[1].time == std::int64_t(n) * 1000 + std::int64_t(n - 1) * 5);
  // fan: 100,000 leaves into one hub (scored by its factor count until the leaves are
  // gone: re-scoring it exactly after each leaf was quadratic)
  const int leaves = 100'000 / scale;
  const auto fan = to::solve(make(leaves + 1, 2, true));
  REQUIRE(fan.points.size() == 2);
  CHECK(fan.points[0].choice == std::vector<int>(std::size_t(leaves + 1), 1));
  CHECK(fan.points[1].choice == std::vector<int>(std::size_t(leaves + 1), 0));
  CHECK(fan.max_width <= 2);
}
}  // namespace search_huge_test_file
