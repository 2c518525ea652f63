// The problem file "tensoropt-problem/2" (and /1): writer and validating reader.
//
// Format (units: seconds and bytes):
//   { "format": "tensoropt-problem/2", "memory_offset": <bytes>,
//     "nodes": [ {"name": "<op>", "configs": [ {"label": "<config>", "time": <s>, "memory": <bytes>} ] } ],
//     "edges": [ {"from": <node>, "to": <node>,
//                 "time":   [[<s> per config of 'to'] per config of 'from'],
//                 "memory": [[<bytes> ...] ...]} ],
//     "repeats": [ {"instances": [[<node> per position] per instance]} ] }
// Times are stored in the library as integer picoseconds; the writer prints seconds with
// enough digits to round-trip (nlohmann/json prints the shortest exact representation),
// the reader converts back with llround(s * 1e12). Round trips are exact for times below
// 2^51 ps (about 37 minutes per config or edge), which the reader checks.
//
// Versions. "/2" adds the optional "repeats": blocks declared as repeated (a model's
// repeat<>), each as its instances, instances[i][j] being the node at position j of
// instance i. The declaration says where to look, not that the instances are identical:
// fast mode (search/repeated.hpp, `tensoropt-plan --solve FILE --mode fast`) checks that
// against the costs and says, in words, why a block cannot be composed. The reader checks
// the shape: at least 2 instances of the same non-zero size, node indices that exist, no
// node in two instances of any block. A problem without repeats is written as "/1", which
// has no "repeats" field; readers of "/1" files read them unchanged.
//
// The body (memory_offset, nodes, edges) is also each stage problem of a pipeline problem
// file (search/pipeline_problem_json.hpp), whose configs add "activations";
// problem_body_json / problem_body_from_json write and read it there, with every position
// in a message prefixed by where the body sits ("problems[2].nodes[0]...").
#pragma once
#include <cmath>
#include <string>
#include <string_view>
#include <vector>
#include <nlohmann/json.hpp>
#include "../core/error.hpp"
#include "problem.hpp"
#include "json_read.hpp"
#include "validate.hpp"

