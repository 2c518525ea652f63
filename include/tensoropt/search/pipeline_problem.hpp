// A pipeline problem: the stage problems of pipeline plans and their partitions, from which
// every pipeline point's cost is re-computed exactly; the check of a frontier against it.
//
// What a pipeline point costs (cost/pipeline_cost.hpp, 1F1B over k micro-batches, p stages):
//   time   = max over stages s of time_s   + sum over boundaries b of sends_b
//   memory = max over stages s of memory_s
// where (time_s, memory_s) is the cost of stage s's choice in its stage problem with f_s
// micro-batches in flight. A stage problem is an ordinary problem (search/problem.hpp; the
// builder already counts every per-micro-batch time k + p - 1 times, each gradient
// accumulation k - 1 times) whose configs also
// carry `activations`, the bytes one more micro-batch in flight adds; with f in flight
//   config memory = memory + (f - 1) x activations,   edge memory = f x memory,
// and memory_offset (the reserve) counts once. f = 1 is the problem as it stands.
//
// One stage problem serves every stage of that shape in a partition (the equal middle
// stages of a balanced pipeline differ only in f), so a pipeline of 64 stages over
// identical layers needs three. A partition names, per stage, its problem and f; the sends
// of its p - 1 boundaries (both directions, picoseconds); its degree, micro-batch count and
// first op of each stage (ops of the model).
//
// check_frontier(pipeline_problem, entries) re-computes every pipeline point of a frontier
// file from the problem and throws format_error naming the first point that differs; the
// file form is search/pipeline_problem_json.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>
#include "../core/error.hpp"
#include "../cost/pipeline_cost.hpp"
#include "frontier_entry.hpp"
#include "json_read.hpp"
#include "problem.hpp"
#include "problem_json.hpp"
#include "query.hpp"

namespace tensoropt {

struct pipeline_problem {
  /// A stage's problem and the activations of each config (activations[node][config]).
  struct stage_problem {
    problem prob;
    config_activations activations;
    bool operator==(const stage_problem&) const = default;
  };
  /// One stage of a partition: its problem and micro-batches in flight.
  struct stage_ref {
    std::size_t problem = 0;
    index_t in_flight = 1;
    bool operator==(const stage_ref&) const = default;
  };
  /// A pipeline's cut: p stages over k micro-batches.
  struct partition {
    int degree = 1, micro_batches = 1;
    std::vector<std::size_t> stage_begin;  ///< first op of each stage (size p)
    std::vector<stage_ref> stages;         ///< size p
    std::vector<cost_t> sends;             ///< per boundary, picoseconds (size p - 1)
    bool operator==(const partition&) const = default;
  };
  std::vector<stage_problem> problems;
  std::vector<partition> partitions;
  bool operator==(const pipeline_problem&) const = default;
};

/// The stage problem with f micro-batches in flight, as an ordinary problem (see the header).
inline problem with_in_flight(const pipeline_problem::stage_problem& sp, index_t f) {
  detail::require(f >= 1, "with_in_flight: a stage holds at least one micro-batch");
  problem p = sp.prob;
  for (std::size_t n = 0; n < p.nodes.size(); ++n)
    for (std::size_t c = 0; c < p.nodes[n].configs.size(); ++c)
      p.nodes[n].configs[c].memory += cost_t(f - 1) * sp.activations[n][c];
  for (auto& e : p.edges)
    for (auto& m : e.memory) m *= cost_t(f);
  return p;
}

/// The cost of `choice` in stage problem `sp` with f in flight: cost_of(with_in_flight(sp, f),
/// choice) without the copy.
inline strategy_cost stage_cost_of(const pipeline_problem::stage_problem& sp, index_t f, const std::vector<int>& choice) {
  const problem& p = sp.prob;
  detail::require(choice.size() == p.nodes.size(), "stage_cost_of: one config index per node is needed");
  strategy_cost c{0, p.memory_offset};
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    detail::require(choice[i] >= 0 && std::size_t(choice[i]) < p.nodes[i].configs.size(),
                    "stage_cost_of: config index out of range");
    c.time += p.nodes[i].configs[std::size_t(choice[i])].time;
    c.memory += p.nodes[i].configs[std::size_t(choice[i])].memory + cost_t(f - 1) * sp.activations[i][std::size_t(choice[i])];
  }
  for (auto& e : p.edges) {
    const std::size_t k = std::size_t(choice[std::size_t(e.from)]) * p.nodes[std::size_t(e.to)].configs.size() +
                          std::size_t(choice[std::size_t(e.to)]);
    c.time += e.time[k];
    c.memory += cost_t(f) * e.memory[k];
  }
  return c;
}

