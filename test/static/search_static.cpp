// Compile-time checks of the search engine: a small problem's frontier computed in a constant expression.
#include <tensoropt/search/solve.hpp>

namespace to = tensoropt;

namespace {

// A 3-node chain a -> b -> c with 3, 3 and 4 configs and memory_offset 10.
constexpr to::problem chain3() {
  to::problem p;
  p.memory_offset = 10;
  p.nodes = {{"a", {{"a0", 4, 1}, {"a1", 2, 3}, {"a2", 1, 6}}},
             {"b", {{"b0", 3, 2}, {"b1", 1, 4}, {"b2", 5, 1}}},
             {"c", {{"c0", 2, 2}, {"c1", 1, 5}, {"c2", 3, 1}, {"c3", 2, 3}}}};
  p.edges = {{0, 1, {0, 2, 1, 2, 0, 3, 1, 1, 0}, {0, 0, 0, 0, 1, 0, 0, 0, 0}},
             {1, 2, {0, 1, 0, 2, 1, 0, 2, 1, 0, 2, 0, 1}, std::vector<to::cost_t>(12, 0)}};
  return p;
}

struct expected {
  to::cost_t time, memory;
  int a, b, c;
};
// By hand (time = node times + edge times; memory = 10 + node memories + edge memories):
//   a0 b2 c2: 4+5+3 + 1+0 = 13,  10+1+1+1       = 13  (every node at its least memory)
//   a0 b0 c2: 4+3+3 + 0+0 = 10,  10+1+2+1       = 14
//   a0 b0 c0: 4+3+2 + 0+0 =  9,  10+1+2+2       = 15
//   a2 b0 c2: 1+3+3 + 1+0 =  8,  10+6+2+1       = 19  (a tie: a2 b2 c0 costs the same)
//   a1 b1 c0: 2+1+2 + 0+1 =  6,  10+3+4+2 + 1   = 20
//   a1 b1 c1: 2+1+1 + 0+0 =  4,  10+3+4+5 + 1   = 23  (the least time: 3 node minimum + 1 edge)
constexpr expected by_hand[] = {{13, 13, 0, 2, 2}, {10, 14, 0, 0, 2}, {9, 15, 0, 0, 0},
                                {8, 19, 2, 0, 2},  {6, 20, 1, 1, 0},  {4, 23, 1, 1, 1}};

constexpr bool frontier_matches_hand() {
  const auto p = chain3();
  const auto r = to::solve(p);
  if (r.points.size() != std::size(by_hand) || !r.exact) return false;
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& q = r.points[i];
    const auto& e = by_hand[i];
    if (q.time != e.time || q.memory != e.memory) return false;
    // the returned strategy, and the one found by hand (ties may differ), cost exactly q
    const auto c = to::cost_of(p, q.choice);
    if (c.time != q.time || c.memory != q.memory) return false;
    const auto h = to::cost_of(p, {e.a, e.b, e.c});
    if (h.time != q.time || h.memory != q.memory) return false;
  }
  return true;
}
static_assert(frontier_matches_hand());

// The same engine with epsilon: points re-cost exactly and cover the exact frontier.
constexpr bool epsilon_frontier_covers() {
  const auto p = chain3();
  const auto r = to::solve(p, {.epsilon = 0.5});
  if (r.exact || r.points.empty()) return false;
  for (const auto& e : by_hand) {
    bool covered = false;
    for (const auto& q : r.points)
      covered = covered || (q.memory <= e.memory && double(q.time) <= 1.5 * double(e.time));
    if (!covered) return false;
  }
  for (const auto& q : r.points) {
    const auto c = to::cost_of(p, q.choice);
    if (c.time != q.time || c.memory != q.memory) return false;
  }
  return true;
}
static_assert(epsilon_frontier_covers());

// A diamond with a crossing edge (not series-parallel once the crossing edge is added).
constexpr bool diamond_least_time() {
  to::problem p;
  for (int i = 0; i < 4; ++i) p.nodes.push_back({"n", {{"x", 1, 2}, {"y", 2, 1}}});
  const std::vector<to::cost_t> swap_cost{0, 5, 5, 0}, none(4, 0);
  p.edges = {{0, 1, swap_cost, none}, {0, 2, swap_cost, none}, {1, 3, swap_cost, none},
             {2, 3, swap_cost, none}, {1, 2, swap_cost, none}};
  const auto r = to::solve(p);
  // all x: time 4, memory 8; all y: time 8, memory 4; mixing costs at least 5 more
  return r.points.size() == 2 && r.points[0].time == 8 && r.points[0].memory == 4 &&
         r.points[1].time == 4 && r.points[1].memory == 8 &&
         r.points[1].choice == std::vector<int>{0, 0, 0, 0};
}
static_assert(diamond_least_time());

}  // namespace
