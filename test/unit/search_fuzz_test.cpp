// Fuzz test of the problem and frontier readers: thousands of random mutations of valid
// files (fixed seed). Each is refused with one short format_error line, or accepted and
// then consistent: it validates, round-trips exactly, and its frontier's costs are
// those of its strategies. A crash or hang fails the test (ctest TIMEOUT).
#include <doctest/doctest.h>
#include <algorithm>
#include <random>
#include <string>
#include <tensoropt/search/frontier_json.hpp>
#include <tensoropt/search/problem_json.hpp>
#include <tensoropt/search/solve.hpp>
#include "fuzz_mutate.hpp"
#include "random_problem.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_fuzz_test_file {

namespace to = tensoropt;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int rounds = 500;  // the sanitizer build is ~10x slower
#else
constexpr int rounds = 3000;
#endif

struct outcome {
  int accepted = 0, refused = 0;
};

// Reads `text` with `read`; a refusal must be one format_error line of bounded length.
template <class Read, class Check>
void try_read(const std::string& text, Read read, Check check, outcome& o) {
  try {
    auto v = read(text);
    ++o.accepted;
    check(v);
  } catch (const to::format_error& e) {
    ++o.refused;
    const std::string m = e.what();
    CAPTURE(m);
    CHECK(!m.empty());
    CHECK(m.size() < 600);
    CHECK(m.find('\n') == std::string::npos);
  }
}

}  // namespace

TEST_CASE("fuzz: mutated problem files are refused clearly or accepted consistently") {
  std::mt19937_64 rng(20261130);
  std::vector<std::string> seeds;
  for (int k = 0; k < 5; ++k)
    seeds.push_back(to::write_problem_json(rand_problem::random_problem(rng, k, 2 + k, 3, k % 2 == 0)));
  outcome o;
  for (int it = 0; it < rounds; ++it) {
    const std::string text = fuzz::mutate(seeds[std::size_t(it) % seeds.size()], rng, true);
    CAPTURE(it);
    try_read(
        text, [](const std::string& t) { return to::read_problem_json(t); },
        [](const to::problem& p) {
          CHECK_NOTHROW(to::validate(p));
          CHECK(to::read_problem_json(to::write_problem_json(p)) == p);
          std::size_t strategies = 1;
          for (auto& n : p.nodes) strategies *= std::min<std::size_t>(n.configs.size(), 1000);
          if (p.nodes.size() > 12 || strategies > 100000) return;  // keep each check small
          const auto r = to::solve(p);
          REQUIRE(!r.points.empty());
          for (auto& q : r.points) {
            const auto c = to::cost_of(p, q.choice);
            CHECK(c.time == q.time);
            CHECK(c.memory == q.memory);
            CHECK(q.memory >= p.memory_offset);
          }
        },
        o);
  }
  MESSAGE("problem files: " << o.accepted << " mutations accepted, " << o.refused << " refused");
  CHECK(o.refused > rounds / 2);  // the mutations do reach the checks
}

TEST_CASE("fuzz: mutated frontier files are refused clearly or accepted consistently") {
  std::mt19937_64 rng(7);
  const auto p = rand_problem::random_problem(rng, 3, 5, 3, true);
  const auto entries = to::label_points(p, to::solve(p), 2);
  REQUIRE(entries.size() >= 2);
  const std::string seed = to::write_frontier_json(entries);
  outcome o;
  for (int it = 0; it < rounds / 2; ++it) {
    const std::string text = fuzz::mutate(seed, rng, true);
    CAPTURE(it);
    try_read(
        text, [](const std::string& t) { return to::read_frontier_json(t); },
        [&](const std::vector<to::frontier_point>& f) {
          for (std::size_t i = 1; i < f.size(); ++i) {
            CHECK(f[i - 1].memory < f[i].memory);
            CHECK(f[i - 1].time > f[i].time);
          }
          CHECK(to::read_frontier_json(to::write_frontier_json(f)) == f);
          // against the problem: either consistent or refused, never a crash
          try {
            to::check_frontier(p, f, 2);
          } catch (const to::format_error&) {
          }
        },
        o);
  }
  MESSAGE("frontier files: " << o.accepted << " mutations accepted, " << o.refused << " refused");
  CHECK(o.refused > rounds / 4);
}
}  // namespace search_fuzz_test_file