/// Why `pp` is malformed (indices, sizes, stage order), or "".
inline std::string pipeline_problem_error(const pipeline_problem& pp) {
  for (std::size_t q = 0; q < pp.problems.size(); ++q) {
    const auto& sp = pp.problems[q];
    bool ok = sp.activations.size() == sp.prob.nodes.size();
    for (std::size_t n = 0; ok && n < sp.prob.nodes.size(); ++n) ok = sp.activations[n].size() == sp.prob.nodes[n].configs.size();
    if (!ok) return "problems[" + std::to_string(q) + "]: one activations figure per config is needed";
  }
  // the largest memory any stage can reach with f in flight stays within max_problem_cost
  // (the sums of stage_cost_of never overflow), as validate holds a problem at f = 1
  auto largest_memory = [&](std::size_t q, index_t f) {
    const auto& sp = pp.problems[q];
    const long double g = (long double)(f);
    long double m = (long double)(sp.prob.memory_offset);
    for (std::size_t n = 0; n < sp.prob.nodes.size(); ++n) {
      long double top = 0;
      for (std::size_t c = 0; c < sp.prob.nodes[n].configs.size(); ++c)
        top = std::max(top, (long double)(sp.prob.nodes[n].configs[c].memory) + (g - 1) * (long double)(sp.activations[n][c]));
      m += top;
    }
    for (const auto& e : sp.prob.edges) {
      long double top = 0;
      for (cost_t x : e.memory) top = std::max(top, (long double)(x));
      m += g * top;
    }
    return m;
  };
  for (std::size_t i = 0; i < pp.partitions.size(); ++i) {
    const auto& pa = pp.partitions[i];
    const std::string at = "partitions[" + std::to_string(i) + "]";
    const std::size_t p = std::size_t(pa.degree);
    if (pa.degree < 1 || pa.micro_batches < pa.degree)
      return at + ": 1F1B needs 1 <= degree <= micro_batches (degree " + std::to_string(pa.degree) + ", micro_batches " +
             std::to_string(pa.micro_batches) + ")";
    if (pa.stage_begin.size() != p || pa.stages.size() != p || pa.sends.size() + 1 != p)
      return at + ": a partition of degree " + std::to_string(p) + " needs " + std::to_string(p) + " stage_begin, " +
             std::to_string(p) + " stages and " + std::to_string(p - 1) + " sends";
    for (std::size_t s = 0; s < p; ++s) {
      if (s == 0 ? pa.stage_begin[0] != 0 : pa.stage_begin[s] <= pa.stage_begin[s - 1])
        return at + ".stage_begin: the first stage starts at op 0 and the starts increase";
      if (pa.stages[s].problem >= pp.problems.size())
        return at + ".stages[" + std::to_string(s) + "].problem: " + std::to_string(pa.stages[s].problem) +
               " does not exist (there are " + std::to_string(pp.problems.size()) + " problems)";
      if (pa.stages[s].in_flight < 1 || pa.stages[s].in_flight > pa.micro_batches)
        return at + ".stages[" + std::to_string(s) + "].in_flight: expected 1 .. micro_batches (" +
               std::to_string(pa.micro_batches) + "), got " + std::to_string(pa.stages[s].in_flight);
      if (largest_memory(pa.stages[s].problem, pa.stages[s].in_flight) > (long double)(max_problem_cost))
        return at + ".stages[" + std::to_string(s) + "]: with " + std::to_string(pa.stages[s].in_flight) +
               " micro-batches in flight, problem " + std::to_string(pa.stages[s].problem) +
               "'s largest memory exceeds 2^62 bytes";
    }
    long double sends = 0;
    for (cost_t x : pa.sends) sends += (long double)(x);
    if (sends > (long double)(max_problem_cost / 2)) return at + ".sends: the sum exceeds 2^61 ps";
  }
  return "";
}

