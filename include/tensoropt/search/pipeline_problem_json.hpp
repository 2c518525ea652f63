// The pipeline problem file "tensoropt-pipeline-problem/1": writer and validating reader
// of a pipeline_problem (search/pipeline_problem.hpp, which says what the numbers mean).
//
// Format (units: seconds and bytes):
//   { "format": "tensoropt-pipeline-problem/1",
//     "problems": [ {"memory_offset": <bytes>,
//                    "nodes": [ {"name": "<op>", "configs": [ {"label": "<config>", "time": <s>,
//                                "memory": <bytes>, "activations": <bytes>} ] } ],
//                    "edges": [ as in tensoropt-problem/1 ] } ],
//     "partitions": [ {"degree": <p>, "micro_batches": <k>, "stage_begin": [<op> per stage],
//                      "stages": [ {"problem": <index>, "in_flight": <f>} per stage ],
//                      "sends": [<s> per boundary]} ] }
// Each entry of "problems" is a tensoropt-problem/1 body (no "format") whose configs also
// say "activations". A frontier file's pipeline point (tensoropt-frontier/2) names a
// partition and gives one choice per node of each stage's problem; its cost is
//   time   = max over stages of (the stage's choice's time)   + the sum of "sends"
//   memory = max over stages of (memory_offset + config memory + (f - 1) x activations
//                                + f x edge memory, summed over the stage's choice)
// with f the stage's "in_flight". Times round-trip exactly as in the problem file (integer
// picoseconds printed as seconds, read back with llround). The reader refuses any other
// format or version with a one-line error.
#pragma once
#include <string>
#include <string_view>
#include <nlohmann/json.hpp>
#include "json_read.hpp"
#include "pipeline_problem.hpp"
#include "problem_json.hpp"
#include "validate.hpp"

namespace tensoropt {

inline constexpr const char* pipeline_problem_format = "tensoropt-pipeline-problem/1";

/// The file's text: one node or edge per line. Throws invalid_argument when `pp` is
/// malformed (pipeline_problem_error, or a stage problem that `validate` refuses).
inline std::string write_pipeline_problem_json(const pipeline_problem& pp) {
  if (const std::string e = pipeline_problem_error(pp); !e.empty()) throw invalid_argument("pipeline problem: " + e);
  std::string s = std::string("{\"format\": \"") + pipeline_problem_format + "\",\n \"problems\": [";
  for (std::size_t q = 0; q < pp.problems.size(); ++q) {
    validate(pp.problems[q].prob);
    s += std::string(q ? ",\n  " : "\n  ") + "{" + detail::problem_body_text(pp.problems[q].prob, &pp.problems[q].activations, "   ") + "}";
  }
  s += "],\n \"partitions\": [";
  for (std::size_t i = 0; i < pp.partitions.size(); ++i) {
    const auto& pa = pp.partitions[i];
    nlohmann::ordered_json j{{"degree", pa.degree}, {"micro_batches", pa.micro_batches}, {"stage_begin", pa.stage_begin}};
    j["stages"] = nlohmann::ordered_json::array();
    for (const auto& st : pa.stages) j["stages"].push_back({{"problem", st.problem}, {"in_flight", st.in_flight}});
    j["sends"] = nlohmann::ordered_json::array();
    for (cost_t x : pa.sends) j["sends"].push_back(detail::seconds_of(x));
    s += (i ? ",\n  " : "\n  ") + j.dump();
  }
  return s + "]}\n";
}

namespace detail {
inline std::int64_t pipeline_json_int(const nlohmann::json& v, const std::string& at, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
    throw format_error(at + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                       json_echo(v));
  return v.get<std::int64_t>();
}
}  // namespace detail

/// Reads a pipeline problem from a JSON value, checking everything; throws format_error
/// naming the field and position (e.g. "problems[1].nodes[0].configs[2].activations:
/// missing field").
inline pipeline_problem pipeline_problem_from_json(const nlohmann::json& j) {
  using detail::json_array, detail::json_field, detail::pipeline_json_int;
  if (!j.is_object()) throw format_error(std::string("pipeline problem: expected a JSON object, got ") + j.type_name());
  const auto& fmt = json_field(j, "format", "");
  if (!fmt.is_string() || fmt.get<std::string>() != pipeline_problem_format)
    throw format_error("format: expected \"" + std::string(pipeline_problem_format) + "\", got " + detail::json_echo(fmt));
  pipeline_problem pp;
  const auto& probs = json_array(json_field(j, "problems", ""), "problems");
  for (std::size_t q = 0; q < probs.size(); ++q) {
    pipeline_problem::stage_problem sp;
    sp.prob = detail::problem_body_from_json(probs[q], "problems[" + std::to_string(q) + "]", &sp.activations);
    pp.problems.push_back(std::move(sp));
  }
  const auto& parts = json_array(json_field(j, "partitions", ""), "partitions");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string at = "partitions[" + std::to_string(i) + "]";
    pipeline_problem::partition pa;
    pa.degree = int(pipeline_json_int(json_field(parts[i], "degree", at), at + ".degree", 1, max_devices));
    pa.micro_batches = int(pipeline_json_int(json_field(parts[i], "micro_batches", at), at + ".micro_batches", 1, INT32_MAX));
    const auto& sb = json_array(json_field(parts[i], "stage_begin", at), at + ".stage_begin");
    for (std::size_t s = 0; s < sb.size(); ++s)
      pa.stage_begin.push_back(std::size_t(pipeline_json_int(sb[s], at + ".stage_begin[" + std::to_string(s) + "]", 0, INT32_MAX)));
    const auto& st = json_array(json_field(parts[i], "stages", at), at + ".stages");
    for (std::size_t s = 0; s < st.size(); ++s) {
      const std::string sat = at + ".stages[" + std::to_string(s) + "]";
      pipeline_problem::stage_ref r;
      r.problem = std::size_t(pipeline_json_int(json_field(st[s], "problem", sat), sat + ".problem", 0, INT32_MAX));
      r.in_flight = pipeline_json_int(json_field(st[s], "in_flight", sat), sat + ".in_flight", 1, INT32_MAX);
      pa.stages.push_back(r);
    }
    const auto& se = json_array(json_field(parts[i], "sends", at), at + ".sends");
    for (std::size_t b = 0; b < se.size(); ++b)
      pa.sends.push_back(detail::json_seconds(se[b], at + ".sends[" + std::to_string(b) + "]"));
    pp.partitions.push_back(std::move(pa));
  }
  if (const std::string e = pipeline_problem_error(pp); !e.empty()) throw format_error(e);
  return pp;
}

/// Reads a pipeline problem file's text; see pipeline_problem_from_json.
inline pipeline_problem read_pipeline_problem_json(std::string_view text) {
  return pipeline_problem_from_json(detail::parse_json_text(text, "pipeline problem"));
}

}  // namespace tensoropt
