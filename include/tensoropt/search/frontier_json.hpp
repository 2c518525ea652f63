// The frontier file "tensoropt-frontier/1": labelled points, union over micro-batch counts, writer and reader.
//
// Format (units: seconds and bytes), points sorted by the memory they are held against
// (the peak where given, else memory) ascending with time strictly descending, choice[i]
// indexing node i's configs in the problem:
//   { "format": "tensoropt-frontier/1",
//     "points": [ {"time": <s>, "memory": <bytes>, "micro_batches": <k>,
//                  "choice": [<config index per node>], "labels": ["<config label per node>"],
//                  "peak": <bytes>} ] }
// "peak" (optional, added within version 1: readers that ignore unknown keys are
// unaffected) is the plan's predicted peak on the runtime (plan/memory_peak.hpp),
// written where the planner computed it; "memory" stays the problem's additive
// memory, so a point re-costed from the problem still compares equal.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>
#include <nlohmann/json.hpp>
#include "problem.hpp"
#include "problem_json.hpp"
#include "query.hpp"
#include "solve.hpp"

namespace tensoropt {

/// The points of `r`, a frontier of problem `p` built for `micro_batches`
/// micro-batches, with that count and each node's config label filled in.
inline std::vector<frontier_point> label_points(const problem& p, const frontier_result& r,
                                                int micro_batches = 1) {
  detail::require(micro_batches >= 1, "label_points: micro_batches must be >= 1");
  std::vector<frontier_point> out;
  for (auto& q : r.points) {
    frontier_point e{q.time, q.memory, q.choice, micro_batches, {}};
    detail::require(q.choice.size() == p.nodes.size(),
                    "label_points: the frontier is not one of this problem (node counts differ)");
    for (std::size_t i = 0; i < q.choice.size(); ++i)
      e.labels.push_back(p.nodes[i].configs.at(std::size_t(q.choice[i])).label);
    out.push_back(std::move(e));
  }
  return out;
}

/// The union of frontiers (e.g. one per micro-batch count), pruned to a staircase; of
/// equal points the one with fewer micro-batches is kept.
inline std::vector<frontier_point> merge_frontiers(const std::vector<std::vector<frontier_point>>& parts) {
  std::vector<const frontier_point*> all;
  for (auto& part : parts)
    for (auto& e : part) all.push_back(&e);
  std::sort(all.begin(), all.end(), [](auto* a, auto* b) {
    if (a->memory != b->memory) return a->memory < b->memory;
    if (a->time != b->time) return a->time < b->time;
    return a->micro_batches < b->micro_batches;
  });
  std::vector<frontier_point> out;
  for (auto* e : all)
    if (out.empty() || e->time < out.back().time) out.push_back(*e);
  return out;
}

/// The frontier as a JSON value in the "tensoropt-frontier/1" format.
inline nlohmann::ordered_json frontier_to_json(const std::vector<frontier_point>& pts) {
  nlohmann::ordered_json j;
  j["format"] = "tensoropt-frontier/1";
  j["points"] = nlohmann::ordered_json::array();
  for (auto& e : pts) {
    j["points"].push_back({{"time", detail::seconds_of(e.time)},
                           {"memory", e.memory},
                           {"micro_batches", e.micro_batches},
                           {"choice", e.choice},
                           {"labels", e.labels}});
    if (e.peak > 0) j["points"].back()["peak"] = e.peak;
  }
  return j;
}

/// The frontier file's text, one point per line.
inline std::string write_frontier_json(const std::vector<frontier_point>& pts) {
  const auto j = frontier_to_json(pts);
  std::string s = "{\"format\": \"tensoropt-frontier/1\",\n \"points\": [";
  for (std::size_t i = 0; i < pts.size(); ++i) s += (i ? ",\n  " : "\n  ") + j["points"][i].dump();
  s += "]}\n";
  return s;
}

/// Reads a frontier from a JSON value, checking every field and the staircase order;
/// throws format_error naming the field and position.
inline std::vector<frontier_point> frontier_from_json(const nlohmann::json& j) {
  using detail::json_field, detail::json_path;
  if (!j.is_object()) throw format_error(std::string("frontier: expected a JSON object, got ") + j.type_name());
  const auto& fmt = json_field(j, "format", "");
  if (!fmt.is_string() || fmt.get<std::string>() != "tensoropt-frontier/1")
    throw format_error("format: expected \"tensoropt-frontier/1\", got " + detail::json_echo(fmt));
  const auto& pts = detail::json_array(json_field(j, "points", ""), "points");
  if (pts.empty()) throw format_error("points: the frontier has no points");
  std::vector<frontier_point> out;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string at = "points[" + std::to_string(i) + "]";
    frontier_point e;
    e.time = detail::json_seconds(json_field(pts[i], "time", at), json_path(at, "time"));
    e.memory = detail::json_bytes(json_field(pts[i], "memory", at), json_path(at, "memory"));
    const auto& k = json_field(pts[i], "micro_batches", at);
    if (!k.is_number_integer() || k.get<std::int64_t>() < 1 || k.get<std::int64_t>() > INT32_MAX)
      throw format_error(at + ".micro_batches: expected an integer >= 1, got " + detail::json_echo(k));
    e.micro_batches = int(k.get<std::int64_t>());
    const auto& ch = detail::json_array(json_field(pts[i], "choice", at), json_path(at, "choice"));
    for (std::size_t c = 0; c < ch.size(); ++c) {
      if (!ch[c].is_number_integer() || ch[c].get<std::int64_t>() < 0 || ch[c].get<std::int64_t>() > INT32_MAX)
        throw format_error(at + ".choice[" + std::to_string(c) +
                           "]: expected a config index (integer >= 0), got " + detail::json_echo(ch[c]));
      e.choice.push_back(int(ch[c].get<std::int64_t>()));
    }
    const auto& lb = detail::json_array(json_field(pts[i], "labels", at), json_path(at, "labels"));
    if (lb.size() != ch.size())
      throw format_error(at + ".labels: expected " + std::to_string(ch.size()) +
                         " labels (one per choice), got " + std::to_string(lb.size()));
    for (std::size_t c = 0; c < lb.size(); ++c)
      e.labels.push_back(detail::json_string(lb[c], at + ".labels[" + std::to_string(c) + "]"));
    if (pts[i].is_object() && pts[i].contains("peak")) e.peak = detail::json_bytes(pts[i]["peak"], json_path(at, "peak"));
    if (!out.empty() && !(budget_memory(out.back()) < budget_memory(e) && out.back().time > e.time))
      throw format_error(at + ": points must be sorted by memory (the peak where given) ascending with time "
                         "strictly descending; this point (" + std::to_string(budget_memory(e)) + " bytes, " +
                         detail::fmt_seconds(e.time) + ") does not follow the previous one (" +
                         std::to_string(budget_memory(out.back())) + " bytes, " +
                         detail::fmt_seconds(out.back().time) + ")");
    out.push_back(std::move(e));
  }
  return out;
}