namespace tensoropt {

/// Per node, per config: the bytes one more micro-batch in flight adds (a pipeline stage's
/// problem, search/pipeline_problem.hpp); empty where a problem has none.
using config_activations = std::vector<std::vector<cost_t>>;

namespace detail {
/// memory_offset, nodes and edges of `p` as a JSON object; with `acts`, every config
/// also gets "activations".
inline nlohmann::ordered_json problem_body_json(const problem& p, const config_activations* acts = nullptr) {
  nlohmann::ordered_json j;
  j["memory_offset"] = p.memory_offset;
  j["nodes"] = nlohmann::ordered_json::array();
  for (auto& n : p.nodes) {
    nlohmann::ordered_json jn;
    jn["name"] = n.name;
    jn["configs"] = nlohmann::ordered_json::array();
    const std::size_t i = j["nodes"].size();
    for (std::size_t c = 0; c < n.configs.size(); ++c) {
      const auto& cf = n.configs[c];
      jn["configs"].push_back({{"label", cf.label}, {"time", seconds_of(cf.time)}, {"memory", cf.memory}});
      if (acts) jn["configs"].back()["activations"] = (*acts)[i][c];
    }
    j["nodes"].push_back(std::move(jn));
  }
  j["edges"] = nlohmann::ordered_json::array();
  for (auto& e : p.edges) {
    nlohmann::ordered_json je;
    je["from"] = e.from;
    je["to"] = e.to;
    const std::size_t cols = e.to >= 0 && std::size_t(e.to) < p.nodes.size()
                                 ? p.nodes[std::size_t(e.to)].configs.size() : e.time.size();
    auto& t = je["time"] = nlohmann::ordered_json::array();
    auto& m = je["memory"] = nlohmann::ordered_json::array();
    for (std::size_t r = 0; cols > 0 && r * cols < e.time.size(); ++r) {
      auto tr = nlohmann::ordered_json::array(), mr = nlohmann::ordered_json::array();
      for (std::size_t c = 0; c < cols; ++c) {
        tr.push_back(seconds_of(e.time[r * cols + c]));
        mr.push_back(r * cols + c < e.memory.size() ? e.memory[r * cols + c] : 0);
      }
      t.push_back(std::move(tr));
      m.push_back(std::move(mr));
    }
    j["edges"].push_back(std::move(je));
  }
  return j;
}

/// The fields of problem_body_json as text, one node or edge per line indented by
/// `indent`, without the braces.
inline std::string problem_body_text(const problem& p, const config_activations* acts, const std::string& indent) {
  const auto j = problem_body_json(p, acts);
  std::string s = "\"memory_offset\": " + j["memory_offset"].dump() + ",\n" + indent + "\"nodes\": [";
  for (std::size_t i = 0; i < p.nodes.size(); ++i) s += (i ? ",\n " : "\n ") + indent + j["nodes"][i].dump();
  s += "],\n" + indent + "\"edges\": [";
  for (std::size_t i = 0; i < p.edges.size(); ++i) s += (i ? ",\n " : "\n ") + indent + j["edges"][i].dump();
  return s + "]";
}
}  // namespace detail

inline constexpr const char* problem_format_v1 = "tensoropt-problem/1";
inline constexpr const char* problem_format_v2 = "tensoropt-problem/2";

/// A problem file's contents: the problem and the blocks it declares repeated.
struct problem_file {
  problem prob;
  std::vector<repeated_block> repeats;
};

namespace detail {
inline nlohmann::ordered_json repeats_json(const std::vector<repeated_block>& repeats) {
  auto a = nlohmann::ordered_json::array();
  for (auto& rb : repeats) a.push_back({{"instances", rb.instances}});
  return a;
}

/// Throws format_error (at `where`, e.g. "repeats[1].instances[2][0]") unless `repeats`
/// has the shape of the header for a problem of `nodes` nodes.
inline void check_repeats_shape(const std::vector<repeated_block>& repeats, std::size_t nodes,
                                const std::string& where) {
  std::vector<std::string> seen(nodes);
  for (std::size_t r = 0; r < repeats.size(); ++r) {
    const auto& inst = repeats[r].instances;
    const std::string at = where + "[" + std::to_string(r) + "].instances";
    if (inst.size() < 2)
      throw format_error(at + ": a repeated block needs at least 2 instances, got " + std::to_string(inst.size()));
    for (std::size_t i = 0; i < inst.size(); ++i) {
      const std::string ai = at + "[" + std::to_string(i) + "]";
      if (inst[i].empty()) throw format_error(ai + ": an instance needs at least one node");
      if (inst[i].size() != inst[0].size())
        throw format_error(ai + ": " + std::to_string(inst[i].size()) + " nodes where instance 0 has " +
                           std::to_string(inst[0].size()) + "; every instance lists one node per position");
      for (std::size_t j = 0; j < inst[i].size(); ++j) {
        const int v = inst[i][j];
        const std::string aj = ai + "[" + std::to_string(j) + "]";
        if (v < 0 || std::size_t(v) >= nodes)
          throw format_error(aj + ": node " + std::to_string(v) + " does not exist (there are " +
                             std::to_string(nodes) + " nodes, 0-based)");
        if (!seen[std::size_t(v)].empty())
          throw format_error(aj + ": node " + std::to_string(v) + " is already in " + seen[std::size_t(v)] +
                             "; a node belongs to at most one instance of one block");
        seen[std::size_t(v)] = ai;
      }
    }
  }
}
}  // namespace detail

/// The problem as a JSON value: "tensoropt-problem/1", or "/2" with `repeats`.
inline nlohmann::ordered_json problem_to_json(const problem& p, const std::vector<repeated_block>& repeats = {}) {
  nlohmann::ordered_json j;
  j["format"] = repeats.empty() ? problem_format_v1 : problem_format_v2;
  auto body = detail::problem_body_json(p);
  for (auto& [k, v] : body.items()) j[k] = std::move(v);
  if (!repeats.empty()) j["repeats"] = detail::repeats_json(repeats);
  return j;
}

/// The problem file's text: one node or edge per line ("tensoropt-problem/1"; "/2" with
/// the blocks `repeats` declares repeated, one per line). Throws invalid_argument if `p`
/// is malformed (see `validate`) or `repeats` has not the header's shape.
inline std::string write_problem_json(const problem& p, const std::vector<repeated_block>& repeats = {}) {
  validate(p);
  try {
    detail::check_repeats_shape(repeats, p.nodes.size(), "repeats");
  } catch (const format_error& e) {
    throw invalid_argument(std::string("write_problem_json: ") + e.what());
  }
  std::string s = std::string("{\"format\": \"") + (repeats.empty() ? problem_format_v1 : problem_format_v2) +
                  "\",\n " + detail::problem_body_text(p, nullptr, " ");
  if (!repeats.empty()) {
    const auto a = detail::repeats_json(repeats);
    s += ",\n \"repeats\": [";
    for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ",\n  " : "\n  ") + a[i].dump();
    s += "]";
  }
  return s + "}\n";
}

