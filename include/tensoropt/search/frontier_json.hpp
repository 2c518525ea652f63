// The frontier file "tensoropt-frontier/2" (and "/1"): labelled points, union over
// micro-batch counts, writer and readers.
//
// Format (units: seconds and bytes), points sorted by memory (or by the peak where given:
// the planner's points) ascending with time strictly descending:
//   { "format": "tensoropt-frontier/2",
//     "points": [ {"time": <s>, "memory": <bytes>, "micro_batches": <k>, "peak": <bytes>,
//                  "choice": [<config index per node>], "labels": ["<config label per node>"]}
//               | {"time": <s>, "memory": <bytes>, "micro_batches": <k>, "peak": <bytes>,
//                  "pipeline": {"degree": <p>, "partition": <index>, "stage_begin": [<op>],
//                               "stages": [ {"choice": [...], "labels": [...]} per stage ]}} ] }
// A point of one problem has "choice" and "labels", choice[i] indexing node i's configs in
// the problem file ("tensoropt-problem/1"). A pipeline point has "pipeline" instead
// (search/frontier_entry.hpp): "partition" indexes the partitions of a pipeline problem
// file ("tensoropt-pipeline-problem/1", search/pipeline_problem_json.hpp) and stages[s]
// picks a config per node of stage s's problem there. "peak" is optional: the plan's
// predicted peak on the runtime (plan/memory_peak.hpp), written where the planner computed
// it; "memory" stays the problem's additive memory (for a pipeline point: that of the
// fullest device), so a point re-costed from its problem compares equal.
//
// Versions. "/1" is the layout of one-problem points; "peak" was added to it as an
// optional field, which "/2" states. "/2" adds pipeline points, which a "/1" reader would
// misread as malformed points; the writer writes "/2". The readers take "/1" and "/2" and
// refuse any other format or version with a one-line error naming the ones they read.
// frontier_from_json / read_frontier_json return one-problem points and refuse a file
// holding pipeline points (naming the reader that takes them); frontier_entries_from_json
// / read_frontier_entries return both kinds.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>
#include <nlohmann/json.hpp>
#include "frontier_entry.hpp"
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
    e.labels = detail::config_labels(p, q.choice);
    out.push_back(std::move(e));
  }
  return out;
}

/// The union of frontiers (e.g. one per micro-batch count), pruned to a staircase; of
/// equal points the one with fewer micro-batches is kept. The kept points are moved out of
/// `parts` (pass it with std::move to keep from copying every part).
inline std::vector<frontier_point> merge_frontiers(std::vector<std::vector<frontier_point>> parts) {
  std::vector<frontier_point*> all;
  for (auto& part : parts)
    for (auto& e : part) all.push_back(&e);
  std::sort(all.begin(), all.end(), [](auto* a, auto* b) {
    if (a->memory != b->memory) return a->memory < b->memory;
    if (a->time != b->time) return a->time < b->time;
    return a->micro_batches < b->micro_batches;
  });
  std::vector<frontier_point> out;
  for (auto* e : all)
    if (out.empty() || e->time < out.back().time) out.push_back(std::move(*e));
  return out;
}

inline constexpr const char* frontier_format = "tensoropt-frontier/2";

namespace detail {
inline nlohmann::ordered_json frontier_entry_json(const frontier_entry& e) {
  const auto& q = e.point;
  nlohmann::ordered_json j{{"time", seconds_of(q.time)}, {"memory", q.memory}, {"micro_batches", q.micro_batches}};
  if (q.peak > 0) j["peak"] = q.peak;
  if (!e.stages) {
    j["choice"] = q.choice;
    j["labels"] = q.labels;
    return j;
  }
  const auto& st = *e.stages;
  auto stages = nlohmann::ordered_json::array();
  for (std::size_t s = 0; s < st.choice.size(); ++s)
    stages.push_back({{"choice", st.choice[s]}, {"labels", s < st.labels.size() ? st.labels[s] : std::vector<std::string>{}}});
  j["pipeline"] = {{"degree", st.degree}, {"partition", st.partition}, {"stage_begin", st.stage_begin},
                   {"stages", std::move(stages)}};
  return j;
}
}  // namespace detail