/// Reads a frontier file's text; see frontier_from_json.
inline std::vector<frontier_point> read_frontier_json(std::string_view text) {
  return frontier_from_json(detail::parse_json_text(text, "frontier"));
}

/// Checks the entries with `micro_batches == k` against problem `p` (the problem of that
/// count): one choice per node, indices in range, labels equal, and each point's cost
/// re-computed from the problem equal to its time and memory. Throws format_error.
inline void check_frontier(const problem& p, const std::vector<frontier_point>& pts, int k = 1) {
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& e = pts[i];
    if (e.micro_batches != k) continue;
    const std::string at = "points[" + std::to_string(i) + "]";
    if (e.choice.size() != p.nodes.size())
      throw format_error(at + ".choice: expected " + std::to_string(p.nodes.size()) +
                         " config indices (one per node), got " + std::to_string(e.choice.size()));
    for (std::size_t n = 0; n < e.choice.size(); ++n) {
      if (std::size_t(e.choice[n]) >= p.nodes[n].configs.size())
        throw format_error(at + ".choice[" + std::to_string(n) + "]: config " +
                           std::to_string(e.choice[n]) + " does not exist (node " + std::to_string(n) +
                           " '" + detail::cut_short(p.nodes[n].name) + "' has " + std::to_string(p.nodes[n].configs.size()) + ")");
      if (e.labels[n] != p.nodes[n].configs[std::size_t(e.choice[n])].label)
        throw format_error(at + ".labels[" + std::to_string(n) + "]: '" + detail::cut_short(e.labels[n]) +
                           "' is not the label of config " + std::to_string(e.choice[n]) + " ('" +
                           detail::cut_short(p.nodes[n].configs[std::size_t(e.choice[n])].label) + "')");
    }
    const auto c = cost_of(p, e.choice);
    if (c.time != e.time || c.memory != e.memory)
      throw format_error(at + ": the strategy costs " + detail::fmt_seconds(c.time) + ", " +
                         std::to_string(c.memory) + " bytes in the problem, but the point says " +
                         detail::fmt_seconds(e.time) + ", " + std::to_string(e.memory) + " bytes");
  }
}

}  // namespace tensoropt