namespace detail {
/// memory_offset, nodes and edges from the object `j` whose path is `where` ("" at the top
/// of a problem file); with `acts`, every config's "activations" is read into it.
inline problem problem_body_from_json(const nlohmann::json& j, const std::string& where, config_activations* acts) {
  if (!j.is_object()) throw format_error((where.empty() ? "problem" : where) + ": expected a JSON object, got " + j.type_name());
  const std::string pre = where.empty() ? "" : where + ".";
  problem p;
  p.memory_offset = json_bytes(json_field(j, "memory_offset", where), pre + "memory_offset");
  const auto& nodes = json_array(json_field(j, "nodes", where), pre + "nodes");
  if (nodes.empty()) throw format_error(pre + "nodes: the problem has no nodes; add at least one");
  if (acts) acts->assign(nodes.size(), {});
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string at = pre + "nodes[" + std::to_string(i) + "]";
    problem_node n;
    n.name = detail::json_string(json_field(nodes[i], "name", at), json_path(at, "name"));
    const auto& cfgs = detail::json_array(json_field(nodes[i], "configs", at), json_path(at, "configs"));
    if (cfgs.empty())
      throw format_error(at + ".configs: node " + std::to_string(i) + " '" + detail::cut_short(n.name) +
                         "' has no configs; every node needs at least one");
    for (std::size_t c = 0; c < cfgs.size(); ++c) {
      const std::string cat = at + ".configs[" + std::to_string(c) + "]";
      problem_config cf;
      cf.label = detail::json_string(json_field(cfgs[c], "label", cat), json_path(cat, "label"));
      cf.time = detail::json_seconds(json_field(cfgs[c], "time", cat), json_path(cat, "time"));
      cf.memory = detail::json_bytes(json_field(cfgs[c], "memory", cat), json_path(cat, "memory"));
      if (acts) (*acts)[i].push_back(json_bytes(json_field(cfgs[c], "activations", cat), json_path(cat, "activations")));
      n.configs.push_back(std::move(cf));
    }
    p.nodes.push_back(std::move(n));
  }
  const auto& edges = json_array(json_field(j, "edges", where), pre + "edges");
  auto node_ref = [&](int i) {
    return "node " + std::to_string(i) + " '" + detail::cut_short(p.nodes[std::size_t(i)].name) + "'";
  };
  for (std::size_t k = 0; k < edges.size(); ++k) {
    const std::string at = pre + "edges[" + std::to_string(k) + "]";
    problem_edge e;
    e.from = detail::json_node_index(json_field(edges[k], "from", at), json_path(at, "from"), p.nodes.size());
    e.to = detail::json_node_index(json_field(edges[k], "to", at), json_path(at, "to"), p.nodes.size());
    if (e.from == e.to) throw format_error(at + ": a self-loop on " + node_ref(e.from));
    const std::size_t rows = p.nodes[std::size_t(e.from)].configs.size();
    const std::size_t cols = p.nodes[std::size_t(e.to)].configs.size();
    for (const char* key : {"time", "memory"}) {
      const std::string mat = json_path(at, key);
      const auto& m = detail::json_array(json_field(edges[k], key, at), mat);
      if (m.size() != rows)
        throw format_error(mat + ": expected " + std::to_string(rows) + " rows (configs of " +
                           node_ref(e.from) + "), got " + std::to_string(m.size()));
      auto& out = key[0] == 't' ? e.time : e.memory;
      out.reserve(rows * cols);
      for (std::size_t r = 0; r < rows; ++r) {
        const std::string row = mat + "[" + std::to_string(r) + "]";
        const auto& jr = detail::json_array(m[r], row);
        if (jr.size() != cols)
          throw format_error(row + ": expected " + std::to_string(cols) + " values (configs of " +
                             node_ref(e.to) + "), got " + std::to_string(jr.size()));
        for (std::size_t c = 0; c < cols; ++c) {
          const std::string v = row + "[" + std::to_string(c) + "]";
          out.push_back(key[0] == 't' ? detail::json_seconds(jr[c], v) : detail::json_bytes(jr[c], v));
        }
      }
    }
    p.edges.push_back(std::move(e));
  }
  try {
    check_problem<format_error>(p);  // cycles, and anything missed above
  } catch (const format_error& e) {
    if (where.empty()) throw;
    throw format_error(where + ": " + e.what());
  }
  return p;
}
}  // namespace detail

