// A problem reweighed into a scalar one: every config and edge entry of `p` costs
// weigh(time, memory) in memory and nothing in time, so every frontier of its search is
// one point (the eliminator takes such rows in one pass per cell). The scalar searches of
// the pipeline bounds (plan/pipeline_bounds.hpp) and of the skip test before a repeated
// block's per-layer solves (detail/repeated_tables.hpp) both build their problems here.
// The config labels are not copied (names are); the entries are checked as they are
// written (>= 0, and the sum of each node's and edge's largest entry within
// max_problem_cost, the bound validate holds), and only a problem that fails that is
// passed to validate, which throws naming the entry.
#pragma once
#include <algorithm>
#include <cstddef>
#include "../problem.hpp"
#include "../validate.hpp"

namespace tensoropt::detail {

/// An entry of a scalar search along the slope w (memory units per time unit):
/// min(cap, m + floor of w t taken from below), never above m + w t, for m, t >= 0, a
/// finite w >= 0 and 0 <= cap <= max_problem_cost. The product is taken in double and lowered by a factor
/// 1 - 2^-50 (more than the rounding of w, t and their product to double together), then
/// truncated, which is SSE's conversion: no switch of the x87 rounding mode per entry, as
/// floor on long double takes (four control-word loads an entry; the same machine code
/// took 1.2 % of one build's run and 16-19 % of another's, perf on gpt3-39b and
/// megatron-1t).
/// Lower than m + floor(w t) by at most 1 + 2^-49 w t: a line from these entries is a
/// (slightly weaker) lower bound of the same strategies.
constexpr cost_t weighed_below(cost_t m, cost_t t, double w, cost_t cap) {
  if (m >= cap) return cap;
  const double x = w * double(t) * (1 - 0x1p-50);
  if (!(x < double(cap))) return cap;  // m + w t >= x >= cap
  return std::min(cap, m + cost_t(x));  // m < cap and cost_t(x) <= cap: no overflow below 2^63
}

template <class Weigh>
problem scalar_problem(const problem& p, cost_t offset, Weigh weigh) {
  problem q;
  q.memory_offset = offset;
  cost_t bound = offset;
  bool negative = offset < 0;
  auto add = [&bound](cost_t v) { bound = v > max_problem_cost - bound ? max_problem_cost + 1 : bound + v; };
  q.nodes.resize(p.nodes.size());
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    q.nodes[i].name = p.nodes[i].name;
    const auto& from = p.nodes[i].configs;
    auto& cs = q.nodes[i].configs;
    cs.resize(from.size());
    cost_t most = 0;
    for (std::size_t c = 0; c < cs.size(); ++c) {
      const cost_t v = weigh(from[c].time, from[c].memory);
      negative = negative || v < 0;
      most = std::max(most, v);
      cs[c].memory = v;
    }
    add(most);
  }
  q.edges.resize(p.edges.size());
  for (std::size_t i = 0; i < p.edges.size(); ++i) {
    const auto& e = p.edges[i];
    auto& f = q.edges[i];
    f.from = e.from;
    f.to = e.to;
    f.time.assign(e.time.size(), 0);
    f.memory.resize(e.memory.size());
    cost_t most = 0;
    for (std::size_t x = 0; x < e.time.size(); ++x) {
      const cost_t v = weigh(e.time[x], e.memory[x]);
      negative = negative || v < 0;
      most = std::max(most, v);
      f.memory[x] = v;
    }
    add(most);
  }
  if (negative || bound > max_problem_cost) validate(q);  // throws, naming the entry
  return q;
}

}  // namespace tensoropt::detail