/// The frontier as a JSON value in the "tensoropt-frontier/2" format.
inline nlohmann::ordered_json frontier_to_json(const std::vector<frontier_entry>& pts) {
  nlohmann::ordered_json j;
  j["format"] = frontier_format;
  j["points"] = nlohmann::ordered_json::array();
  for (auto& e : pts) j["points"].push_back(detail::frontier_entry_json(e));
  return j;
}
inline nlohmann::ordered_json frontier_to_json(const std::vector<frontier_point>& pts) {
  return frontier_to_json(entries_of(pts));
}

/// The frontier file's text, one point per line.
inline std::string write_frontier_json(const std::vector<frontier_entry>& pts) {
  std::string s = std::string("{\"format\": \"") + frontier_format + "\",\n \"points\": [";
  for (std::size_t i = 0; i < pts.size(); ++i) s += (i ? ",\n  " : "\n  ") + detail::frontier_entry_json(pts[i]).dump();
  s += "]}\n";
  return s;
}
inline std::string write_frontier_json(const std::vector<frontier_point>& pts) {
  return write_frontier_json(entries_of(pts));
}

namespace detail {
inline std::vector<int> frontier_choice(const nlohmann::json& v, const std::string& at) {
  const auto& ch = json_array(v, at);
  std::vector<int> out;
  for (std::size_t c = 0; c < ch.size(); ++c) {
    if (!ch[c].is_number_integer() || ch[c].get<std::int64_t>() < 0 || ch[c].get<std::int64_t>() > INT32_MAX)
      throw format_error(at + "[" + std::to_string(c) + "]: expected a config index (integer >= 0), got " +
                         json_echo(ch[c]));
    out.push_back(int(ch[c].get<std::int64_t>()));
  }
  return out;
}
inline std::vector<std::string> frontier_labels(const nlohmann::json& v, const std::string& at, std::size_t n) {
  const auto& lb = json_array(v, at);
  if (lb.size() != n)
    throw format_error(at + ": expected " + std::to_string(n) + " labels (one per choice), got " + std::to_string(lb.size()));
  std::vector<std::string> out;
  for (std::size_t c = 0; c < lb.size(); ++c) out.push_back(json_string(lb[c], at + "[" + std::to_string(c) + "]"));
  return out;
}
inline std::int64_t frontier_int(const nlohmann::json& v, const std::string& at, std::int64_t lo) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > INT32_MAX)
    throw format_error(at + ": expected an integer >= " + std::to_string(lo) + ", got " + json_echo(v));
  return v.get<std::int64_t>();
}
/// The "pipeline" object of a "/2" point.
inline stage_choices frontier_stages(const nlohmann::json& pl, const std::string& at) {
  if (!pl.is_object()) throw format_error(at + ": expected an object, got " + json_echo(pl));
  stage_choices st;
  st.degree = int(frontier_int(json_field(pl, "degree", at), json_path(at, "degree"), 1));
  st.partition = std::size_t(frontier_int(json_field(pl, "partition", at), json_path(at, "partition"), 0));
  const auto& sb = json_array(json_field(pl, "stage_begin", at), json_path(at, "stage_begin"));
  const auto& stages = json_array(json_field(pl, "stages", at), json_path(at, "stages"));
  for (const auto* list : {&sb, &stages})
    if (list->size() != std::size_t(st.degree))
      throw format_error(json_path(at, list == &sb ? "stage_begin" : "stages") + ": expected " +
                         std::to_string(st.degree) + " entries (one per stage of degree " + std::to_string(st.degree) +
                         "), got " + std::to_string(list->size()));
  for (std::size_t s = 0; s < sb.size(); ++s)
    st.stage_begin.push_back(std::size_t(frontier_int(sb[s], json_path(at, "stage_begin") + "[" + std::to_string(s) + "]", 0)));
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const std::string sat = json_path(at, "stages") + "[" + std::to_string(s) + "]";
    st.choice.push_back(frontier_choice(json_field(stages[s], "choice", sat), json_path(sat, "choice")));
    st.labels.push_back(frontier_labels(json_field(stages[s], "labels", sat), json_path(sat, "labels"), st.choice.back().size()));
  }
  return st;
}
}  // namespace detail

