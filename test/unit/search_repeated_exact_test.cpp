// Tests of the exact chain fold of repeated blocks (search/repeated_exact.hpp) against brute
// force and the general search, and of its branch-and-bound region
// (search/detail/completion_bound.hpp) against the definition.
#include <doctest/doctest.h>
#include <cstdint>
#include <limits>
#include <random>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/build_problem.hpp>
#include <tensoropt/plan/search_mode.hpp>
#include <tensoropt/search/repeated_exact.hpp>
#include "random_problem.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace search_repeated_exact_test_file {

namespace to = tensoropt;
using rand_problem::cost_pair;

namespace {

std::vector<cost_pair> costs(const to::frontier_result& r) {
  std::vector<cost_pair> c;
  for (auto& q : r.points) c.push_back({q.time, q.memory});
  return c;
}

std::size_t strategies(const to::problem& p) {
  std::size_t n = 1;
  for (auto& nd : p.nodes) n *= nd.configs.size();
  return n;
}

void check_recost(const to::problem& p, const to::frontier_result& r) {
  for (auto& q : r.points) {
    const auto c = to::cost_of(p, q.choice);
    CHECK(c.time == q.time);
    CHECK(c.memory == q.memory);
  }
}

// A random staircase of n points (memory ascending, time strictly descending).
std::vector<to::detail::candidate> staircase(std::mt19937_64& rng, std::size_t n, std::int64_t step) {
  std::vector<to::detail::candidate> s;
  std::int64_t m = std::int64_t(rng() % std::uint64_t(step)), t = 40 * step;
  for (std::size_t i = 0; i < n && t > 0; ++i) {
    s.push_back({t, m, -1, -1});
    m += 1 + std::int64_t(rng() % std::uint64_t(step));
    t -= 1 + std::int64_t(rng() % std::uint64_t(step));
  }
  return s;
}

// The definition: p survives iff some r of lb puts p + r within the memory limit where no k
// has k.memory <= and k.time <.
bool survives(const std::vector<to::detail::candidate>& k, const std::vector<to::detail::candidate>& lb,
              std::int64_t t, std::int64_t m, std::int64_t limit = std::numeric_limits<std::int64_t>::max()) {
  for (auto& r : lb) {
    if (m + r.memory > limit) continue;
    bool beaten = false;
    for (auto& x : k) beaten = beaten || (x.memory <= m + r.memory && x.time < t + r.time);
    if (!beaten) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the branch-and-bound region and its erosion keep exactly what the definition keeps") {
  std::mt19937_64 rng(5);
  for (int it = 0; it < 200; ++it) {
    CAPTURE(it);
    const std::int64_t step = 1 + std::int64_t(rng() % 6);
    const auto k = staircase(rng, 1 + rng() % 12, step), lb = staircase(rng, 1 + rng() % 6, step),
               u = staircase(rng, 1 + rng() % 4, step);
    // no memory limit, or one anywhere from below K's least memory to past its most
    const std::int64_t limit = it % 3 == 0 ? std::numeric_limits<std::int64_t>::max()
                                           : std::int64_t(rng() % std::uint64_t(k.back().memory + 8 * step));
    CAPTURE(limit);
    const auto f = to::detail::make_completion_filter(k, lb, limit);
    const auto eroded = to::detail::erode(f, u);
    // lb (+) u, every sum (the region depends only on its minimal points)
    std::vector<to::detail::candidate> lbu;
    for (auto& a : lb)
      for (auto& b : u) lbu.push_back({a.time + b.time, a.memory + b.memory, -1, -1});
    // corners below a memory dropped: the same answers at and above it, and after an
    // erosion at and above it less u's least memory
    auto cut = f;
    const std::int64_t below = std::int64_t(rng() % std::uint64_t(20 * step));
    cut.drop_below(below);
    const auto cut_eroded = to::detail::erode(cut, u);
    CHECK(cut.bound(below) == f.bound(below));
    for (auto& c : f.corners)  // the bound at each corner's own memory, where a drop too many would show
      if (c.memory >= below) CHECK(cut.bound(c.memory) == f.bound(c.memory));
    for (auto& c : eroded.corners)
      if (c.memory >= below - u.front().memory) CHECK(cut_eroded.bound(c.memory) == eroded.bound(c.memory));
    for (int q = 0; q < 300; ++q) {
      const std::int64_t t = std::int64_t(rng() % std::uint64_t(50 * step)), m = std::int64_t(rng() % std::uint64_t(20 * step));
      CHECK(f.keeps(t, m) == survives(k, lb, t, m, limit));
      CHECK(eroded.keeps(t, m) == survives(k, lbu, t, m, limit));
      if (m >= below) CHECK(cut.keeps(t, m) == f.keeps(t, m));
      if (m >= below - u.front().memory) CHECK(cut_eroded.keeps(t, m) == eroded.keeps(t, m));
    }
  }
  // no known strategies: nothing is dropped
  CHECK(to::detail::make_completion_filter({}, {{1, 1, -1, -1}}).keeps(std::numeric_limits<std::int64_t>::max(), 1 << 30));
}

TEST_CASE("the chain sums' test: true only where the points lie at or below every exact sum") {
  std::mt19937_64 rng(8);
  int beaten = 0, not_beaten = 0;
  for (int it = 0; it < 300; ++it) {
    CAPTURE(it);
    const std::int64_t step = 1 + std::int64_t(rng() % 6);
    const auto a = staircase(rng, 1 + rng() % 5, step), u = staircase(rng, 1 + rng() % 4, step),
               z = staircase(rng, 1 + rng() % 4, step);
    const std::size_t n = rng() % 4;
    // every sum a + u_1 + ... + u_n + z, by brute force
    std::vector<to::detail::candidate> sums;
    for (auto& x : a)
      for (auto& y : z) sums.push_back({x.time + y.time, x.memory + y.memory, -1, -1});
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<to::detail::candidate> more;
      for (auto& s : sums)
        for (auto& y : u) more.push_back({s.time + y.time, s.memory + y.memory, -1, -1});
      sums = std::move(more);
    }
    const std::int64_t limit = it % 3 == 0 ? std::numeric_limits<std::int64_t>::max() : sums[rng() % sums.size()].memory;
    // points near the sums' own staircase: some below all of it, some not
    std::vector<to::frontier::point> by;
    const double f = 0.85 + 0.05 * double(rng() % 5);
    for (auto& s : sums)
      if (rng() % 3 == 0) by.push_back({std::int64_t(double(s.time) * f), s.memory - std::int64_t(rng() % 2), -1});
    // whether every sum within the limit has a point at or below it (with a 1 % margin in time)
    auto all_below = [&](double margin) {
      for (auto& s : sums) {
        if (s.memory > limit) continue;
        bool below = false;
        for (auto& q : by) below = below || (q.memory <= s.memory && double(q.time) * margin <= double(s.time));
        if (!below) return false;
      }
      return true;
    };
    const bool got = to::detail::chain_sums_beaten(a, u, n, z, limit, by);
    CHECK((!got || all_below(1.0)));  // never claims what the sums deny
    // the pruning's factor, (1 + 0.001)^(n + 1), lies within the margin: such points are found
    if (all_below(1.01)) CHECK(got);
    beaten += got;
    not_beaten += !got;
  }
  CHECK(beaten > 20);
  CHECK(not_beaten > 20);
}

TEST_CASE("a fold united with other searches' points: skipped after its tables only where they beat it") {
  std::mt19937_64 rng(21);
  int skipped = 0, searched = 0, skipped_early = 0;
  for (int it = 0; it < 150 / rand_problem::brute_force_share; ++it) {
    const int pre = int(rng() % 2), suf = int(rng() % 2), m = 1 + int(rng() % 3), L = 3 + int(rng() % 3);
    const auto g = rand_problem::random_repeated(rng, pre, L, m, suf, 3, it % 2 == 1);
    if (strategies(g.p) > 100000) continue;
    CAPTURE(it);
    const auto brute = rand_problem::brute_force(g, false);
    // the other searches' points: the exact frontier, faster by a factor, some points left out
    const double f = 0.5 + 0.1 * double(rng() % 8);
    std::vector<to::frontier::point> theirs;
    for (auto& c : brute)
      if (rng() % 4 != 0) theirs.push_back({std::int64_t(double(c.time) * f), c.memory, -1});
    if (theirs.empty()) continue;
    const to::known_exchange ex = [&](std::vector<to::frontier::point>) { return std::optional(theirs); };
    const auto r = to::solve_repeated_exact(g.p, g.rb, {}, ex);
    check_recost(g.p, r);
    // the union's costs are those of brute force's frontier united with theirs
    auto pareto = [](std::vector<cost_pair> v) {
      std::sort(v.begin(), v.end(), [](auto& x, auto& y) { return x.memory != y.memory ? x.memory < y.memory : x.time < y.time; });
      std::vector<cost_pair> out;
      for (auto& c : v)
        if (out.empty() || c.time < out.back().time) out.push_back(c);
      return out;
    };
    std::vector<cost_pair> want = brute, got = costs(r);
    for (auto& q : theirs) want.push_back({q.time, q.memory}), got.push_back({q.time, q.memory});
    CHECK(pareto(got) == pareto(want));
    if (r.skipped) {
      CHECK(r.note.starts_with(to::skipped_after_tables));
      CHECK(r.points.empty());
      ++skipped;
    } else
      ++searched;
    // the points known before fast mode's (a part of theirs, or all, or none): the same
    // costs, and where they skip the search the exchange is never asked
    std::vector<to::frontier::point> part;
    const int share = int(rng() % 3);  // none, about half, all
    for (auto& q : theirs)
      if (share == 2 || (share == 1 && rng() % 2 == 0)) part.push_back(q);
    int asked = 0;
    const to::known_exchange counted = [&](std::vector<to::frontier::point>) {
      ++asked;
      return std::optional(theirs);
    };
    // and K's own search given all of them first (`before`)
    const auto early = to::solve_repeated_exact(g.p, g.rb, {}, counted, {}, [&] { return part; },
                                                [&] { return theirs; });
    check_recost(g.p, early);
    CHECK(early.skipped == r.skipped);
    CHECK(costs(early) == costs(r));
    if (early.skipped) CHECK(early.note.starts_with(to::skipped_after_tables));
    if (asked == 0) {
      CHECK(early.skipped);
      ++skipped_early;
    }
    if (share == 2) CHECK(asked == 0 + !r.skipped);  // all of them known: the exchange only where they do not skip
  }
  CHECK(skipped > 5);
  CHECK(searched > 5);
  CHECK(skipped_early > 2);
}

TEST_CASE("the exact chain fold of repeated blocks equals brute force, layout changes included") {
  std::mt19937_64 rng(12);
  int tested = 0, beyond_fast = 0;
  for (int it = 0; it < 300 / rand_problem::brute_force_share; ++it) {
    // free boundaries (a prefix and a suffix) or none; identical or near-identical end instances
    const int pre = int(rng() % 3), suf = int(rng() % 3), m = 1 + int(rng() % 3), L = 3 + int(rng() % 4);
    const auto g = rand_problem::random_repeated(rng, pre, L, m, suf, 3, it % 2 == 1);
    if (strategies(g.p) > 300000) continue;
    CAPTURE(it);
    REQUIRE(to::check_repeated(g.p, g.rb) == "");
    to::solve_options o;
    const auto brute = rand_problem::brute_force(g, false);
    if (it % 3 == 2 && brute.size() > 1) o.memory_limit = brute[brute.size() / 2].memory;
    std::vector<cost_pair> want;
    for (auto& c : brute)
      if (c.memory <= o.memory_limit) want.push_back(c);
    const auto r = to::solve_repeated_exact(g.p, g.rb, o);
    CHECK(r.exact);
    CHECK(!r.restricted);
    check_recost(g.p, r);
    CHECK(costs(r) == want);
    beyond_fast += costs(to::solve_repeated(g.p, g.rb, o)) != want;
    ++tested;
  }
  CHECK(tested > 150 / rand_problem::brute_force_share);
  CHECK(beyond_fast > 0);  // some optima change layout: fast mode's frontier alone would be wrong
}

TEST_CASE("the exact chain fold equals the general search on larger repeated problems") {
  std::mt19937_64 rng(33);
  for (int it = 0; it < 40; ++it) {
    CAPTURE(it);
    const auto g = rand_problem::random_repeated(rng, 1 + int(rng() % 2), 4 + int(rng() % 12), 2 + int(rng() % 3),
                                                 1 + int(rng() % 2), 5, it % 2 == 0);
    const auto r = to::solve_repeated_exact(g.p, g.rb);
    check_recost(g.p, r);
    CHECK(costs(r) == costs(to::solve(g.p)));
  }
}

TEST_CASE("the per-layer solves report their eliminations, and a progress callback can end them") {
  std::mt19937_64 rng(71);
  const auto g = rand_problem::random_repeated(rng, 2, 6, 3, 2, 5, true);
  REQUIRE(to::check_repeated(g.p, g.rb) == "");
  std::size_t calls = 0, bad = 0;
  auto count = [&](const to::search_progress& sp) {
    ++calls;
    bad += sp.eliminated == 0 || sp.eliminated > sp.total;
  };
  // the exact fold: A, Z, K's and T's tables
  const auto exact = to::solve_repeated_exact(g.p, g.rb, {}, {}, count);
  CHECK(calls > 0);
  CHECK(bad == 0);
  CHECK(costs(exact) == costs(to::solve_repeated_exact(g.p, g.rb)));
  // fast mode: through repeated_bounds::progress
  const std::size_t before = calls;
  to::repeated_bounds rb;
  rb.progress = count;
  const auto fast = to::solve_repeated(g.p, g.rb, {}, rb);
  CHECK(calls > before);
  CHECK(bad == 0);
  CHECK(costs(fast) == costs(to::solve_repeated(g.p, g.rb)));
  // an exception thrown by the callback ends the search and leaves it
  struct stop {};
  to::repeated_bounds stopping;
  stopping.progress = [](const to::search_progress&) { throw stop{}; };
  CHECK_THROWS_AS(to::solve_repeated(g.p, g.rb, {}, stopping), stop);
  CHECK_THROWS_AS(to::solve_repeated_exact(g.p, g.rb, {}, {}, [](const to::search_progress&) { throw stop{}; }), stop);
}

TEST_CASE("K from the fold's own A and Z tables is the K solved alone") {
  // solve_repeated_exact hands its exact A and Z tables to fast mode's search for K
  // (tables_share 0: the inner solves are exact, so the tables are the same)
  std::mt19937_64 rng(35);
  std::size_t reused = 0;
  for (int it = 0; it < 30; ++it) {
    CAPTURE(it);
    const auto g = rand_problem::random_repeated(rng, 1 + int(rng() % 2), 4 + int(rng() % 8), 2 + int(rng() % 3),
                                                 1 + int(rng() % 2), 5, it % 2 == 0);
    const auto s = to::detail::split_repeated(g.p, g.rb);
    REQUIRE(s.why_not.empty());
    const auto parts = to::detail::repeated_parts(g.p, g.rb, s, {}, false);
    to::solve_options ko;
    ko.epsilon = to::known_epsilon;
    to::repeated_bounds kb;
    kb.tables_share = 0;
    const auto alone = to::detail::solve_repeated_split(g.p, g.rb, s, ko, kb);
    const auto given = to::detail::solve_repeated_split(g.p, g.rb, s, ko, kb, &parts);
    reused += to::detail::stream_positions(g.p, g.rb, s).empty();
    check_recost(g.p, given);
    CHECK(costs(given) == costs(alone));
    // and within epsilon of the restricted frontier (memory exact, time within 1 + epsilon)
    const auto exact = costs(to::solve_repeated(g.p, g.rb));
    const auto k = costs(given);
    for (auto& e : exact) {
      bool covered = false;
      for (auto& q : k) covered = covered || (q.memory <= e.memory && double(q.time) <= (1 + ko.epsilon) * double(e.time));
      CHECK(covered);
    }
  }
  CHECK(reused > 0);
}

TEST_CASE("the exact chain fold refuses blocks it cannot split, and leaves epsilon to the general search") {
  std::mt19937_64 rng(2);
  auto g = rand_problem::random_repeated(rng, 1, 4, 2, 1, 3, false);
  to::repeated_block two{{g.rb.instances[0], g.rb.instances[1]}, {}};
  CHECK_THROWS_WITH_AS(to::solve_repeated_exact(g.p, two), doctest::Contains("fewer than 3 instances"),
                       to::invalid_argument);
  to::solve_options o;
  o.epsilon = 0.1;
  const auto r = to::solve_repeated_exact(g.p, g.rb, o);
  CHECK(!r.exact);
  check_recost(g.p, r);
}

TEST_CASE("the exact chain fold stops past max_bytes with the sizes it reached") {
  std::mt19937_64 rng(4);
  const auto g = rand_problem::random_repeated(rng, 1, 12, 3, 1, 5, false);
  to::solve_options o;
  o.max_bytes = 64;
  CHECK_THROWS_WITH_AS(to::solve_repeated_exact(g.p, g.rb, o), doctest::Contains("past its limit of"),
                       to::runtime_error);
}

TEST_CASE("exact mode on zoo models: the fold equals the general search") {
  // gpt3-125m on 2 devices: the general search takes about a second per micro-batch count
  const auto& m = to::models::find("gpt3-125m");
  const auto cl = to::cluster::nodes(1).gpus_per_node(2).gpu(to::gpus::find(m.gpu));
  for (to::index_t k : {8, 64}) {
    CAPTURE(k);
    to::build_options bo;
    bo.micro_batches = k;
    const auto b = to::build_problem(m.lower(), cl, bo);
    const auto block = to::largest_repeat(b.graph);
    REQUIRE(to::check_repeated(b.prob, block) == "");
    to::solve_options so;
    so.memory_limit = to::to_byte_count(cl.gpu_spec.capacity);
    const auto r = to::solve_repeated_exact(b.prob, block, so);
    CHECK(r.exact);
    check_recost(b.prob, r);
    CHECK(costs(r) == costs(to::solve(b.prob, so)));
  }
}

TEST_CASE("exact mode on zoo models: on bert-large the fold beats fast mode where layouts change") {
  // measured: the general search takes 467 s on this problem and returns the fold's 9,627
  // points; fast mode's 9,716 points keep one layout through the stack
  const auto& m = to::models::find("bert-large");
  const auto cl = to::cluster::nodes(1).gpus_per_node(m.gpus).gpu(to::gpus::find(m.gpu));
  to::build_options bo;
  bo.micro_batches = 32;
  const auto b = to::build_problem(m.lower(), cl, bo);
  const auto block = to::largest_repeat(b.graph);
  to::solve_options so;
  so.memory_limit = to::to_byte_count(cl.gpu_spec.capacity);
  const auto exact = to::solve_repeated_exact(b.prob, block, so);
  const auto fast = to::solve_repeated(b.prob, block, so);
  check_recost(b.prob, exact);
  REQUIRE(!exact.points.empty());
  // every fast point is a real strategy: on or behind the exact frontier; some strictly behind
  std::size_t behind = 0;
  for (auto& q : fast.points) {
    const to::frontier_point* best = nullptr;
    for (auto& e : exact.points)
      if (e.memory <= q.memory) best = &e;
    REQUIRE(best != nullptr);
    CHECK(best->time <= q.time);
    behind += best->time < q.time;
  }
  CHECK(behind > 0);
}
}  // namespace search_repeated_exact_test_file
