// The cover of a frontier: the greedy scan against brute force over every subset.
#include <tensoropt/search/cover.hpp>
#include <tensoropt/search/problem.hpp>
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_cover_test_file {

using namespace tensoropt;

namespace {

struct pt {
  cost_t time = 0, memory = 0;
};

/// A random staircase of at most `n` points: random points, pruned to the frontier.
std::vector<pt> random_staircase(std::mt19937& rng, int n, cost_t spread) {
  std::uniform_int_distribution<cost_t> d(1, spread);
  std::vector<pt> raw(std::size_t(n) * 3);
  for (auto& p : raw) p = {d(rng), d(rng)};
  std::sort(raw.begin(), raw.end(), [](auto& a, auto& b) { return a.memory != b.memory ? a.memory < b.memory : a.time < b.time; });
  std::vector<pt> out;
  for (auto& p : raw)
    if (out.empty() || p.time < out.back().time) {
      if (!out.empty() && out.back().memory == p.memory) continue;
      out.push_back(p);
    }
  if (out.size() > std::size_t(n)) out.resize(std::size_t(n));
  return out;
}

/// The least size of a cover containing `required`, by trying every subset.
std::size_t brute_force_cover(const std::vector<pt>& pts, double tol, const std::vector<std::size_t>& required) {
  const std::size_t n = pts.size();
  std::size_t best = n + 1;
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
    std::vector<std::size_t> s;
    for (std::size_t i = 0; i < n; ++i)
      if (mask >> i & 1) s.push_back(i);
    if (s.size() >= best) continue;
    bool has_required = true;
    for (auto r : required) has_required = has_required && (mask >> r & 1);
    if (has_required && is_cover(pts, s, tol)) best = s.size();
  }
  return best;
}

}  // namespace

TEST_CASE("the greedy cover is a cover of the least size (brute force on random staircases)") {
  std::mt19937 rng(20261130);
  int checked = 0, shrunk = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 1 + trial % 12;
    const auto pts = random_staircase(rng, n, trial % 2 ? 60 : 1000);
    const double tol = std::vector<double>{0.0, 0.01, 0.05, 0.2, 0.5, 2.0}[std::size_t(trial) % 6];
    std::vector<std::size_t> required;
    if (trial % 3 == 0 && !pts.empty()) required.push_back(std::size_t(trial) % pts.size());
    const auto c = cover_indices(pts, tol, required);
    CAPTURE(trial);
    CAPTURE(tol);
    REQUIRE(is_cover(pts, c, tol));
    CHECK(std::is_sorted(c.begin(), c.end()));
    CHECK(std::adjacent_find(c.begin(), c.end()) == c.end());
    for (auto r : required) CHECK(std::find(c.begin(), c.end(), r) != c.end());
    CHECK(c.size() == brute_force_cover(pts, tol, required));
    ++checked;
    shrunk += c.size() < pts.size();
  }
  CHECK(checked == 400);
  CHECK(shrunk > 100);  // the trials exercise covers smaller than the frontier
}

TEST_CASE("tolerance 0 keeps every point; a large tolerance keeps only the least memory") {
  const std::vector<pt> pts = {{100, 1}, {99, 2}, {90, 3}, {10, 4}};
  CHECK(cover_indices(pts, 0.0).size() == 4);
  CHECK(cover_indices(pts, 100.0) == std::vector<std::size_t>{0});
  // 1 %: 100 covers 99 (100 <= 99.99? no): 99 is kept; 99 does not cover 90; 90 not 10.
  CHECK(cover_indices(pts, 0.01) == std::vector<std::size_t>{0, 1, 2, 3});
  // 2 %: 100 covers 99; 100 does not cover 90; 90 does not cover 10.
  CHECK(cover_indices(pts, 0.02) == std::vector<std::size_t>{0, 2, 3});
  const std::size_t keep[] = {1};
  CHECK(cover_indices(pts, 0.02, keep) == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(cover_owner(4, cover_indices(pts, 0.02)) == std::vector<std::size_t>{0, 0, 2, 3});
}

TEST_CASE("memory is exact: a cover point never has more memory than the point it stands for") {
  // Equal times would not be a staircase; a faster point with more memory never covers.
  const std::vector<pt> pts = {{1000, 10}, {999, 11}, {998, 12}};
  const auto c = cover_indices(pts, 0.5);
  CHECK(c == std::vector<std::size_t>{0});
  const std::vector<std::size_t> only_last = {2};
  CHECK_FALSE(is_cover(pts, only_last, 0.5));
}

TEST_CASE("bad input is refused with a message naming the problem") {
  const std::vector<pt> unsorted = {{10, 5}, {20, 6}};
  CHECK_THROWS_WITH_AS(cover_indices(unsorted, 0.01), doctest::Contains("points 0 and 1 are not a frontier"),
                       invalid_argument);
  const std::vector<pt> pts = {{10, 5}, {5, 6}};
  CHECK_THROWS_WITH_AS(cover_indices(pts, -0.1), doctest::Contains("tolerance must be a finite number >= 0"),
                       invalid_argument);
  CHECK_THROWS_AS(cover_indices(pts, std::nan("")), invalid_argument);
  const std::size_t bad[] = {7};
  CHECK_THROWS_WITH_AS(cover_indices(pts, 0.01, bad), doctest::Contains("required point 7 is out of range"),
                       invalid_argument);
  CHECK(cover_indices(std::vector<pt>{}, 0.01).empty());
}

static_assert([] {
  const std::vector<pt> pts = {{100, 1}, {99, 2}, {90, 3}, {10, 4}};
  return cover_indices(pts, 0.02).size() == 3;
}());
}  // namespace search_cover_test_file