/// The cost of the pipeline point `st` in `pp`: per stage stage_cost_of, combined by
/// combine_stages with the partition's sends. Throws format_error when the point does not
/// fit the problem (its partition, degree, stages, choice sizes, indices or labels), naming
/// the field under `at`.
inline pipeline_cost pipeline_cost_of(const pipeline_problem& pp, const stage_choices& st, const std::string& at = "point") {
  const std::string where = at + ".pipeline";
  if (st.partition >= pp.partitions.size())
    throw format_error(where + ".partition: " + std::to_string(st.partition) + " does not exist (the problem has " +
                       std::to_string(pp.partitions.size()) + " partitions)");
  const auto& pa = pp.partitions[st.partition];
  if (st.degree != pa.degree || st.stage_begin != pa.stage_begin || st.choice.size() != pa.stages.size())
    throw format_error(where + ": degree " + std::to_string(st.degree) + " with " + std::to_string(st.choice.size()) +
                       " stages is not partition " + std::to_string(st.partition) + "'s (degree " +
                       std::to_string(pa.degree) + ", the same stage starts)");
  std::vector<strategy_cost> stages;
  for (std::size_t s = 0; s < pa.stages.size(); ++s) {
    const auto& sp = pp.problems[pa.stages[s].problem];
    const std::string sat = where + ".stages[" + std::to_string(s) + "]";
    const auto& ch = st.choice[s];
    if (ch.size() != sp.prob.nodes.size())
      throw format_error(sat + ".choice: expected " + std::to_string(sp.prob.nodes.size()) + " config indices (one per node of "
                         "problem " + std::to_string(pa.stages[s].problem) + "), got " + std::to_string(ch.size()));
    for (std::size_t n = 0; n < ch.size(); ++n) {
      const auto& node = sp.prob.nodes[n];
      if (ch[n] < 0 || std::size_t(ch[n]) >= node.configs.size())
        throw format_error(sat + ".choice[" + std::to_string(n) + "]: config " + std::to_string(ch[n]) +
                           " does not exist (node '" + detail::cut_short(node.name) + "' has " +
                           std::to_string(node.configs.size()) + ")");
      if (s < st.labels.size() && n < st.labels[s].size() && st.labels[s][n] != node.configs[std::size_t(ch[n])].label)
        throw format_error(sat + ".labels[" + std::to_string(n) + "]: '" + detail::cut_short(st.labels[s][n]) +
                           "' is not the label of config " + std::to_string(ch[n]) + " ('" +
                           detail::cut_short(node.configs[std::size_t(ch[n])].label) + "')");
    }
    stages.push_back(stage_cost_of(sp, pa.stages[s].in_flight, ch));
  }
  cost_t sends = 0;
  for (cost_t x : pa.sends) sends += x;
  return combine_stages(std::move(stages), sends);
}

/// Checks every point of `pts` against `pp`: pipeline points re-cost (pipeline_cost_of) to
/// exactly their time and memory with their partition's micro-batch count. Throws
/// format_error naming the first point that differs, or a point of one problem (check
/// those against their problem with check_frontier(problem, ...)).
inline void check_frontier(const pipeline_problem& pp, const std::vector<frontier_entry>& pts) {
  if (const std::string e = pipeline_problem_error(pp); !e.empty()) throw format_error("pipeline problem: " + e);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string at = "points[" + std::to_string(i) + "]";
    const auto& e = pts[i];
    if (!e.stages)
      throw format_error(at + ": a point of one problem (it has \"choice\", not \"pipeline\"); check it against a "
                         "tensoropt-problem/1 file");
    const pipeline_cost c = pipeline_cost_of(pp, *e.stages, at);
    const auto& pa = pp.partitions[e.stages->partition];
    if (e.point.micro_batches != pa.micro_batches)
      throw format_error(at + ".micro_batches: " + std::to_string(e.point.micro_batches) + ", but partition " +
                         std::to_string(e.stages->partition) + " has " + std::to_string(pa.micro_batches));
    if (c.time != e.point.time || c.memory != e.point.memory)
      throw format_error(at + ": the stages cost " + detail::fmt_seconds(c.time) + ", " + std::to_string(c.memory) +
                         " bytes in the pipeline problem (bottleneck stage " + std::to_string(c.bottleneck) +
                         ", fullest stage " + std::to_string(c.peak) + "), but the point says " +
                         detail::fmt_seconds(e.point.time) + ", " + std::to_string(e.point.memory) + " bytes");
  }
}

}  // namespace tensoropt