/// Reads a frontier file's points from a JSON value ("/1" or "/2", both kinds of point),
/// checking every field and the staircase order; throws format_error naming the field and
/// position.
inline std::vector<frontier_entry> frontier_entries_from_json(const nlohmann::json& j) {
  using detail::json_field, detail::json_path;
  if (!j.is_object()) throw format_error(std::string("frontier: expected a JSON object, got ") + j.type_name());
  const auto& fmt = json_field(j, "format", "");
  const bool v1 = fmt.is_string() && fmt.get<std::string>() == "tensoropt-frontier/1";
  if (!v1 && !(fmt.is_string() && fmt.get<std::string>() == frontier_format))
    throw format_error("format: expected \"tensoropt-frontier/1\" or \"tensoropt-frontier/2\", got " +
                       detail::json_echo(fmt));
  const auto& pts = detail::json_array(json_field(j, "points", ""), "points");
  if (pts.empty()) throw format_error("points: the frontier has no points");
  std::vector<frontier_entry> out;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string at = "points[" + std::to_string(i) + "]";
    frontier_entry fe;
    frontier_point& e = fe.point;
    e.time = detail::json_seconds(json_field(pts[i], "time", at), json_path(at, "time"));
    e.memory = detail::json_bytes(json_field(pts[i], "memory", at), json_path(at, "memory"));
    e.micro_batches = int(detail::frontier_int(json_field(pts[i], "micro_batches", at), json_path(at, "micro_batches"), 1));
    if (pts[i].contains("peak")) e.peak = detail::json_bytes(pts[i]["peak"], json_path(at, "peak"));
    if (!v1 && pts[i].contains("pipeline")) {
      if (pts[i].contains("choice") || pts[i].contains("labels"))
        throw format_error(at + ": a point has either \"choice\" and \"labels\" (one problem) or \"pipeline\" "
                           "(stages), not both");
      fe.stages = detail::frontier_stages(pts[i]["pipeline"], json_path(at, "pipeline"));
    } else {
      e.choice = detail::frontier_choice(json_field(pts[i], "choice", at), json_path(at, "choice"));
      e.labels = detail::frontier_labels(json_field(pts[i], "labels", at), json_path(at, "labels"), e.choice.size());
    }
    out.push_back(std::move(fe));
  }
  // a staircase in memory, or (the planner's points, with candidates off the additive
  // frontier) in the peak where given
  auto first_unsorted = [&](auto mem) -> std::size_t {
    for (std::size_t i = 1; i < out.size(); ++i)
      if (!(mem(out[i - 1].point) < mem(out[i].point) && out[i - 1].point.time > out[i].point.time)) return i;
    return 0;
  };
  const std::size_t bad = first_unsorted([](const frontier_point& q) { return q.memory; });
  if (bad && first_unsorted([](const frontier_point& q) { return budget_memory(q); })) {
    const auto& e = out[bad].point;
    const auto& b = out[bad - 1].point;
    throw format_error("points[" + std::to_string(bad) + "]: points must be sorted by memory (or by the peak where "
                       "given) ascending with time strictly descending; this point (" + std::to_string(e.memory) +
                       " bytes, " + detail::fmt_seconds(e.time) + ") does not follow the previous one (" +
                       std::to_string(b.memory) + " bytes, " + detail::fmt_seconds(b.time) + ")");
  }
  return out;
}

/// Reads a frontier file's text; see frontier_entries_from_json.
inline std::vector<frontier_entry> read_frontier_entries(std::string_view text) {
  return frontier_entries_from_json(detail::parse_json_text(text, "frontier"));
}

/// The one-problem points of a frontier file ("/1" or "/2"); throws format_error for a
/// malformed file or one that holds pipeline points (read those with read_frontier_entries).
inline std::vector<frontier_point> frontier_from_json(const nlohmann::json& j) {
  std::vector<frontier_point> out;
  for (auto& e : frontier_entries_from_json(j)) {
    if (e.stages)
      throw format_error("points[" + std::to_string(out.size()) + "]: a pipeline point (it has \"pipeline\"); this "
                         "reader takes points of one problem: read the file with read_frontier_entries");
    out.push_back(std::move(e.point));
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