/// Reads a problem file ("tensoropt-problem/1" or "/2") from a JSON value, checking
/// everything; throws format_error naming the field and position (e.g. "edges[3].time[2]:
/// expected 5 values (configs of node 7 'fc1'), got 4").
inline problem_file problem_file_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw format_error(std::string("problem: expected a JSON object, got ") + j.type_name());
  const auto& fmt = detail::json_field(j, "format", "");
  const bool v1 = fmt.is_string() && fmt.get<std::string>() == problem_format_v1;
  const bool v2 = fmt.is_string() && fmt.get<std::string>() == problem_format_v2;
  if (!v1 && !v2)
    throw format_error("format: expected \"tensoropt-problem/1\" or \"tensoropt-problem/2\", got " +
                       detail::json_echo(fmt) +
                       (fmt.is_string() && fmt.get<std::string>() == "tensoropt-pipeline-problem/1"
                            ? " (a pipeline problem: read it with read_pipeline_problem_json)" : ""));
  problem_file f{detail::problem_body_from_json(j, "", nullptr), {}};
  if (!j.contains("repeats")) return f;
  if (v1)
    throw format_error("repeats: a tensoropt-problem/1 file has no repeated blocks; declare them in a "
                       "\"tensoropt-problem/2\" file (change \"format\")");
  const auto& rs = detail::json_array(j["repeats"], "repeats");
  for (std::size_t r = 0; r < rs.size(); ++r) {
    const std::string at = "repeats[" + std::to_string(r) + "]";
    const auto& inst = detail::json_array(detail::json_field(rs[r], "instances", at), at + ".instances");
    repeated_block rb;
    for (std::size_t i = 0; i < inst.size(); ++i) {
      const std::string ai = at + ".instances[" + std::to_string(i) + "]";
      const auto& nodes = detail::json_array(inst[i], ai);
      rb.instances.emplace_back();
      for (std::size_t k = 0; k < nodes.size(); ++k)
        rb.instances.back().push_back(
            detail::json_node_index(nodes[k], ai + "[" + std::to_string(k) + "]", f.prob.nodes.size()));
    }
    f.repeats.push_back(std::move(rb));
  }
  detail::check_repeats_shape(f.repeats, f.prob.nodes.size(), "repeats");
  return f;
}

/// The problem of a problem file (see problem_file_from_json; declared repeats are
/// checked and left out).
inline problem problem_from_json(const nlohmann::json& j) { return problem_file_from_json(j).prob; }

/// Reads a problem file's text; throws format_error on malformed JSON (with the byte
/// position), NUL bytes, nesting deeper than max_json_depth, or any check of
/// `problem_file_from_json`.
inline problem_file read_problem_file(std::string_view text) {
  return problem_file_from_json(detail::parse_json_text(text, "problem"));
}

/// The problem of a problem file's text (see read_problem_file).
inline problem read_problem_json(std::string_view text) { return read_problem_file(text).prob; }

}  // namespace tensoropt
