// The elimination order's dynamic program (search/detail/elimination_order.hpp): its plan is
// the least-score order (checked against every order of small random factor graphs), and
// plan_elimination takes it only where it is no deeper and scores below the margin; cut
// vertices (checked against removing each node) go after the other nodes of their rank, so
// a ladder of residual blocks folds every block before its chain.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>
#include <tensoropt/search/detail/elimination_order.hpp>

namespace {

namespace td = tensoropt::detail;

struct graph {
  std::vector<td::factor> factors;
  std::vector<std::size_t> dom;
  std::vector<bool> kept, late, classed;
};

// n nodes, a unary factor each, a random connected set of edge factors (a spanning tree and
// extra edges); some nodes kept, some with classes (those not kept then go late)
graph random_graph(std::mt19937_64& rng, int n) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  graph g;
  g.dom.resize(std::size_t(n));
  g.kept.assign(std::size_t(n), false);
  g.late.assign(std::size_t(n), false);
  g.classed.assign(std::size_t(n), false);
  for (int v = 0; v < n; ++v) {
    g.dom[std::size_t(v)] = std::size_t(uni(1, 60));
    g.factors.push_back({{v}, {}, {}, {}});
  }
  auto edge = [&](int a, int b) {
    if (a == b) return;
    g.factors.push_back({{std::min(a, b), std::max(a, b)}, {}, {}, {}});
  };
  for (int v = 1; v < n; ++v) edge(uni(0, v - 1), v);
  for (int e = uni(0, n); e > 0; --e) edge(uni(0, n - 1), uni(0, n - 1));
  for (int v = 0; v < n; ++v) {
    g.kept[std::size_t(v)] = uni(0, 5) == 0;
    g.classed[std::size_t(v)] = uni(0, 3) == 0;
    g.late[std::size_t(v)] = !g.kept[std::size_t(v)] && g.classed[std::size_t(v)];
  }
  return g;
}

