// The frontier of a pipeline problem file: what an outside tool derives from
// "tensoropt-pipeline-problem/1" alone (search/pipeline_problem.hpp), and what
// `tensoropt-plan --solve` does with such a file.
//
// For each partition, each stage's problem with its f micro-batches in flight
// (with_in_flight) is solved by `solve`; stages run side by side, so their frontiers
// combine by the exact max-max merge (search/max_max_merge.hpp), and the partition's sends
// are added to every time. The frontier is the union over partitions, pruned to a
// staircase; of equal points the one of the lower partition index is kept. A problem and
// in-flight count shared by several stages is solved once.
//
// Exactness: each stage frontier is exact (or within 1 + epsilon in time, memory exact,
// with solve_options::epsilon), max and max keep that bound, adding the sends keeps it.
// The planner writes the partitions that hold a point of its frontier, so re-solving its
// file gives back its frontier's (time, memory) pairs when the planner's stage searches
// were exact; the test holds them equal.
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>
#include "frontier_entry.hpp"
#include "max_max_merge.hpp"
#include "pipeline_problem.hpp"
#include "solve.hpp"

namespace tensoropt {

/// The frontier of `pp` over its partitions, every point with its stages (see the file
/// comment). Throws invalid_argument for a malformed problem.
inline std::vector<frontier_entry> solve_pipeline_problem(const pipeline_problem& pp, const solve_options& o = {}) {
  if (const std::string e = pipeline_problem_error(pp); !e.empty()) throw invalid_argument("pipeline problem: " + e);
  std::map<std::pair<std::size_t, index_t>, frontier_result> solved;  // (problem, f) -> frontier
  auto stage_frontier = [&](const pipeline_problem::stage_ref& r) -> const frontier_result& {
    auto it = solved.find({r.problem, r.in_flight});
    if (it == solved.end())
      it = solved.emplace(std::make_pair(r.problem, r.in_flight), solve(with_in_flight(pp.problems[r.problem], r.in_flight), o))
               .first;
    return it->second;
  };
  struct candidate {
    cost_t time, memory;
    std::size_t partition;
    std::vector<std::int32_t> idx;  ///< point of each stage's frontier
  };
  std::vector<candidate> all;
  for (std::size_t i = 0; i < pp.partitions.size(); ++i) {
    const auto& pa = pp.partitions[i];
    std::vector<candidate> acc;
    const auto& first = stage_frontier(pa.stages[0]).points;
    for (std::size_t q = 0; q < first.size(); ++q) acc.push_back({first[q].time, first[q].memory, i, {std::int32_t(q)}});
    for (std::size_t s = 1; s < pa.stages.size(); ++s) {
      std::vector<candidate> next;
      for (const auto& m : max_max_merge(acc, stage_frontier(pa.stages[s]).points)) {
        candidate c{m.time, m.memory, i, acc[std::size_t(m.a)].idx};
        c.idx.push_back(m.b);
        next.push_back(std::move(c));
      }
      acc.swap(next);
    }
    cost_t sends = 0;
    for (cost_t x : pa.sends) sends += x;
    for (auto& c : acc) {
      c.time += sends;
      all.push_back(std::move(c));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const candidate& x, const candidate& y) {
    if (x.memory != y.memory) return x.memory < y.memory;
    if (x.time != y.time) return x.time < y.time;
    return x.partition < y.partition;
  });
  std::vector<frontier_entry> out;
  for (const auto& c : all) {
    if (!out.empty() && c.time >= out.back().point.time) continue;
    const auto& pa = pp.partitions[c.partition];
    stage_choices st;
    st.degree = pa.degree;
    st.partition = c.partition;
    st.stage_begin = pa.stage_begin;
    for (std::size_t s = 0; s < pa.stages.size(); ++s) {
      const auto& q = stage_frontier(pa.stages[s]).points[std::size_t(c.idx[s])];
      const auto& prob = pp.problems[pa.stages[s].problem].prob;
      st.choice.push_back(q.choice);
      std::vector<std::string> labels;
      for (std::size_t n = 0; n < q.choice.size(); ++n) labels.push_back(prob.nodes[n].configs[std::size_t(q.choice[n])].label);
      st.labels.push_back(std::move(labels));
    }
    frontier_point fp;
    fp.time = c.time;
    fp.memory = c.memory;
    fp.micro_batches = pa.micro_batches;
    out.push_back({std::move(fp), std::move(st)});
  }
  return out;
}

}  // namespace tensoropt