bool late_last(const graph& g, const std::vector<int>& order) {
  bool seen_late = false;
  for (int v : order) {
    if (g.late[std::size_t(v)]) seen_late = true;
    else if (seen_late) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("the order's dynamic program finds the least score of every order, late nodes last") {
  std::mt19937_64 rng(20261203);
  int checked = 0;
  for (int t = 0; t < 300; ++t) {
    const graph g = random_graph(rng, 2 + int(t % 7));
    td::exact_order ex;
    if (!ex.init(g.factors, g.dom, g.kept, g.late, g.classed)) continue;
    const std::vector<int> plan = ex.plan();
    std::vector<int> free;
    for (std::size_t v = 0; v < g.dom.size(); ++v)
      if (!g.kept[v]) free.push_back(int(v));
    auto sorted = plan;
    std::sort(sorted.begin(), sorted.end());
    REQUIRE(sorted == free);
    CHECK(late_last(g, plan));
    const td::order_score mine = ex.score(plan);
    // every order that keeps the late nodes last, by brute force
    std::vector<int> perm = free;
    td::order_score least{1e300, 1e300};
    do {
      if (!late_last(g, perm)) continue;
      const td::order_score s = ex.score(perm);
      if (s < least) least = s;
    } while (std::next_permutation(perm.begin(), perm.end()));
    CHECK(mine.rank == least.rank);
    CHECK(mine.work == doctest::Approx(least.work).epsilon(1e-12));
    ++checked;
  }
  CHECK(checked > 200);
}

TEST_CASE("plan_elimination takes the dynamic program's order only where it is no deeper and well below the greedy score") {
  std::mt19937_64 rng(7);
  int replaced = 0;
  for (int t = 0; t < 400; ++t) {
    const graph g = random_graph(rng, 3 + int(t % 12));
    const auto planned = td::plan_elimination(g.factors, g.dom, g.kept, g.late, g.classed);
    const auto greedy = td::greedy_elimination(g.factors, g.dom, g.kept, g.late, nullptr);
    auto sorted = planned.order;
    std::sort(sorted.begin(), sorted.end());
    auto expect = greedy.order;
    std::sort(expect.begin(), expect.end());
    REQUIRE(sorted == expect);
    CHECK(late_last(g, planned.order));
    CHECK(planned.prune.size() == planned.order.size());
    if (planned.order == greedy.order) continue;
    ++replaced;
    td::exact_order ex;
    REQUIRE(ex.init(g.factors, g.dom, g.kept, g.late, g.classed));
    const auto mine = ex.score(planned.order), theirs = ex.score(greedy.order);
    CHECK(planned.depth <= greedy.depth);
    CHECK((mine.rank < theirs.rank || mine.work < td::exact_order::margin * theirs.work));
  }
  // the margin is wide, but random graphs with uneven domains leave the greedy order well
  // above the least score often enough to exercise the replacement
  CHECK(replaced > 0);
  MESSAGE("orders replaced: " << replaced << " of 400");
}

namespace {
// connected parts of the graph of g's scopes without node `gone` (-1: none)
int parts_without(const graph& g, int gone) {
  const std::size_t n = g.dom.size();
  std::vector<int> root(n);
  for (std::size_t v = 0; v < n; ++v) root[v] = int(v);
  auto find = [&](int v) {
    while (root[std::size_t(v)] != v) v = root[std::size_t(v)] = root[std::size_t(root[std::size_t(v)])];
    return v;
  };
  for (const auto& f : g.factors)
    for (int a : f.scope)
      for (int b : f.scope)
        if (a != gone && b != gone) root[std::size_t(find(a))] = find(b);
  int parts = 0;
  for (std::size_t v = 0; v < n; ++v) parts += int(v) != gone && find(int(v)) == int(v);
  return parts;
}
}  // namespace

// in a constant expression too: a chain 0 - 1 - 2 hanging off a triangle 2 - 3 - 4
static_assert([] {
  std::vector<td::factor> f;
  for (auto [a, b] : {std::pair{0, 1}, {1, 2}, {2, 3}, {3, 4}, {2, 4}}) f.push_back({{a, b}, {}, {}, {}});
  const auto c = td::cut_vertices(f, 5);
  return !c[0] && c[1] && c[2] && !c[3] && !c[4];
}());

TEST_CASE("cut vertices: exactly the nodes whose removal leaves more connected parts") {
  std::mt19937_64 rng(5);
  int cuts = 0, checked = 0;
  for (int t = 0; t < 400; ++t) {
    graph g = random_graph(rng, 1 + int(t % 20));
    // a second component now and then (the test is per component)
    if (t % 3 == 0) {
      const int n = int(g.dom.size());
      for (int v = 0; v < 4; ++v) {
        g.dom.push_back(2);
        g.factors.push_back({{n + v}, {}, {}, {}});
        if (v) g.factors.push_back({{n + v - 1, n + v}, {}, {}, {}});
      }
    }
    const auto cut = td::cut_vertices(g.factors, g.dom.size());
    REQUIRE(cut.size() == g.dom.size());
    const int whole = parts_without(g, -1);
    for (std::size_t v = 0; v < g.dom.size(); ++v) {
      // removing v loses v's own part when v was alone in it
      bool alone = true;
      for (const auto& f : g.factors)
        if (f.scope.size() > 1 && std::find(f.scope.begin(), f.scope.end(), int(v)) != f.scope.end()) alone = false;
      const bool more = parts_without(g, int(v)) > whole - (alone ? 1 : 0);
      CHECK(cut[v] == more);
      cuts += more;
      ++checked;
    }
  }
  CHECK(cuts > 100);
  MESSAGE("nodes checked: " << checked << ", cut vertices: " << cuts);
}

TEST_CASE("a ladder of residual blocks: every block folds before its chain, whose ends go first") {
  // blocks x_i -> a_i -> b_i -> add_i, with the skip x_i -> add_i and add_i -> x_{i+1}
  // (a ResNet's residual stream); the stream's nodes are the cut vertices; the last is kept
  for (const std::size_t wide : {std::size_t(8), std::size_t(200)}) {
    graph g;
    const int blocks = 9;
    auto node = [&](std::size_t d) {
      g.dom.push_back(d);
      g.factors.push_back({{int(g.dom.size() - 1)}, {}, {}, {}});
      return int(g.dom.size() - 1);
    };
    auto edge = [&](int a, int b) { g.factors.push_back({{std::min(a, b), std::max(a, b)}, {}, {}, {}}); };
    std::vector<int> stream{node(wide)};
    for (int i = 0; i < blocks; ++i) {
      // wider blocks first: the greedy order without the cut-vertex tier waited for them
      const std::size_t d = i < 3 ? wide : 40;
      const int a = node(d), b = node(d), add = node(d), x = node(d);
      edge(stream.back(), a);
      edge(a, b);
      edge(b, add);
      edge(stream.back(), add);
      edge(add, x);
      stream.push_back(add);
      stream.push_back(x);
    }
    g.kept.assign(g.dom.size(), false);
    g.kept.back() = true;
    g.late.assign(g.dom.size(), false);
    g.classed.assign(g.dom.size(), false);
    const auto cut = td::cut_vertices(g.factors, g.dom.size());
    for (std::size_t v = 0; v < g.dom.size(); ++v)
      CHECK(cut[v] == (std::find(stream.begin() + 1, stream.end() - 1, int(v)) != stream.end() - 1));
    const auto plan = td::plan_elimination(g.factors, g.dom, g.kept, g.late, g.classed);
    // every other node before the cut vertices, which then go from the chain's free end
    // (each step a frontier over one node joined with a block's table)
    const std::vector<int> chain(stream.begin() + 1, stream.end() - 1);
    const std::size_t inner = plan.order.size() - chain.size();
    for (std::size_t s = 0; s < plan.order.size(); ++s) {
      const auto v = std::size_t(plan.order[s]);
      CHECK(cut[v] == (s >= inner));
      if (s >= inner) CHECK(plan.order[s] == chain[s - inner]);
    }
  }
}
